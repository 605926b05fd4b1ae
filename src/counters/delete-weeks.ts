import { defineLua } from "../redis/script.ts";

/**
 * A member delete keeps week size records (`n:<week key>`, scripts.ts; docs/counters.md "Week
 * size records") exact-or-upper as it shrinks weeks (review 12): records left as they were made a
 * counter whose weeks fit the union bound, but whose records summed past it, pay a `ZCARD` a week
 * on its next long read (63 commands for 58 weeks). The buckets' records ride in the delete's first
 * HMGET (a plan without rollups: a week or month counter, at most 59 buckets; month counters keep
 * none, their fields read absent), and each week whose ZREM removed the member and that still
 * lives gets its record less one in the HSET of the cache generation the delete makes anyway: no
 * command more. An emptied week's record goes with its field (delete-removals.ts `flush`, one HDEL).
 */
export const deleteWeeksLua = defineLua(
  "counters.deleteWeeks",
  ["recordNames", "lowerRecords"],
  `
-- appends the buckets' record fields to names (only in a plan without rollups); returns where
-- they start
local function recordNames(parts, nb, np, names)
  local at = #names + 1
  if nb == np then
    for i = 1, nb do names[#names + 1] = 'n:' .. parts[i] end
  end
  return at
end
-- appends to args each record of a bucket that lost the member (lost[i]) and still lives
-- (alive[i]), less one: it held the member, so its record was at least 1 and stays an upper bound
local function lowerRecords(parts, nb, head, at, lost, alive, args)
  for i = 1, nb do
    local r = tonumber(head[at + i - 1])
    if r and lost[i] and alive[i] then
      args[#args + 1] = 'n:' .. parts[i]
      args[#args + 1] = math.max(0, r - 1)
    end
  end
  return args
end
`,
);
