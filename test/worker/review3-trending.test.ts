/**
 * Adversarial review (round 3) of trending over HTTP, in workerd: window edges and `at` limits to
 * the millisecond, members that could spell internal markers, the stale-union bug of a batch that
 * mixes late hours (test/redis/review3-trending.test.ts pins it in the library) reached through the
 * synchronous route and through queued ingest, where the consumer merges many requests into one batch.
 */
import { describe, expect, it } from "vitest";
import { createIngestApi, type IngestApi } from "../helpers/ingest.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 22, 12, 20);
const H = Math.floor(T0 / HOUR);
// no edge cache: every read reaches Redis (the edge cache's own staleness is documented)
const track = cleanedUpAfterAll<IngestApi>();
const newApi = (label: string) => track(createIngestApi({ label, start: T0, vars: { TRENDING_CACHE_SECONDS: "0" } }));

const top = async (api: IngestApi, stream: string, query = "n=10&window=24h") => {
  const res = await api.get(`/v1/trending/${stream}/top?${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};

describe("`at` and window edges over HTTP", () => {
  it("the first ms of the oldest hour is in the window (as epoch ms and as ISO-8601), the ms before is not", async () => {
    const api = newApi("rv3t-edges");
    const first = (H - 24) * HOUR;
    const events = [
      { member: "ms", at: first },
      { member: "iso", at: new Date(first).toISOString() },
      { member: "before", at: first - 1 },
    ];
    expect((await api.post("/v1/trending/e/events", { events })).status).toBe(200);
    expect((await top(api, "e")).items.map((i: any) => i.member)).toEqual(["iso", "ms"]);
    const w = await top(api, "e", "n=10&window=25h");
    expect(w.items.map((i: any) => i.member)).toEqual(["before", "iso", "ms"]);
    expect(w.window).toEqual({ hours: 25, from: (H - 25) * HOUR, to: (H + 1) * HOUR });
  });

  it("`at` limits: oldest hour of the horizon and +5 min accepted; an hour older or +5 min + 1 ms refused, nothing written", async () => {
    const api = newApi("rv3t-at");
    const ok = [
      { member: "oldest", at: (H - 50) * HOUR },
      { member: "ahead", at: T0 + 5 * 60_000 },
    ];
    expect((await api.post("/v1/trending/a/events", { events: ok })).status).toBe(200);
    for (const at of [(H - 50) * HOUR - 1, T0 + 5 * 60_000 + 1, 1.5, "yesterday", -1]) {
      const res = await api.post("/v1/trending/a/events", {
        events: [
          { member: "good", count: 5 },
          { member: "bad", at },
        ],
      });
      expect(res.status, `at=${at}`).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
    }
    // (12:25 is still this hour) nothing of the refused batches, "good" included, was written
    expect((await top(api, "a", "n=10&window=50h")).items.map((i: any) => i.member)).toEqual(["ahead", "oldest"]);
  });

  it("windows and n out of range are 400s naming the field; 50h (the retention) and n=100 are fine", async () => {
    const api = newApi("rv3t-range");
    await api.post("/v1/trending/r/events", { member: "x" });
    for (const q of ["window=0h", "window=51h", "window=-1h", "window=1.5h", "n=0", "n=101"]) {
      const res = await api.get(`/v1/trending/r/top?${q}`);
      expect(res.status, q).toBe(400);
    }
    expect((await top(api, "r", "n=100&window=50h")).items).toEqual([{ rank: 1, member: "x", count: 1 }]);
    for (const q of ["baseline=51h", "baseline=0h"])
      expect((await api.get(`/v1/trending/r/rising?${q}`)).status).toBe(400);
    expect((await api.get(`/v1/trending/r/history?member=x&hours=51`)).status).toBe(400);
  });
});

describe("members at the edges over HTTP", () => {
  it("members spelling internal markers (NUL + err/p/w) are 400 in writes, lookups and history; nothing is written", async () => {
    const api = newApi("rv3t-markers");
    for (const member of ["\u0000err", "\u0000p", "\u0000w"]) {
      expect((await api.post("/v1/trending/k/events", { member })).status).toBe(400);
      expect((await api.get(`/v1/trending/k/members/${encodeURIComponent(member)}`)).status).toBe(400);
      expect((await api.get(`/v1/trending/k/history?member=${encodeURIComponent(member)}`)).status).toBe(400);
    }
    expect((await api.get("/v1/trending")).body.streams).toEqual([]);
    expect(await api.keys()).toEqual([]);
  });

  it("a 256-byte member (multi-byte UTF-8) round-trips through write, top, lookup and history; 257 bytes is a 400", async () => {
    const api = newApi("rv3t-long");
    const long = "é".repeat(128); // 256 bytes
    expect((await api.post("/v1/trending/l/events", { member: long, count: 2 })).status).toBe(200);
    expect((await api.post("/v1/trending/l/events", { member: `${long}x` })).status).toBe(400);
    expect((await top(api, "l")).items).toEqual([{ rank: 1, member: long, count: 2 }]);
    const m = await api.get(`/v1/trending/l/members/${encodeURIComponent(long)}`);
    expect(m.body).toMatchObject({ member: long, count: 2, rank: 1, rankExact: true, exact: true });
    const h = await api.get(`/v1/trending/l/history?member=${encodeURIComponent(long)}&hours=2`);
    expect(h.body.points.map((p: any) => p.count)).toEqual([0, 0, 2]);
  });
});

describe("counts over HTTP", () => {
  it("count as a string, 0, negative, above 1e12 or null is a 400 and writes nothing; 1e12, 0.5 and 1e-300 are summed", async () => {
    const api = newApi("rv3t-counts");
    for (const count of ["5", 0, -1, 1e12 + 1, null, true, [1]]) {
      const res = await api.post("/v1/trending/c/events", { events: [{ member: "ok" }, { member: "bad", count }] });
      expect(res.status, JSON.stringify(count)).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
    }
    expect(await api.keys()).toEqual([]);
    const events = [
      { member: "big", count: 1e12 },
      { member: "big", count: 1e12, at: T0 - HOUR },
      { member: "half", count: 0.5 },
      { member: "tiny", count: 1e-300 },
    ];
    expect((await api.post("/v1/trending/c/events", { events })).status).toBe(200);
    expect((await top(api, "c")).items).toEqual([
      { rank: 1, member: "big", count: 2e12 },
      { rank: 2, member: "half", count: 0.5 },
      { rank: 3, member: "tiny", count: 1e-300 },
    ]);
    const h = await api.get("/v1/trending/c/history?member=big&hours=1");
    expect(h.body.points.map((p: any) => p.count)).toEqual([1e12, 1e12]);
  });
});

describe("late events of several finished hours in one batch (see test/redis/review3-trending.test.ts)", () => {
  // FIXED (was high): the cached 24 h union was left stale when one batch held events 30 h and 2 h late
  // (staleUnions was given the batch's earliest hour only): the 2-hours-late event, acknowledged with
  // 200, is missing from every 24 h read for the rest of the hour. FIX: drop unions from the batch's
  // latest finished hour (the narrowest window that holds any written hour), not its earliest.
  it("POST of a batch 30 h and 2 h late: the 24 h top and lookup count the 2 h late event", async () => {
    const api = newApi("rv3t-mixed");
    await api.post("/v1/trending/m/events", { member: "a", count: 5, at: T0 - 2 * HOUR });
    expect((await top(api, "m")).items).toEqual([{ rank: 1, member: "a", count: 5 }]);
    const events = [
      { member: "old", at: T0 - 30 * HOUR },
      { member: "b", count: 9, at: T0 - 2 * HOUR },
    ];
    expect((await api.post("/v1/trending/m/events", { events })).status).toBe(200);
    expect((await api.get("/v1/trending/m/members/b?window=24h")).body.count).toBe(9);
    expect((await top(api, "m")).items[0]).toEqual({ rank: 1, member: "b", count: 9 });
  });

  // FIXED (was high), the same bug through queued ingest: two single-event requests, each fine on its
  // own, are merged by the consumer into one library write (src/ingest/plan.ts mergeTrending), so
  // clients that never send mixed batches still lose the later one from 24 h reads for the hour.
  it("queued: two single late events of different hours, applied in one batch, both counted", async () => {
    const api = newApi("rv3t-queued");
    await api.post("/v1/trending/q/events", { member: "a", count: 5, at: T0 - 2 * HOUR });
    await top(api, "q"); // caches the 24 h union
    const h = api.asyncHeaders;
    expect(
      (await api.post("/v1/trending/q/events", { member: "old", at: T0 - 30 * HOUR }, { headers: h })).status,
    ).toBe(202);
    expect(
      (await api.post("/v1/trending/q/events", { member: "b", count: 9, at: T0 - 2 * HOUR }, { headers: h })).status,
    ).toBe(202);
    const res = await api.deliver(api.queue.sent);
    expect(res.retryMessages).toEqual([]);
    expect((await api.get("/v1/trending/q/members/old?window=48h")).body.count).toBe(1); // applied
    expect((await api.get("/v1/trending/q/members/b?window=24h")).body.count).toBe(9);
  });

  it("queued: late events of one hour, applied in one batch, are counted (the union is dropped)", async () => {
    const api = newApi("rv3t-queued1");
    await api.post("/v1/trending/q/events", { member: "a", count: 5, at: T0 - 2 * HOUR });
    await top(api, "q");
    const h = api.asyncHeaders;
    await api.post("/v1/trending/q/events", { member: "b", count: 4, at: T0 - 2 * HOUR }, { headers: h });
    await api.post("/v1/trending/q/events", { member: "b", count: 5, at: T0 - 2 * HOUR }, { headers: h });
    expect((await api.deliver(api.queue.sent)).retryMessages).toEqual([]);
    expect((await top(api, "q")).items[0]).toEqual({ rank: 1, member: "b", count: 9 });
  });
});
