/**
 * Calendar rollups of period counters (issue 15): an `hour` increment also
 * lands in its quarter-day's, its day's and its month's rollup, a `day`
 * increment in its month's, so a range of any length is answered from at most
 * ~120 keys (raw buckets at the edges, day rollups next, whole months in the
 * middle) instead of one key per bucket. ISO weeks straddle months, so `week`
 * (≤ 59 buckets in 400 days) and `month` (≤ 14) keep no rollups.
 *
 * Rollup keys are not buckets a reader can name: `…:hour:by-day:20261122`
 * holds the sum of that day's hourly buckets and is distinct from the
 * `…:day:20261122` bucket written with `period=day`.
 *
 * Quarter-day rollups (`…:hour:by-quarter:20261122T06`, hours 06–12 UTC) came
 * later: a life that began before them (its index lacks the field `q`) has
 * none for its older hours, so only the reads and deletes that know the life
 * has them use them (`edgePlan`'s `flat`, `deletePlan`'s `older`); the union
 * of a range (`decompose`) reads hours up to the first whole day as before.
 */
import { DAY, HOUR, periodEnd, periodLabel, periodStart, type Period } from "../time.ts";

export type Coarse = "quarter" | "day" | "month";

/** A quarter of a UTC day: hours 00–06, 06–12, 12–18, 18–24. */
export const QUARTER = 6 * HOUR;

/** A level of a counter's keys: a calendar period, or the quarter-day of an hour counter's rollups. */
export type Level = Period | "quarter";

/** Start of the unit of `level` containing `ms`. */
export function levelStart(level: Level, ms: number): number {
  return level === "quarter" ? Math.floor(ms / QUARTER) * QUARTER : periodStart(level, ms);
}

/** Start of the unit of `level` after the one containing `ms`. */
export function levelEnd(level: Level, ms: number): number {
  return level === "quarter" ? levelStart("quarter", ms) + QUARTER : periodEnd(level, ms);
}

/** Readable label of the unit of `level` containing `ms`: `20261122T06` for a quarter, else the period's. */
export function levelLabel(level: Level, ms: number): string {
  if (level !== "quarter") return periodLabel(level, ms);
  const start = levelStart("quarter", ms);
  return `${periodLabel("day", start)}T${String((start % DAY) / HOUR).padStart(2, "0")}`;
}

/** The rollup levels above a period, finest first. */
export function rollupsOf(period: Period): Coarse[] {
  if (period === "hour") return ["quarter", "day", "month"];
  if (period === "day") return ["month"];
  return [];
}

/**
 * Rollup levels a life may lack: it began before they were kept (index field `q` absent: no
 * quarters). Reads and deletes of such a life skip them, as the code before them did.
 */
export const LATER_LEVELS: readonly Coarse[] = ["quarter"];

/** One key of a decomposed range: a raw bucket of `period`, or a rollup of `period` over `level`. */
export interface Part {
  /** `bucket`: the raw bucket of the period; else the rollup level. */
  level: "bucket" | Coarse;
  /** Start of the bucket or of the rollup's quarter, day or month. */
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
 * back down. Only for hour and day; other periods are their buckets. No quarters: every life
 * has these keys, and a union's commands do not grow with its keys (one HMGET, one ZUNIONSTORE).
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

/** One key a member delete touches, in the order the script must visit them (buckets, then quarters, days, months). */
export interface DeleteStep {
  level: Part["level"];
  start: number;
  /** f: a bucket; w: a rollup wholly inside the range (ZREM); p: a rollup partly inside (minus what its removed parts held). */
  kind: "f" | "w" | "p";
  /** 1-based position (in the plan) of the partial rollup this key's removed score goes to; 0 = none. */
  parent: number;
  /** 1-based position of the rollup directly above this key (its quarter, day or month), whatever its kind; 0 = none. */
  owner: number;
  /**
   * `parent` and `owner` in a life without the LATER_LEVELS rollups (index field `q` absent), as
   * positions in this same plan; null: a step of such a level, which that life skips.
   */
  older: { parent: number; owner: number } | null;
}

/** `deletePlan` over the given rollup levels (finest first), without `older`. */
function planOver(period: Period, levels: readonly Coarse[], from: number, end: number): Omit<DeleteStep, "older">[] {
  const steps: Omit<DeleteStep, "older">[] = [];
  // per level, a rollup's start -> its 1-based position in the plan
  const pos = levels.map(() => new Map<number, number>());
  type Step = Omit<DeleteStep, "older">;
  // rollups first in the bookkeeping, so buckets can name them; emitted after the buckets
  const rollupSteps: Step[][] = levels.map((level) => {
    const out: Step[] = [];
    for (let t = levelStart(level, from); t < end; t = levelEnd(level, t)) {
      out.push({ level, start: t, kind: t >= from && levelEnd(level, t) <= end ? "w" : "p", parent: 0, owner: 0 });
    }
    return out;
  });
  const buckets: Step[] = [];
  for (let t = from; t < end; t = periodEnd(period, t))
    buckets.push({ level: "bucket", start: t, kind: "f", parent: 0, owner: 0 });
  let n = buckets.length;
  rollupSteps.forEach((list, li) => list.forEach((s) => pos[li]?.set(s.start, ++n)));
  // every step by its 1-based position, as the script sees them
  const byPosition = [...buckets, ...rollupSteps.flat()];
  // the partial rollup directly above a key, if any: its sum must lose what the key held
  const partialAbove = (levelIndex: number, start: number): number => {
    const level = levels[levelIndex];
    if (!level) return 0;
    const at = pos[levelIndex]?.get(levelStart(level, start)) ?? 0;
    return at > 0 && byPosition[at - 1]?.kind === "p" ? at : 0;
  };
  const above = (levelIndex: number, start: number): number => {
    const level = levels[levelIndex];
    return level ? (pos[levelIndex]?.get(levelStart(level, start)) ?? 0) : 0;
  };
  for (const b of buckets) {
    // a bucket adds to its partial rollup (which passes it on to a partial one above); a whole rollup passes its own score on
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
 * Keys a member delete over [from, end) must change: every raw bucket in range
 * (a sub-range read uses them), and every rollup over a quarter, day or month that
 * overlaps the range, wholly inside (the member goes) or partly (it keeps the
 * rest of its sum). Each step also says how a life without quarter rollups
 * (`older`) links it: as the plan before them, whose steps are this plan's less the quarters.
 */
export function deletePlan(period: Period, from: number, end: number): DeleteStep[] {
  const levels = rollupsOf(period);
  const steps = planOver(period, levels, from, end);
  const kept = levels.filter((l) => !LATER_LEVELS.includes(l));
  if (kept.length === levels.length) return steps.map((s) => ({ ...s, older: { parent: s.parent, owner: s.owner } }));
  const flat = planOver(period, kept, from, end);
  // both list buckets, then each level's rollups in order: the plan without quarters is this one
  // less the quarters' steps, so its j-th step is this plan's keptAt[j]-th
  const later = (s: { level: Part["level"] }) => s.level !== "bucket" && LATER_LEVELS.includes(s.level);
  const keptAt: number[] = [];
  steps.forEach((s, i) => {
    if (!later(s)) keptAt.push(i + 1);
  });
  const mapped = (p: number) => (p > 0 ? (keptAt[p - 1] ?? 0) : 0);
  let j = 0;
  return steps.map((s) => {
    if (later(s)) return { ...s, older: null };
    const o = flat[j++];
    return { ...s, older: o ? { parent: mapped(o.parent), owner: mapped(o.owner) } : null };
  });
}

/**
 * A quarter, day or month of a range that the range covers only in part (issue 15, a member read
 * past the union bound): `rollup` sums all its parts, `inside` are its parts wholly in the range,
 * `outside` those wholly outside, and `edges` its parts that the range again covers in part (at
 * most two). For `sum` the part in range is either its parts in range or its rollup minus the
 * parts outside, whichever reads fewer live keys, where that is exact (edges.ts, `edgeSum`).
 * A day of an hour counter also has `flat`: its hours in and outside the range, what a read uses
 * instead of its quarters where those may not equal the sums of their hours (a life that began
 * before quarters were kept, or one whose rollups are not provably exact).
 */
export interface Edge {
  rollup: Part;
  inside: Part[];
  outside: Part[];
  edges: Edge[];
  flat?: { inside: Part[]; outside: Part[] };
}

/** A range as whole keys (`whole`) and partly covered quarters, days or months (`edges`). */
export interface EdgePlan {
  whole: Part[];
  edges: Edge[];
}

/** The levels of an hour or day counter's keys, coarsest first. */
function levelsOf(period: "hour" | "day"): Level[] {
  return period === "hour" ? ["month", "day", "quarter", "hour"] : ["month", "day"];
}

/**
 * The range from the bucket starting at `from` to the one starting at `to` (inclusive) as whole
 * months, and the months it covers in part, each with its days (and for hours their partly
 * covered days with their quarters, and the partly covered quarters with their hours). The whole
 * keys of the plan, those at the top and each edge's `inside` recursively (`flat` where an edge
 * has it), are exactly `decompose`'s keys (test/redis/counters-edges.test.ts).
 */
export function edgePlan(period: "hour" | "day", from: number, to: number): EdgePlan {
  const levels = levelsOf(period);
  const end = periodEnd(period, to);
  const partOf = (li: number, start: number): Part => {
    const level = levels[li] as Level;
    return { level: level === period ? "bucket" : (level as Coarse), start, end: levelEnd(level, start) };
  };
  // the units of level li within [a, b) split into wholly inside [from, end), wholly outside, and partly inside
  const split = (li: number, a: number, b: number) => {
    const inside: Part[] = [];
    const outside: Part[] = [];
    const edges: Edge[] = [];
    const level = levels[li] as Level;
    for (let t = a; t < b; t = levelEnd(level, t)) {
      const part = partOf(li, t);
      if (part.start >= from && part.end <= end) inside.push(part);
      else if (part.end <= from || part.start >= end) outside.push(part);
      else {
        const edge: Edge = { rollup: part, ...split(li + 1, part.start, part.end) };
        // the level below may be missing: the parts one further down stand in for it
        if (LATER_LEVELS.includes(levels[li + 1] as Coarse)) {
          const below = split(li + 2, part.start, part.end);
          edge.flat = { inside: below.inside, outside: below.outside };
        }
        edges.push(edge);
      }
    }
    return { inside, outside, edges };
  };
  const top = split(0, periodStart("month", from), end);
  return { whole: top.inside, edges: top.edges };
}
