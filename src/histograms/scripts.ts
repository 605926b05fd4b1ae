import { defineReadScript, defineWriteScript } from "../redis/script.ts";

/**
 * Lua of the histogram API: one script per call. Scripts refuse a request by
 * raising `ERR edgestats:<reason> <args>` before their first write: an error
 * keeps the idempotency prelude from recording a refusal as the answer, so a
 * retry after fixing the cause is not replayed as the old error.
 */

/** The bucket rule of `buckets.ts` in Lua; '%.15g' rounds as `toPrecision(15)` does. */
const BUCKET_LUA = `
local function bound(i)
  return tonumber(string.format('%.15g', i * width))
end
local function bucketOf(v)
  local i = math.floor(v / width)
  while bound(i) > v do i = i - 1 end
  while bound(i + 1) <= v do i = i + 1 end
  return i
end`;

/**
 * PUT settings. KEYS: meta, registry, then [day zset, day extremes] per live
 * day, then the month rollup of each live month. ARGV: name,
 * bucketWidth, unit ('' for none), retentionDays, now (ms), today's listing
 * deadline under the new retention (ms), start of this month, start of the
 * next month (unused), number of live days, then each live day's start (ms), then the
 * start of each live month's last day (ms). `rollupsSince` (the first month
 * whose rollup holds all its days) is 0 for a new histogram, the next
 * month for one created before rollups existed. A new width with data on record is a conflict: the stored bucket
 * indexes would silently change meaning.
 */
export const putScript = defineWriteScript(
  "histograms.put",
  `
local metaKey   = KEYS[1]
local registry  = KEYS[2]
local name      = ARGV[1]
local width     = ARGV[2]
local unit      = ARGV[3]
local retention = tonumber(ARGV[4])
local nowMs     = tonumber(ARGV[5])
local listed    = tonumber(ARGV[6])
local nDays     = tonumber(ARGV[9])
local current   = redis.call('HMGET', metaKey, 'bucketWidth', 'retentionDays', 'createdAt', 'unit', 'rollupsSince')
local created   = not current[1]
-- a new histogram has rollups for every month it will hold; one from before rollups from next month on
local since     = current[5] or (created and '0' or ARGV[8])
if current[1] and tonumber(current[1]) ~= tonumber(width) then
  for g = 1, nDays do
    if redis.call('EXISTS', KEYS[1 + 2 * g]) == 1 then
      error({err = 'ERR edgestats:width_conflict ' .. current[1]})
    end
  end
end
local createdAt = current[3] or ARGV[5]
if unit ~= '' then
  redis.call('HSET', metaKey, 'bucketWidth', width, 'retentionDays', ARGV[4], 'createdAt', createdAt, 'rollupsSince', since, 'unit', unit)
else
  redis.call('HSET', metaKey, 'bucketWidth', width, 'retentionDays', ARGV[4], 'createdAt', createdAt, 'rollupsSince', since)
  if current[4] then redis.call('HDEL', metaKey, 'unit') end
end
if not created and tonumber(current[2]) ~= retention then
  -- A new retention applies to the days already stored, not only to later
  -- writes, and the listing deadline follows the newest day that stays.
  for g = 1, nDays do
    local dayKey, extKey = KEYS[1 + 2 * g], KEYS[2 + 2 * g]
    if redis.call('EXISTS', dayKey) == 1 then
      local untilMs = tonumber(ARGV[9 + g]) + (retention + 1) * 86400000
      local ttl     = math.ceil((untilMs - nowMs) / 1000)
      if ttl <= 0 then
        redis.call('DEL', dayKey, extKey)
      else
        redis.call('EXPIRE', dayKey, ttl)
        redis.call('EXPIRE', extKey, ttl)
        if untilMs > listed then listed = untilMs end
      end
    end
  end
  -- month rollups live as long as their last day: the same rule
  for k = 1, #KEYS - 2 - 2 * nDays do
    local monthKey = KEYS[2 + 2 * nDays + k]
    if redis.call('EXISTS', monthKey) == 1 then
      local ttl = math.ceil((tonumber(ARGV[9 + nDays + k]) + (retention + 1) * 86400000 - nowMs) / 1000)
      if ttl <= 0 then redis.call('DEL', monthKey) else redis.call('EXPIRE', monthKey, ttl) end
    end
  end
  redis.call('ZADD', registry, listed, name)
else
  -- Listed at least as long as data written today would be kept.
  redis.call('ZADD', registry, 'GT', listed, name)
end
return {created = created, createdAt = createdAt}
`,
);

/**
 * POST observations. KEYS: meta, registry, then [day zset, day extremes, month
 * rollup] per day the batch touches. ARGV: name, now (ms), max
 * buckets per day, max |bucket index|, start of next month (ms), then per day: day start (ms), start of
 * the last day of its month (ms), n, sum, −min, max, and its n values.
 *
 * The month rollup gets the same increments as the day (issue 15), after every
 * check has passed, so a refusal never has to take them back; its expiry
 * (as long as its last day's) is set with the day's, on the day's first touch.
 *
 * Steady state costs HMGET + one ZINCRBY per distinct bucket + ZINCRBY of the
 * sum + ZADD GT of the extremes. Bookkeeping runs only on first touch: a
 * ZINCRBY that answers exactly the count it added created its bucket, and only
 * then does ZCARD check the bucket cap and tell whether the day itself is new
 * (no other bucket and no sum yet); a new day gets its EXPIREs (its deadline
 * is fixed by its date and the retention, so later writes never move it) and
 * extends the registry's listing deadline. Validation of dates and values
 * happens before any write; the one check that needs the writes (the cap) is
 * undone exactly (integer counts) before refusing, so a refusal leaves nothing.
 */
export const observeScript = defineWriteScript(
  "histograms.observe",
  `
local metaKey   = KEYS[1]
local registry  = KEYS[2]
local name      = ARGV[1]
local nowMs     = tonumber(ARGV[2])
local maxPerDay = tonumber(ARGV[3])
local maxIndex  = tonumber(ARGV[4])
local settings  = redis.call('HMGET', metaKey, 'bucketWidth', 'retentionDays', 'rollupsSince')
if not settings[1] then error({err = 'ERR edgestats:not_found'}) end
local width     = tonumber(settings[1])
local retention = tonumber(settings[2])
${BUCKET_LUA}
local plans, at, accepted = {}, 6, 0
for g = 1, (#KEYS - 2) / 3 do
  local dayMs   = tonumber(ARGV[at])
  local n       = tonumber(ARGV[at + 2])
  local untilMs = dayMs + (retention + 1) * 86400000
  local monthTtl = math.ceil((tonumber(ARGV[at + 1]) + (retention + 1) * 86400000 - nowMs) / 1000)
  -- The day key expires retention days after its day ends, measured from now.
  local ttl     = math.ceil((untilMs - nowMs) / 1000)
  if ttl <= 0 then error({err = 'ERR edgestats:expired ' .. ARGV[at] .. ' ' .. settings[2]}) end
  local counts, members = {}, {}
  for k = at + 6, at + 5 + n do
    local v = tonumber(ARGV[k])
    if math.abs(v / width) > maxIndex then error({err = 'ERR edgestats:out_of_range ' .. ARGV[k] .. ' ' .. settings[1]}) end
    local m = string.format('%d', bucketOf(v))
    if not counts[m] then
      counts[m] = 0
      members[#members + 1] = m
    end
    counts[m] = counts[m] + 1
  end
  plans[g] = {dayKey = KEYS[3 * g], extKey = KEYS[3 * g + 1], monthKey = KEYS[3 * g + 2],
              dayMs = ARGV[at], ttl = ttl, monthTtl = monthTtl, untilMs = untilMs,
              counts = counts, members = members, fresh = {}, sum = ARGV[at + 3], negMin = ARGV[at + 4], max = ARGV[at + 5]}
  accepted = accepted + n
  at = at + 6 + n
end
-- Takes back the bucket increments of plans 1..last exactly (counts are integers).
local function undo(last)
  for g = 1, last do
    local p = plans[g]
    for _, m in ipairs(p.members) do
      if p.fresh[m] then redis.call('ZREM', p.dayKey, m) else redis.call('ZINCRBY', p.dayKey, -p.counts[m], m) end
    end
  end
end
for g, p in ipairs(plans) do
  local fresh = 0
  for _, m in ipairs(p.members) do
    if tonumber(redis.call('ZINCRBY', p.dayKey, p.counts[m], m)) == p.counts[m] then
      p.fresh[m] = true
      fresh = fresh + 1
    end
  end
  if fresh > 0 then
    local card = redis.call('ZCARD', p.dayKey)
    p.new = card == fresh
    if (p.new and card or card - 1) > maxPerDay then
      undo(g)
      error({err = 'ERR edgestats:too_many_buckets ' .. p.dayMs .. ' ' .. settings[1]})
    end
  end
end
-- a histogram from before month rollups: its rollups are whole from next month on (once)
if not settings[3] then redis.call('HSET', metaKey, 'rollupsSince', ARGV[5]) end
local listed = nil
for _, p in ipairs(plans) do
  redis.call('ZINCRBY', p.dayKey, p.sum, 'sum')
  -- the month rollup: the same counts and sum (extremes are read from the days' tiny sets)
  for _, m in ipairs(p.members) do redis.call('ZINCRBY', p.monthKey, p.counts[m], m) end
  redis.call('ZINCRBY', p.monthKey, p.sum, 'sum')
  -- ZADD answers how many members it added: 2 when the extremes key is new, which a
  -- day stored before it existed can be even though the day is not.
  local added = redis.call('ZADD', p.extKey, 'GT', p.max, 'max', p.negMin, 'min')
  if p.new or added > 0 then
    redis.call('EXPIRE', p.dayKey, p.ttl)
    redis.call('EXPIRE', p.extKey, p.ttl)
    -- the month's deadline is fixed by its last day and the retention: setting it again changes nothing
    redis.call('EXPIRE', p.monthKey, p.monthTtl)
    if not listed or p.untilMs > listed then listed = p.untilMs end
  end
end
if listed then redis.call('ZADD', registry, 'GT', listed, name) end
return {accepted = accepted}
`,
);

/**
 * GET a range. KEYS: meta, scratch, then [day zset, day extremes] per day of
 * the range that may hold data, then the rollup of each whole month in the range. ARGV: the most buckets one answer may carry, now (ms),
 * the number of days, the most buckets a day may hold, then per month: its start, the position of its first
 * day, its number of days. A month rollup stands for its days when its first
 * day is still kept (else it holds days that expired) and the histogram kept
 * rollups from that month on; otherwise its days are read. So a 400-day range
 * unions at most ~75 keys. The union goes to a scratch key whose size is
 * checked (ZCARD) before anything is loaded into the script.
 */
export const readScript = defineReadScript(
  "histograms.read",
  `
local metaKey, scratch = KEYS[1], KEYS[2]
local maxBuckets       = tonumber(ARGV[1])
local nowMs            = tonumber(ARGV[2])
local nDays            = tonumber(ARGV[3])
local perDay           = tonumber(ARGV[4])
local settings         = redis.call('HMGET', metaKey, 'bucketWidth', 'unit', 'retentionDays', 'createdAt', 'rollupsSince')
if not settings[1] then return cjson.encode({missing = true}) end
local width            = tonumber(settings[1])
local retention        = tonumber(settings[3])
local since            = tonumber(settings[5] or 'inf')
settings[5]            = nil
${BUCKET_LUA}
local skip, parts, extParts = {}, {}, {}
local g, usedMonths         = 0, 0
for j = 5, #ARGV, 3 do
  g = g + 1
  local monthMs, first, n = tonumber(ARGV[j]), tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2])
  if monthMs >= since and monthMs + (retention + 1) * 86400000 > nowMs then
    for d = first, first + n - 1 do skip[d] = true end
    usedMonths              = usedMonths + 1
    parts[#parts + 1]       = KEYS[2 + 2 * nDays + g]
  end
end
for d = 1, nDays do
  if not skip[d] then parts[#parts + 1] = KEYS[1 + 2 * d] end
  -- extremes: two members a day, so every day's set (400 at most) is cheap to union
  extParts[#extParts + 1] = KEYS[2 + 2 * d]
end
if #parts == 0 then return cjson.encode({settings = settings, buckets = {}}) end
local merged
if (#parts - usedMonths) * perDay + usedMonths * 31 * perDay <= maxBuckets then
  -- so few days that the cap cannot be reached (each day holds at most perDay buckets): one ZUNION, nothing stored
  parts[#parts + 1] = 'WITHSCORES'
  merged = redis.call('ZUNION', #parts - 1, unpack(parts))
else
  redis.call('ZUNIONSTORE', scratch, #parts, unpack(parts))
  -- the size first: a range over the cap is refused before its buckets are loaded
  local card = redis.call('ZCARD', scratch)
  if card > maxBuckets and (card > maxBuckets + 1 or not redis.call('ZSCORE', scratch, 'sum')) then
    redis.call('DEL', scratch)
    return cjson.encode({tooMany = card - 1})
  end
  merged = redis.call('ZRANGE', scratch, 0, -1, 'WITHSCORES')
  redis.call('DEL', scratch)
end
local buckets, sum = {}, nil
for j = 1, #merged, 2 do
  local i = tonumber(merged[j])
  if i then
    buckets[#buckets + 1] = {merged[j], string.format('%.15g', bound(i)), string.format('%.15g', bound(i + 1)), merged[j + 1]}
  elseif merged[j] == 'sum' then
    sum = merged[j + 1]
  end
end
local extremes = {'ZUNION', #extParts}
for _, k in ipairs(extParts) do extremes[#extremes + 1] = k end
extremes[#extremes + 1] = 'AGGREGATE'
extremes[#extremes + 1] = 'MAX'
extremes[#extremes + 1] = 'WITHSCORES'
local ext = redis.call(unpack(extremes))
local found = {}
for j = 1, #ext, 2 do found[ext[j]] = ext[j + 1] end
return cjson.encode({settings = settings, buckets = buckets, sum = sum, max = found.max, negMin = found.min})
`,
);

/** DELETE. KEYS: meta, registry, then every live day's keys. ARGV: name. */
export const deleteScript = defineWriteScript(
  "histograms.delete",
  `
local removed = redis.call('DEL', KEYS[1], unpack(KEYS, 3))
redis.call('ZREM', KEYS[2], ARGV[1])
return {removed = removed}
`,
);

/**
 * GET the list. KEYS: registry. ARGV: now (ms), offset, limit. Drops names
 * whose data has all expired (a bounded batch per call, as counters do), then
 * lists the rest latest deadline first: with equal retention, most recently
 * written first, so names made in bulk cannot push a live one out of reach.
 */
export const listScript = defineReadScript(
  "histograms.list",
  `
local registry              = KEYS[1]
local nowMs, offset, limit  = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local gone = redis.call('ZRANGE', registry, '-inf', nowMs, 'BYSCORE', 'LIMIT', 0, 1000)
if #gone > 0 then redis.call('ZREM', registry, unpack(gone)) end
local names = redis.call('ZRANGE', registry, offset, offset + limit - 1, 'REV')
return cjson.encode({names = names, total = redis.call('ZCARD', registry)})
`,
);
