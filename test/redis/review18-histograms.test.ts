/**
 * Review 18: histograms through the library on the local Upstash server (real redis-server),
 * differential against an exact model kept here: random observations (duplicates, negatives, 0 and
 * -0, values near ±1e15, values exactly on bucket bounds) over days spanning months, compared on
 * count/min/max/sum (exact for integers), the buckets (rounded-bound rule of docs/histograms.md)
 * and p50/p90/p99 within one bucketWidth of the nearest-rank percentile; NaN/±Infinity refused
 * (nothing written); a 400-day read within issue 15's 60 commands.
 */
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../dev/prng.ts";
import { ValidationError } from "../../src/errors.ts";
import { exactQuantile } from "../../src/histograms/buckets.ts";
import { observe, put, read } from "../../src/histograms/index.ts";
import { DAY } from "../../src/time.ts";
import { histogramReadTest, modelBucket, r15 } from "../helpers/histograms.ts";
import { keysUnder } from "../helpers/upstash-rest.ts";

const NOW = Date.UTC(2027, 2, 3, 12);
const { lib, measured } = histogramReadTest("r18hist", NOW);
const ctx = lib.ctx(NOW);

describe("review 18: histograms against an exact model", () => {
  for (const width of [1, 0.1, 0.25, 7]) {
    it(`width ${width}: random days across months, duplicates, bounds, 0 and -0`, async () => {
      const name = `diff-${String(width).replace(".", "_")}`;
      await put(ctx, name, { bucketWidth: width, retentionDays: 400 });
      const rand = mulberry32(Math.round(width * 1000) + 18);
      const all: { v: number; day: number }[] = [];
      const days = [0, 1, 2, 27, 28, 29, 31, 45, 60, 89];
      for (const back of days) {
        const values: number[] = [];
        for (let k = 0; k < 40; k++) {
          const pick = rand();
          const v =
            pick < 0.2
              ? r15(Math.floor(rand() * 200 - 100) * width) // exactly on a bound
              : pick < 0.3
                ? (values[0] ?? 3) // duplicate
                : pick < 0.35
                  ? k % 2
                    ? 0
                    : -0
                  : Math.round((rand() * 400 - 200) * 1000) / 1000;
          values.push(v);
        }
        const at = NOW - back * DAY;
        await observe(
          ctx,
          name,
          values.map((value) => ({ value, at })),
        );
        for (const v of values) all.push({ v, day: at - (at % DAY) });
      }
      const from = new Date(NOW - 89 * DAY).toISOString().slice(0, 10);
      const to = new Date(NOW).toISOString().slice(0, 10);
      const got = await read(ctx, name, { from, to, top: 3 });
      const vs = all.map((o) => o.v);
      expect(got.count).toBe(vs.length);
      expect(got.min).toBe(Math.min(...vs));
      expect(got.max).toBe(Math.max(...vs));
      const counts = new Map<number, number>();
      for (const v of vs) counts.set(modelBucket(v, width), (counts.get(modelBucket(v, width)) ?? 0) + 1);
      const model = [...counts]
        .sort((a, b) => a[0] - b[0])
        .map(([i, count]) => ({ lower: r15(i * width), upper: r15((i + 1) * width), count }));
      expect(got.buckets).toEqual(model);
      // -0 and 0 share one bucket (no "-0" member beside "0")
      expect(got.buckets.filter((b) => b.lower === 0).length).toBeLessThanOrEqual(1);
      for (const [q, p] of [
        [0.5, got.p50],
        [0.9, got.p90],
        [0.99, got.p99],
      ] as const) {
        const exact = exactQuantile(vs, q)!;
        expect(Math.abs((p as number) - exact), `p${q * 100}`).toBeLessThan(width);
      }
      expect(Math.abs(got.sum - vs.reduce((a, b) => a + b, 0))).toBeLessThan(1e-6);
    });
  }

  it("huge values: ±1e15 and integers sum exactly", async () => {
    await put(ctx, "huge", { bucketWidth: 1e12 });
    const values = [1e15, -1e15, 999_999_999_999_999, 1e15];
    await observe(
      ctx,
      "huge",
      values.map((value) => ({ value })),
    );
    const got = await read(ctx, "huge");
    expect(got.min).toBe(-1e15);
    expect(got.max).toBe(1e15);
    expect(got.count).toBe(4);
    expect(got.sum).toBe(values.reduce((a, b) => a + b, 0));
  });

  it("NaN, ±Infinity and 1e15+ refused (ValidationError), nothing written", async () => {
    await put(ctx, "bad", { bucketWidth: 1 });
    const before = (await keysUnder(lib.target, lib.prefix)).sort();
    for (const value of [Number.NaN, Infinity, -Infinity, 1e15 + 0.25]) {
      await expect(observe(ctx, "bad", [{ value: 1 }, { value }])).rejects.toBeInstanceOf(ValidationError);
    }
    expect((await keysUnder(lib.target, lib.prefix)).sort()).toEqual(before);
    expect((await read(ctx, "bad")).count).toBe(0);
  });

  it("a 400-day read with data on every month: one request, at most 60 commands (issue 15)", async () => {
    await put(ctx, "long", { bucketWidth: 1, retentionDays: 400 });
    for (let back = 0; back < 400; back += 9) {
      await observe(ctx, "long", [{ value: back % 50, at: NOW - back * DAY }]);
    }
    const from = new Date(NOW - 399 * DAY).toISOString().slice(0, 10);
    const to = new Date(NOW).toISOString().slice(0, 10);
    const m = await measured(ctx, "long", from, to);
    expect(m.ok).toBe(true);
    expect(m.commands).toBeLessThanOrEqual(60);
    if (m.ok) expect(m.r.count).toBe(Math.ceil(400 / 9));
  });
});
