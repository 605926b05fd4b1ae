/**
 * Issue 12, bounded caching, measured in Redis memory: an adversarial loop of
 * top-N reads over every window width adds at most one union beyond the 24 h
 * and 48 h ones (which compaction builds for every active stream anyway). Before,
 * each width cached a union of its own: about 25 times as much for this stream.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectResp, type RespClient } from "../../dev/resp.ts";
import { HOUR } from "../../src/time.ts";
import { record as recordEvents, top as topTrending } from "../../src/trending/index.ts";
import { streamKeys } from "../../src/trending/keys.ts";
import { libraryTest } from "../helpers/library.ts";
import { keysUnder } from "../helpers/upstash-rest.ts";

const lib = libraryTest("trend-mem");
const { target, prefix } = lib;
const redisUrl = process.env.EDGESTATS_REDIS_URL;
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const H = Math.floor(T0 / HOUR);
const RETENTION = 50;
/** Members per finished hour, each hour its own: a union of w hours holds w × this. */
const PER_HOUR = 200;
let resp: RespClient;

beforeAll(async () => {
  if (!redisUrl) throw new Error("EDGESTATS_REDIS_URL is not set: run the tests with `npm test`.");
  resp = await connectResp(redisUrl);
});
afterAll(() => resp?.close());

async function usedMemory(): Promise<number> {
  const info = String(await resp.call("INFO", "memory"));
  return Number(/used_memory:(\d+)/.exec(info)?.[1]);
}
const memoryUsage = async (key: string) => Number(await resp.call("MEMORY", "USAGE", key, "SAMPLES", "0"));

describe("trending union memory", () => {
  it("attack: reading every window width adds at most one union of the widest window to Redis memory", async () => {
    const ctx = lib.ctx(T0);
    for (let back = RETENTION; back >= 1; back -= 5) {
      const events = Array.from({ length: 5 }, (_, b) => back - b).flatMap((h) =>
        Array.from({ length: PER_HOUR }, (_, i) => ({
          member: `member-${h}-${i}`,
          count: 1 + ((i * 7 + h) % 50),
          at: T0 - h * HOUR,
        })),
      );
      await recordEvents(ctx, "s", events, { retentionHours: RETENTION });
    }
    const keys = streamKeys(prefix, "s");
    // the standard windows' unions: what compaction precomputes for an active stream anyway
    for (const w of [24, 48]) await topTrending(ctx, "s", { retentionHours: RETENTION, windowHours: w });
    const before = await usedMemory();
    for (let pass = 0; pass < 2; pass++) {
      for (let w = 1; w <= RETENTION; w++)
        await topTrending(ctx, "s", { retentionHours: RETENTION, windowHours: pass ? RETENTION + 1 - w : w });
    }
    const grown = (await usedMemory()) - before;
    // the stated bound: one union of the widest window (the slot), as Redis sizes it
    await topTrending(ctx, "s", { retentionHours: RETENTION, windowHours: RETENTION });
    const slot = await memoryUsage(keys.union(RETENTION, H));
    expect(slot).toBeGreaterThan(RETENTION * PER_HOUR * 40); // it really holds 10,000 members
    const unionKeys = (await keysUnder(target, prefix)).filter((k) => k.includes(":u:"));
    expect(unionKeys.sort()).toEqual(keys.unionsOf(H).sort());
    // other test files share this redis-server: allow 1 MiB of their noise. One union per width
    // (what the service did before) would have grown by about 25 × slot (~20 MB here).
    console.log(`trending union memory: slot ${slot} B, used_memory grew ${grown} B over 100 reads of 50 widths`);
    expect(grown).toBeLessThan(slot + 1024 * 1024);
  });
});
