import type { Redis } from "@upstash/redis";
import { createMiddleware } from "hono/factory";
import { RateLimitedError, StorageUnavailableError } from "../../src/errors.ts";
import { keyOf } from "../../src/keys.ts";
import type { AppEnv } from "../types.ts";
import { ctxOf } from "./context.ts";

/** Length of the limiter's fixed window; `RATE_LIMIT_PER_10S` is per this window. */
const WINDOW = "10 s";

// Identifiers over their limit, with the time their window ends. Kept per
// isolate so a client hammering past its limit is refused without a Redis
// call until the window rolls over.
const blocked = new Map<string, number>();

/** Rate-limit decision of one request, as headers give it back. */
export interface RateLimitVerdict {
  success: boolean;
  limit: number;
  remaining: number;
  /** Epoch ms when the current window ends. */
  reset: number;
}

/**
 * Per-API-key request limit with `@upstash/ratelimit` (fixed window of 10 s),
 * after auth on `/v1/*`. Off when `RATE_LIMIT_PER_10S` is 0 (the default):
 * then it costs nothing at all.
 *
 * When on, it costs one extra Redis HTTP round trip per request (one EVALSHA
 * of the limiter's script: INCRBY, plus PEXPIRE on the first request of a
 * window), so a limited API call is two round trips, not one. Once a key is
 * over its limit, further requests in the same window are refused from the
 * isolate's memory with no Redis call. Keys: `<prefix>:ratelimit:<keyId>:<window>`,
 * expiring with their window.
 *
 * Failure policy: the limiter's own timeout (which would let requests through
 * unlimited) is off; the Redis client's timeout applies, and an unreachable
 * Redis is a 503 `storage_unavailable` right here, before anything is written.
 */
export const rateLimit = createMiddleware<AppEnv>(async (c, next) => {
  const perWindow = c.get("config").rateLimitPer10s;
  if (perWindow === 0) return next();
  const keyId = c.get("keyId");
  const verdict = await limitOf(c.get("config").keyPrefix, ctxOf(c).redis as Redis, perWindow, keyId);
  c.header("RateLimit-Limit", String(verdict.limit));
  c.header("RateLimit-Remaining", String(verdict.remaining));
  c.header("RateLimit-Reset", String(secondsUntil(verdict.reset)));
  if (!verdict.success) throw new RateLimitedError(secondsUntil(verdict.reset));
  await next();
});

function secondsUntil(resetMs: number): number {
  // Never 0: a client told "retry in 0 s" retries at once and is refused again.
  return Math.max(1, Math.ceil((resetMs - Date.now()) / 1000));
}

async function limitOf(prefix: string, redis: Redis, perWindow: number, keyId: string): Promise<RateLimitVerdict> {
  // Loaded on the first limited request: with the limit off (the default) the
  // module is never evaluated, which keeps it out of every cold start.
  const { Ratelimit } = await import("@upstash/ratelimit");
  const limiter = new Ratelimit({
    redis,
    limiter: Ratelimit.fixedWindow(perWindow, WINDOW),
    prefix: keyOf(prefix, "ratelimit"),
    ephemeralCache: blocked,
    timeout: 0,
    analytics: false,
    enableTelemetry: false,
  });
  try {
    const { success, limit, remaining, reset } = await limiter.limit(keyId);
    return { success, limit, remaining, reset };
  } catch (error) {
    throw new StorageUnavailableError(undefined, { cause: error });
  }
}
