import { ConflictError, RejectedError, ValidationError, type FieldIssue } from "../errors.ts";
import { stampLua } from "../redis/pages.ts";
import { defineScript, type Refusal } from "../redis/script.ts";
import { cfgLua, entryLua, memberLua, seasonLua } from "./lua.ts";
import { RESET_OF } from "./seasons.ts";

/*
 * The leaderboard write scripts (the score write: score.ts; reads: read-scripts.ts; the snapshot
 * job's own: jobs.ts).
 *
 * Ranking members are `<SEQ_WIDTH-digit seq>:<player>` with the score stored negated:
 * ascending order is then "highest score first, and of equal scores the lower
 * sequence first". The sequence is a per-board counter (HINCRBY on the settings
 * hash) taken when a player joins (ties "joined") or whenever the score changes
 * (ties "reached"). It orders writes as Redis applied them, which Worker clocks
 * in different locations cannot do, and never repeats within a millisecond.
 *
 * Scores travel as strings: what TypeScript formats (shortest round-trip) or
 * what Redis returns (%.17g), never a Lua number turned back into text, so
 * every integer up to 2^53 stays exact.
 *
 * Every call passes its season block (seasons.ts, seasonBlock) as the lists
 * `seasonKeys` and `seasonArgs`; the board's reset picks its season (lua.ts, seasonOf).
 */

/** A write the board's guards refuse (422 `score_rejected`); `path` names the item of a list ('' for none). */
export function rejected(board: string, r: Refusal, path: string): RejectedError {
  const player = String(r.player);
  const what =
    r.guard === "maxIncrement"
      ? `adds more than maxIncrement ${String(r.bound)} to '${player}'`
      : r.guard
        ? `would take the score of '${player}' past ${String(r.guard)} ${String(r.bound)}`
        : `puts '${player}' outside the board's guards [${String(r.min ?? "-inf")}, ${String(r.max ?? "+inf")}]`;
  const detail: FieldIssue = {
    path,
    message: r.guard ? `refused by ${String(r.guard)}` : "refused by minScore/maxScore",
  };
  return new RejectedError("score_rejected", `The request ${what} on board '${board}'; nothing was written.`, [detail]);
}

/**
 * PUT a board's settings. `ties`, `reset` and `keep` are '' to keep; `min`, `max` and `maxIncrement`
 * '' to keep, '-' to clear. A board an admin configured is no longer `implicit`: it keeps its
 * settings when its last player leaves.
 */
export const configureScript = defineScript({
  name: "leaderboards.configure",
  write: true,
  keys: ["settings", "players", "registry", "...seasonKeys"],
  args: ["board", "now", "ties", "reset", "keep", "min", "max", "maxIncrement", "...seasonArgs"],
  uses: [cfgLua, seasonLua, stampLua],
  refusals: {
    bad_range: () =>
      new ValidationError("minScore would exceed maxScore; nothing was changed.", [
        { path: "minScore", message: "must not exceed maxScore" },
      ]),
    board_not_empty: (r, call) =>
      new ConflictError(
        "board_not_empty",
        `Board '${call.args.board}' has ${String(r.players)} players ranked with ties '${String(r.ties)}' and reset '${RESET_OF[String(r.reset ?? "n")]}'; delete the board (or its players) before changing the tie policy or the reset.`,
      ),
  },
  lua: `
local meta      = redis.call('HMGET', settings, 'ties', 'createdAt', 'implicit', 'cfg')
local current   = meta[1]
local createdAt = meta[2]
local created   = not current
local old       = parseCfg(meta[4])
local cfg       = parseCfg(meta[4])
if reset ~= '' then cfg.reset = reset end
if keep ~= '' then cfg.keep = tonumber(keep) end
-- a guard's number and its text as sent (lua.ts, parseCfg)
local function merged(arg, value, text)
  if arg == '' then return value, text elseif arg == '-' then return nil, nil end
  return tonumber(arg), arg
end
cfg.min, cfg.minText = merged(min, cfg.min, cfg.minText)
cfg.max, cfg.maxText = merged(max, cfg.max, cfg.maxText)
cfg.maxInc, cfg.maxIncText = merged(maxIncrement, cfg.maxInc, cfg.maxIncText)
if cfg.min and cfg.max and cfg.min > cfg.max then return {refused = 'bad_range'} end
local newTies = ties ~= '' and ties or current or 'joined'
if not created and (newTies ~= current or cfg.reset ~= old.reset) then
  -- tie-breaks were taken under the old policy, and another reset would hide the live
  -- ranking: both only change on a board without players (the '_cfg' field is no player)
  local joined = redis.call('HLEN', players) - (meta[4] and 1 or 0)
  -- '_leader' (the last #1 told to webhooks) names a player still there, so only the count it adds is off
  if joined > 0 then joined = joined - redis.call('HEXISTS', players, '_leader') end
  if joined > 0 then return {refused = 'board_not_empty', ties = current, reset = old.reset, players = joined} end
end
if created then
  createdAt = now
  redis.call('HSET', settings, 'ties', newTies, 'createdAt', now, 'seq', 0)
elseif newTies ~= current then
  redis.call('HSET', settings, 'ties', newTies)
end
if meta[3] then redis.call('HDEL', settings, 'implicit') end
local text = cfgText(cfg)
if text ~= cfgText(old) then
  redis.call('HSET', settings, 'cfg', text)
  redis.call('HSET', players, '_cfg', text)
end
local s = seasonOf(cfg.reset, seasonKeys, seasonArgs)
stamp(registry, board, now)
return {ties = newTies, createdAt = createdAt, players = created and 0 or redis.call('ZCARD', s.key), created = created, cfg = text, season = s.sid}
`,
});

/**
 * Join (or update the profile of) a player; `negScore` is the negated initial score.
 * A known player already in the season costs HMGET + HSET of the profile + ZSCORE + ZRANK;
 * the board's settings and registry entry are touched only when a player is new.
 */
export const joinScript = defineScript({
  name: "leaderboards.join",
  write: true,
  keys: ["settings", "players", "profiles", "registry", "...seasonKeys"],
  args: ["board", "player", "now", "profile", "negScore", "...seasonArgs"],
  uses: [entryLua, cfgLua, seasonLua, memberLua, stampLua],
  refusals: { score_rejected: (r, call) => rejected(call.args.board as string, r, "") },
  lua: `
local got = redis.call('HMGET', players, player, '_cfg')
local cfg = parseCfg(got[2])
local s   = seasonOf(cfg.reset, seasonKeys, seasonArgs)
if got[1] then
  -- joining again replaces the profile only: score and join time stay
  local e = parseEntry(got[1])
  redis.call('HSET', profiles, player, profile)
  local score = redis.call('ZSCORE', s.key, memberIn(e, s.sid))
  if not score and ((cfg.min and 0 < cfg.min) or (cfg.max and 0 > cfg.max)) then
    -- it would enter the season at 0, outside the guards (review 20): the profile only; its
    -- first score write of the season enters it
    return {created = false, joinedAt = e.joined, score = '0', rank = false}
  end
  if not score then
    enterSeason(s, e, cfg.keep, now, settings)
    score = '0'
  end
  -- an entry of an older version, or a join racing a season boundary: the entry held another
  -- season, so the final rank of the season before is read again (a late write into the
  -- finished season, then one back in this, lost it: review 2)
  if e.sid ~= s.sid then
    local prev = prevRankOf(s, e)
    switchSeason(e, s.sid, cfg.keep)
    e.prev = prev
  end
  local rank = redis.call('ZRANK', s.key, e.member) + 1
  if not e.best or rank < e.best then
    e.best = rank
    redis.call('HSET', players, player, entryText(e))
  end
  return {created = false, joinedAt = e.joined, score = score, rank = rank}
end
local score = -tonumber(negScore)
if (cfg.min and score < cfg.min) or (cfg.max and score > cfg.max) then
  return {refused = 'score_rejected', player = player, min = cfg.minText, max = cfg.maxText}
end
local meta    = redis.call('HMGET', settings, 'ties', 'gone:' .. player)
local ties    = meta[1]
local created = not ties
if created then
  -- the first join creates the board with the default policy; made by a join, it
  -- goes away with its last player
  ties = 'joined'
  redis.call('HSET', settings, 'ties', ties, 'createdAt', now, 'seq', 1, 'implicit', 1)
end
local seq    = created and 1 or redis.call('HINCRBY', settings, 'seq', 1)
local member = memberOf(seq, player)
redis.call('ZADD', s.key, negScore, member)
expireSeason(s, cfg.keep, now)
local rank = redis.call('ZRANK', s.key, member) + 1
local e = {joined = now, policy = string.sub(ties, 1, 1), member = member, sid = s.sid, best = rank}
if meta[2] then
  -- a player removed before: the seasons it was in still hold its old members (removeScript),
  -- so the season before may hold its final rank. Kept under another tie policy, they are read
  -- another way: dropped.
  if string.sub(meta[2], 1, 1) == e.policy then e.past = pastOf(meta[2]); e.prev = prevRankOf(s, e) end
  redis.call('HDEL', settings, 'gone:' .. player)
end
redis.call('HSET', players, player, entryText(e))
redis.call('HSET', profiles, player, profile)
-- a new player is the activity the list is ordered by
stamp(registry, board, now)
return {created = true, joinedAt = now, score = negScore, rank = rank}
`,
});

/**
 * The player leaves the current season's ranking; finished seasons keep their final
 * standings until they expire. The last player's removal takes the board out of the
 * registry, and a board that only a join made (no admin PUT) goes with it.
 */
export const removeScript = defineScript({
  name: "leaderboards.remove",
  write: true,
  keys: ["settings", "players", "profiles", "registry", "snapshot", "snapshotNext", "...seasonKeys", "...nextKeys"],
  args: ["board", "player", "...seasonArgs", "...nextIds"],
  uses: [entryLua, cfgLua, seasonLua, memberLua],
  lua: `
local got = redis.call('HMGET', players, player, '_cfg', '_leader')
if not got[1] then return {removed = false} end
local cfg = parseCfg(got[2])
local s   = seasonOf(cfg.reset, seasonKeys, seasonArgs)
local e   = parseEntry(got[1])
redis.call('ZREM', s.key, memberIn(e, s.sid))
-- the player's latest write may be in the season after this one (a Worker whose clock is past the
-- season's end): it leaves that ranking too, else the live season would list a row no entry names
-- once it begins (review 26). nextKeys/nextIds: that season under daily, weekly, monthly.
local ahead = ({d = 1, w = 2, m = 3})[cfg.reset]
if ahead and e.sid == nextIds[ahead] then redis.call('ZREM', nextKeys[ahead], e.member) end
-- finished seasons keep the player's member: its sequence is kept per season (at most the kept
-- ones, the newest first) in the settings' 'gone:<player>' ('<policy>|<past>'), which a join of
-- the player takes into the new entry's <past> (lua.ts, memberIn). Under 'joined' the record of
-- a season holds for it and the seasons before; a member only the current season held (now
-- removed) needs none.
if s.prev and (e.sid or '') ~= '' and (e.sid ~= s.sid or e.oldSid or e.past) then
  local sid = (e.policy == 'j' and e.sid >= s.sid) and s.prevSid or e.sid
  keepPast(e, sid, seqOf(memberIn(e, sid)), cfg.keep + 1)
  redis.call('HSET', settings, 'gone:' .. player, e.policy .. '|' .. pastText(e.past))
end
-- a leader who leaves is forgotten (in the same HDEL): the next write leaving a player at
-- rank 1 reports that player as the new leader (previous: null)
if got[3] and string.match(got[3], '([^|]*)$') == player then
  redis.call('HDEL', players, player, '_leader')
else
  redis.call('HDEL', players, player)
end
redis.call('HDEL', profiles, player)
if redis.call('HLEN', players) == (got[2] and 1 or 0) then
  redis.call('ZREM', registry, board)
  -- the daily snapshot goes with the settings, in the same DEL
  if redis.call('HGET', settings, 'implicit') then redis.call('UNLINK', settings, snapshot, snapshotNext) end
end
return {removed = true}
`,
});

/** Deletes `boardKeys` (every key of the board: settings, players, profiles, every ranking it may have) and its registry entry. */
export const deleteScript = defineScript({
  name: "leaderboards.delete",
  write: true,
  keys: ["registry", "...boardKeys"],
  args: ["board"],
  lua: `
-- UNLINK frees a large board off the main thread
local removed = redis.call('UNLINK', unpack(boardKeys))
redis.call('ZREM', registry, board)
return {removed = removed > 0}
`,
});
