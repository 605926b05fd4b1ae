import { defineLua, defineScript } from "../redis/script.ts";
import { HEADER_BITS, HEADER_BYTES, HISTORY_SCALE, IDLED_FLAG } from "./keys.ts";

/**
 * Presence's write scripts: heartbeat, leave, delete room, and the trim job's
 * visit of a chunk of rooms. None refuses: every input is checked before the
 * call (validate.ts). Reads are in read-scripts.ts.
 */

/**
 * The field of a room's `ids` hash that maps compact id `n` back to its id. Ids cannot hold
 * control characters (validation.ts, memberProblem), so a field starting with byte 1 is never an
 * id: both directions share one hash, and a new id is mapped both ways by one HSET. Ids mapped
 * before keep their reverse entry in the `names` hash, which readers and the trim job fall back to.
 */
export const reverseLua = defineLua(
  "presence.reverse",
  ["reverseField", "leftField", "idsOf"],
  `
local function reverseField(n)
  return '\\1' .. n
end
-- The field of ids holding the time (ms) of the id's latest leave, for the same reason never an id:
-- read by the heartbeat's HMGET, so a heartbeat sent before a leave and applied after it (queued)
-- does not bring the id back. One per id that has left; it goes when the id is forgotten.
local function leftField(id)
  return '\\2' .. id
end
-- The ids of these compact ids (false where none), their reverse fields in ids, and those of
-- them whose id came from the old names hash (one HMGET more, only while a room has such ids).
local function idsOf(ids, names, compact)
  local fields = {}
  for i, n in ipairs(compact) do fields[i] = reverseField(n) end
  local found   = redis.call('HMGET', ids, unpack(fields))
  local missing = {}
  for i = 1, #compact do
    if not found[i] then missing[#missing + 1] = i end
  end
  local fromNames = {}
  if #missing > 0 then
    for j, i in ipairs(missing) do fromNames[j] = compact[i] end
    for j, w in ipairs(redis.call('HMGET', names, unpack(fromNames))) do found[missing[j]] = w end
  end
  return found, fields, fromNames
end
`,
);

/**
 * Marks a batch of ids online now. Returns { online, new }.
 * `now`, `cutoff`, `timeout` and `ofDay` are ms (`ofDay`: since 00:00 UTC), the TTLs seconds.
 * `siteActive` is the day's site-wide HyperLogLog of ids.
 */
export const heartbeatScript = defineScript({
  name: "presence.heartbeat",
  write: true,
  keys: ["seen", "ids", "seq", "daily", "history", "due", "rooms", "siteActive"],
  args: ["now", "cutoff", "timeout", "ofDay", "dailyTtl", "historyTtl", "room", "...batch"],
  uses: [reverseLua],
  lua: `
local timeout         = tonumber(timeout)
local ofDay           = tonumber(ofDay)
-- Whole-batch commands (one HMGET, one ZADD, one BITFIELD) rather than a few
-- per id: Upstash bills each command a script runs, so 1 id and 1,000 cost the same.
-- The same HMGET reads each id's leave mark (leftField) after its compact id.
local fields          = {}
for i, id in ipairs(batch) do
  fields[i]          = id
  fields[#batch + i] = leftField(id)
end
local known           = redis.call('HMGET', ids, unpack(fields))
local fresh, assigned = {}, {}
for i, id in ipairs(batch) do
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
  -- one HSET maps each new id both ways (reverseField)
  local both = {}
  for j, id in ipairs(fresh) do
    assigned[id]     = first + j
    both[#both + 1]  = id
    both[#both + 1]  = first + j
    both[#both + 1]  = reverseField(first + j)
    both[#both + 1]  = id
  end
  redis.call('HSET', ids, unpack(both))
end
-- An id that left after this heartbeat's time (the heartbeat was queued, the leave applied first)
-- gets the last-seen it would have had in time order: at most the leave's, a timeout before it
-- (review 2). A heartbeat of the leave's own ms, applied after it, is taken as sent after it. Such
-- an id is not counted as this heartbeat's own below: whether it was online at this time is its
-- last-seen's to say.
local atNow, own = tonumber(now), 0
local scores, seenHere = {}, {}
for i, id in ipairs(batch) do
  local leftAt = tonumber(known[#batch + i])
  if leftAt and leftAt > atNow and leftAt - timeout - 1 < atNow then
    scores[i] = string.format('%.0f', leftAt - timeout - 1)
  else
    scores[i] = now
    if not seenHere[id] then seenHere[id], own = true, own + 1 end
  end
end
local scored, bits = { 'GT' }, {}
for i, id in ipairs(batch) do
  local n             = tonumber(known[i] or assigned[id])
  scored[#scored + 1] = scores[i]
  scored[#scored + 1] = n
  bits[#bits + 1]     = 'SET'
  bits[#bits + 1]     = 'u1'
  bits[#bits + 1]     = ${HEADER_BITS} + n
  bits[#bits + 1]     = 1
end
-- The same BITFIELD sets the AU bits, counts NU, reads PCU and swaps in the
-- time of this heartbeat (the header is described in keys.ts).
if #fresh > 0 then
  bits[#bits + 1] = 'INCRBY'; bits[#bits + 1] = 'u32'; bits[#bits + 1] = 0; bits[#bits + 1] = #fresh
end
bits[#bits + 1] = 'GET'; bits[#bits + 1] = 'u32'; bits[#bits + 1] = 32
bits[#bits + 1] = 'GET'; bits[#bits + 1] = 'u32'; bits[#bits + 1] = 64
bits[#bits + 1] = 'SET'; bits[#bits + 1] = 'u32'; bits[#bits + 1] = 96; bits[#bits + 1] = ofDay + 1
local header     = redis.call('BITFIELD', daily, unpack(bits))
local peak, peakAt, last = header[#header - 2], header[#header - 1], header[#header]
-- The trim job took the room for idle after a heartbeat of today (IDLED_FLAG, keys.ts; the SET
-- above cleared it): the room must be active again, also for a late heartbeat within a timeout
-- of the room's last one (review 4: online with no run visiting the room).
local idled = last >= ${IDLED_FLAG}
if idled then last = last - ${IDLED_FLAG} end
-- The day's first heartbeat in the room: the ids online at 00:00 may have gone before any
-- heartbeat or trim run of the day saw them (found in review 4). No last-seen is after midnight
-- yet, so those seen within the timeout before it are exactly the ids online at 00:00; counted
-- before this heartbeat's ZADD moves its own ids' last-seen to now. One command, once a day.
local atMidnight = 0
if last == 0 then
  local dayStart = tonumber(now) - ofDay
  atMidnight     = redis.call('ZCOUNT', seen, string.format('%.0f', dayStart - timeout), string.format('%.0f', dayStart))
end
-- GT: a slower request carrying an older time must not move last-seen backwards.
redis.call('ZADD', seen, unpack(scored))
-- Online at this heartbeat's own time: a late one (queued ingest applies it at its request's time)
-- must not count ids seen after it, which were never online with it (else PCU is overstated).
local late = last > ofDay + 1
local count
if late then
  -- ... but its own ids were online at its time whatever their later last-seen (ZADD GT kept it):
  -- counted apart, with the other ids seen before it (its ids' last-seen is at least its time).
  count = redis.call('ZCOUNT', seen, cutoff, '(' .. now) + own
else
  count = redis.call('ZCOUNT', seen, cutoff, now)
end
-- A late heartbeat (the room's latest heartbeat today is after it) also counts who is online at
-- that latest heartbeat: every last-seen is at or before it, so the ids seen within the timeout
-- before it were all online then, this heartbeat's ids included. Its own time alone missed ids
-- that heartbeated both before and after it (review 4: PCU understated). One command, late only.
local reached, reachedAt = count, ofDay
if late then
  local latest   = tonumber(now) - ofDay + last - 1
  local atLatest = redis.call('ZCOUNT', seen, string.format('%.0f', latest - timeout), string.format('%.0f', latest))
  -- More at the latest heartbeat than at this one's time: a new peak, reached between the two.
  -- Dated at this heartbeat's time or the recorded peak's, whichever is later: the others counted
  -- were most likely online together since the recorded peak. An estimate: last-seen alone cannot
  -- tell when an id seen after this heartbeat's time came online.
  if atLatest > count then reached, reachedAt = atLatest, math.max(ofDay, peakAt) end
end
-- The AU bits' old values say which ids are seen today for the first time in this room: only
-- those go to the site-wide HyperLogLog, so a heartbeat of ids already seen today costs nothing more.
local firstToday = {}
for i, id in ipairs(batch) do
  if header[i] == 0 then firstToday[#firstToday + 1] = id end
end
if #firstToday > 0 then redis.call('PFADD', siteActive, unpack(firstToday)) end
-- The online count only rises at a heartbeat, so checking the peak here makes PCU exact when
-- heartbeats come in time order; a peak already reached at 00:00 was reached first then. A late
-- heartbeat of as many ids as the recorded peak moves peakAt back to its time: they were all online
-- then. (Not by its count of other ids: a last-seen before it may be a leave's, moved back a timeout
-- from a leave after it, by an id that came online after it.)
local set = {}
if atMidnight > peak and atMidnight >= reached then
  set = { 'SET', 'u32', 32, atMidnight, 'SET', 'u32', 64, 0 }
elseif reached > peak then
  set = { 'SET', 'u32', 32, reached, 'SET', 'u32', 64, reachedAt }
elseif late and own >= peak and peak > 0 and ofDay < peakAt then
  set = { 'SET', 'u32', 64, ofDay }
end
-- A late (queued) heartbeat swapped its older time in: the field is the day's latest heartbeat,
-- which the next heartbeat measures the room's silence from (it took the room for newly active:
-- 9 commands, a list refresh out of turn; found in review 4). Written back in the same command as
-- the peak: one command for late heartbeats, whether or not they raise the peak.
if late then
  set[#set + 1] = 'SET'; set[#set + 1] = 'u32'; set[#set + 1] = 96; set[#set + 1] = last
end
if #set > 0 then redis.call('BITFIELD', daily, unpack(set)) end
-- No heartbeat yet today: the key is new (or only the trim job's midnight
-- peak is in it), and its deadline, the end of tomorrow, is fixed. The day's
-- HyperLogLog gets the same deadline: whoever creates it is the first
-- heartbeat of the day in some room (every id of that heartbeat is new today).
if last == 0 then
  redis.call('EXPIRE', daily, dailyTtl)
  redis.call('EXPIRE', siteActive, dailyTtl)
end
-- The room (re)becomes active: first heartbeat of the day, or none for a
-- whole timeout. The trim job drops a room only after a timeout and a margin
-- without heartbeats, so it is listed and scheduled again exactly when needed.
if last == 0 or idled or ofDay + 1 - last >= timeout then
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
});

/**
 * Takes an id offline by moving its last-seen just past the timeout (LT: never
 * later than it was). It stays mapped and seen, so AU, NU, PCU and history keep
 * their values and the id is still forgotten on time. Its leave time is kept
 * (leftField) for heartbeats sent before it and applied after it. Returns 1
 * when the id was moved.
 */
export const leaveScript = defineScript({
  name: "presence.leave",
  write: true,
  keys: ["seen", "ids"],
  args: ["id", "now", "offlineAt"],
  uses: [reverseLua],
  lua: `
local got = redis.call('HMGET', ids, id, leftField(id))
if not got[1] then return 0 end
-- The latest leave is kept: a leave applied late (queued) does not shorten the mark.
if not got[2] or tonumber(got[2]) < tonumber(now) then redis.call('HSET', ids, leftField(id), now) end
return redis.call('ZADD', seen, 'XX', 'LT', 'CH', offlineAt, got[1])
`,
});

/**
 * Removes a room from the registries (the current two and the two of earlier
 * versions) and deletes every key it can have. Returns how many keys and
 * registry entries went.
 */
export const deleteRoomScript = defineScript({
  name: "presence.deleteRoom",
  write: true,
  keys: ["...registries", "...roomKeys"],
  args: ["room"],
  lua: `
local gone = 0
for _, registry in ipairs(registries) do gone = gone + redis.call('ZREM', registry, room) end
return gone + redis.call('UNLINK', unpack(roomKeys))
`,
});

/**
 * Visits a chunk of rooms (the i-th entry of every key list belongs to the
 * i-th room). An active room (someone online, or a heartbeat within the
 * timeout plus a margin) gets its history point for the minute and, at the
 * hour, its history lifetime and listing refreshed. An idle room is scheduled
 * for its next visit: the end of its listing (two days after its last
 * activity, when its history and daily keys are gone) or the day its oldest id
 * passes the horizon; with no id left its last keys and registry entries go.
 * Every room forgets at most a budget of ids idle past the horizon.
 *
 * Times are ms (`minute`: minutes since the epoch, `slot`: minute of the day),
 * `hourly`/`carry`/`catchUp`/`rotate` are 1/0, the TTLs seconds.
 * Returns { rooms, online, forgotten, idle, dropped }.
 */
export const trimScript = defineScript({
  name: "presence.trim",
  write: true,
  keys: [
    "due",
    "rooms",
    "site",
    "...seenKeys",
    "...idsKeys",
    "...namesKeys",
    "...seqKeys",
    "...dailyKeys",
    "...historyKeys",
    "...yesterdayKeys",
    "...daysKeys",
  ],
  args: [
    "now",
    "cutoff",
    "idleAfter",
    "horizonCut",
    "horizon",
    "dayStart",
    "minute",
    "slot",
    "hourly",
    "carry",
    "catchUp",
    "rotate",
    "dailyTtl",
    "activeTtl",
    "idleTtl",
    "emptyAfter",
    "budget",
    "today",
    "todayBit",
    "yesterdayBit",
    "daysTtl",
    "carried",
    "sample",
    "...roomNames",
  ],
  uses: [reverseLua],
  lua: `
local now        = tonumber(now)
local idleAfter  = tonumber(idleAfter)
local horizon    = tonumber(horizon)
local dayStart   = tonumber(dayStart)
local minute     = tonumber(minute)
local hourly     = hourly == '1'
local carry      = carry == '1'
local catchUp    = catchUp == '1'
local rotate     = rotate == '1'
local emptyAfter = tonumber(emptyAfter)
local budget     = tonumber(budget)
local today      = tonumber(today)
-- Scores and times go to Redis as integers: Lua's own tostring keeps only 14 digits.
local function int(x) return string.format('%.0f', x) end
-- Copies a day's figures (its bitmap's header {NU, PCU, peakAt, last} and AU) into the room's
-- ring of past days; a day with nothing recorded writes nothing.
local function archive(days, daily, header, day, at)
  if header[1] == 0 and header[2] == 0 and header[4] % ${IDLED_FLAG} == 0 then return end
  local au = redis.call('BITCOUNT', daily, ${HEADER_BYTES}, -1)
  redis.call('BITFIELD', days, 'SET', 'u16', at, day, 'SET', 'u32', at + 16, header[2], 'SET', 'u32', at + 48, header[3],
    'SET', 'u32', at + 80, au, 'SET', 'u32', at + 112, header[1])
  redis.call('EXPIRE', days, daysTtl)
end
local total, forgotten, idleRooms, dropped = 0, 0, 0, 0
for r, room in ipairs(roomNames) do
  local seen, ids, names    = seenKeys[r], idsKeys[r], namesKeys[r]
  local seq, daily, history = seqKeys[r], dailyKeys[r], historyKeys[r]
  local count               = redis.call('ZCOUNT', seen, cutoff, '+inf')
  local active              = count > 0
  local activity, header, idledFlag
  if not active then
    -- Last activity: today's last heartbeat (a leave moves an id offline but is
    -- no heartbeat, and the heartbeat decides reactivation by this time) or the
    -- latest last-seen (a heartbeat before midnight).
    header     = redis.call('BITFIELD', daily, 'GET', 'u32', 0, 'GET', 'u32', 32, 'GET', 'u32', 64, 'GET', 'u32', 96)
    idledFlag  = header[4] >= ${IDLED_FLAG}
    header[4]  = header[4] % ${IDLED_FLAG}
    local last = header[4]
    local top  = redis.call('ZRANGE', seen, -1, -1, 'WITHSCORES')
    if last > 0 then activity = dayStart + last - 1 end
    if top[2] then activity = math.max(activity or 0, tonumber(top[2])) end
    active = activity ~= nil and now - activity < idleAfter
  end
  total = total + count
  -- Yesterday is over: a room visited in the window after midnight keeps its figures (rewritten by
  -- each run of the window, so heartbeats queued before midnight and applied in it are in). Idle
  -- rooms too: one that went idle between the last run before midnight and the first after had
  -- no record of the day at all (found in review 4).
  if carry then
    local y = redis.call('BITFIELD', yesterdayKeys[r], 'GET', 'u32', 0, 'GET', 'u32', 32, 'GET', 'u32', 64, 'GET', 'u32', 96)
    archive(daysKeys[r], yesterdayKeys[r], y, today - 1, yesterdayBit)
    -- Concurrency carried over midnight, before any heartbeat of the new day (which counts it
    -- itself): the ids online at 00:00 are those seen within the timeout before it, as no
    -- last-seen is after midnight yet. Counted at 00:00, not at this run: ids gone since were
    -- online then (found in review 4). Idle rooms too: all of them may have gone by this run.
    local since = dayStart - (now - tonumber(cutoff))
    local h     = header and { header[2], header[4] } or redis.call('BITFIELD', daily, 'GET', 'u32', 32, 'GET', 'u32', 96)
    -- an idle room's latest activity before the timeout ahead of midnight: nobody was online then
    if h[2] % ${IDLED_FLAG} == 0 and (count > 0 or (activity and activity >= since)) then
      local atMidnight = redis.call('ZCOUNT', seen, int(since), int(dayStart))
      if atMidnight > h[1] then
        redis.call('BITFIELD', daily, 'SET', 'u32', 32, atMidnight, 'SET', 'u32', 64, 0)
        redis.call('EXPIRE', daily, dailyTtl)
        -- an idle room archives today's figures below: with this peak
        if header then header[2], header[3] = atMidnight, 0 end
      end
    end
  elseif catchUp then
    -- Later in the first hour: yesterday's record, if the window's runs missed this room (a cron
    -- gap after midnight, or more rooms than its capped runs visit). Yesterday's bitmap lives to
    -- the end of today; the ring's slot tells whether it was kept (found in review 7).
    local held = redis.call('BITFIELD', daysKeys[r], 'GET', 'u16', yesterdayBit)
    if held[1] ~= (today - 1) % 65536 then
      local y = redis.call('BITFIELD', yesterdayKeys[r], 'GET', 'u32', 0, 'GET', 'u32', 32, 'GET', 'u32', 64, 'GET', 'u32', 96)
      archive(daysKeys[r], yesterdayKeys[r], y, today - 1, yesterdayBit)
    end
  end
  if active then
    -- One point per minute; a rerun of the minute overwrites its own slot.
    redis.call('ZADD', history, int(minute * ${HISTORY_SCALE} + math.min(count, ${HISTORY_SCALE - 1})), slot)
    if hourly then
      redis.call('EXPIRE', history, activeTtl)
      redis.call('ZADD', rooms, 'GT', int(now), room)
    end
    if rotate then redis.call('ZADD', due, 'XX', int(now), room) end
  end
  -- Forget ids idle past the horizon, boundedly. Their compact ids are not
  -- handed out again (seq only grows), so kept AU bitmaps stay exact.
  local full = false
  if budget > 0 then
    local old = redis.call('ZRANGEBYSCORE', seen, '-inf', '(' .. horizonCut, 'LIMIT', 0, budget)
    if #old > 0 then
      -- both directions go: the id's field and its reverse field (reverseField) in ids, or for an
      -- id mapped before the reverse map moved there, its entry in names; and its leave mark
      -- (leftField), in the same HDEL, so marks never outlive their ids
      local who, gone, fromNames = idsOf(ids, names, old)
      for i = 1, #old do
        if who[i] then
          gone[#gone + 1] = who[i]
          gone[#gone + 1] = leftField(who[i])
        end
      end
      if #fromNames > 0 then redis.call('HDEL', names, unpack(fromNames)) end
      redis.call('HDEL', ids, unpack(gone))
      redis.call('ZREM', seen, unpack(old))
      forgotten = forgotten + #old
      full      = #old == budget
      budget    = budget - #old
    end
  end
  if not active then
    idleRooms = idleRooms + 1
    -- Today's figures so far (again if the room comes back and goes idle again today).
    archive(daysKeys[r], daily, header, today, todayBit)
    -- History must stay readable a day after its last point, then go.
    redis.call('EXPIRE', history, idleTtl)
    -- Mark the day's bitmap (IDLED_FLAG, keys.ts) when it has a heartbeat (so it exists, with its
    -- deadline): a late heartbeat applied from now on, within a timeout of the last one, makes the
    -- room active again, so the runs visit it while its ids are online (found in review 4).
    if header[4] > 0 and not idledFlag then redis.call('BITFIELD', daily, 'SET', 'u1', 96, 1) end
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
      if redis.call('HLEN', ids) == 0 then redis.call('UNLINK', seq) end
      redis.call('ZREM', due, room)
      if not unlisted then redis.call('ZREM', rooms, room) end
      dropped = dropped + 1
    end
  end
end
-- The last chunk of a run records the site-wide online count (this chunk's and the
-- earlier chunks' rooms) and raises the day's highest sample.
if sample == '1' then
  local online = tonumber(carried) + total
  local ofDay  = now - dayStart
  local s      = redis.call('BITFIELD', site, 'GET', 'u32', 0, 'GET', 'u32', 96, 'SET', 'u32', 64, online, 'SET', 'u32', 96, ofDay + 1)
  if online > s[1] then redis.call('BITFIELD', site, 'SET', 'u32', 0, online, 'SET', 'u32', 32, ofDay) end
  if s[2] == 0 then redis.call('EXPIRE', site, dailyTtl) end
end
return { rooms = #roomNames, online = total, forgotten = forgotten, idle = idleRooms, dropped = dropped }
`,
});
