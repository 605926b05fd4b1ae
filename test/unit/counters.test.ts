import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  allNumeric,
  compareCodePoints,
  compareDecimals,
  parseBound,
  parseBounds,
  parseBucketTime,
  periodRange,
  sortByMember,
} from "../../src/counters/select.ts";
import {
  deletePlan,
  levelEnd,
  levelLabel,
  levelStart,
  rollupsOf,
  type DeleteStep,
} from "../../src/counters/calendar.ts";
import { deleteCall, deleteOutside } from "../../src/counters/delete-layout.ts";
import { ValidationError } from "../../src/errors.ts";
import { DAY, HOUR, periodStart } from "../../src/time.ts";

const now = Date.UTC(2026, 10, 22, 12, 30);

describe("score bounds", () => {
  it("parses numbers, exclusive bounds and infinities into Redis' syntax", () => {
    expect(parseBound("10", "min")).toEqual({ redis: "10", value: 10, exclusive: false });
    expect(parseBound("(10.5", "min")).toEqual({ redis: "(10.5", value: 10.5, exclusive: true });
    expect(parseBound("-inf", "min").redis).toBe("-inf");
    expect(parseBound("+inf", "max").redis).toBe("+inf");
    expect(parseBound(" inf", "max").redis).toBe("+inf"); // '+' decoded as a space
    expect(parseBound("1e3", "max").value).toBe(1000);
  });

  it("refuses text, NaN, overflow and min above max", () => {
    for (const bad of ["abc", "NaN", "1e999", "", "((1", "0x10", "1,5"])
      expect(() => parseBound(bad, "min")).toThrow(ValidationError);
    expect(() => parseBounds("5", "1")).toThrow(/above/);
    expect(parseBounds("(5", "5").min.exclusive).toBe(true);
  });
});

describe("period ranges", () => {
  it("defaults to the current period and lists every bucket from..to inclusive", () => {
    expect(periodRange({ period: "day" }, now)).toMatchObject({ starts: [Date.UTC(2026, 10, 22)], finished: false });
    const week = periodRange({ period: "day", from: "2026-11-16", to: "2026-11-22T23:00:00Z" }, now);
    expect(week?.starts).toHaveLength(7);
    expect(week?.finished).toBe(false);
    expect(periodRange({ period: "week", from: "2026-11-01", to: "2026-11-15" }, now)?.finished).toBe(true);
    expect(periodRange({}, now)).toBeUndefined();
  });

  it("refuses from after to, over 400 days, and from/to without a period", () => {
    expect(() => periodRange({ period: "day", from: "2026-11-10", to: "2026-11-01" }, now)).toThrow(/after/);
    expect(() => periodRange({ period: "month", from: "2025-01-01", to: "2026-02-06" }, now)).toThrow(/400 days/);
    expect(periodRange({ period: "month", from: "2025-10-18", to: "2026-11-22" }, now)?.starts).toHaveLength(14);
    expect(() => periodRange({ to: "2026-11-01" }, now)).toThrow(/needs 'period'/);
  });
});

describe("member order", () => {
  it("is numeric only when every member is a number", () => {
    expect(allNumeric(["20", "160", "-1.5", "1e3"])).toBe(true);
    expect(allNumeric(["20", "x"])).toBe(false);
    expect(
      sortByMember([{ member: "160" }, { member: "20" }, { member: "40" }], "asc").items.map((i) => i.member),
    ).toEqual(["20", "40", "160"]);
    expect(
      sortByMember([{ member: "160" }, { member: "20" }, { member: "b" }], "asc").items.map((i) => i.member),
    ).toEqual(["160", "20", "b"]);
  });

  it("orders text by code point, as Redis orders UTF-8 bytes", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 8 }), fc.string({ unit: "binary", maxLength: 8 }), (a, b) => {
        const bytes = (s: string) => [...new TextEncoder().encode(s)];
        const x = bytes(a);
        const y = bytes(b);
        let expected = x.length - y.length;
        for (let i = 0; i < Math.min(x.length, y.length); i++)
          if (x[i] !== y[i]) {
            expected = (x[i] ?? 0) - (y[i] ?? 0);
            break;
          }
        expect(Math.sign(compareCodePoints(a, b))).toBe(Math.sign(expected));
      }),
      { numRuns: 300 },
    );
  });

  it("sorts any numeric members the same way as Number order", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: -1e6, max: 1e6 }), { maxLength: 30 }), (values) => {
        const sorted = sortByMember(
          values.map((v) => ({ member: String(v) })),
          "desc",
        ).items.map((i) => Number(i.member));
        expect(sorted).toEqual([...values].sort((a, b) => b - a));
      }),
      { numRuns: 100 },
    );
  });

  // review 10: members whose doubles tie (past 17 significant digits, or underflowing to 0) are
  // ordered by their exact decimal value. The reference: both as integers m·10^e (BigInt), scaled
  // to the smaller exponent. Equal values keep the text order ("-0.0" before "0" ascending), reversed by desc.
  it("compares decimal text exactly, written in any form, against BigInt arithmetic", () => {
    const spelled = fc.record({
      m: fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }),
      e: fc.integer({ min: -420, max: 20 }),
      form: fc.constantFrom("exp", "point", "padded"),
    });
    const text = ({ m, e, form }: { m: bigint; e: number; form: string }) => {
      const sign = m < 0n ? "-" : "";
      const digits = (m < 0n ? -m : m).toString();
      if (form === "exp") return `${sign}${digits}e${e}`;
      // the same value with a decimal point: digits shifted by k places, exponent made up
      const k = Math.min(digits.length, 3);
      const point = `${digits.slice(0, digits.length - k) || "0"}.${digits.slice(digits.length - k)}`;
      return form === "point" ? `${sign}${point}E+${e + k}`.replace("E+-", "E-") : `${sign}00${point}000e${e + k}`;
    };
    const exact = (a: { m: bigint; e: number }, b: { m: bigint; e: number }) => {
      const e = Math.min(a.e, b.e);
      const x = a.m * 10n ** BigInt(a.e - e);
      const y = b.m * 10n ** BigInt(b.e - e);
      return x === y ? 0 : x < y ? -1 : 1;
    };
    fc.assert(
      fc.property(spelled, spelled, (a, b) => {
        expect(Math.sign(compareDecimals(text(a), text(b)))).toBe(exact(a, b));
        expect(compareDecimals(text(a), text({ ...a, form: "exp" }))).toBe(0);
      }),
      { numRuns: 500 },
    );
    expect(
      sortByMember(
        ["100000000000000001", "99999999999999999", "1e-400", "9e-401", "-1", "0", "-0.0"].map((member) => ({
          member,
        })),
        "desc",
      ).items.map((i) => i.member),
    ).toEqual(["100000000000000001", "99999999999999999", "1e-400", "9e-401", "0", "-0.0", "-1"]);
  });
});

describe("bucket times", () => {
  it("takes epoch ms and ISO-8601 naming real dates, offsets included", () => {
    expect(parseBucketTime(now)).toBe(now);
    expect(parseBucketTime("2026-11-22")).toBe(Date.UTC(2026, 10, 22));
    expect(parseBucketTime("2024-02-29T10:00:00Z")).toBe(Date.UTC(2024, 1, 29, 10));
    // the literal date is real; the instant falls on the day before in UTC
    expect(parseBucketTime("2026-03-01T00:30:00+01:00")).toBe(Date.UTC(2026, 1, 28, 23, 30));
  });

  it("refuses dates that do not exist, which Date.parse would roll into the next month", () => {
    for (const bad of ["2026-02-30", "2026-02-29T10:00:00Z", "2026-04-31", "2026-13-01", "2026-00-10"])
      expect(parseBucketTime(bad), bad).toBeNull();
  });

  it("refuses times outside four-digit years, whose labels would not be dates", () => {
    expect(parseBucketTime(Date.UTC(999, 11, 31))).toBeNull();
    expect(parseBucketTime(Date.UTC(10000, 0, 1))).toBeNull();
    expect(parseBucketTime(-8.64e15)).toBeNull();
    expect(parseBucketTime(Date.UTC(9999, 11, 31, 23, 59))).toBe(Date.UTC(9999, 11, 31, 23, 59));
  });
});

describe("calendar levels and delete plans (calendar.ts)", () => {
  it("quarter-days start at 00, 06, 12 and 18 UTC and are labelled by their first hour", () => {
    const t = Date.UTC(2026, 10, 22, 13, 45);
    expect(levelStart("quarter", t)).toBe(Date.UTC(2026, 10, 22, 12));
    expect(levelEnd("quarter", t)).toBe(Date.UTC(2026, 10, 22, 18));
    expect(levelLabel("quarter", t)).toBe("20261122T12");
    expect(levelLabel("quarter", Date.UTC(2026, 10, 22, 23, 59))).toBe("20261122T18");
    expect(levelLabel("day", t)).toBe("20261122");
    expect(rollupsOf("hour")).toEqual(["quarter", "day", "month"]);
    expect(rollupsOf("day")).toEqual(["month"]);
  });

  it("links every step to the rollups above it, and without quarters as the plan before them", () => {
    const hour = fc
      .integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2026, 11, 1) })
      .map((t) => periodStart("hour", t));
    fc.assert(
      fc.property(hour, fc.integer({ min: 1, max: 1440 }), (from, hours) => {
        const end = from + hours * HOUR;
        const steps = deletePlan("hour", from, end);
        const contains = (outer: DeleteStep, inner: DeleteStep) =>
          outer.level !== "bucket" && levelStart(outer.level, inner.start) === outer.start;
        const above: Record<string, string> = { bucket: "quarter", quarter: "day", day: "month" };
        const aboveOld: Record<string, string> = { bucket: "day", day: "month" };
        steps.forEach((s) => {
          // quarters are skipped in a life without them; everything else keeps a link
          expect(s.older === null).toBe(s.level === "quarter");
          for (const [link, levels] of [
            [{ parent: s.parent, owner: s.owner }, above],
            ...(s.older ? [[s.older, aboveOld] as const] : []),
          ] as const) {
            const owner = steps[link.owner - 1];
            if (levels[s.level]) {
              expect(owner?.level).toBe(levels[s.level]);
              expect(contains(owner!, s)).toBe(true);
              // the removed score goes to the owner exactly when the owner is partly in range
              expect(link.parent).toBe(owner!.kind === "p" ? link.owner : 0);
            } else expect(link.owner).toBe(0);
          }
        });
        expect(steps.filter((s) => s.level === "bucket")).toHaveLength(hours);
      }),
      { numRuns: 25 },
    );
  });
});

describe("the parts outside a member delete's partial rollups (delete-layout.ts, deleteOutside)", () => {
  /** A rollup's children: a quarter's 6 hours, a day's 4 quarters, a month's days. */
  const childrenOf = (key: string) =>
    key.includes(":by-quarter:")
      ? 6
      : key.includes(":by-day:")
        ? 4
        : new Date(Date.UTC(+key.slice(-6, -2), +key.slice(-2), 0)).getUTCDate();
  it("name, per partial rollup, exactly its children outside the range, after the plan's keys", () => {
    const range = fc.tuple(
      fc.constantFrom("hour" as const, "day" as const),
      fc.integer({ min: Date.UTC(2025, 0, 1), max: Date.UTC(2026, 11, 1) }),
      fc.integer({ min: 1, max: 1440 }),
    );
    fc.assert(
      fc.property(range, ([period, t, n]) => {
        const unit = period === "hour" ? HOUR : DAY;
        const from = periodStart(period, t);
        const end = from + n * unit;
        const { parts, layout } = deleteCall("p", "c", period, from, end);
        const { keys, outs } = deleteOutside("p", "c", period, from, end, parts, layout.buckets);
        // the parts outside are none of the plan's keys, and each named once
        expect(keys.filter((k) => parts.includes(k))).toEqual([]);
        expect(new Set(keys).size).toBe(keys.length);
        const named: number[] = [];
        for (let i = 0; i < outs.length; i += 4) {
          const [at, first, last, rollups] = outs.slice(i, i + 4) as [number, number, number, number];
          named.push(at);
          const j = at - layout.buckets - 1;
          expect(layout.kinds[j]).toBe("p");
          expect(first).toBeGreaterThan(parts.length);
          expect(last).toBeLessThanOrEqual(parts.length + keys.length);
          // in range and outside, its children are all of them: 6 hours, 4 quarters, a month's days
          const key = parts[at - 1]!;
          const inRange = layout.lasts[j]! - layout.firsts[j]! + 1;
          expect(inRange + last - first + 1, key).toBe(childrenOf(key));
          expect(rollups).toBe(key.includes(":by-quarter:") || period === "day" ? 0 : 1);
        }
        // every partial rollup with a child outside the range is named (a day whose quarters all
        // overlap the range has none: its partial quarter holds what lies outside)
        const partial = layout.kinds.flatMap((k, j) =>
          k === "p" && childrenOf(parts[layout.buckets + j]!) > layout.lasts[j]! - layout.firsts[j]! + 1
            ? [layout.buckets + j + 1]
            : [],
        );
        expect(named.sort((a, b) => a - b)).toEqual(partial);
      }),
      { numRuns: 25 },
    );
  });
});
