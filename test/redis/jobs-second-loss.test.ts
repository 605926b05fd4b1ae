/**
 * Every job that plans its steps up front against its share of the invocation's subrequests
 * (src/job-budget.ts), when Redis loses its script cache twice in one invocation (a failover
 * shortly after a restart: SCRIPT FLUSH, sent to the real redis-server before the k-th request).
 * The first loss costs the one re-send each plan keeps aside (the invocation's spare); the second
 * is one more, unplanned. Each job must then stop a step early with its `more: true` (the trim:
 * `capped`; the deliveries: `unsent`), within the limit, lose and count nothing twice, and the next
 * run finishes — as compaction does since review 15 (test/redis/review15-recent.test.ts).
 * The flush lands either before a middle step (the job reads `plannedOf` before the next one and
 * stops there) or before its last planned step (refused unsent at the limit: `untilSpent`).
 */
import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config.ts";
import type { Ctx } from "../../src/context.ts";
import * as counters from "../../src/counters/index.ts";
import { sweepCountersJob } from "../../src/counters/jobs.ts";
import * as leaderboards from "../../src/leaderboards/index.ts";
import { jobs as leaderboardJobs } from "../../src/leaderboards/jobs.ts";
import * as presence from "../../src/presence/index.ts";
import { createTrimJob } from "../../src/presence/jobs.ts";
import { createRedis } from "../../src/redis/client.ts";
import { DAY, HOUR, MINUTE } from "../../src/time.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import { trendingWebhooksJob } from "../../src/webhooks/jobs.ts";
import { libraryTest } from "../helpers/library.ts";
import { hooked, runCounted } from "../helpers/script-loss.ts";
import { command, keysUnder } from "../helpers/upstash-rest.ts";
import { receiverForTests } from "../helpers/webhook-receiver.ts";

const lib = libraryTest("jobs-second-loss", { timeoutMs: 30_000 });
const receiver = receiverForTests();
/** 12:00:30 UTC: no hour boundary, far from midnight. */
const T0 = Date.UTC(2026, 10, 23, 12, 0, 30);
const at = (ctx: Ctx, now: number): Ctx => ({ ...ctx, now });
const flush = () => command(lib.target, "SCRIPT", "FLUSH");
/** A client of its own (new to the isolate's memory of loaded scripts), and its hook. */
const fresh = () => hooked(createRedis({ url: lib.target.url, token: lib.target.token }));
/** Lost before the run's first request and again before its k-th. */
const twice = (k: number) => async (n: number) => {
  if (n === 1 || n === k) await flush();
};

describe("leaderboards.snapshot: a second cache loss", () => {
  const config = readConfig({ LEADERBOARD_SNAPSHOT_CHUNK: "5", LEADERBOARD_SNAPSHOT_SCRIPTS: "100" });
  const job = leaderboardJobs["leaderboards.snapshot"]!;
  const LIMIT = 8;

  // At 8 (7 planned: one kept for the first loss): the list script (two requests, the first
  // lost) and 6 steps of 5 members; the board's 40 need 9 steps, so the run never finishes.
  it.each([
    ["before a middle step: it stops before the step its plan no longer pays", 5, 5, 2],
    ["before its last planned step: refused unsent at the limit, it stops there", 8, 5, 1],
  ])("%s", async (_, k, steps, reloads) => {
    const { client, on } = fresh();
    const warm = lib.ctx(T0, "snap-warm");
    await leaderboards.join(warm, "w", "a", { name: "a", score: 1 });
    expect((await runCounted(job, client, at(warm, T0 + HOUR), config, 50)).result.more).toBe(false);

    const ctx = lib.ctx(T0, `snap-${k}`);
    for (let i = 0; i < 40; i++) await leaderboards.join(ctx, "big", `p${i}`, { name: `p${i}`, score: i });
    on(twice(k));
    const run = await runCounted(job, client, at(ctx, T0 + HOUR), config, LIMIT);
    expect(run.result.thrown).toBeUndefined();
    expect(run.used).toBeLessThanOrEqual(LIMIT);
    expect(run.reloads).toBe(reloads);
    // the list script and `steps` steps ran: a step short of the 6 a single loss leaves
    expect(run.result).toMatchObject({ scripts: 1 + steps, members: 5 * steps, snapshots: 0, more: true });

    on(async () => {});
    const next = await runCounted(job, client, at(ctx, T0 + HOUR), config, LIMIT);
    expect(next.result).toMatchObject({ snapshots: 1, more: false });
    // every member copied once in all, and the snapshot is the ranking
    expect(Number(run.result.members) + Number(next.result.members)).toBe(40);
    const rows = (await leaderboards.page(at(ctx, T0 + HOUR), "big", { limit: 100 })).items;
    expect(rows).toHaveLength(40);
    for (const row of rows) expect(row.previousRank).toBe(row.rank);
  });
});

describe("trim: a second cache loss", () => {
  const config = lib.config;
  const job = createTrimJob({ chunkRooms: 2 });
  const LIMIT = 7;
  const T = T0 + 3 * DAY;

  /** 7 rooms with one id online each, and a leave mark due (an id the room never mapped). */
  async function seed(label: string, rooms: number) {
    const ctx = lib.ctx(T0, label);
    await presence.leave(ctx, "m", "ghost");
    for (let i = 0; i < rooms; i++) await presence.heartbeat(at(ctx, T - 10_000), `r${i}`, [`u${i}`]);
    return ctx;
  }

  // At 7 (6 planned): the due list (two requests, the first lost) lists the mark and 7 rooms (8,
  // its limit: capped), the marks' script, then 4 chunks of 2 rooms; a second loss is one more
  it.each([
    ["before a middle chunk: the last chunk it pays takes the sample, and it stops", 5, 6, 2],
    ["before its last chunk: refused unsent at the limit, it stops without a sample", 7, null, 1],
  ])("%s", async (_, k, siteOnline, reloads) => {
    const { client, on } = fresh();
    const warm = await seed(`trim-warm-${k}`, 1);
    await runCounted(job, client, at(warm, T), config, 50);

    const ctx = await seed(`trim-${k}`, 7);
    on(twice(k));
    const run = await runCounted(job, client, at(ctx, T), config, LIMIT);
    expect(run.result.thrown).toBeUndefined();
    expect(run.used).toBeLessThanOrEqual(LIMIT);
    expect(run.reloads).toBe(reloads);
    // 3 of the 4 chunks: 6 of the 7 rooms
    expect(run.result).toMatchObject({ rooms: 7, online: 6, siteOnline, capped: true });

    // the next minute visits them all; the site-wide figures count each id once
    on(async () => {});
    const next = await runCounted(job, client, at(ctx, T + MINUTE), config, 50);
    expect(next.result).toMatchObject({ rooms: 7, online: 7, siteOnline: 7, capped: false });
    const site = await presence.total(at(ctx, T + MINUTE));
    expect(site).toMatchObject({ online: 7, peakToday: 7 });
  });
});

describe("sweep-counters: a second cache loss", () => {
  const config = lib.config;
  const LIMIT = 3;

  async function orphaned(label: string, hours: number) {
    const ctx = lib.ctx(T0, label);
    const items = Array.from({ length: hours }, (_, i) => ({
      member: "a",
      by: 1,
      period: "hour" as const,
      at: T0 - i * HOUR,
    }));
    await counters.increment(ctx, "c", items);
    const buckets = (await keysUnder(lib.target, ctx.prefix)).filter((key) =>
      /:counters:c:(hour|day|month):/.test(key),
    );
    await counters.deleteCounter(ctx, "c");
    return { ctx, buckets };
  }

  // At 3 (2 planned): the pick (two requests, the first lost), then the sweep, lost again
  it("before the sweep: refused unsent at the limit, it stops with more: true, nothing swept", async () => {
    const { client, on } = fresh();
    const warm = await orphaned("sweep-warm", 2);
    await runCounted(sweepCountersJob, client, at(warm.ctx, T0 + MINUTE), config, 50);

    const { ctx, buckets } = await orphaned("sweep", 5);
    expect(buckets.length).toBeGreaterThan(5);
    on(twice(3));
    const run = await runCounted(sweepCountersJob, client, at(ctx, T0 + MINUTE), config, LIMIT);
    expect(run.result.thrown).toBeUndefined();
    expect(run.used).toBeLessThanOrEqual(LIMIT);
    // the second re-send was refused unsent: one EVAL sent
    expect(run.reloads).toBe(1);
    expect(run.result).toEqual({ checked: 0, deleted: 0, more: true });

    on(async () => {});
    const next = await runCounted(sweepCountersJob, client, at(ctx, T0 + MINUTE), config, 50);
    expect(next.result).toEqual({ checked: buckets.length, deleted: buckets.length, more: false });
    expect((await keysUnder(lib.target, ctx.prefix)).filter((key) => buckets.includes(key))).toEqual([]);
  });
});

describe("webhooks deliveries: a second cache loss", () => {
  const config = readConfig({ WEBHOOKS_ALLOW_LOCAL_HTTP: "true" });
  const LIMIT = 10;

  async function queued(label: string, events: number) {
    const ctx = lib.ctx(T0, label);
    await webhooks.put(
      ctx,
      "h",
      { url: `${receiver.url}/${label}`, events: ["leaderboard.leader"], secret: "second-loss-secret-0123456789" },
      { allowLocalHttp: true },
    );
    // subscribed to trending too, so each run sends all of the job's scripts (detectTrending)
    await webhooks.put(
      ctx,
      "t",
      {
        url: `${receiver.url}/${label}-t`,
        events: ["trending.entered"],
        filter: { stream: "s" },
        secret: "second-loss-secret-0123456789",
      },
      { allowLocalHttp: true },
    );
    for (let i = 0; i < events; i++)
      await webhooks.emit(ctx, {
        type: "leaderboard.leader",
        subject: { kind: "board", name: "b" },
        data: { board: "b", player: `p${i}` },
        key: `p${i}`,
      });
    return ctx;
  }
  const got = (label: string) => receiver.received.filter((r) => r.path === `/${label}`);

  // At 10 (9 planned): the webhooks' list and detectPeaks, then 5 deliveries (the claim, 5
  // fetches, the settle). The claim's script is lost (the first loss: the spare), and the settle's
  // (the second): a settle refused after its deliveries went out would leave them claimed, to be
  // sent again after their lease, with an attempt counted
  it("at the claim and at the settle: one delivery left unsent (due again, no attempt counted), every one sent settled", async () => {
    const { client, on } = fresh();
    const warm = await queued("wh-warm", 1);
    expect((await runCounted(trendingWebhooksJob, client, warm, config, 50)).result).toMatchObject({ delivered: 1 });

    const ctx = await queued("wh", 8);
    on(async (n) => {
      if (n === 3 || n === 5) await flush();
    });
    const run = await runCounted(trendingWebhooksJob, client, ctx, config, LIMIT);
    expect(run.result.thrown).toBeUndefined();
    expect(run.used).toBeLessThanOrEqual(LIMIT);
    expect(run.reloads).toBe(2);
    expect(run.result).toMatchObject({ claimed: 4, delivered: 4, unsent: 1 });
    expect(got("wh")).toHaveLength(4);

    on(async () => {});
    const next = await runCounted(trendingWebhooksJob, client, ctx, config, LIMIT);
    expect(next.result).toMatchObject({ claimed: 4, delivered: 4 });
    expect(next.result.unsent).toBeUndefined();
    // each event delivered once, each on its first attempt
    const ids = got("wh").map((r) => r.headers["edgestats-delivery"]);
    expect(new Set(ids).size).toBe(8);
    expect(ids).toHaveLength(8);
    const log = await webhooks.deliveries(ctx, "h");
    expect(log.deliveries.map((d: { attempt: number }) => d.attempt)).toEqual(Array(8).fill(1));
  });
});
