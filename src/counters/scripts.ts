import { defineWriteScript } from "../redis/script.ts";

export { ALL, LIST, MEMBER, RANGE, TOP } from "./read-scripts.ts";

/**
 * Lua of the counters area. Every API call is one of these scripts.
 *
 * Period buckets belong to the counter's current life only while the
 * counter's index hash holds `b:<bucket key>`. Deleting a counter deletes the
 * index, so every bucket of the old life turns invisible at once without
 * naming its key (a script may touch only declared keys, and the deleting
 * request cannot know them); a later write to such a bucket starts it afresh.
 * The field's value is the bucket's expiry (epoch ms on the caller's clock,
 * 0 = none), so a write learns both "is it live" and "does its expiry need
 * extending" from one HMGET.
 */

/**
 * Looks up the index fields of many buckets in one HMGET per 1000 (Lua's C
 * stack limits unpack()). Expects `index` to be a local; returns the values
 * in order (false where the bucket is not part of this life).
 */
const FIELDS = `
local function fields(from, to)
  local out = {}
  for s = from, to, 1000 do
    local args = {'HMGET', index}
    for i = s, math.min(s + 999, to) do args[#args + 1] = 'b:' .. KEYS[i] end
    for _, v in ipairs(redis.call(unpack(args))) do out[#out + 1] = v end
  end
  return out
end
`;

/**
 * Keeps the registry exact after a rollup replaced the plain key: the name
 * lives until the later of its plain key and its index (which outlives every
 * bucket it lists). Expects plain, index, names, expiry, name, now to be locals.
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
    redis.call('ZADD', names, now, name)
    if left == -1 then redis.call('ZREM', expiry, name) else redis.call('ZADD', expiry, now + left, name) end
  end
end
`;

/**
 * KEYS = {plain, index, names, expiry, seq, bucket..., rollup...};
 * ARGV = {name, now ms, late (1 when a bucket of a finished period is written), plain ttl s (0 = none), number of items,
 *         per bucket or rollup (ttl s (0 = none), slot of its day rollup, slot of its month rollup; 0 = none),
 *         then (slot, member, by) per item; slot 0 = plain, i = i-th bucket;
 *         then (rollup slot, member, summed by) per rollup and member}.
 * Returns the score after each item, as the strings Redis gives.
 *
 * Rollups are keys of the index like buckets (listed, expiring, deleted with
 * the counter); their ttl is the bucket's plus its slack, so a rollup never
 * expires before a bucket it sums.
 *
 * Bookkeeping runs only on first touch, so a steady write is the ZINCRBY, the
 * registry's activity ZADD and (for buckets) one HMGET or (with a ttl on the
 * plain key) one PTTL. Expiry rules, for every key written:
 * - a key this write creates gets the ttl (none without one);
 * - an existing key with an expiry is only ever extended: when less than ttl
 *   is left, to ttl plus a tenth of it (at most an hour), so steady writes
 *   extend it about once per tenth of the ttl rather than every time;
 * - an existing key without an expiry keeps none.
 * The registry's `_expiry` entry is an upper bound of the name's keys'
 * expiries (absent: some key never expires), raised whenever a write sets a
 * later one; the index outlives every bucket it lists.
 */
export const INCR = defineWriteScript(
  "counters.incr",
  `
local plain, index, names, expiry, seq = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local name, now, late                  = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1'
local plainTtl                         = tonumber(ARGV[4]) * 1000
local nItems                           = tonumber(ARGV[5])
local nb                               = #KEYS - 5
local first                            = 6 + 3 * nb
local last                             = first + 3 * nItems - 1
${FIELDS}
local function slack(ms) return math.min(math.ceil(ms / 10), 3600000) end
-- the registry's score is the last write (lists show recent activity first);
-- a name new to it has no _expiry entry, i.e. counts as never expiring
local newName       = redis.call('ZADD', names, now, name) == 1
local forever, grow = false, 0
local usesPlain     = false
for j = first, last, 3 do
  if ARGV[j] == '0' then usesPlain = true break end
end
-- with a ttl, the plain key's PTTL before the write: -2 new, -1 kept for ever, else the time left
local plainLeft = -1
if usesPlain and plainTtl > 0 then plainLeft = redis.call('PTTL', plain) end
-- one HMGET says, per bucket, whether it is part of this life and its recorded expiry (0 = none)
local state, indexLeft = {}, nil
if nb > 0 then
  local values = fields(6, 5 + nb)
  for i = 1, nb do
    local b = KEYS[5 + i]
    local v = tonumber(values[i])
    if v and v > 0 and v <= now + 60000 then
      -- the recorded expiry has (nearly) passed, by our clock: ask Redis' own
      local t, old = redis.call('PTTL', b), v
      if t == -2 then v = nil elseif t == -1 then v = 0 else v = now + t end
      -- a record that was wrong (kept from before expiries were recorded) is put right once
      if v and old <= now then redis.call('HSET', index, 'b:' .. b, v) end
    end
    if not v then
      if not indexLeft then indexLeft = redis.call('PTTL', index) end
      -- not part of this life: whatever it holds predates a delete of the counter
      redis.call('DEL', b)
    end
    state[i] = v or false
  end
end
local results, suspects = {}, 0
for j = first, last, 3 do
  local slot, by = tonumber(ARGV[j]), ARGV[j + 2]
  local key      = plain
  if slot > 0 then key = KEYS[5 + slot] end
  local score = redis.call('ZINCRBY', key, by, ARGV[j + 1])
  results[#results + 1] = score
  -- a score equal to the increment: the member (perhaps the whole key) is new
  if slot == 0 and tonumber(score) == tonumber(by) then suspects = suspects + 1 end
end
-- calendar rollups: one ZINCRBY per (rollup, member), the batch's increments summed by the caller
for j = last + 1, #ARGV, 3 do
  redis.call('ZINCRBY', KEYS[5 + tonumber(ARGV[j])], ARGV[j + 2], ARGV[j + 1])
end
if usesPlain then
  if plainTtl > 0 then
    if plainLeft == -2 then
      redis.call('PEXPIRE', plain, plainTtl)
      grow = now + plainTtl
    elseif plainLeft >= 0 and plainLeft < plainTtl then
      local ms = plainTtl + slack(plainTtl)
      redis.call('PEXPIRE', plain, ms, 'GT')
      grow = now + ms
    end
  elseif newName then
    forever = true
  -- more members than possibly-new ones: the key existed, nothing to record
  elseif suspects > 0 and redis.call('ZCARD', plain) <= suspects and redis.call('PTTL', plain) == -1 then
    forever = true
  end
end
local indexForever, indexGrow = false, 0
-- a rollup outlives its buckets: one whose bucket this write created without expiry keeps none either
local keep = {}
for i = 1, nb do
  local b, ttl, v = KEYS[5 + i], tonumber(ARGV[3 + 3 * i]) * 1000, state[i]
  local e         = nil
  if keep[i] then
    ttl = 0
    if v and v > 0 then
      redis.call('PERSIST', b)
      v = false
    end
  end
  if v == false then
    e = 0
    if ttl > 0 then
      redis.call('PEXPIRE', b, ttl)
      e = now + ttl
    end
    redis.call('HSET', index, 'b:' .. b, e)
    if e == 0 and state[i] == false then
      keep[tonumber(ARGV[4 + 3 * i])] = true
      keep[tonumber(ARGV[5 + 3 * i])] = true
    end
  elseif ttl > 0 and v > 0 and v - now < ttl then
    local ms = ttl + slack(ttl)
    e = now + ms
    -- GT: never shortens; 0 means the key had no expiry after all (a record from before expiries were kept)
    if redis.call('PEXPIRE', b, ms, 'GT') == 0 and redis.call('PTTL', b) == -1 then e = 0 end
    redis.call('HSET', index, 'b:' .. b, e)
  end
  if e == 0 then
    indexForever, forever = true, true
  elseif e then
    indexGrow, grow = math.max(indexGrow, e), math.max(grow, e)
  end
end
if nb > 0 then
  -- a fresh index (or a late write) gets a new, never reused mark, invalidating cached unions
  if late or indexLeft == -2 then redis.call('HSET', index, 'late', redis.call('INCR', seq)) end
  if indexForever then
    if indexLeft ~= -1 and indexLeft ~= -2 then redis.call('PERSIST', index) end
  elseif indexGrow > 0 then
    if indexLeft == -2 then
      redis.call('PEXPIRE', index, indexGrow - now)
    elseif indexLeft ~= -1 then
      redis.call('PEXPIRE', index, indexGrow - now, 'GT')
    end
  end
end
if forever then
  if not newName then redis.call('ZREM', expiry, name) end
elseif grow > 0 then
  if newName then redis.call('ZADD', expiry, grow, name) else redis.call('ZADD', expiry, 'XX', 'GT', grow, name) end
end
return results
`,
);

/**
 * KEYS = {plain, index, names, expiry, seq, bucket..., day rollup..., month rollup...};
 * ARGV = {name, now ms, member, 1 to remove from the plain counter, then per bucket or rollup:
 *         kind (f = bucket, w = rollup wholly in range, p = rollup partly in range), slot of the partial rollup it adds to (0 = none)}.
 * Removes the member only: no key's expiry changes. A bucket or whole rollup
 * loses the member (ZREM); a partial rollup loses what its removed parts held
 * (ZINCRBY of minus their scores, read by ZSCORE only where a partial rollup
 * needs them), and the member itself when that leaves 0. Returns how many buckets held the member.
 */
export const DELETE_MEMBER = defineWriteScript(
  "counters.deleteMember",
  `
local plain, index, names, expiry, seq = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local name, now, member, fromPlain     = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4] == '1'
${FIELDS}
local removed = 0
if fromPlain then removed = redis.call('ZREM', plain, member) end
-- A bucket or rollup this delete emptied is gone from Redis: its index entry (and the expiry it
-- records) must go too, or the next write would trust that expiry and leave the new key without one.
local function forgetIfEmpty(key)
  if redis.call('EXISTS', key) == 0 then redis.call('HDEL', index, 'b:' .. key) end
end
if #KEYS > 5 then
  local fromBuckets, changed = 0, 0
  local values               = fields(6, #KEYS)
  local acc, found           = {}, {}
  for i = 6, #KEYS do
    local j            = 4 + 2 * (i - 5)
    local kind, parent = ARGV[j - 1], tonumber(ARGV[j])
    local key          = KEYS[i]
    local gone, held   = 0, false
    if values[i - 5] then
      if kind == 'p' then
        if found[i] then
          gone, held = acc[i], true
          local left = redis.call('ZINCRBY', key, -gone, member)
          if tonumber(left) == 0 then
            redis.call('ZREM', key, member)
            forgetIfEmpty(key)
          end
          changed = changed + 1
        end
      else
        local n = 0
        if parent > 0 then
          -- a partial rollup above needs the score; an absent member needs no ZREM
          local score = redis.call('ZSCORE', key, member)
          if score then gone, held, n = tonumber(score), true, redis.call('ZREM', key, member) end
        else
          n = redis.call('ZREM', key, member)
        end
        if kind == 'f' then fromBuckets = fromBuckets + n end
        if n > 0 then forgetIfEmpty(key) end
        changed = changed + n
      end
    end
    if held and parent > 0 then
      acc[5 + parent]   = (acc[5 + parent] or 0) + gone
      found[5 + parent] = true
    end
  end
  -- past unions may have included the member: a new mark invalidates them
  if changed > 0 then redis.call('HSET', index, 'late', redis.call('INCR', seq)) end
  removed = removed + fromBuckets
end
-- a counter left with no key at all leaves the registry
if removed > 0 and redis.call('EXISTS', plain, index) == 0 then
  redis.call('ZREM', names, name)
  redis.call('ZREM', expiry, name)
end
return removed
`,
);

/**
 * KEYS = {plain, index, names, expiry, purge, cache keys...}; ARGV = {name, now ms}.
 * Deleting the index turns every bucket of this life invisible; their keys go
 * to the purge hash so the sweep job can free them. The cached unions go too.
 * Returns 1 when anything existed.
 */
export const DELETE_COUNTER = defineWriteScript(
  "counters.delete",
  `
local plain, index, names, expiry, purge = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local name, now                          = ARGV[1], ARGV[2]
local existed = redis.call('EXISTS', plain, index)
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
local doomed = {'DEL', plain, index}
for i = 6, #KEYS do doomed[#doomed + 1] = KEYS[i] end
redis.call(unpack(doomed))
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
