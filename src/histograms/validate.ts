/**
 * The checks of histogram requests and their limits (pure: no Redis). What
 * needs stored state (the histogram's own retention, its bucket cap) is
 * checked by the scripts, which refuse before writing.
 */
import type { FieldIssue } from "../errors.ts";
import { DAY, dayStart, MINUTE, parseAt } from "../time.ts";
import { MAX_BATCH, invalid, textProblem } from "../validation.ts";
import type { HistogramSettings, Observation } from "./histograms.ts";
import type { ReadOptions } from "./reads.ts";
import { isoDay, MAX_RETENTION_DAYS } from "./keys.ts";

/** Largest |value| an observation may have (the range of `Score`). */
export const MAX_VALUE = 1e15;
/** Largest bucket width. */
export const MAX_BUCKET_WIDTH = 1e15;
/** Distinct buckets one histogram may fill in one UTC day; past it, a wider bucketWidth is needed. */
export const MAX_BUCKETS_PER_DAY = 5000;
/** Distinct buckets one read may return; past it, the range must be narrowed. */
export const MAX_READ_BUCKETS = 20_000;
/**
 * Entries a read may merge: the sizes of the month rollups and days it unions, summed before the
 * union (a bucket present on many days counts on each), since `ZUNIONSTORE` reads every one of
 * them. Past it, the read is refused before any union, and the range must be narrowed. Measured on
 * the bench machine (2 shared cores): the union, loading and answer of 132,000–150,000 entries
 * sharing 3,300–5,000 buckets take 21–49 ms (~0.15 µs an entry); the rest is the distinct buckets
 * (~1.2 µs each to make and load): ~25 ms (idle) to 35–50 ms (loaded) for a 20,000-bucket answer
 * from 40,000 or 200,000 entries alike. 200,000 distinct ones (~0.4 s to union) are refused before
 * their union: by a few of the largest parts (a ZINTERCARD per pair of them), the days sized one by
 * one first when the range's values spread past the cap, or a probe union of at most 25,001
 * buckets (docs/histograms.md, "Many parts over the cap together").
 */
export const MAX_UNION_ENTRIES = 200_000;
/**
 * Commands a range read may spend in all (issue 15: ≤ 60 for any 400-day range of a histogram with
 * month rollups): the parts' sizes are read exactly within it, and bounded by their month's size
 * past it. A histogram from before rollups sizes its days one by one until its rollups hold whole months.
 */
export const MAX_READ_COMMANDS = 60;
/** Longest unit label. */
export const MAX_UNIT_LENGTH = 32;
/** Most names `list` returns (and its default limit). */
export const MAX_LIST = 1000;
/** Most of the fullest buckets a read returns as `top`, and how many when it is not given. */
export const MAX_TOP = 100;
export const DEFAULT_TOP = 5;
/** How far ahead of the clock an observation's `at` may be (client clock skew), as for trending. */
export const MAX_FUTURE_MS = 5 * MINUTE;

/** Parses a `YYYY-MM-DD` calendar date to its UTC day start; null when it is not a real date. */
export function parseDay(value: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m) return null;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return isoDay(ms) === value ? ms : null;
}

/** Checks settings as PUT receives them; returns them with defaults filled in. */
export function checkSettings(
  settings: HistogramSettings,
): Required<Omit<HistogramSettings, "unit">> & { unit: string | null } {
  const issues: FieldIssue[] = [];
  const { bucketWidth, unit, retentionDays = MAX_RETENTION_DAYS } = settings;
  if (
    typeof bucketWidth !== "number" ||
    !Number.isFinite(bucketWidth) ||
    bucketWidth <= 0 ||
    bucketWidth > MAX_BUCKET_WIDTH
  ) {
    issues.push({ path: "bucketWidth", message: `must be a finite number, 0 < bucketWidth ≤ ${MAX_BUCKET_WIDTH}` });
  }
  if (unit !== undefined) {
    const problem =
      typeof unit !== "string"
        ? "must be a string"
        : unit.length > MAX_UNIT_LENGTH
          ? `must be at most ${MAX_UNIT_LENGTH} characters`
          : textProblem(unit);
    if (problem) issues.push({ path: "unit", message: problem });
  }
  if (!Number.isInteger(retentionDays) || retentionDays < 1 || retentionDays > MAX_RETENTION_DAYS) {
    issues.push({ path: "retentionDays", message: `must be an integer from 1 to ${MAX_RETENTION_DAYS}` });
  }
  if (issues.length > 0) invalid(issues);
  return { bucketWidth, unit: unit ?? null, retentionDays };
}

/** One UTC day's values of a batch. */
export interface DayGroup {
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
    if (at === null)
      return void issues.push({ path: `${path}at`, message: "must be epoch milliseconds or an ISO-8601 timestamp" });
    if (at > now + MAX_FUTURE_MS)
      return void issues.push({ path: `${path}at`, message: "must be at most 5 minutes in the future" });
    // The histogram's own retention (≤ 400 days) is checked by the script, which reads it.
    if (at < oldest)
      return void issues.push({
        path: `${path}at`,
        message: `must be within the last ${MAX_RETENTION_DAYS} days (the longest retention)`,
      });
    const day = dayStart(at);
    const list = groups.get(day);
    // -0 would reach Lua as "-0"; its bucket is 0's either way.
    if (list) list.push(value === 0 ? 0 : value);
    else groups.set(day, [value === 0 ? 0 : value]);
  });
  if (issues.length > 0) invalid(issues);
  return [...groups].map(([day, values]) => ({ day, values }));
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
  if ((to - from) / DAY + 1 > MAX_RETENTION_DAYS)
    invalid([{ path: "from", message: `the range may cover at most ${MAX_RETENTION_DAYS} days` }]);
  return { from, to };
}

/** The `top` of a read, with its default. */
export function checkTop(top: number | undefined): number {
  const n = top ?? DEFAULT_TOP;
  if (!Number.isInteger(n) || n < 0 || n > MAX_TOP)
    invalid([{ path: "top", message: `must be an integer from 0 to ${MAX_TOP}` }]);
  return n;
}
