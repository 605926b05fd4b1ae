/**
 * src/job-budget.ts with the isolate's memory of loaded scripts (src/redis/loaded.ts), against
 * the local Upstash server: a job given its `needs` keeps no re-send for a script it was seen
 * sending and Redis answered, so its second run at the same budget does more; after SCRIPT FLUSH
 * the one NOSCRIPT re-send loads the job's other script in the same request (the invocation's
 * spare pays it), the run stays within its budget and the queue is still compacted once.
 */
import { describe, expect, it } from "vitest";
import { SubrequestBudget, countingRedis } from "../../src/job-budget.ts";
import { createRedis } from "../../src/redis/client.ts";
import { compactTrendingJob } from "../../src/trending/jobs.ts";
import { record } from "../../src/trending/trending.ts";
import { command } from "../helpers/upstash-rest.ts";
import { libraryTest } from "../helpers/library.ts";

const lib = libraryTest("jobmemory");
const HOUR = 3_600_000;
const T = Date.UTC(2026, 10, 22, 12, 30);
const LIMIT = 12;

describe("compaction's reserve after a first run", () => {
  it("fresh: 2 re-sends kept; after: none but the spare; SCRIPT FLUSH: 1 re-send, the other script loaded with it", async () => {
    // a client of its own: new to this isolate's memory
    const client = createRedis({ url: lib.target.url, token: lib.target.token });
    const ctx = lib.ctx(T);
    const settings = { retentionHours: 50 };
    for (let i = 0; i < 300; i++) await record(ctx, `s${i}`, [{ member: "x" }], settings);
    const at = Math.floor(T / HOUR) * HOUR + HOUR + 5 * 60_000;
    await command(lib.target, "SCRIPT", "FLUSH");
    const runs: { used: number; reloads: number; loadedAgain: number; batches: number; streams: number }[] = [];
    let more = true;
    for (let i = 0; more && i < 20; i++) {
      if (i === 2) await command(lib.target, "SCRIPT", "FLUSH");
      const budget = new SubrequestBudget(LIMIT);
      const redis = countingRedis(client, budget);
      const result = await compactTrendingJob(
        { ...lib.ctx(at), redis, budget: budget.allowance(budget.limit, compactTrendingJob.needs!) },
        lib.config,
      );
      expect(budget.used).toBeLessThanOrEqual(LIMIT);
      expect(result.skipped).toBe(0);
      more = result.more === true;
      runs.push({
        used: budget.used,
        reloads: budget.reloads,
        loadedAgain: budget.loadedAgain,
        batches: Number(result.batches),
        streams: Number(result.streams),
      });
    }
    console.log("compaction at 12, fresh then after:", runs);
    // fresh: 12 less 2 possible re-sends: 4 compaction scripts (80 streams), both scripts re-sent
    // (`batches` counts the queue reads too)
    expect(runs[0]).toEqual({ used: 11, reloads: 2, loadedAgain: 0, batches: 9, streams: 80 });
    // after: both scripts known loaded, 1 kept for a lost cache: 5 compaction scripts
    expect(runs[1]).toEqual({ used: 11, reloads: 0, loadedAgain: 0, batches: 11, streams: 100 });
    // SCRIPT FLUSH: the queue read answered NOSCRIPT; its EVAL loaded the compaction script too,
    // and the spare paid it: the same 5 scripts, at the limit, not past it
    expect(runs[2]).toEqual({ used: 12, reloads: 1, loadedAgain: 1, batches: 11, streams: 100 });
    expect(runs.at(-1)!.batches).toBeGreaterThan(0);
    expect(runs.reduce((s, r) => s + r.streams, 0)).toBe(300);
  });

  it("a bare count of scripts (no needs given) keeps its re-sends run after run, as before", async () => {
    const client = createRedis({ url: lib.target.url, token: lib.target.token });
    const ctx = lib.ctx(T, "bare");
    for (let i = 0; i < 200; i++) await record(ctx, `b${i}`, [{ member: "x" }], { retentionHours: 50 });
    await command(lib.target, "SCRIPT", "FLUSH");
    const at = Math.floor(T / HOUR) * HOUR + HOUR + 5 * 60_000;
    const runs: { streams: number; reloads: number }[] = [];
    for (let i = 0; i < 2; i++) {
      const budget = new SubrequestBudget(LIMIT);
      const redis = countingRedis(client, budget);
      const result = await compactTrendingJob(
        { ...ctx, now: at, redis, budget: budget.allowance(budget.limit, 2) },
        lib.config,
      );
      runs.push({ streams: Number(result.streams), reloads: budget.reloads });
    }
    // both runs: 2 re-sends kept aside, 4 compaction scripts (the first run re-sent both)
    expect(runs).toEqual([
      { streams: 80, reloads: 2 },
      { streams: 80, reloads: 0 },
    ]);
  });
});
