/**
 * Presence's checks of its inputs, all refused as a ValidationError through
 * src/validation.ts's `invalid` (names through `assertName`).
 */
import type { FieldIssue } from "../errors.ts";
import { DAY, SECOND } from "../time.ts";
import { MAX_BATCH, invalid, memberProblem } from "../validation.ts";

/** Seconds without a heartbeat after which an id is offline, unless configured. */
export const DEFAULT_TIMEOUT_SECONDS = 300;
export const MAX_ROOMS_LISTED = 1000;
export const MAX_MEMBERS_PAGE = 1000;
/** History points kept: one a minute for a day. */
export const HISTORY_HOURS = 24;

/** Rejects the whole batch when any id is bad, naming each bad one. */
export function requireIds(ids: readonly string[], path = "ids"): void {
  if (ids.length === 0 || ids.length > MAX_BATCH) invalid([{ path, message: `must hold 1 to ${MAX_BATCH} ids` }]);
  const issues: FieldIssue[] = [];
  ids.forEach((id, i) => {
    const problem = typeof id === "string" ? memberProblem(id) : "must be a string";
    if (problem) issues.push({ path: `${path}.${i}`, message: problem });
  });
  if (issues.length > 0) invalid(issues);
}

/** The offline timeout in ms; `seconds` must be a positive integer. */
export function timeoutMs(seconds = DEFAULT_TIMEOUT_SECONDS): number {
  if (!Number.isInteger(seconds) || seconds < 1)
    invalid([{ path: "timeoutSeconds", message: "must be a positive integer" }]);
  return seconds * SECOND;
}

/** `value` (default `fallback`) when it is an integer from 1 to `max`. */
export function pageLimit(value: number | undefined, fallback: number, max: number, path = "limit"): number {
  const limit = value ?? fallback;
  if (!Number.isInteger(limit) || limit < 1 || limit > max)
    invalid([{ path, message: `must be an integer from 1 to ${max}` }]);
  return limit;
}

const MEMBER_CURSOR = /^(\d{1,16})-([1-9]\d{0,15})$/;

/** A `nextCursor` of the members list as (score, compact id); '' and '' for the first page. */
export function memberCursor(cursor: string | undefined): { score: string; member: string } {
  return parseCursor(cursor, MEMBER_CURSOR);
}

function parseCursor(cursor: string | undefined, pattern: RegExp): { score: string; member: string } {
  if (cursor === undefined || cursor === "") return { score: "", member: "" };
  const m = pattern.exec(cursor);
  if (!m) invalid([{ path: "cursor", message: "not a cursor of this endpoint" }]);
  return { score: m[1] ?? "", member: m[2] ?? "" };
}

/** Past days a room's figures are kept for (`GET /v1/presence/{room}?day=`), today not counted. */
export const DAYS_KEPT = 400;

const DAY_PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/;

/**
 * The start (epoch ms) of a `YYYY-MM-DD` UTC day from today back DAYS_KEPT days; any other
 * day (not a calendar date, in the future, or older) is refused.
 */
export function keptDay(day: string, now: number): number {
  const m = DAY_PATTERN.exec(day);
  const start = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : NaN;
  if (!m || new Date(start).toISOString().slice(0, 10) !== day)
    invalid([{ path: "day", message: "must be a UTC date YYYY-MM-DD" }]);
  const today = Math.floor(now / DAY) * DAY;
  if (start > today) invalid([{ path: "day", message: "must not be in the future" }]);
  if (start < today - DAYS_KEPT * DAY) invalid([{ path: "day", message: `must be within the last ${DAYS_KEPT} days` }]);
  return start;
}
