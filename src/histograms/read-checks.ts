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
 * - `likelyOver`: after a block's pairs could not prove the cap, the fewest of its parts whose union
 *   those pairs predict over it (days drawn at random from ~26,000-45,000 buckets: too much shared
 *   for Bonferroni, too little for the cap), which the read then probes.
 * - `probe`: the union, alone, of the largest parts of known size that fit in `probeCap` members (a
 *   union about the size of a read at the cap), when they may pass the cap and leave parts out.
 */
export const readChecksLua = defineLua(
  "histograms.readChecks",
  ["pairBlock", "likelyOver", "spanOf", "sizeDays", "probe"],
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
  -- the products of the sizes of the parts of each pair, and the least and most share of that
  -- product a pair held (of the pairs LIMIT did not cut)
  local seen = {first = first, k = k, best = {}, product = 0, common = 0, low = math.huge, high = 0}
  for j = first + 1, first + k - 1 do
    seen.best[j] = 0
    for i = first, j - 1 do
      if common < over then
        local c       = redis.call('ZINTERCARD', 2, list[i].key, list[j].key, 'LIMIT', over - common)
        local product = list[i].card * list[j].card
        if c < over - common and product > 0 then
          seen.low  = math.min(seen.low, c / product)
          seen.high = math.max(seen.high, c / product)
        end
        common       = common + c
        spent        = spent + 1
        seen.product = seen.product + product
        seen.best[j] = math.max(seen.best[j], c)
      end
    end
  end
  seen.common = common
  if common < over then
    return {refused = 'too_many_buckets', buckets = total - common, pair = k == 2, parts = k}, true, first + k, spent
  end
  return nil, true, first + k, spent, seen
end
-- After a block's pairs could not prove the cap (seen: what they found), the fewest of its parts
-- whose union they predict over it by \`margin\`, or nil. Only for parts that look drawn at random
-- from one pool of D buckets: each pair then shares about s_i s_j / D, so no pair's share of the
-- product of its sizes is more than twice another's (days in patterns share all or nothing,
-- drifting days much or nothing: their pairs say nothing of a D). Then k parts of s_i hold
-- D (1 - prod(1 - s_i / D)), with D about sum(s_i s_j) / sum(overlaps) over the pairs asked (days
-- of 5,000 from 30,000 share ~833 a pair: 7 of them hold ~21,600, which 18 pairs could not prove);
-- and, as a second count, each part brings at most its size less its largest overlap found with
-- one before it.
local function likelyOver(list, seen, cap, margin)
  if seen.common == 0 or seen.low == 0 or seen.high > 2 * seen.low then return nil end
  local d          = seen.product / seen.common
  local rest, most = 1, 0
  for m = 1, seen.k do
    local j = seen.first + m - 1
    rest = rest * math.max(0, 1 - list[j].card / d)
    most = most + list[j].card - (seen.best[j] or 0)
    if m >= 2 and d * (1 - rest) > cap + margin and most > cap + margin then return m end
  end
  return nil
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
