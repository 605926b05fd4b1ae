import { keyOf } from "../keys.ts";
import { DAY, HOUR, periodEnd, periodLabel, type Period } from "../time.ts";
import { deletePlan, levelEnd, levelStart, QUARTER, type Coarse, type DeleteStep } from "./calendar.ts";
import { counterKeys as K } from "./keys.ts";

/**
 * The keys of a member delete over a range and the layout its script takes (delete-script.ts):
 * the range's buckets, then its rollups finest level first, each rollup with the positions of the
 * keys directly below it. A 400-day hour range is 11,614 keys; `deleteCall` builds them with day
 * labels computed once a day and positions by arithmetic (~2 ms), where `deletePlan`'s steps,
 * their key names and `deleteLayout` took ~18 ms warm and ~75 ms on a cold isolate, past the
 * Workers free plan's 10 ms of CPU. The tests hold the two to the same keys and layout.
 */

/** A delete plan as the script takes it: rollups by the ranges of keys directly below them. */
export interface DeleteLayout {
  /** How many of the plan's keys are buckets (they come first). */
  buckets: number;
  /** 1-based position of the first key of the coarsest level. */
  top: number;
  /** Per rollup, in plan order: w or p. */
  kinds: ("w" | "p")[];
  /** Per rollup: the positions of the keys directly below it (0, 0 = none). */
  firsts: number[];
  lasts: number[];
  /** The same in a life without quarter rollups (a quarter has none there). */
  olderFirsts: number[];
  olderLasts: number[];
}

/** Lays out `deletePlan`'s steps for the script; the keys below each rollup are contiguous in it. */
export function deleteLayout(steps: readonly DeleteStep[]): DeleteLayout {
  const buckets = steps.filter((s) => s.kind === "f").length;
  const rollups = steps.length - buckets;
  const ranges = (ownerOf: (s: DeleteStep) => number) => {
    const firsts = new Array<number>(rollups).fill(0);
    const lasts = new Array<number>(rollups).fill(0);
    steps.forEach((s, i) => {
      const o = ownerOf(s);
      if (o <= 0) return;
      const j = o - buckets - 1;
      if (firsts[j] === 0) firsts[j] = i + 1;
      else if (lasts[j] !== i) throw new Error(`deleteLayout: the keys below rollup ${o} are not contiguous`);
      lasts[j] = i + 1;
    });
    return { firsts, lasts };
  };
  const now = ranges((s) => s.owner);
  const older = ranges((s) => s.older?.owner ?? 0);
  let top = steps.length;
  while (top > 1 && steps[top - 2]!.owner === 0 && steps[top - 2]!.level === steps[steps.length - 1]!.level) top--;
  return {
    buckets,
    top,
    kinds: steps.slice(buckets).map((s) => s.kind as "w" | "p"),
    firsts: now.firsts,
    lasts: now.lasts,
    olderFirsts: older.firsts,
    olderLasts: older.lasts,
  };
}

/** The keys and layout of a member delete over [from, end) of `period` (`deletePlan`'s, faster). */
export function deleteCall(
  prefix: string,
  name: string,
  period: Period,
  from: number,
  end: number,
): { parts: string[]; layout: DeleteLayout } {
  if (period === "week" || period === "month") {
    // at most 59 buckets in 400 days and no rollups: the plan as it is
    const plan = deletePlan(period, from, end);
    return { parts: plan.map((s) => K.part(prefix, name, period, s.level, s.start)), layout: deleteLayout(plan) };
  }
  const base = keyOf(prefix, "counters", name, period);
  const unit = period === "hour" ? HOUR : DAY;
  const parts: string[] = [];
  const kinds: ("w" | "p")[] = [];
  const firsts: number[] = [];
  const lasts: number[] = [];
  const olderFirsts: number[] = [];
  const olderLasts: number[] = [];
  // the UTC days overlapping the range, each labelled once
  const days: { start: number; label: string }[] = [];
  for (let d = Math.floor(from / DAY) * DAY; d < end; d += DAY) days.push({ start: d, label: periodLabel("day", d) });
  const two = (n: number) => (n < 10 ? `0${n}` : String(n));
  // buckets: position of the bucket starting at t is (t - from) / unit + 1
  const bucketAt = (t: number) => (t - from) / unit + 1;
  const hh = Array.from({ length: 24 }, (_, h) => two(h));
  for (const day of days) {
    const stem = `${base}:${day.label}`;
    if (period === "day") {
      parts.push(stem);
      continue;
    }
    const last = Math.min(24, (end - day.start) / HOUR);
    for (let h = Math.max(0, (from - day.start) / HOUR); h < last; h++) parts.push(stem + hh[h]!);
  }
  const buckets = parts.length;
  const rollup = (key: string, start: number, stop: number, below: [number, number], older: [number, number]) => {
    parts.push(key);
    kinds.push(start >= from && stop <= end ? "w" : "p");
    firsts.push(below[0]);
    lasts.push(below[1]);
    olderFirsts.push(older[0]);
    olderLasts.push(older[1]);
  };
  const hours = (start: number, stop: number): [number, number] => [
    bucketAt(Math.max(start, from)),
    bucketAt(Math.min(stop, end) - HOUR),
  ];
  // per day: the positions of its quarters (hour counters) or of itself (day counters)
  const dayBelow: [number, number][] = [];
  if (period === "hour") {
    for (const day of days) {
      const firstQ = parts.length + 1;
      for (let q = day.start; q < day.start + DAY; q += 6 * HOUR) {
        if (q + 6 * HOUR <= from || q >= end) continue;
        rollup(
          `${base}:by-quarter:${day.label}T${two((q - day.start) / HOUR)}`,
          q,
          q + 6 * HOUR,
          hours(q, q + 6 * HOUR),
          [0, 0],
        );
      }
      dayBelow.push([firstQ, parts.length]);
    }
    const firstDay = parts.length + 1;
    days.forEach((day, i) => {
      const span = hours(day.start, day.start + DAY);
      rollup(`${base}:by-day:${day.label}`, day.start, day.start + DAY, dayBelow[i]!, span);
    });
    days.forEach((_, i) => (dayBelow[i] = [firstDay + i, firstDay + i]));
  } else {
    days.forEach((_, i) => (dayBelow[i] = [i + 1, i + 1]));
  }
  // months: the days (rollups or buckets) below each
  for (let i = 0; i < days.length;) {
    const label = days[i]!.label.slice(0, 6);
    let j = i;
    while (j + 1 < days.length && days[j + 1]!.label.startsWith(label)) j++;
    const start = Date.UTC(Number(label.slice(0, 4)), Number(label.slice(4)) - 1, 1);
    const below: [number, number] = [dayBelow[i]![0], dayBelow[j]![1]];
    rollup(`${base}:by-month:${label}`, start, periodEnd("month", start), below, below);
    i = j + 1;
  }
  const top = parts.length - new Set(days.map((d) => d.label.slice(0, 6))).size + 1;
  return { parts, layout: { buckets, top, kinds, firsts, lasts, olderFirsts, olderLasts } };
}

/**
 * The parts outside [from, end) of the range's partial rollups, which the delete reads when it
 * brings such a rollup's sum to exactly 0 (delete-zero.ts, `heldBelow`): whether one still holds
 * the member decides whether the rollup keeps it at 0. Their keys go after the plan's in the
 * call; `outs` names them per partial rollup as `rollup, first, last, rollups` (1-based positions
 * in the call's keys; `rollups` 1 when they are rollups). At most 2 partial rollups a level: a
 * quarter's 5 hours, a day's 3 quarters, a month's 30 days (≤ 76 keys).
 */
export function deleteOutside(
  prefix: string,
  name: string,
  period: Period,
  from: number,
  end: number,
  parts: readonly string[],
  buckets: number,
): { keys: string[]; outs: number[] } {
  const keys: string[] = [];
  const outs: number[] = [];
  if (period !== "hour" && period !== "day") return { keys, outs };
  const levels: [Coarse, "bucket" | Coarse, number][] =
    period === "hour"
      ? [
          ["quarter", "bucket", HOUR],
          ["day", "quarter", QUARTER],
          ["month", "day", DAY],
        ]
      : [["month", "bucket", DAY]];
  for (const [level, below, unit] of levels) {
    const starts = [...new Set([levelStart(level, from), levelStart(level, end - 1)])];
    for (const start of starts) {
      const stop = levelEnd(level, start);
      if (start >= from && stop <= end) continue;
      const at = parts.indexOf(K.part(prefix, name, period, level, start), buckets) + 1;
      const first = parts.length + keys.length + 1;
      for (let t = start; t < stop; t += unit)
        if (t + unit <= from || t >= end) keys.push(K.part(prefix, name, period, below, t));
      if (at > 0 && keys.length >= first - parts.length)
        outs.push(at, first, parts.length + keys.length, below === "bucket" ? 0 : 1);
    }
  }
  return { keys, outs };
}
