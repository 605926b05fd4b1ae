/**
 * The histogram library on Node through @upstash/redis and the local Upstash
 * server: the Lua bucket rule must agree with the TypeScript one to the
 * digit, and concurrent batches must all count, exactly once.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bucketBound, bucketIndex } from "../../src/histograms/buckets.ts";
import { observe, put as putHistogram, read as readHistogram } from "../../src/histograms/index.ts";
import { keyOf } from "../../src/keys.ts";
import { libraryTest } from "../helpers/library.ts";

const lib = libraryTest("hist", { timeoutMs: 10_000 });
const prefix = lib.prefix;
const ctx = lib.ctx(Date.UTC(2026, 10, 22, 12, 30));

describe("Lua and TypeScript agree on buckets", () => {
  it("for random widths and values, every stored bucket is the one bucketIndex computes", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.constantFrom(0.1, 0.3, 2.5, 7), fc.double({ min: 1e-3, max: 1e3, noNaN: true })),
        fc.array(
          fc.oneof(
            fc.double({ min: -1e6, max: 1e6, noNaN: true }),
            fc.integer({ min: -1000, max: 1000 }).map((n) => n / 10),
          ),
          {
            minLength: 1,
            maxLength: 200,
          },
        ),
        async (width, values) => {
          const name = `agree-${run++}`;
          await putHistogram(ctx, name, { bucketWidth: width });
          await observe(
            ctx,
            name,
            values.map((value) => ({ value })),
          );
          const summary = await readHistogram(ctx, name, { top: 0 });
          const expected = new Map<number, number>();
          for (const v of values) expected.set(bucketIndex(v, width), (expected.get(bucketIndex(v, width)) ?? 0) + 1);
          const want = [...expected]
            .sort((a, b) => a[0] - b[0])
            .map(([i, count]) => ({ lower: bucketBound(i, width), upper: bucketBound(i + 1, width), count }));
          expect(summary.buckets).toEqual(want);
          // + 0: the service never answers negative zero (JSON and Lua have none)
          expect(summary.min).toBe(Math.min(...values) + 0);
          expect(summary.max).toBe(Math.max(...values) + 0);
        },
      ),
      {
        numRuns: 25,
        examples: [
          [0.001, [-0, 0]],
          [0.001, [-0]],
        ],
      },
    );
  });
});

describe("concurrent writers", () => {
  it("count every acknowledged observation exactly once", async () => {
    await putHistogram(ctx, "busy", { bucketWidth: 1 });
    const batches = Array.from({ length: 20 }, (_, i) =>
      Array.from({ length: 50 }, (_, j) => ({ value: (i * 50 + j) % 17 })),
    );
    const results = await Promise.all(batches.map((batch) => observe(ctx, "busy", batch)));
    expect(results.reduce((n, r) => n + r.accepted, 0)).toBe(1000);
    const summary = await readHistogram(ctx, "busy");
    expect(summary.count).toBe(1000);
    expect(summary.sum).toBe(batches.flat().reduce((s, o) => s + o.value, 0));
  });

  it("applies one Idempotency-Key once however many copies race", async () => {
    await putHistogram(ctx, "racy", { bucketWidth: 1 });
    const idem = { key: keyOf(prefix, "idem", "racy-1"), fingerprint: "fp" };
    const results = await Promise.all(
      Array.from({ length: 10 }, () => observe(ctx, "racy", [{ value: 1 }, { value: 2 }], idem)),
    );
    expect(results.filter((r) => !r.replayed)).toHaveLength(1);
    expect((await readHistogram(ctx, "racy")).count).toBe(2);
  });
});
