import { afterAll, describe, expect, it } from "vitest";
import { runScheduled } from "../../functions/scheduled.ts";
import { createTestApi } from "../helpers/worker.ts";

const HOUR = 3_600_000;
const MINUTE = 60_000;
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const at = (h: number, m = 0) => Date.UTC(2026, 10, 22, h, m);

describe("hourly compaction", () => {
  const api = createTestApi({ label: "trend-compact", start: T0, vars: { TRENDING_KEEP: "3" } });
  afterAll(() => api.cleanup());
  const compact = () => api.post("/internal/jobs/compact", undefined, { key: "admin" });
  const counts = [100, 50, 20, 3, 2, 1];

  it("trims finished hours to TRENDING_KEEP and records the cut; builds no union nobody read", async () => {
    await api.post("/v1/trending/calls/events", { events: counts.map((count, i) => ({ member: `x${i}`, count })) });
    await api.post("/v1/trending/pages/events", { events: [{ member: "home", count: 2 }] });
    const before = await api.get("/v1/trending/calls/top?n=3");
    expect(before.body.exact).toBe(true);

    expect((await api.post("/internal/jobs/compact", undefined, { key: "ingest" })).status).toBe(403);
    api.setNow(at(13, 5));
    const job = await compact();
    expect(job.status).toBe(200);
    expect(job.body.job).toBe("compact");
    expect(job.body.result).toMatchObject({
      streams: 2,
      hoursTrimmed: 1,
      membersRemoved: 3,
      unionsBuilt: 0,
      skipped: 0,
      more: false,
    });
    // the unions are built by the first read, from trimmed hours only (issue 15: only windows read are kept warm)
    expect(await api.keys()).not.toContain(`${api.prefix}:trending:calls:u:24:2026112213`);

    const top = await api.get("/v1/trending/calls/top?n=3");
    expect(await api.keys()).toContain(`${api.prefix}:trending:calls:u:24:2026112213`);
    expect(await api.keys()).not.toContain(`${api.prefix}:trending:calls:u:48:2026112213`);
    expect(top.body.items).toEqual([
      { rank: 1, member: "x0", count: 100 },
      { rank: 2, member: "x1", count: 50 },
      { rank: 3, member: "x2", count: 20 },
    ]);
    // the highest removed count was 3: the answer is no longer exact, but the gaps prove the set and order
    expect(top.body.exact).toBe(false);
    expect(top.body.maxError).toBe(3);
    expect(top.body.topProven).toBe(true);
    const removed = await api.get("/v1/trending/calls/members/x3");
    expect(removed.body).toMatchObject({ count: 0, rank: null, maxError: 3, exact: false });
    // an untrimmed stream stays exact
    expect((await api.get("/v1/trending/pages/top")).body).toMatchObject({ exact: true, maxError: 0 });
  });

  it("is idempotent: a second run changes nothing", async () => {
    const keysBefore = await api.keys();
    const topBefore = (await api.get("/v1/trending/calls/top?n=5")).body;
    const again = await compact();
    expect(again.body.result).toMatchObject({ streams: 0, hoursTrimmed: 0, membersRemoved: 0, unionsBuilt: 0 });
    expect(await api.keys()).toEqual(keysBefore);
    expect((await api.get("/v1/trending/calls/top?n=5")).body).toEqual(topBefore);
  });

  it("is safe when two runs overlap: each hour is trimmed once", async () => {
    await api.post("/v1/trending/calls/events", {
      events: [5, 4, 3, 2, 1].map((count, i) => ({ member: `y${i}`, count })),
    });
    api.setNow(at(14, 5));
    const [a, b] = await Promise.all([compact(), compact()]);
    expect(a.body.result.streams + b.body.result.streams).toBe(1);
    expect(a.body.result.hoursTrimmed + b.body.result.hoursTrimmed).toBe(1);
    expect(a.body.result.membersRemoved + b.body.result.membersRemoved).toBe(2);
    const top = await api.get("/v1/trending/calls/top?n=3");
    // cuts 3 (hour 12) + 2 (hour 13), not 3 + 2 + 2
    expect(top.body.maxError).toBe(5);
  });

  it("catches up on hours it missed, and re-trims an hour a late event re-opened", async () => {
    for (const hour of [14, 15, 16]) {
      api.setNow(at(hour, 20));
      await api.post("/v1/trending/late/events", {
        events: [9, 8, 7, 6, 5].map((count, i) => ({ member: `h${hour}-${i}`, count })),
      });
    }
    api.setNow(at(19, 5));
    const job = await compact();
    expect(job.body.result).toMatchObject({ streams: 1, hoursTrimmed: 3, membersRemoved: 6 });
    expect((await api.get("/v1/trending/late/top")).body.maxError).toBe(18);

    // a late event re-opens hour 15 and is counted at once; the next run trims it again
    await api.post("/v1/trending/late/events", {
      events: [
        { member: "z1", count: 30, at: at(15, 40) },
        { member: "z2", count: 7, at: at(15, 41) },
      ],
    });
    const seen = await api.get("/v1/trending/late/top?n=1");
    expect(seen.body.items).toEqual([{ rank: 1, member: "z1", count: 30 }]);
    const rerun = await compact();
    expect(rerun.body.result).toMatchObject({ streams: 1, hoursTrimmed: 1, membersRemoved: 2 });
    // this hour's union was built before the re-trim and still holds the removed counts: 18 still bounds it
    expect((await api.get("/v1/trending/late/top")).body).toMatchObject({ maxError: 18 });
    // it still holds z2 (7), which the re-trim removed from hour 15
    expect((await api.get("/v1/trending/late/members/z2")).body).toMatchObject({ count: 7, maxError: 18 });
    // hour 15 now holds z1 30, h15-0 9, h15-1 8; the re-trim removed z2 7 and h15-2 7, so its cut is 6 + 7
    api.setNow(at(20, 1));
    expect((await api.get("/v1/trending/late/top")).body).toMatchObject({ maxError: 6 + 13 + 6 });
    // rebuilt from the trimmed hours: 3 members each (z1, h15-0, h15-1 in hour 15), z2 gone
    expect((await api.get("/v1/trending/late/members/z2")).body).toMatchObject({ count: 0, rank: null });
    // z1 30; h14-0, h15-0, h16-0 9; then h14-1 and h15-1 8 (ties by member)
    expect((await api.get("/v1/trending/late/members/h15-1")).body).toMatchObject({ count: 8, rank: 6 });
  });

  it("runs from the cron trigger through the scheduled handler", async () => {
    api.setNow(at(19, 30));
    await api.post("/v1/trending/cron/events", {
      events: [4, 3, 2, 1].map((count, i) => ({ member: `c${i}`, count })),
    });
    const results = (await runScheduled("5 * * * *", at(20, 5), api.env)) as { compact: Record<string, unknown> };
    expect(results.compact).toMatchObject({ streams: 1, hoursTrimmed: 1, membersRemoved: 1 });
  });

  it("costs one round trip when nothing is due and two for a batch of streams", async () => {
    api.setNow(at(20, 10));
    await compact();
    const idle = await api.cost(() => compact());
    expect(idle.result.body.result.streams).toBe(0);
    expect(idle.requests).toBe(1);
    for (const name of ["s1", "s2", "s3"]) await api.post(`/v1/trending/${name}/events`, { member: "m" });
    api.setNow(at(21, 5));
    const busy = await api.cost(() => compact());
    // the queue held less than a batch: no third read to find it empty
    expect(busy.result.body.result).toMatchObject({ streams: 3, batches: 2 });
    expect(busy.requests).toBe(2);
  });

  it("prunes streams whose buckets all expired from the registry", async () => {
    expect((await api.get("/v1/trending")).body.streams).toContain("pages");
    api.setNow(at(21, 5) + 60 * HOUR);
    const job = await compact();
    expect(job.body.result.pruned).toBeGreaterThanOrEqual(7);
    expect((await api.get("/v1/trending")).body.streams).toEqual([]);
    api.setNow(T0 + MINUTE);
  });
});

describe("the per-run bound (TRENDING_COMPACT_BATCHES)", () => {
  const api = createTestApi({
    label: "trend-bound",
    start: T0,
    vars: { TRENDING_KEEP: "1", TRENDING_COMPACT_BATCHES: "1" },
  });
  afterAll(() => api.cleanup());

  it("stops after one script with more: true, and the next run finishes the rest", async () => {
    for (let i = 0; i < 25; i++)
      await api.post(`/v1/trending/s${i}/events`, { events: [{ member: "a", count: 2 }, { member: "b" }] });
    api.setNow(at(13, 5));
    const first = await api.post("/internal/jobs/compact", undefined, { key: "admin" });
    expect(first.body.result).toMatchObject({ streams: 20, more: true });
    const second = await api.post("/internal/jobs/compact", undefined, { key: "admin" });
    // `more` says the run stopped at its bound; a run whose queue held less than a batch drained it
    expect(second.body.result).toMatchObject({ streams: 5, more: false });
    const third = await api.post("/internal/jobs/compact", undefined, { key: "admin" });
    expect(third.body.result).toMatchObject({ streams: 0, more: false });
    for (const i of [0, 24]) {
      const top = await api.get(`/v1/trending/s${i}/top?n=1`);
      expect(top.body.items).toEqual([{ rank: 1, member: "a", count: 2 }]);
      expect(top.body.maxError).toBe(1);
    }
  });
});
