/**
 * Reading a queue batch, before anything is applied (consume.ts applies and settles what this
 * returns): each message is parsed and checked at the consumer's time, split from its items
 * that aged out while queued, matched with its copies in the batch (a keyed request and its
 * client's retries: either dedupe id) and put in its target's group, a target cut into groups of
 * at most its limit of merged entries; a message that can no longer apply at all is kept for the
 * applied sets' look-up unless a copy of it still applies.
 */
import type { Ctx } from "../context.ts";
import type { QueuedMessage } from "./consume-types.ts";
import type { BatchStats, DedupeId } from "./ingest.ts";
import { dedupeIdOf, idsOf } from "./ids.ts";
import { canonicalIdOf, type IngestMessage } from "./message.ts";
import { mergeKeys, type IngestSettings } from "./plan.ts";
import { parseMessage, problemOf, splitByProblem } from "./validate.ts";
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

/** A message in its target's group: of its copies in the batch, the one accepted first (the one applied). */
export interface Entry {
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
export interface Split {
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
export interface Probe {
  msg: QueuedMessage;
  dedupe: DedupeId;
  split: Split | undefined;
  reason: string;
}

/** A message to dead-letter (acked once sent), with the ids to mark applied then (dead-letter.ts, settleDead). */
export interface Dead {
  entry: QueuedMessage;
  reason: string;
  ids?: string[];
}

/**
 * A batch's messages by what happens next: `groups` (one script each, or a few passes of one) and
 * `lookUps` (messages that can no longer apply and have no copy in a group: asked whether they
 * were applied already, then acked or dead-lettered). A message that cannot be read is added to
 * `dead`; a copy of a message looked up is acked as a duplicate (counted in `stats`, as is each
 * message's age).
 */
export async function groupBatch(
  ctx: Ctx,
  messages: readonly QueuedMessage[],
  settings: IngestSettings,
  stats: BatchStats,
  dead: Dead[],
): Promise<{ groups: Entry[][]; lookUps: Probe[] }> {
  const probes: Probe[] = [];
  /** The probes by dedupe id and canonical id: a copy of one (a keyed retry) is acked as a duplicate. */
  const probed = new Map<string, Probe>();
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
  return { groups: [...groups.values()], lookUps };
}
