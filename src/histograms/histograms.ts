/**
 * The histogram operations but reading (reads.ts): each validates its input,
 * then runs its one script (scripts.ts). Limits and checks are in validate.ts.
 */
import type { Ctx } from "../context.ts";
import { asList, type Idempotency, type Written } from "../redis/script.ts";
import { DAY, dayLabel, dayStart, periodEnd } from "../time.ts";
import { activityCursor, nextActivityCursor } from "../redis/pages.ts";
import { assertName, invalid, listPage, type PageOptions } from "../validation.ts";
import { MAX_BUCKET_INDEX } from "./buckets.ts";
import { dataKeys, dayUntil, histogramKeys, liveDays, liveMonths, monthOf } from "./keys.ts";
import { listScript } from "./listing.ts";
import { deleteScript, observeScript, putScript } from "./scripts.ts";
import { checkSettings, groupObservations, MAX_BUCKETS_PER_DAY, MAX_LIST } from "./validate.ts";

export interface HistogramSettings {
  /** Width of every bucket, in the unit of the values; finite, 0 < width ≤ 1e15. */
  bucketWidth: number;
  /**
   * A label for the values (e.g. `s`, `ms`), echoed on reads.
   * @default none
   */
  unit?: string | undefined;
  /**
   * Days a UTC day's data is kept after that day ends (1..400); the TTL of its keys.
   * @default 400
   */
  retentionDays?: number | undefined;
}

export interface HistogramInfo {
  histogram: string;
  bucketWidth: number;
  unit: string | null;
  retentionDays: number;
  /** Epoch ms of the first PUT. */
  createdAt: number;
}

export interface Observation {
  /** A finite number within ±1e15. */
  value: number;
  /**
   * When it was observed (epoch ms or ISO-8601); picks the UTC day.
   * @default ctx.now
   */
  at?: number | string | undefined;
}

/**
 * Creates a histogram or replaces its settings (PUT semantics: an omitted
 * unit or retention goes back to its default). Changing the width of a
 * histogram that holds data is a ConflictError; a new retention re-times the
 * stored days at once.
 */
export async function put(
  ctx: Ctx,
  name: string,
  settings: HistogramSettings,
  idempotency?: Idempotency,
): Promise<Written<HistogramInfo & { created: boolean }>> {
  assertName(name, "histogram");
  const checked = checkSettings(settings);
  const days = liveDays(ctx.now);
  const months = liveMonths(ctx.now);
  const { value, replayed } = await putScript.run<{ created: boolean; createdAt: string }>(
    ctx.redis,
    {
      meta: histogramKeys.meta(ctx.prefix, name),
      registry: histogramKeys.registry(ctx.prefix),
      deadlines: histogramKeys.deadlines(ctx.prefix),
      ...dataKeys(ctx.prefix, name, days, months),
    },
    {
      name,
      width: String(checked.bucketWidth),
      unit: checked.unit ?? "",
      retentionDays: checked.retentionDays,
      now: ctx.now,
      listedUntil: dayUntil(dayStart(ctx.now), checked.retentionDays),
      nextMonth: periodEnd("month", ctx.now),
      dayStarts: days,
      dayLabels: days.map(dayLabel),
      monthStarts: months,
      monthLastDays: months.map((m) => periodEnd("month", m) - DAY),
    },
    idempotency,
  );
  return { histogram: name, ...checked, createdAt: Number(value.createdAt), created: value.created, replayed };
}

/** Records a batch of observations (1..1000) atomically: all of them or, on any refusal, none. */
export async function observe(
  ctx: Ctx,
  name: string,
  observations: readonly Observation[],
  idempotency?: Idempotency,
): Promise<Written<{ accepted: number }>> {
  assertName(name, "histogram");
  const groups = groupObservations(ctx.now, observations);
  const dayStarts = groups.map((g) => g.day);
  const keys = {
    meta: histogramKeys.meta(ctx.prefix, name),
    registry: histogramKeys.registry(ctx.prefix),
    deadlines: histogramKeys.deadlines(ctx.prefix),
    ...dataKeys(ctx.prefix, name, dayStarts, dayStarts.map(monthOf)),
  };
  const sums: string[] = [];
  const negMins: string[] = [];
  const maxes: string[] = [];
  for (const { values } of groups) {
    let min = Infinity;
    let max = -Infinity;
    for (const v of values) {
      if (v < min) min = v;
      if (v > max) max = v;
    }
    sums.push(String(values.reduce((a, b) => a + b, 0)));
    // The day's smallest value is kept negated, so one ZADD GT keeps both extremes.
    negMins.push(String(0 - min));
    maxes.push(String(max));
  }
  const args = {
    name,
    now: ctx.now,
    maxPerDay: MAX_BUCKETS_PER_DAY,
    maxIndex: MAX_BUCKET_INDEX,
    nextMonth: periodEnd("month", ctx.now),
    dayStarts,
    dayLabels: dayStarts.map(dayLabel),
    monthLastDays: dayStarts.map((day) => periodEnd("month", day) - DAY),
    counts: groups.map((g) => g.values.length),
    sums,
    negMins,
    maxes,
    values: groups.flatMap((g) => g.values.map(String)),
  };
  const { value, replayed } = await observeScript.run<{ accepted: number }>(ctx.redis, keys, args, idempotency);
  return { ...value, replayed };
}

/** Deletes a histogram: settings, every stored day, and its registry entry. Idempotent. */
export async function remove(ctx: Ctx, name: string): Promise<{ deleted: boolean }> {
  assertName(name, "histogram");
  const { days, exts, months } = dataKeys(ctx.prefix, name, liveDays(ctx.now), liveMonths(ctx.now));
  const { value } = await deleteScript.run<{ removed: number }>(
    ctx.redis,
    {
      meta: histogramKeys.meta(ctx.prefix, name),
      registry: histogramKeys.registry(ctx.prefix),
      deadlines: histogramKeys.deadlines(ctx.prefix),
      stored: [...days, ...exts, ...months],
    },
    { name },
  );
  return { deleted: value.removed > 0 };
}

export interface ListOptions extends PageOptions {
  /** `nextCursor` of the previous page (then `offset` must be 0). @default undefined (first page) */
  cursor?: string | undefined;
}

/**
 * Names of the histograms that hold live data (or were PUT less than their retention ago), most
 * recently stamped first: by the time of the write that created the name or last changed its
 * listing deadline (its newest day's first write, a PUT on a later day or with a new retention).
 * Names whose data all expired leave the list here, a bounded batch per call, at their deadline.
 * A pass by cursor (the first page, then `nextCursor` until null) lists every name listed
 * throughout at least once, as the counters' and boards' lists do (src/redis/pages.ts), and the
 * names stamped after its first page at its end (so a name may be listed twice): a stamp is the
 * time of the change, so no name can rise unseen past the cursor (review 23, fixed in review 24).
 * By `offset` (`next`, null on the last page), as before cursors: a name leaving between pages
 * makes the pass skip one.
 */
export async function list(
  ctx: Ctx,
  options: ListOptions = {},
): Promise<{ histograms: string[]; total: number; next: number | null; nextCursor: string | null }> {
  const { offset, limit } = listPage(options, MAX_LIST);
  const cursor = activityCursor(options.cursor);
  const byCursor = cursor.score !== "";
  if (byCursor && offset > 0) invalid([{ path: "offset", message: "must be 0 with a cursor (the cursor says where)" }]);
  const reply = await listScript.run<{
    names: string[] | Record<string, never>;
    next: string[] | false;
    total: number;
  }>(
    ctx.redis,
    { registry: histogramKeys.registry(ctx.prefix), deadlines: histogramKeys.deadlines(ctx.prefix) },
    { now: ctx.now, offset: offset > 0 ? offset : "", limit, ...cursor },
  );
  const histograms = asList(reply.names);
  const at = offset + histograms.length;
  // by offset: the total says more follow; by cursor: the script's `next`
  const nextCursor = offset > 0 ? null : nextActivityCursor(reply.next);
  return {
    histograms,
    total: reply.total,
    next: !byCursor && at < reply.total ? at : null,
    nextCursor,
  };
}
