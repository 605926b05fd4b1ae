/**
 * The time of a calendar bucket, which both an increment's validation (./validate.ts) and the
 * reads' ranges (./select.ts) parse: apart from ./select.ts's read helpers, so a cold isolate's
 * first increment loads none of them.
 */
import { parseAt } from "../time.ts";

/** Earliest time a calendar bucket may belong to: bucket labels hold four-digit years. */
export const MIN_BUCKET_TIME = Date.UTC(1000, 0, 1);
/** Latest time a calendar bucket may belong to (end of year 9999). */
export const MAX_BUCKET_TIME = Date.UTC(10000, 0, 1) - 1;

/**
 * Parses the time of a calendar bucket: epoch ms or ISO-8601, within years
 * 1000..9999; null otherwise. Outside those years a label is no longer a
 * four-digit year (or no date at all, `NaNNaN`), and `Date.parse` rolls a
 * date that does not exist (2026-02-30) into the next month, where a typo
 * would silently count into the wrong bucket.
 */
export function parseBucketTime(value: string | number): number | null {
  const ms = parseAt(value);
  if (ms === null || ms < MIN_BUCKET_TIME || ms > MAX_BUCKET_TIME) return null;
  if (typeof value === "string") {
    const [y, m, d] = [value.slice(0, 4), value.slice(5, 7), value.slice(8, 10)].map(Number) as [
      number,
      number,
      number,
    ];
    if (new Date(Date.UTC(y, m - 1, d)).getUTCDate() !== d) return null;
  }
  return ms;
}

/** The message of a time that `parseBucketTime` refuses. */
export const BUCKET_TIME_PROBLEM = "must be epoch ms or an ISO-8601 date (a real date in years 1000..9999)";
