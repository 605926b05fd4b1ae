/**
 * Counter reads: top/bottom N, one member, score ranges, the whole sorted counter and the list of
 * counters. Each is one script; a finished period range is answered from a cached union (one of
 * UNION_CACHE_SLOTS per counter), the range in progress from its buckets.
 */
import type { Ctx } from "../context.ts";
import { NotFoundError } from "../errors.ts";
import { activityCursor, nextActivityCursor } from "../redis/pages.ts";
import { asList } from "../redis/script.ts";
import { CLOCK_SKEW_MS, periodEnd, periodStart, type Period } from "../time.ts";
import { assertName, invalid, listPage, type PageOptions } from "../validation.ts";
import { decompose, edgePlan, type Edge, type Part } from "./calendar.ts";
import { counterKeys as K, type Aggregate } from "./keys.ts";
import { listScript, memberScript, rangeScript, sortedScript, topScript } from "./read-scripts.ts";
import { aggregateArg, parseBounds, periodRange, sortByMember, type PeriodOptions } from "./select.ts";
import { MAX_LISTED, MAX_SORTED_MEMBERS, MAX_UNION_ENTRIES, MAX_UNION_MEMBERS, UNION_CACHE_SLOTS } from "./limits.ts";
import { checkAggregate, checkMember } from "./validate.ts";

/** Seconds a finished range's union stays cached (late writes invalidate it sooner). */
export const UNION_CACHE_SECONDS = 3600;

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
export function cacheSlot(rangeId: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < rangeId.length; i++) h = Math.imul(h ^ rangeId.charCodeAt(i), 0x01000193);
  return (h >>> 0) % UNION_CACHE_SLOTS;
}

// A write counts as late (and invalidates cached unions) only when its own clock says its period
// has ended, so for CLOCK_SKEW_MS (src/time.ts) after a period ends a write from a Worker whose
// clock lags may still land in it unnoticed: nothing that holds that period is cached meanwhile.

/**
 * What a period read may cache (read-scripts.ts, `resolve`): the whole union of a range that has
 * ended (`all`), all but the last key of one ending in the current period (`head`: only that key
 * changes without a late write), or nothing (`none`: the range reaches past the current period,
 * where a write may land in more than its last key, or a period ended less than CLOCK_SKEW_MS ago).
 */
function cacheMode(period: Period, to: number, now: number): "all" | "head" | "none" {
  if (periodEnd(period, to) + CLOCK_SKEW_MS <= now) return "all";
  const current = periodStart(period, now);
  if (to === current && now - current >= CLOCK_SKEW_MS) return "head";
  return "none";
}

/**
 * A week read's size records (index fields `n:<key>`, docs/counters.md "Week size records"): how
 * many of its keys, from the first, have ended more than CLOCK_SKEW_MS ago by this clock, those
 * whose ZCARD the read may record (a write into a recorded week pays to raise the record, so weeks
 * still written steadily get none); -1 for other periods, which keep none.
 */
function sealedWeeks(period: Period, parts: { start: number }[], now: number): number {
  if (period !== "week") return -1;
  return parts.filter((p) => periodEnd("week", p.start) + CLOCK_SKEW_MS <= now).length;
}

/**
 * What a read resolves (read-scripts.ts, `resolve`): the plain counter, or the union of its buckets
 * in range. Exported for tests that run a read script with other bounds.
 */
export function source(ctx: Ctx, name: string, options: ReadOptions) {
  assertName(name, "counter");
  const range = periodRange(options, ctx.now);
  checkAggregate(options.aggregate, range);
  if (!range) {
    // only the counter itself is read: it stands in for the scratch and index keys too, so the script declares no other key
    const plain = K.plain(ctx.prefix, name);
    return {
      keys: { target: plain, scratch: plain, index: plain, buckets: [], months: [], edgeKeys: [] as string[] },
      args: {
        now: ctx.now,
        edges: "",
        aggregate: "SUM",
        cache: "none",
        cacheSeconds: 0,
        rangeId: "",
        maxEntries: MAX_UNION_ENTRIES,
        maxUnionMembers: MAX_UNION_MEMBERS,
        sealed: -1,
        monthOf: [],
      },
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
  // hour and day counters keep month rollups, which bound how many entries their union walks
  const months: number[] = [];
  const monthOf: number[] = [];
  if (range.period === "hour" || range.period === "day") {
    for (const p of parts) {
      const month = periodStart("month", p.start);
      if (months.at(-1) !== month) months.push(month);
      monthOf.push(months.length);
    }
  }
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
      months: months.map((m) => K.part(ctx.prefix, name, range.period, "month", m)),
      // no edge plan: memberSource adds it
      edgeKeys: [] as string[],
    },
    args: {
      now: ctx.now,
      edges: "",
      aggregate: aggregateArg(aggregate),
      cache: cacheMode(range.period, range.to, ctx.now),
      cacheSeconds: UNION_CACHE_SECONDS,
      rangeId,
      maxEntries: MAX_UNION_ENTRIES,
      maxUnionMembers: MAX_UNION_MEMBERS,
      sealed: sealedWeeks(range.period, parts, ctx.now),
      monthOf,
    },
    range: info,
  };
}

/**
 * What a member read resolves: `source`, and for a sum over an hour or day counter the edge plan
 * its script answers from past the union bound (edges.ts, `edgeSum`): each day or month the
 * range covers in part as its parts in range or its rollup minus its parts outside. Only member
 * reads build it (its keys cost the Worker ~0.1 ms over 400 days of hours). Exported for tests.
 */
export function memberSource(ctx: Ctx, name: string, options: ReadOptions) {
  const src = source(ctx, name, options);
  const range = src.range;
  if (!range || range.aggregate !== "sum" || (range.period !== "hour" && range.period !== "day")) return src;
  const period = range.period;
  const plan = planArgs(edgePlan(period, range.from, range.to), (p) =>
    K.part(ctx.prefix, name, period, p.level, p.start),
  );
  return { ...src, keys: { ...src.keys, edgeKeys: plan.keys }, args: { ...src.args, edges: plan.plan } };
}

/**
 * An edge plan as the member script takes it: its keys, each once, and the plan as JSON naming
 * them by 1-based position: `{"w":[whole keys],"e":[edges]}`, an edge `{"r":rollup,"i":[inside],
 * "o":[outside],"e":[edges]}`, a day of hours also `"a":{"i":[hours inside],"o":[hours outside]}`
 * (its hours, for a read that cannot use its quarters).
 */
function planArgs(plan: { whole: Part[]; edges: Edge[] }, keyOf: (p: Part) => string) {
  const keys: string[] = [];
  const at = new Map<string, number>();
  const pos = (p: Part) => {
    const key = keyOf(p);
    let i = at.get(key);
    if (i === undefined) {
      keys.push(key);
      at.set(key, (i = keys.length));
    }
    return i;
  };
  type Wire = { r: number; i: number[]; o: number[]; e: Wire[]; a?: { i: number[]; o: number[] } };
  const edge = (e: Edge): Wire => ({
    r: pos(e.rollup),
    i: e.inside.map(pos),
    o: e.outside.map(pos),
    e: e.edges.map(edge),
    ...(e.flat ? { a: { i: e.flat.inside.map(pos), o: e.flat.outside.map(pos) } } : {}),
  });
  const wire = { w: plan.whole.map(pos), e: plan.edges.map(edge) };
  return { keys, plan: JSON.stringify(wire) };
}

function pairs(flat: string[]): { member: string; score: number }[] {
  const out: { member: string; score: number }[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push({ member: flat[i] ?? "", score: Number(flat[i + 1]) });
  return out;
}

// declared `T & { range?: RangeInfo }` (as the client's WithRange<T>): inferred, `T | (T & { range })`
// reduced to `T` and library users could not read `.range` (review 22)
const withRange = <T extends object>(body: T, range: RangeInfo | undefined): T & { range?: RangeInfo } =>
  range ? { ...body, range } : body;

/** Most members a top, bottom or score range answers (GET …/top's `n`, …/range's `limit`). */
const MAX_RANKED = 1000;

/** The `n` highest (`top`) or lowest (`bottom`) members, rank 1 first. */
export async function ranked(ctx: Ctx, name: string, side: "top" | "bottom", n: number, options: ReadOptions = {}) {
  // as GET …/top refuses it: n went to the script unchecked (0 answered [], a negative or huge n ran as sent)
  if (!Number.isInteger(n) || n < 1 || n > MAX_RANKED)
    invalid([{ path: "n", message: `must be an integer from 1 to ${MAX_RANKED}` }]);
  const src = source(ctx, name, options);
  const flat = asList(
    await topScript.run<string[]>(ctx.redis, src.keys, { ...src.args, n, rev: side === "top" ? 1 : 0 }),
  );
  return withRange({ counter: name, items: pairs(flat).map((p, i) => ({ rank: i + 1, ...p })) }, src.range);
}

/**
 * One member's score and 1-based ranks from the top and from the bottom; NotFoundError when absent.
 * Over a range whose keys hold more than MAX_UNION_ENTRIES the score is exact but the ranks (which
 * need the union) are null.
 */
export async function memberOf(ctx: Ctx, name: string, member: string, options: ReadOptions = {}) {
  checkMember(member);
  const src = memberSource(ctx, name, options);
  const found = asList(
    await memberScript.run<[string, number | false, number | false] | []>(ctx.redis, src.keys, {
      ...src.args,
      member,
    }),
  );
  if (found.length < 3)
    throw new NotFoundError(`Counter '${name}' has no member '${member}'${src.range ? " in that range" : ""}.`);
  const [score, fromTop, fromBottom] = found as [string, number | false, number | false];
  const rank = (r: number | false) => (r === false ? null : r + 1);
  return withRange({ member, score: Number(score), rank: rank(fromTop), rankFromBottom: rank(fromBottom) }, src.range);
}

export interface ScoreRangeOptions extends ReadOptions {
  /** Lower bound: a number, `(` + number (exclusive), `-inf` (a number may be given as one). @default "-inf" */
  min?: string | number | undefined;
  /** Upper bound: a number, `(` + number (exclusive), `+inf` (a number may be given as one). @default "+inf" */
  max?: string | number | undefined;
  /** Most items returned; `count` is the full number in range. @default 100 */
  limit?: number | undefined;
  /** `asc`: lowest score first (source post 002's ZRANGEBYSCORE, docs/background.md). @default "asc" */
  order?: "asc" | "desc" | undefined;
}

/** Members whose score lies within [min, max] (bounds may be exclusive or infinite). */
export async function scoreRange(ctx: Ctx, name: string, options: ScoreRangeOptions = {}) {
  const { min, max } = parseBounds(options.min ?? "-inf", options.max ?? "+inf");
  const limit = options.limit ?? 100;
  // as GET …/range refuses it: a limit of 0 or -1 went to the script as sent (and answered every member)
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_RANKED)
    invalid([{ path: "limit", message: `must be an integer from 1 to ${MAX_RANKED}` }]);
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

export interface ListOptions extends PageOptions {
  /** `nextCursor` of the previous page (then `offset` must be 0). @default undefined (first page) */
  cursor?: string | undefined;
}

/**
 * Names of counters that exist, most recently written first (expired ones
 * dropped on the way), a page at a time: new names cannot push an active
 * counter out of view. A pass by cursor (the first page, then `nextCursor` until
 * null) lists every name listed throughout at least once, as the boards' and
 * rooms' lists do (src/redis/pages.ts): names written while it runs follow at its
 * end, so a name may be listed twice. By `offset` (`nextOffset`), as before
 * cursors: a name leaving (expired, deleted) between pages makes the pass skip one.
 */
export async function list(ctx: Ctx, options: ListOptions = {}) {
  const { offset, limit } = listPage(options, MAX_LISTED);
  const cursor = activityCursor(options.cursor);
  const byCursor = cursor.score !== "";
  if (byCursor && offset > 0) invalid([{ path: "offset", message: "must be 0 with a cursor (the cursor says where)" }]);
  const res = await listScript.run<{ flat: string[] | Record<string, never>; next: string[] | false }>(
    ctx.redis,
    { names: K.names(ctx.prefix), expiry: K.expiry(ctx.prefix) },
    { now: ctx.now, offset: offset > 0 ? offset : "", limit, ...cursor },
  );
  // a stamp runs ahead of the clock while more than one name a millisecond is stamped
  // (src/redis/pages.ts `stampLua`): no write is later than the reader's now
  const items = pairs(asList(res.flat)).map((p) => ({ counter: p.member, lastWriteAt: Math.min(p.score, ctx.now) }));
  const page = items.slice(0, limit);
  // by offset: one name read beyond the page says more follow; by cursor: the script's `next`
  const nextCursor = offset > 0 ? null : nextActivityCursor(res.next);
  const more = offset > 0 ? items.length > limit : nextCursor !== null;
  return {
    counters: page.map((i) => i.counter),
    items: page,
    nextOffset: more && !byCursor ? offset + limit : null,
    nextCursor,
  };
}
