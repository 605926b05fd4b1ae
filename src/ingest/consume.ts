/**
 * The queue consumer's logic, free of Workers types: a batch of messages is
 * grouped by target (kind and name), each group merged and applied by one
 * script (see scripts.ts), and every message acked or retried by what happened
 * to its own group. Groups run concurrently; a storage error in one retries
 * only its messages.
 */
import type { Ctx } from "../context.ts";
import { StorageUnavailableError } from "../errors.ts";
import {
  boundRefusal,
  DEFAULT_MAX_RETRIES,
  isLastAttempt,
  retryDelaySeconds,
  settleDead,
  type Part,
} from "./dead-letter.ts";

export { retryDelaySeconds };
export type { ConsumeOptions, QueuedMessage } from "./consume-types.ts";
import type { ConsumeOptions, QueuedMessage } from "./consume-types.ts";
import {
  applyGroup,
  findApplied,
  mayBeFromYesterday,
  recordBatch,
  type BatchStats,
  type DedupeId,
  type Pending,
} from "./ingest.ts";
import { dedupeIdOf, idsOf, recordOf } from "./ids.ts";
import { canonicalIdOf, type IngestMessage } from "./message.ts";
import { mergeKeys, planGroup, type IngestSettings } from "./plan.ts";
import { parseMessage, partOf, problemOf, splitByProblem } from "./validate.ts";
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

/** How often a group is planned again after its script found messages already applied (each pass drops at least one). */
const MAX_PASSES = 4;

interface Entry {
  msg: QueuedMessage;
  message: IngestMessage;
  dedupe: string;
  /** The id it also goes by (`canonicalIdOf`: a keyed message of this version), the same for a re-serialized retry. */
  alt: string | undefined;
  /** Other copies of this message in the batch (a client's retries with the same Idempotency-Key; also those that can no longer apply). */
  copies: QueuedMessage[];
  /** Its items that aged out while queued (see Split), if any. */
  part: Split | undefined;
}

/**
 * A message split by the items that aged out while queued (`out`, by index; `reason` the
 * message's problem). Its group's script records the part with the rest's write
 * (the parts hash); the part is dead-lettered after that, the message acked once it is sent and
 * the record deleted then (ingest.markParts). A redelivery (a lost ack or answer, a failed send)
 * found applied sends the part recorded, if still there, not its own split: items applied since
 * aged out are not sent, and a part not sent is sent, also when the rest aged out too (review 15;
 * review 14: sent once per delivery before).
 */
interface Split {
  whole: IngestMessage;
  out: number[];
  reason: string;
}

/**
 * A message to dead-letter unless the applied sets hold it: one that can no longer apply (a
 * redelivery may find it applied), or one whose group met a storage error on its last delivery
 * (the script may have committed before its answer was lost; review 17). `split`: the items it
 * left out (the part to send when found applied), if any; `reason`: why it is dead-lettered.
 */
interface Probe {
  msg: QueuedMessage;
  dedupe: DedupeId;
  split: Split | undefined;
  reason: string;
}

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
  const dead: { entry: QueuedMessage; reason: string; ids?: string[] }[] = [];
  /** Aged-out parts of messages applied (or found applied) in this batch, not sent before: acked once sent. */
  const parts: Part[] = [];
  const probes: Probe[] = [];
  /** The probes by dedupe id and canonical id: a copy of one (a keyed retry) is acked as a duplicate. */
  const probed = new Map<string, Probe>();
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
    let part: Entry["part"];
    const problem = await problemOf(parsed, ctx.prefix, ctx.now, settings);
    if (problem !== null) {
      const { valid, out } = await splitByProblem(parsed, ctx.prefix, ctx.now, settings);
      const split = { whole: parsed, out, reason: problem };
      if (valid === null) {
        // Its items may have aged out after it was applied (a redelivery: a lost ack or answer):
        // the applied sets are asked before it is dead-lettered (review 14). A copy of a message
        // probed already (a keyed retry: either id) is acked as a duplicate: the first carries
        // the request to the dead-letter queue once (review 17: each copy was sent, and counted
        // twice once re-POSTed), or is retried with its reason.
        const dedupe = dedupeIdOf(ctx.prefix, ctx.now, msg.id, parsed);
        if (idsOf(dedupe.id, dedupe.alt).some((id) => probed.has(id))) {
          msg.ack();
          stats.duplicates++;
          continue;
        }
        const probe = { msg, split, dedupe, reason: problem };
        probes.push(probe);
        for (const id of idsOf(dedupe.id, dedupe.alt)) probed.set(id, probe);
        continue;
      }
      // Some items aged out while queued: the rest applies (under the message's dedupe id: once,
      // however often this runs), then they go to the dead-letter queue unless sent already;
      // nothing is sent on a storage error (review 14: sent on every delivery before).
      part = split;
      message = valid;
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
        Object.assign(first, { msg, message, dedupe, alt, part });
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
    const entry: Entry = { msg, message, dedupe, alt, copies: [], part };
    chunkOf.set(entry, chunk.entries);
    firsts.set(dedupe, entry);
    if (alt !== undefined) firsts.set(alt, entry);
    group.push(entry);
  }
  // A message that can no longer apply whose copy in the batch still can (a keyed request stamped
  // before its client's retry: its bucket or hour aged out while queued, the retry's did not) is
  // that copy's: settled with it, not looked up (review 19: the look-up ran beside the copy's
  // script and missed it, so the request was applied and dead-lettered, counted twice once re-POSTed).
  const lookUps = probes.filter((p) => {
    const entry = idsOf(p.dedupe.id, p.dedupe.alt)
      .map((id) => firsts.get(id))
      .find((e) => e !== undefined);
    entry?.copies.push(p.msg);
    return entry === undefined;
  });
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
      if (!(error instanceof StorageUnavailableError))
        console.error(
          `ingest: a group failed and is retried: ${error instanceof Error ? error.message : String(error)}`,
        );
      const why = `storage error: ${error instanceof Error ? error.message : String(error)}`;
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
  await Promise.all([...[...groups.values()].map(applyEntries), probeAll(lookUps)]);
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
