import type { Ctx } from "../context.ts";
import { NotFoundError } from "../errors.ts";
import type { Idempotency, Written } from "../redis/script.ts";
// The module itself, not webhooks/index.ts, whose jobs import the trending library: a first score
// write would compile it (bench/cold-start.ts).
import { emitBlock } from "../webhooks/emit.ts";
import { boardKeys, registryKey } from "./keys.ts";
import { countScript } from "./read-scripts.ts";
import { listCalls, scoreScript } from "./score.ts";
import { configureScript, deleteScript, joinScript, removeScript } from "./scripts.ts";
import {
  DEFAULT_KEEP_SEASONS,
  keptSeasons,
  rankingKey,
  RESET_LETTER,
  RESET_OF,
  seasonAt,
  seasonBlock,
  seasonIdOf,
  type Reset,
  type Season,
} from "./seasons.ts";
import {
  checkBoard,
  checkChanges,
  checkConfig,
  checkJoin,
  MAX_SCORE,
  negated,
  scoreOf,
  type BoardConfig,
  type ScoreChange,
  type TiePolicy,
} from "./validate.ts";

/**
 * Leaderboards: one ranking per board with fair ties, player profiles, pages
 * and around-me, seasons, guards, percentile, subset ranking and movement.
 * Every function is one Lua script, so one Redis round trip, and atomic:
 * concurrent increments of one player never lose points. The board's settings
 * and its writes are here; the reads of its rankings in reads.ts.
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

export interface JoinView {
  player: string;
  name: string | null;
  meta: Record<string, unknown> | null;
  score: number;
  /** null when an existing player joins again in a season it has not played and 0 is outside the guards (it is not entered). */
  rank: number | null;
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

/** The settings string the scripts keep (`<reset>|<keep>|<min>|<max>|<maxIncrement>`, lua.ts), parsed. */
function cfgOf(text: string | undefined) {
  const [r = "n", keep = "", min = "", max = "", inc = ""] = (text ?? "").split("|");
  const num = (v: string) => (v === "" ? null : Number(v));
  return {
    reset: RESET_OF[r] ?? "none",
    keepSeasons: keep === "" ? DEFAULT_KEEP_SEASONS : Number(keep),
    minScore: num(min),
    maxScore: num(max),
    maxIncrement: num(inc),
  };
}

/**
 * Creates a board or changes its settings: tie policy, seasons (`reset`,
 * `keepSeasons`) and guards (`minScore`, `maxScore`, `maxIncrement`; `null`
 * clears one). Omitted settings keep their value. Changing the tie policy or
 * the reset of a board that has players is a ConflictError: their tie-breaks
 * were taken under the old policy, and another reset would hide the live ranking.
 * @param config a tie policy alone is accepted too (the v1 signature).
 */
export async function configure(
  ctx: Ctx,
  board: string,
  config: BoardConfig | TiePolicy = {},
  idempotency?: Idempotency,
): Promise<Written<BoardSettings>> {
  const c: BoardConfig = typeof config === "string" ? { ties: config } : config;
  checkConfig(board, c);
  const arg = (v: number | null | undefined) => (v === undefined ? "" : v === null ? "-" : String(v));
  const k = boardKeys(ctx.prefix, board);
  const season = seasonBlock(ctx.prefix, board, ctx.now);
  const { value, replayed } = await configureScript.run<{
    players: number;
    ties: TiePolicy;
    createdAt: string;
    created: boolean;
    cfg: string;
    season: string;
  }>(
    ctx.redis,
    { settings: k.settings, players: k.players, registry: registryKey(ctx.prefix), seasonKeys: season.keys },
    {
      board,
      now: ctx.now,
      ties: c.ties ?? "",
      reset: c.reset ? RESET_LETTER[c.reset] : "",
      keep: c.keepSeasons ?? "",
      min: arg(c.minScore),
      max: arg(c.maxScore),
      maxIncrement: arg(c.maxIncrement),
      seasonArgs: season.args,
    },
    idempotency,
  );
  return {
    board,
    ties: value.ties,
    createdAt: Number(value.createdAt),
    players: value.players,
    created: value.created,
    ...cfgOf(value.cfg),
    season: seasonIdOf(value.season),
    replayed,
  };
}

/** Board settings and the current season's player count; NotFoundError when the board does not exist. */
export async function info(ctx: Ctx, board: string): Promise<Omit<BoardSettings, "created">> {
  checkBoard(board);
  const k = boardKeys(ctx.prefix, board);
  const season = seasonBlock(ctx.prefix, board, ctx.now);
  const res = await countScript.run<{
    missing?: true;
    ties: TiePolicy;
    createdAt: string;
    total: number;
    cfg: string;
    season: string;
  }>(ctx.redis, { settings: k.settings, seasonKeys: season.keys }, { seasonArgs: season.args });
  if (res.missing) throw new NotFoundError(`No board '${board}'.`);
  return {
    board,
    ties: res.ties,
    createdAt: Number(res.createdAt),
    players: res.total,
    ...cfgOf(res.cfg),
    season: seasonIdOf(res.season),
  };
}

/**
 * Adds a player (creating the board with default settings if needed) or,
 * for an existing player, replaces name and meta while keeping score and
 * join time.
 */
export async function join(
  ctx: Ctx,
  board: string,
  player: string,
  input: JoinInput,
  idempotency?: Idempotency,
): Promise<Written<JoinView>> {
  checkJoin(board, player, input.name, input.meta, input.score);
  const k = boardKeys(ctx.prefix, board);
  const season = seasonBlock(ctx.prefix, board, ctx.now);
  const { value, replayed } = await joinScript.run<{
    created: boolean;
    joinedAt: string;
    score: string;
    rank: number | false;
  }>(
    ctx.redis,
    {
      settings: k.settings,
      players: k.players,
      profiles: k.profiles,
      registry: registryKey(ctx.prefix),
      seasonKeys: season.keys,
    },
    {
      board,
      player,
      now: ctx.now,
      profile: JSON.stringify({ name: input.name, meta: input.meta ?? null }),
      negScore: negated(input.score ?? 0),
      seasonArgs: season.args,
    },
    idempotency,
  );
  return {
    created: value.created,
    player,
    name: input.name,
    meta: input.meta ?? null,
    score: scoreOf(value.score),
    rank: value.rank === false ? null : value.rank,
    joinedAt: Number(value.joinedAt),
    replayed,
  };
}

/**
 * Applies score changes in order, atomically: a missing player, a result
 * outside ±1e15 or a guard breach refuses the whole list and writes nothing.
 * @param list the changes came as a list (`items`): a refusal names the item (`items.<i>`) even in a
 *   list of one; by default only a list of several is named so.
 */
export async function changeScores(
  ctx: Ctx,
  board: string,
  changes: (ScoreChange & { player: string })[],
  idempotency?: Idempotency,
  list = changes.length > 1,
): Promise<Written<{ results: ScoreResult[] }>> {
  checkChanges(board, changes, list);
  const season = seasonBlock(ctx.prefix, board, ctx.now);
  const k = boardKeys(ctx.prefix, board);
  // a change of #1 is queued for the leaderboard.leader webhooks in the same script
  const hooks = emitBlock(ctx);
  const args = {
    board,
    limit: MAX_SCORE,
    now: ctx.now,
    names: changes.map((c) => c.player),
    kinds: changes.map((c) => ("by" in c ? "by" : (c.mode ?? "replace"))),
    values: changes.map((c) => negated("by" in c ? c.by : c.set)),
    seasonArgs: season.args,
    hookArgs: hooks.args,
  };
  if (list) listCalls.add(args);
  const { value, replayed } = await scoreScript.run<[string, string, number][]>(
    ctx.redis,
    { settings: k.settings, players: k.players, seasonKeys: season.keys, hookKeys: hooks.keys },
    args,
    idempotency,
  );
  return { results: value.map(([player, stored, rank]) => ({ player, score: scoreOf(stored), rank })), replayed };
}

/**
 * One player's score change; see `changeScores`. Answers `{ score, rank }` as the HTTP route
 * does (the caller named the player; a batch's results name theirs).
 */
export async function changeScore(
  ctx: Ctx,
  board: string,
  player: string,
  change: ScoreChange,
  idempotency?: Idempotency,
): Promise<Written<Omit<ScoreResult, "player">>> {
  checkBoard(board, player);
  const { results, replayed } = await changeScores(ctx, board, [{ ...change, player }], idempotency, false);
  const { score, rank } = results[0] as ScoreResult;
  return { score, rank, replayed };
}

/**
 * Removes a player; `removed` is false when there was none (deleting is
 * idempotent). The last player's removal takes the board out of the list, and
 * a board that only joins made (never configured with PUT) goes entirely.
 * Not a `Written`: it takes no idempotency key, and repeating it is harmless.
 */
export async function removePlayer(ctx: Ctx, board: string, player: string): Promise<{ removed: boolean }> {
  checkBoard(board, player);
  const k = boardKeys(ctx.prefix, board);
  const season = seasonBlock(ctx.prefix, board, ctx.now);
  const next = nextSeasons(ctx.now);
  const { value } = await removeScript.run<{ removed: boolean }>(
    ctx.redis,
    {
      settings: k.settings,
      players: k.players,
      profiles: k.profiles,
      registry: registryKey(ctx.prefix),
      snapshot: k.snapshot,
      snapshotNext: k.snapshotNext,
      seasonKeys: season.keys,
      nextKeys: next.map((n) => rankingKey(ctx.prefix, board, n.id)),
    },
    { board, player, seasonArgs: season.args, nextIds: next.map((n) => n.id) },
  );
  return value;
}

/** The season after the one of `now`, daily, weekly and monthly: where a Worker whose clock is past its end writes. */
function nextSeasons(now: number): Season[] {
  return (["daily", "weekly", "monthly"] as const).map((reset) => seasonAt(reset, seasonAt(reset, now).to as number));
}

/** Deletes every key of a board and its registry entry; no scan, the keys are known. */
export async function deleteBoard(ctx: Ctx, board: string): Promise<{ removed: boolean }> {
  checkBoard(board);
  const k = boardKeys(ctx.prefix, board);
  // every ranking the board may still have: all-time, and each kept season of every reset
  const kept = keptSeasons(ctx.now);
  // and the season after the current one: a Worker whose clock is already past its end may have
  // written there (review 8: a board deleted just before midnight came back with that ranking)
  const rankings = [...kept.daily, ...kept.weekly, ...kept.monthly, ...nextSeasons(ctx.now)].map((season) =>
    rankingKey(ctx.prefix, board, season.id),
  );
  const { value } = await deleteScript.run<{ removed: boolean }>(
    ctx.redis,
    {
      registry: registryKey(ctx.prefix),
      boardKeys: [k.settings, k.ranking, k.players, k.profiles, k.snapshot, k.snapshotNext, ...rankings],
    },
    { board },
  );
  return value;
}
