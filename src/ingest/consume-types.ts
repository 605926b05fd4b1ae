/**
 * What the queue consumer (consume.ts) takes from its caller: the part of a Queues message it
 * uses and its options. Apart from the consumer so that dead-letter.ts, which settles those
 * messages, can name them without importing the consumer that imports it.
 */
import type { DeadLetterItem } from "./dead-letter.ts";

/** The part of a Queues message the consumer uses (Cloudflare's `Message`). */
export interface QueuedMessage {
  readonly id: string;
  readonly timestamp: Date;
  readonly attempts: number;
  readonly body: unknown;
  ack(): void;
  retry(options?: { delaySeconds?: number }): void;
}

export interface ConsumeOptions {
  /**
   * Sends messages that can never apply to the dead-letter queue, one sendBatch's worth a call
   * (dead-letter.ts); without it they are retried (Queues dead-letters them after max_retries).
   */
  deadLetter?: ((bodies: DeadLetterItem[]) => Promise<void>) | undefined;
  /**
   * The consumer's max_retries (wrangler.toml): a message still failing on its last delivery is
   * dead-lettered (with a producer) or counted dead-lettered as Queues moves it. @default 10
   */
  maxRetries?: number | undefined;
  /** Called when the stats script fails (the batch itself is settled). @default console.error */
  onStatsError?: (error: unknown) => void;
}
