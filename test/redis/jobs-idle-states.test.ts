/**
 * The cron triggers with nothing to do, in each state bench/results/README.md reports
 * (bench/cpu/host.ts, `idleRuns`), in the same order and at the same times of day. The bench once
 * labelled its very first runs (15 and 5 commands) "with nothing to do", while
 * test/worker/audit-targets.test.ts pins 8 and 4: both were right about different states. Here on
 * a redis-server and local Upstash server of this file's own, so no other file has loaded the job
 * scripts (a shared Redis has them from other tests, and a SCRIPT FLUSH there would blur the
 * counts of files running meanwhile). The production scheduled path (functions/scheduled.ts) in
 * Node; commands and round trips counted by the local Upstash server, as the cost tests do.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRedis, type RedisServer } from "../../dev/redis.ts";
import { startUpstashServer, type UpstashServer } from "../../dev/upstash-server.ts";
import { runScheduledCounted } from "../../functions/scheduled.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const TOKEN = "idle-states-token";
const TAG = "idle";
// The bench's clock: the next UTC midnight of the real one (expiries scripts set stay ahead).
const DAY0 = Math.ceil(Date.now() / DAY) * DAY;

let redis: RedisServer;
let upstash: UpstashServer;
let env: Env;

beforeAll(async () => {
  redis = await startRedis();
  upstash = await startUpstashServer({ redisUrl: redis.url, token: TOKEN });
  env = {
    UPSTASH_REDIS_REST_URL: upstash.url,
    UPSTASH_REDIS_REST_TOKEN: `${TOKEN}.${TAG}`,
    INGEST_KEYS: "idle-ingest-key-0001",
    READ_KEYS: "idle-read-key-000001",
    ADMIN_KEYS: "idle-admin-key-00001",
    KEY_PREFIX: "idle",
  } as unknown as Env;
});
afterAll(async () => {
  await upstash?.close();
  await redis?.stop();
});

/** One cron run at `at`: its round trips, commands by name, and what the jobs answered. */
async function cost(cron: string, at: number) {
  upstash.reset(TAG);
  const run = await runScheduledCounted(cron, at, env);
  const s = upstash.stats(TAG);
  // every job ran to the end, none failed or stopped for want of budget
  for (const result of Object.values(run.results)) {
    expect(result).not.toHaveProperty("error");
    expect((result as { more?: unknown }).more ?? false).toBe(false);
  }
  // the invocation's own count of its subrequests is the server's
  expect(run.subrequests).toBe(s.requests);
  return { requests: s.requests, commands: s.commands, byCommand: s.byCommand };
}

describe("the cron runs with nothing to do (no streams, rooms, counters, boards or webhooks)", () => {
  it("the very first runs, on a Redis with none of the job scripts, at :05 of a UTC day's first hour: hourly 15 commands / 8 round trips, then trim 5 / 3", async () => {
    const hourly = await cost("5 * * * *", DAY0 + 5 * MINUTE);
    // 4 jobs (compact, webhooks.trending, sweep-counters, leaderboards.snapshot): each EVALSHA
    // answered NOSCRIPT, then EVAL (+4 commands, +4 round trips); one read each, and the day's
    // snapshot pass opening and closing on an empty registry (ZRANGE, HSET, HDEL: +3)
    expect(hourly).toEqual({
      requests: 8,
      commands: 15,
      byCommand: {
        evalsha: 4,
        eval: 4,
        zrangebyscore: 1,
        hgetall: 1,
        hrandfield: 1,
        hmget: 1,
        zrange: 1,
        hset: 1,
        hdel: 1,
      },
    });
    const trim = await cost("* * * * *", DAY0 + 5 * MINUTE);
    // the trim script's first load (EVALSHA, EVAL); webhooks' script is the one webhooks.trending loaded
    expect(trim).toEqual({
      requests: 3,
      commands: 5,
      byCommand: { evalsha: 2, eval: 1, zrangebyscore: 1, hgetall: 1 },
    });
  });

  it("from then on, every hour: hourly 8 commands / 4 round trips, trim 4 / 2 (248 commands an hour, as test/worker/audit-targets.test.ts pins)", async () => {
    const hourly = await cost("5 * * * *", DAY0 + HOUR + 5 * MINUTE);
    expect(hourly).toEqual({
      requests: 4,
      commands: 8,
      byCommand: { evalsha: 4, zrangebyscore: 1, hgetall: 1, hrandfield: 1, hmget: 1 },
    });
    const trim = await cost("* * * * *", DAY0 + HOUR + 6 * MINUTE);
    expect(trim).toEqual({ requests: 2, commands: 4, byCommand: { evalsha: 2, zrangebyscore: 1, hgetall: 1 } });
    expect(hourly.commands + 60 * trim.commands).toBe(248);
  });

  it("once a day, the day's first hourly run, scripts loaded: 11 commands / 4 round trips (the day's snapshot pass)", async () => {
    const hourly = await cost("5 * * * *", DAY0 + DAY + 5 * MINUTE);
    expect(hourly).toEqual({
      requests: 4,
      commands: 11,
      byCommand: { evalsha: 4, zrangebyscore: 1, hgetall: 1, hrandfield: 1, hmget: 1, zrange: 1, hset: 1, hdel: 1 },
    });
    // and the next hour of that day is an ordinary hour's again
    expect(await cost("5 * * * *", DAY0 + DAY + HOUR + 5 * MINUTE)).toMatchObject({ requests: 4, commands: 8 });
  });
});
