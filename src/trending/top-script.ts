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
 * Most members (all sets together) the fallback merges: about 12 ms of ZUNIONSTORE.
 * Beyond, a read whose boundary tie is deeper than TA_MAX_DEPTH answers with a widened maxError.
 */
export const TA_MERGE_MAX = 100_000;

/**
 * Top N of (cached union U of the finished hours) + (current-hour bucket C)
 * without merging them: Fagin's threshold algorithm over the sorted sets.
 * Until compaction has finished the previous hour, U leaves it out (its PREV
 * marker says so) and the read pages that bucket P as a third set: the first
 * read of an hour never copies a raw, untrimmed hour into a union.
 *
 * A round fetches the next page of each set by count (depth d, starting at
 * max(n + 1, firstDepth)) and the other sets' counts of the new candidates
 * (ZMSCORE), so every candidate's window count is exact. A member seen on no
 * page has at most T = the sum of the sets' last page counts, a set's term
 * being 0 once it is exhausted. When the n-th candidate beats T strictly, no
 * unseen member can enter the top N, not even on a tie (ties rank by member);
 * otherwise the depth grows ×4. Past TA_MAX_DEPTH (huge flat data, a tie mass
 * at the boundary) it falls back to the full merge, which is always exact, when
 * the sets hold at most TA_MERGE_MAX members together; beyond, it answers from
 * its candidates with maxError widened by T − (the n-th count), so no script
 * merges a big window.
 *
 * Warm, one round, two sets: ZREVRANGE C, ZMSCORE U (with the markers, which
 * also say whether U exists), ZREVRANGE U, ZMSCORE C: four commands whatever
 * the sizes, fewer when C is empty or exhausted; with P, seven (a page and a
 * lookup more, and U's lookup of P's candidates).
 *
 * KEYS: union, current bucket, scratch, compaction queue, window buckets 1..W (oldest first).
 * ARGV: n, unionTtl, firstDepth, maxDepth, slot width (0 for a standard window), stream, H, mergeMax.
 * Returns { maxError, items (flat member, count; every candidate down to the
 * (n+1)-th count, ties included), next (bound on any unreturned member's
 * count), built, split }.
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
local stream   = ARGV[6]
local H        = tonumber(ARGV[7])
local mergeMax = tonumber(ARGV[8])
local uKey, cKey, tmpKey, dirtyKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local buckets = {}
for i = 5, #KEYS do buckets[#buckets + 1] = KEYS[i] end

-- the sets: 1 = U, 2 = P (the previous hour, only while U leaves it out), 3 = C
local key   = { uKey, buckets[#buckets], cKey }
local used  = { true, false, true }
local done  = { false, true, false }
local last  = { 0, 0, 0 }
local score = { {}, {}, {} }      -- set -> member -> count there (0: absent)
local order = {}                  -- candidates in the order met
local errs  = { nil, nil }        -- sentinel scores of U and P
local built, split, cEmpty, uNone = false, false, false, false
local from  = 0

local function page(s)
  local got = redis.call('ZREVRANGE', key[s], from, depth - 1, 'WITHSCORES')
  local real = 0
  for i = 1, #got, 2 do
    local count = tonumber(got[i + 1])
    -- a bucket's or union's markers (≤ 0) come after every real member
    if count > 0 then
      real = real + 1
      last[s] = count
      if score[1][got[i]] == nil and score[2][got[i]] == nil and score[3][got[i]] == nil then order[#order + 1] = got[i] end
      score[s][got[i]] = count
    elseif got[i] == SENTINEL then
      errs[s] = got[i + 1]
    end
  end
  if real < depth - from then done[s] = true end
  return real
end
-- every candidate's count in set s: looked up unless known, 0 once s is exhausted
-- (an exhausted set's members have all been paged). extra: markers asked first.
local function fill(s, extra)
  local ask = extra or {}
  local off = #ask
  for _, m in ipairs(order) do
    if score[s][m] == nil then
      if done[s] then score[s][m] = 0 else ask[#ask + 1] = m end
    end
  end
  if #ask == 0 then return {} end
  local got = redis.call('ZMSCORE', key[s], unpack(ask))
  for i = off + 1, #ask do score[s][ask[i]] = tonumber(got[i]) or 0 end
  return got
end
-- the same order of addition everywhere (the member lookup too): equal sums stay equal
local function sumOf(m) return (score[1][m] or 0) + (score[2][m] or 0) + (score[3][m] or 0) end

-- everything down to the (n+1)-th count, ties included; TypeScript orders ties by bytes
local function itemsDownTo(floor)
  local items = {}
  if floor then
    for _, member in ipairs(order) do
      local sum = sumOf(member)
      if sum >= floor then
        items[#items + 1] = member
        items[#items + 1] = fmt(sum)
      end
    end
  end
  return items
end
local function errorSum() return 0 - (tonumber(errs[1]) or 0) - (tonumber(errs[2]) or 0) end

local first = true
local T, values = 0, {}
while true do
  if not done[3] and page(3) == 0 and from == 0 then cEmpty = true end
  if first then
    -- the markers ride along with the first lookup: no valid union yet when they are missing
    -- (a call expands only its last unpack: one list of arguments)
    local got = fill(1, markersOf(width))
    if validUnion(got, width) then
      errs[1], split = got[1], got[2] and true or false
    else
      split, built = previousOpen(dirtyKey, stream, H), true
      score[1] = {}
      if buildUnion(uKey, buckets, ttl, width, split) then
        got = fill(1, { SENTINEL })
        errs[1] = got[1]
      else
        -- no event in the union's hours: no union, nothing stored, U counts 0 everywhere
        done[1], uNone = true, true
        fill(1)
      end
    end
    if split then used[2], done[2] = true, false end
  end
  if not done[1] then page(1) end
  if used[2] and not done[2] then page(2) end
  fill(1)
  -- P's sentinel (the cut of its trims so far) rides along with its first lookup
  if used[2] then
    local askErr = first and errs[2] == nil
    local got = fill(2, askErr and { SENTINEL } or nil)
    if askErr then errs[2] = got[1] end
  end
  fill(3)
  first = false

  T = 0
  for s = 1, 3 do if used[s] and not done[s] then T = T + last[s] end end
  values = {}
  for i = 1, #order do values[i] = sumOf(order[i]) end
  -- numbers only (Lua compares strings by the server's locale, not by bytes), ascending
  -- with the built-in comparison: a Lua comparator costs more than the rest of a round
  table.sort(values)
  local k = #values
  local nth = values[k - n + 1]
  if (done[1] and done[2] and done[3]) or (nth and nth > T) then
    return cjson.encode({ maxError = fmt(errorSum()), items = itemsDownTo(values[math.max(k - n, 1)]), next = fmt(T), built = built, split = split })
  end
  if depth >= maxDepth then break end
  from, depth = depth, math.min(depth * 4, maxDepth)
end

-- A tie mass at the boundary: merge the sets (the slow, always exact way).
local m = n + 1
local sets = {}
-- (a slot left holding another width, when this one has nothing to union, is not ours)
if not uNone then sets[#sets + 1] = uKey end
if split then sets[#sets + 1] = key[2] end
if not cEmpty then sets[#sets + 1] = cKey end
local total = 0
for _, key in ipairs(sets) do total = total + redis.call('ZCARD', key) end
if total > mergeMax then
  -- Too big to merge in one short script: answer from the candidates. Their counts are exact;
  -- a member not seen counts at most T, so the bound widens by T - (the n-th count): every
  -- statement maxError makes stays true. Unproven: members tied with the n-th count may rank
  -- before the ones returned (ties rank by member), so exact and topProven are false.
  local k = #values
  local nth = values[k - n + 1] or 0
  return cjson.encode({ maxError = fmt(errorSum() + math.max(0, T - nth)), items = itemsDownTo(values[math.max(k - n, 1)]), next = fmt(T), built = built, split = split, unproven = true })
end
local src = sets[1]
if #sets > 1 then
  redis.call('ZUNIONSTORE', tmpKey, #sets, unpack(sets))
  src = tmpKey
end
-- counts are > 0 and the markers ≤ 0: '(0' leaves them out
local items = src and redis.call('ZREVRANGEBYSCORE', src, '+inf', '(0', 'WITHSCORES', 'LIMIT', 0, m) or {}
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
return cjson.encode({ maxError = fmt(errorSum()), items = items, next = '0', built = built, split = split })
`,
);
