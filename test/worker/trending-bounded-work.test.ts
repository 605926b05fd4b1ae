/**
 * Issue 15, bounded work: the first read of an hour never copies the raw
 * previous hour into a union, compaction trims a big hour without removing its
 * members one by one and in scripts of bounded work (resumable), and the member
 * lookup merges nothing, giving rank bounds when the rank is too deep to prove.
 */
import { afterAll, describe, expect, it } from "vitest";
import type { Ctx } from "../../src/context.ts";
import { createRedis } from "../../src/redis/client.ts";
import { compact as compactTrending, top as topTrending } from "../../src/trending/index.ts";
import { createTestApi, type TestApi } from "../helpers/worker.ts";

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const H = Math.floor(T0 / HOUR);
const label = (h: number) => new Date(h * HOUR).toISOString().slice(0, 13).replace(/[-T]/g, "");

type Event = { member: string; count: number; at: number };

function ctxOf(api: TestApi, now = api.now): Ctx {
  return {
    redis: createRedis({ url: api.target.url, token: String(api.env.UPSTASH_REDIS_REST_TOKEN) }),
    prefix: api.prefix,
    now,
  };
}

async function redisCall(api: TestApi, key: string, ...cmd: string[]): Promise<unknown> {
  const script = `return redis.call(${cmd.map((_, i) => `ARGV[${i + 1}]`).join(", ")})`;
  return ctxOf(api).redis.eval(
    script,
    [key],
    cmd.map((c) => (c === "$KEY" ? key : c)),
  );
}

async function record(api: TestApi, stream: string, log: Event[], events: Event[]): Promise<void> {
  for (let i = 0; i < events.length; i += 1000) {
    const res = await api.post(`/v1/trending/${stream}/events`, { events: events.slice(i, i + 1000) });
    expect(res.status).toBe(200);
  }
  log.push(...events);
}

/** Distinct counts per hour so cuts are easy to compute: member i of hour h counts 1 + (i * 37 + h) % size. */
function hourOf(h: number, size: number): Event[] {
  return Array.from({ length: size }, (_, i) => ({
    member: `m${i}`,
    count: 1 + ((i * 37 + h) % (size * 2)),
    at: h * HOUR + 60_000,
  }));
}

function counts(log: Event[], fromHour: number, toHour: number): Map<string, number> {
  const c = new Map<string, number>();
  for (const e of log) {
    const h = Math.floor(e.at / HOUR);
    if (h >= fromHour && h <= toHour) c.set(e.member, (c.get(e.member) ?? 0) + e.count);
  }
  return c;
}

/** The (keep+1)-th highest count of an hour's events: what trimming it to keep removes at most. */
function cutOf(log: Event[], h: number, keep: number): number {
  const values = [...counts(log, h, h).values()].sort((a, b) => b - a);
  return values[keep] ?? 0;
}

describe("first read of the hour", () => {
  const api = createTestApi({ label: "trend-bw-first", start: T0, vars: { TRENDING_KEEP: "50" } });
  afterAll(() => api.cleanup());

  it("leaves the previous, not yet compacted hour out of the union and reads it as a set of its own", async () => {
    const log: Event[] = [];
    await record(api, "s", log, hourOf(H - 2, 40));
    await record(api, "s", log, hourOf(H - 1, 3000));
    await record(api, "s", log, [{ member: "m7", count: 500, at: T0 }]);
    const top = await api.get("/v1/trending/s/top?n=10&window=24h");
    const expected = [...counts(log, H - 24, H)].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 10);
    expect(top.body.items.map((i: { member: string; count: number }) => [i.member, i.count])).toEqual(expected);
    expect(top.body).toMatchObject({ exact: true, maxError: 0 });
    // the union holds the 40 members of hour H-2 and its markers, not hour H-1's 3,000
    const union = `${api.prefix}:trending:s:u:24:${label(H)}`;
    expect(await redisCall(api, union, "ZCARD", "$KEY")).toBe(42);
    const leader = expected[0] ?? ["", 0];
    expect((await api.get(`/v1/trending/s/members/${leader[0]}?window=24h`)).body).toMatchObject({
      count: leader[1],
      rank: 1,
      rankExact: true,
    });

    // compaction trims hour H-1 to 50 and completes the union the read built
    const job = await compactTrending(ctxOf(api, T0 + 60_000), { keep: 50 });
    expect(job).toMatchObject({ streams: 1, hoursTrimmed: 1, membersRemoved: 2950, unionsBuilt: 1, more: false });
    expect(await redisCall(api, union, "ZCARD", "$KEY")).toBeLessThanOrEqual(40 + 50 + 1);
    const after = await api.get("/v1/trending/s/top?n=10&window=24h");
    expect(after.body.maxError).toBe(cutOf(log, H - 1, 50));
    // the 50 kept per hour hold the top 10: counts are exact, the bound is what trimming could hide
    expect(after.body.items).toEqual(top.body.items);
  });
});

describe("compaction in bounded scripts", () => {
  const KEEP = 10;
  const api = createTestApi({ label: "trend-bw-compact", start: T0 });
  afterAll(() => api.cleanup());

  it("trims a big hour by copying its top keep, keeps its expiry, and records the cut", async () => {
    const log: Event[] = [];
    await record(api, "big", log, hourOf(H - 1, 500));
    const bucket = `${api.prefix}:trending:big:h:${label(H - 1)}`;
    const ttl = Number(await redisCall(api, bucket, "TTL", "$KEY"));
    const job = await compactTrending(ctxOf(api), { keep: KEEP });
    expect(job).toMatchObject({ streams: 1, hoursTrimmed: 1, membersRemoved: 490, more: false });
    expect(await redisCall(api, bucket, "ZCARD", "$KEY")).toBe(KEEP + 1);
    expect(Number(await redisCall(api, bucket, "TTL", "$KEY"))).toBeGreaterThan(ttl - 60);
    const top = await api.get(`/v1/trending/big/top?n=${KEEP}&window=1h`);
    expect(top.body.maxError).toBe(cutOf(log, H - 1, KEEP));
    const expected = [...counts(log, H - 1, H - 1)].sort((a, b) => b[1] - a[1]).slice(0, KEEP);
    expect(top.body.items.map((i: { member: string; count: number }) => [i.member, i.count])).toEqual(expected);
  });

  it("catches up 24 missed hours in scripts of bounded work, resumably, in one run or over several", async () => {
    const logs: Record<string, Event[]> = { one: [], sliced: [] };
    for (const stream of ["one", "sliced"]) {
      for (let back = 24; back >= 1; back--) await record(api, stream, logs[stream] ?? [], hourOf(H - back, 200));
    }
    // 24 hours × min(190 removed, keep 10) = 240 member moves; a budget of 25 fits two hours a script
    const first = await compactTrending(ctxOf(api), { keep: KEEP, scriptBudget: 25, maxBatches: 5, batchSize: 1 });
    expect(first.more).toBe(true);
    expect(first.hoursTrimmed).toBe(10);
    const second = await compactTrending(ctxOf(api), { keep: KEEP, scriptBudget: 25 });
    expect(second).toMatchObject({ more: false, hoursTrimmed: 38, streams: 2 });
    const again = await compactTrending(ctxOf(api), { keep: KEEP });
    expect(again).toMatchObject({ streams: 0, hoursTrimmed: 0 });
    for (const stream of ["one", "sliced"]) {
      const log = logs[stream] ?? [];
      const top = await api.get(`/v1/trending/${stream}/top?n=5&window=24h`);
      let cuts = 0;
      for (let back = 24; back >= 1; back--) cuts += cutOf(log, H - back, KEEP);
      expect(top.body.maxError, stream).toBe(cuts);
      // never over-counted, never under by more than maxError
      const truth = counts(log, H - 24, H);
      for (const item of top.body.items as { member: string; count: number }[]) {
        expect(item.count).toBeLessThanOrEqual(truth.get(item.member) ?? 0);
        expect(item.count).toBeGreaterThanOrEqual((truth.get(item.member) ?? 0) - cuts);
      }
      for (let back = 24; back >= 1; back--) {
        expect(await redisCall(api, `${api.prefix}:trending:${stream}:h:${label(H - back)}`, "ZCARD", "$KEY")).toBe(
          KEEP + 1,
        );
      }
    }
  });
});

describe("member lookup", () => {
  const api = createTestApi({ label: "trend-bw-member", start: T0, vars: { TRENDING_KEEP: "0" } });
  afterAll(() => api.cleanup());

  it("gives rank bounds, not a merge, for a member deep in a big window, and the exact rank near the top", async () => {
    const log: Event[] = [];
    for (const back of [2, 1, 0]) {
      await record(
        api,
        "deep",
        log,
        Array.from({ length: 2500 }, (_, i) => ({ member: `d${i}`, count: 1 + (i % 3), at: T0 - back * HOUR })),
      );
    }
    await record(api, "deep", log, [{ member: "top", count: 1000, at: T0 }]);
    const truth = [...counts(log, H - 24, H)].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    const rankOf = (m: string) => truth.findIndex(([x]) => x === m) + 1;

    const top = await api.cost(() => api.get("/v1/trending/deep/members/top?window=24h"));
    expect(top.result.body).toMatchObject({ count: 1000, rank: 1, rankExact: true });
    const deep = await api.cost(() => api.get("/v1/trending/deep/members/d4?window=24h"));
    expect(deep.result.body.rankExact).toBe(false);
    expect(deep.result.body.rank).toBeLessThanOrEqual(rankOf("d4"));
    expect(deep.result.body.rankMax).toBeGreaterThanOrEqual(rankOf("d4"));
    expect(deep.result.body.count).toBe(truth.find(([m]) => m === "d4")?.[1]);
    // a handful of commands, however many members the window holds
    expect(deep.commands).toBeLessThanOrEqual(16);
  });
});

describe("a tie mass deeper than the threshold read goes, over a big window", () => {
  const api = createTestApi({ label: "trend-bw-ties", start: T0 });
  afterAll(() => api.cleanup());

  it("answers from its candidates with a widened maxError instead of merging more than mergeMax members", async () => {
    const log: Event[] = [];
    await record(api, "flat", log, [
      ...["k", "l"].map((member, i) => ({ member, count: 5 + i, at: T0 - 2 * HOUR })),
      ...Array.from({ length: 600 }, (_, i) => ({ member: `p${i}`, count: 1, at: T0 - HOUR })),
      ...Array.from({ length: 600 }, (_, i) => ({ member: `c${i}`, count: 1, at: T0 })),
    ]);
    const options = { retentionHours: 50, n: 10, windowHours: 24, firstDepth: 16, maxDepth: 64 };
    // small enough to merge: exact, as before
    const merged = await topTrending(ctxOf(api), "flat", { ...options, mergeMax: 10_000 });
    expect(merged).toMatchObject({ exact: true, maxError: 0 });
    // too big to merge: no merge, a bound instead
    const bounded = await topTrending(ctxOf(api), "flat", { ...options, mergeMax: 100 });
    expect(bounded.exact).toBe(false);
    expect(bounded.topProven).toBe(false);
    expect(bounded.maxError).toBe(1);
    expect(bounded.items.slice(0, 2).map((i) => i.member)).toEqual(["l", "k"]);
    // what maxError promises: counts never high nor more than maxError low, and any member left out
    // counts at most the n-th count + maxError
    const truth = counts(log, H - 24, H);
    for (const item of bounded.items) {
      expect(item.count).toBeLessThanOrEqual(truth.get(item.member) ?? 0);
      expect(item.count).toBeGreaterThanOrEqual((truth.get(item.member) ?? 0) - bounded.maxError);
    }
    const last = bounded.items[bounded.items.length - 1]?.count ?? 0;
    const shown = new Set(bounded.items.map((i) => i.member));
    for (const [member, count] of truth)
      if (!shown.has(member)) expect(count).toBeLessThanOrEqual(last + bounded.maxError);
    expect((await api.keys()).filter((k) => k.endsWith(":tmp"))).toEqual([]);
  });
});

describe("a flat tie too big to merge", () => {
  const api = createTestApi({ label: "trend-bw-flat", start: T0 });
  afterAll(() => api.cleanup());

  it("says it is not exact even when the widened maxError is 0 (tied members it did not see may rank first)", async () => {
    const log: Event[] = [];
    await record(
      api,
      "flat",
      log,
      Array.from({ length: 300 }, (_, i) => ({ member: `c${299 - i}`, count: 1, at: T0 })),
    );
    const top = await topTrending(ctxOf(api), "flat", {
      retentionHours: 50,
      n: 10,
      windowHours: 24,
      firstDepth: 16,
      maxDepth: 64,
      mergeMax: 100,
    });
    expect(top).toMatchObject({ exact: false, topProven: false, maxError: 0 });
    expect(top.items.every((i) => i.count === 1)).toBe(true);
    const merged = await topTrending(ctxOf(api), "flat", {
      retentionHours: 50,
      n: 10,
      windowHours: 24,
      firstDepth: 16,
      maxDepth: 64,
    });
    expect(merged).toMatchObject({ exact: true, maxError: 0 });
    expect(merged.items.map((i) => i.member)).toEqual([
      "c0",
      "c1",
      "c10",
      "c100",
      "c101",
      "c102",
      "c103",
      "c104",
      "c105",
      "c106",
    ]);
  });
});
