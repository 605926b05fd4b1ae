/**
 * Counter increments, a module of their own (issue 14, point 6): the route's first increment
 * compiles this and its script, not the member delete (./counters.ts: its layout, script and Lua,
 * ~16 KB minified; the counter delete's small script shares ./scripts.ts with the increment's), which a cold isolate's first write seldom is. One script, so
 * one Redis round trip, whatever the batch size.
 */
import type { Ctx } from "../context.ts";
import { asList, type Idempotency, type Written } from "../redis/script.ts";
import { DAY, periodEnd, periodStart, type Period } from "../time.ts";
import { assertName } from "../validation.ts";
import { levelStart, rollupsOf } from "./calendar.ts";
import { counterKeys as K, writeKeys } from "./keys.ts";
import { MAX_COUNTER_SCORE } from "./limits.ts";
import { incrScript } from "./scripts.ts";
import { trimGroups } from "./trim.ts";
import { checkBatch, checkIncrItem } from "./validate.ts";

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

/**
 * Adds `by` to each item's member (plain counter or its period bucket); returns each new score.
 * A result outside ±MAX_COUNTER_SCORE in any key refuses the batch (400, nothing changed). With
 * `queued` (the call queued ingest captures) the script raises SCORE_RANGE_ERROR instead, after
 * the same undo: its apply script ignores the result, so only an error keeps the group's messages
 * from being recorded as applied (docs/counters.md, "Score range").
 */
export async function increment(
  ctx: Ctx,
  name: string,
  items: IncrItem[],
  idempotency?: Idempotency,
  options: { queued?: boolean } = {},
): Promise<Written<IncrResult>> {
  assertName(name, "counter");
  checkBatch(items);
  const batch: PeriodBatch = { buckets: new Map(), rollups: new Map(), rollupSums: new Map() };
  const { buckets, rollups, rollupSums } = batch;
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
    const { slot, ended } = addToPeriod(ctx, name, item.period, item, when, by, batch);
    if (ended) late = true;
    slots.push(slot);
    bys.push(by);
  });
  // week buckets keep a size record (index field `n:<key>`, an upper bound of its members) that a
  // long read sums instead of a ZCARD a week (docs/counters.md "Week size records"): a finished
  // week this write creates records itself (every member it holds is one this write adds), and the
  // first touch of a week records the week before it (`near`: one ZCARD, once a week), finished
  // by then, when it is listed without a record. Other periods keep none.
  // per entry: 0 keeps no record, 1 a week in progress, 2 a week that has ended (by this clock)
  const weekly = [...buckets.values()].map((b) =>
    b.period !== "week" ? 0 : periodEnd("week", b.start) <= ctx.now ? 2 : 1,
  );
  const near: string[] = [];
  for (const b of buckets.values()) {
    if (b.period !== "week" || b.start > ctx.now) continue;
    const before = K.bucket(ctx.prefix, name, "week", b.start - 7 * DAY);
    if (!buckets.has(before) && !near.includes(before)) near.push(before);
  }
  // rollups follow the buckets in the script's `buckets` list
  const rollupSlot = new Map<string, number>([...rollups.keys()].map((k, i) => [k, buckets.size + i + 1]));
  const parentSlot = (key: string | undefined) => (key === undefined ? 0 : (rollupSlot.get(key) ?? 0));
  const entries: { ttl: number; parents?: string[]; groups: string }[] = [...buckets.values(), ...rollups.values()];
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
      ...writeKeys(ctx.prefix, name),
      buckets: [...buckets.keys(), ...rollups.keys()],
      near,
    },
    {
      name,
      now: ctx.now,
      late: late ? 1 : 0,
      plainTtl,
      maxScore: MAX_COUNTER_SCORE,
      raise: options.queued ? 1 : 0,
      ttls: entries.map((e) => e.ttl),
      weekly: [...weekly, ...[...rollups.keys()].map(() => 0)],
      above: entries.map((e) => (e.parents ?? []).map(parentSlot).join(" ")),
      groups: entries.map((e) => e.groups),
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

/** An increment batch's period buckets and their rollups, in the script's `buckets` order. */
interface PeriodBatch {
  /** bucket key -> its slot (1-based), ttl, rollup keys and index-cursor groups (trim.ts) */
  buckets: Map<string, { slot: number; ttl: number; parents: string[]; groups: string; period: Period; start: number }>;
  /** rollup key -> its ttl and index-cursor groups (trim.ts) */
  rollups: Map<string, { ttl: number; groups: string }>;
  /** (rollup key, member) -> the batch's summed increment */
  rollupSums: Map<string, Map<string, number>>;
}

/**
 * Files an item with a period under its bucket and the bucket's rollups in `batch`: the bucket's
 * slot, and whether its period has ended (a late write). A function of its own: a batch of plain
 * increments (a cold isolate's first write, most often) does not compile it (issue 14, point 6).
 */
function addToPeriod(
  ctx: Ctx,
  name: string,
  period: Period,
  item: IncrItem,
  when: number,
  by: number,
  { buckets, rollups, rollupSums }: PeriodBatch,
): { slot: number; ended: boolean } {
  const start = periodStart(period, when);
  const key = K.bucket(ctx.prefix, name, period, start);
  const levels = rollupsOf(period);
  const parents = levels.map((level) => K.rollup(ctx.prefix, name, period, level, levelStart(level, when)));
  let bucket = buckets.get(key);
  if (!bucket)
    buckets.set(
      key,
      (bucket = {
        slot: buckets.size + 1,
        ttl: 0,
        parents,
        groups: trimGroups(period, "bucket", start),
        period,
        start,
      }),
    );
  // expiries only grow, so the largest ttl of the key's items is what applies
  if (item.ttl !== undefined) bucket.ttl = Math.max(bucket.ttl, item.ttl);
  parents.forEach((parent, p) => {
    let rollup = rollups.get(parent);
    const level = levels[p]!;
    if (!rollup) rollups.set(parent, (rollup = { ttl: 0, groups: trimGroups(period, level, levelStart(level, when)) }));
    // the bucket's ttl plus the slack its extension may add: a rollup never expires before its buckets
    if (item.ttl !== undefined) rollup.ttl = Math.max(rollup.ttl, item.ttl + Math.min(Math.ceil(item.ttl / 10), 3600));
    let sums = rollupSums.get(parent);
    if (!sums) rollupSums.set(parent, (sums = new Map()));
    sums.set(item.member, (sums.get(item.member) ?? 0) + by);
  });
  return { slot: bucket.slot, ended: periodEnd(period, when) <= ctx.now };
}
