/**
 * The admin rollup (`POST /v1/counters/{counter}/union`): source post 001's ZUNIONSTORE into
 * `week49` (docs/background.md), over other counters' plain keys and period buckets, bounded like
 * every read's union (issue 15: at most MAX_UNION_ENTRIES entries walked, else a 400).
 */
import type { Ctx } from "../context.ts";
import { ValidationError } from "../errors.ts";
import { stampLua } from "../redis/pages.ts";
import { defineLua, defineScript, type Idempotency, type Refusal, type Written } from "../redis/script.ts";
import type { Period } from "../time.ts";
import { assertName } from "../validation.ts";
import { counterKeys as K, type Aggregate } from "./keys.ts";
import { MAX_COUNTER_SCORE, MAX_UNION_ENTRIES } from "./limits.ts";
import { fieldsLua } from "./life.ts";
import { aggregateArg, periodRange, type PeriodOptions, type PeriodRange } from "./select.ts";
import { checkUnion, checkUnionKeys } from "./validate.ts";

/**
 * Keeps the registry exact after a rollup replaced the plain key: the name
 * lives until the later of its plain key and its index (which outlives every
 * bucket it lists). `now` is a number (epoch ms). Its activity is stamped as every registry
 * write's (stampLua: above the registry's highest, review 26).
 */
const registerLua = defineLua(
  "counters.register",
  ["register"],
  `
local function register(plain, index, names, expiry, name, now)
  local left = -2
  for _, k in ipairs({plain, index}) do
    local t = redis.call('PTTL', k)
    if t == -1 then left = -1 break end
    if t > left then left = t end
  end
  if left == -2 then
    redis.call('ZREM', names, name)
    redis.call('ZREM', expiry, name)
  else
    stamp(names, name, now)
    if left == -1 then redis.call('ZREM', expiry, name) else redis.call('ZADD', expiry, now + left, name) end
  end
end
`,
  [stampLua],
);

/**
 * Stores under `plain` the union of source keys with `aggregate` (SUM|MIN|MAX), expiring after
 * `ttl` seconds (0 = none). Per source key: `keyAt`, its slot, and `indexAt`, the slot of its
 * counter's index (0 for a plain key); slot 1 is `plain`, 2 `index` (a source may be the
 * destination itself), 2 + i the i-th of `sources`; `weights` its multiplier. A bucket counts
 * only while its own counter's index lists it. Returns {members, sources used}, or refuses
 * before writing anything when the live sources hold more than `maxEntries` entries, or when a
 * score of the union leaves ±MAX_COUNTER_SCORE (built in `scratch`, which then goes).
 */
export const unionScript = defineScript({
  name: "counters.union",
  write: true,
  keys: ["plain", "index", "scratch", "names", "expiry", "...sources"],
  args: ["name", "now", "aggregate", "ttl", "maxEntries", "...keyAt", "...indexAt", "...weights"],
  uses: [registerLua, fieldsLua],
  refusals: {
    too_many_entries: (r: Refusal, call: { args: Record<string, unknown> }) =>
      new ValidationError(
        `The union's sources hold at least ${String(r.entries)} entries; a union walks at most ${String(call.args.maxEntries)}. Use fewer or shorter sources, or read the range instead (GET /v1/counters/{counter}/top with period, from and to; in the library, counter(c).top({ period, from, to })).`,
        [{ path: "sources", message: `hold more than ${String(call.args.maxEntries)} entries` }],
        "too_many_entries",
      ),
    out_of_range: (r: Refusal) =>
      new ValidationError(
        `The union would hold a score of ${String(r.score)}, outside ±${MAX_COUNTER_SCORE}, the range a counter keeps exact (past 2^53 later increments would be rounded away); nothing was changed. Use smaller weights.`,
        [{ path: "weights", message: `make a score leave ±${MAX_COUNTER_SCORE}` }],
      ),
  },
  lua: `
local limit = tonumber(maxEntries)
local slot  = {plain, index}
for _, k in ipairs(sources) do slot[#slot + 1] = k end
-- which buckets are part of their counter's current life: one HMGET per source counter's index
-- (per 1000 keys), where a HEXISTS per bucket cost up to 1,000 commands
local wanted = {}
for i = 1, #keyAt do
  local ix = tonumber(indexAt[i])
  if ix > 0 then
    wanted[ix] = wanted[ix] or {}
    table.insert(wanted[ix], i)
  end
end
local listed = {}
for ix, at in pairs(wanted) do
  local keys = {}
  for j, i in ipairs(at) do keys[j] = slot[tonumber(keyAt[i])] end
  for j, v in ipairs(fields(slot[ix], keys)) do listed[at[j]] = v and true or false end
end
-- ZUNIONSTORE walks every entry of every source and holds the lock meanwhile (issue 15): count
-- them first, one ZCARD per live key, and refuse past the limit before anything is written
local live, liveWeights, cards, entries = {}, {}, {}, 0
for i, weight in ipairs(weights) do
  local key = slot[tonumber(keyAt[i])]
  if tonumber(indexAt[i]) == 0 or listed[i] then
    live[#live + 1]               = key
    liveWeights[#liveWeights + 1] = weight
    cards[key] = cards[key] or redis.call('ZCARD', key)
    entries    = entries + cards[key]
    if entries > limit then return {refused = 'too_many_entries', entries = entries} end
  end
end
local members = 0
if #live > 0 then
  -- one ZUNIONSTORE (at most 1000 keys, a source may be the destination itself) into scratch first:
  -- weights up to ±1e12 multiply, so a union may pass 2^53, where later increments are rounded
  -- away (review 10), or even the largest double, stored as inf and read as null (review 7). A
  -- union with a score outside ±MAX_COUNTER_SCORE (./limits.ts) is refused, and plain keeps what it held.
  local args = {'ZUNIONSTORE', scratch, #live}
  for _, k in ipairs(live) do args[#args + 1] = k end
  args[#args + 1] = 'WEIGHTS'
  for _, w in ipairs(liveWeights) do args[#args + 1] = w end
  args[#args + 1] = 'AGGREGATE'
  args[#args + 1] = aggregate
  members = redis.call(unpack(args))
  if members > 0 then
    local low  = redis.call('ZRANGE', scratch, 0, 0, 'WITHSCORES')[2]
    local high = redis.call('ZRANGE', scratch, -1, -1, 'WITHSCORES')[2]
    -- ±inf and nan fail the comparisons too
    for _, score in ipairs({low, high}) do
      local v = tonumber(score)
      if not (v and v >= -${MAX_COUNTER_SCORE} and v <= ${MAX_COUNTER_SCORE}) then
        redis.call('UNLINK', scratch)
        return {refused = 'out_of_range', score = score}
      end
    end
  end
end
-- what plain held goes by UNLINK (freed in the background, a source too: its entries are in
-- scratch): a RENAME over it would free its members inside the script (151 ms for 1M on the bench machine)
redis.call('UNLINK', plain)
if members > 0 then
  redis.call('RENAME', scratch, plain)
  if tonumber(ttl) > 0 then redis.call('EXPIRE', plain, ttl) end
end
register(plain, index, names, expiry, name, tonumber(now))
return {members, #live}
`,
});

/** A rollup source: another counter's plain key, or its buckets over a range. */
export type UnionSource = string | ({ counter: string; period: Period } & Omit<PeriodOptions, "period">);

export interface UnionOptions {
  sources: UnionSource[];
  /** @default "sum" */
  aggregate?: Aggregate | undefined;
  /** One multiplier per source (applied to each bucket of a period source). @default all 1 */
  weights?: number[] | undefined;
  /** Seconds the rollup lives. @default undefined: kept until deleted or overwritten */
  ttl?: number | undefined;
}

export interface UnionResult {
  counter: string;
  /** Members the rollup holds. */
  members: number;
  /** Source keys that existed (buckets of their counter's current life). */
  sourcesUsed: number;
  /** Source keys after expanding period sources into buckets. */
  sourceKeys: number;
  aggregate: Aggregate;
}

/**
 * Stores the union of `sources` under `name` (replacing what it held): source post 001's
 * ZUNIONSTORE into `week49` (docs/background.md).
 */
export async function union(
  ctx: Ctx,
  name: string,
  options: UnionOptions,
  idempotency?: Idempotency,
): Promise<Written<UnionResult>> {
  assertName(name, "counter");
  checkUnion(options);
  const plain = K.plain(ctx.prefix, name);
  const index = K.index(ctx.prefix, name);
  // slots 1 and 2 are the destination's own keys (a source may be the destination itself), then `sources`
  const sourceKeys: string[] = [];
  const slots = new Map<string, number>([
    [plain, 1],
    [index, 2],
  ]);
  const slotOf = (key: string) => {
    let slot = slots.get(key);
    if (slot === undefined) {
      sourceKeys.push(key);
      slots.set(key, (slot = sourceKeys.length + 2));
    }
    return slot;
  };
  const keyAt: number[] = [];
  const indexAt: number[] = [];
  const weights: number[] = [];
  options.sources.forEach((src, i) => {
    const weight = options.weights?.[i] ?? 1;
    if (typeof src === "string") {
      assertName(src, `sources.${i}`);
      keyAt.push(slotOf(K.plain(ctx.prefix, src)));
      indexAt.push(0);
      weights.push(weight);
      return;
    }
    assertName(src.counter, `sources.${i}.counter`);
    const range = periodRange(src, ctx.now) as PeriodRange;
    // refused as soon as the sources so far pass the limit, not after naming every key of all of
    // them (100 sources of 400 days of hours built 946,900 keys, ~0.7 s, before the 400: review 7)
    checkUnionKeys(keyAt.length + range.starts.length, i < options.sources.length - 1);
    const sourceIndex = slotOf(K.index(ctx.prefix, src.counter));
    for (const start of range.starts) {
      keyAt.push(slotOf(K.bucket(ctx.prefix, src.counter, range.period, start)));
      indexAt.push(sourceIndex);
      weights.push(weight);
    }
  });
  checkUnionKeys(keyAt.length);
  const aggregate = options.aggregate ?? "sum";
  const { value, replayed } = await unionScript.run<[number, number]>(
    ctx.redis,
    {
      plain,
      index,
      scratch: K.scratch(ctx.prefix, name),
      names: K.names(ctx.prefix),
      expiry: K.expiry(ctx.prefix),
      sources: sourceKeys,
    },
    {
      name,
      now: ctx.now,
      aggregate: aggregateArg(aggregate),
      ttl: options.ttl ?? 0,
      maxEntries: MAX_UNION_ENTRIES,
      keyAt,
      indexAt,
      weights,
    },
    idempotency,
  );
  return { counter: name, members: value[0], sourcesUsed: value[1], sourceKeys: keyAt.length, aggregate, replayed };
}
