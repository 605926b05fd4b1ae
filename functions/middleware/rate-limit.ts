import type { Context } from "hono";
import { createMiddleware } from "./define.ts";
import { RateLimitedError } from "../../src/errors.ts";
import { limit } from "../../src/ratelimit.ts";
import type { AppEnv } from "../types.ts";
import { ctxOf } from "./context.ts";

/** Length of the limiter's fixed window; `RATE_LIMIT_PER_10S` is per this window. */
const WINDOW_MS = 10_000;

// Identifiers over their limit, with the time their window ends. Kept per
// isolate so a client hammering past its limit is refused without a Redis
// call until the window rolls over.
const blocked = new Map<string, number>();

/**
 * Per-API-key request limit over fixed windows of 10 s (src/ratelimit.ts, the algorithm of
 * `@upstash/ratelimit`'s `fixedWindow`),
 * after auth on `/v1/*` (and `limitRequest` on /healthz's Redis check and an admin key's
 * `/internal/*` call). Off when `RATE_LIMIT_PER_10S` is 0 (the default):
 * then it costs nothing at all.
 *
 * When on, it costs one extra Redis HTTP round trip per request (one EVALSHA
 * of the limiter's script: INCR, plus PEXPIRE on the first request of a
 * window), so a limited API call is two round trips, not one. Once a key is
 * over its limit, further requests in the same window are refused from the
 * isolate's memory with no Redis call. Keys: `<prefix>:ratelimit:<keyId>:<window>`,
 * expiring with their window.
 *
 * Failure policy: no timeout of its own (which would let requests through
 * unlimited); the Redis client's timeout applies, and an unreachable Redis is a
 * 503 `storage_unavailable` right here, before anything is written.
 */
export const rateLimit = createMiddleware<AppEnv>(async (c, next) => {
  await limitRequest(c);
  await next();
});

/**
 * Counts the request against its key's window (`c`'s `keyId`), or nothing when the limiter is
 * off. Also run outside /v1/* wherever a key makes Redis work: /healthz's Redis check and an
 * admin key's /internal/* call (which got around the limit: review 17). QStash's signed calls
 * carry no key and are not limited.
 */
export async function limitRequest(c: Context<AppEnv>): Promise<void> {
  const perWindow = c.get("config").rateLimitPer10s;
  if (perWindow !== 0) await admit(c, perWindow);
}

/**
 * Counts the request against its key's window, sets the RateLimit headers, and refuses it (429)
 * over the limit. A function of its own: with the limiter off (the default), a cold isolate's
 * first request does not compile it (issue 14, point 6).
 */
async function admit(c: Context<AppEnv>, perWindow: number): Promise<void> {
  const keyId = await c.get("keyId")();
  const verdict = await limit(keyId, {
    redis: ctxOf(c).redis,
    prefix: c.get("config").keyPrefix,
    limit: perWindow,
    windowMs: WINDOW_MS,
    blocked,
  });
  c.header("RateLimit-Limit", String(verdict.limit));
  c.header("RateLimit-Remaining", String(verdict.remaining));
  c.header("RateLimit-Reset", String(secondsUntil(verdict.reset)));
  if (!verdict.success) throw new RateLimitedError(secondsUntil(verdict.reset));
}

function secondsUntil(resetMs: number): number {
  // Never 0: a client told "retry in 0 s" retries at once and is refused again.
  return Math.max(1, Math.ceil((resetMs - Date.now()) / 1000));
}
