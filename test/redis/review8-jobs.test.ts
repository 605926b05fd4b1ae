/**
 * Review 8, periodic jobs at library level (real Redis behind the local Upstash server, a fault
 * proxy in front of it): the leaderboard snapshot and the counters sweep cut short by a storage
 * fault, then run again; late runs (a cron's clock an hour or a minute behind the run before it)
 * of compaction and of the presence trim; and the cron expressions of wrangler.toml against the
 * jobs functions/jobs.ts maps them to.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type Fault } from "../../dev/fault-proxy.ts";
import { CRON_JOBS, JOBS } from "../../functions/jobs.ts";
import { readConfig } from "../../src/config.ts";
import type { Ctx } from "../../src/context.ts";
import { StorageUnavailableError } from "../../src/errors.ts";
import * as counters from "../../src/counters/index.ts";
import * as leaderboards from "../../src/leaderboards/index.ts";
import { createTrimJob } from "../../src/presence/jobs.ts";
import {
  day as roomDay,
  heartbeat,
  history as roomHistory,
  stats as roomStats,
  total as siteTotal,
} from "../../src/presence/index.ts";
import { HOUR, MINUTE } from "../../src/time.ts";
import { compact, member as memberOf, record, top } from "../../src/trending/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, keysUnder } from "../helpers/upstash-rest.ts";
import { receiverForTests } from "../helpers/webhook-receiver.ts";
import { streamKeys } from "../../src/trending/keys.ts";
import { hourIndex } from "../../src/time.ts";
import * as webhooks from "../../src/webhooks/index.ts";

const lib = libraryTest("rv8jobs", { timeoutMs: 2000 });
const T0 = Date.UTC(2026, 10, 22, 10, 20);
/** The fault proxy in front of the local Upstash server, and the library's client through it. */
const faults = lib.faultProxy();

const ctxOf = (prefix: string, now: number, viaProxy = false): Ctx => ({
  redis: viaProxy ? faults.redis : lib.redis,
  prefix,
  now,
});
const newPrefix = (label: string) => lib.ctx(T0, label).prefix;

describe("wrangler.toml's cron triggers", () => {
  it("are exactly the expressions CRON_JOBS maps, and every job they name exists", () => {
    const toml = readFileSync(new URL("../../wrangler.toml", import.meta.url), "utf8");
    const line = /^\s*crons\s*=\s*(\[.*\])/m.exec(toml);
    expect(line).not.toBeNull();
    const crons = JSON.parse(line![1]!) as string[];
    expect([...crons].sort()).toEqual(Object.keys(CRON_JOBS).sort());
    for (const names of Object.values(CRON_JOBS))
      for (const name of names) expect(Object.hasOwn(JOBS, name)).toBe(true);
    // every job with work to do is on a cron (histograms and ingest declare none)
    expect(new Set(Object.values(CRON_JOBS).flat())).toEqual(new Set(Object.keys(JOBS)));
  });
});

describe("leaderboards.snapshot cut short by a storage fault", () => {
  const config = readConfig({ LEADERBOARD_SNAPSHOT_CHUNK: "4", LEADERBOARD_SNAPSHOT_SCRIPTS: "40" });
  const BOARDS = ["a", "b", "c"];
  const snapshotJob = JOBS["leaderboards.snapshot"]!;

  async function seed(prefix: string) {
    const ctx = ctxOf(prefix, T0);
    for (const [b, board] of BOARDS.entries())
      for (let i = 0; i < 11; i++)
        await leaderboards.join(ctx, board, `p${i}`, { name: `p${i}`, score: (i * 7 + b * 3) % 13 });
  }
  async function previous(prefix: string, now: number) {
    const out: Record<string, [string, number, number | null][]> = {};
    for (const board of BOARDS)
      out[board] = (await leaderboards.page(ctxOf(prefix, now), board, { limit: 100 })).items.map((r) => [
        r.player,
        r.rank,
        r.previousRank,
      ]);
    return out;
  }

  const cases: [string, Fault][] = [
    ["503 after a few round trips", { kind: "status", status: 503 }],
    ["a lost response after a few round trips (the step happened)", { kind: "lose-response" }],
  ];
  it.each(cases)(
    "%s: the next run finishes, says more: false, and the snapshot equals a clean run's",
    async (_, fault) => {
      const control = newPrefix("snap-ctl");
      const broken = newPrefix("snap-brk");
      await seed(control);
      await seed(broken);
      const now = T0 + HOUR;
      const reference = await snapshotJob(ctxOf(control, now), config);
      expect(reference).toMatchObject({ snapshots: 3, members: 33, more: false });

      faults.proxy.set({ fault, after: 3 });
      expect(await snapshotJob(ctxOf(broken, now, true), config).catch((e: unknown) => e)).toBeInstanceOf(
        StorageUnavailableError,
      );
      faults.proxy.heal();
      const rerun = await snapshotJob(ctxOf(broken, now, true), config);
      expect(rerun.more).toBe(false);
      expect(rerun.snapshots as number).toBeGreaterThan(0);
      // it continued the builds where the fault stopped them, not from the start
      expect(rerun.members as number).toBeLessThan(33);
      const third = await snapshotJob(ctxOf(broken, now, true), config);
      expect(third).toMatchObject({ alreadyDone: true, snapshots: 0, members: 0, more: false });

      const want = await previous(control, now);
      for (const rows of Object.values(want)) for (const [, rank, prev] of rows) expect(prev).toBe(rank);
      expect(await previous(broken, now)).toEqual(want);
      // no half build left behind
      const left = (await keysUnder(lib.target, broken)).filter((k) => k.endsWith(":snap:next"));
      expect(left).toEqual([]);
    },
  );
});

describe("sweep-counters cut short by a storage fault", () => {
  const sweep = JOBS["sweep-counters"]!;
  const config = readConfig({});

  async function seed(prefix: string) {
    const ctx = ctxOf(prefix, T0);
    for (const name of ["x", "y", "z"])
      await counters.increment(ctx, name, [
        { member: "a", by: 1, period: "day" },
        { member: "a", by: 1, period: "hour" },
        { member: "b", by: 2, period: "month" },
      ]);
    for (const name of ["x", "y", "z"]) await counters.deleteCounter(ctx, name);
    // y's new life writes the same buckets before any sweep
    await counters.increment(ctx, "y", [
      { member: "c", by: 3, period: "day" },
      { member: "c", by: 3, period: "hour" },
    ]);
  }
  const bucketsOf = async (prefix: string) =>
    (await keysUnder(lib.target, prefix)).filter((k) => /:counters:[^:]+:[^:]+:/.test(k)).sort();

  it("a lost response of the sweep script: the rerun says more: false, frees nothing of the new life, leaves nothing listed", async () => {
    const control = newPrefix("sweep-ctl");
    const broken = newPrefix("sweep-brk");
    await seed(control);
    await seed(broken);
    const reference = await sweep(ctxOf(control, T0 + MINUTE), config);
    expect(reference.more).toBe(false);
    expect(reference.deleted as number).toBeGreaterThan(0);

    // the first round trip (HRANDFIELD) goes through; the sweep script runs but its answer is lost
    faults.proxy.set({ fault: { kind: "lose-response" }, after: 1, times: 1 });
    expect(await sweep(ctxOf(broken, T0 + MINUTE, true), config).catch((e: unknown) => e)).toBeInstanceOf(
      StorageUnavailableError,
    );
    faults.proxy.heal();
    const rerun = await sweep(ctxOf(broken, T0 + MINUTE, true), config);
    expect(rerun).toEqual({ checked: 0, deleted: 0, more: false });

    const strip = (keys: string[], prefix: string) => keys.map((k) => k.slice(prefix.length));
    expect(strip(await bucketsOf(broken), broken)).toEqual(strip(await bucketsOf(control), control));
    const read = (p: string) => counters.memberOf(ctxOf(p, T0 + MINUTE), "y", "c", { period: "day" });
    expect(await read(broken)).toEqual(await read(control));
  });
});

describe("compaction: the 10:05 cron run late, after the 11:05 one", () => {
  const STREAMS = ["s0", "s1", "s2"];
  async function seed(prefix: string) {
    for (let h = 0; h < 3; h++)
      for (const [s, stream] of STREAMS.entries())
        await record(
          ctxOf(prefix, T0 - 2 * HOUR + h * HOUR),
          stream,
          Array.from({ length: 9 }, (_, m) => ({ member: `m${m}`, count: 1 + ((m * 5 + s * 3 + h * 7) % 17) })),
          { retentionHours: 50 },
        );
  }
  async function reads(prefix: string, now: number) {
    const out = [];
    for (const stream of STREAMS) {
      const { generatedAt: _, ...t } = await top(ctxOf(prefix, now), stream, {
        retentionHours: 50,
        n: 9,
        windowHours: 24,
      });
      out.push(t);
      for (const m of ["m0", "m4", "m8"]) {
        const { generatedAt: __, ...r } = await memberOf(ctxOf(prefix, now), stream, m, {
          retentionHours: 50,
          windowHours: 24,
        });
        out.push(r);
      }
    }
    return out;
  }

  it("run beside the 11:05 one (both started before either is awaited): the same reads as in order", async () => {
    const control = newPrefix("beside-ctl");
    const beside = newPrefix("beside-run");
    await seed(control);
    await seed(beside);
    const options = { retentionHours: 50, keep: 4, batchSize: 1 };
    const h10 = Date.UTC(2026, 10, 22, 10, 5);
    const h11 = Date.UTC(2026, 10, 22, 11, 5);
    await compact(ctxOf(control, h10), options);
    await compact(ctxOf(control, h11), options);
    const both = await Promise.all([compact(ctxOf(beside, h11), options), compact(ctxOf(beside, h10), options)]);
    for (const r of both) expect(r.more).toBe(false);
    const readAt = h11 + 10 * MINUTE;
    expect(await reads(beside, readAt)).toEqual(await reads(control, readAt));
    expect(await compact(ctxOf(beside, h11 + 5 * MINUTE), options)).toMatchObject({ streams: 0, more: false });
  });

  it("changes nothing an in-order pair of runs would not; the next run has nothing to do", async () => {
    const control = newPrefix("late-ctl");
    const late = newPrefix("late-run");
    await seed(control);
    await seed(late);
    const options = { retentionHours: 50, keep: 4 };
    const h10 = Date.UTC(2026, 10, 22, 10, 5);
    const h11 = Date.UTC(2026, 10, 22, 11, 5);
    // in order
    await compact(ctxOf(control, h10), options);
    await compact(ctxOf(control, h11), options);
    // the 10:05 run late: after the 11:05 one (its clock is its scheduledTime)
    await compact(ctxOf(late, h11), options);
    const lateRun = await compact(ctxOf(late, h10), options);
    expect(lateRun.more).toBe(false);
    const readAt = h11 + 10 * MINUTE;
    expect(await reads(late, readAt)).toEqual(await reads(control, readAt));
    const next = await compact(ctxOf(late, Date.UTC(2026, 10, 22, 12, 5)), options);
    const nextCtl = await compact(ctxOf(control, Date.UTC(2026, 10, 22, 12, 5)), options);
    expect(next).toEqual(nextCtl);
  });
});

describe("presence trim: the minute before run late, after the minute's own run", () => {
  it("history, stats and the room list end as with the runs in order", async () => {
    const control = newPrefix("trimlate-ctl");
    const late = newPrefix("trimlate-run");
    const config = readConfig({ PRESENCE_TIMEOUT_SECONDS: "60" });
    const job = createTrimJob();
    const m0 = Date.UTC(2026, 10, 22, 12, 0);
    for (const prefix of [control, late]) {
      await heartbeat(ctxOf(prefix, m0 - 50_000), "room", ["a", "b", "c"], { timeoutSeconds: 60 });
      await heartbeat(ctxOf(prefix, m0 + 20_000), "room", ["d"], { timeoutSeconds: 60 });
    }
    await job(ctxOf(control, m0), config);
    await job(ctxOf(control, m0 + MINUTE), config);
    await job(ctxOf(late, m0 + MINUTE), config);
    await job(ctxOf(late, m0), config);
    const at = m0 + MINUTE + 30_000;
    const [hc, hl] = await Promise.all([control, late].map((p) => roomHistory(ctxOf(p, at), "room")));
    expect(hl).toEqual(hc);
    const [sc, sl] = await Promise.all(
      [control, late].map((p) => roomStats(ctxOf(p, at), "room", { timeoutSeconds: 60 })),
    );
    expect(sl).toEqual(sc);
  });
});

describe("webhooks.trending: overlapping and late hourly runs", () => {
  const receiver = receiverForTests();
  const config = readConfig({ WEBHOOKS_ALLOW_LOCAL_HTTP: "true" });
  const direct: webhooks.DeliverySettings = { allowLocalHttp: true };

  /** A stream's hour bucket as compaction leaves it (members and the "\0err" sentinel). */
  async function bucket(ctx: Ctx, stream: string, hour: number, counts: Record<string, number>) {
    const key = streamKeys(ctx.prefix, stream).bucket(hour);
    await command(lib.target, "ZADD", key, 0, "\u0000err", ...Object.entries(counts).flatMap(([m, c]) => [c, m]));
  }

  it("three runs at once, then the previous hour's run late: each event is sent once, none for an hour already told", async () => {
    const T = Date.UTC(2026, 10, 22, 12, 30);
    const ctx = lib.ctx(T, "wh-overlap");
    const hour = hourIndex(T);
    await bucket(ctx, "s", hour - 2, { a: 9, b: 8, c: 7 });
    await bucket(ctx, "s", hour - 1, { a: 9, b: 8, c: 7, x: 1 });
    await bucket(ctx, "s", hour, { a: 20, n: 10, b: 5, c: 4 });
    await webhooks.put(
      ctx,
      "top3",
      {
        url: `${receiver.url}/hook`,
        secret: "s3cret-s3cret-s3cret",
        events: ["trending.entered", "trending.left"],
        filter: { stream: "s" },
        n: 3,
      },
      direct,
    );
    const at = (hour + 1) * HOUR + 5 * MINUTE;
    const start = receiver.received.length;
    const runs = await Promise.all([0, 1, 2].map(() => webhooks.trendingWebhooksJob({ ...ctx, now: at }, config)));
    expect(runs.reduce((sum, r) => sum + ((r.queued as number) ?? 0), 0)).toBe(2);
    // the 12:05 run, late (its clock says 12:05): hour 11 against 10 is older than what the webhook was told
    const late = await webhooks.trendingWebhooksJob({ ...ctx, now: hour * HOUR + 5 * MINUTE }, config);
    expect(late).toMatchObject({ events: 0, queued: 0 });
    // whatever the runs left due is sent by the next
    await webhooks.deliverDue({ ...ctx, now: at + 10 * MINUTE }, direct);
    const got = receiver.received.slice(start).map((r) => JSON.parse(r.body) as { id: string; type: string });
    expect(got.map((b) => b.type).sort()).toEqual(["trending.entered", "trending.left"]);
    expect(new Set(got.map((b) => b.id)).size).toBe(2);
  });

  it("the minute job twice at once with deliveries due: each delivery is sent once", async () => {
    const T = Date.UTC(2026, 10, 22, 12, 30);
    const ctx = lib.ctx(T, "wh-minute");
    await webhooks.put(
      ctx,
      "lead",
      { url: `${receiver.url}/hook`, secret: "s3cret-s3cret-s3cret", events: ["leaderboard.leader"] },
      direct,
    );
    for (const player of ["ann", "bob", "cy"])
      await webhooks.emit(ctx, {
        type: "leaderboard.leader",
        subject: { kind: "board", name: "b1" },
        data: { board: "b1", player },
        key: player,
      });
    const start = receiver.received.length;
    const runs = await Promise.all([0, 1].map(() => webhooks.webhooksJob({ ...ctx, now: T + MINUTE }, config)));
    expect(runs.reduce((sum, r) => sum + ((r.delivered as number) ?? 0), 0)).toBe(3);
    const third = await webhooks.webhooksJob({ ...ctx, now: T + 2 * MINUTE }, config);
    expect(third).toMatchObject({ claimed: 0 });
    const ids = receiver.received.slice(start).map((r) => (JSON.parse(r.body) as { id: string }).id);
    expect(ids).toHaveLength(3);
    expect(new Set(ids).size).toBe(3);
  });
});

describe("presence trim: the 23:59 run late, after the 00:00 one", () => {
  it("yesterday's record, today's figures and the site total end as with the runs in order", async () => {
    const control = newPrefix("midnight-ctl");
    const late = newPrefix("midnight-late");
    const config = readConfig({ PRESENCE_TIMEOUT_SECONDS: "60" });
    const job = createTrimJob();
    const midnight = Date.UTC(2026, 10, 23);
    const opts = { timeoutSeconds: 60 };
    for (const prefix of [control, late]) {
      await heartbeat(ctxOf(prefix, midnight - 90_000), "r", ["a", "b", "c"], opts);
      await heartbeat(ctxOf(prefix, midnight - 20_000), "r", ["c", "d"], opts);
      await heartbeat(ctxOf(prefix, midnight + 30_000), "r", ["d", "e"], opts);
    }
    const order = [midnight - MINUTE, midnight, midnight + MINUTE, midnight + 2 * MINUTE, midnight + 5 * MINUTE];
    for (const t of order) await job(ctxOf(control, t), config);
    const lateOrder = [midnight, midnight - MINUTE, midnight + MINUTE, midnight + 2 * MINUTE, midnight + 5 * MINUTE];
    for (const t of lateOrder) await job(ctxOf(late, t), config);

    const now = midnight + 6 * MINUTE;
    const read = async (prefix: string) => ({
      yesterday: await roomDay(ctxOf(prefix, now), "r", "2026-11-22", opts),
      today: await roomDay(ctxOf(prefix, now), "r", "2026-11-23", opts),
      stats: await roomStats(ctxOf(prefix, now), "r", opts),
      history: await roomHistory(ctxOf(prefix, now), "r"),
      // two days on, yesterday is read from the room's ring of past days
      kept: await roomDay(ctxOf(prefix, midnight + 2 * 86_400_000), "r", "2026-11-22", opts),
    });
    const want = await read(control);
    expect(want.kept.peak).toBeGreaterThan(0);
    expect(await read(late)).toEqual(want);
    expect(await siteTotal(ctxOf(late, now))).toEqual(await siteTotal(ctxOf(control, now)));
  });
});

describe("sweep-counters with a new life written between its two scripts", () => {
  it("the buckets the new life claimed while the sweep was in flight keep exactly its increments", async () => {
    const prefix = newPrefix("sweep-race");
    const ctx = ctxOf(prefix, T0);
    const items = [
      { member: "a", by: 5, period: "day" as const },
      { member: "a", by: 5, period: "hour" as const },
    ];
    await counters.increment(ctx, "x", items);
    await counters.deleteCounter(ctx, "x");
    // the sweep's first round trip (HRANDFIELD) goes through; its script is held 1 s (the assertions hold in either order; the hold makes the race the usual one)
    faults.proxy.set({ fault: { kind: "delay", ms: 1000 }, after: 1, times: 1 });
    const sweeping = JOBS["sweep-counters"]!(ctxOf(prefix, T0 + MINUTE, true), readConfig({}));
    await new Promise((resolve) => setTimeout(resolve, 100));
    // the new life writes the same day's and hour's buckets while the sweep script waits
    await counters.increment(ctxOf(prefix, T0 + MINUTE), "x", [
      { member: "b", by: 2, period: "day" },
      { member: "b", by: 3, period: "hour" },
    ]);
    const swept = await sweeping;
    faults.proxy.heal();
    expect(faults.proxy.stats().faulted.delay ?? 0).toBeGreaterThan(0);
    expect(swept.more).toBe(false);
    const at = ctxOf(prefix, T0 + 2 * MINUTE);
    expect(await counters.memberOf(at, "x", "b", { period: "day" })).toMatchObject({ score: 2 });
    expect(await counters.memberOf(at, "x", "b", { period: "hour" })).toMatchObject({ score: 3 });
    // the old life's member is gone with it
    await expect(counters.memberOf(at, "x", "a", { period: "day" })).rejects.toThrow(/no member 'a'/);
  });
});

describe("presence trim: the cron down over midnight", () => {
  const opts = { timeoutSeconds: 60 };
  const config = readConfig({ PRESENCE_TIMEOUT_SECONDS: "60" });
  const midnight = Date.UTC(2026, 10, 23);
  async function scenario(label: string, resumeAt: number) {
    const prefix = newPrefix(label);
    const job = createTrimJob();
    // a room busy until 23:20, then idle; the cron is down from 23:00 until resumeAt
    for (let m = 0; m < 20; m++)
      await heartbeat(ctxOf(prefix, midnight - HOUR + m * MINUTE), "r", [`u${m % 4}`, `v${m}`], opts);
    await job(ctxOf(prefix, midnight - HOUR + MINUTE), config);
    for (let t = resumeAt; t <= resumeAt + 5 * MINUTE; t += MINUTE) await job(ctxOf(prefix, t), config);
    return roomDay(ctxOf(prefix, midnight + 3 * 86_400_000), "r", "2026-11-22", opts);
  }

  it("back at 00:30 (within the first hour): the day is kept in the room's ring", async () => {
    const kept = await scenario("downtime-0030", midnight + 30 * MINUTE);
    expect(kept.peak).toBeGreaterThan(0);
    expect(kept.active).toBeGreaterThan(0);
  });

  it("back at 01:30: the day is lost, as docs/presence.md's known limits say", async () => {
    // a documented limit ("a day is kept only if the trim job ran when it ended for that room"),
    // pinned so a change to it is noticed: a cron gap past the first hour after midnight loses it
    const kept = await scenario("downtime-0130", midnight + 90 * MINUTE);
    expect(kept).toMatchObject({ peak: 0, active: 0 });
  });
});

describe("presence.peak: the 23:59 minute cron run late, after the first runs of the new day", () => {
  const receiver = receiverForTests();

  async function scenario(late: boolean) {
    const config = readConfig({ WEBHOOKS_ALLOW_LOCAL_HTTP: "true", PRESENCE_TIMEOUT_SECONDS: "60" });
    const midnight = Date.UTC(2026, 10, 23);
    const ctx = lib.ctx(midnight - HOUR, late ? "peak-late" : "peak-order");
    const opts = { timeoutSeconds: 60 };
    await webhooks.put(
      ctx,
      "room-r",
      { url: `${receiver.url}/hook`, secret: "s3cret-s3cret-s3cret", events: ["presence.peak"], filter: { room: "r" } },
      { allowLocalHttp: true },
    );
    const trim = createTrimJob();
    const minute = async (t: number) => {
      await trim({ ...ctx, now: t }, config);
      return webhooks.webhooksJob({ ...ctx, now: t }, config);
    };
    const start = receiver.received.length;
    await heartbeat({ ...ctx, now: midnight - 10 * MINUTE }, "r", ["a", "b", "c"], opts);
    await minute(midnight - 2 * MINUTE); // tells Nov 22: 3
    await heartbeat({ ...ctx, now: midnight - 30_000 }, "r", ["a", "b", "c", "d", "e"], opts); // Nov 22: 5
    // Nov 23: 5 (c, d, e are still online at 00:00:10)
    await heartbeat({ ...ctx, now: midnight + 10_000 }, "r", ["a", "b"], opts);
    if (!late) await minute(midnight - MINUTE); // the 23:59 run, in order
    await minute(midnight + MINUTE); // rollover: tells Nov 22: 5, then Nov 23: 5
    if (late) await minute(midnight - MINUTE); // the 23:59 run, late
    await minute(midnight + 2 * MINUTE);
    await minute(midnight + 3 * MINUTE);
    const got = receiver.received
      .slice(start)
      .map((r) => JSON.parse(r.body) as { id: string; data: { day: string; peak: number } });
    expect(got.map((b) => `${b.data.day}:${b.data.peak}`).sort()).toEqual([
      "2026-11-22:3",
      "2026-11-22:5",
      "2026-11-23:5",
    ]);
    expect(new Set(got.map((b) => b.id)).size).toBe(3);
  }

  it("in order: each day's peak is sent once", () => scenario(false));

  // FIXED (was low, 2026-11-27: a mark of a later day is left alone). Was: a late minute run moves the
  // webhook's peak mark back a day. The 23:59 run, run
  // after 00:01's rollover told Nov 22's 5 and Nov 23's 5, finds the mark on Nov 23 ("not
  // yesterday's"), tells Nov 22's peak again with `previous: 0` and writes the mark back to
  // Nov 22; the 00:02 run then tells Nov 23's peak again. Both are re-sent (same ids: the
  // deliveries hash forgets a delivered id, and peaks do not use the `recent` set), so a receiver
  // gets 5 POSTs for 3 events, one with a different body under the same id. The contract is at
  // least once (dedupe on id), but docs/webhooks.md says repeated job runs do not repeat events.
  // Smallest fix: in detectPeaksScript, skip a webhook whose mark's day is later than `day`
  // (ISO dates compare as strings), so a mark never moves back.
  it("each day's peak is sent once; the late run sends nothing again", () => scenario(true));
});

describe("sweep-counters past one batch", () => {
  it("two runs at once over 600+ orphaned buckets, then more runs: each freed once, more: true only while some are listed", async () => {
    const prefix = newPrefix("sweep-big");
    const ctx = ctxOf(prefix, T0);
    const items = Array.from({ length: 600 }, (_, i) => ({
      member: "a",
      by: 1,
      period: "hour" as const,
      at: T0 - i * HOUR,
    }));
    await counters.increment(ctx, "big", items);
    const orphans = (await keysUnder(lib.target, prefix)).filter((k) => /:counters:big:(hour|day|month):/.test(k));
    expect(orphans.length).toBeGreaterThan(600);
    await counters.deleteCounter(ctx, "big");
    const sweep = JOBS["sweep-counters"]!;
    const config = readConfig({});
    const runs = await Promise.all([0, 1].map(() => sweep(ctxOf(prefix, T0 + MINUTE), config)));
    let deleted = runs.reduce((sum, r) => sum + (r.deleted as number), 0);
    for (let i = 0; i < 10; i++) {
      const r = await sweep(ctxOf(prefix, T0 + MINUTE), config);
      deleted += r.deleted as number;
      if (!r.more) break;
      expect(r.checked as number).toBeGreaterThan(0);
    }
    expect(deleted).toBe(orphans.length);
    expect(await sweep(ctxOf(prefix, T0 + MINUTE), config)).toEqual({ checked: 0, deleted: 0, more: false });
    expect((await keysUnder(lib.target, prefix)).filter((k) => /:counters:big:(hour|day|month):/.test(k))).toEqual([]);
  });
});

describe("leaderboards.snapshot: how many runs a big board takes (docs/leaderboards.md)", () => {
  // Scaled down: 200 players copied 1 a script stand for 1M players copied 5,000 a script
  // (200 chunks either way), at the default 40 scripts a run.
  // FIXED (was low, docs, 2026-11-27: the docs say 6 runs). Was: docs/leaderboards.md said "a 1M-player board takes 200 scripts: 5 hourly runs
  // at the default budget", but each run spends one of its 40 scripts on the registry page, so it
  // copies 39 chunks, and the board needs one more step (copying nothing) to rename the finished
  // build when its size is a multiple of the chunk: 6 runs. Smallest fix: say 6 runs (201 step
  // scripts, 39 a run), or let the rename happen in the step that copies the last full chunk
  // (one ZCARD) and count only step scripts against the budget.
  it("takes 6 runs, as the docs now say", async () => {
    const prefix = newPrefix("snap-runs");
    const ctx = ctxOf(prefix, T0);
    for (let i = 0; i < 200; i++) await leaderboards.join(ctx, "huge", `p${i}`, { name: `p${i}`, score: i });
    const config = readConfig({ LEADERBOARD_SNAPSHOT_CHUNK: "1" });
    expect(config.leaderboardSnapshotScripts).toBe(40);
    const job = JOBS["leaderboards.snapshot"]!;
    let runs = 0;
    for (; runs < 20;) {
      runs++;
      const r = await job(ctxOf(prefix, T0 + runs * HOUR), config);
      if (!r.more) break;
    }
    expect(runs).toBe(6);
  });
});

describe("leaderboards.snapshot: more than a page of boards active in the same millisecond", () => {
  // Boards whose last activity shares one millisecond: queued ingest applies a batch of joins
  // with one clock, and a library caller may pass one `now` for many boards.
  // FIXED (was medium, 2026-11-27: it goes on after the cursor's board by rank). Was: snapshotListScript
  // pages the registry by (score, name) from the cursor with
  // LIMIT 0 200; when a full page at the cursor's score is all done, it "steps past that score"
  // ('(' .. cs), which skips every board at that score after the first 200 by name: here b200..b259
  // get no snapshot that day, nor any later day while they keep sharing the score (previousRank
  // null, or the stale rank of a snapshot days old until it expires). Smallest fix: keep in the
  // cursor how many boards at its score are done and use it as the LIMIT offset for that score
  // (ZRANGE registry cs +inf BYSCORE WITHSCORES LIMIT k n), instead of jumping past the score.
  it("every board gets the day's snapshot", async () => {
    const prefix = newPrefix("snap-samems");
    const ctx = ctxOf(prefix, T0);
    const boards = Array.from({ length: 260 }, (_, i) => `b${String(i).padStart(3, "0")}`);
    for (const board of boards) await leaderboards.join(ctx, board, "p", { name: "p", score: 1 });
    const job = JOBS["leaderboards.snapshot"]!;
    const config = readConfig({});
    for (let run = 0; run < 10; run++) {
      const r = await job(ctxOf(prefix, T0 + (run + 1) * MINUTE), config);
      if (!r.more) break;
    }
    const missing: string[] = [];
    for (const board of boards) {
      const row = (await leaderboards.page(ctxOf(prefix, T0 + HOUR), board, { limit: 1 })).items[0];
      if (row?.previousRank !== 1) missing.push(board);
    }
    expect(missing).toEqual([]);
  });
});
