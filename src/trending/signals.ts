/**
 * Signals (issue 19): what is rising now, and one member's history hour by hour.
 * Both are one read script over the hour buckets that already exist; neither
 * writes (no union is built), so a read key can never make them cost memory.
 */
import type { Ctx } from "../context.ts";
import { defineScript } from "../redis/script.ts";
import { HOUR, hourIndex } from "../time.ts";
import { isStandardWindow, streamKeys } from "./keys.ts";
import { markersLua, unionLua } from "./scripts.ts";
import { compareBytes } from "./trending.ts";
import {
  assertHours,
  assertMember,
  assertStream,
  assertTopN,
  defaultWindowOf,
  horizonOf,
  type TrendingSettings,
} from "./validate.ts";

/**
 * Members of the current hour a rising read considers: its top RISING_CANDIDATES by
 * count (ties at the cut by member, byte order, as every ranking here). A member
 * below them cannot be reported, however far above its baseline; bounded work
 * instead of a scan of the hour (up to 1M members at the scale bench/ measures).
 */
export const RISING_CANDIDATES = 200;

/**
 * The current hour's top `depth` members (the candidates) and each one's count
 * summed over the baseline hours: from the cached union of those hours when a
 * top read left a valid one (the union of width w at hour H is exactly the
 * w hours before H; while it leaves out the previous hour, PREV, that bucket
 * is asked too), else one ZMSCORE per bucket. Never builds a union.
 * Returns { members, counts, sums, maxError (sum of the baseline hours' cuts) }.
 */
export const risingScript = defineScript({
  name: "trending.rising",
  write: false,
  keys: ["current", "union", "...buckets"],
  args: ["depth", "width"],
  uses: [markersLua, unionLua],
  lua: `
local width = tonumber(width)
local depth = tonumber(depth)
-- one more than the candidates: does a tie straddle the cut?
local page = redis.call('ZREVRANGE', current, 0, depth, 'WITHSCORES')
local members, counts, sums = {}, {}, {}
local cut = #page >= 2 * (depth + 1) and page[2 * depth] == page[2 * depth + 2] and tonumber(page[2 * depth]) > 0
for i = 1, math.min(#page, 2 * depth), 2 do
  -- the bucket's sentinel (≤ 0) comes after every real member; a tie at the cut is refilled below
  if tonumber(page[i + 1]) > 0 and not (cut and page[i + 1] == page[2 * depth]) then
    members[#members + 1] = page[i]
    counts[#counts + 1] = page[i + 1]
    sums[#sums + 1] = 0
  end
end
if cut then
  -- ZREVRANGE gives equal counts in descending byte order: take the tie's first members in
  -- ascending byte order instead, as every ranking here orders ties (review 19)
  local s = page[2 * depth]
  local tied = redis.call('ZRANGE', current, s, s, 'BYSCORE', 'LIMIT', 0, depth - #members)
  for _, m in ipairs(tied) do
    members[#members + 1] = m
    counts[#counts + 1] = s
    sums[#sums + 1] = 0
  end
end
if #members == 0 then return { members = members, counts = counts, sums = sums, maxError = '0' } end
local err = 0
-- adds one set's counts of every candidate; its sentinel (the hour's cut, or the union's) first
local function add(key)
  local got = redis.call('ZMSCORE', key, SENTINEL, unpack(members))
  err = err - (tonumber(got[1]) or 0)
  for i = 1, #members do sums[i] = sums[i] + (tonumber(got[i + 1]) or 0) end
end
local ask = markersOf(width)
local off = #ask
for i = 1, #members do ask[off + i] = members[i] end
local got = redis.call('ZMSCORE', union, unpack(ask))
if validUnion(got, width) then
  err = 0 - tonumber(got[1])
  for i = 1, #members do sums[i] = tonumber(got[off + i]) or 0 end
  if got[2] then add(buckets[#buckets]) end
else
  for _, key in ipairs(buckets) do add(key) end
end
for i = 1, #sums do sums[i] = fmt(sums[i]) end
return { members = members, counts = counts, sums = sums, maxError = fmt(err) }
`,
});

/**
 * One member's count in each bucket, oldest first, with the bucket's cut
 * (0: never trimmed, or no such bucket). Returns { cut, count } per bucket.
 */
export const historyScript = defineScript({
  name: "trending.history",
  write: false,
  keys: ["...buckets"],
  args: ["member"],
  uses: [markersLua],
  lua: `
local out = {}
for i, key in ipairs(buckets) do
  local got = redis.call('ZMSCORE', key, SENTINEL, member)
  out[i] = { cut = fmt(0 - (tonumber(got[1]) or 0)), count = got[2] or '0' }
end
return out
`,
});

export interface RisingItem {
  member: string;
  /**
   * Count in the current hour so far, as stored: low only if a compaction whose clock had passed the hour
   * trimmed it (its cut is not read here; top and member lookup count it in maxError).
   */
  count: number;
  /** Expected count for the elapsed part of this hour: the baseline hours' average × the elapsed fraction. */
  baseline: number;
  /** count / baseline, at most Number.MAX_VALUE (a subnormal baseline); null when the baseline is 0 (no count in any baseline hour). */
  ratio: number | null;
  /** (count − baseline) / √(baseline + 1): above 0 for every item, highest first. */
  score: number;
}

export interface RisingResult {
  stream: string;
  /** Hours the baseline averages over (the finished hours before the current one). */
  baselineHours: number;
  /** Part of the current hour elapsed, at least 1 ms of it (so above 0) and below 1: the baseline is scaled by it. */
  elapsed: number;
  /** Members of the current hour considered: its top RISING_CANDIDATES (fewer when it has fewer). */
  candidates: number;
  items: RisingItem[];
  /** True when no baseline hour was trimmed: every baseline is exact. */
  exact: boolean;
  /** Every item's baseline is at most this much below the true one (trimmed baseline hours). */
  maxError: number;
  generatedAt: number;
}

export interface RisingOptions extends TrendingSettings {
  /** Items to return, 1..100. @default 10 */
  n?: number;
  /** Finished hours the baseline averages over, 1..min(retention, 168). @default 24 (the retention if shorter) */
  baselineHours?: number;
}

/**
 * The members of the current hour that most exceed their own baseline rate:
 * one script, at most 2 + baselineHours commands (3 with a warm union of the
 * baseline hours). score = (c − b) / √(b + 1), c the count so far this hour and
 * b the member's average hourly count over the baseline hours × the elapsed part
 * of this hour (at least 1 ms of it, so b is 0 only for a member with no baseline
 * count, even at HH:00:00.000): a rough z-score under a Poisson model (its variance is its mean,
 * +1 so that b = 0 does not divide by 0), so a jump from 0 to 3 (score 3) does not
 * beat one from 100 to 400 (score 29.9). Only members with score > 0 are listed;
 * ties by member, byte order.
 */
export async function rising(ctx: Ctx, stream: string, options: RisingOptions): Promise<RisingResult> {
  assertStream(stream);
  const n = options.n ?? 10;
  const baselineHours = options.baselineHours ?? defaultWindowOf(options.retentionHours);
  assertTopN(n);
  assertHours("baseline", baselineHours, options.retentionHours);
  const H = hourIndex(ctx.now);
  const keys = streamKeys(ctx.prefix, stream);
  const buckets = Array.from({ length: baselineHours }, (_, i) => keys.bucket(H - baselineHours + i));
  const raw = await risingScript.run<{
    members: string[] | Record<string, never>;
    counts: string[] | Record<string, never>;
    sums: string[] | Record<string, never>;
    maxError: string;
  }>(
    ctx.redis,
    { current: keys.bucket(H), union: keys.union(baselineHours, H), buckets },
    { depth: RISING_CANDIDATES, width: isStandardWindow(baselineHours) ? 0 : baselineHours },
  );
  const members = Array.isArray(raw.members) ? raw.members : [];
  const counts = Array.isArray(raw.counts) ? raw.counts : [];
  const sums = Array.isArray(raw.sums) ? raw.sums : [];
  // At least 1 ms: the current bucket already holds the events stamped at the hour's first
  // millisecond, so at HH:00:00.000 its count covers 1 ms of the hour, not none. Scaling by 0
  // would read every member's baseline as 0 (a steady member reported as new, ratio null).
  const elapsed = Math.max(ctx.now - H * HOUR, 1) / HOUR;
  const items: RisingItem[] = [];
  members.forEach((member, i) => {
    const count = Number(counts[i]);
    const sum = Number(sums[i]);
    // × elapsed first, then / hours: whole counts stay exact where they can
    const scaled = (sum * elapsed) / baselineHours;
    // Counts are any finite number above 0, subnormal ones (1e-320) too: a positive sum may scale
    // to 0 (kept at the least double, so b is 0 only without a baseline count), and c / b may
    // overflow to Infinity (JSON null): the ratio is capped at the largest double instead.
    const baseline = sum > 0 && scaled === 0 ? Number.MIN_VALUE : scaled;
    const ratio = baseline > 0 ? Math.min(count / baseline, Number.MAX_VALUE) : null;
    const score = (count - baseline) / Math.sqrt(baseline + 1);
    if (score > 0) items.push({ member, count, baseline, ratio, score });
  });
  items.sort((a, b) => b.score - a.score || compareBytes(a.member, b.member));
  const maxError = (Number(raw.maxError) * elapsed) / baselineHours;
  return {
    stream,
    baselineHours,
    elapsed,
    candidates: members.length,
    items: items.slice(0, n),
    exact: maxError === 0,
    maxError,
    generatedAt: ctx.now,
  };
}

export interface HistoryPoint {
  /** Start of the hour, epoch ms. */
  hour: number;
  /** The member's count stored for that hour. */
  count: number;
  /**
   * How far below the true count `count` may be: the hour's cut (what compaction
   * removed, summed), 0 when the hour was never trimmed. The true count is in
   * [count, count + maxError]; a member trimmed out of the hour shows count 0.
   */
  maxError: number;
}

export interface HistoryResult {
  stream: string;
  member: string;
  /** Finished hours covered; the current hour comes last, as in a `window`. */
  hours: number;
  /** Oldest first: the `hours` finished hours, then the current one (so far). */
  points: HistoryPoint[];
  /** True when no point's hour was trimmed: every count is exact. */
  exact: boolean;
  generatedAt: number;
}

export interface HistoryOptions extends TrendingSettings {
  /** Finished hours before the current one, 1..min(retention, 168). @default 48 (or the retention, when shorter) */
  hours?: number;
}

/** One member's count hour by hour: one script, one ZMSCORE per hour, O(hours · log N). */
export async function history(
  ctx: Ctx,
  stream: string,
  member: string,
  options: HistoryOptions,
): Promise<HistoryResult> {
  assertStream(stream);
  assertMember(member);
  const hours = options.hours ?? Math.min(48, horizonOf(options.retentionHours));
  assertHours("hours", hours, options.retentionHours);
  const H = hourIndex(ctx.now);
  const keys = streamKeys(ctx.prefix, stream);
  const all = Array.from({ length: hours + 1 }, (_, i) => H - hours + i);
  const raw = await historyScript.run<{ cut: string; count: string }[]>(
    ctx.redis,
    { buckets: all.map(keys.bucket) },
    { member },
  );
  const points = all.map((hour, i) => ({
    hour: hour * HOUR,
    count: Number(raw[i]?.count ?? 0),
    maxError: Number(raw[i]?.cut ?? 0),
  }));
  return { stream, member, hours, points, exact: points.every((p) => p.maxError === 0), generatedAt: ctx.now };
}
