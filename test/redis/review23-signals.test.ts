/**
 * Review 23: rising and history edges review 13 did not pin: the hour edges of a history point,
 * a member absent in some hours, the default baseline under a retention shorter than 24 h, n and
 * baseline limits, ties on equal scores (byte order), a score of exactly 0 left out, and a stream
 * with no history at all.
 */
import { describe, expect, it } from "vitest";
import { ValidationError } from "../../src/errors.ts";
import { HOUR, MINUTE } from "../../src/time.ts";
import * as trending from "../../src/trending/index.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import { stored } from "../../src/webhooks/webhooks.ts";
import { detectRising } from "../../src/webhooks/rising.ts";
import { libraryTest } from "../helpers/library.ts";

const lib = libraryTest("rv23-signals");
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const H12 = Date.UTC(2026, 10, 22, 12);

describe("review 23: rising and history", () => {
  it("history: an event at HH:00:00.000 is in hour HH, one at HH:59:59.999 too; absent hours read 0, exact", async () => {
    const ctx = lib.ctx(T0, "rv23-hist");
    const settings = { retentionHours: 50 };
    await trending.record(
      ctx,
      "s",
      [
        { member: "m", count: 2, at: H12 - 3 * HOUR },
        { member: "m", count: 3, at: H12 - 1 },
        { member: "m", count: 5, at: H12 },
        { member: "other", count: 7, at: H12 - 2 * HOUR },
      ],
      settings,
    );
    const h = await trending.history(ctx, "s", "m", { ...settings, hours: 3 });
    expect(h.points).toEqual([
      { hour: H12 - 3 * HOUR, count: 2, maxError: 0 },
      { hour: H12 - 2 * HOUR, count: 0, maxError: 0 },
      { hour: H12 - HOUR, count: 3, maxError: 0 },
      { hour: H12, count: 5, maxError: 0 },
    ]);
    expect(h).toMatchObject({ stream: "s", member: "m", hours: 3, exact: true, generatedAt: T0 });
    const none = await trending.history(ctx, "s", "nobody", { ...settings, hours: 2 });
    expect(none.points.map((p) => p.count)).toEqual([0, 0, 0]);
    // default: 48 h, or the retention when shorter
    expect((await trending.history(ctx, "s", "m", settings)).points).toHaveLength(49);
    expect((await trending.history(ctx, "s", "m", { retentionHours: 6 })).points).toHaveLength(7);
    await expect(trending.history(ctx, "s", "m", { retentionHours: 6, hours: 7 })).rejects.toThrow(ValidationError);
  });

  it("rising: default baseline is the retention when shorter than 24 h; limits of n and baseline", async () => {
    const ctx = lib.ctx(T0, "rv23-rise-ret");
    const settings = { retentionHours: 6 };
    await trending.record(ctx, "s", [{ member: "a", count: 12, at: H12 - 5 * HOUR }], settings);
    await trending.record(ctx, "s", [{ member: "a", count: 4 }], settings);
    const r = await trending.rising(ctx, "s", settings);
    // 12 over 6 h = 2 an hour, × 0.5 elapsed = 1
    expect(r).toMatchObject({ baselineHours: 6, elapsed: 0.5, candidates: 1, exact: true, maxError: 0 });
    expect(r.items).toEqual([{ member: "a", count: 4, baseline: 1, ratio: 4, score: 3 / Math.sqrt(2) }]);
    await expect(trending.rising(ctx, "s", { ...settings, baselineHours: 7 })).rejects.toThrow(ValidationError);
    await expect(trending.rising(ctx, "s", { ...settings, n: 0 })).rejects.toThrow(ValidationError);
    await expect(trending.rising(ctx, "s", { ...settings, n: 101 })).rejects.toThrow(ValidationError);
    expect((await trending.rising(ctx, "s", { ...settings, n: 100 })).items).toHaveLength(1);
  });

  it("rising: equal scores in byte order, a score of exactly 0 left out, n cuts after the ordering", async () => {
    const ctx = lib.ctx(T0, "rv23-rise-ties");
    const settings = { retentionHours: 50 };
    // steady: 2 an hour over 2 h → baseline 1 at 12:30, count 1 → score 0 (not listed)
    await trending.record(ctx, "s", [{ member: "steady", count: 4, at: H12 - HOUR }], settings);
    await trending.record(
      ctx,
      "s",
      [
        { member: "steady", count: 1 },
        { member: "b", count: 3 },
        { member: "B", count: 3 },
        { member: "é", count: 3 },
        { member: "top", count: 9 },
      ],
      settings,
    );
    const r = await trending.rising(ctx, "s", { ...settings, baselineHours: 2 });
    expect(r.items.map((i) => i.member)).toEqual(["top", "B", "b", "é"]);
    expect(r.candidates).toBe(5);
    const cut = await trending.rising(ctx, "s", { ...settings, baselineHours: 2, n: 2 });
    expect(cut.items.map((i) => i.member)).toEqual(["top", "B"]);
  });

  it("rising on a stream with no history, and at HH:00:00.000 (elapsed is 1 ms, not 0)", async () => {
    const ctx = lib.ctx(T0, "rv23-rise-empty");
    const settings = { retentionHours: 50 };
    const r = await trending.rising(ctx, "nothing", settings);
    expect(r).toMatchObject({ items: [], candidates: 0, exact: true, maxError: 0, baselineHours: 24 });
    const at = { ...ctx, now: H12 + HOUR };
    await trending.record(at, "s", [{ member: "x", count: 1, at: H12 + 10 * MINUTE }], settings);
    await trending.record(at, "s", [{ member: "x", count: 1 }], settings);
    const edge = await trending.rising(at, "s", { ...settings, baselineHours: 1 });
    expect(edge.elapsed).toBe(1 / HOUR);
    expect(edge.items).toHaveLength(1);
    expect(edge.items[0]!.ratio).toBeCloseTo(HOUR, 0);
  });
});

describe("review 23: rising through a cached union equals rising without one", () => {
  const settings = { retentionHours: 50 };
  const seed = async (ctx: ReturnType<typeof lib.ctx>) => {
    const events = [];
    for (let h = 1; h <= 8; h++)
      for (const [member, count] of [
        ["a", h],
        ["b", 2],
        ["c", h % 3],
      ] as const)
        if (count > 0) events.push({ member, count, at: H12 - h * HOUR + 5 * MINUTE });
    await trending.record(ctx, "s", events, settings);
    await trending.record(
      ctx,
      "s",
      [
        { member: "a", count: 9 },
        { member: "b", count: 6 },
        { member: "c", count: 4 },
        { member: "d", count: 2 },
      ],
      settings,
    );
  };

  for (const baselineHours of [24, 48, 5, 6]) {
    it(`baseline ${baselineHours} h: cold, after a top read of the same width, of another width, after a late event, after compaction`, async () => {
      const ctx = lib.ctx(T0, `rv23-union-${baselineHours}`);
      await seed(ctx);
      const cold = await trending.rising(ctx, "s", { ...settings, baselineHours });
      expect(cold.items.length).toBeGreaterThan(0);
      // a top read of the same width leaves the union (split: the previous hour is not compacted)
      await trending.top(ctx, "s", { ...settings, windowHours: baselineHours });
      expect(await trending.rising(ctx, "s", { ...settings, baselineHours })).toEqual(cold);
      // another width in the shared slot (or its own key) must not be read as this one
      await trending.top(ctx, "s", { ...settings, windowHours: baselineHours === 5 ? 7 : 5 });
      expect(await trending.rising(ctx, "s", { ...settings, baselineHours })).toEqual(cold);
      await trending.top(ctx, "s", { ...settings, windowHours: baselineHours });
      // a late event into a baseline hour: the union must not hide it
      await trending.record(ctx, "s", [{ member: "d", count: 3, at: H12 - 3 * HOUR }], settings);
      const late = await trending.rising(ctx, "s", { ...settings, baselineHours });
      const fresh = lib.ctx(T0, `rv23-union-fresh-${baselineHours}`);
      await seed(fresh);
      await trending.record(fresh, "s", [{ member: "d", count: 3, at: H12 - 3 * HOUR }], settings);
      expect(late).toEqual(await trending.rising(fresh, "s", { ...settings, baselineHours }));
      // compaction (nothing trimmed at this size), then a top read builds an unsplit union
      await trending.compact({ ...ctx, now: T0 }, settings);
      await trending.top(ctx, "s", { ...settings, windowHours: baselineHours });
      expect(await trending.rising(ctx, "s", { ...settings, baselineHours })).toEqual(late);
    });
  }
});

describe("review 23: trending.rising webhook, more members above the threshold than one run reports", () => {
  // Fixed (severity medium). docs/webhooks.md promises "the subscribed streams' rising members with
  // score ≥ the webhook's threshold, once per member and hour", but detectRising read the rising
  // list with n = 10 and emitted those only: members told already stay in that top 10 all hour, so
  // an 11th member far above the threshold was never told in that hour (queued 10 of 11 here). Now
  // it reads up to 100 (the read's limit, no command more) and emits a page of 10 a run, the page
  // turning each minute: each member above the threshold is told within ⌈members / 10⌉ minutes.
  it("an 11th member above the threshold is told within the hour", async () => {
    const ctx = lib.ctx(T0, "rv23-rising-hook");
    const settings = { retentionHours: 50 };
    await webhooks.put(
      ctx,
      "r",
      {
        url: "https://example.com/hook",
        events: ["trending.rising"],
        filter: { stream: "s" },
        threshold: 3,
        secret: "rv23-secret-0123456789",
      },
      { allowLocalHttp: true },
    );
    const events = Array.from({ length: 10 }, (_, i) => ({ member: `big${i}`, count: 100 }));
    events.push({ member: "eleventh", count: 50 });
    await trending.record(ctx, "s", events, settings);
    const hooks = await stored(ctx);
    let queued = 0;
    let repeated = 0;
    for (let minute = 0; minute < 5; minute++) {
      const run = await detectRising({ ...ctx, now: T0 + minute * MINUTE }, hooks, settings.retentionHours);
      queued += run.queued;
      repeated += run.repeated;
    }
    expect(queued).toBe(11);
    expect(repeated).toBeGreaterThan(0);
  });
});

describe("review 23: a stream younger than the baseline", () => {
  it("its empty baseline hours count as 0 (docs/trending.md): a steady member reads as rising at 24 h, not at 1 h", async () => {
    const ctx = lib.ctx(T0, "rv23-young");
    const settings = { retentionHours: 50 };
    // one finished hour of history at 100 an hour, and 50 by 12:30: steady
    await trending.record(ctx, "s", [{ member: "m", count: 100, at: H12 - 30 * MINUTE }], settings);
    await trending.record(ctx, "s", [{ member: "m", count: 50 }], settings);
    const day = await trending.rising(ctx, "s", settings);
    expect(day.items).toEqual([
      { member: "m", count: 50, baseline: 50 / 24, ratio: 24, score: (50 - 50 / 24) / Math.sqrt(50 / 24 + 1) },
    ]);
    expect((await trending.rising(ctx, "s", { ...settings, baselineHours: 1 })).items).toEqual([]);
  });
});
