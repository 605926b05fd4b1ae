import { defineReadScript } from "../redis/script.ts";
import { UNION_LUA } from "./scripts.ts";

/** Deepest page the threshold read fetches from each side before it merges instead. */
export const TA_MAX_DEPTH = 1024;
/**
 * Depth of the first round, at least n + 1. A deeper first page costs the same
 * four commands and lowers the threshold, so fewer reads need a second round.
 */
export const TA_FIRST_DEPTH = 256;

/**
 * Top N of (cached union U of the finished hours) + (current-hour bucket C)
 * without merging them: Fagin's threshold algorithm over the two sorted sets.
 *
 * A round fetches the next page of C and of U by count (depth d, starting at
 * max(n + 1, firstDepth)) and the other side's counts of the new candidates (ZMSCORE), so every
 * candidate's window count is exact. A member seen on neither page has at most
 * T = (last count of U's page) + (last count of C's page), a side's term being
 * 0 once the side is exhausted. When the n-th candidate beats T strictly, no
 * unseen member can enter the top N, not even on a tie (ties rank by member);
 * otherwise the depth grows ×4. Past TA_MAX_DEPTH (huge flat data, a tie mass
 * at the boundary) it falls back to the full merge, which is always correct.
 *
 * Warm, one round: ZREVRANGE C, ZMSCORE U (with the sentinel, which also says
 * whether U exists), ZREVRANGE U, ZMSCORE C: four commands whatever the sizes,
 * fewer when C is empty or exhausted. The first page is 256 deep: a deeper
 * page costs no more commands, and a tie of up to ~250 members at the boundary
 * (flat counts, a long tail of 1s) settles in that first round.
 *
 * KEYS: union, current bucket, scratch, window buckets 1..W.
 * ARGV: n, unionTtl, firstDepth, maxDepth, slot width (0 for a standard window).
 * Returns { maxError, items (flat member, count; every candidate down to the
 * (n+1)-th count, ties included), next (bound on any unreturned member's
 * count), built }.
 */
export const topScript = defineReadScript(
  "trending-top",
  `
${UNION_LUA}
local n        = tonumber(ARGV[1])
local ttl      = ARGV[2]
local depth    = math.max(n + 1, tonumber(ARGV[3]))
local maxDepth = tonumber(ARGV[4])
local width    = tonumber(ARGV[5])
local uKey, cKey, tmpKey = KEYS[1], KEYS[2], KEYS[3]
local buckets = {}
for i = 4, #KEYS do buckets[#buckets + 1] = KEYS[i] end

local sums, order = {}, {}   -- candidate -> exact window count; candidates in order met
local maxError, built = nil, false
local uDone, cDone, cEmpty = false, false, false
local uLast, cLast = 0, 0
local from     = 0

local function add(member, count)
  sums[member] = count
  order[#order + 1] = member
end
local function countOf(s)
  if s then return tonumber(s) end
  return 0
end

while true do
  local fresh, counts = {}, {}
  if not cDone then
    local page = redis.call('ZREVRANGE', cKey, from, depth - 1, 'WITHSCORES')
    local real = 0
    for i = 1, #page, 2 do
      local count = tonumber(page[i + 1])
      -- the bucket's sentinel (≤ 0) comes after every real member
      if count > 0 then
        real = real + 1
        cLast = count
        if not sums[page[i]] then
          fresh[#fresh + 1] = page[i]
          counts[#counts + 1] = count
        end
      end
    end
    if real < depth - from then cDone = true end
    if real == 0 and from == 0 then cEmpty = true end
  end
  if not maxError then
    -- the markers ride along with the first lookup: no valid union yet when they are missing
    -- (a call expands only its last unpack: one list of arguments)
    local ask = markersOf(width)
    local off = #ask
    for i = 1, #fresh do ask[off + i] = fresh[i] end
    local got = redis.call('ZMSCORE', uKey, unpack(ask))
    if validUnion(got, width) then
      maxError = errorOf(got[1])
    elseif buildUnion(uKey, buckets, ttl, width) then
      built = true
      got, off = redis.call('ZMSCORE', uKey, SENTINEL, unpack(fresh)), 1
      maxError = errorOf(got[1])
    else
      -- no event in the finished hours: no union, nothing stored, U counts 0 everywhere
      built, uDone, maxError, got = true, true, '0', {}
    end
    for i = 1, #fresh do add(fresh[i], counts[i] + countOf(got[i + off])) end
  elseif #fresh > 0 then
    -- once U is exhausted every member it has is a candidate already: the rest count 0 there
    local got = uDone and {} or redis.call('ZMSCORE', uKey, unpack(fresh))
    for i = 1, #fresh do add(fresh[i], counts[i] + countOf(got[i])) end
  end

  if not uDone then
    local page = redis.call('ZREVRANGE', uKey, from, depth - 1, 'WITHSCORES')
    local real = 0
    fresh, counts = {}, {}
    for i = 1, #page, 2 do
      local count = tonumber(page[i + 1])
      -- the sentinel (≤ 0) comes after every real member: reaching it means U is exhausted
      if count > 0 then
        real = real + 1
        uLast = count
        if not sums[page[i]] then
          fresh[#fresh + 1] = page[i]
          counts[#counts + 1] = count
        end
      end
    end
    if real < depth - from then uDone = true end
    if #fresh > 0 then
      local got = cDone and {} or redis.call('ZMSCORE', cKey, unpack(fresh))
      for i = 1, #fresh do add(fresh[i], counts[i] + countOf(got[i])) end
    end
  end

  local T = (uDone and 0 or uLast) + (cDone and 0 or cLast)
  local values = {}
  for i = 1, #order do values[i] = sums[order[i]] end
  -- numbers only (Lua compares strings by the server's locale, not by bytes), ascending
  -- with the built-in comparison: a Lua comparator costs more than the rest of a round
  table.sort(values)
  local k = #values
  local nth = values[k - n + 1]
  if (uDone and cDone) or (nth and nth > T) then
    -- everything down to the (n+1)-th count, ties included; TypeScript orders ties by bytes
    local floor = values[math.max(k - n, 1)]
    local items = {}
    if floor then
      for _, member in ipairs(order) do
        if sums[member] >= floor then
          items[#items + 1] = member
          items[#items + 1] = fmt(sums[member])
        end
      end
    end
    return cjson.encode({ maxError = maxError, items = items, next = fmt(T), built = built })
  end
  if depth >= maxDepth then break end
  from, depth = depth, math.min(depth * 4, maxDepth)
end

-- A tie mass at the boundary: merge U and C (the slow, always exact way).
local m = n + 1
local src = uKey
if not cEmpty then
  redis.call('ZUNIONSTORE', tmpKey, 2, uKey, cKey)
  src = tmpKey
end
-- counts are > 0 and the sentinel ≤ 0: '(0' leaves it out
local items = redis.call('ZREVRANGEBYSCORE', src, '+inf', '(0', 'WITHSCORES', 'LIMIT', 0, m)
if #items == 2 * m then
  -- ZREVRANGE breaks ties by member descending; we rank ties by member ascending,
  -- so take everything strictly above the m-th count, then the smallest tied members.
  local last  = items[2 * m]
  local above = redis.call('ZREVRANGEBYSCORE', src, '+inf', '(' .. last, 'WITHSCORES')
  local ties  = redis.call('ZRANGEBYSCORE', src, last, last, 'WITHSCORES', 'LIMIT', 0, m - #above / 2)
  items = above
  for i = 1, #ties do items[#items + 1] = ties[i] end
end
if src == tmpKey then redis.call('DEL', tmpKey) end
return cjson.encode({ maxError = maxError, items = items, next = '0', built = built })
`,
);
