import type { Ctx } from "../context.ts";
import { ConflictError, NotFoundError, RejectedError, ValidationError } from "../errors.ts";
import { runRead, runWrite, type Idempotency } from "../redis/script.ts";
import { MAX_INCREMENT } from "../validation.ts";
import {
  assertBoard,
  cfgOf,
  RESET_LETTER,
  RESET_OF,
  seasonIdOf,
  type BoardConfig,
  type BoardSettings,
  type JoinInput,
  type JoinView,
  type ScoreResult,
  type Written,
} from "./common.ts";
import { boardKeys, registryKey } from "./keys.ts";
import { keptSeasons, MAX_KEEP_SEASONS, rankingKey, RESETS, seasonBlock } from "./seasons.ts";
import * as scripts from "./scripts.ts";
import {
  assertValid,
  batchIssue,
  changeIssues,
  MAX_SCORE,
  nameIssue,
  negated,
  profileIssues,
  scoreOf,
  scoreProblem,
  TIE_POLICIES,
  type ScoreChange,
  type TiePolicy,
} from "./validate.ts";

export * from "./validate.ts";
export * from "./seasons.ts";
export * from "./reads.ts";
export { createSnapshotJob, snapshotJob, type SnapshotOptions } from "./snapshot.ts";
export { percentileOf } from "./common.ts";
export type { BoardConfig, BoardSettings, JoinInput, JoinView, PlayerView, Row, ScoreResult, SeasonOption } from "./common.ts";

/**
 * Leaderboards: one ranking per board with fair ties, player profiles, pages
 * and around-me, seasons, guards, percentile, subset ranking and movement.
 * Every function is one Lua script, so one Redis round trip, and atomic:
 * concurrent increments of one player never lose points. Writes are here,
 * reads in reads.ts.
 */
/**
 * Creates a board or changes its settings: tie policy, seasons (`reset`,
 * `keepSeasons`) and guards (`minScore`, `maxScore`, `maxIncrement`; `null`
 * clears one). Omitted settings keep their value. Changing the tie policy or
 * the reset of a board that has players is a ConflictError: their tie-breaks
 * were taken under the old policy, and another reset would hide the live ranking.
 * @param config a tie policy alone is accepted too (the v1 signature).
 */
export async function configureBoard(ctx: Ctx, board: string, config: BoardConfig | TiePolicy = {}, idempotency?: Idempotency): Promise<Written<BoardSettings>> {
  const c: BoardConfig = typeof config === "string" ? { ties: config } : config;
  const guard = (path: string, v: number | null | undefined, bound: number, positive = false) => {
    if (v === undefined || v === null) return null;
    const problem = scoreProblem(v, bound);
    if (problem) return { path, message: problem };
    return positive && v <= 0 ? { path, message: "must be greater than 0" } : null;
  };
  assertValid([
    nameIssue("board", board),
    c.ties === undefined || TIE_POLICIES.includes(c.ties) ? null : { path: "ties", message: "must be 'joined' or 'reached'" },
    c.reset === undefined || RESETS.includes(c.reset) ? null : { path: "reset", message: "must be 'none', 'daily', 'weekly' or 'monthly'" },
    c.keepSeasons === undefined || (Number.isInteger(c.keepSeasons) && c.keepSeasons >= 1 && c.keepSeasons <= MAX_KEEP_SEASONS)
      ? null
      : { path: "keepSeasons", message: `must be an integer from 1 to ${MAX_KEEP_SEASONS}` },
    guard("minScore", c.minScore, MAX_SCORE),
    guard("maxScore", c.maxScore, MAX_SCORE),
    guard("maxIncrement", c.maxIncrement, MAX_INCREMENT, true),
    typeof c.minScore === "number" && typeof c.maxScore === "number" && c.minScore > c.maxScore ? { path: "minScore", message: "must not exceed maxScore" } : null,
  ]);
  const arg = (v: number | null | undefined) => (v === undefined ? "" : v === null ? "-" : String(v));
  const k = boardKeys(ctx.prefix, board);
  const season = seasonBlock(ctx.prefix, board, ctx.now);
  const { value, replayed } = await runWrite<{
    conflict?: TiePolicy;
    reset?: string;
    badRange?: true;
    players: number;
    ties: TiePolicy;
    createdAt: string;
    created: boolean;
    cfg: string;
    season: string;
  }>(
    ctx.redis,
    scripts.configureBoard,
    [k.settings, k.players, registryKey(ctx.prefix), ...season.keys],
    [board, ctx.now, c.ties ?? "", c.reset ? RESET_LETTER[c.reset] : "", c.keepSeasons ?? "", arg(c.minScore), arg(c.maxScore), arg(c.maxIncrement), ...season.args],
    idempotency,
  );
  if (value.badRange) throw new ValidationError("minScore would exceed maxScore; nothing was changed.", [{ path: "minScore", message: "must not exceed maxScore" }]);
  if (value.conflict) {
    throw new ConflictError(
      "board_not_empty",
      `Board '${board}' has ${value.players} players ranked with ties '${value.conflict}' and reset '${RESET_OF[value.reset ?? "n"]}'; delete the board (or its players) before changing the tie policy or the reset.`,
    );
  }
  return {
    value: { board, ties: value.ties, createdAt: Number(value.createdAt), players: value.players, created: value.created, ...cfgOf(value.cfg), season: seasonIdOf(value.season) },
    replayed,
  };
}

/** Board settings and the current season's player count; NotFoundError when the board does not exist. */
export async function boardInfo(ctx: Ctx, board: string): Promise<Omit<BoardSettings, "created">> {
  assertBoard(board);
  const k = boardKeys(ctx.prefix, board);
  const season = seasonBlock(ctx.prefix, board, ctx.now);
  const res = await runRead<{ missing?: true; ties: TiePolicy; createdAt: string; total: number; cfg: string; season: string }>(
    ctx.redis,
    scripts.countOf,
    [k.settings, ...season.keys],
    season.args,
  );
  if (res.missing) throw new NotFoundError(`No board '${board}'.`);
  return { board, ties: res.ties, createdAt: Number(res.createdAt), players: res.total, ...cfgOf(res.cfg), season: seasonIdOf(res.season) };
}

function rejected(board: string, value: { rejected: string; guard?: string; bound?: number; min?: number; max?: number; index?: number }, batch: boolean): never {
  const what =
    value.guard === "maxIncrement"
      ? `adds more than maxIncrement ${value.bound} to '${value.rejected}'`
      : value.guard
        ? `would take the score of '${value.rejected}' past ${value.guard} ${value.bound}`
        : `puts '${value.rejected}' outside the board's guards [${value.min ?? "-inf"}, ${value.max ?? "+inf"}]`;
  throw new RejectedError("score_rejected", `The request ${what} on board '${board}'; nothing was written.`, [
    { path: batch && value.index !== undefined ? `items.${value.index}` : "", message: value.guard ? `refused by ${value.guard}` : "refused by minScore/maxScore" },
  ]);
}

/**
 * Adds a player (creating the board with default settings if needed) or,
 * for an existing player, replaces name and meta while keeping score and
 * join time.
 */
export async function joinBoard(
  ctx: Ctx,
  board: string,
  player: string,
  input: JoinInput,
  idempotency?: Idempotency,
): Promise<Written<JoinView>> {
  assertBoard(board, player);
  assertValid(profileIssues(input.name, input.meta, input.score));
  const k = boardKeys(ctx.prefix, board);
  const season = seasonBlock(ctx.prefix, board, ctx.now);
  const profile = JSON.stringify({ name: input.name, meta: input.meta ?? null });
  const { value, replayed } = await runWrite<{ created: boolean; joinedAt: string; score: string; rank: number; rejected?: string; min?: number; max?: number }>(
    ctx.redis,
    scripts.joinPlayer,
    [k.settings, k.players, k.profiles, registryKey(ctx.prefix), ...season.keys],
    [board, player, ctx.now, profile, negated(input.score ?? 0), ...season.args],
    idempotency,
  );
  if (value.rejected !== undefined) rejected(board, value as { rejected: string }, false);
  return {
    value: {
      created: value.created,
      player,
      name: input.name,
      meta: input.meta ?? null,
      score: scoreOf(value.score),
      rank: value.rank,
      joinedAt: Number(value.joinedAt),
    },
    replayed,
  };
}

/**
 * Applies score changes in order, atomically: a missing player or a result
 * outside ±1e15 refuses the whole list and writes nothing.
 */
export async function changeScores(
  ctx: Ctx,
  board: string,
  changes: (ScoreChange & { player: string })[],
  idempotency?: Idempotency,
): Promise<Written<ScoreResult[]>> {
  assertBoard(board);
  assertValid([batchIssue(changes.length, "items")]);
  const prefixOf = (i: number) => (changes.length === 1 ? "" : `items.${i}.`);
  assertValid(changes.flatMap((c, i) => [nameIssue(`${prefixOf(i)}player`, c.player), ...changeIssues(c, prefixOf(i))]));
  const season = seasonBlock(ctx.prefix, board, ctx.now);
  const args: (string | number)[] = [MAX_SCORE, ctx.now, changes.length, ...season.args];
  for (const c of changes) {
    if ("by" in c) args.push(c.player, "by", negated(c.by));
    else args.push(c.player, c.mode ?? "replace", negated(c.set));
  }
  const k = boardKeys(ctx.prefix, board);
  const { value, replayed } = await runWrite<[string, string, number][] | { missing?: string; outOfRange?: string; rejected?: string; guard?: string; bound?: number; index: number }>(
    ctx.redis,
    scripts.applyScores,
    [k.settings, k.players, ...season.keys],
    args,
    idempotency,
  );
  if (!Array.isArray(value)) {
    if (value.missing !== undefined) throw new NotFoundError(`No player '${value.missing}' on board '${board}'; join the player first.`);
    if (value.rejected !== undefined) rejected(board, value as { rejected: string }, changes.length > 1);
    throw new ValidationError(`The score of '${value.outOfRange}' would leave ±${MAX_SCORE}, the range kept exact; nothing was changed.`, [
      { path: changes.length === 1 ? "" : `items.${value.index}`, message: `resulting score must stay within ±${MAX_SCORE}` },
    ]);
  }
  return { value: value.map(([player, stored, rank]) => ({ player, score: scoreOf(stored), rank })), replayed };
}

/** One player's score change; see `changeScores`. */
export async function changeScore(ctx: Ctx, board: string, player: string, change: ScoreChange, idempotency?: Idempotency): Promise<Written<ScoreResult>> {
  assertBoard(board, player);
  const { value, replayed } = await changeScores(ctx, board, [{ ...change, player }], idempotency);
  return { value: value[0] as ScoreResult, replayed };
}

/**
 * Removes a player; `removed` is false when there was none (deleting is
 * idempotent). The last player's removal takes the board out of the list, and
 * a board that only joins made (never configured with PUT) goes entirely.
 */
export async function removePlayer(ctx: Ctx, board: string, player: string): Promise<{ removed: boolean }> {
  assertBoard(board, player);
  const k = boardKeys(ctx.prefix, board);
  const season = seasonBlock(ctx.prefix, board, ctx.now);
  const { value } = await runWrite<{ removed: boolean }>(
    ctx.redis,
    scripts.removePlayer,
    [k.settings, k.players, k.profiles, registryKey(ctx.prefix), ...season.keys, k.snapshot, k.snapshotNext],
    [board, player, ...season.args],
  );
  return value;
}

/** Deletes every key of a board and its registry entry; no scan, the keys are known. */
export async function deleteBoard(ctx: Ctx, board: string): Promise<{ removed: boolean }> {
  assertBoard(board);
  const k = boardKeys(ctx.prefix, board);
  // every ranking the board may still have: all-time, and each kept season of every reset
  const kept = keptSeasons(ctx.now);
  const rankings = [...kept.daily, ...kept.weekly, ...kept.monthly].map((season) => rankingKey(ctx.prefix, board, season.id));
  const { value } = await runWrite<{ removed: boolean }>(
    ctx.redis,
    scripts.deleteBoard,
    [registryKey(ctx.prefix), k.settings, k.ranking, k.players, k.profiles, k.snapshot, k.snapshotNext, ...rankings],
    [board],
  );
  return value;
}

