/**
 * A member delete checks the keys that lost the member for emptiness a level at a time
 * (src/counters/delete-removals.ts, `flush`): one EXISTS of them all, halves where it counts some
 * but not all, each half's count giving the other's, and one HDEL of the emptied ones' index
 * fields. What must hold whatever the pattern: every emptied key leaves the index (so the next
 * write gives the key made again its ttl), every key still holding a member stays listed, and the
 * delete costs no more EXISTS than one per key.
 */
import { describe, expect, it } from "vitest";
import { deleteMember, increment, type IncrItem } from "../../src/counters/index.ts";
import { counterKeys } from "../../src/counters/keys.ts";
import { createRedis } from "../../src/redis/client.ts";
import { DAY, HOUR } from "../../src/time.ts";
import { counterState, goneButListed } from "../helpers/counter-state.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const lib = libraryTest("counters-delemptied", { timeoutMs: 30_000 });
const { target, prefix } = lib;
const NOW = Date.UTC(2026, 10, 20, 12, 30);
const ctx = lib.ctx(NOW);
const TAG = `delemp-${Math.random().toString(36).slice(2, 8)}`;
const counted = { ...ctx, redis: createRedis({ url: target.url, token: `${target.token}.${TAG}`, timeoutMs: 30_000 }) };
const { stateOf } = counterState(lib);
const D = Date.UTC(2026, 9, 30);
const TTL = 90 * 86_400;

/** "d" in every hour of October 30, "o" beside it in the hours of `others`; both with a ttl. */
async function day(name: string, others: number[]) {
  const items: IncrItem[] = [];
  for (let h = 0; h < 24; h++) {
    items.push({ member: "d", period: "hour", at: D + h * HOUR, ttl: TTL });
    if (others.includes(h)) items.push({ member: "o", period: "hour", at: D + h * HOUR, ttl: TTL });
  }
  await increment(ctx, name, items);
}

async function deleteDay(name: string) {
  await resetStats(target, TAG);
  const { removed } = await deleteMember(counted, name, "d", { period: "hour", from: D, to: D + DAY - HOUR });
  const stats = await statsOf(target, TAG);
  return { removed, exists: stats.byCommand.exists ?? 0, hdel: stats.byCommand.hdel ?? 0, commands: stats.commands };
}

const hourKey = (name: string, h: number) => counterKeys.bucket(prefix, name, "hour", D + h * HOUR);

describe("a member delete checks emptied keys a level at a time", () => {
  it("no key emptied: one EXISTS for the 24 hours, none above them, no HDEL", async () => {
    const every = Array.from({ length: 24 }, (_, h) => h);
    await day("none-emptied", every);
    const cost = await deleteDay("none-emptied");
    expect(cost.removed).toBe(24);
    // the hours' EXISTS counts 24: their quarters, day and month hold "o" too (exact rollups above
    // a live key), so they need none; was an EXISTS after each of the 24 removals
    expect({ exists: cost.exists, hdel: cost.hdel }).toEqual({ exists: 1, hdel: 0 });
    const st = await stateOf("none-emptied");
    expect(goneButListed(st)).toEqual([]);
    for (let h = 0; h < 24; h++) expect(`b:${hourKey("none-emptied", h)}` in st.fields).toBe(true);
  });

  it("some emptied: halves find them, each leaves the index, the live ones stay; the next write gives an emptied key its ttl", async () => {
    const others = [3, 4, 17];
    await day("some-emptied", others);
    const cost = await deleteDay("some-emptied");
    expect(cost.removed).toBe(24);
    // hours: 24 (counts 3) → 0-11 (2) → 0-5 (2) → 0-2 (0), 3 (1), 4 (1: 4-5 counted 1); 6-11 by
    // difference; 12-17 (1) → 12-14 (0), 15 (0), 16 (0: 16-17 counted 1, so 17 is 1); 18-23 by
    // difference: 10 EXISTS where there were 24. Quarters 6-12 and 18-24 lost it and are
    // emptied (0-6 and 12-18 hold "o" below): one EXISTS of both (0). One HDEL a level: the 21
    // hours' fields, then the 2 quarters'.
    expect({ exists: cost.exists, hdel: cost.hdel }).toEqual({ exists: 11, hdel: 2 });
    const st = await stateOf("some-emptied");
    expect(goneButListed(st)).toEqual([]);
    for (let h = 0; h < 24; h++) {
      const k = hourKey("some-emptied", h);
      expect(`b:${k}` in st.fields, k).toBe(others.includes(h));
      expect(await command<number>(target, "EXISTS", k), k).toBe(others.includes(h) ? 1 : 0);
    }
    // an emptied hour written again is made with its ttl (a listed expiry would have been trusted)
    await increment(ctx, "some-emptied", [{ member: "n", period: "hour", at: D + 9 * HOUR, ttl: TTL }]);
    expect(await command<number>(target, "PTTL", hourKey("some-emptied", 9))).toBeGreaterThan(0);
  });

  it("every key emptied: one EXISTS a level (it counts 0) and one HDEL a level", async () => {
    await day("all-emptied", []);
    const cost = await deleteDay("all-emptied");
    expect(cost.removed).toBe(24);
    const st = await stateOf("all-emptied");
    expect(goneButListed(st)).toEqual([]);
    expect(st.hours.size).toBe(0);
    // hours, quarters, the day, the month (partial: at 0, no part outside holds it): a level each;
    // was an EXISTS and an HDEL for each of the 30 keys
    expect({ exists: cost.exists, hdel: cost.hdel }).toEqual({ exists: 4, hdel: 4 });
    for (let h = 0; h < 24; h++) expect(`b:${hourKey("all-emptied", h)}` in st.fields).toBe(false);
  });

  it("alternating emptied and live hours: never more EXISTS than keys", async () => {
    const odd = Array.from({ length: 12 }, (_, i) => 2 * i + 1);
    await day("alternating", odd);
    const cost = await deleteDay("alternating");
    expect(cost.removed).toBe(24);
    // the worst pattern for halving: every part counts some but not all of its keys, down to the
    // pairs: 24 EXISTS, as many as one a key (as before); the 12 emptied leave in one HDEL (was 12)
    expect({ exists: cost.exists, hdel: cost.hdel }).toEqual({ exists: 24, hdel: 1 });
    const st = await stateOf("alternating");
    expect(goneButListed(st)).toEqual([]);
    for (let h = 0; h < 24; h++) expect(`b:${hourKey("alternating", h)}` in st.fields).toBe(odd.includes(h));
  });
});
