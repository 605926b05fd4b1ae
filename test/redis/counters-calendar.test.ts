/**
 * Issue 15, calendar rollups: a sum over any range, read from raw buckets at
 * the edges and day/month rollups in the middle, equals the sum of the raw
 * buckets; also after late (backdated) writes and member deletes over ranges
 * that start and end mid-month and cross a year.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decompose } from "../../src/counters/calendar.ts";
import { deleteMember, increment, ranked, type IncrItem } from "../../src/counters/index.ts";
import { counterKeys } from "../../src/counters/keys.ts";
import { HOUR, periodEnd, periodStart, type Period } from "../../src/time.ts";
import { calendarTimes } from "../helpers/calendar.ts";
import { libraryTest } from "../helpers/library.ts";
import { command } from "../helpers/upstash-rest.ts";

const lib = libraryTest("counters-cal");
const { target, prefix } = lib;
// 400 days back from mid-January 2027 cross 2026 into December 2025
const NOW = Date.UTC(2027, 0, 15, 12, 30);
const ctx = lib.ctx(NOW);

const { time, range } = calendarTimes(NOW);
const write = fc.record({ member: fc.constantFrom("a", "b", "c", "d"), by: fc.integer({ min: 1, max: 9 }), at: time });
/** Hourly deletes over at most 60 days (test/redis/counters-delete.test.ts takes up to 400). */
const shortRange = fc
  .tuple(time, fc.integer({ min: 0, max: 1439 }))
  .map(([x, h]) => [periodStart("hour", x), Math.min(NOW, periodStart("hour", x) + h * HOUR)] as [number, number]);

type Write = { member: string; by: number; at: number };

function model(
  period: Period,
  writes: Write[],
  deletes: { member: string; from: number; to: number }[],
  from: number,
  to: number,
): Record<string, number> {
  const lo = periodStart(period, from);
  const hi = periodEnd(period, to);
  const out: Record<string, number> = {};
  for (const w of writes) {
    if (w.at < lo || w.at >= hi) continue;
    // a delete removes what the member held in its buckets before it (writes are all made first)
    if (
      deletes.some(
        (d) => d.member === w.member && w.at >= periodStart(period, d.from) && w.at < periodEnd(period, d.to),
      )
    )
      continue;
    out[w.member] = (out[w.member] ?? 0) + w.by;
  }
  return out;
}

/**
 * Every rollup of an hour counter's life (quarter, day, month) against the sum of the hours it
 * covers, member by member (a member at 0 counts as absent: a delete may drop it there).
 */
async function expectRollupsExact(name: string) {
  const index = counterKeys.index(prefix, name);
  const keys = (await command<string[]>(target, "HKEYS", index))
    .filter((f) => f.startsWith("b:"))
    .map((f) => f.slice(2));
  const scores = async (key: string) => {
    const flat = await command<string[]>(target, "ZRANGE", key, 0, -1, "WITHSCORES");
    const out = new Map<string, number>();
    for (let i = 0; i + 1 < flat.length; i += 2) out.set(flat[i] as string, Number(flat[i + 1]));
    return out;
  };
  const hours = new Map<string, Map<string, number>>();
  for (const k of keys.filter((k) => /:hour:\d{10}$/.test(k))) hours.set(k.slice(-10), await scores(k));
  for (const key of keys.filter((k) => k.includes(":hour:by-"))) {
    // by-quarter:20261122T06 holds hours 2026112206..11; by-day:20261122 and by-month:202611 their hours
    const label = key.slice(key.lastIndexOf(":") + 1);
    const covers = (hour: string) =>
      label.includes("T")
        ? hour.startsWith(label.slice(0, 8)) && Math.floor(Number(hour.slice(8)) / 6) * 6 === Number(label.slice(9))
        : hour.startsWith(label);
    const sums = new Map<string, number>();
    for (const [hour, members] of hours)
      if (covers(hour)) for (const [m, v] of members) sums.set(m, (sums.get(m) ?? 0) + v);
    const held = await scores(key);
    const nonZero = (m: Map<string, number>) => Object.fromEntries([...m].filter(([, v]) => v !== 0).sort());
    expect(nonZero(held), key).toEqual(nonZero(sums));
  }
}

async function read(name: string, period: Period, from: number, to: number): Promise<Record<string, number>> {
  const res = await ranked(ctx, name, "top", 100, { period, from, to });
  return Object.fromEntries(res.items.map((i) => [i.member, i.score]));
}

let run = 0;

describe("calendar rollups", () => {
  it("decompose covers the range exactly with at most 24 + 31 + 13 + 31 + 24 keys", () => {
    fc.assert(
      fc.property(range, fc.constantFrom<Period>("hour", "day"), ([x, y], period) => {
        const from = periodStart(period, x);
        const to = periodStart(period, y);
        const parts = decompose(period, from, to);
        let t = from;
        for (const p of parts) {
          expect(p.start).toBe(t);
          t = p.end;
        }
        expect(t).toBe(periodEnd(period, to));
        expect(parts.length).toBeLessThanOrEqual(23 + 30 + 14 + 30 + 23);
      }),
      { numRuns: 500 },
    );
  });

  it("a rollup never expires before a bucket it sums: the bucket's ttl plus its slack, none once a bucket has none", async () => {
    const at = Date.UTC(2027, 0, 14, 3);
    const ttl = 30 * 86400;
    await increment(ctx, "ttl", [{ member: "a", period: "hour", at, ttl }]);
    const hour = counterKeys.bucket(prefix, "ttl", "hour", at);
    const quarter = counterKeys.rollup(prefix, "ttl", "hour", "quarter", Date.UTC(2027, 0, 14));
    expect(quarter.endsWith(":hour:by-quarter:20270114T00")).toBe(true);
    const day = counterKeys.rollup(prefix, "ttl", "hour", "day", Date.UTC(2027, 0, 14));
    const month = counterKeys.rollup(prefix, "ttl", "hour", "month", Date.UTC(2027, 0, 1));
    const pttl = (k: string) => command<number>(target, "PTTL", k);
    expect(await pttl(hour)).toBeLessThanOrEqual(ttl * 1000);
    for (const k of [quarter, day, month]) expect(await pttl(k)).toBeGreaterThan(ttl * 1000 + 3_500_000);
    // another hour of the same quarter written without ttl never expires: nor may its rollups
    await increment(ctx, "ttl", [{ member: "a", period: "hour", at: at + HOUR }]);
    for (const k of [quarter, day, month]) expect(await pttl(k)).toBe(-1);
    expect(await pttl(hour)).toBeGreaterThan(0);
  });

  for (const period of ["hour", "day"] as const) {
    it(`${period}: rollup sums equal raw bucket sums over random ranges, with late writes and member deletes`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(write, { minLength: 1, maxLength: 40 }),
          fc.array(range, { minLength: 2, maxLength: 3 }),
          period === "hour" ? shortRange : range,
          fc.constantFrom("a", "b"),
          async (writes, ranges, del, victim) => {
            const name = `cal-${period}-${run++}`;
            // all writes are backdated ("late"): some in the current hour too
            const items: IncrItem[] = writes.map((w) => ({ member: w.member, by: w.by, period, at: w.at }));
            const half = Math.ceil(items.length / 2);
            await increment(ctx, name, items.slice(0, half));
            for (const [from, to] of ranges)
              expect(await read(name, period, from, to)).toEqual(model(period, writes.slice(0, half), [], from, to));
            // more late writes after the (cached) reads: the rollups and the cache follow
            if (half < items.length) await increment(ctx, name, items.slice(half));
            for (const [from, to] of ranges)
              expect(await read(name, period, from, to)).toEqual(model(period, writes, [], from, to));
            await deleteMember(ctx, name, victim, { period, from: del[0], to: del[1] });
            const deletes = [{ member: victim, from: del[0], to: del[1] }];
            for (const [from, to] of [...ranges, del])
              expect(await read(name, period, from, to)).toEqual(model(period, writes, deletes, from, to));
            // a delete keeps every rollup level (quarter, day, month) the sum of its parts
            if (period === "hour") await expectRollupsExact(name);
          },
        ),
        { numRuns: 20 },
      );
    });
  }
});
