import { activityPageLua, resumeLua } from "../redis/pages.ts";
import { defineScript } from "../redis/script.ts";
import { reverseLua } from "./scripts.ts";
import { HEADER_BYTES, IDLED_FLAG } from "./keys.ts";

/** Presence's read scripts: room figures, member and room pages, history, the trim job's due rooms. */

/**
 * Returns { online, new, peak, peakAt (ms since 00:00 UTC), last (the day's latest heartbeat, ms since
 * 00:00 UTC + 1, 0: none), active } of the day `daily` is for.
 */
export const statsScript = defineScript({
  name: "presence.stats",
  write: false,
  keys: ["seen", "daily"],
  args: ["cutoff"],
  lua: `
local header = redis.call('BITFIELD', daily, 'GET', 'u32', 0, 'GET', 'u32', 32, 'GET', 'u32', 64, 'GET', 'u32', 96)
return {
  online = redis.call('ZCOUNT', seen, cutoff, '+inf'),
  new    = header[1],
  peak   = header[2],
  peakAt = header[3],
  last   = header[4] % ${IDLED_FLAG},
  active = redis.call('BITCOUNT', daily, ${HEADER_BYTES}, -1),
}
`,
});

/**
 * Online members in (lastSeen, compact id) order, from just after a cursor (`score` '' for the
 * first page). Returns { items = {{id, lastSeen, compactId}...}, more }.
 */
export const membersScript = defineScript({
  name: "presence.members",
  write: false,
  keys: ["seen", "ids", "names"],
  args: ["cutoff", "limit", "score", "member"],
  uses: [resumeLua, reverseLua],
  lua: `
local limit = tonumber(limit)
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
  local found = idsOf(ids, names, ints)
  for i = 1, #ints do items[i] = { found[i] or '', page[2 * i], ints[i] } end
end
return { items = items, more = more }
`,
});

/** History points scored `low`..`high` (see HISTORY_SCALE). Returns member, score, member, score... */
export const historyScript = defineScript({
  name: "presence.history",
  write: false,
  keys: ["history"],
  args: ["low", "high"],
  lua: `return redis.call('ZRANGEBYSCORE', history, low, high, 'WITHSCORES')`,
});

/**
 * Listed rooms, most recently active first, in passes that list every room active throughout at
 * least once (activityPageLua, src/redis/pages.ts); `score` '' for the first page.
 * Returns { rooms = {room, score, room, score...}, next = {score, room, high, low} or false }.
 */
export const roomsScript = defineScript({
  name: "presence.rooms",
  write: false,
  keys: ["rooms"],
  args: ["limit", "score", "room", "high", "low"],
  uses: [activityPageLua],
  lua: `
local flat, next = activityPage(rooms, tonumber(limit), score, room, high, low)
return { rooms = flat, next = next }
`,
});

/**
 * The rooms the trim job visits now: active rooms (scheduled at the time they
 * became active or were last visited) and idle rooms whose next visit is due
 * (the end of their listing or an id to forget), longest waiting first.
 */
export const dueRoomsScript = defineScript({
  name: "presence.dueRooms",
  write: false,
  keys: ["due"],
  args: ["now", "limit"],
  lua: `return redis.call('ZRANGEBYSCORE', due, '-inf', now, 'LIMIT', 0, tonumber(limit))`,
});

/**
 * One day's figures of a room: `mode` 'today' and 'live' read the day's bitmap (today also counts
 * who is online now), 'archive' the day's record in the ring of past days (`offset`: its bit;
 * a slot holding another day reads as zeros). Returns { peak, peakAt, active, new, online, last } (`last` as in
 * statsScript; 0 for a record).
 */
export const dayScript = defineScript({
  name: "presence.day",
  write: false,
  keys: ["seen", "daily", "days"],
  args: ["mode", "cutoff", "offset", "day"],
  lua: `
if mode == 'archive' then
  local r = redis.call('BITFIELD', days, 'GET', 'u16', offset, 'GET', 'u32', offset + 16, 'GET', 'u32', offset + 48,
    'GET', 'u32', offset + 80, 'GET', 'u32', offset + 112)
  if r[1] ~= tonumber(day) then return { peak = 0, peakAt = 0, active = 0, new = 0, online = 0, last = 0 } end
  return { peak = r[2], peakAt = r[3], active = r[4], new = r[5], online = 0, last = 0 }
end
local header = redis.call('BITFIELD', daily, 'GET', 'u32', 0, 'GET', 'u32', 32, 'GET', 'u32', 64, 'GET', 'u32', 96)
local online = 0
if mode == 'today' then online = redis.call('ZCOUNT', seen, cutoff, '+inf') end
return {
  peak   = header[2],
  peakAt = header[3],
  last   = header[4] % ${IDLED_FLAG},
  active = redis.call('BITCOUNT', daily, ${HEADER_BYTES}, -1),
  new    = header[1],
  online = online,
}
`,
});

/**
 * Site-wide figures: the trim job's latest online sample (yesterday's when today has none yet),
 * today's highest sample and the HyperLogLog count of ids seen today in any room.
 * Returns { online, at (ms since 00:00 UTC + 1, 0: none), yesterday, peak, peakAt, active }.
 */
export const totalScript = defineScript({
  name: "presence.total",
  write: false,
  keys: ["site", "siteYesterday", "siteActive"],
  args: [],
  lua: `
local t = redis.call('BITFIELD', site, 'GET', 'u32', 0, 'GET', 'u32', 32, 'GET', 'u32', 64, 'GET', 'u32', 96)
local online, at, yesterday = t[3], t[4], false
if at == 0 then
  -- Just after midnight, before the first run of the day: the last sample of yesterday.
  local y = redis.call('BITFIELD', siteYesterday, 'GET', 'u32', 64, 'GET', 'u32', 96)
  online, at, yesterday = y[1], y[2], true
end
return { online = online, at = at, yesterday = yesterday, peak = t[1], peakAt = t[2], active = redis.call('PFCOUNT', siteActive) }
`,
});
