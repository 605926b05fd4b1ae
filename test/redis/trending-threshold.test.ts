/**
 * The threshold read of top N against a brute-force count and against the full
 * merge, with tiny depths so every path runs: the first round settling it, the
 * ×4 deepening, one side exhausted, and the fallback merge; heavy ties (counts
 * 1..3 over a dozen members) put ties at the boundary all the time.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createRedis } from "../../src/redis/client.ts";
import { HOUR, MINUTE } from "../../src/time.ts";
import {
  compact as compactTrending,
  record as recordEvents,
  top as topTrending,
  type TopResult,
  type TrendingEvent,
} from "../../src/trending/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { resetStats, statsOf } from "../helpers/upstash-rest.ts";

const lib = libraryTest("trend-ta");
const { target } = lib;
// a tagged token: the local server counts this client's commands apart (which path a read took)
const TAG = `trend-ta-${Math.random().toString(36).slice(2, 8)}`;
const counted = createRedis({ url: target.url, token: `${target.token}.${TAG}` });
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const MEMBERS = Array.from({ length: 12 }, (_, i) => `m${String.fromCharCode(97 + i)}`);

const event = fc.record({
  member: fc.constantFrom(...MEMBERS),
  count: fc.integer({ min: 1, max: 3 }),
  back: fc.integer({ min: 0, max: 3 }),
});

function truth(events: { member: string; count: number; back: number }[], window: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (const e of events) if (e.back <= window) counts.set(e.member, (counts.get(e.member) ?? 0) + e.count);
  return counts;
}

const ranked = (counts: Map<string, number>) =>
  [...counts]
    .sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1))
    .map(([member, count], i) => ({ rank: i + 1, member, count }));

describe("trending threshold read", () => {
  it("equals the brute-force top N and the full merge at any depth, with or without trimming", async () => {
    // which paths the runs took: the property proves little unless it meets each of them
    const seen = { exact: 0, inexact: 0, firstRoundWithUnseen: 0, deeper: 0, merged: 0 };
    await fc.assert(
      fc.asyncProperty(
        fc.array(event, { minLength: 1, maxLength: 60 }),
        fc.array(event, { maxLength: 10 }),
        fc.boolean(),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 4 }),
        fc.constantFrom(1, 2, 5, 8, 20, 1024),
        async (before, after, compact, n, window, firstDepth, maxDepth) => {
          const ctx = lib.ctx(T0, "trend-ta");
          const toEvents = (list: typeof before): TrendingEvent[] =>
            list.map((e) => ({ member: e.member, count: e.count, at: T0 - e.back * HOUR }));
          await recordEvents(ctx, "s", toEvents(before), { retentionHours: 50 });
          if (compact) await compactTrending({ ...ctx, now: T0 + MINUTE }, { retentionHours: 50, keep: 2 });
          // late events after the compaction must drop the unions it built
          if (after.length > 0) await recordEvents(ctx, "s", toEvents(after), { retentionHours: 50 });

          const counts = truth([...before, ...after], window);
          const expected = ranked(counts).slice(0, n);
          const read = (depths: { firstDepth: number; maxDepth: number }): Promise<TopResult> =>
            topTrending(ctx, "s", { retentionHours: 50, n, windowHours: window, ...depths });
          await read({ firstDepth, maxDepth }); // builds the union: the next read is warm
          await resetStats(target, TAG);
          const ta = await topTrending({ ...ctx, redis: counted }, "s", {
            retentionHours: 50,
            n,
            windowHours: window,
            firstDepth,
            maxDepth,
          });
          const cost = await statsOf(target, TAG);
          expect(cost.requests).toBe(1);
          // round one always pages both sides; every later round pages at least one more
          if (cost.byCommand.zunionstore) seen.merged++;
          else if ((cost.byCommand.zrevrange ?? 0) > 2) seen.deeper++;
          else if (counts.size > Math.max(n + 1, firstDepth)) seen.firstRoundWithUnseen++;
          if (!cost.byCommand.zunionstore) expect(cost.byCommand.zrevrange ?? 0).toBeGreaterThanOrEqual(2);
          // the shallowest read (one round, then the merge if it did not settle) agrees
          const shallow = await read({ firstDepth: 1, maxDepth: 1 });
          expect({ ...ta, topProven: false }).toEqual({ ...shallow, topProven: false });
          // topProven never claims more than the stored sums prove: every member's stored sum comes
          // back when n covers them all, and the proof from those is the tightest there is
          const all = await topTrending(ctx, "s", { retentionHours: 50, n: MEMBERS.length, windowHours: window });
          const next = all.items[n]?.count ?? 0;
          const ideal =
            ta.maxError === 0 ||
            (ta.items.length === n &&
              ta.items.every((item, i) => item.count > (ta.items[i + 1]?.count ?? next) + ta.maxError));
          if (ta.topProven) expect(ideal).toBe(true);

          expect(ta.exact).toBe(ta.maxError === 0);
          seen[ta.exact ? "exact" : "inexact"]++;
          if (!compact) expect(ta.exact).toBe(true);
          if (ta.exact) expect(ta.items).toEqual(expected);
          for (const item of ta.items) {
            const real = counts.get(item.member) ?? 0;
            expect(item.count).toBeLessThanOrEqual(real);
            expect(real).toBeLessThanOrEqual(item.count + ta.maxError);
          }
          const floor = ta.items.length === n ? (ta.items[n - 1]?.count ?? 0) : 0;
          for (const [member, real] of counts) {
            if (!ta.items.some((i) => i.member === member)) expect(real).toBeLessThanOrEqual(floor + ta.maxError);
          }
          if (ta.topProven) expect(ta.items.map((i) => i.member)).toEqual(expected.map((i) => i.member));
        },
      ),
      {
        numRuns: 100,
        examples: [
          // a one-round stop has a looser bound than the stored sums allow: it may prove less, never more
          [
            [
              { member: "ma", count: 2, back: 0 },
              { member: "ma", count: 1, back: 1 },
              { member: "ma", count: 3, back: 0 },
              { member: "ml", count: 2, back: 1 },
              { member: "mk", count: 2, back: 0 },
              { member: "mj", count: 2, back: 1 },
            ],
            [],
            true,
            1,
            1,
            3,
            1,
          ],
        ],
      },
    );
    expect(seen.exact).toBeGreaterThan(0);
    expect(seen.inexact).toBeGreaterThan(0);
    expect(seen.firstRoundWithUnseen).toBeGreaterThan(0);
    expect(seen.deeper).toBeGreaterThan(0);
    expect(seen.merged).toBeGreaterThan(0);
    console.log("threshold read paths", JSON.stringify(seen));
  });

  it("refuses depths out of range before any Redis call", async () => {
    const ctx = lib.ctx(T0, "trend-ta-bad");
    await expect(topTrending(ctx, "s", { retentionHours: 50, firstDepth: 0 })).rejects.toThrow(/firstDepth/);
    await expect(topTrending(ctx, "s", { retentionHours: 50, maxDepth: 1.5 })).rejects.toThrow(/maxDepth/);
    // past ~8,000 values Lua's unpack fails inside the script: refused up front instead
    await expect(topTrending(ctx, "s", { retentionHours: 50, firstDepth: 10_000 })).rejects.toThrow(/firstDepth/);
    await expect(topTrending(ctx, "s", { retentionHours: 50, maxDepth: 2049 })).rejects.toThrow(/maxDepth/);
  });
});
