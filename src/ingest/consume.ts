/**
 * The queue consumer's logic, free of Workers types: a batch of messages is
 * grouped by target (kind and name; consume-group.ts reads the batch), each group merged and
 * applied by one script (see scripts.ts), and every message acked or retried by what happened
 * to its own group. Groups run concurrently; a storage error in one retries
 * only its messages. What can never apply is dead-lettered by dead-letter.ts.
 */
import type { Ctx } from "../context.ts";
import { StorageUnavailableError } from "../errors.ts";
import { groupBatch, type Dead, type Entry, type Probe, type Split } from "./consume-group.ts";
import type { ConsumeOptions, QueuedMessage } from "./consume-types.ts";
import {
  boundRefusal,
  DEFAULT_MAX_RETRIES,
  isLastAttempt,
  retryDelaySeconds,
  settleDead,
  type Part,
} from "./dead-letter.ts";
import {
  applyGroup,
  findApplied,
  mayBeFromYesterday,
  recordBatch,
  type BatchStats,
  type DedupeId,
  type Pending,
} from "./ingest.ts";
import { idsOf, recordOf } from "./ids.ts";
import { planGroup, type IngestSettings } from "./plan.ts";
import { partOf } from "./validate.ts";

export { retryDelaySeconds };
export { MAX_GROUP_ITEMS } from "./consume-group.ts";
export type { ConsumeOptions, QueuedMessage } from "./consume-types.ts";

/** How often a group is planned again after its script found messages already applied (each pass drops at least one). */
const MAX_PASSES = 4;

/** Applies a batch; returns what it did (also added to the status counters). */
export async function consumeBatch(
  ctx: Ctx,
  messages: readonly QueuedMessage[],
  settings: IngestSettings,
  options: ConsumeOptions = {},
): Promise<BatchStats> {
  const stats: BatchStats = { applied: 0, events: 0, retried: 0, deadLettered: 0, duplicates: 0, oldestAgeMs: 0 };
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  /** Messages to dead-letter (acked once sent). */
  const dead: Dead[] = [];
  /** Aged-out parts of messages applied (or found applied) in this batch, not sent before: acked once sent. */
  const parts: Part[] = [];
  /** Messages whose group met a storage error on their last delivery: asked once more (review 17). */
  const lastChance: Probe[] = [];
  /**
   * Hands a message back to the queue; on its last delivery it is dead-lettered instead, with
   * `reason`, or, with its `dedupe` id, once the applied sets are asked whether its script
   * committed anyway (`split`: its part to send then).
   */
  const giveBack = (m: QueuedMessage, reason: string, dedupe?: DedupeId, split?: Split) => {
    if (isLastAttempt(m.attempts, maxRetries)) {
      const why = `${reason} (delivery ${m.attempts}, the last of max_retries ${maxRetries})`;
      if (dedupe) lastChance.push({ msg: m, dedupe, split, reason: why });
      else dead.push({ entry: m, reason: why });
      return;
    }
    m.retry({ delaySeconds: retryDelaySeconds(m.attempts) });
    stats.retried++;
  };
  const { groups, lookUps } = await groupBatch(ctx, messages, settings, stats, dead);
  const ackCopies = (e: Entry) => {
    for (const copy of e.copies) copy.ack();
    stats.duplicates += e.copies.length;
  };
  /**
   * Dead-letters the part of a message applied (acked once sent): the split's own when it was
   * applied now, else the one recorded `pending` under one of its `ids`; acks it when there is none.
   */
  const sendPart = (msg: QueuedMessage, split: Split | undefined, ids: string[], pending?: Pending) => {
    const out = pending
      ? ids
          .map((id) => pending[id])
          .find((v) => v !== undefined)
          ?.split(",")
          .map(Number)
      : split?.out;
    if (split && out) parts.push({ ...partOf(split.whole, out, split.reason), id: msg.id, entry: msg, marks: ids });
    else msg.ack();
  };
  /** Settles an entry its group applied (its own part) or found applied (the part still `pending`). */
  const settle = (e: Entry, pending?: Pending) => {
    ackCopies(e);
    sendPart(e.msg, e.part, idsOf(e.dedupe, e.alt), pending);
  };

  /** An entry's ids for its apply script and the applied sets' look-up. */
  const dedupeOfEntry = (e: Entry): DedupeId => ({
    id: e.dedupe,
    alt: e.alt,
    old: mayBeFromYesterday(e.dedupe, e.message.t, ctx.now),
    record: recordOf(ctx.prefix, e.message),
  });

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
          left.map(dedupeOfEntry),
          left.flatMap(({ part, dedupe, alt }) =>
            part ? idsOf(dedupe, alt).flatMap((id) => [id, part.out.join(",")]) : [],
          ),
        );
        if (result.applied) {
          for (const e of left) settle(e);
          stats.applied += left.length;
          stats.events += plan.items;
          return;
        }
        const done = new Set(result.duplicates);
        for (const e of left) {
          if (!done.has(e.dedupe)) continue;
          settle(e, result.pending);
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
          // the whole message (its aged-out items, if any, were not sent: it did not apply), marked
          // once sent: a keyed retry consumed after the score came down is then acked (review 21)
          const reason = e.part ? `${bound}; and ${e.part.reason}` : bound;
          dead.push({ entry: e.msg, reason, ids: idsOf(e.dedupe, e.alt) });
          ackCopies(e);
        }
        return;
      }
      const storage = error instanceof StorageUnavailableError;
      if (!storage)
        console.error(
          `ingest: a group failed and is retried: ${error instanceof Error ? error.message : String(error)}`,
        );
      // named by kind: Redis's own reply to the script (WRONGTYPE, a script bug) is no outage, and
      // "storage error" would send the operator to Upstash's status (review 25)
      const why = `${storage ? "storage error" : "error"}: ${error instanceof Error ? error.message : String(error)}`;
      const last = (m: QueuedMessage) => isLastAttempt(m.attempts, maxRetries);
      for (const e of left) {
        // On its last delivery with a copy that has deliveries left (a keyed retry), acked as its duplicate: the
        // copy, handed back, carries the request (review 19: dead-lettered, the copy applied it too). Not
        // with a part: only a message found applied that has one sends the part its script may have recorded.
        const carrier = last(e.msg) && !e.part ? e.copies.find((c) => !last(c)) : undefined;
        if (carrier) {
          e.msg.ack();
          stats.duplicates++;
        } else giveBack(e.msg, why, dedupeOfEntry(e), e.part);
        for (const copy of e.copies) {
          // a copy on its last delivery is settled by the message it copies (retried, or asked)
          if (last(copy)) {
            copy.ack();
            stats.duplicates++;
          } else giveBack(copy, why);
        }
      }
    }
  };
  /**
   * Acks the messages that can no longer apply but were applied already, after sending the part
   * their application left out if it is still pending (review 15); the others are dead.
   */
  const probeAll = async (list: Probe[]) => {
    if (list.length === 0) return;
    let found: Awaited<ReturnType<typeof findApplied>>;
    try {
      found = await findApplied(
        ctx,
        list.map((p) => p.dedupe),
      );
    } catch (error) {
      const why = `storage error: ${error instanceof Error ? error.message : String(error)}`;
      for (const p of list) {
        const reason = `${p.reason}; not known whether applied already (${why})`;
        // a last chance is not handed back again: it is dead-lettered, its reason saying it may have applied
        if (lastChance.includes(p)) dead.push({ entry: p.msg, reason, ids: idsOf(p.dedupe.id, p.dedupe.alt) });
        else giveBack(p.msg, reason);
      }
      return;
    }
    for (const p of list) {
      const ids = idsOf(p.dedupe.id, p.dedupe.alt);
      if (ids.some((id) => found.dup.includes(id))) {
        sendPart(p.msg, p.split, ids, found.pending);
        stats.duplicates++;
      }
      // marked applied once sent (settleDead): a copy in a later batch is then acked (review 17), also
      // of a last chance, which its copy would apply beside the dead-letter queue's (review 21)
      else dead.push({ entry: p.msg, reason: p.reason, ids });
    }
  };
  await Promise.all([...groups.map(applyEntries), probeAll(lookUps)]);
  // one more look-up, only when a group failed on a message's last delivery
  await probeAll(lastChance);
  await settleDead(ctx, options, dead, parts, maxRetries, stats);

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
