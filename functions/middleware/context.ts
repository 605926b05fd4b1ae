import type { Context } from "hono";
import type { Ctx } from "../../src/context.ts";
import { ConfigError } from "../../src/errors.ts";
import { createRedis, type RedisClient } from "../../src/redis/client.ts";
import { HttpRedis } from "../../src/redis/http.ts";
import { defineScript } from "../../src/redis/script.ts";
import type { IngestKind } from "../../src/ingest/index.ts";
import type { IngestBindings } from "../queue.ts";
import type { QueuedBody } from "../schemas.ts";
import type { AppEnv } from "../types.ts";

const clients = new Map<string, RedisClient>();

/**
 * This deployment's Upstash database through the library's client (no retries; a request, a job
 * or the consumer picks the timeout). One client per URL, token and timeout for the isolate's
 * life: it holds only its settings (each request gets its own fetch and its own timeout signal)
 * and the last Upstash sync token it saw, which it sends with its next request (read-your-writes
 * across the isolate's requests, where each request's own client had it within the request);
 * making one was ~25 µs of every request's CPU.
 */
export function redisOf(env: Env, timeoutMs: number): RedisClient {
  const url = env.UPSTASH_REDIS_REST_URL;
  const token = env.UPSTASH_REDIS_REST_TOKEN;
  const id = `${timeoutMs} ${url} ${token}`;
  let client = clients.get(id);
  if (!client) {
    // A typo in the secret would otherwise be a bare 500 internal_error on every call; the message
    // names the variable, never its value.
    if (!/^https?:\/\/[^/?#\s]+/i.test(url) || !URL.canParse(url))
      throw new ConfigError("UPSTASH_REDIS_REST_URL must be the database's REST URL (https://…); it is not a URL.");
    // fetch's Headers would throw on every call (an outage's 503 forever): a line break inside,
    // or a character beyond Latin-1; the ends' whitespace it trims
    if (/[\0\r\n]|[^\0-\xff]/.test(token.trim()))
      throw new ConfigError(
        "UPSTASH_REDIS_REST_TOKEN must be the database's REST token; it holds a line break or a character a header cannot carry.",
      );
    client = createRedis({ url, token, timeoutMs });
    clients.set(id, client);
  }
  return client;
}

/**
 * Makes (and drops) one Upstash client when the Worker starts (issue 14, point 6), and runs its
 * path to `fetch` up to the request, so that V8 compiles at startup what the isolate's first Redis
 * request compiled on first call, within the free plan's 10 ms per request; at startup it counts
 * toward the startup limit (1 s) instead, which Cloudflare may spend while the TLS handshake runs.
 * - An `EVALSHA` through the library's client (src/redis/http.ts, `createRedis`'s) runs the
 *   command's arguments and the request's building up to the `signal`, which throws: before any
 *   `fetch`, timer or I/O (none is allowed at a Worker's global scope). The rejection is dropped.
 *   (It was @upstash/redis's `Redis`, whose constructor's ~360 command fields cost 0.8–1.4 ms of
 *   V8 compile on the first `new`; that client is no longer in the Worker.)
 * - The text of a one-line write script (`warmScript`): the script layer's header, libraries and
 *   idempotency prelude, built as every write script's is. Each feature's script is still built
 *   and hashed (SHA-1, WebCrypto) from its own text by its own first call.
 * All synchronous, so done when the module is; no request is sent.
 */
export function warmRedisClient(): void {
  const stop = (): AbortSignal => {
    throw new Error("warm-up: no request is sent");
  };
  // a warm-up only: whatever throws here must not fail the Worker's start
  try {
    new HttpRedis({ url: "https://warm.invalid", token: "warm", signal: stop })
      .evalsha("0".repeat(40), ["k"], ["a"])
      .catch(() => {});
    void warmScript.text; // the getter builds it
  } catch {
    // nothing warmed; the first request compiles it instead
  }
}

/** Never sent: only its text is built (`warmRedisClient`). */
const warmScript = defineScript({ name: "warm.up", write: true, keys: ["key"], args: ["arg"], lua: "return 1" });

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

/**
 * True when the request's `Prefer` header holds `respond-async` (RFC 7240; other preferences may
 * ride along). An empty value (`respond-async=""`, `respond-async=`) is no value (RFC 7240 §2).
 */
export function prefersAsync(header: string | undefined): boolean {
  if (!header) return false;
  return header.split(",").some((pref) => {
    const [name = "", value] = (pref.split(";")[0] ?? "").split("=");
    return name.trim().toLowerCase() === "respond-async" && (value === undefined || /^\s*(""\s*)?$/.test(value));
  });
}

/**
 * Queues a write (`queueWrite` of ./respond-async.ts, the 202's body) when the request asks for it
 * (`Prefer: respond-async`) and the deployment has the INGEST_QUEUE binding, else null (also for a
 request too big for one sendBatch, which is then written synchronously). That
 * module is loaded only then: a route's module does not import it, so a cold isolate's first
 * write loads one module less.
 */
export async function queueIfAsync(
  c: Context<AppEnv>,
  kind: IngestKind,
  name: string,
  items: unknown[],
): Promise<QueuedBody | null> {
  const queue = (c.env as unknown as IngestBindings).INGEST_QUEUE;
  if (!queue || !prefersAsync(c.req.header("prefer"))) return null;
  return (await import("./respond-async.ts")).queueWrite(c, queue, kind, name, items);
}
