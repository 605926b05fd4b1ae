import { defineReadScript, defineWriteScript } from "../redis/script.ts";
import { SEQ_WIDTH } from "./keys.ts";
import { DEFAULT_KEEP_SEASONS } from "./seasons.ts";

/*
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
 */

/** Read scripts return a Lua value like write scripts do; this encodes it for `runRead`. */
function readScript(name: string, body: string) {
  return defineReadScript(name, `local function run()\n${body.trim()}\nend\nreturn cjson.encode(run())`);
}

const ENTRY = `
-- players hash values are '<joinedAt><policy>:<ranking member>|<season>|<best>|<previous>':
-- policy 'j' or 'r' is the board's tie policy, which cannot change while the board has
-- players, so a score change need not read the settings; <season> is the season of the
-- player's latest write, <best> the best rank seen at the player's writes in it and
-- <previous> the player's final rank in the season before it. Entries of older versions
-- end after the member (and may lack the policy: '' reads the settings).
local function parseEntry(text)
  local joined, policy, member, rest = string.match(text, '^(%-?%d+)([jr]?):([^|]+)(.*)$')
  local e = {joined = joined, policy = policy, member = member}
  if rest ~= '' then
    local sid, best, prev = string.match(rest, '^|([^|]*)|([^|]*)|([^|]*)$')
    e.sid, e.best, e.prev = sid, tonumber(best), tonumber(prev)
  end
  return e
end
local function entryText(e)
  return e.joined .. e.policy .. ':' .. e.member .. '|' .. (e.sid or '') .. '|' .. (e.best or '') .. '|' .. (e.prev or '')
end`;

const CFG = `
-- board settings a script needs, as one string '<reset>|<keep>|<min>|<max>|<maxIncrement>'
-- kept in the settings hash ('cfg') and in the players hash ('_cfg': no player name starts
-- with '_'), so a score change reads it with the HMGET of the players' entries
local function parseCfg(text)
  local c = {reset = 'n', keep = ${DEFAULT_KEEP_SEASONS}}
  if text then
    local r, k, mn, mx, mi = string.match(text, '^(%a)|(%d*)|([^|]*)|([^|]*)|([^|]*)$')
    c.reset, c.keep, c.min, c.max, c.maxInc = r, tonumber(k) or ${DEFAULT_KEEP_SEASONS}, tonumber(mn), tonumber(mx), tonumber(mi)
  end
  return c
end
local function cfgText(c)
  return c.reset .. '|' .. c.keep .. '|' .. (c.min or '') .. '|' .. (c.max or '') .. '|' .. (c.maxInc or '')
end`;

const SEASON = `
-- The season block (src/leaderboards/seasons.ts): KEYS[K..K+3] the season's ranking
-- under reset none, daily, weekly, monthly, KEYS[K+4..K+7] the season before it;
-- ARGV[A..A+7] per policy the season id ('' when the request names none of that
-- policy) and the season's end in epoch ms. The board's reset picks one.
local POLICY = {n = 0, d = 1, w = 2, m = 3}
local function seasonOf(reset, K, A)
  local i   = POLICY[reset] or 0
  local sid = ARGV[A + i * 2]
  if sid == '' then return nil end
  return {reset = reset, key = KEYS[K + i], prev = reset ~= 'n' and KEYS[K + 4 + i] or nil, sid = sid, to = tonumber(ARGV[A + i * 2 + 1])}
end
local function daysFromCivil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local doy = math.floor((153 * ((m + 9) % 12) + 2) / 5) + d - 1
  return era * 146097 + yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy - 719468
end
-- A season's ranking lives until keep newer seasons have begun: its TTL is set when a
-- player first enters it (EXPIRE NX), so no job is needed and the key never outlives that.
local function expireSeason(s, keep, now)
  if s.reset == 'n' then return end
  local at
  if s.reset == 'm' then
    local y, m = string.match(s.sid, '^(%d+)-(%d+)$')
    local t    = tonumber(y) * 12 + tonumber(m) - 1 + keep + 1
    local ty   = math.floor(t / 12)
    at = daysFromCivil(ty, t - ty * 12 + 1, 1) * 86400000
  else
    at = s.to + keep * (s.reset == 'd' and 86400000 or 604800000)
  end
  redis.call('EXPIRE', s.key, math.max(1, math.ceil((at - tonumber(now)) / 1000)), 'NX')
end
-- Movement of a player read in season s: previousRank is the final rank in the season
-- before s (cached in the entry when the player first wrote in s; else read with one
-- ZRANK, right for 'joined' members, which never change, and for 'reached' members
-- last written before s); bestRank is the best rank seen at the player's writes in s,
-- never worse than the rank now.
local function movement(s, e, rank)
  local prev, best = nil, nil
  if e.sid == s.sid then
    prev, best = e.prev, e.best
  elseif s.prev and (e.policy ~= 'r' or (e.sid or '') < s.sid) then
    local r = redis.call('ZRANK', s.prev, e.member)
    prev = r and r + 1 or nil
  end
  if rank and (not best or rank < best) then best = rank end
  return prev, best
end`;

/**
 * PUT a board's settings. KEYS: settings, players, registry, season block (current).
 * ARGV: board, now, ties ('' keeps), reset letter ('' keeps), keep ('' keeps), min, max,
 * maxIncrement (each '' keeps, '-' clears), season block args.
 * A board an admin configured is no longer `implicit`: it keeps its settings
 * when its last player leaves.
 */
export const configureBoard = defineWriteScript(
  "leaderboards:configure",
  `${CFG}${SEASON}
local settings, players, registry = KEYS[1], KEYS[2], KEYS[3]
local board, now, ties            = ARGV[1], ARGV[2], ARGV[3]
local meta      = redis.call('HMGET', settings, 'ties', 'createdAt', 'implicit', 'cfg')
local current   = meta[1]
local createdAt = meta[2]
local created   = not current
local old       = parseCfg(meta[4])
local cfg       = parseCfg(meta[4])
if ARGV[4] ~= '' then cfg.reset = ARGV[4] end
if ARGV[5] ~= '' then cfg.keep = tonumber(ARGV[5]) end
local function merged(arg, value)
  if arg == '' then return value elseif arg == '-' then return nil end
  return tonumber(arg)
end
cfg.min, cfg.max, cfg.maxInc = merged(ARGV[6], cfg.min), merged(ARGV[7], cfg.max), merged(ARGV[8], cfg.maxInc)
if cfg.min and cfg.max and cfg.min > cfg.max then return {refused = true, badRange = true} end
local newTies = ties ~= '' and ties or current or 'joined'
if not created and (newTies ~= current or cfg.reset ~= old.reset) then
  -- tie-breaks were taken under the old policy, and another reset would hide the live
  -- ranking: both only change on a board without players (the '_cfg' field is no player)
  local joined = redis.call('HLEN', players) - (meta[4] and 1 or 0)
  if joined > 0 then return {refused = true, conflict = current, reset = old.reset, players = joined} end
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
local s = seasonOf(cfg.reset, 4, 9)
redis.call('ZADD', registry, 'GT', now, board)
return {ties = newTies, createdAt = createdAt, players = created and 0 or redis.call('ZCARD', s.key), created = created, cfg = text, season = s.sid}
`,
);

/**
 * Join (or update the profile of) a player. KEYS: settings, players, profiles, registry, season block.
 * ARGV: board, player, now, profile JSON, negated initial score, season block args.
 * A known player already in the season costs HMGET + HSET of the profile + ZSCORE + ZRANK;
 * the board's settings and registry entry are touched only when a player is new.
 */
export const joinPlayer = defineWriteScript(
  "leaderboards:join",
  `${ENTRY}${CFG}${SEASON}
local settings, players, profiles, registry = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local board, player, now, profile, negScore = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local got = redis.call('HMGET', players, player, '_cfg')
local cfg = parseCfg(got[2])
local s   = seasonOf(cfg.reset, 5, 6)
if got[1] then
  -- joining again replaces the profile only: score and join time stay
  local e = parseEntry(got[1])
  redis.call('HSET', profiles, player, profile)
  local score = redis.call('ZSCORE', s.key, e.member)
  if not score then
    -- first call of the player in this season: enters it at 0 with its tie-break place
    redis.call('ZADD', s.key, 0, e.member)
    expireSeason(s, cfg.keep, now)
    local prev = s.prev and redis.call('ZRANK', s.prev, e.member)
    e.sid, e.best, e.prev, score = s.sid, nil, prev and prev + 1 or nil, '0'
  end
  local rank = redis.call('ZRANK', s.key, e.member) + 1
  if e.sid ~= s.sid then e.sid, e.best, e.prev = s.sid, nil, nil end -- an entry of an older version
  if not e.best or rank < e.best then
    e.best = rank
    redis.call('HSET', players, player, entryText(e))
  end
  return {created = false, joinedAt = e.joined, score = score, rank = rank}
end
local score = -tonumber(negScore)
if (cfg.min and score < cfg.min) or (cfg.max and score > cfg.max) then
  return {refused = true, rejected = player, min = cfg.min, max = cfg.max}
end
local ties    = redis.call('HGET', settings, 'ties')
local created = not ties
if created then
  -- the first join creates the board with the default policy; made by a join, it
  -- goes away with its last player
  ties = 'joined'
  redis.call('HSET', settings, 'ties', ties, 'createdAt', now, 'seq', 1, 'implicit', 1)
end
local seq    = created and 1 or redis.call('HINCRBY', settings, 'seq', 1)
local member = string.format('%0${SEQ_WIDTH}d', seq) .. ':' .. player
redis.call('ZADD', s.key, negScore, member)
expireSeason(s, cfg.keep, now)
local rank = redis.call('ZRANK', s.key, member) + 1
redis.call('HSET', players, player, entryText({joined = now, policy = string.sub(ties, 1, 1), member = member, sid = s.sid, best = rank}))
redis.call('HSET', profiles, player, profile)
-- a new player is the activity the list is ordered by
redis.call('ZADD', registry, 'GT', now, board)
return {created = true, joinedAt = now, score = negScore, rank = rank}
`,
);

/**
 * Apply score changes in order. KEYS: settings, players, season block.
 * ARGV: limit, now, count, season block args, then per op: player, kind ('by' | 'replace' | 'best'), negated value.
 * One HMGET of the board's settings string and the players' entries (ranking member, tie
 * policy, season, best rank) and one ZMSCORE (range and guard checks happen before any
 * write) for the whole batch, then one write and one ZRANK per change, and one HSET of
 * the entries that changed (a better rank, a new season, a new tie-break place).
 */
export const applyScores = defineWriteScript(
  "leaderboards:score",
  `${ENTRY}${CFG}${SEASON}
local settings, players = KEYS[1], KEYS[2]
local limit, now, n     = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local O = 12 -- first op argument
local entries, current, sim, moved = {}, {}, {}, {}
local boardTies = nil

-- Every distinct player's entry with one HMGET and current score with one
-- ZMSCORE, whatever the batch size.
local names, firstIndex = {}, {}
for i = 0, n - 1 do
  local player = ARGV[O + i * 3]
  if not firstIndex[player] then
    firstIndex[player] = i
    names[#names + 1] = player
  end
end
local found   = redis.call('HMGET', players, '_cfg', unpack(names))
local cfg     = parseCfg(found[1])
local s       = seasonOf(cfg.reset, 3, 4)
local members = {}
for j, player in ipairs(names) do
  local text = found[j + 1]
  if not text then return {refused = true, missing = player, index = firstIndex[player]} end
  local e = parseEntry(text)
  if e.policy == '' then
    boardTies = boardTies or redis.call('HGET', settings, 'ties') or 'joined'
    e.policy = string.sub(boardTies, 1, 1)
  end
  entries[player] = e
  members[j] = e.member
end
local scores = redis.call('ZMSCORE', s.key, unpack(members))
for j, player in ipairs(names) do
  -- a player not yet in this season starts it at 0
  current[player] = scores[j] or '0'
  sim[player] = tonumber(current[player])
  entries[player].absent = not scores[j]
end

-- Pass 1 writes nothing: every intermediate score must stay within the exact range
-- and the board's guards, so one bad item refuses the whole batch.
local spent = {}
for i = 0, n - 1 do
  local player = ARGV[O + i * 3]
  local kind   = ARGV[O + 1 + i * 3]
  local value  = tonumber(ARGV[O + 2 + i * 3])
  local stored = sim[player]
  -- the same double addition ZINCRBY performs, so the check matches what pass 2 stores
  if kind == 'by' then
    stored = stored + value
    -- maxIncrement bounds what one request adds to a player, however it is split
    spent[player] = (spent[player] or 0) + math.abs(value)
    if cfg.maxInc and spent[player] > cfg.maxInc then return {refused = true, rejected = player, index = i, guard = 'maxIncrement', bound = cfg.maxInc} end
  elseif kind == 'replace' then stored = value
  elseif value < stored then stored = value end -- best: negated, so lower is better
  if stored > limit or stored < -limit then return {refused = true, outOfRange = player, index = i} end
  if stored ~= sim[player] then
    if cfg.min and -stored < cfg.min then return {refused = true, rejected = player, index = i, guard = 'minScore', bound = cfg.min} end
    if cfg.max and -stored > cfg.max then return {refused = true, rejected = player, index = i, guard = 'maxScore', bound = cfg.max} end
  end
  sim[player] = stored
end

for _, player in ipairs(names) do
  local e = entries[player]
  if e.absent then
    -- first write of the player in this season: it enters at 0 keeping its tie-break
    -- place, the key gets its lifetime, and the final rank of the season before is kept
    redis.call('ZADD', s.key, 0, e.member)
    expireSeason(s, cfg.keep, now)
    local prev = s.prev and redis.call('ZRANK', s.prev, e.member)
    e.sid, e.best, e.prev = s.sid, nil, prev and prev + 1 or nil
    moved[player] = true
  elseif e.sid ~= s.sid then
    -- an entry of an older version (or a write racing a season boundary)
    e.sid, e.best, e.prev = s.sid, nil, nil
    moved[player] = true
  end
end

local results = {}
for i = 0, n - 1 do
  local player = ARGV[O + i * 3]
  local kind   = ARGV[O + 1 + i * 3]
  local value  = ARGV[O + 2 + i * 3]
  local e      = entries[player]
  local before = current[player]
  local after  = before
  if kind == 'by' then
    after = redis.call('ZINCRBY', s.key, value, e.member)
  elseif tonumber(value) ~= tonumber(before) and (kind == 'replace' or tonumber(value) < tonumber(before)) then
    redis.call('ZADD', s.key, value, e.member)
    after = value
  end
  if e.policy == 'r' and tonumber(after) ~= tonumber(before) then
    -- reaching a new score takes a new place in the tie order
    local seq    = redis.call('HINCRBY', settings, 'seq', 1)
    local member = string.format('%0${SEQ_WIDTH}d', seq) .. ':' .. player
    redis.call('ZREM', s.key, e.member)
    redis.call('ZADD', s.key, after, member)
    e.member = member
    moved[player] = true
  end
  current[player] = after
  results[i + 1] = {player, after}
end
-- ranks once the whole batch is in; a better rank than the player's best is kept
local rankOf = {}
for i = 1, n do
  local player = results[i][1]
  if not rankOf[player] then
    rankOf[player] = redis.call('ZRANK', s.key, entries[player].member) + 1
    local e = entries[player]
    if not e.best or rankOf[player] < e.best then
      e.best = rankOf[player]
      moved[player] = true
    end
  end
  results[i][3] = rankOf[player]
end
local changed = {}
for _, player in ipairs(names) do
  if moved[player] then
    changed[#changed + 1] = player
    changed[#changed + 1] = entryText(entries[player])
  end
end
if #changed > 0 then redis.call('HSET', players, unpack(changed)) end
return results
`,
);

/**
 * KEYS: settings, players, profiles, registry, season block (current). ARGV: board, player, season block args.
 * The player leaves the current season's ranking; finished seasons keep their final
 * standings until they expire. The last player's removal takes the board out of the
 * registry, and a board that only a join made (no admin PUT) goes with it.
 */
export const removePlayer = defineWriteScript(
  "leaderboards:remove",
  `${ENTRY}${CFG}${SEASON}
local settings, players, profiles, registry = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local board, player                         = ARGV[1], ARGV[2]
local got = redis.call('HMGET', players, player, '_cfg')
if not got[1] then return {removed = false} end
local s = seasonOf(parseCfg(got[2]).reset, 5, 3)
redis.call('ZREM', s.key, parseEntry(got[1]).member)
redis.call('HDEL', players, player)
redis.call('HDEL', profiles, player)
if redis.call('HLEN', players) == (got[2] and 1 or 0) then
  redis.call('ZREM', registry, board)
  if redis.call('HGET', settings, 'implicit') then redis.call('DEL', settings) end
end
return {removed = true}
`,
);

/** KEYS: registry, then every key of the board (settings, players, profiles, every ranking it may have). ARGV: board. */
export const deleteBoard = defineWriteScript(
  "leaderboards:delete",
  `
local registry = KEYS[1]
local board    = ARGV[1]
-- UNLINK frees a large board off the main thread
local removed = redis.call('UNLINK', unpack(KEYS, 2))
redis.call('ZREM', registry, board)
return {removed = removed > 0}
`,
);

/** KEYS: players, profiles, season block. ARGV: player, season block args. */
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

const PROFILES_OF_ROWS = `
-- rows are member, score, member, score, ...; members end in the player name
local function namesOf(rows)
  local names = {}
  for i = 1, #rows, 2 do names[#names + 1] = string.sub(rows[i], ${SEQ_WIDTH + 2}) end
  return names
end
-- profiles and movement (previousRank, bestRank) of page rows: two HMGETs for the page,
-- plus a ZRANK for a row whose previous rank the entry does not hold
local function detailsOf(profiles, players, s, rows, firstRank)
  local names = namesOf(rows)
  if #names == 0 then return {}, {} end
  local found = redis.call('HMGET', profiles, unpack(names))
  local texts = redis.call('HMGET', players, unpack(names))
  local moves = {}
  for i, text in ipairs(texts) do
    local prev, best = nil, nil
    if text then prev, best = movement(s, parseEntry(text), firstRank + i - 1) end
    moves[i] = {prev or false, best or false}
  end
  return found, moves
end`;

/** KEYS: settings, players, profiles, season block. ARGV: start, stop (0-based, inclusive), season block args. */
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
local found, moves = detailsOf(profiles, players, s, rows, tonumber(start) + 1)
return {ties = meta[1], total = redis.call('ZCARD', s.key), rows = rows, profiles = found, moves = moves, season = s.sid}
`,
);

/** KEYS: players, profiles, season block. ARGV: player, k, season block args. */
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
local found, moves = detailsOf(profiles, players, s, rows, start + 1)
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
