/**
 * Review 5, races through the library against real Redis (local Upstash server): parallel late
 * writes into finished buckets racing the reads that cache unions of those buckets, the sweep and
 * compaction jobs, and each other. Whatever the interleaving, a read after everything has been
 * acknowledged must give the exact totals: a union cached from a snapshot taken before a racing
 * write landed must not survive that write.
 */
import { describe, expect, it } from "vitest";
import { increment, memberOf, ranked, sweepCountersJob } from "../../src/counters/index.ts";
import * as trending from "../../src/trending/index.ts";
import { libraryTest } from "../helpers/library.ts";

const lib = libraryTest("review5-races");
const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 10, 22, 12, 30);
const RET = { retentionHours: 50 };

describe("counters: late writes racing cached range reads and the sweep", () => {
  it("40 parallel late day/hour increments over finished days, racing 20 range reads and 3 sweeps: final reads exact", async () => {
    const ctx = lib.ctx(NOW);
    const days = ["2026-11-18", "2026-11-19", "2026-11-20", "2026-11-21"];
    // one write first so the range reads have something to cache
    await increment(ctx, "late", [{ member: "a", by: 1, period: "day", at: `${days[0]}T01:00:00Z` }]);
    await ranked(ctx, "late", "top", 10, { period: "day", from: days[0], to: days[3] });
    const expectedDay = new Map<string, number>([["a", 1]]);
    const writes = Array.from({ length: 40 }, (_, i) => {
      const member = ["a", "b", "c"][i % 3] ?? "a";
      const by = i + 1;
      expectedDay.set(member, (expectedDay.get(member) ?? 0) + by);
      return increment(ctx, "late", [
        { member, by, period: "day", at: `${days[i % 4]}T${String(i % 24).padStart(2, "0")}:00:00Z` },
      ]);
    });
    const reads = Array.from({ length: 20 }, (_, i) =>
      i % 2
        ? ranked(ctx, "late", "top", 10, { period: "day", from: days[0], to: days[3] })
        : memberOf(ctx, "late", "a", { period: "day", from: days[0], to: days[3] }),
    );
    const sweeps = [0, 1, 2].map(() => sweepCountersJob(ctx, lib.config));
    await Promise.all([...writes, ...reads, ...sweeps]);
    const top = await ranked(ctx, "late", "top", 10, { period: "day", from: days[0], to: days[3] });
    expect(Object.fromEntries(top.items.map((i: { member: string; score: number }) => [i.member, i.score]))).toEqual(
      Object.fromEntries(expectedDay),
    );
    for (const [member, score] of expectedDay)
      expect((await memberOf(ctx, "late", member, { period: "day", from: days[0], to: days[3] })).score).toBe(score);
  });

  it("parallel period=hour increments either side of midnight add up per day through the rollups", async () => {
    const ctx = lib.ctx(NOW);
    const times = ["2026-11-20T23:59:59Z", "2026-11-21T00:00:00Z"];
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        increment(ctx, "mid", [{ member: "m", by: i + 1, period: "hour", at: times[i % 2] }]),
      ),
    );
    const odd = Array.from({ length: 15 }, (_, k) => 2 * k + 1).reduce((s, x) => s + x, 0);
    const read = (from: string, to: string) => memberOf(ctx, "mid", "m", { period: "hour", from, to });
    expect((await read("2026-11-20T00:00:00Z", "2026-11-20T23:00:00Z")).score).toBe(odd);
    expect((await read("2026-11-21T00:00:00Z", "2026-11-21T23:00:00Z")).score).toBe(465 - odd);
    expect((await read("2026-11-19T00:00:00Z", "2026-11-22T12:00:00Z")).score).toBe(465);
  });
});

describe("trending: late events racing cached window reads and compaction", () => {
  it("30 parallel late events into finished hours, racing 20 window reads and 3 compactions: the 24h count is exact", async () => {
    const ctx = lib.ctx(NOW);
    for (let h = 1; h <= 6; h++) await trending.record(ctx, "s", [{ member: "x", count: 1, at: NOW - h * HOUR }], RET);
    await trending.compact(ctx, RET);
    await trending.top(ctx, "s", { ...RET, windowHours: 24 });
    const writes = Array.from({ length: 30 }, (_, i) =>
      trending.record(ctx, "s", [{ member: i % 2 ? "x" : "y", count: 2, at: NOW - (1 + (i % 6)) * HOUR }], RET),
    );
    const reads = Array.from({ length: 20 }, (_, i) =>
      i % 2
        ? trending.top(ctx, "s", { ...RET, windowHours: 24 })
        : trending.member(ctx, "s", "x", { ...RET, windowHours: 24 }),
    );
    const compactions = [0, 1, 2].map(() => trending.compact(ctx, RET));
    await Promise.all([...writes, ...reads, ...compactions]);
    const x = await trending.member(ctx, "s", "x", { ...RET, windowHours: 24 });
    const y = await trending.member(ctx, "s", "y", { ...RET, windowHours: 24 });
    expect({ x: x.count, y: y.count }).toEqual({ x: 6 + 30, y: 30 });
    const top = await trending.top(ctx, "s", { ...RET, windowHours: 24 });
    expect(top.items.map((i: { member: string; count: number }) => [i.member, i.count])).toEqual([
      ["x", 36],
      ["y", 30],
    ]);
  });
});
