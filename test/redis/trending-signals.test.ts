/**
 * Rising and history through the library (Edgestats handle and the trending API), with a fake
 * clock: the handle's options, and a trimmed baseline hour reported as maxError, never hidden.
 */
import { describe, expect, it } from "vitest";
import { ValidationError } from "../../src/errors.ts";
import { Edgestats } from "../../src/library/edgestats.ts";
import { HOUR, MINUTE } from "../../src/time.ts";
import * as trending from "../../src/trending/index.ts";
import { libraryTest } from "../helpers/library.ts";

const lib = libraryTest("trend-signals");
const T0 = Date.UTC(2026, 10, 22, 12, 15);

describe("trending signals in the library", () => {
  it("the handle's rising and history", async () => {
    let now = T0;
    const stats = new Edgestats({ redis: lib.redis, prefix: lib.prefix, clock: () => now });
    const s = stats.trending("s");
    await s.record([
      { member: "a", count: 8, at: T0 - HOUR },
      { member: "a", count: 4, at: T0 - 2 * HOUR },
      { member: "a", count: 5 },
      { member: "b", count: 1 },
    ]);
    // baseline over 2 h: a averages 6 an hour, 1.5 by 12:15
    const rising = await s.rising({ n: 5, baseline: "2h" });
    expect(rising.items).toEqual([
      { member: "a", count: 5, baseline: 1.5, ratio: 5 / 1.5, score: 3.5 / Math.sqrt(2.5) },
      { member: "b", count: 1, baseline: 0, ratio: null, score: 1 },
    ]);
    expect(rising).toMatchObject({ baselineHours: 2, elapsed: 0.25, candidates: 2, exact: true });
    expect((await s.rising({ n: 1, baseline: 1 })).items.map((i) => i.member)).toEqual(["a"]);
    const history = await s.history("a", { hours: 2 });
    expect(history.points.map((p) => p.count)).toEqual([4, 8, 5]);
    await expect(s.rising({ baseline: "soon" })).rejects.toThrow(ValidationError);
    await expect(s.rising({ baseline: "51h" })).rejects.toMatchObject({ details: [{ path: "baseline" }] });
    await expect(s.history("a", { hours: 0 })).rejects.toMatchObject({ details: [{ path: "hours" }] });
    now = T0 + HOUR;
    expect((await s.rising()).items).toEqual([]);
  });

  it("subnormal counts: a baseline count never reads as b = 0, and the ratio stays finite", async () => {
    // 5e-324 (the least double) × 0.25 elapsed / 2 h underflows to 0; kept at the least double instead
    const ctx = lib.ctx(T0, "trend-signals-tiny");
    const settings = { retentionHours: 50 };
    await trending.record(ctx, "t", [{ member: "x", count: 5e-324, at: T0 - HOUR }], settings);
    await trending.record(ctx, "t", [{ member: "x", count: 2 }], settings);
    const rising = await trending.rising(ctx, "t", { ...settings, baselineHours: 2 });
    expect(rising.items).toEqual([{ member: "x", count: 2, baseline: 5e-324, ratio: Number.MAX_VALUE, score: 2 }]);
  });

  it("a trimmed baseline hour: the baselines may be low, by at most maxError (scaled like them)", async () => {
    const ctx = lib.ctx(T0, "trend-signals-trim");
    const settings = { retentionHours: 50 };
    await trending.record(
      ctx,
      "t",
      [9, 7, 3, 1].map((count, i) => ({ member: `m${i}`, count, at: T0 - HOUR })),
      settings,
    );
    await trending.record(ctx, "t", [{ member: "m2", count: 4 }], settings);
    await trending.compact({ ...ctx, now: T0 + MINUTE }, { ...settings, keep: 2 });
    // m2 (3 in hour 11) was trimmed: its baseline reads 0, true 3 × 0.25 = 0.75, within maxError
    const rising = await trending.rising(ctx, "t", { ...settings, baselineHours: 1 });
    expect(rising.items).toEqual([{ member: "m2", count: 4, baseline: 0, ratio: null, score: 4 }]);
    expect(rising).toMatchObject({ exact: false, maxError: 0.75 });
    const history = await trending.history(ctx, "t", "m2", { ...settings, hours: 1 });
    expect(history.points.map((p) => [p.count, p.maxError])).toEqual([
      [0, 3],
      [4, 0],
    ]);
    expect(history.exact).toBe(false);
  });
});
