/**
 * What a member delete may skip and what it must not (src/counters/delete-script.ts, issue 15's
 * command counts): after a removal a key needs no EXISTS when a key below it is known to still
 * hold a member and the rollup is exact (`s`, listed, no `z:` mark, expiry not near): that member
 * is in it too. A marked rollup gets its EXISTS, so one the delete empties leaves the index, and
 * the next write gives the key made again its ttl. The emptied keys of an exact chain leave the
 * index; those above a live hour stay listed; the partial month at 0 loses the member by one ZREM.
 */
import { describe, expect, it } from "vitest";
import { deleteMember, increment, type IncrItem } from "../../src/counters/index.ts";
import { counterKeys } from "../../src/counters/keys.ts";
import { createRedis } from "../../src/redis/client.ts";
import { DAY, HOUR } from "../../src/time.ts";
import { counterState, goneButListed, hoursJson } from "../helpers/counter-state.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const lib = libraryTest("counters-delindex", { timeoutMs: 30_000 });
const { target, prefix } = lib;
const NOW = Date.UTC(2026, 10, 20, 12, 30);
const ctx = lib.ctx(NOW);
const TAG = `delidx-${Math.random().toString(36).slice(2, 8)}`;
const counted = { ...ctx, redis: createRedis({ url: target.url, token: `${target.token}.${TAG}`, timeoutMs: 30_000 }) };
const { stateOf, olderZeroDelete } = counterState(lib);
/** 400 days back from NOW: 14 months, November partial. */
const RANGE = { period: "hour" as const, from: NOW - 399 * DAY, to: NOW };
const hourItems = (items: { member: string; by?: number; at: number; ttl?: number }[]): IncrItem[] =>
  items.map((i) => ({ ...i, period: "hour" as const }));
const rollup = (name: string, level: "quarter" | "day" | "month", at: number) =>
  counterKeys.rollup(prefix, name, "hour", level, level === "quarter" ? Math.floor(at / (6 * HOUR)) * 6 * HOUR : at);

async function costed(name: string, member: string) {
  await resetStats(target, TAG);
  const { removed } = await deleteMember(counted, name, member, RANGE);
  const stats = await statsOf(target, TAG);
  return { removed, byCommand: stats.byCommand, commands: stats.commands };
}

describe("a member delete's index after its removals", () => {
  it("a marked quarter, day and month it empties leave the index though an hour below them still holds a member; the next write gives them their ttl", async () => {
    const name = "marked";
    const D = Date.UTC(2026, 9, 30);
    // a at +3, -3 and +2 in hours 1, 2 and 4 of October 30; deleting hour 4 takes the quarter,
    // day and month to 0: each loses a and is marked (z:), emptied, and leaves the index, as a
    // release before the delete read the hours outside left them (this one keeps a at 0 there)
    await increment(
      ctx,
      name,
      hourItems([
        { member: "a", by: 3, at: D + HOUR },
        { member: "a", by: -3, at: D + 2 * HOUR },
        { member: "a", by: 2, at: D + 4 * HOUR },
      ]),
    );
    await olderZeroDelete(name, "a", D + 4 * HOUR);
    const q = rollup(name, "quarter", D);
    const day = rollup(name, "day", D);
    const month = rollup(name, "month", D);
    const marked = await stateOf(name);
    for (const k of [q, day, month]) {
      expect(`z:${k}` in marked.fields, k).toBe(true);
      expect(`b:${k}` in marked.fields, k).toBe(false);
    }
    // s in hour 1, beside a: the three rollups are made again holding s only (they lack a, which
    // hours 1 and 2 still hold at +3 and -3: the marks say so)
    await increment(ctx, name, hourItems([{ member: "s", at: D + HOUR }]));
    const before = await stateOf(name);
    for (const k of [q, day, month]) expect(before.rollups.get(k), k).toEqual(new Map([["s", 1]]));

    // hour 1 still holds a after losing s: its rollups are marked, so each gets its EXISTS, is
    // found empty and leaves the index
    const cost = await costed(name, "s");
    expect(cost.removed).toBe(1);
    const after = await stateOf(name);
    expect(goneButListed(after)).toEqual([]);
    for (const k of [q, day, month]) {
      expect(`b:${k}` in after.fields, k).toBe(false);
      expect(`z:${k}` in after.fields, k).toBe(true);
      expect(await command<number>(target, "EXISTS", k), k).toBe(0);
    }
    expect(hoursJson(after.hours)).toEqual(
      hoursJson(
        new Map([
          [D + HOUR, new Map([["a", 3]])],
          [D + 2 * HOUR, new Map([["a", -3]])],
        ]),
      ),
    );
    // an EXISTS each for hour 1 (it lives) and the three rollups (emptied: HDEL)
    expect(cost.byCommand.exists).toBe(4);
    expect(cost.byCommand.hdel).toBe(3);
    // the next write makes them again with its ttl (a record left behind would have said "none")
    await increment(ctx, name, hourItems([{ member: "b", at: D + 5 * HOUR, ttl: 30 * 86_400 }]));
    for (const k of [q, day, month]) expect(await command<number>(target, "PTTL", k), k).toBeGreaterThan(0);
  });

  it("an exact life: the chain it empties leaves the index, the one above a live hour stays without an EXISTS each", async () => {
    const name = "exact";
    // X: s alone in its hour, quarter, day and month (June, whole in the range); Y: s beside
    // "other" in an hour of November 10 (the month partial in the range, the day and quarter whole)
    const X = Date.UTC(2026, 5, 10, 3);
    const Y = Date.UTC(2026, 10, 10, 15);
    await increment(
      ctx,
      name,
      hourItems([
        { member: "s", at: X },
        { member: "s", at: Y },
        { member: "other", at: Y },
      ]),
    );
    const cost = await costed(name, "s");
    expect(cost.removed).toBe(2);
    // HMGET of the months' and days' fields; ZSCORE of the 2 listed months, of June 10 (the keys
    // that may hold it still pass one script's 600: its ZREM comes after) and of November 10
    // (under the partial month: its score is what November loses); ZREM of June 10 and of the 2
    // quarters as they are read (nothing below them can pass the limit), of the 2 hours, of
    // November 10, June, and November (at 0: no ZINCRBY); HMGET of the quarters' and hours' fields;
    // EXISTS of hour X, its quarter, day and month (all emptied: HDEL) and of hour Y (it holds
    // "other": so do its quarter, day and month, which need none); the index's mark
    expect(cost.byCommand).toEqual({ evalsha: 1, hmget: 2, zscore: 4, zrem: 8, exists: 5, hdel: 4, incr: 1, hset: 1 });
    const st = await stateOf(name);
    expect(goneButListed(st)).toEqual([]);
    for (const level of ["quarter", "day", "month"] as const) {
      const x = rollup(
        name,
        level,
        level === "month" ? Date.UTC(2026, 5, 1) : level === "day" ? Date.UTC(2026, 5, 10) : X,
      );
      const y = rollup(
        name,
        level,
        level === "month" ? Date.UTC(2026, 10, 1) : level === "day" ? Date.UTC(2026, 10, 10) : Y,
      );
      expect(`b:${x}` in st.fields, x).toBe(false);
      expect(await command<number>(target, "EXISTS", x), x).toBe(0);
      expect(st.rollups.get(y), y).toEqual(new Map([["other", 1]]));
    }
    expect(`b:${counterKeys.bucket(prefix, name, "hour", X)}` in st.fields).toBe(false);
    expect(hoursJson(st.hours)).toEqual(hoursJson(new Map([[Y, new Map([["other", 1]])]])));
  });
});
