import { defineReadScript, defineWriteScript } from "../redis/script.ts";

/**
 * The daily bitmap `daily:<yyyymmdd>` starts with a 128-bit header, read and
 * written with BITFIELD in the same command that sets the AU bits, so the
 * day's figures cost no command of their own:
 *
 *   bits   0..31   u32  NU: ids allocated that day
 *   bits  32..63   u32  PCU: most ids online at once
 *   bits  64..95   u32  when PCU was first reached, ms since 00:00 UTC
 *   bits  96..127  u32  last heartbeat, ms since 00:00 UTC + 1 (0: none yet)
 *   bits 128..     u1   one per compact id seen that day (AU = BITCOUNT from byte 16)
 */
export const HEADER_BYTES = 16;

/**
 * KEYS: seen, ids, names, seq, daily, history, registry due, registry rooms
 * ARGV: now (ms), cutoff (ms), timeout (ms), ms since 00:00 UTC, daily TTL (s), history TTL (s), room, id...
 * Returns { online, new }.
 */
export const HEARTBEAT = defineWriteScript(
  "presence-heartbeat",
  `
local seen, ids, names, seq = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local daily, history        = KEYS[5], KEYS[6]
local due, rooms            = KEYS[7], KEYS[8]
local now                   = ARGV[1]
local cutoff                = ARGV[2]
local timeout               = tonumber(ARGV[3])
local ofDay                 = tonumber(ARGV[4])
local dailyTtl              = tonumber(ARGV[5])
local historyTtl            = tonumber(ARGV[6])
local room                  = ARGV[7]
-- Whole-batch commands (one HMGET, one ZADD, one BITFIELD) rather than a few
-- per id: Upstash bills each command a script runs, so 1 id and 1,000 cost the same.
local list                  = {}
for i = 8, #ARGV do list[#list + 1] = ARGV[i] end
local known                 = redis.call('HMGET', ids, unpack(list))
local fresh, assigned       = {}, {}
for i, id in ipairs(list) do
  if not known[i] and not assigned[id] then
    fresh[#fresh + 1] = id
    assigned[id]      = true
  end
end
if #fresh > 0 then
  -- One INCRBY reserves a block of compact ids. They are never handed out
  -- again, not even after their ids are forgotten, so a bit in a kept AU
  -- bitmap always belongs to the one id that set it.
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
end
-- GT: a slower request carrying an older time must not move last-seen backwards.
local scored, bits          = { 'GT' }, {}
for i, id in ipairs(list) do
  local n             = tonumber(known[i] or assigned[id])
  scored[#scored + 1] = now
  scored[#scored + 1] = n
  bits[#bits + 1]     = 'SET'
  bits[#bits + 1]     = 'u1'
  bits[#bits + 1]     = 128 + n
  bits[#bits + 1]     = 1
end
redis.call('ZADD', seen, unpack(scored))
local count                 = redis.call('ZCOUNT', seen, cutoff, '+inf')
-- The same BITFIELD sets the AU bits, counts NU, reads PCU and swaps in the
-- time of this heartbeat (the header is described above).
if #fresh > 0 then
  bits[#bits + 1] = 'INCRBY'; bits[#bits + 1] = 'u32'; bits[#bits + 1] = 0; bits[#bits + 1] = #fresh
end
bits[#bits + 1] = 'GET'; bits[#bits + 1] = 'u32'; bits[#bits + 1] = 32
bits[#bits + 1] = 'SET'; bits[#bits + 1] = 'u32'; bits[#bits + 1] = 96; bits[#bits + 1] = ofDay + 1
local header                = redis.call('BITFIELD', daily, unpack(bits))
local peak, last            = header[#header - 1], header[#header]
-- The online count only rises at a heartbeat, so checking the peak here makes PCU exact.
if count > peak then redis.call('BITFIELD', daily, 'SET', 'u32', 32, count, 'SET', 'u32', 64, ofDay) end
-- No heartbeat yet today: the key is new (or only the trim job's midnight
-- peak is in it), and its deadline, the end of tomorrow, is fixed.
if last == 0 then redis.call('EXPIRE', daily, dailyTtl) end
-- The room (re)becomes active: first heartbeat of the day, or none for a
-- whole timeout. The trim job drops a room only after a timeout and a margin
-- without heartbeats, so it is listed and scheduled again exactly when needed.
if last == 0 or ofDay + 1 - last >= timeout then
  redis.call('ZADD', due, now, room)
  redis.call('ZADD', rooms, 'GT', now, room)
  -- History gets its lifetime now, before the trim job writes a point: a
  -- placeholder (score 0, below every point) makes sure the key exists. 26 h
  -- is the longest lifetime history ever gets, so this never shortens it.
  redis.call('ZADD', history, 'NX', 0, '-')
  redis.call('EXPIRE', history, historyTtl)
end
return { online = count, new = #fresh }
`,
);

/**
 * Takes an id offline by moving its last-seen just past the timeout (LT: never
 * later than it was). It stays mapped and seen, so AU, NU, PCU and history keep
 * their values and the id is still forgotten on time.
 * KEYS: seen, ids. ARGV: id, offline time (ms). Returns 1 when the id was moved.
 */
export const LEAVE = defineWriteScript(
  "presence-leave",
  `
local seen, ids = KEYS[1], KEYS[2]
local n         = redis.call('HGET', ids, ARGV[1])
if not n then return 0 end
return redis.call('ZADD', seen, 'XX', 'LT', 'CH', ARGV[2], n)
`,
);

/**
 * KEYS: seen, daily. ARGV: cutoff.
 * Returns { online, new, peak, peakAt (ms since 00:00), active }.
 */
export const STATS = defineReadScript(
  "presence-stats",
  `
local seen, daily = KEYS[1], KEYS[2]
local header      = redis.call('BITFIELD', daily, 'GET', 'u32', 0, 'GET', 'u32', 32, 'GET', 'u32', 64)
return cjson.encode({
  online = redis.call('ZCOUNT', seen, ARGV[1], '+inf'),
  new    = header[1],
  peak   = header[2],
  peakAt = header[3],
  active = redis.call('BITCOUNT', daily, ${HEADER_BYTES}, -1),
})
`,
);

/** Lua: does a sort after b in byte order (Lua's < uses the C library's collation)? */
const AFTER = `
local function after(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return #a > #b
end
`;

/**
 * Lua: where a page resumes after the cursor (score, member) of `key`: right after the member when
 * it is still at that score, else where it would sit among members of equal score (binary search in
 * byte order; a batch shares one time, so equal scores are common). `desc`: the list is read highest
 * score first (ZREVRANGE). Expects AFTER.
 */
const RESUME = `
local function resume(key, score, member, desc)
  local at = redis.call('ZSCORE', key, member)
  if at and tonumber(at) == tonumber(score) then
    return redis.call(desc and 'ZREVRANK' or 'ZRANK', key, member) + 1
  end
  local lo
  if desc then lo = redis.call('ZCOUNT', key, '(' .. score, '+inf') else lo = redis.call('ZCOUNT', key, '-inf', '(' .. score) end
  local hi = lo + redis.call('ZCOUNT', key, score, score)
  while lo < hi do
    local mid  = math.floor((lo + hi) / 2)
    local m    = redis.call(desc and 'ZREVRANGE' or 'ZRANGE', key, mid, mid)[1]
    local past = (desc and after(member, m)) or (not desc and after(m, member))
    if past then hi = mid else lo = mid + 1 end
  end
  return lo
end
`;

/**
 * Online members in (lastSeen, compact id) order, from just after a cursor.
 * KEYS: seen, names. ARGV: cutoff, limit, cursor score ('' for the first page), cursor member.
 * Returns { items = {{id, lastSeen, compactId}...}, more }.
 */
export const MEMBERS = defineReadScript(
  "presence-members",
  `
local seen, names = KEYS[1], KEYS[2]
local cutoff      = ARGV[1]
local limit       = tonumber(ARGV[2])
local score       = ARGV[3]
local member      = ARGV[4]
${AFTER.trim()}
${RESUME.trim()}
local start
if score == '' or tonumber(score) < tonumber(cutoff) then
  start = redis.call('ZCOUNT', seen, '-inf', '(' .. cutoff)
else
  start = resume(seen, score, member, false)
end
-- One more than asked says whether there is a next page without a ZCARD.
local page  = redis.call('ZRANGE', seen, start, start + limit, 'WITHSCORES')
local more  = #page > 2 * limit
local ints  = {}
for i = 1, math.min(#page, 2 * limit), 2 do ints[#ints + 1] = page[i] end
local items = {}
if #ints > 0 then
  local ids = redis.call('HMGET', names, unpack(ints))
  for i = 1, #ints do items[i] = { ids[i] or '', page[2 * i], ints[i] } end
end
return cjson.encode({ items = items, more = more })
`,
);

/**
 * History points are members `<minute of the day>` (a 1,440-slot ring: memory
 * stays bounded and a rerun of the minute overwrites its own point) scored
 * `minute index × 10^7 + online`, so one ZADD writes a point and a score range
 * reads a time range.
 */
export const HISTORY_SCALE = 10_000_000;

/** KEYS: history. ARGV: lowest score, highest score. Returns member, score, member, score... */
export const HISTORY = defineReadScript(
  "presence-history",
  `
return cjson.encode(redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[2], 'WITHSCORES'))
`,
);

/**
 * Listed rooms, most recently active first, from just after a cursor.
 * KEYS: registry rooms. ARGV: limit, cursor score ('' for the first page), cursor room.
 * Returns { rooms = {room, score, room, score...}, more }.
 */
export const ROOMS = defineReadScript(
  "presence-rooms",
  `
local rooms = KEYS[1]
local limit = tonumber(ARGV[1])
local score = ARGV[2]
local room  = ARGV[3]
${AFTER.trim()}
${RESUME.trim()}
-- Order: score descending, then bytes descending (ZREVRANGE).
local start = 0
if score ~= '' then start = resume(rooms, score, room, true) end
local page = redis.call('ZREVRANGE', rooms, start, start + limit, 'WITHSCORES')
local more = #page > 2 * limit
local out  = {}
for i = 1, math.min(#page, 2 * limit) do out[i] = page[i] end
return cjson.encode({ rooms = out, more = more })
`,
);

/**
 * KEYS: the four registries (rooms, due, two legacy), then every key of the room.
 * ARGV: room. Returns how many keys and registry entries went.
 */
export const DELETE_ROOM = defineWriteScript(
  "presence-delete-room",
  `
local room = ARGV[1]
local gone = 0
for i = 1, 4 do gone = gone + redis.call('ZREM', KEYS[i], room) end
local keys = {}
for i = 5, #KEYS do keys[#keys + 1] = KEYS[i] end
return gone + redis.call('DEL', unpack(keys))
`,
);
