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
local PREV     = string.char(0) .. 'p'
local function fmt(x) return string.format('%.17g', x) end
-- -maxError rather than -maxError - 1: negation is exact, so the bound round-trips
local function errorOf(score)
  if not score then return '0' end
  return fmt(0 - tonumber(score))
end
-- The markers a union may hold: the sentinel, PREV (the union leaves out the previous
-- hour, which the read pages as a set of its own), and in the shared slot its width.
local function markersOf(width)
  if width > 0 then return { SENTINEL, PREV, WIDTH } end
  return { SENTINEL, PREV }
end
-- Whether ZMSCORE of markersOf(width) found a union built for this width.
local function validUnion(got, width)
  if not got[1] then return false end
  return width == 0 or tonumber(got[3]) == 0 - width
end
-- Whether the previous hour (the window's last finished hour) must stay out of the
-- union: compaction has not finished it yet (the queue holds an hour before H), so it
-- may hold every member of its hour, and ZUNIONSTORE would copy them all.
local function previousOpen(dirtyKey, stream, H)
  local due = redis.call('ZSCORE', dirtyKey, stream)
  return due and tonumber(due) < H or false
end
-- (Re)builds the union of the window's finished hours (buckets, oldest first), without
-- the last one when split; false when that holds no event (then no key is left).
local function buildUnion(uKey, buckets, ttl, width, split)
  local n = #buckets
  if split then n = n - 1 end
  if n == 0 then return false end
  if redis.call('ZUNIONSTORE', uKey, n, unpack(buckets, 1, n)) == 0 then return false end
  if split and width > 0 then redis.call('ZADD', uKey, -1, PREV, 0 - width, WIDTH)
  elseif split then redis.call('ZADD', uKey, -1, PREV)
  elseif width > 0 then redis.call('ZADD', uKey, 0 - width, WIDTH) end
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
 * KEYS: union, current bucket, scratch, compaction queue, window buckets 1..W (oldest first).
 * ARGV: member, unionTtl, slot width (0 for a standard window), stream, H, depth.
 *
 * The member's count is one lookup per set (U, P while U leaves it out, C):
 * O(log N), nothing merged. Its rank: a member ranked above it has a window count
 * of at least its count s, so at least s / sets in one set, and in every set j at
 * least s - (the other sets' highest counts). When one of these ranges holds at
 * most `depth` members a set, they are read (ZREVRANGEBYSCORE) and looked up in
 * the other sets, and the rank is exact (ties: TypeScript counts the tied
 * members before it in byte order). Otherwise (a member deep in a big window)
 * the rank is given as bounds from ZCOUNTs: at least 1 + the most members above
 * s in any one set, at most 1 + every other member at or above s / sets in any set.
 * Returns { maxError, count, rank (exact, or the lower bound), rankMax, ties, rankExact }.
 */
export const memberScript = defineReadScript(
  "trending-member",
  `
${UNION_LUA}
local member = ARGV[1]
local ttl    = ARGV[2]
local width  = tonumber(ARGV[3])
local stream = ARGV[4]
local H      = tonumber(ARGV[5])
local depth  = tonumber(ARGV[6])
local uKey, cKey, dirtyKey = KEYS[1], KEYS[2], KEYS[4]
local buckets = {}
for i = 5, #KEYS do buckets[#buckets + 1] = KEYS[i] end

local ask = markersOf(width)
ask[#ask + 1] = member
local got = redis.call('ZMSCORE', uKey, unpack(ask))
local split, uErr, uCount, uNone = false, nil, nil, false
if validUnion(got, width) then
  split, uErr, uCount = got[2] and true or false, got[1], got[#ask]
else
  split = previousOpen(dirtyKey, stream, H)
  if buildUnion(uKey, buckets, ttl, width, split) then
    got = redis.call('ZMSCORE', uKey, SENTINEL, member)
    uErr, uCount = got[1], got[2]
  else
    uNone = true
  end
end
-- the sets and the member's count in each, in the top read's order of addition (U, P, C)
local sets, counts, pErr = {}, {}, nil
if not uNone then sets[#sets + 1], counts[#counts + 1] = uKey, tonumber(uCount) or 0 end
if split then
  local p = redis.call('ZMSCORE', buckets[#buckets], SENTINEL, member)
  pErr = p[1]
  sets[#sets + 1], counts[#counts + 1] = buckets[#buckets], tonumber(p[2]) or 0
end
sets[#sets + 1], counts[#counts + 1] = cKey, tonumber(redis.call('ZSCORE', cKey, member)) or 0
local sum = 0
for i = 1, #counts do sum = sum + counts[i] end
local maxError = fmt(0 - (tonumber(uErr) or 0) - (tonumber(pErr) or 0))
if sum <= 0 then return cjson.encode({ maxError = maxError, count = '0', rank = false }) end

-- Members that can rank above: listed from pages of at most depth, then looked up elsewhere.
local known, cands, seen = {}, {}, {}
for t = 1, #sets do known[t] = {} end
local function take(t, page)
  for i = 1, #page, 2 do
    known[t][page[i]] = tonumber(page[i + 1])
    if not seen[page[i]] then
      seen[page[i]] = true
      cands[#cands + 1] = page[i]
    end
  end
end
-- a little below a bound: a rounding of the arithmetic must not leave a member out
local function below(x) return fmt(x * (1 - 1e-12)) end
local listed = true
-- 1. one with a count of at least s has at least s / sets in some set
local floor = below(sum / #sets)
for t = 1, #sets do
  local page = redis.call('ZREVRANGEBYSCORE', sets[t], '+inf', floor, 'WITHSCORES', 'LIMIT', 0, depth + 1)
  if #page > 2 * depth then listed = false break end
  take(t, page)
end
if not listed then
  -- 2. tighter, from one set: in every set j it has at least s - (the other sets' highest counts)
  known, cands, seen = {}, {}, {}
  for t = 1, #sets do known[t] = {} end
  local highest, total = {}, 0
  for t = 1, #sets do
    local top = redis.call('ZREVRANGE', sets[t], 0, 0, 'WITHSCORES')
    highest[t] = math.max(tonumber(top[2]) or 0, 0)
    total = total + highest[t]
  end
  local best, bound = nil, 0
  for t = 1, #sets do
    local need = sum - (total - highest[t])
    if need > bound then best, bound = t, need end
  end
  if best then
    local page = redis.call('ZREVRANGEBYSCORE', sets[best], '+inf', below(bound), 'WITHSCORES', 'LIMIT', 0, depth + 1)
    if #page <= 2 * depth then
      take(best, page)
      listed = true
    end
  end
end
if not listed then
  -- too many near its count to list (a member deep in a big window): bounds in O(log N)
  local lo, hi = 0, 0
  for t = 1, #sets do
    local above = redis.call('ZCOUNT', sets[t], '(' .. fmt(sum), '+inf')
    if above > lo then lo = above end
    hi = hi + redis.call('ZCOUNT', sets[t], floor, '+inf')
    if counts[t] >= tonumber(floor) then hi = hi - 1 end
  end
  return cjson.encode({ maxError = maxError, count = fmt(sum), rank = lo + 1, rankMax = hi + 1, rankExact = false })
end
for t = 1, #sets do
  local missing = {}
  for _, m in ipairs(cands) do
    if known[t][m] == nil then missing[#missing + 1] = m end
  end
  if #missing > 0 then
    local got = redis.call('ZMSCORE', sets[t], unpack(missing))
    for i, m in ipairs(missing) do known[t][m] = tonumber(got[i]) or 0 end
  end
end
local above, ties = 0, {}
for _, m in ipairs(cands) do
  if m ~= member then
    local v = 0
    for t = 1, #sets do v = v + known[t][m] end
    if v > sum then above = above + 1 elseif v == sum then ties[#ties + 1] = m end
  end
end
return cjson.encode({ maxError = maxError, count = fmt(sum), rank = above + 1, ties = ties, rankExact = true })
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
 * KEYS: dirty, seen, names, then per stream: its 3 union keys of hour H (24 h,
 *   48 h, slot), scratch, buckets of hours from..H-1.
 * ARGV: H, keep, horizon, unionTtl, retention, now (ms), budget, then per stream: name, from.
 *
 * `_dirty` holds, per stream, the earliest hour written since its last
 * compaction (always ≤ its `_seen` hour), or, once the stream went quiet, its
 * last hour + retention: the hour from which all its buckets have expired
 * (greater than its `_seen` hour, which is how the two are told apart). So
 * the one queue also schedules the registry's pruning, and nothing scans `_seen`.
 *
 * Bounded work: trimming an hour costs at most `keep` member moves however big
 * it is (a few removed: ZREMRANGEBYRANK; more than `keep`: the top `keep` are
 * copied out with ZRANGESTORE and the old bucket UNLINKed, freed off the main
 * thread). A script stops starting hours once `budget` moves are spent: the
 * stream's queue entry becomes the first hour not done ('partial'), streams
 * not reached are left as they are ('deferred'), and the caller runs another script.
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
local now       = tonumber(ARGV[6])
local budget    = tonumber(ARGV[7])
local spent     = 0
local out = {}
local a, k = 8, 4
while a <= #ARGV do
  local name, from = ARGV[a], tonumber(ARGV[a + 1])
  a = a + 2
  local uBase = k
  local tmp   = KEYS[uBase + 3]
  local bBase = uBase + 4
  k = bBase + (H - from)
  local status, trimmed, removed, unions = 'skipped', 0, 0, 0
  local score, seen = nil, nil
  if spent >= budget then
    status = 'deferred'
  else
    score = redis.call('ZSCORE', KEYS[1], name)
    seen  = redis.call('ZSCORE', KEYS[2], name)
  end
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
      local stopped = nil
      for h = start, H - 1 do
        local key = KEYS[bBase + h - from]
        if keep > 0 then
          -- real members beyond keep (the sentinel, ≤ 0, is always the lowest: rank 0)
          local excess = redis.call('ZCARD', key) - 1 - keep
          if excess > 0 then
            local cost = math.min(excess, keep)
            if spent > 0 and spent + cost > budget then
              stopped = h
              break
            end
            spent = spent + cost
            -- the highest count removed, the (keep+1)-th from the top, bounds how much any
            -- member of this hour can be missing
            local cut = tonumber(redis.call('ZREVRANGE', key, keep, keep, 'WITHSCORES')[2])
            if excess <= keep then
              -- ranks 1..excess from the bottom; rank 0 is the sentinel, which stays
              redis.call('ZREMRANGEBYRANK', key, 1, excess)
              -- summed, not maxed: a member removed, re-added late and removed again lost both parts
              redis.call('ZINCRBY', key, 0 - cut, SENTINEL)
            else
              -- a big hour: copy its top keep and swap, rather than remove members one by one
              local err = tonumber(redis.call('ZSCORE', key, SENTINEL)) or 0
              redis.call('ZRANGESTORE', tmp, key, 0, keep - 1, 'REV')
              redis.call('ZADD', tmp, err - cut, SENTINEL)
              redis.call('EXPIRE', tmp, math.max(1, math.ceil(((h + 1 + retention) * 3600000 - now) / 1000)))
              redis.call('UNLINK', key)
              redis.call('RENAME', tmp, key)
            end
            removed = removed + excess
            trimmed = trimmed + 1
          end
        end
      end
      if stopped then
        -- resumable: the next script starts at the first hour not done
        redis.call('ZADD', KEYS[1], stopped, name)
        status = 'partial'
      else
        -- a union a read built this hour without the previous hour (PREV): add that hour,
        -- now trimmed. Unions nobody read are not built: the first read builds its own
        -- from trimmed hours, and streams nobody reads cost nothing.
        local prev = KEYS[bBase + H - 1 - from]
        if redis.call('EXISTS', KEYS[uBase], KEYS[uBase + 1], KEYS[uBase + 2]) > 0 then
          for j = 0, 2 do
            local uKey = KEYS[uBase + j]
            if redis.call('ZSCORE', uKey, PREV) then
              redis.call('ZUNIONSTORE', uKey, 2, uKey, prev)
              redis.call('ZREM', uKey, PREV)
              redis.call('EXPIRE', uKey, unionTtl)
              unions = unions + 1
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
  end
  out[#out + 1] = { name, status, trimmed, removed, unions }
end
return out
`,
);
