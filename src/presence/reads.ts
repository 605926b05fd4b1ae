import type { Ctx } from "../context.ts";
import { activityCursor, nextActivityCursor } from "../redis/pages.ts";
import { asList } from "../redis/script.ts";
import { DAY, HOUR, MINUTE, SECOND, dayStart } from "../time.ts";
import { assertName } from "../validation.ts";
import { HISTORY_SCALE, dayKeys, dayNumber, daySlotBit, registryKeys, roomKeys, siteDayKeys } from "./keys.ts";
import type { PresenceOptions } from "./presence.ts";
import { dayScript, historyScript, membersScript, roomsScript, statsScript, totalScript } from "./read-scripts.ts";
import {
  HISTORY_HOURS,
  keptDay,
  memberCursor,
  pageLimit,
  timeoutMs,
  MAX_MEMBERS_PAGE,
  MAX_ROOMS_LISTED,
} from "./validate.ts";

// Presence's reads, one round trip each (their scripts are in read-scripts.ts); the writes
// (heartbeat, leave, delete a room) are in presence.ts.

export interface RoomStats {
  room: string;
  online: number;
  timeoutSeconds: number;
  /** Most ids online at once since UTC midnight. */
  peakToday: number;
  /** When `peakToday` was first reached (epoch ms); null before anyone was online today. */
  peakAt: number | null;
  /** Distinct ids seen since UTC midnight (exact). */
  activeToday: number;
  /** Ids seen since UTC midnight for the first time ever in this room. */
  newToday: number;
  /** Start of the UTC day the daily figures are for (epoch ms). */
  day: number;
}

export interface MemberPage {
  members: { id: string; lastSeen: number }[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/** Online now (exact at this moment, trimmed or not), peak, active and new today. */
export async function stats(ctx: Ctx, room: string, options: PresenceOptions = {}): Promise<RoomStats> {
  assertName(room, "room");
  const timeout = timeoutMs(options.timeoutSeconds);
  const raw = await statsScript.run<{
    online: number;
    peak: number;
    peakAt: number;
    last: number;
    new: number;
    active: number;
  }>(
    ctx.redis,
    { seen: roomKeys(ctx.prefix, room).seen, daily: dayKeys(ctx.prefix, room, ctx.now).daily },
    { cutoff: ctx.now - timeout },
  );
  const day = dayStart(ctx.now);
  const peak = readPeak(raw, day);
  return {
    room,
    online: raw.online,
    timeoutSeconds: timeout / SECOND,
    peakToday: peak.peak,
    peakAt: peak.peakAt,
    activeToday: raw.active,
    newToday: raw.new,
    day,
  };
}

/**
 * The day's peak as read: the recorded one, or who is online now when more. Ids carried over
 * midnight count towards today's peak before the job or a heartbeat records it; while the day has
 * no heartbeat they were all online at 00:00 (seen before it, online still), so that is when the
 * count was first reached: the day's start, not the read's time, which would move with every read.
 * After a heartbeat of the day (a late one can leave the recorded peak short) the count held at the
 * day's latest heartbeat, which every last-seen is at or before: never 00:00 when nobody was online
 * then (review 4).
 */
function readPeak(raw: { online: number; peak: number; peakAt: number; last: number }, from: number) {
  if (raw.online > raw.peak) return { peak: raw.online, peakAt: raw.last === 0 ? from : from + raw.last - 1 };
  return { peak: raw.peak, peakAt: raw.peak === 0 ? null : from + raw.peakAt };
}

export interface RoomDay {
  room: string;
  /** The UTC day, `YYYY-MM-DD`. */
  day: string;
  /** Its start (epoch ms). */
  from: number;
  /** Most ids online at once that day (PCU). */
  peak: number;
  /** When `peak` was first reached (epoch ms); null when nobody was online that day. */
  peakAt: number | null;
  /** Distinct ids seen that day (AU, exact). */
  active: number;
  /** Ids seen that day for the first time in the room (NU). */
  new: number;
}

/**
 * A day's peak, active and new ids, for today and the DAYS_KEPT (400) days before it; one round
 * trip. Today and yesterday are read from their daily bitmaps (exact, live); older days from the
 * record the trim job copied when the day ended or the room went idle. A day without data reads
 * as zeros (as an unknown room does).
 */
export async function day(ctx: Ctx, room: string, date: string, options: PresenceOptions = {}): Promise<RoomDay> {
  assertName(room, "room");
  const from = keptDay(date, ctx.now);
  const timeout = timeoutMs(options.timeoutSeconds);
  const n = dayNumber(from);
  const today = dayNumber(ctx.now);
  const keys = roomKeys(ctx.prefix, room);
  const raw = await dayScript.run<{
    peak: number;
    peakAt: number;
    last: number;
    active: number;
    new: number;
    online: number;
  }>(
    ctx.redis,
    { seen: keys.seen, daily: dayKeys(ctx.prefix, room, from).daily, days: keys.days },
    {
      mode: n === today ? "today" : n === today - 1 ? "live" : "archive",
      cutoff: ctx.now - timeout,
      offset: daySlotBit(n),
      day: n,
    },
  );
  // as in stats(): who is online now counts towards today's peak (online is 0 for past days)
  const peak = readPeak(raw, from);
  return {
    room,
    day: date,
    from,
    peak: peak.peak,
    peakAt: peak.peakAt,
    active: raw.active,
    new: raw.new,
  };
}

/** Relative standard error of Redis's HyperLogLog (PFCOUNT), which counts site-wide active ids. */
export const HLL_STANDARD_ERROR = 0.0081;

export interface SiteTotal {
  /**
   * Ids online across rooms (an id in two rooms counts twice) in the trim job's latest sample: the
   * sum of each room's count at its latest visit (a capped run's unvisited rooms at their last).
   */
  online: number;
  /** When that sample was recorded (a trim run, or the delete of a counted room; epoch ms); null when none has been. */
  onlineAt: number | null;
  /** Highest `online` sample since UTC midnight (samples are a minute apart). */
  peakToday: number;
  /** When `peakToday` was first sampled (epoch ms); null before any sample above 0 today. */
  peakAt: number | null;
  /** Distinct ids seen since UTC midnight in any room: a HyperLogLog estimate. */
  activeToday: number;
  /** Relative standard error of `activeToday` (0.0081: 0.81 %). */
  activeTodayError: number;
  /** Start of the UTC day the daily figures are for (epoch ms). */
  day: number;
}

/**
 * Site-wide figures without a scan over rooms: the trim job keeps each room's online count at its
 * latest visit and their sum (site-lua.ts), samples the sum each minute and keeps the day's highest; the heartbeat adds
 * an id to the day's HyperLogLog the first time it is seen that day in a room. One round trip.
 */
export async function total(ctx: Ctx): Promise<SiteTotal> {
  const today = siteDayKeys(ctx.prefix, ctx.now);
  const raw = await totalScript.run<{
    online: number;
    at: number;
    yesterday: boolean;
    peak: number;
    peakAt: number;
    active: number;
  }>(
    ctx.redis,
    { site: today.total, siteYesterday: siteDayKeys(ctx.prefix, ctx.now - DAY).total, siteActive: today.active },
    {},
  );
  const day = dayStart(ctx.now);
  const sampledOn = raw.yesterday ? day - DAY : day;
  return {
    online: raw.online,
    onlineAt: raw.at === 0 ? null : sampledOn + raw.at - 1,
    peakToday: raw.peak,
    peakAt: raw.peak === 0 ? null : day + raw.peakAt,
    activeToday: raw.active,
    activeTodayError: HLL_STANDARD_ERROR,
    day,
  };
}

export interface ListMembersOptions extends PresenceOptions {
  /** Members per page, 1..1000. @default 100 */
  limit?: number;
  /** `nextCursor` of the previous page. @default undefined (first page) */
  cursor?: string;
}

/**
 * Online members, least recently seen first. A member that heartbeats while
 * someone pages moves to the end, so it may be listed twice but is never
 * skipped; members that stay online throughout appear at least once.
 */
export async function members(ctx: Ctx, room: string, options: ListMembersOptions = {}): Promise<MemberPage> {
  assertName(room, "room");
  const limit = pageLimit(options.limit, 100, MAX_MEMBERS_PAGE);
  const { score, member } = memberCursor(options.cursor);
  const timeout = timeoutMs(options.timeoutSeconds);
  const keys = roomKeys(ctx.prefix, room);
  const raw = await membersScript.run<{ items: [string, string, string][] | Record<string, never>; more: boolean }>(
    ctx.redis,
    keys,
    { cutoff: ctx.now - timeout, limit, score, member },
  );
  const items = asList(raw.items);
  const last = items[items.length - 1];
  return {
    members: items.map(([id, lastSeen]) => ({ id, lastSeen: Number(lastSeen) })),
    nextCursor: raw.more && last ? `${last[1]}-${last[2]}` : null,
  };
}

/** Per-minute samples of the online count over the last `hours` (1..24), oldest first. */
export async function history(
  ctx: Ctx,
  room: string,
  hours = HISTORY_HOURS,
): Promise<{ points: { at: number; online: number }[] }> {
  assertName(room, "room");
  pageLimit(hours, HISTORY_HOURS, HISTORY_HOURS, "hours");
  const keys = roomKeys(ctx.prefix, room);
  // Points at minutes m with now - hours < m <= now (minute times are whole minutes).
  const low = (Math.floor((ctx.now - hours * HOUR) / MINUTE) + 1) * HISTORY_SCALE;
  const high = Math.floor(ctx.now / MINUTE) * HISTORY_SCALE + HISTORY_SCALE - 1;
  const raw = asList(await historyScript.run<string[] | Record<string, never>>(ctx.redis, keys, { low, high }));
  const points: { at: number; online: number }[] = [];
  for (let i = 1; i < raw.length; i += 2) {
    const score = Number(raw[i]);
    points.push({ at: Math.floor(score / HISTORY_SCALE) * MINUTE, online: score % HISTORY_SCALE });
  }
  return { points };
}

export interface ListRoomsOptions {
  /** Rooms per page, 1..1000. @default 1000 */
  limit?: number;
  /** `nextCursor` of the previous page. @default undefined (first page) */
  cursor?: string;
}

export interface RoomPage {
  /** Most recently active first. */
  rooms: string[];
  /** True when more rooms follow (same as `nextCursor !== null`). */
  truncated: boolean;
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/**
 * Listed rooms (active within the last two days), most recently active first,
 * a page at a time; never a key scan. Activity is the time the room became
 * active, refreshed every hour while it stays active. A flood of new rooms
 * can push a room off the first page, never out of the list. A pass (first
 * page to `nextCursor` null) lists every room listed throughout at least once:
 * rooms whose activity rose past the pass's start while it ran follow at its
 * end, so such a room may be listed twice (src/redis/pages.ts).
 */
export async function rooms(ctx: Ctx, options: ListRoomsOptions = {}): Promise<RoomPage> {
  const limit = pageLimit(options.limit, MAX_ROOMS_LISTED, MAX_ROOMS_LISTED);
  const { score, member, high, low } = activityCursor(options.cursor);
  const raw = await roomsScript.run<{ rooms: string[] | Record<string, never>; next: string[] | false }>(
    ctx.redis,
    { rooms: registryKeys(ctx.prefix).rooms },
    { limit, score, room: member, high, low },
  );
  const flat = asList(raw.rooms);
  const names: string[] = [];
  for (let i = 0; i < flat.length; i += 2) names.push(flat[i] ?? "");
  const nextCursor = nextActivityCursor(raw.next);
  return { rooms: names, truncated: nextCursor !== null, nextCursor };
}
