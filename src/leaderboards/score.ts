import { NotFoundError, ValidationError } from "../errors.ts";
import { defineScript } from "../redis/script.ts";
// The module itself, not webhooks/index.ts, whose jobs import the trending library: a first score
// write would compile it (bench/cold-start.ts).
import { emitLua } from "../webhooks/emit.ts";
import { cfgLua, entryLua, memberLua, seasonLua } from "./lua.ts";
import { rejected } from "./scripts.ts";
import { MAX_SCORE } from "./validate.ts";

/*
 * The leaderboard score write, the one script a game calls all the time (its own module: the
 * other writes are in scripts.ts, whose header says how members, scores and seasons are stored).
 */

/**
 * The calls (their `args` objects) whose changes came as a list: a refusal names the item
 * (`items.<i>`) whatever the list's length, as validation does. A single change (`changeScore`, the
 * route's `{player, by}`) names none. Until review 26 a list of one was named as a single change
 * (`""`), though the route's validation of the same body said `items.0.<field>`.
 */
export const listCalls = new WeakSet<object>();
const pathOf = (call: { args: object }, index: unknown) => (listCalls.has(call.args) ? `items.${String(index)}` : "");

/**
 * Apply score changes in order: change i is player `names[i]`, kind `kinds[i]` ('by' | 'replace'
 * | 'best') and negated value `values[i]`; `limit` is the exact range (±MAX_SCORE).
 * One HMGET of the board's settings string and the players' entries (ranking member, tie
 * policy, season, best rank) and one ZMSCORE (range and guard checks happen before any
 * write) for the whole batch, then one write and one ZRANK per change, and one HSET of
 * the entries that changed (a better rank, a new season, a new tie-break place).
 */
export const scoreScript = defineScript({
  name: "leaderboards.score",
  write: true,
  keys: ["settings", "players", "...seasonKeys", "...hookKeys"],
  args: ["board", "limit", "now", "...names", "...kinds", "...values", "...seasonArgs", "...hookArgs"],
  uses: [entryLua, cfgLua, seasonLua, memberLua, emitLua],
  refusals: {
    no_player: (r) =>
      new NotFoundError(`No player '${String(r.player)}' on board '${String(r.board)}'; join the player first.`),
    score_rejected: (r, call) => rejected(String(r.board), r, pathOf(call, r.index)),
    out_of_range: (r, call) =>
      new ValidationError(
        `The score of '${String(r.player)}' would leave ±${MAX_SCORE}, the range kept exact; nothing was changed.`,
        [
          {
            path: pathOf(call, r.index),
            message: `resulting score must stay within ±${MAX_SCORE}`,
          },
        ],
      ),
  },
  lua: `
local n = #names
limit = tonumber(limit)
-- a refusal names the board its message is about
local function refuse(code, details)
  details.refused, details.board = code, board
  return details
end
local entries, current, sim, moved = {}, {}, {}, {}
local boardTies = nil

-- Every distinct player's entry with one HMGET and current score with one
-- ZMSCORE, whatever the batch size.
local distinct, firstIndex = {}, {}
for i = 1, n do
  local player = names[i]
  if not firstIndex[player] then
    firstIndex[player] = i - 1
    distinct[#distinct + 1] = player
  end
end
local found   = redis.call('HMGET', players, '_cfg', '_leader', unpack(distinct))
local cfg     = parseCfg(found[1])
local s       = seasonOf(cfg.reset, seasonKeys, seasonArgs)
local members = {}
for j, player in ipairs(distinct) do
  local text = found[j + 2]
  if not text then return refuse('no_player', {player = player, index = firstIndex[player]}) end
  local e = parseEntry(text)
  if e.policy == '' then
    boardTies = boardTies or redis.call('HGET', settings, 'ties') or 'joined'
    e.policy = string.sub(boardTies, 1, 1)
  end
  entries[player] = e
  members[j] = memberIn(e, s.sid)
end
local scores = redis.call('ZMSCORE', s.key, unpack(members))
for j, player in ipairs(distinct) do
  -- a player not yet in this season starts it at 0
  current[player] = scores[j] or '0'
  sim[player] = tonumber(current[player])
  entries[player].absent = not scores[j]
end

-- Pass 1 writes nothing: every intermediate score must stay within the exact range
-- and the board's guards, so one bad item refuses the whole batch.
-- A player absent from the season has no score of it to beat: its first write, if a best, takes the
-- value as a replace would (review 23: it kept the 0 entered with, stored 0 for a best of -50).
local spent, lastIndex, wrote = {}, {}, {}
local function kindOf(i, player, seen)
  local kind = kinds[i]
  if kind == 'best' and entries[player].absent and not seen[player] then kind = 'replace' end
  seen[player] = true
  return kind
end
for i = 1, n do
  local player = names[i]
  lastIndex[player] = i - 1
  local kind   = kindOf(i, player, wrote)
  local value  = tonumber(values[i])
  local stored = sim[player]
  -- the same double addition ZINCRBY performs, so the check matches what pass 2 stores
  if kind == 'by' then
    stored = stored + value
    -- maxIncrement bounds what one request adds to a player, however it is split
    spent[player] = (spent[player] or 0) + math.abs(value)
    if cfg.maxInc and spent[player] > cfg.maxInc then return refuse('score_rejected', {player = player, index = i - 1, guard = 'maxIncrement', bound = cfg.maxIncText}) end
  elseif kind == 'replace' then stored = value
  elseif value < stored then stored = value end -- best: negated, so lower is better
  if stored > limit or stored < -limit then return refuse('out_of_range', {player = player, index = i - 1}) end
  if stored ~= sim[player] then
    if cfg.min and -stored < cfg.min then return refuse('score_rejected', {player = player, index = i - 1, guard = 'minScore', bound = cfg.minText}) end
    if cfg.max and -stored > cfg.max then return refuse('score_rejected', {player = player, index = i - 1, guard = 'maxScore', bound = cfg.maxText}) end
  end
  sim[player] = stored
end
-- a player absent from the season enters it at 0, which is a write too: a result left at that 0
-- (by: 0, a best not above 0) is held to the guards as a change would be (review 20: it was stored
-- outside them). Any other result came from a change, checked above.
for _, player in ipairs(distinct) do
  if entries[player].absent and sim[player] == 0 then
    local guard = (cfg.min and 0 < cfg.min and 'minScore') or (cfg.max and 0 > cfg.max and 'maxScore') or nil
    if guard then return refuse('score_rejected', {player = player, index = lastIndex[player], guard = guard, bound = guard == 'minScore' and cfg.minText or cfg.maxText}) end
  end
end

for _, player in ipairs(distinct) do
  local e = entries[player]
  if e.absent then
    enterSeason(s, e, cfg.keep, now, settings)
    moved[player] = true
  elseif e.sid ~= s.sid then
    -- an entry of an older version (or a write racing a season boundary): the final rank of
    -- the season before is read again, as on entering (review 2: it was lost)
    local prev = prevRankOf(s, e)
    switchSeason(e, s.sid, cfg.keep)
    e.prev = prev
    moved[player] = true
  end
end

local results, applied = {}, {}
for i = 1, n do
  local player = names[i]
  local kind   = kindOf(i, player, applied)
  local value  = values[i]
  local e      = entries[player]
  local before = current[player]
  local after  = before
  if kind == 'by' then
    after = redis.call('ZINCRBY', s.key, value, e.member)
  elseif tonumber(value) ~= tonumber(before) and (kind == 'replace' or tonumber(value) < tonumber(before)) then
    redis.call('ZADD', s.key, value, e.member)
    after = value
  end
  -- reaching a new score takes a new place in the tie order, unless the member holds the
  -- newest sequence already (it entered the season or moved in this request, and no one since)
  if e.policy == 'r' and tonumber(after) ~= tonumber(before) and not holdsLastSeq(e.member) then
    local member = memberOf(nextSeq(settings), player)
    -- the new member first: the key never empties, so it keeps its TTL
    redis.call('ZADD', s.key, after, member)
    redis.call('ZREM', s.key, e.member)
    e.member = member
    moved[player] = true
  end
  current[player] = after
  results[i] = {player, after}
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
for _, player in ipairs(distinct) do
  if moved[player] then
    changed[#changed + 1] = player
    changed[#changed + 1] = entryText(entries[player])
  end
end
-- leaderboard.leader: the live season's #1 after the whole request, against the one last told
-- ('_leader' = '<season>|<changes>|<player>', read by the HMGET above; <changes> numbers the
-- board's changes of leader, so each is its own event, even a lead regained at the same score).
-- Only a request that leaves one of its players at rank 1, or moves the told leader down, looks further.
local toldSid, toldN, told = string.match(found[2] or '', '^([^|]*)|(%d+)|(.*)$')
local change = (tonumber(toldN) or 0) + 1
-- a late write into a finished season (a clock behind the boundary) while a later season's
-- leader is told is neither told nor recorded: overwriting '_leader' with the finished season
-- re-reported the live #1 at the next live write (review 11). Ids of one policy have one
-- length and sort by time; one of another (a reset changed once the board emptied) never blocks.
local late = toldSid and #toldSid == #s.sid and toldSid > s.sid
if toldSid ~= s.sid then told = nil end
local top, topScore = nil, nil
if not late then
  for player, rank in pairs(rankOf) do
    if rank == 1 then top, topScore = player, current[player] end
  end
end
if not top and told and rankOf[told] then
  -- the leader fell back: the new #1 is a player this request did not write
  local first = redis.call('ZRANGE', s.key, 0, 0, 'WITHSCORES')
  top, topScore = playerOf(first[1]), first[2]
end
local newLeader = top and top ~= told
if newLeader then
  -- the score as Redis printed it, negated as text: every digit kept
  local score = string.sub(topScore, 1, 1) == '-' and string.sub(topScore, 2) or (topScore == '0' and '0' or '-' .. topScore)
  local season = s.sid ~= 'all' and s.sid or nil
  local data = '{"board":' .. cjson.encode(board) .. ',"player":' .. cjson.encode(top) .. ',"score":' .. score
    .. ',"previous":' .. (told and cjson.encode(told) or 'null') .. ',"season":' .. (season and cjson.encode(season) or 'null') .. '}'
  local sent = emitEvent(hookKeys, hookArgs, 'leaderboard.leader', 'board', board, top .. '\\n' .. score .. '\\n' .. (season or '') .. '\\n' .. change .. '\\n' .. now, data, '')
  -- a change no subscribed webhook could be told of (the delivery queue was full) is not recorded
  -- as told: the next write that leaves the leader at #1 tells it (review 5)
  if sent.full == 0 or sent.told > 0 then
    changed[#changed + 1] = '_leader'
    changed[#changed + 1] = s.sid .. '|' .. change .. '|' .. top
  end
end
if #changed > 0 then redis.call('HSET', players, unpack(changed)) end
return results
`,
});
