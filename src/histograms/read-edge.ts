import { defineLua } from "../redis/script.ts";

/**
 * The end edge month of a range ending in the past (issue 15), as Lua the read script
 * (read-scripts.ts) calls once its checks are done: its month rollup less the days after the range
 * (`ZUNIONSTORE … WEIGHTS 1 … 1 -1 …`), only when that is provably fewer entries to merge than its
 * days: the rollup's size plus each day after the range at most min(dayMax, that size), against the
 * days' own sizes (`ZCARD`s, O(1), until their sum passes it: at the cap a third of the days).
 * Decided after every check, so a read refuses exactly as its days would. Exact there: the days
 * after the range expire after the days in it (docs/histograms.md, "The end edge of a range ending
 * in the past"). The script drops the buckets left at exactly 0 and counts the edge's sums.
 */
export const readEdgeLua = defineLua(
  "histograms.readEdge",
  ["edgeUnion"],
  `
-- The ZUNIONSTORE of the parts into scratch, and the edge month's yyyymm when it is read as its
-- rollup less the days after the range (nil: its days are read). g: the end edge month's group of
-- days (nil when there is none), with its rollup's size (card) and its days' summed sizes (exact)
-- when the checks asked them; known: days sized by the checks, by index; left: the commands the
-- budget leaves (this spends at most a ZCARD a day of g and one of the rollup).
local function edgeUnion(scratch, parts, g, rollup, outsideKeys, days, dayLabels, known, dayMax, entryCap, left)
  local union = {'ZUNIONSTORE', scratch, #parts}
  local swap, edge = false, nil
  if g and left >= #g.days + 3 then
    local rcard = g.card
    if not rcard then rcard = redis.call('ZCARD', rollup) end
    local most = math.min(dayMax, rcard)
    local cost = rcard + #outsideKeys * most
    if g.exact then
      swap = cost < g.exact
    elseif cost < #g.days * most and #g.days * most > entryCap / 2 then
      -- Only days that may hold over half the entries limit (a union that could take ~25 ms):
      -- smaller ones merge in a few ms, not worth a ZCARD a day. Gives up once the days seen,
      -- extrapolated, would not reach twice the rollup's cost, so each ZCARD it spends saves
      -- about a day's entries at least (a guess that only ever costs the saving: 30 days of 500
      -- buckets, where the rollup saved ~3 ms of union, spent 22 ZCARDs before this rule).
      local inside, seen, rest = 0, 0, #g.days
      -- the days sized already first (the many-parts check above), then the others in order
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
          seen   = seen + 1
          rest   = rest - 1
        end
      end
      swap = inside > cost
    end
    if swap then
      local inside = {}
      for _, d in ipairs(g.days) do inside[days[d]] = true end
      local weights = {'WEIGHTS'}
      for _, p in ipairs(parts) do
        if not inside[p] then
          union[#union + 1]     = p
          weights[#weights + 1] = 1
        end
      end
      union[#union + 1]     = rollup
      weights[#weights + 1] = 1
      for _, key in ipairs(outsideKeys) do
        union[#union + 1]     = key
        weights[#weights + 1] = -1
      end
      union[3] = #weights - 1
      for _, w in ipairs(weights) do union[#union + 1] = w end
      edge = string.sub(dayLabels[g.days[1]], 1, 6)
    end
  end
  if not edge then
    for _, p in ipairs(parts) do union[#union + 1] = p end
  end
  return union, edge
end`,
);
