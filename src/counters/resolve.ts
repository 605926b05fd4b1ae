/**
 * What every counters read shares (./read-scripts.ts): `resolve`, the key a read looks at and the
 * union bound's sizing, the keys and arguments every read declares, and the refusal past the bound.
 * Its own module so that the read scripts fit in one's head.
 */
import { ValidationError } from "../errors.ts";
import { defineLua, type Refusal } from "../redis/script.ts";
import { fieldsLua } from "./life.ts";
import { MAX_READ_COMMANDS, MAX_SIZE_READS } from "./limits.ts";
import { weekSizeLua } from "./week-size.ts";

/**
 * What a read looks at: `resolve` returns the key to read and whether it is scratch (an
 * unfinished range's union, which the read deletes before returning), or nil when no bucket of
 * this life exists. A plain read has no `buckets` and reads `target`, the counter itself (also
 * passed as `scratch` and `index`, which it leaves unread). A period read has its buckets (or
 * rollups); `target` is the cache slot of its range, `scratch` the counter's scratch key,
 * `index` its index; `aggregate` is SUM|MIN|MAX, `cache` `all` when the range has ended, `head`
 * when it ends in the current period, `none` when it reaches past it,
 * `cacheSeconds` how long a finished range's union is kept, `rangeId` the range's id;
 * `months` the month rollups of the months the range touches (none for `week`/`month` counters)
 * and `monthOf[i]` the 1-based position there of `buckets[i]`'s month (what bounds the work of a
 * union, `entriesOf`), `maxEntries` the most entries a union may walk, `maxUnionMembers` the most it
 * may walk when they may be as many distinct members; `sealed` is -1, or for a `week` read how many
 * of its buckets, from the first, ended more than CLOCK_SKEW_MS ago (their size records, index
 * fields `n:<key>`, bound its union: entriesOfWeeks; it records what it measured of those).
 *
 * A counter has a fixed few cache slots; a finished range's union goes to the
 * slot its id hashes to, replacing whatever range that slot held, and the
 * slot's mark (index field `u:<slot key>`, read with `late` in one HMGET)
 * records "<late>|<range id>". So whatever ranges a reader asks
 * for, a counter holds at most SLOTS cached unions (scripts can only touch
 * declared keys, which rules out LRU eviction across an open set of keys).
 */
export const resolveLua = defineLua(
  "counters.resolve",
  ["resolve", "resolveCalls", "budgetOf", "weekMember", "unionInto"],
  `
-- which of these keys are part of the counter's current life, and their positions in keys; then
-- the values of the index fields named in extra (nil: none), read by the same HMGET
-- A week read (sealed >= 0) also reads each key's size record (n:<key>, scripts.ts), returned as
-- recs (key -> upper bound of its members; nil for other periods).
local function liveOf(index, keys, extra, sealed)
  local live, at, more = {}, {}, {}
  local asked = extra
  if sealed >= 0 then
    asked = {}
    for i = 1, #keys do asked[i] = 'n:' .. keys[i] end
    for _, f in ipairs(extra or {}) do asked[#asked + 1] = f end
  end
  local values  = fields(index, keys, asked)
  local soonest = nil
  local recs    = nil
  if sealed >= 0 then recs = {} end
  for i = 1, #keys do
    if values[i] then
      live[#live + 1] = keys[i]
      at[#at + 1]     = i
      -- the recorded expiry (epoch ms, 0: none): the soonest bounds how long their union may be kept
      local expires = tonumber(values[i])
      if expires and expires > 0 and (not soonest or expires < soonest) then soonest = expires end
      if recs then recs[keys[i]] = tonumber(values[#keys + i]) end
    end
  end
  if extra then
    local skip = #keys
    if recs then skip = skip + #keys end
    for i = 1, #extra do more[i] = values[skip + i] end
  end
  return live, at, more, soonest, recs
end
-- Whether a union of the live keys (at positions at of buckets) is within bounds, and the entries
-- it would walk (issue 15: bounded work, or a 400). ZUNIONSTORE is linear in the entries it reads
-- (~0.2 µs each) and in the members it makes (~1.5 µs each), so it may walk at most limit entries,
-- and, unless its members are known to be fewer, at most memberLimit. First bounds, one ZCARD a
-- month: a bucket or rollup holds no member its month's rollup (months[monthOf[i]]) lacks, as
-- every write adds to both and a delete takes from both, so n keys of a month hold at most n times
-- its ZCARD entries, and the union at most the sum of the months' ZCARDs members. A whole month's
-- key is that rollup itself: its ZCARD is exact, so those come first, and once they alone pass a
-- limit the answer is certain without another ZCARD (past the bound a member read then spends its
-- commands on its ZSCOREs: 400 days of days in ≤ 60). Only when the bounds do not settle it (or a
-- month has no rollup, or it is gone) one ZCARD a key not yet counted, stopping once past the
-- limit. A bound that came out too low would cost time, never a wrong answer.
local function entriesOf(live, at, months, monthOf, limit, memberLimit, budget)
  local cardOf, members, sound, spent = {}, 0, #months > 0, 0
  if sound then
    local perMonth, whole, total, certain = {}, {}, 0, 0
    for i = 1, #live do
      local m = tonumber(monthOf[at[i]])
      if m == 0 then sound = false break end
      perMonth[m] = (perMonth[m] or 0) + 1
      if live[i] == months[m] then whole[m] = true end
    end
    if sound then
      for pass = 1, 2 do
        for m = 1, #months do
          local n = perMonth[m]
          if n and (pass == 1) == (whole[m] == true) then
            local card = redis.call('ZCARD', months[m])
            spent = spent + 1
            cardOf[months[m]] = card
            if card == 0 then sound = false break end
            total   = total + n * card
            members = members + card
            if whole[m] then
              certain = certain + card
              if certain > limit or (certain > memberLimit and members > memberLimit) then return certain, false, spent end
            end
          end
        end
        if not sound then break end
      end
    end
    if sound and total <= limit and math.min(total, members) <= memberLimit then return total, true, spent end
  end
  -- the entries exactly; without a members bound within its limit, the entries must be within it
  local cap = limit
  if not sound or members > memberLimit then cap = math.min(limit, memberLimit) end
  -- left: with sound month bounds, the most the keys not yet counted may hold (each at most its
  -- month's ZCARD), so the counting stops as soon as the rest cannot pass cap
  local total, left = 0, 0
  local boundOf = function(i) return cardOf[months[tonumber(monthOf[at[i]])]] end
  for i, k in ipairs(live) do
    if cardOf[k] then
      total = total + cardOf[k]
      if total > cap then return total, false, spent end
    elseif sound then
      left = left + boundOf(i)
    end
  end
  for i, k in ipairs(live) do
    if not cardOf[k] then
      -- issue 15: at most budget ZCARDs in all; past it the size is unknown and the read refused
      -- (week reads size from their records instead: entriesOfWeeks)
      if spent >= budget then return total, false, spent, true end
      total = total + redis.call('ZCARD', k)
      spent = spent + 1
      if total > cap then return total, false, spent end
      if sound then
        left = left - boundOf(i)
        if total + left <= cap then return total + left, true, spent end
      end
    end
  end
  return total, true, spent
end
-- chunks of 1000 keep unpack() below Lua's C stack limit on long hourly ranges
local function unionInto(dest, keys, aggregate)
  local card = 0
  for s = 1, #keys, 1000 do
    local args = {'ZUNIONSTORE', dest, 0}
    for i = s, math.min(s + 999, #keys) do args[#args + 1] = keys[i] end
    if s > 1 then args[#args + 1] = dest end
    args[3] = #args - 3
    args[#args + 1] = 'AGGREGATE'
    args[#args + 1] = aggregate
    card = redis.call(unpack(args))
  end
  return card
end
-- Commands resolve made (an upper bound, its EVALSHA not included): what is left of a read's
-- MAX_READ_COMMANDS for the rest of the script (the threshold algorithm's rounds, ZSCOREs).
local resolveCalls = 0
-- Set by resolve: a week read (its size records bound its union), and, set by the member script
-- before it, a member read (its sizing leaves room for its lookups past the bound: lookupPlan).
local weekRead = false
local weekMember = false
-- Month counters keep no rollups, and 400 days hold at most 15 of their keys: their reads size,
-- merge and look up every key rather than refuse a range a user reads every day. Hour and day
-- counters, whose raw keys run to 9,613, and week counters (59 keys, sized from their records,
-- whose threshold round took a ZRANGE and two ZMSCOREs a week: 93 commands over 30 weeks) are
-- held to the read's budget n.
local function budgetOf(months, n)
  if #months == 0 and not weekRead then return math.huge end
  return n
end
-- The ZCARDs a read may spend sizing its union: a min/max read of an hour or day counter reads raw
-- buckets (up to 401, review 11: 413 ZCARDs), so it is held to MAX_SIZE_READS; a sum reads at most
-- ~120 calendar parts (81 for 400 days of hours), sized whole as before, since refusing a sum whose
-- month rollups cannot bound it (a ttl'd counter's rollups expire) refused ranges of 3 members.
local function sizeBudget(months, aggregate)
  if aggregate == 'SUM' then return math.huge end
  return budgetOf(months, ${MAX_SIZE_READS})
end
-- the union bound of live keys: a week read's from its size records, any other's from its months.
-- A week read takes at most MAX_SIZE_READS ZCARDs of recorded weeks (as a min/max read of hours or
-- days: its union, cache and answer fit in MAX_READ_COMMANDS after them); a member read no more
-- than leaves room for its lookups past the bound (lookupPlan over live and current, the current
-- week of a range ending now, unsized) and an HSET of the sizes measured, or, when they cannot
-- fit, MAX_SIZE_READS.
local function sizeOf(live, at, recs, months, monthOf, aggregate, maxEntries, maxUnionMembers, current)
  if recs then
    local cap = math.min(maxEntries, maxUnionMembers)
    return entriesOfWeeks(live, recs, cap, function(measured)
      if not weekMember then return ${MAX_SIZE_READS} end
      local keys = {}
      for i, k in ipairs(live) do keys[i] = k end
      if current then keys[#keys + 1] = current end
      local _, _, calls = lookupPlan(keys, sizesOf(live, recs, measured), cap)
      local left = ${MAX_READ_COMMANDS} - 1 - resolveCalls - calls - 1
      -- lookups that cannot fit are refused unless the ZCARDs show the union fits after all
      -- (records loose); what they measure is recorded, so a read again starts from it
      if left < 0 then return ${MAX_SIZE_READS} end
      return math.min(${MAX_SIZE_READS}, left)
    end)
  end
  return entriesOf(live, at, months, monthOf, maxEntries, maxUnionMembers, sizeBudget(months, aggregate))
end
local function resolve(target, scratch, index, buckets, months, monthOf, aggregate, cache, cacheSeconds, rangeId, split, maxEntries, maxUnionMembers, extra, now, sealed)
  local nb = #buckets
  weekRead = sealed >= 0
  if nb == 0 then return target, false end
  if nb == 1 then
    -- one bucket is its own union: read it in place
    if redis.call('HEXISTS', index, 'b:' .. buckets[1]) == 1 then return buckets[1], false end
    return nil, false
  end
  -- A range ending in the current period ('head') has that period's key last, the only one that
  -- changes without a late write; so the union of the others is cached like a finished range
  -- ('head' in its mark) and each read unions it with that key: work in the cached union and the
  -- current key, not in every key of the range again. A range reaching past the current period
  -- ('none': a write may land in more than its last key) is unioned whole on every read.
  -- A union past those bounds (entriesOf) is not built: the caller gets 'over'
  -- (the entries and the keys it would have unioned) and refuses, or reads a top-N sum from the
  -- keys themselves by the threshold algorithm.
  local head    = nb
  local current = nil
  if cache == 'head' then
    head, current = nb - 1, buckets[nb]
  elseif cache == 'none' then
    head = 0
  end
  local marks = redis.call('HMGET', index, 'late', 'u:' .. target, 'b:' .. buckets[nb])
  local late  = marks[1]
  resolveCalls = 2
  -- no index: no bucket of this life exists
  if not late then return nil, false end
  if current and not marks[3] then current = nil end
  -- the slot's mark: '<late>|<range id>[|head]#<entries of the cached union>'
  local tag = late .. '|' .. rangeId
  if cache == 'head' then tag = tag .. '|head' end
  tag = tag .. '#'
  local cached, cachedCard = nil, nil
  -- a finished range (or head) changes only through late writes, which move 'late' on
  if cache ~= 'none' and marks[2] and string.sub(marks[2], 1, #tag) == tag and redis.call('EXISTS', target) == 1 then
    cached, cachedCard = target, tonumber(string.sub(marks[2], #tag + 1))
  elseif cache == 'none' then
    -- the union of this life's buckets is scratch
    local live, at, more, _, recs = liveOf(index, buckets, extra, sealed)
    if #live == 0 then return nil, false end
    if #live == 1 then return live[1], false end
    local n, fits, spent, sized, measured = sizeOf(live, at, recs, months, monthOf, aggregate, maxEntries, maxUnionMembers, nil)
    resolveCalls = 2 + spent
    -- what it measured of weeks ended, kept for the next read (one HSET)
    local recorded = recordsOf(live, at, measured, sealed, recs)
    if #recorded > 0 then
      redis.call('HSET', index, unpack(recorded))
      resolveCalls = resolveCalls + 1
    end
    if not fits then
      return nil, false, nil, {entries = n, keys = live, extra = more, sized = sized, sizes = recs and sizesOf(live, recs, measured)}
    end
    unionInto(scratch, live, aggregate)
    return scratch, true
  else
    local parts = {}
    for i = 1, head do parts[i] = buckets[i] end
    local live, at, more, soonest, recs = liveOf(index, parts, extra, sealed)
    resolveCalls = 3
    if #live == 1 then
      cached = live[1]
    elseif #live > 1 then
      local n, fits, spent, sized, measured = sizeOf(live, at, recs, months, monthOf, aggregate, maxEntries, maxUnionMembers, current)
      -- HMGET, EXISTS, HMGET, the ZCARDs; and if unioned UNLINK, ZUNIONSTORE, EXPIRE, HSET
      resolveCalls = 3 + spent
      -- what it measured of weeks ended, kept for the next read: in the cache's HSET, or one
      local recorded = recordsOf(live, at, measured, sealed, recs)
      if not fits then
        if #recorded > 0 then
          redis.call('HSET', index, unpack(recorded))
          resolveCalls = resolveCalls + 1
        end
        local sizes = recs and sizesOf(live, recs, measured)
        if current then live[#live + 1] = current end
        return nil, false, nil, {entries = n, keys = live, extra = more, sized = sized, sizes = sizes}
      end
      resolveCalls = resolveCalls + 3 + math.ceil(#live / 1000)
      -- a slot that held another range's union (up to maxEntries entries): ZUNIONSTORE over it
      -- would free those inside this script, UNLINK frees them in the background
      if marks[2] then redis.call('UNLINK', target) end
      cachedCard = unionInto(target, live, aggregate)
      -- Kept no longer than the soonest key it sums lives (a ttl'd bucket): a cache kept its
      -- full hour answered an expired bucket's counts, which every other read of those hours no
      -- longer had (found in review 4). A key already past its recorded expiry is gone.
      if soonest and soonest > now and soonest < now + cacheSeconds * 1000 then
        -- relative to the caller's clock, as every expiry here is set
        redis.call('PEXPIRE', target, soonest - now)
      else
        redis.call('EXPIRE', target, cacheSeconds)
      end
      redis.call('HSET', index, 'u:' .. target, tag .. cachedCard, unpack(recorded))
      cached = target
    end
  end
  if not current then return cached, false end
  if not cached then return current, false end
  -- a caller that can read the two apart (a top-N read) gets them as they are
  if split then return cached, false, current end
  -- the current bucket may change any moment: this union is scratch, dropped before returning
  -- its members are at most its entries (no month bound here)
  local n = (cachedCard or redis.call('ZCARD', cached)) + redis.call('ZCARD', current)
  if n > math.min(maxEntries, maxUnionMembers) then return nil, false, nil, {entries = n, keys = {cached, current}} end
  redis.call('ZUNIONSTORE', scratch, 2, cached, current, 'AGGREGATE', aggregate)
  return scratch, true
end
`,
  [fieldsLua, weekSizeLua],
);

/** The keys and arguments every read declares (see `resolve`), and the call that binds `key` and `temporary`. */
export const SOURCE_KEYS = ["target", "scratch", "index", "...buckets", "...months"] as const;
export const SOURCE_ARGS = [
  "now",
  "aggregate",
  "cache",
  "cacheSeconds",
  "rangeId",
  "maxEntries",
  "maxUnionMembers",
  "sealed",
  "...monthOf",
] as const;
export const RESOLVE = `local key, temporary, _, over = resolve(target, scratch, index, buckets, months, monthOf, aggregate, cache, tonumber(cacheSeconds), rangeId, false, tonumber(maxEntries), tonumber(maxUnionMembers), nil, tonumber(now), tonumber(sealed))
if over then return {refused = 'too_many_entries', entries = over.entries, sized = over.sized and #over.keys or 0} end`;

/** What a read past the union bound answers (`resolve`'s `over`): a 400 naming the limit. */
export const tooManyEntries = {
  too_many_entries: (r: Refusal, call: { args: Record<string, unknown> }) =>
    Number(r.sized) > 0
      ? new ValidationError(
          `That range of the counter has too many keys to size within one read: ${String(r.sized)} keys, and a read may take at most ${MAX_SIZE_READS} ZCARDs (issue 15: at most ${MAX_READ_COMMANDS} commands a read) to bound the entries its union would walk. Narrow the range.`,
          [{ path: "from", message: "the range has too many keys to size; narrow it" }],
          "too_many_entries",
        )
      : new ValidationError(
          `That range of the counter is too big to union: its keys hold at least ${String(r.entries)} bucket entries, and a read that must union a range (range, bottom, sorted, min/max, or a top whose leaders do not stand out) walks at most ${String(call.args.maxEntries)}, or ${String(call.args.maxUnionMembers)} when they may hold as many distinct members. Narrow the range.`,
          [{ path: "from", message: "the range is too big to union; narrow it" }],
          "too_many_entries",
        ),
};
