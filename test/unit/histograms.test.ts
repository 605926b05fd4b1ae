import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ValidationError } from "../../src/errors.ts";
import {
  bucketBound,
  bucketIndex,
  exactQuantile,
  quantile,
  topBuckets,
  type Bucket,
} from "../../src/histograms/buckets.ts";
import { checkSettings, groupObservations, parseDay, resolveRange } from "../../src/histograms/validate.ts";
import { liveDays } from "../../src/histograms/keys.ts";

const NOW = Date.UTC(2026, 10, 22, 12, 30);

/** Buckets of raw values the way the service stores them. */
function bucketsOf(values: number[], width: number): Bucket[] {
  const counts = new Map<number, number>();
  for (const v of values) {
    const i = bucketIndex(v, width);
    counts.set(i, (counts.get(i) ?? 0) + 1);
  }
  return [...counts]
    .sort((a, b) => a[0] - b[0])
    .map(([i, count]) => ({ lower: bucketBound(i, width), upper: bucketBound(i + 1, width), count }));
}

const widths = fc.oneof(
  fc.constantFrom(0.1, 0.25, 0.3, 1, 2.5, 7, 10, 1000),
  fc.double({ min: 1e-3, max: 1e4, noNaN: true }),
);

describe("bucket rule", () => {
  it("puts every value in [lower, upper) of its bucket, for fractional and negative values too", () => {
    fc.assert(
      fc.property(widths, fc.double({ min: -1e6, max: 1e6, noNaN: true }), (width, value) => {
        const i = bucketIndex(value, width);
        expect(bucketBound(i, width)).toBeLessThanOrEqual(value);
        expect(value).toBeLessThan(bucketBound(i + 1, width));
      }),
      { numRuns: 2000 },
    );
  });

  it("reports clean decimal bounds for decimal widths", () => {
    expect(bucketIndex(0.3, 0.1)).toBe(3);
    expect(bucketBound(3, 0.1)).toBe(0.3);
    expect(bucketIndex(-0.1, 0.1)).toBe(-1);
    expect(bucketIndex(-0.05, 0.1)).toBe(-1);
    expect(bucketIndex(0, 0.1)).toBe(0);
    // -0 is bucket 0, not -0 (Lua and JSON have no negative zero index)
    expect(Object.is(bucketIndex(-0, 0.001), 0)).toBe(true);
  });
});

describe("quantile estimates", () => {
  it("stay within one bucket width of the nearest-rank quantile of the raw values", () => {
    fc.assert(
      fc.property(
        widths,
        fc.array(fc.double({ min: -1e5, max: 1e5, noNaN: true }), { minLength: 1, maxLength: 300 }),
        fc.constantFrom(0.01, 0.25, 0.5, 0.9, 0.99, 1),
        (width, values, q) => {
          const observed = { min: Math.min(...values), max: Math.max(...values) };
          const estimate = quantile(bucketsOf(values, width), q, observed)!;
          const exact = exactQuantile(values, q)!;
          expect(Math.abs(estimate - exact)).toBeLessThanOrEqual(width * (1 + 1e-9));
          expect(estimate).toBeGreaterThanOrEqual(observed.min);
          expect(estimate).toBeLessThanOrEqual(observed.max);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("interpolates inside a bucket and is null without data", () => {
    const buckets = [{ lower: 0, upper: 10, count: 10 }];
    expect(quantile(buckets, 0.5)).toBe(5);
    expect(quantile(buckets, 0.9)).toBe(9);
    expect(quantile([], 0.5)).toBeNull();
    expect(exactQuantile([], 0.5)).toBeNull();
  });

  it("lists the fullest buckets first, lower bucket first on ties", () => {
    const b = (lower: number, count: number) => ({ lower, upper: lower + 1, count });
    expect(topBuckets([b(1, 2), b(2, 5), b(3, 2), b(4, 1)], 3)).toEqual([b(2, 5), b(1, 2), b(3, 2)]);
  });
});

describe("input checks", () => {
  it("parses only real calendar dates", () => {
    expect(parseDay("2026-11-22")).toBe(Date.UTC(2026, 10, 22));
    expect(parseDay("2028-02-29")).toBe(Date.UTC(2028, 1, 29));
    for (const bad of ["2026-02-29", "2026-13-01", "2026-11-31", "20261122", "2026-1-2", "abc", ""])
      expect(parseDay(bad), bad).toBeNull();
  });

  it("resolves ranges: defaults to today, refuses reversed ranges and more than 400 days", () => {
    expect(resolveRange(NOW, {})).toEqual({ from: Date.UTC(2026, 10, 22), to: Date.UTC(2026, 10, 22) });
    expect(resolveRange(NOW, { to: "2026-11-01" })).toEqual({ from: Date.UTC(2026, 10, 1), to: Date.UTC(2026, 10, 1) });
    expect(resolveRange(NOW, { from: "2025-10-19", to: "2026-11-22" }).from).toBe(Date.UTC(2025, 9, 19));
    expect(() => resolveRange(NOW, { from: "2025-10-18", to: "2026-11-22" })).toThrow(ValidationError);
    expect(() => resolveRange(NOW, { from: "2026-11-23", to: "2026-11-22" })).toThrow(/after 'to'/);
    expect(() => resolveRange(NOW, { from: "x" })).toThrow(ValidationError);
  });

  it("groups a batch by UTC day and refuses it whole for one bad item", () => {
    const groups = groupObservations(NOW, [
      { value: 1 },
      { value: 2, at: "2026-11-21T23:59:59.999Z" },
      { value: -0, at: NOW - 1 },
    ]);
    expect(groups).toEqual([
      { day: Date.UTC(2026, 10, 22), values: [1, 0] },
      { day: Date.UTC(2026, 10, 21), values: [2] },
    ]);
    for (const bad of [
      Number.NaN,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      1e16,
      "1" as unknown as number,
    ]) {
      expect(() => groupObservations(NOW, [{ value: 1 }, { value: bad }]), String(bad)).toThrow(ValidationError);
    }
    expect(() => groupObservations(NOW, [])).toThrow(ValidationError);
    expect(() => groupObservations(NOW, [{ value: 1, at: NOW + 25 * 3600_000 }])).toThrow(/future/);
  });

  it("checks settings and fills defaults", () => {
    expect(checkSettings({ bucketWidth: 0.5 })).toEqual({ bucketWidth: 0.5, unit: null, retentionDays: 400 });
    for (const bad of [
      { bucketWidth: 0 },
      { bucketWidth: -1 },
      { bucketWidth: Number.NaN },
      { bucketWidth: 1, retentionDays: 401 },
      { bucketWidth: 1, unit: "a\nb" },
    ]) {
      expect(() => checkSettings(bad), JSON.stringify(bad)).toThrow(ValidationError);
    }
  });

  it("covers every day a key may still live on in deletes", () => {
    const days = liveDays(NOW);
    expect(days[0]).toBe(Date.UTC(2026, 10, 22) - 401 * 86_400_000);
    expect(days.at(-1)).toBe(Date.UTC(2026, 10, 24));
  });
});
