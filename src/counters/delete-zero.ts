/** Shared Lua of the member delete (delete-script.ts): what a partial rollup left at 0 still holds, and a life's quarters. */
import { defineLua } from "../redis/script.ts";
import { fieldsLua } from "./life.ts";

/**
 * `heldBelow(d, i)`: after the delete's removals, does a key directly below partial rollup `i`
 * (whose sum for the member the delete just brought to exactly 0) still hold the member? true,
 * false, or 'u' (unknown: the delete then drops the member and marks the rollup `z:` as before).
 * Before, a rollup at 0 always dropped the member and was marked, and every read that took it
 * whole (a union of a whole day or month, a whole day inside a member read's edge) said absent
 * where its hours held the member at scores summing to 0 (review 4, counters-delete-cases). Now
 * the rollup keeps it at 0 when a part still holds it, and drops it unmarked when none does: it
 * lists exactly the members of its parts again. `d` holds the delete's state: `parts`, `index`,
 * `member`, `nb`, `kinds` (`kindOf`), `lo`/`hi` (the layout in use), `listed`, `zeroed`, `score`,
 * `after` (per partial rollup already handled: true, false or 'u'), `soon`, and `outs`: per
 * partial rollup, `rollup, first, last, rollups` (the positions in `parts`, after the plan's
 * keys, of its parts outside the range; `rollups` 1 when those are rollups). Its parts in range
 * cost nothing (the delete took the member from whole ones; a partial one's answer is known); the
 * parts outside cost a ZSCORE per listed one until one holds the member (their index fields ride
 * in the delete's first HMGET, `outsideNames`): at most 2 partial rollups a level, 30 days outside
 * a month, 3 quarters outside a day, 5 hours outside a quarter, and only for a sum of exactly 0.
 * Answers only in an exact life (`s`) whose layout of the rollup is the one `outs` was made for.
 *
 * `oldQuarters(d, forget)`: a life begun before quarter rollups (no `q`) links its hours to their
 * days and never reads its quarters, but its writes make them: a delete takes the member from the
 * quarters above the hours that lost it too (a whole quarter by ZREM, a partial one by what its
 * hours lost, their scores read because the day above them is partial as well), so no quarter of
 * such a life keeps a deleted member. One HMGET of those quarters' fields.
 */
export const deleteZeroLua = defineLua(
  "counters.deleteZero",
  ["outsideNames", "outsideValues", "heldBelow", "remade", "oldQuarters"],
  `
-- the index fields of the parts outside (b:, and z: of rollups), which ride in the delete's first
-- HMGET (extra fields of its last 1,000: the months' and their days' fields take at most ~430)
local function outsideNames(parts, outs, names)
  for t = 1, #outs, 4 do
    for c = tonumber(outs[t + 1]), tonumber(outs[t + 2]) do
      names[#names + 1] = 'b:' .. parts[c]
      if tonumber(outs[t + 3]) == 1 then names[#names + 1] = 'z:' .. parts[c] end
    end
  end
  return names
end
-- their values, from position k of values on, into d
local function outsideValues(d, values, k)
  d.outListed, d.outZeroed = {}, {}
  for t = 1, #d.outs, 4 do
    for c = tonumber(d.outs[t + 1]), tonumber(d.outs[t + 2]) do
      d.outListed[c] = values[k] or false
      k = k + 1
      if tonumber(d.outs[t + 3]) == 1 then
        d.outZeroed[c] = values[k] and true or false
        k = k + 1
      end
    end
  end
end
local function heldBelow(d, i)
  if not d.pruned then return 'u' end
  local j = i - d.nb
  local range = nil
  for t = 1, #d.outs, 4 do
    if tonumber(d.outs[t]) == i then range = t end
  end
  -- a layout other than the one the parts outside were declared for (an older life's day: hours);
  -- no range: every part of the rollup overlaps the range (a day whose last quarter is partial)
  if d.lo ~= d.firsts and (d.lo[j] ~= d.firsts[j] or d.hi[j] ~= d.lasts[j]) then return 'u' end
  local unknown = false
  local function expiring(c, recorded)
    return recorded and tonumber(recorded) > 0 and tonumber(recorded) <= d.soon
  end
  -- parts in range: whole ones and buckets lost the member here; a partial one was handled first
  for c = tonumber(d.lo[j]), tonumber(d.hi[j]) do
    if c > d.nb and d.kindOf(c) == 'p' then
      local a = d.after[c]
      if a == nil then
        -- untouched by this delete: as read top down
        if d.listed[c] and d.score[c] then a = true
        elseif d.zeroed[c] or expiring(c, d.listed[c]) then a = 'u'
        else a = false end
      end
      if a == true then return true end
      if a == 'u' then unknown = true end
    end
  end
  if not range then return unknown and 'u' or false end
  local rollups = tonumber(d.outs[range + 3]) == 1
  for c = tonumber(d.outs[range + 1]), tonumber(d.outs[range + 2]) do
    local b = d.outListed[c]
    if b then
      if redis.call('ZSCORE', d.parts[c], d.member) then return true end
      -- a rollup lacking it proves nothing when its own parts may still hold it
      if rollups and (d.outZeroed[c] or expiring(c, b)) then unknown = true end
    elseif rollups and d.outZeroed[c] then
      unknown = true
    end
  end
  if unknown then return 'u' end
  return false
end
-- a partial rollup an earlier delete emptied, made again by this one: listed with the latest
-- expiry its listed parts record (0 when one has none), which it gets (relative to now: recorded
-- expiries are on the callers' clocks, as the writes set them)
local function remade(d, i, relisted, now)
  local last = 0
  for c = tonumber(d.lo[i - d.nb]), tonumber(d.hi[i - d.nb]) do
    local e = d.listed[c] and tonumber(d.listed[c])
    if e == 0 then last = -1 elseif e and last >= 0 then last = math.max(last, e) end
  end
  last = math.max(last, 0)
  if last > 0 then redis.call('PEXPIRE', d.parts[i], math.max(last - now, 1000)) end
  relisted[#relisted + 1] = 'b:' .. d.parts[i]
  relisted[#relisted + 1] = last
end
local function oldQuarters(d, forget)
  local quarters, keys = {}, {}
  for j = 1, #d.kinds do
    if tonumber(d.olderFirsts[j]) == 0 and tonumber(d.firsts[j]) > 0 then
      local gone, lost, known = 0, false, true
      for c = tonumber(d.firsts[j]), tonumber(d.lasts[j]) do
        local s = d.lostScore[c]
        if s then
          lost = true
          if s == true then known = false else gone = gone + s end
        end
      end
      if lost then
        quarters[#quarters + 1] = {d.nb + j, gone, known}
        keys[#keys + 1] = d.parts[d.nb + j]
      end
    end
  end
  if #keys == 0 then return 0 end
  local values, n = fields(d.index, keys), 0
  for k, q in ipairs(quarters) do
    local i, key = q[1], d.parts[q[1]]
    if values[k] then
      local dropped = false
      if d.kindOf(i) == 'w' then
        dropped = redis.call('ZREM', key, d.member) > 0
      elseif q[3] then
        n = n + 1
        -- nothing reads a quarter in such a life: at 0 the member simply goes, unmarked
        if tonumber(redis.call('ZINCRBY', key, -q[2], d.member)) == 0 then
          redis.call('ZREM', key, d.member)
          forget(i)
        end
      end
      if dropped then
        forget(i)
        n = n + 1
      end
    end
  end
  return n
end
`,
  [fieldsLua],
);
