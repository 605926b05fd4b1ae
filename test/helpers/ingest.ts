/**
 * Queued ingest in worker tests: a test api whose INGEST_QUEUE and INGEST_DLQ
 * bindings record what the routes send, and a `deliver` that hands recorded
 * messages to the consumer as a Queues batch (createMessageBatch from
 * cloudflare:test, with ids, timestamps and attempts we choose), at the api's
 * fake time, and reports what the consumer acked and retried (getQueueResult).
 */
import { createExecutionContext, createMessageBatch, getQueueResult, type QueueResult } from "cloudflare:test";
import { consumeIngest } from "../../functions/queue.ts";
import { deadLetterBody, type DeadLetterItem } from "../../src/ingest/dead-letter.ts";
import { createRedis, type RedisClient } from "../../src/redis/client.ts";
import { createTestApi, type TestApiOptions } from "./worker.ts";

export interface Sent {
  /** The id Queues would give the message (ours: `m<n>`). */
  id: string;
  body: any;
  timestamp: number;
}

/** A queue binding that keeps what it is sent. */
export function recordingQueue(clock: () => number) {
  const sent: Sent[] = [];
  let next = 0;
  const push = (body: unknown) =>
    sent.push({ id: `m${String(next++).padStart(6, "0")}`, body: structuredClone(body), timestamp: clock() });
  const queue = {
    sent,
    async send(body: unknown) {
      push(body);
    },
    async sendBatch(messages: Iterable<{ body: unknown }>) {
      const list = [...messages];
      if (list.length > 100) throw new Error("sendBatch takes at most 100 messages");
      for (const m of list) push(m.body);
    },
    clear() {
      sent.length = 0;
    },
  };
  return queue;
}

export function createIngestApi(options: TestApiOptions & { queue?: boolean }) {
  const api = createTestApi(options);
  const queue = recordingQueue(() => api.now);
  const dlq = recordingQueue(() => api.now);
  const env = api.env as unknown as Record<string, unknown>;
  if (options.queue === false) {
    delete env.INGEST_QUEUE;
    delete env.INGEST_DLQ;
  } else {
    env.INGEST_QUEUE = queue;
    env.INGEST_DLQ = dlq;
  }

  /** Delivers `messages` as one batch to the consumer; attempts default to 1. */
  const deliver = (messages: Sent[], options: { attempts?: number } = {}) =>
    deliverBatch(api, messages, options.attempts ?? 1);

  const async = { prefer: "respond-async" };
  // Object.assign keeps api's `now` getter live (a spread would copy its value once)
  return Object.assign(api, { queue, dlq, deliver, asyncHeaders: async });
}

export type IngestApi = ReturnType<typeof createIngestApi>;

/** `messages` as a Queues batch of `edgestats-ingest` (cloudflare:test), each on its `attempts`-th delivery. */
export function batchOf(messages: Sent[], attempts = 1): MessageBatch<unknown> {
  return createMessageBatch(
    "edgestats-ingest",
    messages.map((m) => ({ id: m.id, timestamp: m.timestamp, attempts, body: m.body })),
  );
}

/**
 * Delivers `messages` as one batch to the Worker's consumer (`consumeIngest`) with `env` (the
 * api's unless given), at the api's fake time: what it acked and retried, and its figures.
 */
export async function deliverBatch(
  api: { env: Env; now: number },
  messages: Sent[],
  attempts = 1,
  env: Env = api.env,
): Promise<QueueResult & { stats: Awaited<ReturnType<typeof consumeIngest>> }> {
  const batch = batchOf(messages, attempts);
  const stats = await consumeIngest(batch, env, api.now);
  const result = await getQueueResult(batch, createExecutionContext());
  return { ...result, stats };
}

/**
 * A Redis client on `api`'s Redis whose scripts touching a key containing `poisoned` fail as an
 * unreachable Upstash would (the others reach the real server): one target's storage error in a
 * batch the consumer is fed by hand.
 */
export function failingFor(api: { env: Env }, poisoned: string): RedisClient {
  const real = createRedis({ url: api.env.UPSTASH_REDIS_REST_URL, token: api.env.UPSTASH_REDIS_REST_TOKEN });
  const fail = (keys: string[]) => keys.some((k) => k.includes(poisoned));
  return {
    ping: () => real.ping(),
    evalsha: ((sha: string, keys: string[], args: string[]) =>
      fail(keys)
        ? Promise.reject(new TypeError("fetch failed"))
        : real.evalsha(sha, keys, args)) as RedisClient["evalsha"],
    eval: ((text: string, keys: string[], args: string[]) =>
      fail(keys) ? Promise.reject(new TypeError("fetch failed")) : real.eval(text, keys, args)) as RedisClient["eval"],
  };
}

/**
 * A client of the api's real Redis whose scripts on a key containing `target` run (Redis applies
 * them) and then fail as a lost answer would (a timeout after the commit, a connection cut):
 * the consumer cannot tell them from a script that never ran.
 */
export function answerLostFor(api: { env: Env }, target: string): RedisClient & { scripts: number } {
  const real = createRedis({ url: api.env.UPSTASH_REDIS_REST_URL, token: api.env.UPSTASH_REDIS_REST_TOKEN });
  const hit = (keys: string[]) => keys.some((k) => k.includes(target));
  const lose = async <T>(keys: string[], run: () => Promise<T>): Promise<T> => {
    const value = await run();
    if (hit(keys)) throw new TypeError("fetch failed (the answer was lost after Redis applied the script)");
    return value;
  };
  const client = {
    /** Scripts the consumer ran (EVALSHA calls: a NOSCRIPT reload is not one more). */
    scripts: 0,
    ping: () => real.ping(),
    evalsha: ((sha: string, keys: string[], args: string[]) => {
      client.scripts++;
      return lose(keys, () => real.evalsha(sha, keys, args));
    }) as RedisClient["evalsha"],
    eval: ((text: string, keys: string[], args: string[]) =>
      lose(keys, () => real.eval(text, keys, args))) as RedisClient["eval"],
  };
  return client;
}

/**
 * A client of the api's real Redis whose scripts on a key containing `target` reach it `ms`
 * later (a slow link: they run, in full, after the other scripts sent with them): fixes the order
 * of a batch's concurrent scripts.
 */
export function delayedFor(api: { env: Env }, target: string, ms: number): RedisClient & { scripts: number } {
  const real = createRedis({ url: api.env.UPSTASH_REDIS_REST_URL, token: api.env.UPSTASH_REDIS_REST_TOKEN });
  const later = async <T>(keys: string[], run: () => Promise<T>): Promise<T> => {
    if (keys.some((k) => k.includes(target))) await new Promise((resolve) => setTimeout(resolve, ms));
    return run();
  };
  const client = {
    /** Scripts the consumer ran (EVALSHA calls: a NOSCRIPT reload is not one more). */
    scripts: 0,
    ping: () => real.ping(),
    evalsha: ((sha: string, keys: string[], args: string[]) => {
      client.scripts++;
      return later(keys, () => real.evalsha(sha, keys, args));
    }) as RedisClient["evalsha"],
    eval: ((text: string, keys: string[], args: string[]) =>
      later(keys, () => real.eval(text, keys, args))) as RedisClient["eval"],
  };
  return client;
}

/** The consumer's settings for tests that call consumeBatch directly (wrangler.toml's trending retention). */
export const INGEST_SETTINGS = { trendingRetentionHours: 50, presenceTimeoutSeconds: 60 };

/** consumeBatch's dead-letter producer: the api's recording INGEST_DLQ, as functions/queue.ts sends. */
export const toDlq =
  (api: { dlq: { sendBatch(messages: Iterable<{ body: unknown }>): Promise<void> } }) =>
  async (items: DeadLetterItem[]) => {
    await api.dlq.sendBatch(items.map((item) => ({ body: deadLetterBody(item) })));
  };
