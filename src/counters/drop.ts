import { defineScript } from "../redis/script.ts";
import { TRIM_MARGIN } from "./trim.ts";

// Its own module: the increment's chunk (a cold isolate's first write) does not carry it.
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
