/**
 * Applying planned groups: one script per target, exactly once per message.
 *
 * The script wraps the library's own write script (its whole text, idempotency
 * prelude included, run with an empty idempotency key as the synchronous path
 * does without one) in a dedupe step: SMISMEMBER of the group's dedupe ids in
 * today's and yesterday's applied sets; if any was applied already the script
 * writes nothing and says which, and the consumer plans the group again
 * without them; otherwise it runs every library call of the group, then SADDs
 * the ids to today's set (EXPIRE NX: the set lives to the end of tomorrow).
 * Write and record are one atomic script, so a message is recorded exactly
 * when its counts were added, and a redelivery within 24 h of its application
 * (in whatever batch composition) is found: it lands in today's set or
 * yesterday's.
 */
import type { Ctx } from "../context.ts";
import { defineReadScript, defineWriteScript, runRead, runWrite, type Script } from "../redis/script.ts";
import { DAY, HOUR, MINUTE, SECOND, dayStart, hourIndex } from "../time.ts";
import { ingestKeys } from "./keys.ts";
import type { IngestKind } from "./message.ts";
import { LIBRARY_SCRIPTS, type GroupPlan } from "./plan.ts";

/**
 * KEYS: applied today, applied yesterday, then each call's keys.
 * ARGV: nIds, nOld, set ttl (s), nCalls, id × nIds (the nOld that may have been applied yesterday first),
 *   (nKeys, nArgs) × nCalls, then each call's args.
 * Returns { applied = nIds } or { duplicates = {id...} } (nothing written).
 */
function wrap(kind: IngestKind, library: Script): Script {
  // the library script minus its shebang line, as a function of its own KEYS and ARGV
  const text = library.text.split("\n").slice(1).join("\n");
  // runRead only means "evaluate and parse": this script writes, without a prelude of its own
  return defineReadScript(
    `ingest-${kind}`,
    `
local today, yesterday = KEYS[1], KEYS[2]
local nIds, nOld       = tonumber(ARGV[1]), tonumber(ARGV[2])
local setTtl           = ARGV[3]
local nCalls           = tonumber(ARGV[4])
local ids              = {}
for i = 1, nIds do ids[i] = ARGV[4 + i] end
-- a redelivered message (or a client's retry with the same Idempotency-Key) was recorded today,
-- or yesterday: only the first nOld (accepted before today, or keyed by an Idempotency-Key) can have been
local seen = redis.call('SMISMEMBER', today, unpack(ids))
if nOld > 0 then
  local before = redis.call('SMISMEMBER', yesterday, unpack(ids, 1, nOld))
  for i = 1, nOld do
    if before[i] == 1 then seen[i] = 1 end
  end
end
local dup = {}
for i = 1, nIds do
  if seen[i] == 1 then dup[#dup + 1] = ids[i] end
end
if #dup > 0 then return cjson.encode({ duplicates = dup }) end
local function library(KEYS, ARGV)
${text}
end
local k, at = 3, 5 + nIds + 2 * nCalls
for c = 1, nCalls do
  local nk, na       = tonumber(ARGV[3 + nIds + 2 * c]), tonumber(ARGV[4 + nIds + 2 * c])
  local keys, argv   = {}, {}
  for i = 1, nk do keys[i] = KEYS[k + i - 1] end
  for i = 1, na do argv[i] = ARGV[at + i - 1] end
  k, at = k + nk, at + na
  library(keys, argv)
end
-- recorded in the same script as the write: applied exactly when recorded
redis.call('SADD', today, unpack(ids))
redis.call('EXPIRE', today, setTtl, 'NX')
return cjson.encode({ applied = nIds })
`,
  );
}

export const APPLY_SCRIPTS: Record<IngestKind, Script> = {
  trending: wrap("trending", LIBRARY_SCRIPTS.trending),
  counters: wrap("counters", LIBRARY_SCRIPTS.counters),
  presence: wrap("presence", LIBRARY_SCRIPTS.presence),
};

/** Seconds today's applied set lives: to the end of tomorrow, so a redelivery within 24 h always finds it. */
export function appliedTtlSeconds(now: number): number {
  return Math.ceil((dayStart(now) + 2 * DAY - now) / SECOND);
}

/**
 * Producer and consumer clocks may differ by this much: a message accepted
 * (by its producer's clock) this long after the consumer's midnight cannot
 * have been applied before it.
 */
export const CLOCK_SKEW_MS = 5 * MINUTE;

/** A message's dedupe id, and whether it may have been applied yesterday (so yesterday's set must be asked too). */
export interface DedupeId {
  id: string;
  /** Accepted before today (+ skew), or an Idempotency-Key id (a retry may come any time within 24 h). */
  old: boolean;
}

/** Whether a message accepted at `t` with dedupe id `id` may have been applied before the consumer's today. */
export function mayBeFromYesterday(id: string, t: number, now: number): boolean {
  return id.startsWith("i:") || t < dayStart(now) + CLOCK_SKEW_MS;
}

/** Applies a planned group whose messages have the dedupe ids `ids`: applied, or the ids already applied (then nothing was written). */
export async function applyGroup(ctx: Ctx, plan: GroupPlan, dedupe: DedupeId[]): Promise<{ applied: true } | { applied: false; duplicates: string[] }> {
  const ids = [...dedupe.filter((d) => d.old), ...dedupe.filter((d) => !d.old)].map((d) => d.id);
  const nOld = dedupe.filter((d) => d.old).length;
  const keys = [ingestKeys.applied(ctx.prefix, ctx.now), ingestKeys.applied(ctx.prefix, ctx.now - DAY), ...plan.calls.flatMap((c) => c.keys)];
  const args = [ids.length, nOld, appliedTtlSeconds(ctx.now), plan.calls.length, ...ids, ...plan.calls.flatMap((c) => [c.keys.length, c.args.length]), ...plan.calls.flatMap((c) => c.args)];
  const result = await runRead<{ applied?: number; duplicates?: string[] }>(ctx.redis, APPLY_SCRIPTS[plan.kind], keys, args);
  if (result.duplicates) return { applied: false, duplicates: result.duplicates };
  return { applied: true };
}

/** What one consumer batch did, for the status counters. */
export interface BatchStats {
  /** Messages applied (acked after their group's script). */
  applied: number;
  /** Items (events, increments, ids) those messages carried. */
  events: number;
  /** Messages handed back to the queue (storage error, or a second copy in the same batch). */
  retried: number;
  /** Messages sent to the dead-letter queue. */
  deadLettered: number;
  /** Messages acked without writing: already applied (redelivery, or a repeated Idempotency-Key). */
  duplicates: number;
  /** Largest age (consumer's time − accept time, ms) of a message in the batch. */
  oldestAgeMs: number;
}

/** Seconds a stats hash lives: its hour and the next, so "the last hour" can always be read. */
const STATS_TTL_SECONDS = (3 * HOUR) / SECOND;

/**
 * KEYS: stats hash of the hour. ARGV: minute, now, applied, events, retried, deadLettered, duplicates, age, ttl.
 * Per-minute fields `<minute>:a|e|r|d|u` (sums) and `<minute>:g` (largest age seen), and `last` (latest batch time).
 */
const STATS = defineWriteScript(
  "ingest-stats",
  `
local key, minute = KEYS[1], ARGV[1]
local fields      = { 'a', 'e', 'r', 'd', 'u' }
for i, f in ipairs(fields) do
  local n = tonumber(ARGV[2 + i])
  if n > 0 then redis.call('HINCRBY', key, minute .. ':' .. f, n) end
end
-- the largest age this minute: the lag the status reports
local age = tonumber(ARGV[8])
local was = tonumber(redis.call('HGET', key, minute .. ':g') or '-1')
if age > was then
  redis.call('HSET', key, minute .. ':g', age, 'last', ARGV[2])
else
  redis.call('HSET', key, 'last', ARGV[2])
end
redis.call('EXPIRE', key, ARGV[9], 'NX')
return 1
`,
);

/** Adds a batch's figures to the per-minute counters (one script per batch). */
export async function recordBatch(ctx: Ctx, stats: BatchStats): Promise<void> {
  await runWrite(ctx.redis, STATS, [ingestKeys.stats(ctx.prefix, hourIndex(ctx.now))], [
    Math.floor(ctx.now / MINUTE),
    ctx.now,
    stats.applied,
    stats.events,
    stats.retried,
    stats.deadLettered,
    stats.duplicates,
    Math.max(0, Math.round(stats.oldestAgeMs)),
    STATS_TTL_SECONDS,
  ]);
}

/** KEYS: stats hash of this hour and of the previous one. Returns both as flat field/value lists. */
const READ_STATS = defineReadScript(
  "ingest-status",
  `
return cjson.encode({ redis.call('HGETALL', KEYS[1]), redis.call('HGETALL', KEYS[2]) })
`,
);

export interface IngestStatus {
  /** Age of the oldest message the consumer saw in the last 2 minutes, at the time it saw it (0 when it saw none). */
  oldestAgeMs: number;
  /** Messages applied in the last hour. */
  applied: number;
  /** Messages handed back to the queue in the last hour. */
  retried: number;
  /** Messages sent to the dead-letter queue in the last hour. */
  deadLettered: number;
  /** Items (events, increments, ids) applied in the last hour. */
  events: number;
  /** Messages acked as already applied in the last hour. */
  duplicates: number;
  /** When the consumer last finished a batch (epoch ms), null when not within the last hour or two. */
  lastBatchAt: number | null;
}

/** The consumer's figures for the last 60 minutes (this one included); one script, 3 commands. */
export async function ingestStatus(ctx: Ctx): Promise<IngestStatus> {
  const H = hourIndex(ctx.now);
  const raw = await runRead<[string[] | Record<string, never>, string[] | Record<string, never>]>(ctx.redis, READ_STATS, [
    ingestKeys.stats(ctx.prefix, H),
    ingestKeys.stats(ctx.prefix, H - 1),
  ]);
  const now = Math.floor(ctx.now / MINUTE);
  const status: IngestStatus = { oldestAgeMs: 0, applied: 0, retried: 0, deadLettered: 0, events: 0, duplicates: 0, lastBatchAt: null };
  const sums: Record<string, keyof IngestStatus> = { a: "applied", r: "retried", d: "deadLettered", e: "events", u: "duplicates" };
  for (const flat of raw) {
    if (!Array.isArray(flat)) continue;
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const field = flat[i] ?? "";
      const value = Number(flat[i + 1]);
      if (field === "last") {
        status.lastBatchAt = Math.max(status.lastBatchAt ?? 0, value);
        continue;
      }
      const [minuteText, kind] = field.split(":");
      const minute = Number(minuteText);
      if (!(minute > now - 60 && minute <= now) || !kind) continue;
      if (kind === "g") {
        if (minute >= now - 1) status.oldestAgeMs = Math.max(status.oldestAgeMs, value);
      } else {
        const name = sums[kind];
        if (name) (status[name] as number) += value;
      }
    }
  }
  return status;
}
