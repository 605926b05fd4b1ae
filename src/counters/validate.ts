/**
 * Checks of counter writes and reads beyond what src/validation.ts shares: all run before the
 * first Redis call, so bad input writes nothing. (Score bounds and calendar ranges are parsed,
 * and refused, in ./select.ts.)
 */
import { DAY, periodEnd, PERIODS, type Period } from "../time.ts";
import { invalid, MAX_BATCH, MAX_INCREMENT, memberProblem } from "../validation.ts";
import type { IncrItem } from "./increment.ts";
import type { UnionOptions } from "./union.ts";
import type { Aggregate } from "./keys.ts";
import { MAX_BUCKET_AGE_DAYS, MAX_RAW_BUCKETS, MAX_TTL_SECONDS, MAX_UNION_KEYS } from "./limits.ts";
import { BUCKET_TIME_PROBLEM, parseBucketTime } from "./bucket-time.ts";
import type { PeriodRange } from "./select.ts";

/** What a period outside PERIODS is told, as the route's enum says it. */
const PERIOD_CHOICE = `Invalid option: expected one of ${PERIODS.map((p) => `"${p}"`).join("|")}`;

/** ...and at most this far ahead of the server's clock. */
export const MAX_BUCKET_AHEAD_MS = 5 * 60_000;
/** Most sources one rollup names. */
export const MAX_UNION_SOURCES = 100;

export function checkMember(member: string, path = "member"): void {
  // the route's schema takes only strings; from JS a number or an object was written as its JSON (review 20)
  const problem = typeof member === "string" ? memberProblem(member) : "must be a string";
  if (problem) invalid([{ path, message: problem }]);
}

export function checkTtl(ttl: number | undefined, path: string): void {
  if (ttl !== undefined && !(Number.isInteger(ttl) && ttl >= 1 && ttl <= MAX_TTL_SECONDS))
    invalid([{ path, message: `must be whole seconds from 1 to ${MAX_TTL_SECONDS}` }]);
}

function checkIncrement(by: number, path: string): void {
  if (!Number.isFinite(by) || Math.abs(by) > MAX_INCREMENT)
    invalid([{ path, message: "must be a finite number within ±1e12" }]);
}

/** A batch holds 1 to MAX_BATCH items. */
export function checkBatch(items: readonly unknown[]): void {
  if (items.length < 1 || items.length > MAX_BATCH)
    invalid([{ path: "items", message: `must hold 1 to ${MAX_BATCH} items` }]);
}

/**
 * Refuses a bucket time the counter could not usefully store: more than
 * MAX_BUCKET_AGE_DAYS old, older than the write's own ttl (the bucket would
 * hold data already past its retention), or more than 5 minutes ahead.
 */
function checkBucketAge(when: number, now: number, ttl: number | undefined, period: Period, path: string): void {
  if (when > now + MAX_BUCKET_AHEAD_MS) invalid([{ path, message: "must not be more than 5 minutes in the future" }]);
  if (when < now - MAX_BUCKET_AGE_DAYS * DAY)
    invalid([{ path, message: `must not be more than ${MAX_BUCKET_AGE_DAYS} days in the past` }]);
  // A bucket lives as long as its ttl from the write, so what matters is whether its period ended
  // longer than the ttl ago (today's bucket takes a write dated this morning with a 1 h ttl).
  if (ttl !== undefined && periodEnd(period, when) < now - ttl * 1000) {
    invalid([
      { path, message: `must not be older than the item's ttl (${ttl} s): that data would already have expired` },
    ]);
  }
}

/**
 * Checks one increment (`path` prefixes its fields, "" for a single item) and returns the time of
 * its bucket: `at`, or `now` without one; undefined for an item of the plain counter.
 */
export function checkIncrItem(item: IncrItem, path: string, now: number): number | undefined {
  const at = (field: string) => (path ? `${path}.${field}` : field);
  checkMember(item.member, at("member"));
  checkIncrement(item.by ?? 1, at("by"));
  checkTtl(item.ttl, at("ttl"));
  // the route's enum; from JS another period wrote a key with an empty label no read names (review 20)
  if (item.period !== undefined && !PERIODS.includes(item.period))
    invalid([{ path: at("period"), message: PERIOD_CHOICE }]);
  if (item.period === undefined) {
    if (item.at !== undefined) invalid([{ path: at("at"), message: "only allowed with period" }]);
    return undefined;
  }
  const when = item.at === undefined ? now : parseBucketTime(item.at);
  if (when === null) return invalid([{ path: at("at"), message: BUCKET_TIME_PROBLEM }]);
  checkBucketAge(when, now, item.ttl, item.period, at("at"));
  return when;
}

/** A read of the plain counter takes no aggregate; min and max read every bucket, so their ranges are capped. */
export function checkAggregate(aggregate: Aggregate | undefined, range: PeriodRange | undefined): void {
  if (!range) {
    if (aggregate !== undefined) invalid([{ path: "aggregate", message: "only allowed with period" }]);
    return;
  }
  if (aggregate !== undefined && aggregate !== "sum" && range.starts.length > MAX_RAW_BUCKETS) {
    invalid([
      {
        path: "aggregate",
        message: `${aggregate} reads every bucket: at most ${MAX_RAW_BUCKETS} buckets (this range has ${range.starts.length}); use sum, a coarser period or a shorter range`,
      },
    ]);
  }
}

/** A rollup's sources (1 to MAX_UNION_SOURCES), one finite weight per source, its ttl. */
export function checkUnion(options: UnionOptions): void {
  const { sources, weights } = options;
  if (sources.length < 1 || sources.length > MAX_UNION_SOURCES)
    invalid([{ path: "sources", message: `must hold 1 to ${MAX_UNION_SOURCES} sources` }]);
  if (weights !== undefined && weights.length !== sources.length)
    invalid([{ path: "weights", message: "must hold one weight per source" }]);
  weights?.forEach((w, i) => checkIncrement(w, `weights.${i}`));
  checkTtl(options.ttl, "ttl");
}

export function checkUnionKeys(expanded: number, more = false): void {
  if (expanded > MAX_UNION_KEYS)
    invalid([
      {
        path: "sources",
        message: `expand to ${more ? "at least " : ""}${expanded} keys; at most ${MAX_UNION_KEYS} per rollup`,
      },
    ]);
}
