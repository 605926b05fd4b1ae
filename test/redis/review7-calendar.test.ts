/**
 * Review 7, calendar and time edges of the library against real Redis: what the feature and
 * property tests do not reach (their clocks sit in 2026–2027, so no leap day; their times are
 * epoch ms, so not every `at` form). Leap February 2028 read by whole-month rollups and by raw
 * buckets, quarter/day/month boundary instants as `from`/`to`, the 400-day range limit across a
 * leap day, and the forms `at` takes (ms, offsets, 24:00). A confirmed bug is an `it.fails`
 * asserting the right behaviour, with its severity and the smallest fix.
 */
import { describe, expect, it } from "vitest";
import { deleteMember, increment, memberOf, ranked } from "../../src/counters/index.ts";
import { observe, put, read } from "../../src/histograms/index.ts";
import { NotFoundError, ValidationError } from "../../src/errors.ts";
import { DAY, HOUR, MINUTE } from "../../src/time.ts";
import * as trending from "../../src/trending/index.ts";
import { libraryTest } from "../helpers/library.ts";

const lib = libraryTest("r7cal");
const iso = (ms: number) => new Date(ms).toISOString();
/** The `range` a period read answers with (the library's return type leaves it out). */
const rangeOf = (answer: object) => (answer as { range?: { from: number; to: number; buckets: number } }).range;
/** A member's score over a range; 0 when no bucket of it holds the member (the read's 404). */
async function scoreOf(...args: Parameters<typeof memberOf>): Promise<number> {
  try {
    return (await memberOf(...args)).score;
  } catch (e) {
    if (e instanceof NotFoundError) return 0;
    throw e;
  }
}

/** Hours written into an hour counter: around Feb 28/29/Mar 1 2028 and the quarter edges (06/12/18 h). */
const LEAP_HOURS = [
  Date.UTC(2028, 0, 31, 23), // last hour of January
  Date.UTC(2028, 1, 1, 0), // first of February
  Date.UTC(2028, 1, 28, 5),
  Date.UTC(2028, 1, 28, 6),
  Date.UTC(2028, 1, 28, 23),
  Date.UTC(2028, 1, 29, 0),
  Date.UTC(2028, 1, 29, 11),
  Date.UTC(2028, 1, 29, 12),
  Date.UTC(2028, 1, 29, 17),
  Date.UTC(2028, 1, 29, 18),
  Date.UTC(2028, 1, 29, 23),
  Date.UTC(2028, 2, 1, 0), // first of March
];
// each hour a distinct power of two, so a sum names exactly the hours it read
const byOf = (i: number) => 2 ** i;
const NOW_2028 = Date.UTC(2028, 3, 10, 9, 30); // every hour above is finished

/** The raw model: the sum of the hours in [from's hour, to's hour], less those `gone` names. */
function rawSum(from: number, to: number, gone: (hour: number) => boolean = () => false): number {
  const lo = Math.floor(from / HOUR) * HOUR;
  const hi = Math.floor(to / HOUR) * HOUR;
  return LEAP_HOURS.reduce((s, h, i) => (h >= lo && h <= hi && !gone(h) ? s + byOf(i) : s), 0);
}

describe("counters over leap February 2028: rollups agree with the raw hours", () => {
  const ctx = lib.ctx(NOW_2028);
  let written = false;
  const setup = async () => {
    if (written) return;
    // one item per hour: its hour, quarter, day and month rollups all get it
    await increment(
      ctx,
      "leap-h",
      LEAP_HOURS.map((h, i) => ({ member: "m", by: byOf(i), period: "hour" as const, at: h + 17 * MINUTE })),
    );
    await increment(
      ctx,
      "leap-h",
      LEAP_HOURS.map((h, i) => ({ member: "n", by: 3 * byOf(i), period: "hour" as const, at: h })),
    );
    written = true;
  };

  // from/to at hour, quarter (06/12/18), day, month and leap-day edges, as exact instants
  const E = {
    jan31_23: Date.UTC(2028, 0, 31, 23),
    feb1: Date.UTC(2028, 1, 1),
    feb28_06: Date.UTC(2028, 1, 28, 6),
    feb28_end: Date.UTC(2028, 1, 28, 23, 59, 59, 999),
    feb29: Date.UTC(2028, 1, 29),
    feb29_12: Date.UTC(2028, 1, 29, 12),
    feb29_18: Date.UTC(2028, 1, 29, 18),
    feb29_end: Date.UTC(2028, 1, 29, 23, 59, 59, 999),
    mar1: Date.UTC(2028, 2, 1),
    mar31: Date.UTC(2028, 2, 31, 23),
  };
  const ranges: [number, number][] = [
    [E.feb1, E.feb29_end], // whole February: the month rollup
    [E.feb1, E.feb28_end], // February less its leap day: not the month rollup
    [E.feb1, E.feb29], // to = the leap day's first instant: its hour 00 only
    [E.feb29, E.feb29_end], // the leap day: its day rollup
    [E.feb28_06, E.feb29_12], // quarter edge to quarter edge, inclusive of each edge hour
    [E.feb29_12, E.feb29_18],
    [E.feb29_18, E.mar1], // the last quarter of February and the first hour of March
    [E.jan31_23, E.mar1], // one hour either side of a whole month
    [E.jan31_23, E.mar31], // a whole February among partial months
    [E.feb28_end, E.feb29], // 23:59:59.999 to 00:00:00.000: two hours
  ];

  it("a sum over every range (member and top reads) equals the raw hours it names", async () => {
    await setup();
    for (const [from, to] of ranges) {
      const want = rawSum(from, to);
      expect(await scoreOf(ctx, "leap-h", "m", { period: "hour", from, to }), `m ${iso(from)}..${iso(to)}`).toBe(want);
      const top = await ranked(ctx, "leap-h", "top", 2, { period: "hour", from: iso(from), to: iso(to) });
      expect(
        top.items.map((i) => [i.member, i.score]),
        `top ${iso(from)}..${iso(to)}`,
      ).toEqual(
        want === 0
          ? []
          : [
              ["n", 3 * want],
              ["m", want],
            ],
      );
      expect(rangeOf(top)?.from).toBe(Math.floor(from / HOUR) * HOUR);
      expect(rangeOf(top)?.to).toBe(Math.floor(to / HOUR) * HOUR);
    }
  });

  it("a second read of each finished range (from the cached union) answers the same", async () => {
    await setup();
    for (const [from, to] of ranges) {
      expect(await scoreOf(ctx, "leap-h", "n", { period: "hour", from, to }), `${iso(from)}..${iso(to)}`).toBe(
        3 * rawSum(from, to),
      );
    }
  });

  it("a day counter: Feb 1..28 leaves out Feb 29, Feb 1..29 is the whole month, day 29 exists only in leap years", async () => {
    const dctx = lib.ctx(NOW_2028, "r7cal-day");
    await increment(dctx, "d", [
      { member: "m", by: 1, period: "day", at: "2028-02-28T23:59:59.999Z" },
      { member: "m", by: 10, period: "day", at: "2028-02-29T00:00:00.000Z" },
      { member: "m", by: 100, period: "day", at: "2028-02-29T23:59:59.999Z" },
      { member: "m", by: 1000, period: "day", at: "2028-03-01T00:00:00.000Z" },
    ]);
    const score = (from: string, to: string) => scoreOf(dctx, "d", "m", { period: "day", from, to });
    expect(await score("2028-02-01", "2028-02-28")).toBe(1);
    expect(await score("2028-02-01", "2028-02-29")).toBe(111);
    expect(await score("2028-02-29", "2028-02-29")).toBe(110);
    expect(await score("2028-02-29", "2028-03-31")).toBe(1110);
    expect(await score("2028-01-01", "2028-03-01")).toBe(1111);
    await expect(memberOf(dctx, "d", "m", { period: "day", from: "2027-02-01", to: "2027-02-29" })).rejects.toThrow(
      /'to'/,
    );
  });

  it("a member delete over Feb 28 18:00 .. Feb 29 05:59 removes exactly those hours from every rollup", async () => {
    const dctx = lib.ctx(NOW_2028, "r7cal-del");
    await increment(
      dctx,
      "h",
      LEAP_HOURS.map((h, i) => ({ member: "x", by: byOf(i), period: "hour" as const, at: h })),
    );
    const from = Date.UTC(2028, 1, 28, 18);
    const to = Date.UTC(2028, 1, 29, 5, 59);
    await deleteMember(dctx, "h", "x", { period: "hour", from, to });
    const removed = rawSum(from, to);
    expect(removed).toBe(byOf(4) + byOf(5)); // 28th 23:00 and 29th 00:00
    for (const [f, t] of ranges) {
      const left = rawSum(f, t, (h) => h >= from && h <= to);
      expect(await scoreOf(dctx, "h", "x", { period: "hour", from: f, to: t }), `${iso(f)}..${iso(t)}`).toBe(left);
    }
  });
});

describe("the 400-day limits across a leap day", () => {
  const now = Date.UTC(2028, 5, 30, 12);
  const ctx = lib.ctx(now, "r7cal-limits");

  it("a range of exactly 400 days over Feb 29 is read; one ms more is a 400 naming the limit", async () => {
    const from = Date.UTC(2027, 4, 1); // 2027-05-01 + 400 days = 2028-06-04 (2028 is a leap year)
    const to = from + 400 * DAY;
    expect(iso(to)).toBe("2028-06-04T00:00:00.000Z");
    const ok = await ranked(ctx, "lim", "top", 1, { period: "day", from, to });
    expect(rangeOf(ok)?.buckets).toBe(401);
    await expect(ranked(ctx, "lim", "top", 1, { period: "day", from, to: to + 1 })).rejects.toThrow(/400 days/);
    // min/max read every bucket: 401 day buckets are the limit, and reach it
    const max = await ranked(ctx, "lim", "top", 1, { period: "day", from, to, aggregate: "max" });
    expect(rangeOf(max)?.buckets).toBe(401);
  });

  it("an increment exactly 400 days back (across Feb 29) is taken, one ms older is refused, and the write is readable", async () => {
    const at = now - 400 * DAY;
    expect(iso(at)).toBe("2027-05-27T12:00:00.000Z");
    await increment(ctx, "old", [{ member: "m", by: 3, period: "hour", at }]);
    await expect(increment(ctx, "old", [{ member: "m", period: "hour", at: at - 1 }])).rejects.toThrow(/400 days/);
    // the longest read ending now reaches it: from its own hour to now is exactly 400 days
    expect(await scoreOf(ctx, "old", "m", { period: "hour", from: at })).toBe(3);
  });
});

describe("`at` at the far past limits of histograms and trending, across New Year", () => {
  it("histograms: an observation on the day 400 days back is kept and read (2028 has 366 days), one ms before it is refused", async () => {
    const now = Date.UTC(2029, 0, 2, 9); // 400 days back from Jan 2 2029 is Nov 29 2027
    const hctx = lib.ctx(now, "r7cal-hist-old");
    await put(hctx, "h", { bucketWidth: 1 });
    const oldest = Date.UTC(2029, 0, 2) - 400 * DAY;
    expect(iso(oldest)).toBe("2027-11-29T00:00:00.000Z");
    await observe(hctx, "h", [{ value: 7, at: oldest }]);
    const refused = await observe(hctx, "h", [{ value: 8, at: oldest - 1 }]).then(
      () => null,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(ValidationError);
    // a read covers at most 400 days: the oldest day is read up to yesterday, not with today
    const r = await read(hctx, "h", { from: "2027-11-29", to: "2029-01-01", top: 0 });
    expect([r.count, r.min, r.max]).toEqual([1, 7, 7]);
    await expect(read(hctx, "h", { from: "2027-11-29", to: "2029-01-02" })).rejects.toThrow(/400 days/);
  });

  it("trending: an event in the oldest hour the widest window reads is taken, one ms older is refused; both sides of the year", async () => {
    const now = Date.UTC(2028, 0, 1, 1, 30); // 01:30 on New Year's day
    const tctx = lib.ctx(now, "r7cal-trend-old");
    const settings = { retentionHours: 50 };
    const oldestHour = Date.UTC(2028, 0, 1, 1) - 50 * HOUR; // the current hour less the 50 h retention
    expect(iso(oldestHour)).toBe("2027-12-29T23:00:00.000Z");
    await trending.record(tctx, "s", [{ member: "old", count: 2, at: oldestHour }], settings);
    await trending.record(tctx, "s", [{ member: "new", count: 1, at: now }], settings);
    const refused = await trending.record(tctx, "s", [{ member: "x", count: 1, at: oldestHour - 1 }], settings).then(
      () => null,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(ValidationError);
    const widest = await trending.top(tctx, "s", { ...settings, n: 5, windowHours: 50 });
    expect(widest.items.map((i) => [i.member, i.count])).toEqual([
      ["old", 2],
      ["new", 1],
    ]);
    const narrower = await trending.top(tctx, "s", { ...settings, n: 5, windowHours: 49 });
    expect(narrower.items.map((i) => i.member)).toEqual(["new"]);
  });
});

describe("how many periods 400 days touch", () => {
  it("a month read of 399 days from Jan 31 to Mar 5 is 15 buckets (docs/counters.md says at most 14); a week read at most 59", async () => {
    const ctx = lib.ctx(Date.UTC(2028, 5, 1), "r7cal-months");
    const months = await ranked(ctx, "p", "top", 1, { period: "month", from: "2027-01-31", to: "2028-03-05" });
    expect(rangeOf(months)?.buckets).toBe(15);
    // from a Sunday, 400 days reach the Monday 58 weeks on: 59 ISO weeks
    const sunday = Date.UTC(2027, 0, 3);
    expect(new Date(sunday).getUTCDay()).toBe(0);
    const weeks = await ranked(ctx, "p", "top", 1, { period: "week", from: sunday, to: sunday + 400 * DAY });
    expect(rangeOf(weeks)?.buckets).toBe(59);
    // min/max over them read every bucket and are within the 401-bucket limit
    const max = await ranked(ctx, "p", "top", 1, {
      period: "month",
      from: "2027-01-31",
      to: "2028-03-05",
      aggregate: "max",
    });
    expect(rangeOf(max)?.buckets).toBe(15);
  });
});

describe("the forms `at` takes land in the UTC bucket of the instant they name", () => {
  const now = Date.UTC(2027, 0, 1, 0, 3); // three minutes into 2027
  const ctx = lib.ctx(now, "r7cal-at");
  const forms: [unknown, string][] = [
    [Date.UTC(2026, 11, 31, 23, 59, 59, 999), "2026"], // epoch ms
    ["2026-12-31T23:59:59.999Z", "2026"],
    ["2026-12-31T23:59:59.999999999Z", "2026"], // nanoseconds are cut, not rounded into 2027
    ["2027-01-01T05:29:59.999+05:30", "2026"], // Dec 31 23:59:59.999 UTC
    ["2027-01-01T05:30:00+0530", "2027"], // the offset without a colon
    ["2026-12-31T19:00:00-05:00", "2027"], // Jan 1 00:00 UTC
    ["2026-12-31 23:59", "2026"], // a space and no zone: UTC
    ["2027-01-01", "2027"], // a date: its UTC midnight
    ["2026-12-31T24:00:00Z", "2027"], // ISO 8601's end-of-day midnight is the next day's 00:00
  ];

  it("times that name no instant are refused: a leap second, 24:00 past its minute, Feb 29 of 2027, hour 25", async () => {
    for (const at of [
      "2026-12-31T23:59:60Z",
      "2026-12-31T24:00:01Z",
      "2026-12-31T24:30Z",
      "2027-02-29T12:00:00Z",
      "2027-02-29",
      "2026-12-31T25:00Z",
      "2026-12-32",
    ]) {
      const refused = await increment(ctx, "bad", [{ member: "m", period: "day", at }]).then(
        () => null,
        (e: unknown) => e,
      );
      expect(refused, at).toBeInstanceOf(ValidationError);
      expect(
        (refused as ValidationError).details?.map((d) => d.path),
        at,
      ).toEqual(["at"]);
    }
    expect(await scoreOf(ctx, "bad", "m", { period: "day", from: "2026-12-01", to: "2027-01-01" })).toBe(0);
  });

  it("year buckets: each form counts in the year of its UTC instant", async () => {
    for (const [i, [at]] of forms.entries()) {
      await increment(ctx, "forms", [{ member: `f${i}`, period: "month", at: at as string }]);
    }
    const dec = await ranked(ctx, "forms", "top", 20, { period: "month", from: "2026-12-01", to: "2026-12-31" });
    const jan = await ranked(ctx, "forms", "top", 20, { period: "month", from: "2027-01-01", to: "2027-01-01" });
    const inYear = (y: string) =>
      forms
        .map(([, year], i) => (year === y ? `f${i}` : null))
        .filter((x): x is string => x !== null)
        .sort();
    expect(dec.items.map((x) => x.member).sort()).toEqual(inYear("2026"));
    expect(jan.items.map((x) => x.member).sort()).toEqual(inYear("2027"));
  });

  it("histograms: the same instants go in the UTC day, and a read of Dec 31 / Jan 1 splits them there", async () => {
    const hctx = lib.ctx(now, "r7cal-hist-at");
    await put(hctx, "h", { bucketWidth: 1 });
    await observe(
      hctx,
      "h",
      forms.map(([at], i) => ({ value: i, at: at as string })),
    );
    const dec = await read(hctx, "h", { from: "2026-12-31", to: "2026-12-31", top: 0 });
    const jan = await read(hctx, "h", { from: "2027-01-01", to: "2027-01-01", top: 0 });
    const count = (y: string) => forms.filter(([, year]) => year === y).length;
    expect(dec.count).toBe(count("2026"));
    expect(jan.count).toBe(count("2027"));
  });
});
