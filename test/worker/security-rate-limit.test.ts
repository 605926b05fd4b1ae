/**
 * Per-key rate limiting (RATE_LIMIT_PER_10S, src/ratelimit.ts: fixed windows as @upstash/ratelimit has them): off by
 * default at no cost, 429 with Retry-After when on, one extra round trip per
 * request while under the limit and none once over it.
 */
import { afterAll, describe, expect, it } from "vitest";
import { TEST_INGEST_KEY_2 } from "../helpers/keys.ts";
import { inOneWindow } from "../helpers/rate-window.ts";
import { TEST_KEYS, createTestApi } from "../helpers/worker.ts";

const limited = createTestApi({ label: "ratelimit", vars: { RATE_LIMIT_PER_10S: "3" } });
const unlimited = createTestApi({ label: "nolimit" });
afterAll(async () => {
  await limited.cleanup();
  await unlimited.cleanup();
});

describe("rate limiting", () => {
  it("is off by default: no limiter keys and no extra Redis round trip", async () => {
    for (let i = 0; i < 10; i++) {
      const { result, requests } = await unlimited.cost(() => unlimited.get("/v1/not-a-route"));
      expect(result.status).toBe(404);
      expect(result.headers.get("ratelimit-limit")).toBeNull();
      expect(requests).toBe(0);
    }
    expect(await unlimited.keys()).toEqual([]);
  });

  it(
    "allows N requests per key per 10 s, then 429 with Retry-After and the error envelope",
    () =>
      inOneWindow(limited, async () => {
        // Loads the limiter's script into Redis (the first EVALSHA after a flush falls back to EVAL).
        await limited.post("/v1/not-a-route", { a: 1 }, { key: "ingest" });
        for (let i = 0; i < 3; i++) {
          const { result, requests } = await limited.cost(() => limited.get("/v1/not-a-route"));
          expect(result.status).toBe(404); // through the limiter, then no such route
          expect(result.headers.get("ratelimit-remaining")).toBe(String(2 - i));
          expect(requests).toBe(1); // the limiter's EVALSHA
        }
        const { result: refused, requests } = await limited.cost(() => limited.get("/v1/not-a-route"));
        expect(refused.status).toBe(429);
        expect(refused.body.error.code).toBe("rate_limited");
        const retryAfter = Number(refused.headers.get("retry-after"));
        expect(retryAfter).toBeGreaterThanOrEqual(1);
        expect(retryAfter).toBeLessThanOrEqual(10);
        expect(refused.body.error.message).toContain(`${retryAfter} s`);
        expect(requests).toBe(1); // the request that found the limit exceeded
        // Over the limit, the isolate refuses without asking Redis again.
        const again = await limited.cost(() => limited.get("/v1/counters/c/top"));
        expect(again.result.status).toBe(429);
        expect(again.requests).toBe(0);
        // One counter per API key seen (read, and ingest from the warm-up), expiring with its window.
        const keys = await limited.keys();
        expect(keys).toHaveLength(2);
        for (const key of keys) expect(key).toMatch(new RegExp(`^${limited.prefix}:ratelimit:[0-9a-f]{12}:\\d+$`));
      }),
    60_000,
  );

  it(
    "counts each API key separately",
    () =>
      inOneWindow(limited, async () => {
        for (let i = 0; i < 3; i++) expect((await limited.get("/v1/not-a-route", { key: "admin" })).status).toBe(404);
        expect((await limited.get("/v1/not-a-route", { key: "admin" })).status).toBe(429);
        // A different ingest key of the rotation list has its own budget.
        expect((await limited.post("/v1/not-a-route", { a: 1 }, { key: TEST_INGEST_KEY_2 })).status).toBe(404);
      }),
    60_000,
  );

  it("does not limit unauthenticated requests on the key's budget, nor the open endpoints", async () => {
    expect((await limited.get("/v1/not-a-route", { key: "none" })).status).toBe(401);
    for (let i = 0; i < 5; i++) expect((await limited.get("/healthz", { key: "none" })).status).toBe(200);
  });

  it("answers 503 storage_unavailable when Redis is unreachable, writing nothing", async () => {
    const env = { ...limited.env, UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9" } as Env;
    const res = await limited.app.request(
      "/v1/not-a-route",
      { method: "POST", headers: { authorization: `Bearer ${TEST_KEYS.ingest}` } },
      env,
    );
    expect(res.status).toBe(503);
    expect(((await res.json()) as any).error.code).toBe("storage_unavailable");
  });
});
