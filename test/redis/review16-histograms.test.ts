/**
 * Review 16: histograms against the docs (docs/histograms.md, API.md "Histograms") through the
 * library on the local Upstash server (real redis-server): the bucket rule at the digits where
 * Lua's `%.15g` and JavaScript's `toPrecision(15)` round a tie differently (found and fixed), a differential of reads
 * across a year's end (month rollups, edge days and the month of a range ending today) against a
 * model computed here, and a batch refused part way (after its first day's increments) leaving the
 * keyspace exactly as it was.
 */
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../dev/prng.ts";
import { ValidationError } from "../../src/errors.ts";
import { bucketBound, bucketIndex, exactQuantile, quantile, type Bucket } from "../../src/histograms/buckets.ts";
import { observe, put, read } from "../../src/histograms/index.ts";
import { histogramKeys } from "../../src/histograms/keys.ts";
import { MAX_BUCKETS_PER_DAY } from "../../src/histograms/validate.ts";
import { DAY } from "../../src/time.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, keysUnder } from "../helpers/upstash-rest.ts";

const lib = libraryTest("r16hist", { timeoutMs: 30_000 });
const NOW = Date.UTC(2027, 0, 2, 12);
const ctx = lib.ctx(NOW);

/** Every key under the prefix with its members and scores (and TTL presence): a snapshot to compare. */
async function snapshot(): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const key of (await keysUnder(lib.target, lib.prefix)).sort()) {
    const type = await command<string>(lib.target, "TYPE", key);
    const ttl = await command<number>(lib.target, "TTL", key);
    const body =
      type === "zset"
        ? await command(lib.target, "ZRANGE", key, 0, -1, "WITHSCORES")
        : type === "hash"
          ? await command(lib.target, "HGETALL", key)
          : type;
    out[key] = { body, expires: ttl > 0 };
  }
  return out;
}

describe("review 16: the bucket rule where %.15g and toPrecision(15) round a tie apart", () => {
  // Found in review 16 (severity low: a value landed outside the bucket the read reported for it;
  // the counts, sum, min, max and percentiles stayed right), fixed: a width of 2^-k (k ≥ 5) makes
  // every odd bound in a band of values a decimal of exactly 16 significant digits ending in 5
  // (1/1024 from 1e5 to 1e6, 1/32 near 1e10, 2^-20 from 1e-5 to 1e-4). Rounded to 15 digits that is
  // a tie, which glibc's printf (Redis's Lua `string.format('%.15g')`, which placed every stored
  // value) rounds half to even and ECMAScript's `toPrecision` rounded away from zero: the read
  // reported bucket 102400001 of width 1/1024 as starting at 100000.000976563, above the
  // 100000.0009765625 Lua placed in it, and `bucketIndex` put that value one bucket lower.
  // `bucketBound` (buckets.ts) now rounds a tie as Lua does.
  it("a value in a tie band lies within the bucket the read reports, and bucketIndex agrees with Lua", async () => {
    const cases = [
      { width: 1 / 1024, value: 100000.0009765625 },
      { width: 1 / 32, value: 10000000000.03125 },
      { width: 2 ** -20, value: 13 * 2 ** -20 },
    ];
    let n = 0;
    for (const { width, value } of cases) {
      const name = `tie-${n++}`;
      await put(ctx, name, { bucketWidth: width });
      await observe(ctx, name, [{ value }]);
      const stored = await command<string[]>(
        lib.target,
        "ZRANGE",
        histogramKeys.day(lib.prefix, name, Date.UTC(2027, 0, 2)),
        0,
        -1,
      );
      const summary = await read(ctx, name);
      expect(summary.count).toBe(1);
      const [bucket] = summary.buckets;
      expect({ value, stored, lower: bucket?.lower, upper: bucket?.upper }).toEqual({
        value,
        stored: [String(bucketIndex(value, width))],
        lower: bucketBound(bucketIndex(value, width), width),
        upper: bucketBound(bucketIndex(value, width) + 1, width),
      });
      expect(bucket!.lower <= value && value < bucket!.upper).toBe(true);
    }
  });

  it("bucketBound agrees with Lua's %.15g on ties and near them, both signs, by the thousand", async () => {
    const random = mulberry32(16);
    const cases: [number, number][] = [];
    for (let k = 1; k <= 40; k++) {
      const width = 2 ** -k;
      // the band where a bound has 16 significant digits: index·width from 10^(15-k) up
      const low = Math.ceil(10 ** (15 - Math.min(k, 22)) / width);
      for (let j = 0; j < 20; j++) {
        const index = Math.min(low + Math.floor(random() * 1e6), 1e12) * (random() < 0.5 ? -1 : 1);
        cases.push([index, width]);
      }
    }
    for (let j = 0; j < 200; j++)
      cases.push([Math.floor(random() * 2e12) - 1e12, random() * 10 ** (random() * 30 - 15)]);
    for (let j = 0; j < 100; j++)
      cases.push([Math.floor(random() * 2e5) + 1e12 - 1e5, 1000 + Math.floor(random() * 1000)]);
    cases.push([102400001, 1 / 1024], [320000000001, 1 / 32], [13, 2 ** -20], [-13, 2 ** -20], [3, 0.1], [1e12, 1005]);
    const lua = await command<string[]>(
      lib.target,
      "EVAL",
      "local out = {} for i = 1, #ARGV, 2 do out[#out + 1] = string.format('%.17g', tonumber(string.format('%.15g', tonumber(ARGV[i]) * tonumber(ARGV[i + 1])))) end return out",
      0,
      ...cases.flatMap(([index, width]) => [String(index), String(width)]),
    );
    const ties = cases.filter(
      ([index, width]) => Number((index * width).toPrecision(15)) !== bucketBound(index, width),
    );
    expect(ties.length).toBeGreaterThan(40);
    expect(cases.map(([index, width]) => bucketBound(index, width))).toEqual(lua.map(Number));
  });

  it("control: away from the tie band, width 1/1024 places and reports as bucketIndex does", async () => {
    await put(ctx, "tie-control", { bucketWidth: 1 / 1024 });
    // 16 significant digits only from 1e5 (6 integer digits + 10 decimals): below, no tie
    const value = 99999.0009765625;
    await observe(ctx, "tie-control", [{ value }]);
    const [bucket] = (await read(ctx, "tie-control")).buckets;
    expect(bucket!.lower <= value && value < bucket!.upper).toBe(true);
    expect(bucket!.lower).toBe(bucketBound(bucketIndex(value, 1 / 1024), 1 / 1024));
  });
});

describe("review 16: reads across a year's end against a model", () => {
  const WIDTH = 0.25;
  const days = [
    Date.UTC(2026, 11, 1),
    Date.UTC(2026, 11, 30),
    Date.UTC(2026, 11, 31),
    Date.UTC(2027, 0, 1),
    Date.UTC(2027, 0, 2),
  ];
  /** Values by day: negative, zero, fractional (multiples of 1/8, so every sum is exact), and far from zero. */
  const byDay = new Map<number, number[]>();
  const random = mulberry32(1616);
  for (const day of days) {
    const values: number[] = [0, -0.125];
    for (let i = 0; i < 150; i++) {
      const r = random();
      values.push(
        r < 0.1
          ? Math.round((random() - 0.5) * 2e9) / 8
          : r < 0.2
            ? -Math.round(random() * 80) / 8
            : Math.round(random() * 4000) / 8,
      );
    }
    byDay.set(day, values);
  }

  function model(from: number, to: number) {
    const values = days.filter((d) => d >= from && d <= to).flatMap((d) => byDay.get(d)!);
    const counts = new Map<number, number>();
    for (const v of values) {
      const i = bucketIndex(v, WIDTH);
      counts.set(i, (counts.get(i) ?? 0) + 1);
    }
    const buckets: Bucket[] = [...counts]
      .sort((a, b) => a[0] - b[0])
      .map(([i, count]) => ({ lower: bucketBound(i, WIDTH), upper: bucketBound(i + 1, WIDTH), count }));
    const sum = values.reduce((a, b) => a + b, 0);
    const min = Math.min(...values);
    const max = Math.max(...values);
    return { values, buckets, sum, min, max };
  }

  it("every range (whole December as its rollup, January's days from its 1st, the edges, one day) answers the model", async () => {
    await put(ctx, "year", { bucketWidth: WIDTH, unit: "s" });
    for (const day of days) {
      const values = byDay.get(day)!;
      // two batches a day, the second with one value a bucket of its own
      await observe(
        ctx,
        "year",
        values.slice(0, 100).map((value, i) => ({ value, at: day + i * 60_000 })),
      );
      await observe(
        ctx,
        "year",
        values.slice(100).map((value) => ({ value, at: new Date(Math.min(day + DAY - 1, NOW)).toISOString() })),
      );
    }
    const ranges: [string, string][] = [
      ["2026-12-01", "2027-01-02"],
      ["2026-12-01", "2026-12-31"],
      ["2026-12-30", "2027-01-02"],
      ["2026-12-31", "2027-01-01"],
      ["2027-01-01", "2027-01-01"],
      ["2026-12-02", "2027-01-01"],
      ["2026-12-30", "2026-12-30"],
      ["2026-11-15", "2026-12-01"],
      ["2027-01-01", "2027-01-03"],
    ];
    for (const [from, to] of ranges) {
      const got = await read(ctx, "year", { from, to, top: 3 });
      const want = model(Date.parse(from), Date.parse(to));
      const count = want.values.length;
      const observed = { min: want.min, max: want.max };
      expect({ range: `${from}..${to}`, ...got }).toEqual({
        range: `${from}..${to}`,
        histogram: "year",
        unit: "s",
        bucketWidth: WIDTH,
        from,
        to,
        count,
        sum: want.sum,
        min: want.min,
        max: want.max,
        mean: want.sum / count,
        p50: quantile(want.buckets, 0.5, observed),
        p90: quantile(want.buckets, 0.9, observed),
        p99: quantile(want.buckets, 0.99, observed),
        buckets: want.buckets,
        top: [...want.buckets].sort((a, b) => b.count - a.count || a.lower - b.lower).slice(0, 3),
      });
      // docs: "the estimate is off by less than one bucketWidth" of the true nearest-rank value
      for (const q of [0.5, 0.9, 0.99] as const) {
        const estimate = got[`p${Math.round(q * 100)}` as "p50" | "p90" | "p99"]!;
        expect(Math.abs(estimate - exactQuantile(want.values, q)!)).toBeLessThan(WIDTH);
      }
    }
  });
});

describe("review 16: minutes before a year's end", () => {
  it("a value dated 4 minutes ahead, into next year, is in neither December's read nor its rollup's answer, and in January's", async () => {
    const late = lib.ctx(Date.UTC(2026, 11, 31, 23, 57, 30), "r16-eoy");
    await put(late, "eoy", { bucketWidth: 1 });
    await observe(late, "eoy", [{ value: 5, at: Date.UTC(2026, 11, 1) }, { value: 6 }]);
    await observe(late, "eoy", [{ value: 1000, at: Date.UTC(2027, 0, 1, 0, 1) }]);
    const december = await read(late, "eoy", { from: "2026-12-01", to: "2026-12-31" });
    expect([december.count, december.sum, december.max]).toEqual([2, 11, 6]);
    // the default range is today (December 31st), which holds 6 alone
    expect((await read(late, "eoy")).max).toBe(6);
    const both = await read(late, "eoy", { from: "2026-12-31", to: "2027-01-01" });
    expect([both.count, both.sum, both.max]).toEqual([2, 1006, 1000]);
    // a minute later, once it is next year: December's rollup stands for its days again
    const next = { ...late, now: Date.UTC(2027, 0, 1, 0, 0, 30) };
    const again = await read(next, "eoy", { from: "2026-12-01", to: "2026-12-31" });
    expect([again.count, again.sum, again.max]).toEqual([2, 11, 6]);
    expect((await read(next, "eoy")).buckets).toEqual([{ lower: 1000, upper: 1001, count: 1 }]);
  });
});

describe("review 16: a batch refused after its first day's increments writes nothing", () => {
  it("a new day's buckets and an existing day's are taken back; the keyspace is byte for byte as before", async () => {
    await put(ctx, "cap", { bucketWidth: 1 });
    const full = Date.UTC(2027, 0, 1, 6);
    // the day before: MAX_BUCKETS_PER_DAY - 1 distinct buckets
    for (let start = 0; start < MAX_BUCKETS_PER_DAY - 1; start += 1000) {
      const values = Array.from({ length: Math.min(1000, MAX_BUCKETS_PER_DAY - 1 - start) }, (_, i) => start + i);
      await observe(
        ctx,
        "cap",
        values.map((value) => ({ value, at: full })),
      );
    }
    await observe(ctx, "cap", [{ value: 3.5, at: NOW - 1000 }]);
    const before = await snapshot();
    // today first (an existing bucket and new ones), then the full day: two new buckets pass its cap
    const batch = [
      { value: 3.25, at: NOW },
      { value: -7, at: NOW },
      { value: 1e6, at: NOW },
      { value: 1, at: full },
      { value: 9_000_001, at: full },
      { value: 9_000_002, at: full },
    ];
    await expect(observe(ctx, "cap", batch)).rejects.toBeInstanceOf(ValidationError);
    expect(await snapshot()).toEqual(before);
    // and one bucket fewer is accepted whole
    await expect(observe(ctx, "cap", batch.slice(0, 5))).resolves.toMatchObject({ accepted: 5 });
    const today = await read(ctx, "cap");
    expect(today.count).toBe(4);
    expect(today.buckets.map((b) => [b.lower, b.count])).toEqual([
      [-7, 1],
      [3, 2],
      [1e6, 1],
    ]);
  });
});
