/**
 * Issue 15, point 3 for histograms: a read's sizes are checked before anything is unioned. A
 * range whose month rollup alone holds more buckets than the read cap, or whose parts hold more
 * than MAX_UNION_ENTRIES entries, is refused before any union (the server's command counters show
 * no ZUNIONSTORE); a read at exactly the cap is still answered; no read spends more than
 * MAX_READ_COMMANDS, at the most parts a 400-day range can have; and a range ending now reads this
 * month's rollup for its days, exactly, also in the 5 minutes before midnight (when tomorrow may
 * already hold data) and across a month's end.
 *
 * Large data is written straight into the layout of keys.ts (day sets, extremes, month rollups
 * with each day's sum as `s:<yyyymmdd>`), as observing would write it; the rest is observed.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Ctx } from "../../src/context.ts";
import { observe, put as putHistogram, read as readHistogram } from "../../src/histograms/index.ts";
import { histogramKeys, isoDay, monthOf } from "../../src/histograms/keys.ts";
import {
  MAX_FUTURE_MS,
  MAX_READ_BUCKETS,
  MAX_READ_COMMANDS,
  MAX_UNION_ENTRIES,
} from "../../src/histograms/validate.ts";
import { Edgestats, type EdgestatsRedis } from "../../src/index.ts";
import { DAY, dayStart, MINUTE } from "../../src/time.ts";
import { histogramReadTest, range, upTo, withOutsideDays, withoutPipeline } from "../helpers/histograms.ts";
import { command, keysUnder, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const NOW = Date.UTC(2026, 10, 22, 12, 30);
const { lib, counted, tag: TAG, measured, load } = histogramReadTest("hist-bounds", NOW);
const { target, prefix } = lib;

describe("histogram reads are sized before any union", () => {
  const ctx = lib.ctx(NOW);

  it(`attack: one month holding more than ${MAX_READ_BUCKETS} buckets is refused before any union, naming the cap`, async () => {
    // 5 days of March with 4,020 distinct buckets each: 20,100 in the month
    await load(
      ctx,
      "month-over",
      upTo(5).map((d) => [Date.UTC(2026, 2, 3 + d), upTo(4020, d * 4020)]),
    );
    const read = await measured(ctx, "month-over", "2025-10-19", "2026-11-22");
    expect(read.ok).toBe(false);
    expect(read.ok || read.message).toContain(
      `more than ${MAX_READ_BUCKETS} distinct buckets (one month of it alone holds at least`,
    );
    expect(read.byCommand.zunionstore ?? 0).toBe(0);
    expect(read.byCommand.zunion ?? 0).toBe(0);
    // EVALSHA, HMGET, the sums of the 13 October days, and the rollups up to March's; and the
    // ZPOPMIN sent after the script (a piped read: it finds nothing, the refusal made no scratch)
    expect(read.commands).toBe(9);
    // a day of it is answered
    expect((await measured(ctx, "month-over", "2026-03-03", "2026-03-03")).ok).toBe(true);
  });

  it(`a month of exactly ${MAX_READ_BUCKETS} buckets with old 'sum' members is answered; ${MAX_READ_BUCKETS + 35} is refused before the union`, async () => {
    // 5 days of May, each with its own buckets and the previous layout's 'sum' members
    const days = (n: number): [number, number[]][] =>
      upTo(5).map((d) => [Date.UTC(2026, 4, 10 + d), upTo(n / 5, (d * n) / 5)]);
    await load(ctx, "month-at", days(MAX_READ_BUCKETS), true);
    const at = await measured(ctx, "month-at", "2025-10-19", "2026-11-22");
    expect(at.ok && at.r.buckets.length).toBe(MAX_READ_BUCKETS);
    expect(at.ok && at.r.count).toBe(MAX_READ_BUCKETS);
    expect(at.ok && at.r.sum).toBe((MAX_READ_BUCKETS * (MAX_READ_BUCKETS - 1)) / 2);
    // 20,035 buckets and 'sum': card − (31 days' sums + 'sum') = 20,004 > cap proves the range over it
    await load(ctx, "month-past", days(MAX_READ_BUCKETS + 35), true);
    const over = await measured(ctx, "month-past", "2025-10-19", "2026-11-22");
    expect(over.ok || over.message).toContain("one month of it alone holds at least 20004");
    expect(over.byCommand.zunionstore ?? 0).toBe(0);
  });

  it(`attack: days holding more than ${MAX_UNION_ENTRIES} entries in all are refused before any union, naming that limit`, async () => {
    // the same 5,000 buckets on each of 59 days (29 of November 2025, 30 of October 2026): 295,000
    // entries to merge into 5,000 buckets, which the honest bound (entries, not distinct buckets) refuses
    const days = [
      ...range(Date.UTC(2025, 10, 2), Date.UTC(2025, 10, 30)),
      ...range(Date.UTC(2026, 9, 1), Date.UTC(2026, 9, 30)),
    ];
    await load(
      ctx,
      "entries",
      days.map((d) => [d, upTo(5000)]),
    );
    const read = await measured(ctx, "entries", "2025-11-02", "2026-10-30");
    expect(read.ok).toBe(false);
    expect(read.ok || read.message).toContain(`bucket entries to merge, more than ${MAX_UNION_ENTRIES}`);
    expect(read.byCommand.zunionstore ?? 0).toBe(0);
    expect(read.byCommand.zunion ?? 0).toBe(0);
    // EVALSHA, HMGET, 2 ZMSCORE of sums, 10 rollups, October's rollup and its 30 days one by one,
    // November's rollup (its 29 days would pass the command budget: its bound stands), and the
    // ZPOPMIN after the script (finding nothing)
    expect(read.commands).toBe(47);
    expect(read.commands).toBeLessThanOrEqual(MAX_READ_COMMANDS);
    // a narrower range is answered: October alone, 150,000 entries
    const october = await measured(ctx, "entries", "2026-10-01", "2026-10-30");
    expect(october.ok && october.r.count).toBe(150_000);
    expect(october.ok && october.r.buckets.length).toBe(5000);
  });

  it(`a 400-day read of exactly ${MAX_READ_BUCKETS} distinct buckets is answered, one more refused after its union`, async () => {
    // 50 buckets of their own on each of the 400 days ending today
    const days = range(Date.UTC(2025, 9, 19), Date.UTC(2026, 10, 22));
    expect(days.length).toBe(400);
    await load(
      ctx,
      "at-cap",
      days.map((d, i) => [d, upTo(50, i * 50)]),
    );
    const at = await measured(ctx, "at-cap", "2025-10-19", "2026-11-22");
    expect(at.ok && at.r.buckets.length).toBe(MAX_READ_BUCKETS);
    expect(at.ok && at.r.count).toBe(MAX_READ_BUCKETS);
    expect(at.ok && at.r.sum).toBe((MAX_READ_BUCKETS * (MAX_READ_BUCKETS - 1)) / 2);
    expect(at.byCommand.zunionstore).toBe(1);
    expect(at.commands).toBeLessThanOrEqual(MAX_READ_COMMANDS);
    await observe(ctx, "at-cap", [{ value: -1, at: Date.UTC(2026, 1, 3) }]);
    const over = await measured(ctx, "at-cap", "2025-10-19", "2026-11-22");
    expect(over.ok || over.message).toContain(`the range holds ${MAX_READ_BUCKETS + 1} distinct buckets`);
    expect(await command(target, "EXISTS", histogramKeys.scratch(prefix, "at-cap"))).toBe(0);
  });

  it(`a whole month is its own union: ${MAX_READ_BUCKETS} buckets read from its rollup as they are, one more refused`, async () => {
    // 4,000 buckets of their own on 5 days of June: its rollup holds 20,000 and the 5 days' sums
    const june = (extra: number[]): [number, number[]][] =>
      upTo(5).map((d) => [Date.UTC(2026, 5, 10 + d), [...upTo(4000, d * 4000), ...(d === 0 ? extra : [])]]);
    await load(ctx, "month-one", june([]));
    const at = await measured(ctx, "month-one", "2026-06-01", "2026-06-30");
    expect(at.ok && at.r.buckets.length).toBe(MAX_READ_BUCKETS);
    expect(at.ok && at.r.count).toBe(MAX_READ_BUCKETS);
    expect(at.ok && at.r.sum).toBe((MAX_READ_BUCKETS * (MAX_READ_BUCKETS - 1)) / 2);
    expect(at.ok && [at.r.min, at.r.max]).toEqual([0, MAX_READ_BUCKETS - 1]);
    // EVALSHA, HMGET, ZCARD of the rollup, ZMSCORE of its sums (its size is near the cap), ZRANGE
    // of the rollup itself, the extremes: no union, no scratch key
    expect(at.byCommand.zunionstore ?? 0).toBe(0);
    expect(at.byCommand.zrange).toBe(1);
    expect(at.commands).toBe(6);
    await load(ctx, "month-one-over", june([MAX_READ_BUCKETS]));
    const over = await measured(ctx, "month-one-over", "2026-06-01", "2026-06-30");
    expect(over.ok || over.message).toContain(`the range holds ${MAX_READ_BUCKETS + 1} distinct buckets`);
    expect(over.byCommand.zunionstore ?? 0).toBe(0);
    expect(over.byCommand.zrange ?? 0).toBe(0);
    expect(await command(target, "EXISTS", histogramKeys.scratch(prefix, "month-one-over"))).toBe(0);
  });

  it("two parts over the cap together are refused before the union; two that overlap go on to it", async () => {
    // June and July 2026, 3 days of 4,000 buckets each: 12,000 buckets a month, apart or the same
    const months = (shared: boolean): [number, number[]][] =>
      [5, 6].flatMap((m) =>
        upTo(3).map((d): [number, number[]] => [
          Date.UTC(2026, m, 10 + d),
          upTo(4000, (shared ? 0 : (m - 5) * 12_000) + d * 4000),
        ]),
      );
    await load(ctx, "pair-apart", months(false));
    // each rollup: 12,000 buckets and 3 sums, less what may not be a bucket (a sum a day and 'sum'):
    // 12,003 − 31 for June and − 32 for July, apart
    const apart = await measured(ctx, "pair-apart", "2026-06-01", "2026-07-31");
    expect(apart.ok || apart.message).toContain(
      `more than ${MAX_READ_BUCKETS} distinct buckets (two of its parts alone hold at least 23943)`,
    );
    expect(apart.byCommand.zunionstore ?? 0).toBe(0);
    // EVALSHA, HMGET, the 2 rollups' ZCARDs, ZINTERCARD, and the ZPOPMIN after the script
    expect(apart.commands).toBe(6);
    await load(ctx, "pair-shared", months(true));
    const shared = await measured(ctx, "pair-shared", "2026-06-01", "2026-07-31");
    expect(shared.ok && shared.r.buckets.length).toBe(12_000);
    expect(shared.ok && shared.r.count).toBe(24_000);
    expect(shared.byCommand.zintercard).toBe(1);
    expect(shared.byCommand.zunionstore).toBe(1);
  });

  it("parts of which no two pass the cap, but a few together do, are refused before the union when they share no bucket", async () => {
    // June, July and August 2026, 3 days of 3,000 buckets each: 9,000 buckets a month, apart or the same
    const months = (shared: boolean): [number, number[]][] =>
      [5, 6, 7].flatMap((m) =>
        upTo(3).map((d): [number, number[]] => [
          Date.UTC(2026, m, 10 + d),
          upTo(3000, (shared ? 0 : (m - 5) * 9000) + d * 3000),
        ]),
      );
    await load(ctx, "three-apart", months(false));
    // each rollup: 9,000 buckets and 3 sums, less what may not be a bucket (a sum a day and 'sum'):
    // 9,003 - 31 for July and August, - 31 for June (30 days + 1): 8,972 + 8,971 + 8,971; two of
    // them (17,943) cannot pass the cap, three (26,914) can, less their pairwise overlaps (none)
    const apart = await measured(ctx, "three-apart", "2026-06-01", "2026-08-31");
    expect(apart.ok || apart.message).toContain(
      `more than ${MAX_READ_BUCKETS} distinct buckets (3 of its parts alone hold at least 26914)`,
    );
    expect(apart.byCommand.zunionstore ?? 0).toBe(0);
    // EVALSHA, HMGET, the 3 rollups' ZCARDs, 3 ZINTERCARDs (one a pair), the ZPOPMIN after the script
    expect(apart.byCommand.zintercard).toBe(3);
    expect(apart.commands).toBe(9);
    await load(ctx, "three-shared", months(true));
    const shared = await measured(ctx, "three-shared", "2026-06-01", "2026-08-31");
    expect(shared.ok && shared.r.buckets.length).toBe(9000);
    expect(shared.ok && shared.r.count).toBe(27_000);
    // the first pair's overlap already keeps the three within the cap: one ZINTERCARD, then the union
    expect(shared.byCommand.zintercard).toBe(1);
    expect(shared.byCommand.zunionstore).toBe(1);
  });

  it(`the most parts a 400-day range can have (30 days, 11 rollups, 30 days) cost at most ${MAX_READ_COMMANDS} commands`, async () => {
    const now = Date.UTC(2026, 7, 5, 12);
    const late = lib.ctx(now);
    // July 2025 and July 2026: 167 buckets a day, each day its own (5,177 in the month); the 11
    // months between: 900 buckets on their 10th
    const days: [number, number[]][] = [];
    for (const [y, m] of [
      [2025, 6],
      [2026, 6],
    ] as const)
      for (const day of range(Date.UTC(y, m, 1), Date.UTC(y, m, 31)))
        days.push([day, upTo(167, 1e6 * (y - 2024) + 167 * new Date(day).getUTCDate())]);
    for (let k = 1; k <= 11; k++) days.push([Date.UTC(2025, 6 + k, 10), upTo(900, 1e4 * k)]);
    await load(late, "parts", days);
    const inRange = days.filter(([d]) => d >= Date.UTC(2025, 6, 2) && d <= Date.UTC(2026, 6, 30));
    const read = await measured(late, "parts", "2025-07-02", "2026-07-30");
    expect(read.ok && read.r.count).toBe(inRange.reduce((n, [, b]) => n + b.length, 0));
    expect(read.ok && read.r.buckets.length).toBe(19_920);
    // EVALSHA, HMGET, 2 ZMSCORE, 11 rollups, one edge month and its 30 days (their bound alone
    // would pass MAX_UNION_ENTRIES; with them sized, the other month's bound is not needed: the
    // union goes to scratch anyway), ZUNIONSTORE (its reply is the union's size), the extremes, and
    // the ZPOPMIN after the script that takes the union (was 51: the other month's ZCARD, ZRANGE, UNLINK)
    expect(read.commands).toBe(49);
    expect(read.commands).toBeLessThanOrEqual(MAX_READ_COMMANDS);
  });
});

describe("a read of more than 4 days hands its union to a ZPOPMIN after its script", () => {
  const ctx = lib.ctx(NOW);
  // the library's own client without a pipeline: the one script that loads the union itself
  const alone = withoutPipeline(counted);
  const scratchKeys = async () => (await keysUnder(target, prefix)).filter((k) => /:tmp(:|$)/.test(k));

  it("answers what the one script answers, in one HTTP request, and leaves no scratch key", async () => {
    // 16 days (2 Nov – 17 Nov 2026): 1,172 buckets of their own each, and the same 1,248 shared by all
    const days = range(Date.UTC(2026, 10, 2), Date.UTC(2026, 10, 17));
    await load(
      ctx,
      "piped",
      days.map((d, i) => [d, [...upTo(1172, 10_000 + i * 1172), ...upTo(1248)]]),
    );
    for (const [from, to, buckets] of [
      // this month's rollup and nothing else past 4 days: at the cap, 20,000 buckets
      ["2026-10-25", "2026-11-22", MAX_READ_BUCKETS],
      // days read one by one (a range ending in the past)
      ["2026-11-03", "2026-11-16", 1248 + 14 * 1172],
    ] as const) {
      const piped = await measured(ctx, "piped", from, to);
      expect(piped.ok && piped.r.buckets.length).toBe(buckets);
      expect(piped.byCommand.zpopmin).toBe(1);
      expect(piped.byCommand.zrange ?? 0).toBe(0);
      expect(piped.byCommand.unlink ?? 0).toBe(0);
      expect(await scratchKeys()).toEqual([]);
      const one = await readHistogram({ ...ctx, redis: alone }, "piped", { from, to });
      expect(piped.ok && JSON.stringify(piped.r)).toBe(JSON.stringify(one));
    }
  });

  it("the library's Edgestats takes the piped read with createRedis's client, the one script with a user's", async () => {
    // the "piped" histogram of the test above: 16 days of November 2026
    const viaLibrary = async (redis: EdgestatsRedis) => {
      const stats = new Edgestats({ redis, prefix, clock: () => NOW });
      await resetStats(target, TAG);
      const r = await stats.histogram("piped").read({ from: "2026-11-03", to: "2026-11-16" });
      return { r, stats: await statsOf(target, TAG) };
    };
    const own = await viaLibrary(counted);
    expect(own.stats.requests).toBe(1);
    expect(own.stats.byCommand.zpopmin).toBe(1);
    const user = await viaLibrary(alone as unknown as EdgestatsRedis);
    expect(user.stats.requests).toBe(1);
    expect(user.stats.byCommand.zpopmin ?? 0).toBe(0);
    expect(own.r.buckets.length).toBe(1248 + 14 * 1172);
    expect(JSON.stringify(own.r)).toBe(JSON.stringify(user.r));
  });

  it("a refusal after the union deletes the scratch key itself; the ZPOPMIN finds nothing", async () => {
    // 6 days of 4,000 buckets of their own: 24,000 distinct, each part under the cap, no two over it
    const days = range(Date.UTC(2026, 7, 10), Date.UTC(2026, 7, 15));
    // (the other days of August one value each, so the union is of the days: withOutsideDays)
    await load(ctx, "piped-over", withOutsideDays(days.map((d, i) => [d, upTo(4000, i * 4000)])));
    const over = await measured(ctx, "piped-over", "2026-08-10", "2026-08-15");
    expect(over.ok || over.message).toContain("the range holds 24000 distinct buckets");
    expect(over.byCommand.zunionstore).toBe(1);
    expect(over.byCommand.zpopmin).toBe(1);
    expect(await scratchKeys()).toEqual([]);
  });
});

describe("a range ending now reads this month's rollup for its days", () => {
  type Obs = { value: number; at: number };
  const model = (all: Obs[], from: number, to: number) => {
    const v = all.filter((o) => o.at >= from && o.at < to + DAY).map((o) => o.value);
    const counts = new Map<number, number>();
    for (const x of v) counts.set(x, (counts.get(x) ?? 0) + 1);
    return {
      count: v.length,
      sum: v.reduce((a, b) => a + b, 0),
      min: v.length ? Math.min(...v) : null,
      max: v.length ? Math.max(...v) : null,
      buckets: [...counts].sort((a, b) => a[0] - b[0]).map(([i, count]) => ({ lower: i, upper: i + 1, count })),
    };
  };
  const answer = async (ctx: Ctx, name: string, from: number, to: number) => {
    const r = await readHistogram(ctx, name, { from: isoDay(from), to: isoDay(to) });
    return { count: r.count, sum: r.sum, min: r.min, max: r.max, buckets: r.buckets };
  };

  it("uses the rollup (no ZMSCORE of the days' sums) until 6 minutes before midnight (5 of future dates, 1 of clock skew), then the days", async () => {
    const noon = Date.UTC(2026, 10, 22, 12);
    const ctx = lib.ctx(noon, "hist-now");
    await putHistogram(ctx, "now", { bucketWidth: 1 });
    const before: Obs[] = [
      { value: 1, at: Date.UTC(2026, 10, 1, 3) },
      { value: 2, at: Date.UTC(2026, 10, 21, 23) },
      { value: 3, at: noon },
    ];
    await observe(ctx, "now", before);
    const day1 = Date.UTC(2026, 10, 1);
    const today = dayStart(noon);
    const read = await measured(ctx, "now", "2026-11-01", "2026-11-22");
    expect(read.ok && read.r.count).toBe(3);
    expect(read.byCommand.zmscore ?? 0).toBe(0);
    // EVALSHA, HMGET, ZCARD of the rollup, ZUNION, the extremes
    expect(read.commands).toBe(5);
    // at 23:55 an observation may be dated tomorrow, into this month's rollup: the days are read
    const late = { ...ctx, now: Date.UTC(2026, 10, 22, 23, 55) };
    const tomorrow = { value: 9, at: late.now + MAX_FUTURE_MS };
    await observe(late, "now", [tomorrow]);
    const lateRead = await measured(late, "now", "2026-11-01", "2026-11-22");
    expect(lateRead.ok && lateRead.r.count).toBe(3);
    expect(lateRead.byCommand.zmscore).toBe(1);
    expect(await answer(late, "now", day1, today)).toEqual(model([...before, tomorrow], day1, today));
    // at 23:54:59.999 another Worker's clock (or a write applied during the read) may already be at
    // 23:55: the days are read too (review 5), and tomorrow's value is left out
    const skewed = { ...ctx, now: Date.UTC(2026, 10, 22, 23, 54, 59, 999) };
    const skewedRead = await measured(skewed, "now", "2026-11-01", "2026-11-22");
    expect([skewedRead.ok && skewedRead.r.count, skewedRead.byCommand.zmscore]).toEqual([3, 1]);
    // a minute earlier than that, nothing can be dated tomorrow yet: the rollup stands (tomorrow's
    // value is there only because this test wrote it from a later clock)
    const earlier = { ...ctx, now: Date.UTC(2026, 10, 22, 23, 53, 59, 999) };
    expect((await measured(earlier, "now", "2026-11-01", "2026-11-22")).byCommand.zmscore ?? 0).toBe(0);
    // a range ending tomorrow takes it in
    const withTomorrow = await answer(late, "now", day1, today + DAY);
    expect(withTomorrow).toEqual(model([...before, tomorrow], day1, today + DAY));
  });

  it("equals the raw days for ranges ending today or tomorrow, near midnight and across a month's end", async () => {
    const ends = [Date.UTC(2026, 10, 22), Date.UTC(2026, 11, 1), Date.UTC(2027, 0, 1), Date.UTC(2027, 1, 1)];
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ends),
        fc.integer({ min: -10 * MINUTE, max: 10 * MINUTE }),
        fc.array(
          fc.record({
            value: fc.integer({ min: 0, max: 30 }),
            back: fc.oneof(fc.integer({ min: 0, max: 10 * MINUTE }), fc.integer({ min: 0, max: 40 * DAY })),
          }),
          {
            minLength: 1,
            maxLength: 30,
          },
        ),
        fc.integer({ min: 0, max: 45 }),
        fc.boolean(),
        async (end, offset, values, span, tomorrow) => {
          const now = end + offset;
          const ctx = lib.ctx(now, `hist-p${run}`);
          const name = `p-${run++}`;
          await putHistogram(ctx, name, { bucketWidth: 1 });
          // every observation as late as allowed, or earlier
          const all = values.map(({ value, back }) => ({ value, at: now + MAX_FUTURE_MS - back }));
          await observe(ctx, name, all);
          const to = dayStart(now) + (tomorrow ? DAY : 0);
          const from = to - span * DAY;
          expect(await answer(ctx, name, from, to)).toEqual(model(all, from, to));
          // from the month's first day, the range reads this month's rollup when it can
          const first = monthOf(to);
          expect(await answer(ctx, name, first, to)).toEqual(model(all, first, to));
        },
      ),
      { numRuns: 40 },
    );
  });
});
