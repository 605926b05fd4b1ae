import type { Ctx } from "../context.ts";
import { NotFoundError } from "../errors.ts";
import { asList, runRead } from "../redis/script.ts";
import { MAX_BATCH, listPage, type PageOptions as ListPageOptions } from "../validation.ts";
import {
  assertBoard,
  assertSeason,
  noSeason,
  parseProfile,
  percentileOf,
  RESET_OF,
  rowsOf,
  seasonIdOf,
  type Move,
  type PlayerView,
  type Row,
  type SeasonOption,
} from "./common.ts";
import { boardKeys, registryKey } from "./keys.ts";
import { keptSeasons, rankingKey, seasonBlock, seasonById, type Reset } from "./seasons.ts";
import * as scripts from "./scripts.ts";
import { assertValid, MAX_AROUND, MAX_LISTED_BOARDS, MAX_PAGE_LIMIT, nameIssue, scoreOf, type TiePolicy } from "./validate.ts";

/** Reads of a board: one read script each, one round trip. */

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
  }>(ctx.redis, scripts.getPlayer, [k.players, k.profiles, ...season.keys, k.snapshot], [player, ...season.args]);
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
    [k.settings, k.players, k.profiles, ...season.keys, k.snapshot],
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
    [keys.players, keys.profiles, ...season.keys, keys.snapshot],
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

export type ListOptions = ListPageOptions;

/**
 * A page of board names from the registry (never a scan): boards with players
 * or configured by an admin, most recent activity (a new player, a PUT) first.
 * `next` is the offset of the following page, null on the last.
 */
export async function listBoardsPage(ctx: Ctx, options: ListOptions = {}): Promise<{ boards: string[]; total: number; next: number | null }> {
  const { offset, limit } = listPage(options, MAX_LISTED_BOARDS);
  const res = await runRead<{ boards: string[] | Record<string, never>; total: number }>(ctx.redis, scripts.listBoards, [registryKey(ctx.prefix)], [offset, limit]);
  const boards = asList(res.boards);
  return { boards, total: res.total, next: offset + boards.length < res.total ? offset + boards.length : null };
}

/** The names of `listBoardsPage`, most recently active first (at most 1,000 by default). */
export async function listBoards(ctx: Ctx, options: ListOptions = {}): Promise<string[]> {
  return (await listBoardsPage(ctx, options)).boards;
}
