/**
 * Leaderboards, the public API: the routes and the library use this module only
 * (`import * as leaderboards from ".../leaderboards/index.ts"`). Board settings and
 * score writes are in leaderboards.ts, the reads of the rankings in reads.ts,
 * seasons in seasons.ts, the input checks and bounds in validate.ts and the daily
 * snapshot job in jobs.ts.
 */
export { changeScore, changeScores, configure, deleteBoard, info, join, removePlayer } from "./leaderboards.ts";
export type { BoardSettings, JoinInput, JoinView, ScoreResult } from "./leaderboards.ts";
export { around, getPlayer, list, listSeasons, page, rankPlayers } from "./reads.ts";
export type {
  BoardList,
  ListOptions,
  PageOptions,
  PlayerView,
  Row,
  SeasonOption,
  SeasonSummary,
  SubsetRow,
} from "./reads.ts";
export {
  DEFAULT_KEEP_SEASONS,
  MAX_KEEP_SEASONS,
  seasonSelectorProblem,
  type Reset,
  type SeasonSelector,
} from "./seasons.ts";
export { MAX_AROUND, MAX_LISTED_BOARDS, MAX_META_BYTES, MAX_PAGE_LIMIT, MAX_SCORE, metaProblem } from "./validate.ts";
export type { BoardConfig, ScoreChange, SetMode, TiePolicy } from "./validate.ts";
export { jobs } from "./jobs.ts";
