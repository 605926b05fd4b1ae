/**
 * The ids a queued message is known by: its dedupe id (`d`, else the queue's message id), the
 * canonical id a keyed message also goes by, and the synchronous idempotency record it shares.
 */
import { keyOf } from "../keys.ts";
import { mayBeFromYesterday, type DedupeId } from "./ingest.ts";
import { canonicalIdOf, type IngestMessage } from "./message.ts";

/**
 * The synchronous idempotency record of a keyed message's request (functions/middleware/idempotency.ts
 * names it `idem:<digest>`; the digest is the dedupe id's `i:<digest>:…`), so a request sent once
 * each way is applied once.
 */
export function recordOf(prefix: string, message: IngestMessage) {
  const digest = message.d?.startsWith("i:") ? message.d.split(":")[1] : undefined;
  if (!digest || !message.f) return undefined;
  return {
    key: keyOf(prefix, "idem", digest),
    fingerprint: message.f,
    canonical: message.c ?? "",
    requestId: message.r,
    acceptedAt: message.t,
  };
}

/** The ids a message's part is recorded under (both ids of a keyed message). */
export const idsOf = (id: string, alt: string | undefined) => (alt === undefined ? [id] : [id, alt]);

/** The dedupe id of a message (`id` its own, or `m:<queue message id>`) for the applied sets' look-up. */
export function dedupeIdOf(prefix: string, now: number, messageId: string, message: IngestMessage): DedupeId {
  const id = message.d ?? `m:${messageId}`;
  return {
    id,
    alt: canonicalIdOf(message),
    old: mayBeFromYesterday(id, message.t, now),
    record: recordOf(prefix, message),
  };
}
