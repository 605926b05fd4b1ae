import { createMiddleware } from "hono/factory";
import { readConfig } from "../../src/config.ts";
import type { AppEnv } from "../types.ts";
import { checkKeyLengths } from "./auth.ts";

/**
 * Reads the config and fixes the request's time once, before any handler runs: every part of a
 * request (its keys, its buckets, its idempotency record) sees the same `now`, and a bad
 * deployment setting is a ConfigError before anything else happens.
 */
export function requestContext(now: () => number) {
  return createMiddleware<AppEnv>(async (c, next) => {
    c.set("now", now());
    c.set("config", readConfig(c.env as unknown as Record<string, unknown>));
    checkKeyLengths(c.env);
    await next();
  });
}
