/**
 * Checks of queued writes. The envelope of a message is checked here; its items get the
 * library's own validation, run through the capturing client of plan.ts, so a queued request is
 * refused (when accepted) or dead-lettered (when consumed) for exactly the reasons the
 * synchronous call would refuse it.
 */
import type { IncrItem } from "../counters/index.ts";
import { parseBucketTime } from "../counters/index.ts";
import { DAY, dayStart } from "../time.ts";
import type { TrendingEvent } from "../trending/index.ts";
import { ITEMS_FIELD, listOf, withItems, type IngestKind, type IngestMessage } from "./message.ts";
import { capture, libraryWrite, type IngestSettings } from "./plan.ts";

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The body as an IngestMessage, or why it is not one (the consumer dead-letters
 * those). Only the envelope is checked here; the items get the library's own
 * validation when the consumer plans the write.
 */
export function parseMessage(body: unknown): IngestMessage | string {
  if (!isObject(body)) return "body is not an object";
  if (body.v !== 1) return `unknown format version ${String(body.v)}`;
  if (typeof body.name !== "string") return "name is missing";
  if (typeof body.t !== "number" || !Number.isFinite(body.t)) return "t is missing";
  if (typeof body.r !== "string") return "r is missing";
  if (body.d !== undefined && typeof body.d !== "string") return "d is not a string";
  if (body.f !== undefined && (typeof body.f !== "string" || !/^[0-9a-f]{64}$/.test(body.f)))
    return "f is not a fingerprint";
  if (body.c !== undefined && (typeof body.c !== "string" || !/^[0-9a-f]{64}$/.test(body.c)))
    return "c is not a fingerprint";
  const field =
    typeof body.kind === "string" && Object.hasOwn(ITEMS_FIELD, body.kind)
      ? ITEMS_FIELD[body.kind as IngestKind]
      : undefined;
  const list = field === undefined ? undefined : body[field];
  if (list === undefined) return `unknown kind ${String(body.kind)}`;
  if (!Array.isArray(list) || list.length === 0) return "no items";
  return body as unknown as IngestMessage;
}

/**
 * Validates a request's items as the synchronous call would (throws its
 * ValidationError) and returns them with every time resolved to `now`: the
 * form they are queued in.
 */
export async function acceptItems(
  kind: IngestKind,
  name: string,
  items: unknown[],
  prefix: string,
  now: number,
  settings: IngestSettings,
): Promise<unknown[]> {
  await capture(kind, prefix, now, libraryWrite({ kind, name }, items, settings));
  if (kind === "trending") {
    return (items as TrendingEvent[]).map((e) => ({ member: e.member, count: e.count ?? 1, at: e.at ?? now }));
  }
  if (kind === "counters") {
    return (items as IncrItem[]).map((item) => {
      if (item.period === undefined) return item;
      return { ...item, at: item.at === undefined ? now : (parseBucketTime(item.at) as number) };
    });
  }
  return items;
}

/**
 * Why a message can no longer be applied (the consumer dead-letters it), or
 * null. The library's checks run at the consumer's time: an event whose hour
 * left the retention, a bucket time past 400 days or its ttl. Presence: a
 * heartbeat from before yesterday (its day's figures have expired).
 */
export async function problemOf(
  message: IngestMessage,
  prefix: string,
  now: number,
  settings: IngestSettings,
): Promise<string | null> {
  if (message.kind === "presence" && dayStart(message.t) < dayStart(now) - DAY) return "heartbeat older than yesterday";
  const at = message.kind === "presence" ? message.t : now;
  try {
    await capture(message.kind, prefix, at, libraryWrite(message, listOf(message), settings));
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/**
 * A message that no longer applies as a whole (problemOf), split item by item: the items that
 * still apply (null when none does) and the indexes of those that do not (`out`; none for
 * presence: the message goes whole). An item that aged out while queued (a bucket past its
 * ttl, an event past the retention) must not take the acknowledged items of its request with it.
 * Presence's rule is the message's own time, so its ids go or stay together.
 */
export async function splitByProblem(
  message: IngestMessage,
  prefix: string,
  now: number,
  settings: IngestSettings,
): Promise<{ valid: IngestMessage | null; out: number[] }> {
  const items = listOf(message);
  const out: number[] = [];
  if (message.kind === "presence") return { valid: null, out };
  for (const [i, item] of items.entries())
    if ((await problemOf(withItems(message, [item]), prefix, now, settings)) !== null) out.push(i);
  const valid = items.filter((_, i) => !out.includes(i));
  // (the whole failed for what no single item shows, none should: kept whole)
  return { valid: out.length > 0 && valid.length > 0 ? withItems(message, valid) : null, out };
}

/**
 * The items `out` of a message (by index) as a message of their own, with the message's `reason`
 * (the library's first refusal: of its first such item).
 */
export function partOf(message: IngestMessage, out: number[], reason: string) {
  const items = listOf(message);
  return {
    body: withItems(
      message,
      out.map((i) => items[i]),
    ),
    reason: `${out.length} of ${items.length} items: ${reason}`,
  };
}
