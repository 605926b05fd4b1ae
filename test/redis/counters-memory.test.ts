/**
 * Issue 12, bounded caching: what a read key can make Redis hold. Measured
 * with Redis' own `INFO memory` around an adversarial loop of distinct
 * finished ranges over a large counter.
 */
import { describe, expect, it } from "vitest";
import { increment, ranked, UNION_CACHE_SLOTS, type IncrItem } from "../../src/counters/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, keysUnder } from "../helpers/upstash-rest.ts";

const lib = libraryTest("counters-mem");
const { target, prefix } = lib;
const ctx = lib.ctx(Date.UTC(2026, 10, 22, 12));

const DAYS = 60;
const PER_DAY = 500;
const day = (d: number) => new Date(Date.UTC(2026, 8, 23 + d)).toISOString().slice(0, 10);

async function usedMemory(): Promise<number> {
  const info = await command<string>(target, "INFO", "memory");
  return Number(/used_memory:(\d+)/.exec(info)?.[1]);
}

describe("bounded caching", () => {
  it(`attack: 180 distinct finished ranges over a 60-day counter with 500 members a day add at most ${UNION_CACHE_SLOTS} unions`, async () => {
    // members overlap from day to day (100 new ones a day): the 60-day union has 6,400 members
    const items: IncrItem[] = [];
    for (let d = 0; d < DAYS; d++) {
      for (let i = 0; i < PER_DAY; i++)
        items.push({ member: `user-${d * 100 + i}`, by: 1 + (i % 7), period: "day", at: `${day(d)}T06:00:00Z` });
    }
    for (let i = 0; i < items.length; i += 1000) await increment(ctx, "big", items.slice(i, i + 1000));
    const before = await usedMemory();
    let reads = 0;
    // every read a different finished range (and aggregate), each spanning 20..59 days
    for (let from = 0; reads < 180; from = (from + 1) % 40) {
      for (const aggregate of ["sum", "max", "min"] as const) {
        const to = Math.min(DAYS - 1, from + 20 + ((reads * 7) % 40));
        const res = await ranked(ctx, "big", "top", 10, { period: "day", from: day(from), to: day(to), aggregate });
        expect((res as { range?: { finished: boolean } }).range?.finished).toBe(true);
        reads++;
      }
    }
    const after = await usedMemory();
    const unions = await keysUnder(target, `${prefix}:counters:big:union`);
    expect(unions.length).toBeLessThanOrEqual(UNION_CACHE_SLOTS);
    // each cached union holds at most the counter's members over its range (6,400 here)
    let entries = 0;
    for (const k of unions) entries += await command<number>(target, "ZCARD", k);
    expect(entries).toBeLessThanOrEqual(UNION_CACHE_SLOTS * 6400);
    // one union per range (the old cache) would hold 180 unions of 2,400..6,400 members: tens of MB;
    // the slots hold at most 4 (about 0.6 MB each here). 8 MB leaves room for the other test files
    // writing to the same Redis meanwhile.
    const growth = after - before;
    console.log(
      `counters cache: ${reads} distinct ranges, ${unions.length} unions, ${entries} entries, used_memory +${(growth / 1e6).toFixed(2)} MB`,
    );
    expect(growth).toBeLessThan(8_000_000);
  });
});
