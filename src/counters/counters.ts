/**
 * Counter writes (increments, in ./increment.ts, and deletes; the admin union is in union.ts, the
 * reads in reads.ts): named sorted-set counters, optionally bucketed by calendar period. Each
 * function is one script, so one Redis round trip, whatever the batch size (but a member delete
 * whose member may be in more keys than one script may reach: `deleteMember`).
 */
import type { Ctx } from "../context.ts";
import type { Idempotency, Written } from "../redis/script.ts";
import { DAY, periodEnd, periodStart, type Period } from "../time.ts";
import { assertName } from "../validation.ts";
import { deleteCall, deleteOutside } from "./delete-layout.ts";
import { DeleteSplit } from "./delete-refusals.ts";
import { deleteMemberScript } from "./delete-script.ts";
import { cacheKeys, counterKeys as K, writeKeys } from "./keys.ts";
import { MAX_DELETE_KEYS, MAX_DELETE_READS, MAX_DELETE_SCRIPT_KEYS } from "./limits.ts";
import { deleteScript } from "./drop.ts";
import { periodRange, type PeriodOptions } from "./select.ts";
import { checkMember } from "./validate.ts";

export { increment, type IncrItem, type IncrResult } from "./increment.ts";

/**
 * Removes a member from the plain counter, or with `period` from each bucket in range. `removed`: how many keys held it.
 *
 * One script when the member may be in at most MAX_DELETE_SCRIPT_KEYS keys; otherwise (it may be
 * in up to MAX_DELETE_KEYS: a range of at most 60 days always fits, a longer one once the script
 * shows it) several in this call, each over whole UTC days of the range whose plan has at most
 * MAX_DELETE_SCRIPT_KEYS keys, so no script holds Redis long (a member in every key of 60 days of
 * hours: 53 ms in one script at 10,000 members an hour key, bench/scaling/dense-delete.ts). Each
 * part is itself a complete delete over its days, so the parts leave what one delete would, but
 * not atomically: a read during the call may see the member gone from the earlier parts only.
 * With an Idempotency-Key (only a direct caller passes one: the Worker takes none on DELETE) each
 * part keeps its own record, named by its days (`deletePartRecord`: part sizes follow the days the
 * range spans, so a retry with the default `to` after a UTC midnight has other parts, and must not
 * replay a shorter one's record for a longer one), the last the key's own, with the call's total;
 * a retry after a failure part way replays the parts done and runs the rest, and the range's
 * script, finding a part's record, answers `split` rather than delete the rest alone (and record
 * only the rest). A retry resolves `to` again: a part whose days moved runs again over its new days.
 */
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
  if (!range) return deleteRange(ctx, name, member, undefined, idempotency, 0);
  const end = periodEnd(range.period, range.to);
  const whole = deleteCall(ctx.prefix, name, range.period, range.from, end);
  // a plan past one script's keys may have run in parts: the records a retry's parts would replay,
  // and those an attempt on an earlier UTC day left under its own slices (`to` defaulted to then)
  const split = idempotency && whole.parts.length > MAX_DELETE_SCRIPT_KEYS;
  const partRecords = split
    ? sliceRanges(range.period, range.from, end)
        .slice(0, -1)
        .map(([a, b]) => deletePartRecord(idempotency.key, a, b))
    : [];
  const earlier =
    split && options.to === undefined
      ? earlierPartRecords(idempotency, range.period, range.from, ctx.now, partRecords)
      : [];
  try {
    return await deleteRange(
      ctx,
      name,
      member,
      { period: range.period, from: range.from, end, call: whole },
      idempotency,
      0,
      [...partRecords, ...earlier],
    );
  } catch (err) {
    if (!(err instanceof DeleteSplit)) throw err;
    return deleteParts(ctx, name, member, range.period, range.from, end, idempotency, earlier);
  }
}

/**
 * The part records a keyed call's attempts on earlier UTC days (within the records' life) may have
 * left, other than `current`'s: its `to` defaulted to their time, so the range then spanned fewer
 * days and its parts other days (review 15). What their parts removed is the call's too: the last
 * part adds it to the total it records (`counted`), while the parts run again over their new
 * days and find those keys empty.
 */
function earlierPartRecords(
  idempotency: Idempotency,
  period: Period,
  from: number,
  now: number,
  current: readonly string[],
): string[] {
  const out = new Set<string>();
  const oldest = now - (idempotency.ttlSeconds ?? 86400) * 1000;
  for (let day = Math.floor(now / DAY) * DAY - DAY; day + DAY > oldest; day -= DAY) {
    // the slices depend on the days the range spans: any time of that day gives that day's
    const end = periodEnd(period, periodStart(period, Math.max(day, oldest)));
    if (end <= from) break;
    for (const [a, b] of sliceRanges(period, from, end).slice(0, -1)) out.add(deletePartRecord(idempotency.key, a, b));
  }
  for (const record of current) out.delete(record);
  return [...out];
}

/**
 * The idempotency record of the part [a, b) of a split delete under `key` (the last part's is the
 * key's own). Named by its days, not its position: a retry's part replays only a record of exactly
 * its own days.
 */
export function deletePartRecord(key: string, a: number, b: number): string {
  return `${key}:${a}-${b}`;
}

/** The range [from, end) as parts of whole UTC days, each a plan of at most MAX_DELETE_SCRIPT_KEYS keys. */
export function deleteSlices(
  prefix: string,
  name: string,
  period: Period,
  from: number,
  end: number,
): [number, number][] {
  const out = sliceRanges(period, from, end);
  for (const [a, b] of out)
    if (deleteCall(prefix, name, period, a, b).parts.length > MAX_DELETE_SCRIPT_KEYS)
      throw new Error(`deleteSlices: a part of ${period} ${a}..${b} passes ${MAX_DELETE_SCRIPT_KEYS} keys`);
  return out;
}

/** deleteSlices' parts, unchecked. */
function sliceRanges(period: Period, from: number, end: number): [number, number][] {
  // a day of hours is 24 buckets, 4 quarters and the day (29 keys); a part may also reach 2 months
  const days = period === "hour" ? Math.floor((MAX_DELETE_SCRIPT_KEYS - 2) / 29) : MAX_DELETE_SCRIPT_KEYS - 2;
  // as few parts as that allows, of about equal days
  const spanned = Math.ceil((end - Math.floor(from / DAY) * DAY) / DAY);
  const each = Math.ceil(spanned / Math.ceil(spanned / days));
  const out: [number, number][] = [];
  for (let a = from; a < end;) {
    const b = Math.min(end, Math.floor(a / DAY) * DAY + each * DAY);
    out.push([a, b]);
    a = b;
  }
  return out;
}

async function deleteParts(
  ctx: Ctx,
  name: string,
  member: string,
  period: Period,
  from: number,
  end: number,
  idempotency: Idempotency | undefined,
  earlier: readonly string[],
): Promise<Written<{ removed: number }>> {
  const slices = deleteSlices(ctx.prefix, name, period, from, end);
  let removed = 0;
  let replayed = false;
  for (const [i, [a, b]] of slices.entries()) {
    const last = i === slices.length - 1;
    const record =
      idempotency && !last ? { ...idempotency, key: deletePartRecord(idempotency.key, a, b) } : idempotency;
    const call = deleteCall(ctx.prefix, name, period, a, b);
    const range = { period, from: a, end: b, call };
    const done = await deleteRange(ctx, name, member, range, record, last ? removed : 0, [], last ? earlier : []);
    removed = last ? done.removed : removed + done.removed;
    replayed = done.replayed;
  }
  return { removed, replayed };
}

/** One delete script over the plain counter (no range) or [from, end) of a period. */
async function deleteRange(
  ctx: Ctx,
  name: string,
  member: string,
  range: { period: Period; from: number; end: number; call: ReturnType<typeof deleteCall> } | undefined,
  idempotency: Idempotency | undefined,
  carried: number,
  partRecords: readonly string[] = [],
  counted: readonly string[] = [],
): Promise<Written<{ removed: number }>> {
  const { parts, layout } = range
    ? range.call
    : { parts: [], layout: { buckets: 0, top: 0, kinds: [], firsts: [], lasts: [], olderFirsts: [], olderLasts: [] } };
  // the parts outside the range of its partial rollups, read only when one's sum reaches 0
  const outside = range
    ? deleteOutside(ctx.prefix, name, range.period, range.from, range.end, parts, layout.buckets)
    : { keys: [], outs: [] };
  const { value, replayed } = await deleteMemberScript.run<number>(
    ctx.redis,
    {
      ...writeKeys(ctx.prefix, name),
      partRecords,
      counted,
      parts: outside.keys.length > 0 ? [...parts, ...outside.keys] : parts,
    },
    {
      name,
      member,
      fromPlain: range ? 0 : 1,
      maxKeys: MAX_DELETE_KEYS,
      maxReads: MAX_DELETE_READS,
      maxWork: MAX_DELETE_SCRIPT_KEYS,
      carried,
      now: ctx.now,
      planKeys: parts.length,
      ...layout,
      outs: outside.outs,
    },
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
