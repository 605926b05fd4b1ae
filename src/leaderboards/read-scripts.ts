import { activityPageLua } from "../redis/pages.ts";
import { defineScript } from "../redis/script.ts";
import { cfgLua, entryLua, memberLua, rowsLua, seasonLua } from "./lua.ts";

/*
 * The leaderboard read scripts (see scripts.ts for the member and score conventions). A read of
 * an unknown board or player answers `{missing = true}` and one of a season the board's reset does
 * not name `{noSeason = true}`: reads.ts turns both into a NotFoundError whose message names the
 * board and the season asked for, which the scripts never see.
 */

/** A player's entry, score, rank, total and movement in a season; `snapshot` is the board's daily snapshot. */
export const getScript = defineScript({
  name: "leaderboards.get",
  write: false,
  keys: ["players", "profiles", "snapshot", "...seasonKeys"],
  args: ["player", "...seasonArgs"],
  uses: [entryLua, cfgLua, seasonLua],
  lua: `
local got = redis.call('HMGET', players, player, '_cfg')
if not got[1] then return {missing = true} end
local cfg = parseCfg(got[2])
local s   = seasonOf(cfg.reset, seasonKeys, seasonArgs)
if not s then return {noSeason = true} end
local e     = parseEntry(got[1])
local m     = memberIn(e, s.sid)
local score = redis.call('ZSCORE', s.key, m)
local rank  = score and redis.call('ZRANK', s.key, m) + 1 or nil
local prev, best = movement(s, e, rank)
-- a board without seasons: the rank at the last daily snapshot (jobs.ts)
if s.reset == 'n' then prev = tonumber(redis.call('ZSCORE', snapshot, player)) end
return {
  profile  = redis.call('HGET', profiles, player),
  joinedAt = e.joined,
  score    = score or '0',
  rank     = rank or false,
  total    = redis.call('ZCARD', s.key),
  previousRank = prev or false,
  bestRank = best or false,
  season   = s.sid,
}
`,
});

/** Ranks `start`..`stop` (0-based, inclusive) of a season, with profiles and movement. */
export const pageScript = defineScript({
  name: "leaderboards.page",
  write: false,
  keys: ["settings", "players", "profiles", "snapshot", "...seasonKeys"],
  args: ["start", "stop", "...seasonArgs"],
  uses: [cfgLua, seasonLua, rowsLua],
  lua: `
local meta = redis.call('HMGET', settings, 'ties', 'cfg')
if not meta[1] then return {missing = true} end
local cfg = parseCfg(meta[2])
local s   = seasonOf(cfg.reset, seasonKeys, seasonArgs)
if not s then return {noSeason = true} end
local rows = redis.call('ZRANGE', s.key, start, stop, 'WITHSCORES')
local found, moves = detailsOf(profiles, players, s, rows, tonumber(start) + 1, snapshot)
return {ties = meta[1], total = redis.call('ZCARD', s.key), rows = rows, profiles = found, moves = moves, season = s.sid}
`,
});

/** The player with up to `k` rows above and below. */
export const aroundScript = defineScript({
  name: "leaderboards.around",
  write: false,
  keys: ["players", "profiles", "snapshot", "...seasonKeys"],
  args: ["player", "k", "...seasonArgs"],
  uses: [entryLua, cfgLua, seasonLua, rowsLua],
  lua: `
k = tonumber(k)
local got = redis.call('HMGET', players, player, '_cfg')
if not got[1] then return {missing = true} end
local s = seasonOf(parseCfg(got[2]).reset, seasonKeys, seasonArgs)
if not s then return {noSeason = true} end
local rank = redis.call('ZRANK', s.key, memberIn(parseEntry(got[1]), s.sid))
if not rank then return {unranked = true, season = s.sid} end
local start = math.max(0, rank - k)
local rows  = redis.call('ZRANGE', s.key, start, rank + k, 'WITHSCORES')
local found, moves = detailsOf(profiles, players, s, rows, start + 1, snapshot)
return {start = start, rank = rank + 1, rows = rows, profiles = found, moves = moves, season = s.sid}
`,
});

/** Board settings and the current season's player count. */
export const countScript = defineScript({
  name: "leaderboards.count",
  write: false,
  keys: ["settings", "...seasonKeys"],
  args: ["...seasonArgs"],
  uses: [cfgLua, seasonLua],
  lua: `
local meta = redis.call('HMGET', settings, 'ties', 'createdAt', 'cfg')
if not meta[1] then return {missing = true} end
local cfg = parseCfg(meta[3])
local s   = seasonOf(cfg.reset, seasonKeys, seasonArgs)
return {ties = meta[1], createdAt = meta[2], total = redis.call('ZCARD', s.key), cfg = cfgText(cfg), season = s.sid}
`,
});

/**
 * Ranks of a subset of players (`names`). One HMGET of the entries, one ZMSCORE, one ZRANK per
 * ranked player, one HMGET of their profiles. When none of them ever joined, one EXISTS of the
 * settings tells an unknown board (404, as every other read of it) from players who never joined.
 */
export const rankScript = defineScript({
  name: "leaderboards.rank",
  write: false,
  keys: ["settings", "players", "profiles", "...seasonKeys"],
  args: ["...names", "...seasonArgs"],
  uses: [entryLua, cfgLua, seasonLua],
  lua: `
local found = redis.call('HMGET', players, '_cfg', unpack(names))
local s = seasonOf(parseCfg(found[1]).reset, seasonKeys, seasonArgs)
if not s then return {noSeason = true} end
local known, members = {}, {}
for j, player in ipairs(names) do
  if found[j + 1] then
    known[#known + 1] = player
    members[#members + 1] = memberIn(parseEntry(found[j + 1]), s.sid)
  end
end
if #known == 0 and redis.call('EXISTS', settings) == 0 then return {missing = true} end
local items, ranked = {}, {}
if #members > 0 then
  local scores = redis.call('ZMSCORE', s.key, unpack(members))
  for j, player in ipairs(known) do
    if scores[j] then
      items[#items + 1] = {player, scores[j], redis.call('ZRANK', s.key, members[j]) + 1}
      ranked[#ranked + 1] = player
    end
  end
end
local found2 = #ranked > 0 and redis.call('HMGET', profiles, unpack(ranked)) or {}
return {items = items, profiles = found2, season = s.sid}
`,
});

/**
 * Kept seasons. `rankings` are, for daily, weekly and monthly, the current season's ranking and the
 * MAX_KEEP_SEASONS before it (newest first); `ids` their season ids.
 */
export const seasonsScript = defineScript({
  name: "leaderboards.seasons",
  write: false,
  keys: ["settings", "profiles", "...rankings"],
  args: ["...ids"],
  uses: [cfgLua, memberLua],
  lua: `
local per  = #rankings / 3
local meta = redis.call('HMGET', settings, 'ties', 'cfg')
if not meta[1] then return {missing = true} end
local cfg = parseCfg(meta[2])
if cfg.reset == 'n' then return {reset = 'n', seasons = {}} end
local base = 1 + ({d = 0, w = 1, m = 2})[cfg.reset] * per
local seasons, names = {}, {}
for i = 0, math.min(cfg.keep, per - 1) do
  local key  = rankings[base + i]
  local size = redis.call('ZCARD', key)
  if size > 0 then
    local top = redis.call('ZRANGE', key, 0, 2, 'WITHSCORES')
    for r = 1, #top, 2 do names[#names + 1] = playerOf(top[r]) end
    seasons[#seasons + 1] = {ids[base + i], size, top}
  end
end
local found = #names > 0 and redis.call('HMGET', profiles, unpack(names)) or {}
return {reset = cfg.reset, seasons = seasons, profiles = found}
`,
});

/**
 * A page of the registry: boards with players (or configured by an admin), most recent activity (a
 * new player, a PUT) first. `offset` '' pages by cursor (activityPageLua, src/redis/pages.ts; the
 * first page when `score` is ''), else by position. Returns {boards, total, next = cursor parts or false}.
 */
export const listScript = defineScript({
  name: "leaderboards.list",
  write: false,
  keys: ["registry"],
  args: ["offset", "limit", "score", "member", "high", "low"],
  uses: [activityPageLua],
  lua: `
limit = tonumber(limit)
local total = redis.call('ZCARD', registry)
if offset ~= '' then
  offset = tonumber(offset)
  return {boards = redis.call('ZRANGE', registry, offset, offset + limit - 1, 'REV'), total = total, next = false}
end
local flat, next = activityPage(registry, limit, score, member, high, low)
local boards = {}
for i = 1, #flat, 2 do boards[#boards + 1] = flat[i] end
return {boards = boards, total = total, next = next}
`,
});
