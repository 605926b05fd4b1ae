import { defineLua, defineScript } from "../redis/script.ts";
import { trimLua } from "./trim-lua.ts";
import { HOUR_COUNT_ERROR, MAX_HOUR_COUNT } from "./validate.ts";

/**
 * The markers that ride inside hour buckets and unions.
 *
 * Every hour bucket holds the member "\0err" (SENTINEL) scored -cut, where cut
 * is the sum of the highest counts compaction removed from that hour: 0 when it
 * was never trimmed. The write that creates a bucket adds it (recordScript),
 * trimming lowers it. ZUNIONSTORE sums equal members, so the union of a window's
 * buckets holds "\0err" scored -maxError with no hash to read and no member to
 * add. Real counts are > 0, so ranges by count never reach it before every real
 * member, and no member can spell it (control characters are refused).
 * A union may also hold PREV (it leaves out the previous hour) and, in the
 * shared slot, WIDTH scored -width (the width it was built for).
 * The compaction queue `_dirty` holds, beside each stream's entry, its mark
 * (markOf(stream): "\0" and the name, which no stream name can spell) scored
 * -H, H the hour of the last compaction run that finished the stream: every
 * hour before H was trimmed then (see previousOpen).
 */
export const markersLua = defineLua(
  "trending.markers",
  ["SENTINEL", "WIDTH", "PREV", "fmt", "markOf"],
  `
local SENTINEL = string.char(0) .. 'err'
local WIDTH    = string.char(0) .. 'w'
local PREV     = string.char(0) .. 'p'
-- a stream's compaction mark in _dirty: scored -(hour of the run that last finished it)
local function markOf(stream) return string.char(0) .. stream end
-- counts and bounds as strings: %.17g round-trips a double, Lua's tostring does not
local function fmt(x) return string.format('%.17g', x) end
`,
);

/**
 * The cached union of the finished hours of a window (shared by the reads and compaction).
 *
 * A union exists only while it is current: a write to one of its hours DELs it
 * (recordScript). The 24 h and 48 h unions have keys of their own; every other
 * width shares one slot per stream and hour, whose WIDTH marker says which
 * width it holds: a read of another width finds it wrong and rebuilds the slot.
 * A window with no events stores nothing (ZUNIONSTORE of missing keys deletes
 * the target), so reading streams that do not exist costs no memory.
 */
export const unionLua = defineLua(
  "trending.union",
  ["markersOf", "validUnion", "previousOpen", "buildUnion"],
  `
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
-- union: compaction has not finished it yet, so it may hold every member of its hour,
-- and ZUNIONSTORE would copy them all. That is when the queue holds an hour before H
-- and the stream's mark says no run of hour H (or later) finished it: a late event
-- re-queues its own hour but leaves the mark, so the previous hour, trimmed by then, is
-- unioned (review 17: such a read paged it as a third set until the next run).
local function previousOpen(dirtyKey, stream, H)
  local got  = redis.call('ZMSCORE', dirtyKey, stream, markOf(stream))
  local due  = tonumber(got[1])
  local done = got[2] and 0 - tonumber(got[2])
  if not due or due >= H then return false end
  return not (done and done >= H)
end
-- (Re)builds the union of the window's finished hours (buckets, oldest first), without
-- the last one when split; false when that holds no event (then no key is left). When uKey
-- holds another width's union (replace), UNLINK frees that in the background first: a
-- ZUNIONSTORE over it would free its members inside this script.
local function buildUnion(uKey, buckets, ttl, width, split, replace)
  local n = #buckets
  if split then n = n - 1 end
  if n == 0 then return false end
  if replace then redis.call('UNLINK', uKey) end
  if redis.call('ZUNIONSTORE', uKey, n, unpack(buckets, 1, n)) == 0 then return false end
  if split and width > 0 then redis.call('ZADD', uKey, -1, PREV, 0 - width, WIDTH)
  elseif split then redis.call('ZADD', uKey, -1, PREV)
  elseif width > 0 then redis.call('ZADD', uKey, 0 - width, WIDTH) end
  redis.call('EXPIRE', uKey, ttl)
  return true
end
`,
  [markersLua],
);

/**
 * Adds events to their hour buckets: `slots[i]` is the index in `buckets` of
 * the i-th (member, count); `hours` and `ttls` go with `buckets`; `requeue` is
 * '1' for a late write or one in the hour's last 5 minutes.
 *
 * First, before any write, one ZMSCORE per bucket reads its sentinel and the
 * batch's members: no member's count in an hour may pass MAX_HOUR_COUNT (so
 * every window's sum stays an exact integer below 2^53; validate.ts), and a
 * batch that would take one past it writes nothing (HOUR_COUNT_ERROR below).
 * The same ZMSCORE answers "is this bucket new?" (no sentinel: a bucket gets
 * its sentinel when it is created and keeps it), which ZADD NX of the sentinel
 * answered before review 10, so the check costs no command: an existing
 * bucket takes a ZINCRBY per member, a new one one ZADD of its sentinel and
 * its members' counts (computed here from the ZMSCORE, as ZINCRBY would: the
 * same double addition), then its EXPIRE (its deadline is fixed by its hour)
 * and the registry updates (an existing bucket's creation already put its
 * hour in `_seen` and `_dirty`). A steady write is ZMSCORE and ZINCRBY per member.
 * `stale` are the cached unions that hold an hour this batch writes (see
 * staleUnions in trending.ts); usually there are none. Returns the number of buckets,
 * which the call's keys fix before it runs: `resultUpFront` lets the idempotency
 * prelude record it in the command that looks for an earlier record (4 commands
 * with an Idempotency-Key instead of 5), and an error in the body takes it back.
 *
 * The bound is refused by raising an error, not by the `{refused = ...}` channel:
 * queued ingest (src/ingest/scripts.ts) runs this script inside its apply script
 * and does not read its result, so a refusal there would mark the events applied
 * and drop them; an error fails the group, whose messages the consumer then applies
 * one by one, dead-lettering the one past the bound (consume.ts). record()
 * (trending.ts) turns the error into a 400.
 */
export const recordScript = defineScript({
  name: "trending.record",
  write: true,
  keys: ["names", "seen", "dirty", "...buckets", "...stale"],
  args: ["stream", "requeue", "...hours", "...ttls", "...slots", "...counts", "...members"],
  uses: [markersLua],
  resultUpFront: "#buckets",
  lua: `
local inBucket = {}
for b = 1, #buckets do inBucket[b] = {} end
for i = 1, #members do
  local list = inBucket[tonumber(slots[i])]
  list[#list + 1] = i
end
-- every check before the first write: a refused batch leaves nothing
local fresh, sums, over = {}, {}, {}
for b = 1, #buckets do
  local list = inBucket[b]
  local ask = { SENTINEL }
  for j = 1, #list do ask[j + 1] = members[list[j]] end
  local got = redis.call('ZMSCORE', buckets[b], unpack(ask))
  fresh[b] = not got[1]
  for j = 1, #list do
    local i = list[j]
    local was = tonumber(got[j + 1]) or 0
    sums[i] = was + tonumber(counts[i])
    -- every one past the bound, so the 400 can name the first in the batch's order (hours ascend here)
    if sums[i] > ${MAX_HOUR_COUNT} then over[#over + 1] = i .. ' ' .. fmt(was) end
  end
end
if #over > 0 then error({err = '${HOUR_COUNT_ERROR} ' .. table.concat(over, ' ')}) end
local minHour, maxHour, created = nil, nil, false
for b = 1, #buckets do
  local hour, list = tonumber(hours[b]), inBucket[b]
  if not minHour or hour < minHour then minHour = hour end
  if not maxHour or hour > maxHour then maxHour = hour end
  if fresh[b] then
    -- the write that creates the bucket: its sentinel, its counts, and its expiry, once
    -- (the "ZADD ... INCR EX" of source post 000 (docs/background.md) does not exist)
    local add = { 0, SENTINEL }
    for j = 1, #list do
      add[#add + 1] = fmt(sums[list[j]])
      add[#add + 1] = members[list[j]]
    end
    redis.call('ZADD', buckets[b], unpack(add))
    redis.call('EXPIRE', buckets[b], ttls[b])
    created = true
  else
    for j = 1, #list do redis.call('ZINCRBY', buckets[b], counts[list[j]], members[list[j]]) end
  end
end
if created then
  -- GT keeps the latest hour; it adds (returns 1) only for a stream not yet registered
  if redis.call('ZADD', seen, 'GT', maxHour, stream) == 1 then redis.call('ZADD', names, 0, stream) end
end
if created or requeue == '1' then
  -- LT keeps the earliest hour not yet compacted, so a late event re-opens its hour.
  redis.call('ZADD', dirty, 'LT', minHour, stream)
end
if #stale > 0 then
  -- they hold an hour this write changed: the next read rebuilds them
  redis.call('UNLINK', unpack(stale))
end
return #buckets
`,
});

/**
 * Removes a stream from the registry and deletes `doomed` (every key it may
 * have). Returns how many keys existed.
 */
export const deleteScript = defineScript({
  name: "trending.delete",
  write: true,
  keys: ["names", "seen", "dirty", "...doomed"],
  args: ["stream"],
  uses: [markersLua],
  lua: `
redis.call('ZREM', names, stream)
redis.call('ZREM', seen, stream)
redis.call('ZREM', dirty, stream, markOf(stream))
local deleted = 0
-- DEL in slices: unpack of hundreds of keys is fine, thousands would hit Lua's stack
for i = 1, #doomed, 200 do
  deleted = deleted + redis.call('UNLINK', unpack(doomed, i, math.min(i + 199, #doomed)))
end
return deleted
`,
});

/**
 * UNLINKs `doomed` (slices of 200, as deleteScript): the buckets of a stream's
 * older hours, past those a write can still reach, which a DELETE removes after
 * the stream itself (see deleteStream in ./delete.ts). Returns how many keys existed.
 */
export const unlinkScript = defineScript({
  name: "trending.unlink",
  write: true,
  keys: ["...doomed"],
  args: [],
  lua: `
local deleted = 0
for i = 1, #doomed, 200 do
  deleted = deleted + redis.call('UNLINK', unpack(doomed, i, math.min(i + 199, #doomed)))
end
return deleted
`,
});

/**
 * The streams due for compaction (flat name, hour): written in a finished hour
 * since their last compaction, or quiet long enough for every bucket to have
 * expired (see compactScript). One command, so a run with nothing to do costs two.
 */
export const dueScript = defineScript({
  name: "trending.due",
  write: false,
  keys: ["dirty"],
  args: ["hour", "limit"],
  lua: `
-- from 0: the streams' marks (markersLua), scored -hour, are not streams
return redis.call('ZRANGEBYSCORE', dirty, 0, '(' .. hour, 'WITHSCORES', 'LIMIT', 0, tonumber(limit))
`,
});

/**
 * Compacts the streams `streams[i]` from hour `froms[i]` to H - 1. `perStream`
 * holds, for each stream in turn, its 3 union keys of hour H (24 h, 48 h,
 * slot), its scratch key and its buckets of hours from..H-1.
 *
 * `_dirty` holds, per stream, the earliest hour written since its last
 * compaction (always ≤ its `_seen` hour), or, once the stream went quiet, its
 * last hour + retention: the hour from which all its buckets have expired
 * (greater than its `_seen` hour, which is how the two are told apart). So
 * the one queue also schedules the registry's pruning, and nothing scans `_seen`.
 * A stream finished here also gets its mark set to -H (markersLua), in the same
 * ZADD: reads then know the previous hour is trimmed even after a late event
 * lowered the stream's entry (previousOpen); pruning removes both.
 *
 * Bounded work: trimming an hour costs at most `keep` member moves however big
 * it is (a few removed: ZREMRANGEBYRANK; more than `keep`: the top `keep` are
 * copied out with ZRANGESTORE and the old bucket UNLINKed, freed off the main
 * thread). A script stops starting hours once `budget` moves are spent: the
 * stream's queue entry becomes the first hour not done ('partial'), streams
 * not reached are left as they are ('deferred'), and the caller runs another script.
 * Returns one { name, status, hours trimmed, members removed, unions completed } per stream.
 */
export const compactScript = defineScript({
  name: "trending.compact",
  write: true,
  keys: ["dirty", "seen", "names", "...perStream"],
  args: ["H", "keep", "horizon", "unionTtl", "retention", "now", "budget", "...streams", "...froms"],
  uses: [markersLua, trimLua],
  lua: `
local H, keep, horizon = tonumber(H), tonumber(keep), tonumber(horizon)
local retention, now, budget = tonumber(retention), tonumber(now), tonumber(budget)
local spent = 0
local out = {}
local k = 1
for s = 1, #streams do
  local name, from = streams[s], tonumber(froms[s])
  local uBase = k
  local tmp   = perStream[uBase + 3]
  local bBase = uBase + 4
  k = bBase + (H - from)
  local status, trimmed, removed, unions = 'skipped', 0, 0, 0
  local due, lastHour = nil, nil
  if spent >= budget then
    status = 'deferred'
  else
    due      = redis.call('ZSCORE', dirty, name)
    lastHour = redis.call('ZSCORE', seen, name)
  end
  -- another run (cron is at-least-once, QStash retries) may have done it already
  if due and tonumber(due) < H then
    local start = math.max(tonumber(due), H - horizon)
    if not lastHour or tonumber(lastHour) + retention < H then
      -- every bucket has expired (or the stream was deleted): it leaves the registry
      redis.call('ZREM', dirty, name, markOf(name))
      redis.call('ZREM', seen, name)
      redis.call('ZREM', names, name)
      status = 'pruned'
    elseif start < from then
      -- a late event re-opened an hour after we read the queue; the next batch takes it
      status = 'requeued'
    else
      local stopped = nil
      for h = start, H - 1 do
        local key = perStream[bBase + h - from]
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
            -- the cut (the highest count removed) bounds how much any member of this hour can be
            -- missing; a tie across it keeps the byte-least members (./trim-lua.ts, review 22)
            trimHour(key, tmp, keep, excess, math.max(1, math.ceil(((h + 1 + retention) * 3600000 - now) / 1000)), SENTINEL)
            removed = removed + excess
            trimmed = trimmed + 1
          end
        end
      end
      if stopped then
        -- resumable: the next script starts at the first hour not done
        redis.call('ZADD', dirty, stopped, name)
        status = 'partial'
      else
        -- a union a read built this hour without the previous hour (PREV): add that hour,
        -- now trimmed. Unions nobody read are not built: the first read builds its own
        -- from trimmed hours, and streams nobody reads cost nothing.
        local prev = perStream[bBase + H - 1 - from]
        if redis.call('EXISTS', perStream[uBase], perStream[uBase + 1], perStream[uBase + 2]) > 0 then
          for j = 0, 2 do
            local uKey = perStream[uBase + j]
            if redis.call('ZSCORE', uKey, PREV) then
              redis.call('ZUNIONSTORE', uKey, 2, uKey, prev)
              redis.call('ZREM', uKey, PREV)
              redis.call('EXPIRE', uKey, unionTtl)
              unions = unions + 1
            end
          end
        end
        -- with its mark, in the same command: a run of hour H finished it (previousOpen)
        if tonumber(lastHour) >= H then
          redis.call('ZADD', dirty, H, name, 0 - H, markOf(name))
        else
          -- quiet since: due again when its last bucket has expired, to leave the registry
          redis.call('ZADD', dirty, tonumber(lastHour) + retention, name, 0 - H, markOf(name))
        end
        status = 'compacted'
      end
    end
  end
  out[#out + 1] = { name, status, trimmed, removed, unions }
end
return out
`,
});
