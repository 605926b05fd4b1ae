import { ValidationError, NotFoundError } from "../errors.ts";
import { defineLua, defineScript } from "../redis/script.ts";

/**
 * Webhook scripts. A delivery is one event for one webhook: a field of `deliveries` (its body,
 * fixed when it was queued, and its attempts) and a member of `pending` scored by when it is due.
 * Detection and `emit` queue deliveries; the delivery step claims the due ones (moving them a
 * lease ahead, so a run that dies mid-way leaves them to the next), sends them, and settles each:
 * delivered or given up (removed, logged) or retried later (rescheduled with backoff, logged).
 */

/**
 * Queues one delivery, due at `due`, unless the same event is already waiting for this webhook;
 * returns 1 when queued. `attempts` is 1 for a delivery claimed as it is queued (sent at once).
 */
export const queueLua = defineLua(
  "webhooks.queue",
  ["queueDelivery"],
  `
local function queueDelivery(pending, deliveries, webhook, since, eventId, eventType, body, due, attempts)
  local id = eventId .. ':' .. webhook
  -- since: the webhook's createdAt, so a delivery never reaches a later webhook of the same name
  local record = cjson.encode({webhook = webhook, since = since, event = eventId, type = eventType, body = body, attempts = attempts})
  if redis.call('HSETNX', deliveries, id, record) == 0 then return 0 end
  redis.call('ZADD', pending, due, id)
  return 1
end`,
);

/** An event's id: stable for the same facts, so a repeated detection is recognisably the same event. */
export const eventIdLua = defineLua(
  "webhooks.eventId",
  ["eventIdOf"],
  `
local function eventIdOf(eventType, subject, key)
  return 'evt_' .. string.sub(redis.sha1hex(eventType .. '\\n' .. subject .. '\\n' .. key), 1, 32)
end`,
);

/**
 * The webhooks (`{name, settings}`) an event is for: subscribed to `eventType`, with no filter or a
 * filter of `kind` naming `subject`, and (a trending.rising `score`) a `threshold` at most `score`.
 * One HGETALL of the registry.
 */
const matchLua = defineLua(
  "webhooks.match",
  ["subscribersOf"],
  `
local function subscribersOf(hooks, eventType, kind, subject, score)
  local targets = {}
  local all = redis.call('HGETALL', hooks)
  for i = 1, #all, 2 do
    local hook = cjson.decode(all[i + 1])
    local wanted = false
    for _, e in ipairs(hook.events) do if e == eventType then wanted = true end end
    local filter = hook.filter
    if wanted and type(filter) == 'table' then wanted = kind ~= '' and filter[kind] == subject end
    -- a trending.rising event below the webhook's threshold is not for it
    if wanted and score ~= '' and type(hook.threshold) == 'number' then wanted = tonumber(score) >= hook.threshold end
    if wanted then targets[#targets + 1] = {all[i], hook} end
  end
  return targets
end`,
);

/**
 * The targets (`{name, settings}`) an event was not yet queued for: each delivery id
 * (`<event id>:<webhook>`) is remembered among the last `maxRecent` (`recent`), delivered or not,
 * so a detector that finds the same facts on every run sends them once to each webhook, and a
 * webhook that starts matching later (a trending.rising score that grew past its threshold)
 * still gets it. `freshTargets` only reads (ZMSCORE); `rememberDeliveries` marks the ids that
 * were queued (or were already waiting) once the queue said so (ZADD, ZREMRANGEBYRANK): an event
 * refused because the queue was full is not remembered, so a detector that finds it again when
 * there is room queues it then.
 */
const recentLua = defineLua(
  "webhooks.recent",
  ["freshTargets", "rememberDeliveries"],
  `
local function freshTargets(recent, targets, eventId)
  local ids = {}
  for i, t in ipairs(targets) do ids[i] = eventId .. ':' .. t[1] end
  local seen = redis.call('ZMSCORE', recent, unpack(ids))
  local fresh = {}
  for i, t in ipairs(targets) do
    if not seen[i] then fresh[#fresh + 1] = t end
  end
  return fresh
end
local function rememberDeliveries(recent, ids, now, maxRecent)
  if #ids == 0 then return end
  local marks = {}
  for _, id in ipairs(ids) do
    marks[#marks + 1] = now
    marks[#marks + 1] = id
  end
  redis.call('ZADD', recent, unpack(marks))
  redis.call('ZREMRANGEBYRANK', recent, 0, -tonumber(maxRecent) - 1)
end`,
);

/**
 * `emit` inside another feature's write script, so detecting an event and queueing it are one
 * round trip (leaderboard.leader). `wk` are the registry keys (webhooks/index.ts, `emitBlock`:
 * hooks, pending, deliveries, recent) and `wa` its arguments (now, at (epoch ms), maxPending, maxRecent);
 * `data` is the event's data as JSON text (so a score keeps every digit Redis printed), `score`
 * a trending.rising score ('' for other events). Queues the event for every matching webhook
 * not already told (`freshTargets`); with no subscriber it costs the HGETALL alone.
 * Returns {queued, full, told (the webhooks it was queued for now or before), repeated}.
 */
export const emitLua = defineLua(
  "webhooks.emit",
  ["emitEvent"],
  `
local function emitEvent(wk, wa, eventType, kind, subject, key, data, score)
  local hooks, pending, deliveries, recent = wk[1], wk[2], wk[3], wk[4]
  local now, at, maxPending, maxRecent = wa[1], wa[2], tonumber(wa[3]), tonumber(wa[4])
  local targets = subscribersOf(hooks, eventType, kind, subject, score)
  if #targets == 0 then return {queued = 0, full = 0, told = 0, repeated = false} end
  local eventId = eventIdOf(eventType, subject, key)
  targets = freshTargets(recent, targets, eventId)
  if #targets == 0 then return {queued = 0, full = 0, told = 0, repeated = true} end
  local body = '{"id":' .. cjson.encode(eventId) .. ',"type":' .. cjson.encode(eventType) .. ',"at":' .. cjson.encode(tonumber(at)) .. ',"data":' .. data .. '}'
  local room = maxPending - redis.call('ZCARD', pending)
  local queued, full, told = 0, 0, {}
  for _, t in ipairs(targets) do
    if room <= 0 then
      full = full + 1
    else
      if queueDelivery(pending, deliveries, t[1], t[2].createdAt, eventId, eventType, body, now, 0) == 1 then
        queued = queued + 1
        room = room - 1
      end
      told[#told + 1] = eventId .. ':' .. t[1]
    end
  end
  rememberDeliveries(recent, told, now, maxRecent)
  return {queued = queued, full = full, told = #told, repeated = false}
end`,
  [queueLua, matchLua, recentLua, eventIdLua],
);

/**
 * Creates or replaces a webhook; refuses a new one past the limit. Keeps `createdAt` on a replace,
 * and forgets what detection told it when its filter or N changed (the marks are of another stream
 * or room).
 */
export const putScript = defineScript({
  name: "webhooks.put",
  write: true,
  keys: ["hooks", "marks"],
  args: ["name", "settings", "now", "max"],
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
if before and (cjson.encode(before.filter) ~= cjson.encode(hook.filter) or before.n ~= hook.n) then redis.call('UNLINK', marks) end
hook.createdAt = before and before.createdAt or tonumber(now)
hook.updatedAt = tonumber(now)
redis.call('HSET', hooks, name, cjson.encode(hook))
return {created = not old, createdAt = hook.createdAt, updatedAt = hook.updatedAt}
`,
});

/** Deletes a webhook, its delivery log and its detection marks; its queued deliveries are dropped when claimed. */
export const removeScript = defineScript({
  name: "webhooks.remove",
  write: true,
  keys: ["hooks", "log", "marks"],
  args: ["name"],
  lua: `
local deleted = redis.call('HDEL', hooks, name)
if deleted == 1 then redis.call('UNLINK', log, marks) end
return {deleted = deleted == 1}
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
  refusals: { not_found: (_r, call) => new NotFoundError(`No webhook '${String(call.args.only)}'.`) },
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
        claimed[#claimed + 1] = {id = eventId .. ':' .. t[1], webhook = t[1], url = t[2].url, secret = t[2].secret, body = body, attempts = 1, event = eventId, type = eventType}
      end
    end
    told[#told + 1] = eventId .. ':' .. t[1]
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
 * Deliveries of deleted webhooks are dropped here.
 */
export const claimScript = defineScript({
  name: "webhooks.claim",
  write: true,
  keys: ["hooks", "pending", "deliveries"],
  args: ["now", "lease", "limit"],
  lua: `
local due = redis.call('ZRANGEBYSCORE', pending, '-inf', now, 'LIMIT', 0, tonumber(limit))
if #due == 0 then return {claimed = {}, dropped = 0} end
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
    claimed[#claimed + 1] = {id = id, webhook = d.webhook, url = hook.url, secret = hook.secret, body = d.body, attempts = d.attempts, event = d.event, type = d.type}
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
return {claimed = claimed, dropped = #gone}
`,
});

/**
 * Settles claimed deliveries: `results` are JSON `{ok, outcome, at, via, status, error, messageId}`
 * per id. A success, or a failure at `maxAttempts`, removes the delivery; another failure makes it
 * due again after `retryBase` × 2^(attempts − 1) ms, at most `retryCap`. Every attempt is logged
 * in its webhook's log (`logs`, one per id), newest first, at most `logSize` entries.
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
local done, retries = {}, {}
local counts = {delivered = 0, retrying = 0, failed = 0}
for i, id in ipairs(ids) do
  -- no record: settled by an overlapping run, or its webhook was deleted meanwhile
  if records[i] then
    local d = cjson.decode(records[i])
    local r = cjson.decode(results[i])
    local entry = {delivery = id, event = d.event, type = d.type, attempt = d.attempts, at = r.at, via = r.via, status = r.status, error = r.error, messageId = r.messageId}
    if r.ok then
      entry.outcome = r.outcome
      done[#done + 1] = id
      counts.delivered = counts.delivered + 1
    elseif d.attempts >= tonumber(maxAttempts) then
      entry.outcome = 'failed'
      done[#done + 1] = id
      counts.failed = counts.failed + 1
    else
      local due = tonumber(now) + math.min(tonumber(retryBase) * 2 ^ (d.attempts - 1), tonumber(retryCap))
      entry.outcome = 'retrying'
      entry.retryAt = due
      retries[#retries + 1] = due
      retries[#retries + 1] = id
      counts.retrying = counts.retrying + 1
    end
    if alive[i] then
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
return counts
`,
});
