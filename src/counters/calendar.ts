/**
 * Calendar rollups of period counters (issue 15): an `hour` increment also
 * lands in its day's and its month's rollup, a `day` increment in its month's,
 * so a range of any length is answered from at most ~120 keys (raw buckets at
 * the edges, day rollups next, whole months in the middle) instead of one key
 * per bucket. ISO weeks straddle months, so `week` (≤ 59 buckets in 400 days)
 * and `month` (≤ 14) keep no rollups.
 *
 * Rollup keys are not buckets a reader can name: `…:hour:by-day:20261122`
 * holds the sum of that day's hourly buckets and is distinct from the
 * `…:day:20261122` bucket written with `period=day`.
 */
import { DAY, periodEnd, periodStart, type Period } from "../time.ts";

export type Coarse = "day" | "month";

/** The rollup levels above a period: coarser first is not implied; finest rollup first. */
export function rollupsOf(period: Period): Coarse[] {
  if (period === "hour") return ["day", "month"];
  if (period === "day") return ["month"];
  return [];
}

/** One key of a decomposed range: a raw bucket of `period`, or a rollup of `period` over `level`. */
export interface Part {
  /** `bucket`: the raw bucket of the period; else the rollup level. */
  level: "bucket" | Coarse;
  /** Start of the bucket or of the rollup's day/month. */
  start: number;
  /** Start of the next one (exclusive end). */
  end: number;
}

function each(level: Period, from: number, to: number, out: Part[], as: Part["level"]): void {
  for (let t = from; t < to; t = periodEnd(level, t)) out.push({ level: as, start: t, end: periodEnd(level, t) });
}

/**
 * The fewest keys whose union is the buckets of `period` from the one starting
 * at `from` to the one starting at `to` (inclusive): raw buckets up to the
 * first whole day, whole days up to the first whole month, whole months, then
 * back down. Only for hour and day; other periods are their buckets.
 */
export function decompose(period: Period, from: number, to: number): Part[] {
  const out: Part[] = [];
  const end = periodEnd(period, to);
  if (period !== "hour" && period !== "day") {
    each(period, from, end, out, "bucket");
    return out;
  }
  // whole days [d1, d2) inside [from, end)
  const d1 = period === "day" ? from : Math.ceil(from / DAY) * DAY;
  const d2 = period === "day" ? end : Math.floor(end / DAY) * DAY;
  if (d1 >= d2) {
    each(period, from, end, out, "bucket");
    return out;
  }
  const dayLevel: Part["level"] = period === "day" ? "bucket" : "day";
  if (period === "hour") each("hour", from, d1, out, "bucket");
  // whole months [m1, m2) inside [d1, d2)
  const first = periodStart("month", d1);
  const m1 = first === d1 ? d1 : periodEnd("month", d1);
  const m2 = periodStart("month", d2);
  if (m1 >= m2) {
    each("day", d1, d2, out, dayLevel);
  } else {
    each("day", d1, m1, out, dayLevel);
    each("month", m1, m2, out, "month");
    each("day", m2, d2, out, dayLevel);
  }
  if (period === "hour") each("hour", d2, end, out, "bucket");
  return out;
}

/** One key a member delete touches, in the order the script must visit them (buckets, then days, then months). */
export interface DeleteStep {
  level: Part["level"];
  start: number;
  /** f: a bucket; w: a rollup wholly inside the range (ZREM); p: a rollup partly inside (minus what its removed parts held). */
  kind: "f" | "w" | "p";
  /** 1-based position (in the plan) of the partial rollup this key's removed score goes to; 0 = none. */
  parent: number;
  /** 1-based position of the rollup directly above this key (its day, or its month), whatever its kind; 0 = none. */
  owner: number;
}

/**
 * Keys a member delete over [from, end) must change: every raw bucket in range
 * (a sub-range read uses them), and every rollup over a day or month that
 * overlaps the range, wholly inside (the member goes) or partly (it keeps the
 * rest of its sum).
 */
export function deletePlan(period: Period, from: number, end: number): DeleteStep[] {
  const steps: DeleteStep[] = [];
  const levels = rollupsOf(period);
  const pos = new Map<string, number>();
  // rollups first in the bookkeeping, so buckets can name them; emitted after the buckets
  const rollupSteps: DeleteStep[][] = levels.map((level) => {
    const out: DeleteStep[] = [];
    for (let t = periodStart(level, from); t < end; t = periodEnd(level, t)) {
      out.push({ level, start: t, kind: t >= from && periodEnd(level, t) <= end ? "w" : "p", parent: 0, owner: 0 });
    }
    return out;
  });
  const buckets: DeleteStep[] = [];
  for (let t = from; t < end; t = periodEnd(period, t))
    buckets.push({ level: "bucket", start: t, kind: "f", parent: 0, owner: 0 });
  let n = buckets.length;
  rollupSteps.forEach((list, li) => list.forEach((s) => pos.set(`${levels[li]}:${s.start}`, ++n)));
  // the partial rollup directly above a key, if any: its sum must lose what the key held
  const partialAbove = (levelIndex: number, start: number): number => {
    const level = levels[levelIndex];
    if (!level) return 0;
    const at = periodStart(level, start);
    const step = rollupSteps[levelIndex]?.find((s) => s.start === at);
    if (!step) return 0;
    if (step.kind === "p") return pos.get(`${level}:${at}`) ?? 0;
    return 0;
  };
  const above = (levelIndex: number, start: number): number => {
    const level = levels[levelIndex];
    return level ? (pos.get(`${level}:${periodStart(level, start)}`) ?? 0) : 0;
  };
  for (const b of buckets) {
    // a bucket adds to its partial day (which passes it on to a partial month); a whole day passes its own score on
    b.parent = partialAbove(0, b.start);
    b.owner = above(0, b.start);
    steps.push(b);
  }
  rollupSteps.forEach((list, li) => {
    for (const s of list) {
      if (li + 1 < levels.length) {
        s.parent = partialAbove(li + 1, s.start);
        s.owner = above(li + 1, s.start);
      }
      steps.push(s);
    }
  });
  return steps;
}

/**
 * A day or month of a range that the range covers only in part (issue 15, a member read past the
 * union bound): `rollup` sums all its parts, `inside` are its parts wholly in the range, `outside`
 * those wholly outside, and `edges` its parts that the range again covers in part (at most two).
 * For `sum` the part in range is either its parts in range or its rollup minus the parts outside,
 * whichever reads fewer live keys, where that is exact (edges.ts, `edgeSum`).
 */
export interface Edge {
  rollup: Part;
  inside: Part[];
  outside: Part[];
  edges: Edge[];
}

/** A range as whole keys (`whole`) and partly covered days or months (`edges`). */
export interface EdgePlan {
  whole: Part[];
  edges: Edge[];
}

/** The levels of an hour or day counter's keys, coarsest first. */
function levelsOf(period: "hour" | "day"): Period[] {
  return period === "hour" ? ["month", "day", "hour"] : ["month", "day"];
}

/**
 * The range from the bucket starting at `from` to the one starting at `to` (inclusive) as whole
 * months, and the months it covers in part, each with its days (and for hours their partly
 * covered days with their hours). The whole keys of the plan, those at the top and each edge's
 * `inside` recursively, are exactly `decompose`'s keys (test/redis/counters-edges.test.ts).
 */
export function edgePlan(period: "hour" | "day", from: number, to: number): EdgePlan {
  const levels = levelsOf(period);
  const end = periodEnd(period, to);
  const partOf = (li: number, start: number): Part => {
    const level = levels[li] as Period;
    return { level: level === period ? "bucket" : (level as Coarse), start, end: periodEnd(level, start) };
  };
  // the units of level li within [a, b) split into wholly inside [from, end), wholly outside, and partly inside
  const split = (li: number, a: number, b: number) => {
    const inside: Part[] = [];
    const outside: Part[] = [];
    const edges: Edge[] = [];
    const level = levels[li] as Period;
    for (let t = a; t < b; t = periodEnd(level, t)) {
      const part = partOf(li, t);
      if (part.start >= from && part.end <= end) inside.push(part);
      else if (part.end <= from || part.start >= end) outside.push(part);
      else edges.push({ rollup: part, ...split(li + 1, part.start, part.end) });
    }
    return { inside, outside, edges };
  };
  const top = split(0, periodStart("month", from), end);
  return { whole: top.inside, edges: top.edges };
}
