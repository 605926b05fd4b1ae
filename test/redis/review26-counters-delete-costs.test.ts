/**
 * Review 26: the member delete's command counts that the docs state but no cost row pins
 * (docs/counters.md, Behaviour, the member delete; docs/costs.md rows 36-37; README "Decisions worth
 * knowing": a counter member delete costs about one command per key that may hold the member).
 */
import { describe, expect, it } from "vitest";
import { deleteMember, increment, type IncrItem } from "../../src/counters/index.ts";
import { counterKeys } from "../../src/counters/keys.ts";
import { createRedis } from "../../src/redis/client.ts";
import { HOUR } from "../../src/time.ts";
import { counterState, goneButListed } from "../helpers/counter-state.ts";
import { libraryTest } from "../helpers/library.ts";
import { keysUnder, resetStats, statsOf, command } from "../helpers/upstash-rest.ts";

const lib = libraryTest("review26-cdelcost", { timeoutMs: 60_000 });
const { target, prefix } = lib;
const NOW = Date.UTC(2026, 10, 20, 16, 30);
const ctx = lib.ctx(NOW);
const TAG = `r26cost-${Math.random().toString(36).slice(2, 8)}`;
const counted = { ...ctx, redis: createRedis({ url: target.url, token: `${target.token}.${TAG}`, timeoutMs: 60_000 }) };
const { stateOf } = counterState(lib);
const FROM = Date.UTC(2026, 8, 21, 17);
const TO = Date.UTC(2026, 10, 20, 16);

async function write(name: string, items: IncrItem[]) {
  for (let i = 0; i < items.length; i += 1000) await increment(ctx, name, items.slice(i, i + 1000));
}

/** The keys of `name` (buckets and rollups) holding `member`. */
async function holding(name: string, member: string) {
  let n = 0;
  const head = `${counterKeys.plain(prefix, name)}:hour:`;
  for (const k of (await keysUnder(target, prefix)).filter((k) => k.startsWith(head)))
    if ((await command<string | null>(target, "ZSCORE", k, member)) !== null) n++;
  return n;
}

async function costOf(name: string, member: string, from: number, to: number) {
  // the script loaded first (its first EVALSHA answers NOSCRIPT: one request more)
  await deleteMember(counted, name, "nobody", { period: "hour", from, to: from });
  await resetStats(target, TAG);
  const { removed } = await deleteMember(counted, name, member, { period: "hour", from, to });
  const s = await statsOf(target, TAG);
  return { removed, requests: s.requests, commands: s.commands };
}

describe("review 26: member delete command counts the docs state", () => {
  it("a member in every hour of 60 days, every hour also holding another member: the docs' 1,900", async () => {
    const items: IncrItem[] = [];
    for (let t = FROM; t <= TO; t += HOUR)
      items.push({ member: "d", period: "hour", at: t }, { member: "o", period: "hour", at: t });
    await write("dense-other", items);
    const keys = await holding("dense-other", "d");
    expect(keys).toBe(1745);
    const cost = await costOf("dense-other", "d", FROM, TO);
    expect(cost.removed).toBe(1440);
    // docs/counters.md and docs/costs.md row 36: "1,900 when every hour also holds another member:
    // one ZREM per key and 155 more" (1,899 here: no key outside the range is listed, so the
    // partial months left at 0 read none of their days outside; the docs' state may list one)
    expect({ requests: cost.requests, commands: cost.commands }).toEqual({ requests: 5, commands: 1899 });
    expect(goneButListed(await stateOf("dense-other"))).toEqual([]);
  });

  it("a member in every 7th hour: one command per key that may hold it (every hour under a quarter holding it), not per key holding it", async () => {
    // 5 days: one script
    const from = Date.UTC(2026, 10, 10);
    const to = from + 5 * 24 * HOUR - HOUR;
    const items: IncrItem[] = [];
    for (let t = from; t <= to; t += HOUR) {
      items.push({ member: "o", period: "hour", at: t });
      if ((t - from) % (7 * HOUR) === 0) items.push({ member: "s", period: "hour", at: t });
    }
    await write("sparse", items);
    const keys = await holding("sparse", "s");
    const cost = await costOf("sparse", "s", from, to);
    expect(cost.removed).toBe(18);
    // 18 hours, 18 quarters, 5 days, 1 month hold it: 42 keys; the delete takes ~1 command for
    // each of the 108 hours under those quarters
    expect(keys).toBe(42);
    // 146: 3.5 commands per key holding it. The README said "about one command per key that holds
    // the member" and "at most about one command for each write it undoes" (18 writes of "s"): true
    // only of dense members. Review 26 (low, docs): now "per key that may hold the member" (each
    // hour under a quarter holding it), which this pins
    expect({ requests: cost.requests, commands: cost.commands }).toEqual({ requests: 1, commands: 146 });
    expect(cost.commands).toBeGreaterThan(108);
    expect(cost.commands).toBeGreaterThan(3 * keys);
  });
});
