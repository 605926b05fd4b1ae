/** Shared Lua of the counter reads past the union bound: the edge sums of a member read (counters.member, read-scripts.ts). */
import { defineLua } from "../redis/script.ts";

/**
 * A member's sum over a range past the union bound in fewer ZSCOREs than one per key (issue 15):
 * a day or month the range covers in part (an edge, calendar.ts `edgePlan`) is read either as its
 * parts in range or as its rollup minus its parts outside, whichever has fewer live keys (for a
 * range ending now, the hours and days after now are not listed, so the current month is one
 * rollup). `values` are the index fields `edgeFields` names: `s`, `q`, `b:<key>` of each of
 * `keys`, `z:<rollup>` of each edge's rollup (and of the whole quarters of each day edge).
 * A day edge of an hour counter is read through its quarter-day rollups (each partial quarter
 * again as its hours in range or its rollup minus the hours outside) where they provably equal
 * the sums of their hours, else as its hours (`a`, calendar.ts `Edge.flat`), as before quarters.
 *
 * A rollup equals the sum of its parts, so the subtraction is exact, only when
 * - the counter's life began with rollups and keeps them exact (index field `s`, set when the
 *   index is made, scripts.ts): every increment of the life went to a part and its rollups in one
 *   script, and a member delete takes from both, so a rollup parts from the sum of its parts only
 *   when a part expires (seen below, or, once a write restarts the key, by that write dropping
 *   `s`; a delete under a whole rollup an earlier delete emptied drops it too, delete-script.ts);
 * - no key of the edge (its rollup, its parts, theirs) has a recorded expiry within a minute of
 *   `now`: the index keeps an expired key's field while a rollup above it lives (trim.ts drops it
 *   only after), and a recorded expiry is never later than the key's (the clocks agreeing within a
 *   minute, as everywhere in this area);
 * - every score read is an integer below 2^44 in size, so every sum and difference of them
 *   (a few hundred at most) is exact in a double whatever the order, as in the per-key sum.
 * Otherwise the edge (or, for the last condition, the whole read) is read key by key as before.
 *
 * Presence: a rollup that lacks the member means no part holds it, unless a member delete
 * dropped it there at exactly 0 (`z:<rollup>`); a non-zero difference means a part in range holds
 * it. A difference of 0 leaves it open (held at 0 inside, or only outside): when nothing else in
 * the range shows the member, the parts in range of those edges are read until one holds it.
 * Returns false to fall back to one ZSCORE a key, else true and the sum (nil: absent).
 */
export const edgeSumLua = defineLua(
  "counters.edgeSum",
  ["edgeFields", "edgeSum"],
  `
-- the index fields edgeSum reads: s, q, b:<key> of every key, z:<rollup> of every edge's rollup
-- (and of the whole quarters of a day that has hours to fall back on)
local function edgeFields(plan, keys)
  local out = {'s', 'q'}
  for _, k in ipairs(keys) do out[#out + 1] = 'b:' .. k end
  local function rollups(list)
    for _, e in ipairs(list) do
      out[#out + 1] = 'z:' .. keys[e.r]
      if e.a then
        for _, k in ipairs(e.i) do out[#out + 1] = 'z:' .. keys[k] end
      end
      rollups(e.e)
    end
  end
  rollups(plan.e)
  return out
end
local function edgeSum(plan, keys, values, member, now)
  local exact    = values[1] and true or false
  local quarters = values[2] and true or false
  local listed, fresh, zeroed = {}, {}, {}
  for i = 1, #keys do
    local b = values[2 + i]
    listed[i] = b and true or false
    fresh[i]  = (not b) or tonumber(b) == 0 or tonumber(b) > now + 60000
  end
  -- in edgeFields' order
  local z = #keys + 2
  local function marks(list)
    for _, e in ipairs(list) do
      z = z + 1
      if values[z] then zeroed[e.r] = true end
      if e.a then
        for _, k in ipairs(e.i) do
          z = z + 1
          if values[z] then zeroed[k] = true end
        end
      end
      marks(e.e)
    end
  end
  marks(plan.e)
  local memo, dirty = {}, false
  local function score(k)
    if not listed[k] then return nil end
    local v = memo[k]
    if v == nil then
      v = tonumber(redis.call('ZSCORE', keys[k], member)) or false
      memo[k] = v
      if v and (v ~= math.floor(v) or math.abs(v) >= 2 ^ 44) then dirty = true end
    end
    return v or nil
  end
  local function live(list)
    local n = 0
    for _, k in ipairs(list) do if listed[k] then n = n + 1 end end
    return n
  end
  local function allFresh(e)
    if not fresh[e.r] then return false end
    for _, k in ipairs(e.i) do if not fresh[k] then return false end end
    for _, k in ipairs(e.o) do if not fresh[k] then return false end end
    for _, sub in ipairs(e.e) do if not allFresh(sub) then return false end end
    return true
  end
  -- per edge, how its part in range (subIn) and outside (subOut) are read; returns their costs in ZSCOREs
  local function choose(e)
    local cin, cout = live(e.i), live(e.o)
    for _, sub in ipairs(e.e) do
      local a, b = choose(sub)
      cin, cout = cin + a, cout + b
    end
    local ok = exact and listed[e.r] and allFresh(e)
    e.subIn  = ok and 1 + cout < cin
    e.subOut = ok and 1 + cin < cout
    return (e.subIn and 1 + cout or cin), (e.subOut and 1 + cin or cout)
  end
  local inside, outside
  -- presence: true (held), false (not held), nil (open)
  local function directIn(e)
    local v, held = 0, false
    for _, k in ipairs(e.i) do
      local x = score(k)
      if x then v, held = v + x, true end
    end
    for _, sub in ipairs(e.e) do
      local x, h = inside(sub)
      v = v + x
      if h then held = true elseif h == nil and held == false then held = nil end
    end
    return v, held
  end
  local function directOut(e)
    local v = 0
    for _, k in ipairs(e.o) do v = v + (score(k) or 0) end
    for _, sub in ipairs(e.e) do v = v + outside(sub) end
    return v
  end
  inside = function(e)
    if not e.subIn then return directIn(e) end
    local r = score(e.r)
    if not r and not zeroed[e.r] then return 0, false end
    local v = (r or 0) - directOut(e)
    if v ~= 0 then return v, true end
    return 0, nil
  end
  outside = function(e)
    if not e.subOut then return directOut(e) end
    local r = score(e.r)
    if not r and not zeroed[e.r] then return 0 end
    local v = directIn(e)
    return (r or 0) - v
  end
  local function probe(e)
    for _, k in ipairs(e.i) do if score(k) then return true end end
    for _, sub in ipairs(e.e) do if probe(sub) then return true end end
    return false
  end
  local function allFreshKeys(list)
    for _, k in ipairs(list) do if not fresh[k] then return false end end
    return true
  end
  -- A day of an hour counter is read through its quarters only where each provably equals the sum
  -- of its hours (so the answer is the union's, which reads hours): the life began with quarters
  -- (q), its rollups are exact (s), no key of the day is near its expiry, and no whole quarter in
  -- range dropped a member at 0 (z:), whose hours may still hold it. Else its hours (a).
  local function settle(list)
    for _, e in ipairs(list) do
      if e.a then
        local ok = quarters and exact and allFresh(e) and allFreshKeys(e.a.i) and allFreshKeys(e.a.o)
        if ok then
          for _, k in ipairs(e.i) do if zeroed[k] then ok = false end end
        end
        if not ok then e.i, e.o, e.e = e.a.i, e.a.o, {} end
      end
      settle(e.e)
    end
  end
  settle(plan.e)
  for _, e in ipairs(plan.e) do choose(e) end
  local total, held, open = 0, false, {}
  for _, k in ipairs(plan.w) do
    local x = score(k)
    if x then total, held = total + x, true end
  end
  for _, e in ipairs(plan.e) do
    local x, h = inside(e)
    total = total + x
    if h then held = true elseif h == nil then open[#open + 1] = e end
  end
  if not held then
    for _, e in ipairs(open) do
      if probe(e) then held = true break end
    end
  end
  if dirty then return false end
  if not held then return true, nil end
  return true, total
end
`,
);
