/**
 * Review 5, concurrency through the library against real Redis (local Upstash server). What
 * test/redis/concurrency.test.ts does not race: whole feature calls (not a bare script) whose
 * clocks straddle a boundary, each call with its own `now` as Workers in different isolates
 * have (a season, a month), and the jobs running with the writes they read and with each
 * other. Every assertion is a total or a state, never a timing.
 */
import { describe, expect, it } from "vitest";
import type { Ctx } from "../../src/context.ts";
import * as counters from "../../src/counters/index.ts";
import * as histograms from "../../src/histograms/index.ts";
import * as leaderboards from "../../src/leaderboards/index.ts";
import * as presence from "../../src/presence/index.ts";
import { NotFoundError } from "../../src/errors.ts";
import { HOUR, MINUTE } from "../../src/time.ts";
import * as trending from "../../src/trending/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, keysUnder } from "../helpers/upstash-rest.ts";

const lib = libraryTest("review5-races", { timeoutMs: 10_000 });
const at = (month: number, d: number, h: number, m = 0, s = 0, ms = 0) => Date.UTC(2026, month, d, h, m, s, ms);
const RET = { retentionHours: 50 };

describe("clocks straddling a boundary, each call its own", () => {
  it("a daily-reset board: 10 players x (5 x +1 before midnight, 5 x +2 after) with 2 snapshot runs at once: each season exact", async () => {
    const base = lib.ctx(at(10, 21, 22), "rv5-season");
    const c = (now: number): Ctx => ({ ...base, now });
    await leaderboards.configure(base, "daily", { reset: "daily" });
    const players = Array.from({ length: 10 }, (_, i) => `p${i}`);
    await Promise.all(players.map((p) => leaderboards.join(base, "daily", p, { name: p })));
    const before = at(10, 21, 23, 59, 59, 999);
    const after = at(10, 22, 0);
    const snapshot = leaderboards.jobs["leaderboards.snapshot"]!;
    await Promise.all([
      ...players.flatMap((p) => [
        ...Array.from({ length: 5 }, () => leaderboards.changeScore(c(before), "daily", p, { by: 1 })),
        ...Array.from({ length: 5 }, () => leaderboards.changeScore(c(after), "daily", p, { by: 2 })),
      ]),
      snapshot(c(after + 5_000), lib.config),
      snapshot(c(after + 5_000), lib.config),
    ]);
    const now = c(after + MINUTE);
    for (const p of players) {
      const prev = await leaderboards.getPlayer(now, "daily", p, { season: "2026-11-21" });
      const cur = await leaderboards.getPlayer(now, "daily", p, { season: "current" });
      expect({ p, prev: prev.score, cur: cur.score }).toEqual({ p, prev: 5, cur: 10 });
    }
    const prevPage = await leaderboards.page(now, "daily", { limit: 100, season: "previous" });
    const curPage = await leaderboards.page(now, "daily", { limit: 100, season: "current" });
    expect([prevPage.total, curPage.total]).toEqual([10, 10]);
    expect(new Set(curPage.items.map((r) => r.rank)).size).toBe(10);
  });

  it("a new counter: 40 calls without `at` whose clocks straddle 1 December, hour and month items: each month exact, listed once", async () => {
    const base = lib.ctx(at(10, 30, 23), "rv5-month");
    const nov = at(10, 30, 23, 59, 59, 999);
    const dec = at(11, 1, 0);
    const sends = Array.from({ length: 40 }, (_, i) => ({ now: i % 2 === 0 ? nov : dec, by: (i % 7) + 1 }));
    await Promise.all(
      sends.map((s) =>
        counters.increment({ ...base, now: s.now }, "months", [
          { member: "m", by: s.by, period: "hour", ttl: 90 * 86_400 },
          { member: "m", by: s.by, period: "month" },
          { member: "m", by: s.by },
        ]),
      ),
    );
    const sum = (when: number) => sends.filter((s) => s.now === when).reduce((a, s) => a + s.by, 0);
    const total = sum(nov) + sum(dec);
    const read = async (options: counters.ReadOptions) =>
      (await counters.memberOf({ ...base, now: dec + HOUR }, "months", "m", options))?.score ?? 0;
    expect({
      plain: await read({}),
      hoursNov: await read({ period: "hour", from: "2026-11-01T00:00:00Z", to: "2026-11-30T23:00:00Z" }),
      hoursDec: await read({ period: "hour", from: "2026-12-01T00:00:00Z", to: "2026-12-01T00:00:00Z" }),
      hoursBoth: await read({ period: "hour", from: "2026-11-30T00:00:00Z", to: "2026-12-01T00:00:00Z" }),
      monthNov: await read({ period: "month", from: "2026-11-01", to: "2026-11-01" }),
      monthDec: await read({ period: "month", from: "2026-12-01", to: "2026-12-01" }),
    }).toEqual({
      plain: total,
      hoursNov: sum(nov),
      hoursDec: sum(dec),
      hoursBoth: total,
      monthNov: sum(nov),
      monthDec: sum(dec),
    });
    const listed = await counters.list({ ...base, now: dec + HOUR });
    expect(listed.counters.filter((n: string) => n === "months")).toEqual(["months"]);
  });
});

describe("cached unions of a finished range while late writes race", () => {
  it("reads that cache hours 11-12 (clock 13:01) beside writes into hour 12 from clocks a minute behind: the next read has every write", async () => {
    const base = lib.ctx(at(10, 20, 12, 30), "rv5-cache");
    const reader = { ...base, now: at(10, 20, 13, 1) };
    // a Worker a minute behind the reader: its write is late by its own clock (13:00:00), so it drops the cache
    const writer = { ...base, now: at(10, 20, 13, 0) };
    const hourItem = (h: number, by: number): counters.IncrItem => ({
      member: "m",
      by,
      period: "hour",
      at: at(10, 20, h, 59, 59, 999),
    });
    await counters.increment(base, "cache", [hourItem(11, 100)]);
    await counters.increment({ ...base, now: at(10, 20, 12, 58) }, "cache", [hourItem(12, 100)]);
    const range = { period: "hour" as const, from: at(10, 20, 11), to: at(10, 20, 12) };
    const read = (ctx: Ctx) => counters.memberOf(ctx, "cache", "m", range);
    expect((await read(reader)).score).toBe(200);
    const outcomes = await Promise.all([
      ...Array.from({ length: 10 }, () => read(reader)),
      ...Array.from({ length: 10 }, () => counters.increment(writer, "cache", [hourItem(12, 1)])),
      ...Array.from({ length: 10 }, () => read(reader)),
    ]);
    // every read saw between none and all of the writes, never less than the start
    for (const o of outcomes) if ("score" in o) expect(o.score).toBeGreaterThanOrEqual(200);
    expect((await read({ ...base, now: at(10, 20, 13, 2) })).score).toBe(210);
    expect((await read(reader)).score).toBe(210);
  });
});

describe("a month's rollup read while tomorrow's first observation lands", () => {
  // FIXED (the margin now adds the minute of clock skew the counters allow; was low: wrong and self-contradictory summary, in a window as long as the clock skew between
  // Workers plus a read's latency, at the end of a range that ends today). histograms.read uses the
  // month rollup for a range from the 1st to today when "the day after the range's last starts
  // later than ctx.now + MAX_FUTURE_MS" (src/histograms/reads.ts), i.e. it assumes nothing can be
  // dated tomorrow yet by the reader's clock. But `ctx.now` is the reader's clock at the start of its
  // request: another Worker 1 ms ahead (or a request that started 1 ms later and was applied first)
  // may date an observation at its now + 5 min, tomorrow 00:00, which the month rollup holds. Found:
  // Nov 1..22 answers count 2, sum 501, buckets [1,2) and [500,501) (the Nov 23 value), min 1 and
  // max 1 (from the days): mean 250.5 above max. Counters' day and hour rollups do not do this (pinned
  // below). Smallest fix: in the read script, use a month rollup for a range ending before the month
  // does only when tomorrow's day key (the one day the future bound allows) does not exist (one
  // EXISTS), else read the days; or at least widen the margin by the skew the service tolerates.
  it("a read of Nov 1..22 whose clock says 23:54:59.999, answered after a write dated Nov 23 00:00 (clock 23:55): Nov 23 is not counted", async () => {
    const base = lib.ctx(at(10, 22, 12), "rv5-hist-month");
    await histograms.put(base, "h", { bucketWidth: 1 });
    await histograms.observe(base, "h", [{ value: 1, at: at(10, 10, 12) }]);
    const reader = { ...base, now: at(10, 22, 23, 54, 59, 999) };
    const before = await histograms.read(reader, "h", { from: "2026-11-01", to: "2026-11-22" });
    expect(before.count).toBe(1);
    // Another Worker, its clock 1 ms ahead (or a request that started 1 ms later), observes at its now + 5 min,
    // which the API allows; the reader's request started first and is answered after it.
    const writer = { ...base, now: at(10, 22, 23, 55) };
    await histograms.observe(writer, "h", [{ value: 500, at: at(10, 23, 0) }]);
    const after = await histograms.read(reader, "h", { from: "2026-11-01", to: "2026-11-22" });
    expect({ count: after.count, max: after.max }).toEqual({ count: 1, max: 1 });
  });
});

describe("a counter's month rollup read while tomorrow's first increment lands", () => {
  it("day and hour reads of Nov 1..22 whose clock says 23:54:59.999, answered after increments dated Nov 23 00:00 (clock 23:55): Nov 23 is not counted", async () => {
    const base = lib.ctx(at(10, 22, 12), "rv5-counter-month");
    await counters.increment(base, "cm", [
      { member: "m", by: 1, period: "day", at: at(10, 10, 12) },
      { member: "m", by: 1, period: "hour", at: at(10, 10, 12) },
    ]);
    const reader = { ...base, now: at(10, 22, 23, 54, 59, 999) };
    const read = (options: counters.ReadOptions) => counters.memberOf(reader, "cm", "m", options).then((r) => r.score);
    const day = { period: "day" as const, from: "2026-11-01", to: "2026-11-22" };
    const hour = { period: "hour" as const, from: "2026-11-01T00:00:00Z", to: "2026-11-22T23:00:00Z" };
    expect([await read(day), await read(hour)]).toEqual([1, 1]);
    const writer = { ...base, now: at(10, 22, 23, 55) };
    await counters.increment(writer, "cm", [
      { member: "m", by: 500, period: "day", at: at(10, 23, 0) },
      { member: "m", by: 500, period: "hour", at: at(10, 23, 0) },
    ]);
    expect([await read(day), await read(hour)]).toEqual([1, 1]);
  });
});

describe("first touches with different ttls at once", () => {
  it("20 first hour increments with ttls 100..2000 s: the bucket lives the largest ttl, its rollups and index no less", async () => {
    const base = lib.ctx(Date.now(), "rv5-ttlh");
    const ttls = Array.from({ length: 20 }, (_, i) => 100 * (i + 1));
    await Promise.all(ttls.map((ttl) => counters.increment(base, "ttlh", [{ member: "m", ttl, period: "hour" }])));
    const keys = (await keysUnder(lib.target, base.prefix)).filter((k) => k.includes(":ttlh"));
    const pttl = (k: string) => command<number>(lib.target, "PTTL", k);
    const bucket = keys.filter((k) => /:hour:\d{10}$/.test(k));
    expect(bucket).toHaveLength(1);
    const bucketTtl = await pttl(bucket[0]!);
    expect({ low: bucketTtl >= 2000 * 1000 - 10_000, high: bucketTtl <= 2200 * 1000 }).toEqual({
      low: true,
      high: true,
    });
    // rollups (by-quarter, by-day, by-month) and the index outlive the bucket they sum or list
    for (const k of keys.filter((x) => x !== bucket[0]))
      expect({ k, ok: (await pttl(k)) >= bucketTtl - 1000 }).toEqual({ k, ok: true });
    expect(keys.length).toBe(5);
  });

  it("20 first increments of a new counter with ttls 100..2000 s: the key and the registry's expiry both reach the largest", async () => {
    // the key's expiry runs on Redis' clock, the registry's on the call's: the same here
    const base = lib.ctx(Date.now(), "rv5-ttls");
    const ttls = Array.from({ length: 20 }, (_, i) => 100 * (i + 1));
    await Promise.all(ttls.map((ttl) => counters.increment(base, "ttls", [{ member: "m", ttl }])));
    const plain = `${base.prefix}:counters:ttls`;
    const pttl = await command<number>(lib.target, "PTTL", plain);
    const expiry = Number(
      await command<string | null>(lib.target, "ZSCORE", `${base.prefix}:counters:_expiry`, "ttls"),
    );
    const max = 2000 * 1000;
    const slack = 200 * 1000; // a tenth of the largest ttl, as an extension may add
    // at least the largest ttl (minus the seconds this test took), at most that plus the slack
    expect({ low: pttl >= max - 10_000, high: pttl <= max + slack }).toEqual({ low: true, high: true });
    expect({ low: expiry >= base.now + max, high: expiry <= base.now + max + slack + 10_000 }).toEqual({
      low: true,
      high: true,
    });
    expect((await counters.memberOf(base, "ttls", "m")).score).toBe(20);
  });
});

describe("a finished season read while a lagging clock still writes into it", () => {
  it("seasons, page and player reads of Nov 21 at 00:00:01 interleaved with changes from a clock at 23:59:59.5: the last reads have every change", async () => {
    const base = lib.ctx(at(10, 21, 20), "rv5-late-season");
    await leaderboards.configure(base, "late", { reset: "daily" });
    for (const p of ["a", "b", "c", "d"]) await leaderboards.join(base, "late", p, { name: p.toUpperCase() });
    await leaderboards.changeScores(base, "late", [
      { player: "a", by: 40 },
      { player: "b", by: 30 },
      { player: "c", by: 20 },
    ]);
    const reader = { ...base, now: at(10, 22, 0, 0, 1) };
    const lagging = { ...base, now: at(10, 21, 23, 59, 59, 500) };
    const season = { season: "2026-11-21" as const };
    await leaderboards.listSeasons(reader, "late");
    await Promise.all([
      leaderboards.listSeasons(reader, "late"),
      leaderboards.page(reader, "late", { ...season, limit: 10 }),
      ...Array.from({ length: 10 }, () => leaderboards.changeScore(lagging, "late", "d", { by: 10 })),
      leaderboards.listSeasons(reader, "late"),
      leaderboards.getPlayer(reader, "late", "d", season),
    ]);
    const seasons = await leaderboards.listSeasons(reader, "late");
    const nov21 = seasons.seasons.find((x) => x.id === "2026-11-21");
    expect(nov21?.top.map((t) => [t.player, t.score])).toEqual([
      ["d", 100],
      ["a", 40],
      ["b", 30],
    ]);
    expect(nov21?.players).toBe(4);
    const page = await leaderboards.page(reader, "late", { ...season, limit: 10 });
    expect(page.items.map((r) => [r.player, r.score, r.rank])).toEqual([
      ["d", 100, 1],
      ["a", 40, 2],
      ["b", 30, 3],
      ["c", 20, 4],
    ]);
    expect((await leaderboards.getPlayer(reader, "late", "d", season)).rank).toBe(1);
  });
});

describe("jobs with the writes they read", () => {
  it("compaction of an hour (twice at once) while late events for that hour arrive: the top member keeps every event, every count stays within maxError", async () => {
    const ctx = lib.ctx(at(10, 20, 11, 5), "rv5-compact");
    const hourAt = at(10, 20, 10, 30);
    // hour 10: a clear leader and 12 small members; keep 3 trims the hour
    await trending.record(
      ctx,
      "s",
      [
        { member: "big", count: 1000, at: hourAt },
        ...Array.from({ length: 12 }, (_, i) => ({ member: `s${i}`, count: i + 1, at: hourAt })),
      ],
      RET,
    );
    const truth = new Map<string, number>([
      ["big", 1000],
      ...Array.from({ length: 12 }, (_, i) => [`s${i}`, i + 1] as [string, number]),
    ]);
    const late = Array.from({ length: 30 }, (_, i) => ({ member: i % 3 === 0 ? "big" : `s${i % 12}`, count: 2 }));
    for (const e of late) truth.set(e.member, (truth.get(e.member) ?? 0) + e.count);
    const results = await Promise.all([
      trending.compact(ctx, { keep: 3 }),
      ...late.map((e) => trending.record(ctx, "s", [{ ...e, at: hourAt }], RET)),
      trending.compact(ctx, { keep: 3 }),
    ]);
    expect(results.length).toBe(32);
    // one more run after the writes, as the next cron would
    await trending.compact(ctx, { keep: 3 });
    const read = { ...ctx, now: at(10, 20, 12, 1) };
    const big = await trending.member(read, "s", "big", { ...RET, windowHours: 24 });
    expect(big.count).toBe(truth.get("big"));
    const top = await trending.top(read, "s", { ...RET, windowHours: 24, n: 10 });
    expect(top.items[0]).toMatchObject({ member: "big", count: truth.get("big") });
    for (const [member, count] of truth) {
      const r = await trending.member(read, "s", member, { ...RET, windowHours: 24 });
      // never above the truth, and at most maxError below it
      expect({ member, over: r.count > count, under: count - r.count > r.maxError }).toEqual({
        member,
        over: false,
        under: false,
      });
    }
  });

  it("new rooms: 60 heartbeats at once with 3 trim runs of the same minute and 1 of the next: online, active, new exact; rooms listed", async () => {
    const base = lib.ctx(at(10, 20, 15, 0, 10), "rv5-trim");
    const trim = presence.createTrimJob();
    const rooms = ["r1", "r2", "r3"];
    const ids = Array.from({ length: 20 }, (_, i) => `u${i}`);
    await Promise.all([
      ...rooms.flatMap((room) => ids.map((id) => presence.heartbeat(base, room, [id]))),
      trim(base, lib.config),
      trim(base, lib.config),
      trim({ ...base, now: base.now + 20_000 }, lib.config),
      trim({ ...base, now: base.now + MINUTE }, lib.config),
    ]);
    // the next minute's run sees every room that was written
    const next = await trim({ ...base, now: base.now + 2 * MINUTE }, lib.config);
    expect(next.online).toBe(60);
    for (const room of rooms) {
      const s = await presence.stats({ ...base, now: base.now + 2 * MINUTE }, room);
      expect({ room, online: s.online, active: s.activeToday, new: s.newToday }).toEqual({
        room,
        online: 20,
        active: 20,
        new: 20,
      });
    }
    const listed = await presence.rooms({ ...base, now: base.now + 2 * MINUTE });
    expect([...listed.rooms].sort()).toEqual(rooms);
  });
});

describe("trim runs of several minutes at once", () => {
  it("3 minutes' trims, each twice, all at once beside refreshing heartbeats: one history point per minute, each the room's 20", async () => {
    const base = lib.ctx(at(10, 20, 16, 0, 10), "rv5-history");
    const ids = Array.from({ length: 20 }, (_, i) => `u${i}`);
    await presence.heartbeat(base, "h", ids);
    const trim = presence.createTrimJob();
    const minutes = [1, 2, 3].map((m) => base.now + m * MINUTE);
    await Promise.all([
      ...minutes.flatMap((now) => [trim({ ...base, now }, lib.config), trim({ ...base, now }, lib.config)]),
      ...minutes.map((now) => presence.heartbeat({ ...base, now: now - 5_000 }, "h", ids)),
    ]);
    const points = (await presence.history({ ...base, now: base.now + 4 * MINUTE }, "h", 1)).points;
    expect(points).toEqual(minutes.map((now) => ({ at: Math.floor(now / MINUTE) * MINUTE, online: 20 })));
    const s = await presence.stats({ ...base, now: base.now + 4 * MINUTE }, "h");
    expect({ online: s.online, peak: s.peakToday, active: s.activeToday, new: s.newToday }).toEqual({
      online: 20,
      peak: 20,
      active: 20,
      new: 20,
    });
  });
});

describe("deletes racing writes", () => {
  it("a counter deleted while 30 increments (plain, hour, month) and 2 sweeps run: the new life holds exactly the increments acknowledged after the delete", async () => {
    const ctx = lib.ctx(at(10, 20, 12, 30), "rv5-delete");
    const items = (by: number): counters.IncrItem[] => [
      { member: "m", by },
      { member: "m", by, period: "hour", at: at(10, 20, 12, 10) },
      { member: "m", by, period: "month", at: at(10, 20, 12, 10) },
    ];
    await counters.increment(ctx, "gone", items(1000));
    // every script loaded beforehand (a first call pays NOSCRIPT + EVAL), so the delete races for real
    await counters.increment(ctx, "warm", items(1));
    await counters.deleteCounter(ctx, "warm");
    const sweep = counters.jobs["sweep-counters"]!;
    const settled = await Promise.all([
      ...Array.from({ length: 10 }, () => counters.increment(ctx, "gone", items(1))),
      counters.deleteCounter(ctx, "gone"),
      sweep(ctx, lib.config),
      ...Array.from({ length: 20 }, () => counters.increment(ctx, "gone", items(1))),
      sweep(ctx, lib.config),
    ]);
    await sweep(ctx, lib.config);
    const incrs = settled.filter((r): r is Awaited<ReturnType<typeof counters.increment>> => "results" in r);
    // an increment after the delete starts from 0 (its scores are at most 30); one before it from 1000
    const after = incrs.filter((r) => r.results.every((x) => x.score <= 30));
    expect(after.length + incrs.filter((r) => r.results.every((x) => x.score > 1000)).length).toBe(30);
    const k = after.length;
    const read = (options: counters.ReadOptions) =>
      counters.memberOf(ctx, "gone", "m", options).then(
        (r) => r.score,
        (e: unknown) => (e instanceof NotFoundError ? 0 : Promise.reject(e)),
      );
    expect({
      plain: await read({}),
      hour: await read({ period: "hour", from: at(10, 20, 12), to: at(10, 20, 12) }),
      dayInHours: await read({ period: "hour", from: at(10, 20, 0), to: at(10, 20, 23) }),
      monthInHours: await read({ period: "hour", from: at(10, 1, 0), to: at(10, 30, 23) }),
      month: await read({ period: "month", from: at(10, 1, 0), to: at(10, 1, 0) }),
    }).toEqual({ plain: k, hour: k, dayInHours: k, monthInHours: k, month: k });
    // the registry agrees: listed exactly when the new life holds something
    const listed = (await counters.list(ctx)).counters.filter((n: string) => n === "gone");
    expect(listed).toEqual(k > 0 ? ["gone"] : []);
  });

  it("a member deleted from a day of hour buckets while 30 hour increments race: buckets and rollups hold exactly the increments after the delete", async () => {
    const ctx = lib.ctx(at(10, 20, 12, 30), "rv5-delmember");
    const hour = (by: number, h: number): counters.IncrItem => ({
      member: "m",
      by,
      period: "hour",
      at: at(10, 20, h, 10),
    });
    // 1000 in each of hours 3 and 12; another member keeps the buckets alive
    await counters.increment(ctx, "dm", [hour(1000, 3), hour(1000, 12), { ...hour(1, 12), member: "other" }]);
    await counters.increment(ctx, "warm", [hour(1, 3)]);
    await counters.deleteMember(ctx, "warm", "m", { period: "hour", from: at(10, 20, 0), to: at(10, 20, 23) });
    const settled = await Promise.all([
      ...Array.from({ length: 10 }, () => counters.increment(ctx, "dm", [hour(1, 3), hour(1, 12)])),
      counters.deleteMember(ctx, "dm", "m", { period: "hour", from: at(10, 20, 0), to: at(10, 20, 23) }),
      ...Array.from({ length: 20 }, () => counters.increment(ctx, "dm", [hour(1, 3), hour(1, 12)])),
    ]);
    const incrs = settled.filter((r): r is Awaited<ReturnType<typeof counters.increment>> => "results" in r);
    const after = incrs.filter((r) => r.results.every((x) => x.score <= 30));
    expect(after.length + incrs.filter((r) => r.results.every((x) => x.score > 1000)).length).toBe(30);
    const k = after.length;
    const read = (options: counters.ReadOptions, member = "m") =>
      counters.memberOf(ctx, "dm", member, options).then(
        (r) => r.score,
        (e: unknown) => (e instanceof NotFoundError ? 0 : Promise.reject(e)),
      );
    expect({
      h3: await read({ period: "hour", from: at(10, 20, 3), to: at(10, 20, 3) }),
      h12: await read({ period: "hour", from: at(10, 20, 12), to: at(10, 20, 12) }),
      quarter: await read({ period: "hour", from: at(10, 20, 0), to: at(10, 20, 5) }),
      day: await read({ period: "hour", from: at(10, 20, 0), to: at(10, 20, 23) }),
      month: await read({ period: "hour", from: at(10, 1, 0), to: at(10, 30, 23) }),
      other: await read({ period: "hour", from: at(10, 1, 0), to: at(10, 30, 23) }, "other"),
    }).toEqual({ h3: k, h12: k, quarter: k, day: 2 * k, month: 2 * k, other: 1 });
  });

  it("a player removed while 20 score changes race: every change is applied or a 404, and the player is gone afterwards", async () => {
    const ctx = lib.ctx(at(10, 20, 12), "rv5-remove");
    await leaderboards.join(ctx, "b", "p", { name: "P", score: 50 });
    await leaderboards.join(ctx, "b", "q", { name: "Q", score: 1 });
    // the remove script loaded beforehand, so it races for real
    await leaderboards.join(ctx, "b", "warm", { name: "W" });
    await leaderboards.removePlayer(ctx, "b", "warm");
    const outcomes = await Promise.allSettled([
      ...Array.from({ length: 10 }, () => leaderboards.changeScore(ctx, "b", "p", { by: 1 })),
      leaderboards.removePlayer(ctx, "b", "p"),
      ...Array.from({ length: 10 }, () => leaderboards.changeScore(ctx, "b", "p", { by: 1 })),
    ]);
    for (const o of outcomes) if (o.status === "rejected") expect(o.reason).toBeInstanceOf(NotFoundError);
    await expect(leaderboards.getPlayer(ctx, "b", "p")).rejects.toBeInstanceOf(NotFoundError);
    const page = await leaderboards.page(ctx, "b", { limit: 100 });
    expect(page.items.map((r) => [r.player, r.score])).toEqual([["q", 1]]);
    expect(page.total).toBe(1);
  });

  it("a board deleted while 20 score changes race: nothing of the board is left behind", async () => {
    const ctx = lib.ctx(at(10, 20, 12), "rv5-delboard");
    await leaderboards.configure(ctx, "gone", { reset: "daily" });
    await leaderboards.join(ctx, "gone", "p", { name: "P", score: 5 });
    // the delete script loaded beforehand, so it races for real
    await leaderboards.join(ctx, "warm", "p", { name: "P" });
    await leaderboards.deleteBoard(ctx, "warm");
    const outcomes = await Promise.allSettled([
      ...Array.from({ length: 10 }, () => leaderboards.changeScore(ctx, "gone", "p", { by: 1 })),
      leaderboards.deleteBoard(ctx, "gone"),
      ...Array.from({ length: 10 }, () => leaderboards.changeScore(ctx, "gone", "p", { by: 1 })),
    ]);
    for (const o of outcomes) if (o.status === "rejected") expect(o.reason).toBeInstanceOf(NotFoundError);
    await expect(leaderboards.info(ctx, "gone")).rejects.toBeInstanceOf(NotFoundError);
    expect((await keysUnder(lib.target, ctx.prefix)).filter((k) => k.includes(":gone"))).toEqual([]);
  });
});
