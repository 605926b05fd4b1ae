import { readConfig } from "../src/config.ts";
import * as ingest from "../src/ingest/index.ts";
import { redisOf } from "./middleware/context.ts";

/** Worker bindings of queued ingest (declared in wrangler.toml; both optional). */
export interface IngestBindings {
  /** Producer of the ingest queue: with it, `Prefer: respond-async` queues writes. */
  INGEST_QUEUE?: Queue<unknown>;
  /** Producer of the dead-letter queue: messages that can never apply are sent there at once. */
  INGEST_DLQ?: Queue<unknown>;
  /** The consumer's max_retries in wrangler.toml, repeated (a var; test/unit/ingest-max-retries.test.ts keeps them equal). */
  INGEST_MAX_RETRIES?: string;
}

/** INGEST_MAX_RETRIES as a count, or the library's default (wrangler.toml's) when unset or not a count. */
function maxRetriesOf(value: string | undefined): number {
  const n = Number(value);
  return value !== undefined && value !== "" && Number.isInteger(n) && n >= 0 ? n : ingest.DEFAULT_MAX_RETRIES;
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
  const bindings = env as unknown as IngestBindings;
  const dlq = bindings.INGEST_DLQ;
  return ingest.consumeBatch(
    { redis, prefix: config.keyPrefix, now },
    batch.messages,
    { trendingRetentionHours: config.trendingRetentionHours, presenceTimeoutSeconds: config.presenceTimeoutSeconds },
    {
      // one sendBatch a call: consumeBatch cuts them within Queues' limits (100 messages, 256 KB)
      deadLetter: dlq
        ? async (items) => {
            await dlq.sendBatch(items.map((item) => ({ body: ingest.deadLetterBody(item) })));
          }
        : undefined,
      maxRetries: maxRetriesOf(bindings.INGEST_MAX_RETRIES),
    },
  );
}
