import { defineLua } from "../redis/script.ts";

/**
 * Whose a webhook's detection marks (`webhooks:{name}:marks`, keys.ts) are: their field `of` names
 * the webhook life, N and filter they were written for (`<createdAt>\n<n>\n<kind>\n<subject>`). The
 * PUT that creates a webhook or changes its filter or N blanks them and sets `of` (a webhook of no
 * detected event keeps none: that PUT deletes them). A detection run that read the webhooks before
 * a DELETE (or such a PUT) finds the marks gone or another's in the same script, and neither reads
 * nor writes them; until 2026-11-27 (review 12's known limit) it wrote a deleted webhook's marks
 * back, a key without expiry leaked per race. Marks without `of` (written by an earlier release, or
 * gone since the run read the webhooks) are judged by the registry: that rare path pays an HGET
 * (and, the webhook being the one read, an HSET of `of`, once); the steady path reads `of` in the
 * HMGET of the marks it already made.
 */
export const marksLua = defineLua(
  "webhooks.marks",
  ["marksOwner", "ownerOfHook", "marksAreOf", "detectedFor"],
  `
-- whether detection keeps marks for a webhook (decoded settings): presence.peak of a room, or
-- trending.entered/left of a stream (detect.ts compares no other)
local function detectedFor(hook)
  local f = type(hook.filter) == 'table' and hook.filter or {}
  for _, e in ipairs(hook.events) do
    if (e == 'presence.peak' and f.room) or ((e == 'trending.entered' or e == 'trending.left') and f.stream) then return true end
  end
  return false
end
local function marksOwner(createdAt, n, kind, subject)
  return string.format('%.0f', tonumber(createdAt) or 0) .. '\\n' .. string.format('%.0f', tonumber(n) or 0) .. '\\n' .. kind .. '\\n' .. subject
end
-- a stored webhook's owner (decoded settings; createdAt given, as a PUT computes it)
local function ownerOfHook(hook, createdAt)
  local f, kind, subject = hook.filter, '', ''
  if type(f) == 'table' then
    for _, k in ipairs({'stream', 'room', 'board'}) do
      if f[k] then kind, subject = k, f[k] end
    end
  end
  return marksOwner(createdAt, hook.n, kind, subject)
end
-- whether a detection run may read and write marks for owner (the webhook as the run read it)
local function marksAreOf(hooks, webhook, marks, of, owner)
  if of then return of == owner end
  local raw = redis.call('HGET', hooks, webhook)
  if not raw then return false end
  local hook = cjson.decode(raw)
  if ownerOfHook(hook, hook.createdAt) ~= owner then return false end
  redis.call('HSET', marks, 'of', owner)
  return true
end`,
);
