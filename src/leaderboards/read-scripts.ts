import { SEQ_WIDTH } from "./keys.ts";
import { CFG, ENTRY, PROFILES_OF_ROWS, readScript, SEASON } from "./lua.ts";

/** The leaderboard read scripts (see scripts.ts for the member and score conventions). */
/** KEYS: players, profiles, season block, daily snapshot. ARGV: player, season block args. */
export const getPlayer = readScript(
  "leaderboards:get",
  `${ENTRY}${CFG}${SEASON}
local players, profiles = KEYS[1], KEYS[2]
local player            = ARGV[1]
local got = redis.call('HMGET', players, player, '_cfg')
if not got[1] then return {missing = true} end
local cfg = parseCfg(got[2])
local s   = seasonOf(cfg.reset, 3, 2)
if not s then return {noSeason = cfg.reset} end
local e     = parseEntry(got[1])
local score = redis.call('ZSCORE', s.key, e.member)
local rank  = score and redis.call('ZRANK', s.key, e.member) + 1 or nil
local prev, best = movement(s, e, rank)
-- a board without seasons: the rank at the last daily snapshot (snapshot.ts)
if s.reset == 'n' then prev = tonumber(redis.call('ZSCORE', KEYS[11], player)) end
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
);

/** KEYS: settings, players, profiles, season block, daily snapshot. ARGV: start, stop (0-based, inclusive), season block args. */
export const pageOf = readScript(
  "leaderboards:page",
  `${ENTRY}${CFG}${SEASON}${PROFILES_OF_ROWS}
local settings, players, profiles = KEYS[1], KEYS[2], KEYS[3]
local start, stop                 = ARGV[1], ARGV[2]
local meta = redis.call('HMGET', settings, 'ties', 'cfg')
if not meta[1] then return {missing = true} end
local cfg = parseCfg(meta[2])
local s   = seasonOf(cfg.reset, 4, 3)
if not s then return {noSeason = cfg.reset} end
local rows = redis.call('ZRANGE', s.key, start, stop, 'WITHSCORES')
local found, moves = detailsOf(profiles, players, s, rows, tonumber(start) + 1, KEYS[12])
return {ties = meta[1], total = redis.call('ZCARD', s.key), rows = rows, profiles = found, moves = moves, season = s.sid}
`,
);

/** KEYS: players, profiles, season block, daily snapshot. ARGV: player, k, season block args. */
export const aroundOf = readScript(
  "leaderboards:around",
  `${ENTRY}${CFG}${SEASON}${PROFILES_OF_ROWS}
local players, profiles = KEYS[1], KEYS[2]
local player, k         = ARGV[1], tonumber(ARGV[2])
local got = redis.call('HMGET', players, player, '_cfg')
if not got[1] then return {missing = true} end
local s = seasonOf(parseCfg(got[2]).reset, 3, 3)
if not s then return {noSeason = true} end
local rank = redis.call('ZRANK', s.key, parseEntry(got[1]).member)
if not rank then return {unranked = true, season = s.sid} end
local start = math.max(0, rank - k)
local rows  = redis.call('ZRANGE', s.key, start, rank + k, 'WITHSCORES')
local found, moves = detailsOf(profiles, players, s, rows, start + 1, KEYS[11])
return {start = start, rank = rank + 1, rows = rows, profiles = found, moves = moves, season = s.sid}
`,
);

/** KEYS: settings, season block. ARGV: season block args. */
export const countOf = readScript(
  "leaderboards:count",
  `${CFG}${SEASON}
local settings = KEYS[1]
local meta = redis.call('HMGET', settings, 'ties', 'createdAt', 'cfg')
if not meta[1] then return {missing = true} end
local cfg = parseCfg(meta[3])
local s   = seasonOf(cfg.reset, 2, 1)
return {ties = meta[1], createdAt = meta[2], total = redis.call('ZCARD', s.key), cfg = cfgText(cfg), season = s.sid}
`,
);

/**
 * Ranks of a subset of players. KEYS: players, profiles, season block.
 * ARGV: season block args, then the players. One HMGET of the entries, one ZMSCORE,
 * one ZRANK per ranked player, one HMGET of their profiles.
 */
export const rankSubset = readScript(
  "leaderboards:rank",
  `${ENTRY}${CFG}${SEASON}
local players, profiles = KEYS[1], KEYS[2]
local names = {}
for i = 9, #ARGV do names[#names + 1] = ARGV[i] end
local found = redis.call('HMGET', players, '_cfg', unpack(names))
local s = seasonOf(parseCfg(found[1]).reset, 3, 1)
if not s then return {noSeason = true} end
local known, members = {}, {}
for j, player in ipairs(names) do
  if found[j + 1] then
    known[#known + 1] = player
    members[#members + 1] = parseEntry(found[j + 1]).member
  end
end
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
);

/**
 * Kept seasons. KEYS: settings, profiles, then for daily, weekly, monthly the current
 * season's ranking and the MAX_KEEP_SEASONS before it (newest first). ARGV: per key its season id.
 */
export const seasonsOf = readScript(
  "leaderboards:seasons",
  `${CFG}
local settings, profiles = KEYS[1], KEYS[2]
local per  = (#KEYS - 2) / 3
local meta = redis.call('HMGET', settings, 'ties', 'cfg')
if not meta[1] then return {missing = true} end
local cfg = parseCfg(meta[2])
if cfg.reset == 'n' then return {reset = 'n', seasons = {}} end
local base = 3 + ({d = 0, w = 1, m = 2})[cfg.reset] * per
local seasons, names = {}, {}
for i = 0, math.min(cfg.keep, per - 1) do
  local key  = KEYS[base + i]
  local size = redis.call('ZCARD', key)
  if size > 0 then
    local top = redis.call('ZRANGE', key, 0, 2, 'WITHSCORES')
    for r = 1, #top, 2 do names[#names + 1] = string.sub(top[r], ${SEQ_WIDTH + 2}) end
    seasons[#seasons + 1] = {ARGV[base - 2 + i], size, top}
  end
end
local found = #names > 0 and redis.call('HMGET', profiles, unpack(names)) or {}
return {reset = cfg.reset, seasons = seasons, profiles = found}
`,
);

/**
 * KEYS: registry. ARGV: offset, limit. Boards with players (or configured by
 * an admin), most recent activity (a new player, a PUT) first.
 */
export const listBoards = readScript(
  "leaderboards:list",
  `
local registry      = KEYS[1]
local offset, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
return {boards = redis.call('ZRANGE', registry, offset, offset + limit - 1, 'REV'), total = redis.call('ZCARD', registry)}
`,
);
