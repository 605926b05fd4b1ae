/**
 * The site-wide `online` (`GET /v1/presence/_total`) when trim runs are capped (by `maxRooms` or by
 * their subrequest share): each room's last counted online figure is kept in `_online` with their
 * sum, so a capped run samples the rooms it visits fresh and the others at their last count, never
 * a room twice. A run that visits every room records the same sample as before; a room whose ids
 * all leave, that goes idle or that is deleted leaves the sum. Real redis-server behind the local
 * Upstash server; the true figure is each room's own `online` (presence.stats).
 */
import { describe, expect, it } from "vitest";
import type { Ctx } from "../../src/context.ts";
import { SubrequestBudget } from "../../src/job-budget.ts";
import type { JobCtx } from "../../src/jobs.ts";
import * as presence from "../../src/presence/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { command } from "../helpers/upstash-rest.ts";

const { createTrimJob, deleteRoom, heartbeat, leave, stats, total } = presence;
const lib = libraryTest("presence-site-capped");
const config = lib.config;
/** An hour's timeout: nobody goes offline during the minutes of runs below unless they leave. */
const long = { ...lib.config, presenceTimeoutSeconds: 3600 };
const MIN = 60_000;
const DAY = 86_400_000;
/** 12:00:30 UTC: no hour boundary and far from midnight in the runs below. */
const T0 = Date.UTC(2026, 10, 22, 12, 0, 30);

const at = <C extends Ctx>(ctx: C, now: number): C => ({ ...ctx, now });
const ids = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}-${i}`);
const counted = (ctx: Ctx) => `${ctx.prefix}:presence:_online`;

/** The true site-wide online count: the sum of every room's own figure. */
async function trueOnline(ctx: Ctx, rooms: readonly string[]): Promise<number> {
  let sum = 0;
  for (const room of rooms) sum += (await stats(ctx, room, { timeoutSeconds: 3600 })).online;
  return sum;
}

/** Heartbeats `rooms[i]` with `sizes[i]` ids (tagged by room), 20 rooms at a time. */
async function beatAll(ctx: Ctx, rooms: readonly string[], sizes: readonly number[], tag = "u") {
  for (let i = 0; i < rooms.length; i += 20)
    await Promise.all(
      rooms.slice(i, i + 20).map((room, j) => heartbeat(ctx, room, ids(sizes[i + j]!, `${tag}${room}`))),
    );
}

/** A job context whose subrequest share is `limit` (a free-plan-like budget: 3 kept for reloads). */
function budgeted(ctx: Ctx, limit: number): JobCtx {
  return { ...ctx, budget: new SubrequestBudget(limit).allowance(limit, 3) };
}

describe("a capped run's site-wide sample", () => {
  it("capped by its subrequest share (50 rooms a run): once every room was visited, each sample equals an uncapped run's; the peak is what a run counted at once", async () => {
    const rooms = Array.from({ length: 120 }, (_, i) => `r${String(i).padStart(3, "0")}`);
    const sizes = rooms.map((_, i) => 1 + (i % 5));
    const capped = lib.ctx(T0, "site-cap-budget");
    const full = lib.ctx(T0, "site-cap-full");
    await beatAll(capped, rooms, sizes);
    await beatAll(full, rooms, sizes);
    const T = sizes.reduce((a, b) => a + b, 0);
    expect(await trueOnline(capped, rooms)).toBe(T);

    const job = createTrimJob();
    // 6 subrequests, 3 kept for NOSCRIPT re-sends: the list, the marks and one chunk of 50 rooms
    const seen: number[] = [];
    const atOnce: number[] = [];
    for (let m = 1; m <= 5; m++) {
      const now = T0 + m * MIN;
      const run = await job(budgeted(at(capped, now), 6), long);
      expect(run).toMatchObject({ rooms: 50, capped: true, calls: 2 });
      atOnce.push(run.online as number);
      const reference = await job(at(full, now), long);
      expect(reference).toMatchObject({ rooms: 120, capped: false, online: T, siteOnline: T });
      const sample = await total(at(capped, now + 1000));
      expect(sample.online).toBe(run.siteOnline);
      expect(sample.onlineAt).toBe(now);
      seen.push(sample.online);
    }
    // first touch: the rooms visited so far (50, then 100 of them); from the third run on, every
    // room has a count and the capped sample is the uncapped one (before: the 50 visited, ~1/2.4 of it)
    const firstFifty = sizes.slice(0, 50).reduce((a, b) => a + b, 0);
    const firstHundred = sizes.slice(0, 100).reduce((a, b) => a + b, 0);
    expect(seen).toEqual([firstFifty, firstHundred, T, T, T]);
    // the peak takes what a run counted itself (its 50 rooms), never the others' last counts: people
    // moving between rooms could count twice there (review 15); an uncapped run's is its sample
    const site = await total(at(capped, T0 + 6 * MIN));
    expect(site.peakToday).toBe(Math.max(...atOnce));
    expect(site.peakToday).toBeLessThan(T);
    expect((await total(at(full, T0 + 6 * MIN))).peakToday).toBe(T);
    // one field per room with someone online, and the sum
    expect(await command(lib.target, "HLEN", counted(capped))).toBe(121);
    expect(Number(await command(lib.target, "HGET", counted(capped), "_sum"))).toBe(T);
  });

  it("counts that change: a capped run is off only by the unvisited rooms' changes since their last visit, and catches up", async () => {
    const rooms = ["a", "b", "c", "d", "e", "f", "g"];
    const sizes = [3, 1, 4, 1, 5, 9, 2];
    const ctx = lib.ctx(T0, "site-cap-change");
    await beatAll(ctx, rooms, sizes);
    const job = createTrimJob({ maxRooms: 3, chunkRooms: 2 });
    for (let m = 1; m <= 3; m++) await job(at(ctx, T0 + m * MIN), long); // every room visited once
    expect((await total(at(ctx, T0 + 3 * MIN))).online).toBe(25);
    // every room gains 2 ids: a capped run of 3 rooms sees 3 of the gains, the next 3 more, the next the last
    const now = T0 + 3 * MIN + 30_000;
    await beatAll(at(ctx, now), rooms, [2, 2, 2, 2, 2, 2, 2], "v");
    expect(await trueOnline(at(ctx, now), rooms)).toBe(39);
    const samples: number[] = [];
    let atOnce = 0;
    for (let m = 4; m <= 7; m++) {
      const run = await job(at(ctx, T0 + m * MIN), long);
      expect(run).toMatchObject({ rooms: 3, capped: true });
      atOnce = Math.max(atOnce, run.online as number);
      samples.push((await total(at(ctx, T0 + m * MIN))).online);
    }
    expect(samples).toEqual([25 + 6, 25 + 12, 39, 39]);
    // never above the true figure, which only rose: the capped runs' peak is what one counted at once
    expect((await total(at(ctx, T0 + 8 * MIN))).peakToday).toBe(atOnce);
    expect(atOnce).toBeLessThan(39);
    // an uncapped run records the same sample, and the peak
    expect(await createTrimJob()(at(ctx, T0 + 8 * MIN), long)).toMatchObject({ siteOnline: 39, capped: false });
    expect((await total(at(ctx, T0 + 8 * MIN))).peakToday).toBe(39);
  });

  it("capped runs at once count each room once: their samples never pass the true figure", async () => {
    const rooms = Array.from({ length: 9 }, (_, i) => `p${i}`);
    const sizes = rooms.map((_, i) => i + 1);
    const ctx = lib.ctx(T0, "site-cap-overlap");
    await beatAll(ctx, rooms, sizes);
    const job = createTrimJob({ maxRooms: 4, chunkRooms: 2 });
    let atOnce = 0;
    for (let m = 1; m <= 4; m++) {
      const runs = await Promise.all([1, 2, 3].map((k) => job(at(ctx, T0 + m * MIN + k), long)));
      for (const run of runs) expect(Number(run.siteOnline)).toBeLessThanOrEqual(45);
      for (const run of runs) atOnce = Math.max(atOnce, run.online as number);
    }
    const site = await total(at(ctx, T0 + 5 * MIN));
    expect(site.online).toBe(45);
    expect(site.peakToday).toBe(atOnce);
    expect(atOnce).toBeLessThanOrEqual(45);
    expect(Number(await command(lib.target, "HGET", counted(ctx), "_sum"))).toBe(45);
  });
});

describe("rooms leaving the site-wide sum", () => {
  it("a room whose ids all left leaves at its next visit; rooms going idle leave, and with nobody online the sum's key goes", async () => {
    const rooms = ["x", "y", "z", "w"];
    const ctx = lib.ctx(T0, "site-cap-idle");
    await beatAll(ctx, rooms, [3, 2, 4, 1]);
    const job = createTrimJob({ maxRooms: 2, chunkRooms: 1 });
    let atOnce = 0;
    for (let m = 1; m <= 2; m++) atOnce = Math.max(atOnce, (await job(at(ctx, T0 + m * MIN), config)).online as number);
    expect((await total(at(ctx, T0 + 2 * MIN))).online).toBe(10);
    // x's ids leave: x counts 0 from its next visit on, and leaves the hash
    for (const id of ids(3, "ux")) await leave(at(ctx, T0 + 2 * MIN + 5000), "x", id);
    for (let m = 3; m <= 4; m++) await job(at(ctx, T0 + m * MIN), config);
    expect((await total(at(ctx, T0 + 4 * MIN))).online).toBe(7);
    expect(await command(lib.target, "HEXISTS", counted(ctx), "x")).toBe(0);
    // everyone times out (300 s), the rooms go idle: the sample falls to 0, the key goes
    for (let m = 5; m <= 12; m++) await job(at(ctx, T0 + m * MIN), config);
    const site = await total(at(ctx, T0 + 12 * MIN));
    expect(site.online).toBe(0);
    // the 2 rooms a capped run visited at most (the sample of 10 held the 2 others' last counts)
    expect(site.peakToday).toBe(atOnce);
    expect(atOnce).toBeLessThan(10);
    expect(await command(lib.target, "EXISTS", counted(ctx))).toBe(0);
    // two days on the idle rooms leave the registries; nothing comes back into the sum
    const later = T0 + 2 * DAY + 20 * MIN;
    for (let k = 0; k < 3; k++) await job(at(ctx, later + k * MIN), config);
    expect(await command(lib.target, "ZCARD", `${ctx.prefix}:presence:_rooms`)).toBe(0);
    expect(await command(lib.target, "EXISTS", counted(ctx))).toBe(0);
    // a room coming back is counted from its first visit
    await heartbeat(at(ctx, later + 5 * MIN), "y", ["back"]);
    await job(at(ctx, later + 6 * MIN), config);
    expect((await total(at(ctx, later + 6 * MIN))).online).toBe(1);
  });

  it("a deleted room leaves the sum at once, with a new sample, also when no room is due after it", async () => {
    const ctx = lib.ctx(T0, "site-cap-delete");
    await beatAll(ctx, ["a", "b", "c"], [3, 2, 6]);
    const job = createTrimJob({ maxRooms: 2, chunkRooms: 1 });
    let atOnce = 0;
    for (let m = 1; m <= 2; m++) atOnce = Math.max(atOnce, (await job(at(ctx, T0 + m * MIN), long)).online as number);
    expect((await total(at(ctx, T0 + 2 * MIN))).online).toBe(11);
    const deletedAt = T0 + 2 * MIN + 10_000;
    await deleteRoom(at(ctx, deletedAt), "c");
    // the delete's sample leaves the day's highest alone (what a capped run counted at once)
    expect(await total(at(ctx, deletedAt + 1))).toMatchObject({ online: 5, onlineAt: deletedAt, peakToday: atOnce });
    // the capped runs after it: a and b only, never c's last count
    for (let m = 3; m <= 5; m++) {
      await job(at(ctx, T0 + m * MIN), long);
      expect((await total(at(ctx, T0 + m * MIN))).online).toBe(5);
    }
    expect(await command(lib.target, "HEXISTS", counted(ctx), "c")).toBe(0);
    // the last counted rooms deleted: no run has a room due any more, the delete samples 0
    await deleteRoom(at(ctx, T0 + 6 * MIN), "a");
    await deleteRoom(at(ctx, T0 + 6 * MIN + 1), "b");
    expect(await total(at(ctx, T0 + 6 * MIN + 2))).toMatchObject({ online: 0, onlineAt: T0 + 6 * MIN + 1 });
    expect(await command(lib.target, "EXISTS", counted(ctx))).toBe(0);
    expect(await job(at(ctx, T0 + 7 * MIN), long)).toMatchObject({ rooms: 0, siteOnline: null });
    // a room nobody was counted in: its delete leaves the sample alone
    await heartbeat(at(ctx, T0 + 8 * MIN), "d", ["q"]);
    await deleteRoom(at(ctx, T0 + 8 * MIN + 1), "d");
    expect((await total(at(ctx, T0 + 8 * MIN + 2))).onlineAt).toBe(T0 + 6 * MIN + 1);
  });
});
