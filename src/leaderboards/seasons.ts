import { keyOf } from "../keys.ts";

/**
 * Seasons: a board with `reset` daily, weekly or monthly ranks each calendar
 * period (UTC; ISO weeks) in its own sorted set, `<p>:lb:<board>:ranking:<id>`.
 * A script cannot build key names, and TypeScript does not know a board's
 * reset before the call (one round trip), so every call passes the ranking key
 * of its season under each of the four policies (a "season block") and the
 * script picks the one its board's settings name.
 */
export type Reset = "none" | "daily" | "weekly" | "monthly";
export const RESETS: readonly Reset[] = ["none", "daily", "weekly", "monthly"];
export const DEFAULT_KEEP_SEASONS = 12;
/** A reset as the scripts keep it in the board's settings string (lua.ts, parseCfg). */
export const RESET_LETTER: Record<Reset, string> = { none: "n", daily: "d", weekly: "w", monthly: "m" };
export const RESET_OF: Record<string, Reset> = { n: "none", d: "daily", w: "weekly", m: "monthly" };
/** Most finished seasons a board keeps besides the current one. */
export const MAX_KEEP_SEASONS = 52;

const DAY = 86_400_000;

export interface Season {
  /** `2026-11-23` (daily), `2026-W48` (weekly), `2026-11` (monthly), `all` (none). */
  id: string;
  reset: Reset;
  /** Epoch ms of the first instant of the season (inclusive); null for `all`. */
  from: number | null;
  /** Epoch ms of the end (exclusive); null for `all`. */
  to: number | null;
}

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

function isoWeekOf(day: number): { year: number; week: number; monday: number } {
  // 1970-01-01 was a Thursday: (day + 3) % 7 is 0 on Mondays
  const monday = day - ((((day + 3) % 7) + 7) % 7);
  const thursday = new Date((monday + 3) * DAY);
  const year = thursday.getUTCFullYear();
  const jan1 = Date.UTC(year, 0, 1) / DAY;
  return { year, week: Math.floor((monday + 3 - jan1) / 7) + 1, monday };
}

/** The season of `reset` that contains the instant `at` (epoch ms). */
export function seasonAt(reset: Reset, at: number): Season {
  const day = Math.floor(at / DAY);
  const date = new Date(day * DAY);
  const y = date.getUTCFullYear();
  const m = date.getUTCMonth();
  switch (reset) {
    case "none":
      return { id: "all", reset, from: null, to: null };
    case "daily":
      return {
        id: `${pad(y, 4)}-${pad(m + 1)}-${pad(date.getUTCDate())}`,
        reset,
        from: day * DAY,
        to: (day + 1) * DAY,
      };
    case "weekly": {
      const w = isoWeekOf(day);
      return { id: `${pad(w.year, 4)}-W${pad(w.week)}`, reset, from: w.monday * DAY, to: (w.monday + 7) * DAY };
    }
    case "monthly":
      return { id: `${pad(y, 4)}-${pad(m + 1)}`, reset, from: Date.UTC(y, m, 1), to: Date.UTC(y, m + 1, 1) };
  }
}

/** The season before `season` (null for `all`). */
export function seasonBefore(season: Season): Season | null {
  return season.from === null ? null : seasonAt(season.reset, season.from - 1);
}

/** Parses a season id; null when it names no valid season. */
export function seasonById(id: string): Season | null {
  let match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(id);
  if (match) {
    const at = Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
    const season = seasonAt("daily", at);
    return season.id === id ? season : null;
  }
  match = /^(\d{4})-W(\d{2})$/.exec(id);
  if (match) {
    // ISO week 1 holds January 4th
    const jan4 = Date.UTC(Number(match[1]), 0, 4) / DAY;
    const week1 = isoWeekOf(jan4).monday;
    const season = seasonAt("weekly", (week1 + (Number(match[2]) - 1) * 7) * DAY);
    return season.id === id ? season : null;
  }
  match = /^(\d{4})-(\d{2})$/.exec(id);
  if (match) {
    const month = Number(match[2]);
    if (month < 1 || month > 12) return null;
    // Date.UTC reads years 0..99 as 1900..1999: the id must come back as asked, as above
    const season = seasonAt("monthly", Date.UTC(Number(match[1]), month - 1, 1));
    return season.id === id ? season : null;
  }
  return null;
}

/** Which season a read asks for: `current`, `previous`, or a season id. */
export type SeasonSelector = string;

export function seasonSelectorProblem(selector: string): string | null {
  if (selector === "current" || selector === "previous" || seasonById(selector)) return null;
  return "must be 'current', 'previous' or a season id (2026-11-23, 2026-W48, 2026-11)";
}

export function rankingKey(prefix: string, board: string, season: string): string {
  return season === "all" ? keyOf(prefix, "lb", board, "ranking") : keyOf(prefix, "lb", board, "ranking", season);
}

/** A script's season id as the API shows it: null for a board without seasons. */
export const seasonIdOf = (sid: string | undefined): string | null => (sid === undefined || sid === "all" ? null : sid);

const SEASONAL: readonly Reset[] = ["daily", "weekly", "monthly"];

/**
 * KEYS (8): the target season's ranking under none, daily, weekly, monthly,
 * then the ranking of the season before it under each (none: the same key,
 * never read). ARGV (12): per policy the season id ('' when the selector names
 * no season of that policy), the season's end (epoch ms, 0 for none) and the id of
 * the season before it ('' for none): under ties "reached" a player's member
 * differs per season, and the entry keeps it by season id (lua.ts, memberIn).
 */
export function seasonBlock(
  prefix: string,
  board: string,
  now: number,
  selector: SeasonSelector = "current",
): { keys: string[]; args: (string | number)[] } {
  const all = rankingKey(prefix, board, "all");
  const targets: (Season | null)[] = [selector === "current" ? seasonAt("none", now) : null];
  for (const reset of SEASONAL) {
    if (selector === "current") targets.push(seasonAt(reset, now));
    else if (selector === "previous") targets.push(seasonBefore(seasonAt(reset, now)));
    else {
      const named = seasonById(selector);
      targets.push(named && named.reset === reset ? named : null);
    }
  }
  const keys = targets.map((s) => (s ? rankingKey(prefix, board, s.id) : all));
  const before = targets.map((s) => {
    const prev = s ? seasonBefore(s) : null;
    return prev ? rankingKey(prefix, board, prev.id) : all;
  });
  const args = targets.flatMap((s) => [s ? s.id : "", s?.to ?? 0, (s && seasonBefore(s)?.id) ?? ""]);
  return { keys: [...keys, ...before], args };
}

/** The current and the MAX_KEEP_SEASONS seasons before it, per seasonal policy, newest first. */
export function keptSeasons(now: number): Record<"daily" | "weekly" | "monthly", Season[]> {
  const out = { daily: [] as Season[], weekly: [] as Season[], monthly: [] as Season[] };
  for (const reset of SEASONAL) {
    let s: Season | null = seasonAt(reset, now);
    for (let i = 0; i <= MAX_KEEP_SEASONS && s; i++) {
      out[reset as "daily"].push(s);
      s = seasonBefore(s);
    }
  }
  return out;
}
