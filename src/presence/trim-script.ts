import { stampLua } from "../redis/pages.ts";
import { defineScript } from "../redis/script.ts";
import { HEADER_BYTES, HISTORY_SCALE, IDLED_FLAG } from "./keys.ts";
import { reverseLua } from "./scripts.ts";
import { siteLua } from "./site-lua.ts";

// The trim job's script (./jobs.ts), apart from the request scripts of ./scripts.ts.

/** Fields of `_online` one trim run checks against `_due` at most (HSCAN's COUNT), when it checks. */
export const RECONCILE_FIELDS = 1000;

/**
 * Visits a chunk of rooms (the i-th entry of every key list belongs to the
 * i-th room). An active room (someone online, or a heartbeat within the
 * timeout plus a margin) gets its history point for the minute and, at the
 * hour, its history lifetime and listing refreshed. An idle room is scheduled
 * for its next visit: the end of its listing (two days after its last
 * activity, when its history and daily keys are gone) or the day its oldest id
 * passes the horizon; with no id left its last keys and registry entries go.
 * Every room forgets at most a budget of ids idle past the horizon. Each room's online count
 * goes into `counted` (siteLua) when it changed since the room's previous visit; with `sample` (the
 * run's last chunk) their sum is the site-wide sample, also for rooms this run did not visit: an
 * estimate until those are visited again (people who left them for rooms visited count twice).
 * The day's highest takes only what the run counted itself, at once (`visited`: the ids counted by
 * the run's earlier chunks), never above the truth (review 15); an uncapped run's is its sample.
 *
 * A room counted in `counted` but not in `due` is visited by no run again (deleted by an earlier
 * release, which left its count: review 15), so the last chunk of an uncapped run whose sum is above
 * what it counted (it visits every counted room), or of a capped run at the hour (which cannot
 * tell), checks a slice of the hash (HSCAN from the cursor kept in field `_scan`, RECONCILE_FIELDS
 * fields) against `due`: such rooms leave the sum (`stale`). Rooms of the chunk are left out, their
 * counts moved above.
 *
 * The last chunk runs also when the run lists no room but the site entry (SITE_ENTRY, `siteDue`: 1
 * when the run listed it), with no room: the sample and the check above, so a count no room's visit
 * would correct leaves `_online` and `_total` in one run whether or not any room is due.
 *
 * Times are ms (`minute`: minutes since the epoch, `slot`: minute of the day),
 * `hourly`/`carry`/`catchUp`/`rotate` are 1/0, the TTLs seconds.
 * Returns { rooms, online (this chunk's rooms), counted (the site-wide sum), forgotten, idle, dropped, stale }.
 */
export const trimScript = defineScript({
  name: "presence.trim",
  write: true,
  keys: [
    "due",
    "rooms",
    "counted",
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
    "sample",
    "visited",
    "siteDue",
    "...roomNames",
  ],
  uses: [reverseLua, siteLua, stampLua],
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
-- Ids carried over midnight go into today's peak, counted at 00:00, not at this run: ids gone since
-- were online then (found in review 4). Before any heartbeat of the day no last-seen is after
-- midnight, so those seen within the timeout before it are exactly the ids online at 00:00.
local since = dayStart - (now - tonumber(cutoff))
local function carryPeak(seen, daily, peak, header)
  local atMidnight = redis.call('ZCOUNT', seen, int(since), int(dayStart))
  if atMidnight > peak then
    redis.call('BITFIELD', daily, 'SET', 'u32', 32, atMidnight, 'SET', 'u32', 64, 0)
    redis.call('EXPIRE', daily, dailyTtl)
    -- an idle room archives today's figures below: with this peak
    if header then header[2], header[3] = atMidnight, 0 end
  end
end
local total, forgotten, idleRooms, dropped = 0, 0, 0, 0
-- The chunk's rooms' counts at their previous visits, the site-wide sum and the check's cursor, one
-- HMGET a chunk (no command per room): a count that changed goes in below, the sum moved by the difference.
local fields, mine          = { SUM_FIELD, '_scan' }, {}
for r, room in ipairs(roomNames) do fields[r + 2], mine[room] = room, true end
local before                = redis.call('HMGET', counted, unpack(fields))
local sum, recount, uncount = tonumber(before[1]) or 0, {}, {}
for r, room in ipairs(roomNames) do
  local seen, ids, names    = seenKeys[r], idsKeys[r], namesKeys[r]
  local seq, daily, history = seqKeys[r], dailyKeys[r], historyKeys[r]
  local count               = redis.call('ZCOUNT', seen, cutoff, '+inf')
  local active              = count > 0
  local was                 = tonumber(before[r + 2]) or 0
  local activity, header, idledFlag
  if count ~= was then
    sum = sum + count - was
    if count > 0 then
      recount[#recount + 1] = room
      recount[#recount + 1] = count
    else
      uncount[#uncount + 1] = room
    end
  end
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
    -- The record is current: the idle mark says so to the catch-up runs below until a heartbeat
    -- of yesterday (queued) clears it. +1 command, once (a bitmap with a heartbeat exists).
    if y[4] > 0 and y[4] < ${IDLED_FLAG} then redis.call('BITFIELD', yesterdayKeys[r], 'SET', 'u1', 96, 1) end
    -- Concurrency carried over midnight, before any heartbeat of the new day (which counts it
    -- itself). Idle rooms too: all of them may have gone by this run.
    local h = header and { header[2], header[4] } or redis.call('BITFIELD', daily, 'GET', 'u32', 32, 'GET', 'u32', 96)
    -- an idle room's latest activity before the timeout ahead of midnight: nobody was online then
    if h[2] % ${IDLED_FLAG} == 0 and (count > 0 or (activity and activity >= since)) then
      carryPeak(seen, daily, h[1], header)
    end
  elseif catchUp then
    -- Later in the first hour: yesterday's record, if the window's runs missed this room (a cron
    -- gap after midnight, or more rooms than its capped runs visit; found in review 7) or the
    -- record in the ring is older than the day's last heartbeat (review 11: a room that went idle
    -- earlier yesterday, came back and was active over midnight kept its first session only).
    -- Yesterday's idle mark (IDLED_FLAG) tells: set when a record was written after the day's
    -- last heartbeat (a run taking the room for idle, the window's runs, this branch), cleared by
    -- any heartbeat of the day. Yesterday's bitmap lives to the end of today.
    local y = redis.call('BITFIELD', yesterdayKeys[r], 'GET', 'u32', 0, 'GET', 'u32', 32, 'GET', 'u32', 64, 'GET', 'u32', 96)
    if y[4] > 0 and y[4] < ${IDLED_FLAG} then
      archive(daysKeys[r], yesterdayKeys[r], y, today - 1, yesterdayBit)
      redis.call('BITFIELD', yesterdayKeys[r], 'SET', 'u1', 96, 1)
    elseif y[4] == 0 and y[2] > 0 then
      -- no heartbeat, only the peak carried over its midnight: frozen since its first hour, no
      -- mark to set (the key may be all there is); kept unless the ring's slot holds the day
      local held = redis.call('BITFIELD', daysKeys[r], 'GET', 'u16', yesterdayBit)
      if held[1] ~= (today - 1) % 65536 then archive(daysKeys[r], yesterdayKeys[r], y, today - 1, yesterdayBit) end
    end
    -- Ids online at 00:00, while today has no heartbeat: as in the window, which a cron gap can
    -- miss (review 11: a room whose session ended just before midnight read a peak of 0). A room
    -- with anyone online now heartbeated today (this is past a timeout after midnight), and that
    -- heartbeat counted them: only rooms nobody is online in can need it, their header is read.
    if header and header[4] == 0 and activity and activity >= since then carryPeak(seen, daily, header[2], header) end
  end
  if active then
    -- One point per minute; a rerun of the minute overwrites its own slot.
    redis.call('ZADD', history, int(minute * ${HISTORY_SCALE} + math.min(count, ${HISTORY_SCALE - 1})), slot)
    if hourly then
      redis.call('EXPIRE', history, activeTtl)
      stamp(rooms, room, int(now))
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
-- A counted room not due leaves the sum (see the doc comment); this chunk's are counted above.
local atOnce, stale = tonumber(visited) + total, 0
if sample == '1' and sum > atOnce and (hourly or not rotate) then
  local page, names, counts = redis.call('HSCAN', counted, before[2] or 0, 'COUNT', ${RECONCILE_FIELDS}), {}, {}
  for i = 1, #page[2], 2 do
    local room = page[2][i]
    -- '_': not a room's field
    if room:byte() ~= 95 and not mine[room] then
      names[#names + 1] = room
      counts[room]      = tonumber(page[2][i + 1])
    end
  end
  local listed = #names > 0 and redis.call('ZMSCORE', due, unpack(names)) or {}
  for i, room in ipairs(names) do
    if not listed[i] then
      sum, stale            = sum - counts[room], stale + 1
      uncount[#uncount + 1] = room
    end
  end
  if page[1] ~= (before[2] or '0') then
    recount[#recount + 1] = '_scan'
    recount[#recount + 1] = page[1]
  end
end
-- The counts that changed, with the sum, so the sum is always the hash's. A room counting 0 leaves
-- it (idle, or about to be: its last count must not stay in the sum once no run visits it); with
-- nobody counted anywhere the hash would hold the sum alone, and goes.
if sum <= 0 then
  if #uncount > 0 then redis.call('DEL', counted) end
elseif #recount > 0 or #uncount > 0 then
  redis.call('HSET', counted, SUM_FIELD, sum, unpack(recount))
  if #uncount > 0 then redis.call('HDEL', counted, unpack(uncount)) end
end
-- The last chunk: the site-wide sample; the day's highest by what the run counted (doc comment).
-- The site entry (SITE_ENTRY, scripts.ts) is in due exactly while someone is counted: out with
-- the last count (+1, once a quiet spell), in again with a count it was not there for (+1: a room
-- made active by an earlier release, or by a heartbeat after this run's list).
if sample == '1' then
  recordSample(site, math.max(sum, 0), math.min(sum, atOnce), now - dayStart, dailyTtl)
  if sum <= 0 and siteDue == '1' then
    redis.call('ZREM', due, '\\3')
  elseif sum > 0 and siteDue ~= '1' then
    redis.call('ZADD', due, 0, '\\3')
  end
end
return { rooms = #roomNames, online = total, counted = math.max(sum, 0), forgotten = forgotten, idle = idleRooms, dropped = dropped, stale = stale }
`,
});

/**
 * Drops leave marks of ids a room never mapped (presence.leave writes them for an id whose first
 * heartbeat may still be queued, with an entry in `_due` at the time to drop it), once no queued
 * heartbeat can need them: nothing else forgets them, as only mapped ids are forgotten. The i-th
 * entry (markEntry) is the i-th id's, in the i-th ids key. A mark whose id got mapped since stays:
 * it is that id's now, dropped when the id is forgotten. A mark written again later (a later leave
 * moved the entry too; a shorter timeout since) waits for its own time. A mark that was the last
 * field of `ids` takes the room's `seq` with it (one EXISTS per mark dropped, +1 UNLINK then): the
 * room maps no id, so no compact id can be handed out twice, and a room the trim job dropped while
 * the mark kept `ids` non-empty kept its counter, which then had no TTL and nothing to delete it
 * (found 2026-11-27). The i-th seq key is the i-th room's. Returns how many went.
 */
export const dropMarksScript = defineScript({
  name: "presence.dropMarks",
  write: true,
  keys: ["due", "...idsKeys", "...seqKeys"],
  args: ["cut", "keep", "...entries"],
  uses: [reverseLua],
  lua: `
local n, cut = #entries / 2, tonumber(cut)
local dropped, done = 0, {}
for i = 1, n do
  local id  = entries[n + i]
  local got = redis.call('HMGET', idsKeys[i], id, leftField(id))
  local at  = tonumber(got[2])
  if not got[1] and at and at > cut then
    redis.call('ZADD', due, string.format('%.0f', at + tonumber(keep)), entries[i])
  else
    if not got[1] and at and redis.call('HDEL', idsKeys[i], leftField(id)) == 1 then
      dropped = dropped + 1
      -- the room's last field: it maps no id (also none by an earlier version), its counter goes
      if redis.call('EXISTS', idsKeys[i]) == 0 then redis.call('UNLINK', seqKeys[i]) end
    end
    done[#done + 1] = entries[i]
  end
end
if #done > 0 then redis.call('ZREM', due, unpack(done)) end
return dropped
`,
});
