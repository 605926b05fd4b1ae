/**
 * src/job-budget.ts against the local Upstash server: the counting client counts every HTTP
 * request it sends (an EVALSHA answered NOSCRIPT and the EVAL after it: two, and a reload), a
 * job plans within its allowance with its possible reloads kept aside (after SCRIPT FLUSH, every
 * script of the run is reloaded and it still stays within), and the guard refuses a call past the
 * limit without sending it.
 */
import { describe, expect, it } from "vitest";
import { SubrequestBudget, countingRedis } from "../../src/job-budget.ts";
import { compactTrendingJob } from "../../src/trending/jobs.ts";
import { record } from "../../src/trending/trending.ts";
import { command } from "../helpers/upstash-rest.ts";
import { libraryTest } from "../helpers/library.ts";

const lib = libraryTest("jobbudget");
const HOUR = 3_600_000;
const T = Date.UTC(2026, 10, 22, 12, 30);

describe("the counting client", () => {
  it("counts EVALSHA, the EVAL after NOSCRIPT (a reload), PING and a pipeline's exec", async () => {
    const budget = new SubrequestBudget(10);
    const redis = countingRedis(lib.redis, budget);
    await command(lib.target, "SCRIPT", "FLUSH");
    const script = "return 7";
    const sha = (await command<string>(lib.target, "SCRIPT", "LOAD", script)) as string;
    await command(lib.target, "SCRIPT", "FLUSH");
    await expect(redis.evalsha(sha, [], [])).rejects.toThrow(/NOSCRIPT/);
    expect(await redis.eval(script, [], [])).toBe(7);
    expect(await redis.evalsha(sha, [], [])).toBe(7);
    expect(await redis.ping()).toBe("PONG");
    const p = redis.pipeline!();
    p.ping();
    p.ping();
    await p.exec();
    expect({ used: budget.used, reloads: budget.reloads }).toEqual({ used: 5, reloads: 1 });
  });

  it("refuses a call past the limit without sending it", async () => {
    const budget = new SubrequestBudget(1);
    const redis = countingRedis(lib.redis, budget);
    await redis.ping();
    await expect(redis.ping()).rejects.toThrow(/subrequest budget of 1 spent/);
    expect(budget.used).toBe(1);
  });
});

describe("a job in its allowance", () => {
  it("compaction after SCRIPT FLUSH: its reloads fit, it stops with more, and runs finish the queue", async () => {
    const ctx = lib.ctx(T);
    const settings = { retentionHours: 50 };
    for (let i = 0; i < 120; i++) await record(ctx, `s${i}`, [{ member: "x" }], settings);
    const at = Math.floor(T / HOUR) * HOUR + HOUR + 5 * 60_000;
    await command(lib.target, "SCRIPT", "FLUSH");
    let streams = 0;
    const runs: { used: number; reloads: number; batches: number; more: boolean }[] = [];
    for (let i = 0; i < 6; i++) {
      const budget = new SubrequestBudget(11);
      const redis = countingRedis(lib.redis, budget);
      const result = await compactTrendingJob(
        { ...lib.ctx(at), redis, budget: budget.allowance(budget.limit, 2) },
        lib.config,
      );
      expect(budget.used).toBeLessThanOrEqual(11);
      streams += Number(result.streams);
      runs.push({ used: budget.used, reloads: budget.reloads, batches: Number(result.batches), more: !!result.more });
      if (!result.more) break;
    }
    // 11 less 2 possible reloads: 4 batches of 2 and the closing look at the queue
    expect(runs[0]).toEqual({ used: 11, reloads: 2, batches: 9, more: true });
    expect(runs[1]!.reloads).toBe(0);
    expect(runs.at(-1)!.more).toBe(false);
    expect(streams).toBe(120);
  });
});
