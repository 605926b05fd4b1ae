/**
 * Review 26, periodic jobs (real Redis behind the local Upstash server): names deleted while a
 * job's run is under way (between its listing script and its work script, by a client that runs
 * the delete just before the job's next call goes out), `more` at the exact end of a job's work,
 * and a run refused mid-way then run again.
 *
 * Bugs are `it.fails` tests asserting the right behaviour, with severity and fix above each.
 */
import { describe, expect, it } from "vitest";
import { JOBS } from "../../functions/jobs.ts";
import { readConfig } from "../../src/config.ts";
import type { Ctx } from "../../src/context.ts";
import { SubrequestBudget, countingRedis } from "../../src/job-budget.ts";
import type { Job } from "../../src/jobs.ts";
import * as leaderboards from "../../src/leaderboards/index.ts";
import { deleteRoom, heartbeat, leave } from "../../src/presence/index.ts";
import type { RedisClient } from "../../src/redis/client.ts";
import { HOUR, MINUTE } from "../../src/time.ts";
import { deleteStream, record, top } from "../../src/trending/index.ts";
import { streamKeys } from "../../src/trending/keys.ts";
import { runScheduledCounted } from "../../functions/scheduled.ts";
import { Edgestats } from "../../src/index.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { receiverForTests } from "../helpers/webhook-receiver.ts";
import { command, keysUnder } from "../helpers/upstash-rest.ts";

const lib = libraryTest("rv26jobs", { timeoutMs: 4000 });
const T0 = Date.UTC(2026, 10, 29, 10, 20);
const TRENDING = { retentionHours: 50 };

/** `job` as the cron runs it: the invocation's counted client and a share of `limit`. */
async function budgeted(job: Job, ctx: Ctx, limit = 10_000, config = lib.config) {
  const invocation = new SubrequestBudget(limit);
  const redis = countingRedis(ctx.redis, invocation);
  const budget = invocation.allowance(limit, job.needs ?? 0);
  const result = await job({ ...ctx, redis, budget }, config);
  return { result, sent: invocation.used };
}

/**
 * The real client, which runs `between` (once) just before its `nth` script call (EVALSHA or EVAL,
 * 1-based) goes out: another request's write landing between two of a job's scripts.
 */
function interleaved(
  redis: RedisClient,
  nth: number,
  between: () => Promise<unknown>,
): RedisClient & { ran: () => boolean } {
  let calls = 0;
  let ran = false;
  const before = async () => {
    calls++;
    if (calls === nth) {
      await between();
      ran = true;
    }
  };
  return {
    ran: () => ran,
    evalsha: (async (...args: Parameters<RedisClient["evalsha"]>) => {
      await before();
      return redis.evalsha(...args);
    }) as RedisClient["evalsha"],
    // a NOSCRIPT re-send is the same call, not the next one
    eval: (async (...args: Parameters<RedisClient["eval"]>) => redis.eval(...args)) as RedisClient["eval"],
    ping: (async (...args: Parameters<RedisClient["ping"]>) => redis.ping(...args)) as RedisClient["ping"],
  };
}

/** Keys under `prefix` containing `part`, each with its TTL (-1: none). */
async function keysWith(prefix: string, part: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const key of await keysUnder(lib.target, prefix)) {
    if (key.includes(part)) out[key] = Number(await command(lib.target, "PTTL", key));
  }
  return out;
}

describe("compaction: the stream deleted between the queue read and the compaction script", () => {
  it("the script finds it gone: nothing of the stream comes back, the queue and registry hold nothing of it", async () => {
    const ctx = lib.ctx(T0, "cmp-del");
    for (const s of ["gone", "kept"])
      await record(
        ctx,
        s,
        [
          { member: "a", count: 5 },
          { member: "b", count: 3 },
          { member: "c", count: 1 },
        ],
        TRENDING,
      );
    const at = { ...ctx, now: T0 + HOUR };
    // ensure the scripts are loaded first (the probe counts script calls; a warm isolate's case)
    await budgeted(JOBS.compact!, { ...lib.ctx(T0, "cmp-warm"), now: T0 + HOUR });
    const redis = interleaved(ctx.redis, 2, () => deleteStream(at, "gone", TRENDING));
    const { result } = await budgeted(JOBS.compact!, { ...at, redis }, 10_000, readConfig({ TRENDING_KEEP: "2" }));
    expect(redis.ran()).toBe(true);
    expect(result.more).toBe(false);
    expect(await keysWith(ctx.prefix, ":gone")).toEqual({});
    for (const registry of ["_names", "_seen", "_dirty"]) {
      const members = await command<string[]>(lib.target, "ZRANGE", `${ctx.prefix}:trending:${registry}`, 0, -1);
      expect(
        members.filter((m) => m.includes("gone")),
        registry,
      ).toEqual([]);
    }
    // the other stream was compacted
    const read = await top({ ...ctx, now: T0 + HOUR + MINUTE }, "kept", { ...TRENDING, n: 2, windowHours: 24 });
    expect(read.items.map((i) => i.member)).toEqual(["a", "b"]);
    // and a later run has nothing of the gone stream to do
    const again = await budgeted(JOBS.compact!, { ...ctx, now: T0 + 2 * HOUR });
    expect(await keysWith(ctx.prefix, ":gone")).toEqual({});
    expect(again.result.more).toBe(false);
  });
});

describe("presence trim: the room deleted between the due list and the trim script", () => {
  it("nothing of the room comes back without an expiry, and it leaves every registry", async () => {
    const ctx = lib.ctx(T0, "trim-del");
    await heartbeat(ctx, "gone", ["u1", "u2"]);
    await heartbeat(ctx, "kept", ["u3"]);
    await budgeted(JOBS.trim!, { ...lib.ctx(T0, "trim-warm"), now: T0 + MINUTE });
    const at = { ...ctx, now: T0 + MINUTE };
    const redis = interleaved(ctx.redis, 2, () => deleteRoom(at, "gone"));
    const { result } = await budgeted(JOBS.trim!, { ...at, redis });
    expect(redis.ran()).toBe(true);
    expect(result.capped).toBe(false);
    const left = await keysWith(ctx.prefix, ":gone");
    // whatever the trim wrote for a room deleted under it, it must not live for ever
    for (const [key, ttl] of Object.entries(left)) expect(ttl, key).toBeGreaterThan(0);
    for (const registry of ["_rooms", "_due"]) {
      const members = await command<string[]>(lib.target, "ZRANGE", `${ctx.prefix}:presence:${registry}`, 0, -1);
      expect(
        members.filter((m) => m.includes("gone")),
        registry,
      ).toEqual([]);
    }
  });
});

describe("presence trim: the room deleted between the due list and the leave marks' script", () => {
  it("an unmapped id's leave mark due with the room deleted under it: nothing of the room is left without an expiry", async () => {
    const ctx = lib.ctx(T0, "mark-del");
    await heartbeat(ctx, "gone", ["u1"]);
    await leave({ ...ctx, now: T0 + 1000 }, "gone", "never");
    const later = T0 + 2 * 86_400_000 + 10 * MINUTE;
    await budgeted(JOBS.trim!, { ...lib.ctx(T0, "mark-warm"), now: later });
    const due = await command<string[]>(lib.target, "ZRANGE", `${ctx.prefix}:presence:_due`, 0, -1);
    expect(due.some((e) => e.includes("never"))).toBe(true);
    const at = { ...ctx, now: later };
    const redis = interleaved(ctx.redis, 2, () => deleteRoom(at, "gone"));
    const { result } = await budgeted(JOBS.trim!, { ...at, redis });
    expect(redis.ran()).toBe(true);
    expect(result.capped).toBe(false);
    for (const [key, ttl] of Object.entries(await keysWith(ctx.prefix, ":gone"))) expect(ttl, key).toBeGreaterThan(0);
    const after = await command<string[]>(lib.target, "ZRANGE", `${ctx.prefix}:presence:_due`, 0, -1);
    expect(after.filter((e) => e.includes("gone"))).toEqual([]);
  });
});

describe("leaderboards.snapshot: the board deleted between the registry's page and the step", () => {
  it("the step finds it gone: no snapshot, build or settings of the board come back; the day's pass completes", async () => {
    const ctx = lib.ctx(T0, "snap-del");
    for (let i = 0; i < 5; i++) await leaderboards.join(ctx, "gone", `p${i}`, { name: `p${i}`, score: i });
    await leaderboards.join(ctx, "kept", "q", { name: "q", score: 1 });
    await budgeted(JOBS["leaderboards.snapshot"]!, lib.ctx(T0, "snap-warm"));
    const at = { ...ctx, now: T0 + MINUTE };
    const redis = interleaved(ctx.redis, 2, () => leaderboards.deleteBoard(at, "gone"));
    const { result } = await budgeted(JOBS["leaderboards.snapshot"]!, { ...at, redis });
    expect(redis.ran()).toBe(true);
    expect(result).toMatchObject({ snapshots: 1, more: false });
    expect(await keysWith(ctx.prefix, ":lb:gone")).toEqual({});
    expect(await command(lib.target, "ZRANGE", `${ctx.prefix}:lb:kept:snap`, 0, -1)).toEqual(["q"]);
    const later = await budgeted(JOBS["leaderboards.snapshot"]!, { ...ctx, now: T0 + HOUR });
    expect(later.result).toMatchObject({ scripts: 1, more: false, alreadyDone: true });
  });
});

describe("leaderboards.snapshot: `more` when its script cap ends exactly with the registry", () => {
  // FIXED (was BUG (low); review 26 phase 2: the list script reads one board past its page, so a page
  // that ends the registry is `last` and its final step marks the day done). Was: `more: true` with no work left. A registry of exactly a multiple of SNAPSHOT_PAGE
  // (200) boards, and a run whose LEADERBOARD_SNAPSHOT_SCRIPTS end right after the step of the last
  // board: the run says `more: true` though every board's snapshot is taken; the next run's list
  // finds the page empty and says `more: false` having done nothing (snapshots 0). Compaction looks
  // at its queue once more in that case (review 3); the snapshot does not, so the scheduler may give
  // it a second turn and a QStash caller re-calls for nothing. Suggested fix: the step of the page's
  // last group says whether the registry holds a board after it (one ZRANGE … LIMIT 0 1 from the
  // cursor, in the same script), and when none, marks the day done as `final` does.
  it("200 boards, 5 scripts (the list and 4 steps of 50): every snapshot taken and more: false", async () => {
    const ctx = lib.ctx(T0, "snap-exact");
    for (let b = 0; b < 200; b++) await leaderboards.join(ctx, `b${b}`, "p", { name: "p", score: b });
    const config = readConfig({ LEADERBOARD_SNAPSHOT_SCRIPTS: "5" });
    const { result } = await budgeted(JOBS["leaderboards.snapshot"]!, { ...ctx, now: T0 + MINUTE }, 10_000, config);
    expect(result).toMatchObject({ scripts: 5, boards: 200, snapshots: 200 });
    expect(result.more).toBe(false);
  });

  it("the run after it has nothing to do (the pass was complete)", async () => {
    const ctx = lib.ctx(T0, "snap-exact2");
    for (let b = 0; b < 200; b++) await leaderboards.join(ctx, `b${b}`, "p", { name: "p", score: b });
    const config = readConfig({ LEADERBOARD_SNAPSHOT_SCRIPTS: "5" });
    const first = await budgeted(JOBS["leaderboards.snapshot"]!, { ...ctx, now: T0 + MINUTE }, 10_000, config);
    expect(first.result).toMatchObject({ snapshots: 200 });
    const next = await budgeted(JOBS["leaderboards.snapshot"]!, { ...ctx, now: T0 + 2 * MINUTE }, 10_000, config);
    expect(next.result).toMatchObject({ scripts: 1, snapshots: 0, members: 0, more: false });
  });
});

describe("catching up 24 missed hours of busy streams on the free plan's 50 subrequests", () => {
  it("the hourly trigger's first run trims every missed hour of 4 streams (3 scripts of moves) and says more: false", async () => {
    const own = lib.ctx(T0, "catchup");
    const H = Math.floor(T0 / HOUR);
    const streams = ["s0", "s1", "s2", "s3"];
    // 550 members an hour, keep 250: each hour is trimmed by copy (250 moves), 6,000 a stream, 24,000
    // in all: more than one script's 10,000 (COMPACT_SCRIPT_BUDGET)
    for (const s of streams)
      for (let h = H - 24; h < H; h++)
        await record(
          { ...own, now: T0 },
          s,
          Array.from({ length: 550 }, (_, i) => ({ member: `m${i}`, count: 1 + (i % 7), at: h * HOUR + 1000 })),
          TRENDING,
        );
    const env = lib.appEnv(
      { ingest: "r26-ingest-key-00001", read: "r26-read-key-0000001", admin: "r26-admin-key-000001" },
      { KEY_PREFIX: own.prefix, SUBREQUEST_LIMIT: "50", TRENDING_KEEP: "250" },
    ) as unknown as Env;
    const at = (H + 1) * HOUR + 5 * MINUTE;
    const run = await runScheduledCounted("5 * * * *", at, env);
    expect(run.subrequests).toBeLessThanOrEqual(50);
    const compact = run.results.compact as Record<string, number | boolean>;
    expect(compact).toMatchObject({ streams: 4, more: false, skipped: 0 });
    // each of the 24 missed hours is trimmed to the kept 250 (and its sentinel)
    expect(compact.hoursTrimmed).toBe(4 * 24);
    for (const s of streams)
      for (let h = H - 24; h < H; h++) {
        const card = Number(await command(lib.target, "ZCARD", streamKeys(own.prefix, s).bucket(h)));
        expect(card, `${s} ${h}`).toBeLessThanOrEqual(251);
      }
    const again = await runScheduledCounted("5 * * * *", at + HOUR, env);
    expect((again.results.compact as Record<string, unknown>).more).toBe(false);
  }, 120_000);
});

describe("the library's jobs in a user's Worker on Workers Free (50 subrequests an invocation)", () => {
  /** `redis` as a user's client (evalsha and eval only), counting its requests. */
  function countedClient() {
    const counted = { requests: 0 };
    const client = {
      evalsha: async (sha: string, keys: string[], args: string[]) => {
        counted.requests++;
        return lib.redis.evalsha(sha, keys, args);
      },
      eval: async (script: string, keys: string[], args: string[]) => {
        counted.requests++;
        return lib.redis.eval(script, keys, args);
      },
    };
    return { client, counted };
  }

  // FIXED (was BUG (low); review 26 phase 2: the Edgestats option `subrequestLimit` runs each job
  // call within it, as POST /internal/jobs runs within SUBREQUEST_LIMIT). Was: the library's jobs know no subrequest limit. `stats.jobs.compact()` sends up to 201
  // requests (TRENDING_COMPACT_BATCHES 100 scripts of 2, and a look), `trim()` up to 42, the sweep
  // up to 40: in a user's Worker on Workers Free (50 subrequests an invocation) a busy hour's
  // compaction fails at its 51st request ("Too many subrequests"), every hour while the backlog
  // lasts, and examples/worker.ts's `scheduled` (compact, then sweepCounters, awaited in turn)
  // never reaches the sweep. The service counts every job's subrequests (SUBREQUEST_LIMIT,
  // src/job-budget.ts) and stops with `more: true` before the limit; the library offers nothing of
  // it and docs/library.md does not say so. Suggested fix: an Edgestats option `subrequestLimit`
  // (as SUBREQUEST_LIMIT: 30..10,000,000) with which each `stats.jobs.*()` call runs under its own
  // SubrequestBudget, as POST /internal/jobs does, and says `more: true` at the limit.
  it("compact() with subrequestLimit 50 and 600 streams due: at most 50 requests a call, more: true, calls finish it", async () => {
    const own = lib.ctx(T0, "lib-limit");
    const streams = Array.from({ length: 600 }, (_, i) => `s${i}`);
    for (const s of streams) await record(own, s, [{ member: "x" }], TRENDING);
    const { client, counted } = countedClient();
    const stats = new Edgestats({
      redis: client,
      prefix: own.prefix,
      clock: () => T0 + HOUR,
      subrequestLimit: 50,
    });
    let compacted = 0;
    const calls: number[] = [];
    for (let i = 0; i < 5; i++) {
      const before = counted.requests;
      const result = await stats.jobs.compact();
      calls.push(counted.requests - before);
      compacted += Number(result.streams);
      if (result.more === false) break;
    }
    expect(calls.length).toBeGreaterThan(1);
    for (const n of calls) expect(n).toBeLessThanOrEqual(50);
    expect(compacted).toBe(600);
  });

  it("with the package's own client (createRedis, pipelines): each call's batches stay within the limit", async () => {
    const own = lib.ctx(T0, "lib-limit-own");
    for (let i = 0; i < 300; i++) await record(own, `s${i}`, [{ member: "x" }], TRENDING);
    const stats = new Edgestats({ redis: lib.redis, prefix: own.prefix, clock: () => T0 + HOUR, subrequestLimit: 30 });
    let compacted = 0;
    const runs: { batches: number; more: boolean }[] = [];
    for (let i = 0; i < 6; i++) {
      const result = await stats.jobs.compact();
      runs.push({ batches: Number(result.batches), more: result.more === true });
      compacted += Number(result.streams);
      if (result.more === false) break;
    }
    // `batches` counts the run's round trips (the queue reads and the scripts)
    for (const r of runs) expect(r.batches).toBeLessThanOrEqual(30);
    expect(runs[0]!.more).toBe(true);
    expect(runs.at(-1)!.more).toBe(false);
    expect(compacted).toBe(300);
  });

  it("without a limit, one compact() call compacts the 600 streams in more than 50 requests (the service's default shape)", async () => {
    const own = lib.ctx(T0, "lib-nolimit");
    for (let i = 0; i < 600; i++) await record(own, `s${i}`, [{ member: "x" }], TRENDING);
    const { client, counted } = countedClient();
    const stats = new Edgestats({ redis: client, prefix: own.prefix, clock: () => T0 + HOUR });
    const result = await stats.jobs.compact();
    expect(result).toMatchObject({ streams: 600, more: false });
    expect(counted.requests).toBeGreaterThan(50);
  });
});

describe("webhooks: the webhook deleted between the job's read of the webhooks and its detection", () => {
  const receiver = receiverForTests();
  const config = readConfig({ WEBHOOKS_ALLOW_LOCAL_HTTP: "true" });
  it("presence.peak and trending.entered: nothing of the deleted webhook comes back, nothing is queued for it", async () => {
    const cases: [string, Pick<webhooks.WebhookInput, "events" | "filter">][] = [
      ["webhooks", { events: ["presence.peak"], filter: { room: "r" } }],
      ["webhooks.trending", { events: ["trending.entered", "trending.left"], filter: { stream: "s" } }],
    ];
    for (const [job, hook] of cases) {
      // the same webhook and data in two namespaces: in `control` nothing is deleted and the run
      // queues the event (so the checks of the other are not empty by construction)
      const control = lib.ctx(T0, `wh-ctl-${job}`);
      const ctx = lib.ctx(T0, `wh-del-${job}`);
      for (const c of [control, ctx]) {
        await webhooks.put(
          c,
          "w",
          { url: `${receiver.url}/w`, secret: "s3cret-s3cret-s3cret", ...hook },
          { allowLocalHttp: true },
        );
        await heartbeat(c, "r", ["u1", "u2"]);
        await record(c, "s", [{ member: "a", count: 3 }], TRENDING);
      }
      const now = job === "webhooks" ? T0 + MINUTE : T0 + HOUR + 5 * MINUTE;
      const queued = await budgeted(JOBS[job]!, { ...control, now }, 10_000, config);
      expect(queued.result.queued, job).toBe(1);
      const at = { ...ctx, now };
      const redis = interleaved(ctx.redis, 2, () => webhooks.remove(at, "w"));
      await budgeted(JOBS[job]!, { ...at, redis }, 10_000, config);
      expect(redis.ran(), job).toBe(true);
      expect(await keysWith(ctx.prefix, ":webhooks:w"), job).toEqual({});
      const pending = await command<string[]>(lib.target, "ZRANGE", `${ctx.prefix}:webhooks:_pending`, 0, -1);
      expect(pending, job).toEqual([]);
    }
  });
});
