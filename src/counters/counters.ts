/**
 * Named sorted-set counters, optionally bucketed by calendar period. Each
 * function is one script, so one Redis round trip, whatever the batch size.
 */
import type { Ctx } from "../context.ts";
import { NotFoundError, ValidationError } from "../errors.ts";
import { asList, runRead, runWrite, type Idempotency, type ScriptArg } from "../redis/script.ts";
import { DAY, periodEnd, periodStart, type Period } from "../time.ts";
import { assertName, listPage, MAX_BATCH, MAX_INCREMENT, memberProblem, type PageOptions } from "../validation.ts";
import { counterKeys as K, type Aggregate } from "./keys.ts";
import { ALL, DELETE_COUNTER, DELETE_MEMBER, INCR, LIST, MEMBER, RANGE, TOP, UNION } from "./scripts.ts";
import { decompose, deletePlan, rollupsOf } from "./calendar.ts";
import {
  aggregateArg,
  BUCKET_TIME_PROBLEM,
  MAX_TTL_SECONDS,
  parseBounds,
  parseBucketTime,
  periodRange,
  sortByMember,
  type PeriodOptions,
  type PeriodRange,
} from "./select.ts";

/** Seconds a finished range's union stays cached (late writes invalidate it sooner). */
export const UNION_CACHE_SECONDS = 3600;
/**
 * Cache slots per counter: a finished range's union is cached in slot
 * hash(range) mod this, replacing the range the slot held. So a counter holds
 * at most this many cached unions, whatever ranges readers ask for.
 */
export const UNION_CACHE_SLOTS = 4;
/** Bucket times (`at`) may lie at most this far in the past... */
export const MAX_BUCKET_AGE_DAYS = 400;
/** ...and at most this far ahead of the server's clock. */
export const MAX_BUCKET_AHEAD_MS = 5 * 60_000;
/** Most members `sorted` reads in one call (it reads them all to order them). */
export const MAX_SORTED_MEMBERS = 10_000;
/** Most names the list endpoint returns per page (also its default page size). */
export const MAX_LISTED = 1000;
/** Most buckets a `min` or `max` read may union (a sum reads rollups; these cannot): 400 days of days. */
export const MAX_RAW_BUCKETS = 401;
/**
 * Most buckets one member delete may clear: every raw bucket in range must
 * lose the member (one ZREM each), so the work grows with the range; 60 days
 * of hours keeps the script near 15 ms. Longer ranges are split by the caller.
 */
export const MAX_DELETE_BUCKETS = 1440;
/** Most source keys (after expanding period sources into buckets) one rollup may union. */
export const MAX_UNION_KEYS = 1000;

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

function issue(path: string, message: string): ValidationError {
  return new ValidationError(`Invalid field '${path}': ${message}.`, [{ path, message }]);
}

function checkMember(member: string, path = "member"): void {
  const problem = memberProblem(member);
  if (problem) throw issue(path, problem);
}

function checkTtl(ttl: number | undefined, path: string): void {
  if (ttl !== undefined && !(Number.isInteger(ttl) && ttl >= 1 && ttl <= MAX_TTL_SECONDS)) throw issue(path, `must be whole seconds from 1 to ${MAX_TTL_SECONDS}`);
}

/**
 * Refuses a bucket time the counter could not usefully store: more than
 * MAX_BUCKET_AGE_DAYS old, older than the write's own ttl (the bucket would
 * hold data already past its retention), or more than 5 minutes ahead.
 */
function checkBucketAge(when: number, now: number, ttl: number | undefined, period: Period | undefined, path: string): void {
  if (when > now + MAX_BUCKET_AHEAD_MS) throw issue(path, "must not be more than 5 minutes in the future");
  if (when < now - MAX_BUCKET_AGE_DAYS * DAY) throw issue(path, `must not be more than ${MAX_BUCKET_AGE_DAYS} days in the past`);
  // A bucket lives as long as its ttl from the write, so what matters is whether its period ended
  // longer than the ttl ago (today's bucket takes a write dated this morning with a 1 h ttl).
  const end = period ? periodEnd(period, when) : when;
  if (ttl !== undefined && end < now - ttl * 1000) throw issue(path, `must not be older than the item's ttl (${ttl} s): that data would already have expired`);
}

/** FNV-1a of the range id: which cache slot a finished range uses. */
export function cacheSlot(rangeId: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < rangeId.length; i++) h = Math.imul(h ^ rangeId.charCodeAt(i), 0x01000193);
  return (h >>> 0) % UNION_CACHE_SLOTS;
}

/** Every cache key of a counter (its slots and the scratch key): what deleting it frees. */
function cacheKeys(prefix: string, name: string): string[] {
  return [...Array.from({ length: UNION_CACHE_SLOTS }, (_, i) => K.union(prefix, name, i)), K.scratch(prefix, name)];
}

/** KEYS and the first four ARGV of a read: the plain counter, or the union of its buckets in range. */
function source(ctx: Ctx, name: string, options: ReadOptions): { keys: string[]; args: ScriptArg[]; range?: RangeInfo } {
  assertName(name, "counter");
  const range = periodRange(options, ctx.now);
  if (!range) {
    if (options.aggregate !== undefined) throw issue("aggregate", "only allowed with period");
    return { keys: [K.plain(ctx.prefix, name)], args: [0, "SUM", 0, 0, ""] };
  }
  const aggregate = options.aggregate ?? "sum";
  const rangeId = `${range.period}:${range.from}:${range.to}:${aggregate}`;
  const union = K.union(ctx.prefix, name, cacheSlot(rangeId));
  // a sum reads calendar rollups in the middle; min and max need every bucket, so their ranges are capped
  if (aggregate !== "sum" && range.starts.length > MAX_RAW_BUCKETS) {
    throw issue("aggregate", `${aggregate} reads every bucket: at most ${MAX_RAW_BUCKETS} buckets (this range has ${range.starts.length}); use sum, a coarser period or a shorter range`);
  }
  const parts = aggregate === "sum" ? decompose(range.period, range.from, range.to) : range.starts.map((start) => ({ level: "bucket" as const, start, end: 0 }));
  const buckets = parts.map((p) => (p.level === "bucket" ? K.bucket(ctx.prefix, name, range.period, p.start) : K.rollup(ctx.prefix, name, range.period, p.level, p.start)));
  return {
    keys: [union, K.scratch(ctx.prefix, name), K.index(ctx.prefix, name), ...buckets],
    args: [buckets.length, aggregateArg(aggregate), range.finished ? 1 : 0, UNION_CACHE_SECONDS, rangeId],
    range: { period: range.period, from: range.from, to: range.to, aggregate, buckets: range.starts.length, finished: range.finished },
  };
}

function pairs(flat: string[]): { member: string; score: number }[] {
  const out: { member: string; score: number }[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push({ member: flat[i] ?? "", score: Number(flat[i + 1]) });
  return out;
}

const withRange = <T extends object>(body: T, range: RangeInfo | undefined) => (range ? { ...body, range } : body);

/** Adds `by` to each item's member (plain counter or its period bucket); returns each new score. */
export async function increment(ctx: Ctx, name: string, items: IncrItem[], idempotency?: Idempotency) {
  assertName(name, "counter");
  if (items.length < 1 || items.length > MAX_BATCH) throw issue("items", `must hold 1 to ${MAX_BATCH} items`);
  const buckets = new Map<string, { slot: number; ttl: number; parents: string[] }>();
  // rollup key -> its ttl; (rollup key, member) -> the batch's summed increment
  const rollups = new Map<string, { ttl: number }>();
  const rollupSums = new Map<string, Map<string, number>>();
  let plainTtl = 0;
  let late = false;
  const itemArgs: ScriptArg[] = [];
  items.forEach((item, i) => {
    const path = items.length > 1 ? `items.${i}` : "";
    const at = (field: string) => (path ? `${path}.${field}` : field);
    checkMember(item.member, at("member"));
    const by = item.by ?? 1;
    if (!Number.isFinite(by) || Math.abs(by) > MAX_INCREMENT) throw issue(at("by"), "must be a finite number within ±1e12");
    checkTtl(item.ttl, at("ttl"));
    if (item.period === undefined) {
      if (item.at !== undefined) throw issue(at("at"), "only allowed with period");
      if (item.ttl !== undefined) plainTtl = Math.max(plainTtl, item.ttl);
      itemArgs.push(0, item.member, by);
      return;
    }
    const when = item.at === undefined ? ctx.now : parseBucketTime(item.at);
    if (when === null) throw issue(at("at"), BUCKET_TIME_PROBLEM);
    checkBucketAge(when, ctx.now, item.ttl, item.period, at("at"));
    const key = K.bucket(ctx.prefix, name, item.period, periodStart(item.period, when));
    const period = item.period;
    const parents = rollupsOf(period).map((level) => K.rollup(ctx.prefix, name, period, level, periodStart(level, when)));
    let bucket = buckets.get(key);
    if (!bucket) buckets.set(key, (bucket = { slot: buckets.size + 1, ttl: 0, parents }));
    // expiries only grow, so the largest ttl of the key's items is what applies
    if (item.ttl !== undefined) bucket.ttl = Math.max(bucket.ttl, item.ttl);
    for (const parent of parents) {
      let rollup = rollups.get(parent);
      if (!rollup) rollups.set(parent, (rollup = { ttl: 0 }));
      // the bucket's ttl plus the slack its extension may add: a rollup never expires before its buckets
      if (item.ttl !== undefined) rollup.ttl = Math.max(rollup.ttl, item.ttl + Math.min(Math.ceil(item.ttl / 10), 3600));
      let sums = rollupSums.get(parent);
      if (!sums) rollupSums.set(parent, (sums = new Map()));
      sums.set(item.member, (sums.get(item.member) ?? 0) + by);
    }
    if (periodEnd(item.period, when) <= ctx.now) late = true;
    itemArgs.push(bucket.slot, item.member, by);
  });
  const slotOf = new Map<string, number>([...buckets.keys()].map((k, i) => [k, i + 1]));
  [...rollups.keys()].forEach((k, i) => slotOf.set(k, buckets.size + i + 1));
  const keys = [K.plain(ctx.prefix, name), K.index(ctx.prefix, name), K.names(ctx.prefix), K.expiry(ctx.prefix), K.seq(ctx.prefix), ...buckets.keys(), ...rollups.keys()];
  const perKey: ScriptArg[] = [];
  for (const b of buckets.values()) perKey.push(b.ttl, slotOf.get(b.parents[0] ?? "") ?? 0, slotOf.get(b.parents[1] ?? "") ?? 0);
  for (const r of rollups.values()) perKey.push(r.ttl, 0, 0);
  const rollupArgs: ScriptArg[] = [];
  for (const [key, sums] of rollupSums) for (const [member, by] of sums) rollupArgs.push(slotOf.get(key) ?? 0, member, by);
  const args: ScriptArg[] = [name, ctx.now, late ? 1 : 0, plainTtl, items.length, ...perKey, ...itemArgs, ...rollupArgs];
  const { value, replayed } = await runWrite<string[]>(ctx.redis, INCR, keys, args, idempotency);
  const scores = asList(value);
  return { value: { results: items.map((item, i) => ({ member: item.member, score: Number(scores[i]) })) }, replayed };
}

/** The `n` highest (`top`) or lowest (`bottom`) members, rank 1 first. */
export async function ranked(ctx: Ctx, name: string, side: "top" | "bottom", n: number, options: ReadOptions = {}) {
  const src = source(ctx, name, options);
  const flat = asList(await runRead<string[]>(ctx.redis, TOP, src.keys, [...src.args, n, side === "top" ? 1 : 0]));
  return withRange({ counter: name, items: pairs(flat).map((p, i) => ({ rank: i + 1, ...p })) }, src.range);
}

/** One member's score and 1-based ranks from the top and from the bottom; NotFoundError when absent. */
export async function memberOf(ctx: Ctx, name: string, member: string, options: ReadOptions = {}) {
  checkMember(member);
  const src = source(ctx, name, options);
  const found = asList(await runRead<[string, number, number] | []>(ctx.redis, MEMBER, src.keys, [...src.args, member]));
  if (found.length < 3) throw new NotFoundError(`Counter '${name}' has no member '${member}'${src.range ? " in that range" : ""}.`);
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
  /** `asc`: lowest score first (the post's ZRANGEBYSCORE). @default "asc" */
  order?: "asc" | "desc" | undefined;
}

/** Members whose score lies within [min, max] (bounds may be exclusive or infinite). */
export async function scoreRange(ctx: Ctx, name: string, options: ScoreRangeOptions = {}) {
  const { min, max } = parseBounds(options.min ?? "-inf", options.max ?? "+inf");
  const limit = options.limit ?? 100;
  const src = source(ctx, name, options);
  const [count, flat] = await runRead<[number, string[]]>(ctx.redis, RANGE, src.keys, [...src.args, min.redis, max.redis, limit, options.order === "desc" ? 1 : 0]);
  return withRange({ items: pairs(asList(flat)), count }, src.range);
}

export interface SortedOptions extends ReadOptions {
  /** `member`: by the member's own value (numeric when all are numbers); `score`: by score. @default "member" */
  by?: "member" | "score" | undefined;
  /** @default "asc" */
  order?: "asc" | "desc" | undefined;
}

/** Every member with its score, ordered by its own value (what the post wanted SORT + MULTI for). */
export async function sorted(ctx: Ctx, name: string, options: SortedOptions = {}) {
  const src = source(ctx, name, options);
  const [card, flat] = await runRead<[number, string[]]>(ctx.redis, ALL, src.keys, [...src.args, MAX_SORTED_MEMBERS]);
  if (card > MAX_SORTED_MEMBERS) {
    throw new ValidationError(
      `Counter '${name}' has ${card} members; sorted reads return at most ${MAX_SORTED_MEMBERS}. Use top, bottom or range instead.`,
      undefined,
      "too_many_members",
    );
  }
  const order = options.order ?? "asc";
  const items = pairs(asList(flat));
  if ((options.by ?? "member") === "score") {
    // ZRANGE gives ascending score, equal scores in byte order
    return withRange({ by: "score", order, numeric: false, count: card, items: order === "asc" ? items : items.reverse() }, src.range);
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
export async function listCounters(ctx: Ctx, options: ListOptions = {}) {
  const { offset, limit } = listPage(options, MAX_LISTED);
  const flat = asList(await runRead<string[]>(ctx.redis, LIST, [K.names(ctx.prefix), K.expiry(ctx.prefix)], [ctx.now, offset, limit]));
  const items = pairs(flat).map((p) => ({ counter: p.member, lastWriteAt: p.score }));
  const more = items.length > limit;
  const page = items.slice(0, limit);
  return { counters: page.map((i) => i.counter), items: page, nextOffset: more ? offset + limit : null };
}

/** Removes a member from the plain counter, or with `period` from each bucket in range. Returns how many keys held it. */
export async function deleteMember(ctx: Ctx, name: string, member: string, options: PeriodOptions = {}, idempotency?: Idempotency) {
  assertName(name, "counter");
  checkMember(member);
  const range = periodRange(options, ctx.now);
  if (range && range.starts.length > MAX_DELETE_BUCKETS) {
    throw issue("from", `a member delete clears at most ${MAX_DELETE_BUCKETS} buckets (60 days of hours) per call, this range has ${range.starts.length}; split it`);
  }
  const keys = [K.plain(ctx.prefix, name), K.index(ctx.prefix, name), K.names(ctx.prefix), K.expiry(ctx.prefix), K.seq(ctx.prefix)];
  const parts: ScriptArg[] = [];
  if (range) {
    const plan = deletePlan(range.period, range.from, periodEnd(range.period, range.to));
    for (const step of plan) {
      keys.push(step.level === "bucket" ? K.bucket(ctx.prefix, name, range.period, step.start) : K.rollup(ctx.prefix, name, range.period, step.level, step.start));
      parts.push(step.kind, step.parent);
    }
  }
  return runWrite<number>(ctx.redis, DELETE_MEMBER, keys, [name, ctx.now, member, range ? 0 : 1, ...parts], idempotency);
}

/** Deletes the counter: its plain key, every bucket (invisible at once, freed by the sweep job) and its registry entry. */
export async function deleteCounter(ctx: Ctx, name: string, idempotency?: Idempotency): Promise<boolean> {
  assertName(name, "counter");
  const keys = [K.plain(ctx.prefix, name), K.index(ctx.prefix, name), K.names(ctx.prefix), K.expiry(ctx.prefix), K.purge(ctx.prefix), ...cacheKeys(ctx.prefix, name)];
  const { value } = await runWrite<number>(ctx.redis, DELETE_COUNTER, keys, [name, ctx.now], idempotency);
  return value === 1;
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

/** Stores the union of `sources` under `name` (replacing what it held): the post's ZUNIONSTORE into `week49`. */
export async function storeUnion(ctx: Ctx, name: string, options: UnionOptions, idempotency?: Idempotency) {
  assertName(name, "counter");
  const { sources, weights } = options;
  if (sources.length < 1 || sources.length > 100) throw issue("sources", "must hold 1 to 100 sources");
  if (weights !== undefined && weights.length !== sources.length) throw issue("weights", "must hold one weight per source");
  weights?.forEach((w, i) => {
    if (!Number.isFinite(w) || Math.abs(w) > MAX_INCREMENT) throw issue(`weights.${i}`, "must be a finite number within ±1e12");
  });
  checkTtl(options.ttl, "ttl");
  const keys = [K.plain(ctx.prefix, name), K.index(ctx.prefix, name), K.names(ctx.prefix), K.expiry(ctx.prefix)];
  const slots = new Map<string, number>(keys.map((k, i) => [k, i + 1]));
  const slotOf = (key: string) => {
    let slot = slots.get(key);
    if (slot === undefined) {
      keys.push(key);
      slots.set(key, (slot = keys.length));
    }
    return slot;
  };
  const triples: ScriptArg[] = [];
  let expanded = 0;
  sources.forEach((src, i) => {
    const weight = weights?.[i] ?? 1;
    if (typeof src === "string") {
      assertName(src, `sources.${i}`);
      triples.push(slotOf(K.plain(ctx.prefix, src)), 0, weight);
      expanded += 1;
      return;
    }
    assertName(src.counter, `sources.${i}.counter`);
    const range = periodRange(src, ctx.now) as PeriodRange;
    const index = slotOf(K.index(ctx.prefix, src.counter));
    for (const start of range.starts) triples.push(slotOf(K.bucket(ctx.prefix, src.counter, range.period, start)), index, weight);
    expanded += range.starts.length;
  });
  if (expanded > MAX_UNION_KEYS) throw issue("sources", `expand to ${expanded} keys; at most ${MAX_UNION_KEYS} per rollup`);
  const aggregate = options.aggregate ?? "sum";
  const { value, replayed } = await runWrite<[number, number]>(ctx.redis, UNION, keys, [name, ctx.now, aggregateArg(aggregate), options.ttl ?? 0, ...triples], idempotency);
  return { value: { counter: name, members: value[0], sourcesUsed: value[1], sourceKeys: expanded, aggregate }, replayed };
}
