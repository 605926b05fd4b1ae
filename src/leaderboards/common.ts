/**
 * Types and helpers the leaderboard writes (leaderboards.ts) and reads
 * (reads.ts) share.
 */
import { NotFoundError, ValidationError } from "../errors.ts";
import { playerOfMember } from "./keys.ts";
import { DEFAULT_KEEP_SEASONS, seasonSelectorProblem, type Reset, type SeasonSelector } from "./seasons.ts";
import { assertValid, nameIssue, scoreOf, type TiePolicy } from "./validate.ts";

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

export const RESET_LETTER: Record<Reset, string> = { none: "n", daily: "d", weekly: "w", monthly: "m" };
export const RESET_OF: Record<string, Reset> = { n: "none", d: "daily", w: "weekly", m: "monthly" };

/** The settings string the scripts keep (`<reset>|<keep>|<min>|<max>|<maxIncrement>`), parsed. */
export function cfgOf(text: string | undefined) {
  const [r = "n", keep = "", min = "", max = "", inc = ""] = (text ?? "").split("|");
  const num = (v: string) => (v === "" ? null : Number(v));
  return { reset: RESET_OF[r] ?? "none", keepSeasons: keep === "" ? DEFAULT_KEEP_SEASONS : Number(keep), minScore: num(min), maxScore: num(max), maxIncrement: num(inc) };
}

export const seasonIdOf = (sid: string | undefined) => (sid === undefined || sid === "all" ? null : sid);

export interface Row {
  rank: number;
  player: string;
  name: string | null;
  score: number;
  /** Final rank in the season before this one (seasonal boards), or the rank at the last daily snapshot (boards without seasons); null when unknown or not ranked then. */
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

export interface Written<T> {
  value: T;
  replayed: boolean;
}

export function parseProfile(text: string | false | null | undefined): { name: string | null; meta: Record<string, unknown> | null } {
  if (!text) return { name: null, meta: null };
  const parsed = JSON.parse(text) as { name?: string; meta?: Record<string, unknown> | null };
  return { name: parsed.name ?? null, meta: parsed.meta ?? null };
}

export type Move = [number | false, number | false];

export function rowsOf(flat: string[], profiles: (string | false)[], firstRank: number, moves: Move[] = []): Row[] {
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

export function assertSeason(season: SeasonSelector | undefined): void {
  if (season === undefined) return;
  const problem = seasonSelectorProblem(season);
  if (problem) invalidSeason(problem);
}

export function invalidSeason(message: string): never {
  throw new ValidationError(`Invalid season: ${message}.`, [{ path: "season", message }]);
}

export function noSeason(board: string, season: SeasonSelector | undefined): never {
  throw new NotFoundError(`Board '${board}' has no season '${season ?? "current"}' (its reset policy names other seasons, or none).`);
}

/** Options of every read of a board: which season. */
export interface SeasonOption {
  /** `current` (default), `previous` or a season id (`2026-11-23`, `2026-W48`, `2026-11`). */
  season?: SeasonSelector | undefined;
}

export function assertBoard(board: string, player?: string): void {
  assertValid([nameIssue("board", board), player === undefined ? null : nameIssue("player", player)]);
}
