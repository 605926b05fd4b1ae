/**
 * Issue 15, month rollups of histograms: a read answered from days at the
 * edges and month rollups in the middle equals the sum of the raw days over
 * random ranges (mid-month starts and ends, across a year, backdated writes);
 * a histogram from before rollups reads its days until its rollups are whole;
 * a range over the bucket cap is refused before its buckets are loaded.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { observe, put as putHistogram, read as readHistogram } from "../../src/histograms/index.ts";
import { histogramKeys, isoDay } from "../../src/histograms/keys.ts";
import { MAX_READ_BUCKETS } from "../../src/histograms/validate.ts";
import { DAY, dayStart } from "../../src/time.ts";
import { command } from "../helpers/upstash-rest.ts";
import { libraryTest } from "../helpers/library.ts";

const lib = libraryTest("hist-cal", { timeoutMs: 20_000 });
const { target, prefix } = lib;
// 399 days back from mid-January 2027 reach into December 2025
const NOW = Date.UTC(2027, 0, 15, 12, 30);
const ctx = lib.ctx(NOW);

const OLDEST = dayStart(NOW) - 398 * DAY;
const EDGES = Array.from({ length: 15 }, (_, i) => Date.UTC(2025, 11 + i, 1));
const time = fc.oneof(
  fc.integer({ min: OLDEST, max: NOW }),
  fc
    .tuple(fc.constantFrom(...EDGES), fc.integer({ min: -3 * DAY, max: 3 * DAY }))
    .map(([e, d]) => Math.min(NOW, Math.max(OLDEST, e + d))),
);
const obs = fc.record({ value: fc.integer({ min: -20, max: 60 }), at: time });
const range = fc
  .tuple(time, time)
  .map(([x, y]) => (x <= y ? [dayStart(x), dayStart(y)] : [dayStart(y), dayStart(x)]) as [number, number]);

type Obs = { value: number; at: number };

function model(all: Obs[], from: number, to: number) {
  const inRange = all.filter((o) => o.at >= from && o.at < to + DAY).map((o) => o.value);
  const counts = new Map<number, number>();
  for (const v of inRange) counts.set(Math.floor(v / 5), (counts.get(Math.floor(v / 5)) ?? 0) + 1);
  return {
    count: inRange.length,
    sum: inRange.reduce((a, b) => a + b, 0),
    min: inRange.length ? Math.min(...inRange) : null,
    max: inRange.length ? Math.max(...inRange) : null,
    buckets: [...counts].sort((a, b) => a[0] - b[0]).map(([i, count]) => ({ lower: i * 5, upper: (i + 1) * 5, count })),
  };
}

async function read(name: string, from: number, to: number) {
  const r = await readHistogram(ctx, name, { from: isoDay(from), to: isoDay(to) });
  return { count: r.count, sum: r.sum, min: r.min, max: r.max, buckets: r.buckets };
}

let run = 0;

describe("histogram month rollups", () => {
  it("answer every range as the raw days do, with backdated writes in between", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(obs, { minLength: 1, maxLength: 60 }),
        fc.array(obs, { maxLength: 10 }),
        fc.array(range, { minLength: 2, maxLength: 4 }),
        async (first, late, ranges) => {
          const name = `cal-${run++}`;
          await putHistogram(ctx, name, { bucketWidth: 5 });
          await observe(ctx, name, first);
          for (const [from, to] of ranges) expect(await read(name, from, to)).toEqual(model(first, from, to));
          if (late.length) await observe(ctx, name, late);
          for (const [from, to] of ranges)
            expect(await read(name, from, to)).toEqual(model([...first, ...late], from, to));
        },
      ),
      { numRuns: 25 },
    );
  });

  it("days stored before sums moved into the month rollups read the same, mixed with days stored after", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(obs, { minLength: 1, maxLength: 40 }),
        fc.array(obs, { maxLength: 10 }),
        fc.array(range, { minLength: 2, maxLength: 4 }),
        async (first, late, ranges) => {
          const name = `sums-${run++}`;
          await putHistogram(ctx, name, { bucketWidth: 5 });
          await observe(ctx, name, first);
          // the previous layout: the day's sum as member 'sum' of the day key and of its month rollup
          for (const day of new Set(first.map((o) => dayStart(o.at)))) {
            const month = histogramKeys.month(
              prefix,
              name,
              Date.UTC(new Date(day).getUTCFullYear(), new Date(day).getUTCMonth(), 1),
            );
            const member = `s:${isoDay(day).replaceAll("-", "")}`;
            const score = Number(await command(target, "ZSCORE", month, member));
            await command(target, "ZREM", month, member);
            await command(target, "ZINCRBY", month, score, "sum");
            await command(target, "ZADD", histogramKeys.day(prefix, name, day), score, "sum");
          }
          for (const [from, to] of ranges) expect(await read(name, from, to)).toEqual(model(first, from, to));
          if (late.length) await observe(ctx, name, late);
          for (const [from, to] of ranges)
            expect(await read(name, from, to)).toEqual(model([...first, ...late], from, to));
        },
      ),
      { numRuns: 20 },
    );
  });

  it("a histogram from before rollups reads its days until its month rollups hold whole months", async () => {
    const name = "legacy";
    await putHistogram(ctx, name, { bucketWidth: 5 });
    const days = [Date.UTC(2026, 5, 3), Date.UTC(2026, 6, 10), Date.UTC(2026, 6, 31), Date.UTC(2027, 0, 2)];
    const all = days.map((at, i) => ({ value: i * 10, at }));
    await observe(ctx, name, all);
    // as data written before this version: no rollups, no rollupsSince, each day's sum in its own key
    await command(target, "HDEL", histogramKeys.meta(prefix, name), "rollupsSince", "boundsSince");
    for (const m of [Date.UTC(2026, 5, 1), Date.UTC(2026, 6, 1), Date.UTC(2027, 0, 1)])
      await command(target, "DEL", histogramKeys.month(prefix, name, m));
    for (const { value, at } of all) await command(target, "ZADD", histogramKeys.day(prefix, name, at), value, "sum");
    const [from, to] = [Date.UTC(2026, 4, 20), Date.UTC(2027, 0, 14)];
    expect(await read(name, from, to)).toEqual(model(all, from, to));
    // a new observation marks rollups whole from next month on; this month's rollup holds only the new value
    const more = { value: 33, at: NOW };
    await observe(ctx, name, [more]);
    expect(await command(target, "HGET", histogramKeys.meta(prefix, name), "rollupsSince")).toBe(
      String(Date.UTC(2027, 1, 1)),
    );
    expect(await read(name, from, NOW)).toEqual(model([...all, more], from, NOW));
  });

  it(`attack: a 400-day range whose buckets exceed ${MAX_READ_BUCKETS} is refused with a 400 naming the limit`, async () => {
    const name = "wide";
    await putHistogram(ctx, name, { bucketWidth: 1 });
    // 4,000 distinct buckets in each of 6 days of different months: 24,000 over the range
    for (let d = 0; d < 6; d++) {
      const at = Date.UTC(2026, 1 + 2 * d, 10);
      for (let i = 0; i < 4000; i += 1000)
        await observe(
          ctx,
          name,
          Array.from({ length: 1000 }, (_, j) => ({ value: d * 4000 + i + j, at })),
        );
    }
    await expect(readHistogram(ctx, name, { from: "2025-12-20", to: "2027-01-15" })).rejects.toThrow(
      `more than ${MAX_READ_BUCKETS}`,
    );
    expect((await readHistogram(ctx, name, { from: "2026-02-01", to: "2026-02-28" })).count).toBe(4000);
    // the scratch union is gone
    expect(await command(target, "EXISTS", histogramKeys.scratch(prefix, name))).toBe(0);
  });

  it(`counts only buckets against the cap: exactly ${MAX_READ_BUCKETS} over whole months is answered, one more refused`, async () => {
    const name = "edge";
    await putHistogram(ctx, name, { bucketWidth: 1 });
    // 4,000 distinct buckets on one day of each of 5 months read as whole months: their rollups
    // also bring each day's sum (members s:<day>), which are not buckets
    let sum = 0;
    for (let d = 0; d < 5; d++) {
      const at = Date.UTC(2026, 1 + 2 * d, 10);
      for (let i = 0; i < 4000; i += 1000) {
        const values = Array.from({ length: 1000 }, (_, j) => d * 4000 + i + j);
        sum += values.reduce((a, b) => a + b, 0);
        await observe(
          ctx,
          name,
          values.map((value) => ({ value, at })),
        );
      }
    }
    const all = await readHistogram(ctx, name, { from: "2026-01-01", to: "2026-10-31" });
    expect(all.count).toBe(MAX_READ_BUCKETS);
    expect(all.buckets.length).toBe(MAX_READ_BUCKETS);
    expect(all.sum).toBe(sum);
    await observe(ctx, name, [{ value: -1, at: Date.UTC(2026, 2, 3) }]);
    await expect(readHistogram(ctx, name, { from: "2026-01-01", to: "2026-10-31" })).rejects.toThrow(
      `the range holds ${MAX_READ_BUCKETS + 1} distinct buckets`,
    );
  });
});
