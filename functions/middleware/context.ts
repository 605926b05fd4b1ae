import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { readConfig } from "../../src/config.ts";
import type { Ctx } from "../../src/context.ts";
import { ConfigError, ValidationError } from "../../src/errors.ts";
import { keyOf } from "../../src/keys.ts";
import { createRedis } from "../../src/redis/client.ts";
import type { Idempotency } from "../../src/redis/script.ts";
import type { AppEnv } from "../types.ts";
import { checkKeyLengths } from "./auth.ts";

/** Reads the config and fixes the request's time once, before any handler runs. */
export function requestContext(now: () => number) {
  return createMiddleware<AppEnv>(async (c, next) => {
    c.set("now", now());
    c.set("config", readConfig(c.env as unknown as Record<string, unknown>));
    checkKeyLengths(c.env);
    await next();
  });
}

/** The library context of this request; the Redis client is made on first use. */
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

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

async function hex(text: string, algorithm: "SHA-256"): Promise<string> {
  const digest = await crypto.subtle.digest(algorithm, new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Reads `Idempotency-Key` on writes. The record's Redis key is a SHA-256 of the
 * caller's key id (itself a digest of the API key, never the key), the method,
 * the path and the header, so two API keys sending the same Idempotency-Key
 * never see or block each other's records; its fingerprint is a SHA-256 of the
 * body, so the same key with a different body is a 409 rather than a silent
 * replay of something else.
 */
export const idempotencyKey = createMiddleware<AppEnv>(async (c, next) => {
  const header = c.req.header("idempotency-key");
  if (header === undefined || c.req.method === "GET" || c.req.method === "DELETE") {
    c.set("idempotency", undefined);
    return next();
  }
  if (!IDEMPOTENCY_KEY.test(header)) {
    throw new ValidationError("Idempotency-Key must be 1-255 visible ASCII characters.", [
      { path: "Idempotency-Key", message: "1-255 visible ASCII characters" },
    ]);
  }
  const scope = `${c.req.method} ${new URL(c.req.url).pathname}`;
  const body = await c.req.raw.clone().text();
  const idempotency: Idempotency = {
    key: keyOf(c.get("config").keyPrefix, "idem", await hex(`${c.get("keyId")}\n${scope}\n${header}`, "SHA-256")),
    fingerprint: await hex(body, "SHA-256"),
  };
  c.set("idempotency", idempotency);
  await next();
});

/** Marks a replayed response so clients can tell. */
export function markReplay(c: Context<AppEnv>, replayed: boolean): void {
  if (replayed) c.header("Idempotent-Replayed", "true");
}
