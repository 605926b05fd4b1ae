/**
 * Audit of issue 15 point 4 ("Jobs get their own Redis timeout, not the 3 s API one"): true in
 * functions/routes/jobs.ts and functions/scheduled.ts (JOB_REDIS_TIMEOUT_MS), pinned by no test
 * until this one. The real Worker under `wrangler dev`, its Redis behind the fault proxy, which
 * delays one Upstash request past the API's timeout but well within the jobs'.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFaultyStack, type FaultyStack } from "../../dev/soak.ts";
import { startWranglerDev, type WranglerDev } from "../../dev/wrangler.ts";

const KEYS = { ingest: "at-ingest-key-0001", read: "at-read-key-000001", admin: "at-admin-key-00001" };
const API_TIMEOUT_MS = 400;
const DELAY_MS = 1_500;
let stack: FaultyStack;
let worker: WranglerDev;

beforeAll(async () => {
  stack = await startFaultyStack("at-token");
  worker = await startWranglerDev({
    readyWhen: "up",
    vars: {
      UPSTASH_REDIS_REST_URL: stack.proxy.url,
      UPSTASH_REDIS_REST_TOKEN: stack.token,
      INGEST_KEYS: KEYS.ingest,
      READ_KEYS: KEYS.read,
      ADMIN_KEYS: KEYS.admin,
      KEY_PREFIX: "at",
      REDIS_TIMEOUT_MS: String(API_TIMEOUT_MS),
      JOB_REDIS_TIMEOUT_MS: "20000",
      TRENDING_CACHE_SECONDS: "0",
    },
  });
}, 90_000);

afterAll(async () => {
  await worker?.stop();
  await stack?.stop();
}, 30_000);

async function call(method: string, path: string, key: string, body?: unknown) {
  const res = await fetch(`${worker.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

describe("jobs run on their own Redis timeout (JOB_REDIS_TIMEOUT_MS), not REDIS_TIMEOUT_MS", () => {
  it("warms the scripts", async () => {
    expect((await call("POST", "/v1/trending/at/events", KEYS.ingest, { member: "a" })).status).toBe(200);
    expect((await call("GET", "/v1/trending/at/top", KEYS.read)).status).toBe(200);
    expect((await call("POST", "/internal/jobs/compact", KEYS.admin)).status).toBe(200);
  });

  it(`an API read whose Redis answer takes ${DELAY_MS} ms is a 503 at ${API_TIMEOUT_MS} ms`, async () => {
    stack.proxy.set({ fault: { kind: "delay", ms: DELAY_MS }, times: 1 });
    const res = await call("GET", "/v1/trending/at/top", KEYS.read);
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe("storage_unavailable");
  });

  it(`a job run whose Redis answer takes ${DELAY_MS} ms completes`, async () => {
    // the previous test's delayed request may still be in flight: let it land first
    await new Promise((r) => setTimeout(r, DELAY_MS));
    stack.proxy.set({ fault: { kind: "delay", ms: DELAY_MS }, times: 1 });
    const started = Date.now();
    const res = await call("POST", "/internal/jobs/compact", KEYS.admin);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.job).toBe("compact");
    expect(Date.now() - started).toBeGreaterThanOrEqual(DELAY_MS);
  });
});
