import { defineReadScript, defineWriteScript } from "../redis/script.ts";

/**
 * KEYS: online, ids, names, seq, day, au, registry names, registry active
 * ARGV: now (ms), cutoff (ms), online TTL (s), day TTL (s), room, id...
 * Returns { online, new }.
 */
export const HEARTBEAT = defineWriteScript(
  "presence-heartbeat",
  `
local online, ids, names, seq = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local day, au                 = KEYS[5], KEYS[6]
local roomNames, active       = KEYS[7], KEYS[8]
local now                     = ARGV[1]
local cutoff                  = ARGV[2]
local onlineTtl               = tonumber(ARGV[3])
local dayTtl                  = tonumber(ARGV[4])
local room                    = ARGV[5]
-- Whole-batch commands (one HMGET, one ZADD, one BITFIELD...) rather than a
-- few per id: Upstash bills each command a script runs.
local list                    = {}
for i = 6, #ARGV do list[#list + 1] = ARGV[i] end
local known                   = redis.call('HMGET', ids, unpack(list))
local fresh, assigned         = {}, {}
for i, id in ipairs(list) do
  if not known[i] and not assigned[id] then
    fresh[#fresh + 1] = id
    assigned[id]      = true
  end
end
if #fresh > 0 then
  -- One INCRBY reserves a block of compact ids; the script is atomic, so no
  -- other request can hand out the same ones or allocate an id twice.
  local first             = redis.call('INCRBY', seq, #fresh) - #fresh
  local forward, backward = {}, {}
  for j, id in ipairs(fresh) do
    assigned[id]            = first + j
    forward[#forward + 1]   = id
    forward[#forward + 1]   = first + j
    backward[#backward + 1] = first + j
    backward[#backward + 1] = id
  end
  redis.call('HSET', ids, unpack(forward))
  redis.call('HSET', names, unpack(backward))
  redis.call('HINCRBY', day, 'new', #fresh)
end
-- GT: a slower request carrying an older time must not move last-seen backwards.
local scored, bits            = { 'GT' }, {}
for i, id in ipairs(list) do
  local n             = known[i] or assigned[id]
  scored[#scored + 1] = now
  scored[#scored + 1] = n
  bits[#bits + 1]     = 'SET'
  bits[#bits + 1]     = 'u1'
  bits[#bits + 1]     = n
  bits[#bits + 1]     = 1
end
redis.call('ZADD', online, unpack(scored))
redis.call('BITFIELD', au, unpack(bits))
local count                   = redis.call('ZCOUNT', online, cutoff, '+inf')
-- The online count only rises at a heartbeat, so checking the peak here makes PCU exact.
local peak                    = tonumber(redis.call('HGET', day, 'peak') or '0')
if count > peak then redis.call('HSET', day, 'peak', count, 'peakAt', now) end
-- Every member is idle once the TTL passes without a heartbeat, so the whole set may go.
redis.call('EXPIRE', online, onlineTtl)
redis.call('EXPIRE', day, dayTtl)
redis.call('EXPIRE', au, dayTtl)
redis.call('ZADD', roomNames, 0, room)
redis.call('ZADD', active, 'GT', now, room)
return { online = count, new = #fresh }
`,
);

/** KEYS: online, ids. ARGV: id. Returns 1 when the id was online-listed. */
export const LEAVE = defineWriteScript(
  "presence-leave",
  `
local online, ids = KEYS[1], KEYS[2]
local n           = redis.call('HGET', ids, ARGV[1])
if not n then return 0 end
return redis.call('ZREM', online, n)
`,
);

/**
 * KEYS: online, day, au. ARGV: cutoff.
 * Returns { online, peak?, peakAt?, new?, active }.
 */
export const STATS = defineReadScript(
  "presence-stats",
  `
local online, day, au = KEYS[1], KEYS[2], KEYS[3]
local stats           = redis.call('HMGET', day, 'peak', 'peakAt', 'new')
return cjson.encode({
  online = redis.call('ZCOUNT', online, ARGV[1], '+inf'),
  peak   = stats[1],
  peakAt = stats[2],
  new    = stats[3],
  active = redis.call('BITCOUNT', au),
})
`,
);

/**
 * Online members in (lastSeen, compact id) order, from just after a cursor.
 * KEYS: online, names. ARGV: cutoff, limit, cursor score ('' for the first page), cursor member.
 * Returns { items = {{id, lastSeen, compactId}...}, more }.
 */
export const MEMBERS = defineReadScript(
  "presence-members",
  `
local online, names = KEYS[1], KEYS[2]
local cutoff        = ARGV[1]
local limit         = tonumber(ARGV[2])
local score         = ARGV[3]
local member        = ARGV[4]
-- Redis orders equal scores by the members' bytes; Lua's < uses the C library's
-- collation, so compare bytes here.
local function after(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return #a > #b
end
local start
if score == '' or tonumber(score) < tonumber(cutoff) then
  start = redis.call('ZCOUNT', online, '-inf', '(' .. cutoff)
else
  -- The cursor's member may have moved or left since: find where it would sit.
  -- Equal scores are common (a batch shares one time), so binary search among them.
  local lo = redis.call('ZCOUNT', online, '-inf', '(' .. score)
  local hi = lo + redis.call('ZCOUNT', online, score, score)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local m   = redis.call('ZRANGE', online, mid, mid)[1]
    if after(m, member) then hi = mid else lo = mid + 1 end
  end
  start = lo
end
local page  = redis.call('ZRANGE', online, start, start + limit - 1, 'WITHSCORES')
local total = redis.call('ZCARD', online)
local ints  = {}
for i = 1, #page, 2 do ints[#ints + 1] = page[i] end
local items = {}
if #ints > 0 then
  local ids = redis.call('HMGET', names, unpack(ints))
  for i = 1, #ints do items[i] = { ids[i] or '', page[2 * i], ints[i] } end
end
return cjson.encode({ items = items, more = start + #ints < total })
`,
);

/** KEYS: history. ARGV: from (ms, exclusive), to (ms). Returns the members `<minuteMs>:<online>`. */
export const HISTORY = defineReadScript(
  "presence-history",
  `
return cjson.encode(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], ARGV[2]))
`,
);

/** KEYS: registry names. ARGV: limit. Room names in byte order. */
export const ROOMS = defineReadScript(
  "presence-rooms",
  `
return cjson.encode(redis.call('ZRANGE', KEYS[1], '-', '+', 'BYLEX', 'LIMIT', 0, tonumber(ARGV[1])))
`,
);

/**
 * KEYS: registry names, registry active, then every key of the room.
 * ARGV: room. Returns how many keys and registry entries went.
 */
export const DELETE_ROOM = defineWriteScript(
  "presence-delete-room",
  `
local roomNames, active = KEYS[1], KEYS[2]
local room              = ARGV[1]
local gone              = redis.call('ZREM', roomNames, room) + redis.call('ZREM', active, room)
for i = 3, #KEYS do gone = gone + redis.call('DEL', KEYS[i]) end
return gone
`,
);

/**
 * Drops rooms idle for longer than the timeout plus a margin from the active
 * registry and returns the rest, most recently active first.
 * KEYS: registry active. ARGV: stale before (ms), limit.
 */
export const ACTIVE_ROOMS = defineWriteScript(
  "presence-active-rooms",
  `
local active = KEYS[1]
local stale  = ARGV[1]
redis.call('ZREMRANGEBYSCORE', active, '-inf', '(' .. stale)
return redis.call('ZREVRANGEBYSCORE', active, '+inf', stale, 'LIMIT', 0, tonumber(ARGV[2]))
`,
);

/**
 * Trims idle members and samples the online count of a chunk of rooms.
 * KEYS: per room, online, day, history (3 keys each).
 * ARGV: cutoff, now, minute (ms), history from (ms), history TTL (s), day TTL (s), removal budget.
 * Returns { rooms, removed, online } (online summed over the chunk).
 */
export const TRIM = defineWriteScript(
  "presence-trim",
  `
local cutoff     = ARGV[1]
local now        = ARGV[2]
local minute     = ARGV[3]
local historyMin = ARGV[4]
local historyTtl = tonumber(ARGV[5])
local dayTtl     = tonumber(ARGV[6])
local budget     = tonumber(ARGV[7])
local removed    = 0
local total      = 0
for r = 1, #KEYS, 3 do
  local online, day, history = KEYS[r], KEYS[r + 1], KEYS[r + 2]
  if budget > 0 then
    -- Bounded: a room that went quiet all at once is finished by later runs
    -- (reads count by time window, so stale members never show meanwhile).
    local idle = redis.call('ZRANGEBYSCORE', online, '-inf', '(' .. cutoff, 'LIMIT', 0, budget)
    for i = 1, #idle, 500 do
      removed = removed + redis.call('ZREM', online, unpack(idle, i, math.min(i + 499, #idle)))
    end
    budget = budget - #idle
  end
  local count = redis.call('ZCOUNT', online, cutoff, '+inf')
  total = total + count
  -- One point per minute: replacing the minute's point makes a rerun harmless.
  redis.call('ZREMRANGEBYSCORE', history, minute, minute)
  redis.call('ZADD', history, minute, minute .. ':' .. count)
  redis.call('ZREMRANGEBYSCORE', history, '-inf', '(' .. historyMin)
  redis.call('EXPIRE', history, historyTtl)
  -- Catches concurrency carried over midnight, when no heartbeat has updated the new day yet.
  local peak = tonumber(redis.call('HGET', day, 'peak') or '0')
  if count > peak then
    redis.call('HSET', day, 'peak', count, 'peakAt', now)
    redis.call('EXPIRE', day, dayTtl)
  end
end
return { rooms = #KEYS / 3, removed = removed, online = total }
`,
);
