import { defineReadScript, defineWriteScript } from "../redis/script.ts";

/**
 * Lua of the counters area. Every API call is one of these scripts.
 *
 * Period buckets belong to the counter's current life only while the
 * counter's index hash holds `b:<bucket key>`. Deleting a counter deletes the
 * index, so every bucket of the old life turns invisible at once without
 * naming its key (a script may touch only declared keys, and the deleting
 * request cannot know them); a later write to such a bucket starts it afresh.
 */

/**
 * Read prelude: what a read looks at. KEYS/ARGV layout shared by every read:
 * plain read: KEYS = {counter}, ARGV[1] = 0;
 * period read: KEYS = {union, union mark, index, bucket...}, ARGV[1] = number
 * of buckets, ARGV[2] = SUM|MIN|MAX, ARGV[3] = 1 when the range is finished,
 * ARGV[4] = cache seconds. Operation arguments start at ARGV[5].
 */
const RESOLVE = `
local function resolve()
  local nb = tonumber(ARGV[1])
  if nb == 0 then return KEYS[1], false end
  local union, mark, index = KEYS[1], KEYS[2], KEYS[3]
  local finished           = ARGV[3] == '1'
  local late               = redis.call('HGET', index, 'late')
  -- a finished range changes only through late writes, which move 'late' on
  if finished and late and redis.call('GET', mark) == late and redis.call('EXISTS', union) == 1 then
    return union, false
  end
  local live = {}
  for i = 4, 3 + nb do
    if redis.call('HEXISTS', index, 'b:' .. KEYS[i]) == 1 then live[#live + 1] = KEYS[i] end
  end
  redis.call('DEL', union, mark)
  if #live == 0 then return nil, false end
  -- chunks of 1000 keep unpack() below Lua's C stack limit on long hourly ranges
  for s = 1, #live, 1000 do
    local args = {'ZUNIONSTORE', union, 0}
    for i = s, math.min(s + 999, #live) do args[#args + 1] = live[i] end
    if s > 1 then args[#args + 1] = union end
    args[3] = #args - 3
    args[#args + 1] = 'AGGREGATE'
    args[#args + 1] = ARGV[2]
    redis.call(unpack(args))
  end
  if finished then
    local ttl = tonumber(ARGV[4])
    redis.call('EXPIRE', union, ttl)
    redis.call('SET', mark, late, 'EX', ttl)
    return union, false
  end
  -- an unfinished range may change any moment: the union is scratch, dropped before returning
  return union, true
end
`;

const read = (name: string, body: string) => defineReadScript(name, `${RESOLVE}\n${body.trim()}`);

/** ARGV[5] = n, ARGV[6] = 1 for highest first. Returns flat member, score pairs. */
export const TOP = read(
  "counters.top",
  `
local key, scratch = resolve()
if not key then return cjson.encode({}) end
local n    = tonumber(ARGV[5])
local args = {'ZRANGE', key, 0, n - 1}
if ARGV[6] == '1' then args[#args + 1] = 'REV' end
args[#args + 1] = 'WITHSCORES'
local out = redis.call(unpack(args))
if scratch then redis.call('DEL', key) end
return cjson.encode(out)
`,
);

/** ARGV[5] = member. Returns {score, rank from top (0-based), rank from bottom (0-based)} or {} when absent. */
export const MEMBER = read(
  "counters.member",
  `
local key, scratch = resolve()
if not key then return cjson.encode({}) end
local member = ARGV[5]
local score  = redis.call('ZSCORE', key, member)
local out    = {}
if score then out = {score, redis.call('ZREVRANK', key, member), redis.call('ZRANK', key, member)} end
if scratch then redis.call('DEL', key) end
return cjson.encode(out)
`,
);

/** ARGV[5] = min, ARGV[6] = max, ARGV[7] = limit, ARGV[8] = 1 for descending. Returns {count, flat pairs}. */
export const RANGE = read(
  "counters.range",
  `
local key, scratch = resolve()
if not key then return cjson.encode({0, {}}) end
local min, max, limit = ARGV[5], ARGV[6], tonumber(ARGV[7])
local count = redis.call('ZCOUNT', key, min, max)
local items
if ARGV[8] == '1' then
  items = redis.call('ZRANGE', key, max, min, 'BYSCORE', 'REV', 'LIMIT', 0, limit, 'WITHSCORES')
else
  items = redis.call('ZRANGE', key, min, max, 'BYSCORE', 'LIMIT', 0, limit, 'WITHSCORES')
end
if scratch then redis.call('DEL', key) end
return cjson.encode({count, items})
`,
);

/** ARGV[5] = most members returned. Returns {card, flat pairs} (pairs empty when card is over the cap). */
export const ALL = read(
  "counters.all",
  `
local key, scratch = resolve()
if not key then return cjson.encode({0, {}}) end
local card  = redis.call('ZCARD', key)
local items = {}
if card <= tonumber(ARGV[5]) then items = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES') end
if scratch then redis.call('DEL', key) end
return cjson.encode({card, items})
`,
);

/**
 * KEYS = {names, expiry}; ARGV = {now ms, limit}. Drops names whose last key
 * has expired (a bounded batch per call), then lists names in byte order.
 */
export const LIST = defineReadScript(
  "counters.list",
  `
local names, expiry = KEYS[1], KEYS[2]
local now, limit    = tonumber(ARGV[1]), tonumber(ARGV[2])
local gone = redis.call('ZRANGE', expiry, '-inf', now, 'BYSCORE', 'LIMIT', 0, 1000)
if #gone > 0 then
  redis.call('ZREM', names, unpack(gone))
  redis.call('ZREM', expiry, unpack(gone))
end
return cjson.encode(redis.call('ZRANGE', names, 0, limit - 1))
`,
);

/**
 * Keeps the registry right after a write: the name lives until the later of
 * its plain key and its index (which outlives every bucket it lists).
 * Expects plain, index, names, expiry, name, now to be locals.
 */
const REGISTER = `
local function register()
  local left = -2
  for _, k in ipairs({plain, index}) do
    local t = redis.call('PTTL', k)
    if t == -1 then left = -1 break end
    if t > left then left = t end
  end
  if left == -2 then
    redis.call('ZREM', names, name)
    redis.call('ZREM', expiry, name)
  else
    redis.call('ZADD', names, 0, name)
    if left == -1 then redis.call('ZREM', expiry, name) else redis.call('ZADD', expiry, now + left, name) end
  end
end
`;

/**
 * KEYS = {plain, index, names, expiry, seq, bucket...};
 * ARGV = {name, now ms, late (1 when a bucket of a finished period is written), plain ttl (0 = keep),
 *         one ttl per bucket, then (slot, member, by) per item; slot 0 = plain, i = i-th bucket}.
 * Returns the score after each item, as the strings Redis gives.
 */
export const INCR = defineWriteScript(
  "counters.incr",
  `
local plain, index, names, expiry, seq = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local name, now, late, plainTtl        = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4])
local nb                               = #KEYS - 5
${REGISTER}
local hadIndex = nb > 0 and redis.call('EXISTS', index) == 1
if nb > 0 then
  for i = 1, nb do
    local b = KEYS[5 + i]
    if redis.call('HEXISTS', index, 'b:' .. b) == 0 then
      -- not part of this life: whatever it holds predates a delete of the counter
      redis.call('DEL', b)
      redis.call('HSET', index, 'b:' .. b, 1)
    end
  end
  -- a fresh index (or a late write) gets a new, never reused mark, invalidating cached unions
  if late or not hadIndex then redis.call('HSET', index, 'late', redis.call('INCR', seq)) end
end
local results = {}
for j = 5 + nb, #ARGV, 3 do
  local slot = tonumber(ARGV[j])
  local key  = plain
  if slot > 0 then key = KEYS[5 + slot] end
  results[#results + 1] = redis.call('ZINCRBY', key, ARGV[j + 2], ARGV[j + 1])
end
if plainTtl > 0 then redis.call('EXPIRE', plain, plainTtl) end
if nb > 0 then
  -- the index must outlive every bucket it vouches for (-1: some bucket never expires)
  local longest = -2
  for i = 1, nb do
    local b, ttl = KEYS[5 + i], tonumber(ARGV[4 + i])
    if ttl > 0 then redis.call('EXPIRE', b, ttl) end
    local t = redis.call('PTTL', b)
    if t == -1 then longest = -1 elseif longest ~= -1 and t > longest then longest = t end
  end
  local current = redis.call('PTTL', index)
  if not hadIndex then
    if longest > 0 then redis.call('PEXPIRE', index, longest) end
  elseif current ~= -1 then
    if longest == -1 then redis.call('PERSIST', index) elseif longest > current then redis.call('PEXPIRE', index, longest) end
  end
end
register()
return results
`,
);

/**
 * KEYS = {plain, index, names, expiry, seq, bucket...}; ARGV = {name, now ms, member, 1 to remove from the plain counter}.
 * Returns how many keys held the member.
 */
export const DELETE_MEMBER = defineWriteScript(
  "counters.deleteMember",
  `
local plain, index, names, expiry, seq = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local name, now, member, fromPlain     = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4] == '1'
${REGISTER}
local removed = 0
if fromPlain then removed = removed + redis.call('ZREM', plain, member) end
if #KEYS > 5 and redis.call('EXISTS', index) == 1 then
  for i = 6, #KEYS do
    if redis.call('HEXISTS', index, 'b:' .. KEYS[i]) == 1 then removed = removed + redis.call('ZREM', KEYS[i], member) end
  end
  -- past unions may have included the member: a new mark invalidates them
  redis.call('HSET', index, 'late', redis.call('INCR', seq))
end
register()
return removed
`,
);

/**
 * KEYS = {plain, index, names, expiry, purge}; ARGV = {name, now ms}.
 * Deleting the index turns every bucket of this life invisible; their keys go
 * to the purge hash so the sweep job can free them. Returns 1 when anything existed.
 */
export const DELETE_COUNTER = defineWriteScript(
  "counters.delete",
  `
local plain, index, names, expiry, purge = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local name, now                          = ARGV[1], ARGV[2]
local existed = redis.call('EXISTS', plain) + redis.call('EXISTS', index)
local orphans = {}
for _, field in ipairs(redis.call('HKEYS', index)) do
  if string.sub(field, 1, 2) == 'b:' then orphans[#orphans + 1] = string.sub(field, 3) end
end
-- batches of 1000 fields keep unpack() below Lua's C stack limit
for s = 1, #orphans, 1000 do
  local args = {'HSET', purge}
  for i = s, math.min(s + 999, #orphans) do
    args[#args + 1] = orphans[i]
    args[#args + 1] = now
  end
  redis.call(unpack(args))
end
redis.call('DEL', plain, index)
redis.call('ZREM', names, name)
redis.call('ZREM', expiry, name)
if existed > 0 then return 1 end
return 0
`,
);

/**
 * KEYS = {plain, index, names, expiry, source keys and source indexes...};
 * ARGV = {name, now ms, SUM|MIN|MAX, ttl (0 = none), then (key slot, index slot or 0, weight) per source key}.
 * A bucket counts only while its own counter's index lists it. Returns {members, sources used}.
 */
export const UNION = defineWriteScript(
  "counters.union",
  `
local plain, index, names, expiry = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local name, now, aggregate, ttl   = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
${REGISTER}
local live, weights = {}, {}
for j = 5, #ARGV, 3 do
  local key = KEYS[tonumber(ARGV[j])]
  local ix  = tonumber(ARGV[j + 1])
  if ix == 0 or redis.call('HEXISTS', KEYS[ix], 'b:' .. key) == 1 then
    live[#live + 1]       = key
    weights[#weights + 1] = ARGV[j + 2]
  end
end
if #live == 0 then
  redis.call('DEL', plain)
else
  -- one ZUNIONSTORE (at most 1000 keys): a source may be the destination itself
  local args = {'ZUNIONSTORE', plain, #live}
  for _, k in ipairs(live) do args[#args + 1] = k end
  args[#args + 1] = 'WEIGHTS'
  for _, w in ipairs(weights) do args[#args + 1] = w end
  args[#args + 1] = 'AGGREGATE'
  args[#args + 1] = aggregate
  redis.call(unpack(args))
  if ttl > 0 then redis.call('EXPIRE', plain, ttl) end
end
register()
return {redis.call('ZCARD', plain), #live}
`,
);

/**
 * KEYS = {purge, (bucket, its index)...}; ARGV = {}. Frees orphaned buckets
 * that no new life of their counter has claimed since. Returns how many were deleted.
 */
export const SWEEP = defineWriteScript(
  "counters.sweep",
  `
local purge   = KEYS[1]
local deleted = 0
for i = 2, #KEYS, 2 do
  local bucket, index = KEYS[i], KEYS[i + 1]
  if redis.call('HEXISTS', index, 'b:' .. bucket) == 0 then deleted = deleted + redis.call('DEL', bucket) end
  redis.call('HDEL', purge, bucket)
end
return deleted
`,
);
