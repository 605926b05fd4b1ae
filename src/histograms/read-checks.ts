import { defineLua } from "../redis/script.ts";
import { bucketsLua } from "./scripts.ts";

/**
 * The checks a range read makes before it unions many parts (issue 15), as Lua the read script
 * (read-scripts.ts) calls: each function reads only its parameters and reports the commands it
 * spent, so the script keeps its budget (MAX_READ_COMMANDS) in one place.
 *
 * - `pairBlock`: Bonferroni's inequality over a block of parts of known size. k parts hold at least
 *   the sum of their least sizes less the sum of their pairwise overlaps (a bucket shared by m of
 *   them is counted m times and taken back m(m-1)/2 >= m - 1 times). The block is the fewest parts
 *   from `first` on whose least sizes pass `target` (k <= 10, k(k-1)/2 pairs within `pairs`), and
 *   each pair is asked with `ZINTERCARD … LIMIT` (O(smaller part)), which stops counting once the
 *   overlaps found keep them within the cap: parts that share their buckets stop at the first pair.
 * - `spanOf`: the buckets between the range's extremes (its `:ext` union), which bound the buckets of
 *   its union: data in 4 patterns of 5,000 spans 20,000, days of buckets of their own spread far.
 * - `sizeDays`: `ZCARD` of the days read one by one, in a spread order (neighbouring days tend to
 *   share their buckets, so a block of days far apart says more), until they hold `enough` members
 *   or the budget is down to `reserve`.
 * - `likelyOver`: after a block's pairs could not prove the cap, the fewest parts whose union those
 *   pairs (and a triple, for a core all parts share) predict over it: days drawn at random from
 *   ~26,000-45,000 buckets share too much for Bonferroni and too little for the cap. The read then
 *   probes them (`firstParts`: which parts, and the members they may hold).
 * - `probe`: the union, alone, of the largest parts of known size that fit in `probeCap` members (a
 *   union about the size of a read at the cap), when they may pass the cap and leave parts out.
 */
export const readChecksLua = defineLua(
  "histograms.readChecks",
  ["pairBlock", "likelyOver", "firstParts", "spanOf", "sizeDays", "probe"],
  `
-- the block: parts from first on until their least sizes pass target (the cap, or more: k parts of
-- s buckets drawn at random from D share about k(k-1)/2 s^2/D, so more parts prove more); returns
-- a refusal (or nil), whether the block could pass the cap (else the check had no power), where the
-- next block starts, and the commands spent
local function pairBlock(list, first, pairs, cap, target)
  local k, total = 0, 0
  while first + k <= #list and total <= target and (k + 1) * k / 2 <= math.min(pairs, 45) do
    total = total + list[first + k].least
    k     = k + 1
  end
  if k < 2 or total <= cap then return nil, false, first + k, 0 end
  local over, common, spent = total - cap, 0, 0
  -- what the pairs asked found (likelyOver): each part's largest overlap with one before it, and
  -- the products of the sizes of the parts of each pair
  -- of the pairs LIMIT did not cut: how many, the products of their parts' sizes, their overlaps,
  -- and the least and most share of that product a pair held
  local seen = {first = first, k = k, best = {}, pairs = 0, product = 0, common = 0, low = math.huge, high = 0}
  for j = first + 1, first + k - 1 do
    seen.best[j] = 0
    for i = first, j - 1 do
      if common < over then
        local c       = redis.call('ZINTERCARD', 2, list[i].key, list[j].key, 'LIMIT', over - common)
        local product = list[i].card * list[j].card
        if c < over - common and product > 0 then
          seen.pairs   = seen.pairs + 1
          seen.product = seen.product + product
          seen.common  = seen.common + c
          seen.low     = math.min(seen.low, c / product)
          seen.high    = math.max(seen.high, c / product)
        end
        common       = common + c
        spent        = spent + 1
        seen.best[j] = math.max(seen.best[j], c)
      end
    end
  end
  if common < over then
    return {refused = 'too_many_buckets', buckets = total - common, pair = k == 2, parts = k}, true, first + k, spent
  end
  return nil, true, first + k, spent, seen
end
-- After a block's pairs could not prove the cap (seen: what they found), how many parts to probe
-- (the block's first, then the parts after it in \`list\`, then \`parts\` less those, days of at most
-- dayMax members), or nil; and the commands spent. Only for parts that look drawn at random from
-- one pool: each pair then shares about s_i s_j / D, so no pair's share of the product of its
-- sizes is more than twice another's (days in patterns share all or nothing, drifting days much
-- or nothing: their pairs say nothing of a D). Then k parts of s_i hold D (1 - prod(1 - s_i / D)),
-- with D about sum(s_i s_j) / sum(overlaps) over the pairs LIMIT did not cut (at least 3; days of
-- 5,000 from 30,000 share ~833 a pair: 7 of them hold ~21,600, which 18 pairs could not prove);
-- and, a second count that must agree, each part brings at most its size less its largest overlap
-- found with one before it.
-- When the block's parts are not predicted over the cap, a triple (one ZINTERCARD of 3) tells a
-- core every part shares from that pool: C buckets in all, the other t = s - C drawn at random from
-- D_t. Parts of s then share c = C + t^2 / D_t a pair and T = C + t^3 / D_t^2 a triple, so
-- (T - C)(s - C) = (c - C)^2, C = (T s - c^2) / (T + s - 2c) (0 for days of one pool), and m parts
-- hold C + D_t (1 - (1 - t / D_t)^m): 3,000 shared and 2,000 from 60,000 a day share ~3,067 a
-- pair, as days of 5,000 drawn from 8,200 would, but ~3,000 a triple, not ~1,900, and 12 of them
-- hold ~23,000. Such a prediction reaches past the parts measured: it takes D_t from one standard
-- error more overlap, must pass the cap by 5 times the margin, and its probe takes at most half the
-- parts (past that, the union of all costs little more).
local function likelyOver(list, seen, cap, margin, parts, dayMax)
  if seen.pairs < 3 or seen.low == 0 or seen.high > 2 * seen.low then return nil, 0 end
  local f          = seen.first
  local d          = seen.product / seen.common
  local rest, most = 1, 0
  for m = 1, seen.k do
    local j = f + m - 1
    rest = rest * math.max(0, 1 - list[j].card / d)
    most = most + list[j].card - (seen.best[j] or 0)
    if m >= 2 and d * (1 - rest) > cap + margin and most > cap + margin then return m, 0 end
  end
  if seen.k < 3 then return nil, 0 end
  local s = 0
  for j = f, f + seen.k - 1 do s = s + list[j].card end
  s = s / seen.k
  -- a pair's overlap, and one standard error more (about sqrt(c / pairs) for counts): with a core,
  -- the tails' share (c - C) is small and its noise would make a large D_t
  local c    = s * s / d
  local T    = redis.call('ZINTERCARD', 3, list[f].key, list[f + 1].key, list[f + 2].key)
  local core = 0
  if T + s - 2 * c > 0 then core = (T * s - c * c) / (T + s - 2 * c) end
  core = math.max(0, math.min(core, T, c))
  local t = s - core
  if t <= 0 then return nil, 1 end
  local pool = math.huge
  c = c + math.sqrt(c / seen.pairs)
  if c > core then pool = t * t / (c - core) end
  for m = seen.k + 1, math.floor(parts / 2) do
    local j = f + m - 1
    most = most + (list[j] and list[j].card or dayMax)
    local predicted = core + m * t
    if pool < math.huge then predicted = core + pool * (1 - math.max(0, 1 - t / pool) ^ m) end
    if predicted > cap + 5 * margin and most > cap + margin then return m, 1 end
  end
  return nil, 1
end
-- The first m parts likelyOver counts: the sized ones largest first, then keys of \`parts\` not sized
-- (days of at most dayMax members); and the members they may hold.
local function firstParts(sized, parts, m, dayMax)
  local list, most, isSized = {}, 0, {}
  for j, p in ipairs(sized) do
    isSized[p.key] = true
    if j <= m then
      list[j] = p
      most    = most + p.card
    end
  end
  for _, key in ipairs(parts) do
    if #list >= m then break end
    if not isSized[key] then
      list[#list + 1] = {key = key, card = dayMax, n = 0}
      most = most + dayMax
    end
  end
  return list, most
end
-- ext: a ZUNION … WITHSCORES of the days' extremes ('max', and 'min' negated); 0 when no day holds
-- a value (days of the layout before ':ext' hold buckets without them: not bounded here)
local function spanOf(ext, width)
  local low, high
  for j = 1, #ext, 2 do
    if ext[j] == 'max' then high = tonumber(ext[j + 1]) elseif ext[j] == 'min' then low = 0 - tonumber(ext[j + 1]) end
  end
  if not (low and high) then return 0 end
  return bucketOf(high, width) - bucketOf(low, width) + 1
end
local function spreadOf(d)
  return (d * 7919) % 401
end
-- groups: {days = {index, ...}, exact = sum when all are sized}; each day sized joins \`sized\` and
-- \`known\` (index -> size); a group whose days are all sized gets its exact sum. Returns the
-- members seen and the commands spent.
local function sizeDays(groups, keys, sized, known, enough, left, reserve)
  local pending = {}
  for _, g in ipairs(groups) do
    if not g.exact then
      g.unsized = #g.days
      for _, d in ipairs(g.days) do pending[#pending + 1] = {d = d, g = g} end
    end
  end
  table.sort(pending, function(a, b) return spreadOf(a.d) < spreadOf(b.d) end)
  local seen, spent = 0, 0
  for _, p in ipairs(pending) do
    if seen >= enough or left - spent <= reserve then break end
    local c = redis.call('ZCARD', keys[p.d])
    known[p.d]  = c
    seen        = seen + c
    spent       = spent + 1
    p.g.unsized = p.g.unsized - 1
    p.g.sized   = (p.g.sized or 0) + c
    if p.g.unsized == 0 then p.g.exact = p.g.sized end
    sized[#sized + 1] = {key = keys[p.d], least = c - 1, card = c, n = 0, at = p.d}
  end
  table.sort(sized, function(a, b)
    if a.least ~= b.least then return a.least > b.least end
    return spreadOf(a.at) < spreadOf(b.at)
  end)
  return seen, spent
end
-- sized: largest first, each {key, card, n = the sums it may hold}; parts: how many the union has.
-- Returns a refusal (or nil) and the commands spent (the refusal's UNLINK stands for the union's).
local function probe(sized, parts, scratch, cap, probeCap)
  local call, members, others, all = {'ZUNIONSTORE', scratch, 0}, 0, 1, 0
  for _, s in ipairs(sized) do
    all = all + s.card
    if members + s.card <= probeCap then
      call[#call + 1] = s.key
      members = members + s.card
      others  = others + s.n
    end
  end
  -- only when they may pass the cap and leave parts out (else the union itself is this bounded)
  if members - others <= cap or (#sized >= parts and all <= probeCap) then return nil, 0 end
  call[3] = #call - 3
  local got = redis.call(unpack(call))
  if got - others <= cap then return nil, 1 end
  redis.call('UNLINK', scratch)
  return {refused = 'too_many_buckets', buckets = got - others, parts = #call - 3}, 1
end`,
  [bucketsLua],
);
