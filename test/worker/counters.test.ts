import { afterAll, describe, expect, it, vi } from "vitest";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "counters", start: "2010-12-06T09:00:00Z" });
afterAll(() => api.cleanup());

const base = "/v1/counters";

/** Seed 001's intervals and counts; the post never gives 20's count, only that it ranks below 40 (5) and under 10. */
const BOOT_TIMES: [string, number][] = [
  ["20", 3],
  ["40", 5],
  ["60", 21],
  ["90", 10],
  ["120", 10],
  ["160", 22],
];

async function seedBootTimes(counter: string) {
  // one ZINCRBY per instance, as the post does (redis.zincrby(key, 1, interval)), batched in one request
  const items = BOOT_TIMES.flatMap(([member, count]) => Array.from({ length: count }, () => ({ member })));
  const res = await api.post(`${base}/${counter}/incr`, { items });
  expect(res.status).toBe(200);
  return res;
}

describe("seed 001: boot-time intervals in a sorted set", () => {
  it("gives the post's top five with scores (zrevrange 0 4 withscores)", async () => {
    await seedBootTimes("instance_startup_time");
    const res = await api.get(`${base}/instance_startup_time/top?n=5`);
    expect(res.status).toBe(200);
    // => ["160", "22", "60", "21", "90", "10", "120", "10", "40", "5"]
    expect(res.body.items).toEqual([
      { rank: 1, member: "160", score: 22 },
      { rank: 2, member: "60", score: 21 },
      { rank: 3, member: "90", score: 10 },
      { rank: 4, member: "120", score: 10 },
      { rank: 5, member: "40", score: 5 },
    ]);
  });

  it("gives 60's score (zscore => 21) and 160's rank from the top (zrevrank => 0, i.e. rank 1)", async () => {
    const sixty = await api.get(`${base}/instance_startup_time/members/60`);
    expect(sixty.status).toBe(200);
    expect(sixty.body).toMatchObject({ member: "60", score: 21, rank: 2, rankFromBottom: 5 });
    const top = await api.get(`${base}/instance_startup_time/members/160`);
    // the post calls zrank but means zrevrank: zrank of 160 is 5, its rank from the top is 0 (1-based: 1)
    expect(top.body).toMatchObject({ member: "160", score: 22, rank: 1, rankFromBottom: 6 });
    const missing = await api.get(`${base}/instance_startup_time/members/999`);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("not_found");
  });

  it("gives the post's score ranges (zrangebyscore 10 20, 10 +inf)", async () => {
    const mid = await api.get(`${base}/instance_startup_time/range?min=10&max=20`);
    expect(mid.status).toBe(200);
    // => ["120", "10", "90", "10"]
    expect(mid.body).toEqual({
      items: [
        { member: "120", score: 10 },
        { member: "90", score: 10 },
      ],
      count: 2,
    });
    const open = await api.get(`${base}/instance_startup_time/range?min=10&max=%2Binf`);
    // => ["120", "10", "90", "10", "60", "21", "160", "22"]
    expect(open.body.items.map((i: any) => i.member)).toEqual(["120", "90", "60", "160"]);
    expect(open.body.count).toBe(4);
    const bare = await api.get(`${base}/instance_startup_time/range?min=10&max=+inf`);
    expect(bare.body).toEqual(open.body);
    const exclusive = await api.get(`${base}/instance_startup_time/range?min=(10&max=(22&limit=1`);
    expect(exclusive.body).toEqual({ items: [{ member: "60", score: 21 }], count: 1 });
    const desc = await api.get(`${base}/instance_startup_time/range?min=-inf&max=10&order=desc&limit=2`);
    expect(desc.body).toEqual({
      items: [
        { member: "90", score: 10 },
        { member: "120", score: 10 },
      ],
      count: 4,
    });
  });

  it("orders every interval by its own value with its score, without SORT (the post's sort + multi)", async () => {
    const res = await api.get(`${base}/instance_startup_time/sorted?by=member&order=asc`);
    expect(res.status).toBe(200);
    // => ["20", "40", "60", "90", "120", "160"], now with the scores in the same call
    expect(res.body.numeric).toBe(true);
    expect(res.body.items).toEqual(BOOT_TIMES.map(([member, score]) => ({ member, score })));
    const desc = await api.get(`${base}/instance_startup_time/sorted?order=desc`);
    expect(desc.body.items.map((i: any) => i.member)).toEqual(["160", "120", "90", "60", "40", "20"]);
  });

  it("rolls two days up into the week with SUM and MAX, read directly and stored as a rollup", async () => {
    // 12 instances took 60 s on 2010-11-29 and 15 on 2010-11-30 (the post's example), plus others
    const day1 = "2010-11-29T10:00:00Z";
    const day2 = "2010-11-30T10:00:00Z";
    const items = [
      { member: "60", by: 12, period: "day", at: day1 },
      { member: "120", by: 4, period: "day", at: day1 },
      { member: "60", by: 15, period: "day", at: day2 },
      { member: "160", by: 7, period: "day", at: day2 },
    ];
    expect((await api.post(`${base}/boot/incr`, { items })).status).toBe(200);

    const sum = await api.get(`${base}/boot/top?period=day&from=2010-11-29&to=2010-12-05`);
    expect(sum.status).toBe(200);
    expect(sum.body.items).toEqual([
      { rank: 1, member: "60", score: 27 },
      { rank: 2, member: "160", score: 7 },
      { rank: 3, member: "120", score: 4 },
    ]);
    expect(sum.body.range).toMatchObject({ period: "day", buckets: 7, aggregate: "sum", finished: true });
    const max = await api.get(`${base}/boot/members/60?period=day&from=2010-11-29&to=2010-11-30&aggregate=max`);
    expect(max.body).toMatchObject({ score: 15, rank: 1 });
    const min = await api.get(`${base}/boot/members/60?period=day&from=2010-11-29&to=2010-11-30&aggregate=min`);
    expect(min.body.score).toBe(12);

    // zunionstore('instance_startup_time:week49', [...two days...]); ISO calls that week 48
    const stored = await api.post(
      `${base}/boot.2010-W48/union`,
      { sources: [{ counter: "boot", period: "day", from: "2010-11-29", to: "2010-12-05" }] },
      { key: "admin" },
    );
    expect(stored.status).toBe(200);
    expect(stored.body).toMatchObject({ counter: "boot.2010-W48", members: 3, sourcesUsed: 2, sourceKeys: 7 });
    expect((await api.get(`${base}/boot.2010-W48/members/60`)).body.score).toBe(27);
    const maxed = await api.post(
      `${base}/boot.2010-W48/union`,
      { sources: [{ counter: "boot", period: "day", from: "2010-11-29", to: "2010-11-30" }], aggregate: "max" },
      { key: "admin" },
    );
    expect(maxed.status).toBe(200);
    expect((await api.get(`${base}/boot.2010-W48/members/60`)).body.score).toBe(15);
  });

  it("unions plain counters with weights, the post's day-named keys included", async () => {
    await api.post(`${base}/ist.20101129/incr`, { member: "60", by: 12 });
    await api.post(`${base}/ist.20101130/incr`, {
      items: [
        { member: "60", by: 15 },
        { member: "90", by: 1 },
      ],
    });
    const res = await api.post(
      `${base}/ist.week48/union`,
      { sources: ["ist.20101129", "ist.20101130"], weights: [1, 2], ttl: 3600 },
      { key: "admin" },
    );
    expect(res.status).toBe(200);
    const top = await api.get(`${base}/ist.week48/top`);
    expect(top.body.items).toEqual([
      { rank: 1, member: "60", score: 42 },
      { rank: 2, member: "90", score: 2 },
    ]);
    const ttl = await command<number>(api.target, "TTL", `${api.prefix}:counters:ist.week48`);
    expect(ttl).toBeGreaterThan(3500);
    expect(ttl).toBeLessThanOrEqual(3600);
    expect((await api.post(`${base}/ist.week48/union`, { sources: ["ist.20101129"] }, { key: "ingest" })).status).toBe(
      403,
    );
  });
});

describe("seed 002: prefix:counter_id counters with a TTL", () => {
  it("gives page_2 as the top and the others as the bottom (last_n), with the TTL set in the same round trip", async () => {
    await api.post(`${base}/hits.test_id/incr`, { member: "page_1", by: 1, ttl: 120 });
    const { result, requests } = await api.cost(() =>
      api.post(`${base}/hits.test_id/incr`, { member: "page_2", by: 3, ttl: 120 }),
    );
    expect(result.body).toEqual({ results: [{ member: "page_2", score: 3 }] });
    expect(requests).toBe(1);
    await api.post(`${base}/hits.test_id/incr`, { member: "page_3", by: 1, ttl: 120 });
    const best = await api.get(`${base}/hits.test_id/top?n=1`);
    // best => ('page_2', 3)
    expect(best.body.items).toEqual([{ rank: 1, member: "page_2", score: 3 }]);
    const bottom = await api.get(`${base}/hits.test_id/bottom?n=2`);
    expect(bottom.body.items).toEqual([
      { rank: 1, member: "page_1", score: 1 },
      { rank: 2, member: "page_3", score: 1 },
    ]);
    const ttl = await command<number>(api.target, "TTL", `${api.prefix}:counters:hits.test_id`);
    expect(ttl).toBeGreaterThan(100);
    // the second write extended it: to the ttl plus a tenth (so steady writes need not extend it each time)
    expect(ttl).toBeLessThanOrEqual(132);
  });

  it("decrements (decr = incr with a negative count) and deletes a member", async () => {
    const res = await api.post(`${base}/hits.test_id/incr`, {
      items: [
        { member: "page_2", by: -1 },
        { member: "page_2", by: -0.5 },
      ],
    });
    expect(res.body.results).toEqual([
      { member: "page_2", score: 2 },
      { member: "page_2", score: 1.5 },
    ]);
    expect((await api.del(`${base}/hits.test_id/members/page_2`)).status).toBe(204);
    expect((await api.get(`${base}/hits.test_id/members/page_2`)).status).toBe(404);
  });

  it("lets the counter expire when its TTL runs out, and the list forgets it", async () => {
    await api.post(`${base}/short/incr`, { member: "x", ttl: 1 });
    expect((await api.get(base)).body.counters).toContain("short");
    // Redis expires on its own clock: wait for the key to go (no duration is asserted)
    await vi.waitFor(
      async () => expect(await command<number>(api.target, "EXISTS", `${api.prefix}:counters:short`)).toBe(0),
      { timeout: 5000, interval: 200 },
    );
    expect((await api.get(`${base}/short/top`)).body.items).toEqual([]);
    api.advance(2000);
    expect((await api.get(base)).body.counters).not.toContain("short");
  });

  it("refreshes the TTL on every write that sends one and keeps it on writes that do not", async () => {
    await api.post(`${base}/refresh/incr`, { member: "a", ttl: 50 });
    await api.post(`${base}/refresh/incr`, { member: "a", ttl: 5000 });
    const key = `${api.prefix}:counters:refresh`;
    expect(await command<number>(api.target, "TTL", key)).toBeGreaterThan(4900);
    await api.post(`${base}/refresh/incr`, { member: "a" });
    expect(await command<number>(api.target, "TTL", key)).toBeGreaterThan(4900);
  });
});

describe("member ordering", () => {
  it("orders numerically only when every member is a number, else by code point", async () => {
    await api.post(`${base}/nums/incr`, {
      items: ["10", "9", "-2.5", "100", "1e1", "0.5"].map((member) => ({ member })),
    });
    const nums = await api.get(`${base}/nums/sorted`);
    expect(nums.body.numeric).toBe(true);
    expect(nums.body.items.map((i: any) => i.member)).toEqual(["-2.5", "0.5", "9", "10", "1e1", "100"]);
    await api.post(`${base}/mixed/incr`, { items: ["10", "9", "b", "100", "A", "é"].map((member) => ({ member })) });
    const mixed = await api.get(`${base}/mixed/sorted?by=member`);
    expect(mixed.body.numeric).toBe(false);
    expect(mixed.body.items.map((i: any) => i.member)).toEqual(["10", "100", "9", "A", "b", "é"]);
    const byScore = await api.get(`${base}/nums/sorted?by=score&order=desc`);
    expect(byScore.body.items).toHaveLength(6);
  });
});
