/**
 * Review 13: the subrequest budget of a scheduled invocation (SUBREQUEST_LIMIT, src/job-budget.ts),
 * adversarially, in workerd against the local Upstash server: every job of a trigger with more
 * work than the invocation can do at once, every script flushed before each run (so each is
 * answered NOSCRIPT and re-sent), direct and QStash deliveries (both to a receiver that refuses
 * them), at SUBREQUEST_LIMIT 30, 50 and 100. What an invocation sends is counted twice: by the
 * budget (run.subrequests) and by the local server (its request count, plus one fetch a claimed
 * delivery); both must agree and stay within the limit. Also: bad limits, POST /internal/jobs,
 * and that API calls cost what they did.
 */
import { afterAll, describe, expect, it } from "vitest";
import { runScheduledCounted } from "../../functions/scheduled.ts";
import { heartbeat } from "../../src/presence/presence.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import { stored } from "../../src/webhooks/webhooks.ts";
import { detectRising } from "../../src/webhooks/rising.ts";
import { registryKeys as trendingRegistry } from "../../src/trending/keys.ts";
import { registryKeys } from "../../src/webhooks/keys.ts";
import { TEST_SIGNING_KEYS } from "../helpers/keys.ts";
import { ctxOf, fireCounted, inParallel, queueLeaderEvents, webhookPutter } from "../helpers/job-budget.ts";
import { signQstash } from "../helpers/qstash-sign.ts";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi, type TestApi } from "../helpers/worker.ts";

const MIN = 60_000;
const HOUR = 3_600_000;
const admin = { key: "admin" };
const SECRET = "review13-budget-secret-0123";
const START = Date.UTC(2026, 10, 22, 12, 10, 10);

const flush = (api: TestApi) => command(api.target, "SCRIPT", "FLUSH");
const putHook = webhookPutter("rv13-hook", SECRET);

/** Streams with one member each rising far above a zero baseline (score over every threshold). */
async function risingStreams(api: TestApi, n: number) {
  const streams = Array.from({ length: n }, (_, i) => `s${String(i).padStart(3, "0")}`);
  await inParallel(streams, 25, async (s) => {
    const res = await api.post(`/v1/trending/${s}/events`, { events: [{ member: `m-${s}`, count: 50 }] });
    expect(res.status).toBe(200);
  });
  return streams;
}

/** Fires `cron` at `at` with SUBREQUEST_LIMIT=`limit`, the scripts flushed first. */
async function fire(api: TestApi, cron: string, at: number, limit: number, flushFirst = true) {
  if (flushFirst) await flush(api);
  const run = await fireCounted(api, cron, at, limit, { ...api.env, SUBREQUEST_LIMIT: String(limit) } as Env);
  expect(run.limit).toBe(limit);
  return { results: run.results, subrequests: run.subrequests, limit };
}

for (const qstash of [false, true]) {
  describe(`the minute trigger, worst case, ${qstash ? "QStash publishing" : "direct delivery"}`, () => {
    const api = createTestApi({
      label: `rv13-min-${qstash ? "q" : "d"}`,
      start: START,
      vars: {
        WEBHOOKS_ALLOW_LOCAL_HTTP: "true",
        ...(qstash ? { QSTASH_TOKEN: "rv13-qstash-token", QSTASH_URL: "" } : {}),
      },
    });
    afterAll(() => api.cleanup());

    it("450 busy rooms, rising with no filter over 30 streams, peaks, 30 deliveries: every run ≤ 30/50/100 after SCRIPT FLUSH", async () => {
      if (qstash)
        (api.env as unknown as Record<string, string>).QSTASH_URL = `${api.env.UPSTASH_REDIS_REST_URL}/rv13-qstash`;
      const rooms = Array.from({ length: 450 }, (_, i) => `r${String(i).padStart(4, "0")}`);
      await inParallel(rooms, 50, (room) => heartbeat(ctxOf(api), room, ["u", "v"]));
      await risingStreams(api, 30);
      await putHook(api, "rise", { events: ["trending.rising"] });
      await putHook(api, "peak", { events: ["presence.peak"], filter: { room: "r0000" } });
      await putHook(api, "lead", { events: ["leaderboard.leader"] });
      await queueLeaderEvents(api, 30);
      const runs = [];
      for (const [m, limit] of [30, 50, 100, 30, 50, 100].entries()) {
        const run = await fire(api, "* * * * *", START + (m + 1) * MIN, limit);
        // the webhooks job always had a share: never deferred, the rising read never starved
        expect(run.results.webhooks!.deferred, `webhooks at ${limit}`).toBeUndefined();
        runs.push({
          limit,
          subrequests: run.subrequests,
          rooms: run.results.trim!.rooms,
          capped: run.results.trim!.capped,
          rising: run.results.webhooks!.risingStreams,
          claimed: run.results.webhooks!.claimed,
        });
      }
      // the deliveries went the configured way (each one fetch, counted above)
      const log = (await webhooks.deliveries(ctxOf(api), "lead")).deliveries;
      expect(log.length).toBeGreaterThan(0);
      expect(new Set(log.map((d) => d.via))).toEqual(new Set([qstash ? "qstash" : "direct"]));
      console.log(`minute runs (${qstash ? "qstash" : "direct"}):`, runs);
    }, 120_000);
  });
}

describe("the hourly trigger, worst case, SCRIPT FLUSH before each run", () => {
  const api = createTestApi({ label: "rv13-hour", start: START, vars: { WEBHOOKS_ALLOW_LOCAL_HTTP: "true" } });
  afterAll(() => api.cleanup());

  it("150 streams to compact, trending.entered on 18 streams (the 20-webhook cap), purge, boards, 20 deliveries: each run ≤ its limit; all done once", async () => {
    const streams = await risingStreams(api, 150);
    for (const board of ["b1", "b2"]) {
      expect((await api.put(`/v1/leaderboards/${board}`, undefined, admin)).status).toBeLessThan(300);
      expect((await api.put(`/v1/leaderboards/${board}/players/p`, { name: "P" })).status).toBeLessThan(300);
      expect((await api.post(`/v1/leaderboards/${board}/players/p/score`, { by: 5 })).status).toBe(200);
    }
    expect((await api.post("/v1/counters/gone/incr", { items: [{ member: "m", by: 1 }] })).status).toBe(200);
    expect((await api.del("/v1/counters/gone", admin)).status).toBe(204);
    // trending.entered/left need filter.stream (a PUT without one is a 400): one per stream watched, 18 with "lead" and room under the cap of 20
    for (const s of streams.slice(0, 18)) {
      await putHook(api, `top-${s}`, { events: ["trending.entered", "trending.left"], filter: { stream: s } });
    }
    await putHook(api, "lead", { events: ["leaderboard.leader"] });
    await queueLeaderEvents(api, 20);
    const at = Math.floor(START / HOUR) * HOUR + HOUR + 5 * MIN;
    const runs: Awaited<ReturnType<typeof fire>>[] = [];
    const limits = [30, 50, 100];
    for (let i = 0; i < 20; i++) {
      const run = await fire(api, "5 * * * *", at, limits[i % 3]!);
      runs.push(run);
      if (!run.results.compact!.more && Number(run.results["webhooks.trending"]!.claimed ?? 0) === 0) break;
    }
    const sum = (job: string, field: string) => runs.reduce((s, r) => s + Number(r.results[job]![field] ?? 0), 0);
    expect(runs.at(-1)!.results.compact!.more).toBe(false);
    expect(sum("compact", "streams")).toBe(streams.length);
    expect(sum("compact", "skipped")).toBe(0);
    expect(sum("leaderboards.snapshot", "snapshots")).toBe(2);
    for (const r of runs) {
      for (const job of ["compact", "webhooks.trending", "sweep-counters", "leaderboards.snapshot"]) {
        expect(r.results[job]!.deferred, `${job} at ${r.limit}`).toBeUndefined();
      }
    }
    const log = (await webhooks.deliveries(ctxOf(api), "lead")).deliveries;
    expect(log).toHaveLength(20);
    expect(new Set(log.map((d) => d.delivery)).size).toBe(20);
    console.log(
      "hourly runs:",
      runs.map((r) => ({ limit: r.limit, subrequests: r.subrequests, compacted: r.results.compact!.streams })),
    );
  }, 180_000);
});

describe("POST /internal/jobs/{job} at SUBREQUEST_LIMIT=30", () => {
  const api = createTestApi({
    label: "rv13-route",
    start: START,
    vars: { SUBREQUEST_LIMIT: "30", WEBHOOKS_ALLOW_LOCAL_HTTP: "true" },
  });
  afterAll(() => api.cleanup());

  it("the request's own subrequests (auth, rate limit) fit in the 2 kept out of the job's budget", async () => {
    const m = await api.cost(() => api.post("/internal/jobs/sweep-counters", undefined, admin));
    expect(m.result.status).toBe(200);
    // the sweep's pick, found empty: one request; the rest is the request's own
    expect(m.result.body.result).toEqual({ checked: 0, deleted: 0, more: false });
    expect(m.requests - 1).toBeLessThanOrEqual(2);
  });

  it("a QStash-signed call's own subrequests fit in the 2 kept out of the job's budget too", async () => {
    const signature = await signQstash(TEST_SIGNING_KEYS.current, {
      url: "http://localhost/internal/jobs/sweep-counters",
    });
    const m = await api.cost(() =>
      api.post("/internal/jobs/sweep-counters", undefined, {
        key: "none",
        headers: { "upstash-signature": signature },
      }),
    );
    expect(m.result.status, JSON.stringify(m.result.body)).toBe(200);
    expect(m.requests - 1).toBeLessThanOrEqual(2);
  });

  it("read and ingest keys are refused and run nothing; the admin key runs each job within 30 after SCRIPT FLUSH", async () => {
    const rooms = Array.from({ length: 450 }, (_, i) => `r${String(i).padStart(4, "0")}`);
    await inParallel(rooms, 50, (room) => heartbeat(ctxOf(api), room, ["u"]));
    await risingStreams(api, 30);
    await putHook(api, "rise", { events: ["trending.rising"] });
    await putHook(api, "lead", { events: ["leaderboard.leader"] });
    await queueLeaderEvents(api, 30);
    api.setNow(START + MIN);
    for (const key of ["read", "ingest"]) {
      const m = await api.cost(() => api.post("/internal/jobs/trim", undefined, { key }));
      expect(m.result.status, key).toBe(403);
      expect(m.requests, key).toBeLessThanOrEqual(2);
    }
    for (const job of ["trim", "webhooks", "compact", "webhooks.trending", "sweep-counters", "leaderboards.snapshot"]) {
      await flush(api);
      const m = await api.cost(() => api.post(`/internal/jobs/${job}`, undefined, admin));
      expect(m.result.status, job).toBe(200);
      const result = m.result.body.result as Record<string, unknown>;
      expect(result.error, job).toBeUndefined();
      expect(m.requests + Number(result.claimed ?? 0), job).toBeLessThanOrEqual(30);
    }
  }, 120_000);
});

describe("bad SUBREQUEST_LIMIT values", () => {
  const api = createTestApi({ label: "rv13-bad", start: START });
  afterAll(() => api.cleanup());

  for (const bad of ["29", "0", "-1", "abc", "50.5", "10000001", "1e9"]) {
    it(`'${bad}': the cron invocation fails before sending anything, naming the variable and its range`, async () => {
      await api.resetStats();
      await expect(
        runScheduledCounted("* * * * *", START + MIN, { ...api.env, SUBREQUEST_LIMIT: bad } as Env),
      ).rejects.toThrow(`SUBREQUEST_LIMIT must be an integer from 30 to 10000000; it is '${bad}'.`);
      expect((await api.stats()).requests).toBe(0);
    });
  }

  it("the edges 30 and 10000000 are accepted; '' is the default 10,000", async () => {
    for (const [raw, limit] of [
      ["30", 30],
      ["10000000", 10_000_000],
      ["", 10_000],
    ] as const) {
      const run = await runScheduledCounted("* * * * *", START + MIN, { ...api.env, SUBREQUEST_LIMIT: raw } as Env);
      expect(run.limit).toBe(limit);
    }
  });

  it("an API call with a bad SUBREQUEST_LIMIT answers with the error envelope naming it", async () => {
    const bad = createTestApi({ label: "rv13-bad-api", start: START, vars: { SUBREQUEST_LIMIT: "29" } });
    const res = await bad.get("/v1/trending/s/top?n=1");
    console.log("API with SUBREQUEST_LIMIT=29:", res.status, JSON.stringify(res.body));
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(JSON.stringify(res.body)).toContain("SUBREQUEST_LIMIT");
  });
});

describe("API calls cost what they did: the budget is the jobs' alone", () => {
  const low = createTestApi({ label: "rv13-api30", start: START, vars: { SUBREQUEST_LIMIT: "30" } });
  const dflt = createTestApi({ label: "rv13-apidf", start: START });
  afterAll(async () => {
    await low.cleanup();
    await dflt.cleanup();
  });

  it("the same calls, at SUBREQUEST_LIMIT 30 and unset: equal requests and commands, none refused", async () => {
    const calls: [string, (api: TestApi) => Promise<{ status: number }>][] = [
      ["record", (api) => api.post("/v1/trending/s/events", { events: [{ member: "a", count: 3 }] })],
      ["top", (api) => api.get("/v1/trending/s/top?n=5")],
      ["heartbeat", (api) => api.post("/v1/presence/hall/heartbeats", { ids: ["a", "b"] })],
      ["online", (api) => api.get("/v1/presence/hall")],
      ["incr", (api) => api.post("/v1/counters/c/incr", { items: [{ member: "m", by: 1 }] })],
    ];
    // once each first, so that loading a script (NOSCRIPT in the shared Redis) is no one's cost
    for (const [, call] of calls) {
      await call(low);
      await call(dflt);
    }
    for (const [name, call] of calls) {
      const a = await low.cost(() => call(low));
      const b = await dflt.cost(() => call(dflt));
      expect(a.result.status, name).toBeLessThan(300);
      expect({ requests: a.requests, commands: a.commands }, name).toEqual({
        requests: b.requests,
        commands: b.commands,
      });
    }
    // 40 API calls in a row at SUBREQUEST_LIMIT=30: each its own request, none counted against a job budget
    for (let i = 0; i < 40; i++) expect((await low.get("/v1/trending/s/top?n=5")).status).toBe(200);
  });
});

describe("trending.rising takes turns by minute × per-run count: a share that varies skips streams", () => {
  const api = createTestApi({ label: "rv13-turns", start: START, vars: { WEBHOOKS_ALLOW_LOCAL_HTTP: "true" } });
  afterAll(() => api.cleanup());

  /*
   * BUG (medium): detectRising picks its turn as `(minute × per) % streams` where `per` is what the
   * run's share of subrequests pays (webhooks job: leftOf − 3, less the list, halved), so it changes
   * with the presence trim's load minute to minute. The turns then do not chain: with 12 streams, a
   * run of 1 stream on even minutes and 2 on odd minutes reads streams {0,2,4,..} and {2,3,6,7,10,11}
   * forever; streams 1, 5 and 9 are never read, their rising members never told, while `risingMore`
   * says only "some wait for a later run". Smallest fix: keep the rotation's cursor in Redis (the
   * next stream's index, or name, written with the events' queueing, which already is a write),
   * or derive the start from a fixed per (RISING_STREAMS_PER_RUN) and read only a prefix of that
   * turn, carrying the rest to the next minute via the cursor.
   */
  it("with a share paying 1 stream on even minutes and 2 on odd ones, every stream is read within 2 × streams minutes", async () => {
    const streams = await risingStreams(api, 12);
    await putHook(api, "rise", { events: ["trending.rising"] });
    const hooks = await stored(ctxOf(api));
    const first = Math.floor(START / MIN) + 1;
    for (let m = first; m < first + 24; m++) {
      // the listing (1) and two a stream: 3 pays one stream, 5 pays two
      const subrequests = m % 2 === 0 ? 3 : 5;
      const found = await detectRising(ctxOf(api, m * MIN + 10_000), hooks, 50, subrequests);
      expect(found.streams).toBe(m % 2 === 0 ? 1 : 2);
    }
    // the queued deliveries' bodies name the member (m-<stream>) of each stream read
    const bodies = await command<string[]>(api.target, "HVALS", registryKeys(api.prefix).deliveries);
    expect(bodies.length).toBeGreaterThan(0);
    const read = streams.filter((s) => bodies.some((b) => b.includes(`m-${s}`)));
    expect(read).toEqual(streams);
  });
});

describe("the free plan's 50 with a busy trim: the deliveries' kept-back share", () => {
  const api = createTestApi({
    label: "rv13-share",
    start: START,
    vars: { SUBREQUEST_LIMIT: "50", WEBHOOKS_ALLOW_LOCAL_HTTP: "true" },
  });
  afterAll(() => api.cleanup());

  /*
   * BUG (medium): the webhooks job's KEPT_BACK (src/webhooks/jobs.ts) keeps "its smallest run and
   * 5 deliveries more, so a busy presence trim ... never holds the deliveries to one a run (on the
   * free plan's 50)"; but the job then gives that share to trending.rising first (detectRising gets
   * leftOf − 3: all but the claim, one delivery and the settle). With the trim capped every minute
   * and a rising webhook without a filter (or with a few streams), each minute sends ONE delivery
   * while rising can queue up to 10 events a stream read: the queue only grows until `full` drops
   * events. Smallest fix: bound rising's share so the deliveries keep theirs, e.g.
   * `detectRising(..., leftOf(ctx) - 3 - DELIVERIES_KEPT)` with DELIVERIES_KEPT = min(5, due) (or
   * deliver first, then detect with what is left).
   */
  it("2,000 busy rooms, rising with no filter over 10 streams, 30 deliveries due: each minute sends ≥ 5 deliveries", async () => {
    // (fixer: 2,000, was 1,500: with the scripts an isolate knows loaded no re-send is kept for
    // them (src/redis/loaded.ts), and a minute after the first trims up to 1,800 rooms at 50)
    const rooms = Array.from({ length: 2000 }, (_, i) => `r${String(i).padStart(4, "0")}`);
    await inParallel(rooms, 50, (room) => heartbeat(ctxOf(api), room, ["u"]));
    await risingStreams(api, 10);
    await putHook(api, "rise", { events: ["trending.rising"] });
    await putHook(api, "lead", { events: ["leaderboard.leader"] });
    await queueLeaderEvents(api, 30);
    const runs = [];
    for (let m = 1; m <= 3; m++) {
      const run = await fire(api, "* * * * *", START + m * MIN, 50);
      expect(run.results.trim!.capped).toBe(true);
      runs.push({ claimed: run.results.webhooks!.claimed, rising: run.results.webhooks!.risingStreams });
    }
    console.log("free plan, busy trim:", runs);
    for (const r of runs) expect(Number(r.claimed)).toBeGreaterThanOrEqual(5);
  }, 120_000);
});

describe("the hourly trigger's shares when the jobs after compaction have nothing to do", () => {
  const api = createTestApi({ label: "rv13-idle", start: START });
  afterAll(() => api.cleanup());

  /*
   * BUG (low): compaction runs first in "5 * * * *" and may only spend the limit less every later
   * job's `needs` (22 of 30, 22 of 50: webhooks.trending 14, sweep 4, snapshot 4), even when those
   * jobs have nothing to do: with no webhook, no deleted counter and no board, a run at 50 stops
   * compaction with `more: true` at 240 streams and the invocation ends at 33 of 50 (measured,
   * after SCRIPT FLUSH: reloads included), 17 unused. A
   * deployment on the free plan writing more than ~240 streams an hour never drains the queue
   * (README: "about 12 compaction batches (240 streams)"), though the budget would pay ~400.
   * Smallest fix: after the trigger's jobs, give a job that answered `more: true` one more turn
   * with what is left (runScheduledCounted: a second pass over the `more` jobs, allowance = left).
   */
  it("600 streams due and nothing else: the run at 50 spends what the idle later jobs left on compaction", async () => {
    // (fixer: 400, was 300: with the second turn a run at 50 compacts all 300 and says more: false;
    // then 600: with no re-send kept for the scripts the isolate knows loaded, it compacts all 400)
    await risingStreams(api, 600);
    const at = Math.floor(START / HOUR) * HOUR + HOUR + 5 * MIN;
    const run = await fire(api, "5 * * * *", at, 50);
    console.log("idle later jobs:", run.subrequests, run.results.compact);
    expect(run.results.compact!.more).toBe(true);
    // the later jobs need one look each (and their reloads): compaction, given the rest less its
    // own possible reloads (2), would bring the run to at least 44
    expect(run.subrequests).toBeGreaterThanOrEqual(50 - 2 - 4);
  }, 120_000);
});

describe("the daily snapshot under a day of busy hourly runs", () => {
  const api = createTestApi({
    label: "rv13-snap",
    start: Date.UTC(2026, 10, 22, 0, 0, 10),
    vars: { WEBHOOKS_ALLOW_LOCAL_HTTP: "true", LEADERBOARD_SNAPSHOT_CHUNK: "1" },
  });
  afterAll(() => api.cleanup());

  /*
   * Review 13 #3, fixed (was BUG (medium), an it.fails): the snapshot ran last in "5 * * * *" and
   * got what compaction and the webhooks' deliveries left (at 30 on a busy hour: list + ~4 steps),
   * and a board's build restarted each new day, so a board needing more steps than a day of busy
   * runs paid never got its snapshot (measured before: 212, then 120, snapshot scripts over the
   * day's 24 runs, 0 snapshots). Now (functions/jobs.ts, CRON_JOBS) the snapshot goes first in the
   * trigger: while its day's pass has work it takes its LEADERBOARD_SNAPSHOT_SCRIPTS less what the
   * later jobs need (here 15 of 30: list + 14 steps), and once the pass is done it costs its one
   * list script; an unfinished build also goes on across the day change (review13-snapshot-carry).
   * Compaction and the deliveries keep their smallest step on the build's runs and are never
   * deferred; compaction takes the rest of the day what the done snapshot leaves.
   */
  it("200 players at chunk 1 (201 steps), compaction and deliveries busy every hour at 30: the day's snapshot completes", async () => {
    expect((await api.put("/v1/leaderboards/big", undefined, admin)).status).toBeLessThan(300);
    const players = Array.from({ length: 200 }, (_, i) => `p${i}`);
    await inParallel(players, 25, async (p) => {
      expect((await api.put(`/v1/leaderboards/big/players/${p}`, { name: p })).status).toBeLessThan(300);
    });
    await putHook(api, "lead", { events: ["leaderboard.leader"] });
    const day = Date.UTC(2026, 10, 22);
    let snapshots = 0;
    let steps = 0;
    let doneAt = -1;
    const compacted: number[] = [];
    for (let h = 0; h < 24; h++) {
      // the hour before the run: 60 streams written (compaction pays 40 an hour at 30), 12 events
      const writeAt = day + h * HOUR + 30 * MIN - HOUR;
      api.setNow(writeAt);
      const streams = Array.from({ length: 60 }, (_, i) => `h${h}-s${i}`);
      await inParallel(streams, 30, (s) =>
        api.post(`/v1/trending/${s}/events`, { events: [{ member: "x" }] }).then((r) => expect(r.status).toBe(200)),
      );
      await queueLeaderEventsAt(api, day + h * HOUR, h, 12);
      // scripts cached (no flush): the snapshot's share is not eaten by reloads
      const run = await fire(api, "5 * * * *", day + h * HOUR + 5 * MIN, 30, false);
      const snap = run.results["leaderboards.snapshot"]!;
      snapshots += Number(snap.snapshots ?? 0);
      steps += Number(snap.scripts ?? 0);
      if (doneAt < 0 && Number(snap.snapshots ?? 0) > 0) doneAt = h;
      // the later jobs keep their smallest step while the build takes its share
      for (const job of ["compact", "webhooks.trending", "sweep-counters"]) {
        expect(run.results[job]!.deferred, `${job} at ${h}:05`).toBeUndefined();
      }
      expect(Number(run.results["webhooks.trending"]!.claimed), `deliveries at ${h}:05`).toBeGreaterThanOrEqual(5);
      compacted.push(Number(run.results.compact!.streams));
    }
    console.log("busy day at 30: snapshot scripts", steps, "snapshots", snapshots, "done at hour", doneAt, compacted);
    expect(snapshots).toBe(1);
    // 201 steps at list + 14 a run (the first, loading the scripts, fewer): the 16th run
    expect(doneAt).toBeLessThanOrEqual(15);
    for (const n of compacted) expect(n).toBeGreaterThan(0);
    // the snapshot says its day, and every player reads a previousRank from it
    // (imported here: this test's own change, apart from the file's shared helper block)
    const { boardKeys } = await import("../../src/leaderboards/keys.ts");
    const settings = boardKeys(api.prefix, "big").settings;
    expect(await command(api.target, "HGET", settings, "snapDay")).toBe("2026-11-22");
    const read = await api.get("/v1/leaderboards/big/players/p199");
    expect(read.status).toBe(200);
    expect(read.body.previousRank).toEqual(expect.any(Number));
  }, 300_000);
});

/** `events` leaderboard.leader events emitted at `now`, for players `p<tag>-<i>`. */
const queueLeaderEventsAt = (api: TestApi, now: number, tag: number, events: number) =>
  queueLeaderEvents(api, events, { now, tag });

describe("compaction short of budget every hour takes the oldest streams first", () => {
  // (fixer: TRENDING_COMPACT_BATCHES=2 keeps the premise of 40 streams an hour: compaction's second
  // turn with the idle later jobs' share would otherwise drain all 100 each run)
  const api = createTestApi({
    label: "rv13-fair",
    start: Date.UTC(2026, 10, 22, 0, 20, 10),
    vars: { TRENDING_COMPACT_BATCHES: "2" },
  });
  afterAll(() => api.cleanup());

  it("100 streams written every hour, 40 compacted an hour at 30: no stream waits more than 3 runs", async () => {
    const day = Date.UTC(2026, 10, 22);
    const streams = Array.from({ length: 100 }, (_, i) => `f${String(i).padStart(3, "0")}`);
    const ages: number[] = [];
    for (let h = 0; h < 8; h++) {
      api.setNow(day + h * HOUR + 20 * MIN);
      await inParallel(streams, 30, (s) =>
        api.post(`/v1/trending/${s}/events`, { events: [{ member: "x" }] }).then((r) => expect(r.status).toBe(200)),
      );
      const run = await fire(api, "5 * * * *", day + (h + 1) * HOUR + 5 * MIN, 30, false);
      expect(run.results.compact!.more).toBe(true);
      // the queue holds each stream's earliest hour not compacted: the oldest tells the longest wait
      // (from 0: the streams' compaction marks, scored −hour, share the key since review 17)
      const oldest = await command<string[]>(
        api.target,
        "ZRANGEBYSCORE",
        trendingRegistry(api.prefix).dirty,
        0,
        "+inf",
        "WITHSCORES",
        "LIMIT",
        0,
        1,
      );
      ages.push(h + 1 - (Number(oldest[1]) - day / HOUR));
    }
    console.log("compaction fairness, oldest queued hour's age per run:", ages);
    expect(Math.max(...ages)).toBeLessThanOrEqual(3);
  }, 120_000);
});
