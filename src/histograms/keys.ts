import { keyOf } from "../keys.ts";
import { DAY, dayLabel, dayStart, periodEnd, periodLabel, periodStart } from "../time.ts";

/** Longest retention a histogram may have, in days; also the longest range one read may cover. */
export const MAX_RETENTION_DAYS = 400;

/**
 * Keys of one histogram. Names never contain ':' nor start with '_', so
 * `_names` cannot be a histogram and no name can spell another's day key.
 */
export const histogramKeys = {
  /**
   * Hash of settings: bucketWidth, unit, retentionDays, createdAt, rollupsSince, boundsSince; and
   * observe's mirror of the newest day's extremes (extDay: its start in ms, '' once a PUT cleared
   * it; extMax, extNegMin: the texts last written to its `ext` set, never more than it holds). No TTL.
   */
  meta: (prefix: string, name: string) => keyOf(prefix, "hist", name),
  /**
   * Sorted set: member = bucket index, score = observations in it that UTC day.
   * (A day stored before its sum moved to the month rollup also has a member
   * `sum`; reads add it.)
   */
  day: (prefix: string, name: string, dayMs: number) => keyOf(prefix, "hist", name, dayLabel(dayMs)),
  /**
   * Sorted set of that day's extremes: `max` scored with the largest value,
   * `min` with the negated smallest, so one `ZADD GT` keeps both and a
   * `ZUNION … AGGREGATE MAX` of days gives the range's.
   */
  ext: (prefix: string, name: string, dayMs: number) => keyOf(prefix, "hist", name, dayLabel(dayMs), "ext"),
  /**
   * Monthly rollup (issue 15): the sum of the month's day sets (buckets), kept
   * at write time, so a long read unions months in the middle instead of every
   * day; and each day's sum of values as the member `s:<yyyymmdd>` (one
   * ZINCRBY is the day's sum and, over the month's members, the month's).
   * `…:<name>:202611` (six digits: never a day key).
   */
  month: (prefix: string, name: string, monthMs: number) => keyOf(prefix, "hist", name, periodLabel("month", monthMs)),
  /**
   * Scratch union of a read, its size checked before anything is loaded. Without `id`: deleted by
   * the same script. With `id` (one per request: a read whose answer a `ZPOPMIN` after its script
   * takes, which also deletes it): no other call knows the name, so nothing can come between.
   */
  scratch: (prefix: string, name: string, id?: string) =>
    id === undefined ? keyOf(prefix, "hist", name, "tmp") : keyOf(prefix, "hist", name, "tmp", id),
  /**
   * Sorted set of the listed names, scored with the epoch ms at which each was last stamped: by the
   * write that created it or changed its listing deadline (`deadlines`); above the set's highest
   * whatever the writer's clock (listing.ts, review 25). The list pages it, most
   * recent first: a score that only rises, to the time of the change, is what a pass by cursor
   * needs (src/redis/pages.ts); scored by the deadline, a name rising mid-pass to no later than
   * the first page's highest was missed (review 23). Same members as `deadlines`.
   */
  registry: (prefix: string) => keyOf(prefix, "hist", "_recent"),
  /**
   * Sorted set of the listed names scored with the epoch ms until which each is listed: when its
   * newest data expires (or, without data, when data written on its last PUT day would). The list
   * drops names past it from both sets. Until review 24 this was the registry the list paged (the
   * key keeps its name, so a registry written before needs no migration of its deadlines).
   */
  deadlines: (prefix: string) => keyOf(prefix, "hist", "_names"),
};

/** Start times of the UTC days from `from` to `to` inclusive (both day starts). */
export function daysBetween(from: number, to: number): number[] {
  const out: number[] = [];
  for (let day = dayStart(from); day <= to; day += DAY) out.push(day);
  return out;
}

/**
 * Every day that may still hold data of a histogram at `now`: a day key lives
 * at most MAX_RETENTION_DAYS after its day ends, and `at` may run 5 minutes ahead.
 * A margin of a day each way covers clocks that disagree a little. Deletes and
 * retention changes pass these keys, since a script may touch only declared
 * keys and SCAN is off limits.
 */
export function liveDays(now: number): number[] {
  const today = dayStart(now);
  return daysBetween(today - (MAX_RETENTION_DAYS + 1) * DAY, today + 2 * DAY);
}

/** `2026-11-22` for the UTC day starting at `dayMs`. */
export function isoDay(dayMs: number): string {
  return new Date(dayMs).toISOString().slice(0, 10);
}

/** Epoch ms until which a day's keys live under a retention: `retentionDays` after the day ends. */
export function dayUntil(dayMs: number, retentionDays: number): number {
  return dayMs + (retentionDays + 1) * DAY;
}

/** Start of the UTC month containing `ms`. */
export function monthOf(ms: number): number {
  return periodStart("month", ms);
}

/** Months that overlap the live days: the month rollups that may still exist. */
export function liveMonths(now: number): number[] {
  const days = liveDays(now);
  const out: number[] = [];
  for (let m = monthOf(days[0] as number); m <= (days.at(-1) as number); m = periodEnd("month", m)) out.push(m);
  return out;
}

/**
 * The keys that hold the data of `days` and `months`, as the scripts take them:
 * each day's buckets and extremes, each month's rollup.
 */
export function dataKeys(
  prefix: string,
  name: string,
  days: readonly number[],
  months: readonly number[],
): { days: string[]; exts: string[]; months: string[] } {
  return {
    days: days.map((day) => histogramKeys.day(prefix, name, day)),
    exts: days.map((day) => histogramKeys.ext(prefix, name, day)),
    months: months.map((month) => histogramKeys.month(prefix, name, month)),
  };
}
