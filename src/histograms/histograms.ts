import type { Ctx } from "../context.ts";
import { ConflictError, NotFoundError, ValidationError, type FieldIssue } from "../errors.ts";
import { asList, runRead, runWrite, type Idempotency } from "../redis/script.ts";
import { DAY, dayStart, parseAt, periodEnd } from "../time.ts";
import { MAX_BATCH, assertName, invalid, listPage, memberProblem, type PageOptions } from "../validation.ts";
import { MAX_BUCKET_INDEX, quantile, topBuckets, type Bucket } from "./buckets.ts";
import { dayKeyPairs, daysBetween, dayUntil, histogramKeys, liveDays, liveMonths, MAX_FUTURE_MS, MAX_RETENTION_DAYS, monthKeys, monthOf } from "./keys.ts";
import { deleteScript, listScript, observeScript, putScript, readScript } from "./scripts.ts";

/** Largest |value| an observation may have (the range of `Score`). */
export const MAX_VALUE = 1e15;
/** Largest bucket width. */
export const MAX_BUCKET_WIDTH = 1e15;
/** Distinct buckets one histogram may fill in one UTC day; past it, a wider bucketWidth is needed. */
export const MAX_BUCKETS_PER_DAY = 5000;
/** Distinct buckets one read may return; past it, the range must be narrowed. */
export const MAX_READ_BUCKETS = 20_000;
/** Longest unit label. */
export const MAX_UNIT_LENGTH = 32;
/** Most names `listHistograms` returns (and its default limit). */
export const MAX_LIST = 1000;

export interface HistogramSettings {
  /** Width of every bucket, in the unit of the values; finite, 0 < width ≤ 1e15. */
  bucketWidth: number;
  /**
   * A label for the values (e.g. `s`, `ms`), echoed on reads.
   * @default none
   */
  unit?: string | undefined;
  /**
   * Days a UTC day's data is kept after that day ends (1..400); the TTL of its keys.
   * @default 400
   */
  retentionDays?: number | undefined;
}

export interface HistogramInfo {
  histogram: string;
  bucketWidth: number;
  unit: string | null;
  retentionDays: number;
  /** Epoch ms of the first PUT. */
  createdAt: number;
}

export interface Observation {
  /** A finite number within ±1e15. */
  value: number;
  /**
   * When it was observed (epoch ms or ISO-8601); picks the UTC day.
   * @default ctx.now
   */
  at?: number | string | undefined;
}

export interface ReadOptions {
  /**
   * First UTC day, `YYYY-MM-DD`.
   * @default `to`, or today when `to` is absent too
   */
  from?: string | undefined;
  /**
   * Last UTC day, `YYYY-MM-DD`, inclusive; at most 400 days after `from`.
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

const MARKER = /\bERR edgestats:(\w+)([^\n]*)/;

/** Turns a script's deliberate refusal into the library's named error; other errors pass through. */
function refusal(error: unknown, name: string): unknown {
  const match = error instanceof Error ? MARKER.exec(error.message) : null;
  if (!match) return error;
  const [, reason, rest = ""] = match;
  const args = rest.trim().split(" ");
  switch (reason) {
    case "not_found":
      return notFound(name);
    case "width_conflict":
      return new ConflictError(
        "bucket_width_conflict",
        `Histogram '${name}' already holds data with bucketWidth ${args[0]}; keep that width, or DELETE the histogram first.`,
      );
    case "expired":
      return new ValidationError(`Observations dated ${isoDay(Number(args[0]))} are older than the ${args[1]}-day retention of histogram '${name}'.`, [
        { path: "at", message: `older than the ${args[1]}-day retention` },
      ]);
    case "out_of_range":
      return new ValidationError(`Value ${args[0]} is more than ${MAX_BUCKET_INDEX} buckets (of width ${args[1]}) from zero; use a wider bucketWidth.`, [
        { path: "value", message: "too many buckets from zero for this bucketWidth" },
      ]);
    case "too_many_buckets":
      return new ValidationError(
        `Histogram '${name}' would hold more than ${MAX_BUCKETS_PER_DAY} distinct buckets on ${isoDay(Number(args[0]))}; its bucketWidth ${args[1]} is too narrow for these values.`,
        [{ path: "value", message: `more than ${MAX_BUCKETS_PER_DAY} distinct buckets in one day` }],
      );
    default:
      return error;
  }
}

function notFound(name: string): NotFoundError {
  return new NotFoundError(`Histogram '${name}' does not exist; create it first with PUT /v1/histograms/${name} {"bucketWidth": ...}.`);
}

/** `2026-11-22` for the UTC day starting at `dayMs`. */
export function isoDay(dayMs: number): string {
  return new Date(dayMs).toISOString().slice(0, 10);
}

/** Parses a `YYYY-MM-DD` calendar date to its UTC day start; null when it is not a real date. */
export function parseDay(value: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m) return null;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return isoDay(ms) === value ? ms : null;
}

/** Checks settings as PUT receives them; returns them with defaults filled in. */
export function checkSettings(settings: HistogramSettings): Required<Omit<HistogramSettings, "unit">> & { unit: string | null } {
  const issues: FieldIssue[] = [];
  const { bucketWidth, unit, retentionDays = MAX_RETENTION_DAYS } = settings;
  if (typeof bucketWidth !== "number" || !Number.isFinite(bucketWidth) || bucketWidth <= 0 || bucketWidth > MAX_BUCKET_WIDTH) {
    issues.push({ path: "bucketWidth", message: `must be a finite number, 0 < bucketWidth ≤ ${MAX_BUCKET_WIDTH}` });
  }
  if (unit !== undefined) {
    const problem = typeof unit !== "string" ? "must be a string" : unit.length > MAX_UNIT_LENGTH ? `must be at most ${MAX_UNIT_LENGTH} characters` : memberProblem(unit);
    if (problem) issues.push({ path: "unit", message: problem });
  }
  if (!Number.isInteger(retentionDays) || retentionDays < 1 || retentionDays > MAX_RETENTION_DAYS) {
    issues.push({ path: "retentionDays", message: `must be an integer from 1 to ${MAX_RETENTION_DAYS}` });
  }
  if (issues.length > 0) invalid(issues);
  return { bucketWidth, unit: unit ?? null, retentionDays };
}

/**
 * Creates a histogram or replaces its settings (PUT semantics: an omitted
 * unit or retention goes back to its default). Changing the width of a
 * histogram that holds data is a ConflictError; a new retention re-times the
 * stored days at once.
 */
export async function putHistogram(
  ctx: Ctx,
  name: string,
  settings: HistogramSettings,
  idempotency?: Idempotency,
): Promise<{ value: HistogramInfo & { created: boolean }; replayed: boolean }> {
  assertName(name, "histogram");
  const checked = checkSettings(settings);
  const days = liveDays(ctx.now);
  const months = liveMonths(ctx.now);
  const keys = [histogramKeys.meta(ctx.prefix, name), histogramKeys.registry(ctx.prefix), ...dayKeyPairs(ctx.prefix, name, days), ...monthKeys(ctx.prefix, name, months)];
  const listed = dayUntil(dayStart(ctx.now), checked.retentionDays);
  const monthArgs = [monthOf(ctx.now), periodEnd("month", ctx.now), days.length];
  const args = [name, String(checked.bucketWidth), checked.unit ?? "", checked.retentionDays, ctx.now, listed, ...monthArgs, ...days, ...months.map((m) => periodEnd("month", m) - DAY)];
  try {
    const { value, replayed } = await runWrite<{ created: boolean; createdAt: string }>(ctx.redis, putScript, keys, args, idempotency);
    return { value: { histogram: name, ...checked, createdAt: Number(value.createdAt), created: value.created }, replayed };
  } catch (error) {
    throw refusal(error, name);
  }
}

interface DayGroup {
  day: number;
  values: number[];
}

/** Validates a batch and groups its values by UTC day, in the order days first appear. */
export function groupObservations(now: number, observations: readonly Observation[]): DayGroup[] {
  if (observations.length === 0 || observations.length > MAX_BATCH) {
    invalid([{ path: "values", message: `must hold 1 to ${MAX_BATCH} observations` }]);
  }
  const issues: FieldIssue[] = [];
  const groups = new Map<number, number[]>();
  const oldest = dayStart(now) - MAX_RETENTION_DAYS * DAY;
  observations.forEach((o, i) => {
    const path = observations.length === 1 ? "" : `values.${i}.`;
    const { value } = o;
    if (typeof value !== "number" || !Number.isFinite(value) || Math.abs(value) > MAX_VALUE) {
      issues.push({ path: `${path}value`, message: `must be a finite number within ±${MAX_VALUE}` });
      return;
    }
    const at = o.at === undefined ? now : parseAt(o.at);
    if (at === null) return void issues.push({ path: `${path}at`, message: "must be epoch milliseconds or an ISO-8601 timestamp" });
    if (at > now + MAX_FUTURE_MS) return void issues.push({ path: `${path}at`, message: "must be at most 5 minutes in the future" });
    // The histogram's own retention (≤ 400 days) is checked by the script, which reads it.
    if (at < oldest) return void issues.push({ path: `${path}at`, message: `must be within the last ${MAX_RETENTION_DAYS} days (the longest retention)` });
    const day = dayStart(at);
    const list = groups.get(day);
    // -0 would reach Lua as "-0"; its bucket is 0's either way.
    if (list) list.push(value === 0 ? 0 : value);
    else groups.set(day, [value === 0 ? 0 : value]);
  });
  if (issues.length > 0) invalid(issues);
  return [...groups].map(([day, values]) => ({ day, values }));
}

/** Records a batch of observations (1..1000) atomically: all of them or, on any refusal, none. */
export async function observe(
  ctx: Ctx,
  name: string,
  observations: readonly Observation[],
  idempotency?: Idempotency,
): Promise<{ value: { accepted: number }; replayed: boolean }> {
  assertName(name, "histogram");
  const groups = groupObservations(ctx.now, observations);
  const keys = [histogramKeys.meta(ctx.prefix, name), histogramKeys.registry(ctx.prefix)];
  for (const { day } of groups) keys.push(...dayKeyPairs(ctx.prefix, name, [day]), ...monthKeys(ctx.prefix, name, [monthOf(day)]));
  const args: (string | number)[] = [name, ctx.now, MAX_BUCKETS_PER_DAY, MAX_BUCKET_INDEX, periodEnd("month", ctx.now)];
  for (const { day, values } of groups) {
    const sum = values.reduce((a, b) => a + b, 0);
    let min = Infinity;
    let max = -Infinity;
    for (const v of values) {
      if (v < min) min = v;
      if (v > max) max = v;
    }
    // The day's smallest value is kept negated, so one ZADD GT keeps both extremes.
    args.push(day, periodEnd("month", day) - DAY, values.length, String(sum), String(0 - min), String(max), ...values.map(String));
  }
  try {
    return await runWrite<{ accepted: number }>(ctx.redis, observeScript, keys, args, idempotency);
  } catch (error) {
    throw refusal(error, name);
  }
}

/** Resolves `from`/`to` to day starts, checking order and the 400-day limit. */
export function resolveRange(now: number, options: Pick<ReadOptions, "from" | "to">): { from: number; to: number } {
  const issues: FieldIssue[] = [];
  const to = options.to === undefined ? dayStart(now) : parseDay(options.to);
  if (to === null) issues.push({ path: "to", message: "must be a date YYYY-MM-DD" });
  const from = options.from === undefined ? to : parseDay(options.from);
  if (from === null && options.from !== undefined) issues.push({ path: "from", message: "must be a date YYYY-MM-DD" });
  if (issues.length > 0 || from === null || to === null) return invalid(issues);
  if (from > to) invalid([{ path: "from", message: "must not be after 'to'" }]);
  if ((to - from) / DAY + 1 > MAX_RETENTION_DAYS) invalid([{ path: "from", message: `the range may cover at most ${MAX_RETENTION_DAYS} days` }]);
  return { from, to };
}

interface ReadReply {
  missing?: true;
  tooMany?: number;
  settings: [string, string | false, string | false, string | false];
  buckets: [string, string, string, string][] | Record<string, never>;
  sum?: string;
  max?: string;
  negMin?: string;
}

/**
 * The distribution over the UTC days `from..to`: buckets ordered by value,
 * exact count/sum/min/max/mean, and p50/p90/p99 interpolated within buckets.
 */
export async function readHistogram(ctx: Ctx, name: string, options: ReadOptions = {}): Promise<HistogramSummary> {
  assertName(name, "histogram");
  const { from, to } = resolveRange(ctx.now, options);
  const topN = options.top ?? 5;
  if (!Number.isInteger(topN) || topN < 0 || topN > 100) invalid([{ path: "top", message: "must be an integer from 0 to 100" }]);
  // Days outside what any retention keeps hold nothing: they are not read.
  const live = liveDays(ctx.now);
  const first = live[0] as number;
  const last = live.at(-1) as number;
  const days = daysBetween(from, to).filter((d) => d >= first && d <= last);
  // whole months of the range: their rollup may stand for their days (the script decides by retention)
  const monthArgs: number[] = [];
  const months: number[] = [];
  let i = 0;
  while (i < days.length) {
    const m = monthOf(days[i] as number);
    let j = i;
    while (j < days.length && monthOf(days[j] as number) === m) j++;
    if (days[i] === m && (days[j - 1] as number) + DAY === periodEnd("month", m)) {
      months.push(m);
      monthArgs.push(m, i + 1, j - i);
    }
    i = j;
  }
  const keys = [histogramKeys.meta(ctx.prefix, name), histogramKeys.scratch(ctx.prefix, name), ...dayKeyPairs(ctx.prefix, name, days), ...monthKeys(ctx.prefix, name, months)];
  const reply = await runRead<ReadReply>(ctx.redis, readScript, keys, [MAX_READ_BUCKETS, ctx.now, days.length, MAX_BUCKETS_PER_DAY, ...monthArgs]);
  if (reply.missing) throw notFound(name);
  if (reply.tooMany !== undefined) {
    invalid([{ path: "from", message: `the range holds ${reply.tooMany} distinct buckets, more than ${MAX_READ_BUCKETS}; narrow it` }]);
  }
  const [width, unit] = reply.settings;
  const buckets = asList(reply.buckets)
    .map(([index, lower, upper, count]) => ({ index: Number(index), lower: Number(lower), upper: Number(upper), count: Number(count) }))
    .sort((a, b) => a.index - b.index)
    .map(({ lower, upper, count }) => ({ lower, upper, count }));
  const count = buckets.reduce((n, b) => n + b.count, 0);
  // 0 - x turns a stored -0 into 0.
  const sum = reply.sum === undefined ? 0 : 0 + Number(reply.sum);
  const observed = count > 0 && reply.max !== undefined && reply.negMin !== undefined ? { min: 0 - Number(reply.negMin), max: 0 + Number(reply.max) } : undefined;
  return {
    histogram: name,
    unit: unit || null,
    bucketWidth: Number(width),
    from: isoDay(from),
    to: isoDay(to),
    count,
    sum,
    min: observed?.min ?? null,
    max: observed?.max ?? null,
    mean: count > 0 ? sum / count : null,
    p50: quantile(buckets, 0.5, observed),
    p90: quantile(buckets, 0.9, observed),
    p99: quantile(buckets, 0.99, observed),
    buckets,
    top: topBuckets(buckets, topN),
  };
}

/** Deletes a histogram: settings, every stored day, and its registry entry. Idempotent. */
export async function deleteHistogram(ctx: Ctx, name: string): Promise<{ deleted: boolean }> {
  assertName(name, "histogram");
  const keys = [
    histogramKeys.meta(ctx.prefix, name),
    histogramKeys.registry(ctx.prefix),
    ...dayKeyPairs(ctx.prefix, name, liveDays(ctx.now)),
    ...monthKeys(ctx.prefix, name, liveMonths(ctx.now)),
  ];
  const { value } = await runWrite<{ removed: number }>(ctx.redis, deleteScript, keys, [name]);
  return { deleted: value.removed > 0 };
}

export type ListOptions = PageOptions;

/**
 * Names of the histograms that hold live data (or were PUT less than their
 * retention ago), latest listing deadline first: with equal retention, most
 * recently written first. Names whose data all expired leave the registry
 * here, a bounded batch per call. `next` is the offset of the following page,
 * null on the last one.
 */
export async function listHistograms(ctx: Ctx, options: ListOptions = {}): Promise<{ histograms: string[]; total: number; next: number | null }> {
  const { offset, limit } = listPage(options, MAX_LIST);
  const reply = await runRead<{ names: string[] | Record<string, never>; total: number }>(ctx.redis, listScript, [histogramKeys.registry(ctx.prefix)], [ctx.now, offset, limit]);
  const histograms = asList(reply.names);
  return { histograms, total: reply.total, next: offset + histograms.length < reply.total ? offset + histograms.length : null };
}

