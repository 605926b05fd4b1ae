import { defineLua } from "../redis/script.ts";

/**
 * A counter's life: its index hash (every write and read script of ./scripts.ts and
 * ./read-scripts.ts reads it through `fieldsLua`; deleting the counter ends it: ./drop.ts).
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
