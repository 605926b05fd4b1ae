import { activityPageLua } from "../redis/pages.ts";
import { defineLua, defineScript } from "../redis/script.ts";

/**
 * The histograms' list (keys.ts `registry` and `deadlines`): how a write lists a name, and the
 * list's script.
 */

/**
 * The listing of a name: its deadline in `deadlines` (raised with GT, or set exactly when a new
 * retention re-times it), and, only when that changed it (ZADD CH: added or moved), its stamp in
 * `registry` (GT: a stamp only rises). The list pages `registry` by cursor (src/redis/pages.ts),
 * whose passes hold because a name that moves lands above every stamp a pass has seen (its
 * `high`); the deadline alone did not (review 23). So the stamp is now or, when the registry's
 * highest is not below now, that + 1 (review 25: now alone, from a Worker whose clock lags the one
 * that wrote the highest by up to the minute allowed, or in the same millisecond, fell between a
 * pass's cursor and its `high`, and that pass never listed the name). One ZADD when the deadline
 * stays (steady PUT, a later write's older day), three when it changes.
 */
export const listingLua = defineLua(
  "histograms.listing",
  ["relist"],
  `
local function relist(deadlines, registry, name, untilMs, nowMs, exact)
  local changed
  if exact then
    changed = redis.call('ZADD', deadlines, 'CH', untilMs, name)
  else
    changed = redis.call('ZADD', deadlines, 'GT', 'CH', untilMs, name)
  end
  if changed == 1 then
    local top   = redis.call('ZREVRANGE', registry, 0, 0, 'WITHSCORES')
    local stamp = tonumber(nowMs)
    if top[2] and tonumber(top[2]) >= stamp then stamp = tonumber(top[2]) + 1 end
    redis.call('ZADD', registry, 'GT', string.format('%.0f', stamp), name)
  end
end`,
);

/**
 * GET the list. Drops names whose listing deadline has passed (`deadlines`; a bounded batch per
 * call, as counters do) from both sets, then lists the rest from `registry`, most recently stamped
 * first (listingLua: the write that created the name or last changed its deadline; the same
 * stamp: by name, reversed). With `offset` (not '') from that position; else by cursor
 * (activityPageLua, src/redis/pages.ts; the first page when `score` is ''): review 23 found an
 * offset pass skipping a live name whenever a name of an earlier page expired or was deleted
 * between pages (every later name moved up one place).
 *
 * Both sets hold the same names, which every script of this release keeps so. A registry written
 * before review 24 has only `deadlines` (scored by deadline: the key is the same), and a release
 * before may still write during a deploy: when the two counts differ, the names of `deadlines`
 * missing from `registry` join it, stamped with their deadline / 1024 (deadlines are whole days,
 * 86,400,000 ms = 1024 x 84,375, so an exact integer, in January 1970: below any real stamp, in
 * their old order), and names `deadlines` lacks leave it (two commands, once). A pass begun with
 * an older release's cursor (a deadline, above every stamp) restarts at the top: listed again,
 * never skipped. Returns {names, next = cursor parts or false, total}.
 */
export const listScript = defineScript({
  name: "histograms.list",
  write: false,
  keys: ["registry", "deadlines"],
  args: ["now", "offset", "limit", "score", "member", "high", "low"],
  uses: [activityPageLua],
  lua: `
local gone  = redis.call('ZRANGE', deadlines, '-inf', tonumber(now), 'BYSCORE', 'LIMIT', 0, 1000)
if #gone > 0 then
  redis.call('ZREM', deadlines, unpack(gone))
  redis.call('ZREM', registry, unpack(gone))
end
local total = redis.call('ZCARD', registry)
local known = redis.call('ZCARD', deadlines)
if total ~= known then
  redis.call('ZUNIONSTORE', registry, 2, registry, deadlines, 'WEIGHTS', '1', '0.0009765625', 'AGGREGATE', 'MAX')
  total = redis.call('ZINTERSTORE', registry, 2, registry, deadlines, 'WEIGHTS', '1', '0')
end
if offset ~= '' then
  local first = tonumber(offset)
  local names = redis.call('ZRANGE', registry, first, first + tonumber(limit) - 1, 'REV')
  return {names = names, next = false, total = total}
end
local flat, next = activityPage(registry, tonumber(limit), score, member, high, low)
local names = {}
for i = 1, #flat, 2 do names[#names + 1] = flat[i] end
return {names = names, next = next, total = total}
`,
});
