/**
 * Keeps a period counter's index from growing with the counter's age (issue 15, review 8).
 *
 * The index lists (`b:<key>` → recorded expiry) every bucket and rollup of the life, and reads
 * need an expired key's field while a rollup above it still lives: that past expiry is what
 * tells a member read past the union bound (edges.ts) and a write's restart check (scripts.ts,
 * index field `s`) that the rollup still sums counts its parts no longer hold. So a field may go
 * only once every rollup above its key is gone too:
 * - `hd`, an hour counter's day: its hours and quarter-day rollups once the day rollup's recorded
 *   expiry has passed (the day rollup's own field stays: it is that signal for its month);
 * - `hm`, an hour counter's month: its day rollups and the month rollup once the month rollup's
 *   has passed (and only after `hd` has passed every day of that month);
 * - `dm`, a day counter's month: its days and month rollup once the month rollup's has passed;
 * - `w` / `m`: a week or month bucket (they keep no rollups) once its own has passed.
 * A rollup never expires before a key it sums (its ttl is theirs plus the extension slack), so the
 * rollup's recorded expiry bounds its group's; "passed" means by more than `TRIM_MARGIN` on the
 * caller's clock (recorded expiries are never later than the key's own, clocks agreeing within a
 * minute). A recorded 0 (no expiry) or a value from before expiries were recorded (below 1e12)
 * keeps the group for good: those keys live on.
 *
 * Each kind has a cursor in the index, `c:<kind>` = `<group>|<expiry or empty>`: every group before
 * it has had its fields dropped. Writes read the cursors in the HMGET they make anyway; one that
 * creates a key (first touch) takes at most one step of one cursor, one command: learn the group's
 * fields (an HMGET: its expiry, or where the next listed group is) or drop them (one HDEL); the
 * new cursor rides in the HSET the new key pays anyway. A `w` / `m` learn also drops, in the same
 * step (one HDEL more), the run of expired anchors its HMGET read: such a counter creates one key a
 * period, so learn-then-drop would fall a group behind every other period (review 9). A write into a group before a cursor moves
 * it back; one that sets a field of the cursor's group raises the expiry it holds, in the same HSET.
 * A `w` / `m` group's one field is its key's, so such a write gives the cursor that expiry without
 * a learn, and a new index (only this write's keys) puts it past kept groups; a `w` / `m` learn
 * passes kept anchors over (review 12: a week counter without ttl paid a learn every other week).
 */
import { DAY } from "../time.ts";
import type { Period } from "../time.ts";
import type { Coarse } from "./calendar.ts";

/** How far past its recorded expiry a group must be before its fields are dropped (ms). */
export const TRIM_MARGIN = 3_600_000;

/**
 * The cursor groups a key belongs to, as the write script reads them (`kind:group` pairs,
 * space-separated): day number (days since 1970-01-01 UTC), month number (year × 12 + month − 1),
 * ISO week number (Mondays since 1969-12-29).
 */
export function trimGroups(period: Period, level: "bucket" | Coarse, start: number): string {
  const day = Math.floor(start / DAY);
  const d = new Date(start);
  const month = d.getUTCFullYear() * 12 + d.getUTCMonth();
  switch (period) {
    case "hour":
      return level === "month" ? `hm:${month}` : `hd:${day} hm:${month}`;
    case "day":
      return `dm:${month}`;
    case "week":
      return `w:${Math.floor((day + 3) / 7)}`;
    case "month":
      return `m:${month}`;
  }
}

/**
 * Where a cursor missing from an index that already exists (written before cursors) starts, per
 * kind: 2024-01-01, before any key a release could list (the first one is from 2026-11, writes
 * reach 400 days back), unless the write's groups less how far writes reach are earlier. A learn
 * that finds nothing listed looks 31 days / 12 months / 26 weeks ahead, so the empty stretch costs
 * a few dozen steps once per index; starting later would leave older expired fields for ever.
 */
export const TRIM_ORIGIN = Date.UTC(2024, 0, 1);
const originOf = (kind: string) => trimGroups(kind === "w" ? "week" : "day", "month", TRIM_ORIGIN).split(":")[1] ?? "";

/** The Lua of the cursors; `trimStep` and `trimNote` are what the write script calls. */
export const TRIM_LUA = `
local TRIM_MARGIN = ${TRIM_MARGIN}
-- day number <-> civil date (H. Hinnant's algorithms)
local function civil(z)
  z = z + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp  = math.floor((5 * doy + 2) / 153)
  local d   = doy - math.floor((153 * mp + 2) / 5) + 1
  local m   = mp < 10 and mp + 3 or mp - 9
  local y   = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return y, m, d
end
local function dayNumber(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp  = m > 2 and m - 3 or m + 9
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + math.floor((153 * mp + 2) / 5) + d - 1
  return era * 146097 + doe - 719468
end
local function dayLabel(z)
  local y, m, d = civil(z)
  return string.format('%04d%02d%02d', y, m, d)
end
local function monthLabel(n) return string.format('%04d%02d', math.floor(n / 12), n % 12 + 1) end
-- first and last day numbers of month n
local function monthDays(n)
  local y, m = math.floor(n / 12), n % 12 + 1
  local ny, nm = y, m + 1
  if nm > 12 then ny, nm = y + 1, 1 end
  return dayNumber(y, m, 1), dayNumber(ny, nm, 1) - 1
end
local function weekLabel(w)
  local thursday = 7 * w
  local y = civil(thursday)
  return string.format('%04d-W%02d', y, math.floor((thursday - dayNumber(y, 1, 1)) / 7) + 1)
end
-- per kind: the anchor (the key whose expiry bounds the group's), the fields a learn reads, the
-- fields a drop deletes, how many groups ahead a learn looks for the next listed anchor, and how
-- far back a cursor starts in a life that existed before cursors (writes reach 400 days back;
-- TRIM_ORIGIN, unless that is later)
local KINDS = {
  hd = {ahead = 31, back = 401, origin = ${Math.floor(TRIM_ORIGIN / DAY)}},
  hm = {ahead = 12, back = 14, origin = ${originOf("hm")}},
  dm = {ahead = 12, back = 14, origin = ${originOf("dm")}},
  w  = {ahead = 26, back = 58, origin = ${originOf("w")}},
  m  = {ahead = 12, back = 14, origin = ${originOf("m")}},
}
local function anchorOf(base, kind, g)
  if kind == 'hd' then return 'b:' .. base .. ':hour:by-day:' .. dayLabel(g) end
  if kind == 'hm' then return 'b:' .. base .. ':hour:by-month:' .. monthLabel(g) end
  if kind == 'dm' then return 'b:' .. base .. ':day:by-month:' .. monthLabel(g) end
  if kind == 'w' then return 'b:' .. base .. ':week:' .. weekLabel(g) end
  return 'b:' .. base .. ':month:' .. monthLabel(g)
end
-- the group's fields: learn = what bounds its expiry, drop = what goes (z: marks with their rollups)
local function groupFields(base, kind, g)
  local learn, drop = {}, {}
  if kind == 'hd' then
    local day = dayLabel(g)
    for h = 0, 23 do learn[#learn + 1] = 'b:' .. base .. ':hour:' .. day .. string.format('%02d', h) end
    for h = 0, 18, 6 do
      local q = base .. ':hour:by-quarter:' .. day .. 'T' .. string.format('%02d', h)
      learn[#learn + 1] = 'b:' .. q
      drop[#drop + 1] = 'z:' .. q
    end
    for _, f in ipairs(learn) do drop[#drop + 1] = f end
    -- the day rollup bounds them; its own field stays for its month (dropped by hm)
    learn[#learn + 1] = anchorOf(base, kind, g)
  elseif kind == 'hm' or kind == 'dm' then
    local first, last = monthDays(g)
    local fine = kind == 'hm' and ':hour:by-day:' or ':day:'
    for z = first, last do
      learn[#learn + 1] = 'b:' .. base .. fine .. dayLabel(z)
      if kind == 'hm' then drop[#drop + 1] = 'z:' .. base .. fine .. dayLabel(z) end
    end
    local anchor = anchorOf(base, kind, g)
    learn[#learn + 1] = anchor
    drop[#drop + 1] = 'z:' .. string.sub(anchor, 3)
    for _, f in ipairs(learn) do drop[#drop + 1] = f end
  else
    learn[1], drop[1] = anchorOf(base, kind, g), anchorOf(base, kind, g)
    -- a week's size record (scripts.ts) goes with it
    if kind == 'w' then drop[2] = 'n:' .. string.sub(drop[1], 3) end
  end
  return learn, drop
end
-- cursors: kind -> {at = group, e = expiry bound of the group (nil: not learnt), dirty}
local function trimParse(kind, raw)
  if not raw then return nil end
  local at, e = string.match(raw, '^(%-?%d+)|(%d*)$')
  if not at then return nil end
  return {at = tonumber(at), e = tonumber(e)}
end
-- the index fields of the changed cursors, appended to an HSET the write makes anyway
local function trimFlush(cursors, args)
  for kind, c in pairs(cursors) do
    if c.dirty then
      args[#args + 1] = 'c:' .. kind
      -- %d: '..' would write a large number as %.14g (an exponent past 14 digits)
      args[#args + 1] = string.format('%d|%s', c.at, c.e and string.format('%d', c.e) or '')
      c.dirty = false
    end
  end
  return args
end
-- a write is about to record expiry e (0: none) for a key of these groups (kind -> group): a
-- cursor past the group moves back to it, one on the group raises its bound; a missing cursor
-- starts at the write's earliest group (a new index) or as far back as writes reach
local function trimNote(cursors, groups, e, minOf, fresh)
  for kind, g in pairs(groups) do
    local c = cursors[kind]
    if not c then
      local k = KINDS[kind]
      c = {at = fresh and minOf[kind] or math.min(k.origin, minOf[kind] - k.back), dirty = true}
      cursors[kind] = c
    end
    -- a week or month group's one field is its key's, so e is the group's bound: learnt without
    -- the HMGET a learn pays (review 12: a week counter without ttl paid it every other first touch)
    local one = kind == 'w' or kind == 'm'
    if one and fresh then
      -- a new index lists only this write's keys: the cursor goes to the earliest group with an
      -- expiry, or past the kept ones to the latest, whatever order the keys come in
      local live = c.e and c.e ~= 0
      if e ~= 0 then
        if not live or g < c.at then c.at, c.e, c.dirty = g, e, true end
      elseif not live and (not c.e or g > c.at) then
        c.at, c.e, c.dirty = g, 0, true
      end
    elseif g < c.at then
      c.at, c.e, c.dirty = g, one and e or nil, true
    elseif g == c.at and one then
      if c.e ~= e then c.e, c.dirty = e, true end
    elseif g == c.at and c.e then
      local bound = c.e
      if e == 0 or bound == 0 then bound = 0 else bound = math.max(bound, e) end
      if bound ~= c.e then c.e, c.dirty = bound, true end
    end
  end
end
-- At most one command: the first cursor behind the write's groups (minOf) learns its group or
-- drops it. Moves that need no command (a group kept for good) come free.
local function trimStep(index, base, cursors, order, minOf, now)
  for _, kind in ipairs(order) do
    local c = cursors[kind]
    local ready = c and c.at < minOf[kind]
    if ready and kind == 'hm' then
      -- hd must have passed the month first: its hours' fields go before their day rollups'
      local hd = cursors.hd
      local _, last = monthDays(c.at)
      ready = hd ~= nil and hd.at > last
    end
    if ready and c.e and (c.e == 0 or c.e < 1e12) then
      -- a key of the group lives for ever (or predates recorded expiries): its fields stay
      c.at, c.e, c.dirty = c.at + 1, nil, true
    elseif ready and c.e then
      if c.e + TRIM_MARGIN < now then
        local _, drop = groupFields(base, kind, c.at)
        redis.call('HDEL', index, unpack(drop))
        c.at, c.e, c.dirty = c.at + 1, nil, true
        return
      end
    elseif ready then
      local learn = groupFields(base, kind, c.at)
      local n = #learn
      local ahead = math.min(KINDS[kind].ahead, minOf[kind] - c.at)
      for j = 1, ahead - 1 do learn[#learn + 1] = anchorOf(base, kind, c.at + j) end
      local values = redis.call('HMGET', index, unpack(learn))
      if kind == 'w' or kind == 'm' then
        -- one field per group, one key created per period: a learn alone would leave the cursor a
        -- group behind every other period. The read's run of passed anchors goes in one HDEL here
        -- (+1 command), up to the first live one, whose expiry the cursor learns. Kept ones (0, or
        -- from before expiries were recorded) are passed over, as the free move passes one: a learn
        -- that stopped at each left a cursor behind a run of them falling further behind (review 12).
        local drop, stop, e = {}, ahead, nil
        for j = 0, ahead - 1 do
          local v = tonumber(values[1 + j])
          if v and v ~= 0 and v >= 1e12 then
            if v + TRIM_MARGIN >= now then
              stop, e = j, v
              break
            end
            drop[#drop + 1] = anchorOf(base, kind, c.at + j)
            if kind == 'w' then drop[#drop + 1] = 'n:' .. string.sub(drop[#drop], 3) end
          end
        end
        if #drop > 0 then redis.call('HDEL', index, unpack(drop)) end
        c.at, c.e, c.dirty = c.at + stop, e, true
        return
      end
      local listed, forever, bound = false, false, 0
      for i = 1, n do
        local v = tonumber(values[i])
        if v then
          listed = true
          if v == 0 or v < 1e12 then forever = true else bound = math.max(bound, v) end
        end
      end
      if listed and not forever and bound + TRIM_MARGIN < now then
        -- already passed: dropped in this step (+1 command), so a group costs one step, not two,
        -- and a counter creating a key about once a group keeps up (review 9: an hour counter
        -- written every 13 hours fell behind half a day a day)
        local _, drop = groupFields(base, kind, c.at)
        redis.call('HDEL', index, unpack(drop))
        c.at, c.e, c.dirty = c.at + 1, nil, true
      elseif listed then
        c.e, c.dirty = forever and 0 or bound, true
      else
        -- nothing of it is listed: on to the next listed anchor, or past the ones read
        local next = c.at + ahead
        for j = 1, ahead - 1 do
          if values[n + j] then next = c.at + j break end
        end
        c.at, c.e, c.dirty = next, nil, true
      end
      return
    end
  end
end
`;
