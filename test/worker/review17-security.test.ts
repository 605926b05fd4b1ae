/**
 * Review 17: authentication and scopes across the whole HTTP API (API.md common rules and v2
 * Scopes, docs/guarantees.md › Only the right keys get in, Optional rate limiting).
 *
 * review-scopes, review5-scopes and review3-abuse hold the /v1 routes of the mount table to their
 * scopes; this file adds:
 * - a matrix taken from the app's router itself (`app.routes`, every method but the middlewares'
 *   ALL), so the app's own routes (/openapi.json, /docs) and any route added later, however it is
 *   added, are covered: no key → 401 envelope with `WWW-Authenticate: Bearer` and no Redis call;
 *   every key kind → past auth or 403, never more than its scope; HEAD and OPTIONS of each path;
 *   request variants (queued, CSV, method override, forwarded-for headers, Idempotency-Key) and
 *   path spellings with a wrong key;
 * - no presented key is ever echoed, in a body, a header or a log line, over the whole matrix;
 * - with the rate limiter on: spoofed client headers do not give a key a new budget, and what
 *   bypasses it or is counted before a refusal that needs no Redis (the findings below).
 *
 * Findings were `it.fails`, asserting the right behaviour, with severity and the suggested fix; the
 * three found (all low, all rate-limit reach) are fixed and flipped, their comments say how.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { TEST_INGEST_KEY_2, TEST_SIGNING_KEYS } from "../helpers/keys.ts";
import { signQstash } from "../helpers/qstash-sign.ts";
import { inOneWindow } from "../helpers/rate-window.ts";
import { createTestApi, TEST_KEYS, type TestResponse } from "../helpers/worker.ts";

const api = createTestApi({ label: "review17-security" });
const limited = createTestApi({ label: "review17-sec-rl", vars: { RATE_LIMIT_PER_10S: "2" } });
const fresh = createTestApi({ label: "review17-sec-rl2", vars: { RATE_LIMIT_PER_10S: "2" } });
afterAll(async () => {
  await api.cleanup();
  await limited.cleanup();
  await fresh.cleanup();
});

type Scope = "read" | "ingest" | "admin";
type Need = Scope | "open";
interface Route {
  method: string;
  /** Hono path, `:param` segments. */
  path: string;
}

/** The app's routes as its router holds them: every handler, none of the middlewares (method ALL). */
const ROUTES: Route[] = [
  ...new Map(
    api.app.routes
      .filter((r) => r.method !== "ALL")
      .map((r) => [`${r.method} ${r.path}`, { method: r.method, path: r.path }]),
  ).values(),
];

/**
 * What each route needs, from API.md's words (not from auth.ts): open are /healthz, /openapi.json,
 * /docs and the dashboard; admin is "everything, including deletes and running jobs": a whole
 * stream/counter/histogram/room/board's DELETE, a histogram's or board's configuration (PUT of the
 * name itself), union, ingest status, webhooks and /internal; the subset ranking is a read; other
 * GETs read; other writes ingest.
 */
function needOf({ method, path }: Route): Need {
  if (["/healthz", "/openapi.json", "/docs", "/", "/dashboard.js", "/dashboard.css"].includes(path)) return "open";
  if (path.startsWith("/dashboard/")) return "open";
  if (path.startsWith("/internal/")) return "admin";
  if (path.startsWith("/v1/webhooks") || path === "/v1/ingest/status") return "admin";
  const segments = path.split("/").filter(Boolean);
  if ((method === "DELETE" || method === "PUT") && segments.length === 3 && segments[2]?.startsWith(":"))
    return "admin";
  if (method === "POST" && path.endsWith("/union")) return "admin";
  if (method === "POST" && path.endsWith("/rank")) return "read";
  return method === "GET" ? "read" : "ingest";
}

/** A concrete path: names valid, the job one that does not exist (an admin gets its 404, nothing runs). */
function fill(path: string): string {
  return path.replace(/:(\w+)/g, (_, name: string) =>
    name === "job" ? "r17-no-such-job" : name === "module" ? "r17.js" : `r17${name.slice(0, 2)}`,
  );
}

const KEYS: Scope[] = ["read", "ingest", "admin"];
const HOLDS: Record<Scope, Scope[]> = { read: ["read", "admin"], ingest: ["ingest", "admin"], admin: ["admin"] };
const PRESENTED = [...Object.values(TEST_KEYS), TEST_INGEST_KEY_2];
const UNKNOWN_KEY = "r17-unknown-key-never-configured-0001";

/** The response, with what it says about the presented key: no body, header or log line may carry it. */
function leaks(res: TestResponse, logged: string[]): string[] {
  const text = [
    typeof res.body === "string" ? res.body : JSON.stringify(res.body ?? ""),
    ...[...res.headers].map(([k, v]) => `${k}: ${v}`),
    ...logged,
  ].join("\n");
  return [...PRESENTED, UNKNOWN_KEY].filter((k) => text.includes(k));
}

let logged: string[] = [];
beforeEach(() => {
  logged = [];
  for (const level of ["log", "info", "warn", "error", "debug"] as const)
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
      logged.push(args.map(String).join(" "));
    });
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** A request, its Redis round trips, and a check that it echoes no key anywhere. */
async function probe(
  method: string,
  path: string,
  key: string,
  headers: Record<string, string> = {},
  body?: unknown,
): Promise<TestResponse & { requests: number; what: string }> {
  const { result, requests } = await api.cost(() => api.call(method, path, body, { key, headers }));
  const what = `${method} ${path} [${key}${Object.keys(headers).length ? ` ${JSON.stringify(headers)}` : ""}]`;
  expect(leaks(result, logged), `${what} echoes a key`).toEqual([]);
  return { ...result, requests, what };
}

function expectUnauthorized(res: Awaited<ReturnType<typeof probe>>) {
  // (a HEAD answer has no body to carry the envelope)
  const code = res.what.startsWith("HEAD ") ? "unauthorized" : res.body?.error?.code;
  expect({ what: res.what, status: res.status, code, requests: res.requests }).toEqual({
    what: res.what,
    status: 401,
    code: "unauthorized",
    requests: 0,
  });
  expect(res.headers.get("www-authenticate") ?? "", res.what).toMatch(/^Bearer/);
}

function expectForbidden(res: Awaited<ReturnType<typeof probe>>) {
  expect({ what: res.what, status: res.status, code: res.body?.error?.code, requests: res.requests }).toEqual({
    what: res.what,
    status: 403,
    code: "forbidden",
    requests: 0,
  });
}

describe("review17: every route of the app's router", () => {
  it("the router holds the routes of every feature, the jobs, the dashboard and the app's own (so the matrix is not empty)", () => {
    const listed = ROUTES.map((r) => `${r.method} ${r.path}`);
    for (const route of [
      "GET /healthz",
      "GET /openapi.json",
      "GET /docs",
      "GET /",
      "POST /internal/jobs/:job",
      "PUT /v1/webhooks/:name",
      "POST /v1/leaderboards/:board/rank",
      "DELETE /v1/counters/:counter/members/:member",
    ])
      expect(listed).toContain(route);
    expect(ROUTES.length).toBeGreaterThanOrEqual(55);
  });

  it("no key, an unknown key, a wrong scope: 401/403 envelopes before any Redis call; each key that holds the scope gets past auth", async () => {
    for (const route of ROUTES) {
      const need = needOf(route);
      const path = fill(route.path);
      if (need === "open") {
        const res = await probe(route.method, path, "none");
        expect([401, 403], res.what).not.toContain(res.status);
        expect(res.status, res.what).toBeLessThan(500);
        expect(res.requests, res.what).toBe(0);
        // an unknown key on an open route: ignored, or (/healthz, which then checks Redis) the 401 envelope
        const unknown = await probe(route.method, path, UNKNOWN_KEY);
        if (unknown.status === 401) expectUnauthorized(unknown);
        else expect({ what: unknown.what, requests: unknown.requests }).toEqual({ what: unknown.what, requests: 0 });
        continue;
      }
      expectUnauthorized(await probe(route.method, path, "none"));
      expectUnauthorized(await probe(route.method, path, UNKNOWN_KEY));
      for (const key of KEYS) {
        const res = await probe(route.method, path, key);
        if (HOLDS[need].includes(key)) expect([401, 403], `${res.what} → ${res.status}`).not.toContain(res.status);
        else expectForbidden(res);
      }
    }
  });

  it("HEAD of every GET route and OPTIONS of every path: the same key rules, nothing read from Redis without the scope", async () => {
    for (const route of ROUTES) {
      const need = needOf(route);
      if (need === "open") continue;
      const path = fill(route.path);
      const methods = route.method === "GET" ? ["HEAD", "OPTIONS"] : ["OPTIONS"];
      for (const method of methods) {
        expectUnauthorized(await probe(method, path, "none"));
        for (const key of KEYS) {
          const res = await probe(method, path, key);
          if (method === "HEAD" && !HOLDS[need].includes(key)) expect(res.status, res.what).toBe(403);
          // a preflight or a method the route does not take never reaches Redis, whatever the key
          if (method === "OPTIONS") {
            expect([403, 405], res.what).toContain(res.status);
            expect(res.requests, res.what).toBe(0);
            expect(res.headers.get("access-control-allow-origin"), res.what).toBeNull();
          }
        }
      }
    }
  });

  it("a wrong key stays refused with every variant: queued, CSV, method override, forwarded-for, Idempotency-Key, lower-case method", async () => {
    const variants: Record<string, string>[] = [
      { prefer: "respond-async" },
      { accept: "text/csv" },
      { "x-http-method-override": "GET", "x-method-override": "GET", "x-http-method": "GET" },
      { "x-forwarded-for": "127.0.0.1", "cf-connecting-ip": "127.0.0.1", "x-real-ip": "127.0.0.1" },
      { "idempotency-key": "r17-variant" },
      { "x-edgestats-client": "dashboard" },
    ];
    for (const route of ROUTES) {
      const need = needOf(route);
      if (need === "open") continue;
      const path = fill(route.path);
      for (const key of KEYS.filter((k) => !HOLDS[need].includes(k)))
        for (const headers of variants) expectForbidden(await probe(route.method, path, key, headers));
      // fetch upper-cases the six standard methods; a wrong key is refused the same
      const lower = KEYS.find((k) => !HOLDS[need].includes(k));
      if (lower) expectForbidden(await probe(route.method.toLowerCase(), path, lower));
    }
  });

  it("path spellings (trailing slash, encoded letters, %2F, dot segments, case, full-width letters) never get a wrong key past its scope or to Redis", async () => {
    const spellings = (path: string): string[] => {
      const [, first = "", ...rest] = path.split("/");
      const tail = rest.length ? `/${rest.join("/")}` : "";
      return [
        `${path}/`,
        `/${first.replace(/^(.)/, (ch: string) => `%${ch.charCodeAt(0).toString(16)}`)}${tail}`,
        `/${first.replace(/^(.)/, (ch: string) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`)}${tail}`,
        `${path.replace(/\/([^/]+)$/, "/x/../$1")}`,
        `${path.replace(/\/([^/]+)$/, "/x/%2e%2E/$1")}`,
        `${path.replace(/\/([^/]+)$/, "%2F$1")}`,
        `${path.replace(/\/([^/]+)$/, "//$1")}`,
        path.toUpperCase(),
        path.replace(/[a-z]/, (ch) => String.fromCharCode(ch.charCodeAt(0) + 0xfee0)),
      ];
    };
    for (const route of ROUTES) {
      const need = needOf(route);
      if (need === "open") continue;
      for (const spelled of spellings(fill(route.path))) {
        // no key: 401, or a path outside /v1 and /internal (upper case, a full-width letter) that no route has
        const none = await probe(route.method, spelled, "none");
        expect({ what: none.what, status: [401, 404].includes(none.status), requests: none.requests }).toEqual({
          what: none.what,
          status: true,
          requests: 0,
        });
        for (const key of KEYS.filter((k) => !HOLDS[need].includes(k))) {
          const res = await probe(route.method, spelled, key);
          // refused, or a path no route has (404/405) or a refused spelling (400), with nothing read or written
          expect([400, 403, 404, 405], `${res.what} → ${res.status}`).toContain(res.status);
          expect(res.requests, res.what).toBe(0);
        }
      }
    }
  });
});

describe("review17: keys in odd places are never echoed", () => {
  it("an oversized, odd-character or doubled Authorization is a 401 that names no key; a key in the path or query is not echoed back", async () => {
    const odd = [
      `${TEST_KEYS.admin}${"x".repeat(600)}`,
      `${TEST_KEYS.admin},${TEST_KEYS.read}`,
      `"${TEST_KEYS.admin}"`,
      `${TEST_KEYS.admin}\tx`,
    ];
    for (const key of odd) expectUnauthorized(await probe("GET", "/v1/counters/c/top", key));
    const inPath = await probe("GET", `/v1/counters/${TEST_KEYS.admin}x/top?key=${UNKNOWN_KEY}`, "none");
    expect(inPath.status).toBe(401);
    expect(leaks(inPath, logged)).toEqual([]);
  });
});

describe("review17: the rate limiter (RATE_LIMIT_PER_10S=2)", () => {
  it("client headers (forwarded-for, dashboard, the scheme's spelling) never give a key a fresh budget", () =>
    inOneWindow(limited, async () => {
      await limited.get("/v1/not-a-route", { key: "read" });
      await limited.get("/v1/not-a-route", { key: "read" });
      const variants: { key: string; headers: Record<string, string> }[] = [
        {
          key: "read",
          headers: { "x-forwarded-for": "10.0.0.9", "cf-connecting-ip": "10.0.0.9", "x-real-ip": "10.0.0.9" },
        },
        { key: "read", headers: { "x-edgestats-client": "dashboard" } },
        { key: "none", headers: { authorization: `bEaReR   ${TEST_KEYS.read}` } },
        { key: "read", headers: { "x-ratelimit-key": "other", "idempotency-key": "fresh" } },
      ];
      for (const { key, headers } of variants) {
        const res = await limited.call("GET", "/v1/not-a-route", undefined, { key, headers });
        expect({ headers, status: res.status }).toEqual({ headers, status: 429 });
      }
    }));

  // Finding (low), fixed: /healthz?deep=1 (any key) and GET /healthz with a read key PING Redis
  // once per request and were not rate limited: a key over its limit kept making Redis commands
  // (Upstash bills per command) through an open route. Now, with the limiter on, a request that
  // will PING counts against its key's window (functions/middleware/rate-limit.ts `limitRequest`),
  // and one over the limit is a 429 without the PING.
  it("fixed: a key over its limit gets 429 from /healthz's Redis check, not another PING", () =>
    inOneWindow(limited, async () => {
      // the second ingest key of the rotation list: a budget no other test of this file uses
      for (let i = 0; i < 2; i++) await limited.post("/v1/not-a-route", {}, { key: TEST_INGEST_KEY_2 });
      expect((await limited.post("/v1/not-a-route", {}, { key: TEST_INGEST_KEY_2 })).status).toBe(429);
      const { result, commands } = await limited.cost(() => limited.get("/healthz?deep=1", { key: TEST_INGEST_KEY_2 }));
      expect({ status: result.status, commands }).toEqual({ status: 429, commands: 0 });
    }));

  // Finding (low), fixed: an admin key's /internal/jobs/* calls were not rate limited: an admin key
  // over its limit could still start jobs (each many Redis commands) back to back. Now
  // `signedOrAdmin` (functions/middleware/qstash.ts) runs the limiter once an admin key is
  // accepted, as /v1/* does. QStash's signed calls carry no key and stay unlimited.
  it("fixed: an admin key over its limit gets 429 from /internal/jobs/*, before the job runs", () =>
    inOneWindow(limited, async () => {
      await limited.get("/v1/not-a-route", { key: "admin" });
      await limited.get("/v1/not-a-route", { key: "admin" });
      expect((await limited.get("/v1/not-a-route", { key: "admin" })).status).toBe(429);
      const { result, commands } = await limited.cost(() =>
        limited.post("/internal/jobs/compact", undefined, { key: "admin" }),
      );
      expect({ status: result.status, commands }).toEqual({ status: 429, commands: 0 });
    }));

  // Finding (low), fixed: with the limiter on, a request whose declared Content-Length is over
  // 1 MiB, or whose Idempotency-Key is malformed (over 255 characters), was refused (413 / 400) only
  // after the limiter's EVALSHA: one Redis command for a refusal the headers alone decide. Now
  // functions/middleware/request.ts `headerGuard` refuses both before `rateLimit`. (A streamed body
  // over 1 MiB without a declared length is still counted first: refusing it before the limiter
  // would mean reading up to 1 MiB for a key already over its limit.)
  it("fixed: a declared oversize body or a malformed Idempotency-Key is refused before the limiter's Redis call", async () => {
    const big = await limited.cost(() =>
      limited.call("POST", "/v1/counters/c/incr", undefined, {
        key: "ingest",
        headers: { "content-length": String(2 * 1024 * 1024), "content-type": "application/json" },
        raw: "{}",
      }),
    );
    expect({ status: big.result.status, commands: big.commands }).toEqual({ status: 413, commands: 0 });
    const idem = await limited.cost(() =>
      limited.post(
        "/v1/counters/c/incr",
        { member: "m" },
        { key: "ingest", headers: { "idempotency-key": "k".repeat(300) } },
      ),
    );
    expect({ status: idem.result.status, commands: idem.commands }).toEqual({ status: 400, commands: 0 });
  });

  it("under the limit, /healthz's Redis check and an admin key's job count in the key's window; QStash's signed calls are never limited", () =>
    // a prefix of its own: a budget (Redis counter and isolate memory) no other test has used
    inOneWindow(fresh, async () => {
      const health = await fresh.get("/healthz", { key: "admin" });
      expect({ status: health.status, remaining: health.headers.get("ratelimit-remaining") }).toEqual({
        status: 200,
        remaining: "1",
      });
      const job = await fresh.post("/internal/jobs/trim", undefined, { key: "admin" });
      expect({ status: job.status, remaining: job.headers.get("ratelimit-remaining") }).toEqual({
        status: 200,
        remaining: "0",
      });
      expect((await fresh.post("/internal/jobs/trim", undefined, { key: "admin" })).status).toBe(429);
      // the schedule's signed call carries no key: it runs, and says nothing of a limit
      const url = "http://localhost/internal/jobs/trim";
      const signed = await fresh.post("/internal/jobs/trim", undefined, {
        key: "none",
        headers: { "upstash-signature": await signQstash(TEST_SIGNING_KEYS.current, { url }) },
      });
      expect({ status: signed.status, limit: signed.headers.get("ratelimit-limit") }).toEqual({
        status: 200,
        limit: null,
      });
    }));

  it("a 401 or 403 costs no Redis call with the limiter on", () =>
    inOneWindow(limited, async () => {
      for (let i = 0; i < 3; i++) {
        const denied = await limited.cost(() => limited.del("/v1/counters/c", { key: "ingest" }));
        expect({ status: denied.result.status, commands: denied.commands }).toEqual({ status: 403, commands: 0 });
        const none = await limited.cost(() => limited.post("/v1/counters/c/incr", { member: "m" }, { key: "none" }));
        expect({ status: none.result.status, commands: none.commands }).toEqual({ status: 401, commands: 0 });
      }
    }));
});
