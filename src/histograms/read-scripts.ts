import { defineScript } from "../redis/script.ts";
import { invalid } from "../validation.ts";
import { readChecksLua } from "./read-checks.ts";
import { readEdgeLua } from "./read-edge.ts";
import { READ_PARTS_LUA } from "./read-parts.ts";
import { notFound, retentionLua } from "./scripts.ts";
import { MAX_READ_BUCKETS, MAX_UNION_ENTRIES } from "./validate.ts";

/**
 * GET a range: `days`/`exts` are the range's days that may hold data; month k
 * of `months` is a month of the range whose rollup may stand for its days
 * `days[monthFirsts[k]]` and the `monthLengths[k] - 1` after it: a whole
 * month, or the month of a range ending now, whose rollup holds nothing past
 * the range (no observation is dated later; `read` in reads.ts decides).
 * A rollup stands for its days when its first day is still kept (else it
 * holds days that expired) and the histogram kept rollups from that month
 * on; otherwise its days are read. A day past its retention holds nothing and
 * is not read. So a 400-day range unions at most ~75 keys (~43 ending today).
 *
 * Sizes before any union (issue 15, point 3): a range whose days could hold
 * more buckets than the cap sizes its parts first (one ZCARD each, O(1)) and
 * is refused before any union when one month rollup alone holds more buckets
 * than the cap, or when the parts hold more than `maxEntries` entries in all
 * (ZUNIONSTORE reads every one of them). The days read one by one are sized
 * by their month's rollup (every member of a day is one of its month's) and,
 * while the sum could still be over the limit, one by one, within
 * `maxCommands` for the whole read. Only then is the range unioned: into the
 * script directly when its entries cannot pass the cap, else into the scratch
 * key whose size (ZUNIONSTORE's reply) is checked before anything is loaded;
 * a union that may hold more than the cap and a day's buckets is first checked
 * by its parts' pairs and, for many small parts or where the pairs predict the
 * cap without proving it, a probe (read-checks.ts), so no union far past the
 * cap is built only to be refused.
 * The edge months (the first of a range starting after its 1st, the last of one ending before its
 * month's last day) are read as their rollup when their days outside the range hold nothing
 * (read-edge.ts): a month's days at the cap merge ~20,000 entries instead of ~150,000, and its
 * rollup alone past the cap refuses the range before any union.
 * A range of one part (a day, or one month rollup) is read as it is: its own
 * set is its union. `name` only names the histogram in a refusal. The body
 * starts with the choice of the parts (read-parts.ts).
 *
 * `piped` = '1' (read, when the client can pipeline): a `ZPOPMIN scratch popCount` follows this
 * script in the same HTTP request, so a union into scratch is left there, sized, for it to take
 * (and delete): the script does not load it (at the 20,000-bucket cap that halves the script:
 * `ZRANGE` into Lua and joining it took ~40 % of it). Every command after the script is billed,
 * so a piped read always leaves its union to it (a `ZUNIONSTORE`, where the one script would
 * `ZUNION` into itself) and tightens the days' bounds only as far as the entries limit needs
 * (where the one script tightens them to keep a union under the cap out of scratch): a read
 * costs the same or one command less. A refusal deletes the scratch itself (the `ZPOPMIN` then
 * finds nothing).
 */
export const readScript = defineScript({
  name: "histograms.read",
  write: false,
  keys: ["meta", "scratch", "...days", "...exts", "...months", "...sumMonths", "...outside"],
  args: [
    "name",
    "maxBuckets",
    "maxEntries",
    "maxCommands",
    "now",
    "perDay",
    "piped",
    "popCount",
    "...monthStarts",
    "...monthFirsts",
    "...monthLengths",
    "...dayStarts",
    "...dayLabels",
    "...dayMonths",
    "...sumMonthStarts",
    "...edgeMonths",
    "...edgeOutside",
    "...edgeSubtract",
    "...outsideLabels",
  ],
  uses: [readChecksLua, readEdgeLua, retentionLua],
  refusals: {
    not_found: (_r, call) => notFound(call.args.name),
    // invalid() throws the ValidationError itself
    too_many_buckets: (r) =>
      invalid([
        {
          path: "from",
          message:
            r.part === true
              ? `the range holds more than ${MAX_READ_BUCKETS} distinct buckets (one month of it alone holds at least ${String(r.buckets)}); narrow it`
              : r.pair === true
                ? `the range holds more than ${MAX_READ_BUCKETS} distinct buckets (two of its parts alone hold at least ${String(r.buckets)}); narrow it`
                : typeof r.parts === "number"
                  ? `the range holds more than ${MAX_READ_BUCKETS} distinct buckets (${String(r.parts)} of its parts alone hold at least ${String(r.buckets)}); narrow it`
                  : `the range holds ${String(r.buckets)} distinct buckets, more than ${MAX_READ_BUCKETS}; narrow it`,
        },
      ]),
    too_many_entries: (r) =>
      invalid([
        {
          path: "from",
          message: `the range's days and month rollups hold ${r.bounded === true ? "up to" : "at least"} ${String(r.entries)} bucket entries to merge, more than ${MAX_UNION_ENTRIES} (counted before merging: the same bucket on many days counts on each); narrow it`,
        },
      ]),
  },
  lua: `${READ_PARTS_LUA}
-- the range's extremes (max, and min negated): asked once, before the union when its span bounds it
local ext
local function extremes()
  local call = {'ZUNION', #extParts}
  for _, k in ipairs(extParts) do call[#call + 1] = k end
  call[#call + 1] = 'AGGREGATE'
  call[#call + 1] = 'MAX'
  call[#call + 1] = 'WITHSCORES'
  return redis.call(unpack(call))
end
local function zunion()
  -- one part is its own union, in the same order: read as it is (ZUNION would build a copy first,
  -- ~4 ms for a day at the 5,000-bucket cap)
  if #parts == 1 then return redis.call('ZRANGE', parts[1], 0, -1, 'WITHSCORES') end
  parts[#parts + 1] = 'WITHSCORES'
  return redis.call('ZUNION', #parts - 1, unpack(parts))
end
local merged, edgeRead
if (#parts - #rollups + coveredDays) * dayCap <= cap then
  -- so few days that the cap cannot be reached (each day holds at most dayCap buckets, and a rollup
  -- only its days'): one ZUNION, nothing stored
  merged = zunion()
else
  -- Sizes before any union: ZUNIONSTORE reads every entry of its parts (10 s for 2M), so the parts'
  -- sizes are summed first, each O(1). A rollup: ZCARD; at most its days' 's:<day>' sums and an old
  -- 'sum' are not buckets, so one holding more than cap + that proves the range is over the cap.
  -- ZCARDs left: EVALSHA, HMGET, the sums, the extremes and at most 4 more (ZINTERCARD, ZUNIONSTORE,
  -- ZMSCORE, ZRANGE, UNLINK: 5 with the union's ZCARD its reply made unneeded, so 8 still suffices;
  -- piped, the ZPOPMIN after the script stands for ZRANGE and UNLINK). What the sizes leave of the
  -- budget goes to more ZINTERCARDs before the union (the largest parts, below).
  local budget = tonumber(maxCommands) - 8 - #order
  local lower  = 0
  -- parts of known size, each with the fewest buckets it may hold (its size less what may not be one)
  local sized  = {}
  for _, r in ipairs(rollups) do
    local card = redis.call('ZCARD', r.key)
    budget = budget - 1
    if card - r.n - 1 > cap then return {refused = 'too_many_buckets', buckets = card - r.n - 1, part = true} end
    lower = lower + card
    sized[#sized + 1] = {key = r.key, least = card - r.n - 1, card = card, n = r.n, at = 0}
  end
  -- A day holds at most dayCap buckets and an old 'sum'; every member of a day is one of its month
  -- rollup's (once the histogram has rollups), so k days of a month hold at most k times its size.
  local dayMax   = dayCap + 1
  -- a union of at most this many buckets takes about what a read at the cap takes
  local probeCap = cap + dayMax
  -- a block of parts checked pair by pair after the days are sized: half the cap more than the cap,
  -- so days of buckets drawn at random from more than ~35,000 are refused by it (at 5,000 a day, 7
  -- days and 21 pairs; with just the cap, 5 days and 10 pairs, their overlaps hid up to ~40,000)
  local blockTarget = cap + math.floor(cap / 2)
  local upper  = lower
  -- months whose rollup may bound their days (one ZCARD each): no month's days sized one by one
  -- takes the budget they need (a raised retention leaves up to 14 such months, review 10)
  local pending = 0
  for _, g in ipairs(order) do
    g.bound = #g.days * dayMax
    upper   = upper + g.bound
    if #g.days > 1 and tonumber(sumMonthStarts[g.month]) >= bounds then pending = pending + 1 end
  end
  table.sort(order, function(a, b) return a.bound > b.bound end)
  -- Alone, the script tightens the bounds until the union may go straight into it (at most cap
  -- entries: one ZUNION, nothing stored); piped, the union goes to scratch anyway, and the bounds
  -- are tightened only as far as the entries limit needs.
  local enough = toPop and entryCap or cap
  for _, g in ipairs(order) do
    if lower > entryCap or upper <= enough then break end
    local covered = tonumber(sumMonthStarts[g.month]) >= bounds
    if #g.days > 1 and covered then pending = pending - 1 end
    if #g.days > 1 and covered and budget > 0 then
      g.card      = redis.call('ZCARD', sumMonths[g.month])
      local bound = #g.days * math.min(dayMax, g.card)
      budget  = budget - 1
      upper   = upper - g.bound + bound
      g.bound = bound
    end
    -- exact sizes only where the bound alone would refuse (a month's days before its rollup: always)
    if upper > entryCap and (#g.days <= budget - pending or not covered) then
      local exact = 0
      for _, d in ipairs(g.days) do
        local card = redis.call('ZCARD', days[d])
        exact = exact + card
        sized[#sized + 1] = {key = days[d], least = card - 1, card = card, n = 0, at = d}
      end
      budget  = budget - #g.days
      g.exact = exact
      upper   = upper - g.bound + exact
      lower   = lower + exact
    end
  end
  if lower > entryCap then return {refused = 'too_many_entries', entries = lower} end
  if upper > entryCap then return {refused = 'too_many_entries', entries = upper, bounded = true} end
  if upper <= cap then
    -- no more entries than the cap: nothing can be over it
    merged = zunion()
  else
    -- the size before loading: a range over the cap is refused before its buckets enter the script.
    -- One month rollup alone is its own union (its size is lower, from its ZCARD): read as it is,
    -- nothing stored. Else ZUNIONSTORE into scratch, whose reply is the union's size.
    local source, card, stored = scratch, lower, nil
    if #parts == 1 and #rollups == 1 then
      source = parts[1]
    else
      -- The largest parts alone may prove the range over the cap without its union (which takes
      -- ~0.5 s for 200,000 distinct entries): Bonferroni over the fewest whose least sizes pass the
      -- cap (pairBlock, read-checks.ts): parts that share their buckets stop at the first pair and go
      -- on to the union; parts that share none are refused before it (k = 2 is one ZINTERCARD; k is
      -- at most what the command budget left allows, 10 at most: parts of at least 2,001 buckets).
      --
      -- The edge months first (read-edge.ts): one whose days outside the range hold nothing is its
      -- rollup, a part in their place, sized where the range's values span more than the cap (and
      -- refused at once when its buckets alone pass it).
      local span
      local function spanNow()
        if not span then
          ext  = extremes()
          span = spanOf(ext, tonumber(settings[1]))
        end
        return span
      end
      local edges, edgeRefusal
      edgeRefusal, edges, parts, sized, upper, budget = rollEdges(order, parts, sized, upper, budget, days, sumMonths,
        cap, dayMax, spanNow)
      if edgeRefusal then return edgeRefusal end
      local left  = budget + 1
      -- days sized one by one below, by index (the edges' check reuses them)
      local known = {}
      table.sort(sized, function(a, b) return a.least > b.least end)
      local refusal, powered, nextAt, spent = pairBlock(sized, 1, math.max(budget, 0) + 1, cap, cap)
      left = left - spent
      if refusal then return refusal end
      -- Many parts (issue 15): the days read one by one are only bounded above, so days of a few
      -- thousand buckets of their own (up to 39 of 5,000: 195,000 distinct) reached the union
      -- unrefused, and it ran before its size refused it (0.04-0.4 s). When the union may hold more
      -- than probeCap buckets (its entries, and the span of the range's extremes, which bounds its
      -- buckets: both may), the days are sized (in a spread order, until a block's worth and a day,
      -- within the budget), the parts of known size are checked pair by pair again, block after
      -- block (one block that shares its buckets does not vouch for the next), and if the first cannot
      -- pass the cap (parts of a few thousand buckets), the largest parts that fit in probeCap are
      -- unioned alone and refused when they pass it. The union of every part comes after, as before
      -- (it overwrites the probe's key), so an answer is the same, byte for byte.
      if math.min(upper, spanNow()) > probeCap and left >= 10 then
        local seen
        seen, spent = sizeDays(order, days, sized, known, blockTarget + dayCap, left, 4)
        left = left - spent
        local found
        if seen > 0 then
          local more
          refusal, powered, nextAt, spent, found = pairBlock(sized, 1, left - 3, cap, blockTarget)
          left, more = left - spent, powered
          while not refusal and more and nextAt <= #sized and left > 3 do
            refusal, more, nextAt, spent = pairBlock(sized, nextAt, left - 3, cap, blockTarget)
            left = left - spent
          end
          if refusal then return refusal end
        end
        -- The first block's pairs may not prove the cap and still predict it (days of buckets drawn
        -- at random from ~26,000-45,000: their pairs share too much for Bonferroni; or a core they all
        -- share and the rest drawn from many more, told by a triple): then the union of the fewest
        -- parts predicted over the cap is the probe (7 days of 5,000 from 30,000: 35,000 entries
        -- into ~21,600 buckets, where the union of all 30 days read 150,000 into ~29,900 and was
        -- refused after it).
        local fewest
        if found and left >= 3 then
          fewest, spent = likelyOver(sized, found, cap, math.floor(cap / 100), #parts, dayMax)
          left = left - spent
        end
        if (fewest or not powered) and left >= 2 then
          local list, most = sized, probeCap
          if fewest then list, most = firstParts(sized, parts, fewest, dayMax) end
          refusal, spent = probe(list, #parts, scratch, cap, most)
          left = left - spent
          if refusal then return refusal end
        end
      end
      -- The end edge month may be read as its rollup less the days after the range (read-edge.ts).
      local union
      local edgeSums, subtracted
      union, edgeRead, edgeSums, subtracted = edgeUnion(scratch, parts, edges, sumMonths, days, dayLabels, known, dayMax, entryCap,
        left)
      card = redis.call(unpack(union))
      stored = card
      if edgeRead then
        -- not buckets: the edge months' sums (counted above, non-zero ones), and the buckets left at
        -- exactly 0 (only in days outside the range; no stored bucket is 0: observe removes a new
        -- bucket it takes back), dropped when the count or the ZPOPMIN needs it
        card = card - edgeSums
        if subtracted and (card > cap or stored > tonumber(popCount)) then
          local zeros = redis.call('ZREMRANGEBYSCORE', scratch, 0, 0)
          card   = card - zeros
          stored = stored - zeros
        end
      end
    end
    if card > cap then
      -- not buckets: 'sum', and the 's:<day>' sums the rollups brought (asked only near the cap)
      local others = {'ZMSCORE', source, 'sum'}
      for d = 1, #days do
        if skip[d] then others[#others + 1] = 's:' .. dayLabels[d] end
      end
      for _, v in ipairs(redis.call(unpack(others))) do
        if v then card = card - 1 end
      end
      if card > cap then
        if source == scratch then redis.call('UNLINK', scratch) end
        return {refused = 'too_many_buckets', buckets = card}
      end
    end
    if toPop and source == scratch then
      -- left for the ZPOPMIN after the script, which takes popCount members: all of them (it
      -- deletes the key once empty). Never more: every member past the cap is a sum, at most one
      -- a day and 'sum', which read() counts in popCount.
      if stored > tonumber(popCount) then
        redis.call('UNLINK', scratch)
        error({err = 'ERR histograms.read: the union holds ' .. stored .. ' members, more than popCount'})
      end
    else
      merged = redis.call('ZRANGE', source, 0, -1, 'WITHSCORES')
      if source == scratch then redis.call('UNLINK', scratch) end
    end
  end
end
-- The merged members go back as they came, one string 'member,score,member,score,…' in ZRANGE's
-- order: read (reads.ts) tells the buckets from the sums ('sum', 's:<day>') and adds those
-- after the days' sums above, in the same order. At the 20,000-bucket cap, a loop here over
-- 40,000 elements and cjson of 40,000 strings took ~10 of the script's ~35 ms; table.concat is
-- one pass in C, and cjson then encodes one string.
if #order > 0 then sum = string.format('%.17g', sum) else sum = nil end
ext = ext or extremes()
local found = {}
for j = 1, #ext, 2 do found[ext[j]] = ext[j + 1] end
-- piped, a union left in scratch has no 'merged': the ZPOPMIN after the script brings it
if merged then merged = table.concat(merged, ',') end
return {settings = settings, merged = merged, sum = sum, edge = edgeRead, max = found.max, negMin = found.min}
`,
});
