/**
 * The index's cursors (src/counters/trim.ts, review 8): a period counter's index drops the fields
 * of keys whose rollups have all expired, and only those, so it stays bounded whatever the
 * counter's age. Real Redis; time is the writes' injected clock (Redis' own keys outlive the
 * recorded expiries here, which is why the checks read the index, not the keys).
 */
import { describe, expect, it } from "vitest";
import type { Ctx } from "../../src/context.ts";
import * as counters from "../../src/counters/index.ts";
import { TRIM_MARGIN } from "../../src/counters/trim.ts";
import { libraryTest } from "../helpers/library.ts";
import { command } from "../helpers/upstash-rest.ts";

const lib = libraryTest("counters-trim");
const { target } = lib;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.UTC(2026, 9, 28, 5);
const at = (ctx: Ctx, now: number): Ctx => ({ ...ctx, now });

async function indexOf(ctx: Ctx, name: string): Promise<Map<string, string>> {
  const all = await command<string[]>(target, "HGETALL", `${ctx.prefix}:counters:${name}:index`);
  const out = new Map<string, string>();
  for (let i = 0; i < all.length; i += 2) out.set(all[i]!, all[i + 1]!);
  return out;
}

/**
 * The rollup whose expiry must have passed before a `b:` field of an hour counter may go: an
 * hour's or quarter's day rollup (its month may live: the day rollup's field, kept, is what tells
 * reads of that month that it sums expired keys), a day rollup's month rollup.
 */
function parentOf(field: string): string[] {
  const hour = /^(b:.*):hour:(\d{8})\d{2}$/.exec(field);
  const quarter = /^(b:.*):hour:by-quarter:(\d{8})T\d{2}$/.exec(field);
  const day = /^(b:.*):hour:by-day:(\d{6})\d{2}$/.exec(field);
  const m = hour ?? quarter;
  if (m) return [`${m[1]}:hour:by-day:${m[2]}`];
  if (day) return [`${day[1]}:hour:by-month:${day[2]}`];
  return [];
}

describe("the index's cursors", () => {
  it("drops a field only once its key and every rollup above it have expired by the margin (hours, ttls and late writes mixed)", async () => {
    const ctx = lib.ctx(T0, "mixed");
    // every b: field's latest recorded expiry, and what the index listed after the last write
    const values = new Map<string, string>();
    let listed = new Set<string>();
    let dropped = 0;
    // a deterministic mix: ttls of 1 h, 5 h and 2 days, a late write every 7th hour
    for (let h = 0; h < 50 * 24; h++) {
      const now = T0 + h * HOUR + 60_000;
      const ttl = [3600, 5 * 3600, 2 * 86400][h % 3]!;
      const items: counters.IncrItem[] = [{ member: `m${h % 4}`, period: "hour", ttl }];
      if (h % 7 === 0 && h > 30) items.push({ member: "late", period: "hour", at: now - 30 * HOUR, ttl: 2 * 86400 });
      await counters.increment(at(ctx, now), "mix", items);
      const index = await indexOf(ctx, "mix");
      for (const field of listed) {
        if (index.has(field)) continue;
        dropped++;
        // gone: its own recorded expiry and its parent rollup's had passed by the margin
        for (const f of [field, ...parentOf(field)]) {
          const v = Number(index.get(f) ?? values.get(f));
          expect(v, `${f} (dropping ${field} at hour ${h})`).toBeGreaterThan(1e12);
          expect(v + TRIM_MARGIN, `${f} (dropping ${field} at hour ${h})`).toBeLessThan(now);
        }
      }
      listed = new Set([...index.keys()].filter((f) => f.startsWith("b:")));
      for (const f of listed) values.set(f, index.get(f)!);
    }
    expect(dropped).toBeGreaterThan(1000);
    // two days of hours (2-day ttls) plus the months' day rollups: bounded, not 50 days' ~1,450
    const left = [...(await indexOf(ctx, "mix")).keys()].filter((f) => f.startsWith("b:"));
    expect(left.length).toBeLessThan(160);
  });

  it("a counter without ttl keeps every field (nothing expires)", async () => {
    const ctx = lib.ctx(T0, "forever");
    for (let h = 0; h < 40 * 24; h += 5)
      await counters.increment(at(ctx, T0 + h * HOUR), "f", [{ member: "a", period: "hour" }]);
    const fields = [...(await indexOf(ctx, "f")).keys()].filter((f) => f.startsWith("b:"));
    const hours = (40 * 24) / 5;
    // every hour, its quarter, day and month rollup stay listed: they all live for ever
    expect(fields.filter((f) => /:hour:\d{10}$/.test(f))).toHaveLength(hours);
    const read = await counters.ranked(at(ctx, T0 + 40 * DAY), "f", "top", 1, {
      period: "hour",
      from: T0,
      to: T0 + 40 * DAY,
    });
    expect(read.items[0]).toMatchObject({ member: "a", score: hours });
  });

  it("day, week and month counters with ttl keep a bounded index; reads of what lives are unchanged", async () => {
    const ctx = lib.ctx(T0, "coarse");
    let most = 0;
    for (let d = 0; d < 200; d++) {
      const now = T0 + d * DAY;
      await counters.increment(at(ctx, now), "c", [
        { member: "a", period: "day", ttl: 2 * 86400 },
        { member: "a", period: "week", ttl: 8 * 86400 },
        { member: "a", period: "month", ttl: 32 * 86400 },
      ]);
      const fields = [...(await indexOf(ctx, "c")).keys()];
      most = Math.max(most, fields.filter((f) => f.startsWith("b:")).length);
      // a week's size record (n:) goes with its field (b:): none is left behind
      for (const f of fields.filter((f) => f.startsWith("n:"))) expect(fields, f).toContain(`b:${f.slice(2)}`);
    }
    // ≤ 2 months of days and their rollups, 3 weeks, 3 months (200 days written: 200 + 29 + 7 + 7 before)
    expect(most).toBeLessThanOrEqual(62 + 2 + 3 + 3);
    const now = T0 + 199 * DAY;
    const read = await counters.ranked(at(ctx, now), "c", "top", 1, { period: "day", from: now - DAY, to: now });
    expect(read.items[0]).toMatchObject({ member: "a", score: 2 });
  });

  it("a late write into a day whose hours were dropped moves the cursor back; a restart still drops s", async () => {
    const ctx = lib.ctx(T0, "back");
    for (let h = 0; h < 3 * 24; h++)
      await counters.increment(at(ctx, T0 + h * HOUR), "b", [{ member: "a", period: "hour", ttl: 3600 }]);
    let index = await indexOf(ctx, "b");
    const first = `b:${ctx.prefix}:counters:b:hour:2026102806`;
    expect(index.has(first)).toBe(false);
    // the day rollup of 2026-10-28 is kept (its month rollup lives): a write into that day with a
    // long ttl finds it expired by its record and restarts it, so the life is no longer exact
    expect(index.has(`b:${ctx.prefix}:counters:b:hour:by-day:20261028`)).toBe(true);
    expect(index.get("s")).toBe("1");
    const now = T0 + 3 * DAY;
    // the day rollup's recorded expiry has passed: the write asks Redis (whose key still lives on
    // its own clock), so make it gone there as it would be
    await command(target, "DEL", `${ctx.prefix}:counters:b:hour:by-day:20261028`);
    await counters.increment(at(ctx, now), "b", [{ member: "a", period: "hour", at: T0 + HOUR, ttl: 5 * 86400 }]);
    index = await indexOf(ctx, "b");
    expect(index.get("s")).toBeUndefined();
    expect(index.get("c:hd")).toBe(`${Math.floor((T0 + HOUR) / DAY)}|`);
    expect(index.has(first)).toBe(true);
  });

  it("DELETE purges only what may still live", async () => {
    const ctx = lib.ctx(T0, "purge");
    for (let h = 0; h < 20; h++)
      await counters.increment(at(ctx, T0 + h * HOUR), "p", [{ member: "a", period: "hour", ttl: 3600 }]);
    const listed = [...(await indexOf(ctx, "p")).entries()].filter(([f]) => f.startsWith("b:"));
    const now = T0 + 20 * HOUR;
    await counters.deleteCounter(at(ctx, now), "p");
    const purge = await command<string[]>(target, "HKEYS", `${ctx.prefix}:counters:_purge`);
    const alive = listed.filter(([, v]) => Number(v) + TRIM_MARGIN >= now).map(([f]) => f.slice(2));
    expect(purge.sort()).toEqual(alive.sort());
    expect(purge.length).toBeLessThan(listed.length);
  });
});
