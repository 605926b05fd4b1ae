/**
 * What the consumer sends to the dead-letter queue, and when a delivery is a message's last.
 * Queues counts a message's `attempts` from 1 (the first delivery) and moves it to the
 * dead-letter queue after max_retries + 1 failed deliveries (miniflare's broker: maxAttempts =
 * maxRetries + 1, attempts = failed attempts + 1). A message still failing on that delivery is
 * sent there by the consumer itself, with its reason, and counted `deadLettered`.
 */
import type { Ctx } from "../context.ts";
import type { ConsumeOptions, QueuedMessage } from "./consume-types.ts";
import { markParts, type BatchStats } from "./ingest.ts";
import { sendBatches, sizeOf } from "./message.ts";
import { SCORE_RANGE_ERROR } from "../counters/scripts.ts";
import { HOUR_COUNT_ERROR } from "../trending/validate.ts";

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

/**
 * The bound a write script refused by raising an error (an hour's trending count past
 * MAX_HOUR_COUNT: src/trending/scripts.ts; a counter score outside ±MAX_COUNTER_SCORE:
 * src/counters/scripts.ts), as the dead-letter reason naming it; undefined for any other error.
 */
export function boundRefusal(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  // the reply's own text only: the client's message goes on with `, command was: [...]`, which for
  // an EVAL (Redis did not know the script yet) is the script's text, holding both strings below,
  // so any error of it read as a bound and was dead-lettered at once (review 25)
  const reply = error.message.split(", command was: ")[0] ?? "";
  if (reply.includes(HOUR_COUNT_ERROR)) return "a trending count past the bound of 5e13 per member and hour";
  if (reply.includes(SCORE_RANGE_ERROR))
    return "a counter score outside ±1e15 (the range kept exact), in the plain key, a bucket or a rollup";
  return undefined;
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

/** Retry delay for a message that met a storage error: grows with its attempts, at most a minute. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(60, 2 ** Math.max(0, attempts - 1));
}

/**
 * An aged-out part to send: its message (applied) is acked once it is sent, and marked sent then
 * (`marks`: the ids its record in the parts hash is under, deleted by ingest.markParts).
 */
export type Part = DeadLetterItem & { entry: QueuedMessage; marks: string[] };

/**
 * Sends what a batch dead-letters: the aged-out parts of messages applied, and the messages that
 * can never apply; each message is acked once the send that carried it succeeded. Without a
 * producer, or when their send failed, the messages that can never apply are handed back (Queues
 * dead-letters them after max_retries: counted `deadLettered` on that last delivery, `retried`
 * before); so is a message whose part failed (found applied next time, its part sent then), but on
 * its last delivery it is acked and the part logged (Queues would dead-letter the applied rest too).
 * A redelivery sends the part its application recorded, also once the rest has aged out too.
 */
export async function settleDead(
  ctx: Ctx,
  options: ConsumeOptions,
  dead: readonly { entry: QueuedMessage; reason: string; ids?: string[] | undefined }[],
  parts: readonly Part[],
  maxRetries: number,
  stats: BatchStats,
): Promise<void> {
  for (const d of dead) console.warn(`ingest: message ${d.entry.id} cannot be applied: ${d.reason}`);
  const items = [
    ...parts,
    ...dead.map((d) => ({
      body: d.entry.body,
      reason: d.reason,
      id: d.entry.id,
      entry: d.entry,
      marks: undefined,
      ids: d.ids,
    })),
  ];
  if (items.length === 0) return;
  const handBack = (m: QueuedMessage) => {
    m.retry({ delaySeconds: retryDelaySeconds(m.attempts) });
    if (isLastAttempt(m.attempts, maxRetries)) stats.deadLettered++;
    else stats.retried++;
  };
  if (!options.deadLetter) {
    for (const item of items) {
      if (item.marks === undefined) handBack(item.entry);
      else {
        console.warn(`ingest: message ${item.id}: items dropped, they cannot be applied: ${item.reason}`);
        item.entry.ack();
        stats.deadLettered++;
      }
    }
    return;
  }
  const { sent, failed, error } = await sendDeadLetters(options.deadLetter, items);
  for (const item of sent) item.entry.ack();
  stats.deadLettered += sent.length;
  if (failed.length > 0)
    console.error(`ingest: dead-letter send failed: ${error instanceof Error ? error.message : String(error)}`);
  for (const item of failed) {
    if (item.marks === undefined || !isLastAttempt(item.entry.attempts, maxRetries)) handBack(item.entry);
    else {
      console.error(`ingest: message ${item.id} applied; its aged-out items are lost: ${JSON.stringify(item.body)}`);
      item.entry.ack();
    }
  }
  // marked once sent (their records deleted): a redelivery (a lost ack) finds none and sends
  // nothing again; if this fails, one would send them again (the dead-letter body's messageId tells the copies apart)
  const marks = sent.flatMap((item) => item.marks ?? []);
  // and the ids of messages sent whole (they could no longer apply, met a bound, or failed their last
  // delivery): a copy is then found and acked, not applied beside this one (reviews 17, 21)
  const deadIds = sent.flatMap((item) => ("ids" in item ? (item.ids ?? []) : []));
  try {
    await markParts(ctx, marks, deadIds);
  } catch (e) {
    console.error(`ingest: dead-lettered parts not marked: ${e instanceof Error ? e.message : String(e)}`);
  }
}
