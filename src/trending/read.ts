import type { Ctx } from "../context.ts";
import { ValidationError } from "../errors.ts";
import { asList, runRead, runWrite } from "../redis/script.ts";
import { HOUR, hourIndex } from "../time.ts";
import { memberProblem } from "../validation.ts";
import { isStandardWindow, registryKeys, streamKeys } from "./keys.ts";
import { assertStream, assertWindow, horizonOf, MAX_TOP_N, secondsUntil, type TrendingSettings } from "./options.ts";
import { deleteScript, listScript, memberScript } from "./scripts.ts";
import { TA_FIRST_DEPTH, TA_MAX_DEPTH, TA_MERGE_MAX, topScript } from "./top-script.ts";

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
  /** Finished hours before the current one, 1..min(retention, 168). @default 24 */
  windowHours?: number;
  /** Top-N only: depth of the threshold read's first round (at least n + 1 is used), 1..2048. @default 256 */
  firstDepth?: number;
  /** Top-N only: deepest page of the threshold read before it merges instead, 1..2048. @default 1024 */
  maxDepth?: number;
  /** Top-N only: most members the fallback merges; beyond, the answer's maxError widens instead. @default 100000 */
  mergeMax?: number;
}

/**
 * Largest depth option: a round hands up to `depth` members of each of the
 * other two sets (three while the previous hour is not compacted) to one
 * ZMSCORE through Lua's unpack, which fails past about 8,000 values.
 */
const MAX_DEPTH = 2048;

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
    keys: [keys.union(windowHours, H), keys.bucket(H), keys.scratch, registryKeys(ctx.prefix).dirty, ...hours.map(keys.bucket)],
    H,
    // the shared slot records the width it holds; a standard window's key says it already
    width: isStandardWindow(windowHours) ? 0 : windowHours,
    // the union stands for hour H only; the next hour has a new one
    ttl: secondsUntil((H + 1) * HOUR, ctx.now),
  };
}

/** Top N members over the window's finished hours plus the current hour: one script. */
export async function topTrending(ctx: Ctx, stream: string, options: TopOptions): Promise<TopResult> {
  assertStream(stream);
  const n = options.n ?? 10;
  const windowHours = options.windowHours ?? 24;
  if (!Number.isInteger(n) || n < 1 || n > MAX_TOP_N) {
    throw new ValidationError(`n must be an integer from 1 to ${MAX_TOP_N}.`, [{ path: "n", message: `must be 1..${MAX_TOP_N}` }]);
  }
  assertWindow(windowHours, options.retentionHours);
  const firstDepth = options.firstDepth ?? TA_FIRST_DEPTH;
  const maxDepth = options.maxDepth ?? TA_MAX_DEPTH;
  const depthOk = (d: number) => Number.isInteger(d) && d >= 1 && d <= MAX_DEPTH;
  if (!depthOk(firstDepth) || !depthOk(maxDepth)) {
    throw new ValidationError(`firstDepth and maxDepth must be integers from 1 to ${MAX_DEPTH}.`, [
      { path: depthOk(firstDepth) ? "maxDepth" : "firstDepth", message: `must be 1..${MAX_DEPTH}` },
    ]);
  }
  const plan = windowPlan(ctx, stream, windowHours);
  const raw = await runRead<{ maxError: string; items: string[] | Record<string, never>; next: string; unproven?: boolean }>(ctx.redis, topScript, plan.keys, [
    n,
    plan.ttl,
    firstDepth,
    maxDepth,
    plan.width,
    stream,
    plan.H,
    options.mergeMax ?? TA_MERGE_MAX,
  ]);
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

/**
 * Most members per set the member lookup reads to rank a member exactly (those
 * that could rank above it); beyond, it gives rank bounds (`rankExact: false`).
 */
export const MEMBER_RANK_DEPTH = 1000;

/** Count and rank of one member over a window: one script, O(log N) in the members. */
export async function memberTrending(ctx: Ctx, stream: string, member: string, options: TopOptions): Promise<MemberResult> {
  assertStream(stream);
  const problem = memberProblem(member);
  if (problem) throw new ValidationError(`Invalid member: ${problem}.`, [{ path: "member", message: problem }]);
  const windowHours = options.windowHours ?? 24;
  assertWindow(windowHours, options.retentionHours);
  const plan = windowPlan(ctx, stream, windowHours);
  const raw = await runRead<{ maxError: string; count: string; rank: number | false; rankMax?: number; ties?: string[] | Record<string, never>; rankExact?: boolean }>(
    ctx.redis,
    memberScript,
    plan.keys,
    [member, plan.ttl, plan.width, stream, plan.H, MEMBER_RANK_DEPTH],
  );
  const maxError = Number(raw.maxError);
  // tied members rank by byte order: those before this one come first
  const tiedBefore = asList(raw.ties ?? []).filter((m) => compareBytes(m, member) < 0).length;
  const rankExact = raw.rank === false || raw.rankExact === true;
  return {
    member,
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

/** Largest number of names `GET /v1/trending` lists. */
export const MAX_LISTED = 1000;

/** Stream names from the registry, in byte order, at most 1,000: one script. */
export async function listStreams(ctx: Ctx): Promise<string[]> {
  return asList(await runRead<string[] | Record<string, never>>(ctx.redis, listScript, [registryKeys(ctx.prefix).names], [MAX_LISTED]));
}

/**
 * Deletes every key of a stream (all hours a bucket can still live in, the
 * unions of the current and next hour, the legacy cuts hash) and its registry
 * entries: one script. Returns how many keys existed.
 */
export async function deleteStream(ctx: Ctx, stream: string, options: TrendingSettings): Promise<number> {
  assertStream(stream);
  const H = hourIndex(ctx.now);
  const keys = streamKeys(ctx.prefix, stream);
  const reg = registryKeys(ctx.prefix);
  const oldest = H - horizonOf(options.retentionHours) - 1;
  const buckets = Array.from({ length: H + 2 - oldest }, (_, i) => keys.bucket(oldest + i));
  // unions live until the end of their hour; H + 1 covers a writer whose clock is a little ahead
  const unions = [H, H + 1].flatMap((hour) => keys.unionsOf(hour));
  const { value } = await runWrite<number>(
    ctx.redis,
    deleteScript,
    [reg.names, reg.seen, reg.dirty, keys.cuts, keys.scratch, ...buckets, ...unions],
    [stream],
  );
  return value;
}
