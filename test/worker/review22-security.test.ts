/**
 * Review 22: who may call what, as /openapi.json says it (API.md: "the OpenAPI document the
 * service serves must describe all of it"), and what answers say. Review 17 held the router's
 * routes to API.md's words; this file walks the served document itself:
 * - every operation of /openapi.json × no key / read / ingest / admin, against the scope the
 *   document states for it (finding below: it states none a client can read);
 * - the operations whose summary names a scope ("(admin)", "(ingest)", "(read key)") keep it;
 * - Authorization spellings: the scheme in any case, tabs or several spaces, and what is refused
 *   (another scheme, two tokens, a key with a comma, a prefix or an extension of a key);
 * - a 503 or 500 from storage names no URL, token, key prefix or Redis reply;
 * - a webhook's secret is never answered, refusals of a bad one included.
 *
 * A finding is `it.fails`, asserting the right behaviour, with severity and the suggested fix above.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createTestApi, TEST_KEYS } from "../helpers/worker.ts";

const api = createTestApi({ label: "review22-security" });
afterAll(async () => {
  await api.cleanup();
});

type Scope = "read" | "ingest" | "admin";
type Need = Scope | "open";
interface Operation {
  method: string;
  /** OpenAPI path, `{param}` segments. */
  path: string;
  summary: string;
  security: Record<string, string[]>[] | undefined;
}

async function operations(): Promise<{ ops: Operation[]; global: Record<string, string[]>[] }> {
  const res = await api.get("/openapi.json", { key: "none" });
  expect(res.status).toBe(200);
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(res.body.paths as Record<string, Record<string, any>>))
    for (const [method, op] of Object.entries(item))
      if (op && typeof op === "object" && op.responses)
        ops.push({ method: method.toUpperCase(), path, summary: op.summary ?? "", security: op.security });
  return { ops, global: res.body.security };
}

/** A concrete path: valid names, a job that does not exist (an admin gets its 404, nothing runs). */
function fill(path: string): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) =>
    name === "job" ? "r22-no-such-job" : name === "module" ? "r22.js" : `r22${name.slice(0, 2)}`,
  );
}

const KEYS: Scope[] = ["read", "ingest", "admin"];
const HOLDS: Record<Scope, Scope[]> = { read: ["read", "admin"], ingest: ["ingest", "admin"], admin: ["admin"] };

/** What one key kind gets from an operation: 401, 403, or past auth. */
async function outcome(op: Operation, key: Scope | "none"): Promise<"401" | "403" | "past"> {
  const { result, requests } = await api.cost(() =>
    api.call(op.method, fill(op.path), op.method === "GET" || op.method === "DELETE" ? undefined : {}, { key }),
  );
  if (result.status === 401 || result.status === 403) {
    // a refusal is decided before any Redis call
    expect({ op: `${op.method} ${op.path} [${key}]`, requests }).toEqual({
      op: `${op.method} ${op.path} [${key}]`,
      requests: 0,
    });
    return String(result.status) as "401" | "403";
  }
  return "past";
}

async function expectHonoured(op: Operation, need: Need): Promise<void> {
  const what = `${op.method} ${op.path} (${need})`;
  const got: Record<string, string> = {};
  const want: Record<string, string> = {};
  for (const key of ["none", ...KEYS] as const) {
    got[key] = await outcome(op, key);
    want[key] =
      need === "open"
        ? got[key] === "401" && key !== "none"
          ? "401"
          : "past"
        : key === "none"
          ? "401"
          : HOLDS[need].includes(key)
            ? "past"
            : "403";
  }
  expect({ what, ...got }).toEqual({ what, ...want });
}

/**
 * The scope an operation states in its `security` requirement (OpenAPI 3.1 §4.8.30: for a scheme
 * other than oauth2/openIdConnect the array "MAY contain a list of role names which are required
 * for the execution"): `[]` or an empty alternative is open.
 */
function statedScope(op: Operation, global: Record<string, string[]>[]): Need | undefined {
  const security = op.security ?? global;
  if (security.length === 0 || security.some((alt) => Object.keys(alt).length === 0)) return "open";
  const roles = security.flatMap((alt) => alt.bearerAuth ?? []);
  return roles.length === 1 ? (roles[0] as Scope) : undefined;
}

describe("review22: every operation of /openapi.json, with each key kind", () => {
  it("the document lists every feature's operations, the jobs' and the open ones (so the walk is not empty)", async () => {
    const { ops } = await operations();
    const listed = ops.map((o) => `${o.method} ${o.path}`);
    for (const op of [
      "GET /healthz",
      "POST /internal/jobs/{job}",
      "DELETE /v1/counters/{counter}/members/{member}",
      "POST /v1/leaderboards/{board}/rank",
      "PUT /v1/webhooks/{name}",
      "GET /openapi.json",
    ])
      expect(listed).toContain(op);
    expect(ops.length).toBeGreaterThanOrEqual(55);
  });

  it("an operation whose summary names its key ('(admin)', '(ingest)', '(read key)', 'no key') is held to it", async () => {
    const { ops } = await operations();
    let checked = 0;
    for (const op of ops) {
      const need: Need | undefined = /\(admin\)/.test(op.summary)
        ? "admin"
        : /\(ingest\)/.test(op.summary)
          ? "ingest"
          : /\(read key\)/.test(op.summary)
            ? "read"
            : /no key|needs none/.test(op.summary)
              ? "open"
              : undefined;
      if (need === undefined) continue;
      checked++;
      await expectHonoured(op, need);
    }
    expect(checked).toBeGreaterThanOrEqual(15);
  });

  // low, fixed: /openapi.json did not say which key an operation needs. Every /v1 operation
  // inherited the document's `security: [{ bearerAuth: [] }]` with no role, and only some summaries
  // said "(admin)": PUT /v1/leaderboards/{board}, POST /v1/counters/{counter}/union and others are
  // admin-only with nothing in their operation saying so; a client generated from the document found
  // out from a 403. Now each /v1 operation's `security` names its scope as a role,
  // `[{ bearerAuth: ["admin"] }]` (OpenAPI 3.1 allows role names for an http scheme), from the table
  // the auth middleware refuses by (functions/openapi-document.ts `withScopes` over
  // functions/middleware/auth.ts `defaultScope`), so the document and the 403s cannot drift apart.
  it("every operation states its scope in `security`, and a key of each kind gets exactly that", async () => {
    const { ops, global } = await operations();
    const unstated = ops.filter((op) => statedScope(op, global) === undefined).map((o) => `${o.method} ${o.path}`);
    expect(unstated).toEqual([]);
    for (const op of ops) await expectHonoured(op, statedScope(op, global) as Need);
  });
});

describe("review22: Authorization spellings", () => {
  const path = "/v1/counters/r22auth/top";
  const read = TEST_KEYS.read;

  it("the scheme in any case, with a tab or several spaces before the key, is accepted", async () => {
    for (const header of [
      `Bearer ${read}`,
      `bearer ${read}`,
      `BEARER ${read}`,
      `Bearer\t${read}`,
      `Bearer   ${read}`,
    ]) {
      const res = await api.get(path, { key: "none", headers: { authorization: header } });
      expect({ header, status: res.status }).toEqual({ header, status: 200 });
    }
  });

  it("another scheme, no key, two tokens, a key with a comma, a prefix or an extension of a key: 401 envelope, no Redis call, no key echoed", async () => {
    const bad = [
      `Basic ${btoa(`x:${read}`)}`,
      `Token ${read}`,
      "Bearer",
      "Bearer ",
      `Bearer ${read} ${read}`,
      `Bearer ${read},${TEST_KEYS.admin}`,
      `Bearer ${read.slice(0, -1)}`,
      `Bearer ${read}0`,
      `Bearer ${read.toUpperCase()}`,
      `${read}`,
      `Bearer "${read}"`,
    ];
    for (const header of bad) {
      const { result, requests } = await api.cost(() =>
        api.get(path, { key: "none", headers: { authorization: header } }),
      );
      expect({ header, status: result.status, code: result.body?.error?.code, requests }).toEqual({
        header,
        status: 401,
        code: "unauthorized",
        requests: 0,
      });
      expect(result.headers.get("www-authenticate")).toBe('Bearer realm="edgestats"');
      const text = JSON.stringify(result.body) + [...result.headers].join("\n");
      expect(text.includes(read) || text.includes(TEST_KEYS.admin), header).toBe(false);
    }
  });
});

describe("review22: storage errors name nothing of the deployment", () => {
  it("an unreachable Redis is a 503 storage_unavailable naming no URL, token or key prefix", async () => {
    const down = createTestApi({
      label: "review22-down",
      vars: { UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9", UPSTASH_REDIS_REST_TOKEN: "r22-secret-token-value" },
    });
    for (const [method, path, body] of [
      ["GET", "/v1/counters/c/top"],
      ["POST", "/v1/counters/c/incr", { member: "m" }],
    ] as const) {
      const res = await down.call(method, path, body, { key: "admin" });
      expect({ path, status: res.status, code: res.body?.error?.code }).toEqual({
        path,
        status: 503,
        code: "storage_unavailable",
      });
      const text = JSON.stringify(res.body) + [...res.headers].join("\n");
      for (const secret of ["127.0.0.1", ":9", "r22-secret-token-value", down.prefix, "ECONNREFUSED", "fetch failed"])
        expect(text.includes(secret), `${path} answer holds ${secret}`).toBe(false);
    }
  });

  it("a wrong Redis token is a 5xx envelope naming neither the token nor Redis' reply", async () => {
    const wrong = createTestApi({
      label: "review22-token",
      vars: { UPSTASH_REDIS_REST_TOKEN: "r22-wrong-token-0001" },
    });
    const res = await wrong.get("/v1/counters/c/top", { key: "read" });
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(typeof res.body?.error?.code).toBe("string");
    const text = JSON.stringify(res.body) + [...res.headers].join("\n");
    for (const secret of ["r22-wrong-token-0001", wrong.prefix, "Unauthorized", "WRONGPASS", "stack", "    at "])
      expect(text.includes(secret), `answer holds ${secret}`).toBe(false);
  });
});

describe("review22: a webhook's secret is never answered", () => {
  const secret = "r22-webhook-secret-0123456789abcdef";

  it("not by the PUT, the list, the deliveries, nor a refused PUT (bad url, unknown field, bad event)", async () => {
    const good = { url: "https://example.com/hook", events: ["trending.entered"], filter: { stream: "s" }, secret };
    const answers = [
      await api.put("/v1/webhooks/r22hook", good, { key: "admin" }),
      await api.get("/v1/webhooks", { key: "admin" }),
      await api.get("/v1/webhooks/r22hook/deliveries", { key: "admin" }),
      await api.put("/v1/webhooks/r22hook", { ...good, url: "http://example.com/hook" }, { key: "admin" }),
      await api.put("/v1/webhooks/r22hook", { ...good, secrett: secret }, { key: "admin" }),
      await api.put("/v1/webhooks/r22hook", { ...good, events: ["nope"] }, { key: "admin" }),
      await api.put("/v1/webhooks/r22hook", { ...good, secret: secret.repeat(20) }, { key: "admin" }),
    ];
    expect(answers.map((a) => a.status)).toEqual([201, 200, 200, 400, 400, 400, 400]);
    for (const [i, res] of answers.entries()) {
      const text = JSON.stringify(res.body) + [...res.headers].join("\n");
      expect(text.includes(secret.slice(0, 20)), `answer ${i} holds the secret`).toBe(false);
    }
  });
});
