/**
 * Issue 15: a top-N sum over a range ending in the current period reads the cached union of the
 * finished keys and the current bucket apart (threshold algorithm, src/counters/threshold.ts)
 * instead of unioning them. Its answer must be the union's, exactly: the same members, sums and
 * order, ties by member bytes (as ZRANGE … REV orders them), with negative and zero sums, members
 * only in one of the two, and ties deeper than the first page.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { increment, ranked, type IncrItem } from "../../src/counters/index.ts";
import { DAY } from "../../src/time.ts";
import { libraryTest } from "../helpers/library.ts";
import { topOfSums } from "../helpers/sums.ts";

const lib = libraryTest("counters-head");
// mid-day: a range ending today caches its finished days and reads today's bucket apart
const NOW = Date.UTC(2026, 10, 20, 12, 30);
const ctx = lib.ctx(NOW);
const FROM = NOW - 5 * DAY;

/** Members whose byte order differs from most locales' collation (case, accents). */
const MEMBERS = ["a", "B", "b", "Z", "é", "e", "ä", "10", "9", "m-1", "m_1", "zz", "Ω", "a b"];
const item = fc.record({
  member: fc.constantFrom(...MEMBERS),
  by: fc.integer({ min: -3, max: 4 }),
  day: fc.integer({ min: 0, max: 5 }),
});

let run = 0;

describe("top N of a range ending now, cached part and current bucket read apart", () => {
  it("equals the union's top N", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(item, { minLength: 1, maxLength: 60 }), async (items) => {
        const name = `head-${run++}`;
        const writes: IncrItem[] = items.map((i) => ({
          member: i.member,
          by: i.by,
          period: "day",
          at: NOW - (5 - i.day) * DAY,
        }));
        await increment(ctx, name, writes);
        for (const n of [1, 3, 20]) {
          const res = await ranked(ctx, name, "top", n, { period: "day", from: FROM });
          expect(
            res.items.map((i) => `${i.member}=${i.score}`),
            `n=${n}`,
          ).toEqual(topOfSums(items, n));
        }
      }),
      { numRuns: 40 },
    );
  });

  it("settles a tie deeper than the first page, and a long tail, as the union does", async () => {
    // 300 members tied at the top across the finished days and today: deeper than the first read (64)
    const tied: IncrItem[] = [];
    for (let i = 0; i < 300; i++) {
      tied.push({ member: `t${String(i).padStart(3, "0")}`, by: 2, period: "day", at: NOW - 2 * DAY });
      tied.push({ member: `t${String(i).padStart(3, "0")}`, by: 3, period: "day", at: NOW });
    }
    for (let i = 0; i < 2000; i++) tied.push({ member: `u${i}`, by: 1 + (i % 4), period: "day", at: NOW - 3 * DAY });
    for (let s = 0; s < tied.length; s += 1000) await increment(ctx, "deep", tied.slice(s, s + 1000));
    const res = await ranked(ctx, "deep", "top", 10, { period: "day", from: FROM });
    expect(res.items.map((i) => i.member)).toEqual(
      Array.from({ length: 10 }, (_, i) => `t${String(299 - i).padStart(3, "0")}`),
    );
    expect(res.items.every((i) => i.score === 5)).toBe(true);
    const model2 = topOfSums(
      tied.map((t) => ({ member: t.member, by: t.by ?? 1 })),
      100,
    );
    const wide = await ranked(ctx, "deep", "top", 100, { period: "day", from: FROM });
    expect(wide.items.map((i) => `${i.member}=${i.score}`)).toEqual(model2);
  });

  it("finds a leader that is in neither set's first page", async () => {
    // 100 members at 10 in the finished days only, 100 at 10 today only, and x at 9 in both: x
    // leads with 18 but ranks 101st in each set, so only a deeper read finds it
    const items: IncrItem[] = [
      { member: "x", by: 9, period: "day", at: NOW - DAY },
      { member: "x", by: 9, period: "day", at: NOW },
    ];
    for (let i = 0; i < 100; i++) {
      items.push({ member: `old${i}`, by: 10, period: "day", at: NOW - 2 * DAY });
      items.push({ member: `new${i}`, by: 10, period: "day", at: NOW });
    }
    await increment(ctx, "hidden", items);
    const res = await ranked(ctx, "hidden", "top", 3, { period: "day", from: FROM });
    expect(res.items.map((i) => `${i.member}=${i.score}`)).toEqual(["x=18", "old99=10", "old98=10"]);
  });
});
