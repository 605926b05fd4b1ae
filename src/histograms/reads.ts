/**
 * Reading a histogram over a range of UTC days (`read`): the range is checked, its days and month
 * rollups chosen (keys.ts), and one script reads them (read-scripts.ts; past 4 days a `ZPOPMIN`
 * sent after it in the same HTTP request brings the union it left in a scratch key).
 */
import type { Ctx } from "../context.ts";
import { canPipeline } from "../redis/script.ts";
import { CLOCK_SKEW_MS, DAY, dayLabel, periodEnd } from "../time.ts";
import { assertName } from "../validation.ts";
import { bucketBound, quantile, topBuckets, type Bucket } from "./buckets.ts";
import { dataKeys, daysBetween, histogramKeys, isoDay, liveDays, MAX_RETENTION_DAYS, monthOf } from "./keys.ts";
import { readScript } from "./read-scripts.ts";
import {
  checkTop,
  MAX_BUCKETS_PER_DAY,
  MAX_FUTURE_MS,
  MAX_READ_BUCKETS,
  MAX_READ_COMMANDS,
  MAX_UNION_ENTRIES,
  resolveRange,
} from "./validate.ts";

export interface ReadOptions {
  /**
   * First UTC day, `YYYY-MM-DD`.
   * @default `to`, or today when `to` is absent too
   */
  from?: string | undefined;
  /**
   * Last UTC day, `YYYY-MM-DD`, inclusive; at most 399 days after `from` (400 days in all).
   * @default today
   */
  to?: string | undefined;
  /**
   * How many of the fullest buckets to return as `top`.
   * @default 5
   */
  top?: number | undefined;
}

export interface HistogramSummary {
  histogram: string;
  unit: string | null;
  bucketWidth: number;
  from: string;
  to: string;
  count: number;
  /** Exact sum of the observed values. */
  sum: number;
  /** Exact smallest and largest observed values; null when count is 0. */
  min: number | null;
  max: number | null;
  /** Exact mean (sum / count). */
  mean: number | null;
  p50: number | null;
  p90: number | null;
  p99: number | null;
  /** Non-empty buckets, ordered by value. */
  buckets: Bucket[];
  /** The fullest buckets, fuller first. */
  top: Bucket[];
}

interface ReadReply {
  settings: [string, string | false, string | false, string | false];
  /**
   * The merged members and their scores, `member,score,member,score,…` in the union's order:
   * bucket indexes with their counts, and the sums a union brings (`sum`, `s:<yyyymmdd>`).
   * Absent when a piped read left its union in scratch for the `ZPOPMIN` after the script.
   */
  merged?: string;
  /** The sums of the days read one by one (when there are some), added before the merged ones. */
  sum?: string;
  /**
   * `yyyymm[,yyyymm]`: the edge months read as their rollup (less their days outside the range):
   * their sums came in `sum` (the days' own, in order), so their `s:` members in the union are not
   * added, and the buckets a subtraction left at 0 (only in days outside the range) are not buckets.
   */
  edge?: string;
  max?: string;
  negMin?: string;
}

/** A score as Redis formats it (`%.17g`, or `inf`/`-inf`), as Lua's `tonumber` reads it. */
function scoreOf(text: string): number {
  return text === "inf" ? Infinity : text === "-inf" ? -Infinity : Number(text);
}

/**
 * Splits the script's merged members into buckets (members that are numbers, as Lua's `tonumber`
 * tells them) and the range's sum: the days' sums from the script, then each sum member in the
 * union's order, the additions the script itself made before it returned the members as one string.
 */
function splitMerged(
  reply: ReadReply,
  popped: readonly string[],
): { indexed: { index: number; count: number }[]; sum: number | undefined } {
  const indexed: { index: number; count: number }[] = [];
  let sum = reply.sum === undefined ? undefined : Number(reply.sum);
  const edges = reply.edge === undefined ? undefined : reply.edge.split(",").map((month) => `s:${month}`);
  // ZPOPMIN gives the members in ZRANGE's order (score, then member), as Redis formats them
  const flat = reply.merged === undefined ? popped : reply.merged === "" ? [] : reply.merged.split(",");
  for (let j = 0; j + 1 < flat.length; j += 2) {
    const member = flat[j] as string;
    const index = member.trim() === "" ? NaN : Number(member);
    if (!Number.isNaN(index)) {
      const count = Number(flat[j + 1]);
      if (!(edges !== undefined && count === 0)) indexed.push({ index, count });
    } else if (edges?.some((edge) => member.startsWith(edge))) continue;
    else if (member === "sum" || member.startsWith("s:")) sum = (sum ?? 0) + scoreOf(flat[j + 1] as string);
  }
  return { indexed, sum };
}

/**
 * The distribution over the UTC days `from..to`: buckets ordered by value,
 * exact count/sum/min/max/mean, and p50/p90/p99 interpolated within buckets.
 */
export async function read(ctx: Ctx, name: string, options: ReadOptions = {}): Promise<HistogramSummary> {
  assertName(name, "histogram");
  const { from, to } = resolveRange(ctx.now, options);
  const topN = checkTop(options.top);
  // Days outside what any retention keeps hold nothing: they are not read.
  const live = liveDays(ctx.now);
  const first = live[0] as number;
  const last = live.at(-1) as number;
  const days = daysBetween(from, to).filter((d) => d >= first && d <= last);
  // Months whose rollup may stand for the range's days in them (the script decides by retention):
  // whole months, and the month of a range ending now, from its first day. Nothing is dated past
  // the writer's now + MAX_FUTURE_MS, and a writer's clock may be up to CLOCK_SKEW_MS past this
  // read's `ctx.now` (another Worker's clock, or a write applied while this read is under way), so
  // once the day after the range's last starts later than both, the rollup holds no day past the
  // range (at 23:54 or later, tomorrow may already hold data: the days are read; until review 5 the
  // margin left out the skew, and a read at 23:54:59.999 could count tomorrow's first value). The
  // first partial month cannot: its rollup holds the days before `from`.
  const latest = ctx.now + MAX_FUTURE_MS + CLOCK_SKEW_MS;
  const months: number[] = [];
  const monthFirsts: number[] = [];
  const monthLengths: number[] = [];
  let i = 0;
  while (i < days.length) {
    const m = monthOf(days[i] as number);
    let j = i;
    while (j < days.length && monthOf(days[j] as number) === m) j++;
    const next = (days[j - 1] as number) + DAY;
    if (days[i] === m && (next === periodEnd("month", m) || next > latest)) {
      months.push(m);
      monthFirsts.push(i + 1);
      monthLengths.push(j - i);
    }
    i = j;
  }
  // the months holding the days' sums (member `s:<day>` of the month rollup), each day's by position
  const sumMonths = [...new Set(days.map(monthOf))];
  // The edges (issue 15): the first and last months of the range that are read day by day and hold
  // days outside the range (a range starting after its month's 1st, or ending before its month's
  // last day) may be read as their rollup alone when none of those days holds anything, and the end
  // month as its rollup less the days after the range. While the month's first day is kept (the
  // script checks), every day of it is (retention counts from each day's end), so every day the
  // rollup summed is live: the rollup alone is exactly the days in the range, and the subtraction
  // exact. The script decides by what those days hold and by sizes.
  const edgeMonths: number[] = [];
  const edgeOutside: number[] = [];
  const edgeSubtract: number[] = [];
  const outsideDays: number[] = [];
  const edgeCandidates = days.length === 0 ? [] : [monthOf(days[0] as number), monthOf(days.at(-1) as number)];
  for (const m of new Set(edgeCandidates)) {
    if (months.includes(m)) continue;
    const outside: number[] = [];
    for (let d = m; d < periodEnd("month", m); d += DAY) if (d < from || d > to) outside.push(d);
    if (outside.length === 0) continue;
    edgeMonths.push(sumMonths.indexOf(m) + 1);
    // Read as its rollup less its days outside only at the end of a range from the month's 1st that
    // covers more of its days than it leaves out (else that is rarely fewer entries to merge, and its
    // ZCARDs would cost every read); as its rollup alone wherever those days hold nothing.
    const inside = days.filter((d) => monthOf(d) === m).length;
    edgeSubtract.push(outside[0] === undefined || outside[0] < from || inside <= outside.length ? 0 : 1);
    edgeOutside.push(outside.length);
    outsideDays.push(...outside);
  }
  // Piped (issue 15): a range that may reach the read cap (more than 4 days: 4 x 5,000 buckets) and
  // is not one month rollup (read as it is, without a union) leaves its union in a scratch key of
  // its own for a ZPOPMIN after the script, in the same HTTP request: the script does not load the
  // union. Reads of fewer days, and clients without a pipeline, run the one script that does it all.
  const piped =
    days.length * MAX_BUCKETS_PER_DAY > MAX_READ_BUCKETS &&
    !(months.length === 1 && monthLengths[0] === days.length) &&
    canPipeline(ctx.redis);
  const scratch = histogramKeys.scratch(ctx.prefix, name, piped ? crypto.randomUUID() : undefined);
  // every member of the union past the cap is a sum: at most one a day ('s:<yyyymmdd>') and 'sum',
  // and an end edge read by its rollup less the days after the range brings their sums (at most 15);
  // an edge month read as its rollup alone has none (its days outside hold nothing)
  const popCount = MAX_READ_BUCKETS + MAX_RETENTION_DAYS + 1 + 15;
  const keys = {
    meta: histogramKeys.meta(ctx.prefix, name),
    scratch,
    ...dataKeys(ctx.prefix, name, days, months),
    sumMonths: sumMonths.map((month) => histogramKeys.month(ctx.prefix, name, month)),
    outside: outsideDays.map((day) => histogramKeys.day(ctx.prefix, name, day)),
  };
  const args = {
    name,
    maxBuckets: MAX_READ_BUCKETS,
    maxEntries: MAX_UNION_ENTRIES,
    maxCommands: MAX_READ_COMMANDS,
    now: ctx.now,
    perDay: MAX_BUCKETS_PER_DAY,
    piped: piped ? 1 : 0,
    popCount,
    monthStarts: months,
    monthFirsts,
    monthLengths,
    dayStarts: days,
    dayLabels: days.map(dayLabel),
    dayMonths: days.map((day) => sumMonths.indexOf(monthOf(day)) + 1),
    sumMonthStarts: sumMonths,
    edgeMonths,
    edgeOutside,
    edgeSubtract,
    outsideLabels: outsideDays.map(dayLabel),
  };
  let reply: ReadReply;
  let popped: string[] = [];
  const both = piped
    ? await readScript.runPiped<ReadReply>(ctx.redis, keys, args, (pipeline) => pipeline.zpopmin(scratch, popCount))
    : undefined;
  if (both) {
    reply = both.value;
    popped = (both.after[0] ?? []) as string[];
  } else reply = await readScript.run<ReadReply>(ctx.redis, keys, { ...args, piped: 0 });
  const [width, unit] = reply.settings;
  const bucketWidth = Number(width);
  const { indexed, sum: total } = splitMerged(reply, popped);
  // the bounds by the rule observe placed the values with (bucketBound: the Lua bucketOf's)
  const buckets = indexed
    .sort((a, b) => a.index - b.index)
    .map(({ index, count }) => ({
      lower: bucketBound(index, bucketWidth),
      upper: bucketBound(index + 1, bucketWidth),
      count,
    }));
  const count = buckets.reduce((n, b) => n + b.count, 0);
  // 0 + x turns a stored -0 into 0.
  const sum = total === undefined ? 0 : 0 + total;
  const observed =
    count > 0 && reply.max !== undefined && reply.negMin !== undefined
      ? { min: 0 - Number(reply.negMin), max: 0 + Number(reply.max) }
      : undefined;
  return {
    histogram: name,
    unit: unit || null,
    bucketWidth,
    from: isoDay(from),
    to: isoDay(to),
    count,
    sum,
    min: observed?.min ?? null,
    max: observed?.max ?? null,
    // the sum is a rounded double: three values of 0.1 sum to 0.30000000000000004, whose third is
    // above them all; a mean lies within the exact extremes, so it is clamped to them (review 22)
    mean: count > 0 ? clampTo(sum / count, observed) : null,
    p50: quantile(buckets, 0.5, observed),
    p90: quantile(buckets, 0.9, observed),
    p99: quantile(buckets, 0.99, observed),
    buckets,
    top: topBuckets(buckets, topN),
  };
}

/** `x` within `[min, max]` when they are known. */
function clampTo(x: number, observed: { min: number; max: number } | undefined): number {
  return observed ? Math.min(Math.max(x, observed.min), observed.max) : x;
}
