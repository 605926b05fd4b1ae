import { ValidationError, type FieldIssue } from "../errors.ts";
import { invalid, isName, MAX_BATCH, MAX_INCREMENT, NAME_RULE, textProblem, utf8Length } from "../validation.ts";
import { MAX_KEEP_SEASONS, RESETS, seasonSelectorProblem, type Reset, type SeasonSelector } from "./seasons.ts";

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
const TIE_POLICIES: readonly TiePolicy[] = ["joined", "reached"];
export type SetMode = "replace" | "best";

/** One score change: an increment, or a new value (`best` keeps the higher of old and new). */
export type ScoreChange = { by: number } | { set: number; mode?: SetMode };

export function scoreProblem(value: unknown, bound = MAX_SCORE): string | null {
  if (typeof value !== "number" || !Number.isFinite(value)) return "must be a finite number";
  if (Math.abs(value) > bound) return `must be within ±${bound}`;
  return null;
}

/**
 * What is wrong with a profile's `meta`, or null. It must be checked as sent (the parsed body, not
 * a copy): it is stored as `JSON.stringify` writes it, so a value JSON would not give back is
 * refused, not changed: a non-finite number (`1e400` parses to Infinity, written as null) and a
 * `__proto__` key at any depth (a copy made by assignment, as zod's `z.record`, loses it).
 */
export function metaProblem(meta: unknown): string | null {
  if (meta === undefined || meta === null) return null;
  if (typeof meta !== "object" || Array.isArray(meta)) return "must be a JSON object";
  if (utf8Length(JSON.stringify(meta)) > MAX_META_BYTES) return `must be at most ${MAX_META_BYTES} bytes as JSON`;
  // within the size bound, so the walk is short; a stack, not recursion, for deep nesting
  const pending: unknown[] = [meta];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === "number" && !Number.isFinite(value)) return "must hold finite numbers only";
    if (typeof value !== "object" || value === null) continue;
    if (!Array.isArray(value) && Object.hasOwn(value, "__proto__")) return "must not hold a __proto__ key";
    pending.push(...Object.values(value));
  }
  return null;
}

function nameIssue(path: string, value: string): FieldIssue | null {
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

function batchIssue(length: number, path: string): FieldIssue | null {
  return length >= 1 && length <= MAX_BATCH ? null : { path, message: `must hold 1 to ${MAX_BATCH} items` };
}

export function profileIssues(name: string, meta: unknown, score: unknown): (FieldIssue | null)[] {
  const nameProblem = typeof name === "string" ? textProblem(name) : "must be a string";
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

/* The checks each operation runs before its script: every issue found, in one ValidationError (src/validation.ts, invalid). */

const found = (issues: (FieldIssue | null)[]): FieldIssue[] => issues.filter((i): i is FieldIssue => i !== null);

/** A board name, and a player name when given. */
export function checkBoard(board: string, player?: string): void {
  const issues = found([nameIssue("board", board), player === undefined ? null : nameIssue("player", player)]);
  if (issues.length > 0) invalid(issues);
}

/** Settings of `PUT /v1/leaderboards/{board}`: omitted keeps, `null` clears a guard. */
export interface BoardConfig {
  /**
   * Of equal scores, who ranks higher: `joined` the earlier joiner, `reached` whoever reached the
   * score first. Changes only while the board has no players.
   * @default "joined" on a new board; the current policy when omitted
   */
  ties?: TiePolicy | undefined;
  /**
   * When a new season starts (UTC): `none`, `daily`, `weekly` (ISO weeks) or `monthly`. Changes
   * only while the board has no players.
   * @default "none" on a new board; the current value when omitted
   */
  reset?: Reset | undefined;
  /** Finished seasons kept, 1..52. @default 12 on a new board; the current value when omitted */
  keepSeasons?: number | undefined;
  /** Lowest score a change may leave (within ±1e15); `null` clears it. @default none on a new board; the current value when omitted */
  minScore?: number | null | undefined;
  /** Highest score a change may leave (within ±1e15); `null` clears it. @default none on a new board; the current value when omitted */
  maxScore?: number | null | undefined;
  /** Most `|by|` one request may add to a player (> 0, ≤ 1e12); `null` clears it. @default none on a new board; the current value when omitted */
  maxIncrement?: number | null | undefined;
}

function guardIssue(path: string, v: number | null | undefined, bound: number, positive = false): FieldIssue | null {
  if (v === undefined || v === null) return null;
  const problem = scoreProblem(v, bound);
  if (problem) return { path, message: problem };
  return positive && v <= 0 ? { path, message: "must be greater than 0" } : null;
}

export function checkConfig(board: string, c: BoardConfig): void {
  const issues = found([
    nameIssue("board", board),
    c.ties === undefined || TIE_POLICIES.includes(c.ties)
      ? null
      : { path: "ties", message: "must be 'joined' or 'reached'" },
    c.reset === undefined || RESETS.includes(c.reset)
      ? null
      : { path: "reset", message: "must be 'none', 'daily', 'weekly' or 'monthly'" },
    c.keepSeasons === undefined ||
    (Number.isInteger(c.keepSeasons) && c.keepSeasons >= 1 && c.keepSeasons <= MAX_KEEP_SEASONS)
      ? null
      : { path: "keepSeasons", message: `must be an integer from 1 to ${MAX_KEEP_SEASONS}` },
    guardIssue("minScore", c.minScore, MAX_SCORE),
    guardIssue("maxScore", c.maxScore, MAX_SCORE),
    guardIssue("maxIncrement", c.maxIncrement, MAX_INCREMENT, true),
    typeof c.minScore === "number" && typeof c.maxScore === "number" && c.minScore > c.maxScore
      ? { path: "minScore", message: "must not exceed maxScore" }
      : null,
  ]);
  if (issues.length > 0) invalid(issues);
}

export function checkJoin(board: string, player: string, name: string, meta: unknown, score: unknown): void {
  checkBoard(board, player);
  const issues = found(profileIssues(name, meta, score));
  if (issues.length > 0) invalid(issues);
}

/** A batch of score changes (items named `items.<i>.` when they came as a list: by default, when there are several). */
export function checkChanges(
  board: string,
  changes: (ScoreChange & { player: string })[],
  list = changes.length > 1,
): void {
  checkBoard(board);
  const size = batchIssue(changes.length, "items");
  if (size) invalid([size]);
  const prefixOf = (i: number) => (list ? `items.${i}.` : "");
  const issues = found(
    changes.flatMap((c, i) => [nameIssue(`${prefixOf(i)}player`, c.player), ...changeIssues(c, prefixOf(i))]),
  );
  if (issues.length > 0) invalid(issues);
}

export function checkSeason(season: SeasonSelector | undefined): void {
  if (season === undefined) return;
  const problem = seasonSelectorProblem(season);
  if (problem) throw new ValidationError(`Invalid season: ${problem}.`, [{ path: "season", message: problem }]);
}

export function checkPage(board: string, page: number, limit: number, season: SeasonSelector | undefined): void {
  const issues = found([
    nameIssue("board", board),
    Number.isInteger(page) && page >= 1 && page <= 1_000_000
      ? null
      : { path: "page", message: "must be an integer from 1 to 1000000" },
    Number.isInteger(limit) && limit >= 1 && limit <= MAX_PAGE_LIMIT
      ? null
      : { path: "limit", message: `must be an integer from 1 to ${MAX_PAGE_LIMIT}` },
  ]);
  if (issues.length > 0) invalid(issues);
  checkSeason(season);
}

export function checkAround(board: string, player: string, k: number, season: SeasonSelector | undefined): void {
  checkBoard(board, player);
  if (!(Number.isInteger(k) && k >= 0 && k <= MAX_AROUND))
    invalid([{ path: "k", message: `must be an integer from 0 to ${MAX_AROUND}` }]);
  checkSeason(season);
}

export function checkSubset(board: string, players: string[], season: SeasonSelector | undefined): void {
  checkBoard(board);
  const issues = found([
    players.length >= 1 && players.length <= MAX_BATCH
      ? null
      : { path: "players", message: `must hold 1 to ${MAX_BATCH} players` },
    ...players.map((p, i) => nameIssue(`players.${i}`, p)),
  ]);
  if (issues.length > 0) invalid(issues);
  checkSeason(season);
}
