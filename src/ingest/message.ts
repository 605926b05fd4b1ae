/**
 * What a queued write carries. A request accepted with `Prefer: respond-async`
 * becomes one message or a few (a message stays under MAX_MESSAGE_BYTES), each
 * holding the request's validated items with every time resolved at accept
 * time: an event without `at` is stamped with the request's time, so the
 * consumer writes it into the hour (or period bucket) it would have gone to
 * synchronously, however late it runs.
 */
import type { IncrItem } from "../counters/index.ts";
import type { TrendingEvent } from "../trending/index.ts";

export type IngestKind = "trending" | "counters" | "presence";

interface Common {
  /** Format version. */
  v: 1;
  /** Stream, counter or room. */
  name: string;
  /** When the request was accepted (epoch ms, the producer's clock). */
  t: number;
  /** The request's X-Request-Id. */
  r: string;
  /**
   * Dedupe id from the request's Idempotency-Key and body (`i:<digest>:<body digest>:<part>`), when
   * it had a key; otherwise the consumer dedupes on the queue's message id.
   */
  d?: string;
  /**
   * With `d`: the request's full body fingerprint (SHA-256 hex), which the consumer compares with a
   * synchronous record of the same key and writes into the record it leaves (one ledger for both).
   */
  f?: string;
  /**
   * With `d` and `f` (since the canonical digest was added): the SHA-256 of the request's body as
   * canonical JSON. The consumer also takes the message for a duplicate under the dedupe id `d`
   * with this digest in place of `f`'s (`canonicalIdOf`), and compares it with a record's digests
   * too, so a retry that re-serializes the same JSON is applied once. An earlier consumer ignores
   * it (and dedupes on `d`, `f` alone, as before).
   */
  c?: string;
}

export type IngestMessage =
  | (Common & { kind: "trending"; events: Required<Pick<TrendingEvent, "member" | "count" | "at">>[] })
  | (Common & { kind: "counters"; items: IncrItem[] })
  | (Common & { kind: "presence"; ids: string[] });

/** Largest message body we send (Cloudflare Queues allows 128 KB per message). */
export const MAX_MESSAGE_BYTES = 100 * 1024;
/** Largest sendBatch we send, in messages and in bytes (Queues: 100 messages, 256 KB). */
export const MAX_SEND_MESSAGES = 100;
export const MAX_SEND_BYTES = 240 * 1024;

const encoder = new TextEncoder();
/** Bytes of a value's JSON (what Queues measures of a message body). */
export const sizeOf = (value: unknown) => encoder.encode(JSON.stringify(value)).length;

/** The field that holds a kind's items. */
export const ITEMS_FIELD = { trending: "events", counters: "items", presence: "ids" } as const satisfies Record<
  IngestKind,
  string
>;

/** The items (events, increments, ids) a message carries. */
export function listOf(message: IngestMessage): unknown[] {
  return (message as unknown as Record<string, unknown[]>)[ITEMS_FIELD[message.kind]] as unknown[];
}

/** The message with other items (the same request, time and dedupe id). */
export function withItems(message: IngestMessage, items: unknown[]): IngestMessage {
  return { ...message, [ITEMS_FIELD[message.kind]]: items } as IngestMessage;
}

/**
 * Splits a request's items into messages of at most MAX_MESSAGE_BYTES. The
 * split is a function of the items alone, so the same request split again (a
 * client's retry) gives the same parts and the same dedupe ids.
 */
export function toMessages(
  base: Omit<Common, "v" | "d" | "f" | "c"> & {
    kind: IngestKind;
    idempotencyId?: string | undefined;
    fingerprint?: string | undefined;
    canonical?: string | undefined;
  },
  items: unknown[],
): IngestMessage[] {
  const field = ITEMS_FIELD[base.kind];
  const parts: unknown[][] = [];
  let part: unknown[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = sizeOf(item) + 1;
    if (part.length > 0 && bytes + size > MAX_MESSAGE_BYTES - 512) {
      parts.push(part);
      part = [];
      bytes = 0;
    }
    part.push(item);
    bytes += size;
  }
  if (part.length > 0) parts.push(part);
  return parts.map((list, i) => {
    const message: Record<string, unknown> = {
      v: 1,
      kind: base.kind,
      name: base.name,
      t: base.t,
      r: base.r,
      [field]: list,
    };
    if (base.idempotencyId) message.d = `i:${base.idempotencyId}:${i}`;
    if (base.idempotencyId && base.fingerprint) message.f = base.fingerprint;
    if (base.idempotencyId && base.fingerprint && base.canonical) message.c = base.canonical;
    return message as unknown as IngestMessage;
  });
}

/**
 * The dedupe id a keyed message also goes by: `d` (`i:<record digest>:<16 hex of f>:<part>`) with
 * the canonical digest's 16 hex in place of the raw one's; undefined without `c`. A retry that
 * re-serializes the same JSON has another `d` and this same id.
 */
export function canonicalIdOf(message: Pick<Common, "d" | "c">): string | undefined {
  const parts = message.d?.split(":");
  if (!message.c || parts?.length !== 4 || parts[0] !== "i") return undefined;
  return `i:${parts[1]}:${message.c.slice(0, 16)}:${parts[3]}`;
}

/**
 * Groups message bodies into sendBatch calls within Queues' limits (MAX_SEND_MESSAGES each, and
 * MAX_SEND_BYTES of their JSON, or of what `size` measures): the producer's messages, and the
 * consumer's dead-letter bodies.
 */
export function sendBatches<T>(messages: readonly T[], size: (message: T) => number = sizeOf): T[][] {
  const out: T[][] = [];
  let batch: T[] = [];
  let bytes = 0;
  for (const message of messages) {
    const bytesOf = size(message);
    if (batch.length > 0 && (batch.length >= MAX_SEND_MESSAGES || bytes + bytesOf > MAX_SEND_BYTES)) {
      out.push(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(message);
    bytes += bytesOf;
  }
  if (batch.length > 0) out.push(batch);
  return out;
}
