/**
 * Review 3: the security properties of the HTTP answers (headers, CORS, the
 * error envelope, CSV injection), inside workerd against the real local Upstash
 * server and redis-server.
 */
import { afterAll, describe, expect, it } from "vitest";
import { env } from "cloudflare:workers";
import { command, requireTarget } from "../helpers/upstash-rest.ts";
import { createTestApi, TEST_KEYS } from "../helpers/worker.ts";

const api = createTestApi({ label: "review3-headers" });
afterAll(() => api.cleanup());

const ENVELOPE = {
  error: expect.objectContaining({ code: expect.stringMatching(/^[a-z][a-z0-9_]*$/), message: expect.any(String) }),
};

/** An error answer: the envelope, JSON, and nothing internal in its text. */
function expectCleanError(res: { status: number; body: any; headers: Headers }, status: number) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/);
  expect(res.body).toEqual(ENVELOPE);
  const text = JSON.stringify(res.body);
  // no stack frame, no Redis key name, no configured key
  expect(text).not.toMatch(/\bat .*\.(ts|js):\d+|node_modules|functions\/|src\//);
  expect(text).not.toContain(api.prefix);
  for (const key of Object.values(TEST_KEYS)) expect(text).not.toContain(key);
  expect(res.headers.get("x-request-id")).toBeTruthy();
}

describe("error envelope on every 4xx/5xx (review 3)", () => {
  it("404 for an unknown route, with or without a key, inside and outside /v1", async () => {
    expectCleanError(await api.get("/nope", { key: "none" }), 404);
    expectCleanError(await api.get("/v1/nope"), 404);
    expectCleanError(await api.get("/dashboard/nope.js", { key: "none" }), 404);
  });

  it("401 without a key and 403 with the wrong scope carry the envelope (401 also WWW-Authenticate)", async () => {
    const anon = await api.get("/v1/trending", { key: "none" });
    expectCleanError(anon, 401);
    expect(anon.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expectCleanError(await api.get("/v1/trending", { key: "ingest" }), 403);
    expectCleanError(await api.get("/v1/trending", { key: "not-a-configured-key-0000" }), 401);
  });

  it("a wrong method on an existing path is a 4xx envelope, never a 2xx or a 500", async () => {
    for (const [method, path] of [
      ["PATCH", "/v1/trending/s/top"],
      ["POST", "/v1/trending/s/top"],
      ["DELETE", "/healthz"],
      ["POST", "/"],
      ["PUT", "/openapi.json"],
    ] as const) {
      const res = await api.call(method, path, undefined, { key: "admin" });
      expect(res.status, `${method} ${path}`).toBeGreaterThanOrEqual(400);
      expect(res.status, `${method} ${path}`).toBeLessThan(500);
      expectCleanError(res, res.status);
    }
  });

  it(
    // FIXED (was low): a wrong method on a known path answered 404 "No route for PATCH …" (Hono has
    // no method-not-allowed handling), where RFC 9110 §15.5.6 wants 405 with an Allow header; a
    // client could not tell a typo'd path from a wrong verb. app.notFound now matches the path
    // against the mounts' tables (functions/mount.ts allowedMethods).
    "a wrong method on an existing path is 405 with Allow",
    async () => {
      const res = await api.call("PATCH", "/v1/trending/s/top", undefined, { key: "admin" });
      expect(res.status).toBe(405);
      expect(res.headers.get("allow") ?? "").toContain("GET");
      expect(res.body.error.code).toBe("method_not_allowed");
    },
  );

  it("a malformed JSON body and a malformed percent-escape are 400 envelopes", async () => {
    const bad = await api.post("/v1/trending/s/events", undefined, {
      raw: "{not json",
      headers: { "content-type": "application/json" },
    });
    expectCleanError(bad, 400);
    const escape = await api.get("/v1/trending/%E0%A4%A/top");
    expect(escape.status).toBeGreaterThanOrEqual(400);
    expect(escape.status).toBeLessThan(500);
    expectCleanError(escape, escape.status);
  });

  it("a storage failure is a 503 storage_unavailable envelope naming no host, token or key", async () => {
    const down = createTestApi({
      label: "review3-down",
      vars: { UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9", REDIS_TIMEOUT_MS: "500" },
    });
    const res = await down.get("/v1/counters/c/top");
    expectCleanError(res, 503);
    expect(res.body.error.code).toBe("storage_unavailable");
    expect(JSON.stringify(res.body)).not.toMatch(/127\.0\.0\.1|:9\b|token/i);
  });

  it("a configuration error is a 500 config_error naming the variable, never the key", async () => {
    const weak = createTestApi({ label: "review3-weak", vars: { READ_KEYS: "short-key-123" } });
    const res = await weak.get("/v1/trending", { key: "short-key-123" });
    expect(res.status).toBe(500);
    expect(res.body).toEqual(ENVELOPE);
    expect(res.body.error.code).toBe("config_error");
    expect(res.body.error.message).toContain("READ_KEYS");
    expect(JSON.stringify(res.body)).not.toContain("short-key-123");
  });

  it("/internal/* refusals carry the envelope too: no signature, a bad signature, an unknown job", async () => {
    expectCleanError(await api.post("/internal/jobs/compact", undefined, { key: "none" }), 401);
    expectCleanError(
      await api.post("/internal/jobs/compact", undefined, {
        key: "none",
        headers: { "upstash-signature": "not.a.jwt" },
      }),
      401,
    );
    expectCleanError(await api.post("/internal/jobs/compact", undefined, { key: "read" }), 403);
    const unknown = await api.post("/internal/jobs/nope", undefined, { key: "admin" });
    expect([400, 404]).toContain(unknown.status);
    expectCleanError(unknown, unknown.status);
  });

  it("413 and 415 carry the envelope", async () => {
    const big = await api.post("/v1/trending/s/events", undefined, {
      raw: "x".repeat(1_100_000),
      headers: { "content-type": "application/json" },
    });
    expectCleanError(big, 413);
    const text = await api.post("/v1/trending/s/events", undefined, {
      raw: "{}",
      headers: { "content-type": "text/plain" },
    });
    expectCleanError(text, 415);
    // "/" is the dashboard's page: another method there is a 405 naming what it takes
    const options = await api.call("OPTIONS", "/", undefined, { key: "none" });
    expectCleanError(options, 405);
    expect(options.headers.get("allow")).toBe("GET, HEAD");
  });

  it("a thrown error that is no EdgestatsError is a 500 internal_error envelope with nothing of the error in it", async () => {
    // A Redis reply that is our fault (WRONGTYPE: the counter's key holds a string) stays an error
    // (src/redis/run.ts), unlike an outage: an unhandled error. (This used a malformed Redis URL,
    // which is now a config_error, below.)
    const broken = createTestApi({ label: "review3-broken" });
    const target = requireTarget(env.UPSTASH_REDIS_REST_URL, env.UPSTASH_REDIS_REST_TOKEN);
    await command(target, "SET", `${broken.prefix}:counters:c`, "not a sorted set");
    try {
      const res = await broken.get("/v1/counters/c/top");
      expectCleanError(res, 500);
      expect(res.body.error.code).toBe("internal_error");
      expect(JSON.stringify(res.body)).not.toMatch(/WRONGTYPE|UpstashError|counters:c|not a sorted set/i);
    } finally {
      await broken.cleanup();
    }
  });

  it(
    // FIXED (was low): a malformed UPSTASH_REDIS_REST_URL (a typo when setting the secret) answered
    // every request 500 internal_error, while a missing one, or a short API key, is a 500
    // config_error naming the variable. redisOf now refuses a URL that is not http(s) the same way.
    "a malformed UPSTASH_REDIS_REST_URL is a 500 config_error naming the variable",
    async () => {
      const broken = createTestApi({ label: "review3-broken2", vars: { UPSTASH_REDIS_REST_URL: "not a url" } });
      const res = await broken.get("/v1/counters/c/top");
      expect(res.status).toBe(500);
      expect(res.body.error.code).toBe("config_error");
      expect(res.body.error.message).toContain("UPSTASH_REDIS_REST_URL");
    },
  );

  it("a hostile X-Request-Id is not echoed (no header injection, no markup)", async () => {
    const res = await api.get("/v1/nope", { headers: { "x-request-id": "<script>alert(1)</script>" } });
    expect(res.headers.get("x-request-id")).not.toContain("<");
  });
});

describe("CORS (review 3)", () => {
  const origin = { origin: "https://evil.example" };

  it("keyed answers carry no Access-Control-Allow-Origin: another site's script cannot read them", async () => {
    await api.post("/v1/trending/s/events", { member: "m" });
    for (const res of [
      await api.get("/v1/trending/s/top", { headers: origin }),
      await api.get("/v1/trending", { headers: origin }),
      await api.get("/healthz", { headers: origin }),
      await api.get("/v1/nope", { headers: origin }),
    ]) {
      expect(res.headers.get("access-control-allow-origin")).toBeNull();
      expect(res.headers.get("access-control-allow-credentials")).toBeNull();
    }
  });

  it("a preflight grants nothing and reads nothing", async () => {
    const { requests } = await api.cost(async () => {
      const res = await api.call("OPTIONS", "/v1/trending/s/top", undefined, {
        key: "none",
        headers: {
          ...origin,
          "access-control-request-method": "GET",
          "access-control-request-headers": "authorization",
        },
      });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.headers.get("access-control-allow-origin")).toBeNull();
      expect(res.headers.get("access-control-allow-headers")).toBeNull();
      expect(res.body).toEqual(ENVELOPE);
    });
    expect(requests).toBe(0);
  });
});

describe("response headers (review 3)", () => {
  it("the dashboard page: CSP with no inline script, frame-ancestors 'none', nosniff, DENY, no-referrer", async () => {
    const res = await api.get("/", { key: "none" });
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toMatch(/script-src 'self'(;|$)/);
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("form-action 'none'");
    expect(csp).toContain("base-uri 'none'");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    // the 304 of a revalidation keeps them
    const again = await api.get("/", { key: "none", headers: { "if-none-match": res.headers.get("etag")! } });
    expect(again.status).toBe(304);
    expect(again.headers.get("content-security-policy")).toBe(csp);
  });

  it(
    // FIXED (was low, hardening): keyed JSON answers carried no Cache-Control (only the trending
    // edge cache sets `private, max-age`) and no `X-Content-Type-Options: nosniff`, which OWASP's
    // REST cheat sheet asks of every API answer. functions/middleware/request.ts apiHeaders sets
    // both on /v1/* (Cache-Control only where the route set none).
    "keyed JSON answers say Cache-Control private/no-store and nosniff",
    async () => {
      await api.post("/v1/counters/c/incr", { member: "m" });
      const res = await api.get("/v1/counters/c/top");
      expect(res.status).toBe(200);
      expect(res.headers.get("cache-control") ?? "").toMatch(/no-store|private/);
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    },
  );

  it("error answers are never cacheable by a shared cache", async () => {
    for (const res of [await api.get("/v1/trending", { key: "none" }), await api.get("/v1/nope")])
      expect(res.headers.get("cache-control") ?? "").not.toMatch(/public|s-maxage/);
  });
});

describe("CSV answers (review 3)", () => {
  const FORMULAS = ["=1+1", "+1", "-1", "@SUM(A1)", '=HYPERLINK("http://evil.example","a,b")', "=cmd|' /C calc'!A0"];

  it("neutralises every formula start with a leading ' and still quotes commas and quotes", async () => {
    await api.post("/v1/counters/csvx/incr", { items: FORMULAS.map((member, i) => ({ member, by: i + 1 })) });
    const res = await api.get("/v1/counters/csvx/top?n=10", { headers: { accept: "text/csv" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="counters-csvx-top.csv"');
    const text = res.body as string;
    const lines = text.split("\r\n").filter((l) => l !== "");
    expect(lines[0]).toBe("rank,member,score");
    // every data row's member cell begins with ' (or "' when quoted): no cell starts a formula
    for (const line of lines.slice(1)) expect(line).toMatch(/^\d+,("?)'/);
    expect(text).toContain(`"'=HYPERLINK(""http://evil.example"",""a,b"")"`);
    expect(text).toContain("'=cmd|' /C calc'!A0");
    // scores stay numbers
    expect(lines[1]).toMatch(/,6$/);
  });

  it("neutralises formulas in leaderboard names and presence ids too; a negative score stays a number", async () => {
    await api.put("/v1/leaderboards/csvb/players/p1", { name: "=2+3", score: -5 });
    await api.put("/v1/leaderboards/csvb/players/p2", { name: '@x,"y"', score: 1 });
    const page = (await api.get("/v1/leaderboards/csvb", { headers: { accept: "text/csv" } })).body as string;
    expect(page).toContain(`"'@x,""y"""`);
    expect(page).toContain(",'=2+3,-5,");
    await api.post("/v1/presence/csvr/heartbeats", { ids: ["-2+3", "+x"] });
    const members = (await api.get("/v1/presence/csvr/members", { headers: { accept: "text/csv" } })).body as string;
    expect(members).toContain("'-2+3,");
    expect(members).toContain("'+x,");
  });

  it("a webhook's secret is in neither its JSON nor its CSV listing", async () => {
    const secret = "review3-webhook-secret-0123456789abcdef";
    const put = await api.put(
      "/v1/webhooks/r3hook",
      { url: "https://hooks.example/r3", events: ["trending.entered"], filter: { stream: "s" }, secret },
      { key: "admin" },
    );
    expect(put.status).toBe(201);
    const json = await api.get("/v1/webhooks", { key: "admin" });
    expect(json.body.webhooks.map((w: { name: string }) => w.name)).toContain("r3hook");
    const csv = await api.get("/v1/webhooks", { key: "admin", headers: { accept: "text/csv" } });
    expect(csv.body).toContain("r3hook,https://hooks.example/r3,");
    expect(JSON.stringify(json.body) + String(csv.body)).not.toContain(secret);
    // and a read key cannot list webhooks at all (admin only)
    expectCleanError(await api.get("/v1/webhooks", { headers: { accept: "text/csv" } }), 403);
  });

  it("a hostile path cannot break out of Content-Disposition's filename", async () => {
    const res = await api.get("/v1/counters/a%22%3B%20x%3D%0D/top", { headers: { accept: "text/csv" } });
    // the name is invalid (400); whatever the answer, the header stays one quoted, safe filename
    const disposition = res.headers.get("content-disposition");
    if (disposition !== null) expect(disposition).toMatch(/^attachment; filename="[A-Za-z0-9._-]+\.csv"$/);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(ENVELOPE);
  });
});
