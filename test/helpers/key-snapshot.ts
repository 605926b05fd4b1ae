import { command, keysUnder, type RestTarget } from "./upstash-rest.ts";

/**
 * Every key under `prefix:` with what it holds and whether it expires: the keys by SCAN, their
 * contents in one EVAL (a 400-day hour counter has ~11,600 keys: a request each would take
 * seconds). Two equal snapshots mean nothing under `prefix` was written, made, deleted or given an
 * expiry in between.
 */
const SNAPSHOT_LUA = `
local out = {}
for _, k in ipairs(KEYS) do
  local t = redis.call('TYPE', k).ok
  local v
  if t == 'zset' then v = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
  elseif t == 'hash' then
    v = redis.call('HGETALL', k)
    local pairs = {}
    for i = 1, #v, 2 do pairs[#pairs + 1] = v[i] .. '=' .. v[i + 1] end
    table.sort(pairs)
    v = pairs
  elseif t == 'string' then v = {redis.call('GET', k)}
  else v = {} end
  local ttl = redis.call('PTTL', k) >= 0 and 'expires' or 'persists'
  out[#out + 1] = k .. ' ' .. t .. ' ' .. ttl .. ' ' .. table.concat(v, ',')
end
table.sort(out)
return out
`;

export async function keySnapshot(target: RestTarget, prefix: string): Promise<string[]> {
  const keys = await keysUnder(target, prefix);
  return command<string[]>(target, "EVAL", SNAPSHOT_LUA, keys.length, ...keys);
}
