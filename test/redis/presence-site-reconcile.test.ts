/**
 * `_online` (room → last count, `_sum`: src/presence/site-lua.ts) against the trim schedule: a room
 * counted there that is no longer due (the previous release's delete took it out of the registries
 * and left its count) leaves the sum. An uncapped run sees it (its sum is above what it counted), a
 * capped one checks at the hour. Real redis-server behind the local Upstash server; the previous
 * release's delete is replayed as it was (ZREM from the registries, UNLINK of the room's keys).
 */
import { describe, expect, it } from "vitest";
import type { Ctx } from "../../src/context.ts";
import * as presence from "../../src/presence/index.ts";
import { allRoomKeys, legacyRegistryKeys, registryKeys } from "../../src/presence/keys.ts";
import { SITE_ENTRY } from "../../src/presence/scripts.ts";
import type { RedisClient } from "../../src/redis/client.ts";
import { libraryTest } from "../helpers/library.ts";
import { command } from "../helpers/upstash-rest.ts";

const { createTrimJob, heartbeat, stats, total } = presence;
const lib = libraryTest("presence-site-reconcile");
const MIN = 60_000;
/** An hour's timeout: nobody goes offline during the runs below. */
const long = { ...lib.config, presenceTimeoutSeconds: 3600 };
/** 12:56:30 UTC: the run at T0 + 4 min is the hour's (13:00). */
const T0 = Date.UTC(2026, 10, 22, 12, 56, 30);

const at = <C extends Ctx>(ctx: C, now: number): C => ({ ...ctx, now });
const ids = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}-${i}`);

async function trueOnline(ctx: Ctx, rooms: readonly string[]): Promise<number> {
  let sum = 0;
  for (const room of rooms) sum += (await stats(ctx, room, { timeoutSeconds: 3600 })).online;
  return sum;
}

/** The previous release's room delete: the registries and the room's keys, not `_online`. */
async function oldDelete(ctx: Ctx, room: string) {
  const registry = registryKeys(ctx.prefix);
  for (const key of [registry.rooms, registry.due, ...legacyRegistryKeys(ctx.prefix)])
    await command(lib.target, "ZREM", key, room);
  await command(lib.target, "UNLINK", ...allRoomKeys(ctx.prefix, room, ctx.now));
}

/** `real` with `before(n)` awaited before its n-th script request (1-based). */
function hooked(real: RedisClient, before: (n: number) => Promise<void>): RedisClient {
  let n = 0;
  return new Proxy(real, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if ((key !== "evalsha" && key !== "eval") || typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        await before(++n);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

describe("`_online` against `_due`", () => {
  it("capped runs: a room the previous release deleted stays in the sum until the hour's run, which drops it", async () => {
    const ctx = lib.ctx(T0, "site-rec-capped");
    const rooms = ["a", "b", "c", "d"];
    const sizes = [3, 1, 4, 2];
    for (const [i, room] of rooms.entries()) await heartbeat(ctx, room, ids(sizes[i]!, room));
    const job = createTrimJob({ maxRooms: 2, chunkRooms: 2 });
    for (let m = 1; m <= 2; m++) await job(at(ctx, T0 + m * MIN), long);
    expect((await total(at(ctx, T0 + 2 * MIN + 1000))).online).toBe(10);
    await oldDelete(at(ctx, T0 + 2 * MIN + 5000), "d");
    // 12:59: capped, not the hour: a capped sum holds rooms the run did not visit, no check
    expect(await job(at(ctx, T0 + 3 * MIN), long)).toMatchObject({ capped: true, stale: 0 });
    expect((await total(at(ctx, T0 + 3 * MIN + 1000))).online).toBe(10);
    // 13:00: the hour's run checks the hash against `_due`
    expect(await job(at(ctx, T0 + 4 * MIN), long)).toMatchObject({ capped: true, stale: 1 });
    const truth = await trueOnline(at(ctx, T0 + 4 * MIN), ["a", "b", "c"]);
    expect(truth).toBe(8);
    expect((await total(at(ctx, T0 + 4 * MIN + 1000))).online).toBe(truth);
    expect(await command(lib.target, "HGETALL", registryKeys(ctx.prefix).counted)).toEqual(
      expect.not.arrayContaining(["d", "_scan"]),
    );
  });

  it("a room of the last chunk deleted by the previous release during the run leaves the sum once, with another not due", async () => {
    const ctx = lib.ctx(T0, "site-rec-mine");
    const rooms = ["a", "b", "c", "z"];
    const sizes = [1, 2, 4, 8];
    for (const [i, room] of rooms.entries()) await heartbeat(ctx, room, ids(sizes[i]!, room));
    const job = createTrimJob({ chunkRooms: 1 });
    await job(at(ctx, T0 + MIN), long);
    expect((await total(at(ctx, T0 + MIN + 1000))).online).toBe(15);
    // z goes before the run; the run lists a, b, c, and the last chunk's room goes before its script
    await oldDelete(at(ctx, T0 + MIN + 5000), "z");
    // the rooms in `_due`, without the site entry (SITE_ENTRY, byte 3 at score 0: `_online` holds a count)
    const scheduled = await command<string[]>(lib.target, "ZRANGE", registryKeys(ctx.prefix).due, 0, -1);
    expect(scheduled[0]).toBe(SITE_ENTRY);
    const due = scheduled.slice(1);
    expect(due).toHaveLength(3);
    const last = due.at(-1)!;
    const redis = hooked(lib.redis, async (n) => {
      if (n === 4) await oldDelete(at(ctx, T0 + 2 * MIN), last);
    });
    const run = await job({ ...at(ctx, T0 + 2 * MIN), redis }, long);
    const left = rooms.filter((room) => room !== "z" && room !== last);
    const truth = await trueOnline(at(ctx, T0 + 2 * MIN), left);
    // z found by the check; the deleted chunk room counted 0 at its visit, taken out once
    expect(run).toMatchObject({ rooms: 3, capped: false, stale: 1, siteOnline: truth });
    expect((await total(at(ctx, T0 + 2 * MIN + 1000))).online).toBe(truth);
    expect(Number(await command(lib.target, "HGET", registryKeys(ctx.prefix).counted, "_sum"))).toBe(truth);
    // the day's highest: what the runs counted at once, not the sum with z's count in it
    expect((await total(at(ctx, T0 + 2 * MIN + 1000))).peakToday).toBe(15);
  });
});
