import type { Redis } from "@upstash/redis";
import { HttpRedis } from "./http.ts";

/**
 * The commands the library uses; everything else goes through Lua scripts. `pipeline` is
 * optional: a read that hands its answer to a command after its script (histograms, at the
 * 20,000-bucket cap) sends both in one HTTP request when the client has it, and runs the one
 * script that does it all otherwise (a library user's client that has only `evalsha`/`eval`).
 */
export type RedisClient = Pick<Redis, "evalsha" | "eval" | "ping"> & Partial<Pick<Redis, "pipeline">>;

/** A pipeline of the client: commands sent in one HTTP request, in order, not atomically. */
export type RedisPipeline = ReturnType<Redis["pipeline"]>;

export interface RedisOptions {
  /** Upstash REST URL, e.g. `https://eu1-xxx.upstash.io` or the local server. */
  url: string;
  /** Upstash REST token. */
  token: string;
  /**
   * Abort a script's call (its EVALSHA, and the EVAL that follows a NOSCRIPT, together) after this
   * many milliseconds and answer 503.
   * @default 3000
   */
  timeoutMs?: number;
}

/**
 * The library's own client (src/redis/http.ts), typed as the part of `@upstash/redis`'s `Redis` it
 * implements: EVALSHA, EVAL, PING, and pipelines of EVAL, EVALSHA, SCRIPT LOAD, ZPOPMIN, INCRBY,
 * EXISTS and PING (what the library and dev/check-upstash.ts send; no other command).
 */
export type LibraryRedis = RedisClient & { pipeline: () => RedisPipeline };

/**
 * Creates the library's Upstash client, which behaves as `@upstash/redis` 1.39's `Redis` with
 * these settings, chosen on purpose (src/redis/http.ts sends the same requests, without that
 * client's ~360 command definitions in the Worker's bundle):
 * - `retry: { retries: 0 }`: the client would otherwise re-send a request whose
 *   response was lost (up to 5 times), and a re-sent increment counts twice. A
 *   failed call becomes a 503 instead; clients retry with an Idempotency-Key,
 *   which is safe. (Not `retry: false`: in @upstash/redis 1.39 that still sends a
 *   failed request twice: it sets one *re*-try, as test/redis/faults.test.ts shows.)
 * - `automaticDeserialization: false`: scripts return JSON text that we parse
 *   ourselves; the default would turn the member "123" into the number 123.
 * - `enableAutoPipelining: false`: each API call is one HTTP request (a script, or
 *   a script and the commands an explicit pipeline sends after it), so there is
 *   nothing to batch and counts stay explicit.
 * - a timeout through `signal` (a function, so each request gets a fresh one
 *   and an abort throws instead of resolving to "Aborted"); a script's call shares one
 *   (`HttpRedis.oneDeadline`, src/redis/run.ts), so EVALSHA, NOSCRIPT and EVAL take one timeout.
 * - `responseEncoding: false`: the default asks Upstash to base64 every string of
 *   a reply (against bytes that are not UTF-8) and decodes each with a fresh
 *   TextDecoder, ~2 µs a string: 75-175 ms of Worker CPU for the 40,000 strings
 *   of a `ZPOPMIN` at the 20,000-bucket read cap, ~10 ms for a script's 300 KB
 *   answer. What we read is JSON text our scripts encode from validated UTF-8
 *   input, or bucket indexes and scores: plain JSON carries it as it is.
 * - no telemetry headers.
 */
export function createRedis(options: RedisOptions): LibraryRedis {
  const timeoutMs = options.timeoutMs ?? 3000;
  const redis = new HttpRedis({
    url: options.url,
    token: options.token,
    signal: () => AbortSignal.timeout(timeoutMs),
  }) as unknown as LibraryRedis;
  made.add(redis);
  return redis;
}

/** The clients `createRedis` made. */
const made = new WeakSet<object>();

/**
 * Whether `createRedis` made this client, so its settings are ours (replies as text, no
 * retries, a pipeline whose replies come back as sent): the library uses it as it is, with the
 * histogram reads' pipeline, where a user's own client is adapted to `evalsha`/`eval` alone.
 */
export function madeByCreateRedis(redis: unknown): redis is LibraryRedis {
  return typeof redis === "object" && redis !== null && made.has(redis);
}
