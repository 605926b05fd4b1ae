/**
 * Pure checks shared by the HTTP schemas and the library (no zod, no Hono).
 */
import { ValidationError, type FieldIssue } from "./errors.ts";
import { NAME_PATTERN, NAME_RULE } from "./names.ts";

export { NAME_PATTERN, NAME_RULE };
/** Members and ids: at most this many UTF-8 bytes. */
export const MAX_MEMBER_BYTES = 256;
/** Largest absolute increment one write may carry. */
export const MAX_INCREMENT = 1e12;
/** Largest batch one request may carry. */
export const MAX_BATCH = 1000;

const encoder = new TextEncoder();

export function utf8Length(value: string): number {
  return encoder.encode(value).length;
}

// C0, DEL and C1 control characters; also lone surrogates, which cannot be encoded as UTF-8.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Returns why `value` is not a valid member/id, or null when it is. A member is also a URL path
 * segment (`…/members/{member}`), where "." and ".." are dot segments that URL parsing removes,
 * so such a member could be written and listed but never read or deleted by its path (review 7).
 */
export function memberProblem(value: string): string | null {
  if (value === "." || value === "..") return "must not be '.' or '..' (a URL path cannot name it)";
  return textProblem(value);
}

/** Returns why `value` is not valid free text (display names, units: never a path segment), or null. */
export function textProblem(value: string): string | null {
  if (value.length === 0) return "must not be empty";
  if (CONTROL.test(value)) return "must not contain control characters";
  if (LONE_SURROGATE.test(value)) return "must be valid Unicode (no lone surrogates)";
  // A UTF-16 code unit is at most 3 UTF-8 bytes: short strings need no encoding (the hot path of 1,000-item batches).
  if (value.length * 3 > MAX_MEMBER_BYTES && utf8Length(value) > MAX_MEMBER_BYTES)
    return `must be at most ${MAX_MEMBER_BYTES} UTF-8 bytes`;
  return null;
}

export function isName(value: string): boolean {
  return NAME_PATTERN.test(value);
}

/** Refuses a request: one ValidationError listing every issue, its message naming the first. */
export function invalid(issues: FieldIssue[]): never {
  const first = issues[0];
  throw new ValidationError(`Invalid field '${first?.path ?? ""}': ${first?.message ?? "bad value"}.`, issues);
}

/** Refuses `value` unless it is a valid name; `path` names the field (`stream`, `counter`, ...). */
export function assertName(value: string, path: string): void {
  if (!isName(value)) invalid([{ path, message: NAME_RULE }]);
}

/** Paging of a registry list (counters, histograms, boards): names to skip, and most names to return. */
export interface PageOptions {
  /** Names to skip (the previous page's next offset). @default 0 */
  offset?: number | undefined;
  /** Most names to return, 1..the list's maximum. @default the list's maximum */
  limit?: number | undefined;
}

/** Deepest offset a list accepts. */
export const MAX_OFFSET = 1_000_000;

/** `offset` and `limit` with their defaults; both refused together (400) when out of range. */
export function listPage(options: PageOptions, maxLimit: number): { offset: number; limit: number } {
  const offset = options.offset ?? 0;
  const limit = options.limit ?? maxLimit;
  const issues: FieldIssue[] = [];
  if (!Number.isInteger(offset) || offset < 0 || offset > MAX_OFFSET)
    issues.push({ path: "offset", message: `must be an integer from 0 to ${MAX_OFFSET}` });
  if (!Number.isInteger(limit) || limit < 1 || limit > maxLimit)
    issues.push({ path: "limit", message: `must be an integer from 1 to ${maxLimit}` });
  if (issues.length > 0) invalid(issues);
  return { offset, limit };
}
