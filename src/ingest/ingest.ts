/**
 * Operations of queued ingest on Redis: applying a planned group exactly once (the dedupe ids
 * and the apply script, see scripts.ts), and the consumer's per-minute figures and their status.
 */
import type { Ctx } from "../context.ts";
import { DAY, HOUR, MINUTE, SECOND, dayStart, hourIndex } from "../time.ts";
import { ingestKeys } from "./keys.ts";
import type { GroupPlan } from "./plan.ts";
import { appliedScript, applyScripts, markPartsScript, recordBatchScript, statusScript } from "./scripts.ts";

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
  /** The id a keyed message also goes by (its canonical JSON digest's: `canonicalIdOf`); found or recorded, either is the message. */
  alt?: string | undefined;
  /** Accepted before today (+ skew), or an Idempotency-Key id (a retry may come any time within 24 h). */
  old: boolean;
  /**
   * An Idempotency-Key id's synchronous record: its key, the body's fingerprint and canonical JSON
   * digest ('' from a producer before it), the request's id and acceptance time.
   */
  record?: { key: string; fingerprint: string; canonical: string; requestId: string; acceptedAt: number } | undefined;
}

/**
 * Seconds the record a queued keyed request leaves lives: the Idempotency-Key window and an hour,
 * so a retry sent within 24 h of the first request is found when the queue runs up to an hour
 * behind (10 retries back off for about 10 minutes in all), also after the applied sets holding
 * the first have expired (they live to the end of the day after its application).
 */
const RECORD_TTL_SECONDS = (DAY + HOUR) / SECOND;

/** Whether a message accepted at `t` with dedupe id `id` may have been applied before the consumer's today. */
export function mayBeFromYesterday(id: string, t: number, now: number): boolean {
  return id.startsWith("i:") || t < dayStart(now) + CLOCK_SKEW_MS;
}

/** Today's and yesterday's hash of aged-out parts not dead-lettered yet (by dedupe id: their item indexes). */
const partsKeys = (ctx: Ctx) => ({
  partsToday: ingestKeys.parts(ctx.prefix, ctx.now),
  partsYesterday: ingestKeys.parts(ctx.prefix, ctx.now - DAY),
});

/** Item indexes of a part as the parts hash holds them (`0,3`; undefined when none is held). */
export type Pending = Record<string, string>;

/** The keys and arguments of the dedupe step (scripts.ts, DEDUPE_LUA) for the messages `dedupe`. */
function dedupeParams(ctx: Ctx, dedupe: DedupeId[]) {
  const old = dedupe.filter((d) => d.old);
  const ordered = [...old, ...dedupe.filter((d) => !d.old)];
  const keyed = ordered.flatMap((d, i) => (d.record ? [{ at: i + 1, alt: d.alt ?? "", ...d.record }] : []));
  return {
    keys: {
      today: ingestKeys.applied(ctx.prefix, ctx.now),
      yesterday: ingestKeys.applied(ctx.prefix, ctx.now - DAY),
      ...partsKeys(ctx),
      records: keyed.map((k) => k.key),
    },
    args: {
      nOld: old.length,
      // the ones that may have been applied yesterday first: the script asks yesterday's set about those only
      ids: ordered.map((d) => d.id),
      keyed: keyed.map((k) => k.at),
      fingerprints: keyed.map((k) => k.fingerprint),
      canonicals: keyed.map((k) => k.canonical),
      altIds: keyed.map((k) => k.alt),
      requestIds: keyed.map((k) => k.requestId),
      acceptedAts: keyed.map((k) => k.acceptedAt),
    },
  };
}

/**
 * Applies a planned group whose messages have the dedupe ids `ids`, recording the aged-out parts
 * they leave out (`parts`: an id or alt id, then the items' indexes, and so on): applied, or the
 * ids already applied (then nothing was written) with the parts of `parts` still pending.
 */
export async function applyGroup(
  ctx: Ctx,
  plan: GroupPlan,
  dedupe: DedupeId[],
  parts: string[] = [],
): Promise<{ applied: true } | { applied: false; duplicates: string[]; pending: Pending }> {
  const { keys, args } = dedupeParams(ctx, dedupe);
  const result = await applyScripts[plan.kind].run<{ applied?: number; duplicates?: string[]; pending?: Pending }>(
    ctx.redis,
    { ...keys, callKeys: plan.calls.flatMap((c) => c.keys) },
    {
      ...args,
      setTtl: appliedTtlSeconds(ctx.now),
      recordTtl: RECORD_TTL_SECONDS,
      keyCounts: plan.calls.map((c) => c.keys.length),
      argCounts: plan.calls.map((c) => c.args.length),
      callArgs: plan.calls.flatMap((c) => c.args),
      parts,
    },
  );
  if (result.duplicates) return { applied: false, duplicates: result.duplicates, pending: result.pending ?? {} };
  return { applied: true };
}

/**
 * Records what was dead-lettered: aged-out parts (deletes their records under `ids`) and messages
 * sent whole (adds their ids, `dead`, to today's applied set): a redelivery or a copy then sends
 * none again.
 */
export async function markParts(ctx: Ctx, ids: string[], dead: string[] = []): Promise<void> {
  if (ids.length === 0 && dead.length === 0) return;
  await markPartsScript.run(
    ctx.redis,
    { today: ingestKeys.applied(ctx.prefix, ctx.now), ...partsKeys(ctx) },
    { setTtl: appliedTtlSeconds(ctx.now), ids, dead },
  );
}

/**
 * The dedupe ids of `dedupe` that were applied already (the apply scripts' own check; writes
 * nothing), and the parts their application left out that are not sent yet: one script, asked
 * only about messages that can no longer apply, before they are dead-lettered.
 */
export async function findApplied(ctx: Ctx, dedupe: DedupeId[]): Promise<{ dup: string[]; pending: Pending }> {
  const { keys, args } = dedupeParams(ctx, dedupe);
  const found = await appliedScript.run<{ dup: string[] | Record<string, never>; pending: Pending }>(
    ctx.redis,
    keys,
    args,
  );
  return { dup: Array.isArray(found.dup) ? found.dup : [], pending: found.pending };
}

/** What one consumer batch did, for the status counters. */
export interface BatchStats {
  /** Messages applied (acked after their group's script). */
  applied: number;
  /** Items (events, increments, ids) those messages carried. */
  events: number;
  /** Messages handed back to the queue (storage error; a copy of such a message in the batch too). */
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

/** Adds a batch's figures to the per-minute counters (one script per batch). */
export async function recordBatch(ctx: Ctx, stats: BatchStats): Promise<void> {
  await recordBatchScript.run(
    ctx.redis,
    { stats: ingestKeys.stats(ctx.prefix, hourIndex(ctx.now)) },
    {
      minute: Math.floor(ctx.now / MINUTE),
      now: ctx.now,
      applied: stats.applied,
      events: stats.events,
      retried: stats.retried,
      deadLettered: stats.deadLettered,
      duplicates: stats.duplicates,
      age: Math.max(0, Math.round(stats.oldestAgeMs)),
      ttl: STATS_TTL_SECONDS,
    },
  );
}

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
export async function status(ctx: Ctx): Promise<IngestStatus> {
  const H = hourIndex(ctx.now);
  const raw = await statusScript.run<[string[] | Record<string, never>, string[] | Record<string, never>]>(
    ctx.redis,
    { thisHour: ingestKeys.stats(ctx.prefix, H), previousHour: ingestKeys.stats(ctx.prefix, H - 1) },
    {},
  );
  const now = Math.floor(ctx.now / MINUTE);
  const result: IngestStatus = {
    oldestAgeMs: 0,
    applied: 0,
    retried: 0,
    deadLettered: 0,
    events: 0,
    duplicates: 0,
    lastBatchAt: null,
  };
  const sums: Record<string, keyof IngestStatus> = {
    a: "applied",
    r: "retried",
    d: "deadLettered",
    e: "events",
    u: "duplicates",
  };
  for (const flat of raw) {
    if (!Array.isArray(flat)) continue;
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const field = flat[i] ?? "";
      const value = Number(flat[i + 1]);
      if (field === "last") {
        result.lastBatchAt = Math.max(result.lastBatchAt ?? 0, value);
        continue;
      }
      const [minuteText, kind] = field.split(":");
      const minute = Number(minuteText);
      if (!(minute > now - 60 && minute <= now) || !kind) continue;
      if (kind === "g") {
        if (minute >= now - 1) result.oldestAgeMs = Math.max(result.oldestAgeMs, value);
      } else {
        const name = sums[kind];
        if (name) (result[name] as number) += value;
      }
    }
  }
  return result;
}
