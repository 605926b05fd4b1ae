import type { Ctx } from "../context.ts";
import { ConflictError, NotFoundError, RejectedError, ValidationError } from "../errors.ts";
import { asList, runRead, runWrite, type Idempotency } from "../redis/script.ts";
import { MAX_BATCH, MAX_INCREMENT } from "../validation.ts";
import { boardKeys, playerOfMember, registryKey } from "./keys.ts";
import {
  DEFAULT_KEEP_SEASONS,
  keptSeasons,
  MAX_KEEP_SEASONS,
  rankingKey,
  RESETS,
  seasonBlock,
  seasonById,
  seasonSelectorProblem,
  type Reset,
  type SeasonSelector,
} from "./seasons.ts";
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
  scoreProblem,
  TIE_POLICIES,
  type ScoreChange,
  type TiePolicy,
} from "./validate.ts";

export * from "./validate.ts";
export * from "./seasons.ts";

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
  /** Calendar seasons (UTC; ISO weeks): `none` ranks for all time. */
  reset: Reset;
  /** Finished seasons kept besides the current one. */
  keepSeasons: number;
  /** Guards: a write whose result leaves [minScore, maxScore], or a request adding more than maxIncrement (absolute) to a player, is refused. */
  minScore: number | null;
  maxScore: number | null;
  maxIncrement: number | null;
  /** The current season's id; null when `reset` is `none`. */
  season: string | null;
}

/** Settings of `PUT /v1/leaderboards/{board}`: omitted keeps, `null` clears a guard. */
export interface BoardConfig {
  ties?: TiePolicy | undefined;
  reset?: Reset | undefined;
  keepSeasons?: number | undefined;
  minScore?: number | null | undefined;
  maxScore?: number | null | undefined;
  maxIncrement?: number | null | undefined;
}

const RESET_LETTER: Record<Reset, string> = { none: "n", daily: "d", weekly: "w", monthly: "m" };
const RESET_OF: Record<string, Reset> = { n: "none", d: "daily", w: "weekly", m: "monthly" };

/** The settings string the scripts keep (`<reset>|<keep>|<min>|<max>|<maxIncrement>`), parsed. */
function cfgOf(text: string | undefined) {
  const [r = "n", keep = "", min = "", max = "", inc = ""] = (text ?? "").split("|");
  const num = (v: string) => (v === "" ? null : Number(v));
  return { reset: RESET_OF[r] ?? "none", keepSeasons: keep === "" ? DEFAULT_KEEP_SEASONS : Number(keep), minScore: num(min), maxScore: num(max), maxIncrement: num(inc) };
}

const seasonIdOf = (sid: string | undefined) => (sid === undefined || sid === "all" ? null : sid);

export interface Row {
  rank: number;
  player: string;
  name: string | null;
  score: number;
  /** Final rank in the season before this one (seasonal boards); null when unknown or not ranked then. */
  previousRank: number | null;
  /** Best rank seen at the player's own writes this season, never worse than `rank`. */
  bestRank: number | null;
}

export interface PlayerView {
  player: string;
  name: string | null;
  meta: Record<string, unknown> | null;
  score: number;
  /** null when the player has no score in this season (has not played in it). */
  rank: number | null;
  joinedAt: number;
  /** Percentage of the season's players ranked strictly below, 0..100, two decimals (floored); null when unranked. */
  percentile: number | null;
  /** Players ranked in the season. */
  total: number;
  previousRank: number | null;
  bestRank: number | null;
  /** The season read; null for a board without seasons. */
  season: string | null;
}

export interface JoinView {
  player: string;
  name: string | null;
  meta: Record<string, unknown> | null;
  score: number;
  rank: number;
  joinedAt: number;
  created: boolean;
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

type Move = [number | false, number | false];

function rowsOf(flat: string[], profiles: (string | false)[], firstRank: number, moves: Move[] = []): Row[] {
  const rows: Row[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const member = flat[i] as string;
    const [prev, best] = moves[i / 2] ?? [false, false];
    rows.push({
      rank: firstRank + i / 2,
      player: playerOfMember(member),
      name: parseProfile(profiles[i / 2]).name,
      score: scoreOf(flat[i + 1] as string),
      previousRank: prev === false ? null : prev,
      bestRank: best === false ? null : best,
    });
  }
  return rows;
}

/** Percentage of `total` players ranked strictly below `rank`, floored to two decimals (exact integer arithmetic). */
export function percentileOf(rank: number, total: number): number {
  return total === 0 ? 0 : Math.floor(((total - rank) * 10_000) / total) / 100;
}

function assertSeason(season: SeasonSelector | undefined): void {
  if (season === undefined) return;
  const problem = seasonSelectorProblem(season);
  if (problem) invalidSeason(problem);
}

function invalidSeason(message: string): never {
  throw new ValidationError(`Invalid season: ${message}.`, [{ path: "season", message }]);
}

function noSeason(board: string, season: SeasonSelector | undefined): never {
  throw new NotFoundError(`Board '${board}' has no season '${season ?? "current"}' (its reset policy names other seasons, or none).`);
}

/** Options of every read of a board: which season. */
export interface SeasonOption {
  /** `current` (default), `previous` or a season id (`2026-11-23`, `2026-W48`, `2026-11`). */
  season?: SeasonSelector | undefined;
}

function assertBoard(board: string, player?: string): void {
  assertValid([nameIssue("board", board), player === undefined ? null : nameIssue("player", player)]);
}

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
    [k.settings, k.players, k.profiles, registryKey(ctx.prefix), ...season.keys],
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
    [registryKey(ctx.prefix), k.settings, k.ranking, k.players, k.profiles, ...rankings],
    [board],
  );
  return value;
}

/**
 * A player's score, 1-based rank, percentile, movement, profile and join time
 * in a season (the current one by default); NotFoundError when the player never
 * joined. A player who has not played in the season reads as score 0, rank null.
 */
export async function getPlayer(ctx: Ctx, board: string, player: string, options: SeasonOption = {}): Promise<PlayerView> {
  assertBoard(board, player);
  assertSeason(options.season);
  const k = boardKeys(ctx.prefix, board);
  const season = seasonBlock(ctx.prefix, board, ctx.now, options.season);
  const res = await runRead<{
    missing?: true;
    noSeason?: string;
    profile: string | false;
    joinedAt: string;
    score: string;
    rank: number | false;
    total: number;
    previousRank: number | false;
    bestRank: number | false;
    season: string;
  }>(ctx.redis, scripts.getPlayer, [k.players, k.profiles, ...season.keys], [player, ...season.args]);
  if (res.missing) throw new NotFoundError(`No player '${player}' on board '${board}'.`);
  if (res.noSeason) noSeason(board, options.season);
  const rank = res.rank === false ? null : res.rank;
  return {
    player,
    ...parseProfile(res.profile),
    score: scoreOf(res.score),
    rank,
    joinedAt: Number(res.joinedAt),
    percentile: rank === null ? null : percentileOf(rank, res.total),
    total: res.total,
    previousRank: res.previousRank === false ? null : res.previousRank,
    bestRank: res.bestRank === false ? null : res.bestRank,
    season: seasonIdOf(res.season),
  };
}

export interface PageOptions extends SeasonOption {
  /** 1-based page. @default 1 */
  page?: number;
  /** Rows per page, 1..100. @default 10 */
  limit?: number;
}

/** A page of the ranking; a page past the end is empty, an unknown board a NotFoundError. */
export async function pageOfBoard(
  ctx: Ctx,
  board: string,
  options: PageOptions = {},
): Promise<{ items: Row[]; total: number; page: number; limit: number; ties: TiePolicy; season: string | null }> {
  const page = options.page ?? 1;
  const limit = options.limit ?? 10;
  assertValid([
    nameIssue("board", board),
    Number.isInteger(page) && page >= 1 && page <= 1_000_000 ? null : { path: "page", message: "must be an integer from 1 to 1000000" },
    Number.isInteger(limit) && limit >= 1 && limit <= MAX_PAGE_LIMIT ? null : { path: "limit", message: `must be an integer from 1 to ${MAX_PAGE_LIMIT}` },
  ]);
  assertSeason(options.season);
  const k = boardKeys(ctx.prefix, board);
  const season = seasonBlock(ctx.prefix, board, ctx.now, options.season);
  const start = (page - 1) * limit;
  const res = await runRead<{ missing?: true; noSeason?: string; ties: TiePolicy; total: number; rows: string[]; profiles: (string | false)[]; moves: Move[]; season: string }>(
    ctx.redis,
    scripts.pageOf,
    [k.settings, k.players, k.profiles, ...season.keys],
    [start, start + limit - 1, ...season.args],
  );
  if (res.missing) throw new NotFoundError(`No board '${board}'.`);
  if (res.noSeason) noSeason(board, options.season);
  return {
    items: rowsOf(asList(res.rows), asList(res.profiles), start + 1, asList(res.moves)),
    total: res.total,
    page,
    limit,
    ties: res.ties,
    season: seasonIdOf(res.season),
  };
}

/**
 * The player with up to `k` rows above and below; fewer at the top or bottom.
 * A player who has not played in the season has rank null and no rows.
 * @param k rows on each side, 0..50. @default 5
 */
export async function aroundPlayer(
  ctx: Ctx,
  board: string,
  player: string,
  k = 5,
  options: SeasonOption = {},
): Promise<{ player: string; rank: number | null; items: Row[]; season: string | null }> {
  assertBoard(board, player);
  assertValid([Number.isInteger(k) && k >= 0 && k <= MAX_AROUND ? null : { path: "k", message: `must be an integer from 0 to ${MAX_AROUND}` }]);
  assertSeason(options.season);
  const keys = boardKeys(ctx.prefix, board);
  const season = seasonBlock(ctx.prefix, board, ctx.now, options.season);
  const res = await runRead<{ missing?: true; noSeason?: true; unranked?: true; start: number; rank: number; rows: string[]; profiles: (string | false)[]; moves: Move[]; season: string }>(
    ctx.redis,
    scripts.aroundOf,
    [keys.players, keys.profiles, ...season.keys],
    [player, k, ...season.args],
  );
  if (res.missing) throw new NotFoundError(`No player '${player}' on board '${board}'.`);
  if (res.noSeason) noSeason(board, options.season);
  if (res.unranked) return { player, rank: null, items: [], season: seasonIdOf(res.season) };
  return { player, rank: res.rank, items: rowsOf(asList(res.rows), asList(res.profiles), res.start + 1, asList(res.moves)), season: seasonIdOf(res.season) };
}

export interface SubsetRow {
  player: string;
  name: string | null;
  score: number;
  /** Rank on the whole board. */
  rank: number;
  /** Rank among the players asked for (1 = best of them). */
  subsetRank: number;
}

/**
 * Ranks a subset of players (friends, a team) in board order, with their
 * global rank and their rank within the subset. Players who never joined, or
 * have no score in the season, are listed in `unknown`, in the order given.
 * @param players 1..1,000 names (duplicates count once).
 */
export async function rankPlayers(ctx: Ctx, board: string, players: string[], options: SeasonOption = {}): Promise<{ items: SubsetRow[]; unknown: string[]; season: string | null }> {
  assertBoard(board);
  assertValid([
    players.length >= 1 && players.length <= MAX_BATCH ? null : { path: "players", message: `must hold 1 to ${MAX_BATCH} players` },
    ...players.map((p, i) => nameIssue(`players.${i}`, p)),
  ]);
  assertSeason(options.season);
  const unique = [...new Set(players)];
  const k = boardKeys(ctx.prefix, board);
  const season = seasonBlock(ctx.prefix, board, ctx.now, options.season);
  const res = await runRead<{ noSeason?: true; items: [string, string, number][]; profiles: (string | false)[]; season: string }>(
    ctx.redis,
    scripts.rankSubset,
    [k.players, k.profiles, ...season.keys],
    [...season.args, ...unique],
  );
  if (res.noSeason) noSeason(board, options.season);
  const profiles = asList(res.profiles);
  const rows = asList(res.items).map(([player, stored, rank], i) => ({ player, name: parseProfile(profiles[i]).name, score: scoreOf(stored), rank }));
  rows.sort((a, b) => a.rank - b.rank);
  const ranked = new Set(rows.map((r) => r.player));
  return { items: rows.map((r, i) => ({ ...r, subsetRank: i + 1 })), unknown: unique.filter((p) => !ranked.has(p)), season: seasonIdOf(res.season) };
}

export interface SeasonSummary {
  id: string;
  /** Epoch ms of the season's first instant. */
  from: number;
  /** Epoch ms of its end (exclusive). */
  to: number;
  players: number;
  /** The season's top 3 (final once the season is over). */
  top: { rank: number; player: string; name: string | null; score: number }[];
}

/**
 * The seasons a board keeps (the current one first, then up to `keepSeasons`
 * finished ones), each with its size and top 3; seasons nobody played are not
 * listed. Empty for a board without seasons.
 */
export async function listSeasons(ctx: Ctx, board: string): Promise<{ board: string; reset: Reset; current: string | null; seasons: SeasonSummary[] }> {
  assertBoard(board);
  const kept = keptSeasons(ctx.now);
  const all = [...kept.daily, ...kept.weekly, ...kept.monthly];
  const k = boardKeys(ctx.prefix, board);
  const res = await runRead<{ missing?: true; reset: string; seasons: [string, number, string[]][]; profiles: (string | false)[] }>(
    ctx.redis,
    scripts.seasonsOf,
    [k.settings, k.profiles, ...all.map((season) => rankingKey(ctx.prefix, board, season.id))],
    all.map((season) => season.id),
  );
  if (res.missing) throw new NotFoundError(`No board '${board}'.`);
  const reset = RESET_OF[res.reset] ?? "none";
  const profiles = asList(res.profiles);
  let next = 0;
  const seasons = asList(res.seasons).map(([id, players, top]) => {
    const season = seasonById(id);
    const rows = rowsOf(asList(top), profiles.slice(next, next + asList(top).length / 2), 1).map(({ rank, player, name, score }) => ({ rank, player, name, score }));
    next += rows.length;
    return { id, from: season?.from ?? 0, to: season?.to ?? 0, players, top: rows };
  });
  return { board, reset, current: reset === "none" ? null : (kept[reset as "daily"][0]?.id ?? null), seasons };
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
