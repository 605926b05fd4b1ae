/**
 * The member delete's second half (delete-script.ts splices it in at the end of its `lua`): once
 * the reads have shown the delete fits, the removals, bottom up in the plan's order. Buckets and
 * whole rollups lose the member by ZREM, partial rollups what their parts lost by ZINCRBY (kept at
 * 0 while a part outside still holds it, delete-zero.ts), emptied keys leave the index, a rollup
 * made again by them is listed, and the index gets its marks (`z:`, `late`) in one HSET; then the
 * registry entry of a counter left with no key. A Lua text, not a `defineLua` library: it reads
 * and writes the first half's locals (parts, listed, zeroed, score, owner, taken, exact, head ...),
 * so it is only ever the rest of that one script, kept apart so that neither module passes ~400
 * lines. The script's text (and so its SHA-1) is the same as when it was one template.
 */
export const DELETE_REMOVALS_LUA = `
  -- children before the partial rollups they add to: the plan's order
  table.sort(reached)
  local fromBuckets, changed = 0, 0
  local acc, found, marks    = {}, {}, {}
  local relisted             = {}
  local inexact              = false
  -- alive[i]: key i still holds a member after this delete's removals. Then so does every exact
  -- rollup above it (exact[]: that member, untouched by this delete, is there too), which needs
  -- no EXISTS to know it is not empty.
  local alive                = {}
  -- A bucket or rollup this delete emptied is gone from Redis: its index entry (and the expiry it
  -- records) must go too, or the next write would trust that expiry and leave the new key without one.
  local function forgetIfEmpty(i)
    if alive[i] then return end
    if redis.call('EXISTS', parts[i]) == 0 then
      -- with a week's size record (scripts.ts), which a bucket made again must not inherit
      redis.call('HDEL', index, 'b:' .. parts[i], 'n:' .. parts[i])
    else
      alive[i] = true
    end
  end
  -- The keys whose ZREM may have emptied them are checked together, not one EXISTS each: a
  -- removal rarely empties a key (the other members stay), and what needs to know (a rollup above
  -- them, the week records, the end) comes after a level's keys. One EXISTS for all of them when
  -- it counts all or none, halves when it counts some; emptied ones leave the index in one HDEL.
  -- A dense delete (a member in every hour) paid an EXISTS per bucket, about half its commands.
  local pending, waiting = {}, {}
  local function exists(list)
    local keys = {}
    for k, i in ipairs(list) do keys[k] = parts[i] end
    return redis.call('EXISTS', unpack(keys))
  end
  local function forgetLater(i)
    if alive[i] then return end
    pending[#pending + 1] = i
    if owner[i] > 0 then waiting[owner[i]] = true end
  end
  -- n: how many of list exist, known from the EXISTS of a list it is half of (a half's count
  -- gives the other's), so a pair with one emptied costs the 2 EXISTS it did one key at a time
  local function settle(list, n, gone)
    if n == #list then
      for _, i in ipairs(list) do alive[i] = true end
    elseif n == 0 then
      for _, i in ipairs(list) do
        gone[#gone + 1] = 'b:' .. parts[i]
        gone[#gone + 1] = 'n:' .. parts[i]
      end
    else
      local half        = math.floor(#list / 2)
      local first, rest = {unpack(list, 1, half)}, {unpack(list, half + 1)}
      local c           = exists(first)
      settle(first, c, gone)
      settle(rest, n - c, gone)
    end
  end
  local function flush()
    if #pending == 0 then return end
    local gone = {}
    settle(pending, exists(pending), gone)
    -- with a week's size record (scripts.ts), which a bucket made again must not inherit
    if #gone > 0 then redis.call('HDEL', index, unpack(gone)) end
    for _, i in ipairs(pending) do
      local up = owner[i]
      if alive[i] and up > 0 and exact[up] then alive[up] = true end
    end
    pending, waiting = {}, {}
  end
  -- a partial rollup an earlier delete emptied (at 0: marked, no longer listed) whose parts lose
  -- the member now: its sum is no longer 0, so it is made again with it, listed with the latest
  -- expiry its listed parts record (0 when one has none), and the parts' scores reach it
  local function emptied(i) return i > nb and not listed[i] and zeroed[i] and kindOf(i) == 'p' end
  -- what a partial rollup at 0 still holds (delete-zero.ts); lostScore: what each bucket lost
  local d = {parts = parts, index = index, member = member, nb = nb, kinds = kinds, kindOf = kindOf,
    lo = lo, hi = hi, firsts = firsts, lasts = lasts, olderFirsts = olderFirsts, listed = listed,
    zeroed = zeroed, score = score, after = {}, soon = soon, outs = outs, pruned = pruned,
    lostScore = {}}
  outsideValues(d, head, 3)
  for _, i in ipairs(reached) do
    -- a key the loop below may EXISTS next holds no member its parts still do until they are settled
    if waiting[i] then flush() end
    local up = owner[i]
    if listed[i] or (emptied(i) and found[i]) then
      local key, kind = parts[i], kindOf(i)
      local parent    = (up > 0 and kindOf(up) == 'p') and up or 0
      local gone, held = 0, false
      local lost      = false
      if kind == 'p' then
        lost = found[i] == true
        if found[i] and pruned and score[i] == nil and not zeroed[i] then
          -- read under only for its recorded expiry: it is gone (a rollup of this life lacks the
          -- member only then), and a ZINCRBY would make it again, negative and without expiry
          gone, held = acc[i], true
          d.after[i] = 'u'
        elseif found[i] then
          gone, held = acc[i], true
          local left = 0
          -- the score it was read at less what its parts lost (the arithmetic ZINCRBY would do):
          -- at 0 the member goes without the ZINCRBY
          if not (score[i] and score[i] - gone == 0) then
            left = tonumber(redis.call('ZINCRBY', key, -gone, member))
          end
          if not listed[i] and left ~= 0 then remade(d, i, relisted, tonumber(now)) end
          -- at 0 it keeps the member while a part still holds it (at scores summing to 0) and
          -- drops it when none does; when that is unknown it drops it and is marked (z:<key>):
          -- it may no longer list every member of its parts
          local below = 'u'
          if left == 0 and listed[i] then below = heldBelow(d, i) end
          if left ~= 0 then
            d.after[i] = true
          elseif below == true then
            if score[i] and score[i] - gone == 0 then redis.call('ZINCRBY', key, -gone, member) end
            d.after[i] = true
          else
            redis.call('ZREM', key, member)
            forgetIfEmpty(i)
            d.after[i] = below
            if below == 'u' then
              marks[#marks + 1] = 'z:' .. key
              marks[#marks + 1] = 1
            end
          end
          changed = changed + 1
        end
      else
        local n = 0
        if kind == 'w' and pruned then
          -- read top down already: an absent member needs no ZREM
          if taken[i] then
            n = 1
          elseif score[i] then
            gone, held, n = score[i], true, redis.call('ZREM', key, member)
          end
        elseif parent > 0 then
          -- a partial rollup above needs the score; an absent member needs no ZREM
          local s = redis.call('ZSCORE', key, member)
          if s then gone, held, n = tonumber(s), true, redis.call('ZREM', key, member) end
        else
          n = redis.call('ZREM', key, member)
        end
        lost = n > 0
        if kind == 'f' then
          fromBuckets = fromBuckets + n
          if lost then d.lostScore[i] = held and gone or true end
        end
        if n > 0 then forgetLater(i) end
        changed = changed + n
      end
      if held and parent > 0 then
        acc[parent]   = (acc[parent] or 0) + gone
        found[parent] = true
      end
      -- a key that lost the member under a rollup no longer listed (emptied by an earlier delete
      -- while its parts held members at scores summing to 0): the removed score reaches neither
      -- that rollup nor the one above it, so rollups no longer equal the sums of their parts
      if lost and up > 0 and not listed[up] and not emptied(up) then inexact = true end
    end
    if alive[i] and up > 0 and exact[up] then alive[up] = true end
  end
  flush()
  if inexact then redis.call('HDEL', index, 's') end
  if not head[2] then changed = changed + oldQuarters(d, forgetIfEmpty) end
  -- past unions may have included the member: a new mark invalidates them
  if changed > 0 then
    for _, v in ipairs(relisted) do marks[#marks + 1] = v end
    lowerRecords(parts, nb, head, recAt, d.lostScore, alive, marks)
    redis.call('HSET', index, 'late', redis.call('INCR', seq), unpack(marks))
    indexed = true
  end
  removed = removed + fromBuckets
end
-- a counter left with no key at all leaves the registry (one whose index was just written has one)
if removed > 0 and not indexed and redis.call('EXISTS', plain, index) == 0 then
  redis.call('ZREM', names, name)
  redis.call('ZREM', expiry, name)
end
return removed + tonumber(carried)
`;
