import type { Ctx } from "../context.ts";
import { ConflictError, NotFoundError, ValidationError } from "../errors.ts";
import { asList, runRead, runWrite, type Idempotency } from "../redis/script.ts";
import { boardKeys, playerOfMember, registryKey } from "./keys.ts";
import * as scripts from "./scripts.ts";
import {
  assertValid,
  batchIssue,
  changeIssues,
  MAX_AROUND,
  MAX_LISTED_BOARDS,
  MAX_PAGE_LIMIT,
  MAX_SCORE,
  nameIssue,
  negated,
  profileIssues,
  scoreOf,
  TIE_POLICIES,
  type ScoreChange,
  type TiePolicy,
} from "./validate.ts";

export * from "./validate.ts";

/**
 * Leaderboards: one ranking per board with fair ties, player profiles, pages
 * and around-me. Every function is one Lua script, so one Redis round trip,
 * and atomic: concurrent increments of one player never lose points.
 */

export interface BoardSettings {
  board: string;
  ties: TiePolicy;
  /** Epoch ms the board came into being. */
  createdAt: number;
  players: number;
  /** The board did not exist before this call. */
  created: boolean;
}

export interface Row {
  rank: number;
  player: string;
  name: string | null;
  score: number;
}

export interface PlayerView {
  player: string;
  name: string | null;
  meta: Record<string, unknown> | null;
  score: number;
  rank: number;
  joinedAt: number;
}

export interface JoinInput {
  /** Display name: 1..256 UTF-8 bytes, no control characters. */
  name: string;
  /** Any JSON object up to 4 KiB. @default null */
  meta?: Record<string, unknown> | null;
  /** Score of a new player; ignored when the player exists (joining never resets a score). @default 0 */
  score?: number;
}

export interface ScoreResult {
  player: string;
  score: number;
  /** 1-based rank after the whole request. */
  rank: number;
}

interface Written<T> {
  value: T;
  replayed: boolean;
}

function parseProfile(text: string | false | null | undefined): { name: string | null; meta: Record<string, unknown> | null } {
  if (!text) return { name: null, meta: null };
  const parsed = JSON.parse(text) as { name?: string; meta?: Record<string, unknown> | null };
  return { name: parsed.name ?? null, meta: parsed.meta ?? null };
}

function rowsOf(flat: string[], profiles: (string | false)[], firstRank: number): Row[] {
  const rows: Row[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const member = flat[i] as string;
    rows.push({ rank: firstRank + i / 2, player: playerOfMember(member), name: parseProfile(profiles[i / 2]).name, score: scoreOf(flat[i + 1] as string) });
  }
  return rows;
}

function assertBoard(board: string, player?: string): void {
  assertValid([nameIssue("board", board), player === undefined ? null : nameIssue("player", player)]);
}

/**
 * Creates a board or changes its tie policy. Changing the policy of a board
 * that has players is a ConflictError: their tie-breaks were taken under the
 * old policy.
 * @param ties omitted keeps the current policy (`joined` for a new board).
 */
export async function configureBoard(ctx: Ctx, board: string, ties?: TiePolicy, idempotency?: Idempotency): Promise<Written<BoardSettings>> {
  assertValid([
    nameIssue("board", board),
    ties === undefined || TIE_POLICIES.includes(ties) ? null : { path: "ties", message: "must be 'joined' or 'reached'" },
  ]);
  const k = boardKeys(ctx.prefix, board);
  const { value, replayed } = await runWrite<{ conflict?: TiePolicy; players: number; ties: TiePolicy; createdAt: string; created: boolean }>(
    ctx.redis,
    scripts.configureBoard,
    [k.settings, k.ranking, registryKey(ctx.prefix)],
    [board, ctx.now, ties ?? ""],
    idempotency,
  );
  if (value.conflict) {
    throw new ConflictError(
      "board_not_empty",
      `Board '${board}' has ${value.players} players ranked with ties '${value.conflict}'; delete the board (or its players) before changing the tie policy.`,
    );
  }
  return { value: { board, ties: value.ties, createdAt: Number(value.createdAt), players: value.players, created: value.created }, replayed };
}

/** Board settings and player count; NotFoundError when the board does not exist. */
export async function boardInfo(ctx: Ctx, board: string): Promise<Omit<BoardSettings, "created">> {
  assertBoard(board);
  const k = boardKeys(ctx.prefix, board);
  const res = await runRead<{ missing?: true; ties: TiePolicy; createdAt: string; total: number }>(ctx.redis, scripts.countOf, [k.settings, k.ranking]);
  if (res.missing) throw new NotFoundError(`No board '${board}'.`);
  return { board, ties: res.ties, createdAt: Number(res.createdAt), players: res.total };
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
): Promise<Written<PlayerView & { created: boolean }>> {
  assertBoard(board, player);
  assertValid(profileIssues(input.name, input.meta, input.score));
  const k = boardKeys(ctx.prefix, board);
  const profile = JSON.stringify({ name: input.name, meta: input.meta ?? null });
  const { value, replayed } = await runWrite<{ created: boolean; joinedAt: string; score: string; rank: number }>(
    ctx.redis,
    scripts.joinPlayer,
    [k.settings, k.ranking, k.players, k.profiles, registryKey(ctx.prefix)],
    [board, player, ctx.now, profile, negated(input.score ?? 0)],
    idempotency,
  );
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
  const args: (string | number)[] = [MAX_SCORE, changes.length];
  for (const c of changes) {
    if ("by" in c) args.push(c.player, "by", negated(c.by));
    else args.push(c.player, c.mode ?? "replace", negated(c.set));
  }
  const k = boardKeys(ctx.prefix, board);
  const { value, replayed } = await runWrite<[string, string, number][] | { missing?: string; outOfRange?: string; index: number }>(
    ctx.redis,
    scripts.applyScores,
    [k.settings, k.ranking, k.players],
    args,
    idempotency,
  );
  if (!Array.isArray(value)) {
    if (value.missing !== undefined) throw new NotFoundError(`No player '${value.missing}' on board '${board}'; join the player first.`);
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
  const { value } = await runWrite<{ removed: boolean }>(
    ctx.redis,
    scripts.removePlayer,
    [k.settings, k.ranking, k.players, k.profiles, registryKey(ctx.prefix)],
    [board, player],
  );
  return value;
}

/** Deletes every key of a board and its registry entry; no scan, the keys are known. */
export async function deleteBoard(ctx: Ctx, board: string): Promise<{ removed: boolean }> {
  assertBoard(board);
  const k = boardKeys(ctx.prefix, board);
  const { value } = await runWrite<{ removed: boolean }>(
    ctx.redis,
    scripts.deleteBoard,
    [k.settings, k.ranking, k.players, k.profiles, registryKey(ctx.prefix)],
    [board],
  );
  return value;
}

/** A player's score, 1-based rank, profile and join time; NotFoundError when absent. */
export async function getPlayer(ctx: Ctx, board: string, player: string): Promise<PlayerView> {
  assertBoard(board, player);
  const k = boardKeys(ctx.prefix, board);
  const res = await runRead<{ missing?: true; profile: string | false; joinedAt: string; score: string; rank: number }>(
    ctx.redis,
    scripts.getPlayer,
    [k.ranking, k.players, k.profiles],
    [player],
  );
  if (res.missing) throw new NotFoundError(`No player '${player}' on board '${board}'.`);
  return { player, ...parseProfile(res.profile), score: scoreOf(res.score), rank: res.rank, joinedAt: Number(res.joinedAt) };
}

export interface PageOptions {
  /** 1-based page. @default 1 */
  page?: number;
  /** Rows per page, 1..100. @default 10 */
  limit?: number;
}

/** A page of the ranking; a page past the end is empty, an unknown board a NotFoundError. */
export async function pageOfBoard(ctx: Ctx, board: string, options: PageOptions = {}): Promise<{ items: Row[]; total: number; page: number; limit: number; ties: TiePolicy }> {
  const page = options.page ?? 1;
  const limit = options.limit ?? 10;
  assertValid([
    nameIssue("board", board),
    Number.isInteger(page) && page >= 1 && page <= 1_000_000 ? null : { path: "page", message: "must be an integer from 1 to 1000000" },
    Number.isInteger(limit) && limit >= 1 && limit <= MAX_PAGE_LIMIT ? null : { path: "limit", message: `must be an integer from 1 to ${MAX_PAGE_LIMIT}` },
  ]);
  const k = boardKeys(ctx.prefix, board);
  const start = (page - 1) * limit;
  const res = await runRead<{ missing?: true; ties: TiePolicy; total: number; rows: string[]; profiles: (string | false)[] }>(
    ctx.redis,
    scripts.pageOf,
    [k.settings, k.ranking, k.profiles],
    [start, start + limit - 1],
  );
  if (res.missing) throw new NotFoundError(`No board '${board}'.`);
  return { items: rowsOf(asList(res.rows), asList(res.profiles), start + 1), total: res.total, page, limit, ties: res.ties };
}

/**
 * The player with up to `k` rows above and below; fewer at the top or bottom.
 * @param k rows on each side, 0..50. @default 5
 */
export async function aroundPlayer(ctx: Ctx, board: string, player: string, k = 5): Promise<{ player: string; rank: number; items: Row[] }> {
  assertBoard(board, player);
  assertValid([Number.isInteger(k) && k >= 0 && k <= MAX_AROUND ? null : { path: "k", message: `must be an integer from 0 to ${MAX_AROUND}` }]);
  const keys = boardKeys(ctx.prefix, board);
  const res = await runRead<{ missing?: true; start: number; rank: number; rows: string[]; profiles: (string | false)[] }>(
    ctx.redis,
    scripts.aroundOf,
    [keys.ranking, keys.players, keys.profiles],
    [player, k],
  );
  if (res.missing) throw new NotFoundError(`No player '${player}' on board '${board}'.`);
  return { player, rank: res.rank, items: rowsOf(asList(res.rows), asList(res.profiles), res.start + 1) };
}

export interface ListOptions {
  /** Boards to skip (`next` of the previous page). @default 0 */
  offset?: number | undefined;
  /** Most names to return, 1..1000. @default 1000 */
  limit?: number | undefined;
}

/**
 * A page of board names from the registry (never a scan): boards with players
 * or configured by an admin, most recent activity (a new player, a PUT) first.
 * `next` is the offset of the following page, null on the last.
 */
export async function listBoardsPage(ctx: Ctx, options: ListOptions = {}): Promise<{ boards: string[]; total: number; next: number | null }> {
  const offset = options.offset ?? 0;
  const limit = options.limit ?? MAX_LISTED_BOARDS;
  assertValid([
    Number.isInteger(offset) && offset >= 0 && offset <= 1_000_000 ? null : { path: "offset", message: "must be an integer from 0 to 1000000" },
    Number.isInteger(limit) && limit >= 1 && limit <= MAX_LISTED_BOARDS ? null : { path: "limit", message: `must be an integer from 1 to ${MAX_LISTED_BOARDS}` },
  ]);
  const res = await runRead<{ boards: string[] | Record<string, never>; total: number }>(ctx.redis, scripts.listBoards, [registryKey(ctx.prefix)], [offset, limit]);
  const boards = asList(res.boards);
  return { boards, total: res.total, next: offset + boards.length < res.total ? offset + boards.length : null };
}

/** The names of `listBoardsPage`, most recently active first (at most 1,000 by default). */
export async function listBoards(ctx: Ctx, options: ListOptions = {}): Promise<string[]> {
  return (await listBoardsPage(ctx, options)).boards;
}
