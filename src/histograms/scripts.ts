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
 * PUT settings. KEYS: meta, registry, then [day zset, day stats] per live day.
 * ARGV: name, bucketWidth, unit ('' for none), retentionDays, now (ms), then
 * each live day's start (ms). A new width with data on record is a conflict:
 * the stored bucket indexes would silently change meaning.
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
local current   = redis.call('HMGET', metaKey, 'bucketWidth', 'retentionDays', 'createdAt')
local created   = not current[1]
if current[1] and tonumber(current[1]) ~= tonumber(width) then
  for g = 1, (#KEYS - 2) / 2 do
    if redis.call('EXISTS', KEYS[1 + 2 * g]) == 1 then
      error({err = 'ERR edgestats:width_conflict ' .. current[1]})
    end
  end
end
local createdAt = current[3] or ARGV[5]
redis.call('HSET', metaKey, 'bucketWidth', width, 'retentionDays', ARGV[4], 'createdAt', createdAt)
if unit ~= '' then redis.call('HSET', metaKey, 'unit', unit) else redis.call('HDEL', metaKey, 'unit') end
redis.call('ZADD', registry, 0, name)
-- A new retention applies to the days already stored, not only to later writes.
if not created and tonumber(current[2]) ~= retention then
  for g = 1, (#KEYS - 2) / 2 do
    local dayKey, statsKey = KEYS[1 + 2 * g], KEYS[2 + 2 * g]
    if redis.call('EXISTS', dayKey) == 1 then
      local ttl = math.ceil((tonumber(ARGV[5 + g]) + (retention + 1) * 86400000 - nowMs) / 1000)
      if ttl <= 0 then
        redis.call('DEL', dayKey, statsKey)
      else
        redis.call('EXPIRE', dayKey, ttl)
        redis.call('EXPIRE', statsKey, ttl)
      end
    end
  end
end
return {created = created, createdAt = createdAt}
`,
);

/**
 * POST observations. KEYS: meta, then [day zset, day stats] per day the batch
 * touches. ARGV: now (ms), max buckets per day, max |bucket index|, then per
 * day: day start (ms), n, sum, min, max, and its n values. Everything is
 * checked in a first pass so a refused batch writes nothing.
 */
export const observeScript = defineWriteScript(
  "histograms.observe",
  `
local metaKey   = KEYS[1]
local nowMs     = tonumber(ARGV[1])
local maxPerDay = tonumber(ARGV[2])
local maxIndex  = tonumber(ARGV[3])
local settings  = redis.call('HMGET', metaKey, 'bucketWidth', 'retentionDays')
if not settings[1] then error({err = 'ERR edgestats:not_found'}) end
local width     = tonumber(settings[1])
local retention = tonumber(settings[2])
${BUCKET_LUA}
local plans, at, accepted = {}, 4, 0
for g = 1, (#KEYS - 1) / 2 do
  local dayKey = KEYS[2 * g]
  local dayMs  = tonumber(ARGV[at])
  local n      = tonumber(ARGV[at + 1])
  -- The day key expires retention days after its day ends, measured from now.
  local ttl    = math.ceil((dayMs + (retention + 1) * 86400000 - nowMs) / 1000)
  if ttl <= 0 then error({err = 'ERR edgestats:expired ' .. ARGV[at] .. ' ' .. settings[2]}) end
  local counts, members = {}, {}
  for k = at + 5, at + 4 + n do
    local v = tonumber(ARGV[k])
    if math.abs(v / width) > maxIndex then error({err = 'ERR edgestats:out_of_range ' .. ARGV[k] .. ' ' .. settings[1]}) end
    local m = string.format('%d', bucketOf(v))
    if not counts[m] then
      counts[m] = 0
      members[#members + 1] = m
    end
    counts[m] = counts[m] + 1
  end
  local known = redis.call('ZMSCORE', dayKey, unpack(members))
  local fresh = 0
  for j = 1, #members do
    if not known[j] then fresh = fresh + 1 end
  end
  if fresh > 0 and redis.call('ZCARD', dayKey) + fresh > maxPerDay then
    error({err = 'ERR edgestats:too_many_buckets ' .. ARGV[at] .. ' ' .. settings[1]})
  end
  plans[g] = {dayKey = dayKey, statsKey = KEYS[2 * g + 1], ttl = ttl, counts = counts, members = members,
              sum = ARGV[at + 2], min = ARGV[at + 3], max = ARGV[at + 4]}
  accepted = accepted + n
  at = at + 5 + n
end
for _, p in ipairs(plans) do
  for _, m in ipairs(p.members) do redis.call('ZINCRBY', p.dayKey, p.counts[m], m) end
  redis.call('HINCRBYFLOAT', p.statsKey, 'sum', p.sum)
  -- min/max are kept as the client's own digits; Lua compares them as doubles.
  local seen   = redis.call('HMGET', p.statsKey, 'min', 'max')
  local update = {'HSET', p.statsKey}
  if not seen[1] or tonumber(p.min) < tonumber(seen[1]) then update[#update + 1] = 'min'; update[#update + 1] = p.min end
  if not seen[2] or tonumber(p.max) > tonumber(seen[2]) then update[#update + 1] = 'max'; update[#update + 1] = p.max end
  if #update > 2 then redis.call(unpack(update)) end
  redis.call('EXPIRE', p.dayKey, p.ttl)
  redis.call('EXPIRE', p.statsKey, p.ttl)
end
return {accepted = accepted}
`,
);

/**
 * GET a range. KEYS: meta, then [day zset, day stats] per day of the range.
 * ARGV: the most buckets one answer may carry. Returns the settings, the
 * union of the days' buckets with their bounds (as Lua formats them, so they
 * match the bucket rule to the digit) and each stored day's sum/min/max.
 */
export const readScript = defineReadScript(
  "histograms.read",
  `
local metaKey    = KEYS[1]
local maxBuckets = tonumber(ARGV[1])
local settings   = redis.call('HMGET', metaKey, 'bucketWidth', 'unit', 'retentionDays', 'createdAt')
if not settings[1] then return cjson.encode({missing = true}) end
local width      = tonumber(settings[1])
${BUCKET_LUA}
local union = {'ZUNION', (#KEYS - 1) / 2}
for g = 1, (#KEYS - 1) / 2 do union[#union + 1] = KEYS[2 * g] end
union[#union + 1] = 'WITHSCORES'
local merged = redis.call(unpack(union))
if #merged / 2 > maxBuckets then return cjson.encode({tooMany = #merged / 2}) end
local buckets = {}
for j = 1, #merged, 2 do
  local i = tonumber(merged[j])
  buckets[#buckets + 1] = {merged[j], string.format('%.15g', bound(i)), string.format('%.15g', bound(i + 1)), merged[j + 1]}
end
local stats = {}
for g = 1, (#KEYS - 1) / 2 do
  local s = redis.call('HMGET', KEYS[2 * g + 1], 'sum', 'min', 'max')
  if s[1] then stats[#stats + 1] = s end
end
return cjson.encode({settings = settings, buckets = buckets, stats = stats})
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

/** GET the list. KEYS: registry. ARGV: the most names to return. */
export const listScript = defineReadScript(
  "histograms.list",
  `
local names = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
return cjson.encode({names = names, total = redis.call('ZCARD', KEYS[1])})
`,
);
