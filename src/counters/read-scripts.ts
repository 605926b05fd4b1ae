import { ValidationError } from "../errors.ts";
import { activityPageLua } from "../redis/pages.ts";
import { defineScript } from "../redis/script.ts";
import { edgeSumLua } from "./edges.ts";
import { MAX_READ_COMMANDS } from "./limits.ts";
import { RESOLVE, resolveLua, SOURCE_ARGS, SOURCE_KEYS, tooManyEntries } from "./resolve.ts";
import { THRESHOLD_LOOKUPS, topOfManyLua } from "./threshold.ts";
import { weekSizeLua } from "./week-size.ts";

export { THRESHOLD_LOOKUPS };

/**
 * Read scripts of the counters area (the write scripts and the index-hash
 * rules they share are described in ./scripts.ts; what every read shares, `resolve`, in ./resolve.ts).
 */

/** The `n` first members, highest first when `rev` is 1. Returns flat member, score pairs. */
export const topScript = defineScript({
  name: "counters.top",
  write: false,
  keys: SOURCE_KEYS,
  args: [...SOURCE_ARGS, "n", "rev"],
  uses: [resolveLua, topOfManyLua],
  refusals: tooManyEntries,
  lua: `
-- A sum, highest first, is read without a union where it can be: the cached part and the current
-- bucket of a range ending now, or every key of a range whose union would be too big, by the
-- threshold algorithm (work in n, not in their members). Else one union, within the bound.
local sumTop  = aggregate == 'SUM' and rev == '1'
local key, temporary, current, over = resolve(target, scratch, index, buckets, months, monthOf, aggregate, cache, tonumber(cacheSeconds), rangeId, sumTop, tonumber(maxEntries), tonumber(maxUnionMembers), nil, tonumber(now), tonumber(sealed))
-- what the threshold algorithm may spend of the read's commands (its EVALSHA and resolve's taken)
if over then
  local out = sumTop and topOfMany(over.keys, tonumber(n), ${THRESHOLD_LOOKUPS}, budgetOf(months, ${MAX_READ_COMMANDS} - 1 - resolveCalls))
  if out then return out end
  return {refused = 'too_many_entries', entries = over.entries, sized = over.sized and #over.keys or 0}
end
if not key then return {} end
if current then
  -- 5 kept for the union below, should the algorithm give up
  local out = topOfMany({key, current}, tonumber(n), ${THRESHOLD_LOOKUPS}, budgetOf(months, ${MAX_READ_COMMANDS} - 6 - resolveCalls))
  if out then return out end
  local entries = redis.call('ZCARD', key) + redis.call('ZCARD', current)
  if entries > math.min(tonumber(maxEntries), tonumber(maxUnionMembers)) then return {refused = 'too_many_entries', entries = entries} end
  redis.call('ZUNIONSTORE', scratch, 2, key, current, 'AGGREGATE', aggregate)
  key, temporary = scratch, true
end
local args = {'ZRANGE', key, 0, tonumber(n) - 1}
if rev == '1' then args[#args + 1] = 'REV' end
args[#args + 1] = 'WITHSCORES'
local out = redis.call(unpack(args))
if temporary then redis.call('UNLINK', key) end
return out
`,
});

/**
 * Returns {score, rank from top (0-based), rank from bottom (0-based)} of `member`, or {} when
 * absent. Past the union bound the score is still exact (a sum of an hour or day counter from its
 * edge plan, `edgeSum`, else one ZSCORE per key, combined as the union would) but the ranks need
 * the union: they come back false. `edgeKeys` and `edges` are the edge plan (reads.ts, `planArgs`;
 * `edges` empty: none), `now` the caller's clock for the recorded expiries.
 */
export const memberScript = defineScript({
  name: "counters.member",
  write: false,
  keys: [...SOURCE_KEYS, "...edgeKeys"],
  args: [...SOURCE_ARGS, "member", "edges"],
  uses: [resolveLua, weekSizeLua, edgeSumLua],
  refusals: {
    ...tooManyEntries,
    too_many_lookups: (r) =>
      new ValidationError(
        `That range of the week counter is past the union bound, and looking the member up in its ${String(r.keys)} keys (one union of the smallest weeks within the bound, a ZSCORE of each other) would take ${String(r.commands)} commands; a read makes at most ${MAX_READ_COMMANDS} (issue 15). Narrow the range.`,
        [{ path: "from", message: "the range has too many large weeks to look up; narrow it" }],
        "too_many_entries",
      ),
  },
  lua: `
-- a sum of an hour or day counter has an edge plan (edgeSum): its index fields ride in the HMGET
-- that resolve makes anyway
local plan, extra = nil, nil
if edges ~= '' then
  plan  = cjson.decode(edges)
  extra = edgeFields(plan, edgeKeys)
end
weekMember = tonumber(sealed) >= 0
local key, temporary, _, over = resolve(target, scratch, index, buckets, months, monthOf, aggregate, cache, tonumber(cacheSeconds), rangeId, false, tonumber(maxEntries), tonumber(maxUnionMembers), extra, tonumber(now), tonumber(sealed))
local score = nil
local function take(v)
  v = tonumber(v)
  if not v then return end
  if not score then score = v
  elseif aggregate == 'MIN' then score = math.min(score, v)
  elseif aggregate == 'MAX' then score = math.max(score, v)
  else score = score + v end
end
-- A week counter past the bound (or whose bound ZCARDs did not settle, sized) looks the member up in
-- one bounded union of its smallest weeks and a ZSCORE of each other key (lookupPlan, resolve.ts),
-- within the read's commands, or is refused naming them (issue 15: a ZSCORE a week took 117).
if over and weekMember then
  local group, rest, calls = lookupPlan(over.keys, over.sizes or {}, math.min(tonumber(maxEntries), tonumber(maxUnionMembers)))
  if 1 + resolveCalls + calls > ${MAX_READ_COMMANDS} then
    return {refused = 'too_many_lookups', keys = #over.keys, commands = 1 + resolveCalls + calls}
  end
  if #group > 0 then
    unionInto(scratch, group, aggregate)
    take(redis.call('ZSCORE', scratch, member))
    redis.call('UNLINK', scratch)
  end
  for _, k in ipairs(rest) do take(redis.call('ZSCORE', k, member)) end
  if not score then return {} end
  return {string.format('%.17g', score), false, false}
end
-- past the sizing budget (the entries unknown) a read is refused, as it is when a ZSCORE per key
-- would pass the read's commands: a min/max read of an hour or day counter (up to 401 buckets;
-- week and month counters' few keys are read whole: budgetOf)
local perKey = not extra and aggregate ~= 'SUM' and #months > 0
if over and (over.sized or (perKey and #over.keys > ${MAX_READ_COMMANDS} - 1 - resolveCalls)) then
  return {refused = 'too_many_entries', entries = over.entries, sized = over.sized and #over.keys or 0}
end
if over and extra then
  local values = over.extra or redis.call('HMGET', index, unpack(extra))
  local ok, sum = edgeSum(plan, edgeKeys, values, member, tonumber(now))
  if ok then
    if not sum then return {} end
    return {string.format('%.17g', sum), false, false}
  end
end
if over then
  for _, k in ipairs(over.keys) do take(redis.call('ZSCORE', k, member)) end
  if not score then return {} end
  return {string.format('%.17g', score), false, false}
end
if not key then return {} end
local score = redis.call('ZSCORE', key, member)
local out   = {}
if score then out = {score, redis.call('ZREVRANK', key, member), redis.call('ZRANK', key, member)} end
if temporary then redis.call('UNLINK', key) end
return out
`,
});

/** Members with a score in [min, max], at most `limit`, descending when `rev` is 1. Returns {count, flat pairs}. */
export const rangeScript = defineScript({
  name: "counters.range",
  write: false,
  keys: SOURCE_KEYS,
  args: [...SOURCE_ARGS, "min", "max", "limit", "rev"],
  uses: [resolveLua],
  refusals: tooManyEntries,
  lua: `
${RESOLVE}
if not key then return {0, {}} end
local count = redis.call('ZCOUNT', key, min, max)
local items
if rev == '1' then
  items = redis.call('ZRANGE', key, max, min, 'BYSCORE', 'REV', 'LIMIT', 0, tonumber(limit), 'WITHSCORES')
else
  items = redis.call('ZRANGE', key, min, max, 'BYSCORE', 'LIMIT', 0, tonumber(limit), 'WITHSCORES')
end
if temporary then redis.call('UNLINK', key) end
return {count, items}
`,
});

/**
 * Every member with its score, by ascending score: {card, flat pairs}. Refuses
 * (`too_many_members`) when the counter has more than `maxMembers`; `counter` names it in the refusal.
 */
export const sortedScript = defineScript({
  name: "counters.sorted",
  write: false,
  keys: SOURCE_KEYS,
  args: [...SOURCE_ARGS, "maxMembers", "counter"],
  uses: [resolveLua],
  lua: `
${RESOLVE}
if not key then return {0, {}} end
local card  = redis.call('ZCARD', key)
local fits  = card <= tonumber(maxMembers)
local items = {}
if fits then items = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES') end
if temporary then redis.call('UNLINK', key) end
if not fits then return {refused = 'too_many_members', counter = counter, members = card} end
return {card, items}
`,
  refusals: {
    ...tooManyEntries,
    too_many_members: (r, call) =>
      new ValidationError(
        `Counter '${String(r.counter)}' has ${String(r.members)} members; sorted reads return at most ${call.args.maxMembers}. Use top, bottom or range instead.`,
        undefined,
        "too_many_members",
      ),
  },
});

/**
 * Drops names whose last key has expired (a bounded batch per call), then lists names by recent
 * activity (the registry's score is the time of the last write), most recent first. With
 * `offset` (not '') from that position, reading one name beyond the `limit` so the caller knows
 * whether more follow; else by cursor (activityPageLua, src/redis/pages.ts; the first page when
 * `score` is ''): review 23 found an offset pass skipping a live name whenever a name of an
 * earlier page expired or was deleted between pages (every later name moved up one place).
 * Returns {flat = name, last write pairs; next = cursor parts or false}.
 */
export const listScript = defineScript({
  name: "counters.list",
  write: false,
  keys: ["names", "expiry"],
  args: ["now", "offset", "limit", "score", "member", "high", "low"],
  uses: [activityPageLua],
  lua: `
local gone = redis.call('ZRANGE', expiry, '-inf', tonumber(now), 'BYSCORE', 'LIMIT', 0, 1000)
if #gone > 0 then
  redis.call('ZREM', names, unpack(gone))
  redis.call('ZREM', expiry, unpack(gone))
end
if offset ~= '' then
  local flat = redis.call('ZRANGE', names, tonumber(offset), tonumber(offset) + tonumber(limit), 'REV', 'WITHSCORES')
  return {flat = flat, next = false}
end
local flat, next = activityPage(names, tonumber(limit), score, member, high, low)
return {flat = flat, next = next}
`,
});
