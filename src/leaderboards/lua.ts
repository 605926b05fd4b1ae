import { defineLua } from "../redis/script.ts";
import { SEQ_WIDTH } from "./keys.ts";
import { DEFAULT_KEEP_SEASONS } from "./seasons.ts";

/** Lua the leaderboard scripts share (scripts.ts, score.ts: writes and the snapshot job, read-scripts.ts: reads). */

/** Ranking members '<seq>:<player>' (keys.ts, SEQ_WIDTH and playerOfMember). */
export const memberLua = defineLua(
  "leaderboards.member",
  ["memberOf", "playerOf", "seqOf", "nextSeq", "holdsLastSeq"],
  `
local function memberOf(seq, player)
  return string.format('%0${SEQ_WIDTH}d', tonumber(seq)) .. ':' .. player
end
local function playerOf(member)
  return string.sub(member, ${SEQ_WIDTH + 2})
end
local function seqOf(member)
  return tonumber(string.sub(member, 1, ${SEQ_WIDTH}))
end
-- The board's next tie-break sequence (settings field 'seq'); the last one this script took is
-- remembered, so a member that already holds it needs no newer one.
local lastSeq = nil
local function nextSeq(settings)
  lastSeq = redis.call('HINCRBY', settings, 'seq', 1)
  return lastSeq
end
local function holdsLastSeq(member)
  return lastSeq ~= nil and seqOf(member) == lastSeq
end`,
);

/**
 * A player's entry in the players hash:
 * '<joinedAt><policy>:<ranking member>|<season>|<best>|<previous>[|<oldSeason>|<oldBest>[|<past>]]'.
 * Policy 'j' or 'r' is the board's tie policy, which cannot change while the board has players, so
 * a score change need not read the settings; <season> is the season of the player's latest write,
 * <best> the best rank seen at the player's writes in it and <previous> the player's final rank in
 * the season before it. <oldSeason> and <oldBest> keep the season the player wrote in before
 * <season> and its best rank, so reading that finished season (most often `previous`) still
 * answers its bestRank; an older season's is unknown (null). Under ties 'reached' the member is
 * the player's in <season> only: it enters each season with a new one (the tie order is by who
 * reached a score first in that season), so <past> ('<season>:<seq>,...', newest first, at most
 * the board's keepSeasons) keeps the sequence of its member in each earlier season it wrote in,
 * for reads of those seasons (memberIn). Under 'joined' the member changes only when the player
 * is removed and joins again: <past> then keeps the old members a removal kept (scripts.ts,
 * removeScript), each '<season>:<seq>' holding for that season and the ones before it down to the
 * next record. Entries of older versions end after <oldBest>, after <previous> or after the
 * member (and may lack the policy: '' reads the settings).
 */
export const entryLua = defineLua(
  "leaderboards.entry",
  ["pastOf", "pastText", "parseEntry", "entryText", "memberIn", "keepPast", "switchSeason"],
  `
-- '<season>:<seq>,...' (<past>, and a removed player's 'gone:<player>': scripts.ts)
local function pastOf(text)
  local past = {}
  for psid, seq in string.gmatch(text, '([^|,:]+):(%d+)') do past[#past + 1] = {psid, seq} end
  return past
end
local function parseEntry(text)
  local joined, policy, member, rest = string.match(text, '^(%-?%d+)([jr]?):([^|]+)(.*)$')
  local e = {joined = joined, policy = policy, member = member}
  if rest ~= '' then
    local sid, best, prev, old = string.match(rest, '^|([^|]*)|([^|]*)|([^|]*)(.*)$')
    e.sid, e.best, e.prev = sid, tonumber(best), tonumber(prev)
    local oldSid, oldBest, past = string.match(old, '^|([^|]*)|([^|]*)(.*)$')
    if oldSid and oldSid ~= '' then e.oldSid, e.oldBest = oldSid, tonumber(oldBest) end
    if past and past ~= '' then e.past = pastOf(past) end
  end
  return e
end
local function pastText(past)
  local parts = {}
  for i, p in ipairs(past) do parts[i] = p[1] .. ':' .. p[2] end
  return table.concat(parts, ',')
end
local function entryText(e)
  local text = e.joined .. e.policy .. ':' .. e.member .. '|' .. (e.sid or '') .. '|' .. (e.best or '') .. '|' .. (e.prev or '')
  if e.oldSid or e.past then text = text .. '|' .. (e.oldSid or '') .. '|' .. (e.oldBest or '') end
  if e.past then text = text .. '|' .. pastText(e.past) end
  return text
end
-- The player's ranking member in season sid: its latest, or the one <past> keeps for sid: under
-- 'reached' the record of sid, under 'joined' the oldest record of sid or a later season. A
-- season none is kept for answers the latest, which that season does not hold (or, for an entry
-- of an older version, may).
local function memberIn(e, sid)
  local m = e.member
  for _, p in ipairs(sid ~= e.sid and e.past or {}) do
    if p[1] == sid or (e.policy == 'j' and p[1] > sid) then m = memberOf(p[2], playerOf(e.member)) end
  end
  return m
end
-- <past> with seq kept for sid (replacing sid's record) and none for drop: newest first, at most keep.
local function keepPast(e, sid, seq, keep, drop)
  local past = {{sid, seq}}
  for _, p in ipairs(e.past or {}) do
    if p[1] ~= sid and p[1] ~= drop then past[#past + 1] = p end
  end
  table.sort(past, function(x, y) return x[1] > y[1] end)
  for i = #past, keep + 1, -1 do past[i] = nil end
  e.past = past
end
-- The entry's season becomes sid (a first write in it, or a write racing a season boundary):
-- the season it leaves keeps its best rank in oldSid/oldBest, and going back to that season
-- (a late write into it) takes its best back. Under ties 'reached' the season it leaves keeps
-- its member in <past> (the keep newest), and going back takes that member back. previousRank
-- is the caller's.
local function switchSeason(e, sid, keep)
  if e.sid == sid then return end
  local leftSid, leftBest = e.sid, e.best
  if leftSid == '' then leftSid, leftBest = nil, nil end
  e.best = e.oldSid == sid and e.oldBest or nil
  if e.policy == 'r' and leftSid then
    local back = memberIn(e, sid)
    keepPast(e, leftSid, seqOf(e.member), keep, sid)
    e.member = back
  end
  e.sid, e.oldSid, e.oldBest = sid, leftSid, leftBest
end`,
  [memberLua],
);

/**
 * The board settings a script needs, as one string '<reset>|<keep>|<min>|<max>|<maxIncrement>' kept
 * in the settings hash ('cfg') and in the players hash ('_cfg': no player name starts with '_'), so
 * a score change reads it with the HMGET of the players' entries.
 * A guard is kept as the text it was sent in (TypeScript's String(n), the shortest round trip:
 * `c.minText`..) and compared as tonumber() of it: a Lua number written back as text keeps 14
 * significant digits, which moved a guard such as 123456789012.34567 (review 10). Texts written
 * that way by older versions read as the (rounded) numbers they say.
 */
export const cfgLua = defineLua(
  "leaderboards.cfg",
  ["parseCfg", "cfgText"],
  `
local function parseCfg(text)
  local c = {reset = 'n', keep = ${DEFAULT_KEEP_SEASONS}}
  if text then
    local r, k, mn, mx, mi = string.match(text, '^(%a)|(%d*)|([^|]*)|([^|]*)|([^|]*)$')
    c.reset, c.keep, c.min, c.max, c.maxInc = r, tonumber(k) or ${DEFAULT_KEEP_SEASONS}, tonumber(mn), tonumber(mx), tonumber(mi)
    c.minText, c.maxText, c.maxIncText = c.min and mn, c.max and mx, c.maxInc and mi
  end
  return c
end
local function cfgText(c)
  return c.reset .. '|' .. c.keep .. '|' .. (c.minText or '') .. '|' .. (c.maxText or '') .. '|' .. (c.maxIncText or '')
end`,
);

/**
 * The season block (seasons.ts, seasonBlock): `keys` are the season's ranking under reset none,
 * daily, weekly, monthly, then the season before it under each; `args` per policy the season id
 * ('' when the request names none of that policy), the season's end in epoch ms and the id of
 * the season before it. The board's reset picks one.
 */
export const seasonLua = defineLua(
  "leaderboards.season",
  ["seasonOf", "expireSeason", "prevRankOf", "enterSeason", "movement"],
  `
local POLICY = {n = 0, d = 1, w = 2, m = 3}
local function seasonOf(reset, keys, args)
  local i   = POLICY[reset] or 0
  local sid = args[i * 3 + 1]
  if sid == '' then return nil end
  return {reset = reset, key = keys[i + 1], prev = reset ~= 'n' and keys[i + 5] or nil, sid = sid, to = tonumber(args[i * 3 + 2]), prevSid = args[i * 3 + 3]}
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
-- The player's final rank in the season before s (nil: not in it, or no seasons).
local function prevRankOf(s, e)
  local r = s.prev and redis.call('ZRANK', s.prev, memberIn(e, s.prevSid))
  return r and r + 1 or nil
end
-- The first write of a player (entry e) in season s: it enters at 0, the key gets its
-- lifetime, and the final rank of the season before is kept. Under ties 'joined' it keeps its
-- tie-break place; under 'reached' it reaches 0 in s now, after the players already at 0 in s,
-- so it takes a new sequence (and the member it leaves is kept in <past>).
local function enterSeason(s, e, keep, now, settings)
  local prev = prevRankOf(s, e)
  switchSeason(e, s.sid, keep)
  if e.policy == 'r' then e.member = memberOf(nextSeq(settings), playerOf(e.member)) end
  redis.call('ZADD', s.key, 0, e.member)
  expireSeason(s, keep, now)
  e.prev = prev
end
-- Movement of a player read in season s: previousRank is the final rank in the season
-- before s (cached in the entry when the player first wrote in s; else read with one
-- ZRANK of the player's member in that season, memberIn: a 'reached' player that wrote
-- since s and keeps no member of that season was not in it); bestRank is the best rank
-- seen at the player's writes in s, never worse than the rank now. The entry holds the best rank of two seasons: the one of
-- the player's latest write and the one before it (switchSeason). Of any other season of a
-- seasonal board the best is unknown (null): its rank now is its final rank, not its best.
local function movement(s, e, rank)
  local prev, best, known = nil, nil, s.reset == 'n'
  if e.sid == s.sid then
    prev, best, known = e.prev, e.best, true
  else
    if e.oldSid == s.sid then best, known = e.oldBest, e.oldBest ~= nil end
    local m = s.prev and memberIn(e, s.prevSid)
    if m and (e.policy ~= 'r' or (e.sid or '') < s.sid or m ~= e.member) then
      local r = redis.call('ZRANK', s.prev, m)
      prev = r and r + 1 or nil
    end
  end
  if known and rank and (not best or rank < best) then best = rank end
  return prev, best
end`,
  [entryLua, memberLua],
);

/**
 * Profiles and movement (previousRank, bestRank) of page rows (member, score, member, score, ...):
 * two HMGETs for the page, plus a ZRANK for a row whose previous rank the entry does not hold
 * (seasonal boards) or one ZMSCORE of the daily snapshot `snap` for all rows (boards without seasons).
 */
export const rowsLua = defineLua(
  "leaderboards.rows",
  ["detailsOf"],
  `
local function detailsOf(profiles, players, s, rows, firstRank, snap)
  local names = {}
  for i = 1, #rows, 2 do names[#names + 1] = playerOf(rows[i]) end
  if #names == 0 then return {}, {} end
  local found = redis.call('HMGET', profiles, unpack(names))
  local texts = redis.call('HMGET', players, unpack(names))
  local snapped = s.reset == 'n' and redis.call('ZMSCORE', snap, unpack(names)) or {}
  local moves = {}
  for i, text in ipairs(texts) do
    local prev, best = nil, nil
    if text then prev, best = movement(s, parseEntry(text), firstRank + i - 1) end
    if s.reset == 'n' then prev = tonumber(snapped[i]) end
    moves[i] = {prev or false, best or false}
  end
  return found, moves
end`,
  [entryLua, seasonLua, memberLua],
);
