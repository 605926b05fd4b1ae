/**
 * `npm run check-upstash`: before deploying, checks that the Redis behind UPSTASH_REDIS_REST_URL
 * (and _TOKEN) runs what edgestats' scripts rely on beyond Redis 6.0, each in a script as the
 * service runs it (`#!lua flags=allow-key-locking`, keys declared). The test stack is
 * redis-server 7.0.15 behind a local Upstash-compatible server, so these are checked here on every
 * `npm test` (test/redis/check-upstash.test.ts) but never against Upstash itself, which is not
 * Redis and was not reachable from where this was built.
 *
 *   UPSTASH_REDIS_REST_URL=https://… UPSTASH_REDIS_REST_TOKEN=… npm run check-upstash
 *
 * It writes only under `edgestats-check:<random>:` and deletes what it wrote; each check is one
 * EVAL (the last a pipeline of an EVAL and two commands), so the whole run costs about 45 commands.
 */
import type { Redis } from "@upstash/redis";
import { createRedis } from "../src/redis/client.ts";

/** What a check needs: EVAL (the library's client has it), and a pipeline for the last check. */
export interface Evaluator {
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
  pipeline?: Redis["pipeline"];
}

export interface Check {
  /** The feature, and where edgestats uses it. */
  name: string;
  /** Script body (the shebang is added); returns "ok" or a string saying what went wrong. */
  lua: string;
  /** Key names, under the run's prefix. */
  keys: string[];
  /** Set when the script must fail: a substring of the error the caller must see. */
  error?: string;
}

const SHEBANG = "#!lua flags=allow-key-locking";

export const CHECKS: Check[] = [
  {
    name: "SET … NX EX, then GET (Idempotency-Key records written up front)",
    keys: ["idem"],
    lua: `
if not redis.call('SET', KEYS[1], 'a', 'NX', 'EX', 60) then return 'first SET NX did not set' end
if redis.call('SET', KEYS[1], 'b', 'NX', 'EX', 60) then return 'second SET NX set' end
if redis.call('GET', KEYS[1]) ~= 'a' then return 'GET after SET NX' end
return 'ok'`,
  },
  {
    name: "ZADD GT / LT (histogram extremes, leaderboard best scores)",
    keys: ["z"],
    lua: `
redis.call('ZADD', KEYS[1], 'GT', 5, 'max', -5, 'negmin')
redis.call('ZADD', KEYS[1], 'GT', 3, 'max', -9, 'negmin')
redis.call('ZADD', KEYS[1], 'LT', 1, 'low')
redis.call('ZADD', KEYS[1], 'LT', 2, 'low')
local s = redis.call('ZMSCORE', KEYS[1], 'max', 'negmin', 'low', 'none')
if tonumber(s[1]) ~= 5 or tonumber(s[2]) ~= -5 or tonumber(s[3]) ~= 1 or s[4] then return 'ZADD GT/LT or ZMSCORE' end
return 'ok'`,
  },
  {
    name: "ZRANGE … BYSCORE REV LIMIT, ZRANGESTORE … REV (reads, trending compaction)",
    keys: ["src", "dst"],
    lua: `
redis.call('ZADD', KEYS[1], 1, 'a', 2, 'b', 3, 'c', 4, 'd')
local r = redis.call('ZRANGE', KEYS[1], '+inf', 2, 'BYSCORE', 'REV', 'LIMIT', 0, 2, 'WITHSCORES')
if #r ~= 4 or r[1] ~= 'd' or r[3] ~= 'c' then return 'ZRANGE BYSCORE REV LIMIT' end
if redis.call('ZRANGESTORE', KEYS[2], KEYS[1], 0, 1, 'REV') ~= 2 then return 'ZRANGESTORE REV' end
if redis.call('ZSCORE', KEYS[2], 'c') ~= '3' then return 'ZRANGESTORE kept the wrong members' end
return 'ok'`,
  },
  {
    name: "ZUNION … WITHSCORES, ZUNIONSTORE WEIGHTS AGGREGATE, ZINTERCARD … LIMIT (unions, histogram reads)",
    keys: ["u1", "u2", "u3"],
    lua: `
redis.call('ZADD', KEYS[1], 1, 'a', 2, 'b')
redis.call('ZADD', KEYS[2], 3, 'b', 4, 'c')
local u = redis.call('ZUNION', 2, KEYS[1], KEYS[2], 'WITHSCORES')
if #u ~= 6 then return 'ZUNION' end
if redis.call('ZUNIONSTORE', KEYS[3], 2, KEYS[1], KEYS[2], 'WEIGHTS', 1, 2, 'AGGREGATE', 'MAX') ~= 3 then return 'ZUNIONSTORE' end
if redis.call('ZSCORE', KEYS[3], 'b') ~= '6' then return 'ZUNIONSTORE WEIGHTS AGGREGATE' end
if redis.call('ZINTERCARD', 2, KEYS[1], KEYS[2], 'LIMIT', 1) ~= 1 then return 'ZINTERCARD LIMIT' end
return 'ok'`,
  },
  {
    name: "EXPIRE / PEXPIRE with NX, GT (first-touch expiries, counter ttl only ever extended)",
    keys: ["e"],
    lua: `
redis.call('SET', KEYS[1], 'x')
if redis.call('EXPIRE', KEYS[1], 100, 'NX') ~= 1 then return 'EXPIRE NX on a key without one' end
if redis.call('EXPIRE', KEYS[1], 200, 'NX') ~= 0 then return 'EXPIRE NX on a key with one' end
if redis.call('PEXPIRE', KEYS[1], 50000, 'GT') ~= 0 then return 'PEXPIRE GT shortened' end
if redis.call('PEXPIRE', KEYS[1], 300000, 'GT') ~= 1 then return 'PEXPIRE GT did not extend' end
return 'ok'`,
  },
  {
    name: "HRANDFIELD, SMISMEMBER, BITFIELD, PFADD / PFCOUNT (jobs, presence)",
    keys: ["h", "s", "b", "p"],
    lua: `
redis.call('HSET', KEYS[1], 'f', 'v')
if redis.call('HRANDFIELD', KEYS[1], 1)[1] ~= 'f' then return 'HRANDFIELD' end
redis.call('SADD', KEYS[2], 'a')
local m = redis.call('SMISMEMBER', KEYS[2], 'a', 'b')
if m[1] ~= 1 or m[2] ~= 0 then return 'SMISMEMBER' end
redis.call('BITFIELD', KEYS[3], 'SET', 'u1', 7, 1)
if redis.call('BITCOUNT', KEYS[3]) ~= 1 then return 'BITFIELD' end
redis.call('PFADD', KEYS[4], 'a', 'b')
if redis.call('PFCOUNT', KEYS[4]) ~= 2 then return 'PFADD/PFCOUNT' end
return 'ok'`,
  },
  {
    name: "xpcall keeps a command's error, error(table) reaches the caller (Idempotency-Key prelude)",
    keys: ["w"],
    error: "WRONGTYPE",
    lua: `
redis.call('SET', KEYS[1], 'string')
local ok, e = xpcall(function() return redis.call('ZADD', KEYS[1], 1, 'm') end, function(err) return err end)
if ok then return 'ZADD on a string succeeded' end
if type(e) ~= 'table' or not e.err then return 'xpcall lost the error table' end
error(e, 0)`,
  },
];

/** Runs every check under `prefix`, deleting its keys after each; the failures' messages by name. */
export async function checkUpstash(redis: Evaluator, prefix: string): Promise<{ name: string; problem?: string }[]> {
  const results: { name: string; problem?: string }[] = [];
  for (const [i, check] of CHECKS.entries()) {
    const keys = check.keys.map((k) => `${prefix}:${i}:${k}`);
    let problem: string | undefined;
    try {
      const reply = await redis.eval(`${SHEBANG}\n${check.lua}`, keys, []);
      if (check.error) problem = `expected the error ${check.error}, got ${String(reply)}`;
      else if (reply !== "ok") problem = String(reply);
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      if (!check.error || !message.includes(check.error)) problem = message;
    }
    await redis.eval(`${SHEBANG}\nredis.call('DEL', unpack(KEYS)) return 'ok'`, keys, []).catch(() => undefined);
    results.push(problem === undefined ? { name: check.name } : { name: check.name, problem });
  }
  if (redis.pipeline) results.push(await checkPipeline(redis.pipeline.bind(redis), `${prefix}:pipeline`));
  return results;
}

/**
 * The one check that is not a script: a histogram read of more than 4 days sends its script and a
 * `ZPOPMIN <scratch> <count>` in one pipeline (one HTTP request), and reads the popped members as
 * plain JSON text (`createRedis`: `responseEncoding: false`).
 */
export const PIPELINE_CHECK = "a script, then ZPOPMIN … count in the same pipeline, replies as text (histogram reads)";

async function checkPipeline(pipeline: Redis["pipeline"], key: string): Promise<{ name: string; problem?: string }> {
  let problem: string | undefined;
  try {
    const p = pipeline();
    p.eval(`${SHEBANG}\nredis.call('ZADD', KEYS[1], 2, 'b', 1, 'a', 3, 'é') return 'ok'`, [key], []);
    p.zpopmin(key, 20401);
    p.exists(key);
    const [script, popped, left] = (await p.exec()) as [unknown, unknown, unknown];
    if (script !== "ok") problem = `the script answered ${JSON.stringify(script)}`;
    else if (JSON.stringify(popped) !== JSON.stringify(["a", "1", "b", "2", "é", "3"]))
      problem = `ZPOPMIN answered ${JSON.stringify(popped)}`;
    else if (Number(left) !== 0) problem = "ZPOPMIN left the key";
  } catch (e) {
    problem = e instanceof Error ? e.message : String(e);
  }
  return problem === undefined ? { name: PIPELINE_CHECK } : { name: PIPELINE_CHECK, problem };
}

if (import.meta.main) {
  const url = process.env.UPSTASH_REDIS_REST_URL;
  const token = process.env.UPSTASH_REDIS_REST_TOKEN;
  if (!url || !token) {
    console.error("Set UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN to the database to check.");
    process.exit(2);
  }
  const redis = createRedis({ url, token, timeoutMs: 10_000 });
  const results = await checkUpstash(redis, `edgestats-check:${Math.random().toString(36).slice(2, 10)}`);
  for (const r of results)
    console.log(`${r.problem === undefined ? "ok  " : "FAIL"}  ${r.name}${r.problem ? `: ${r.problem}` : ""}`);
  const failed = results.filter((r) => r.problem !== undefined).length;
  console.log(
    failed
      ? `${failed} of ${results.length} checks failed: do not deploy on this database.`
      : `all ${results.length} checks passed.`,
  );
  process.exitCode = failed ? 1 : 0;
}
