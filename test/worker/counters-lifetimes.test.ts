/**
 * Review findings on counter lifetimes: a bucket emptied by a member delete
 * and written again gets its ttl back; a write dated earlier in the current
 * period is not "older than its ttl".
 */
import { afterAll, describe, expect, it } from "vitest";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi } from "../helpers/worker.ts";

const T0 = Date.UTC(2026, 10, 22, 12, 30);

describe("counter bucket lifetimes", () => {
  const api = createTestApi({ label: "ctr-lifetimes", start: T0 });
  afterAll(() => api.cleanup());
  const bucket = () => `${api.prefix}:counters:life:hour:2026112212`;

  it("a bucket emptied by a member delete and written again with a ttl expires (it is not left permanent)", async () => {
    expect((await api.post("/v1/counters/life/incr", { member: "x", period: "hour", ttl: 600 })).status).toBe(200);
    expect(await command<number>(api.target, "PTTL", bucket())).toBeGreaterThan(590_000);
    const del = await api.del(
      "/v1/counters/life/members/x?period=hour&from=2026-11-22T12:00:00Z&to=2026-11-22T12:00:00Z",
    );
    expect(del.status).toBe(204);
    expect(await command<number>(api.target, "EXISTS", bucket())).toBe(0);
    expect((await api.post("/v1/counters/life/incr", { member: "y", period: "hour", ttl: 600 })).status).toBe(200);
    const pttl = await command<number>(api.target, "PTTL", bucket());
    expect(pttl).toBeGreaterThan(590_000);
    expect(pttl).toBeLessThanOrEqual(600_000);
    const top = await api.get("/v1/counters/life/top?period=hour&from=2026-11-22T12:00:00Z&to=2026-11-22T12:00:00Z");
    expect(top.body.items).toEqual([{ rank: 1, member: "y", score: 1 }]);
  });

  it("a write dated this morning into today's bucket with a 1 h ttl is accepted (the bucket has not ended)", async () => {
    const res = await api.post("/v1/counters/today/incr", {
      member: "z",
      period: "day",
      at: "2026-11-22T00:00:00Z",
      ttl: 3600,
    });
    expect(res.status).toBe(200);
    // a bucket that ended longer than the ttl ago is still refused
    const old = await api.post("/v1/counters/today/incr", {
      member: "z",
      period: "day",
      at: "2026-11-21T00:00:00Z",
      ttl: 3600,
    });
    expect(old.status).toBe(400);
    expect(old.body.error.message).toMatch(/ttl/);
  });
});
