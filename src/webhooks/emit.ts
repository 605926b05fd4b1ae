import type { Ctx } from "../context.ts";
import { defineLua } from "../redis/script.ts";
import { registryKeys } from "./keys.ts";

/**
 * What a write script needs to emit webhook events itself (`emitLua`, `emitBlock`), apart from
 * the rest of the webhooks (./scripts.ts, ./webhooks.ts, ./deliver.ts), so that a leaderboard's
 * first score change loads only this of them (issue 14, point 6: a cold isolate's first write).
 */

/** Deliveries waiting at most; events past it are counted (`full`) and not queued. */
export const MAX_PENDING = 10_000;
/** Deliveries (`<event id>:<webhook>`) `emit` remembers, so the same event found again is not queued again for the same webhook. */
export const MAX_RECENT = 10_000;

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
  if redis.call('HSETNX', deliveries, id, record) == 0 then
    -- already waiting: this life's delivery stays; an earlier life's of the same name (deleted and
    -- created again, a different since; dropped when claimed) gives way to this one (review 8)
    local old = cjson.decode(redis.call('HGET', deliveries, id))
    if tonumber(old.since) == tonumber(since) then return 0 end
    redis.call('HSET', deliveries, id, record)
  end
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
export const matchLua = defineLua(
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
 * (`<event id>:<webhook>:<its createdAt>`) is remembered among the last `maxRecent` (`recent`), delivered or not,
 * so a detector that finds the same facts on every run sends them once to each webhook, and a
 * webhook that starts matching later (a trending.rising score that grew past its threshold)
 * still gets it. `freshTargets` only reads (ZMSCORE); `rememberDeliveries` marks the ids that
 * were queued (or were already waiting) once the queue said so (ZADD, ZREMRANGEBYRANK): an event
 * refused because the queue was full is not remembered, so a detector that finds it again when
 * there is room queues it then.
 */
export const recentLua = defineLua(
  "webhooks.recent",
  ["freshTargets", "rememberDeliveries", "recentId"],
  `
-- The id an event is remembered by for target t ({name, settings}): with the webhook's createdAt, so a
-- webhook deleted and created again under its name is told again what its old life was (review 8).
local function recentId(eventId, t)
  return eventId .. ':' .. t[1] .. ':' .. string.format('%.0f', tonumber(t[2].createdAt) or 0)
end
local function freshTargets(recent, targets, eventId)
  local ids = {}
  for i, t in ipairs(targets) do ids[i] = recentId(eventId, t) end
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
 * trending.rising told this hour, per webhook life: a SET of `<event id>:<webhook>:<createdAt>`
 * (`risingTold`, webhooks/keys.ts), expiring after the hour. The event's id names its hour, so the
 * set is all "at most once per hour" needs, apart from `_recent`, which other events' deliveries
 * (10,000 leader changes an hour on busy boards) pushed a rising member out of, re-firing it the
 * same hour (review 12). The same commands as `freshTargets` / `rememberDeliveries`.
 */
export const risingToldLua = defineLua(
  "webhooks.risingTold",
  ["freshInHour", "rememberInHour"],
  `
local function freshInHour(told, targets, eventId)
  local ids = {}
  for i, t in ipairs(targets) do ids[i] = recentId(eventId, t) end
  local seen = redis.call('SMISMEMBER', told, unpack(ids))
  local fresh = {}
  for i, t in ipairs(targets) do
    if seen[i] == 0 then fresh[#fresh + 1] = t end
  end
  return fresh
end
local function rememberInHour(told, ids, ttl)
  if #ids == 0 then return end
  redis.call('SADD', told, unpack(ids))
  redis.call('PEXPIRE', told, ttl)
end`,
  [recentLua],
);

/**
 * `emit` inside another feature's write script, so detecting an event and queueing it are one
 * round trip (leaderboard.leader). `wk` are the registry keys (webhooks/index.ts, `emitBlock`:
 * hooks, pending, deliveries, recent, and for trending.rising the hour's told set) and `wa` its
 * arguments (now, at (epoch ms), maxPending, maxRecent, and the told set's time to live, ms);
 * `data` is the event's data as JSON text (so a score keeps every digit Redis printed), `score`
 * a trending.rising score ('' for other events). Queues the event for every matching webhook
 * not already told (`freshTargets`, or `freshInHour` for trending.rising); with no subscriber it
 * costs the HGETALL alone.
 * Returns {queued, full, told (the webhooks it was queued for now or before), repeated}.
 */
export const emitLua = defineLua(
  "webhooks.emit",
  ["emitEvent"],
  `
local function emitEvent(wk, wa, eventType, kind, subject, key, data, score)
  local hooks, pending, deliveries, recent = wk[1], wk[2], wk[3], wk[4]
  local now, at, maxPending, maxRecent = wa[1], wa[2], tonumber(wa[3]), tonumber(wa[4])
  local hourTold = eventType == 'trending.rising' and wk[5] or nil
  local targets = subscribersOf(hooks, eventType, kind, subject, score)
  if #targets == 0 then return {queued = 0, full = 0, told = 0, repeated = false} end
  local eventId = eventIdOf(eventType, subject, key)
  if hourTold then targets = freshInHour(hourTold, targets, eventId) else targets = freshTargets(recent, targets, eventId) end
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
      told[#told + 1] = recentId(eventId, t)
    end
  end
  if hourTold then rememberInHour(hourTold, told, wa[5]) else rememberDeliveries(recent, told, now, maxRecent) end
  return {queued = queued, full = full, told = #told, repeated = false}
end`,
  [queueLua, matchLua, recentLua, risingToldLua, eventIdLua],
);

/**
 * What a write script that emits itself (`emitLua`, webhooks/scripts.ts) is called with: the
 * registry keys as one key list and the emit arguments as one argument list, so detection and
 * queueing are one round trip. Costs nothing unless the script emits.
 */
export function emitBlock(ctx: Ctx): { keys: string[]; args: (string | number)[] } {
  const reg = registryKeys(ctx.prefix);
  return {
    keys: [reg.hooks, reg.pending, reg.deliveries, reg.recent],
    // now, and the body's `at` (the same instant, epoch ms)
    args: [ctx.now, ctx.now, MAX_PENDING, MAX_RECENT],
  };
}
