/**
 * Review 16, in workerd: the Worker under `wrangler dev` talking to Redis through dev/fault-proxy.ts,
 * for the faults of a reply's body (test/redis/review16-http.test.ts has them on Node's fetch):
 * workerd's fetch must give up on a body that stalls at REDIS_TIMEOUT_MS and on a body cut short,
 * both after the write was applied, as a 503 with Retry-After that a keyed retry replays once;
 * a gateway's HTML page is a 503 too.
 */
import { describe, expect, it } from "vitest";
import { faultyWorkerForTests } from "../helpers/faulty-worker.ts";

const TIMEOUT_MS = 1500;
const fw = faultyWorkerForTests("r16w", TIMEOUT_MS);
const { call } = fw;

async function score(member: string): Promise<number> {
  const res = await call("GET", `/v1/counters/r16w/members/${member}`);
  return res.status === 404 ? 0 : (res.body.score as number);
}

describe("the Worker (workerd) under faults of a reply's body", () => {
  it.each([
    ["stall-body", "a body that stalls after its headers"],
    ["cut-body", "a body cut short by the connection closing"],
  ] as const)("%s (%s): 503 with Retry-After, and the keyed retry replays the applied write", async (kind, _what) => {
    await call("POST", "/v1/counters/r16w/incr", { member: "warm" }); // the script is loaded
    fw.stack.proxy.set({ fault: { kind }, times: 1 });
    const failed = await call("POST", "/v1/counters/r16w/incr", { member: kind, by: 3 }, `${kind}-1`);
    expect(failed.status).toBe(503);
    expect(failed.body.error.code).toBe("storage_unavailable");
    expect(failed.headers.get("retry-after")).toBe("1");
    if (kind === "stall-body") expect(failed.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(failed.ms).toBeLessThan(TIMEOUT_MS + 3000);
    const retry = await call("POST", "/v1/counters/r16w/incr", { member: kind, by: 3 }, `${kind}-1`);
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(await score(kind)).toBe(3);
  });

  it("a gateway's HTML 502 page: 503 storage_unavailable, nothing written", async () => {
    fw.stack.proxy.set({
      fault: { kind: "status", status: 502, body: "<html><h1>502 Bad Gateway</h1></html>" },
      times: 1,
    });
    const failed = await call("POST", "/v1/counters/r16w/incr", { member: "html", by: 2 });
    expect(failed.status).toBe(503);
    expect(failed.body.error.code).toBe("storage_unavailable");
    expect(await score("html")).toBe(0);
  });
});
