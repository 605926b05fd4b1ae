/**
 * Every key of a presence room expires or is deleted, also with leave marks of ids the room never
 * mapped (presence.leave records them; presence.dropMarks drops them a timeout and 2 days later).
 * Found 2026-11-27: a room whose last id was forgotten while such a mark was still in `ids` was
 * dropped with its `seq` counter kept (the mark made `ids` non-empty), and dropping the mark later
 * left `seq` with no TTL and nothing to delete it, for good.
 */
import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config.ts";
import type { Ctx } from "../../src/context.ts";
import * as presence from "../../src/presence/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { command } from "../helpers/upstash-rest.ts";

const { createTrimJob, heartbeat, leave, stats } = presence;
const lib = libraryTest("presence-marks-keys");
const target = lib.target;
const DAY = 86_400_000;
const MINUTE = 60_000;
const T0 = Date.UTC(2026, 10, 22, 12, 0);
/** The shortest horizon, so a room's last id is forgotten before a mark left after it is dropped. */
const config = readConfig({ PRESENCE_ID_HORIZON_DAYS: "2" });

/** The room's keys that have no TTL (PTTL -1), as left in Redis. */
async function lasting(ctx: Ctx, room: string): Promise<string[]> {
  const keys = await command<string[]>(target, "KEYS", `${ctx.prefix}:presence:${room}:*`);
  const out: string[] = [];
  for (const key of keys) if ((await command<number>(target, "PTTL", key)) === -1) out.push(key);
  return out.map((key) => key.slice(`${ctx.prefix}:presence:${room}:`.length)).sort();
}

/** Runs the trim job once a minute-ish from `from` to `to` (every `step`), as the cron would. */
async function runs(ctx: Ctx, from: number, to: number, step: number) {
  const job = createTrimJob();
  for (let now = from; now <= to; now += step) await job({ ...ctx, now }, config);
}

describe("presence: no key of a room outlives it", () => {
  it("a room dropped while an unmapped id's leave mark is in `ids` loses its `seq` when the mark goes", async () => {
    const ctx = lib.ctx(T0, "pmk-seq");
    await heartbeat(ctx, "r", ["a"]);
    // an id whose first heartbeat never comes (or is still queued): a mark and a `_due` entry
    await leave({ ...ctx, now: T0 + 60 * MINUTE }, "r", "ghost");
    // the room goes idle, then its one id is forgotten past the 2-day horizon: the room is dropped,
    // the mark still in `ids` (it is kept a timeout and 2 days past the leave)
    await runs(ctx, T0 + 10 * MINUTE, T0 + 10 * MINUTE, MINUTE);
    await runs(ctx, T0 + 2 * DAY + MINUTE, T0 + 2 * DAY + MINUTE, MINUTE);
    expect(await command<number>(target, "ZCARD", `${ctx.prefix}:presence:r:seen`)).toBe(0);
    expect(await command<number>(target, "ZSCORE", `${ctx.prefix}:presence:_due`, "r")).toBeNull();
    // the mark comes due and goes: nothing of the room may be left without an expiry
    await runs(ctx, T0 + 2 * DAY + 70 * MINUTE, T0 + 2 * DAY + 70 * MINUTE, MINUTE);
    expect(await command<number>(target, "EXISTS", `${ctx.prefix}:presence:r:ids`)).toBe(0);
    expect(await lasting(ctx, "r")).toEqual([]);
    expect(await command<number>(target, "ZCARD", `${ctx.prefix}:presence:_due`)).toBe(0);
    // the room starts over as a new one: its first id is new and gets compact id 1
    const back = { ...ctx, now: T0 + 3 * DAY };
    expect(await heartbeat(back, "r", ["b"])).toMatchObject({ online: 1, new: 1 });
    expect(await command<string>(target, "HGET", `${ctx.prefix}:presence:r:ids`, "b")).toBe("1");
  });

  it("the mark dropped while the room still maps ids keeps `seq` (no compact id is handed out twice)", async () => {
    const ctx = lib.ctx(T0, "pmk-keep");
    await heartbeat(ctx, "r", ["a"]);
    await leave({ ...ctx, now: T0 + MINUTE }, "r", "ghost");
    // a is seen again a day later: the room still maps it when the mark goes
    await heartbeat({ ...ctx, now: T0 + DAY }, "r", ["a"]);
    await runs(ctx, T0 + 2 * DAY + 10 * MINUTE, T0 + 2 * DAY + 10 * MINUTE, MINUTE);
    expect(await command<string | null>(target, "HGET", `${ctx.prefix}:presence:r:ids`, "\u0002ghost")).toBeNull();
    expect(await command<string>(target, "GET", `${ctx.prefix}:presence:r:seq`)).toBe("1");
    expect(await heartbeat({ ...ctx, now: T0 + 2 * DAY + 20 * MINUTE }, "r", ["c"])).toMatchObject({ new: 1 });
    expect(await command<string>(target, "HGET", `${ctx.prefix}:presence:r:ids`, "c")).toBe("2");
    // a forgotten past the horizon, then c: the room is dropped with every key
    await runs(ctx, T0 + 5 * DAY, T0 + 5 * DAY, MINUTE);
    expect(await lasting(ctx, "r")).toEqual([]);
  });

  it("a leave in a room that maps no id leaves only keys with an expiry, also once another id is mapped there", async () => {
    const ctx = lib.ctx(T0, "pmk-made");
    await leave(ctx, "r", "ghost");
    await leave(ctx, "s", "ghost");
    // r: nothing else ever; the hash made by the leave expires (its mark is dropped on time too)
    expect(await lasting(ctx, "r")).toEqual([]);
    await runs(ctx, T0 + 2 * DAY + 10 * MINUTE, T0 + 2 * DAY + 10 * MINUTE, MINUTE);
    expect(await command<string | null>(target, "HGET", `${ctx.prefix}:presence:r:ids`, "\u0002ghost")).toBeNull();
    expect(await lasting(ctx, "r")).toEqual([]);
    // s: another id's heartbeat maps it for good; the ghost's mark goes on time, then the id past the horizon
    await heartbeat({ ...ctx, now: T0 + MINUTE }, "s", ["a"]);
    expect(await lasting(ctx, "s")).toEqual(["ids", "seen", "seq"]);
    await runs(ctx, T0 + 10 * MINUTE, T0 + 10 * MINUTE, MINUTE);
    await heartbeat({ ...ctx, now: T0 + DAY }, "s", ["a"]);
    await runs(ctx, T0 + 2 * DAY + 10 * MINUTE, T0 + 2 * DAY + 10 * MINUTE, MINUTE);
    expect((await command<string[]>(target, "HKEYS", `${ctx.prefix}:presence:s:ids`)).sort()).toEqual(["\u00011", "a"]);
    await runs(ctx, T0 + 3 * DAY + 10 * MINUTE, T0 + 3 * DAY + 10 * MINUTE, MINUTE);
    expect(await lasting(ctx, "s")).toEqual([]);
    expect(await command<number>(target, "ZCARD", `${ctx.prefix}:presence:_due`)).toBe(0);
  });

  it("a room dropped with a mark whose id heartbeats before the mark comes due keeps that id's mapping", async () => {
    const ctx = lib.ctx(T0, "pmk-back");
    await heartbeat(ctx, "r", ["a"]);
    await leave({ ...ctx, now: T0 + 60 * MINUTE }, "r", "ghost");
    await runs(ctx, T0 + 2 * DAY + MINUTE, T0 + 2 * DAY + MINUTE, MINUTE);
    // the ghost comes (a heartbeat after its leave): mapped, with the next compact id
    const back = { ...ctx, now: T0 + 2 * DAY + 30 * MINUTE };
    expect(await heartbeat(back, "r", ["ghost"])).toMatchObject({ online: 1, new: 1 });
    expect(await command<string>(target, "HGET", `${ctx.prefix}:presence:r:ids`, "ghost")).toBe("2");
    await runs(ctx, T0 + 2 * DAY + 70 * MINUTE, T0 + 2 * DAY + 70 * MINUTE, MINUTE);
    expect(await command<string>(target, "GET", `${ctx.prefix}:presence:r:seq`)).toBe("2");
    expect((await stats({ ...back, now: back.now + MINUTE }, "r")).online).toBe(1);
  });
});
