/**
 * The same faults seen through HTTP: the real Worker under `wrangler dev`,
 * talking to Redis through the fault proxy. Every outage must be a 503
 * `storage_unavailable` envelope, nothing half written, and the service must
 * come back by itself.
 */
import { describe, expect, it } from "vitest";
import { faultyWorkerForTests } from "../helpers/faulty-worker.ts";

// Long enough that a healthy call on a loaded 2-core CI machine never hits it; only the hang test waits for it.
const fw = faultyWorkerForTests("fw", 2000);
const { call, keys: KEYS } = fw;

async function score(member: string): Promise<number> {
  const res = await call("GET", `/v1/counters/fw/members/${member}`);
  return res.status === 404 ? 0 : res.body.score;
}

function expectUnavailable(res: { status: number; body: any }): void {
  expect(res.status).toBe(503);
  expect(res.body.error.code).toBe("storage_unavailable");
}

describe("the Worker under storage faults", () => {
  it("a Redis call that never answers becomes a 503 once REDIS_TIMEOUT_MS passes; then it recovers", async () => {
    await call("POST", "/v1/counters/fw/incr", { member: "warm" });
    fw.stack.proxy.set({ fault: { kind: "hang" }, times: 1 });
    expectUnavailable(await call("POST", "/v1/counters/fw/incr", { member: "hang", by: 3 }));
    expect(await score("hang")).toBe(0);
    expect((await call("POST", "/v1/counters/fw/incr", { member: "hang", by: 3 })).status).toBe(200);
    expect(await score("hang")).toBe(3);
  });

  it("/healthz?deep=1 says 503 while the gateway fails and 200 after", async () => {
    fw.stack.proxy.set({ fault: { kind: "status", status: 502 }, times: 1 });
    const down = await fetch(`${fw.url}/healthz?deep=1`, { headers: { authorization: `Bearer ${KEYS.read}` } });
    expect(down.status).toBe(503);
    expect(((await down.json()) as any).redis.ok).toBe(false);
    expect(
      (await fetch(`${fw.url}/healthz?deep=1`, { headers: { authorization: `Bearer ${KEYS.read}` } })).status,
    ).toBe(200);
  });

  it("a lost response is a 503, and the retry with the same Idempotency-Key counts it once", async () => {
    fw.stack.proxy.set({ fault: { kind: "lose-response" }, times: 1 });
    const lost = await call("POST", "/v1/counters/fw/incr", { member: "lost", by: 5 }, "lost-1");
    expectUnavailable(lost);
    const retried = await call("POST", "/v1/counters/fw/incr", { member: "lost", by: 5 }, "lost-1");
    expect(retried.status).toBe(200);
    expect(retried.headers.get("idempotent-replayed")).toBe("true");
    expect(await score("lost")).toBe(5);
  });

  it("redis-server stopped: writes and reads are 503 storage_unavailable; started again: acknowledged data is all there", async () => {
    expect((await call("POST", "/v1/counters/fw/incr", { member: "kept", by: 11 })).status).toBe(200);
    await fw.stack.stopRedis();
    try {
      expectUnavailable(await call("POST", "/v1/counters/fw/incr", { member: "kept", by: 1 }));
      expectUnavailable(await call("GET", "/v1/counters/fw/members/kept"));
      expect(
        (await fetch(`${fw.url}/healthz?deep=1`, { headers: { authorization: `Bearer ${KEYS.read}` } })).status,
      ).toBe(503);
    } finally {
      await fw.stack.startRedis();
    }
    expect(await score("kept")).toBe(11);
    expect((await call("POST", "/v1/counters/fw/incr", { member: "kept", by: 1 })).status).toBe(200);
    expect(await score("kept")).toBe(12);
  });

  it("the Upstash server stopped: 503; started again: recovers without a restart of the Worker", async () => {
    await fw.stack.stopUpstash();
    try {
      expectUnavailable(await call("POST", "/v1/counters/fw/incr", { member: "gw", by: 1 }));
    } finally {
      await fw.stack.startUpstash();
    }
    expect((await call("POST", "/v1/counters/fw/incr", { member: "gw", by: 1 })).status).toBe(200);
    expect(await score("gw")).toBe(1);
  });
});
