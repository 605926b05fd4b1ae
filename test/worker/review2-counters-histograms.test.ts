import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi } from "../helpers/worker.ts";

// Adversarial review 2 (counters and histograms against /work/shared/API.md and docs/): each test
// probes one combination the feature tests do not, through HTTP (app.request in workerd).
const api = createTestApi({ label: "review2-ch", start: "2026-11-22T12:30:00Z" });
afterAll(() => api.cleanup());
beforeEach(() => api.setNow("2026-11-22T12:30:00Z"));

const C = "/v1/counters";
const H = "/v1/histograms";
const admin = { key: "admin" } as const;
const ckey = (...parts: string[]) => [api.prefix, "counters", ...parts].join(":");

describe("counters: one request mixing features", () => {
  it("a batch mixing plain, hour and day items lands each in its own key, scores in order", async () => {
    const res = await api.post(`${C}/mix/incr`, {
      items: [
        { member: "a", by: 2, period: "hour" },
        { member: "a", by: 3, period: "day" },
        { member: "a" },
        { member: "a", by: 4, period: "hour" },
        { member: "a", by: -1 },
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.results.map((r: any) => r.score)).toEqual([2, 3, 1, 6, 0]);
    expect((await api.get(`${C}/mix/members/a`)).body.score).toBe(0);
    expect((await api.get(`${C}/mix/members/a?period=hour`)).body.score).toBe(6);
    expect((await api.get(`${C}/mix/members/a?period=day`)).body.score).toBe(3);
    const month = await api.get(`${C}/mix/members/a?period=month`);
    expect(month.status).toBe(404);
  });

  it("a batch mixing ttls gives each key the largest ttl of its items, and none to a key written without", async () => {
    const res = await api.post(`${C}/ttlmix/incr`, {
      items: [
        { member: "a", ttl: 100 },
        { member: "b", ttl: 5000 },
        { member: "c", ttl: 50 },
        { member: "a", period: "day", ttl: 10 },
        { member: "a", period: "day" },
        { member: "z", period: "hour" },
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const plain = Number(await command(api.target, "PTTL", ckey("ttlmix")));
    expect(plain).toBeGreaterThan(4990_000);
    expect(plain).toBeLessThanOrEqual(5500_000);
    const day = Number(await command(api.target, "PTTL", ckey("ttlmix", "day", "20261122")));
    expect(day).toBeGreaterThan(9_000);
    expect(day).toBeLessThanOrEqual(11_000);
    const hour = Number(await command(api.target, "PTTL", ckey("ttlmix", "hour", "2026112212")));
    expect(hour).toBe(-1);
  });

  it("a ttl-less write after a ttl write keeps the expiry, and a shorter ttl never shortens it", async () => {
    await api.post(`${C}/ttlkeep/incr`, { member: "a", ttl: 1000 });
    await api.post(`${C}/ttlkeep/incr`, { member: "a" });
    await api.post(`${C}/ttlkeep/incr`, { member: "a", ttl: 2 });
    const t = Number(await command(api.target, "PTTL", ckey("ttlkeep")));
    expect(t).toBeGreaterThan(900_000);
    expect((await api.get(`${C}/ttlkeep/members/a`)).body.score).toBe(3);
  });

  it("one bad item anywhere in a mixed batch is a 400 and writes no key", async () => {
    for (const bad of [
      { member: "x", period: "year" },
      { member: "x", at: "2026-11-22T10:00:00Z" },
      { member: "x", ttl: 0 },
      { member: "x", by: 1e12 + 1 },
      { member: "x", period: "day", at: "2026-02-30" },
      { member: "x", period: "day", at: "2026-11-22T12:36:00Z" },
      { member: "x", period: "day", at: "2026-11-01T00:00:00Z", ttl: 3600 },
      { member: "" },
      { member: "x", by: "1" },
    ]) {
      const res = await api.post(`${C}/bad/incr`, {
        items: [{ member: "ok", period: "hour", ttl: 60 }, { member: "ok" }, bad],
      });
      expect(res.status, JSON.stringify(bad)).toBe(400);
    }
    expect((await api.keys()).filter((k) => k.includes(":bad"))).toEqual([]);
  });
});

describe("counters: reads right after writes, in the same hour", () => {
  it("a range ending now follows writes to the current hour and late writes to a cached hour", async () => {
    api.setNow("2026-11-22T10:05:00Z");
    await api.post(`${C}/same/incr`, { member: "a", period: "hour", at: "2026-11-22T09:10:00Z" });
    await api.post(`${C}/same/incr`, { member: "a", period: "hour", by: 2 });
    const url = `${C}/same/members/a?period=hour&from=2026-11-22T08:00:00Z`;
    expect((await api.get(url)).body.score).toBe(3);
    await api.post(`${C}/same/incr`, { member: "a", period: "hour", by: 4 });
    expect((await api.get(url)).body.score).toBe(7);
    await api.post(`${C}/same/incr`, { member: "a", period: "hour", by: 8, at: "2026-11-22T08:59:59.999Z" });
    expect((await api.get(url)).body.score).toBe(15);
    const top = await api.get(`${C}/same/top?period=hour&from=2026-11-22T08:00:00Z`);
    expect(top.body.items).toEqual([{ rank: 1, member: "a", score: 15 }]);
    // the finished part alone, twice (cache), then a late write into it
    const done = `${C}/same/members/a?period=hour&from=2026-11-22T08:00:00Z&to=2026-11-22T09:00:00Z`;
    expect((await api.get(done)).body.score).toBe(9);
    expect((await api.get(done)).body.score).toBe(9);
    await api.post(`${C}/same/incr`, { member: "a", period: "hour", by: 16, at: "2026-11-22T09:30:00Z" });
    expect((await api.get(done)).body.score).toBe(25);
    // the day rollups agree with the hours
    expect((await api.get(`${C}/same/members/a?period=hour&from=2026-11-22T00:00:00Z`)).body.score).toBe(31);
    expect((await api.get(`${C}/same/members/a?period=hour&from=2026-11-01T00:00:00Z`)).body.score).toBe(31);
  });

  it("member delete in the current hour then read: gone from hour reads, day reads and top", async () => {
    api.setNow("2026-11-22T10:05:00Z");
    await api.post(`${C}/del/incr`, {
      items: [
        { member: "a", period: "hour", by: 5 },
        { member: "b", period: "hour", by: 3 },
        { member: "a", period: "hour", by: 7, at: "2026-11-22T03:00:00Z" },
      ],
    });
    const whole = `${C}/del/top?period=hour&from=2026-11-01T00:00:00Z`;
    expect((await api.get(whole)).body.items.map((i: any) => [i.member, i.score])).toEqual([
      ["a", 12],
      ["b", 3],
    ]);
    const d = await api.del(`${C}/del/members/a?period=hour&from=2026-11-22T10:00:00Z&to=2026-11-22T10:00:00Z`);
    expect(d.status, JSON.stringify(d.body)).toBe(204);
    expect((await api.get(whole)).body.items.map((i: any) => [i.member, i.score])).toEqual([
      ["a", 7],
      ["b", 3],
    ]);
    expect((await api.get(`${C}/del/members/a?period=hour`)).status).toBe(404);
    expect((await api.get(`${C}/del/members/a?period=hour&from=2026-11-22T00:00:00Z`)).body.score).toBe(7);
  });
});

describe("counters: calendar edges", () => {
  it("ISO week 53 spans the year edge; a week read by dates in either year reads that one bucket", async () => {
    api.setNow("2027-01-04T00:01:00Z");
    await api.post(`${C}/iso/incr`, {
      items: [
        { member: "a", period: "week", at: "2026-12-28T00:00:00Z" },
        { member: "a", period: "week", at: "2027-01-03T23:59:59.999Z", by: 2 },
        { member: "a", period: "week", at: "2026-12-27T23:59:59.999Z", by: 4 },
        { member: "a", period: "week", by: 8 },
      ],
    });
    const keys = await api.keys();
    expect(keys).toContain(ckey("iso", "week", "2026-W53"));
    expect(keys).toContain(ckey("iso", "week", "2026-W52"));
    expect(keys).toContain(ckey("iso", "week", "2027-W01"));
    const one = await api.get(`${C}/iso/members/a?period=week&from=2027-01-01&to=2027-01-01`);
    expect(one.body.score).toBe(3);
    const two = await api.get(`${C}/iso/members/a?period=week&from=2026-12-27&to=2027-01-03`);
    expect(two.body.score).toBe(7);
    expect(two.body.range.buckets).toBe(2);
  });

  it("a leap day has its own day bucket and belongs to February", async () => {
    api.setNow("2028-03-01T00:02:00Z");
    await api.post(`${C}/leap/incr`, {
      items: [
        { member: "a", period: "day", at: "2028-02-29T23:59:59.999Z" },
        { member: "a", period: "day", at: "2028-02-28T00:00:00Z", by: 2 },
        { member: "a", period: "day", by: 4 },
        { member: "a", period: "hour", at: "2028-02-29T23:30:00Z", by: 16 },
      ],
    });
    expect((await api.get(`${C}/leap/members/a?period=day&from=2028-02-29&to=2028-02-29`)).body.score).toBe(1);
    expect((await api.get(`${C}/leap/members/a?period=day&from=2028-02-01&to=2028-02-29`)).body.score).toBe(3);
    expect((await api.get(`${C}/leap/members/a?period=day&from=2028-02-01`)).body.score).toBe(7);
    expect(
      (await api.get(`${C}/leap/members/a?period=hour&from=2028-02-29T00:00:00Z&to=2028-02-29T23:00:00Z`)).body.score,
    ).toBe(16);
    expect((await api.get(`${C}/leap/members/a?period=hour&from=2028-02-01T00:00:00Z`)).body.score).toBe(16);
    expect((await api.get(`${C}/leap/members/a?period=day&from=2027-02-29`)).status).toBe(400);
  });

  it("a month read across a year edge sums December and January", async () => {
    api.setNow("2027-01-01T00:01:00Z");
    await api.post(`${C}/ye/incr`, {
      items: [
        { member: "a", period: "month", at: "2026-12-31T23:59:59.999Z" },
        { member: "a", period: "month", by: 2 },
        { member: "a", period: "day", at: "2026-12-31T23:59:59.999Z", by: 4 },
        { member: "a", period: "day", by: 8 },
      ],
    });
    expect((await api.get(`${C}/ye/members/a?period=month&from=2026-12-01`)).body.score).toBe(3);
    expect((await api.get(`${C}/ye/members/a?period=month&from=2026-12-31&to=2026-12-31`)).body.score).toBe(1);
    expect((await api.get(`${C}/ye/members/a?period=day&from=2026-12-01`)).body.score).toBe(12);
    expect((await api.get(`${C}/ye/members/a?period=day&from=2026-12-31&to=2026-12-31`)).body.score).toBe(4);
    expect((await api.get(`${C}/ye/members/a?period=day&from=2027-01-01`)).body.score).toBe(8);
  });

  it("from after to is a 400, not an empty answer", async () => {
    const res = await api.get(`${C}/x/top?period=day&from=2026-11-20&to=2026-11-19`);
    expect(res.status).toBe(400);
  });
});

describe("counters: ranks, ties, ranges", () => {
  it("ties: the rank a member read gives matches its place in top and bottom", async () => {
    await api.post(`${C}/tie/incr`, {
      items: [
        { member: "b", by: 5 },
        { member: "a", by: 5 },
        { member: "c", by: 5 },
        { member: "d", by: 9 },
        { member: "e", by: 1 },
      ],
    });
    const top = (await api.get(`${C}/tie/top?n=10`)).body.items;
    const bottom = (await api.get(`${C}/tie/bottom?n=10`)).body.items;
    expect(top.map((i: any) => i.rank)).toEqual([1, 2, 3, 4, 5]);
    expect(bottom.map((i: any) => i.rank)).toEqual([1, 2, 3, 4, 5]);
    for (const m of ["a", "b", "c", "d", "e"]) {
      const r = (await api.get(`${C}/tie/members/${m}`)).body;
      expect(top.find((i: any) => i.member === m).rank, m).toBe(r.rank);
      expect(bottom.find((i: any) => i.member === m).rank, m).toBe(r.rankFromBottom);
      expect(r.rank + r.rankFromBottom).toBe(6);
    }
  });

  it("ranks on a period union match the union's top order", async () => {
    await api.post(`${C}/tieu/incr`, {
      items: [
        { member: "b", by: 5, period: "day" },
        { member: "a", by: 2, period: "day", at: "2026-11-21T12:00:00Z" },
        { member: "a", by: 3, period: "day" },
        { member: "c", by: 6, period: "day", at: "2026-11-20T12:00:00Z" },
      ],
    });
    const q = "period=day&from=2026-11-20";
    const top = (await api.get(`${C}/tieu/top?n=10&${q}`)).body.items;
    expect(top.map((i: any) => [i.rank, i.member, i.score])).toEqual([
      [1, "c", 6],
      [2, "b", 5],
      [3, "a", 5],
    ]);
    for (const m of ["a", "b", "c"]) {
      const r = (await api.get(`${C}/tieu/members/${m}?${q}`)).body;
      expect(r.rank, m).toBe(top.find((i: any) => i.member === m).rank);
      expect(r.rank + r.rankFromBottom).toBe(4);
    }
  });

  it("range: exclusive bounds, infinities, limit and count", async () => {
    await api.post(`${C}/rng/incr`, {
      items: [
        { member: "a", by: 10 },
        { member: "b", by: 20 },
        { member: "c", by: 30 },
        { member: "d", by: -5 },
      ],
    });
    const r1 = (await api.get(`${C}/rng/range?min=(10&max=30`)).body;
    expect(r1.items.map((i: any) => i.member)).toEqual(["b", "c"]);
    expect(r1.count).toBe(2);
    const r2 = (await api.get(`${C}/rng/range?min=-inf&max=(20&limit=1`)).body;
    expect(r2.items.map((i: any) => i.member)).toEqual(["d"]);
    const r3 = (await api.get(`${C}/rng/range?min=(30&max=%2Binf`)).body;
    expect(r3.items).toEqual([]);
    expect(r3.count).toBe(0);
    const r4 = (await api.get(`${C}/rng/range?min=30&max=10`)).body;
    expect(r4.items ?? []).toEqual([]);
  });

  it("union: weights and min aggregate over plain counters and a day range", async () => {
    await api.post(`${C}/u1/incr`, {
      items: [
        { member: "a", by: 2 },
        { member: "b", by: 4 },
      ],
    });
    await api.post(`${C}/u2/incr`, { items: [{ member: "a", by: 10, period: "day" }] });
    const res = await api.post(
      `${C}/uout/union`,
      {
        sources: ["u1", { counter: "u2", period: "day", from: "2026-11-22", to: "2026-11-22" }],
        weights: [3, 0.5],
        aggregate: "min",
      },
      admin,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const top = (await api.get(`${C}/uout/top`)).body.items.map((i: any) => [i.member, i.score]);
    expect(top).toEqual([
      ["b", 12],
      ["a", 5],
    ]);
  });
});

describe("histograms: bucket edges and statistics", () => {
  it("values exactly on a boundary, negative values and fractions go in [lower, upper)", async () => {
    await api.put(`${H}/edge`, { bucketWidth: 10 }, admin);
    const res = await api.post(`${H}/edge/observations`, { values: [10, 0, -10, -0.0001, -10.0001, 19.9999, 20] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const b = (await api.get(`${H}/edge`)).body;
    expect(b.buckets).toEqual([
      { lower: -20, upper: -10, count: 1 },
      { lower: -10, upper: 0, count: 2 },
      { lower: 0, upper: 10, count: 1 },
      { lower: 10, upper: 20, count: 2 },
      { lower: 20, upper: 30, count: 1 },
    ]);
    expect(b.min).toBe(-10.0001);
    expect(b.max).toBe(20);
    expect(b.count).toBe(7);
  });

  it("a 0.1 width places 0.3, 0.7 and -0.3 by the rounded bounds", async () => {
    await api.put(`${H}/tenth`, { bucketWidth: 0.1 }, admin);
    await api.post(`${H}/tenth/observations`, { values: [0.3, 0.7, -0.3, 0.6, 1.1] });
    const b = (await api.get(`${H}/tenth`)).body;
    expect(b.buckets).toEqual([
      { lower: -0.3, upper: -0.2, count: 1 },
      { lower: 0.3, upper: 0.4, count: 1 },
      { lower: 0.6, upper: 0.7, count: 1 },
      { lower: 0.7, upper: 0.8, count: 1 },
      { lower: 1.1, upper: 1.2, count: 1 },
    ]);
  });

  it("one value repeated: every percentile is that value; negatives too", async () => {
    await api.put(`${H}/same`, { bucketWidth: 10 }, admin);
    await api.post(`${H}/same/observations`, { values: [-7, -7, -7] });
    const b = (await api.get(`${H}/same`)).body;
    expect([b.min, b.max, b.mean, b.p50, b.p90, b.p99, b.sum]).toEqual([-7, -7, -7, -7, -7, -7, -21]);
  });

  it("percentiles lie in the nearest-rank bucket and are monotone, with negative values", async () => {
    await api.put(`${H}/pct`, { bucketWidth: 5 }, admin);
    const values = [-12, -3, -3, 0, 1, 2, 4.9, 5, 17, 100];
    await api.post(`${H}/pct/observations`, { values });
    const b = (await api.get(`${H}/pct`)).body;
    const sorted = [...values].sort((x, y) => x - y);
    for (const [q, k] of [
      [0.5, "p50"],
      [0.9, "p90"],
      [0.99, "p99"],
    ] as const) {
      const exact = sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]!;
      const lo = Math.floor(exact / 5) * 5;
      expect(b[k], k).toBeGreaterThanOrEqual(lo);
      expect(b[k], k).toBeLessThanOrEqual(lo + 5);
    }
    expect(b.p50).toBeLessThanOrEqual(b.p90);
    expect(b.p90).toBeLessThanOrEqual(b.p99);
    expect(b.mean).toBeCloseTo(values.reduce((s, v) => s + v, 0) / values.length, 9);
  });

  it("top: fuller first, ties to the lower bucket, negative buckets included", async () => {
    await api.put(`${H}/top`, { bucketWidth: 1 }, admin);
    await api.post(`${H}/top/observations`, { values: [3, 3, -2, -2, 1, 1, 7] });
    const b = (await api.get(`${H}/top?top=3`)).body;
    expect(b.top).toEqual([
      { lower: -2, upper: -1, count: 2 },
      { lower: 1, upper: 2, count: 2 },
      { lower: 3, upper: 4, count: 2 },
    ]);
  });

  it("from/to are inclusive UTC days: the last millisecond of a day is in that day only", async () => {
    await api.put(`${H}/days`, { bucketWidth: 1 }, admin);
    await api.post(`${H}/days/observations`, {
      values: [
        { value: 1, at: "2026-11-20T23:59:59.999Z" },
        { value: 2, at: "2026-11-21T00:00:00.000Z" },
        { value: 3, at: Date.parse("2026-11-21T23:59:59.999Z") },
        { value: 4 },
      ],
    });
    const g = async (q: string) => (await api.get(`${H}/days?${q}`)).body;
    expect((await g("from=2026-11-20&to=2026-11-20")).count).toBe(1);
    expect((await g("from=2026-11-21&to=2026-11-21")).sum).toBe(5);
    expect((await g("from=2026-11-21")).sum).toBe(9);
    expect((await g("from=2026-11-20&to=2026-11-21")).max).toBe(3);
    expect((await g("")).sum).toBe(4);
    expect((await api.get(`${H}/days?from=2026-11-22&to=2026-11-21`)).status).toBe(400);
  });

  it("a read across a month edge with rollups and a late observation earlier in the month", async () => {
    api.setNow("2026-12-02T12:00:00Z");
    await api.put(`${H}/mon`, { bucketWidth: 1 }, admin);
    await api.post(`${H}/mon/observations`, {
      values: [
        { value: 1, at: "2026-11-30T23:59:59.999Z" },
        { value: 2, at: "2026-12-01T00:00:00Z" },
        { value: 3 },
        { value: 10, at: "2026-11-29T10:00:00Z" },
      ],
    });
    const all = (await api.get(`${H}/mon?from=2026-11-25`)).body;
    expect([all.count, all.sum, all.min, all.max]).toEqual([4, 16, 1, 10]);
    await api.post(`${H}/mon/observations`, { value: 5, at: "2026-12-01T05:00:00Z" });
    const dec = (await api.get(`${H}/mon?from=2026-12-01`)).body;
    expect([dec.count, dec.sum, dec.min, dec.max]).toEqual([3, 10, 2, 5]);
    const nov = (await api.get(`${H}/mon?from=2026-11-01&to=2026-11-30`)).body;
    expect([nov.count, nov.sum, nov.min, nov.max]).toEqual([2, 11, 1, 10]);
  });

  it("bad input: width change with data is a 409; a bad item in a batch writes nothing", async () => {
    await api.put(`${H}/w`, { bucketWidth: 10 }, admin);
    await api.post(`${H}/w/observations`, { value: 1 });
    expect((await api.put(`${H}/w`, { bucketWidth: 5 }, admin)).status).toBe(409);
    expect((await api.put(`${H}/w`, { bucketWidth: 10 }, admin)).status).toBe(200);
    for (const bad of [
      Number.NaN,
      "3",
      null,
      1e16,
      { value: 1, at: "2026-11-22T12:36:00Z" },
      { value: 1, at: "2026-02-30" },
    ]) {
      const res = await api.post(`${H}/w/observations`, { values: [2, 3, bad] });
      expect(res.status, JSON.stringify(bad)).toBe(400);
    }
    const b = (await api.get(`${H}/w`)).body;
    expect(b.count).toBe(1);
  });
});

describe("histograms: retention and width changes against the month rollups", () => {
  // FIXED (was medium; a longer retention or a new width moves rollupsSince past such months): a PUT that shrinks the retention UNLINKs
  // the days past it but leaves their counts and `s:<day>` sums in the month rollup; a later PUT that
  // raises the retention makes the month's first day "kept" by date arithmetic, so a whole-month read
  // takes the rollup and counts the deleted day again: count 2, sum 3 (with min 2 from the days'
  // extremes: mean 1.5 < min) where the data left is count 1, sum 2. Right: the shrink subtracts
  // the deleted days from their month rollup (or marks the month as not standing for its days).
  it("a retention shrunk then raised again does not bring deleted days back through the month rollup", async () => {
    api.setNow("2026-12-15T12:00:00Z");
    await api.put(`${H}/ret`, { bucketWidth: 10 }, admin);
    await api.post(`${H}/ret/observations`, {
      values: [
        { value: 1, at: "2026-11-01T10:00:00Z" },
        { value: 2, at: "2026-11-20T10:00:00Z" },
      ],
    });
    // 30 days: Nov 1 (kept until Dec 2) is deleted now, Nov 20 stays
    expect((await api.put(`${H}/ret`, { bucketWidth: 10, retentionDays: 30 }, admin)).status).toBe(200);
    const shrunk = (await api.get(`${H}/ret?from=2026-11-01&to=2026-11-30`)).body;
    expect([shrunk.count, shrunk.sum]).toEqual([1, 2]);
    expect((await api.put(`${H}/ret`, { bucketWidth: 10, retentionDays: 400 }, admin)).status).toBe(200);
    const raised = (await api.get(`${H}/ret?from=2026-11-01&to=2026-11-30`)).body;
    expect([raised.count, raised.sum, raised.min]).toEqual([1, 2, 2]);
  });

  // FIXED (was medium; see above): the width-conflict check of PUT looks at day keys only, so once the
  // days are gone (retention shrink, or natural expiry) the width may change while the month rollup
  // still holds bucket indexes of the old width; a whole-month read then shows value 15 stored at
  // width 10 (index 1) as one observation in [1, 2) of the new width 1. Right: count 0 (that data is
  // deleted), or a 409 while a month rollup of the old width lives.
  it("a width change allowed because the days are gone does not read the old rollup's buckets under the new width", async () => {
    api.setNow("2026-12-15T12:00:00Z");
    await api.put(`${H}/wid`, { bucketWidth: 10 }, admin);
    await api.post(`${H}/wid/observations`, { value: 15, at: "2026-11-01T10:00:00Z" });
    expect((await api.put(`${H}/wid`, { bucketWidth: 10, retentionDays: 30 }, admin)).status).toBe(200);
    // no day holds data now, so the width may change
    const put = await api.put(`${H}/wid`, { bucketWidth: 1, retentionDays: 400 }, admin);
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const b = (await api.get(`${H}/wid?from=2026-11-01&to=2026-11-30`)).body;
    expect(b.count).toBe(0);
    expect(b.buckets).toEqual([]);
  });
});

describe("histograms: percentile at a bucket's upper edge", () => {
  // FIXED (was low; the interpolation stops at the middle of the last observation's share): when the cumulative count reaches q·count exactly at
  // a bucket's last observation, the interpolation returns that bucket's upper bound (10), which is
  // outside the bucket [0, 10) that holds the true nearest-rank p99 (0): off by exactly one width, where
  // docs/histograms.md promises "less than one bucketWidth". Right: stay inside the bucket (< 10).
  it("p99 of 99 zeros and one 1000 is within one width of the true 0 (docs: off by less than one bucketWidth)", async () => {
    await api.put(`${H}/p99`, { bucketWidth: 10 }, admin);
    await api.post(`${H}/p99/observations`, { values: [...Array<number>(99).fill(0), 1000] });
    const b = (await api.get(`${H}/p99`)).body;
    expect(b.p50).toBeLessThan(10);
    expect(b.p90).toBeLessThan(10);
    expect(b.p99).toBeLessThan(10);
  });
});

describe("counters: sorted and member reads of a union", () => {
  it("sorted by member numerically over a day union, with negative and exponent members", async () => {
    await api.post(`${C}/num/incr`, {
      items: [
        { member: "10", period: "day" },
        { member: "-2", period: "day", by: 2 },
        { member: "1e1", period: "day", at: "2026-11-21T01:00:00Z", by: 3 },
        { member: "9.5", period: "day", at: "2026-11-21T01:00:00Z" },
      ],
    });
    const s = (await api.get(`${C}/num/sorted?by=member&order=asc&period=day&from=2026-11-21`)).body;
    expect(s.numeric).toBe(true);
    expect(s.items.map((i: any) => i.member)).toEqual(["-2", "9.5", "10", "1e1"]);
    const d = (await api.get(`${C}/num/sorted?by=member&order=desc&period=day&from=2026-11-21`)).body;
    expect(d.items.map((i: any) => i.member)).toEqual(["1e1", "10", "9.5", "-2"]);
  });

  it("aggregate=min over days where a member is missing from one day counts only the days it is in", async () => {
    await api.post(`${C}/agg/incr`, {
      items: [
        { member: "a", period: "day", by: 5 },
        { member: "a", period: "day", by: 2, at: "2026-11-20T01:00:00Z" },
        { member: "b", period: "day", by: 7 },
      ],
    });
    const q = "period=day&from=2026-11-20&aggregate=min";
    expect((await api.get(`${C}/agg/members/a?${q}`)).body.score).toBe(2);
    expect((await api.get(`${C}/agg/members/b?${q}`)).body.score).toBe(7);
    const bottom = (await api.get(`${C}/agg/bottom?${q}`)).body.items.map((i: any) => [i.rank, i.member, i.score]);
    expect(bottom).toEqual([
      [1, "a", 2],
      [2, "b", 7],
    ]);
    const max = (await api.get(`${C}/agg/top?period=day&from=2026-11-20&aggregate=max`)).body.items;
    expect(max.map((i: any) => [i.member, i.score])).toEqual([
      ["b", 7],
      ["a", 5],
    ]);
  });
});

describe("writes dated a few minutes ahead, read by a range ending now", () => {
  it("counters, hour: an increment dated into the next hour is not in a range that ends now", async () => {
    api.setNow("2026-11-22T10:58:00Z");
    await api.post(`${C}/ahead/incr`, {
      items: [
        { member: "a", period: "hour", by: 100, at: "2026-11-22T11:02:00Z" },
        { member: "a", period: "hour", by: 1 },
        { member: "a", period: "hour", by: 10, at: "2026-11-21T10:00:00Z" },
      ],
    });
    const g = async (q: string) => (await api.get(`${C}/ahead/members/a?period=hour&${q}`)).body.score;
    expect(await g("from=2026-11-22T00:00:00Z")).toBe(1);
    expect(await g("from=2026-11-01T00:00:00Z")).toBe(11);
    expect(await g("from=2026-10-01T00:00:00Z")).toBe(11);
    expect(await g("from=2026-11-22T00:00:00Z&to=2026-11-22T11:00:00Z")).toBe(101);
    const top = (await api.get(`${C}/ahead/top?period=hour&from=2026-11-01T00:00:00Z`)).body.items;
    expect(top).toEqual([{ rank: 1, member: "a", score: 11 }]);
  });

  it("counters, day: an increment dated into tomorrow is not in a range that ends now", async () => {
    api.setNow("2026-11-22T23:58:00Z");
    await api.post(`${C}/ahead2/incr`, {
      items: [
        { member: "a", period: "day", by: 100, at: "2026-11-23T00:02:00Z" },
        { member: "a", period: "day", by: 1 },
        { member: "a", period: "day", by: 10, at: "2026-11-02T00:00:00Z" },
        { member: "a", period: "hour", by: 1000, at: "2026-11-23T00:01:00Z" },
        { member: "a", period: "hour", by: 1 },
      ],
    });
    const g = async (q: string) => (await api.get(`${C}/ahead2/members/a?${q}`)).body.score;
    expect(await g("period=day&from=2026-11-01")).toBe(11);
    expect(await g("period=day&from=2026-11-22")).toBe(1);
    expect(await g("period=day&from=2026-11-01&to=2026-11-23")).toBe(111);
    expect(await g("period=hour&from=2026-11-01T00:00:00Z")).toBe(1);
    expect(await g("period=hour&from=2026-11-22T00:00:00Z")).toBe(1);
  });

  it("histograms: a value dated tomorrow at 23:58 is not in today's range nor in this month so far", async () => {
    api.setNow("2026-11-22T23:58:00Z");
    await api.put(`${H}/ahead`, { bucketWidth: 1 }, admin);
    await api.post(`${H}/ahead/observations`, {
      values: [{ value: 100, at: "2026-11-23T00:02:00Z" }, 1, { value: 5, at: "2026-11-03T00:00:00Z" }],
    });
    const g = async (q: string) => (await api.get(`${H}/ahead?${q}`)).body;
    expect((await g("")).count).toBe(1);
    const month = await g("from=2026-11-01");
    expect([month.count, month.sum, month.max]).toEqual([2, 6, 5]);
    const month2 = await g("from=2026-11-01&to=2026-11-22");
    expect([month2.count, month2.sum, month2.max]).toEqual([2, 6, 5]);
    const withTomorrow = await g("from=2026-11-01&to=2026-11-23");
    expect([withTomorrow.count, withTomorrow.sum, withTomorrow.max]).toEqual([3, 106, 100]);
  });
});

describe("time edges of writes", () => {
  it("counters: exactly 5 minutes ahead is taken, one ms more is a 400; an ISO offset is read as UTC", async () => {
    api.setNow("2026-11-22T12:30:00Z");
    const ok = await api.post(`${C}/edge5/incr`, { member: "a", period: "hour", at: "2026-11-22T12:35:00.000Z" });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const bad = await api.post(`${C}/edge5/incr`, { member: "a", period: "hour", at: "2026-11-22T12:35:00.001Z" });
    expect(bad.status).toBe(400);
    const off = await api.post(`${C}/edge5/incr`, { member: "b", period: "day", at: "2026-11-22T01:00:00+02:00" });
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    expect(await api.keys()).toContain(ckey("edge5", "day", "20261121"));
    const old = await api.post(`${C}/edge5/incr`, {
      member: "c",
      period: "day",
      at: Date.parse("2026-11-22T12:30:00Z") - 400 * 86400000,
    });
    expect(old.status, JSON.stringify(old.body)).toBe(200);
    const older = await api.post(`${C}/edge5/incr`, {
      member: "c",
      period: "day",
      at: Date.parse("2026-11-22T12:30:00Z") - 400 * 86400000 - 1,
    });
    expect(older.status).toBe(400);
  });

  it("histograms: an ISO offset goes in its UTC day", async () => {
    await api.put(`${H}/off`, { bucketWidth: 1 }, admin);
    const res = await api.post(`${H}/off/observations`, { value: 3, at: "2026-11-22T01:00:00+02:00" });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect((await api.get(`${H}/off?from=2026-11-21&to=2026-11-21`)).body.count).toBe(1);
    expect((await api.get(`${H}/off`)).body.count).toBe(0);
  });
});

describe("counters: deletes and expiry against the cached union of a finished range", () => {
  it("a member delete inside a cached finished range shows at once", async () => {
    await api.post(`${C}/dc/incr`, {
      items: [
        { member: "a", period: "day", by: 3, at: "2026-11-20T01:00:00Z" },
        { member: "a", period: "day", by: 4, at: "2026-11-21T01:00:00Z" },
        { member: "b", period: "day", by: 5, at: "2026-11-21T01:00:00Z" },
      ],
    });
    const url = `${C}/dc/top?period=day&from=2026-11-20&to=2026-11-21`;
    expect((await api.get(url)).body.items.map((i: any) => i.score)).toEqual([7, 5]);
    expect((await api.get(url)).body.items.map((i: any) => i.score)).toEqual([7, 5]);
    expect((await api.del(`${C}/dc/members/a?period=day&from=2026-11-21&to=2026-11-21`)).status).toBe(204);
    expect((await api.get(url)).body.items.map((i: any) => [i.member, i.score])).toEqual([
      ["b", 5],
      ["a", 3],
    ]);
    expect((await api.del(`${C}/dc/members/b`)).status).toBe(204);
    expect((await api.get(url)).body.items.map((i: any) => i.member)).toEqual(["b", "a"]);
  });

  it("buckets whose ttl ran out do not live on in a cached union", async () => {
    api.setNow(Date.now());
    const at = api.now - 500;
    await api.post(`${C}/exp/incr`, {
      items: [
        { member: "a", period: "hour", by: 3, at, ttl: 2 },
        { member: "a", period: "hour", by: 4, at: at - 3600_000, ttl: 7200 },
      ],
    });
    const hour = new Date(at).toISOString().slice(0, 13) + ":00:00Z";
    const prev = new Date(at - 3600_000).toISOString().slice(0, 13) + ":00:00Z";
    api.setNow(Date.parse(hour) + 3600_000 + 1000); // the next hour: the range is finished
    const url = `${C}/exp/members/a?period=hour&from=${prev}&to=${hour}`;
    expect((await api.get(url)).body.score).toBe(7);
    await new Promise((r) => setTimeout(r, 3000));
    api.setNow(api.now + 3000);
    expect((await api.get(url)).body.score).toBe(4);
  });
});

describe("counters: min/max over hours that rollups sum", () => {
  it("aggregate=max and min over a finished day and month read the hours, not their sums", async () => {
    await api.post(`${C}/hmax/incr`, {
      items: [
        { member: "a", period: "hour", by: 5, at: "2026-11-20T06:10:00Z" },
        { member: "a", period: "hour", by: 7, at: "2026-11-20T07:10:00Z" },
        { member: "a", period: "hour", by: 2, at: "2026-11-20T13:10:00Z" },
        { member: "b", period: "hour", by: 1, at: "2026-11-20T08:10:00Z" },
        { member: "a", period: "hour", by: 9, at: "2026-11-21T08:10:00Z" },
        { member: "a", period: "hour", by: 1 },
      ],
    });
    const g = async (q: string) => (await api.get(`${C}/hmax/members/a?period=hour&${q}`)).body.score;
    const day = "from=2026-11-20T00:00:00Z&to=2026-11-20T23:00:00Z";
    expect(await g(`${day}&aggregate=sum`)).toBe(14);
    expect(await g(`${day}&aggregate=max`)).toBe(7);
    expect(await g(`${day}&aggregate=min`)).toBe(2);
    expect(await g(`from=2026-11-20T06:00:00Z&to=2026-11-20T11:00:00Z&aggregate=max`)).toBe(7);
    // min/max read every hour: at most 401 of them (documented 400 beyond)
    const r = await api.get(`${C}/hmax/members/a?period=hour&from=2026-11-01T00:00:00Z&aggregate=max`);
    expect(r.status).toBe(400);
    expect(await g(`from=2026-11-06T00:00:00Z&aggregate=max`)).toBe(9);
    expect(await g(`from=2026-11-06T00:00:00Z&aggregate=min`)).toBe(1);
    expect(await g(`from=2026-11-01T00:00:00Z`)).toBe(24);
    const top = (await api.get(`${C}/hmax/top?period=hour&from=2026-11-06T00:00:00Z&aggregate=max`)).body.items;
    expect(top.map((i: any) => [i.member, i.score])).toEqual([
      ["a", 9],
      ["b", 1],
    ]);
  });

  it("sums across quarter edges: hours 05..13 read exactly those hours", async () => {
    const items = [];
    for (let h = 0; h < 24; h++)
      items.push({
        member: "a",
        period: "hour",
        by: 2 ** (h % 20),
        at: `2026-11-20T${String(h).padStart(2, "0")}:30:00Z`,
      });
    await api.post(`${C}/quart/incr`, { items });
    const want = (from: number, to: number) => {
      let s = 0;
      for (let h = from; h <= to; h++) s += 2 ** (h % 20);
      return s;
    };
    for (const [f, t] of [
      [5, 13],
      [6, 11],
      [6, 12],
      [0, 23],
      [11, 18],
      [17, 23],
      [0, 5],
      [23, 23],
    ] as const) {
      const q = `from=2026-11-20T${String(f).padStart(2, "0")}:00:00Z&to=2026-11-20T${String(t).padStart(2, "0")}:59:59Z`;
      expect((await api.get(`${C}/quart/members/a?period=hour&${q}`)).body.score, `${f}..${t}`).toBe(want(f, t));
    }
  });
});

describe("histograms: fractional widths place decimal values on their own bound", () => {
  it("k·w written as a decimal falls in the bucket whose lower bound it is", async () => {
    for (const [name, w, digits] of [
      ["f01", 0.01, 2],
      ["f07", 0.07, 2],
      ["f3", 0.3, 1],
      ["f11", 1.1, 1],
    ] as const) {
      await api.put(`${H}/${name}`, { bucketWidth: w }, admin);
      const values: number[] = [];
      for (let k = -40; k <= 40; k++) values.push(Number((k * w).toFixed(digits)));
      const res = await api.post(`${H}/${name}/observations`, { values });
      expect(res.status).toBe(200);
      const b = (await api.get(`${H}/${name}`)).body;
      const lowers = b.buckets.map((x: any) => x.lower);
      expect(
        b.buckets.every((x: any) => x.count === 1),
        name,
      ).toBe(true);
      expect(lowers, name).toEqual(values.map((v) => (Object.is(v, -0) ? 0 : v)));
    }
  });
});

describe("counters: union into one of its sources, and ttl on the result", () => {
  it("a union whose destination is a source reads the old value, and an ingest ttl never shortens the rollup's", async () => {
    await api.post(`${C}/ud/incr`, { items: [{ member: "a", by: 2 }] });
    await api.post(`${C}/us/incr`, {
      items: [
        { member: "a", by: 3 },
        { member: "b", by: 1 },
      ],
    });
    const res = await api.post(`${C}/ud/union`, { sources: ["ud", "us"], weights: [10, 1], ttl: 1000 }, admin);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect((await api.get(`${C}/ud/top`)).body.items.map((i: any) => [i.member, i.score])).toEqual([
      ["a", 23],
      ["b", 1],
    ]);
    await api.post(`${C}/ud/incr`, { member: "a", ttl: 5 });
    expect(Number(await command(api.target, "PTTL", ckey("ud")))).toBeGreaterThan(900_000);
    expect((await api.get(`${C}/ud/members/a`)).body).toMatchObject({ score: 24, rank: 1, rankFromBottom: 2 });
  });
});

describe("counters: ttl of calendar rollups", () => {
  it("a rollup outlives every hour it sums: an hour without ttl makes its rollups keep none", async () => {
    api.setNow("2026-11-22T12:30:00Z");
    const first = await api.post(`${C}/rt/incr`, {
      member: "a",
      period: "hour",
      ttl: 4000,
      at: "2026-11-22T11:30:00Z",
    });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const pttl = async (...k: string[]) => Number(await command(api.target, "PTTL", ckey("rt", ...k)));
    expect(await pttl("hour", "by-day", "20261122")).toBeGreaterThan(3_900_000);
    await api.post(`${C}/rt/incr`, { member: "a", period: "hour" });
    expect(await pttl("hour", "2026112212")).toBe(-1);
    expect(await pttl("hour", "by-quarter", "20261122T12")).toBe(-1);
    expect(await pttl("hour", "by-day", "20261122")).toBe(-1);
    expect(await pttl("hour", "by-month", "202611")).toBe(-1);
  });

  it("in a batch, an item without ttl before one with a ttl: the new key gets the ttl (order does not matter)", async () => {
    await api.post(`${C}/ord/incr`, {
      items: [
        { member: "a", period: "day" },
        { member: "a", period: "day", ttl: 1000 },
      ],
    });
    await api.post(`${C}/ord2/incr`, {
      items: [
        { member: "a", period: "day", ttl: 1000 },
        { member: "a", period: "day" },
      ],
    });
    const a = Number(await command(api.target, "PTTL", ckey("ord", "day", "20261122")));
    const b = Number(await command(api.target, "PTTL", ckey("ord2", "day", "20261122")));
    expect(a).toBe(b < 0 ? b : a);
    expect(b).toBeGreaterThan(900_000);
    expect(a).toBeGreaterThan(900_000);
  });

  it("a day bucket with a long ttl and an hour of it with a short one: the month rollup keeps the longest", async () => {
    const res = await api.post(`${C}/mx/incr`, {
      items: [
        { member: "a", period: "day", ttl: 5000 },
        { member: "a", period: "day", ttl: 200000, at: "2026-11-21T00:00:00Z" },
      ],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const m = Number(await command(api.target, "PTTL", ckey("mx", "day", "by-month", "202611")));
    expect(m).toBeGreaterThan(199_000_000);
  });
});

describe("input that must be a 400 with nothing written", () => {
  it("histograms: a value more than 1e12 buckets from zero, an empty batch, a bad top", async () => {
    await api.put(`${H}/lim`, { bucketWidth: 0.001 }, admin);
    const far = await api.post(`${H}/lim/observations`, { values: [1, 1e10] });
    expect(far.status, JSON.stringify(far.body)).toBe(400);
    expect((await api.get(`${H}/lim`)).body.count).toBe(0);
    for (const q of ["top=101", "top=-1", "top=1.5", "from=2025-10-18", "from=2026-11-2"]) {
      expect((await api.get(`${H}/lim?${q}`)).status, q).toBe(400);
    }
    expect((await api.get(`${H}/lim?from=2025-10-19`)).status).toBe(200);
  });

  it("counters: n, min/max and period query edges", async () => {
    await api.post(`${C}/q/incr`, { member: "a" });
    for (const q of [
      "top?n=0",
      "top?n=-1",
      "top?n=1.5",
      "top?n=abc",
      "range?min=abc&max=1",
      "range?min=1&max=((2",
      "top?period=year",
      "top?from=2026-11-20",
      "top?period=day&aggregate=avg",
    ]) {
      const res = await api.get(`${C}/q/${q}`);
      expect(res.status, q).toBe(400);
    }
  });
});

describe("counters: an hour that expired under a rollup that does not", () => {
  // KNOWN LIMIT (docs/counters.md "Known limit (ttl'd data in rollups)": the designs weighed and why not fixed; medium): a day (or month, quarter) rollup that also sums an hour without ttl
  // keeps no expiry (docs: "none when one of them has none"), and when a ttl'd hour of it expires its
  // counts stay in the rollup; reads of whole days/quarters/months take the rollup, reads of single
  // hours do not, so the same data answers 1 by hours and 11 by the day it lies in. Right: 1 either
  // way: a ttl'd increment is gone from every read once its key expired (the docs promise a key lives
  // at most ttl + min(ttl/10, 1 h)), e.g. by taking the expiring increment back from its rollups or by
  // not reading a rollup that sums a key with an earlier expiry.
  it.fails("the whole day and its hours agree after a ttl'd hour expired", async () => {
    api.setNow("2026-11-22T12:30:00Z");
    const r1 = await api.post(`${C}/gone/incr`, { member: "a", period: "hour", at: "2026-11-22T11:30:00Z" });
    const r2 = await api.post(`${C}/gone/incr`, { member: "a", period: "hour", by: 10, ttl: 1 });
    expect([r1.status, r2.status]).toEqual([200, 200]);
    await new Promise((r) => setTimeout(r, 2500));
    api.setNow("2026-11-24T12:30:00Z"); // the day is finished and the ttl'd hour expired (real TTL 1 s)
    const g = async (q: string) => {
      const res = await api.get(`${C}/gone/members/a?period=hour&${q}`);
      return res.status === 404 ? 0 : res.body.score;
    };
    expect(await g("from=2026-11-22T11:00:00Z&to=2026-11-22T12:00:00Z")).toBe(1);
    expect(await g("from=2026-11-22T12:00:00Z&to=2026-11-22T12:00:00Z")).toBe(0);
    // the whole 12..18 quarter: its rollup summed only the ttl'd hour, so it expired too (holds)
    expect(await g("from=2026-11-22T12:00:00Z&to=2026-11-22T17:00:00Z")).toBe(0);
    // the whole day: its rollup also sums hour 11 (no ttl), keeps no expiry and still holds the 10
    expect(await g("from=2026-11-22T00:00:00Z&to=2026-11-22T23:00:00Z")).toBe(1);
  });

  // Same KNOWN LIMIT without mixing: every write has the same ttl. The day rollup is extended by the
  // day's last write, so it outlives the day's earlier hours (an hour counter's by up to a day, its
  // month rollup by up to a month) and still holds their counts. Real TTLs (4 s): hour 11 expires at
  // ~4 s, hour 12 (written at ~2.2 s) at ~6.2 s, the rollup (extended then to ttl + slack) at ~7.2 s;
  // read at ~5 s. It could only pass by accident after a 2 s stall (all three gone).
  it.fails("the whole day and its hours agree after an hour expired, with one ttl for every write", async () => {
    api.setNow("2026-11-22T11:59:58Z");
    const r1 = await api.post(`${C}/gone3/incr`, { member: "a", period: "hour", by: 10, ttl: 4 });
    await new Promise((r) => setTimeout(r, 2200));
    api.setNow("2026-11-22T12:00:01Z");
    const r2 = await api.post(`${C}/gone3/incr`, { member: "a", period: "hour", ttl: 4 });
    expect([r1.status, r2.status]).toEqual([200, 200]);
    await new Promise((r) => setTimeout(r, 2800));
    api.setNow("2026-11-22T12:00:06Z");
    const g = async (q: string) => {
      const res = await api.get(`${C}/gone3/members/a?period=hour&${q}`);
      return res.status === 404 ? 0 : res.body.score;
    };
    // the hours: 11 expired, 12 holds 1
    expect(await g("from=2026-11-22T11:00:00Z&to=2026-11-22T12:00:00Z")).toBe(1);
    // the whole day (its rollup): still 11
    expect(await g("from=2026-11-22T00:00:00Z&to=2026-11-22T23:00:00Z")).toBe(1);
  });
});

describe("counters: a day that expired under a month rollup that does not", () => {
  // KNOWN LIMIT (docs/counters.md, same cause as the hour case above; medium): the `day:by-month` rollup also sums a day without
  // ttl, keeps no expiry, and still holds a ttl'd day's counts after that day's key expired: the
  // finished month read by its rollup answers 11 where its days answer 1. Right: 1.
  it.fails("the whole month and its days agree after a ttl'd day expired", async () => {
    api.setNow("2026-11-22T12:30:00Z");
    const r1 = await api.post(`${C}/gone2/incr`, { member: "a", period: "day", at: "2026-11-21T11:30:00Z" });
    const r2 = await api.post(`${C}/gone2/incr`, { member: "a", period: "day", by: 10, ttl: 1 });
    expect([r1.status, r2.status]).toEqual([200, 200]);
    await new Promise((r) => setTimeout(r, 2500));
    api.setNow("2026-12-02T12:30:00Z");
    const g = async (q: string) => {
      const res = await api.get(`${C}/gone2/members/a?period=day&${q}`);
      return res.status === 404 ? 0 : res.body.score;
    };
    expect(await g("from=2026-11-21&to=2026-11-22")).toBe(1);
    expect(await g("from=2026-11-01&to=2026-11-30")).toBe(1);
  });
});

describe("histograms: delete then create again", () => {
  it("a histogram deleted and PUT again with another width reads nothing of its old life, over 400 days", async () => {
    await api.put(`${H}/again`, { bucketWidth: 10 }, admin);
    await api.post(`${H}/again/observations`, {
      values: [5, { value: 7, at: "2025-10-20T00:00:00Z" }, { value: 9, at: "2026-01-31T00:00:00Z" }],
    });
    expect((await api.get(`${H}/again?from=2025-10-19`)).body.count).toBe(3);
    expect((await api.del(`${H}/again`, admin)).status).toBe(204);
    expect((await api.get(`${H}/again`)).status).toBe(404);
    await api.put(`${H}/again`, { bucketWidth: 1 }, admin);
    const b = (await api.get(`${H}/again?from=2025-10-19`)).body;
    // sum is 0 (OpenAPI: non-nullable; test/worker/histograms.test.ts) where docs/histograms.md says
    // "`count`, `sum`, `min`, `max`, `mean`: ... `null` when `count` is 0": a docs wording issue only
    expect([b.count, b.sum, b.min, b.mean, b.buckets]).toEqual([0, 0, null, null, []]);
    await api.post(`${H}/again/observations`, { value: 2 });
    const c = (await api.get(`${H}/again?from=2025-10-19`)).body;
    expect([c.count, c.sum, c.buckets]).toEqual([1, 2, [{ lower: 2, upper: 3, count: 1 }]]);
  });
});

describe("counters: range and sorted over a period union", () => {
  it("range with exclusive bounds and sorted by score read the union's sums", async () => {
    await api.post(`${C}/ru/incr`, {
      items: [
        { member: "a", period: "day", by: 5, at: "2026-11-20T01:00:00Z" },
        { member: "a", period: "day", by: 5 },
        { member: "b", period: "day", by: 10, at: "2026-11-21T01:00:00Z" },
        { member: "c", period: "day", by: 9 },
      ],
    });
    const q = "period=day&from=2026-11-20";
    const r = (await api.get(`${C}/ru/range?min=(9&max=10&${q}`)).body;
    expect(r.items.map((i: any) => [i.member, i.score])).toEqual([
      ["a", 10],
      ["b", 10],
    ]);
    expect(r.count).toBe(2);
    const s = (await api.get(`${C}/ru/sorted?by=score&order=desc&${q}`)).body;
    expect(s.items.map((i: any) => i.score)).toEqual([10, 10, 9]);
    const m = (await api.get(`${C}/ru/members/c?${q}`)).body;
    expect([m.score, m.rank, m.rankFromBottom]).toEqual([9, 3, 1]);
  });
});

describe("counters: extending an hour's ttl extends its rollups", () => {
  it("every rollup of an hour lives at least as long as the hour after a longer ttl", async () => {
    const pttl = async (...k: string[]) => Number(await command(api.target, "PTTL", ckey("ext", ...k)));
    await api.post(`${C}/ext/incr`, { member: "a", period: "hour", ttl: 2 });
    await api.post(`${C}/ext/incr`, { member: "b", period: "hour", ttl: 5000 });
    const hour = await pttl("hour", "2026112212");
    expect(hour).toBeGreaterThan(4_900_000);
    for (const k of [
      ["hour", "by-quarter", "20261122T12"],
      ["hour", "by-day", "20261122"],
      ["hour", "by-month", "202611"],
    ])
      expect(await pttl(...k), k.join(":")).toBeGreaterThanOrEqual(hour);
    // and in one batch: a short ttl item then a long one for a new day bucket and its month rollup
    await api.post(`${C}/ext/incr`, {
      items: [
        { member: "a", period: "day", ttl: 2 },
        { member: "a", period: "day", ttl: 5000 },
      ],
    });
    const day = await pttl("day", "20261122");
    expect(day).toBeGreaterThan(4_900_000);
    expect(await pttl("day", "by-month", "202611")).toBeGreaterThanOrEqual(day);
  });
});

describe("histograms: a retention raised after days expired on their own", () => {
  // FIXED (was medium, same cause as "a retention shrunk then raised again"): no shrink needed. With a
  // 1-day retention, a day expires on its own (here 2 s after it is written, by the fake clock) while
  // its month rollup lives until the month's last day + 1; raising the retention to 30 makes the
  // month's 1st "kept" again, and a range ending now reads the month's rollup, which still holds the
  // expired day: count 2, sum 8 where the live data is count 1, sum 1. Right: count 1, sum 1.
  it("expired days do not come back through the month rollup when the retention is raised", async () => {
    api.setNow("2026-11-22T23:59:58Z");
    await api.put(`${H}/raise`, { bucketWidth: 1, retentionDays: 1 }, admin);
    const res = await api.post(`${H}/raise/observations`, { values: [{ value: 7, at: "2026-11-21T12:00:00Z" }, 1] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await new Promise((r) => setTimeout(r, 3500));
    api.setNow("2026-11-23T00:00:02Z");
    expect((await api.put(`${H}/raise`, { bucketWidth: 1, retentionDays: 30 }, admin)).status).toBe(200);
    const b = (await api.get(`${H}/raise?from=2026-11-01`)).body;
    expect([b.count, b.sum, b.max]).toEqual([1, 1, 1]);
  });
});

describe("histograms: p50 at a bucket edge", () => {
  // FIXED (was low, same cause as the p99 case): p50 of [0, 0, 10, 10] with width 10 is 10, the upper
  // bound of [0, 10), which holds the nearest-rank p50 (0): off by exactly one width and reported in
  // the next bucket. Right (docs: "off by less than one bucketWidth"): a value < 10.
  it("p50 of an even count split across two buckets stays in the lower bucket", async () => {
    await api.put(`${H}/p50`, { bucketWidth: 10 }, admin);
    await api.post(`${H}/p50/observations`, { values: [0, 0, 10, 10] });
    const b = (await api.get(`${H}/p50`)).body;
    expect(b.p50).toBeLessThan(10);
  });

  it("a batch spanning two months with one value past retention writes nothing, rollups included", async () => {
    await api.put(`${H}/span`, { bucketWidth: 1, retentionDays: 30 }, admin);
    const res = await api.post(`${H}/span/observations`, {
      values: [1, { value: 2, at: "2026-10-25T00:00:00Z" }, { value: 3, at: "2026-10-01T00:00:00Z" }],
    });
    expect(res.status).toBe(400);
    expect((await api.get(`${H}/span?from=2026-10-24`)).body.count).toBe(0);
    expect((await api.keys()).filter((k) => k.includes(":hist:span:"))).toEqual([]);
  });
});
