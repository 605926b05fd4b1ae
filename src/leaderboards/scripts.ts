import { defineWriteScript } from "../redis/script.ts";
import { SEQ_WIDTH } from "./keys.ts";
import { CFG, ENTRY, SEASON } from "./lua.ts";

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

export * from "./read-scripts.ts";

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
 * KEYS: settings, players, profiles, registry, season block (current), snapshot, snapshot next. ARGV: board, player, season block args.
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
  -- the daily snapshot (KEYS[13], KEYS[14]) goes with the settings, in the same DEL
  if redis.call('HGET', settings, 'implicit') then redis.call('DEL', settings, KEYS[13], KEYS[14]) end
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

