/**
 * Named sorted-set counters, optionally bucketed by calendar period. Each
 * function is one script, so one Redis round trip, whatever the batch size.
 */
import type { Ctx } from "../context.ts";
import { NotFoundError } from "../errors.ts";
import { asList, type Idempotency, type Written } from "../redis/script.ts";
import { periodEnd, periodStart, type Period } from "../time.ts";
import { assertName, listPage, type PageOptions } from "../validation.ts";
import { decompose, deletePlan, rollupsOf } from "./calendar.ts";
import { counterKeys as K, type Aggregate } from "./keys.ts";
import { listScript, memberScript, rangeScript, sortedScript, topScript } from "./read-scripts.ts";
import { deleteMemberScript, deleteScript, incrScript, unionScript } from "./scripts.ts";
import {
  aggregateArg,
  parseBounds,
  periodRange,
  sortByMember,
  type PeriodOptions,
  type PeriodRange,
} from "./select.ts";
import {
  checkAggregate,
  checkBatch,
  checkDeleteRange,
  checkIncrItem,
  checkMember,
  checkUnion,
  checkUnionKeys,
} from "./validate.ts";

/** Seconds a finished range's union stays cached (late writes invalidate it sooner). */
export const UNION_CACHE_SECONDS = 3600;
/**
 * Cache slots per counter: a finished range's union is cached in slot
 * hash(range) mod this, replacing the range the slot held. So a counter holds
 * at most this many cached unions, whatever ranges readers ask for.
 */
export const UNION_CACHE_SLOTS = 4;
/** Most members `sorted` reads in one call (it reads them all to order them). */
export const MAX_SORTED_MEMBERS = 10_000;
/** Most names the list endpoint returns per page (also its default page size). */
export const MAX_LISTED = 1000;

export interface IncrItem {
  member: string;
  /** May be negative (a decrement). @default 1 */
  by?: number | undefined;
  /** Store in the bucket of this UTC period instead of the plain counter. @default undefined (plain) */
  period?: Period | undefined;
  /** Which period the increment belongs to (epoch ms or ISO-8601; only with `period`). @default ctx.now */
  at?: number | string | undefined;
  /**
   * Seconds the key written lives: a key the write creates gets it; an existing key's expiry is only
   * ever extended (to at least this many seconds from now), never shortened, and an existing key
   * without expiry keeps none. In a batch, a key gets the largest ttl its items name.
   * @default undefined: an existing expiry stays, a new key never expires
   */
  ttl?: number | undefined;
}

export interface IncrResult {
  /** Each item's member and its score after the item, in order. */
  results: { member: string; score: number }[];
}

export interface ReadOptions extends PeriodOptions {
  /** How bucket scores combine across a range (a member missing from a bucket is skipped, not 0). @default "sum" */
  aggregate?: Aggregate | undefined;
}

export interface RangeInfo {
  period: Period;
  from: number;
  to: number;
  aggregate: Aggregate;
  buckets: number;
  /** The union came from (or went into) the cache of a finished range. */
  finished: boolean;
}

/** FNV-1a of the range id: which cache slot a finished range uses. */
function cacheSlot(rangeId: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < rangeId.length; i++) h = Math.imul(h ^ rangeId.charCodeAt(i), 0x01000193);
  return (h >>> 0) % UNION_CACHE_SLOTS;
}

/** Every cache key of a counter (its slots and the scratch key): what deleting it frees. */
function cacheKeys(prefix: string, name: string): string[] {
  return [...Array.from({ length: UNION_CACHE_SLOTS }, (_, i) => K.union(prefix, name, i)), K.scratch(prefix, name)];
}

/** What a read resolves (read-scripts.ts, `resolve`): the plain counter, or the union of its buckets in range. */
function source(ctx: Ctx, name: string, options: ReadOptions) {
  assertName(name, "counter");
  const range = periodRange(options, ctx.now);
  checkAggregate(options.aggregate, range);
  if (!range) {
    // only the counter itself is read: it stands in for the scratch and index keys too, so the script declares no other key
    const plain = K.plain(ctx.prefix, name);
    return {
      keys: { target: plain, scratch: plain, index: plain, buckets: [] },
      args: { aggregate: "SUM", finished: 0, cacheSeconds: 0, rangeId: "" },
    };
  }
  const aggregate = options.aggregate ?? "sum";
  const rangeId = `${range.period}:${range.from}:${range.to}:${aggregate}`;
  // a sum reads calendar rollups in the middle; min and max need every bucket
  const parts =
    aggregate === "sum"
      ? decompose(range.period, range.from, range.to)
      : range.starts.map((start) => ({ level: "bucket" as const, start, end: 0 }));
  const buckets = parts.map((p) => K.part(ctx.prefix, name, range.period, p.level, p.start));
  const info: RangeInfo = {
    period: range.period,
    from: range.from,
    to: range.to,
    aggregate,
    buckets: range.starts.length,
    finished: range.finished,
  };
  return {
    keys: {
      target: K.union(ctx.prefix, name, cacheSlot(rangeId)),
      scratch: K.scratch(ctx.prefix, name),
      index: K.index(ctx.prefix, name),
      buckets,
    },
    args: {
      aggregate: aggregateArg(aggregate),
      finished: range.finished ? 1 : 0,
      cacheSeconds: UNION_CACHE_SECONDS,
      rangeId,
    },
    range: info,
  };
}

function pairs(flat: string[]): { member: string; score: number }[] {
  const out: { member: string; score: number }[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push({ member: flat[i] ?? "", score: Number(flat[i + 1]) });
  return out;
}

const withRange = <T extends object>(body: T, range: RangeInfo | undefined) => (range ? { ...body, range } : body);

/** Adds `by` to each item's member (plain counter or its period bucket); returns each new score. */
export async function increment(
  ctx: Ctx,
  name: string,
  items: IncrItem[],
  idempotency?: Idempotency,
): Promise<Written<IncrResult>> {
  assertName(name, "counter");
  checkBatch(items);
  const buckets = new Map<string, { slot: number; ttl: number; parents: string[] }>();
  // rollup key -> its ttl; (rollup key, member) -> the batch's summed increment
  const rollups = new Map<string, { ttl: number }>();
  const rollupSums = new Map<string, Map<string, number>>();
  let plainTtl = 0;
  let late = false;
  const slots: number[] = [];
  const bys: number[] = [];
  items.forEach((item, i) => {
    const when = checkIncrItem(item, items.length > 1 ? `items.${i}` : "", ctx.now);
    const by = item.by ?? 1;
    if (item.period === undefined || when === undefined) {
      if (item.ttl !== undefined) plainTtl = Math.max(plainTtl, item.ttl);
      slots.push(0);
      bys.push(by);
      return;
    }
    const period = item.period;
    const key = K.bucket(ctx.prefix, name, period, periodStart(period, when));
    const parents = rollupsOf(period).map((level) =>
      K.rollup(ctx.prefix, name, period, level, periodStart(level, when)),
    );
    let bucket = buckets.get(key);
    if (!bucket) buckets.set(key, (bucket = { slot: buckets.size + 1, ttl: 0, parents }));
    // expiries only grow, so the largest ttl of the key's items is what applies
    if (item.ttl !== undefined) bucket.ttl = Math.max(bucket.ttl, item.ttl);
    for (const parent of parents) {
      let rollup = rollups.get(parent);
      if (!rollup) rollups.set(parent, (rollup = { ttl: 0 }));
      // the bucket's ttl plus the slack its extension may add: a rollup never expires before its buckets
      if (item.ttl !== undefined)
        rollup.ttl = Math.max(rollup.ttl, item.ttl + Math.min(Math.ceil(item.ttl / 10), 3600));
      let sums = rollupSums.get(parent);
      if (!sums) rollupSums.set(parent, (sums = new Map()));
      sums.set(item.member, (sums.get(item.member) ?? 0) + by);
    }
    if (periodEnd(period, when) <= ctx.now) late = true;
    slots.push(bucket.slot);
    bys.push(by);
  });
  // rollups follow the buckets in the script's `buckets` list
  const rollupSlot = new Map<string, number>([...rollups.keys()].map((k, i) => [k, buckets.size + i + 1]));
  const parentSlot = (key: string | undefined) => (key === undefined ? 0 : (rollupSlot.get(key) ?? 0));
  const entries: { ttl: number; parents?: string[] }[] = [...buckets.values(), ...rollups.values()];
  const rollup = { slots: [] as number[], members: [] as string[], bys: [] as number[] };
  for (const [key, sums] of rollupSums) {
    for (const [member, by] of sums) {
      rollup.slots.push(parentSlot(key));
      rollup.members.push(member);
      rollup.bys.push(by);
    }
  }
  const { value, replayed } = await incrScript.run<string[]>(
    ctx.redis,
    {
      plain: K.plain(ctx.prefix, name),
      index: K.index(ctx.prefix, name),
      names: K.names(ctx.prefix),
      expiry: K.expiry(ctx.prefix),
      seq: K.seq(ctx.prefix),
      buckets: [...buckets.keys(), ...rollups.keys()],
    },
    {
      name,
      now: ctx.now,
      late: late ? 1 : 0,
      plainTtl,
      ttls: entries.map((e) => e.ttl),
      dayRollups: entries.map((e) => parentSlot(e.parents?.[0])),
      monthRollups: entries.map((e) => parentSlot(e.parents?.[1])),
      slots,
      members: items.map((item) => item.member),
      bys,
      rollupSlots: rollup.slots,
      rollupMembers: rollup.members,
      rollupBys: rollup.bys,
    },
    idempotency,
  );
  const scores = asList(value);
  return { results: items.map((item, i) => ({ member: item.member, score: Number(scores[i]) })), replayed };
}

/** The `n` highest (`top`) or lowest (`bottom`) members, rank 1 first. */
export async function ranked(ctx: Ctx, name: string, side: "top" | "bottom", n: number, options: ReadOptions = {}) {
  const src = source(ctx, name, options);
  const flat = asList(
    await topScript.run<string[]>(ctx.redis, src.keys, { ...src.args, n, rev: side === "top" ? 1 : 0 }),
  );
  return withRange({ counter: name, items: pairs(flat).map((p, i) => ({ rank: i + 1, ...p })) }, src.range);
}

/** One member's score and 1-based ranks from the top and from the bottom; NotFoundError when absent. */
export async function memberOf(ctx: Ctx, name: string, member: string, options: ReadOptions = {}) {
  checkMember(member);
  const src = source(ctx, name, options);
  const found = asList(
    await memberScript.run<[string, number, number] | []>(ctx.redis, src.keys, { ...src.args, member }),
  );
  if (found.length < 3)
    throw new NotFoundError(`Counter '${name}' has no member '${member}'${src.range ? " in that range" : ""}.`);
  const [score, fromTop, fromBottom] = found as [string, number, number];
  return withRange({ member, score: Number(score), rank: fromTop + 1, rankFromBottom: fromBottom + 1 }, src.range);
}

export interface ScoreRangeOptions extends ReadOptions {
  /** Lower bound: a number, `(` + number (exclusive), `-inf`. @default "-inf" */
  min?: string | undefined;
  /** Upper bound: a number, `(` + number (exclusive), `+inf`. @default "+inf" */
  max?: string | undefined;
  /** Most items returned; `count` is the full number in range. @default 100 */
  limit?: number | undefined;
  /** `asc`: lowest score first (source post 002's ZRANGEBYSCORE, docs/background.md). @default "asc" */
  order?: "asc" | "desc" | undefined;
}

/** Members whose score lies within [min, max] (bounds may be exclusive or infinite). */
export async function scoreRange(ctx: Ctx, name: string, options: ScoreRangeOptions = {}) {
  const { min, max } = parseBounds(options.min ?? "-inf", options.max ?? "+inf");
  const limit = options.limit ?? 100;
  const src = source(ctx, name, options);
  const [count, flat] = await rangeScript.run<[number, string[]]>(ctx.redis, src.keys, {
    ...src.args,
    min: min.redis,
    max: max.redis,
    limit,
    rev: options.order === "desc" ? 1 : 0,
  });
  return withRange({ items: pairs(asList(flat)), count }, src.range);
}

export interface SortedOptions extends ReadOptions {
  /** `member`: by the member's own value (numeric when all are numbers); `score`: by score. @default "member" */
  by?: "member" | "score" | undefined;
  /** @default "asc" */
  order?: "asc" | "desc" | undefined;
}

/** Every member with its score, ordered by its own value (what source post 001 wanted SORT + MULTI for, docs/background.md). */
export async function sorted(ctx: Ctx, name: string, options: SortedOptions = {}) {
  const src = source(ctx, name, options);
  // more than MAX_SORTED_MEMBERS: the script refuses (400 too_many_members)
  const [card, flat] = await sortedScript.run<[number, string[]]>(ctx.redis, src.keys, {
    ...src.args,
    maxMembers: MAX_SORTED_MEMBERS,
    counter: name,
  });
  const order = options.order ?? "asc";
  const items = pairs(asList(flat));
  if ((options.by ?? "member") === "score") {
    // ZRANGE gives ascending score, equal scores in byte order
    return withRange(
      { by: "score", order, numeric: false, count: card, items: order === "asc" ? items : items.reverse() },
      src.range,
    );
  }
  const byMember = sortByMember(items, order);
  return withRange({ by: "member", order, numeric: byMember.numeric, count: card, items: byMember.items }, src.range);
}

export type ListOptions = PageOptions;

/**
 * Names of counters that exist, most recently written first (expired ones
 * dropped on the way), a page at a time: new names cannot push an active
 * counter out of view, and every name is reachable by paging.
 */
export async function list(ctx: Ctx, options: ListOptions = {}) {
  const { offset, limit } = listPage(options, MAX_LISTED);
  const flat = asList(
    await listScript.run<string[]>(
      ctx.redis,
      { names: K.names(ctx.prefix), expiry: K.expiry(ctx.prefix) },
      { now: ctx.now, offset, limit },
    ),
  );
  const items = pairs(flat).map((p) => ({ counter: p.member, lastWriteAt: p.score }));
  const more = items.length > limit;
  const page = items.slice(0, limit);
  return { counters: page.map((i) => i.counter), items: page, nextOffset: more ? offset + limit : null };
}

/** Removes a member from the plain counter, or with `period` from each bucket in range. `removed`: how many keys held it. */
export async function deleteMember(
  ctx: Ctx,
  name: string,
  member: string,
  options: PeriodOptions = {},
  idempotency?: Idempotency,
): Promise<Written<{ removed: number }>> {
  assertName(name, "counter");
  checkMember(member);
  const range = periodRange(options, ctx.now);
  checkDeleteRange(range);
  const parts: string[] = [];
  const kinds: string[] = [];
  const parents: number[] = [];
  if (range) {
    for (const step of deletePlan(range.period, range.from, periodEnd(range.period, range.to))) {
      parts.push(K.part(ctx.prefix, name, range.period, step.level, step.start));
      kinds.push(step.kind);
      parents.push(step.parent);
    }
  }
  const { value, replayed } = await deleteMemberScript.run<number>(
    ctx.redis,
    {
      plain: K.plain(ctx.prefix, name),
      index: K.index(ctx.prefix, name),
      names: K.names(ctx.prefix),
      expiry: K.expiry(ctx.prefix),
      seq: K.seq(ctx.prefix),
      parts,
    },
    { name, member, fromPlain: range ? 0 : 1, kinds, parents },
    idempotency,
  );
  return { removed: value, replayed };
}

/** Deletes the counter: its plain key, every bucket (invisible at once, freed by the sweep job) and its registry entry. */
export async function deleteCounter(
  ctx: Ctx,
  name: string,
  idempotency?: Idempotency,
): Promise<Written<{ existed: boolean }>> {
  assertName(name, "counter");
  const { value, replayed } = await deleteScript.run<number>(
    ctx.redis,
    {
      plain: K.plain(ctx.prefix, name),
      index: K.index(ctx.prefix, name),
      names: K.names(ctx.prefix),
      expiry: K.expiry(ctx.prefix),
      purge: K.purge(ctx.prefix),
      caches: cacheKeys(ctx.prefix, name),
    },
    { name, now: ctx.now },
    idempotency,
  );
  return { existed: value === 1, replayed };
}

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
    { plain, index, names: K.names(ctx.prefix), expiry: K.expiry(ctx.prefix), sources: sourceKeys },
    { name, now: ctx.now, aggregate: aggregateArg(aggregate), ttl: options.ttl ?? 0, keyAt, indexAt, weights },
    idempotency,
  );
  return { counter: name, members: value[0], sourcesUsed: value[1], sourceKeys: keyAt.length, aggregate, replayed };
}
