/**
 * The start of the range read's body (read-scripts.ts, `readScript`: its `lua` is this text, then
 * the rest, so the script's text is the one it always was). It binds the script's numeric arguments,
 * reads the histogram's settings (refusing `not_found`) and picks the parts the range is read from:
 * the month rollups that stand for their days (`rollups`), the other days still kept, grouped by
 * month (`order`), the edge months that may be read as their rollup (`edgeOf`, read-edge.ts), and
 * the sum of the days read one by one (`sum`). The rest of the body sizes and unions those parts.
 *
 * Not a `defineLua` library: it binds the locals the rest of the body reads, which a function would
 * have to hand back one by one.
 */
export const READ_PARTS_LUA = `
local cap       = tonumber(maxBuckets)
local entryCap  = tonumber(maxEntries)
local nowMs     = tonumber(now)
local dayCap    = tonumber(perDay)
local toPop     = piped == '1'
local settings  = redis.call('HMGET', meta, 'bucketWidth', 'unit', 'retentionDays', 'createdAt', 'rollupsSince', 'boundsSince')
if not settings[1] then return {refused = 'not_found', histogram = name} end
local retention = tonumber(settings[3])
local since     = tonumber(settings[5] or 'inf')
-- from this month a rollup holds every bucket of its days (bounds them), even where it does not
-- stand for them (a longer retention moved 'since'); settings without it: 'since'
local bounds    = tonumber(settings[6] or settings[5] or 'inf')
settings[5], settings[6] = nil, nil
-- parts: the month rollups that stand for their days, then the other kept days (grouped by month)
local skip, parts, extParts, rollups = {}, {}, {}, {}
local coveredDays = 0
for k = 1, #months do
  local monthMs, first, n = tonumber(monthStarts[k]), tonumber(monthFirsts[k]), tonumber(monthLengths[k])
  if monthMs >= since and keptUntil(monthMs, retention) > nowMs then
    for d = first, first + n - 1 do skip[d] = true end
    coveredDays           = coveredDays + n
    parts[#parts + 1]     = months[k]
    rollups[#rollups + 1] = {key = months[k], n = n}
  end
end
local groups, order = {}, {}
for d = 1, #days do
  -- a day past its retention holds nothing (its keys expire with it): not read
  if keptUntil(tonumber(dayStarts[d]), retention) > nowMs then
    -- extremes: two members a day, so every day's set (400 at most) is cheap to union
    extParts[#extParts + 1] = exts[d]
    if not skip[d] then
      parts[#parts + 1] = days[d]
      local k = tonumber(dayMonths[d])
      if not groups[k] then
        groups[k] = {month = k, days = {}}
        order[#order + 1] = groups[k]
      end
      groups[k].days[#groups[k].days + 1] = d
    end
  end
end
if #parts == 0 then return {settings = settings, merged = ''} end
-- Sums: a day's is the member 's:<yyyymmdd>' of its month rollup (a day stored before that change
-- has a member 'sum' in its own key and in its month's). A rollup in the union brings its days'
-- sums; the days read one by one are asked in their months, one ZMSCORE per month.
-- The edge months (edgeMonths: their index in sumMonths; edgeOutside: how many of \`outside\`, in
-- order, are each one's days outside the range; read builds them) may be read as their rollup (less
-- those days) if it stands for its days (kept from its first day, rollups since) and holds no old
-- 'sum' (which a subtraction would round): their ZMSCORE also asks those, and the days outside's
-- sums, whose non-zero ones are counted (the union's members that are not buckets).
local edgeOf, at = {}, 0
for k = 1, #edgeMonths do
  local month, n = tonumber(edgeMonths[k]), tonumber(edgeOutside[k])
  local monthMs  = tonumber(sumMonthStarts[month])
  local e        = {keys = {}, labels = {}, subtract = edgeSubtract[k] == '1'}
  for j = at + 1, at + n do
    e.keys[#e.keys + 1]     = outside[j]
    e.labels[#e.labels + 1] = outsideLabels[j]
  end
  at = at + n
  if monthMs >= since and keptUntil(monthMs, retention) > nowMs then edgeOf[month] = e end
end
local sum = 0
for _, g in ipairs(order) do
  local call = {'ZMSCORE', sumMonths[g.month]}
  for _, d in ipairs(g.days) do call[#call + 1] = 's:' .. dayLabels[d] end
  local e = edgeOf[g.month]
  if e then
    for _, label in ipairs(e.labels) do call[#call + 1] = 's:' .. label end
    call[#call + 1] = 'sum'
  end
  local scores = redis.call(unpack(call))
  for j = 1, #g.days do
    if scores[j] then sum = sum + tonumber(scores[j]) end
  end
  if e and not scores[#call - 2] then
    -- its sums in a union: non-zero ones (a subtraction may leave the others at 0, dropped with
    -- the buckets at 0), and all of them (its rollup alone)
    e.sums, e.present, e.live = 0, 0, 0
    for j = 1, #call - 3 do
      if scores[j] and tonumber(scores[j]) ~= 0 then e.sums = e.sums + 1 end
      if scores[j] then e.present = e.present + 1 end
      if scores[j] and j > #g.days then e.live = e.live + 1 end
    end
    g.edge = e
  end
end`;
