import { defineReadScript, defineWriteScript } from "../redis/script.ts";

/**
 * Lua shared by the read scripts and compaction: the cached union of the
 * finished hours of a window, and the error bound that rides inside it.
 *
 * Every hour bucket holds the member "\0err" (SENTINEL) scored -cut, where cut
 * is the sum of the highest counts compaction removed from that hour: 0 when it
 * was never trimmed. The write that creates a bucket adds it (recordScript),
 * trimming lowers it. ZUNIONSTORE sums equal members, so the union of a window's
 * buckets holds "\0err" scored -maxError with no hash to read and no member to
 * add. Real counts are > 0, so ranges by count never reach it before every real
 * member, and no member can spell it (control characters are refused).
 *
 * A union exists only while it is current: a write to one of its hours DELs it
 * (recordScript). The 24 h and 48 h unions have keys of their own; every other
 * width shares one slot per stream and hour, which also holds "\0w" (WIDTH)
 * scored -width: a read of another width finds it wrong and rebuilds the slot.
 * A window with no events stores nothing (ZUNIONSTORE of missing keys deletes
 * the target), so reading streams that do not exist costs no memory.
 */
export const UNION_LUA = `
local SENTINEL = string.char(0) .. 'err'
local WIDTH    = string.char(0) .. 'w'
local function fmt(x) return string.format('%.17g', x) end
-- -maxError rather than -maxError - 1: negation is exact, so the bound round-trips
local function errorOf(score)
  if not score then return '0' end
  return fmt(0 - tonumber(score))
end
-- The markers a valid union holds: the sentinel, and in the shared slot its width.
local function markersOf(width)
  if width > 0 then return { SENTINEL, WIDTH } end
  return { SENTINEL }
end
-- Whether ZMSCORE of markersOf(width) found a union built for this width.
local function validUnion(got, width)
  if not got[1] then return false end
  return width == 0 or tonumber(got[2]) == 0 - width
end
-- (Re)builds the union; false when the window holds no event (then no key is left).
local function buildUnion(uKey, buckets, ttl, width)
  if redis.call('ZUNIONSTORE', uKey, #buckets, unpack(buckets)) == 0 then return false end
  if width > 0 then redis.call('ZADD', uKey, 0 - width, WIDTH) end
  redis.call('EXPIRE', uKey, ttl)
  return true
end
`;

/**
 * KEYS: names, seen, dirty, bucket 1..B, stale union 1..U.
 * ARGV: stream, B, U, requeue (1: a late write or the hour's last 5 minutes),
 *   (hour, ttl) × B, (bucketIndex, count, member) × E.
 *
 * The bookkeeping runs once per bucket, not once per call: ZADD NX of the
 * bucket's sentinel answers "is this bucket new?" (a bucket gets its sentinel
 * when it is created and keeps it), and only a new bucket needs its EXPIRE
 * (its deadline is fixed by its hour) and the registry updates (an existing
 * bucket's creation already put its hour in `_seen` and `_dirty`). A steady
 * write is ZINCRBY per member plus one ZADD NX per hour.
 * The stale unions are the cached unions that hold an hour this batch writes
 * (see staleUnions in write.ts); usually there are none.
 */
export const recordScript = defineWriteScript(
  "trending-record",
  `
local SENTINEL = string.char(0) .. 'err'
local stream   = ARGV[1]
local nBuckets = tonumber(ARGV[2])
local nUnions  = tonumber(ARGV[3])
local requeue  = ARGV[4] == '1'
local minHour, maxHour, created = nil, nil, false
for i = 5 + 2 * nBuckets, #ARGV, 3 do
  redis.call('ZINCRBY', KEYS[3 + tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2])
end
for b = 1, nBuckets do
  local hour = tonumber(ARGV[3 + 2 * b])
  if not minHour or hour < minHour then minHour = hour end
  if not maxHour or hour > maxHour then maxHour = hour end
  -- 1 only for the write that created the bucket: it sets the expiry, once
  -- (ZINCRBY cannot; the post's "ZADD ... INCR EX" does not exist)
  if redis.call('ZADD', KEYS[3 + b], 'NX', 0, SENTINEL) == 1 then
    redis.call('EXPIRE', KEYS[3 + b], ARGV[4 + 2 * b])
    created = true
  end
end
if created then
  -- GT keeps the latest hour; it adds (returns 1) only for a stream not yet registered
  if redis.call('ZADD', KEYS[2], 'GT', maxHour, stream) == 1 then redis.call('ZADD', KEYS[1], 0, stream) end
end
if created or requeue then
  -- LT keeps the earliest hour not yet compacted, so a late event re-opens its hour.
  redis.call('ZADD', KEYS[3], 'LT', minHour, stream)
end
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
 * KEYS: union, current bucket, scratch, window buckets 1..W.
 * ARGV: member, unionTtl, slot width (0 for a standard window).
 * Ranks need every count of the window, so this one merges (one member, rare).
 */
export const memberScript = defineReadScript(
  "trending-member",
  `
${UNION_LUA}
local member = ARGV[1]
local width  = tonumber(ARGV[3])
local uKey, cKey, tmpKey = KEYS[1], KEYS[2], KEYS[3]
local buckets = {}
for i = 4, #KEYS do buckets[#buckets + 1] = KEYS[i] end
local got = redis.call('ZMSCORE', uKey, unpack(markersOf(width)))
local maxError = '0'
if validUnion(got, width) then
  maxError = errorOf(got[1])
elseif buildUnion(uKey, buckets, ARGV[2], width) then
  maxError = errorOf(redis.call('ZSCORE', uKey, SENTINEL))
end
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
  -- The markers (≤ 0 < score) are in both ZRANK and the count below, so they cancel.
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
 * KEYS: dirty. ARGV: hour, limit.
 * The streams due for compaction: written in a finished hour since their last
 * compaction, or quiet long enough for every bucket to have expired (see
 * compactScript). One command, so a run with nothing to do costs two.
 */
export const dueScript = defineReadScript(
  "trending-due",
  `
return cjson.encode(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2])))
`,
);

/**
 * KEYS: dirty, seen, names, then per stream: union × nWindows, buckets of hours from..H-1.
 * ARGV: H, keep, horizon, unionTtl, retention, nWindows, window × nWindows,
 *   then per stream: name, from.
 *
 * `_dirty` holds, per stream, the earliest hour written since its last
 * compaction (always ≤ its `_seen` hour), or, once the stream went quiet, its
 * last hour + retention: the hour from which all its buckets have expired
 * (greater than its `_seen` hour, which is how the two are told apart). So
 * the one queue also schedules the registry's pruning, and nothing scans `_seen`.
 */
export const compactScript = defineWriteScript(
  "trending-compact",
  `
${UNION_LUA}
local H         = tonumber(ARGV[1])
local keep      = tonumber(ARGV[2])
local horizon   = tonumber(ARGV[3])
local unionTtl  = ARGV[4]
local retention = tonumber(ARGV[5])
local nWin      = tonumber(ARGV[6])
local windows   = {}
for j = 1, nWin do windows[j] = tonumber(ARGV[6 + j]) end
local out = {}
local a, k = 7 + nWin, 4
while a <= #ARGV do
  local name, from = ARGV[a], tonumber(ARGV[a + 1])
  a = a + 2
  local uBase = k
  local bBase = uBase + nWin
  k = bBase + (H - from)
  local status, trimmed, removed, unions = 'skipped', 0, 0, 0
  local score = redis.call('ZSCORE', KEYS[1], name)
  local seen  = redis.call('ZSCORE', KEYS[2], name)
  -- another run (cron is at-least-once, QStash retries) may have done it already
  if score and tonumber(score) < H then
    local start = math.max(tonumber(score), H - horizon)
    if not seen or tonumber(seen) + retention < H then
      -- every bucket has expired (or the stream was deleted): it leaves the registry
      redis.call('ZREM', KEYS[1], name)
      redis.call('ZREM', KEYS[2], name)
      redis.call('ZREM', KEYS[3], name)
      status = 'pruned'
    elseif start < from then
      -- a late event re-opened an hour after we read the queue; the next batch takes it
      status = 'requeued'
    else
      for h = start, H - 1 do
        local key = KEYS[bBase + h - from]
        if keep > 0 then
          -- the member ranked keep + 1 from the top: the bucket's own sentinel (≤ 0, always
          -- lowest) unless more than keep members hold counts
          local at = redis.call('ZRANGE', key, -(keep + 1), -(keep + 1), 'WITHSCORES')
          if at[2] and tonumber(at[2]) > 0 then
            -- the highest count removed bounds how much any member of this hour can be missing;
            -- rank 0 is the sentinel, which stays
            removed = removed + redis.call('ZREMRANGEBYRANK', key, 1, -(keep + 1))
            -- summed, not maxed: a member removed, re-added late and removed again lost both parts
            redis.call('ZINCRBY', key, 0 - tonumber(at[2]), SENTINEL)
            trimmed = trimmed + 1
          end
        end
      end
      if nWin > 0 then
        local uKeys = {}
        for j = 1, nWin do uKeys[j] = KEYS[uBase + j - 1] end
        -- a union an earlier read built from the untrimmed hours is kept: its counts and
        -- bound were true when built, and a late event since would have deleted it
        local have = redis.call('EXISTS', unpack(uKeys))
        for j = 1, nWin do
          if have < nWin and (have == 0 or redis.call('EXISTS', uKeys[j]) == 0) then
            local buckets = {}
            for h = H - windows[j], H - 1 do buckets[#buckets + 1] = KEYS[bBase + h - from] end
            if buildUnion(uKeys[j], buckets, unionTtl, 0) then unions = unions + 1 end
          end
        end
      end
      if tonumber(seen) >= H then
        redis.call('ZADD', KEYS[1], H, name)
      else
        -- quiet since: due again when its last bucket has expired, to leave the registry
        redis.call('ZADD', KEYS[1], tonumber(seen) + retention, name)
      end
      status = 'compacted'
    end
  end
  out[#out + 1] = { name, status, trimmed, removed, unions }
end
return out
`,
);
