import type { Context } from "hono";
import type { Ctx } from "../../src/context.ts";
import { ConfigError } from "../../src/errors.ts";
import { createRedis, type RedisClient } from "../../src/redis/client.ts";
import type { AppEnv } from "../types.ts";

/** This deployment's Upstash database through the library's client (no retries; a request, a job or the consumer picks the timeout). */
export function redisOf(env: Env, timeoutMs: number): RedisClient {
  return createRedis({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN, timeoutMs });
}

/**
 * The library context of this request. Made on first use, not by a middleware: requests that
 * never reach Redis (health, docs, refused ones) make no client, and a missing Upstash secret
 * fails only the routes that need it.
 */
export function ctxOf(c: Context<AppEnv>): Ctx {
  let ctx = c.get("ctx");
  if (!ctx) {
    const config = c.get("config");
    if (!c.env.UPSTASH_REDIS_REST_URL || !c.env.UPSTASH_REDIS_REST_TOKEN) {
      throw new ConfigError(
        "UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN must be set (wrangler secret put, or .dev.vars locally).",
      );
    }
    ctx = { redis: redisOf(c.env, config.redisTimeoutMs), prefix: config.keyPrefix, now: c.get("now") };
    c.set("ctx", ctx);
  }
  return ctx;
}

// The feature routes import markReplay from here; re-exported until they import ./replay.ts.
export { markReplay } from "./replay.ts";
