/**
 * What the consumer sends to the dead-letter queue, and when a delivery is a message's last.
 * Queues counts a message's `attempts` from 1 (the first delivery) and moves it to the
 * dead-letter queue after max_retries + 1 failed deliveries (miniflare's broker: maxAttempts =
 * maxRetries + 1, attempts = failed attempts + 1). A message still failing on that delivery is
 * sent there by the consumer itself, with its reason, and counted `deadLettered`.
 */
import { sendBatches, sizeOf } from "./message.ts";

/** wrangler.toml's max_retries of the ingest consumer; the Worker's INGEST_MAX_RETRIES var (kept equal, tested) overrides it. */
export const DEFAULT_MAX_RETRIES = 10;

/** A message (or the aged-out part of one) for the dead-letter queue. */
export interface DeadLetterItem {
  /** The message's body, or the part of it that can no longer apply. */
  body: unknown;
  reason: string;
  /** The queue's message id. */
  id: string;
}

/** The body the dead-letter queue receives for an item (what docs/ingest.md tells the operator to re-POST from). */
export function deadLetterBody(item: DeadLetterItem): { reason: string; messageId: string; message: unknown } {
  return { reason: item.reason, messageId: item.id, message: item.body };
}

/** Whether a delivery with these `attempts` is the last Queues makes before dead-lettering the message itself. */
export function isLastAttempt(attempts: number, maxRetries: number): boolean {
  return attempts > maxRetries;
}

/**
 * Sends items in calls of one sendBatch each (at most 100 bodies and MAX_SEND_BYTES, measured on
 * the bodies the queue receives: Queues refuses a sendBatch over 256 KB); each call settles only
 * the items it carried. Returns the items of the calls that failed, and the last error.
 */
export async function sendDeadLetters<T extends DeadLetterItem>(
  send: (items: DeadLetterItem[]) => Promise<void>,
  items: readonly T[],
): Promise<{ sent: T[]; failed: T[]; error?: unknown }> {
  const sent: T[] = [];
  const failed: T[] = [];
  let error: unknown;
  for (const batch of sendBatches(items, (item) => sizeOf(deadLetterBody(item)))) {
    try {
      await send(batch.map(({ body, reason, id }) => ({ body, reason, id })));
      sent.push(...batch);
    } catch (e) {
      error = e;
      failed.push(...batch);
    }
  }
  return error === undefined ? { sent, failed } : { sent, failed, error };
}
