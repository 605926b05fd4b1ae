import type { Context } from "hono";
import type { Ctx } from "../../src/context.ts";
import { ConfigError } from "../../src/errors.ts";
import { createRedis } from "../../src/redis/client.ts";
import type { AppEnv } from "../types.ts";

/**
 * The library context of this request. Made on first use, not by a middleware: requests that
 * never reach Redis (health, docs, refused ones) make no client, and a missing Upstash secret
 * fails only the routes that need it.
 */
export function ctxOf(c: Context<AppEnv>): Ctx {
  let ctx = c.get("ctx");
  if (!ctx) {
    const config = c.get("config");
    const url = c.env.UPSTASH_REDIS_REST_URL;
    const token = c.env.UPSTASH_REDIS_REST_TOKEN;
    if (!url || !token) {
      throw new ConfigError("UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN must be set (wrangler secret put, or .dev.vars locally).");
    }
    ctx = { redis: createRedis({ url, token, timeoutMs: config.redisTimeoutMs }), prefix: config.keyPrefix, now: c.get("now") };
    c.set("ctx", ctx);
  }
  return ctx;
}

// The feature routes import markReplay from here; re-exported until they import ./replay.ts.
export { markReplay } from "./replay.ts";
