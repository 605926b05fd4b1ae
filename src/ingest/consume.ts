/**
 * The queue consumer's logic, free of Workers types: a batch of messages is
 * grouped by target (kind and name), each group merged and applied by one
 * script (see scripts.ts), and every message acked or retried by what happened
 * to its own group. Groups run concurrently; a storage error in one retries
 * only its messages.
 */
import type { Ctx } from "../context.ts";
import { StorageUnavailableError } from "../errors.ts";
import { keyOf } from "../keys.ts";
import { applyGroup, mayBeFromYesterday, recordBatch, type BatchStats } from "./ingest.ts";
import { canonicalIdOf, type IngestMessage } from "./message.ts";
import { mergeKeys, planGroup, type IngestSettings } from "./plan.ts";
import { parseMessage, problemOf, splitByProblem } from "./validate.ts";
import { SCORE_RANGE_ERROR } from "../counters/scripts.ts";
import { HOUR_COUNT_ERROR } from "../trending/validate.ts";
import { MAX_BATCH } from "../validation.ts";

/**
 * Most merged entries (distinct hour or bucket and member, or presence window and id) one apply
 * script takes: 100 messages of 1,000 new members each would otherwise be one 100,000-event
 * script (about 0.7 s, 8 MB of arguments) that stalls every other call. At 10,000 distinct
 * entries one script took 57–110 ms in the scaling bench (`scaling-ingest`), over issue 15's
 * 50 ms; 4,000 keeps it near 40 ms at worst. Items that merge into entries already in the chunk
 * add no work, so a batch of 100 messages about a few members stays one script.
 */
export const MAX_GROUP_ITEMS = 4_000;

/**
 * Most merged entries of one group: at most one library call (MAX_BATCH) for trending and
 * counters, as their scripts may refuse a count or score past its bound (MAX_HOUR_COUNT,
 * MAX_COUNTER_SCORE) by raising an error, which takes back nothing an earlier call of the same
 * apply script wrote; the group's messages are then applied alone (one message is always one
 * call), and a message the group had already applied in part would count twice. Presence has no
 * such bound: its groups stay up to MAX_GROUP_ITEMS.
 */
function groupLimit(message: IngestMessage): number {
  return message.kind === "presence" ? MAX_GROUP_ITEMS : MAX_BATCH;
}

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
  /** Sends messages that can never apply to the dead-letter queue; without it they are retried (Queues dead-letters them after max_retries). */
  deadLetter?: ((bodies: { body: unknown; reason: string; id: string }[]) => Promise<void>) | undefined;
  /** Called when the stats script fails (the batch itself is settled). @default console.error */
  onStatsError?: (error: unknown) => void;
}

/** Retry delay for a message that met a storage error: grows with its attempts, at most a minute. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(60, 2 ** Math.max(0, attempts - 1));
}

/**
 * Sends the items of a message that can no longer apply to the dead-letter queue; false when that
 * failed. Without a dead-letter producer they are only logged: the rest of their message applies
 * and acks it, so Queues' own dead-letter queue (after max_retries) never receives them.
 */
async function deadLetterPart(
  options: ConsumeOptions,
  part: { body: unknown; reason: string; id: string },
): Promise<boolean> {
  if (!options.deadLetter) {
    console.warn(`ingest: message ${part.id}: items dropped, they cannot be applied: ${part.reason}`);
    return true;
  }
  try {
    await options.deadLetter([part]);
    return true;
  } catch (error) {
    console.error(
      `ingest: dead-letter send failed, retrying: ${error instanceof Error ? error.message : String(error)}`,
    );
    return false;
  }
}

/**
 * The synchronous idempotency record of a keyed message's request (functions/middleware/idempotency.ts
 * names it `idem:<digest>`; the digest is the dedupe id's `i:<digest>:…`), so a request sent once
 * each way is applied once.
 */
function recordOf(prefix: string, message: IngestMessage) {
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

/**
 * The bound a write script refused by raising an error (an hour's trending count past
 * MAX_HOUR_COUNT: src/trending/scripts.ts; a counter score outside ±MAX_COUNTER_SCORE:
 * src/counters/scripts.ts), as the dead-letter reason naming it; undefined for any other error.
 */
function boundRefusal(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  if (error.message.includes(HOUR_COUNT_ERROR)) return "a trending count past the bound of 5e13 per member and hour";
  if (error.message.includes(SCORE_RANGE_ERROR))
    return "a counter score outside ±1e15 (the range kept exact), in the plain key, a bucket or a rollup";
  return undefined;
}

/** How often a group is planned again after its script found messages already applied (each pass drops at least one). */
const MAX_PASSES = 4;

interface Entry {
  msg: QueuedMessage;
  message: IngestMessage;
  dedupe: string;
  /** The id it also goes by (`canonicalIdOf`: a keyed message of this version), the same for a re-serialized retry. */
  alt: string | undefined;
  /** Later copies of this message in the batch (a client's retries with the same Idempotency-Key). */
  copies: QueuedMessage[];
}

/** Applies a batch; returns what it did (also added to the status counters). */
export async function consumeBatch(
  ctx: Ctx,
  messages: readonly QueuedMessage[],
  settings: IngestSettings,
  options: ConsumeOptions = {},
): Promise<BatchStats> {
  const stats: BatchStats = { applied: 0, events: 0, retried: 0, deadLettered: 0, duplicates: 0, oldestAgeMs: 0 };
  /** Messages to dead-letter; `body` when only a part of the message is left (its aged-out items went already). */
  const dead: { entry: QueuedMessage; reason: string; body?: unknown }[] = [];
  const groups = new Map<string, Entry[]>();
  const chunks = new Map<string, { n: number; entries: Set<string> }>();
  const firsts = new Map<string, Entry>();
  // the merge keys of each entry's chunk, to count an earlier copy's keys when it takes the entry's place
  const chunkOf = new Map<Entry, Set<string>>();
  for (const msg of messages) {
    const parsed = parseMessage(msg.body);
    stats.oldestAgeMs = Math.max(
      stats.oldestAgeMs,
      ctx.now - (typeof parsed === "string" ? msg.timestamp.getTime() : parsed.t),
    );
    if (typeof parsed === "string") {
      dead.push({ entry: msg, reason: parsed });
      continue;
    }
    let message = parsed;
    const problem = await problemOf(parsed, ctx.prefix, ctx.now, settings);
    if (problem !== null) {
      const split = await splitByProblem(parsed, problem, ctx.prefix, ctx.now, settings);
      if (split.valid === null) {
        dead.push({ entry: msg, reason: split.reason });
        continue;
      }
      // Some items aged out while queued: they go to the dead-letter queue first, then the rest
      // applies (under the message's dedupe id: once, however often this runs). If that send
      // fails the whole message is retried, so no item is lost (one may be dead-lettered twice).
      if (!(await deadLetterPart(options, { body: split.invalid, reason: split.reason, id: msg.id }))) {
        msg.retry({ delaySeconds: retryDelaySeconds(msg.attempts) });
        stats.retried++;
        continue;
      }
      stats.deadLettered++;
      message = split.valid;
    }
    const dedupe = message.d ?? `m:${msg.id}`;
    const alt = canonicalIdOf(message);
    const first = firsts.get(dedupe) ?? (alt === undefined ? undefined : firsts.get(alt));
    if (first) {
      // A later copy in the same batch (a client's retry with the same Idempotency-Key, the same
      // bytes or the same JSON re-serialized: either id) is settled
      // with the first: acked as a duplicate once that one is applied or found applied, retried with
      // it on a storage error. (Handed back on its own, n copies took n redeliveries, and the last
      // could reach the dead-letter queue as a duplicate; found by the queues end-to-end test.)
      // Of the copies the one of the earliest accept time is applied (review 11): synchronously the
      // retry is a replay and the first request's time stands (a trending hour, a counter bucket, a
      // heartbeat's last-seen), and Queues may hand the retry's copy over first. No command more.
      if (message.t < first.message.t) {
        // its keys may differ (a presence slot is its time's): counted in the chunk from now on (a
        // chunk past its limit by one message's keys at most, as its first message's split decided)
        for (const k of mergeKeys(message)) chunkOf.get(first)?.add(k);
        first.copies.push(first.msg);
        Object.assign(first, { msg, message, dedupe, alt });
        firsts.set(dedupe, first);
        if (alt !== undefined) firsts.set(alt, first);
      } else first.copies.push(msg);
      continue;
    }
    // One script per target, but never a long one: a target's messages are cut into chunks of at most
    // MAX_GROUP_ITEMS merged entries (whole messages; each chunk records its own ids, so exactly-once holds).
    const target = `${message.kind}\n${message.name}`;
    const keys = mergeKeys(message);
    let chunk = chunks.get(target) ?? { n: 0, entries: new Set<string>() };
    const added = new Set(keys.filter((k) => !chunk.entries.has(k))).size;
    if (chunk.entries.size > 0 && chunk.entries.size + added > groupLimit(message))
      chunk = { n: chunk.n + 1, entries: new Set() };
    for (const k of keys) chunk.entries.add(k);
    chunks.set(target, chunk);
    const key = `${target}\n${chunk.n}`;
    let group = groups.get(key);
    if (!group) groups.set(key, (group = []));
    const entry: Entry = { msg, message, dedupe, alt, copies: [] };
    chunkOf.set(entry, chunk.entries);
    firsts.set(dedupe, entry);
    if (alt !== undefined) firsts.set(alt, entry);
    group.push(entry);
  }
  const ackCopies = (e: Entry) => {
    for (const copy of e.copies) copy.ack();
    stats.duplicates += e.copies.length;
  };

  /** Applies a group of entries in one script (or several passes of one); settles each message. */
  const applyEntries = async (group: Entry[]): Promise<void> => {
    let left = group;
    try {
      for (let pass = 0; pass < MAX_PASSES && left.length > 0; pass++) {
        const plan = await planGroup(
          left.map((e) => e.message),
          ctx.prefix,
          ctx.now,
          settings,
        );
        if (plan.kind !== "presence" && plan.calls.length > 1 && left.length > 1) {
          // more than one call although its entries fit one (counts or increments past MAX_INCREMENT
          // merged and cut again): halves, each its own script, so a bound error takes back all it tried
          const half = Math.ceil(left.length / 2);
          await applyEntries(left.slice(0, half));
          await applyEntries(left.slice(half));
          return;
        }
        const result = await applyGroup(
          ctx,
          plan,
          left.map((e) => ({
            id: e.dedupe,
            alt: e.alt,
            old: mayBeFromYesterday(e.dedupe, e.message.t, ctx.now),
            record: recordOf(ctx.prefix, e.message),
          })),
        );
        if (result.applied) {
          for (const e of left) {
            e.msg.ack();
            ackCopies(e);
          }
          stats.applied += left.length;
          stats.events += plan.items;
          return;
        }
        const done = new Set(result.duplicates);
        for (const e of left) {
          if (!done.has(e.dedupe)) continue;
          e.msg.ack();
          ackCopies(e);
          stats.duplicates++;
        }
        left = left.filter((e) => !done.has(e.dedupe));
      }
      if (left.length > 0) throw new StorageUnavailableError("ingest: the group kept changing under its script");
    } catch (error) {
      const bound = boundRefusal(error);
      if (bound !== undefined) {
        // A trending count past MAX_HOUR_COUNT or a counter score outside ±MAX_COUNTER_SCORE
        // (review 10): the script wrote nothing (trending checks before its first write, counters
        // undo theirs before the error) and its apply script recorded no message as applied.
        // Whose it is the merged group cannot say, so each message is applied alone (each valid one
        // then counts once); the one that passes the bound alone is dead-lettered at once (an
        // hour's count only grows; a score comes back only if some later write lowers it, which
        // retries would wait for blindly), and the valid messages it was merged with are applied
        // rather than retried along with it.
        if (left.length > 1) {
          for (const e of left) await applyEntries([e]);
          return;
        }
        for (const e of left) {
          // what was tried: the message less any items that aged out, which went to the queue already
          dead.push({
            entry: e.msg,
            reason: bound,
            body: e.message === e.msg.body ? undefined : e.message,
          });
          ackCopies(e);
        }
        return;
      }
      if (!(error instanceof StorageUnavailableError))
        console.error(
          `ingest: a group failed and is retried: ${error instanceof Error ? error.message : String(error)}`,
        );
      for (const e of left) {
        for (const m of [e.msg, ...e.copies]) m.retry({ delaySeconds: retryDelaySeconds(m.attempts) });
        stats.retried += 1 + e.copies.length;
      }
    }
  };
  await Promise.all([...groups.values()].map(applyEntries));

  if (dead.length > 0) {
    if (options.deadLetter) {
      try {
        await options.deadLetter(dead.map((d) => ({ body: d.body ?? d.entry.body, reason: d.reason, id: d.entry.id })));
        for (const d of dead) d.entry.ack();
        stats.deadLettered += dead.length;
      } catch (error) {
        console.error(
          `ingest: dead-letter send failed, retrying: ${error instanceof Error ? error.message : String(error)}`,
        );
        for (const d of dead) d.entry.retry({ delaySeconds: retryDelaySeconds(d.entry.attempts) });
        stats.retried += dead.length;
      }
    } else {
      // no dead-letter producer bound: Queues moves them there after max_retries
      for (const d of dead) d.entry.retry({ delaySeconds: retryDelaySeconds(d.entry.attempts) });
      stats.retried += dead.length;
    }
    for (const d of dead) console.warn(`ingest: message ${d.entry.id} cannot be applied: ${d.reason}`);
  }

  try {
    await recordBatch(ctx, stats);
  } catch (error) {
    (
      options.onStatsError ??
      ((e: unknown) => console.error(`ingest: stats not recorded: ${e instanceof Error ? e.message : String(e)}`))
    )(error);
  }
  return stats;
}
