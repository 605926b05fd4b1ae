import { defineReadScript, defineWriteScript } from "../redis/script.ts";
import { SEQ_WIDTH } from "./keys.ts";

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
-- players hash values are '<joinedAt><policy>:<ranking member>', policy 'j' or 'r': the
-- board's tie policy, which cannot change while the board has players, so a score
-- change need not read the settings. Entries written before the policy was kept
-- there have none ('' : read the settings).
local function parseEntry(entry)
  local joined, policy, member = string.match(entry, '^(%-?%d+)([jr]?):(.+)$')
  return joined, member, policy
end`;

/**
 * PUT a board's settings. KEYS: settings, ranking, registry.
 * ARGV: board, now, ties ('' keeps the current policy).
 * A board an admin configured is no longer `implicit`: it keeps its settings
 * when its last player leaves.
 */
export const configureBoard = defineWriteScript(
  "leaderboards:configure",
  `
local settings, ranking, registry = KEYS[1], KEYS[2], KEYS[3]
local board, now, ties            = ARGV[1], ARGV[2], ARGV[3]
local meta      = redis.call('HMGET', settings, 'ties', 'createdAt', 'implicit')
local current   = meta[1]
local createdAt = meta[2]
local created   = false
local players   = 0
if not current then
  current, createdAt, created = ties ~= '' and ties or 'joined', now, true
  redis.call('HSET', settings, 'ties', current, 'createdAt', now, 'seq', 0)
else
  players = redis.call('ZCARD', ranking)
  if ties ~= '' and ties ~= current then
    -- existing tie-breaks were taken under the old policy; mixing them would rank unfairly
    if players > 0 then return {refused = true, conflict = current, players = players} end
    redis.call('HSET', settings, 'ties', ties)
    current = ties
  end
  if meta[3] then redis.call('HDEL', settings, 'implicit') end
end
redis.call('ZADD', registry, 'GT', now, board)
return {ties = current, createdAt = createdAt, players = players, created = created}
`,
);

/**
 * Join (or update the profile of) a player. KEYS: settings, ranking, players, profiles, registry.
 * ARGV: board, player, now, profile JSON, negated initial score.
 * A known player costs HGET + HSET of the profile + ZSCORE + ZRANK; the board's
 * settings and registry entry are touched only when a player is new.
 */
export const joinPlayer = defineWriteScript(
  "leaderboards:join",
  `${ENTRY}
local settings, ranking, players, profiles, registry = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local board, player, now, profile, negScore          = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local entry = redis.call('HGET', players, player)
if entry then
  -- joining again replaces the profile only: score and join time stay
  local joined, member = parseEntry(entry)
  redis.call('HSET', profiles, player, profile)
  return {
    created  = false,
    joinedAt = joined,
    score    = redis.call('ZSCORE', ranking, member),
    rank     = redis.call('ZRANK', ranking, member) + 1,
  }
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
redis.call('ZADD', ranking, negScore, member)
redis.call('HSET', players, player, now .. string.sub(ties, 1, 1) .. ':' .. member)
redis.call('HSET', profiles, player, profile)
-- a new player is the activity the list is ordered by
redis.call('ZADD', registry, 'GT', now, board)
return {created = true, joinedAt = now, score = negScore, rank = redis.call('ZRANK', ranking, member) + 1}
`,
);

/**
 * Apply score changes in order. KEYS: settings, ranking, players.
 * ARGV: limit, count, then per op: player, kind ('by' | 'replace' | 'best'), negated value.
 * One HMGET of the players' entries (ranking member and tie policy) and one
 * ZMSCORE (the range check happens before any write) for the whole batch, then
 * one write and one ZRANK per change.
 */
export const applyScores = defineWriteScript(
  "leaderboards:score",
  `${ENTRY}
local settings, ranking, players = KEYS[1], KEYS[2], KEYS[3]
local limit, n                   = tonumber(ARGV[1]), tonumber(ARGV[2])
local entries, current, sim = {}, {}, {}
local boardTies = nil

-- Every distinct player's entry with one HMGET and current score with one
-- ZMSCORE, whatever the batch size.
local names, firstIndex = {}, {}
for i = 0, n - 1 do
  local player = ARGV[3 + i * 3]
  if not firstIndex[player] then
    firstIndex[player] = i
    names[#names + 1] = player
  end
end
local found   = redis.call('HMGET', players, unpack(names))
local members = {}
for j, player in ipairs(names) do
  if not found[j] then return {refused = true, missing = player, index = firstIndex[player]} end
  local joined, member, policy = parseEntry(found[j])
  if policy == '' then
    boardTies = boardTies or redis.call('HGET', settings, 'ties') or 'joined'
    policy = string.sub(boardTies, 1, 1)
  end
  entries[player] = {joined = joined, member = member, policy = policy}
  members[j] = member
end
local scores = redis.call('ZMSCORE', ranking, unpack(members))
for j, player in ipairs(names) do
  current[player] = scores[j]
  sim[player] = tonumber(scores[j])
end

-- Pass 1 writes nothing: every intermediate score must stay within the exact
-- range, so one bad item refuses the whole batch.
for i = 0, n - 1 do
  local player = ARGV[3 + i * 3]
  local kind   = ARGV[4 + i * 3]
  local value  = tonumber(ARGV[5 + i * 3])
  local stored = sim[player]
  -- the same double addition ZINCRBY performs, so the check matches what pass 2 stores
  if kind == 'by' then stored = stored + value
  elseif kind == 'replace' then stored = value
  elseif value < stored then stored = value end -- best: negated, so lower is better
  if stored > limit or stored < -limit then return {refused = true, outOfRange = player, index = i} end
  sim[player] = stored
end

local results = {}
for i = 0, n - 1 do
  local player = ARGV[3 + i * 3]
  local kind   = ARGV[4 + i * 3]
  local value  = ARGV[5 + i * 3]
  local e      = entries[player]
  local before = current[player]
  local after  = before
  if kind == 'by' then
    after = redis.call('ZINCRBY', ranking, value, e.member)
  elseif tonumber(value) ~= tonumber(before) and (kind == 'replace' or tonumber(value) < tonumber(before)) then
    redis.call('ZADD', ranking, value, e.member)
    after = value
  end
  if e.policy == 'r' and tonumber(after) ~= tonumber(before) then
    -- reaching a new score takes a new place in the tie order
    local seq    = redis.call('HINCRBY', settings, 'seq', 1)
    local member = string.format('%0${SEQ_WIDTH}d', seq) .. ':' .. player
    redis.call('ZREM', ranking, e.member)
    redis.call('ZADD', ranking, after, member)
    redis.call('HSET', players, player, e.joined .. 'r:' .. member)
    e.member = member
  end
  current[player] = after
  results[i + 1] = {player, after}
end
-- ranks once the whole batch is in
for i = 1, n do
  results[i][3] = redis.call('ZRANK', ranking, entries[results[i][1]].member) + 1
end
return results
`,
);

/**
 * KEYS: settings, ranking, players, profiles, registry. ARGV: board, player.
 * The last player's removal takes the board out of the registry, and a board
 * that only a join made (no admin PUT) goes with it: nothing is left behind.
 */
export const removePlayer = defineWriteScript(
  "leaderboards:remove",
  `${ENTRY}
local settings, ranking, players, profiles, registry = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local board, player                                  = ARGV[1], ARGV[2]
local entry = redis.call('HGET', players, player)
if not entry then return {removed = false} end
local _, member = parseEntry(entry)
redis.call('ZREM', ranking, member)
redis.call('HDEL', players, player)
redis.call('HDEL', profiles, player)
if redis.call('EXISTS', ranking) == 0 then
  redis.call('ZREM', registry, board)
  if redis.call('HGET', settings, 'implicit') then redis.call('DEL', settings) end
end
return {removed = true}
`,
);

/** KEYS: settings, ranking, players, profiles, registry. ARGV: board. */
export const deleteBoard = defineWriteScript(
  "leaderboards:delete",
  `
local settings, ranking, players, profiles, registry = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local board                                          = ARGV[1]
-- UNLINK frees a large board off the main thread
local removed = redis.call('UNLINK', settings, ranking, players, profiles)
redis.call('ZREM', registry, board)
return {removed = removed > 0}
`,
);

/** KEYS: ranking, players, profiles. ARGV: player. */
export const getPlayer = readScript(
  "leaderboards:get",
  `${ENTRY}
local ranking, players, profiles = KEYS[1], KEYS[2], KEYS[3]
local player                     = ARGV[1]
local entry = redis.call('HGET', players, player)
if not entry then return {missing = true} end
local joined, member = parseEntry(entry)
return {
  profile  = redis.call('HGET', profiles, player),
  joinedAt = joined,
  score    = redis.call('ZSCORE', ranking, member),
  rank     = redis.call('ZRANK', ranking, member) + 1,
}
`,
);

const PROFILES_OF_ROWS = `
-- rows are member, score, member, score, ...; members end in the player name
local function profilesOf(profiles, rows)
  local names = {}
  for i = 1, #rows, 2 do names[#names + 1] = string.sub(rows[i], ${SEQ_WIDTH + 2}) end
  if #names == 0 then return {} end
  return redis.call('HMGET', profiles, unpack(names))
end`;

/** KEYS: settings, ranking, profiles. ARGV: start, stop (0-based, inclusive). */
export const pageOf = readScript(
  "leaderboards:page",
  `${PROFILES_OF_ROWS}
local settings, ranking, profiles = KEYS[1], KEYS[2], KEYS[3]
local start, stop                 = ARGV[1], ARGV[2]
local ties    = redis.call('HGET', settings, 'ties')
local created = not ties
if created then return {missing = true} end
local rows = redis.call('ZRANGE', ranking, start, stop, 'WITHSCORES')
return {ties = ties, total = redis.call('ZCARD', ranking), rows = rows, profiles = profilesOf(profiles, rows)}
`,
);

/** KEYS: ranking, players, profiles. ARGV: player, k. */
export const aroundOf = readScript(
  "leaderboards:around",
  `${ENTRY}${PROFILES_OF_ROWS}
local ranking, players, profiles = KEYS[1], KEYS[2], KEYS[3]
local player, k                  = ARGV[1], tonumber(ARGV[2])
local entry = redis.call('HGET', players, player)
if not entry then return {missing = true} end
local _, member = parseEntry(entry)
local rank  = redis.call('ZRANK', ranking, member)
local start = math.max(0, rank - k)
local rows  = redis.call('ZRANGE', ranking, start, rank + k, 'WITHSCORES')
return {start = start, rank = rank + 1, rows = rows, profiles = profilesOf(profiles, rows)}
`,
);

/** KEYS: settings, ranking. */
export const countOf = readScript(
  "leaderboards:count",
  `
local settings, ranking = KEYS[1], KEYS[2]
local meta = redis.call('HMGET', settings, 'ties', 'createdAt')
if not meta[1] then return {missing = true} end
return {ties = meta[1], createdAt = meta[2], total = redis.call('ZCARD', ranking)}
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
