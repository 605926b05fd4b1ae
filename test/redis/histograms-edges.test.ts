/**
 * Issue 15: the end edge month of a range ending in the past is read as its month rollup less the
 * days after the range (`ZUNIONSTORE … WEIGHTS 1 … -1 …`), when that is fewer entries to merge
 * than its days: the answer is byte for byte the days' (the same data read with the edge month
 * before `rollupsSince`, which reads its days one by one), piped or in one script. The days after
 * the range bring neither their sums nor their buckets (left at 0, dropped), and the read cap
 * counts the buckets after those are dropped.
 */
import { describe, expect, it } from "vitest";
import { observe, put as putHistogram, read as readHistogram } from "../../src/histograms/index.ts";
import { histogramKeys } from "../../src/histograms/keys.ts";
import { MAX_READ_BUCKETS } from "../../src/histograms/validate.ts";
import { DAY } from "../../src/time.ts";
import { histogramReadTest, range, upTo, withoutPipeline } from "../helpers/histograms.ts";
import { command } from "../helpers/upstash-rest.ts";

const NOW = Date.UTC(2026, 10, 22, 12, 30);
const shared = histogramReadTest("hist-edges", NOW);
const { lib, counted } = shared;
const { target } = lib;
const ctx = lib.ctx(NOW);
// the library's own client without a pipeline: the one script that loads the union itself
const alone = withoutPipeline(counted);

/** A read through the counting client: its answer (JSON) or refusal, and the commands it cost. */
async function measured(name: string, from: string, to: string) {
  const m = await shared.measured(ctx, name, from, to);
  return { result: m.ok ? JSON.stringify(m.r) : m.message, commands: m.commands, byCommand: m.byCommand };
}

const load = (name: string, days: [number, number[]][], oldSum = false) => shared.load(ctx, name, days, oldSum);

/** The same read in one script (no pipeline). */
const oneScript = (name: string, from: string, to: string) =>
  readHistogram({ ...ctx, redis: alone }, name, { from, to }).then(
    (r) => JSON.stringify(r),
    (e: unknown) => (e as Error).message,
  );

/** Makes the month of `monthMs` and later the histogram's first with rollups: its days are read one by one. */
const rollupsFrom = (name: string, monthMs: number) =>
  command(target, "HSET", histogramKeys.meta(ctx.prefix, name), "rollupsSince", monthMs);

describe("the end edge month of a range ending in the past is its rollup less the days after it", () => {
  // 28 Sep – 27 Oct 2026: 3 days of September, 27 of October; 4 October days after the range
  const FROM = "2026-09-28";
  const TO = "2026-10-27";
  const OCT = Date.UTC(2026, 9, 1);
  const NOV = Date.UTC(2026, 10, 1);

  it("answers byte for byte what its days answer, piped and in one script; the days after bring no sum nor bucket", async () => {
    // fractional values (the sums round), 3,000 buckets in 4 patterns a day; the days after the
    // range hold buckets of their own (left at 0 by the subtraction) and sums far larger than any inside
    const days = range(Date.UTC(2026, 8, 28), Date.UTC(2026, 9, 31)).map((d, i): [number, number[]] =>
      d > Date.UTC(2026, 9, 27)
        ? [d, [...upTo(50, 1_000_000 + i * 50), ...upTo(20, (i % 4) * 3000)].map((v) => v + 0.3)]
        : [d, upTo(3000, (i % 4) * 3000).map((v) => v + 0.1 * (i % 7))],
    );
    await load("edge", days);
    const edge = await measured("edge", FROM, TO);
    // EVALSHA, HMGET, a ZMSCORE of each month's sums, the October rollup's ZCARD (12,000 buckets,
    // 200 of the days after and 31 sums; with 4 days after at most 5,001 each: 32,235 entries) and
    // 11 of its days' (3,000 each: 33,000 pass it; the days may hold 27 × 5,001, over half the
    // entries limit, and extrapolated 81,000, over twice the rollup's cost), ZUNIONSTORE with
    // WEIGHTS, the extremes, and the ZPOPMIN after the script (no count near the cap: no
    // ZREMRANGEBYSCORE; the zero buckets and the days after the range's sums are left out by read)
    expect(edge.byCommand.zcard).toBe(12);
    expect(edge.commands).toBe(19);
    expect(edge.byCommand.zunionstore).toBe(1);
    expect(edge.byCommand.zremrangebyscore ?? 0).toBe(0);
    expect(await oneScript("edge", FROM, TO)).toBe(edge.result);
    // the model: the raw days of the range
    const inRange = days.filter(([d]) => d <= Date.UTC(2026, 9, 27)).flatMap(([, v]) => v);
    const answer = JSON.parse(edge.result) as { count: number; max: number; buckets: { lower: number }[] };
    expect(answer.count).toBe(inRange.length);
    expect(answer.max).toBe(Math.max(...inRange));
    expect(answer.buckets.length).toBe(12_000);
    expect(answer.buckets.every((b) => b.lower < 1_000_000)).toBe(true);
    // the same data read day by day (October before the histogram's rollups): the same bytes
    await rollupsFrom("edge", NOV);
    const byDays = await measured("edge", FROM, TO);
    expect(byDays.byCommand.zcard ?? 0).toBe(0);
    expect(byDays.commands).toBe(7);
    expect(byDays.result).toBe(edge.result);
    expect(await oneScript("edge", FROM, TO)).toBe(edge.result);
  });

  it(`the read cap counts the buckets after the zero ones are dropped: ${MAX_READ_BUCKETS} is answered, one more refused`, async () => {
    // 30 Sep – 26 Oct: 26 October days of 5,000 buckets in 4 patterns (the cap), 5 days after the
    // range with 1,000 buckets of their own (the rollup holds 21,000 and the sums)
    const days = (extra: number) =>
      range(Date.UTC(2026, 8, 30), Date.UTC(2026, 9, 31)).map((d, i): [number, number[]] =>
        d > Date.UTC(2026, 9, 26)
          ? [d, upTo(200, 100_000 + i * 200)]
          : [d, [...upTo(5000, (i % 4) * 5000), ...(i === 5 ? upTo(extra, 50_000) : [])]],
      );
    for (const [name, extra] of [
      ["cap", 0],
      ["over", 1],
    ] as const) {
      await load(name, days(extra));
      const edge = await measured(name, "2026-09-30", "2026-10-26");
      // EVALSHA, HMGET, 2 ZMSCORE, the rollup's ZCARD (21,000 buckets and 32 sums; with 5 days
      // after at most 5,001 each: 46,037 entries) and 10 of its days' (5,000 each: 50,000 pass it),
      // ZUNIONSTORE, ZREMRANGEBYSCORE (the count passed the cap before the zeros were dropped), the
      // extremes, the ZPOPMIN; refused: the ZMSCORE of the sums the union holds (still over the cap)
      // and the scratch key's UNLINK. The bucket at 50,000 spreads the range's extremes past what a
      // probe holds (cap + a day), so the union may hold more buckets than that: the extremes come
      // before it, days' ZCARDs (a probe's worth) come before the end edge's (which reuses them) and
      // 3 ZINTERCARDs find that those days share their buckets (no probe): 4 more than without
      expect(edge.byCommand.zcard).toBe(11);
      expect(edge.byCommand.zremrangebyscore).toBe(1);
      expect(edge.byCommand.zintercard ?? 0).toBe(extra === 0 ? 0 : 3);
      expect(edge.commands).toBe(extra === 0 ? 19 : 24);
      if (extra === 0)
        expect((JSON.parse(edge.result) as { buckets: unknown[] }).buckets.length).toBe(MAX_READ_BUCKETS);
      else expect(edge.result).toContain(`the range holds ${MAX_READ_BUCKETS + 1} distinct buckets`);
      expect(await oneScript(name, "2026-09-30", "2026-10-26")).toBe(edge.result);
      await rollupsFrom(name, NOV);
      const byDays = await measured(name, "2026-09-30", "2026-10-26");
      // over: the spread extremes size 7 days first (5,000 each, until a block's 30,000 and a day)
      expect(byDays.byCommand.zcard ?? 0).toBe(extra === 0 ? 0 : 7);
      expect(byDays.result).toBe(edge.result);
    }
  });

  it("an end month before rollupsSince, or holding the old 'sum', or leaving out as many days as it covers, is read day by day", async () => {
    const days = range(Date.UTC(2026, 8, 28), Date.UTC(2026, 9, 31)).map((d, i): [number, number[]] => [
      d,
      upTo(30, i * 10).map((v) => v + 0.25),
    ]);
    await load("before", days);
    // with rollups: the rollup's ZCARD alone (27 days of at most its 361 entries cannot pass the
    // cap, so they are not sized), and the days are read (no ZUNIONSTORE WEIGHTS: same answer)
    const small = await measured("before", FROM, TO);
    expect(small.byCommand.zcard).toBe(1);
    expect(small.commands).toBe(8);
    await rollupsFrom("before", OCT + DAY);
    const before = await measured("before", FROM, TO);
    expect(before.byCommand.zcard ?? 0).toBe(0);
    expect(before.commands).toBe(7);
    expect(before.result).toBe(small.result);
    await load("old-sum", days, true);
    const old = await measured("old-sum", FROM, TO);
    expect(old.byCommand.zcard ?? 0).toBe(0);
    expect(old.commands).toBe(7);
    // 15 October days in the range, 16 after: the rollup cannot be fewer entries (no ZCARD asked)
    const half = await measured("old-sum", "2026-09-20", "2026-10-15");
    expect(half.byCommand.zcard ?? 0).toBe(0);
  });

  it("days whose rollup would save little are read one by one after one ZCARD of a day", async () => {
    // 1,000 buckets in 4 patterns a day: the days may hold 27 × 4,031 entries (over half the
    // entries limit), but the first day's 1,000, extrapolated to 27,000, is under twice the rollup's
    // cost (4,031 and 4 days after at most as large: 20,155), so it stops there (it spent 22
    // ZCARDs to save ~7,000 entries before the rule)
    const days = range(Date.UTC(2026, 8, 28), Date.UTC(2026, 9, 31)).map((d, i): [number, number[]] => [
      d,
      upTo(1000, (i % 4) * 1000),
    ]);
    await load("little", days);
    const edge = await measured("little", FROM, TO);
    expect(edge.byCommand.zcard).toBe(2);
    expect(edge.commands).toBe(9);
    await rollupsFrom("little", NOV);
    const byDays = await measured("little", FROM, TO);
    expect(byDays.result).toBe(edge.result);
  });

  it("late observations (past days observed after later ones) read the same either way", async () => {
    await putHistogram(ctx, "late", { bucketWidth: 0.5, retentionDays: 400 });
    const at = (iso: string) => Date.parse(`${iso}T10:00:00Z`);
    // 4,000 values on every October day (the same buckets): enough for the rollup to be worth it
    for (const day of range(OCT, Date.UTC(2026, 9, 31)))
      for (let k = 0; k < 4; k++)
        await observe(
          ctx,
          "late",
          upTo(1000, k * 1000).map((i) => ({ value: 100 + i / 2, at: day + 3600_000 })),
        );
    for (const [day, values] of [
      ["2026-10-30", [7.25, 9.5, 1e6 + 0.1]],
      ["2026-10-25", [0.1, 0.2, 0.3]],
      ["2026-10-03", [1.7, -2.35, 3.3]],
      ["2026-09-29", [5.55, 6.65]],
      ["2026-10-28", [-1e6, 2.2]],
      ["2026-10-25", [0.7, 11.9]],
      ["2026-10-27", [4.4]],
    ] as const)
      await observe(
        ctx,
        "late",
        values.map((value) => ({ value, at: at(day) })),
      );
    const edge = await measured("late", FROM, TO);
    expect(edge.byCommand.zcard).toBeGreaterThan(1);
    expect(edge.byCommand.zunionstore).toBe(1);
    expect(await oneScript("late", FROM, TO)).toBe(edge.result);
    const answer = JSON.parse(edge.result) as { count: number; min: number; max: number };
    expect([answer.count, answer.min, answer.max]).toEqual([108_011, -2.35, 2099.5]);
    await rollupsFrom("late", NOV);
    const byDays = await measured("late", FROM, TO);
    expect(byDays.byCommand.zcard ?? 0).toBe(0);
    expect(byDays.result).toBe(edge.result);
  });
});
