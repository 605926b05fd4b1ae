/**
 * The re-send reserve of the jobs' subrequest budget (src/job-budget.ts) after a first run: the
 * scripts an isolate has seen Redis answer (src/redis/loaded.ts) need no re-send kept aside, so
 * on the free plan's 50 a run after the first does more (rooms trimmed, streams compacted); one
 * subrequest stays aside for a lost script cache. A SCRIPT FLUSH between runs: the first re-send
 * loads the other scripts again in the same request, every run stays within 50 and the state is
 * what the results say (each room's point once a minute, each stream compacted once, each
 * delivery attempted once). In workerd against the local Upstash server (its request count must
 * equal the budget's).
 */
import { afterAll, describe, expect, it } from "vitest";
import { HISTORY_SCALE, roomKeys } from "../../src/presence/keys.ts";
import { heartbeat } from "../../src/presence/presence.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import { ctxOf, fireCounted, inParallel, queueLeaderEvents, webhookPutter } from "../helpers/job-budget.ts";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi, type TestApi } from "../helpers/worker.ts";

const MIN = 60_000;
const HOUR = 3_600_000;
const LIMIT = 50;
const admin = { key: "admin" };
const START = Date.UTC(2026, 10, 22, 12, 10, 10);

/*
 * Each describe sets its own JOB_REDIS_TIMEOUT_MS: the Worker's job client (one per URL, token and
 * timeout, functions/middleware/context.ts) is then new to this isolate, and so is its memory of
 * loaded scripts: the first run is a fresh isolate's.
 */
const newApi = (label: string, timeout: string, vars: Record<string, string> = {}) =>
  createTestApi({
    label,
    start: START,
    vars: {
      SUBREQUEST_LIMIT: String(LIMIT),
      WEBHOOKS_ALLOW_LOCAL_HTTP: "true",
      JOB_REDIS_TIMEOUT_MS: timeout,
      ...vars,
    },
  });
const putHook = webhookPutter("reserve-hook", "reserve-secret-0123456789");
/** Fires `cron` at `at`; checks the budget's count against the server's and the limit. */
const fire = (api: TestApi, cron: string, at: number) => fireCounted(api, cron, at, LIMIT);

/** ZCOUNT of one score in each key (one EVAL: the local server locks only declared keys). */
const countLua = `local out = {} for i = 1, #KEYS do out[i] = redis.call('ZCOUNT', KEYS[i], ARGV[1], ARGV[1]) end return out`;

/**
 * Rooms with a point of 1 online at `minute` (epoch ms of the minute): the history's point for a
 * minute is scored `minute index × HISTORY_SCALE + online` (src/presence/keys.ts), read straight
 * from Redis, 500 rooms an EVAL. (It read each room's `/history` over HTTP: 12,000 requests in the
 * test's one workerd isolate, whose Redis timeouts then ran past workerd's 10,000 active timers on
 * the loaded CI machine.)
 */
async function roomsSampledAt(api: TestApi, rooms: string[], minute: number): Promise<Set<string>> {
  const target = { url: api.env.UPSTASH_REDIS_REST_URL, token: api.env.UPSTASH_REDIS_REST_TOKEN };
  const score = (minute / MIN) * HISTORY_SCALE + 1;
  const at = new Set<string>();
  for (let i = 0; i < rooms.length; i += 500) {
    const chunk = rooms.slice(i, i + 500);
    const keys = chunk.map((room) => roomKeys(api.prefix, room).history);
    const counts = await command<number[]>(target, "EVAL", countLua, keys.length, ...keys, score);
    counts.forEach((n, j) => {
      if (Number(n) === 1) at.add(chunk[j]!);
    });
  }
  return at;
}

describe("the minute trigger (trim + webhooks) at 50: a fresh isolate, then runs after", () => {
  const api = newApi("reserve-min", "25001");
  afterAll(() => api.cleanup());

  it("3,000 busy rooms, rising, a peak and 30 deliveries: the runs after the first trim more rooms; a SCRIPT FLUSH costs one subrequest and loses nothing", async () => {
    const rooms = Array.from({ length: 3000 }, (_, i) => `r${String(i).padStart(4, "0")}`);
    await inParallel(rooms, 50, (room) => heartbeat(ctxOf(api), room, ["u"]));
    await putHook(api, "rise", { events: ["trending.rising"] });
    await putHook(api, "peak", { events: ["presence.peak"], filter: { room: "r0000" } });
    await putHook(api, "lead", { events: ["leaderboard.leader"] });
    // streams written once rising is subscribed: the registry lists them, every run reads them
    for (const s of ["s0", "s1"]) {
      const res = await api.post(`/v1/trending/${s}/events`, { events: [{ member: `m-${s}`, count: 50 }] });
      expect(res.status).toBe(200);
    }
    await queueLeaderEvents(api, 30, { queued: 1 });

    const runs: Awaited<ReturnType<typeof fire>>[] = [];
    const minuteOf = (m: number) => Math.floor((START + m * MIN) / MIN) * MIN;
    for (let m = 1; m <= 4; m++) {
      // the scripts flushed before the first run (a fresh Redis too: every script re-sent) and
      // before the fourth: Redis lost what the isolate believes loaded
      if (m === 1 || m === 4) await command(api.target, "SCRIPT", "FLUSH");
      runs.push(await fire(api, "* * * * *", START + m * MIN));
    }
    const rows = runs.map((r) => ({
      subrequests: r.subrequests,
      reloads: r.reloads,
      loadedAgain: r.loadedAgain,
      rooms: r.results.trim!.rooms,
      capped: r.results.trim!.capped,
      claimed: r.results.webhooks!.claimed,
      rising: r.results.webhooks!.risingStreams,
    }));
    console.log("minute runs at 50 (fresh, after, after, after SCRIPT FLUSH):", rows);
    const [fresh, second, third, flushed] = runs as [
      (typeof runs)[0],
      (typeof runs)[0],
      (typeof runs)[0],
      (typeof runs)[0],
    ];
    // fresh: each of trim's 3 scripts and the webhooks job's 7 kept a re-send aside (17 kept back
    // for webhooks, trim's own 3): 30 left for the list, the marks and 28 chunks of 50
    expect(fresh.results.trim!.rooms).toBe(1400);
    // after: every script sent in the first run is known loaded, and the invocation keeps 1 for a
    // lost cache. Still kept: trim's marks script (no leave mark due: never sent) and 3 of the
    // webhooks job's (the registry's list, the rising read, the events' queueing: the busy trim
    // leaves rising no share after the first 5 deliveries, so they were never sent either). The
    // webhooks job's share kept back: 13 (was 17); trim's own reserve 1 (was 3) and the spare 1:
    // 35 left for the list, the marks and 33 chunks of 50
    expect(second.results.trim!.rooms).toBe(1650);
    expect(third.results.trim!.rooms).toBe(1650);
    for (const r of [fresh, second, third, flushed]) {
      expect(r.results.trim!.capped).toBe(true);
      expect(Number(r.results.webhooks!.claimed)).toBeGreaterThan(0);
    }
    expect(second.reloads).toBe(0);
    // SCRIPT FLUSH: the first EVALSHA (trim's due list) answered NOSCRIPT; its EVAL loaded every
    // other script the isolate had seen loaded in the same request: no other re-send in the run
    expect(flushed.reloads).toBe(1);
    // the 6 scripts the runs sent: trim's due list re-sent, its chunk script and the webhooks
    // job's 4 (list, peaks, claim, settle) loaded with it
    expect(flushed.loadedAgain).toBe(5);
    // the lost cache's one re-send left the webhooks job fewer deliveries (5); what it left unused
    // the trim's second turn takes (review 19: a `capped` trim gets one): 2 chunks of rooms the
    // first turn did not reach
    expect(flushed.results.trim!.rooms).toBe(1750);
    expect(flushed.results.webhooks!.deferred).toBeUndefined();

    // what the results say is what Redis holds: each run's rooms got their minute's point, and
    // every room was reached within two minutes (the capped run's rest goes first next minute)
    api.setNow(START + 5 * MIN);
    const sampled: Set<string>[] = [];
    for (let m = 1; m <= 4; m++) sampled.push(await roomsSampledAt(api, rooms, minuteOf(m)));
    runs.forEach((r, i) => expect(sampled[i]!.size, `minute ${i + 1}`).toBe(Number(r.results.trim!.rooms)));
    for (let m = 0; m < 3; m++) {
      const reached = new Set([...sampled[m]!, ...sampled[m + 1]!]);
      expect(reached.size, `minutes ${m + 1}-${m + 2}`).toBe(rooms.length);
    }
    // each delivery's attempts made once each (no settle lost to the flush: none sent twice)
    const log = (await webhooks.deliveries(ctxOf(api), "lead")).deliveries;
    const attempts = log.map((d) => `${d.delivery} ${d.attempt}`);
    expect(new Set(attempts).size).toBe(attempts.length);
    const claimed = runs.reduce((s, r) => s + Number(r.results.webhooks!.claimed ?? 0), 0);
    expect(log.length).toBe(claimed);
  }, 240_000);
});

describe("the hourly trigger at 50: compaction, a fresh isolate then runs after, a SCRIPT FLUSH", () => {
  const api = newApi("reserve-hour", "25002");
  afterAll(() => api.cleanup());

  it("1,200 streams to compact, a board, a deleted counter and 20 deliveries: the runs after compact more; each stream once", async () => {
    const streams = Array.from({ length: 1200 }, (_, i) => `s${String(i).padStart(4, "0")}`);
    await inParallel(streams, 30, async (s) => {
      const res = await api.post(`/v1/trending/${s}/events`, { events: [{ member: "x", count: 2 }, { member: "y" }] });
      expect(res.status).toBe(200);
    });
    expect((await api.put("/v1/leaderboards/b1", undefined, admin)).status).toBeLessThan(300);
    expect((await api.put("/v1/leaderboards/b1/players/p", { name: "P" })).status).toBeLessThan(300);
    expect((await api.post("/v1/counters/gone/incr", { items: [{ member: "m", by: 1 }] })).status).toBe(200);
    expect((await api.del("/v1/counters/gone", admin)).status).toBe(204);
    await putHook(api, "lead", { events: ["leaderboard.leader"] });
    await queueLeaderEvents(api, 20, { queued: 1 });
    const at = Math.floor(START / HOUR) * HOUR + HOUR + 5 * MIN;

    const runs: Awaited<ReturnType<typeof fire>>[] = [];
    for (let i = 0; i < 12; i++) {
      if (i === 0 || i === 2) await command(api.target, "SCRIPT", "FLUSH");
      const run = await fire(api, "5 * * * *", at);
      runs.push(run);
      if (!run.results.compact!.more) break;
    }
    const rows = runs.map((r) => ({
      subrequests: r.subrequests,
      reloads: r.reloads,
      loadedAgain: r.loadedAgain,
      batches: r.results.compact!.batches,
      streams: r.results.compact!.streams,
      claimed: r.results["webhooks.trending"]!.claimed,
    }));
    console.log("hourly runs at 50 (fresh, after, after SCRIPT FLUSH, ...):", rows);
    const [fresh, second, flushed] = runs as [(typeof runs)[0], (typeof runs)[0], (typeof runs)[0]];
    // fresh: the leaderboard snapshot first (review 13: list and step, each re-sent: 4), 18 kept
    // back for the later jobs (6 of them re-sends), 2 for compaction's own: 12 scripts of 20
    // streams; after: the snapshot's list (1), 14 kept back (the webhooks job's detection script and
    // the sweep's delete, never sent, keep a re-send each), none for its own, 1 spare: 16, and no
    // second turn (3 left; it was 17 and one more with the snapshot last, the deliveries one fewer)
    expect(fresh.results.compact!.streams).toBe(240);
    expect(second.results.compact!.streams).toBe(320);
    expect(flushed.reloads).toBe(1);
    expect(flushed.loadedAgain).toBeGreaterThan(0);
    const sum = (job: string, field: string) => runs.reduce((s, r) => s + Number(r.results[job]![field] ?? 0), 0);
    expect(runs.at(-1)!.results.compact!.more).toBe(false);
    // each stream compacted once, none found done by another run
    expect(sum("compact", "streams")).toBe(streams.length);
    expect(sum("compact", "skipped")).toBe(0);
    expect(sum("leaderboards.snapshot", "snapshots")).toBe(1);
    for (const r of runs) {
      for (const job of ["webhooks.trending", "sweep-counters", "leaderboards.snapshot"]) {
        expect(r.results[job]!.deferred, job).toBeUndefined();
      }
    }
    const log = (await webhooks.deliveries(ctxOf(api), "lead")).deliveries;
    expect(new Set(log.map((d) => d.delivery)).size).toBe(log.length);
    expect(log.length).toBe(sum("webhooks.trending", "claimed"));
    api.setNow(at + MIN);
    const top = await api.get("/v1/trending/s1199/top?n=2&window=24h");
    expect(top.body.items).toEqual([
      { rank: 1, member: "x", count: 2 },
      { rank: 2, member: "y", count: 1 },
    ]);
  }, 240_000);
});
