import { ValidationError } from "../errors.ts";
import { stampLua } from "../redis/pages.ts";
import { defineScript } from "../redis/script.ts";
import { fieldsLua } from "./life.ts";
import { MAX_COUNTER_SCORE } from "./limits.ts";
import { TRIM_LUA } from "./trim.ts";

/**
 * The error the incr script raises, with `raise` set (queued ingest), for a score out of range,
 * after its undo; followed by the score it would have left. Queued ingest runs the script inside
 * its apply script and does not read its result, so the refusal table would mark the group's
 * messages applied and drop their increments; an error fails the whole apply script before it
 * records them (src/ingest/consume.ts then applies them one by one).
 */
export const SCORE_RANGE_ERROR = "ERR counters.incr out_of_range";

/**
 * Write and job scripts of the counters area (reads: ./read-scripts.ts; the index: ./life.ts; deleting a
 * counter: ./drop.ts). Every API call is one of these scripts.
 */

/**
 * Adds each item's increment to the plain counter (slot 0) or to `buckets[slot]`.
 * `buckets` holds the period buckets written, then the calendar rollups above them; per entry,
 * `ttls` (seconds, 0 = none) and the slots of its rollups (`above`: its quarter's, day's and month's,
 * space-separated; empty for none). Items are (`slots`, `members`, `bys`); the rollups' increments,
 * summed per member by the caller, are (`rollupSlots`, `rollupMembers`, `rollupBys`). `late` is 1
 * when a bucket of a finished period is written; `plainTtl` the plain key's ttl (s, 0 = none).
 * Returns the score after each item, as the strings Redis gives. A score outside ±`maxScore` is
 * undone and refused (`out_of_range`), or with `raise` = 1 (queued ingest) raised as SCORE_RANGE_ERROR.
 *
 * Rollups are keys of the index like buckets (listed, expiring, deleted with
 * the counter); their ttl is the bucket's plus its slack, so a rollup never
 * expires before a bucket it sums. A new index gets `s` (its rollups are exactly
 * the sums of their parts, what lets a member read subtract parts from a rollup) and `q` (its
 * hours all have quarter-day rollups, which a life that began before they were kept lacks);
 * a write that finds a listed key expired and restarts it drops `s`, as the
 * rollups above that key still hold what it held.
 *
 * Bookkeeping runs only on first touch, so a steady write is the ZINCRBY and
 * either the ZSCORE of its registry activity (a stamp older than a minute is refreshed, stampLua)
 * and (with a ttl on the plain key) one PTTL, or, for buckets, one HMGET of the index (the stamp
 * then at most once a minute, with an HSET of the index's `r`). Expiry rules, for every key written:
 * - a key this write creates gets the ttl (none without one);
 * - an existing key with an expiry is only ever extended: when less than ttl
 *   is left, to ttl plus a tenth of it (at most an hour), so steady writes
 *   extend it about once per tenth of the ttl rather than every time;
 * - an existing key without an expiry keeps none.
 * The registry's `_expiry` entry is an upper bound of the name's keys'
 * expiries (absent: some key never expires), raised whenever a write sets a
 * later one; the index outlives every bucket it lists.
 */
export const incrScript = defineScript({
  name: "counters.incr",
  write: true,
  keys: ["plain", "index", "names", "expiry", "seq", "...buckets", "...near"],
  args: [
    "name",
    "now",
    "late",
    "plainTtl",
    "maxScore",
    "raise",
    "...ttls",
    "...weekly",
    "...above",
    "...groups",
    "...slots",
    "...members",
    "...bys",
    "...rollupSlots",
    "...rollupMembers",
    "...rollupBys",
  ],
  uses: [fieldsLua, stampLua],
  refusals: {
    out_of_range: (r, call) =>
      new ValidationError(
        `The score of '${String(r.member)}' in counter '${String(call.args.name)}' would be ${String(r.score)}, outside ±${MAX_COUNTER_SCORE}, the range kept exact; nothing was changed.`,
        [
          {
            path: call.args.members.length === 1 ? "by" : `items.${String(r.index)}.by`,
            message: `resulting score must stay within ±${MAX_COUNTER_SCORE}`,
          },
        ],
      ),
  },
  lua: `${TRIM_LUA}
now, late, plainTtl, maxScore = tonumber(now), late == '1', tonumber(plainTtl) * 1000, tonumber(maxScore)
raise = raise == '1'
local nb = #buckets
local function slack(ms) return math.min(math.ceil(ms / 10), 3600000) end
-- the index's cursors (./trim.ts): each key's groups, and the earliest group per kind written
local groupsOf, minOf, order = {}, {}, {}
for i = 1, nb do
  groupsOf[i] = {}
  for kind, g in string.gmatch(groups[i], '(%a+):(%-?%d+)') do
    g = tonumber(g)
    groupsOf[i][kind] = g
    if not minOf[kind] or g < minOf[kind] then minOf[kind] = g end
  end
end
local extra = {'r', 'q'}
for _, kind in ipairs({'hd', 'hm', 'dm', 'w', 'm'}) do
  if minOf[kind] then
    order[#order + 1] = kind
    extra[#extra + 1] = 'c:' .. kind
  end
end
-- week size records (n:<key>, docs/counters.md "Week size records"): each week bucket's, then each
-- near key's field and record, in the same HMGET
local recAt, nearAt, nWeeks = {}, #extra, 0
for i = 1, nb do
  if weekly[i] ~= '0' then
    extra[#extra + 1] = 'n:' .. buckets[i]
    recAt[i] = #extra
    nWeeks = nWeeks + 1
  end
end
nearAt = #extra
for _, k in ipairs(near) do
  extra[#extra + 1] = 'b:' .. k
  extra[#extra + 1] = 'n:' .. k
end
-- One HMGET says, per bucket, whether it is part of this life and its recorded expiry (0 = none),
-- (field r) when this counter last refreshed its registry score, (q) whether the life began with
-- every rollup level, and where the index's cursors stand.
local values = nil
local cursors = {}
if nb > 0 then
  values = fields(index, buckets, extra)
  for j, kind in ipairs(order) do cursors[kind] = trimParse(kind, values[nb + 2 + j]) end
end
-- The registry's score is the last write, to the minute (lists show recent activity first): a
-- period write whose index says the score was set less than a minute ago skips the ZADD, so a busy
-- counter pays it once a minute, not on every write; such a name is registered (a live index
-- implies it). A plain write has no index: the score itself says so (one ZSCORE where a ZADD was;
-- review 26: a stamp now goes above the registry's highest, stampLua, which must not run on every
-- write of a busy registry, or stamps would run ahead of the clock). A name new to the registry
-- has no _expiry entry, i.e. counts as never expiring.
local refreshed = values and tonumber(values[nb + 1])
local own = nil
if nb == 0 then
  own = redis.call('ZSCORE', names, name)
  refreshed = own and tonumber(own)
end
local register = not (refreshed and now - refreshed < 60000 and (own or refreshed <= now))
local forever, grow = false, 0
local usesPlain     = false
for _, slot in ipairs(slots) do
  if slot == '0' then usesPlain = true break end
end
-- with a ttl, the plain key's PTTL before the write: -2 new, -1 kept for ever, else the time left
local plainLeft = -1
if usesPlain and plainTtl > 0 then plainLeft = redis.call('PTTL', plain) end
local state, indexLeft, restarted = {}, nil, false
if nb > 0 then
  for i, b in ipairs(buckets) do
    local v = tonumber(values[i])
    if v and v > 0 and v <= now + 60000 then
      -- the recorded expiry has (nearly) passed, by our clock: ask Redis' own
      local t, old = redis.call('PTTL', b), v
      if t == -2 then
        v = nil
        -- a key of this life expired and restarts: a rollup above it (alive longer) still holds
        -- what it held, so rollups no longer equal the sums of their parts (index field s)
        restarted = true
      elseif t == -1 then v = 0 else v = now + t end
      -- a record that was wrong (kept from before expiries were recorded) is put right once
      if v and old <= now then
        trimNote(cursors, groupsOf[i], v, minOf, false)
        redis.call(unpack(trimFlush(cursors, {'HSET', index, 'b:' .. b, v})))
      end
    end
    if not v then
      if not indexLeft then indexLeft = redis.call('PTTL', index) end
      -- not part of this life: whatever it holds predates a delete of the counter
      redis.call('UNLINK', b)
    end
    state[i] = v or false
  end
  -- a write that creates a key may take one step of the index's cursors (one command at most:
  -- ./trim.ts); only in a life begun with every rollup level (q), whose rollups sum all its keys
  local creates = false
  for i = 1, nb do if state[i] == false then creates = true end end
  if creates and values[nb + 2] then trimStep(index, string.sub(index, 1, #index - 6), cursors, order, minOf, now) end
end
-- Every score written must stay within ±maxScore (MAX_COUNTER_SCORE, ./limits.ts: past 2^53
-- increments are rounded away). Knowing the score before the
-- write would cost a read per key in every call, so the check reads ZINCRBY's answer, and a batch
-- with a score out of range is undone (review 10): each (key, member) it touched goes back to its
-- first answer minus its first increment (exact for integers, which stay below 2^53 all along), or
-- is removed when that answer was the increment itself (the member was new). Nothing else has been written yet but housekeeping that changes no
-- count (expired index records, dead keys of a deleted life), so the refused call writes nothing.
local touched, firstOf = {}, {}
local function note(key, member, by, score)
  local k = firstOf[key]
  if not k then
    k = {}
    firstOf[key] = k
  end
  if not k[member] then
    k[member] = {score, by}
    touched[#touched + 1] = {key, member}
  end
  local v = tonumber(score)
  return v and v >= -maxScore and v <= maxScore
end
local function refuse(member, index, score)
  for j = #touched, 1, -1 do
    local key, m = touched[j][1], touched[j][2]
    local first, by = tonumber(firstOf[key][m][1]), tonumber(firstOf[key][m][2])
    if first == by then
      redis.call('ZREM', key, m)
    else
      redis.call('ZADD', key, string.format('%.17g', first - by), m)
    end
  end
  -- queued ingest: an error, once nothing is left of the batch (the member is left out: any text)
  if raise then error({err = '${SCORE_RANGE_ERROR} ' .. score}) end
  return {refused = 'out_of_range', member = member, index = index, score = score}
end
local results, suspects = {}, 0
for i, member in ipairs(members) do
  local slot, by = tonumber(slots[i]), bys[i]
  local key      = plain
  if slot > 0 then key = buckets[slot] end
  local score = redis.call('ZINCRBY', key, by, member)
  results[#results + 1] = score
  if not note(key, member, by, score) then return refuse(member, i - 1, score) end
  -- a score equal to the increment: the member (perhaps the whole key) is new
  if slot == 0 and tonumber(score) == tonumber(by) then suspects = suspects + 1 end
end
-- calendar rollups: one ZINCRBY per (rollup, member), the batch's increments summed by the caller;
-- a rollup sums many buckets, so it may leave the range where none of them does
for i, member in ipairs(rollupMembers) do
  local key   = buckets[tonumber(rollupSlots[i])]
  local score = redis.call('ZINCRBY', key, rollupBys[i], member)
  if not note(key, member, rollupBys[i], score) then
    local first = 0
    for j = 1, #members do
      if members[j] == member and slots[j] ~= '0' then
        first = j - 1
        break
      end
    end
    return refuse(member, first, score)
  end
end
-- Week size records: a record bounds its bucket's members from above (ZCARD at the time, plus
-- every member a write added since), so a read sums records instead of a ZCARD a week. A write
-- that adds a possibly new member (its first answer in that bucket equal to its increment) to a
-- recorded bucket raises the record (in a late write, as a recorded week has ended, it rides in
-- the HSET of the generation); a finished week this write creates records the members it adds; a
-- created week in progress must have none (a steady write would pay to keep it); and a write
-- creating a week records the listed week before it by one ZCARD, once a week.
local recs, stale = {}, {}
if nWeeks > 0 then
  local added = {}
  for _, t in ipairs(touched) do
    local first = firstOf[t[1]][t[2]]
    if tonumber(first[1]) == tonumber(first[2]) then added[t[1]] = (added[t[1]] or 0) + 1 end
  end
  local createsWeek = false
  for i, at in pairs(recAt) do
    local b, old = buckets[i], values[nb + at]
    if state[i] == false then
      createsWeek = true
      if weekly[i] == '2' then
        recs[#recs + 1], recs[#recs + 2] = 'n:' .. b, added[b] or 0
      elseif old then
        stale[#stale + 1] = 'n:' .. b
      end
    elseif old and (added[b] or 0) > 0 then
      recs[#recs + 1], recs[#recs + 2] = 'n:' .. b, tonumber(old) + added[b]
    end
  end
  if createsWeek then
    for j, k in ipairs(near) do
      -- not one whose recorded expiry has passed: gone, and its field may be trimmed in this very
      -- write (trimStep), which would leave its record behind for good
      local v = tonumber(values[nb + nearAt + 2 * j - 1])
      if v and (v == 0 or v < 1e12 or v > now) and not values[nb + nearAt + 2 * j] then
        recs[#recs + 1], recs[#recs + 2] = 'n:' .. k, redis.call('ZCARD', k)
      end
    end
  end
  if #stale > 0 then redis.call('HDEL', index, unpack(stale)) end
end
local function withRecs(args)
  for _, v in ipairs(recs) do args[#args + 1] = v end
  recs = {}
  return args
end
local newName, stampR = false, false
if register then
  newName = stamp(names, name, now) == 1
  stampR  = nb > 0
end
if usesPlain then
  if plainTtl > 0 then
    if plainLeft == -2 then
      redis.call('PEXPIRE', plain, plainTtl)
      grow = now + plainTtl
    elseif plainLeft >= 0 and plainLeft < plainTtl then
      local ms = plainTtl + slack(plainTtl)
      redis.call('PEXPIRE', plain, ms, 'GT')
      grow = now + ms
    end
  elseif newName then
    forever = true
  -- more members than possibly-new ones: the key existed, nothing to record
  elseif suspects > 0 and redis.call('ZCARD', plain) <= suspects and redis.call('PTTL', plain) == -1 then
    forever = true
  end
end
local indexForever, indexGrow = false, 0
-- a rollup outlives its buckets: one whose bucket this write created without expiry keeps none either
local keep = {}
for i = 1, nb do
  local b, ttl, v = buckets[i], tonumber(ttls[i]) * 1000, state[i]
  local e         = nil
  if keep[i] then
    ttl = 0
    if v and v > 0 then
      redis.call('PERSIST', b)
      v = false
    end
  end
  if v == false then
    e = 0
    if ttl > 0 then
      redis.call('PEXPIRE', b, ttl)
      e = now + ttl
    end
    -- the registry stamp and the cursors ride in the HSET a new bucket pays anyway
    trimNote(cursors, groupsOf[i], e, minOf, indexLeft == -2)
    local set = withRecs({'HSET', index, 'b:' .. b, e})
    if stampR then
      set[#set + 1], set[#set + 2] = 'r', now
      stampR = false
    end
    redis.call(unpack(trimFlush(cursors, set)))
    if e == 0 and state[i] == false then
      for slot in string.gmatch(above[i], '%d+') do keep[tonumber(slot)] = true end
    end
  elseif ttl > 0 and v > 0 and v - now < ttl then
    local ms = ttl + slack(ttl)
    e = now + ms
    -- GT: never shortens; 0 means the key had no expiry after all (a record from before expiries were kept)
    if redis.call('PEXPIRE', b, ms, 'GT') == 0 and redis.call('PTTL', b) == -1 then e = 0 end
    trimNote(cursors, groupsOf[i], e, minOf, false)
    redis.call(unpack(trimFlush(cursors, {'HSET', index, 'b:' .. b, e})))
  end
  if e == 0 then
    indexForever, forever = true, true
  elseif e then
    indexGrow, grow = math.max(indexGrow, e), math.max(grow, e)
  end
end
if nb > 0 then
  -- a fresh index (or a late write) gets a new, never reused mark, invalidating cached unions
  if late or indexLeft == -2 then
    local set = withRecs({'HSET', index, 'late', redis.call('INCR', seq)})
    if stampR then
      set[#set + 1], set[#set + 2] = 'r', now
      stampR = false
    end
    -- s: this life's rollups hold exactly the sums of their parts (every write since its start
    -- wrote both), until a write restarts an expired key of it (below); a member read may then
    -- answer a partial day or month as its rollup minus the parts outside the range; q: every
    -- hour of this life also went to its quarter-day rollup (a life begun before those has none)
    if indexLeft == -2 then
      set[#set + 1], set[#set + 2] = 's', 1
      set[#set + 1], set[#set + 2] = 'q', 1
    end
    redis.call(unpack(set))
  end
  -- records left (raised by a write whose own clock puts a recorded week in progress: a lagging
  -- clock) ride in the stamp's HSET, or cost one
  if stampR or #recs > 0 then
    local set = withRecs({'HSET', index})
    if stampR then set[#set + 1], set[#set + 2] = 'r', now end
    redis.call(unpack(set))
  end
  if restarted then redis.call('HDEL', index, 's') end
  if indexForever then
    if indexLeft ~= -1 and indexLeft ~= -2 then redis.call('PERSIST', index) end
  elseif indexGrow > 0 then
    if indexLeft == -2 then
      redis.call('PEXPIRE', index, indexGrow - now)
    elseif indexLeft ~= -1 then
      redis.call('PEXPIRE', index, indexGrow - now, 'GT')
    end
  end
end
if forever then
  if not newName then redis.call('ZREM', expiry, name) end
elseif grow > 0 then
  if newName then redis.call('ZADD', expiry, grow, name) else redis.call('ZADD', expiry, 'XX', 'GT', grow, name) end
end
return results
`,
});
