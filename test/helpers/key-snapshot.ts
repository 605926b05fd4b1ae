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

const pairs = (flat: string[]) =>
  Array.from({ length: flat.length / 2 }, (_, i): [string, string] => [flat[2 * i] ?? "", flat[2 * i + 1] ?? ""]);

/**
 * Every key under `prefix:` with its type, its value and its absolute expiry (PEXPIRETIME), a
 * request each: stricter than `keySnapshot` (sets and lists read, a string's length, the expiry's
 * time and not only whether there is one), for the review 9 limit tests that assert a refused call
 * changed nothing at all. A hash's and a set's order may change when Redis rehashes on a mere
 * read: they are compared sorted.
 */
export async function keyValues(target: RestTarget, prefix: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const key of await keysUnder(target, prefix)) {
    const type = await command<string>(target, "TYPE", key);
    const read: Record<string, (string | number)[]> = {
      string: ["STRLEN", key],
      hash: ["HGETALL", key],
      zset: ["ZRANGE", key, 0, -1, "WITHSCORES"],
      set: ["SMEMBERS", key],
      list: ["LRANGE", key, 0, -1],
    };
    let value = await command<unknown>(target, ...(read[type] ?? ["TYPE", key]));
    if (type === "hash") value = Object.fromEntries(pairs(value as string[]).sort(([x], [y]) => (x < y ? -1 : 1)));
    if (type === "set") value = (value as string[]).sort();
    out[key] = [type, value, await command(target, "PEXPIRETIME", key)];
  }
  return out;
}
