import { defineReadScript, defineWriteScript } from "../redis/script.ts";

/**
 * The rooms the trim job visits now: active rooms (scheduled at the time they
 * became active or were last visited) and idle rooms whose next visit is due
 * (the end of their listing or an id to forget), longest waiting first.
 * KEYS: registry due. ARGV: now (ms), limit.
 */
export const DUE_ROOMS = defineReadScript(
  "presence-due-rooms",
  `
return cjson.encode(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2])))
`,
);

/**
 * Visits a chunk of rooms. An active room (someone online, or a heartbeat
 * within the timeout plus a margin) gets its history point for the minute and,
 * at the hour, its history lifetime and listing refreshed. An idle room is
 * scheduled for its next visit: the end of its listing (two days after its
 * last activity, when its history and daily keys are gone) or the day its
 * oldest id passes the horizon; with no id left its last keys and registry
 * entries go. Every room forgets at most a budget of ids idle past the horizon.
 *
 * KEYS: registry due, registry rooms, then per room: seen, ids, names, seq, daily, history.
 * ARGV: now, cutoff, idle after (ms), horizon cut (ms), horizon (ms), start of the day (ms),
 *       minute index, slot, hourly (1/0), carry (1/0), rotate (1/0), daily TTL (s),
 *       history TTL active (s), history TTL idle (s), empty after (ms), forget budget, room...
 * Returns { rooms, online, forgotten, idle, dropped }.
 */
export const TRIM = defineWriteScript(
  "presence-trim",
  `
local due, rooms      = KEYS[1], KEYS[2]
local now             = tonumber(ARGV[1])
local cutoff          = ARGV[2]
local idleAfter       = tonumber(ARGV[3])
local horizonCut      = ARGV[4]
local horizon         = tonumber(ARGV[5])
local dayStart        = tonumber(ARGV[6])
local minute          = tonumber(ARGV[7])
local slot            = ARGV[8]
local hourly          = ARGV[9] == '1'
local carry           = ARGV[10] == '1'
local rotate          = ARGV[11] == '1'
local dailyTtl        = tonumber(ARGV[12])
local activeTtl       = tonumber(ARGV[13])
local idleTtl         = tonumber(ARGV[14])
local emptyAfter      = tonumber(ARGV[15])
local budget          = tonumber(ARGV[16])
-- Scores and times go to Redis as integers: Lua's own tostring keeps only 14 digits.
local function int(x) return string.format('%.0f', x) end
local total, forgotten, idleRooms, dropped = 0, 0, 0, 0
for r = 0, (#KEYS - 2) / 6 - 1 do
  local base                = 2 + r * 6
  local seen, ids, names    = KEYS[base + 1], KEYS[base + 2], KEYS[base + 3]
  local seq, daily, history = KEYS[base + 4], KEYS[base + 5], KEYS[base + 6]
  local room                = ARGV[17 + r]
  local count               = redis.call('ZCOUNT', seen, cutoff, '+inf')
  local active              = count > 0
  local activity
  if not active then
    -- Last activity: today's last heartbeat (a leave moves an id offline but is
    -- no heartbeat, and the heartbeat decides reactivation by this time) or the
    -- latest last-seen (a heartbeat before midnight).
    local last = redis.call('BITFIELD', daily, 'GET', 'u32', 96)[1]
    local top  = redis.call('ZRANGE', seen, -1, -1, 'WITHSCORES')
    if last > 0 then activity = dayStart + last - 1 end
    if top[2] then activity = math.max(activity or 0, tonumber(top[2])) end
    active = activity ~= nil and now - activity < idleAfter
  end
  total = total + count
  if active then
    -- One point per minute; a rerun of the minute overwrites its own slot.
    redis.call('ZADD', history, int(minute * ${10_000_000} + math.min(count, ${10_000_000 - 1})), slot)
    if hourly then
      redis.call('EXPIRE', history, activeTtl)
      redis.call('ZADD', rooms, 'GT', int(now), room)
    end
    if carry and count > 0 then
      -- Concurrency carried over midnight, before any heartbeat of the new day:
      -- only the first samples of a day can exceed what heartbeats recorded.
      local peak = redis.call('BITFIELD', daily, 'GET', 'u32', 32)[1]
      if count > peak then
        local h = redis.call('BITFIELD', daily, 'SET', 'u32', 32, count, 'SET', 'u32', 64, now - dayStart, 'GET', 'u32', 96)
        if h[3] == 0 then redis.call('EXPIRE', daily, dailyTtl) end
      end
    end
    if rotate then redis.call('ZADD', due, 'XX', int(now), room) end
  end
  -- Forget ids idle past the horizon, boundedly. Their compact ids are not
  -- handed out again (seq only grows), so kept AU bitmaps stay exact.
  local full = false
  if budget > 0 then
    local old = redis.call('ZRANGEBYSCORE', seen, '-inf', '(' .. horizonCut, 'LIMIT', 0, budget)
    if #old > 0 then
      local who  = redis.call('HMGET', names, unpack(old))
      local gone = {}
      for i = 1, #old do if who[i] then gone[#gone + 1] = who[i] end end
      if #gone > 0 then redis.call('HDEL', ids, unpack(gone)) end
      redis.call('HDEL', names, unpack(old))
      redis.call('ZREM', seen, unpack(old))
      forgotten = forgotten + #old
      full      = #old == budget
      budget    = budget - #old
    end
  end
  if not active then
    idleRooms = idleRooms + 1
    -- History must stay readable a day after its last point, then go.
    redis.call('EXPIRE', history, idleTtl)
    local unlisted = activity == nil or now - activity >= emptyAfter
    if unlisted then redis.call('ZREM', rooms, room) end
    local oldest = redis.call('ZRANGE', seen, 0, 0, 'WITHSCORES')
    if oldest[2] then
      local nextAt = tonumber(oldest[2]) + horizon
      if not unlisted then nextAt = math.min(nextAt, activity + emptyAfter) end
      if full then nextAt = now end
      redis.call('ZADD', due, 'XX', int(nextAt), room)
    else
      -- Nobody left to forget. The counter goes only when no mapping is left
      -- (ids mapped by an earlier version have no last-seen): then no kept
      -- bitmap has a bit of this room's ids (horizon > the bitmaps' two days).
      if redis.call('HLEN', ids) == 0 then redis.call('DEL', seq) end
      redis.call('ZREM', due, room)
      if not unlisted then redis.call('ZREM', rooms, room) end
      dropped = dropped + 1
    end
  end
end
return { rooms = (#KEYS - 2) / 6, online = total, forgotten = forgotten, idle = idleRooms, dropped = dropped }
`,
);
