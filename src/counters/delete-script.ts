import { defineScript } from "../redis/script.ts";
import { deleteRefusals } from "./delete-refusals.ts";
import { DELETE_REMOVALS_LUA } from "./delete-removals.ts";
import { deleteWeeksLua } from "./delete-weeks.ts";
import { deleteZeroLua } from "./delete-zero.ts";
import { fieldsLua } from "./life.ts";

/**
 * Removes `member` from the plain counter (`fromPlain` = 1), or from the `parts` of a period
 * range (calendar.ts `deletePlan`, laid out by delete-layout.ts): its `buckets` first, then
 * its rollups, finest level first, each with its kind (`kinds`: w = wholly in range, p = partly)
 * and the positions in `parts` of the keys directly below it (`firsts`..`lasts`, 0 = none); the
 * coarsest level (the months; a week or month counter's buckets) is `top`..`np`. A key adds what
 * it loses to the rollup directly above it when that one is partial. Removes the member only: no
 * key's expiry changes. A bucket or whole rollup loses the member (ZREM; a week's size record is
 * lowered with it, delete-weeks.ts); a partial rollup loses what its removed parts held (ZINCRBY
 * of minus their scores, read by ZSCORE only where a partial rollup needs them). One that this leaves at 0 keeps the
 * member at 0 while a part outside the range still holds it and drops it when none does (its
 * parts outside: `parts` after the first `planKeys`, named by `outs`, delete-zero.ts); only when
 * that is unknown it drops it and is marked `z:<key>` (its parts may hold it at scores summing to
 * 0), as every such rollup was before. A partial rollup so emptied and dropped from the
 * index (its `z:` mark stays) is made again when its parts lose the member, with their new sum,
 * and listed with the latest expiry they record; a part that loses it under a *whole* rollup so
 * emptied drops the index's `s` (what it loses there sums to 0, but that is not checked). A life
 * without quarter-day rollups (index field `q` absent: it began before they were kept) links its
 * parts by `olderFirsts`..`olderLasts` instead, the plan without quarters (a day's hours), and
 * takes the member from the quarters above the hours that lost it at the end (delete-zero.ts,
 * `oldQuarters`). Returns how many buckets held the member. The removals, once the reads show the
 * delete fits, are the script's second half: delete-removals.ts.
 *
 * **Only the keys that may hold the member are touched** (issue 15). In a life whose rollups are
 * exact (index field `s`: it began with them, and no write restarted an expired key since), a rollup lacking the member means no key under it holds it,
 * unless a member delete dropped it there at exactly 0 (`z:<rollup>`, edges.ts). Every increment
 * goes to a bucket and all its rollups in one script, a delete takes from both, and a rollup never
 * expires before a key it sums, so a rollup that lacks the member and is unmarked has no key below
 * it, at any depth, holding it (a marked one below it was emptied of the member by the delete that
 * took it from the rollup above, which read under it). "Never expires before" holds by the
 * writers' clocks, which may differ by up to a minute: a writer whose clock lags extends a bucket
 * but not the rollup whose recorded expiry looks far enough to it, so a rollup whose recorded
 * expiry (its `b:` field) is within a minute of `now` is read under even when it lacks the member
 * (test/redis/counters-delete.test.ts, "writer clocks apart"). A rollup not listed in this life holds
 * nothing of it. So the keys are read top down, a level at a time (months, then the days of months
 * that hold the member, their quarters, their hours): one HMGET of the level's index fields (with
 * those of the level below when they fit the same HMGET: the months' with all their days') and a
 * ZSCORE per listed rollup. A member absent from 400 days of hours costs the months' ZSCOREs; one
 * held in a few hours of one day, the months, that month's days, that day's quarters and hours.
 * Once the keys reached and every key below the level not yet shown to lack the member cannot
 * pass `maxKeys`, nothing can be refused, and a whole rollup not under a partial one is read by
 * its ZREM. The same guarantee spares EXISTS calls: a rollup of an exact life, listed, unmarked,
 * its expiry not near, holds every member of the keys below it, so one above a key still holding
 * a member is not empty. A life without that guarantee (it began before rollups, or a write
 * restarted an expired key of it) reads every part, as before. The plan is sent as ranges per
 * rollup, not links per key: a 400-day hour range is 11,614 keys, and converting five numbers per
 * key took the script ~15 ms before it did anything.
 *
 * The work is bounded by the keys that may hold the member, not by the range: past `maxKeys` of
 * them (every key of any 60 days of hours) the delete is refused before anything is written
 * (`too_many_keys`). And so is the work of deciding (issue 15): the bound starts at every key of the
 * plan and each rollup read lacking the member takes the keys below it off; the delete may spend
 * `maxReads` commands (its EVALSHA included) before that bound is at most `maxKeys`, and is refused
 * (`not_shown_to_fit`) as soon as the reads left, each taking at most the widest rollup of the
 * level off, cannot bring it there. A plan of at most `maxKeys` keys (any 60 days of hours) starts
 * there and never reads for it; one whose member is in more days under its months than the
 * budget reads may be refused though fewer keys hold it (split it into ranges of 60 days).
 *
 * A script reaches at most `maxWork` keys (MAX_DELETE_SCRIPT_KEYS): one over a range shown to fit
 * `maxKeys` whose member may be in more returns `split` as soon as that is known, before anything
 * is written (the bound first falls to `maxKeys` before any removal, and only falls after), and the
 * caller runs the range as parts of at most `maxWork` keys each. `carried`: what earlier parts of
 * the call removed, added to the result (so an Idempotency-Key's record, kept by the last part,
 * holds the call's total). `partRecords`: with an Idempotency-Key, the records the parts of a
 * range past `maxWork` keys would keep (counters.ts); when one exists (a retry of a call that
 * failed part way) the script answers `split` before its first write, one EXISTS, so the retry
 * replays those parts and the key's record holds the call's total, not the rest's. `counted`: the
 * last part's, records of the call's parts under earlier slices (a retry after a UTC midnight);
 * their counts of this request join `carried` (one MGET).
 */
export const deleteMemberScript = defineScript({
  name: "counters.deleteMember",
  write: true,
  keys: ["plain", "index", "names", "expiry", "seq", "...partRecords", "...counted", "...parts"],
  args: [
    "name",
    "member",
    "fromPlain",
    "planKeys",
    "maxKeys",
    "maxReads",
    "now",
    "maxWork",
    "carried",
    "buckets",
    "top",
    "...kinds",
    "...firsts",
    "...lasts",
    "...olderFirsts",
    "...olderLasts",
    "...outs",
  ],
  refusals: deleteRefusals,
  uses: [fieldsLua, deleteZeroLua, deleteWeeksLua],
  lua: `
-- a keyed call's last part: the records of this request's parts of earlier slices (counters.ts,
-- earlierPartRecords) add what those parts removed to the total it records, one MGET (the key
-- names one request: a caller reusing it for another is the caller's bug, as for any record)
for _, prev in ipairs(#counted > 0 and redis.call('MGET', unpack(counted)) or {}) do
  local n = prev and string.match(prev, '"value":(%d+)$')
  if n then carried = tonumber(carried) + n end
end
local removed = 0
if fromPlain == '1' then removed = redis.call('ZREM', plain, member) end
local indexed = false
if #parts > 0 then
  local np, nb, cap           = tonumber(planKeys), tonumber(buckets), tonumber(maxKeys)
  local work                  = tonumber(maxWork)
  -- the commands the call may spend before it knows the delete fits (the EVALSHA running this
  -- script is the first): a refusal costs at most maxReads, however many keys may hold the member
  local budget, spent         = tonumber(maxReads), 1
  local soon                  = tonumber(now) + 60000
  local listed, zeroed, score = {}, {}, {}
  local owner, taken          = {}, {}
  -- exact[i]: rollup i holds every member any key below it holds (the guarantee pruning reads by)
  local exact, fetched        = {}, {}
  local function kindOf(i) return i <= nb and 'f' or kinds[i - nb] end
  -- the index fields of the keys of list not fetched yet (b:, and z: of rollups; scripts.ts fields),
  -- and of extra, whose values it returns; with them those of the keys directly below them (by
  -- lo, hi; nil: none) when that takes no further HMGET, which the level below then needs none of
  local function lookup(list, lo, hi, extra)
    local keys, names, at = {}, {}, {}
    extra = extra or {}
    for _, f in ipairs(extra) do names[#names + 1] = f end
    local function add(i)
      fetched[i]        = true
      at[#at + 1]       = i
      keys[#keys + 1]   = parts[i]
      if i > nb then names[#names + 1] = 'z:' .. parts[i] end
    end
    for _, i in ipairs(list) do
      if not fetched[i] then add(i) end
    end
    if #keys == 0 and #extra == 0 then return {} end
    spent = spent + math.ceil(#keys / 1000)
    if lo and #keys > 0 then
      local size = 0
      for _, i in ipairs(list) do
        if i > nb and tonumber(lo[i - nb]) > 0 then size = size + tonumber(hi[i - nb]) - tonumber(lo[i - nb]) + 1 end
      end
      -- fields() sends one HMGET per 1000 keys
      if #keys + size <= 1000 * math.ceil(#keys / 1000) then
        for _, i in ipairs(list) do
          if i > nb and tonumber(lo[i - nb]) > 0 then
            for c = tonumber(lo[i - nb]), tonumber(hi[i - nb]) do add(c) end
          end
        end
      end
    end
    local values = fields(index, keys, names)
    local z      = #keys + #extra
    for k, i in ipairs(at) do
      listed[i] = values[k]
      if i > nb then
        z         = z + 1
        zeroed[i] = values[z] and true or false
      end
    end
    return {unpack(values, #keys + 1, #keys + #extra)}
  end
  -- the top level (the months; a week or month counter's buckets) is the same in both plans, and
  -- so are the keys below the months (their days): fetched with them where the plans agree
  local level = {}
  local same  = true
  for i = tonumber(top), np do
    level[#level + 1] = i
    owner[i]          = 0
    if i > nb and (firsts[i - nb] ~= olderFirsts[i - nb] or lasts[i - nb] ~= olderLasts[i - nb]) then same = false end
  end
  local extra     = outsideNames(parts, outs, {'s', 'q'})
  local recAt     = recordNames(parts, nb, np, extra) -- week size records (delete-weeks.ts)
  local head      = same and lookup(level, firsts, lasts, extra) or lookup(level, nil, nil, extra)
  -- s: a restart of an expired key (which drops it) may follow a rollup that expired before its
  -- keys by a lagging writer's clock, and then lack what they hold
  local pruned    = head[1] and true or false
  local lo, hi    = firsts, lasts
  if not head[2] then lo, hi = olderFirsts, olderLasts end
  if not pruned then
    spent = spent + 1
    if redis.call('EXISTS', index) == 0 then return removed + tonumber(carried) end
  end
  -- how many keys of the plan lie below rollup i, at any depth: the keys below consecutive keys
  -- are consecutive, and every rollup the plan reaches has keys below it
  local function under(i)
    local a, b, n = tonumber(lo[i - nb]), tonumber(hi[i - nb]), 0
    while a > 0 do
      n = n + b - a + 1
      if a <= nb then break end
      a, b = tonumber(lo[a - nb]), tonumber(hi[b - nb])
    end
    return n
  end
  local reached = {}
  local count   = #level
  -- a part of this call done before (its record): the parts again, checked once, before a write
  local unchecked = #partRecords > 0
  local function partsDone()
    if not unchecked then return false end
    unchecked = false
    return redis.call('EXISTS', unpack(partRecords)) > 0
  end
  local function notShown(bound)
    return {refused = 'not_shown_to_fit', keys = bound, reads = spent}
  end
  while true do
    -- bound: the keys reached (this level and those below it found so far) and every key below
    -- the level's rollups not yet shown to lack the member, an upper bound of what the delete may
    -- change; a rollup found lacking it lowers it by the keys below it. Once it is at most maxKeys
    -- nothing can be refused: whole rollups are taken while read. free: what the level's rollups
    -- known without a read to hold nothing of it (unlisted, unmarked) will take off it.
    local bound, widest, free = count, 0, 0
    for _, i in ipairs(level) do
      if i > nb then
        local u = under(i)
        bound = bound + u
        if u > widest then widest = u end
        if pruned and not listed[i] and not zeroed[i] then free = free + u end
      end
    end
    local nextLevel = {}
    for _, i in ipairs(level) do
      -- removals start once at most work keys may hold it: nothing is written before (a split's reply)
      local final = bound <= work
      reached[#reached + 1] = i
      if i > nb then
        local s  = nil
        local up = owner[i]
        local u  = under(i)
        if pruned and not listed[i] and not zeroed[i] then free = free - u end
        if pruned and listed[i] then
          if final and kinds[i - nb] == 'w' and not (up > 0 and kindOf(up) == 'p') then
            -- nothing can be refused and no partial rollup needs its score: its ZREM tells
            if partsDone() then return {refused = 'split', keys = bound} end
            s = redis.call('ZREM', parts[i], member) > 0 or nil
            taken[i] = s
          else
            -- a read to lower the bound: refused once the reads left, each lowering it by at most
            -- the widest rollup of this level (those below are narrower), cannot bring it to maxKeys
            local function short(limit) return spent >= budget or (budget - spent) * widest + free < bound - limit end
            if not final and short(work) then
              -- shown to fit maxKeys, not one script: the caller runs the range in parts
              if bound <= cap then return {refused = 'split', keys = bound} end
              if short(cap) then return notShown(bound) end
            end
            spent = spent + 1
            s = redis.call('ZSCORE', parts[i], member)
            if s then score[i] = tonumber(s) end
          end
        end
        local a = tonumber(lo[i - nb])
        -- a rollup whose recorded expiry is within a minute (or past) may be gone while keys below
        -- it, extended by a writer whose clock lags, live on: its absence proves nothing
        local expiring = listed[i] and tonumber(listed[i]) > 0 and tonumber(listed[i]) <= soon
        exact[i] = pruned and listed[i] and not zeroed[i] and not expiring
        if a > 0 and (s or zeroed[i] or expiring or not pruned) then
          for c = a, tonumber(hi[i - nb]) do
            nextLevel[#nextLevel + 1] = c
            owner[c]                  = i
          end
          -- refused as soon as it is known, not after reading the rest of the level
          if count + #nextLevel > cap then return {refused = 'too_many_keys', keys = count + #nextLevel} end
        else
          bound = bound - u
        end
      end
    end
    if #nextLevel == 0 then break end
    count = count + #nextLevel
    -- never after a removal: one is made only once the bound, which count never passes, is within work
    if count > work and bound <= cap then return {refused = 'split', keys = bound} end
    -- the next level's HMGET, when the bound still passes maxKeys, only if the budget has room
    -- for it and a read after it (a life read key by key reads nothing: its count decides)
    if pruned and bound > work then
      local unread = 0
      for _, c in ipairs(nextLevel) do
        if not fetched[c] then unread = unread + 1 end
      end
      if spent + math.ceil(unread / 1000) >= budget then
        if bound <= cap then return {refused = 'split', keys = bound} end
        return notShown(bound)
      end
    end
    lookup(nextLevel, lo, hi)
    level = nextLevel
  end
  -- a life read key by key, or one whose rollups did not show it: nothing written yet
  if count > work or partsDone() then return {refused = 'split', keys = count} end${DELETE_REMOVALS_LUA}`,
});
