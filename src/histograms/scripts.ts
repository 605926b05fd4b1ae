import { ConflictError, NotFoundError, ValidationError } from "../errors.ts";
import { defineLua, defineScript } from "../redis/script.ts";
import { MAX_BUCKET_INDEX } from "./buckets.ts";
import { isoDay } from "./keys.ts";
import { listingLua } from "./listing.ts";
import { MAX_BUCKETS_PER_DAY } from "./validate.ts";

/**
 * Lua of the histogram API: one script per call (the range read is in
 * read-scripts.ts). A script refuses a request by
 * returning `{refused = '<code>', ...}` before its first write (observe's bucket
 * cap takes its increments back exactly first); the prelude keeps no
 * idempotency record of a refusal, so a retry after fixing the cause is judged
 * afresh, and each script's `refusals` names the error the caller gets.
 */

/**
 * The bucket rule of `buckets.ts` in Lua. '%.15g' (C's printf) rounds a tie to the even digit, which
 * `bucketBound` there does too (`toPrecision(15)` alone rounds it away from zero: review 16).
 */
export const bucketsLua = defineLua(
  "histograms.buckets",
  ["bucketBound", "bucketOf"],
  `
local function bucketBound(i, width)
  return tonumber(string.format('%.15g', i * width))
end
local function bucketOf(v, width)
  local i = math.floor(v / width)
  while bucketBound(i, width) > v do i = i - 1 end
  while bucketBound(i + 1, width) <= v do i = i + 1 end
  return i
end`,
);

/** The retention rule of `keys.ts` (`dayUntil`): a day's keys live `retention` days after it ends. */
export const retentionLua = defineLua(
  "histograms.retention",
  ["keptUntil", "ttlUntil"],
  `
local function keptUntil(dayMs, retention)
  return dayMs + (retention + 1) * 86400000
end
-- seconds from nowMs to untilMs, rounded up (0 or less: already gone)
local function ttlUntil(untilMs, nowMs)
  return math.ceil((untilMs - nowMs) / 1000)
end`,
);

/**
 * What a write or read of a histogram that was never PUT is told: the call that creates it in both
 * forms, as the service and the library share this message (until review 22 it named the route
 * only, which a library caller has no way to send).
 */
export function notFound(name: string | number): NotFoundError {
  return new NotFoundError(
    `Histogram '${name}' does not exist; create it first with PUT /v1/histograms/${name} {"bucketWidth": ...} (in the library: histogram("${name}").configure({ bucketWidth })).`,
  );
}

/**
 * PUT settings. `rollupsSince` (the first month whose rollup holds all its
 * days) is 0 for a new histogram, `nextMonth` for one created before rollups
 * existed. A new width with data on record is a conflict: the stored bucket
 * indexes would silently change meaning. A new retention re-times every live
 * day (`days`/`exts`, starting at `dayStarts`) and month rollup (`months`,
 * starting at `monthStarts`, whose last days start at `monthLastDays`) that exists.
 * A new width drops the month rollups (no day holds data then); a longer retention moves
 * `rollupsSince` past the months whose rollups may hold what their days no longer do, and takes
 * those days' sums out of them. `boundsSince` (the first month whose rollup holds every bucket of
 * its days, so its size bounds theirs) does not move with the retention: those rollups hold more
 * than their days, never less. A new width restarts it at 0 (no day holds data).
 */
export const putScript = defineScript({
  name: "histograms.put",
  write: true,
  keys: ["meta", "registry", "deadlines", "...days", "...exts", "...months"],
  args: [
    "name",
    "width",
    "unit",
    "retentionDays",
    "now",
    "listedUntil",
    "nextMonth",
    "...dayStarts",
    "...dayLabels",
    "...monthStarts",
    "...monthLastDays",
  ],
  uses: [retentionLua, listingLua],
  refusals: {
    width_conflict: (r, call) =>
      new ConflictError(
        "bucket_width_conflict",
        `Histogram '${call.args.name}' already holds data with bucketWidth ${String(r.width)}; keep that width, or DELETE the histogram first.`,
      ),
  },
  lua: `
local retention = tonumber(retentionDays)
local nowMs     = tonumber(now)
local listed    = tonumber(listedUntil)
local current   = redis.call('HMGET', meta, 'bucketWidth', 'retentionDays', 'createdAt', 'unit', 'rollupsSince', 'boundsSince')
local created   = not current[1]
-- a new histogram has rollups for every month it will hold; one from before rollups from next month on
local since     = current[5] or (created and '0' or nextMonth)
-- the first month whose rollup holds every bucket of its days: as 'since', but a longer retention
-- does not move it (settings from before this field: their 'since', later than needed, never earlier)
local bounds    = current[6] or since
if current[1] and tonumber(current[1]) ~= tonumber(width) then
  for g = 1, #days do
    if redis.call('EXISTS', days[g]) == 1 then return {refused = 'width_conflict', width = current[1]} end
  end
  -- No day holds data, but a month rollup may still hold buckets of the old width and the sums of
  -- days cut or expired: they go, and the rollups start again with the new width's days.
  for k = 1, #months do redis.call('UNLINK', months[k]) end
  -- no day holds data, so every rollup from now on holds all of its days' buckets
  bounds = '0'
elseif not created and tonumber(current[2]) < retention then
  -- A rollup stands for its days only while all of them are there. Under the old retention the
  -- days before its horizon expired or were cut, while their months' rollups (kept as long as their
  -- last day) still hold them: a longer retention must not make those months read as rollups again.
  -- From the first month whose first day the old retention keeps, they do (months ascend).
  local old   = tonumber(current[2])
  local whole = tonumber(nextMonth)
  for k = 1, #monthStarts do
    if keptUntil(tonumber(monthStarts[k]), old) > nowMs then
      whole = tonumber(monthStarts[k])
      break
    end
  end
  if whole > tonumber(since) then since = string.format('%.0f', whole) end
  -- Those days' sums (members s:<yyyymmdd> of their month's rollup, which a read of days one by one
  -- asks) go too: one ZREM a month (days and months ascend).
  local gone, k = {}, 1
  for g = 1, #dayStarts do
    local d = tonumber(dayStarts[g])
    if keptUntil(d, old) > nowMs then break end
    while k < #monthStarts and tonumber(monthStarts[k + 1]) <= d do k = k + 1 end
    gone[k] = gone[k] or {}
    gone[k][#gone[k] + 1] = 's:' .. dayLabels[g]
  end
  for m, members in pairs(gone) do redis.call('ZREM', months[m], unpack(members)) end
end
local createdAt = current[3] or now
-- extDay '' clears observe's mirror of the newest day's extremes (a new retention may have cut or
-- re-timed that day's keys): the next write of a day sets it again, at no command here.
if unit ~= '' then
  redis.call('HSET', meta, 'bucketWidth', width, 'retentionDays', retentionDays, 'createdAt', createdAt, 'rollupsSince', since, 'boundsSince', bounds, 'extDay', '', 'unit', unit)
else
  redis.call('HSET', meta, 'bucketWidth', width, 'retentionDays', retentionDays, 'createdAt', createdAt, 'rollupsSince', since, 'boundsSince', bounds, 'extDay', '')
  if current[4] then redis.call('HDEL', meta, 'unit') end
end
if not created and tonumber(current[2]) ~= retention then
  -- A new retention applies to the days already stored, not only to later
  -- writes, and the listing deadline follows the newest day that stays.
  for g = 1, #days do
    if redis.call('EXISTS', days[g]) == 1 then
      local untilMs = keptUntil(tonumber(dayStarts[g]), retention)
      local ttl     = ttlUntil(untilMs, nowMs)
      if ttl <= 0 then
        redis.call('UNLINK', days[g], exts[g])
      else
        redis.call('EXPIRE', days[g], ttl)
        redis.call('EXPIRE', exts[g], ttl)
        if untilMs > listed then listed = untilMs end
      end
    end
  end
  -- month rollups live as long as their last day: the same rule
  for k = 1, #months do
    if redis.call('EXISTS', months[k]) == 1 then
      local ttl = ttlUntil(keptUntil(tonumber(monthLastDays[k]), retention), nowMs)
      if ttl <= 0 then redis.call('UNLINK', months[k]) else redis.call('EXPIRE', months[k], ttl) end
    end
  end
  relist(deadlines, registry, name, listed, now, true)
else
  -- Listed at least as long as data written today would be kept.
  relist(deadlines, registry, name, listed, now, false)
end
return {created = created, createdAt = createdAt}
`,
});

/**
 * POST observations. Per UTC day g the batch touches: `days[g]`, `exts[g]`,
 * `months[g]` (its month rollup), its start `dayStarts[g]`, the start of its
 * month's last day `monthLastDays[g]`, its number of values `counts[g]`, their
 * `sums[g]`, `negMins[g]` (−min) and `maxes[g]`; `values` holds every day's
 * values in that order.
 *
 * The month rollup gets the same increments as the day (issue 15), after every
 * check has passed, so a refusal never has to take them back; its expiry
 * (as long as its last day's) is set with the day's, on the day's first touch.
 *
 * Steady state costs HMGET + one ZINCRBY per distinct bucket on the day and one on
 * its month rollup + ZINCRBY of the sum. The `ZADD GT` of the extremes runs only when the settings' mirror of the
 * newest day's extremes (read by the same HMGET) does not already hold the
 * batch's: a value that extends them (about 2·ln n times in n random values),
 * another day, or a day near its deadline; extending the newest day's also
 * `HSET`s the mirror, last. Bookkeeping runs only on first touch: a
 * ZINCRBY that answers exactly the count it added created its bucket, and only
 * then does ZCARD check the bucket cap and tell whether the day itself is new
 * (no other bucket and no sum yet); a new day gets its EXPIREs (its deadline
 * is fixed by its date and the retention, so later writes never move it) and
 * extends the name's listing deadline, stamping it in the registry only when that moved it
 * (listingLua: a ZREVRANGE and a ZADD more on a day later than any it holds). Validation of dates and values
 * happens before any write; the one check that needs the writes (the cap) is
 * undone exactly (integer counts) before refusing, so a refusal leaves nothing.
 *
 * All or nothing, so its result is known before it runs: every value is accepted
 * unless the call is refused. `resultUpFront` lets the idempotency prelude record
 * it in the same command that looks for an earlier record (6 commands with a key
 * instead of 7).
 */
export const observeScript = defineScript({
  name: "histograms.observe",
  write: true,
  keys: ["meta", "registry", "deadlines", "...days", "...exts", "...months"],
  args: [
    "name",
    "now",
    "maxPerDay",
    "maxIndex",
    "nextMonth",
    "...dayStarts",
    "...dayLabels",
    "...monthLastDays",
    "...counts",
    "...sums",
    "...negMins",
    "...maxes",
    "...values",
  ],
  uses: [bucketsLua, retentionLua, listingLua],
  resultUpFront: "{accepted = #values}",
  refusals: {
    not_found: (_r, call) => notFound(call.args.name),
    expired: (r, call) =>
      new ValidationError(
        `Observations dated ${isoDay(Number(r.day))} are older than the ${String(r.retention)}-day retention of histogram '${call.args.name}'.`,
        [{ path: "at", message: `older than the ${String(r.retention)}-day retention` }],
      ),
    out_of_range: (r) =>
      new ValidationError(
        `Value ${String(r.value)} is more than ${MAX_BUCKET_INDEX} buckets (of width ${String(r.width)}) from zero; use a wider bucketWidth.`,
        [{ path: "value", message: "too many buckets from zero for this bucketWidth" }],
      ),
    too_many_buckets: (r, call) =>
      new ValidationError(
        `Histogram '${call.args.name}' would hold more than ${MAX_BUCKETS_PER_DAY} distinct buckets on ${isoDay(Number(r.day))}; its bucketWidth ${String(r.width)} is too narrow for these values.`,
        [{ path: "value", message: `more than ${MAX_BUCKETS_PER_DAY} distinct buckets in one day` }],
      ),
  },
  lua: `
local nowMs     = tonumber(now)
local perDayCap = tonumber(maxPerDay)
local indexCap  = tonumber(maxIndex)
local settings  = redis.call('HMGET', meta, 'bucketWidth', 'retentionDays', 'rollupsSince', 'extDay', 'extMax', 'extNegMin')
if not settings[1] then return {refused = 'not_found', histogram = name} end
local width     = tonumber(settings[1])
local retention = tonumber(settings[2])
local plans, at, accepted = {}, 0, 0
for g = 1, #days do
  local n        = tonumber(counts[g])
  local untilMs  = keptUntil(tonumber(dayStarts[g]), retention)
  local monthTtl = ttlUntil(keptUntil(tonumber(monthLastDays[g]), retention), nowMs)
  -- The day key expires retention days after its day ends, measured from now.
  local ttl      = ttlUntil(untilMs, nowMs)
  if ttl <= 0 then return {refused = 'expired', day = dayStarts[g], retention = settings[2]} end
  local tally, members = {}, {}
  for k = at + 1, at + n do
    local v = tonumber(values[k])
    if math.abs(v / width) > indexCap then return {refused = 'out_of_range', value = values[k], width = settings[1]} end
    local m = string.format('%d', bucketOf(v, width))
    if not tally[m] then
      tally[m] = 0
      members[#members + 1] = m
    end
    tally[m] = tally[m] + 1
  end
  plans[g] = {dayKey = days[g], extKey = exts[g], monthKey = months[g], sumMember = 's:' .. dayLabels[g],
              dayMs = dayStarts[g], ttl = ttl, monthTtl = monthTtl, untilMs = untilMs,
              counts = tally, members = members, fresh = {}, sum = sums[g], negMin = negMins[g], max = maxes[g]}
  accepted = accepted + n
  at = at + n
end
-- Takes back the bucket increments of plans 1..last exactly (counts are integers).
local function undo(last)
  for g = 1, last do
    local p = plans[g]
    for _, m in ipairs(p.members) do
      if p.fresh[m] then redis.call('ZREM', p.dayKey, m) else redis.call('ZINCRBY', p.dayKey, -p.counts[m], m) end
    end
  end
end
for g, p in ipairs(plans) do
  local fresh = 0
  for _, m in ipairs(p.members) do
    if tonumber(redis.call('ZINCRBY', p.dayKey, p.counts[m], m)) == p.counts[m] then
      p.fresh[m] = true
      fresh = fresh + 1
    end
  end
  if fresh > 0 then
    local card = redis.call('ZCARD', p.dayKey)
    p.new = card == fresh
    -- a day written before sums moved to the month rollup also holds its member 'sum' (asked only near the cap)
    if card > perDayCap and not p.new and redis.call('ZSCORE', p.dayKey, 'sum') then card = card - 1 end
    if card > perDayCap then
      undo(g)
      return {refused = 'too_many_buckets', day = p.dayMs, width = settings[1]}
    end
  end
end
-- The newest day's extremes as last written, mirrored in the settings (extDay, extMax, extNegMin):
-- a lower bound of what that day's extremes key holds (every write to it raises both together,
-- PUT clears the mirror, DELETE removes it). Trusted only a day or more before the key's deadline,
-- so clocks a little apart cannot make it describe a key that has just expired.
local MIRROR_MARGIN = 86400
local mirror = {day = tonumber(settings[4] or ''), max = settings[5], negMin = settings[6]}
-- a histogram from before month rollups: its rollups are whole from next month on (once)
if not settings[3] then redis.call('HSET', meta, 'rollupsSince', nextMonth) end
local listed = nil
for _, p in ipairs(plans) do
  -- the month rollup: the same counts (extremes are read from the days' tiny sets)
  for _, m in ipairs(p.members) do redis.call('ZINCRBY', p.monthKey, p.counts[m], m) end
  -- The day's sum is a member of its month rollup, 's:<yyyymmdd>': one ZINCRBY is both the day's
  -- sum and (summed over the month's members) the month's, where a member 'sum' of the day key
  -- and another of the month took two. Days stored before keep their 'sum' members; reads add both.
  redis.call('ZINCRBY', p.monthKey, p.sum, p.sumMember)
  -- ZADD answers how many members it added: 2 when the extremes key is new, which a
  -- day stored before it existed can be even though the day is not. Skipped (added = 0) only
  -- when the mirror shows it would change nothing: then the key exists and was timed.
  local added = 0
  local day   = tonumber(p.dayMs)
  local held  = mirror.day == day and not p.new and p.ttl > MIRROR_MARGIN
  if not (held and tonumber(p.max) <= tonumber(mirror.max) and tonumber(p.negMin) <= tonumber(mirror.negMin)) then
    added = redis.call('ZADD', p.extKey, 'GT', p.max, 'max', p.negMin, 'min')
    if held then
      -- the mirror stays a lower bound of what the key holds: the greater texts (exact numbers)
      if tonumber(p.max) > tonumber(mirror.max) then mirror.max = p.max end
      if tonumber(p.negMin) > tonumber(mirror.negMin) then mirror.negMin = p.negMin end
      mirror.changed = true
    elseif p.ttl > MIRROR_MARGIN and (not mirror.day or day >= mirror.day) then
      -- a newer day (or one whose key may be new): what the key holds now is at least the batch's
      mirror.day, mirror.max, mirror.negMin, mirror.changed = day, p.max, p.negMin, true
    end
  end
  if p.new or added > 0 then
    redis.call('EXPIRE', p.dayKey, p.ttl)
    redis.call('EXPIRE', p.extKey, p.ttl)
    -- the month's deadline is fixed by its last day and the retention: setting it again changes nothing
    redis.call('EXPIRE', p.monthKey, p.monthTtl)
    if not listed or p.untilMs > listed then listed = p.untilMs end
  end
end
if listed then relist(deadlines, registry, name, listed, now, false) end
-- last: after every refusal and every extremes write, so it never claims what no key holds
if mirror.changed then
  redis.call('HSET', meta, 'extDay', string.format('%.0f', mirror.day), 'extMax', mirror.max, 'extNegMin', mirror.negMin)
end
return {accepted = accepted}
`,
});

/** DELETE: the settings, every key that may hold data (`stored`), and the registry entries. */
export const deleteScript = defineScript({
  name: "histograms.delete",
  write: true,
  keys: ["meta", "registry", "deadlines", "...stored"],
  args: ["name"],
  lua: `
local removed = redis.call('UNLINK', meta, unpack(stored))
redis.call('ZREM', registry, name)
redis.call('ZREM', deadlines, name)
return {removed = removed}
`,
});
