/**
 * Adversarial review 4: histograms against a model. A seeded random run (dev/prng.ts mulberry32)
 * of observations (negatives, 0, fractions, large values; late writes, several days in one batch,
 * batches up to 1,000), settings changes (retention longer and shorter, width when allowed),
 * deletes and re-creation, and a virtual clock that moves forward, interleaved with reads over
 * many ranges (1 day, partial months at both edges, whole months, ending today and in the past,
 * up to 400 days), each compared with a plain model of the raw observations.
 *
 * The virtual clock runs ahead of the real one, so Redis would not expire keys the model has
 * dropped: `VirtualExpiry` keeps each key's deadline on the virtual clock and deletes the keys whose
 * deadline has passed (what Redis does at that time), so no behaviour is invented that a real
 * clock would not show.
 */
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../dev/prng.ts";
import type { Ctx } from "../../src/context.ts";
import { ConflictError, ValidationError } from "../../src/errors.ts";
import { observe, put, read, remove } from "../../src/histograms/index.ts";
import { bucketBound, bucketIndex, exactQuantile } from "../../src/histograms/buckets.ts";
import { isoDay } from "../../src/histograms/keys.ts";
import { DAY, dayStart } from "../../src/time.ts";
import { histogramLoaders } from "../helpers/histograms.ts";
import { libraryTest } from "../helpers/library.ts";
import { VirtualExpiry } from "../helpers/virtual-expiry.ts";
import { createRedis } from "../../src/redis/client.ts";
import { command, keysUnder, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const lib = libraryTest("review4-hist", { timeoutMs: 20_000 });
const { target } = lib;

type Obs = { value: number; day: number };

/** The model: the observations whose day is still kept at `now` under `retention`. */
class Model {
  obs: Obs[] = [];
  exists = false;
  width = 1;
  retention = 400;

  keep(now: number): void {
    this.obs = this.obs.filter((o) => o.day + (this.retention + 1) * DAY > now);
  }

  summary(from: number, to: number) {
    const values = this.obs.filter((o) => o.day >= from && o.day <= to).map((o) => o.value);
    const counts = new Map<number, number>();
    for (const v of values) {
      const i = bucketIndex(v, this.width);
      counts.set(i, (counts.get(i) ?? 0) + 1);
    }
    return {
      count: values.length,
      // values are multiples of 1/4 below 2^40: every partial sum is exact in any order
      sum: values.reduce((a, b) => a + b, 0),
      min: values.length ? Math.min(...values) : null,
      max: values.length ? Math.max(...values) : null,
      buckets: [...counts]
        .sort((a, b) => a[0] - b[0])
        .map(([i, count]) => ({ lower: bucketBound(i, this.width), upper: bucketBound(i + 1, this.width), count })),
      values,
    };
  }
}

async function settle<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  try {
    return { ok: true, value: await p };
  } catch (error) {
    return { ok: false, error };
  }
}

/** Compares a read with the model; returns a description of the first difference, or null. */
const seen = { reads: 0, nonEmpty: 0, widthRefused: 0, widthChanged: 0, longer: 0, shorter: 0, big: 0 };

async function check(ctx: Ctx, name: string, model: Model, from: number, to: number, step: string) {
  const want = model.summary(from, to);
  seen.reads++;
  if (want.count > 0) seen.nonEmpty++;
  const got = await read(ctx, name, { from: isoDay(from), to: isoDay(to) });
  const where = `${step}: ${isoDay(from)}..${isoDay(to)} at ${new Date(ctx.now).toISOString()}`;
  // multiples of 1/4 below 2^40 sum exactly in any order; bucket bounds of width 0.1 do not
  const exact = want.values.every((v) => Number.isInteger(v * 4));
  const slack = want.values.reduce((a, v) => a + Math.abs(v), 0) * 1e-15;
  if (!exact) expect(Math.abs(got.sum - want.sum), where).toBeLessThanOrEqual(slack);
  expect({ count: got.count, sum: exact ? got.sum : want.sum, min: got.min, max: got.max }, where).toEqual({
    count: want.count,
    sum: want.sum,
    min: want.min,
    max: want.max,
  });
  expect(got.buckets, where).toEqual(want.buckets);
  // top: the 5 fullest, fuller first, ties to the lower bucket
  expect(got.top, where).toEqual([...want.buckets].sort((a, b) => b.count - a.count || a.lower - b.lower).slice(0, 5));
  if (want.count > 0) {
    expect(got.mean, where).toBeCloseTo(want.sum / want.count, 6);
    for (const [q, p] of [
      [0.5, got.p50],
      [0.9, got.p90],
      [0.99, got.p99],
    ] as const) {
      const exact = exactQuantile(want.values, q) as number;
      // documented: off by less than one bucketWidth (a hair of float slack at huge magnitudes)
      expect(Math.abs((p as number) - exact), `${where} p${q * 100}`).toBeLessThan(
        model.width * (1 + 1e-9) + Math.abs(exact) * 1e-12,
      );
    }
  } else {
    expect([got.mean, got.p50, got.p90, got.p99], where).toEqual([null, null, null, null]);
  }
}

const WIDTHS = [1, 0.1, 0.5, 7, 1000];
const RETENTIONS = [2, 10, 35, 90, 200, 400];

function randomRun(seed: number, steps: number) {
  return async () => {
    const rnd = mulberry32(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
    const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
    const base = lib.ctx(0, `r4h-${seed}`);
    const name = "m";
    const model = new Model();
    // starts well ahead of the real clock (expiry emulation needs virtual now >= real now)
    let now = Date.UTC(2027, 2, 3, 10, 0) + int(0, 30) * DAY;
    const ctx = () => ({ ...base, now });
    const clock = new VirtualExpiry(target, base.prefix);

    const value = (): number => {
      const r = rnd();
      if (r < 0.08) return 0;
      if (r < 0.16) return bucketBound(int(-50, 50), model.width); // exactly on a bucket bound
      // large, and within 1e12 buckets of zero at any width used
      if (r < 0.2) return pick([1, -1]) * 2 ** Math.min(38, Math.floor(Math.log2(model.width * 1e11)));
      if (r < 0.6) return int(-200, 200) / 4;
      return int(-4000, 40_000) / 4;
    };
    const at = (): number => {
      const today = dayStart(now);
      const oldest = today - model.retention * DAY; // the oldest day still kept
      const r = rnd();
      let t: number;
      if (r < 0.3) t = now - int(0, 3_600_000);
      else if (r < 0.5)
        t = today - int(0, Math.min(model.retention, 40)) * DAY; // 00:00:00.000 exactly
      else if (r < 0.6)
        t = today - int(0, Math.min(model.retention, 40)) * DAY - 1; // 23:59:59.999
      else t = oldest + int(0, model.retention) * DAY + int(0, DAY - 1);
      return Math.max(oldest, Math.min(t, now + 5 * 60_000));
    };

    const doPut = async (width: number, retention: number, step: string) => {
      const hasData = model.obs.length > 0;
      const r = await settle(put(ctx(), name, { bucketWidth: width, retentionDays: retention }));
      await clock.settle(now);
      if (model.exists && hasData && width !== model.width) {
        expect(
          r.ok,
          `${step} ${JSON.stringify([now, model.retention, [...new Set(model.obs.map((o) => isoDay(o.day)))]])}`,
        ).toBe(false);
        if (!r.ok) expect(r.error, step).toBeInstanceOf(ConflictError);
        seen.widthRefused++;
        return;
      }
      expect(r.ok ? "ok" : String(r.error), step).toBe("ok");
      if (model.exists && width !== model.width) seen.widthChanged++;
      if (model.exists && hasData && retention > model.retention) seen.longer++;
      if (model.exists && hasData && retention < model.retention) seen.shorter++;
      model.exists = true;
      model.width = width;
      model.retention = retention;
      model.keep(now);
    };

    await doPut(pick(WIDTHS), pick(RETENTIONS), "create");
    for (let s = 0; s < steps; s++) {
      const step = `seed ${seed} step ${s}`;
      const r = rnd();
      if (r < 0.4) {
        // a batch over several days, late writes included
        const n = rnd() < 0.1 ? int(500, 1000) : int(1, 40);
        if (n >= 500) seen.big++;
        const batch = Array.from({ length: n }, () => ({ value: value(), at: at() }));
        const res = await settle(observe(ctx(), name, batch));
        await clock.settle(now);
        if (!model.exists) {
          expect(res.ok, step).toBe(false);
          continue;
        }
        expect(res.ok ? res.value.accepted : String(res.error), step).toBe(n);
        for (const o of batch) model.obs.push({ value: o.value, day: dayStart(o.at) });
      } else if (r < 0.47) {
        // a refused batch writes nothing: one observation past retention among good ones
        const batch = Array.from({ length: int(1, 20) }, () => ({ value: value(), at: at() }));
        batch.splice(int(0, batch.length), 0, {
          value: 1,
          at: dayStart(now) - (model.retention + 1) * DAY + int(0, DAY - 1),
        });
        const res = await settle(observe(ctx(), name, batch));
        await clock.settle(now);
        expect(res.ok, step).toBe(false);
        if (!res.ok && model.exists) expect(res.error, step).toBeInstanceOf(ValidationError);
      } else if (r < 0.55) {
        // settings: a new retention (longer or shorter), sometimes a new width
        await doPut(rnd() < 0.3 ? pick(WIDTHS) : model.width, pick(RETENTIONS), `${step} put`);
      } else if (r < 0.58) {
        await remove(ctx(), name);
        model.exists = false;
        model.obs = [];
        if (rnd() < 0.8) await doPut(pick(WIDTHS), pick(RETENTIONS), `${step} recreate`);
      } else if (r < 0.61) {
        // every day expires (the month rollups may outlive them: their deadline is the month's
        // last day), then a new width is allowed and the old rollups must not leak into reads
        now = dayStart(now) + (model.retention + 1 + int(0, 20)) * DAY + int(0, 86_399) * 1000;
        await clock.expireUntil(now);
        model.keep(now);
        await doPut(pick(WIDTHS.filter((w) => w !== model.width)), pick(RETENTIONS), `${step} rewidth`);
      } else if (r < 0.68) {
        // the clock moves: minutes, to a midnight exactly, to 23:55+, or days
        const k = rnd();
        if (k < 0.25) now += int(1, 600) * 60_000;
        else if (k < 0.5) now = dayStart(now) + int(1, 3) * DAY;
        else if (k < 0.7) now = dayStart(now) + DAY - int(1, 300) * 1000;
        else now += int(1, 45) * DAY + int(0, 86_399) * 1000;
        await clock.expireUntil(now);
        model.keep(now);
      } else {
        if (!model.exists) continue;
        // reads over many ranges
        const today = dayStart(now);
        const ranges: [number, number][] = [];
        const month1 = Date.UTC(new Date(today).getUTCFullYear(), new Date(today).getUTCMonth(), 1);
        const prevMonth = Date.UTC(new Date(today).getUTCFullYear(), new Date(today).getUTCMonth() - 1, 1);
        ranges.push([today, today]);
        ranges.push([today - int(0, 399) * DAY, today]);
        ranges.push([month1, today]);
        ranges.push([prevMonth, month1 - DAY]); // one whole month in the past
        ranges.push([prevMonth + int(1, 20) * DAY, month1 - DAY]);
        ranges.push([prevMonth, month1 - int(2, 10) * DAY]); // end edge of a month in the past
        const end = today - int(0, 120) * DAY;
        ranges.push([end - int(0, 399 - 0) * DAY, end]);
        ranges.push([today - 399 * DAY, today]);
        ranges.push([today + DAY, today + DAY]); // tomorrow (23:55+ writes land there)
        const d = today - int(0, 60) * DAY;
        ranges.push([d, d]);
        for (const [from, to] of ranges) await check(ctx(), name, model, from, to, step);
      }
    }
  };
}

describe("review 4: histograms against a model", () => {
  for (const seed of Array.from({ length: 40 }, (_, i) => 300 + i))
    it(`seed ${seed}: every read agrees with the raw observations`, randomRun(seed, 150), 240_000);

  it("the runs above exercised what they claim (reads with data, width and retention changes, big batches)", () => {
    console.log("review4 model coverage", seen);
    expect(seen.nonEmpty).toBeGreaterThan(300);
    expect(seen.widthRefused).toBeGreaterThan(3);
    expect(seen.widthChanged).toBeGreaterThan(3);
    expect(seen.longer).toBeGreaterThan(3);
    expect(seen.shorter).toBeGreaterThan(3);
    expect(seen.big).toBeGreaterThan(3);
  });
});

describe("review 4: histograms, targeted scenarios", () => {
  const T = Date.UTC(2027, 5, 10, 12); // 10 June 2027

  it("a late observation into a month whose rollup was already read is counted by the next read", async () => {
    const ctx = lib.ctx(T, "r4h-late");
    await put(ctx, "late", { bucketWidth: 1, retentionDays: 100 });
    await observe(ctx, "late", [
      { value: 1, at: Date.UTC(2027, 4, 1) }, // 1 May 00:00:00.000
      { value: 2, at: Date.UTC(2027, 4, 31, 23, 59, 59, 999) },
    ]);
    const may = { from: "2027-05-01", to: "2027-05-31" };
    expect((await read(ctx, "late", may)).count).toBe(2);
    // a 400-day read uses May as its rollup too
    expect((await read(ctx, "late", { from: "2026-05-07", to: "2027-06-10" })).count).toBe(2);
    await observe(ctx, "late", [
      { value: -3.5, at: Date.UTC(2027, 4, 15) },
      { value: 4, at: Date.UTC(2027, 5, 1) - 1 },
      { value: 5, at: Date.UTC(2027, 5, 1) }, // 1 June 00:00:00.000: June, not May
    ]);
    const r = await read(ctx, "late", may);
    expect([r.count, r.sum, r.min, r.max]).toEqual([4, 3.5, -3.5, 4]);
    const long = await read(ctx, "late", { from: "2026-05-07", to: "2027-06-10" });
    expect([long.count, long.sum, long.min, long.max]).toEqual([5, 8.5, -3.5, 5]);
    const june = await read(ctx, "late", { from: "2027-06-01", to: "2027-06-10" });
    expect([june.count, june.sum]).toEqual([1, 5]);
  });

  it("a read at 23:55 or later of a month ending today leaves out tomorrow's early observation", async () => {
    const late = Date.UTC(2027, 5, 30, 23, 57); // 30 June, the month's last day
    const ctx = lib.ctx(late, "r4h-2355");
    await put(ctx, "edge", { bucketWidth: 1 });
    await observe(ctx, "edge", [
      { value: 10, at: Date.UTC(2027, 5, 1) },
      { value: 20, at: late + 4 * 60_000 }, // 1 July 00:01, within 5 minutes of now
    ]);
    const june = await read(ctx, "edge", { from: "2027-06-01", to: "2027-06-30" });
    expect([june.count, june.sum]).toEqual([1, 10]);
    const both = await read(ctx, "edge", { from: "2027-05-20", to: "2027-07-01" });
    expect([both.count, both.sum]).toEqual([2, 30]);
  });

  it("a shorter retention then a longer one: the month rollup never stands for days that were cut", async () => {
    const ctx = lib.ctx(T, "r4h-ret");
    const clock = new VirtualExpiry(target, ctx.prefix);
    await put(ctx, "ret", { bucketWidth: 1, retentionDays: 100 });
    await observe(ctx, "ret", [
      { value: 1, at: Date.UTC(2027, 3, 1) }, // 1 April
      { value: 2, at: Date.UTC(2027, 3, 20) },
      { value: 3, at: Date.UTC(2027, 3, 30) },
    ]);
    await clock.settle(T);
    // 50 days keeps 21 April onwards on 10 June: 1 and 20 April are cut
    await put(ctx, "ret", { bucketWidth: 1, retentionDays: 50 });
    await clock.settle(T);
    await put(ctx, "ret", { bucketWidth: 1, retentionDays: 400 });
    await clock.settle(T);
    for (const range of [
      { from: "2027-04-01", to: "2027-04-30" },
      { from: "2026-06-06", to: "2027-06-10" },
      { from: "2027-03-01", to: "2027-05-31" },
    ]) {
      const r = await read(ctx, "ret", range);
      expect([r.count, r.sum, r.min, r.max], JSON.stringify(range)).toEqual([1, 3, 3, 3]);
    }
    // a late write into the cut month after all that
    await observe(ctx, "ret", [{ value: 7, at: Date.UTC(2027, 3, 1, 5) }]);
    const r = await read(ctx, "ret", { from: "2027-04-01", to: "2027-04-30" });
    expect([r.count, r.sum, r.min, r.max]).toEqual([2, 10, 3, 7]);
  });
});

describe("review 4: histogram command counts (docs/costs.md) in the states they name", () => {
  const T = Date.UTC(2027, 5, 10, 12);
  const tag = `r4h-cost-${Math.random().toString(36).slice(2, 8)}`;
  const counted = createRedis({ url: target.url, token: `${target.token}.${tag}`, timeoutMs: 20_000 });
  const ctx = { ...lib.ctx(T, "r4h-cost"), redis: counted };
  /** A call before the measured ones: the script is loaded, the state is the one named. */
  async function warm(call: () => Promise<unknown>): Promise<void> {
    await call();
  }
  async function measure(call: () => Promise<unknown>): Promise<number> {
    await resetStats(target, tag);
    await call();
    const s = await statsOf(target, tag);
    expect(s.requests).toBe(1);
    return s.commands;
  }

  it("observe: a late value into a day of a past month (first of that day 11, then 6, new bucket 7)", async () => {
    await put(ctx, "c", { bucketWidth: 1 });
    await warm(() => observe(ctx, "c", [{ value: 1, at: T }]));
    const day = Date.UTC(2027, 2, 3, 0, 0, 0, 0);
    expect(await measure(() => observe(ctx, "c", [{ value: 5, at: day }]))).toBe(11);
    expect(await measure(() => observe(ctx, "c", [{ value: 5, at: day + DAY - 1 }]))).toBe(6);
    expect(await measure(() => observe(ctx, "c", [{ value: -5, at: day + 1 }]))).toBe(7);
  });

  // docs/histograms.md says a 1,000-value batch costs "two ZINCRBYs per distinct bucket and day, one
  // per day for its sum, plus 4": exact for one day only; each day also pays its extremes' ZADD GT,
  // so a batch over D days costs 2 + sum over days of (2·buckets + 2). Pinned as measured. Since
  // the settings mirror the newest day's extremes, that day skips its ZADD GT when the batch's are
  // within them: 1 less.
  it("observe: a steady batch over 3 days of 10 existing buckets each costs 2 + 3 x (2 x 10 + 2) - 1", async () => {
    await put(ctx, "b", { bucketWidth: 1 });
    const days = [T, T - 3 * DAY, T - 40 * DAY];
    const batch = days.flatMap((at) => Array.from({ length: 100 }, (_, i) => ({ value: i % 10, at: at - i })));
    await warm(() => observe(ctx, "b", batch));
    expect(await measure(() => observe(ctx, "b", batch))).toBe(2 + 3 * (2 * 10 + 2) - 1);
    expect(await measure(() => observe(ctx, "b", batch.slice(0, 100)))).toBe(2 + 2 * 10 + 1);
  });

  it("read: 1 day 5; up to 4 days 4 plus a ZMSCORE per month read by its days", async () => {
    await put(ctx, "r", { bucketWidth: 1 });
    await observe(ctx, "r", [
      { value: 1, at: Date.UTC(2027, 4, 30) },
      { value: 2, at: Date.UTC(2027, 5, 1) },
    ]);
    await warm(() => read(ctx, "r"));
    expect(await measure(() => read(ctx, "r", { from: "2027-05-30", to: "2027-05-30" }))).toBe(5);
    expect(await measure(() => read(ctx, "r", { from: "2027-05-30", to: "2027-06-02" }))).toBe(6);
    expect(await measure(() => read(ctx, "r", { from: "2027-06-01", to: "2027-06-03" }))).toBe(5);
  });

  it("read: 30 days ending today 7, ending in the past 7 (8 when the end month is the larger part)", async () => {
    await put(ctx, "t", { bucketWidth: 1 });
    const batch = Array.from({ length: 60 }, (_, i) => ({ value: i % 7, at: T - i * DAY }));
    await observe(ctx, "t", batch);
    await warm(() => read(ctx, "t"));
    expect(await measure(() => read(ctx, "t", { from: "2027-05-12", to: "2027-06-10" }))).toBe(7);
    expect(await measure(() => read(ctx, "t", { from: "2027-04-15", to: "2027-05-14" }))).toBe(7);
    // docs/histograms.md: the end month's rollup ZCARD, "8 instead of 7 … whatever the data"
    expect(await measure(() => read(ctx, "t", { from: "2027-04-28", to: "2027-05-27" }))).toBe(8);
  });
});

describe("review 4: histograms, the 5-minute horizon at its exact edges", () => {
  for (const [label, now, tomorrowWritable] of [
    ["23:55:00.000", Date.UTC(2027, 5, 15, 23, 55), true],
    ["23:54:59.999", Date.UTC(2027, 5, 15, 23, 54, 59, 999), false],
  ] as const) {
    it(`at ${label} a read of the month so far ${tomorrowWritable ? "leaves out" : "has no"} tomorrow's observation`, async () => {
      const ctx = lib.ctx(now, `r4h-h-${label.replace(/\D/g, "")}`);
      await put(ctx, "h", { bucketWidth: 1 });
      await observe(ctx, "h", [{ value: 3, at: Date.UTC(2027, 5, 1) }]);
      const edge = await settle(observe(ctx, "h", [{ value: 100, at: now + 5 * 60_000 }]));
      expect(edge.ok).toBe(true); // exactly 5 minutes ahead is allowed ("more than 5 minutes" is refused)
      const ahead = await settle(observe(ctx, "h", [{ value: 100, at: now + 5 * 60_000 + 1 }]));
      expect(ahead.ok).toBe(false);
      const soFar = await read(ctx, "h", { from: "2027-06-01", to: "2027-06-15" });
      const wantSoFar = tomorrowWritable ? [1, 3] : [2, 103];
      expect([soFar.count, soFar.sum]).toEqual(wantSoFar);
      const tomorrow = await read(ctx, "h", { from: "2027-06-16", to: "2027-06-16" });
      expect(tomorrow.count).toBe(tomorrowWritable ? 1 : 0);
    });
  }

  it("an ISO `at` with an offset picks the UTC day", async () => {
    const ctx = lib.ctx(Date.UTC(2027, 5, 15, 12), "r4h-iso");
    await put(ctx, "iso", { bucketWidth: 1 });
    await observe(ctx, "iso", [
      { value: 1, at: "2027-06-10T01:30:00+02:00" }, // 9 June 23:30 UTC
      { value: 2, at: "2027-06-09T23:59:59.999-00:00" },
      { value: 4, at: "2027-06-10T00:00:00.000Z" },
    ]);
    expect((await read(ctx, "iso", { from: "2027-06-09", to: "2027-06-09" })).sum).toBe(3);
    expect((await read(ctx, "iso", { from: "2027-06-10", to: "2027-06-10" })).sum).toBe(4);
  });
});

describe("review 4: histograms, the 20,000-bucket read cap at its edge", () => {
  it("exactly 20,000 buckets answer over every shape of range; one more is refused naming the cap", async () => {
    const now = Date.UTC(2027, 5, 10, 12);
    const ctx = lib.ctx(now, "r4h-cap");
    await put(ctx, "cap", { bucketWidth: 1 });
    // 5 days of May (1st, 2nd, 10th, 30th, 31st) with 4,000 buckets of their own each
    const days = [1, 2, 10, 30, 31].map((d) => Date.UTC(2027, 4, d));
    for (const [k, day] of days.entries())
      for (let b = 0; b < 4; b++)
        await observe(
          ctx,
          "cap",
          Array.from({ length: 1000 }, (_, i) => ({ value: k * 4000 + b * 1000 + i + 0.5, at: day + i * 1000 })),
        );
    const shapes = [
      { from: "2027-05-01", to: "2027-05-31" }, // one month rollup
      { from: "2027-04-20", to: "2027-05-31" }, // days, then the rollup
      { from: "2027-05-01", to: "2027-06-10" }, // the rollup, then this month's
      { from: "2027-05-02", to: "2027-05-31" }, // a partial start month: its days
      { from: "2027-05-01", to: "2027-05-30" }, // end edge in the past
      { from: "2026-06-06", to: "2027-06-10" }, // 400 days
    ];
    // day k holds the values k*4000 + 0.5 .. k*4000 + 3,999.5
    const dayValues = (k: number) => Array.from({ length: 4000 }, (_, i) => k * 4000 + i + 0.5);
    const sumOf = (ks: number[]) => ks.flatMap(dayValues).reduce((a, b) => a + b, 0);
    for (const range of shapes) {
      const ks = [0, 1, 2, 3, 4].filter(
        (k) => !(range.from === "2027-05-02" && k === 0) && !(range.to === "2027-05-30" && k === 4),
      );
      const r = await settle(read(ctx, "cap", range));
      expect(
        r.ok ? [r.value.count, r.value.sum, r.value.buckets.length] : String(r.error),
        JSON.stringify(range),
      ).toEqual([ks.length * 4000, sumOf(ks), ks.length * 4000]);
    }
    await observe(ctx, "cap", [{ value: -7, at: Date.UTC(2027, 4, 15) }]);
    for (const range of shapes.filter((s) => s.from !== "2027-05-02" && s.to !== "2027-05-30")) {
      const r = await settle(read(ctx, "cap", range));
      expect(r.ok, JSON.stringify(range)).toBe(false);
      if (!r.ok) {
        expect(r.error, JSON.stringify(range)).toBeInstanceOf(ValidationError);
        expect(String((r.error as Error).message), JSON.stringify(range)).toContain("20000");
      }
    }
    const keys = await keysUnder(target, ctx.prefix);
    expect(keys.filter((k) => k.includes(":tmp"))).toEqual([]);
  }, 120_000);
});

describe("review 4: histograms, a batch refused by the per-day bucket cap writes nothing", () => {
  it("days before and after the full day in the batch keep no trace: no key, no count, no sum, no extreme", async () => {
    const now = Date.UTC(2027, 5, 10, 12);
    const ctx = lib.ctx(now, "r4h-daycap");
    await put(ctx, "dc", { bucketWidth: 1 });
    const full = Date.UTC(2027, 5, 5);
    // 5,000 distinct buckets on 5 June: the day's cap
    for (let b = 0; b < 5; b++)
      await observe(
        ctx,
        "dc",
        Array.from({ length: 1000 }, (_, i) => ({ value: b * 1000 + i, at: full + i })),
      );
    await observe(ctx, "dc", [{ value: 7, at: Date.UTC(2027, 5, 2) }]);
    const before = await keysUnder(target, ctx.prefix);
    const snapshot = async () => {
      const out: Record<string, unknown> = {};
      for (const key of before) {
        const type = await command<string>(target, "TYPE", key);
        out[key] = [
          type,
          type === "hash"
            ? await command(target, "HGETALL", key)
            : await command(target, "ZRANGE", key, 0, -1, "WITHSCORES"),
          await command(target, "PEXPIRETIME", key),
        ];
      }
      return out;
    };
    const was = await snapshot();
    const batch = [
      { value: -100.25, at: Date.UTC(2027, 5, 2, 3) }, // an existing day: new bucket, new extreme
      { value: 1e9, at: Date.UTC(2027, 4, 20) }, // a new day of last month
      { value: 3, at: full }, // an existing bucket of the full day
      { value: 123_456, at: full + 5 }, // a new bucket of the full day: refused
      { value: 5, at: Date.UTC(2027, 5, 9, 23, 59, 59, 999) }, // a new day after it
    ];
    const r = await settle(observe(ctx, "dc", batch));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toBeInstanceOf(ValidationError);
    expect(await keysUnder(target, ctx.prefix)).toEqual(before);
    expect(await snapshot()).toEqual(was);
    const all = await read(ctx, "dc", { from: "2027-05-01", to: "2027-06-10" });
    expect([all.count, all.min, all.max]).toEqual([5001, 0, 4999]);
  });
});

describe("review 4: histograms, values at the limits", () => {
  it("a value exactly 1e12 buckets from zero is kept on both sides; one bucket further is refused", async () => {
    const ctx = lib.ctx(Date.UTC(2027, 5, 10, 12), "r4h-lim");
    for (const [w, v] of [
      [1, 1e12],
      [1000, 1e15],
      [0.5, 5e11],
    ] as const) {
      const name = `w${String(w).replace(".", "_")}`;
      await put(ctx, name, { bucketWidth: w });
      expect((await settle(observe(ctx, name, [{ value: v }, { value: -v }]))).ok, `${w}`).toBe(true);
      for (const over of [v + w, -v - w / 2]) {
        const r = await settle(observe(ctx, name, [{ value: 1 }, { value: over }]));
        expect(r.ok, `${w} ${over}`).toBe(false);
        if (!r.ok) expect(r.error, `${w} ${over}`).toBeInstanceOf(ValidationError);
      }
      const r = await read(ctx, name);
      expect([r.count, r.sum, r.min, r.max], `${w}`).toEqual([2, 0, -v, v]);
      expect(r.buckets, `${w}`).toEqual([
        { lower: -v, upper: -v + w, count: 1 },
        { lower: v, upper: v + w, count: 1 },
      ]);
      // p50: the middle of the lower bucket's one observation; p99: the upper's, clamped to the max
      expect([r.p50, r.p99], `${w}`).toEqual([-v + w / 2, v]);
    }
  });
});

describe("review 4: histograms, late writes around the end edge (rollup less the days after the range)", () => {
  it("a late value into a day after the range and one into a day inside: the next read moves by the inside one only", async () => {
    const now = Date.UTC(2026, 10, 26, 12);
    const tag = `r4h-edge-${Math.random().toString(36).slice(2, 8)}`;
    const counted = createRedis({ url: target.url, token: `${target.token}.${tag}`, timeoutMs: 20_000 });
    const { load, measured } = histogramLoaders(lib, counted, tag);
    const ctx = lib.ctx(now, "r4h-edge");
    // October 2026: 4,999 buckets a day in 4 patterns (the edge pays off: 27 days, 135,000 entries)
    const oct = Array.from({ length: 31 }, (_, i): [number, number[]] => [
      Date.UTC(2026, 9, 1 + i),
      Array.from({ length: 4999 }, (_, b) => (i % 4) * 4999 + b),
    ]);
    await load(ctx, "e", oct);
    await read({ ...ctx, redis: counted }, "e"); // loads the read script for this client
    const model = (extra: number[]) => {
      const values = [...oct.slice(0, 27).flatMap(([, v]) => v), ...extra];
      return {
        count: values.length,
        sum: values.reduce((a, b) => a + b, 0),
        max: values.reduce((a, b) => Math.max(a, b)),
      };
    };
    const first = await measured(ctx, "e", "2026-10-01", "2026-10-27");
    expect(first.ok && { count: first.r.count, sum: first.r.sum, max: first.r.max }).toEqual(model([]));
    expect(first.commands).toBeGreaterThan(8); // the end edge's ZCARDs: the rollup was taken
    await observe(ctx, "e", [
      { value: 50_000, at: Date.UTC(2026, 9, 30, 1) }, // after the range, a bucket of its own
      { value: 3, at: Date.UTC(2026, 9, 29) }, // after the range, a shared bucket
      { value: 40_000.5, at: Date.UTC(2026, 9, 3, 23, 59, 59, 999) }, // inside
    ]);
    const second = await measured(ctx, "e", "2026-10-01", "2026-10-27");
    expect(second.ok && { count: second.r.count, sum: second.r.sum, max: second.r.max }).toEqual(model([40_000.5]));
    if (second.ok) expect(second.r.buckets.find((b) => b.lower === 50_000)).toBeUndefined();
  }, 120_000);
});
