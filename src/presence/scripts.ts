import { stampLua } from "../redis/pages.ts";
import { defineLua, defineScript } from "../redis/script.ts";
import { DAY } from "../time.ts";
import { HEADER_BITS, IDLED_FLAG } from "./keys.ts";
import { siteLua } from "./site-lua.ts";

/**
 * Presence's write scripts: heartbeat, leave, delete room; the trim job's visit
 * of a chunk of rooms is in trim-script.ts. None refuses: every input is checked
 * before the call (validate.ts). Reads are in read-scripts.ts.
 */

/**
 * The field of a room's `ids` hash that maps compact id `n` back to its id. Ids cannot hold
 * control characters (validation.ts, memberProblem), so a field starting with byte 1 is never an
 * id: both directions share one hash, and a new id is mapped both ways by one HSET. Ids mapped
 * before keep their reverse entry in the `names` hash, which readers and the trim job fall back to.
 */
export const reverseLua = defineLua(
  "presence.reverse",
  ["reverseField", "leftField", "LEAVE_MADE", "idsOf"],
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
-- Present (byte 3, never an id) while ids is a hash a leave made in a room that mapped no id: it
-- holds marks only and expires with them (its value: when, ms). The first heartbeat mapping an id
-- into it takes the expiry off (a mapping lives to the horizon) and this field with it.
local LEAVE_MADE = '\\3'
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
 * A leave mark of an id no heartbeat mapped is kept this long past the timeout: a queued heartbeat
 * is applied at most this long after its time (the consumer takes presence messages of yesterday
 * and today only, src/ingest/validate.ts), so then no heartbeat it could keep offline is queued.
 */
export const UNMAPPED_MARK_KEPT_MS = 2 * DAY;

/**
 * The trim schedule's (`_due`) entry for the mark of an unmapped id: byte 2 and JSON `[room, id]`,
 * never a room name (NAME_PATTERN), so the job tells it from the rooms it lists.
 */
export function markEntry(room: string, id: string): string {
  return `\u0002${JSON.stringify([room, id])}`;
}

/**
 * The trim schedule's (`_due`) entry that says `_online` holds a count (site-lua.ts): byte 3, never a
 * room name nor a mark (byte 2), scored 0, so every run while it is there lists it (first) and takes
 * the site-wide sample, with the check of `_online` against `_due`, also with no room due (a counted
 * room the previous release deleted is due no more). A heartbeat making a room active writes it in
 * the ZADD it makes anyway; the run whose sample finds nobody counted takes it out, so an idle
 * schedule lists nothing and the idle run costs what it did.
 */
export const SITE_ENTRY = "\u0003";

/** The room and id of a `_due` entry made by markEntry; undefined for a room. */
export function markOf(entry: string): [string, string] | undefined {
  return entry.startsWith("\u0002") ? (JSON.parse(entry.slice(1)) as [string, string]) : undefined;
}

/**
 * Marks a batch of ids online now. Returns { online, new }.
 * `now`, `cutoff`, `timeout` and `ofDay` are ms (`ofDay`: since 00:00 UTC), the TTLs seconds.
 * `answer`: '1' when the caller reads `online` (a synchronous heartbeat), '0' when it drops it (the
 * queued consumer): a late heartbeat pays one command for the answer only when it is read.
 * `siteActive` is the day's site-wide HyperLogLog of ids.
 */
export const heartbeatScript = defineScript({
  name: "presence.heartbeat",
  write: true,
  keys: ["seen", "ids", "seq", "daily", "history", "due", "rooms", "siteActive"],
  args: ["now", "cutoff", "timeout", "ofDay", "dailyTtl", "historyTtl", "room", "answer", "...batch", "...sentAt"],
  uses: [reverseLua, stampLua],
  lua: `
local timeout         = tonumber(timeout)
local ofDay           = tonumber(ofDay)
-- Whole-batch commands (one HMGET, one ZADD, one BITFIELD) rather than a few
-- per id: Upstash bills each command a script runs, so 1 id and 1,000 cost the same.
-- The same HMGET reads each id's leave mark (leftField) after its compact id, and LEAVE_MADE.
local fields          = {}
for i, id in ipairs(batch) do
  fields[i]          = id
  fields[#batch + i] = leftField(id)
end
fields[2 * #batch + 1] = LEAVE_MADE
local known           = redis.call('HMGET', ids, unpack(fields))
-- ids is a hash a leave made (its id's first heartbeat was still queued, maybe this one), with an
-- expiry for its marks: the ids mapped below are kept to the horizon. +2, once per such room.
if known[2 * #batch + 1] then
  redis.call('PERSIST', ids)
  redis.call('HDEL', ids, LEAVE_MADE)
end
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
-- The leave is compared with the id's own time (sentAt, the queued consumer's: its latest in the
-- window), not the call's: merged with another id's heartbeat sent after the leave, one sent before
-- it must not undo it (review 12). Synchronous calls send no sentAt: every id's time is now.
local atNow, own = tonumber(now), 0
local scores, seenHere = {}, {}
for i, id in ipairs(batch) do
  local leftAt = tonumber(known[#batch + i])
  local sent   = tonumber(sentAt[i]) or atNow
  if leftAt and leftAt > sent and leftAt - timeout - 1 < atNow then
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
-- A queued window (sentAt: its ids were sent at different times) is applied at its latest time:
-- ids that timed out between its earliest heartbeat and its end were online with that one, and a
-- peak then was missed (review 19). When no heartbeat of the room is recorded after that earliest
-- time (time order), the count at it: the ids last seen within the timeout before it, plus the
-- batch's ids sent at it. A lower bound, never above the truth: an id of the batch sent later whose
-- last-seen a leave moved back into that range may have been offline then, so it is left out (as
-- are the batch's later ids that were online then: their earlier last-seen is gone). +1 command,
-- such windows only (a synchronous call sends no sentAt).
if #sentAt > 0 then
  local first = atNow
  for i = 1, #sentAt do first = math.min(first, tonumber(sentAt[i])) end
  local firstOfDay = first - (atNow - ofDay)
  if first < atNow and firstOfDay >= 0 and last <= firstOfDay + 1 then
    local extra, done = 0, {}
    for i, id in ipairs(batch) do
      local sent = tonumber(sentAt[i])
      if not done[id] then
        done[id] = true
        local moved = tonumber(scores[i])
        if seenHere[id] and sent == first then
          extra = extra + 1
        elseif not seenHere[id] and sent > first and moved >= first - timeout and moved <= first then
          extra = extra - 1
        end
      end
    end
    local atFirst = redis.call('ZCOUNT', seen, string.format('%.0f', first - timeout), string.format('%.0f', first)) + extra
    -- reached by then: first reached then (not at the window's end)
    if atFirst >= reached and atFirst > 0 then reached, reachedAt = atFirst, firstOfDay end
  end
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
  -- with the site entry (SITE_ENTRY, byte 3, at 0): the runs sample _online until it is empty again
  redis.call('ZADD', due, now, room, 0, '\\3')
  stamp(rooms, room, now)
  -- History gets its lifetime now, before the trim job writes a point: a
  -- placeholder (score 0, below every point) makes sure the key exists. 26 h
  -- is the longest lifetime history ever gets, so this never shortens it.
  redis.call('ZADD', history, 'NX', 0, '-')
  redis.call('EXPIRE', history, historyTtl)
end
-- The answer: the ids online in the room right after this heartbeat, as a read at its time counts
-- them (every last-seen within the timeout before it, or after it). A late one's own-time count
-- above left out the ids seen after its time, which a Worker whose clock is behind (by up to the
-- minute the service allows) answered as gone though they are online (review 24). +1 command for
-- a late heartbeat whose answer is read.
local online = count
if late and answer == '1' then online = redis.call('ZCOUNT', seen, cutoff, '+inf') end
return { online = online, new = #fresh }
`,
});

/**
 * Takes an id offline by moving its last-seen just past the timeout (LT: never
 * later than it was). It stays mapped and seen, so AU, NU, PCU and history keep
 * their values and the id is still forgotten on time. Its leave time is kept
 * (leftField) for heartbeats sent before it and applied after it, also for an id
 * not mapped yet (its first heartbeat still queued), also in a room that maps no id
 * (in an `ids` hash with an expiry, LEAVE_MADE). Returns 1 when the id was moved.
 */
export const leaveScript = defineScript({
  name: "presence.leave",
  write: true,
  keys: ["seen", "ids", "due"],
  args: ["id", "now", "offlineAt", "entry", "dropAt", "keep"],
  uses: [reverseLua],
  lua: `
local got  = redis.call('HMGET', ids, id, leftField(id), LEAVE_MADE)
-- ids was made by a leave (LEAVE_MADE: when it expires), or is made now: a room that maps no id at
-- all (it does not exist, or its very first heartbeat is still queued: maybe this id's). The hash
-- gets an expiry, when its latest mark may be dropped: no key without one for any name an ingest
-- key invents (review 5). One EXISTS, only for an id neither mapped nor marked in a room not so made.
local made = tonumber(got[3])
if not got[1] and not got[2] and not made and redis.call('EXISTS', ids) == 0 then made = 0 end
-- The latest leave is kept: a leave applied late (queued) does not shorten the mark.
local newer = not got[2] or tonumber(got[2]) < tonumber(now)
if newer and made and tonumber(dropAt) > made then
  redis.call('HSET', ids, leftField(id), now, LEAVE_MADE, dropAt)
elseif newer then
  redis.call('HSET', ids, leftField(id), now)
end
-- The expiry runs on Redis's clock, so Redis decides whether it moves: GT, never shortened, also
-- when a Worker's clock ahead wrote a later LEAVE_MADE (review 12). A new hash has no expiry yet
-- (GT would take none for longer).
if newer and made == 0 then
  redis.call('PEXPIRE', ids, keep)
elseif newer and made then
  redis.call('PEXPIRE', ids, keep, 'GT')
end
if not got[1] then
  -- An id not mapped yet: its first heartbeat may still be queued (review 11: it joined and left
  -- within the queue's lag). The mark is written all the same, so that heartbeat, applied after
  -- this leave, reads it in its HMGET and keeps the id offline, as a known id's. Nothing else is
  -- moved (the id has no last-seen). Nothing forgets an id that is never mapped: an entry in the
  -- trim job's schedule (markEntry, never a room name) has it drop the mark once no queued
  -- heartbeat can need it; the runs list it with the due rooms, no command more for them.
  if newer then redis.call('ZADD', due, 'GT', dropAt, entry) end
  return 0
end
return redis.call('ZADD', seen, 'XX', 'LT', 'CH', offlineAt, got[1])
`,
});

/**
 * Removes a room from the registries (the current two and the two of earlier
 * versions) and deletes every key it can have. A room counted in the site-wide
 * online figure (`counted`, siteLua) leaves it, with a new sample at the delete's
 * time (`ofDay`, ms since 00:00 UTC): no trim run visits the room again, and with
 * no other room due none would sample it. The day's highest stays: a delete only takes a count out.
 * When nobody is counted (any more) the site entry (SITE_ENTRY) leaves `_due` in the ZREM of the room.
 * The room's leave marks of unmapped ids keep their entries in `_due` (markEntry): finding them
 * would read the whole `ids` hash; the run they come due in drops each at O(1) (dropMarksScript).
 * Returns how many keys and registry entries went (the site entry too).
 */
export const deleteRoomScript = defineScript({
  name: "presence.deleteRoom",
  write: true,
  keys: ["counted", "site", "due", "...registries", "...roomKeys"],
  args: ["room", "ofDay", "dailyTtl"],
  uses: [siteLua],
  lua: `
local got   = redis.call('HMGET', counted, room, SUM_FIELD)
local sum   = got[1] and (tonumber(got[2]) or 0) - tonumber(got[1])
-- Nobody counted after this room (or before it: no _online, its sum absent): the runs need not
-- sample, the site entry goes in the ZREM of the room's. A run finding a count puts it back.
local none  = not got[2] or (got[1] and sum <= 0)
local gone  = none and redis.call('ZREM', due, room, '\\3') or redis.call('ZREM', due, room)
for _, registry in ipairs(registries) do gone = gone + redis.call('ZREM', registry, room) end
if got[1] then
  if sum <= 0 then
    redis.call('DEL', counted)
  else
    redis.call('HSET', counted, SUM_FIELD, sum)
    redis.call('HDEL', counted, room)
  end
  recordSample(site, math.max(sum, 0), 0, tonumber(ofDay), dailyTtl)
end
return gone + redis.call('UNLINK', unpack(roomKeys))
`,
});
