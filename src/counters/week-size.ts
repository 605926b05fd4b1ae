/**
 * How a `week` read bounds its union (docs/counters.md "Week size records"): from the weeks' size
 * records (index fields `n:<key>`, kept by the writes: scripts.ts) rather than a ZCARD a week, and,
 * past the bound, how a member read looks the member up within the read's commands (issue 15).
 * Shared Lua of `resolve` (./resolve.ts) and the member read (./read-scripts.ts).
 */
import { defineLua } from "../redis/script.ts";

export const weekSizeLua = defineLua(
  "counters.weekSize",
  ["lookupPlan", "sizesOf", "entriesOfWeeks", "recordsOf"],
  `
-- A member read of a week counter past the union bound (read-scripts.ts, counters.member): one
-- union of its smallest weeks whose sizes (exact ZCARDs, or records: upper bounds) sum within cap,
-- the work any read's union may do, and a ZSCORE of each other key (unsized: the current week of a
-- range ending now). Returns those two lists and the commands they take: ZUNIONSTORE, ZSCORE and
-- UNLINK for the union (only of 3 keys or more: fewer are cheaper looked up one by one), one a key
-- else. 58 weeks of 360 members: 55 in the union and 3 ZSCOREs, 6 commands where 58 ZSCOREs were.
local function lookupPlan(keys, sizes, cap)
  local known, rest, group, sum = {}, {}, {}, 0
  for _, k in ipairs(keys) do
    if sizes[k] then known[#known + 1] = k else rest[#rest + 1] = k end
  end
  table.sort(known, function(x, y)
    if sizes[x] ~= sizes[y] then return sizes[x] < sizes[y] end
    return x < y
  end)
  for _, k in ipairs(known) do
    if sum + sizes[k] <= cap then
      group[#group + 1] = k
      sum = sum + sizes[k]
    else
      rest[#rest + 1] = k
    end
  end
  if #group < 3 then
    for _, k in ipairs(group) do rest[#rest + 1] = k end
    group = {}
  end
  local calls = #rest
  if #group > 0 then calls = calls + 3 end
  return group, rest, calls
end
-- each live week's size as the read knows it: measured (exact) or its record (an upper bound)
local function sizesOf(live, recs, measured)
  local out = {}
  for _, k in ipairs(live) do out[k] = (measured and measured[k]) or recs[k] end
  return out
end
-- A week read's entries from its size records (upper bounds) and a ZCARD of each key without
-- one, and when the records are too loose to show the union fits within cap, the recorded keys'
-- ZCARDs, largest record first, until it is settled either way or budgetAfter(measured) ZCARDs
-- in all are spent (issue 15: showing that 58 weeks of 360 members pass the bound took 56, 59
-- commands, 61 with weeks of ~345); then the size is unsettled ('sized': the read is refused, or
-- a member read looks the member up: lookupPlan). Returns as entriesOf does, and the sizes
-- measured (key -> ZCARD), which the read records for weeks that have ended.
local function entriesOfWeeks(live, recs, cap, budgetAfter)
  local total, bound, spent, measured, recorded = 0, 0, 0, {}, {}
  for _, k in ipairs(live) do
    if recs[k] then
      bound = bound + recs[k]
      recorded[#recorded + 1] = k
    else
      -- not budgeted: weeks no later write recorded (at most every other one), or written before
      -- records existed (a one-off: each is recorded by this read)
      measured[k] = redis.call('ZCARD', k)
      spent = spent + 1
      total = total + measured[k]
      if total > cap then return total, false, spent, nil, measured end
    end
  end
  if total + bound <= cap then return total + bound, true, spent, nil, measured end
  local budget = budgetAfter(measured)
  table.sort(recorded, function(x, y) return recs[x] > recs[y] end)
  for _, k in ipairs(recorded) do
    if spent >= budget then return total + bound, false, spent, true, measured end
    measured[k] = redis.call('ZCARD', k)
    spent = spent + 1
    total, bound = total + measured[k], bound - recs[k]
    if total > cap then return total, false, spent, nil, measured end
    if total + bound <= cap then return total + bound, true, spent, nil, measured end
  end
  return total, true, spent, nil, measured
end
-- the fields recording what a week read measured of weeks ended (positions at[i] <= sealed), but
-- those whose record already says it
local function recordsOf(live, at, measured, sealed, recs)
  local out = {}
  if not measured then return out end
  for i, k in ipairs(live) do
    if measured[k] and at[i] <= sealed and recs[k] ~= measured[k] then
      out[#out + 1] = 'n:' .. k
      out[#out + 1] = measured[k]
    end
  end
  return out
end
`,
);
