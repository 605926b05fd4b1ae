import { defineReadScript, defineWriteScript } from "../redis/script.ts";

/**
 * Lua shared by the read scripts and compaction: the cached union of the
 * finished hours of a window. The union carries its error bound inside itself,
 * as the sentinel member "\0err" scored -maxError (≤ 0). Real counts are > 0,
 * so ranges by count never reach it before every real member, and a read needs
 * no second key. No member can spell it (control characters are refused).
 * A missing sentinel means there is no union: a write to a finished hour DELs
 * the unions it would make stale (recordScript), so a union that exists is current.
 */
export const UNION_LUA = `
local SENTINEL = string.char(0) .. 'err'
local function fmt(x) return string.format('%.17g', x) end
-- -maxError rather than -maxError - 1: negation is exact, so the bound round-trips
local function errorOf(score) return fmt(0 - tonumber(score)) end
local function buildUnion(uKey, cutsKey, buckets, hours, ttl)
  -- ZUNIONSTORE treats missing hours as empty; the sentinel recreates an empty target
  redis.call('ZUNIONSTORE', uKey, #buckets, unpack(buckets))
  local maxError = 0
  local cuts = redis.call('HMGET', cutsKey, unpack(hours))
  for i = 1, #cuts do
    if cuts[i] then maxError = maxError + tonumber(cuts[i]) end
  end
  redis.call('ZADD', uKey, fmt(0 - maxError), SENTINEL)
  redis.call('EXPIRE', uKey, ttl)
  return fmt(maxError)
end
-- Returns the union's maxError (string) and whether it was built now.
local function ensureUnion(uKey, cutsKey, buckets, hours, ttl)
  local score = redis.call('ZSCORE', uKey, SENTINEL)
  if score then return errorOf(score), false end
  return buildUnion(uKey, cutsKey, buckets, hours, ttl), true
end
`;

/**
 * KEYS: names, seen, dirty, bucket 1..B, stale union 1..U.
 * ARGV: stream, B, U, (hour, ttl) × B, (bucketIndex, count, member) × E.
 * The stale unions are the cached unions that hold an hour this batch writes
 * (see staleUnions in write.ts); usually there are none.
 */
export const recordScript = defineWriteScript(
  "trending-record",
  `
local stream   = ARGV[1]
local nBuckets = tonumber(ARGV[2])
local nUnions  = tonumber(ARGV[3])
local minHour, maxHour = nil, nil
for i = 4 + 2 * nBuckets, #ARGV, 3 do
  redis.call('ZINCRBY', KEYS[3 + tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2])
end
for b = 1, nBuckets do
  local hour = tonumber(ARGV[2 + 2 * b])
  -- ZINCRBY cannot set an expiry (the post's "ZADD ... INCR EX" does not exist);
  -- EXPIRE in the same script costs no extra round trip.
  redis.call('EXPIRE', KEYS[3 + b], ARGV[3 + 2 * b])
  if not minHour or hour < minHour then minHour = hour end
  if not maxHour or hour > maxHour then maxHour = hour end
end
redis.call('ZADD', KEYS[1], 0, stream)
redis.call('ZADD', KEYS[2], 'GT', maxHour, stream)
-- LT keeps the earliest hour not yet compacted, so a late event re-opens its hour.
redis.call('ZADD', KEYS[3], 'LT', minHour, stream)
if nUnions > 0 then
  -- they hold an hour this write changed: the next read rebuilds them
  local stale = {}
  for i = 4 + nBuckets, 3 + nBuckets + nUnions do stale[#stale + 1] = KEYS[i] end
  redis.call('DEL', unpack(stale))
end
return nBuckets
`,
);

/**
 * KEYS: union, cuts, current bucket, scratch, window buckets 1..W.
 * ARGV: member, unionTtl, hour index × W.
 * Ranks need every count of the window, so this one merges (one member, rare).
 */
export const memberScript = defineReadScript(
  "trending-member",
  `
${UNION_LUA}
local member = ARGV[1]
local uKey, cKey, tmpKey = KEYS[1], KEYS[3], KEYS[4]
local buckets, hours = {}, {}
for i = 5, #KEYS do buckets[#buckets + 1] = KEYS[i] end
for i = 3, #ARGV do hours[#hours + 1] = ARGV[i] end
local maxError = ensureUnion(uKey, KEYS[2], buckets, hours, ARGV[2])
local src = uKey
if redis.call('EXISTS', cKey) == 1 then
  redis.call('ZUNIONSTORE', tmpKey, 2, uKey, cKey)
  src = tmpKey
end
local score = redis.call('ZSCORE', src, member)
local rank = false
if score then
  -- rank by count descending, ties by member ascending: everyone strictly above,
  -- plus the tied members before it in ZRANK's (count, member) ascending order.
  -- The sentinel (≤ 0 < score) is in both ZRANK and the count below, so it cancels.
  local asc   = redis.call('ZRANK', src, member)
  local below = redis.call('ZCOUNT', src, '-inf', '(' .. score)
  local above = redis.call('ZCOUNT', src, '(' .. score, '+inf')
  rank = above + (asc - below) + 1
end
if src == tmpKey then redis.call('DEL', tmpKey) end
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
 * KEYS: dirty, seen, then per stream: cuts, union × nWindows, buckets of hours from..H-1.
 * ARGV: H, keep, horizon, unionTtl, cutsTtl, nWindows, window × nWindows,
 *   then per stream: name, from.
 */
export const compactScript = defineWriteScript(
  "trending-compact",
  `
${UNION_LUA}
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
  local cutsKey = KEYS[k]
  local uBase = k + 1
  local bBase = uBase + nWin
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
        -- a union an earlier read built from the untrimmed hours is kept: its counts and
        -- bound were true when built, and a late event since would have deleted it
        local _, built = ensureUnion(KEYS[uBase + j - 1], cutsKey, buckets, hours, unionTtl)
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
