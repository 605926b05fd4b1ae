import type { Ctx } from "../context.ts";
import { dayKeys } from "../presence/keys.ts";
import { DAY, HOUR, MINUTE, dayStart, hourIndex } from "../time.ts";
import { streamKeys } from "../trending/keys.ts";
import { MAX_PENDING } from "./deliver.ts";
import { hookKeys, registryKeys } from "./keys.ts";
import { defineScript } from "../redis/script.ts";
import { marksLua } from "./marks.ts";
import { eventIdLua, queueLua } from "./scripts.ts";
import type { StoredWebhook } from "./webhooks.ts";

/**
 * Detection of the events the webhooks feature finds itself, in jobs, bounded by the subscriptions:
 * only the streams and rooms some webhook names in its filter are read (at most MAX_WEBHOOKS).
 * Other features' keys are read through their keys.ts only.
 */

export interface Detected {
  /** Webhooks compared (not skipped as already compared for this hour). */
  checked: number;
  /** Events found, queued (not already waiting), and not queued because the queue was full. */
  events: number;
  queued: number;
  full: number;
}

const NONE: Detected = { checked: 0, events: 0, queued: 0, full: 0 };

// The detection scripts (at the end of this module) live beside their only caller.

/**
 * `trending.entered` / `trending.left`: the top N of the last finished hour against the hour
 * before, per subscribed webhook, once per hour (run after compaction, which has trimmed both
 * buckets to their kept members; the top N are always among them).
 */
export async function detectTrending(ctx: Ctx, hooks: StoredWebhook[]): Promise<Detected> {
  const subs = hooks.flatMap((h) => {
    const wants = (h.events.includes("trending.entered") ? "e" : "") + (h.events.includes("trending.left") ? "l" : "");
    return wants && h.filter && "stream" in h.filter ? [{ hook: h, stream: h.filter.stream, wants }] : [];
  });
  if (subs.length === 0) return NONE;
  const hour = hourIndex(ctx.now) - 1;
  const reg = registryKeys(ctx.prefix);
  const { value } = await detectTrendingScript.run<Detected>(
    ctx.redis,
    {
      hooks: reg.hooks,
      pending: reg.pending,
      deliveries: reg.deliveries,
      marks: subs.map((s) => hookKeys(ctx.prefix, s.hook.name).marks),
      current: subs.map((s) => streamKeys(ctx.prefix, s.stream).bucket(hour)),
      previous: subs.map((s) => streamKeys(ctx.prefix, s.stream).bucket(hour - 1)),
    },
    {
      now: ctx.now,
      at: ctx.now,
      hour,
      hourStart: hour * HOUR,
      maxPending: MAX_PENDING,
      webhooks: subs.map((s) => s.hook.name),
      since: subs.map((s) => s.hook.createdAt),
      streams: subs.map((s) => s.stream),
      sizes: subs.map((s) => s.hook.n),
      wants: subs.map((s) => s.wants),
    },
  );
  return value;
}

/**
 * Runs this long after UTC midnight also finish the day that ended (`presence.peak`): a peak
 * reached after that day's last run (23:59:xx) is told by the first run of the new day. Five
 * minutes, as the presence trim job's rollover after midnight (one presence timeout, 300 s by
 * default), so a late or missed cron run still finds it; the day's record is final at midnight.
 */
export const PEAK_ROLLOVER_MS = 5 * MINUTE;

/**
 * `presence.peak`: today's PCU of each subscribed room above what its webhook was told today; in
 * the runs of the first PEAK_ROLLOVER_MS after midnight, first yesterday's above what it was told
 * yesterday (for webhooks that existed before midnight), so no peak of a day goes untold.
 */
export async function detectPeaks(ctx: Ctx, hooks: StoredWebhook[]): Promise<Detected> {
  const subs = hooks.flatMap((h) =>
    h.events.includes("presence.peak") && h.filter && "room" in h.filter ? [{ hook: h, room: h.filter.room }] : [],
  );
  if (subs.length === 0) return NONE;
  const reg = registryKeys(ctx.prefix);
  const start = dayStart(ctx.now);
  // only right after midnight: an ordinary run declares and reads no record of yesterday
  const rollover = ctx.now - start < PEAK_ROLLOVER_MS;
  const { value } = await detectPeaksScript.run<Detected>(
    ctx.redis,
    {
      hooks: reg.hooks,
      pending: reg.pending,
      deliveries: reg.deliveries,
      marks: subs.map((s) => hookKeys(ctx.prefix, s.hook.name).marks),
      dailies: subs.map((s) => dayKeys(ctx.prefix, s.room, ctx.now).daily),
      yesterdays: rollover ? subs.map((s) => dayKeys(ctx.prefix, s.room, start - DAY).daily) : [],
    },
    {
      now: ctx.now,
      at: ctx.now,
      day: new Date(start).toISOString().slice(0, 10),
      dayStart: start,
      yesterday: new Date(start - DAY).toISOString().slice(0, 10),
      yesterdayStart: start - DAY,
      maxPending: MAX_PENDING,
      webhooks: subs.map((s) => s.hook.name),
      since: subs.map((s) => s.hook.createdAt),
      rooms: subs.map((s) => s.room),
      sizes: subs.map((s) => s.hook.n),
    },
  );
  return value;
}

/**
 * `trending.entered` / `trending.left` for each subscribed webhook (parallel lists: its name,
 * stream, top-N size, wanted types `e`/`l`, marks, and the buckets of the last two finished
 * hours): the members in this hour's top N and not in the top N the webhook was last told
 * (`trendingTold` in its marks; the previous hour's for a webhook never compared), and the
 * reverse. A webhook whose mark already holds `hour` was compared for it (an overlapping or
 * repeated run): skipped; so is one whose marks are not of it as this run read it (`of`, ./marks.ts:
 * deleted, or created again or refiltered, since).
 */
export const detectTrendingScript = defineScript({
  name: "webhooks.detectTrending",
  write: true,
  keys: ["hooks", "pending", "deliveries", "...marks", "...current", "...previous"],
  args: [
    "now",
    "at",
    "hour",
    "hourStart",
    "maxPending",
    "...webhooks",
    "...since",
    "...streams",
    "...sizes",
    "...wants",
  ],
  uses: [queueLua, eventIdLua, marksLua],
  lua: `
-- The hour's top n ranked as every trending read ranks it: count, then member in byte order.
-- ZREVRANGEBYSCORE orders equal counts the other way, so a tie at the n-th place (the n+1-th
-- read has its count) takes the first members in byte order of that count (ZRANGEBYSCORE
-- orders ties ascending; bounded by n, however many share the count): one command more, then.
local function top(key, n)
  local flat = redis.call('ZREVRANGEBYSCORE', key, '+inf', '(0', 'WITHSCORES', 'LIMIT', 0, n + 1)
  local rows = {}
  for i = 1, #flat, 2 do rows[#rows + 1] = {member = flat[i], count = tonumber(flat[i + 1])} end
  if #rows > n then
    local last = rows[n].count
    local kept = {}
    for j = 1, n do
      if rows[j].count > last then kept[#kept + 1] = rows[j] end
    end
    if rows[n + 1].count == last then
      for _, m in ipairs(redis.call('ZRANGEBYSCORE', key, flat[2 * n], flat[2 * n], 'LIMIT', 0, n - #kept)) do
        kept[#kept + 1] = {member = m, count = last}
      end
    else
      for j = #kept + 1, n do kept[j] = rows[j] end
    end
    rows = kept
  end
  table.sort(rows, function(x, y)
    if x.count ~= y.count then return x.count > y.count end
    return x.member < y.member
  end)
  local list, rankOf = {}, {}
  for i, r in ipairs(rows) do
    list[i] = {member = r.member, rank = i, count = r.count}
    rankOf[r.member] = i
  end
  return list, rankOf
end
-- Members as JSON with every digit of their counts: cjson writes 14 significant digits, so a
-- fractional count (0.1 + 0.2) read otherwise than the hour's top read answers it (review 12; the
-- class review 10 fixed for threshold). %.17g round-trips a double; cjson.decode reads it exactly.
local function num(x) return string.format('%.17g', x) end
local function rowsJson(rows)
  local parts = {}
  for i, m in ipairs(rows) do
    if m.previousRank then
      parts[i] = '{"member":' .. cjson.encode(m.member) .. ',"previousRank":' .. m.previousRank .. ',"previousCount":' .. num(m.previousCount) .. '}'
    else
      parts[i] = '{"member":' .. cjson.encode(m.member) .. ',"rank":' .. m.rank .. ',"count":' .. num(m.count) .. '}'
    end
  end
  return '[' .. table.concat(parts, ',') .. ']'
end
local room = tonumber(maxPending) - redis.call('ZCARD', pending)
local out = {checked = 0, events = 0, queued = 0, full = 0}
for i, webhook in ipairs(webhooks) do
  local got  = redis.call('HMGET', marks[i], 'trending', 'trendingTold', 'of')
  -- a blank field (as the PUT that made the marks this webhook's left them): never compared
  local mark = tonumber(got[1]) or -1
  if mark < tonumber(hour) and marksAreOf(hooks, webhook, marks[i], got[3], marksOwner(since[i], sizes[i], 'stream', streams[i])) then
    local n = tonumber(sizes[i])
    local now_, inNow = top(current[i], n)
    -- compared with the top N this webhook was last told (what a receiver following the events
    -- holds), so a missed run or a late event into an hour already compared cannot leave it
    -- behind; the hour before only for a webhook never compared yet
    local before, inBefore
    if got[2] and got[2] ~= '' then
      before, inBefore = cjson.decode(got[2]), {}
      for _, m in ipairs(before) do inBefore[m.member] = m.rank end
    else
      before, inBefore = top(previous[i], n)
    end
    local changes = {['trending.entered'] = {}, ['trending.left'] = {}}
    for _, m in ipairs(now_) do
      if not inBefore[m.member] then table.insert(changes['trending.entered'], m) end
    end
    for _, m in ipairs(before) do
      if not inNow[m.member] then table.insert(changes['trending.left'], {member = m.member, previousRank = m.rank, previousCount = m.count}) end
    end
    local refused = false
    for _, t in ipairs({{'trending.entered', 'e'}, {'trending.left', 'l'}}) do
      local members = changes[t[1]]
      if #members > 0 and string.find(wants[i], t[2], 1, true) then
        local id = eventIdOf(t[1], streams[i], n .. '\\n' .. hour)
        local data = '{"stream":' .. cjson.encode(streams[i]) .. ',"hour":' .. num(tonumber(hourStart)) .. ',"n":' .. n .. ',"members":' .. rowsJson(members) .. '}'
        local body = '{"id":' .. cjson.encode(id) .. ',"type":' .. cjson.encode(t[1]) .. ',"at":' .. num(tonumber(at)) .. ',"data":' .. data .. '}'
        out.events = out.events + 1
        if room <= 0 then
          out.full = out.full + 1
          refused = true
        elseif queueDelivery(pending, deliveries, webhook, tonumber(since[i]), id, t[1], body, now, 0) == 1 then
          out.queued = out.queued + 1
          room = room - 1
        end
      end
    end
    -- an event refused as full is not told: the hour stays unmarked, so a later run of it queues it
    -- (the one queued now has the same id, which queueDelivery does not queue twice)
    if not refused then redis.call('HSET', marks[i], 'trending', hour, 'trendingTold', rowsJson(now_)) end
    out.checked = out.checked + 1
  end
end
return out
`,
});

/**
 * `presence.peak` for each subscribed webhook (parallel lists: name, room, marks, today's daily
 * presence key): today's PCU, read from the daily key's header (u32 at bit 32, and the ms after
 * midnight it was reached at bit 64, the layout src/presence documents), above the peak this
 * webhook was last told about today. The mark (`<day>:<peak>`) holds the day last told.
 * `yesterdays` (only in the runs right after midnight, else empty): the day that ended is
 * finished first, above what the mark says was told of it, unless the mark is already today's
 * (finished by an earlier run) or the webhook was created after midnight. A webhook whose marks are
 * not of it as this run read it (`of`, ./marks.ts) is skipped.
 */
export const detectPeaksScript = defineScript({
  name: "webhooks.detectPeaks",
  write: true,
  keys: ["hooks", "pending", "deliveries", "...marks", "...dailies", "...yesterdays"],
  args: [
    "now",
    "at",
    "day",
    "dayStart",
    "yesterday",
    "yesterdayStart",
    "maxPending",
    "...webhooks",
    "...since",
    "...rooms",
    "...sizes",
  ],
  uses: [queueLua, eventIdLua, marksLua],
  lua: `
local room = tonumber(maxPending) - redis.call('ZCARD', pending)
local out = {checked = 0, events = 0, queued = 0, full = 0}
-- tells webhook i the peak of one day (its label, its start, its daily key) if above told
local function tell(i, webhook, label, start, daily, told)
  local header = redis.call('BITFIELD', daily, 'GET', 'u32', 32, 'GET', 'u32', 64)
  local peak, peakAt = header[1], header[2]
  if peak <= told then return end
  local id = eventIdOf('presence.peak', rooms[i], label .. '\\n' .. peak)
  local data = {room = rooms[i], day = label, peak = peak, peakAt = tonumber(start) + peakAt, previous = told}
  local body = cjson.encode({id = id, type = 'presence.peak', at = tonumber(at), data = data})
  out.events = out.events + 1
  if room <= 0 then
    out.full = out.full + 1
    return
  end
  if queueDelivery(pending, deliveries, webhook, tonumber(since[i]), id, 'presence.peak', body, now, 0) == 1 then
    out.queued = out.queued + 1
    room = room - 1
  end
  redis.call('HSET', marks[i], 'peak', label .. ':' .. peak)
end
for i, webhook in ipairs(webhooks) do
  local got = redis.call('HMGET', marks[i], 'peak', 'of')
  local markDay, markPeak = nil, 0
  -- a blank mark (the PUT that made the marks this webhook's) has told nothing
  if got[1] and got[1] ~= '' then
    markDay, markPeak = string.match(got[1], '^([%d-]+):(%d+)$')
    markPeak = tonumber(markPeak) or 0
  end
  local ours = marksAreOf(hooks, webhook, marks[i], got[2], marksOwner(since[i], sizes[i], 'room', rooms[i]))
  if ours then out.checked = out.checked + 1 end
  -- a late run (its clock behind a run that already told a later day) tells nothing: the mark never
  -- moves back, so no peak is told twice (ISO days compare as strings; review 8)
  if ours and not (markDay and markDay > day) then
    if yesterdays[i] and markDay ~= day and tonumber(since[i]) < tonumber(dayStart) then
      tell(i, webhook, yesterday, yesterdayStart, yesterdays[i], markDay == yesterday and markPeak or 0)
    end
    tell(i, webhook, day, dayStart, dailies[i], markDay == day and markPeak or 0)
  end
end
return out
`,
});
