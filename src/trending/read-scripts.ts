import { defineScript } from "../redis/script.ts";
import { markersLua, unionLua } from "./scripts.ts";

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
 * Most members per set the member lookup reads to rank a member exactly (those
 * that could rank above it); beyond, it gives rank bounds (`rankExact: false`).
 */
export const MEMBER_RANK_DEPTH = 1000;

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
 * lookup more, and U's lookup of P's candidates). C's sentinel (its cut: a
 * compaction whose clock has passed the hour may have trimmed it) comes from C's
 * page when it reaches C's end, else with the first ZMSCORE C; only when no
 * lookup of C was needed is it one ZSCORE more.
 *
 * Keys: the window's union, the current hour's bucket, scratch, the compaction
 * queue and the window's buckets (oldest first). `width` is the slot's width
 * (0 for a standard window), `ttl` the union's lifetime.
 * Returns { maxError, items (flat member, count; every candidate down to the
 * (n+1)-th count, ties included), next (bound on any unreturned member's
 * count), built, split }.
 */
export const topScript = defineScript({
  name: "trending.top",
  write: false,
  keys: ["union", "current", "scratch", "dirty", "...buckets"],
  args: ["n", "ttl", "firstDepth", "maxDepth", "width", "stream", "H", "mergeMax"],
  uses: [markersLua, unionLua],
  lua: `
local n, maxDepth, width = tonumber(n), tonumber(maxDepth), tonumber(width)
local H, mergeMax = tonumber(H), tonumber(mergeMax)
local depth = math.max(n + 1, tonumber(firstDepth))

-- the sets: 1 = U, 2 = P (the previous hour, only while U leaves it out), 3 = C
local key   = { union, buckets[#buckets], current }
local used  = { true, false, true }
local done  = { false, true, false }
local last  = { 0, 0, 0 }
local score = { {}, {}, {} }      -- set -> member -> count there (0: absent)
local order = {}                  -- candidates in the order met
local errs  = { nil, nil, nil }   -- sentinel scores of U, P and C
-- C's cut is known once its pages reached its end (the sentinel, if any, was on them) or a
-- lookup asked it. C is trimmed only by a compaction whose clock has passed the hour while
-- this reader's has not (review 10): rare, but then the answer must not say exact.
local cErrKnown = false
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
  if real < depth - from then
    done[s] = true
    if s == 3 then cErrKnown = true end
  end
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
-- C's lookup of the candidates, its sentinel riding along with the first one made (no extra command)
local function fillC()
  if cErrKnown or done[3] then return fill(3) end
  for _, m in ipairs(order) do
    if score[3][m] == nil then
      local got = fill(3, { SENTINEL })
      errs[3], cErrKnown = got[1], true
      return got
    end
  end
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
local function errorSum()
  -- C not exhausted and no candidate looked up there: one ZSCORE for its cut (the only extra command)
  if not cErrKnown then
    errs[3], cErrKnown = redis.call('ZSCORE', current, SENTINEL), true
  end
  return 0 - (tonumber(errs[1]) or 0) - (tonumber(errs[2]) or 0) - (tonumber(errs[3]) or 0)
end

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
      split, built = previousOpen(dirty, stream, H), true
      score[1] = {}
      -- got[1]: another width's union holds the shared slot (its error sentinel)
      if buildUnion(union, buckets, ttl, width, split, got[1]) then
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
  fillC()
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
    return { maxError = fmt(errorSum()), items = itemsDownTo(values[math.max(k - n, 1)]), next = fmt(T), built = built, split = split }
  end
  if depth >= maxDepth then break end
  from, depth = depth, math.min(depth * 4, maxDepth)
end

-- A tie mass at the boundary: merge the sets (the slow, always exact way).
local m = n + 1
local sets = {}
-- (a slot left holding another width, when this one has nothing to union, is not ours)
if not uNone then sets[#sets + 1] = union end
if split then sets[#sets + 1] = key[2] end
if not cEmpty then sets[#sets + 1] = current end
local total = 0
for _, key in ipairs(sets) do total = total + redis.call('ZCARD', key) end
if total > mergeMax then
  -- Too big to merge in one short script: answer from the candidates. Their counts are exact;
  -- a member not seen counts at most T, so the bound widens by T - (the n-th count): every
  -- statement maxError makes stays true. Unproven: members tied with the n-th count may rank
  -- before the ones returned (ties rank by member), so exact and topProven are false.
  local k = #values
  local nth = values[k - n + 1] or 0
  return { maxError = fmt(errorSum() + math.max(0, T - nth)), items = itemsDownTo(values[math.max(k - n, 1)]), next = fmt(T), built = built, split = split, unproven = true }
end
local src = sets[1]
if #sets > 1 then
  redis.call('ZUNIONSTORE', scratch, #sets, unpack(sets))
  src = scratch
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
if src == scratch then redis.call('UNLINK', scratch) end
return { maxError = fmt(errorSum()), items = items, next = '0', built = built, split = split }
`,
});

/**
 * Keys and arguments as the top read's (no scratch: nothing is merged); `depth`
 * is MEMBER_RANK_DEPTH.
 *
 * The member's count is one lookup per set (U, P while U leaves it out, C, each
 * with the set's sentinel, C's too: see the top read):
 * O(log N), nothing merged. Its rank: a member ranked above it has a window count
 * of at least its count s, so at least s / sets in one set, and in every set j at
 * least s - (the other sets' highest counts). When one of these ranges holds at
 * most `depth` members a set, they are read (ZREVRANGEBYSCORE) and looked up in
 * the other sets, and the rank is exact (ties: TypeScript counts the tied
 * members before it in byte order). Otherwise (a member deep in a big window)
 * the rank is given as bounds from ZCOUNTs: at least 1 + the most members above
 * s in any one set, at most 1 + every other member at or above s / sets in any set.
 * Returns { maxError, count, rank (exact, or the lower bound), rankMax, ties, rankExact }.
 */
export const memberScript = defineScript({
  name: "trending.member",
  write: false,
  keys: ["union", "current", "dirty", "...buckets"],
  args: ["member", "ttl", "width", "stream", "H", "depth"],
  uses: [markersLua, unionLua],
  lua: `
local width, H, depth = tonumber(width), tonumber(H), tonumber(depth)

local ask = markersOf(width)
ask[#ask + 1] = member
local got = redis.call('ZMSCORE', union, unpack(ask))
local split, uErr, uCount, uNone = false, nil, nil, false
if validUnion(got, width) then
  split, uErr, uCount = got[2] and true or false, got[1], got[#ask]
else
  split = previousOpen(dirty, stream, H)
  -- got[1]: another width's union holds the shared slot (its error sentinel)
  if buildUnion(union, buckets, ttl, width, split, got[1]) then
    got = redis.call('ZMSCORE', union, SENTINEL, member)
    uErr, uCount = got[1], got[2]
  else
    uNone = true
  end
end
-- the sets and the member's count in each, in the top read's order of addition (U, P, C)
local sets, counts, pErr = {}, {}, nil
if not uNone then sets[#sets + 1], counts[#counts + 1] = union, tonumber(uCount) or 0 end
if split then
  local p = redis.call('ZMSCORE', buckets[#buckets], SENTINEL, member)
  pErr = p[1]
  sets[#sets + 1], counts[#counts + 1] = buckets[#buckets], tonumber(p[2]) or 0
end
-- C's cut rides along: a compaction whose clock has passed the hour may have trimmed it (review 10)
local c = redis.call('ZMSCORE', current, SENTINEL, member)
sets[#sets + 1], counts[#counts + 1] = current, tonumber(c[2]) or 0
local sum = 0
for i = 1, #counts do sum = sum + counts[i] end
local maxError = fmt(0 - (tonumber(uErr) or 0) - (tonumber(pErr) or 0) - (tonumber(c[1]) or 0))
if sum <= 0 then return { maxError = maxError, count = '0', rank = false } end

-- Members that can rank above: listed from pages of at most depth, then looked up elsewhere.
local known, cands, seen = {}, {}, {}
for t = 1, #sets do known[t] = {} end
local function take(t, page)
  for i = 1, #page, 2 do
    known[t][page[i]] = tonumber(page[i + 1])
    if not seen[page[i]] then
      seen[page[i]] = true
      cands[#cands + 1] = page[i]
    end
  end
end
-- a little below a bound: a rounding of the arithmetic must not leave a member out
local function below(x) return fmt(x * (1 - 1e-12)) end
local listed = true
-- 1. one with a count of at least s has at least s / sets in some set
local floor = below(sum / #sets)
for t = 1, #sets do
  local page = redis.call('ZREVRANGEBYSCORE', sets[t], '+inf', floor, 'WITHSCORES', 'LIMIT', 0, depth + 1)
  if #page > 2 * depth then listed = false break end
  take(t, page)
end
if not listed then
  -- 2. tighter, from one set: in every set j it has at least s - (the other sets' highest counts)
  known, cands, seen = {}, {}, {}
  for t = 1, #sets do known[t] = {} end
  local highest, total = {}, 0
  for t = 1, #sets do
    local top = redis.call('ZREVRANGE', sets[t], 0, 0, 'WITHSCORES')
    highest[t] = math.max(tonumber(top[2]) or 0, 0)
    total = total + highest[t]
  end
  local best, bound = nil, 0
  for t = 1, #sets do
    local need = sum - (total - highest[t])
    if need > bound then best, bound = t, need end
  end
  if best then
    local page = redis.call('ZREVRANGEBYSCORE', sets[best], '+inf', below(bound), 'WITHSCORES', 'LIMIT', 0, depth + 1)
    if #page <= 2 * depth then
      take(best, page)
      listed = true
    end
  end
end
if not listed then
  -- too many near its count to list (a member deep in a big window): bounds in O(log N)
  local lo, hi = 0, 0
  for t = 1, #sets do
    local above = redis.call('ZCOUNT', sets[t], '(' .. fmt(sum), '+inf')
    if above > lo then lo = above end
    hi = hi + redis.call('ZCOUNT', sets[t], floor, '+inf')
    if counts[t] >= tonumber(floor) then hi = hi - 1 end
  end
  return { maxError = maxError, count = fmt(sum), rank = lo + 1, rankMax = hi + 1, rankExact = false }
end
for t = 1, #sets do
  local missing = {}
  for _, m in ipairs(cands) do
    if known[t][m] == nil then missing[#missing + 1] = m end
  end
  if #missing > 0 then
    local got = redis.call('ZMSCORE', sets[t], unpack(missing))
    for i, m in ipairs(missing) do known[t][m] = tonumber(got[i]) or 0 end
  end
end
local above, ties = 0, {}
for _, m in ipairs(cands) do
  if m ~= member then
    local v = 0
    for t = 1, #sets do v = v + known[t][m] end
    if v > sum then above = above + 1 elseif v == sum then ties[#ties + 1] = m end
  end
end
return { maxError = maxError, count = fmt(sum), rank = above + 1, ties = ties, rankExact = true }
`,
});

/** Stream names in byte order after `after` ('' from the first), at most `limit`. */
export const listScript = defineScript({
  name: "trending.list",
  write: false,
  keys: ["names"],
  args: ["after", "limit"],
  lua: `
local from = '-'
if after ~= '' then from = '(' .. after end
return redis.call('ZRANGE', names, from, '+', 'BYLEX', 'LIMIT', 0, tonumber(limit))
`,
});
