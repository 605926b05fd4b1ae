/**
 * The histogram library on Node through @upstash/redis and the local Upstash
 * server: the Lua bucket rule must agree with the TypeScript one to the
 * digit, and concurrent batches must all count, exactly once.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ConflictError } from "../../src/errors.ts";
import { bucketBound, bucketIndex } from "../../src/histograms/buckets.ts";
import { observe, put as putHistogram, read as readHistogram } from "../../src/histograms/index.ts";
import { histogramKeys } from "../../src/histograms/keys.ts";
import { MAX_BUCKETS_PER_DAY } from "../../src/histograms/validate.ts";
import { keyOf } from "../../src/keys.ts";
import { libraryTest } from "../helpers/library.ts";
import { command } from "../helpers/upstash-rest.ts";

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

/*
 * observe declares its result up front (`{accepted = #values}`): with an Idempotency-Key its
 * record is written before the body runs, by a SET NX (a GET reads an earlier one). Every
 * way the write may not happen must take that record back.
 */
describe("observe with an Idempotency-Key: no record unless the values were counted", () => {
  const idem = (key: string, fingerprint = "fp") => ({ key: keyOf(prefix, "idem", key), fingerprint });
  const recorded = async (key: string) => command<string | null>(lib.target, "GET", keyOf(prefix, "idem", key));
  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => "applied",
      (e: unknown) => (e as Error).message,
    );

  it("records the accepted count, replays it, and answers another body with a conflict", async () => {
    await putHistogram(ctx, "keyed", { bucketWidth: 1 });
    const first = await observe(ctx, "keyed", [{ value: 1 }, { value: 2 }, { value: 2 }], idem("k-1"));
    expect(first).toEqual({ accepted: 3, replayed: false });
    expect(await recorded("k-1")).toBe('fp\n"value":{"accepted":3}');
    expect(await observe(ctx, "keyed", [{ value: 1 }, { value: 2 }, { value: 2 }], idem("k-1"))).toEqual({
      accepted: 3,
      replayed: true,
    });
    await expect(observe(ctx, "keyed", [{ value: 9 }], idem("k-1", "other"))).rejects.toBeInstanceOf(ConflictError);
    expect((await readHistogram(ctx, "keyed")).count).toBe(3);
  });

  it("a refusal (not found, out of range, expired, too many buckets) leaves no record; the fixed retry applies", async () => {
    expect(await refusal(observe(ctx, "later", [{ value: 1 }], idem("r-404")))).toMatch(/does not exist/);
    expect(await recorded("r-404")).toBeNull();
    await putHistogram(ctx, "later", { bucketWidth: 0.001, retentionDays: 2 });
    expect(await observe(ctx, "later", [{ value: 1 }], idem("r-404"))).toEqual({ accepted: 1, replayed: false });

    expect(await refusal(observe(ctx, "later", [{ value: 1e15 }], idem("r-range")))).toMatch(/buckets .* from zero/);
    expect(await recorded("r-range")).toBeNull();
    const old = Date.UTC(2026, 10, 19, 12);
    expect(await refusal(observe(ctx, "later", [{ value: 1, at: old }], idem("r-old")))).toMatch(/retention/);
    expect(await recorded("r-old")).toBeNull();
    expect((await readHistogram(ctx, "later")).count).toBe(1);
  });

  it("too many buckets in a day: the increments are taken back and so is the record", async () => {
    await putHistogram(ctx, "capped", { bucketWidth: 1 });
    for (let b = 0; b < MAX_BUCKETS_PER_DAY; b += 1000)
      await observe(
        ctx,
        "capped",
        Array.from({ length: 1000 }, (_, i) => ({ value: b + i })),
      );
    const over = [{ value: 1 }, { value: MAX_BUCKETS_PER_DAY + 1 }];
    expect(await refusal(observe(ctx, "capped", over, idem("r-cap")))).toMatch(/more than 5000 distinct buckets/);
    expect(await recorded("r-cap")).toBeNull();
    expect((await readHistogram(ctx, "capped", { top: 0 })).count).toBe(MAX_BUCKETS_PER_DAY);
    // the same key then applies a batch that fits
    expect(await observe(ctx, "capped", [{ value: 1 }], idem("r-cap"))).toEqual({ accepted: 1, replayed: false });
  });

  it("an error inside the script (a key of the wrong type) leaves no record; once fixed, the same key applies", async () => {
    await putHistogram(ctx, "typo", { bucketWidth: 1 });
    const day = histogramKeys.day(prefix, "typo", Date.UTC(2026, 10, 22));
    await command(lib.target, "SET", day, "not a sorted set");
    const withKey = await refusal(observe(ctx, "typo", [{ value: 1 }], idem("e-1")));
    const without = await refusal(observe(ctx, "typo", [{ value: 1 }]));
    expect(withKey).toMatch(/^WRONGTYPE /);
    expect(withKey.split(" script: ")[0]).toBe(without.split(" script: ")[0]);
    expect(await recorded("e-1")).toBeNull();
    await command(lib.target, "DEL", day);
    expect(await observe(ctx, "typo", [{ value: 1 }], idem("e-1"))).toEqual({ accepted: 1, replayed: false });
    expect((await readHistogram(ctx, "typo")).count).toBe(1);
  });
});
