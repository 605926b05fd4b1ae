import type { Ctx } from "../context.ts";
import { ValidationError, type FieldIssue } from "../errors.ts";
import { HOUR, hourIndex, parseAt } from "../time.ts";
import { assertName, invalid, MAX_BATCH, MAX_INCREMENT, memberProblem } from "../validation.ts";

/** Widest window a read may ask for (`168h` = `7d`). */
export const MAX_WINDOW_HOURS = 168;
/**
 * Most one member's count in one hour may reach (review 10). A window sums at most
 * MAX_WINDOW_HOURS + 1 = 169 hours (168 finished and the current one), so every sum a read or a
 * union takes stays at most 169 × 5e13 = 8.45e15, below 2^53 ≈ 9.007e15: integer counts add up
 * exactly and `exact: true` is true. (2^53 / 169 ≈ 5.33e13; 5e13 is the round number below.)
 * Before, 1e16 + 1 + 1 answered 1e16 with `exact: true`. The record script refuses a write that
 * would pass it, before writing anything.
 */
export const MAX_HOUR_COUNT = 5e13;
/**
 * The error the record script raises when a member's count in an hour would pass
 * MAX_HOUR_COUNT, followed by the increment's index (1-based) and the count it held
 * (scripts.ts says why an error and not a refusal).
 */
export const HOUR_COUNT_ERROR = "ERR trending.record hour_count";
/** Largest `n` of a top-N read. */
export const MAX_TOP_N = 100;
/** Largest number of names `GET /v1/trending` lists in one page. */
export const MAX_LISTED = 1000;
/** Events may be stamped at most this far in the future (clock skew). */
export const MAX_FUTURE_MS = 5 * 60 * 1000;
/**
 * Largest depth option of the top read: a round hands up to `depth` members of
 * each of the other two sets (three while the previous hour is not compacted)
 * to one ZMSCORE through Lua's unpack, which fails past about 8,000 values.
 */
export const MAX_DEPTH = 2048;

/** Settings of the trending area, taken from the deployment config. */
export interface TrendingSettings {
  /** Hours an hourly bucket lives after its hour. @default 50 */
  retentionHours: number;
}

/** An event as a write takes it. */
export interface TrendingEvent {
  member: string;
  /** @default 1 */
  count?: number;
  /** Epoch ms of the event. @default ctx.now */
  at?: number;
}

/** An event as the library's `record` takes it: `at` may also be ISO-8601, as the service's body takes it. */
export interface TrendingEventInput extends Omit<TrendingEvent, "at"> {
  /** Epoch ms or an ISO-8601 timestamp (UTC when it names no zone). @default ctx.now */
  at?: number | string;
}

/**
 * The events with each string `at` parsed as the service's schema parses it (src/time.ts
 * parseAt); one that is no timestamp is refused. Numbers pass unchanged, for checkEvents.
 */
export function parseEventTimes(events: readonly TrendingEventInput[], listKey = "events"): TrendingEvent[] {
  const issues: FieldIssue[] = [];
  const parsed = events.map((event, i): TrendingEvent => {
    if (typeof event.at !== "string") return event as TrendingEvent;
    const at = parseAt(event.at);
    if (at !== null) return { ...event, at };
    const path = events.length === 1 ? "at" : `${listKey}.${i}.at`;
    issues.push({ path, message: "must be epoch milliseconds or an ISO-8601 timestamp" });
    return event as TrendingEvent;
  });
  if (issues.length > 0) invalid(issues);
  return parsed;
}

/**
 * Hours back a window may reach: a bucket of hour h lives until h + 1 + retention,
 * so a window of w finished hours is complete only while w ≤ retention.
 */
export function horizonOf(retentionHours: number): number {
  return Math.min(retentionHours, MAX_WINDOW_HOURS);
}

/** The window (and rising baseline) a read takes when it names none: 24 h, or the retention if shorter. */
export function defaultWindowOf(retentionHours: number): number {
  return Math.min(24, horizonOf(retentionHours));
}

export function assertStream(stream: string): void {
  assertName(stream, "stream");
}

export function assertMember(member: string): void {
  const problem = memberProblem(member);
  if (problem) invalid([{ path: "member", message: problem }]);
}

export function assertWindow(windowHours: number, retentionHours: number): void {
  const horizon = horizonOf(retentionHours);
  if (!Number.isInteger(windowHours) || windowHours < 1 || windowHours > horizon) {
    invalid([{ path: "window", message: `must be 1h..${horizon}h (retention ${retentionHours} h)` }]);
  }
}

/** A count of finished hours back (`baseline` of a rising read, `hours` of a history): 1..horizon, as a window. */
export function assertHours(path: string, hours: number, retentionHours: number): void {
  const horizon = horizonOf(retentionHours);
  if (!Number.isInteger(hours) || hours < 1 || hours > horizon) {
    invalid([{ path, message: `must be 1..${horizon} hours (retention ${retentionHours} h)` }]);
  }
}

export function assertTopN(n: number): void {
  if (!Number.isInteger(n) || n < 1 || n > MAX_TOP_N)
    invalid([{ path: "n", message: `must be an integer from 1 to ${MAX_TOP_N}` }]);
}

/** The threshold read's depth options (tests and benchmarks set them). */
export function assertDepths(depths: { firstDepth: number; maxDepth: number }): void {
  const issues: FieldIssue[] = [];
  for (const path of ["firstDepth", "maxDepth"] as const) {
    const d = depths[path];
    if (!Number.isInteger(d) || d < 1 || d > MAX_DEPTH)
      issues.push({ path, message: `must be an integer from 1 to ${MAX_DEPTH}` });
  }
  if (issues.length > 0) invalid(issues);
}

/**
 * Checks every event before anything is written: a bad one rejects the batch.
 * An event must land in an hour some window can still read (≥ current hour −
 * horizon) and be at most 5 minutes in the future. `listKey` is the list's
 * field path in the request body, for error details.
 */
export function checkEvents(ctx: Ctx, events: TrendingEvent[], retentionHours: number, listKey = "events"): void {
  const at = (i: number, field: string) => (events.length === 1 ? field : `${listKey}.${i}.${field}`);
  const issues: FieldIssue[] = [];
  if (events.length < 1 || events.length > MAX_BATCH)
    issues.push({ path: listKey, message: `must hold 1..${MAX_BATCH} events` });
  const horizon = horizonOf(retentionHours);
  const oldestHour = hourIndex(ctx.now) - horizon;
  // past 168 h no window or history reads an hour, whatever the retention: say which limit it is (review 19)
  const tooOld =
    horizon < retentionHours
      ? `must be within the last ${horizon} hours (the widest window; retention ${retentionHours} h)`
      : `must be within the retention (${retentionHours} h)`;
  events.forEach((event, i) => {
    const problem = typeof event.member === "string" ? memberProblem(event.member) : "must be a string";
    if (problem) issues.push({ path: at(i, "member"), message: problem });
    const count = event.count ?? 1;
    if (typeof count !== "number" || !Number.isFinite(count) || count <= 0 || count > MAX_INCREMENT) {
      issues.push({ path: at(i, "count"), message: `must be a finite number, 0 < count ≤ ${MAX_INCREMENT}` });
    }
    if (event.at !== undefined) {
      if (!Number.isInteger(event.at)) issues.push({ path: at(i, "at"), message: "must be epoch milliseconds" });
      else if (event.at > ctx.now + MAX_FUTURE_MS)
        issues.push({ path: at(i, "at"), message: "must be at most 5 minutes in the future" });
      else if (hourIndex(event.at) < oldestHour) issues.push({ path: at(i, "at"), message: tooOld });
    }
  });
  if (issues.length > 0) invalid(issues);
}

/**
 * The 400 of a write the record script refused for MAX_HOUR_COUNT (HOUR_COUNT_ERROR: for each
 * (hour, member) increment past it, its index and the count it held); any other error as it was.
 * It names the first event, in the batch's order, whose count takes its member's hour past the bound.
 */
export function hourCountRefusal(
  error: unknown,
  events: TrendingEvent[],
  now: number,
  increments: readonly { hour: number; member: string }[],
  listKey = "events",
): unknown {
  const text = error instanceof Error ? error.message : "";
  const at = text.indexOf(HOUR_COUNT_ERROR);
  if (at < 0) return error;
  const words = text
    .slice(at + HOUR_COUNT_ERROR.length)
    .trim()
    .split(/\s+/);
  let first: { culprit: number; inc: { hour: number; member: string }; held: string } | undefined;
  for (let w = 0; w + 1 < words.length; w += 2) {
    const inc = increments[Number(words[w]) - 1];
    const held = words[w + 1] ?? "0";
    if (!inc) continue;
    let sum = Number(held);
    let culprit = -1;
    for (const [i, event] of events.entries()) {
      if (event.member !== inc.member || hourIndex(event.at ?? now) !== inc.hour) continue;
      culprit = i;
      sum += event.count ?? 1;
      if (sum > MAX_HOUR_COUNT) break;
    }
    if (!first || culprit < first.culprit) first = { culprit, inc, held };
  }
  if (!first) return error;
  const { culprit, inc, held } = first;
  return new ValidationError(
    `The count of '${inc.member}' in the hour from ${new Date(inc.hour * HOUR).toISOString()} would pass ` +
      `${MAX_HOUR_COUNT} (5e13; it holds ${String(Number(held))}), the most one member's hour may hold, ` +
      "so that every window's sum stays exact; nothing was recorded.",
    [
      {
        path: events.length === 1 ? "count" : `${listKey}.${culprit}.count`,
        message: `the member's count in its hour must stay ≤ ${MAX_HOUR_COUNT} (5e13)`,
      },
    ],
  );
}
