import { defineLua } from "../redis/script.ts";

/**
 * Compaction's trim of one hour bucket to its top `keep` members (the caller checked that
 * `excess` = real members − keep > 0, and spent the moves). The cut, the highest count removed,
 * is added (negated) to the bucket's SENTINEL (a parameter: ./scripts.ts defines it and
 * imports this file).
 *
 * A tie across the cut (the keep-th and the (keep+1)-th counts equal) keeps the tie's byte-least
 * members, the ones every ranking puts first (ties by member, byte order): until review 22 the
 * trim kept the byte-greatest (ZREMRANGEBYRANK from the bottom, ZRANGESTORE … REV from the top),
 * so a window's top named other members after compaction though no count had changed (a flat
 * hour: a, b, c before, x, y, z after). Ascending ranks: 0 the sentinel, then `below` members
 * under the cut, then the tie (byte order within), then `above`.
 */
export const trimLua = defineLua(
  "trending.trim",
  ["trimHour"],
  `
local function trimHour(key, tmp, keep, excess, ttl, SENTINEL)
  local edge = redis.call('ZREVRANGE', key, keep - 1, keep, 'WITHSCORES')
  local cut, tie = tonumber(edge[4]), tonumber(edge[2]) == tonumber(edge[4])
  local below, kept, tied = excess, keep, 0
  if tie then
    below = redis.call('ZCOUNT', key, '(0', '(' .. edge[4])
    tied = redis.call('ZCOUNT', key, edge[4], edge[4])
    -- of the tie, the first keep - above stay (above = real members over the cut)
    kept = keep - (excess + keep - below - tied)
  end
  if excess <= keep then
    -- a few to remove: the tie's byte-greatest beyond kept, then everything under the cut
    if tie then redis.call('ZREMRANGEBYRANK', key, below + kept + 1, below + tied) end
    if below > 0 then redis.call('ZREMRANGEBYRANK', key, 1, below) end
    redis.call('ZINCRBY', key, 0 - cut, SENTINEL)
    return
  end
  -- a big hour: copy what stays and swap, rather than remove members one by one
  local err = tonumber(redis.call('ZSCORE', key, SENTINEL)) or 0
  if tie then
    -- the members over the cut, then the tie's first kept (names only: re-added at the cut)
    redis.call('ZRANGESTORE', tmp, key, '(' .. edge[4], '+inf', 'BYSCORE')
    local names = redis.call('ZRANGE', key, below + 1, below + kept)
    for i = 1, #names, 1000 do
      local args = {}
      for j = i, math.min(i + 999, #names) do
        args[#args + 1] = cut
        args[#args + 1] = names[j]
      end
      redis.call('ZADD', tmp, unpack(args))
    end
  else
    redis.call('ZRANGESTORE', tmp, key, 0, keep - 1, 'REV')
  end
  redis.call('ZADD', tmp, err - cut, SENTINEL)
  redis.call('EXPIRE', tmp, ttl)
  redis.call('UNLINK', key)
  redis.call('RENAME', tmp, key)
end`,
);
