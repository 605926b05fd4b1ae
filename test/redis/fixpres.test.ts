/**
 * wt-fixpres: the trim schedule (`_due`) and the site-wide figures (`_online`, `_total`) after
 * sequences of heartbeats, leaves, room deletes and expiries. Real redis-server behind the local
 * Upstash server; the true figure is each room's own `online` (presence.stats), the schedule read
 * back with ZRANGE.
 */
import { describe, expect, it } from "vitest";
import type { Ctx } from "../../src/context.ts";
import * as presence from "../../src/presence/index.ts";
import { allRoomKeys, legacyRegistryKeys, registryKeys } from "../../src/presence/keys.ts";
import { markOf } from "../../src/presence/scripts.ts";
import { libraryTest } from "../helpers/library.ts";
import { command } from "../helpers/upstash-rest.ts";

const { createTrimJob, deleteRoom, heartbeat, leave, stats, total } = presence;
const lib = libraryTest("fixpres");
const MIN = 60_000;
const DAY = 86_400_000;
/** A 2-minute timeout, short enough for ids to expire within the runs below. */
const config = { ...lib.config, presenceTimeoutSeconds: 120 };
const T_OPT = { timeoutSeconds: 120 };
/** 12:10:30 UTC: far from the hour and from midnight. */
const T0 = Date.UTC(2026, 10, 23, 12, 10, 30);

const at = <C extends Ctx>(ctx: C, now: number): C => ({ ...ctx, now });
const due = (ctx: Ctx) => command<string[]>(lib.target, "ZRANGE", registryKeys(ctx.prefix).due, 0, -1);

/** The previous release's room delete (before 4cfdf6a): the registries and the room's keys, not `_online`. */
async function oldDelete(ctx: Ctx, room: string) {
  const registry = registryKeys(ctx.prefix);
  for (const key of [registry.rooms, registry.due, ...legacyRegistryKeys(ctx.prefix)])
    await command(lib.target, "ZREM", key, room);
  await command(lib.target, "UNLINK", ...allRoomKeys(ctx.prefix, room, ctx.now));
}

describe("a deleted room's leave marks in `_due`", () => {
  // Limit (1): a leave of an id the room never mapped puts an entry (markEntry) in `_due`; the room
  // delete cannot find them without a scan of the room's `ids` (unbounded), so they stay until due
  // (a timeout and 2 days after the leave), and the run that lists them drops each at O(1): one
  // HMGET (nothing there), its share of one ZREM, no key written, no counter touched.
  it("the delete leaves them; the run they come due in drops them at O(1) each, writing nothing", async () => {
    const ctx = lib.ctx(T0, "fixpres-marks");
    await heartbeat(ctx, "r", ["a"], T_OPT);
    for (const id of ["u1", "u2", "u3"]) await leave(at(ctx, T0 + 1000), "r", id, T_OPT);
    expect((await due(ctx)).filter((e) => markOf(e)?.[0] === "r")).toHaveLength(3);
    await deleteRoom(at(ctx, T0 + 2000), "r");
    const left = await due(ctx);
    expect(left.filter((e) => markOf(e)?.[0] === "r")).toHaveLength(3);
    expect(left).not.toContain("r");
    const job = createTrimJob();
    // before they are due: the idle run, 2 commands, lists nothing
    expect(await job(at(ctx, T0 + MIN), config)).toMatchObject({ rooms: 0, calls: 1 });
    // due: one script drops all three, and nothing of the room is written back
    expect(await job(at(ctx, T0 + 2 * DAY + 3 * MIN), config)).toMatchObject({ rooms: 0, calls: 2 });
    expect(await due(ctx)).toEqual([]);
    for (const key of allRoomKeys(ctx.prefix, "r", T0 + 2 * DAY + 3 * MIN))
      expect(await command(lib.target, "EXISTS", key)).toBe(0);
  });
});

describe("`_online` and `_total` converge within one run", () => {
  // Limit (2), found: the sample and the check of `_online` against `_due` ran only in a chunk of
  // rooms, and a run with no room due runs none. A counted room that is not due (the previous
  // release's delete: it took the room out of the registries, not `_online`) stayed in `_online` and
  // in `_total` while no other room came due: for good on a site where it was the last one active.
  it("a counted room the previous release deleted, with no room due after it, leaves at the next run", async () => {
    const ctx = lib.ctx(T0, "fixpres-old");
    await heartbeat(ctx, "a", ["x", "y"], T_OPT);
    const job = createTrimJob();
    await job(at(ctx, T0 + 30_000), config);
    expect((await total(at(ctx, T0 + 31_000))).online).toBe(2);
    await oldDelete(at(ctx, T0 + 40_000), "a");
    const run = await job(at(ctx, T0 + MIN), config);
    expect(run).toMatchObject({ rooms: 0, stale: 1, siteOnline: 0 });
    expect(await total(at(ctx, T0 + MIN + 1))).toMatchObject({ online: 0, onlineAt: T0 + MIN });
    expect(await command(lib.target, "EXISTS", registryKeys(ctx.prefix).counted)).toBe(0);
    // and then the schedule is empty again: the idle run costs what it did (one call, 2 commands)
    expect(await due(ctx)).toEqual([]);
    expect(await job(at(ctx, T0 + 2 * MIN), config)).toMatchObject({ rooms: 0, calls: 1, siteOnline: null });
  });

  it("after heartbeats, leaves, deletes and expiries, one run brings `_total` to the true figure", async () => {
    const ctx = lib.ctx(T0, "fixpres-seq");
    const rooms = ["a", "b", "c", "d"];
    const job = createTrimJob({ chunkRooms: 2 });
    await heartbeat(ctx, "a", ["a1", "a2"], T_OPT);
    await heartbeat(ctx, "b", ["b1"], T_OPT);
    await heartbeat(ctx, "c", ["c1", "c2", "c3"], T_OPT);
    await job(at(ctx, T0 + 10_000), config);
    expect((await total(at(ctx, T0 + 11_000))).online).toBe(6);
    await leave(at(ctx, T0 + 20_000), "a", "a1", T_OPT);
    await deleteRoom(at(ctx, T0 + 25_000), "b");
    await oldDelete(at(ctx, T0 + 26_000), "c");
    await heartbeat(at(ctx, T0 + 30_000), "d", ["d1"], T_OPT);
    const check = async (t: number) => {
      const run = await job(at(ctx, t), config);
      let truth = 0;
      for (const room of rooms) truth += (await stats(at(ctx, t), room, T_OPT)).online;
      expect(run.siteOnline ?? 0).toBe(truth);
      expect((await total(at(ctx, t + 1))).online).toBe(truth);
      const sum = await command<string | null>(lib.target, "HGET", registryKeys(ctx.prefix).counted, "_sum");
      expect(Number(sum ?? 0)).toBe(truth);
    };
    await check(T0 + MIN); // a: 1, d: 1
    // every id times out; the runs take the rooms for idle; the last sample is 0
    for (let m = 2; m <= 8; m++) await check(T0 + m * MIN);
    expect(await due(ctx)).not.toContain("\u0003");
    expect(await job(at(ctx, T0 + 9 * MIN), config)).toMatchObject({ rooms: 0, calls: 1 });
  });
});
