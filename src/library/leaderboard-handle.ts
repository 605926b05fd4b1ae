/**
 * The leaderboard handle (library/handles.ts has the others and re-exports this one): apart because
 * its methods (settings, joins, score changes, batches, seasons, pages) are as many as the other
 * handles' together, and one module holding all five passed the ~400-line limit.
 */
import * as leaderboards from "../leaderboards/index.ts";
import { changeFields, checkItems, checkShape, FIELDS, QUERY_OPTIONS as Q } from "./inputs.ts";
import { locateMethods } from "./locate.ts";
import { idempotencyOf, list, type Runtime, type WriteOptions } from "./shared.ts";
import type * as Options from "./shared.ts";

/** One change of a batch (`scores`): the player and `{ by }` or `{ set, mode }`. */
export type PlayerScoreChange = leaderboards.ScoreChange & { player: string };

export class LeaderboardHandle {
  readonly #rt: Runtime;
  readonly board: string;
  constructor(runtime: Runtime, board: string) {
    this.#rt = runtime;
    this.board = board;
  }

  /**
   * Creates the board or changes its settings: tie policy (`joined`: earlier joiner first; `reached`: whoever
   * reached the score first), seasons (`reset`, `keepSeasons`) and guards (`minScore`, `maxScore`, `maxIncrement`).
   */
  async configure(settings: leaderboards.BoardConfig = {}, options?: WriteOptions) {
    const ctx = this.#rt.ctx();
    checkShape(settings, FIELDS.boardSettings);
    const idempotency = await idempotencyOf(ctx, `leaderboard.configure ${this.board}`, options, settings);
    return leaderboards.configure(ctx, this.board, settings, idempotency);
  }

  /** Adds a player (creating the board if needed) or updates name and meta; never resets a score. */
  async join(player: string, input: leaderboards.JoinInput, options?: WriteOptions) {
    const ctx = this.#rt.ctx();
    checkShape(input, FIELDS.join);
    const idempotency = await idempotencyOf(ctx, `leaderboard.join ${this.board} ${player}`, options, input);
    return leaderboards.join(ctx, this.board, player, input, idempotency);
  }

  /** Adds `by` (may be negative) to a joined player's score; returns the new score and rank. */
  increment(player: string, by: number, options?: WriteOptions) {
    return this.score(player, { by }, options);
  }

  /** Sets a joined player's score (`mode: "best"` keeps the higher one). */
  set(player: string, score: number, mode: leaderboards.SetMode = "replace", options?: WriteOptions) {
    return this.score(player, { set: score, mode }, options);
  }

  /** Any score change of one player: `{ by }` or `{ set, mode }`. */
  async score(player: string, change: leaderboards.ScoreChange, options?: WriteOptions) {
    const ctx = this.#rt.ctx();
    checkShape(change, changeFields(change, false));
    const idempotency = await idempotencyOf(ctx, `leaderboard.score ${this.board} ${player}`, options, change);
    return leaderboards.changeScore(ctx, this.board, player, change, idempotency);
  }

  /**
   * Many score changes (`{ player, by }` or `{ player, set, mode }`, up to 1,000, players joined) in
   * one script, all or nothing, as `POST …/scores`: returns each player's new score and rank.
   */
  async scores(changes: PlayerScoreChange | PlayerScoreChange[], options?: WriteOptions) {
    const ctx = this.#rt.ctx();
    const batch = list(changes);
    checkItems(batch, (item) => changeFields(item, true), "items", Array.isArray(changes));
    const idempotency = await idempotencyOf(ctx, `leaderboard.scores ${this.board}`, options, batch);
    return leaderboards.changeScores(ctx, this.board, batch, idempotency, Array.isArray(changes));
  }

  /** A player's profile, score, rank, percentile and movement in a season (current by default); NotFoundError when absent. */
  async get(player: string, options: leaderboards.SeasonOption = {}): Promise<leaderboards.PlayerView> {
    checkShape(options, Q["leaderboard.get"]);
    return leaderboards.getPlayer(this.#rt.ctx(), this.board, player, options);
  }

  /** A subset of players (friends) in board order with global and subset ranks; unknown players apart. */
  async rank(players: string[], options: leaderboards.SeasonOption = {}) {
    checkShape(options, Q["leaderboard.rank"]);
    return leaderboards.rankPlayers(this.#rt.ctx(), this.board, players, options);
  }

  /** The kept seasons with their size and top 3. */
  async seasons() {
    return leaderboards.listSeasons(this.#rt.ctx(), this.board);
  }

  /** A page of the ranking (`limit` ≤ 100). */
  async page(options: leaderboards.PageOptions = {}) {
    checkShape(options, Q["leaderboard.page"]);
    return leaderboards.page(this.#rt.ctx(), this.board, options);
  }

  /** The `k` rows above and below a player. */
  async around(player: string, options: Options.AroundOptions = {}) {
    checkShape(options, Q["leaderboard.around"]);
    return leaderboards.around(this.#rt.ctx(), this.board, player, options.k, options);
  }

  /** Board settings and player count; NotFoundError when absent. */
  async info() {
    return leaderboards.info(this.#rt.ctx(), this.board);
  }

  /** Removes a player. */
  async remove(player: string): Promise<{ removed: boolean }> {
    return leaderboards.removePlayer(this.#rt.ctx(), this.board, player);
  }

  /** Deletes every key of the board. */
  async delete(): Promise<{ removed: boolean }> {
    return leaderboards.deleteBoard(this.#rt.ctx(), this.board);
  }
}

// Where each method's input goes in its route (./locate.ts): `[rest, ...path parameters]`.
locateMethods(LeaderboardHandle, {
  configure: ["json", "board"],
  join: ["json", "board", "player"],
  score: ["json", "board", "player"],
  increment: ["json", "board", "player"],
  set: ["json", "board", "player"],
  // POST …/scores {items}: each item's player is in the body
  scores: ["json", "board"],
  get: ["query", "board", "player"],
  // POST …/rank?season= {players}: the options are the query, the players the body
  rank: ["json", "board", "?", "?season"],
  seasons: ["query", "board"],
  page: ["query", "board"],
  around: ["query", "board", "player"],
  info: ["query", "board"],
  remove: ["query", "board", "player"],
  delete: ["query", "board"],
});
