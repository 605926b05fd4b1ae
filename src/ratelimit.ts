/**
 * A per-key request limit over fixed windows: the Worker's `RATE_LIMIT_PER_10S`
 * (functions/middleware/rate-limit.ts). The algorithm of @upstash/ratelimit's
 * `fixedWindow` (one counter per identifier and window, `INCR`, and `PEXPIRE` on the
 * window's first request), as our own script: the same commands, without a
 * 36 KB dependency (and its CommonJS analytics module) in the Worker.
 */
import { StorageUnavailableError } from "./errors.ts";
import { keyOf } from "./keys.ts";
import type { RedisClient } from "./redis/client.ts";
import { defineScript } from "./redis/script.ts";

/** Counts one request in its window's counter; returns the window's count so far. */
export const hitScript = defineScript({
  name: "ratelimit.hit",
  write: true,
  keys: ["counter"],
  args: ["windowMs"],
  lua: `
local count = redis.call('INCR', counter)
-- the window's first request sets its expiry: the counter goes with its window
if count == 1 then redis.call('PEXPIRE', counter, windowMs) end
return count
`,
});

/** Rate-limit decision of one request, as headers give it back. */
export interface RateLimitVerdict {
  success: boolean;
  limit: number;
  remaining: number;
  /** Epoch ms when the current window ends. */
  reset: number;
}

export interface RateLimitOptions {
  redis: RedisClient;
  /** The deployment's key prefix; counters are `<prefix>:ratelimit:<identifier>:<window number>`. */
  prefix: string;
  /** Requests allowed per window. */
  limit: number;
  /** Window length in ms. */
  windowMs: number;
  /**
   * Identifiers over their limit, with the time their window ends, kept by the caller (per
   * isolate): one refused there is refused again without a Redis call until its window ends.
   */
  blocked: Map<string, number>;
  /** @default Date.now() */
  now?: number;
}

/** Counts a request of `identifier`; one Redis call (EVALSHA) unless `blocked` already refuses it. */
export async function limit(identifier: string, options: RateLimitOptions): Promise<RateLimitVerdict> {
  const now = options.now ?? Date.now();
  const window = Math.floor(now / options.windowMs);
  const reset = (window + 1) * options.windowMs;
  const counter = keyOf(options.prefix, "ratelimit", identifier, String(window));
  // keyed without the window, so an entry is found (and dropped) once its window has passed
  const id = keyOf(options.prefix, identifier);
  const until = options.blocked.get(id);
  if (until !== undefined) {
    if (until > now) return { success: false, limit: options.limit, remaining: 0, reset: until };
    options.blocked.delete(id);
  }
  let count: number;
  try {
    count = Number((await hitScript.run<number>(options.redis, { counter }, { windowMs: options.windowMs })).value);
  } catch (error) {
    if (error instanceof StorageUnavailableError) throw error;
    throw new StorageUnavailableError(undefined, { cause: error });
  }
  const success = count <= options.limit;
  if (!success) options.blocked.set(id, reset);
  return { success, limit: options.limit, remaining: Math.max(0, options.limit - count), reset };
}
