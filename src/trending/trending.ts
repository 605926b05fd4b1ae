import type { Ctx } from "../context.ts";
import { asList, type Idempotency, type Written } from "../redis/script.ts";
import { HOUR, hourIndex } from "../time.ts";
import { assertName, invalid } from "../validation.ts";
import { isStandardWindow, registryKeys, secondsUntil, STANDARD_WINDOWS, streamKeys } from "./keys.ts";
import {
  listScript,
  MEMBER_RANK_DEPTH,
  memberScript,
  TA_FIRST_DEPTH,
  TA_MAX_DEPTH,
  TA_MERGE_MAX,
  topScript,
} from "./read-scripts.ts";
import { recordScript } from "./scripts.ts";
import {
  assertDepths,
  assertMember,
  assertStream,
  assertTopN,
  assertWindow,
  checkEvents,
  defaultWindowOf,
  horizonOf,
  hourCountRefusal,
  MAX_FUTURE_MS,
  MAX_LISTED,
  type TrendingEvent,
  type TrendingSettings,
} from "./validate.ts";

/* ----------------------------------------------------------------------------------------------
 * Writes
 * -------------------------------------------------------------------------------------------- */

export interface RecordOptions extends TrendingSettings {
  /** The request's Idempotency-Key record, if any. @default undefined */
  idempotency?: Idempotency;
  /** Field path of the list in the request body, for error details. @default "events" */
  listKey?: string;
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
 * holds one of the `written` hours (a late event's hour h, so windows of `H - h`
 * hours and wider: the standard ones among them, and the shared slot, whatever
 * width it holds), and near the end of the hour the same for the next hour, whose
 * unions hold the current one; in the first 5 minutes of the hour the same for the
 * previous hour, which a reader whose clock is a little behind still reads (review
 * 21: it missed the event until its clock turned; the write is late for H then, so
 * its UNLINK only takes more keys). Deleting them is the whole invalidation: the next
 * read rebuilds. None when nothing is late and the hour is not ending.
 * The narrowest stale window is set by the *latest* written hour before the
 * union's: a batch 30 h and 2 h late makes every window of 2 h or more stale (it
 * was set by the earliest, which left the 24 h union without the 2 h late event
 * until the hour ended; found in review 3).
 */
export function staleUnions(
  keys: ReturnType<typeof streamKeys>,
  now: number,
  written: readonly number[],
  retentionHours: number,
): string[] {
  const H = hourIndex(now);
  const horizon = horizonOf(retentionHours);
  const stale: string[] = [];
  for (const hour of [H - 1, H, H + 1]) {
    if (hour < H ? now - H * HOUR >= HOUR_END_GUARD_MS : hour > H && !hourEnding(now)) continue;
    let latest = -Infinity;
    for (const h of written) if (h < hour && h > latest) latest = h;
    const narrowest = Math.max(1, hour - latest);
    if (latest === -Infinity || narrowest > horizon) continue;
    for (const w of STANDARD_WINDOWS) if (w >= narrowest && w <= horizon) stale.push(keys.union(w, hour));
    // the slot serves every other width from narrowest to horizon
    let other = false;
    for (let w = narrowest; w <= horizon && !other; w++) other = !isStandardWindow(w);
    if (other) stale.push(keys.union(1, hour));
  }
  return stale;
}

/**
 * Adds events to their UTC hour buckets, in one script: one ZMSCORE per hour
 * (the bucket's sentinel and the members' counts, checked against
 * MAX_HOUR_COUNT before anything is written), then ZINCRBY per (hour, member),
 * or one ZADD for a new bucket; only a bucket's first write also sets its
 * EXPIRE and the registry and compaction queue; a late write (or one in the
 * hour's last 5 minutes) re-queues its hour; and one DEL of the cached unions
 * the write makes stale (see staleUnions). Returns how many events were accepted.
 */
export async function record(
  ctx: Ctx,
  stream: string,
  events: TrendingEvent[],
  options: RecordOptions,
): Promise<Written<{ accepted: number }>> {
  assertStream(stream);
  checkEvents(ctx, events, options.retentionHours, options.listKey);
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
  const increments = hours.flatMap((hour, i) =>
    [...(sums.get(hour) ?? [])].map(([member, count]) => ({ slot: i + 1, hour, count: String(count), member })),
  );
  const reg = registryKeys(ctx.prefix);
  const { replayed } = await recordScript
    .run(
      ctx.redis,
      {
        names: reg.names,
        seen: reg.seen,
        dirty: reg.dirty,
        buckets: hours.map(keys.bucket),
        stale: staleUnions(keys, ctx.now, hours, options.retentionHours),
      },
      {
        stream,
        // late for this clock, or ending: a compaction (whose clock may have passed the hour) may have
        // finished the hour already, so the queue gets it back although the bucket is not new
        requeue: (hours[0] ?? 0) < hourIndex(ctx.now) || hourEnding(ctx.now) ? 1 : 0,
        hours,
        ttls: hours.map((hour) => secondsUntil((hour + 1 + options.retentionHours) * HOUR, ctx.now)),
        slots: increments.map((i) => i.slot),
        counts: increments.map((i) => i.count),
        members: increments.map((i) => i.member),
      },
      options.idempotency,
    )
    .catch((error: unknown) => {
      throw hourCountRefusal(error, events, ctx.now, increments, options.listKey);
    });
  return { accepted: events.length, replayed };
}

/* ----------------------------------------------------------------------------------------------
 * Reads
 * -------------------------------------------------------------------------------------------- */

export interface WindowInfo {
  /** Whole finished hours in the window (the current hour comes on top). */
  hours: number;
  /** Start of the oldest hour read, epoch ms (inclusive). */
  from: number;
  /** End of the current hour, epoch ms (exclusive). */
  to: number;
}

export interface TopItem {
  rank: number;
  member: string;
  count: number;
}

export interface TopResult {
  stream: string;
  window: WindowInfo;
  items: TopItem[];
  /**
   * True when no trimming touched the window: the items are the true top N with true counts.
   * False too (with counts still exact) when a boundary tie too big to merge left open which tied members rank first.
   */
  exact: boolean;
  /** Every reported count is at most this much below the true one; any missing member's true count is at most the N-th count + this. */
  maxError: number;
  /** True when the set and order are proven despite trimming (gaps between counts exceed maxError); counts may still be low by up to maxError. */
  topProven: boolean;
  /** When the answer was computed, epoch ms. */
  generatedAt: number;
}

export interface TopOptions extends TrendingSettings {
  /** Items to return, 1..100. @default 10 */
  n?: number;
  /** Finished hours before the current one, 1..min(retention, 168). @default 24 (the retention if shorter) */
  windowHours?: number;
  /** Top-N only: depth of the threshold read's first round (at least n + 1 is used), 1..2048. @default 256 */
  firstDepth?: number;
  /** Top-N only: deepest page of the threshold read before it merges instead, 1..2048. @default 1024 */
  maxDepth?: number;
  /** Top-N only: most members the fallback merges; beyond, the answer's maxError widens instead. @default 100000 */
  mergeMax?: number;
}

/** Byte order of UTF-8, the order Redis gives equal scores. */
const encoder = new TextEncoder();
export function compareBytes(a: string, b: string): number {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  const len = Math.min(x.length, y.length);
  for (let i = 0; i < len; i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

/** The hours a window covers at `now` and the keys that read them. */
function windowPlan(ctx: Ctx, stream: string, windowHours: number) {
  const H = hourIndex(ctx.now);
  const keys = streamKeys(ctx.prefix, stream);
  const hours = Array.from({ length: windowHours }, (_, i) => H - windowHours + i);
  return {
    window: { hours: windowHours, from: (H - windowHours) * HOUR, to: (H + 1) * HOUR },
    keys: {
      union: keys.union(windowHours, H),
      current: keys.bucket(H),
      scratch: keys.scratch,
      dirty: registryKeys(ctx.prefix).dirty,
      buckets: hours.map(keys.bucket),
    },
    H,
    // the shared slot records the width it holds; a standard window's key says it already
    width: isStandardWindow(windowHours) ? 0 : windowHours,
    // the union stands for hour H only; the next hour has a new one
    ttl: secondsUntil((H + 1) * HOUR, ctx.now),
  };
}

/** Top N members over the window's finished hours plus the current hour: one script. */
export async function top(ctx: Ctx, stream: string, options: TopOptions): Promise<TopResult> {
  assertStream(stream);
  const n = options.n ?? 10;
  const windowHours = options.windowHours ?? defaultWindowOf(options.retentionHours);
  assertTopN(n);
  assertWindow(windowHours, options.retentionHours);
  const firstDepth = options.firstDepth ?? TA_FIRST_DEPTH;
  const maxDepth = options.maxDepth ?? TA_MAX_DEPTH;
  assertDepths({ firstDepth, maxDepth });
  const plan = windowPlan(ctx, stream, windowHours);
  const raw = await topScript.run<{
    maxError: string;
    items: string[] | Record<string, never>;
    next: string;
    unproven?: boolean;
  }>(ctx.redis, plan.keys, {
    n,
    ttl: plan.ttl,
    firstDepth,
    maxDepth,
    width: plan.width,
    stream,
    H: plan.H,
    mergeMax: options.mergeMax ?? TA_MERGE_MAX,
  });
  const flat = asList(raw.items);
  const ranked: { member: string; count: number }[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) ranked.push({ member: flat[i] ?? "", count: Number(flat[i + 1]) });
  ranked.sort((a, b) => b.count - a.count || compareBytes(a.member, b.member));
  const maxError = Number(raw.maxError);
  const items = ranked.slice(0, n).map((item, i) => ({ rank: i + 1, ...item }));
  // The script stops as soon as the top N is settled: a member it did not return
  // counts at most its threshold `next` (0 when it saw every member).
  const nextCount = Math.max(ranked[n]?.count ?? 0, Number(raw.next));
  return {
    stream,
    window: plan.window,
    items,
    // unproven: a tie too big to merge left the order among members tied at the boundary open
    exact: maxError === 0 && raw.unproven !== true,
    maxError,
    topProven: (maxError === 0 && raw.unproven !== true) || (items.length === n && proven(items, nextCount, maxError)),
    generatedAt: ctx.now,
  };
}

/**
 * Counts are low by at most maxError, never high. The order is proven when each
 * count beats the next by more than maxError, and the set when the last beats
 * the best unreported member (or a member trimmed everywhere, counted 0) likewise.
 * With fewer than N items a member trimmed everywhere may still belong in the
 * top N, so the caller requires N items.
 */
function proven(items: TopItem[], nextCount: number, maxError: number): boolean {
  for (let i = 0; i < items.length; i++) {
    const below = items[i + 1]?.count ?? nextCount;
    if (!((items[i]?.count ?? 0) > below + maxError)) return false;
  }
  return true;
}

export interface MemberResult {
  member: string;
  /** Count over the window; at most maxError below the true count. */
  count: number;
  /**
   * 1-based rank by count (ties by member, byte order); null when the member has no count.
   * When `rankExact` is false (a member deep in a big window), the best rank it can have.
   */
  rank: number | null;
  /** Whether `rank` is the member's rank among the window's counts (not a bound). */
  rankExact: boolean;
  /** Only when `rankExact` is false: the worst rank it can have. */
  rankMax?: number;
  window: WindowInfo;
  exact: boolean;
  maxError: number;
  generatedAt: number;
}

/** Count and rank of one member over a window: one script, O(log N) in the members. */
export async function member(ctx: Ctx, stream: string, name: string, options: TopOptions): Promise<MemberResult> {
  assertStream(stream);
  assertMember(name);
  const windowHours = options.windowHours ?? defaultWindowOf(options.retentionHours);
  assertWindow(windowHours, options.retentionHours);
  const plan = windowPlan(ctx, stream, windowHours);
  const { union, current, dirty, buckets } = plan.keys;
  const raw = await memberScript.run<{
    maxError: string;
    count: string;
    rank: number | false;
    rankMax?: number;
    ties?: string[] | Record<string, never>;
    rankExact?: boolean;
  }>(
    ctx.redis,
    { union, current, dirty, buckets },
    { member: name, ttl: plan.ttl, width: plan.width, stream, H: plan.H, depth: MEMBER_RANK_DEPTH },
  );
  const maxError = Number(raw.maxError);
  // tied members rank by byte order: those before this one come first
  const tiedBefore = asList(raw.ties ?? []).filter((m) => compareBytes(m, name) < 0).length;
  // bounds that meet pin the rank: exact (review 9: 1,000 members above it gave rank = rankMax, inexact)
  const rankExact = raw.rank === false || raw.rankExact === true || raw.rankMax === raw.rank;
  return {
    member: name,
    count: Number(raw.count),
    rank: raw.rank === false ? null : raw.rank + tiedBefore,
    rankExact,
    ...(rankExact || raw.rank === false ? {} : { rankMax: raw.rankMax ?? raw.rank }),
    window: plan.window,
    exact: maxError === 0,
    maxError,
    generatedAt: ctx.now,
  };
}

export interface ListOptions {
  /** Names in the page, 1..1,000. @default 1000 */
  limit?: number;
  /** The previous page's `nextCursor` (its last name): the page starts after it. @default the first name */
  cursor?: string;
}

export interface StreamsPage {
  /** Stream names from the registry, in byte order. */
  streams: string[];
  /** The last name of this page when more follow (pass it as `cursor`), else null. */
  nextCursor: string | null;
}

/**
 * One page of stream names from the registry, in byte order: one script. Until review 19 the list
 * stopped at the first 1,000 names without a sign, so streams past them could not be listed (and
 * 1,000 streams named to sort first hid every other one).
 */
export async function listPage(ctx: Ctx, options: ListOptions = {}): Promise<StreamsPage> {
  const limit = options.limit ?? MAX_LISTED;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LISTED)
    invalid([{ path: "limit", message: `must be an integer from 1 to ${MAX_LISTED}` }]);
  if (options.cursor !== undefined) assertName(options.cursor, "cursor");
  // one more than the page: whether another page follows, in the same command
  const names = asList(
    await listScript.run<string[] | Record<string, never>>(
      ctx.redis,
      { names: registryKeys(ctx.prefix).names },
      { after: options.cursor ?? "", limit: limit + 1 },
    ),
  );
  const streams = names.slice(0, limit);
  return { streams, nextCursor: names.length > limit ? (streams[streams.length - 1] ?? null) : null };
}

/** The first page of stream names (at most 1,000), as `listPage` gives it. */
export async function list(ctx: Ctx, options: ListOptions = {}): Promise<string[]> {
  return (await listPage(ctx, options)).streams;
}
