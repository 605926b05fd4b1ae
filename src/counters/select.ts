/**
 * Pure request logic of counters: score bounds, calendar ranges, member order.
 * Everything here runs before the first Redis call, so bad input writes nothing.
 */
import { ValidationError } from "../errors.ts";
import { DAY, periodEnd, periodStart, periodsBetween, PERIODS, type Period } from "../time.ts";
import type { Aggregate } from "./keys.ts";
import { BUCKET_TIME_PROBLEM, parseBucketTime } from "./bucket-time.ts";
import { MAX_RANGE_DAYS } from "./limits.ts";

// The time of a calendar bucket is in ./bucket-time.ts, which an increment's validation uses
// without these read helpers (issue 14, point 6: a first increment compiles none of them).
export { BUCKET_TIME_PROBLEM, MAX_BUCKET_TIME, MIN_BUCKET_TIME, parseBucketTime } from "./bucket-time.ts";

/** A score bound as Redis takes it (`(5`, `-inf`) and as a number for checks. */
export interface Bound {
  redis: string;
  value: number;
  exclusive: boolean;
}

const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** A number bound's text: its decimal, `±inf` for an infinity, "" (refused) for NaN. */
function numberBound(value: number): string {
  if (Number.isNaN(value)) return "";
  if (value === Infinity || value === -Infinity) return value > 0 ? "+inf" : "-inf";
  return String(value);
}

/**
 * Parses `10`, `(10`, `-inf`, `+inf`. A `+` in a query string arrives as a
 * space when the client did not percent-encode it, so `inf`/` inf` count too.
 */
export function parseBound(raw: string | number, field: string): Bound {
  // a number (the library, from JS) reads as its decimal text; it crashed on `trim` (review 20)
  let text = typeof raw === "number" ? numberBound(raw) : typeof raw === "string" ? raw.trim() : "";
  const exclusive = text.startsWith("(");
  if (exclusive) text = text.slice(1).trim();
  if (/^[+]?inf$/i.test(text)) return { redis: "+inf", value: Infinity, exclusive };
  if (/^-inf$/i.test(text)) return { redis: "-inf", value: -Infinity, exclusive };
  const value = DECIMAL.test(text) ? Number(text) : NaN;
  if (!Number.isFinite(value)) {
    throw new ValidationError(`'${field}' must be a number, '(' + a number for an exclusive bound, '-inf' or '+inf'.`, [
      { path: field, message: "must be a finite number, optionally prefixed by '(', or -inf/+inf" },
    ]);
  }
  return { redis: `${exclusive ? "(" : ""}${value}`, value, exclusive };
}

/** Both bounds, refusing a minimum above the maximum (Redis would just answer nothing). */
export function parseBounds(min: string | number, max: string | number): { min: Bound; max: Bound } {
  const lo = parseBound(min, "min");
  const hi = parseBound(max, "max");
  if (lo.value > hi.value) {
    throw new ValidationError("'min' is above 'max'; swap them or use order=desc.", [
      { path: "min", message: "must not be above max" },
    ]);
  }
  return { min: lo, max: hi };
}

/** Which calendar buckets a read or rollup covers. */
export interface PeriodRange {
  period: Period;
  /** Start of the first period (inclusive). */
  from: number;
  /** Start of the last period (inclusive). */
  to: number;
  /** Start time of every bucket in range. */
  starts: number[];
  /** True when the last period has ended at `now`: its union can no longer change except by late writes. */
  finished: boolean;
}

export interface PeriodOptions {
  /** Read the union of this period's buckets (`hour`, `day`, `week`, `month`, UTC) from `from` to `to`. @default undefined (the plain counter) */
  period?: Period | undefined;
  /** Epoch ms or ISO-8601; the period containing it is the first. @default the period of `to` */
  from?: string | number | undefined;
  /** Epoch ms or ISO-8601; the period containing it is the last. @default now */
  to?: string | number | undefined;
}

/** A time of day followed by a space and an offset: what `+hh:mm` becomes when its `+` is read as a space. */
const OFFSET_AS_SPACE = /(T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?) (\d{2}:?\d{2})$/;

function when(value: string | number, field: string): number {
  // A query string carries epoch ms as text: the `range.from`/`range.to` an answer gives must be
  // usable as the next request's from/to (review 7). Five digits or more, so `from=2026` is not
  // 1970. Only here: a body's `at` is a number or ISO-8601 text, as in every feature.
  // A `+` sent unencoded arrives as a space (form decoding): `…T01:00:00 01:00` is `+01:00`, as a
  // score bound's ` inf` is `+inf` (review 20: `-01:00` was read, `+01:00` a 400).
  if (typeof value === "string") value = value.replace(OFFSET_AS_SPACE, "$1+$2");
  const ms = parseBucketTime(typeof value === "string" && /^-?\d{5,16}$/.test(value) ? Number(value) : value);
  if (ms === null)
    throw new ValidationError(`'${field}' must be epoch milliseconds or an ISO-8601 date.`, [
      { path: field, message: BUCKET_TIME_PROBLEM },
    ]);
  return ms;
}

/** Resolves `period`/`from`/`to` into buckets; undefined when the read is of the plain counter. */
export function periodRange(options: PeriodOptions, now: number): PeriodRange | undefined {
  const { period } = options;
  if (period === undefined) {
    const stray = (["from", "to"] as const).find((f) => options[f] !== undefined);
    if (stray)
      throw new ValidationError(`'${stray}' needs 'period' (hour, day, week or month).`, [
        { path: stray, message: "only allowed with period" },
      ]);
    return undefined;
  }
  if (!PERIODS.includes(period))
    throw new ValidationError("'period' must be hour, day, week or month.", [
      { path: "period", message: "must be hour|day|week|month" },
    ]);
  const to = options.to === undefined ? now : when(options.to, "to");
  const from = options.from === undefined ? to : when(options.from, "from");
  if (from > to)
    throw new ValidationError("'from' is after 'to'.", [{ path: "from", message: "must not be after to" }]);
  if (to - from > MAX_RANGE_DAYS * DAY) {
    throw new ValidationError(`A range may span at most ${MAX_RANGE_DAYS} days; split it.`, [
      { path: "to", message: `at most ${MAX_RANGE_DAYS} days after from` },
    ]);
  }
  const starts = periodsBetween(period, from, to);
  return {
    period,
    from: periodStart(period, from),
    to: periodStart(period, to),
    starts,
    finished: periodEnd(period, to) <= now,
  };
}

/** Redis' AGGREGATE keyword for an aggregate. */
export function aggregateArg(aggregate: Aggregate): string {
  return aggregate.toUpperCase();
}

/** True when every member reads as a finite decimal number, so numeric order makes sense. */
export function allNumeric(members: readonly string[]): boolean {
  return members.every((m) => DECIMAL.test(m) && Number.isFinite(Number(m)));
}

/** Code point order, which is the UTF-8 byte order Redis uses for equal scores (JS `<` is UTF-16 order). */
export function compareCodePoints(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = (x[i]?.codePointAt(0) ?? 0) - (y[i]?.codePointAt(0) ?? 0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

/** A decimal's exact value as sign × 0.digits × 10^exp (digits without leading or trailing zeros). */
function decimalParts(text: string): { sign: number; digits: string; exp: bigint } {
  const m = DECIMAL.exec(text);
  if (!m) throw new Error(`not a decimal: ${text}`);
  const sign = text.startsWith("-") ? -1 : 1;
  const [int = "", frac = ""] = (m[1] ?? "").split(".");
  const all = int + frac;
  const lead = all.length - all.replace(/^0+/, "").length;
  const digits = all.slice(lead).replace(/0+$/, "");
  if (digits === "") return { sign: 0, digits, exp: 0n };
  return { sign, digits, exp: BigInt(int.length - lead) + BigInt(m[3]?.slice(1) ?? 0) };
}

/**
 * Exact order of two decimal strings: their doubles tie past 17 significant digits
 * ("99999999999999999" and "100000000000000001" are both 1e17) or below the smallest double
 * ("9e-401" and "1e-400" are both 0), where their text is not their numeric order (review 10).
 */
export function compareDecimals(a: string, b: string): number {
  const x = decimalParts(a);
  const y = decimalParts(b);
  if (x.sign !== y.sign) return x.sign - y.sign;
  if (x.sign === 0) return 0;
  let d = x.exp === y.exp ? 0 : x.exp > y.exp ? 1 : -1;
  // same exponent: the digit strings, as fractions after the point, compare as text
  if (d === 0) d = x.digits === y.digits ? 0 : x.digits > y.digits ? 1 : -1;
  return d === 0 ? 0 : x.sign * d;
}

/**
 * Orders members by their own value: numerically when all are numbers (exactly: equal doubles
 * are told apart by their decimal text's value; equal values such as "1" and "1.0" by text), else
 * by code point. Upstash has no SORT, and SORT would still need a second round trip for the scores.
 */
export function sortByMember<T extends { member: string }>(
  items: T[],
  order: "asc" | "desc",
): { items: T[]; numeric: boolean } {
  const numeric = allNumeric(items.map((i) => i.member));
  const sign = order === "asc" ? 1 : -1;
  const sorted = [...items].sort((a, b) => {
    // rounding to a double keeps order, so only equal doubles need the exact comparison
    const d = numeric ? Number(a.member) - Number(b.member) || compareDecimals(a.member, b.member) : 0;
    return sign * (d !== 0 ? d : compareCodePoints(a.member, b.member));
  });
  return { items: sorted, numeric };
}
