/**
 * Leaves in a room that maps no id yet (its first heartbeat still queued, or never coming): the
 * mark is kept in an `ids` hash made by the leave, which expires when the mark would be dropped; a
 * heartbeat that maps an id into it takes the expiry off (mappings are kept until the horizon).
 */
import { describe, expect, it } from "vitest";
import type { Ctx } from "../../src/context.ts";
import * as presence from "../../src/presence/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { command } from "../helpers/upstash-rest.ts";

const { heartbeat, leave, members, stats } = presence;
const lib = libraryTest("presence-leave-first");
const target = lib.target;
const SECOND = 1000;
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 22, 12, 0);
const key = (ctx: Ctx, part: string) => `${ctx.prefix}:presence:r:${part}`;
const pttl = (ctx: Ctx, part: string) => command<number>(target, "PTTL", key(ctx, part));

describe("presence: a leave in a room that maps no id", () => {
  it("keeps the id offline when its first heartbeat, sent before the leave, is applied after it", async () => {
    const ctx = lib.ctx(T0, "plf-first");
    await leave({ ...ctx, now: T0 + SECOND }, "r", "u1");
    // a timeout and 2 days: when the trim job would drop the mark (a real-clock TTL, relative)
    const ttl = await pttl(ctx, "ids");
    expect(ttl).toBeGreaterThan(2 * DAY);
    expect(ttl).toBeLessThanOrEqual(2 * DAY + 300 * SECOND);
    expect(await heartbeat(ctx, "r", ["u1"])).toEqual({ online: 1, new: 1, replayed: false });
    const after = { ...ctx, now: T0 + 2 * SECOND };
    expect((await stats(after, "r")).online).toBe(0);
    expect((await members(after, "r")).members).toEqual([]);
    expect(await pttl(ctx, "ids")).toBe(-1);
    // the hash holds the mapping both ways and the mark, nothing else
    expect((await command<string[]>(target, "HKEYS", key(ctx, "ids"))).sort()).toEqual(["\u00011", "\u0002u1", "u1"]);
  });

  it("a heartbeat of another id maps it for good; the first id's own heartbeat later still reads the mark", async () => {
    const ctx = lib.ctx(T0, "plf-other");
    await leave({ ...ctx, now: T0 + SECOND }, "r", "u1");
    expect(await heartbeat({ ...ctx, now: T0 + 2 * SECOND }, "r", ["u2"])).toMatchObject({ online: 1, new: 1 });
    expect(await pttl(ctx, "ids")).toBe(-1);
    expect(await heartbeat(ctx, "r", ["u1"])).toMatchObject({ new: 1 });
    const after = { ...ctx, now: T0 + 3 * SECOND };
    expect((await members(after, "r")).members.map((m) => m.id)).toEqual(["u2"]);
  });

  it("a later leave of another unmapped id keeps the hash until its own mark may be dropped", async () => {
    const ctx = lib.ctx(T0, "plf-later");
    await leave(ctx, "r", "u1");
    // 10 s later the TTL is reset to a whole timeout and 2 days (the TTL is relative: Redis's clock)
    await command(target, "PEXPIRE", key(ctx, "ids"), String(DAY));
    await leave({ ...ctx, now: T0 + 10 * SECOND }, "r", "u2");
    expect(await pttl(ctx, "ids")).toBeGreaterThan(2 * DAY);
    // a leave of an older time (clock skew between Workers) writes a new mark all the same: its
    // keep runs from now on Redis's clock (PEXPIRE GT; review 12), whatever the Workers' clocks say
    await command(target, "PEXPIRE", key(ctx, "ids"), String(DAY));
    await leave({ ...ctx, now: T0 + 5 * SECOND }, "r", "u3");
    expect(await pttl(ctx, "ids")).toBeGreaterThan(2 * DAY);
    // ... and never shortens it
    await command(target, "PEXPIRE", key(ctx, "ids"), String(3 * DAY));
    await leave({ ...ctx, now: T0 + 6 * SECOND }, "r", "u4");
    expect(await pttl(ctx, "ids")).toBeGreaterThan(2 * DAY + 10 * 60 * SECOND);
    // their heartbeats, sent before all three leaves, applied after them: each reads its own mark
    for (const id of ["u1", "u2", "u3", "u4"]) await heartbeat({ ...ctx, now: T0 - SECOND }, "r", [id]);
    expect((await stats({ ...ctx, now: T0 + 11 * SECOND }, "r")).online).toBe(0);
    expect(await pttl(ctx, "ids")).toBe(-1);
  });
});
