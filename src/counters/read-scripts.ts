import { defineReadScript } from "../redis/script.ts";

/**
 * Read scripts of the counters area (the write scripts and the index-hash
 * rules they share are described in ./scripts.ts).
 */

/**
 * Read prelude: what a read looks at. KEYS/ARGV layout shared by every read:
 * plain read: KEYS = {counter}, ARGV[1] = 0;
 * period read: KEYS = {union slot, scratch, index, bucket...}, ARGV[1] = number
 * of buckets, ARGV[2] = SUM|MIN|MAX, ARGV[3] = 1 when the range is finished,
 * ARGV[4] = cache seconds, ARGV[5] = the range's id. Operation arguments start at ARGV[6].
 *
 * A counter has a fixed few cache slots; a finished range's union goes to the
 * slot its id hashes to, replacing whatever range that slot held, and the
 * slot's mark (index field `u:<slot key>`, read with `late` in one HMGET)
 * records "<late>|<range id>". So whatever ranges a reader asks
 * for, a counter holds at most SLOTS cached unions (scripts can only touch
 * declared keys, which rules out LRU eviction across an open set of keys).
 */
const RESOLVE = `
local function resolve()
  local nb = tonumber(ARGV[1])
  if nb == 0 then return KEYS[1], false end
  local union, scratch, index = KEYS[1], KEYS[2], KEYS[3]
  local finished              = ARGV[3] == '1'
  if nb == 1 then
    -- one bucket is its own union: read it in place
    if redis.call('HEXISTS', index, 'b:' .. KEYS[4]) == 1 then return KEYS[4], false end
    return nil, false
  end
  local marks = redis.call('HMGET', index, 'late', 'u:' .. union)
  local late  = marks[1]
  -- no index: no bucket of this life exists
  if not late then return nil, false end
  local tag = late .. '|' .. ARGV[5]
  -- a finished range changes only through late writes, which move 'late' on
  if finished and marks[2] == tag and redis.call('EXISTS', union) == 1 then return union, false end
  -- one HMGET per 1000 buckets says which are part of this life
  local live = {}
  for s = 4, 3 + nb, 1000 do
    local args = {'HMGET', index}
    for i = s, math.min(s + 999, 3 + nb) do args[#args + 1] = 'b:' .. KEYS[i] end
    for k, v in ipairs(redis.call(unpack(args))) do
      if v then live[#live + 1] = KEYS[s + k - 1] end
    end
  end
  if #live == 0 then return nil, false end
  if #live == 1 then return live[1], false end
  local dest = scratch
  if finished then dest = union end
  -- chunks of 1000 keep unpack() below Lua's C stack limit on long hourly ranges
  for s = 1, #live, 1000 do
    local args = {'ZUNIONSTORE', dest, 0}
    for i = s, math.min(s + 999, #live) do args[#args + 1] = live[i] end
    if s > 1 then args[#args + 1] = dest end
    args[3] = #args - 3
    args[#args + 1] = 'AGGREGATE'
    args[#args + 1] = ARGV[2]
    redis.call(unpack(args))
  end
  if finished then
    local ttl = tonumber(ARGV[4])
    redis.call('EXPIRE', union, ttl)
    redis.call('HSET', index, 'u:' .. union, tag)
    return union, false
  end
  -- an unfinished range may change any moment: the union is scratch, dropped before returning
  return scratch, true
end
`;

const read = (name: string, body: string) => defineReadScript(name, `${RESOLVE}\n${body.trim()}`);

/** ARGV[6] = n, ARGV[7] = 1 for highest first. Returns flat member, score pairs. */
export const TOP = read(
  "counters.top",
  `
local key, scratch = resolve()
if not key then return cjson.encode({}) end
local n    = tonumber(ARGV[6])
local args = {'ZRANGE', key, 0, n - 1}
if ARGV[7] == '1' then args[#args + 1] = 'REV' end
args[#args + 1] = 'WITHSCORES'
local out = redis.call(unpack(args))
if scratch then redis.call('DEL', key) end
return cjson.encode(out)
`,
);

/** ARGV[6] = member. Returns {score, rank from top (0-based), rank from bottom (0-based)} or {} when absent. */
export const MEMBER = read(
  "counters.member",
  `
local key, scratch = resolve()
if not key then return cjson.encode({}) end
local member = ARGV[6]
local score  = redis.call('ZSCORE', key, member)
local out    = {}
if score then out = {score, redis.call('ZREVRANK', key, member), redis.call('ZRANK', key, member)} end
if scratch then redis.call('DEL', key) end
return cjson.encode(out)
`,
);

/** ARGV[6] = min, ARGV[7] = max, ARGV[8] = limit, ARGV[9] = 1 for descending. Returns {count, flat pairs}. */
export const RANGE = read(
  "counters.range",
  `
local key, scratch = resolve()
if not key then return cjson.encode({0, {}}) end
local min, max, limit = ARGV[6], ARGV[7], tonumber(ARGV[8])
local count = redis.call('ZCOUNT', key, min, max)
local items
if ARGV[9] == '1' then
  items = redis.call('ZRANGE', key, max, min, 'BYSCORE', 'REV', 'LIMIT', 0, limit, 'WITHSCORES')
else
  items = redis.call('ZRANGE', key, min, max, 'BYSCORE', 'LIMIT', 0, limit, 'WITHSCORES')
end
if scratch then redis.call('DEL', key) end
return cjson.encode({count, items})
`,
);

/** ARGV[6] = most members returned. Returns {card, flat pairs} (pairs empty when card is over the cap). */
export const ALL = read(
  "counters.all",
  `
local key, scratch = resolve()
if not key then return cjson.encode({0, {}}) end
local card  = redis.call('ZCARD', key)
local items = {}
if card <= tonumber(ARGV[6]) then items = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES') end
if scratch then redis.call('DEL', key) end
return cjson.encode({card, items})
`,
);

/**
 * KEYS = {names, expiry}; ARGV = {now ms, offset, limit}. Drops names whose
 * last key has expired (a bounded batch per call), then lists names by recent
 * activity (the registry's score is the time of the last write), most recent
 * first. Reads one name beyond the page, so the caller knows whether more follow.
 * Returns flat name, last write pairs.
 */
export const LIST = defineReadScript(
  "counters.list",
  `
local names, expiry       = KEYS[1], KEYS[2]
local now, offset, limit  = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local gone = redis.call('ZRANGE', expiry, '-inf', now, 'BYSCORE', 'LIMIT', 0, 1000)
if #gone > 0 then
  redis.call('ZREM', names, unpack(gone))
  redis.call('ZREM', expiry, unpack(gone))
end
return cjson.encode(redis.call('ZRANGE', names, offset, offset + limit, 'REV', 'WITHSCORES'))
`,
);
