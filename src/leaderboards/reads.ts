import type { Ctx } from "../context.ts";
import { NotFoundError } from "../errors.ts";
import { asList } from "../redis/script.ts";
import { activityCursor, nextActivityCursor } from "../redis/pages.ts";
import { invalid, listPage, type PageOptions as ListPageOptions } from "../validation.ts";
import { boardKeys, playerOfMember, registryKey } from "./keys.ts";
import { aroundScript, getScript, listScript, pageScript, rankScript, seasonsScript } from "./read-scripts.ts";
import {
  keptSeasons,
  rankingKey,
  RESET_OF,
  seasonBlock,
  seasonById,
  seasonIdOf,
  type Reset,
  type SeasonSelector,
} from "./seasons.ts";
import {
  checkAround,
  checkBoard,
  checkPage,
  checkSeason,
  checkSubset,
  MAX_LISTED_BOARDS,
  scoreOf,
  type TiePolicy,
} from "./validate.ts";

/**
 * Reads of a board: one read script each, one round trip. A separate concern from the writes
 * (leaderboards.ts): the rows, movement and profiles the read scripts return, shaped for the API.
 */

export interface Row {
  rank: number;
  player: string;
  name: string | null;
  score: number;
  /** Final rank in the season before this one (seasonal boards), or the rank at the last daily snapshot (boards without seasons); null when unknown or not ranked then. */
  previousRank: number | null;
  /** Best rank seen at the player's own writes in the season read, never worse than `rank`; null when unknown (lua.ts, movement). */
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

/** Options of every read of a board: which season. */
export interface SeasonOption {
  /** `current`, `previous` or a season id (`2026-11-23`, `2026-W48`, `2026-11`). @default "current" */
  season?: SeasonSelector | undefined;
}

function parseProfile(text: string | false | null | undefined): {
  name: string | null;
  meta: Record<string, unknown> | null;
} {
  if (!text) return { name: null, meta: null };
  const parsed = JSON.parse(text) as { name?: string; meta?: Record<string, unknown> | null };
  return { name: parsed.name ?? null, meta: parsed.meta ?? null };
}

/** A row's previousRank and bestRank as the scripts return them (lua.ts, detailsOf): false for none. */
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
function percentileOf(rank: number, total: number): number {
  return total === 0 ? 0 : Math.floor(((total - rank) * 10_000) / total) / 100;
}

function noPlayer(board: string, player: string): never {
  throw new NotFoundError(`No player '${player}' on board '${board}'.`);
}

function noSeason(board: string, season: SeasonSelector | undefined): never {
  throw new NotFoundError(
    `Board '${board}' has no season '${season ?? "current"}' (its reset policy names other seasons, or none).`,
  );
}

/**
 * A player's score, 1-based rank, percentile, movement, profile and join time
 * in a season (the current one by default); NotFoundError when the player never
 * joined. A player who has not played in the season reads as score 0, rank null.
 */
export async function getPlayer(
  ctx: Ctx,
  board: string,
  player: string,
  options: SeasonOption = {},
): Promise<PlayerView> {
  checkBoard(board, player);
  checkSeason(options.season);
  const k = boardKeys(ctx.prefix, board);
  const season = seasonBlock(ctx.prefix, board, ctx.now, options.season);
  const res = await getScript.run<{
    missing?: true;
    noSeason?: true;
    profile: string | false;
    joinedAt: string;
    score: string;
    rank: number | false;
    total: number;
    previousRank: number | false;
    bestRank: number | false;
    season: string;
  }>(
    ctx.redis,
    { players: k.players, profiles: k.profiles, snapshot: k.snapshot, seasonKeys: season.keys },
    { player, seasonArgs: season.args },
  );
  if (res.missing) noPlayer(board, player);
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
export async function page(
  ctx: Ctx,
  board: string,
  options: PageOptions = {},
): Promise<{ items: Row[]; total: number; page: number; limit: number; ties: TiePolicy; season: string | null }> {
  const page = options.page ?? 1;
  const limit = options.limit ?? 10;
  checkPage(board, page, limit, options.season);
  const k = boardKeys(ctx.prefix, board);
  const season = seasonBlock(ctx.prefix, board, ctx.now, options.season);
  const start = (page - 1) * limit;
  const res = await pageScript.run<{
    missing?: true;
    noSeason?: true;
    ties: TiePolicy;
    total: number;
    rows: string[];
    profiles: (string | false)[];
    moves: Move[];
    season: string;
  }>(
    ctx.redis,
    { settings: k.settings, players: k.players, profiles: k.profiles, snapshot: k.snapshot, seasonKeys: season.keys },
    { start, stop: start + limit - 1, seasonArgs: season.args },
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
export async function around(
  ctx: Ctx,
  board: string,
  player: string,
  k = 5,
  options: SeasonOption = {},
): Promise<{ player: string; rank: number | null; items: Row[]; season: string | null }> {
  checkAround(board, player, k, options.season);
  const keys = boardKeys(ctx.prefix, board);
  const season = seasonBlock(ctx.prefix, board, ctx.now, options.season);
  const res = await aroundScript.run<{
    missing?: true;
    noSeason?: true;
    unranked?: true;
    start: number;
    rank: number;
    rows: string[];
    profiles: (string | false)[];
    moves: Move[];
    season: string;
  }>(
    ctx.redis,
    { players: keys.players, profiles: keys.profiles, snapshot: keys.snapshot, seasonKeys: season.keys },
    { player, k, seasonArgs: season.args },
  );
  if (res.missing) noPlayer(board, player);
  if (res.noSeason) noSeason(board, options.season);
  if (res.unranked) return { player, rank: null, items: [], season: seasonIdOf(res.season) };
  return {
    player,
    rank: res.rank,
    items: rowsOf(asList(res.rows), asList(res.profiles), res.start + 1, asList(res.moves)),
    season: seasonIdOf(res.season),
  };
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
export async function rankPlayers(
  ctx: Ctx,
  board: string,
  players: string[],
  options: SeasonOption = {},
): Promise<{ items: SubsetRow[]; unknown: string[]; season: string | null }> {
  checkSubset(board, players, options.season);
  const unique = [...new Set(players)];
  const k = boardKeys(ctx.prefix, board);
  const season = seasonBlock(ctx.prefix, board, ctx.now, options.season);
  const res = await rankScript.run<{
    missing?: true;
    noSeason?: true;
    items: [string, string, number][];
    profiles: (string | false)[];
    season: string;
  }>(
    ctx.redis,
    { settings: k.settings, players: k.players, profiles: k.profiles, seasonKeys: season.keys },
    { names: unique, seasonArgs: season.args },
  );
  if (res.missing) throw new NotFoundError(`No board '${board}'.`);
  if (res.noSeason) noSeason(board, options.season);
  const profiles = asList(res.profiles);
  const rows = asList(res.items).map(([player, stored, rank], i) => ({
    player,
    name: parseProfile(profiles[i]).name,
    score: scoreOf(stored),
    rank,
  }));
  rows.sort((a, b) => a.rank - b.rank);
  const ranked = new Set(rows.map((r) => r.player));
  return {
    items: rows.map((r, i) => ({ ...r, subsetRank: i + 1 })),
    unknown: unique.filter((p) => !ranked.has(p)),
    season: seasonIdOf(res.season),
  };
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
export async function listSeasons(
  ctx: Ctx,
  board: string,
): Promise<{ board: string; reset: Reset; current: string | null; seasons: SeasonSummary[] }> {
  checkBoard(board);
  const kept = keptSeasons(ctx.now);
  const all = [...kept.daily, ...kept.weekly, ...kept.monthly];
  const k = boardKeys(ctx.prefix, board);
  const res = await seasonsScript.run<{
    missing?: true;
    reset: string;
    seasons: [string, number, string[]][];
    profiles: (string | false)[];
  }>(
    ctx.redis,
    {
      settings: k.settings,
      profiles: k.profiles,
      rankings: all.map((season) => rankingKey(ctx.prefix, board, season.id)),
    },
    { ids: all.map((season) => season.id) },
  );
  if (res.missing) throw new NotFoundError(`No board '${board}'.`);
  const reset = RESET_OF[res.reset] ?? "none";
  const profiles = asList(res.profiles);
  let next = 0;
  const seasons = asList(res.seasons).map(([id, players, top]) => {
    const season = seasonById(id);
    const rows = rowsOf(asList(top), profiles.slice(next, next + asList(top).length / 2), 1).map(
      ({ rank, player, name, score }) => ({ rank, player, name, score }),
    );
    next += rows.length;
    return { id, from: season?.from ?? 0, to: season?.to ?? 0, players, top: rows };
  });
  return { board, reset, current: reset === "none" ? null : (kept[reset as "daily"][0]?.id ?? null), seasons };
}

export interface ListOptions extends ListPageOptions {
  /** `nextCursor` of the previous page (then `offset` must be 0). @default undefined (first page) */
  cursor?: string;
}

export interface BoardList {
  boards: string[];
  /** Boards listed in all. */
  total: number;
  /** Offset of the following page when paging by offset; null on the last, and on pages asked for by cursor. */
  next: number | null;
  /** Pass as `cursor` for the next page; null on the last page, and on pages asked for by an `offset` above 0. */
  nextCursor: string | null;
}

/**
 * A page of board names from the registry (never a scan): boards with players
 * or configured by an admin, most recent activity (a new player, a PUT) first.
 * A pass by cursor (the first page, then `nextCursor` until null) lists every
 * board listed throughout at least once, as the presence room list does
 * (src/redis/pages.ts): boards that joined the list or moved up while it ran
 * follow at its end, so a board may be listed twice. By `offset` (`next`),
 * as before cursors: a board leaving between pages makes the pass skip one.
 */
export async function list(ctx: Ctx, options: ListOptions = {}): Promise<BoardList> {
  const { offset, limit } = listPage(options, MAX_LISTED_BOARDS);
  const cursor = activityCursor(options.cursor);
  const byCursor = cursor.score !== "";
  if (byCursor && offset > 0) invalid([{ path: "offset", message: "must be 0 with a cursor (the cursor says where)" }]);
  const res = await listScript.run<{ boards: string[] | Record<string, never>; total: number; next: string[] | false }>(
    ctx.redis,
    { registry: registryKey(ctx.prefix) },
    { offset: offset > 0 ? offset : "", limit, ...cursor },
  );
  const boards = asList(res.boards);
  const after = offset + boards.length;
  return {
    boards,
    total: res.total,
    next: !byCursor && after < res.total ? after : null,
    nextCursor: nextActivityCursor(res.next),
  };
}
