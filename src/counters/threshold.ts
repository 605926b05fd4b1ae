/** Shared Lua of the counter top-N reads: the threshold algorithm (counters.top, read-scripts.ts). */
import { defineLua } from "../redis/script.ts";

/**
 * The \`n\` highest sums of sorted sets (a member missing from one counts 0 there), as a union and
 * ZRANGE … REV would give them, ties by member bytes, highest first, without the union: the
 * threshold algorithm reads each from the top, \`depth\` deep, and looks every member seen up in
 * all; a member seen in none sums at most what the last ones read did (0 for a set read to its
 * end or below 0). Returns flat member, score pairs, or nil when \`n\` is not settled within
 * \`budget\` lookups over all its rounds, \`calls\` commands or 4,096 deep (the caller unions then, or refuses).
 */
export const topOfManyLua = defineLua(
  "counters.topOfMany",
  ["topOfMany"],
  `
local function before(x, y)
  -- byte order, as Redis orders equal scores (Lua's < may follow the locale)
  local lx, ly = #x, #y
  for i = 1, math.min(lx, ly) do
    local a, b = string.byte(x, i), string.byte(y, i)
    if a ~= b then return a < b end
  end
  return lx < ly
end
local function topOfMany(keys, n, budget, calls)
  local depth, spent = math.max(2 * n, 64), 0
  -- calls: the commands it may make (issue 15): a round takes a ZRANGE per key and a ZMSCORE per
  -- key per 1,000 members seen (at most depth per key), so it gives up before one that may not fit
  local function roundCalls() return #keys * (1 + math.ceil(depth * #keys / 1000)) end
  while spent + depth * #keys * #keys <= budget and roundCalls() <= calls do
    calls = calls - roundCalls()
    spent = spent + depth * #keys * #keys
    local seen, list, bound, open = {}, {}, 0, false
    for _, key in ipairs(keys) do
      local page = redis.call('ZRANGE', key, 0, depth - 1, 'REV', 'WITHSCORES')
      for i = 1, #page, 2 do
        if not seen[page[i]] then
          seen[page[i]] = true
          list[#list + 1] = page[i]
        end
      end
      if #page == 2 * depth then
        open  = true
        bound = bound + math.max(tonumber(page[#page]), 0)
      end
    end
    local rows = {}
    for s = 1, #list, 1000 do
      local chunk, sums = {}, {}
      for i = s, math.min(s + 999, #list) do
        chunk[#chunk + 1] = list[i]
        sums[#sums + 1]   = 0
      end
      for _, key in ipairs(keys) do
        for i, v in ipairs(redis.call('ZMSCORE', key, unpack(chunk))) do
          if v then sums[i] = sums[i] + tonumber(v) end
        end
      end
      for i, m in ipairs(chunk) do rows[#rows + 1] = {m, sums[i]} end
    end
    table.sort(rows, function(x, y)
      if x[2] ~= y[2] then return x[2] > y[2] end
      return before(y[1], x[1])
    end)
    -- settled: the n-th sum is above anything unseen (or nothing is unseen)
    local last = rows[math.min(n, #rows)]
    if not open or (#rows >= n and last[2] > bound) then
      local out = {}
      for i = 1, math.min(n, #rows) do
        out[#out + 1] = rows[i][1]
        out[#out + 1] = string.format('%.17g', rows[i][2])
      end
      return out
    end
    if depth >= 4096 then return nil end
    depth = depth * 4
  end
  return nil
end
`,
);

/**
 * Lookups the threshold algorithm may do over all its rounds (a round's members seen × keys, at
 * most depth × keys²), so a top-N sum over a few keys goes deep and one over many keys gives up
 * early (it is refused when its union would also be too big). Its worst case, 7 finished days of
 * 100,000 members each and no two alike (no leader stands out, so every round is spent and the
 * read refused), took 108–115 ms of script when this was a budget per round, 28–32 ms now.
 */
export const THRESHOLD_LOOKUPS = 65_536;
