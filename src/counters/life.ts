import { defineLua, defineScript } from "../redis/script.ts";
import { TRIM_MARGIN } from "./trim.ts";

/**
 * A counter's life: its index hash, and deleting the counter (every write and read script of
 * ./scripts.ts and ./read-scripts.ts reads the index through `fieldsLua`).
 *
 * Period buckets belong to the counter's current life only while the
 * counter's index hash holds `b:<bucket key>`. Deleting a counter deletes the
 * index, so every bucket of the old life turns invisible at once without
 * naming its key (a script may touch only declared keys, and the deleting
 * request cannot know them); a later write to such a bucket starts it afresh.
 * The field's value is the bucket's expiry (epoch ms on the caller's clock,
 * 0 = none), so a write learns both "is it live" and "does its expiry need
 * extending" from one HMGET.
 */

/**
 * The index fields (`b:<key>`) of many buckets, in order (false where the
 * bucket is not part of this life), then the index fields named in `extra`
 * (may be nil): one HMGET per 1000 keys, as Lua's C stack limits unpack().
 */
export const fieldsLua = defineLua(
  "counters.fields",
  ["fields"],
  `
local function fields(index, keys, extra)
  local out = {}
  for s = 1, #keys, 1000 do
    local args = {'HMGET', index}
    for i = s, math.min(s + 999, #keys) do args[#args + 1] = 'b:' .. keys[i] end
    if extra and s + 1000 > #keys then
      for _, f in ipairs(extra) do args[#args + 1] = f end
    end
    for _, v in ipairs(redis.call(unpack(args))) do out[#out + 1] = v end
  end
  return out
end
`,
);

/**
 * Deletes a counter: its plain key, its index and its cached unions (`caches`). Deleting the
 * index turns every bucket of this life invisible; their keys go to the purge hash (each with
 * `now`) so the sweep job can free them, except those whose recorded expiry is long past (the
 * index is bounded by the writes' cursors, ./trim.ts, so this work is too). Returns 1 when anything existed.
 */
export const deleteScript = defineScript({
  name: "counters.delete",
  write: true,
  keys: ["plain", "index", "names", "expiry", "purge", "...caches"],
  args: ["name", "now"],
  lua: `
local existed = redis.call('EXISTS', plain, index)
local orphans = {}
-- a key whose recorded expiry passed more than TRIM_MARGIN ago is gone (it had an expiry, and a
-- recorded one is never later than the key's own, clocks agreeing within a minute): not purged
local gone = tonumber(now) - ${TRIM_MARGIN}
local all = redis.call('HGETALL', index)
for i = 1, #all, 2 do
  local field, v = all[i], tonumber(all[i + 1])
  if string.sub(field, 1, 2) == 'b:' and not (v and v >= 1e12 and v < gone) then
    orphans[#orphans + 1] = string.sub(field, 3)
  end
end
-- batches of 1000 fields keep unpack() below Lua's C stack limit
for s = 1, #orphans, 1000 do
  local args = {'HSET', purge}
  for i = s, math.min(s + 999, #orphans) do
    args[#args + 1] = orphans[i]
    args[#args + 1] = now
  end
  redis.call(unpack(args))
end
local doomed = {'UNLINK', plain, index}
for _, k in ipairs(caches) do doomed[#doomed + 1] = k end
redis.call(unpack(doomed))
redis.call('ZREM', names, name)
redis.call('ZREM', expiry, name)
if existed > 0 then return 1 end
return 0
`,
});
