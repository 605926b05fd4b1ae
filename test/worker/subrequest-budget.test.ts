/**
 * One subrequest budget per scheduled invocation (SUBREQUEST_LIMIT, src/job-budget.ts): with the
 * free plan's 50 and more work than one invocation can do for every job of a trigger, each run
 * sends at most 50 subrequests (the local Upstash server's count of Redis requests, plus the
 * webhook deliveries, which go to a receiver that refuses them), and repeated runs at the same
 * instant finish all of it: every due room visited once, every compaction done once, every
 * delivery attempted once.
 */
import { afterAll, describe, expect, it } from "vitest";
import { heartbeat } from "../../src/presence/presence.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import { ctxOf, fireCounted, inParallel, queueLeaderEvents, webhookPutter } from "../helpers/job-budget.ts";
import { createTestApi, type TestApi } from "../helpers/worker.ts";

const MIN = 60_000;
const HOUR = 3_600_000;
const LIMIT = 50;
const admin = { key: "admin" };

const newApi = (label: string, start: number) =>
  createTestApi({ label, start, vars: { SUBREQUEST_LIMIT: String(LIMIT), WEBHOOKS_ALLOW_LOCAL_HTTP: "true" } });
const putHook = webhookPutter("hook", "0123456789abcdef-secret");

/** Two webhooks of leaderboard.leader, refused by their receiver, and `events` events queued for both. */
async function queueDeliveries(api: TestApi, events: number) {
  for (const name of ["h1", "h2"]) await putHook(api, name, { events: ["leaderboard.leader"] });
  await queueLeaderEvents(api, events, { queued: 2 });
}

/** Fires `cron` at `at` and checks its subrequests against the limit and the Upstash server's count. */
const fire = (api: TestApi, cron: string, at: number) => fireCounted(api, cron, at, LIMIT);

/** Each webhook's log holds one attempt of each of its `events` deliveries, none twice. */
async function expectEachDeliveryOnce(api: TestApi, events: number) {
  for (const name of ["h1", "h2"]) {
    const log = (await webhooks.deliveries(ctxOf(api), name)).deliveries;
    expect(log).toHaveLength(events);
    expect(new Set(log.map((d) => d.delivery)).size).toBe(events);
    expect(log.every((d) => d.attempt === 1 && d.outcome === "retrying")).toBe(true);
  }
}

describe("the minute trigger (trim + webhooks) within SUBREQUEST_LIMIT=50", () => {
  const start = Date.UTC(2026, 10, 22, 12, 30, 10);
  const api = newApi("budget-min", start);
  afterAll(() => api.cleanup());

  it("1,800 active rooms and 20 deliveries: each minute ≤ 50; the rooms a run leaves go first the next minute; each delivery tried once", async () => {
    const rooms = Array.from({ length: 1800 }, (_, i) => `r${String(i).padStart(4, "0")}`);
    const ctx = ctxOf(api);
    await inParallel(rooms, 50, (room) => heartbeat(ctx, room, ["u"]));
    await queueDeliveries(api, 10);
    const minute = (m: number) => Math.floor((start + m * MIN) / MIN) * MIN;

    const runs: { results: Record<string, Record<string, unknown>>; subrequests: number }[] = [];
    for (let m = 1; m <= 4; m++) runs.push(await fire(api, "* * * * *", start + m * MIN));
    // minute 1 had more than 50 subrequests of work: the trim stopped short (capped) and the
    // webhooks job still had its share, kept back for it
    const [first, second] = runs as [(typeof runs)[0], (typeof runs)[0]];
    expect(first.results.trim!.capped).toBe(true);
    expect(Number(first.results.trim!.rooms)).toBeLessThan(rooms.length);
    expect(Number(first.results.webhooks!.claimed)).toBeGreaterThan(0);

    // every room sampled in minute 1 or 2: those minute 1 left were visited first in minute 2
    api.setNow(start + 5 * MIN);
    const points = new Map<string, number[]>();
    await inParallel(rooms, 50, async (room) => {
      const history = await api.get(`/v1/presence/${room}/history`);
      points.set(
        room,
        (history.body.points as { at: number; online: number }[]).filter((p) => p.online === 1).map((p) => p.at),
      );
    });
    const inFirst = rooms.filter((r) => points.get(r)!.includes(minute(1)));
    expect(inFirst).toHaveLength(Number(first.results.trim!.rooms));
    const left = rooms.filter((r) => !points.get(r)!.includes(minute(1)));
    expect(left.every((r) => points.get(r)!.includes(minute(2)))).toBe(true);
    expect(Number(second.results.trim!.rooms)).toBeGreaterThanOrEqual(left.length);

    // each delivery's first attempt made once (retries come back a minute later, as attempt 2 ...)
    for (const name of ["h1", "h2"]) {
      const log = (await webhooks.deliveries(ctxOf(api), name)).deliveries;
      const attempts = log.map((d) => `${d.delivery} ${d.attempt}`);
      expect(new Set(attempts).size).toBe(attempts.length);
      expect(new Set(log.filter((d) => d.attempt === 1).map((d) => d.delivery)).size).toBe(10);
    }
    console.log(
      "minute runs:",
      runs.map((r) => ({
        subrequests: r.subrequests,
        rooms: r.results.trim!.rooms,
        claimed: r.results.webhooks!.claimed,
      })),
    );
  }, 120_000);
});

describe("the hourly trigger (compact, webhooks.trending, sweep, snapshot) within SUBREQUEST_LIMIT=50", () => {
  const start = Date.UTC(2026, 10, 22, 12, 30, 10);
  const api = newApi("budget-hour", start);
  afterAll(() => api.cleanup());

  it("400 streams to compact and 40 deliveries: each run ≤ 50, each stream compacted once, each delivery sent once", async () => {
    const streams = Array.from({ length: 400 }, (_, i) => `s${i}`);
    await inParallel(streams, 25, async (s) => {
      const res = await api.post(`/v1/trending/${s}/events`, { events: [{ member: "x", count: 2 }, { member: "y" }] });
      expect(res.status).toBe(200);
    });
    for (const board of ["b1", "b2"]) {
      const put = await api.put(`/v1/leaderboards/${board}`, undefined, admin);
      expect(put.status, JSON.stringify(put.body)).toBeLessThan(300);
      const join = await api.put(`/v1/leaderboards/${board}/players/p`, { name: "P" });
      expect(join.status, JSON.stringify(join.body)).toBeLessThan(300);
      const score = await api.post(`/v1/leaderboards/${board}/players/p/score`, { by: 5 });
      expect(score.status, JSON.stringify(score.body)).toBe(200);
    }
    expect((await api.post("/v1/counters/gone/incr", { items: [{ member: "m", by: 1 }] })).status).toBe(200);
    expect((await api.del("/v1/counters/gone", admin)).status).toBe(204);
    await queueDeliveries(api, 20);
    const at = Math.floor(start / HOUR) * HOUR + HOUR + 5 * MIN;

    const runs: { results: Record<string, Record<string, unknown>>; subrequests: number }[] = [];
    for (let i = 0; i < 12; i++) {
      const run = await fire(api, "5 * * * *", at);
      runs.push(run);
      if (!run.results.compact!.more && Number(run.results["webhooks.trending"]!.claimed ?? 0) === 0) break;
    }
    expect(runs[0]!.results.compact!.more).toBe(true);
    expect(runs.at(-1)!.results.compact!.more).toBe(false);
    const sum = (job: string, field: string) => runs.reduce((s, r) => s + Number(r.results[job]![field] ?? 0), 0);
    // each stream compacted once (none found done by another run: no work counted twice)
    expect(sum("compact", "streams")).toBe(streams.length);
    expect(sum("compact", "skipped")).toBe(0);
    expect(sum("webhooks.trending", "claimed")).toBe(40);
    // the later jobs ran in every run, in the share kept back for them
    for (const r of runs) expect(r.results["sweep-counters"]!.deferred, "sweep").toBeUndefined();
    expect(sum("leaderboards.snapshot", "snapshots")).toBe(2);
    await expectEachDeliveryOnce(api, 20);
    // compaction's effect is visible: the finished hour is exact in a read
    api.setNow(at + MIN);
    const top = await api.get("/v1/trending/s399/top?n=2&window=24h");
    expect(top.body.items).toEqual([
      { rank: 1, member: "x", count: 2 },
      { rank: 2, member: "y", count: 1 },
    ]);
    console.log(
      "hourly runs:",
      runs.map((r) => ({
        subrequests: r.subrequests,
        compact: r.results.compact!.batches,
        streams: r.results.compact!.streams,
        claimed: r.results["webhooks.trending"]!.claimed,
      })),
    );
  }, 120_000);
});

describe("POST /internal/jobs/{job}: the request is the invocation", () => {
  const start = Date.UTC(2026, 10, 22, 12, 30, 10);
  const api = createTestApi({ label: "budget-route", start, vars: { SUBREQUEST_LIMIT: "30" } });
  afterAll(() => api.cleanup());

  it("a compaction call with 400 streams due stays within SUBREQUEST_LIMIT=30 and says more; calls finish it", async () => {
    const streams = Array.from({ length: 400 }, (_, i) => `s${i}`);
    await inParallel(streams, 25, async (s) => {
      expect((await api.post(`/v1/trending/${s}/events`, { events: [{ member: "x" }] })).status).toBe(200);
    });
    api.setNow(Math.floor(start / HOUR) * HOUR + HOUR + 5 * MIN);
    let compacted = 0;
    const calls: { requests: number; batches: number; more: boolean }[] = [];
    for (let i = 0; i < 6; i++) {
      const m = await api.cost(() => api.post("/internal/jobs/compact", undefined, admin));
      expect(m.result.status).toBe(200);
      const result = m.result.body.result as { streams: number; skipped: number; batches: number; more: boolean };
      expect(result.skipped).toBe(0);
      compacted += result.streams;
      calls.push({ requests: m.requests, batches: result.batches, more: result.more });
      expect(m.requests).toBeLessThanOrEqual(30);
      if (!result.more) break;
    }
    expect(calls[0]!.more).toBe(true);
    expect(calls.at(-1)!.more).toBe(false);
    expect(compacted).toBe(streams.length);
    console.log("compaction calls:", calls);
  }, 120_000);
});
