/**
 * UTC time-bucket math. All timestamps are epoch milliseconds.
 */
export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

/**
 * How far Worker clocks (and a write applied while a read is under way) may differ: a read that
 * caches or takes a rollup whole leaves this much room for a write dated by another clock
 * (counters' cached unions, histograms' month rollup of a range ending today).
 */
export const CLOCK_SKEW_MS = MINUTE;

export type Period = "hour" | "day" | "week" | "month";
export const PERIODS: readonly Period[] = ["hour", "day", "week", "month"];

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

/**
 * Parses `at` as epoch milliseconds or an ISO-8601 string; null when neither.
 * ISO strings without a zone are read as UTC, so a bucket never depends on
 * the server's time zone.
 */
export function parseAt(value: unknown): number | null {
  if (typeof value === "number") return Number.isFinite(value) && Number.isInteger(value) ? value : null;
  if (typeof value !== "string" || value.length > 40) return null;
  if (!/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?(Z|[+-]\d{2}:?\d{2})?$/.test(value)) return null;
  // Date.parse rolls 2026-02-30 over to March 2: a date that does not exist is refused instead.
  const [year, month, day] = value.slice(0, 10).split("-").map(Number) as [number, number, number];
  const calendar = new Date(Date.UTC(year, month - 1, day));
  if (calendar.getUTCFullYear() !== year || calendar.getUTCMonth() !== month - 1 || calendar.getUTCDate() !== day)
    return null;
  const hasZone = /(Z|[+-]\d{2}:?\d{2})$/.test(value) && value.length > 10;
  const ms = Date.parse(hasZone || value.length === 10 ? value : `${value}Z`);
  return Number.isFinite(ms) ? ms : null;
}

/** Parses `24h` / `2d` into whole hours, within 1..maxHours; null otherwise. */
export function parseWindow(value: string, maxHours = 168): number | null {
  const m = /^([1-9]\d{0,3})([hd])$/.exec(value);
  if (!m) return null;
  const hours = Number(m[1]) * (m[2] === "d" ? 24 : 1);
  return hours >= 1 && hours <= maxHours ? hours : null;
}

/** Whole hours since the epoch: the hour bucket a timestamp falls in. */
export function hourIndex(ms: number): number {
  return Math.floor(ms / HOUR);
}

/** `2026112215` for the hour starting 2026-11-22T15:00Z (readable keys). */
export function hourLabel(hour: number): string {
  const d = new Date(hour * HOUR);
  return `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}${pad(d.getUTCHours())}`;
}

/** `20261122` for the UTC day containing `ms`. */
export function dayLabel(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}`;
}

/** Start (inclusive) of the UTC day containing `ms`. */
export function dayStart(ms: number): number {
  return Math.floor(ms / DAY) * DAY;
}

/** ISO-8601 week of `ms`: its year (which may differ from the calendar year) and number. */
export function isoWeek(ms: number): { year: number; week: number } {
  const d = new Date(dayStart(ms));
  const dow = (d.getUTCDay() + 6) % 7; // Monday = 0
  d.setUTCDate(d.getUTCDate() - dow + 3); // the Thursday of this week decides its year
  const year = d.getUTCFullYear();
  const jan4 = Date.UTC(year, 0, 4);
  const jan4dow = (new Date(jan4).getUTCDay() + 6) % 7;
  const week1Thursday = jan4 - jan4dow * DAY + 3 * DAY;
  return { year, week: 1 + Math.round((d.getTime() - week1Thursday) / (7 * DAY)) };
}

/** Start (inclusive) of the period containing `ms`. */
export function periodStart(period: Period, ms: number): number {
  switch (period) {
    case "hour":
      return hourIndex(ms) * HOUR;
    case "day":
      return dayStart(ms);
    case "week": {
      const day = dayStart(ms);
      return day - ((new Date(day).getUTCDay() + 6) % 7) * DAY;
    }
    case "month": {
      const d = new Date(ms);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    }
  }
}

/** Start of the period after the one containing `ms`. */
export function periodEnd(period: Period, ms: number): number {
  const start = periodStart(period, ms);
  switch (period) {
    case "hour":
      return start + HOUR;
    case "day":
      return start + DAY;
    case "week":
      return start + 7 * DAY;
    case "month": {
      const d = new Date(start);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    }
  }
}

/** Readable bucket label: `2026112215`, `20261122`, `2026-W47`, `202611`. */
export function periodLabel(period: Period, ms: number): string {
  switch (period) {
    case "hour":
      return hourLabel(hourIndex(ms));
    case "day":
      return dayLabel(ms);
    case "week": {
      const { year, week } = isoWeek(ms);
      return `${year}-W${pad(week)}`;
    }
    case "month": {
      const d = new Date(ms);
      return `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}`;
    }
  }
}

/** Start times of every period from the one containing `from` to the one containing `to`, inclusive. */
export function periodsBetween(period: Period, from: number, to: number): number[] {
  const out: number[] = [];
  for (let t = periodStart(period, from); t <= to; t = periodEnd(period, t)) out.push(t);
  return out;
}
