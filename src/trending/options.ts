import { ValidationError } from "../errors.ts";
import { assertName } from "../validation.ts";

/** Widest window a read may ask for (`168h` = `7d`). */
export const MAX_WINDOW_HOURS = 168;
/** Largest `n` of a top-N read. */
export const MAX_TOP_N = 100;
/** Events may be stamped at most this far in the future (clock skew). */
export const MAX_FUTURE_MS = 5 * 60 * 1000;
export { STANDARD_WINDOWS } from "./keys.ts";

/** Settings of the trending area, taken from the deployment config. */
export interface TrendingSettings {
  /** Hours an hourly bucket lives after its hour. @default 50 */
  retentionHours: number;
}

/**
 * Hours back a window may reach: a bucket of hour h lives until h + 1 + retention,
 * so a window of w finished hours is complete only while w ≤ retention.
 */
export function horizonOf(retentionHours: number): number {
  return Math.min(retentionHours, MAX_WINDOW_HOURS);
}

export function assertStream(stream: string): void {
  assertName(stream, "stream");
}

export function assertWindow(windowHours: number, retentionHours: number): void {
  const horizon = horizonOf(retentionHours);
  if (!Number.isInteger(windowHours) || windowHours < 1 || windowHours > horizon) {
    throw new ValidationError(`The window must be 1h..${horizon}h: buckets are kept ${retentionHours} h.`, [
      { path: "window", message: `must be 1h..${horizon}h (retention ${retentionHours} h)` },
    ]);
  }
}

/** Seconds until `untilMs`, at least 1 (EXPIRE with 0 would delete the key). */
export function secondsUntil(untilMs: number, now: number): number {
  return Math.max(1, Math.ceil((untilMs - now) / 1000));
}
