import { defineLua } from "../redis/script.ts";

/**
 * The edge months of a range (issue 15): its first month when it starts after the 1st and its last
 * when it ends before the month's last day, read day by day, as Lua the read script (read-scripts.ts)
 * calls. `rollEdges`, before the checks: an edge month none of whose days outside the range holds
 * anything is read as its rollup, which is exactly its days in the range (and refused at once when
 * that alone passes the cap). `edgeUnion`, once the checks are done: the end month of a range from
 * its 1st that covers more of its days than it leaves out may be read as its rollup less the days
 * after the range (`ZUNIONSTORE … WEIGHTS 1 … 1 -1 …`), only when that is provably fewer entries to
 * merge than its days: the rollup's size plus each day after the range that holds anything at most
 * min(dayMax, that size), against the days' own sizes (`ZCARD`s, O(1), until their sum passes it: at
 * the cap a third of the days); decided after every check, so a read refuses as its days would.
 * Exact: the script takes an edge only while its month's first day is kept, so every day of it is
 * (retention counts from each day's end) and every day the rollup summed is live
 * (docs/histograms.md, "The edge months of a range"). The script drops the buckets left at exactly 0
 * and counts the edges' sums.
 */
export const readEdgeLua = defineLua(
  "histograms.readEdge",
  ["rollEdges", "edgeUnion"],
  `
-- The edge groups of days (g.edge: the keys of their days outside the range, \`live\`: how many of
-- those hold something, told by their sums in the rollup, which observe writes with the buckets).
-- When none does, the rollup is exactly its days in the range (and their sums): it stands for them
-- in every check and in the union, as a whole month does (22 days of 5,000 drawn from 20,000 are
-- ~20,000 entries in their rollup, 110,000 in the days), at no command; and where the range's values
-- span more buckets than the cap (spanNow: its extremes, asked before the union instead of after
-- it), its ZCARD sizes it: its buckets, less its sums (one a day of the month), past the cap are
-- refused at once. Where days outside hold something, it is not sized here: less up to min(dayMax,
-- its size) a live day, it would rarely prove anything. Returns a refusal (or nil), the edge
-- groups, and the parts, sized parts, entries bound and budget, updated.
local function rollEdges(order, parts, sized, upper, budget, days, sumMonths, cap, dayMax, spanNow)
  local edges = {}
  for _, g in ipairs(order) do
    local e = g.edge
    if e and #g.days > 1 then
      local rollup = sumMonths[g.month]
      local n      = #g.days + #e.keys
      if e.live == 0 and not g.card and budget >= 1 then
        local span = spanNow()
        if span == 0 or span > cap then
          g.card = redis.call('ZCARD', rollup)
          budget = budget - 1
        end
      end
      e.card = g.card
      if e.card then
        local least = e.card - n - e.live * math.min(dayMax, e.card)
        if least > cap then return {refused = 'too_many_buckets', buckets = least, part = true} end
      end
      edges[#edges + 1] = g
      if e.live == 0 then
        e.rolled = true
        local inside = {}
        for _, d in ipairs(g.days) do inside[days[d]] = true end
        local kept = {}
        for _, p in ipairs(parts) do
          if not inside[p] then kept[#kept + 1] = p end
        end
        kept[#kept + 1] = rollup
        parts = kept
        kept  = {}
        for _, p in ipairs(sized) do
          if not inside[p.key] then kept[#kept + 1] = p end
        end
        if e.card then
          kept[#kept + 1] = {key = rollup, least = e.card - n, card = e.card, n = n, at = 0}
          upper   = upper - g.bound + e.card
          g.bound = e.card
        end
        sized   = kept
        -- no day of it is sized one by one after this
        g.exact = g.bound
      end
    end
  end
  return nil, edges, parts, sized, upper, budget
end
-- The ZUNIONSTORE of the parts into scratch, the edge months read as their rollup ('yyyymm,…', nil
-- when none), their sums in the union (less the zeros a subtraction may leave), and whether one was
-- read less its days outside (the buckets left at 0 are then dropped when they count). edges: the edge groups of days the script
-- sized (g.edge: its rollup's size card, live days outside, their keys, rolled when the rollup is
-- already a part); known: days sized by the checks, by index; left: the commands the
-- budget leaves (this spends at most a ZCARD a day of an edge).
local function edgeUnion(scratch, parts, edges, sumMonths, days, dayLabels, known, dayMax, entryCap, left)
  local union = {'ZUNIONSTORE', scratch, #parts}
  local swapped, labels, sums = {}, {}, 0
  for _, g in ipairs(edges) do
    local e    = g.edge
    local swap = e.rolled
    if not e.rolled and e.subtract and left >= #g.days + 3 then
      local rcard = e.card
      if not rcard then
        rcard = redis.call('ZCARD', sumMonths[g.month])
        left  = left - 1
      end
      local most  = math.min(dayMax, rcard)
      local cost  = rcard + e.live * most
      if g.exact then
        swap = cost < g.exact
      elseif cost < #g.days * most and #g.days * most > entryCap / 2 then
        -- Only days that may hold over half the entries limit (a union that could take ~25 ms):
        -- smaller ones merge in a few ms, not worth a ZCARD a day. Gives up once the days seen,
        -- extrapolated, would not reach twice the rollup's cost, so each ZCARD it spends saves
        -- about a day's entries at least (a guess that only ever costs the saving: 30 days of 500
        -- buckets, where the rollup saved ~3 ms of union, spent 22 ZCARDs before this rule).
        local inside, seen, rest = 0, 0, #g.days
        -- the days sized already first (the many-parts check), then the others in order
        for _, d in ipairs(g.days) do
          if known[d] then
            inside = inside + known[d]
            seen   = seen + 1
            rest   = rest - 1
          end
        end
        for _, d in ipairs(g.days) do
          if inside > cost or inside + rest * most <= cost then break end
          if seen > 0 and inside + rest * inside / seen < 2 * cost then break end
          if not known[d] then
            inside = inside + redis.call('ZCARD', days[d])
            left   = left - 1
            seen   = seen + 1
            rest   = rest - 1
          end
        end
        swap = inside > cost
      end
      if swap then swapped[#swapped + 1] = g end
    end
    if swap then
      -- a rollup alone brings all its sums; less days outside, the non-zero ones and the zeros dropped
      sums = sums + (e.rolled and e.present or e.sums)
      labels[#labels + 1] = string.sub(dayLabels[g.days[1]], 1, 6)
    end
  end
  if #swapped == 0 then
    for _, p in ipairs(parts) do union[#union + 1] = p end
  else
    local inside = {}
    for _, g in ipairs(swapped) do
      for _, d in ipairs(g.days) do inside[days[d]] = true end
    end
    local weights = {'WEIGHTS'}
    for _, p in ipairs(parts) do
      if not inside[p] then
        union[#union + 1]     = p
        weights[#weights + 1] = 1
      end
    end
    for _, g in ipairs(swapped) do
      union[#union + 1]     = sumMonths[g.month]
      weights[#weights + 1] = 1
      for _, key in ipairs(g.edge.keys) do
        union[#union + 1]     = key
        weights[#weights + 1] = -1
      end
    end
    union[3] = #weights - 1
    for _, w in ipairs(weights) do union[#union + 1] = w end
  end
  if #labels == 0 then return union, nil, 0, false end
  return union, table.concat(labels, ','), sums, #swapped > 0
end`,
);
