import type { Ctx } from "../context.ts";
import { ValidationError, type FieldIssue } from "../errors.ts";
import { runWrite, type Idempotency } from "../redis/script.ts";
import { HOUR, hourIndex } from "../time.ts";
import { MAX_BATCH, MAX_INCREMENT, memberProblem } from "../validation.ts";
import { isStandardWindow, registryKeys, STANDARD_WINDOWS, streamKeys } from "./keys.ts";
import { assertStream, horizonOf, MAX_FUTURE_MS, secondsUntil, type TrendingSettings } from "./options.ts";
import { recordScript } from "./scripts.ts";

export interface TrendingEvent {
  member: string;
  /** @default 1 */
  count?: number;
  /** Epoch ms of the event. @default ctx.now */
  at?: number;
}

export interface RecordOptions extends TrendingSettings {
  /** The request's Idempotency-Key record, if any. @default undefined */
  idempotency?: Idempotency;
  /** Field path of the list in the request body, for error details. @default "events" */
  listKey?: string;
}

/**
 * Checks every event before anything is written: a bad one rejects the batch.
 * An event must land in an hour some window can still read (≥ current hour −
 * horizon) and be at most 5 minutes in the future.
 */
export function checkEvents(ctx: Ctx, events: TrendingEvent[], options: RecordOptions): void {
  const listKey = options.listKey ?? "events";
  const at = (i: number, field: string) => (events.length === 1 ? field : `${listKey}.${i}.${field}`);
  const issues: FieldIssue[] = [];
  if (events.length < 1 || events.length > MAX_BATCH) issues.push({ path: listKey, message: `must hold 1..${MAX_BATCH} events` });
  const oldestHour = hourIndex(ctx.now) - horizonOf(options.retentionHours);
  events.forEach((event, i) => {
    const problem = typeof event.member === "string" ? memberProblem(event.member) : "must be a string";
    if (problem) issues.push({ path: at(i, "member"), message: problem });
    const count = event.count ?? 1;
    if (typeof count !== "number" || !Number.isFinite(count) || count <= 0 || count > MAX_INCREMENT) {
      issues.push({ path: at(i, "count"), message: `must be a finite number, 0 < count ≤ ${MAX_INCREMENT}` });
    }
    if (event.at !== undefined) {
      if (!Number.isInteger(event.at)) issues.push({ path: at(i, "at"), message: "must be epoch milliseconds" });
      else if (event.at > ctx.now + MAX_FUTURE_MS) issues.push({ path: at(i, "at"), message: "must be at most 5 minutes in the future" });
      else if (hourIndex(event.at) < oldestHour) {
        issues.push({ path: at(i, "at"), message: `must be within the retention (${horizonOf(options.retentionHours)} h)` });
      }
    }
  });
  const first = issues[0];
  if (first) throw new ValidationError(`Invalid field '${first.path}': ${first.message}.`, issues);
}

/**
 * A write whose clock says it is this close to the end of its hour also drops
 * the next hour's unions: another Worker (a clock a little ahead, or this
 * request's own latency) may already have built them without this write. The
 * same 5 minutes the service allows events from the future.
 */
export const HOUR_END_GUARD_MS = MAX_FUTURE_MS;

/** True in the last 5 minutes of the hour by this clock (HOUR_END_GUARD_MS). */
export function hourEnding(now: number): boolean {
  return (hourIndex(now) + 1) * HOUR - now <= HOUR_END_GUARD_MS;
}

/**
 * The cached unions a write makes stale: those of the current hour whose window
 * holds hour `earliest` (a late event's hour, so windows of `H - earliest` hours
 * and wider: the standard ones among them, and the shared slot, whatever width
 * it holds), and near the end of the hour the same for the next hour, whose
 * unions hold the current one. Deleting them is the whole invalidation: the next
 * read rebuilds. None when nothing is late and the hour is not ending.
 */
export function staleUnions(keys: ReturnType<typeof streamKeys>, now: number, earliest: number, retentionHours: number): string[] {
  const H = hourIndex(now);
  const horizon = horizonOf(retentionHours);
  const stale: string[] = [];
  for (const hour of hourEnding(now) ? [H, H + 1] : [H]) {
    const narrowest = Math.max(1, hour - earliest);
    if (earliest >= hour || narrowest > horizon) continue;
    for (const w of STANDARD_WINDOWS) if (w >= narrowest && w <= horizon) stale.push(keys.union(w, hour));
    // the slot serves every other width from narrowest to horizon
    let other = false;
    for (let w = narrowest; w <= horizon && !other; w++) other = !isStandardWindow(w);
    if (other) stale.push(keys.union(1, hour));
  }
  return stale;
}

/**
 * Adds events to their UTC hour buckets, in one script: ZINCRBY per (hour,
 * member) and one ZADD NX per hour; only a bucket's first write also sets its
 * EXPIRE and the registry and compaction queue; a late write (or one in the
 * hour's last 5 minutes) re-queues its hour; and one DEL of the cached unions
 * the write makes stale (see staleUnions). Returns how many events were accepted.
 */
export async function recordEvents(ctx: Ctx, stream: string, events: TrendingEvent[], options: RecordOptions): Promise<{ accepted: number; replayed: boolean }> {
  assertStream(stream);
  checkEvents(ctx, events, options);
  const keys = streamKeys(ctx.prefix, stream);
  // Sum duplicates first: a batch of 1,000 hits on one page is one ZINCRBY.
  const sums = new Map<number, Map<string, number>>();
  for (const event of events) {
    const hour = hourIndex(event.at ?? ctx.now);
    let members = sums.get(hour);
    if (!members) sums.set(hour, (members = new Map()));
    members.set(event.member, (members.get(event.member) ?? 0) + (event.count ?? 1));
  }
  const hours = [...sums.keys()].sort((a, b) => a - b);
  const stale = staleUnions(keys, ctx.now, hours[0] ?? 0, options.retentionHours);
  const reg = registryKeys(ctx.prefix);
  const bucketArgs = hours.flatMap((hour) => [hour, secondsUntil((hour + 1 + options.retentionHours) * HOUR, ctx.now)]);
  const incrArgs = hours.flatMap((hour, i) => [...(sums.get(hour) ?? [])].flatMap(([member, count]) => [i + 1, String(count), member]));
  const { replayed } = await runWrite<number>(
    ctx.redis,
    recordScript,
    [reg.names, reg.seen, reg.dirty, ...hours.map(keys.bucket), ...stale],
    // late for this clock, or ending: a compaction (whose clock may have passed the hour) may have
    // finished the hour already, so the queue gets it back although the bucket is not new
    [stream, hours.length, stale.length, (hours[0] ?? 0) < hourIndex(ctx.now) || hourEnding(ctx.now) ? 1 : 0, ...bucketArgs, ...incrArgs],
    options.idempotency,
  );
  return { accepted: events.length, replayed };
}
