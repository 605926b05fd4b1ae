import { ConflictError, ValidationError, NotFoundError } from "../errors.ts";
import { defineScript } from "../redis/script.ts";
import { emitLua, eventIdLua, matchLua, queueLua, recentLua } from "./emit.ts";
import { marksLua } from "./marks.ts";

// The Lua libraries `emit` uses live in ./emit.ts, which a write that emits (a leaderboard score
// change) loads without the rest of the webhooks; re-exported for the modules that import them here.
export { emitLua, eventIdLua, queueLua };

/**
 * Webhook scripts. A delivery is one event for one webhook: a field of `deliveries` (its body,
 * fixed when it was queued, and its attempts) and a member of `pending` scored by when it is due.
 * Detection and `emit` queue deliveries; the delivery step claims the due ones (moving them a
 * lease ahead, so a run that dies mid-way leaves them to the next), sends them, and settles each:
 * delivered or given up (removed, logged) or retried later (rescheduled with backoff, logged).
 */

/**
 * Creates or replaces a webhook; refuses a new one past the limit. Keeps `createdAt` on a replace,
 * and forgets what detection told it when it is created or its filter or N changed: its marks are
 * blanked and made this webhook's (`of`, ./marks.ts), in the one HSET that an UNLINK was, so a job
 * run that read the webhooks before (a DELETE, this PUT) neither reads nor writes them (review 12).
 * The settings are stored as the JSON TypeScript wrote, with the two times appended, never
 * re-encoded: cjson writes numbers with 14 significant digits, which rounded a `threshold` such as
 * 1.2345678901234567 (review 10).
 */
export const putScript = defineScript({
  name: "webhooks.put",
  write: true,
  keys: ["hooks", "marks"],
  args: ["name", "settings", "now", "max"],
  uses: [marksLua],
  refusals: {
    too_many: (r) =>
      new ValidationError(`At most ${String(r.max)} webhooks; delete one first.`, [
        { path: "name", message: `at most ${String(r.max)} webhooks` },
      ]),
  },
  lua: `
local old = redis.call('HGET', hooks, name)
if not old and redis.call('HLEN', hooks) >= tonumber(max) then return {refused = 'too_many', max = tonumber(max)} end
local hook = cjson.decode(settings)
local before = old and cjson.decode(old)
local createdAt = before and before.createdAt or tonumber(now)
if not before or cjson.encode(before.filter) ~= cjson.encode(hook.filter) or before.n ~= hook.n then
  -- blank, not deleted: a blank field reads as never told, and 'of' stays to say whose they are; a
  -- webhook detection never compares keeps no marks (one that later subscribes names them once)
  if detectedFor(hook) then
    redis.call('HSET', marks, 'of', ownerOfHook(hook, createdAt), 'trending', '', 'trendingTold', '', 'peak', '')
  else
    redis.call('UNLINK', marks)
  end
end
-- epoch ms: integers, which %.17g writes in full (cjson.decode reads them exactly)
local times = string.format(',"createdAt":%.17g,"updatedAt":%.17g}', createdAt, tonumber(now))
redis.call('HSET', hooks, name, string.sub(settings, 1, -2) .. times)
return {created = not old, createdAt = createdAt, updatedAt = tonumber(now)}
`,
});

/**
 * Deletes a webhook, its delivery log and its detection marks, and drops its queued deliveries:
 * ZSCAN of the queue in slices of `count`, keeping the ids of `name` (`<event id>:<name>`: event
 * ids hold no `:`, names no glob character), removed from the queue and their records. Bounded by
 * the queue's bound (MAX_PENDING: at most `maxSlices` slices; the claim drops anything a cut-short
 * scan leaves). Without it they waited to be dropped 25 a run at their claim, still counted towards
 * MAX_PENDING: a deleted webhook that had filled the queue kept every other webhook's events out
 * (`full`) for hours, and took the runs' sends (review 12).
 */
export const removeScript = defineScript({
  name: "webhooks.remove",
  write: true,
  keys: ["hooks", "log", "marks", "pending", "deliveries"],
  args: ["name", "count", "maxSlices"],
  lua: `
local deleted = redis.call('HDEL', hooks, name)
if deleted == 0 then return {deleted = false, dropped = 0} end
redis.call('UNLINK', log, marks)
local cursor, dropped = '0', 0
for _ = 1, tonumber(maxSlices) do
  local r = redis.call('ZSCAN', pending, cursor, 'MATCH', '*:' .. name, 'COUNT', count)
  local ids = {}
  for i = 1, #r[2], 2 do ids[#ids + 1] = r[2][i] end
  if #ids > 0 then
    redis.call('ZREM', pending, unpack(ids))
    redis.call('HDEL', deliveries, unpack(ids))
    dropped = dropped + #ids
  end
  cursor = r[1]
  if cursor == '0' then break end
end
return {deleted = true, dropped = dropped}
`,
});

/**
 * Queues an event for every webhook subscribed to its type whose filter matches (`kind` and
 * `subject`: e.g. `board` and the board's name; `score`, when given, at least the webhook's
 * `threshold`), or, with `only`, for that webhook alone whatever
 * it subscribes to (the test event). With `lease` > 0 the deliveries are claimed at once (due again
 * at `lease`) and returned, for a sender that delivers them now. An event is queued once per
 * webhook among the last `maxRecent` deliveries (`freshTargets`): a detector that finds the
 * same facts on every run sends them once.
 */
export const enqueueScript = defineScript({
  name: "webhooks.enqueue",
  write: true,
  keys: ["hooks", "pending", "deliveries", "recent"],
  args: ["eventId", "eventType", "kind", "subject", "score", "only", "body", "now", "lease", "maxPending", "maxRecent"],
  uses: [queueLua, matchLua, recentLua],
  refusals: {
    not_found: (_r, call) => new NotFoundError(`No webhook '${String(call.args.only)}'.`),
    // the test event alone: it was refused, so it must not be answered as queued (review 12)
    queue_full: (r) =>
      new ConflictError(
        "queue_full",
        `The delivery queue is full (${String(r.max)} deliveries waiting); the test event was not queued. Retry once the minute job has sent some.`,
      ),
  },
  lua: `
local targets = {}
if only ~= '' then
  local raw = redis.call('HGET', hooks, only)
  if not raw then return {refused = 'not_found'} end
  targets[1] = {only, cjson.decode(raw)}
else
  targets = subscribersOf(hooks, eventType, kind, subject, score)
end
-- no subscriber (the common case of emit): nothing else to read
if #targets == 0 then return {queued = 0, full = 0, claimed = {}} end
if only == '' then
  targets = freshTargets(recent, targets, eventId)
  if #targets == 0 then return {queued = 0, full = 0, claimed = {}, repeated = true} end
end
local room = tonumber(maxPending) - redis.call('ZCARD', pending)
if only ~= '' and room <= 0 then return {refused = 'queue_full', max = tonumber(maxPending)} end
local queued, full, claimed, told = 0, 0, {}, {}
for _, t in ipairs(targets) do
  if room <= 0 then
    full = full + 1
  else
    local claim = tonumber(lease) > 0
    if queueDelivery(pending, deliveries, t[1], t[2].createdAt, eventId, eventType, body, claim and lease or now, claim and 1 or 0) == 1 then
      queued = queued + 1
      room = room - 1
      if claim then
        claimed[#claimed + 1] = {id = eventId .. ':' .. t[1], webhook = t[1], since = t[2].createdAt, url = t[2].url, secret = t[2].secret, body = body, attempts = 1, event = eventId, type = eventType}
      end
    end
    told[#told + 1] = recentId(eventId, t)
  end
end
-- a full queue's refusals are not remembered: the same facts found later are queued then
if only == '' then rememberDeliveries(recent, told, now, maxRecent) end
-- the event's id rides in the result, so a replayed test (Idempotency-Key) answers the first one's
return {queued = queued, full = full, claimed = claimed, event = eventId}
`,
});

/**
 * Several events in one round trip (a detector's findings, e.g. one stream's rising members):
 * `emitEvent` for each (parallel lists: type, subject kind and name, key, data JSON, score or '').
 */
export const emitManyScript = defineScript({
  name: "webhooks.emitMany",
  write: true,
  keys: ["...hookKeys"],
  args: ["...hookArgs", "...types", "...kinds", "...subjects", "...eventKeys", "...datas", "...scores"],
  uses: [emitLua],
  lua: `
local out = {queued = 0, full = 0, repeated = 0}
for i = 1, #types do
  local r = emitEvent(hookKeys, hookArgs, types[i], kinds[i], subjects[i], eventKeys[i], datas[i], scores[i])
  out.queued = out.queued + r.queued
  out.full = out.full + r.full
  if r.repeated then out.repeated = out.repeated + 1 end
end
return out
`,
});

/**
 * Claims up to `limit` due deliveries: each one's attempts go up and it is due again at `lease`
 * (if this run dies before settling, the next run after the lease sends it again: at least once).
 * Deliveries of deleted webhooks are dropped here. `more`: deliveries past the limit stay due (read
 * in the same ZRANGEBYSCORE, one member more: no command more; review 19).
 */
export const claimScript = defineScript({
  name: "webhooks.claim",
  write: true,
  keys: ["hooks", "pending", "deliveries"],
  args: ["now", "lease", "limit"],
  lua: `
-- one past the limit, not claimed: whether deliveries stay due after this claim (the run's \`more\`)
local due  = redis.call('ZRANGEBYSCORE', pending, '-inf', now, 'LIMIT', 0, tonumber(limit) + 1)
local more = #due > tonumber(limit)
if more then due[#due] = nil end
if #due == 0 then return {claimed = {}, dropped = 0, more = more} end
local records = redis.call('HMGET', deliveries, unpack(due))
local all = redis.call('HGETALL', hooks)
local byName = {}
for i = 1, #all, 2 do byName[all[i]] = all[i + 1] end
local claimed, gone, updates, leases = {}, {}, {}, {}
for i, id in ipairs(due) do
  local d = records[i] and cjson.decode(records[i])
  local hook = d and byName[d.webhook] and cjson.decode(byName[d.webhook])
  -- a webhook deleted, or deleted and created again under its name since the event was queued
  if not hook or (d.since and d.since ~= hook.createdAt) then
    gone[#gone + 1] = id
  else
    d.attempts = d.attempts + 1
    updates[#updates + 1] = id
    updates[#updates + 1] = cjson.encode(d)
    leases[#leases + 1] = lease
    leases[#leases + 1] = id
    claimed[#claimed + 1] = {id = id, webhook = d.webhook, since = hook.createdAt, url = hook.url, secret = hook.secret, body = d.body, attempts = d.attempts, event = d.event, type = d.type}
  end
end
if #gone > 0 then
  redis.call('ZREM', pending, unpack(gone))
  redis.call('HDEL', deliveries, unpack(gone))
end
if #updates > 0 then
  redis.call('HSET', deliveries, unpack(updates))
  redis.call('ZADD', pending, unpack(leases))
end
return {claimed = claimed, dropped = #gone, more = more}
`,
});

/**
 * Settles claimed deliveries: `results` are JSON `{ok, outcome, at, via, status, error, messageId,
 * since, final?, notBefore?}` per id (`since`: the life it was claimed for; a record since queued for
 * another life is left alone). A success, or a failure at `maxAttempts` or `final` (410 Gone),
 * removes the delivery; another failure makes it due again after `retryBase` × 2^(attempts − 1)
 * ms, or at `notBefore` (a Retry-After) when that is later, at most `retryCap` from now. Every attempt is logged
 * in its webhook's log (`logs`, one per id), newest first, at most `logSize` entries, if that
 * webhook is still the life the delivery was queued for. A result `{unsent = true, since}` is a
 * claimed delivery the run could not afford to send (its subrequests ran short: deliver.ts): its
 * claim is undone (the attempt it counted, the lease), it is due again now and nothing is logged.
 */
export const settleScript = defineScript({
  name: "webhooks.settle",
  write: true,
  keys: ["hooks", "pending", "deliveries", "...logs"],
  args: ["now", "maxAttempts", "retryBase", "retryCap", "logSize", "...ids", "...results"],
  lua: `
local records = redis.call('HMGET', deliveries, unpack(ids))
local names = {}
for i = 1, #ids do names[i] = records[i] and cjson.decode(records[i]).webhook or '' end
local alive = redis.call('HMGET', hooks, unpack(names))
local done, retries, undone = {}, {}, {}
local counts = {delivered = 0, retrying = 0, failed = 0}
for i, id in ipairs(ids) do
  -- no record: settled by an overlapping run, or its webhook was deleted meanwhile; a record of
  -- another life (deleted, created again and the event queued afresh) is that life's to send
  local d = records[i] and cjson.decode(records[i])
  local r = cjson.decode(results[i])
  if d and r.unsent and (d.since == nil or tonumber(d.since) == tonumber(r.since)) then
    d.attempts = d.attempts - 1
    undone[#undone + 1] = id
    undone[#undone + 1] = cjson.encode(d)
    retries[#retries + 1] = tonumber(now)
    retries[#retries + 1] = id
  elseif d and not r.unsent and (r.since == nil or d.since == nil or tonumber(d.since) == tonumber(r.since)) then
    local entry = {delivery = id, event = d.event, type = d.type, attempt = d.attempts, at = r.at, via = r.via, status = r.status, error = r.error, messageId = r.messageId}
    if r.ok then
      entry.outcome = r.outcome
      done[#done + 1] = id
      counts.delivered = counts.delivered + 1
    elseif d.attempts >= tonumber(maxAttempts) or r.final then
      entry.outcome = 'failed'
      done[#done + 1] = id
      counts.failed = counts.failed + 1
    else
      local due = tonumber(now) + math.min(tonumber(retryBase) * 2 ^ (d.attempts - 1), tonumber(retryCap))
      -- a receiver's Retry-After (429, 503) may ask for later, never past the cap
      local asked = tonumber(r.notBefore)
      if asked and asked > due then due = math.min(asked, tonumber(now) + tonumber(retryCap)) end
      entry.outcome = 'retrying'
      entry.retryAt = due
      retries[#retries + 1] = due
      retries[#retries + 1] = id
      counts.retrying = counts.retrying + 1
    end
    -- logged only in the life the delivery was queued for: a webhook deleted and created again
    -- under its name while the attempt was in flight never made it (review 12)
    local hook = alive[i] and cjson.decode(alive[i])
    if hook and (d.since == nil or tonumber(d.since) == tonumber(hook.createdAt)) then
      redis.call('LPUSH', logs[i], cjson.encode(entry))
      redis.call('LTRIM', logs[i], 0, tonumber(logSize) - 1)
    end
  end
end
if #done > 0 then
  redis.call('ZREM', pending, unpack(done))
  redis.call('HDEL', deliveries, unpack(done))
end
if #retries > 0 then redis.call('ZADD', pending, unpack(retries)) end
if #undone > 0 then redis.call('HSET', deliveries, unpack(undone)) end
return counts
`,
});
