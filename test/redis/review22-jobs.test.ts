/**
 * Review 22, periodic jobs at library level and through the cron entry's code (real Redis behind
 * the local Upstash server): a trigger whose cron expression maps no job, the scripts each job
 * sends against the `needs` it declares (what the scheduler keeps back for it), overlapping
 * compaction runs at small shares, a leaderboard snapshot whose board is deleted and made again
 * mid-build, and the wall clock's share with the scheduler's second turn.
 *
 * Bugs are `it.fails` tests asserting the right behaviour, with severity and fix above each.
 */
import { describe, expect, it } from "vitest";
import { JOBS } from "../../functions/jobs.ts";
import { runScheduledCounted, runTrigger } from "../../functions/scheduled.ts";
import { readConfig } from "../../src/config.ts";
import type { Ctx } from "../../src/context.ts";
import * as counters from "../../src/counters/index.ts";
import { SubrequestBudget, countingRedis } from "../../src/job-budget.ts";
import type { Job } from "../../src/jobs.ts";
import * as leaderboards from "../../src/leaderboards/index.ts";
import { heartbeat } from "../../src/presence/index.ts";
import { HOUR, MINUTE } from "../../src/time.ts";
import { record, top } from "../../src/trending/index.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, keysUnder } from "../helpers/upstash-rest.ts";
import { receiverForTests } from "../helpers/webhook-receiver.ts";

const lib = libraryTest("rv22jobs", { timeoutMs: 4000 });
const T0 = Date.UTC(2026, 10, 28, 10, 20);
const TRENDING = { retentionHours: 50 };
const KEYS = { ingest: "r22-ingest-key-00001", read: "r22-read-key-0000001", admin: "r22-admin-key-000001" };

/** `job` as the cron runs it: the invocation's counted client, a share of `limit`, and the scripts it was seen sending. */
async function budgeted(job: Job, ctx: Ctx, limit = 10_000, config = lib.config) {
  const invocation = new SubrequestBudget(limit);
  const redis = countingRedis(ctx.redis, invocation);
  const budget = invocation.allowance(limit, job.needs ?? 0);
  const result = await job({ ...ctx, redis, budget }, config);
  return { result, sent: invocation.used, scripts: invocation.current?.size ?? 0 };
}

describe("a cron trigger whose expression maps no job", () => {
  // FIXED (was BUG (medium); review 22 phase 2: runTrigger rejects before any job runs, naming the
  // expression and those CRON_JOBS maps). Was: CRON_JOBS maps jobs by the exact cron string of wrangler.toml. An operator who
  // moves the hourly trigger (wrangler.toml `crons = ["7 * * * *", …]`, or the dashboard's Triggers
  // page) without editing functions/jobs.ts gets a trigger that runs no job and whose invocation
  // Cloudflare records as "ok": compaction, the sweep, the snapshot and the trending webhooks stop
  // for good, silently (runTrigger resolves `{}`; nothing is logged). The test in review 8 checks
  // the repository's own wrangler.toml only, not a deployment's. Suggested fix: runTrigger rejects
  // (after logging) when CRON_JOBS has no entry for the expression, naming it and the expressions
  // it knows, so Cron Events show the failure.
  it("rejects naming the unknown expression instead of resolving as a run of no job", async () => {
    const env = lib.appEnv(KEYS) as unknown as Env;
    const refused = runTrigger("7 * * * *", T0, env);
    await expect(refused).rejects.toThrow(/^scheduled 7 \* \* \* \*: no jobs for this cron expression/);
    await expect(refused).rejects.toThrow(/"5 \* \* \* \*", "\* \* \* \* \*"/);
  });

  it("the known expressions still run their jobs (one Redis call each when idle)", async () => {
    const env = lib.appEnv(KEYS, { KEY_PREFIX: lib.ctx(T0, "cron-known").prefix }) as unknown as Env;
    const hourly = await runTrigger("5 * * * *", T0, env);
    expect(Object.keys(hourly)).toEqual(["leaderboards.snapshot", "compact", "webhooks.trending", "sweep-counters"]);
    const minute = await runTrigger("* * * * *", T0, env);
    expect(Object.keys(minute)).toEqual(["trim", "webhooks"]);
  });
});

describe("each job sends at most the distinct scripts its `needs` declare", () => {
  // What the scheduler keeps back for a job (its `needs.scripts` re-sends before it has run in an
  // isolate) is only right if the job never sends more distinct scripts than it declares. Busy runs
  // of every job, one after another in this file's isolate; the job's seen set accumulates.
  const receiver = receiverForTests();
  const config = readConfig({ WEBHOOKS_ALLOW_LOCAL_HTTP: "true", LEADERBOARD_SNAPSHOT_CHUNK: "3" });

  it("compact, trim, sweep-counters, leaderboards.snapshot, webhooks.trending and webhooks", async () => {
    const ctx = lib.ctx(T0, "needs");
    const seen: Record<string, number> = {};
    const run = async (name: string, now: number) => {
      const job = JOBS[name]!;
      const { scripts, result } = await budgeted(job, { ...ctx, now }, 10_000, config);
      seen[name] = Math.max(seen[name] ?? 0, scripts);
      return result;
    };
    // trending: 3 streams over 3 finished hours, members entering and leaving the top
    for (let h = 0; h < 3; h++)
      for (const s of ["s1", "s2", "s3"])
        await record(
          { ...ctx, now: T0 + h * HOUR },
          s,
          [
            { member: `a${h}`, count: 5 + h },
            { member: "b", count: 2 },
          ],
          TRENDING,
        );
    // presence: a room with two ids, one leaving
    await heartbeat({ ...ctx, now: T0 + 3 * HOUR }, "room", ["u1", "u2"]);
    // counters: a deleted counter's buckets
    await counters.increment({ ...ctx, now: T0 }, "gone", [{ member: "m", by: 1, period: "hour" }]);
    await counters.deleteCounter({ ...ctx, now: T0 }, "gone");
    // leaderboards: a board of 7 players (3 a script: a build over several scripts)
    for (let i = 0; i < 7; i++)
      await leaderboards.join({ ...ctx, now: T0 }, "board", `p${i}`, { name: `p${i}`, score: i });
    // webhooks: one of each detected kind, and deliveries to a receiver that fails the first time
    await webhooks.put(
      ctx,
      "all",
      {
        url: `${receiver.url}/hook`,
        secret: "s3cret-s3cret-s3cret",
        events: ["trending.entered", "trending.left"],
        filter: { stream: "s1" },
      },
      { allowLocalHttp: true },
    );
    await webhooks.put(
      ctx,
      "peak",
      {
        url: `${receiver.url}/hook`,
        secret: "s3cret-s3cret-s3cret",
        events: ["presence.peak"],
        filter: { room: "room" },
      },
      { allowLocalHttp: true },
    );
    await webhooks.put(
      ctx,
      "rise",
      { url: `${receiver.url}/hook`, secret: "s3cret-s3cret-s3cret", events: ["trending.rising"] },
      { allowLocalHttp: true },
    );
    const at = T0 + 3 * HOUR + 5 * MINUTE;
    expect(await run("leaderboards.snapshot", at)).toMatchObject({ snapshots: 1, members: 7 });
    expect(await run("compact", at)).toMatchObject({ more: false });
    await run("webhooks.trending", at);
    expect(await run("sweep-counters", at)).toMatchObject({ more: false });
    await run("trim", at);
    await run("webhooks", at);
    await run("trim", at + MINUTE);
    await run("webhooks", at + MINUTE);
    for (const [name, count] of Object.entries(seen)) {
      expect(count, name).toBeGreaterThan(0);
      expect(count, name).toBeLessThanOrEqual(JOBS[name]!.needs!.scripts);
    }
  });
});

describe("compaction: the cron's run and a QStash run overlapping at small shares", () => {
  it("30 streams, shares of 5 subrequests, two runs at once until done: each stream compacted once, reads exact", async () => {
    const ctx = lib.ctx(T0, "overlap");
    const streams = Array.from({ length: 30 }, (_, i) => `s${String(i).padStart(2, "0")}`);
    const config = readConfig({ TRENDING_KEEP: "2" });
    for (const s of streams)
      await record(
        ctx,
        s,
        [
          { member: "x", count: 9 },
          { member: "y", count: 5 },
          { member: "z", count: 1 },
          { member: "w", count: 1 },
        ],
        TRENDING,
      );
    const at = { ...ctx, now: T0 + HOUR };
    let compacted = 0;
    let rounds = 0;
    for (; rounds < 40; rounds++) {
      const runs = await Promise.all([budgeted(JOBS.compact!, at, 5, config), budgeted(JOBS.compact!, at, 5, config)]);
      for (const { result, sent } of runs) {
        expect(sent).toBeLessThanOrEqual(5);
        compacted += Number(result.streams ?? 0);
      }
      if (runs.every(({ result }) => result.more === false)) break;
    }
    expect(compacted).toBe(30);
    expect(rounds).toBeLessThan(40);
    // no stream is due before the run's hour any more (the queue holds their next due hours, and marks)
    const H = Math.floor((T0 + HOUR) / HOUR);
    expect(await command<string[]>(lib.target, "ZRANGEBYSCORE", `${ctx.prefix}:trending:_dirty`, 0, `(${H}`)).toEqual(
      [],
    );
    expect(Number(await command(lib.target, "ZCARD", `${ctx.prefix}:trending:_dirty`))).toBe(60);
    // each hour trimmed to the 2 kept: the reads say approximate with the removed count (1) as error
    const read = await top({ ...ctx, now: T0 + HOUR + MINUTE }, "s07", { ...TRENDING, n: 2, windowHours: 24 });
    expect(read.items).toEqual([
      { rank: 1, member: "x", count: 9 },
      { rank: 2, member: "y", count: 5 },
    ]);
  });
});

describe("leaderboards.snapshot: the board deleted and made again while its build is under way", () => {
  it("the new board's snapshot holds only its own players, ranked as at the copy; nothing of the old build is left", async () => {
    const ctx = lib.ctx(T0, "snap-del");
    const config = readConfig({ LEADERBOARD_SNAPSHOT_CHUNK: "4", LEADERBOARD_SNAPSHOT_SCRIPTS: "2" });
    for (let i = 0; i < 10; i++) await leaderboards.join(ctx, "b", `old${i}`, { name: `old${i}`, score: i });
    const job = JOBS["leaderboards.snapshot"]!;
    // the list and one step of 4: the build is under way
    const first = (await budgeted(job, { ...ctx, now: T0 + MINUTE }, 10_000, config)).result;
    expect(first).toMatchObject({ members: 4, snapshots: 0, more: true });
    expect(await command(lib.target, "EXISTS", `${ctx.prefix}:lb:b:snap:next`)).toBe(1);
    await leaderboards.deleteBoard(ctx, "b");
    expect(await command(lib.target, "EXISTS", `${ctx.prefix}:lb:b:snap:next`)).toBe(0);
    for (let i = 0; i < 3; i++) await leaderboards.join(ctx, "b", `new${i}`, { name: `new${i}`, score: 10 * i });
    let runs = 0;
    for (; runs < 10; runs++) {
      const { result } = await budgeted(job, { ...ctx, now: T0 + (2 + runs) * MINUTE }, 10_000, config);
      if (result.more !== true) break;
    }
    const snap = await command<string[]>(lib.target, "ZRANGE", `${ctx.prefix}:lb:b:snap`, 0, -1, "WITHSCORES");
    expect(snap).toEqual(["new2", "1", "new1", "2", "new0", "3"]);
    expect(await command(lib.target, "EXISTS", `${ctx.prefix}:lb:b:snap:next`)).toBe(0);
    // reads: previousRank from that snapshot
    await leaderboards.changeScore(ctx, "b", "new0", { set: 100 });
    const page = await leaderboards.page({ ...ctx, now: T0 + HOUR }, "b", { limit: 10 });
    expect(page.items.map((r) => [r.player, r.rank, r.previousRank])).toEqual([
      ["new0", 1, 3],
      ["new2", 2, 1],
      ["new1", 3, 2],
    ]);
    // nothing of the old players anywhere under the board
    const keys = await keysUnder(lib.target, ctx.prefix);
    for (const key of keys.filter((k) => k.includes(":lb:b:"))) {
      const type = await command<string>(lib.target, "TYPE", key);
      const dump =
        type === "zset"
          ? await command<string[]>(lib.target, "ZRANGE", key, 0, -1)
          : type === "hash"
            ? await command<string[]>(lib.target, "HKEYS", key)
            : [];
      expect(dump.join(",").includes("old"), key).toBe(false);
    }
  });
});

describe("the wall clock's share and the scheduler's second turn", () => {
  it("a trim cut short by the clock mid-run: capped, no second turn sends anything, the next minute visits every room", async () => {
    const prefix = lib.ctx(T0, "late").prefix;
    const env = lib.appEnv(KEYS, { KEY_PREFIX: prefix, SUBREQUEST_LIMIT: "50" }) as unknown as Env;
    // 120 rooms with an id online: three chunks of 50 rooms
    for (let i = 0; i < 120; i++) await heartbeat({ redis: lib.redis, prefix, now: T0 }, `r${i}`, ["u"]);
    // a warm run loads the scripts
    await runScheduledCounted("* * * * *", T0 + MINUTE, env);
    // the clock: the budget's start, the trim's look before listing and before its first chunk read
    // T0; every later read 30 s on (the first chunk took that long)
    let reads = 0;
    const clock = () => T0 + (reads++ < 3 ? 0 : 30_000);
    const run = await runScheduledCounted("* * * * *", T0 + 2 * MINUTE, env, clock);
    expect(run.results.trim).toMatchObject({ rooms: 120, online: 50, calls: 2, capped: true });
    expect(run.results.webhooks).toEqual({ deferred: true });
    // the list and one chunk: nothing was sent once the time was up (the second turn was deferred)
    expect(run.subrequests).toBe(2);
    // the next minute, on time: every room visited
    const next = await runScheduledCounted("* * * * *", T0 + 3 * MINUTE, env);
    expect(next.results.trim).toMatchObject({ online: 120, capped: false });
  });
});
