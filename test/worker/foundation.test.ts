import { afterAll, describe, expect, it } from "vitest";
import { TEST_INGEST_KEY_2, TEST_SIGNING_KEYS } from "../helpers/keys.ts";
import { signQstash } from "../helpers/qstash-sign.ts";
import { TEST_KEYS, createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "foundation" });
afterAll(() => api.cleanup());

describe("operations endpoints", () => {
  it("attack: an unauthenticated GET /healthz costs no Redis command (it answers from the Worker alone)", async () => {
    for (const path of ["/healthz", "/healthz?deep=0"]) {
      const { result, requests, commands } = await api.cost(() => api.get(path, { key: "none" }));
      expect(result.status).toBe(200);
      expect(result.body).toEqual({ ok: true });
      expect({ requests, commands }).toEqual({ requests: 0, commands: 0 });
    }
  });

  it("attack: /healthz?deep=1 without a valid key is refused before any Redis call", async () => {
    for (const key of ["none", "not-a-key-at-all-0000"]) {
      const { result, requests } = await api.cost(() => api.get("/healthz?deep=1", { key }));
      expect(result.status).toBe(401);
      expect(result.body.error.code).toBe("unauthorized");
      expect(result.body.error.message).toMatch(/needs a valid API key/);
      expect(requests).toBe(0);
    }
  });

  it("GET /healthz?deep=1 with a key of any scope pings Redis in one round trip", async () => {
    for (const key of ["read", "ingest", "admin"]) {
      const { result, requests } = await api.cost(() => api.get("/healthz?deep=1", { key }));
      expect(result.status).toBe(200);
      expect(result.body.ok).toBe(true);
      expect(result.body.redis.ok).toBe(true);
      expect(typeof result.body.redis.latencyMs).toBe("number");
      expect(requests).toBe(1);
    }
  });

  it("GET /healthz with a read or admin key checks Redis too (the contract); an ingest key alone does not", async () => {
    for (const key of ["read", "admin"]) {
      const { result, requests } = await api.cost(() => api.get("/healthz", { key }));
      expect(result.status).toBe(200);
      expect(result.body.redis.ok).toBe(true);
      expect(requests).toBe(1);
    }
    const ingest = await api.cost(() => api.get("/healthz", { key: "ingest" }));
    expect(ingest.result.body).toEqual({ ok: true });
    expect(ingest.requests).toBe(0);
    const unknown = await api.cost(() => api.get("/healthz", { key: "not-a-key-at-all-0000" }));
    expect(unknown.result.status).toBe(401);
    expect(unknown.requests).toBe(0);
  });

  it("serves the OpenAPI 3.1 document and a docs page without a key", async () => {
    const doc = await api.get("/openapi.json", { key: "none" });
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe("3.1.0");
    expect(doc.body.paths["/healthz"].get).toBeDefined();
    expect(doc.body.paths["/internal/jobs/{job}"].post).toBeDefined();
    expect(doc.body.components.securitySchemes.bearerAuth.scheme).toBe("bearer");
    const page = await api.get("/docs", { key: "none" });
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
    expect(String(page.body)).toContain("/healthz");
  });

  it("puts a request id on every response, errors included", async () => {
    const ok = await api.get("/healthz", { key: "none" });
    const missing = await api.get("/nope", { key: "none" });
    expect(ok.headers.get("x-request-id")).toMatch(/.{8,}/);
    expect(missing.headers.get("x-request-id")).toMatch(/.{8,}/);
    expect(missing.headers.get("x-request-id")).not.toBe(ok.headers.get("x-request-id"));
  });

  it("answers unknown routes with a 404 error envelope", async () => {
    const res = await api.get("/v1/nothing-here");
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("not_found");
    expect(res.body.error.message).toMatch(/No route/);
  });
});

describe("authentication", () => {
  it("rejects a missing or unknown key with 401 on /v1", async () => {
    const missing = await api.get("/v1/anything", { key: "none" });
    expect(missing.status).toBe(401);
    expect(missing.body.error.code).toBe("unauthorized");
    const unknown = await api.get("/v1/anything", { key: "not-a-key" });
    expect(unknown.status).toBe(401);
    const almost = await api.get("/v1/anything", { key: TEST_KEYS.read.slice(0, -1) });
    expect(almost.status).toBe(401);
  });

  it("rejects a known key of the wrong scope with 403", async () => {
    const readWrites = await api.post("/v1/anything", { a: 1 }, { key: "read" });
    expect(readWrites.status).toBe(403);
    expect(readWrites.body.error.code).toBe("forbidden");
    const ingestReads = await api.get("/v1/anything", { key: "ingest" });
    expect(ingestReads.status).toBe(403);
  });

  it("accepts every key of a comma-separated list (rotation) and admin keys everywhere", async () => {
    expect((await api.post("/v1/anything", { a: 1 }, { key: TEST_INGEST_KEY_2 })).status).toBe(404);
    expect((await api.get("/v1/anything", { key: "admin" })).status).toBe(404);
    expect((await api.post("/v1/anything", { a: 1 }, { key: "admin" })).status).toBe(404);
  });
});

describe("request bodies", () => {
  it("refuses bodies over 1 MiB with 413", async () => {
    const big = JSON.stringify({ member: "x".repeat(1024 * 1024) });
    const res = await api.post("/v1/anything", undefined, {
      raw: big,
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe("payload_too_large");
  });

  it("refuses a non-JSON content type with 415", async () => {
    const res = await api.post("/v1/anything", undefined, {
      raw: "member=a",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe("unsupported_media_type");
  });

  it("refuses malformed and absurdly nested JSON with 400", async () => {
    const bad = await api.post("/v1/anything", undefined, {
      raw: '{"member":',
      headers: { "content-type": "application/json" },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("malformed_json");
    const deep = await api.post("/v1/anything", undefined, {
      raw: "[".repeat(100) + "]".repeat(100),
      headers: { "content-type": "application/json" },
    });
    expect(deep.status).toBe(400);
    expect(deep.body.error.code).toBe("malformed_json");
  });

  it("refuses a malformed Idempotency-Key with 400", async () => {
    const res = await api.post("/v1/anything", { a: 1 }, { headers: { "idempotency-key": "has spaces in it" } });
    expect(res.status).toBe(400);
    expect(res.body.error.details[0].path).toBe("Idempotency-Key");
  });
});

describe("storage outage", () => {
  it("turns an unreachable Redis into a clean 503, never a stack trace", async () => {
    const headers = { authorization: `Bearer ${TEST_KEYS.read}` };
    const res = await api.app.request("/healthz?deep=1", { headers }, {
      ...api.env,
      UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9",
    } as Env);
    expect(res.status).toBe(503);
    const body = (await res.json()) as any;
    expect(body.ok).toBe(false);
    expect(body.error.code).toBe("storage_unavailable");
    expect(JSON.stringify(body)).not.toMatch(/at .*\.ts|Error:/);
  });
});

describe("internal jobs", () => {
  const url = "http://localhost/internal/jobs/nope";
  function sign(key: string, claims: { sub?: string; body?: string; exp?: number }) {
    return signQstash(key, {
      url: claims.sub ?? url,
      ...(claims.body === undefined ? {} : { body: claims.body }),
      ...(claims.exp === undefined ? {} : { exp: claims.exp }),
    });
  }

  it("needs an admin key or a valid QStash signature", async () => {
    expect((await api.post("/internal/jobs/nope", undefined, { key: "none" })).status).toBe(401);
    expect((await api.post("/internal/jobs/nope", undefined, { key: "ingest" })).status).toBe(403);
    const admin = await api.post("/internal/jobs/nope", undefined, { key: "admin" });
    expect(admin.status).toBe(404);
    expect(admin.body.error.message).toMatch(/No job 'nope'/);
  });

  it("accepts a signature by the current or the next signing key, and nothing else", async () => {
    for (const key of [TEST_SIGNING_KEYS.current, TEST_SIGNING_KEYS.next]) {
      const res = await api.post("/internal/jobs/nope", undefined, {
        key: "none",
        headers: { "upstash-signature": await sign(key, {}) },
      });
      expect(res.status).toBe(404); // authenticated; the job does not exist
    }
    const cases = [
      await sign("some-other-key", {}),
      await sign(TEST_SIGNING_KEYS.current, { sub: "http://localhost/internal/jobs/other" }),
      await sign(TEST_SIGNING_KEYS.current, { body: '{"x":1}' }),
      await sign(TEST_SIGNING_KEYS.current, { exp: Math.floor(Date.now() / 1000) - 60 }),
      "not-a-jwt",
    ];
    for (const signature of cases) {
      const res = await api.post("/internal/jobs/nope", undefined, {
        key: "admin",
        headers: { "upstash-signature": signature },
      });
      expect(res.status).toBe(401);
    }
  });
});
