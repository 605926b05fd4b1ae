import { readConfig } from "../src/config.ts";
import * as ingest from "../src/ingest/index.ts";
import { redisOf } from "./middleware/context.ts";

/** Worker bindings of queued ingest (declared in wrangler.toml; both optional). */
export interface IngestBindings {
  /** Producer of the ingest queue: with it, `Prefer: respond-async` queues writes. */
  INGEST_QUEUE?: Queue<unknown>;
  /** Producer of the dead-letter queue: messages that can never apply are sent there at once. */
  INGEST_DLQ?: Queue<unknown>;
}

/**
 * The queue consumer: applies a batch of queued writes (merged per target, one
 * script each, exactly once) and acks or retries each message. `now` is the
 * consumer's clock (tests pass a fake one).
 */
export async function consumeIngest(
  batch: { messages: readonly ingest.QueuedMessage[] },
  env: Env,
  now: number = Date.now(),
): Promise<ingest.BatchStats> {
  const config = readConfig(env as unknown as Record<string, unknown>);
  const redis = redisOf(env, config.redisTimeoutMs);
  const dlq = (env as unknown as IngestBindings).INGEST_DLQ;
  return ingest.consumeBatch(
    { redis, prefix: config.keyPrefix, now },
    batch.messages,
    { trendingRetentionHours: config.trendingRetentionHours, presenceTimeoutSeconds: config.presenceTimeoutSeconds },
    {
      deadLetter: dlq
        ? async (dead) => {
            for (let i = 0; i < dead.length; i += 100) {
              await dlq.sendBatch(
                dead.slice(i, i + 100).map((d) => ({ body: { reason: d.reason, messageId: d.id, message: d.body } })),
              );
            }
          }
        : undefined,
    },
  );
}
