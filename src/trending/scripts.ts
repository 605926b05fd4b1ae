import { defineReadScript, defineWriteScript } from "../redis/script.ts";

/**
 * Lua shared by the read scripts and compaction: the cached union of the
 * finished hours of a window, and the source a read ranks from.
 */
const ENSURE_UNION = `
-- Returns the union's maxError (string) and whether it was (re)built. A union
-- is reused only when it was built at the stream's current generation: a write
-- to a finished hour changes the generation, so late events are never hidden.
local function ensureUnion(uKey, mKey, genKey, cutsKey, buckets, hours, ttl)
  local gen  = redis.call('GET', genKey) or '0'
  local meta = redis.call('GET', mKey)
  if meta then
    local sep = string.find(meta, '|', 1, true)
    if sep and string.sub(meta, 1, sep - 1) == gen then return string.sub(meta, sep + 1), false end
  end
  -- ZUNIONSTORE treats missing hours as empty and deletes the target when all are empty.
  redis.call('ZUNIONSTORE', uKey, #buckets, unpack(buckets))
  redis.call('EXPIRE', uKey, ttl)
  local maxError = 0
  local cuts = redis.call('HMGET', cutsKey, unpack(hours))
  for i = 1, #cuts do
    if cuts[i] then maxError = maxError + tonumber(cuts[i]) end
  end
  local encoded = string.format('%.17g', maxError)
  redis.call('SET', mKey, gen .. '|' .. encoded, 'EX', ttl)
  return encoded, true
end
`;

const COMBINED = `
-- The window = cached union of finished hours + the live current hour. Copy
-- into the scratch key only when both exist; otherwise read the one that does.
local function combined(uKey, cKey, tmpKey)
  local hasU = redis.call('EXISTS', uKey) == 1
  local hasC = redis.call('EXISTS', cKey) == 1
  if hasU and hasC then
    redis.call('ZUNIONSTORE', tmpKey, 2, uKey, cKey)
    return tmpKey, true
  end
  if hasC then return cKey, false end
  return uKey, false
end
`;

/**
 * KEYS: names, seen, dirty, gen, bucket 1..B.
 * ARGV: stream, nowHour, nowMs, genTtl, B, (hour, ttl) × B, (bucketIndex, count, member) × E.
 */
export const recordScript = defineWriteScript(
  "trending-record",
  `
local stream   = ARGV[1]
local nowHour  = tonumber(ARGV[2])
local nowMs    = tonumber(ARGV[3])
local genTtl   = tonumber(ARGV[4])
local nBuckets = tonumber(ARGV[5])
local minHour, maxHour = nil, nil
for i = 6 + 2 * nBuckets, #ARGV, 3 do
  redis.call('ZINCRBY', KEYS[4 + tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2])
end
for b = 1, nBuckets do
  local hour = tonumber(ARGV[4 + 2 * b])
  -- ZINCRBY cannot set an expiry (the post's "ZADD ... INCR EX" does not exist);
  -- EXPIRE in the same script costs no extra round trip.
  redis.call('EXPIRE', KEYS[4 + b], ARGV[5 + 2 * b])
  if not minHour or hour < minHour then minHour = hour end
  if not maxHour or hour > maxHour then maxHour = hour end
end
redis.call('ZADD', KEYS[1], 0, stream)
redis.call('ZADD', KEYS[2], 'GT', maxHour, stream)
-- LT keeps the earliest hour not yet compacted, so a late event re-opens its hour.
redis.call('ZADD', KEYS[3], 'LT', minHour, stream)
if minHour < nowHour then
  -- never reuses a value, even after the key expired: max(previous + 1, now)
  local gen = tonumber(redis.call('GET', KEYS[4]) or '0')
  redis.call('SET', KEYS[4], string.format('%.0f', math.max(gen + 1, nowMs)))
end
redis.call('EXPIRE', KEYS[4], genTtl)
return nBuckets
`,
);

/**
 * KEYS: union, unionMeta, gen, cuts, current bucket, scratch, window buckets 1..W.
 * ARGV: m (items wanted), unionTtl, hour index × W.
 */
export const topScript = defineReadScript(
  "trending-top",
  `
${ENSURE_UNION}
${COMBINED}
local m = tonumber(ARGV[1])
local buckets, hours = {}, {}
for i = 7, #KEYS do buckets[#buckets + 1] = KEYS[i] end
for i = 3, #ARGV do hours[#hours + 1] = ARGV[i] end
local maxError, built = ensureUnion(KEYS[1], KEYS[2], KEYS[3], KEYS[4], buckets, hours, ARGV[2])
local src, scratch = combined(KEYS[1], KEYS[5], KEYS[6])
local items = redis.call('ZREVRANGE', src, 0, m - 1, 'WITHSCORES')
if #items == 2 * m then
  -- ZREVRANGE breaks ties by member descending; we rank ties by member ascending,
  -- so take everything strictly above the m-th count, then the smallest tied members.
  local last  = items[2 * m]
  local above = redis.call('ZREVRANGEBYSCORE', src, '+inf', '(' .. last, 'WITHSCORES')
  local ties  = redis.call('ZRANGEBYSCORE', src, last, last, 'WITHSCORES', 'LIMIT', 0, m - #above / 2)
  items = above
  for i = 1, #ties do items[#items + 1] = ties[i] end
end
local distinct = redis.call('ZCARD', src)
if scratch then redis.call('DEL', src) end
return cjson.encode({ maxError = maxError, items = items, distinct = distinct, built = built })
`,
);

/**
 * KEYS: as topScript. ARGV: member, unionTtl, hour index × W.
 */
export const memberScript = defineReadScript(
  "trending-member",
  `
${ENSURE_UNION}
${COMBINED}
local member = ARGV[1]
local buckets, hours = {}, {}
for i = 7, #KEYS do buckets[#buckets + 1] = KEYS[i] end
for i = 3, #ARGV do hours[#hours + 1] = ARGV[i] end
local maxError = ensureUnion(KEYS[1], KEYS[2], KEYS[3], KEYS[4], buckets, hours, ARGV[2])
local src, scratch = combined(KEYS[1], KEYS[5], KEYS[6])
local score = redis.call('ZSCORE', src, member)
local rank = false
if score then
  -- rank by count descending, ties by member ascending: everyone strictly above,
  -- plus the tied members before it in ZRANK's (count, member) ascending order
  local asc   = redis.call('ZRANK', src, member)
  local below = redis.call('ZCOUNT', src, '-inf', '(' .. score)
  local above = redis.call('ZCOUNT', src, '(' .. score, '+inf')
  rank = above + (asc - below) + 1
end
if scratch then redis.call('DEL', src) end
return cjson.encode({ maxError = maxError, count = score or '0', rank = rank })
`,
);

/** KEYS: names. ARGV: limit. */
export const listScript = defineReadScript(
  "trending-list",
  `
return cjson.encode(redis.call('ZRANGE', KEYS[1], '-', '+', 'BYLEX', 'LIMIT', 0, tonumber(ARGV[1])))
`,
);

/** KEYS: names, seen, dirty, every key of the stream. ARGV: stream. */
export const deleteScript = defineWriteScript(
  "trending-delete",
  `
local stream = ARGV[1]
redis.call('ZREM', KEYS[1], stream)
redis.call('ZREM', KEYS[2], stream)
redis.call('ZREM', KEYS[3], stream)
local deleted = 0
-- DEL in slices: unpack of hundreds of keys is fine, thousands would hit Lua's stack
for i = 4, #KEYS, 200 do
  local slice = {}
  for j = i, math.min(i + 199, #KEYS) do slice[#slice + 1] = KEYS[j] end
  deleted = deleted + redis.call('DEL', unpack(slice))
end
return deleted
`,
);

/**
 * KEYS: names, seen, dirty. ARGV: hour, pruneBefore, limit, pruneLimit.
 * Prunes streams whose buckets have all expired and returns the streams due
 * for compaction (written in a finished hour since their last compaction).
 */
export const dueScript = defineWriteScript(
  "trending-due",
  `
local hour        = ARGV[1]
local pruneBefore = ARGV[2]
local stale = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. pruneBefore, 'LIMIT', 0, tonumber(ARGV[4]))
for _, stream in ipairs(stale) do
  redis.call('ZREM', KEYS[1], stream)
  redis.call('ZREM', KEYS[2], stream)
  redis.call('ZREM', KEYS[3], stream)
end
local due = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. hour, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[3]))
return { pruned = #stale, due = due }
`,
);

/**
 * KEYS: dirty, seen, then per stream: cuts, gen, (union, unionMeta) × nWindows,
 *   buckets of hours from..H-1.
 * ARGV: H, keep, horizon, unionTtl, cutsTtl, nWindows, window × nWindows,
 *   then per stream: name, from.
 */
export const compactScript = defineWriteScript(
  "trending-compact",
  `
${ENSURE_UNION}
local H        = tonumber(ARGV[1])
local keep     = tonumber(ARGV[2])
local horizon  = tonumber(ARGV[3])
local unionTtl = ARGV[4]
local cutsTtl  = ARGV[5]
local nWin     = tonumber(ARGV[6])
local windows  = {}
for j = 1, nWin do windows[j] = tonumber(ARGV[6 + j]) end
local out = {}
local a, k = 7 + nWin, 3
while a <= #ARGV do
  local name, from = ARGV[a], tonumber(ARGV[a + 1])
  a = a + 2
  local cutsKey, genKey = KEYS[k], KEYS[k + 1]
  local uBase = k + 2
  local bBase = uBase + 2 * nWin
  k = bBase + (H - from)
  local status, trimmed, removed, unions = 'skipped', 0, 0, 0
  local score = redis.call('ZSCORE', KEYS[1], name)
  -- another run (cron is at-least-once, QStash retries) may have done it already
  if score and tonumber(score) < H then
    local start = math.max(tonumber(score), H - horizon)
    if start < from then
      -- a late event re-opened an hour after we read the queue; the next batch takes it
      status = 'requeued'
    else
      for h = start, H - 1 do
        local key  = KEYS[bBase + h - from]
        local card = keep > 0 and redis.call('ZCARD', key) or 0
        if card > keep then
          -- the highest count removed bounds how much any member of this hour can be missing
          local cut = redis.call('ZRANGE', key, card - keep - 1, card - keep - 1, 'WITHSCORES')[2]
          redis.call('ZREMRANGEBYRANK', key, 0, card - keep - 1)
          -- summed, not maxed: a member removed, re-added late and removed again lost both parts
          redis.call('HINCRBYFLOAT', cutsKey, h, cut)
          trimmed = trimmed + 1
          removed = removed + card - keep
        end
      end
      for _, field in ipairs(redis.call('HKEYS', cutsKey)) do
        if tonumber(field) < H - horizon then redis.call('HDEL', cutsKey, field) end
      end
      redis.call('EXPIRE', cutsKey, cutsTtl)
      for j = 1, nWin do
        local buckets, hours = {}, {}
        for h = H - windows[j], H - 1 do
          buckets[#buckets + 1] = KEYS[bBase + h - from]
          hours[#hours + 1] = h
        end
        local _, built = ensureUnion(KEYS[uBase + 2 * j - 2], KEYS[uBase + 2 * j - 1], genKey, cutsKey, buckets, hours, unionTtl)
        if built then unions = unions + 1 end
      end
      local seen = redis.call('ZSCORE', KEYS[2], name)
      if seen and tonumber(seen) >= H then
        redis.call('ZADD', KEYS[1], H, name)
      else
        redis.call('ZREM', KEYS[1], name)
      end
      status = 'compacted'
    end
  end
  out[#out + 1] = { name, status, trimmed, removed, unions }
end
return out
`,
);
