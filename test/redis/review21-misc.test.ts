/**
 * Review 21 leftovers through the library (real Redis behind the local Upstash server).
 * 2. Leaderboards' maxIncrement with fractional increments: the guard compares the request's sum of
 *    |by| per player, added as doubles in the order of the items (the Lua that ZINCRBY's own double
 *    addition matches), with the bound as the decimal text it was set with. One item exactly at the
 *    bound passes and the next double above it is refused; a batch whose double sum rounds above
 *    the bound is refused, one that rounds to it passes, so the same increments in another order
 *    can be judged otherwise (docs/leaderboards.md, "Guards").
 * 4. Jobs' wall-clock share: past JOB_TIME_MS (20 s) of an invocation's clock, no job starts a step
 *    (src/job-budget.ts): a slow Redis (dev/fault-proxy.ts, each round trip 5 s on the injected
 *    clock) stops the sweep with `more: true` and the jobs after it deferred, well before the
 *    platform's 30 s.
 */
import { describe, expect, it } from "vitest";
import { runScheduledCounted } from "../../functions/scheduled.ts";
import { counterKeys } from "../../src/counters/keys.ts";
import { sweepCountersJob } from "../../src/counters/jobs.ts";
import { RejectedError } from "../../src/errors.ts";
import { countingRedis, JOB_TIME_MS, SubrequestBudget } from "../../src/job-budget.ts";
import * as lb from "../../src/leaderboards/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, keysUnder } from "../helpers/upstash-rest.ts";

const lib = libraryTest("r21misc");
const faults = lib.faultProxy();
const T = Date.UTC(2027, 2, 3, 12);

async function refusal(p: Promise<unknown>): Promise<{ code: string; path: string | undefined; message: string }> {
  try {
    await p;
  } catch (error) {
    expect(error).toBeInstanceOf(RejectedError);
    const e = error as RejectedError;
    return { code: e.code, path: e.details?.[0]?.path, message: e.message };
  }
  throw new Error("not refused");
}

describe("review 21: maxIncrement with fractional increments", () => {
  it("one item at the bound passes, the next double above is refused, either sign; set is not bounded", async () => {
    const ctx = lib.ctx(T, "inc-one");
    await lb.configure(ctx, "g", { maxIncrement: 0.3 });
    await lb.join(ctx, "g", "p", { name: "P" });
    expect(await lb.changeScore(ctx, "g", "p", { by: 0.3 })).toMatchObject({ score: 0.3 });
    expect(await lb.changeScore(ctx, "g", "p", { by: -0.3 })).toMatchObject({ score: 0 });
    for (const by of [0.30000000000000004, -0.30000000000000004])
      expect(await refusal(lb.changeScore(ctx, "g", "p", { by }))).toEqual({
        code: "score_rejected",
        path: "",
        message: expect.stringContaining("adds more than maxIncrement 0.3 to 'p'"),
      });
    expect(await lb.changeScore(ctx, "g", "p", { set: 5 })).toMatchObject({ score: 5 });
    expect((await lb.getPlayer(ctx, "g", "p")).score).toBe(5);
  });

  it("a batch's |by| sum is a double sum in item order: 0.3+0.2+0.1 passes 0.6, 0.1+0.2+0.3 is refused, nothing written", async () => {
    const ctx = lib.ctx(T, "inc-batch");
    await lb.configure(ctx, "g", { maxIncrement: 0.6 });
    await lb.join(ctx, "g", "p", { name: "P" });
    await lb.join(ctx, "g", "q", { name: "Q" });
    // 0.1 + 0.2 = 0.30000000000000004, + 0.3 = 0.6000000000000001 > 0.6: refused at the third item
    const before = (await keysUnder(lib.target, ctx.prefix)).sort();
    expect(
      await refusal(
        lb.changeScores(ctx, "g", [
          { player: "p", by: 0.1 },
          { player: "p", by: 0.2 },
          { player: "p", by: 0.3 },
        ]),
      ),
    ).toEqual({ code: "score_rejected", path: "items.2", message: expect.stringContaining("maxIncrement 0.6") });
    expect((await keysUnder(lib.target, ctx.prefix)).sort()).toEqual(before);
    expect((await lb.getPlayer(ctx, "g", "p")).score).toBe(0);
    // 0.3 + 0.2 = 0.5, + 0.1 = 0.6: passes, and ZINCRBY's sum in the same order is 0.6 too
    const done = await lb.changeScores(ctx, "g", [
      { player: "q", by: 0.3 },
      { player: "q", by: 0.2 },
      { player: "q", by: 0.1 },
    ]);
    expect(done.results.map((r) => r.score)).toEqual([0.3, 0.5, 0.6]);
    // the guard adds |by|: +0.2 then -0.1 spends 0.30000000000000004 of a 0.3 bound (refused)
    // though the score moves by 0.1; each player has a bound of their own
    await lb.configure(ctx, "g", { maxIncrement: 0.3 });
    expect(
      await refusal(
        lb.changeScores(ctx, "g", [
          { player: "q", by: 0.3 },
          { player: "p", by: 0.2 },
          { player: "p", by: -0.1 },
        ]),
      ),
    ).toMatchObject({ code: "score_rejected", path: "items.2" });
    expect((await lb.getPlayer(ctx, "g", "q")).score).toBe(0.6);
  });
});

describe("review 21: jobs stop starting steps past JOB_TIME_MS of the invocation's clock", () => {
  /** Lists `n` bucket keys of a deleted counter `c` in the purge hash under `prefix`. */
  async function purgeList(prefix: string, n: number) {
    const fields = Array.from({ length: n }, (_, i) => [`${prefix}:counters:c:h:${i}`, "1"]).flat();
    await command(lib.target, "HSET", counterKeys.purge(prefix), ...fields);
  }
  /** A clock on which each round trip through the proxy takes `ms` (a slow Redis), from T. */
  const slowClock = (ms: number) => {
    const from = faults.proxy.stats().forwarded;
    return () => T + (faults.proxy.stats().forwarded - from) * ms;
  };

  it("the sweep stops at its next step once 20 s are up: 2 of its 4 batches, more: true", async () => {
    expect(JOB_TIME_MS).toBe(20_000);
    const { prefix } = lib.ctx(T, "time-sweep");
    await purgeList(prefix, 2000);
    // (the scripts loaded first, so every round trip is a step's)
    const other = lib.ctx(T, "time-warm").prefix;
    await purgeList(other, 1);
    const warm = new SubrequestBudget(100);
    await sweepCountersJob(
      { redis: countingRedis(faults.redis, warm), prefix: other, now: T, budget: warm.allowance(100, 2) },
      lib.config,
    );
    faults.proxy.set({ kind: "delay", ms: 20 });
    const clock = slowClock(5000);
    const invocation = new SubrequestBudget(100, clock);
    const redis = countingRedis(faults.redis, invocation);
    const result = await sweepCountersJob(
      { redis, prefix, now: T, budget: invocation.allowance(100, sweepCountersJob.needs!) },
      lib.config,
    );
    faults.proxy.heal();
    // pick, sweep (5 s each), pick, sweep: 20 s, and the third batch is not started
    expect({ result, subrequests: invocation.used, clock: clock() - T }).toEqual({
      result: { checked: 1000, deleted: 0, more: true },
      subrequests: 4,
      clock: 20_000,
    });
    expect(Number(await command(lib.target, "HLEN", counterKeys.purge(prefix)))).toBe(1000);
    // the same run without a clock (no wall-clock share) sweeps them all
    const free = new SubrequestBudget(100);
    expect(
      await sweepCountersJob(
        { redis: countingRedis(lib.redis, free), prefix, now: T, budget: free.allowance(100, sweepCountersJob.needs!) },
        lib.config,
      ),
    ).toEqual({ checked: 1000, deleted: 0, more: false });
  });

  it("the cron: a job whose turn comes past the 20 s is deferred, its work left for the next run", async () => {
    const env = lib.appEnv(
      { ingest: "r21-ingest-key-00001", read: "r21-read-key-0000001", admin: "r21-admin-key-000001" },
      { UPSTASH_REDIS_REST_URL: faults.proxy.url },
    ) as unknown as Env;
    await purgeList(lib.prefix, 1);
    // (a first run loads every script of the trigger: the timed run's round trips are its steps')
    await runScheduledCounted("5 * * * *", T, { ...env, UPSTASH_REDIS_REST_URL: lib.target.url } as Env);
    await purgeList(lib.prefix, 4000);
    // each round trip 8 s: the snapshot's list (8 s), compaction's batch (16 s) and the trending
    // webhooks' look (24 s) start before the 20 s are up; the sweep after them does not start
    const clock = slowClock(8000);
    const run = await runScheduledCounted("5 * * * *", T, env, clock);
    expect({ subrequests: run.subrequests, clock: clock() - T, sweep: run.results["sweep-counters"] }).toEqual({
      subrequests: 3,
      clock: 24_000,
      sweep: { deferred: true },
    });
    expect(run.results["webhooks.trending"]).toEqual({ webhooks: 0 });
    expect(Number(await command(lib.target, "HLEN", counterKeys.purge(lib.prefix)))).toBe(4000);
    // the same run on the real clock (milliseconds) sweeps them all
    expect((await runScheduledCounted("5 * * * *", T, env)).results["sweep-counters"]).toEqual({
      checked: 4000,
      deleted: 0,
      more: false,
    });
  });
});
