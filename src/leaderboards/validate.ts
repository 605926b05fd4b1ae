import type { FieldIssue } from "../errors.ts";
import { invalid, isName, MAX_BATCH, MAX_INCREMENT, memberProblem, NAME_RULE, utf8Length } from "../validation.ts";

/**
 * Pure checks of leaderboard input, shared by the library and the route
 * schemas, so the library refuses bad input before any Redis call even when
 * it is used without the HTTP layer.
 */

/**
 * Largest absolute score a board keeps. Scores are IEEE doubles in Redis; every
 * integer up to 2^53 (≈ 9.007e15) is exact, so integer scores and integer
 * increments are exact within this bound, which the scripts enforce on every
 * result (an increment that would leave it is refused).
 */
export const MAX_SCORE = 1e15;
/** Largest profile `meta`, as JSON text. */
export const MAX_META_BYTES = 4096;
/** Largest page size. */
export const MAX_PAGE_LIMIT = 100;
/** Largest `k` for around-me (so at most 2k + 1 rows). */
export const MAX_AROUND = 50;
/** Most board names the list endpoint returns. */
export const MAX_LISTED_BOARDS = 1000;

export type TiePolicy = "joined" | "reached";
export const TIE_POLICIES: readonly TiePolicy[] = ["joined", "reached"];
export type SetMode = "replace" | "best";

/** One score change: an increment, or a new value (`best` keeps the higher of old and new). */
export type ScoreChange = { by: number } | { set: number; mode?: SetMode };

export function scoreProblem(value: unknown, bound = MAX_SCORE): string | null {
  if (typeof value !== "number" || !Number.isFinite(value)) return "must be a finite number";
  if (Math.abs(value) > bound) return `must be within ±${bound}`;
  return null;
}

export function metaProblem(meta: unknown): string | null {
  if (meta === undefined || meta === null) return null;
  if (typeof meta !== "object" || Array.isArray(meta)) return "must be a JSON object";
  if (utf8Length(JSON.stringify(meta)) > MAX_META_BYTES) return `must be at most ${MAX_META_BYTES} bytes as JSON`;
  return null;
}

/** Throws one ValidationError listing every issue, if any. */
export function assertValid(issues: (FieldIssue | null)[]): void {
  const found = issues.filter((i): i is FieldIssue => i !== null);
  if (found.length > 0) invalid(found);
}

export function nameIssue(path: string, value: string): FieldIssue | null {
  return isName(value) ? null : { path, message: NAME_RULE };
}

export function changeIssues(change: ScoreChange, path: string): (FieldIssue | null)[] {
  if ("by" in change) {
    const problem = scoreProblem(change.by, MAX_INCREMENT);
    return [problem ? { path: `${path}by`, message: problem } : null];
  }
  const problem = scoreProblem(change.set);
  const mode = change.mode ?? "replace";
  return [
    problem ? { path: `${path}set`, message: problem } : null,
    mode === "replace" || mode === "best" ? null : { path: `${path}mode`, message: "must be 'replace' or 'best'" },
  ];
}

export function batchIssue(length: number, path: string): FieldIssue | null {
  return length >= 1 && length <= MAX_BATCH ? null : { path, message: `must hold 1 to ${MAX_BATCH} items` };
}

export function profileIssues(name: string, meta: unknown, score: unknown): (FieldIssue | null)[] {
  const nameProblem = typeof name === "string" ? memberProblem(name) : "must be a string";
  const meta_ = metaProblem(meta);
  const score_ = score === undefined ? null : scoreProblem(score);
  return [
    nameProblem ? { path: "name", message: nameProblem } : null,
    meta_ ? { path: "meta", message: meta_ } : null,
    score_ ? { path: "score", message: score_ } : null,
  ];
}

/**
 * Redis holds −score; a JS number formats to its shortest round-trip text, so
 * the string Redis parses is exactly this double. `0 - x` turns −0 into 0.
 */
export function negated(score: number): string {
  return String(0 - score);
}

/** A stored (negated) score as Redis printed it, back to the player's score. */
export function scoreOf(stored: string): number {
  return 0 - Number(stored);
}
