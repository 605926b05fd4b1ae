/**
 * Review 5 of "no key can do more than its scope" (docs/guarantees.md › Scopes are absolute,
 * API.md common rules + v2 Scopes). review-scopes.test.ts holds every /v1 route to its status with
 * no Redis call; this file adds what it does not check:
 *
 * - the matrix is generated from the app's own route table (functions/routes/index.ts `mounts`,
 *   /internal/jobs/{job} for every job of functions/jobs.ts, the open routes), with each route's
 *   scope stated here from the docs (not from auth.ts's table), so a route added to a mount is
 *   classified or this file fails;
 * - every refused request × variant (Prefer: respond-async, Idempotency-Key, Accept: text/csv,
 *   method-override headers, an admin key in the query string, the v2 query parameters) and every
 *   spelling of its path is refused, and the data of every feature, read back from Redis (type,
 *   value, absolute expiry of every key), is unchanged afterwards;
 * - the key kinds the config supports are only READ_KEYS, INGEST_KEYS and ADMIN_KEYS
 *   (functions/middleware/auth.ts `scopesOf`): there is no narrower key (per feature or name
 *   prefix) to test; near-misses of each (case, a list's separator, surrounding quotes) are.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JOBS } from "../../functions/jobs.ts";
import { mounts } from "../../functions/routes/index.ts";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi, TEST_KEYS } from "../helpers/worker.ts";

const api = createTestApi({ label: "review5-scopes", start: "2026-11-22T12:30:00Z" });
afterAll(() => api.cleanup());

type Need = "open" | "read" | "ingest" | "admin";
interface Route {
  method: string;
  /** Hono path, `:param` segments. */
  path: string;
}

/**
 * The scope each route needs, as docs/guarantees.md and API.md state it (written independently of
 * auth.ts's ADMIN_ROUTES): admin deletes a whole stream/counter/histogram/room/board, configures
 * histograms and boards, unions counters, reads ingest status, owns webhooks and runs jobs; the
 * subset ranking is a read although a POST; other GETs read; other writes are ingest.
 */
function needOf({ method, path }: Route): Need {
  if (path === "/healthz" || path === "/openapi.json" || path === "/docs") return "open";
  if (path === "/" || path.startsWith("/dashboard")) return "open";
  if (path.startsWith("/internal/jobs/")) return "admin";
  if (path.startsWith("/v1/webhooks")) return "admin";
  if (path === "/v1/ingest/status") return "admin";
  const segments = path.split("/").filter(Boolean);
  if (method === "DELETE" && segments.length === 3) return "admin";
  if (method === "PUT" && segments.length === 3) return "admin";
  if (method === "POST" && path.endsWith("/union")) return "admin";
  if (method === "POST" && path.endsWith("/rank")) return "read";
  if (method === "GET") return "read";
  return "ingest";
}

function join(base: string, path: string): string {
  const joined = `${base.replace(/\/$/, "")}/${path.replace(/^\//, "")}`;
  return joined.length > 1 ? joined.replace(/\/$/, "") : joined;
}

const ROUTES: Route[] = [
  ...mounts.flatMap((m) => m.table.map(([method, path]) => ({ method, path: join(m.base, path) }))),
  { method: "GET", path: "/openapi.json" },
  { method: "GET", path: "/docs" },
];

/** Names the seeded data uses, so a refused request that got through would change it. */
const NAMES: Record<string, string> = {
  stream: "rv5s",
  counter: "rv5c",
  histogram: "rv5h",
  room: "rv5r",
  board: "rv5b",
  player: "p1",
  member: "m1",
  id: "u1",
  name: "rv5w",
  module: "x.js",
};

/** Concrete requests of a route: /internal/jobs/:job once per job. */
function concrete(route: Route): string[] {
  if (route.path === "/internal/jobs/:job") return Object.keys(JOBS).map((job) => `/internal/jobs/${job}`);
  return [route.path.replace(/:(\w+)/g, (_, p: string) => NAMES[p] ?? "x1")];
}

/** A valid body for each write, so a refusal is never the body's doing. */
function bodyOf(method: string, path: string): unknown {
  if (method === "GET" || method === "DELETE") return undefined;
  if (path.endsWith("/events")) return { member: "m1" };
  if (path.endsWith("/incr")) return { member: "m1", by: 5, ttl: 1 };
  if (path.endsWith("/union")) return { sources: ["rv5c"] };
  if (path.startsWith("/v1/histograms/") && method === "PUT") return { bucketWidth: 1000 };
  if (path.endsWith("/observations")) return { value: 1 };
  if (path.endsWith("/heartbeats")) return { id: "u2" };
  if (path.startsWith("/v1/leaderboards/") && method === "PUT" && path.includes("/players/"))
    return { name: "Mallory", score: 1e9 };
  if (path.startsWith("/v1/leaderboards/") && method === "PUT") return { ties: "joined", maxScore: 1 };
  if (path.endsWith("/score")) return { set: -1, mode: "replace" };
  if (path.endsWith("/scores")) return { items: [{ player: "p1", set: -1, mode: "replace" }] };
  if (path.endsWith("/rank")) return { players: ["p1"] };
  if (path.startsWith("/v1/webhooks/") && method === "PUT")
    return {
      url: "https://evil.example/h",
      events: ["trending.entered"],
      filter: { stream: "rv5s" },
      secret: "s".repeat(32),
    };
  return {};
}

const KEY_HOLDS: Record<"read" | "ingest" | "admin", Need[]> = {
  read: ["open", "read"],
  ingest: ["open", "ingest"],
  admin: ["open", "read", "ingest", "admin"],
};

/** Keys that are not configured: near misses of real ones included. */
const UNKNOWN_KEYS = [
  "none",
  "not-a-configured-key-000",
  TEST_KEYS.admin.toUpperCase(),
  `${TEST_KEYS.admin},`,
  `"${TEST_KEYS.admin}"`,
  `${TEST_KEYS.read}${TEST_KEYS.admin}`,
  `${TEST_KEYS.ingest}x`,
];

/** Every key under the api's prefix with its type, value and absolute expiry. */
async function snapshot(): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const key of await api.keys()) {
    const type = await command<string>(api.target, "TYPE", key);
    const expiry = await command<number>(api.target, "PEXPIRETIME", key);
    let value: unknown;
    if (type === "string") value = await command(api.target, "GET", key);
    else if (type === "hash") value = await command(api.target, "HGETALL", key);
    else if (type === "zset") value = await command(api.target, "ZRANGE", key, 0, -1, "WITHSCORES");
    else if (type === "set") value = ((await command<string[]>(api.target, "SMEMBERS", key)) ?? []).sort();
    else if (type === "list") value = await command(api.target, "LRANGE", key, 0, -1);
    else if (type === "stream") value = await command(api.target, "XRANGE", key, "-", "+");
    else value = await command(api.target, "DUMP", key);
    out[key] = { type, expiry, value };
  }
  return out;
}

beforeAll(async () => {
  const ok = (r: { status: number; body: unknown }, what: string) =>
    expect(r.status, `${what}: ${JSON.stringify(r.body)}`).toBeLessThan(300);
  ok(await api.post("/v1/trending/rv5s/events", { member: "m1" }), "trending");
  ok(await api.post("/v1/counters/rv5c/incr", { member: "m1", by: 3 }), "counter without expiry");
  ok(await api.post("/v1/counters/rv5c/incr", { member: "m1", period: "day", ttl: 86400 * 30 }), "bucket");
  ok(await api.put("/v1/histograms/rv5h", { bucketWidth: 10 }, { key: "admin" }), "histogram config");
  ok(await api.post("/v1/histograms/rv5h/observations", { value: 12 }), "observation");
  ok(await api.post("/v1/presence/rv5r/heartbeats", { id: "u1" }), "heartbeat");
  ok(await api.put("/v1/leaderboards/rv5b", { ties: "reached", reset: "daily" }, { key: "admin" }), "board");
  ok(await api.put("/v1/leaderboards/rv5b/players/p1", { name: "Alice", score: 50 }), "player");
  ok(
    await api.put(
      "/v1/webhooks/rv5w",
      {
        url: "https://example.com/h",
        events: ["trending.entered"],
        filter: { stream: "rv5s" },
        secret: "k".repeat(32),
      },
      { key: "admin" },
    ),
    "webhook",
  );
});

interface Variant {
  name: string;
  headers?: Record<string, string>;
  query?: string;
}
const VARIANTS: Variant[] = [
  { name: "plain" },
  { name: "Prefer: respond-async", headers: { prefer: "respond-async" } },
  { name: "Idempotency-Key", headers: { "idempotency-key": "rv5-idem-1" } },
  { name: "Accept: text/csv", headers: { accept: "text/csv" } },
  {
    name: "method override headers",
    headers: { "x-http-method-override": "GET", "x-method-override": "GET", "x-http-method": "GET" },
  },
  {
    name: "admin key in the query",
    query: `key=${TEST_KEYS.admin}&api_key=${TEST_KEYS.admin}&token=${TEST_KEYS.admin}`,
  },
  { name: "v2 query parameters", query: "day=2026-11-22&season=previous&deep=1&_method=GET" },
];

function withQuery(path: string, query?: string) {
  return query ? `${path}?${query}` : path;
}

describe("review5: every route of the app's table × every key kind × every variant", () => {
  it("every route of the table is classified (the generated matrix covers it)", () => {
    const needs = ROUTES.map((r) => `${r.method} ${r.path} → ${needOf(r)}`);
    // the v2 routes the brief names are among them, with the scope the docs give them
    for (const expected of [
      "GET /v1/trending/:stream/rising → read",
      "GET /v1/trending/:stream/history → read",
      "GET /v1/presence/_total → read",
      "GET /v1/leaderboards/:board/seasons → read",
      "POST /v1/leaderboards/:board/rank → read",
      "GET /v1/ingest/status → admin",
      "GET /v1/ingest/lag → read",
      "PUT /v1/webhooks/:name → admin",
      "POST /v1/webhooks/:name/test → admin",
      "GET /v1/webhooks/:name/deliveries → admin",
      "POST /internal/jobs/:job → admin",
      "DELETE /v1/counters/:counter/members/:member → ingest",
      "DELETE /v1/leaderboards/:board/players/:player → ingest",
      "DELETE /v1/presence/:room/members/:id → ingest",
    ])
      expect(needs).toContain(expected);
    expect(ROUTES.length).toBeGreaterThanOrEqual(55);
  });

  it("refused everywhere it should be (401 unknown, 403 wrong scope), and Redis is unchanged afterwards", async () => {
    const before = await snapshot();
    expect(Object.keys(before).length).toBeGreaterThan(10);
    const wrong: string[] = [];
    let tried = 0;
    for (const route of ROUTES) {
      const need = needOf(route);
      if (need === "open") continue;
      for (const path of concrete(route)) {
        const body = bodyOf(route.method, path);
        for (const v of VARIANTS) {
          const url = withQuery(path, v.query);
          for (const key of UNKNOWN_KEYS) {
            const res = await api.call(route.method, url, body, { key, headers: v.headers });
            tried++;
            if (res.status !== 401) wrong.push(`${route.method} ${url} [${key}] ${v.name} → ${res.status}`);
          }
          for (const key of ["read", "ingest"] as const) {
            if (KEY_HOLDS[key].includes(need)) continue;
            const res = await api.call(route.method, url, body, { key, headers: v.headers });
            tried++;
            if (res.status !== 403 || res.body?.error?.code !== "forbidden")
              wrong.push(`${route.method} ${url} [${key}] ${v.name} → ${res.status}`);
          }
        }
      }
    }
    expect(tried).toBeGreaterThan(2000);
    expect(wrong).toEqual([]);
    expect(await snapshot()).toEqual(before);
  });

  it("spellings of a path (trailing slash, double slash, encoded letter, dot segment, case) never get a wrong key past its scope; Redis unchanged", async () => {
    const before = await snapshot();
    const spell = (p: string): string[] => {
      const i = p.lastIndexOf("/") + 1;
      const enc = `${p.slice(0, i)}%${p.charCodeAt(i).toString(16)}${p.slice(i + 1)}`;
      return [
        `${p}/`,
        p.replace("/v1/", "/v1//"),
        `${p.slice(0, i)}/${p.slice(i)}`,
        enc,
        p.replace("/v1/", "/v1/./"),
        p.replace("/v1/", "/v1/x/../"),
        p.replace("/v1/", "/V1/"),
        p.replace(/^\/(v1|internal)\/(\w)/, (_, a: string, b: string) => `/${a}/${b.toUpperCase()}`),
        `${p.slice(0, i - 1)}%2F${p.slice(i)}`,
        `${p.slice(0, i - 1)}%2f..%2f${p.slice(i)}`,
      ];
    };
    const passed: string[] = [];
    for (const route of ROUTES) {
      const need = needOf(route);
      if (need === "open") continue;
      for (const path of concrete(route)) {
        const body = bodyOf(route.method, path);
        for (const url of spell(path)) {
          const none = await api.call(route.method, url, body, { key: "none" });
          if (![401, 404, 405].includes(none.status)) passed.push(`${route.method} ${url} [none] → ${none.status}`);
          for (const key of ["read", "ingest"] as const) {
            if (KEY_HOLDS[key].includes(need)) continue;
            const res = await api.call(route.method, url, body, { key });
            if (![403, 404, 405].includes(res.status)) passed.push(`${route.method} ${url} [${key}] → ${res.status}`);
          }
        }
      }
    }
    expect(passed).toEqual([]);
    expect(await snapshot()).toEqual(before);
  });
});

describe("review5: method override tricks on admin deletes", () => {
  const deletes = ROUTES.filter((r) => r.method === "DELETE" && needOf(r) === "admin").flatMap(concrete);

  it.each(deletes)(
    "POST/GET %s with X-HTTP-Method-Override: DELETE (or ?_method=DELETE) from an ingest key deletes nothing",
    async (path) => {
      const before = await snapshot();
      for (const method of ["POST", "GET", "PUT"]) {
        for (const [url, headers] of [
          [path, { "x-http-method-override": "DELETE" }],
          [path, { "x-method-override": "DELETE", "x-http-method": "DELETE" }],
          [`${path}?_method=DELETE`, {}],
        ] as const) {
          for (const key of ["ingest", "read"]) {
            const res = await api.call(method, url, method === "GET" ? undefined : {}, { key, headers });
            // a read key's GET of the resource may be a 200 read; what matters is that nothing is deleted
            expect(res.status, `${method} ${url} [${key}]`).not.toBe(204);
          }
        }
      }
      expect(await snapshot()).toEqual(before);
    },
  );

  it("HEAD and OPTIONS from an ingest key on every admin route write nothing", async () => {
    const before = await snapshot();
    for (const route of ROUTES.filter((r) => needOf(r) === "admin"))
      for (const path of concrete(route))
        for (const method of ["HEAD", "OPTIONS"]) {
          const res = await api.call(method, path, undefined, { key: "ingest" });
          expect([403, 404, 405], `${method} ${path}`).toContain(res.status);
        }
    expect(await snapshot()).toEqual(before);
  });
});

describe("review5: the open routes stay harmless with any key", () => {
  it("open routes answer every key kind alike and write nothing (/healthz?deep=1 only PINGs)", async () => {
    const before = await snapshot();
    for (const route of ROUTES.filter((r) => needOf(r) === "open")) {
      for (const path of concrete(route)) {
        for (const key of ["none", "read", "ingest"]) {
          const res = await api.call(route.method, path, undefined, { key });
          // 404: the made-up dashboard module name
          expect([200, 404], `${route.method} ${path} [${key}]`).toContain(res.status);
        }
        // an unknown key presented to an open route may be refused (/healthz says so), never served more
        const unknown = await api.call(route.method, path, undefined, { key: "not-a-configured-key-000" });
        expect([200, 401, 404], `${route.method} ${path} [unknown]`).toContain(unknown.status);
      }
    }
    // deep=1: any API key (docs), an unknown key or none is a 401
    expect((await api.get("/healthz?deep=1", { key: "ingest" })).status).toBe(200);
    expect((await api.get("/healthz?deep=1", { key: "none" })).status).toBe(401);
    expect((await api.get("/healthz?deep=1", { key: "not-a-configured-key-000" })).status).toBe(401);
    expect(await snapshot()).toEqual(before);
  });
});

describe("review5: the deletes an ingest key may make touch only their one thing", () => {
  it("removing a member, player or session of a name that does not exist leaves no key without an expiry", async () => {
    const before = new Set(await api.keys());
    const removes = [
      "/v1/counters/rv5ghost1/members/m1",
      "/v1/counters/rv5ghost2/members/m1?period=day",
      "/v1/leaderboards/rv5ghost3/players/p1",
      "/v1/presence/rv5ghost4/members/u1",
    ];
    for (const path of removes) {
      const res = await api.del(path, { key: "ingest" });
      expect([200, 204, 404], `${path} → ${res.status} ${JSON.stringify(res.body)}`).toContain(res.status);
    }
    const added = (await api.keys()).filter((k) => !before.has(k));
    const lasting: string[] = [];
    for (const key of added) if ((await command<number>(api.target, "PTTL", key)) < 0) lasting.push(key);
    expect(lasting).toEqual([]);
  });

  it("removing one player or one session leaves every other player, session and the board's settings as they were", async () => {
    expect((await api.put("/v1/leaderboards/rv5b2", { ties: "reached", maxScore: 100 }, { key: "admin" })).status).toBe(
      200,
    );
    for (const p of ["a", "b"])
      expect((await api.put(`/v1/leaderboards/rv5b2/players/${p}`, { name: p, score: 9 })).status).toBeLessThan(300);
    for (const id of ["a", "b"])
      expect((await api.post("/v1/presence/rv5r2/heartbeats", { id })).status).toBeLessThan(300);
    expect((await api.del("/v1/leaderboards/rv5b2/players/a", { key: "ingest" })).status).toBeLessThan(300);
    expect((await api.del("/v1/presence/rv5r2/members/a", { key: "ingest" })).status).toBeLessThan(300);
    const b = await api.get("/v1/leaderboards/rv5b2/players/b");
    expect({ status: b.status, score: b.body?.score }).toEqual({ status: 200, score: 9 });
    const board = await api.get("/v1/leaderboards/rv5b2");
    expect(JSON.stringify(board.body)).not.toContain('"player":"a"');
    // the admin's guard still holds for the ingest key after the removal
    expect((await api.post("/v1/leaderboards/rv5b2/players/b/score", { by: 1000 })).status).toBe(422);
    const members = await api.get("/v1/presence/rv5r2/members");
    expect(JSON.stringify(members.body)).toContain('"b"');
    expect(JSON.stringify(members.body)).not.toContain('"a"');
  });

  it("an ingest key's set in mode best never lowers a score, and a write naming a season only writes the current one", async () => {
    expect((await api.post("/v1/leaderboards/rv5b/players/p1/score", { set: 1, mode: "best" })).status).toBeLessThan(
      300,
    );
    expect((await api.get("/v1/leaderboards/rv5b/players/p1")).body?.score).toBe(50);
    // season= is a read parameter: on a write it is ignored or refused, never a way into a finished season
    const res = await api.post("/v1/leaderboards/rv5b/players/p1/score?season=previous", { by: 1 });
    expect([200, 400], JSON.stringify(res.body)).toContain(res.status);
    const previous = await api.get("/v1/leaderboards/rv5b?season=previous");
    expect(JSON.stringify(previous.body)).not.toContain('"p1"');
  });
});
