/**
 * Issue 12's abuse run, shortened for the suite (`npm run soak -- --abuse` runs
 * it for 60 s): every scope's worst requests against the real Worker under
 * `wrangler dev`, on a redis-server of its own so INFO and SLOWLOG see only
 * this run.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ABUSE_KEYS, READ_GROWTH_BOUND, runAbuse, startAbuseTarget, type AbuseReport } from "../../dev/abuse.ts";

let target: Awaited<ReturnType<typeof startAbuseTarget>>;
let report: AbuseReport;

beforeAll(async () => {
  target = await startAbuseTarget();
  report = await runAbuse({
    url: target.url,
    keys: ABUSE_KEYS,
    redis: target.redis,
    seconds: Number(process.env.ABUSE_SECONDS ?? 16),
    log: console.log,
  });
}, 240_000);

afterAll(async () => {
  await target?.stop();
}, 30_000);

describe("abuse: each scope's worst requests for a while", () => {
  it("loses no acknowledged write and answers every refusal with a 4xx error envelope, never a 5xx", () => {
    expect(report.problems).toEqual([]);
    expect(report.requests).toBeGreaterThan(100);
    expect(Object.keys(report.byStatus).filter((s) => Number(s) >= 500)).toEqual([]);
  });

  it("keeps what the read phase adds to Redis memory under the stated bound", () => {
    expect(report.readGrowth).toBeLessThan(READ_GROWTH_BOUND);
  });

  it("runs no single script for longer than 50 ms, the worst legal requests replayed alone (SLOWLOG)", () => {
    expect(report.probes.length).toBeGreaterThan(5);
    expect(report.slow).toEqual([]);
  });
});
