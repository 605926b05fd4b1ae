/**
 * Leaderboards, the public API (routes and the library import this module):
 * board settings and score writes (leaderboards.ts), reads of the rankings
 * (reads.ts), seasons (seasons.ts), the input checks and bounds (validate.ts)
 * and the daily snapshot job (jobs.ts).
 */
export * from "./leaderboards.ts";
export * from "./reads.ts";
export { DEFAULT_KEEP_SEASONS, MAX_KEEP_SEASONS, seasonSelectorProblem, type Reset, type SeasonSelector } from "./seasons.ts";
export { MAX_AROUND, MAX_LISTED_BOARDS, MAX_META_BYTES, MAX_PAGE_LIMIT, MAX_SCORE, metaProblem, type BoardConfig, type ScoreChange, type SetMode, type TiePolicy } from "./validate.ts";
export { jobs } from "./jobs.ts";
