/**
 * Issue 19, signals: `GET /v1/trending/{stream}/rising` (members of the current hour most above
 * their own baseline rate) and `GET /v1/trending/{stream}/history` (one member hour by hour,
 * honest about trimmed hours), on a fake clock, one round trip each.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createTestApi } from "../helpers/worker.ts";

const HOUR = 3_600_000;
const MINUTE = 60_000;
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const H0 = Date.UTC(2026, 10, 22, 12);

/** `perHour` of `member` in each of the `hours` finished hours before `now`'s hour. */
const past = (member: string, perHour: number, hours: number, now: number) =>
  Array.from({ length: hours }, (_, i) => ({ member, count: perHour, at: now - (i + 1) * HOUR }));

describe("trending rising", () => {
  const api = createTestApi({ label: "trend-rising", start: T0 });
  afterAll(() => api.cleanup());
  const record = (events: unknown[]) => api.post("/v1/trending/s/events", { events });

  it("warms the scripts (the first call after a flush pays the NOSCRIPT fallback)", async () => {
    expect((await api.get("/v1/trending/warm/rising")).status).toBe(200);
    expect((await api.get("/v1/trending/warm/history?member=a")).status).toBe(200);
  });

  it("scores members by (count − baseline) / √(baseline + 1), the baseline scaled to the elapsed half hour", async () => {
    expect(
      (
        await record([
          ...past("jump", 200, 24, T0),
          ...past("steady", 10, 24, T0),
          ...past("falling", 50, 24, T0),
          { member: "jump", count: 400 },
          { member: "steady", count: 6 },
          { member: "new", count: 3 },
          { member: "falling", count: 2 },
        ])
      ).status,
    ).toBe(200);
    const cost = await api.cost(() => api.get("/v1/trending/s/rising?n=10&baseline=24h"));
    const res = cost.result;
    expect(res.status).toBe(200);
    // baselines at 12:30: jump 200 × 0.5 = 100, steady 5, new 0; falling (25 expected, 2 seen) is not rising
    expect(res.body.items).toEqual([
      { member: "jump", count: 400, baseline: 100, ratio: 4, score: 300 / Math.sqrt(101) },
      { member: "new", count: 3, baseline: 0, ratio: null, score: 3 },
      { member: "steady", count: 6, baseline: 5, ratio: 1.2, score: 1 / Math.sqrt(6) },
    ]);
    expect(res.body).toMatchObject({
      stream: "s",
      baselineHours: 24,
      elapsed: 0.5,
      candidates: 4,
      exact: true,
      maxError: 0,
      generatedAt: T0,
    });
    // no cached union of the baseline hours: the current hour's page, a miss on the union, a lookup per hour
    expect(cost).toMatchObject({ requests: 1, commands: 1 + 1 + 1 + 24 });
  });

  it("takes n and the baseline width, and scales the baseline with the elapsed part of the hour", async () => {
    const two = await api.get("/v1/trending/s/rising?n=2");
    expect(two.body.items.map((i: { member: string }) => i.member)).toEqual(["jump", "new"]);
    api.setNow(H0 + 45 * MINUTE);
    const later = await api.get("/v1/trending/s/rising?baseline=1h");
    expect(later.body.baselineHours).toBe(1);
    expect(later.body.elapsed).toBe(0.75);
    expect(later.body.items[0]).toEqual({
      member: "jump",
      count: 400,
      baseline: 150,
      ratio: 400 / 150,
      score: 250 / Math.sqrt(151),
    });
    api.setNow(T0);
  });

  it("reads the baseline from the cached union a top read left: 3 commands", async () => {
    await api.get("/v1/trending/s/top?window=24h");
    // the previous hour awaits compaction: the union leaves it out and the read asks its bucket too
    const open = await api.cost(() => api.get("/v1/trending/s/rising"));
    expect(open).toMatchObject({ requests: 1, commands: 4 });
    expect(open.result.body.items[0].member).toBe("jump");
    expect((await api.post("/internal/jobs/compact", undefined, { key: "admin" })).status).toBe(200);
    const warm = await api.cost(() => api.get("/v1/trending/s/rising"));
    expect(warm).toMatchObject({ requests: 1, commands: 3 });
    expect(warm.result.body.items.map((i: { score: number }) => i.score)).toEqual(
      open.result.body.items.map((i: { score: number }) => i.score),
    );
  });

  it("answers an empty list for a quiet current hour and a stream never written", async () => {
    api.setNow(T0 + HOUR);
    const quiet = await api.cost(() => api.get("/v1/trending/s/rising"));
    expect(quiet.result.body).toMatchObject({ items: [], candidates: 0, exact: true });
    expect(quiet).toMatchObject({ requests: 1, commands: 2 });
    api.setNow(T0);
    expect((await api.get("/v1/trending/nothing/rising")).body.items).toEqual([]);
  });

  it("refuses n and baseline out of range with 400", async () => {
    for (const query of ["n=0", "n=101", "n=1.5", "baseline=51h", "baseline=0h", "baseline=soon"]) {
      const res = await api.get(`/v1/trending/s/rising?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error.details[0].path, query).toBe(query.split("=")[0]);
    }
    expect((await api.get("/v1/trending/-bad/rising")).status).toBe(400);
  });
});

describe("trending history", () => {
  const api = createTestApi({ label: "trend-history", start: T0, vars: { TRENDING_KEEP: "2" } });
  afterAll(() => api.cleanup());
  const record = (events: unknown[]) => api.post("/v1/trending/s/events", { events });

  it("gives the member's count per hour, the current hour last", async () => {
    await record([
      { member: "a", count: 5, at: T0 - 2 * HOUR },
      { member: "a", count: 2, at: T0 },
      { member: "b", count: 1, at: T0 - 3 * HOUR },
    ]);
    const cost = await api.cost(() => api.get("/v1/trending/s/history?member=a&hours=3"));
    expect(cost.result.status).toBe(200);
    expect(cost.result.body).toEqual({
      stream: "s",
      member: "a",
      hours: 3,
      points: [
        { hour: H0 - 3 * HOUR, count: 0, maxError: 0 },
        { hour: H0 - 2 * HOUR, count: 5, maxError: 0 },
        { hour: H0 - HOUR, count: 0, maxError: 0 },
        { hour: H0, count: 2, maxError: 0 },
      ],
      exact: true,
      generatedAt: T0,
    });
    // one ZMSCORE per hour
    expect(cost).toMatchObject({ requests: 1, commands: 1 + 4 });
    const all = await api.get("/v1/trending/s/history?member=a");
    expect(all.body.hours).toBe(48);
    expect(all.body.points).toHaveLength(49);
  });

  it("says which hours were trimmed and by how much: the true count is in [count, count + maxError]", async () => {
    // hour 11: x 9, y 7, z 3, w 1; compaction keeps 2: z and w go, and the hour's cut is the highest count removed, 3
    await record([
      { member: "x", count: 9, at: T0 - HOUR },
      { member: "y", count: 7, at: T0 - HOUR },
      { member: "z", count: 3, at: T0 - HOUR },
      { member: "w", count: 1, at: T0 - HOUR },
    ]);
    expect((await api.post("/internal/jobs/compact", undefined, { key: "admin" })).status).toBe(200);
    const z = await api.get("/v1/trending/s/history?member=z&hours=2");
    expect(z.body.points).toEqual([
      { hour: H0 - 2 * HOUR, count: 0, maxError: 0 },
      { hour: H0 - HOUR, count: 0, maxError: 3 },
      { hour: H0, count: 0, maxError: 0 },
    ]);
    expect(z.body.exact).toBe(false);
    const x = await api.get("/v1/trending/s/history?member=x&hours=1");
    expect(x.body.points[0]).toEqual({ hour: H0 - HOUR, count: 9, maxError: 3 });
    expect(x.body.exact).toBe(false);
  });

  it("defaults to the retention when it is shorter than 48 hours", async () => {
    const short = createTestApi({ label: "trend-history-short", start: T0, vars: { TRENDING_RETENTION_HOURS: "12" } });
    try {
      const res = await short.get("/v1/trending/s/history?member=a");
      expect(res.status).toBe(200);
      expect(res.body.hours).toBe(12);
      expect((await short.get("/v1/trending/s/history?member=a&hours=13")).status).toBe(400);
    } finally {
      await short.cleanup();
    }
  });

  it("refuses a missing or bad member and hours out of range with 400", async () => {
    for (const query of ["hours=3", "member=&hours=3", "member=a&hours=0", "member=a&hours=51", "member=a&hours=x"]) {
      expect((await api.get(`/v1/trending/s/history?${query}`)).status, query).toBe(400);
    }
  });
});
