import type { Ctx } from "../context.ts";
import { ValidationError, type FieldIssue } from "../errors.ts";
import { asList, runRead, runWrite, type Idempotency } from "../redis/script.ts";
import { DAY, HOUR, MINUTE, SECOND, dayStart } from "../time.ts";
import { MAX_BATCH, assertName, memberProblem } from "../validation.ts";
import { allRoomKeys, dayKeys, legacyRegistryKeys, registryKeys, roomKeys } from "./keys.ts";
import { DELETE_ROOM, HEARTBEAT, HISTORY, HISTORY_SCALE, LEAVE, MEMBERS, ROOMS, STATS } from "./scripts.ts";

/** Seconds without a heartbeat after which an id is offline, unless configured. */
export const DEFAULT_TIMEOUT_SECONDS = 300;
/** History points kept: one a minute for a day. */
export const HISTORY_HOURS = 24;
/** History lives this long past its last refresh while the room is active (refreshed every hour). */
export const HISTORY_ACTIVE_TTL_SECONDS = (26 * HOUR) / SECOND;
/** ... and this long once the room went idle: its last day stays readable. */
export const HISTORY_IDLE_TTL_SECONDS = (25 * HOUR) / SECOND;
export const MAX_ROOMS_LISTED = 1000;
export const MAX_MEMBERS_PAGE = 1000;

/**
 * A daily key lives to the end of the next UTC day: a fixed deadline, set once
 * when the key is created (no EXPIRE per heartbeat).
 */
export function dailyTtlSeconds(now: number): number {
  return Math.ceil((dayStart(now) + 2 * DAY - now) / SECOND);
}

export interface PresenceOptions {
  /**
   * Seconds without a heartbeat after which an id is offline.
   * @default 300
   */
  timeoutSeconds?: number;
}

export interface HeartbeatOptions extends PresenceOptions {
  /** The request's Idempotency-Key record, when it has one. @default undefined */
  idempotency?: Idempotency;
}

export interface HeartbeatResult {
  /** Ids online in the room right after this heartbeat. */
  online: number;
  /** Ids of this batch never seen in the room before. */
  new: number;
}

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

function timeoutMs(options: PresenceOptions): number {
  const seconds = options.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
  if (!Number.isInteger(seconds) || seconds < 1) throw new Error(`timeoutSeconds must be a positive integer, not ${seconds}`);
  return seconds * SECOND;
}

/** Rejects the whole batch when any id is bad, naming each bad one. */
export function requireIds(ids: readonly string[], path = "ids"): void {
  if (ids.length === 0 || ids.length > MAX_BATCH) {
    throw new ValidationError(`Send 1 to ${MAX_BATCH} ids per request.`, [{ path, message: `must hold 1 to ${MAX_BATCH} ids` }]);
  }
  const details: FieldIssue[] = [];
  ids.forEach((id, i) => {
    const problem = typeof id === "string" ? memberProblem(id) : "must be a string";
    if (problem) details.push({ path: `${path}.${i}`, message: problem });
  });
  const first = details[0];
  if (first) throw new ValidationError(`Invalid id at ${first.path}: ${first.message}.`, details);
}

/** Records that `ids` are online in `room` now; one round trip. */
export async function heartbeat(ctx: Ctx, room: string, ids: readonly string[], options: HeartbeatOptions = {}): Promise<{ value: HeartbeatResult; replayed: boolean }> {
  assertName(room, "room");
  requireIds(ids);
  const timeout = timeoutMs(options);
  const keys = roomKeys(ctx.prefix, room);
  const today = dayKeys(ctx.prefix, room, ctx.now);
  const registry = registryKeys(ctx.prefix);
  return runWrite<HeartbeatResult>(
    ctx.redis,
    HEARTBEAT,
    [keys.seen, keys.ids, keys.names, keys.seq, today.daily, keys.history, registry.due, registry.rooms],
    [ctx.now, ctx.now - timeout, timeout, ctx.now - dayStart(ctx.now), dailyTtlSeconds(ctx.now), HISTORY_ACTIVE_TTL_SECONDS, room, ...ids],
    options.idempotency,
  );
}

/**
 * Takes `id` offline at once: its last-seen moves to just past the timeout
 * (never later than it was). It only ends the online session: the id stays
 * mapped (not new when it comes back), and AU, NU, PCU and history keep their
 * values. True when the id was online.
 */
export async function leave(ctx: Ctx, room: string, id: string, options: PresenceOptions = {}): Promise<boolean> {
  assertName(room, "room");
  requireIds([id], "id");
  const timeout = timeoutMs(options);
  const keys = roomKeys(ctx.prefix, room);
  const { value } = await runWrite<number>(ctx.redis, LEAVE, [keys.seen, keys.ids], [id, ctx.now - timeout - 1]);
  return value === 1;
}

/** Online now (exact at this moment, trimmed or not), peak, active and new today. */
export async function roomStats(ctx: Ctx, room: string, options: PresenceOptions = {}): Promise<RoomStats> {
  assertName(room, "room");
  const timeout = timeoutMs(options);
  const keys = roomKeys(ctx.prefix, room);
  const today = dayKeys(ctx.prefix, room, ctx.now);
  const raw = await runRead<{ online: number; peak: number; peakAt: number; new: number; active: number }>(
    ctx.redis,
    STATS,
    [keys.seen, today.daily],
    [ctx.now - timeout],
  );
  const day = dayStart(ctx.now);
  // Ids carried over midnight count towards today's peak before the job or a heartbeat records it.
  const carried = raw.online > raw.peak;
  return {
    room,
    online: raw.online,
    timeoutSeconds: timeout / SECOND,
    peakToday: carried ? raw.online : raw.peak,
    peakAt: carried ? ctx.now : raw.peak === 0 ? null : day + raw.peakAt,
    activeToday: raw.active,
    newToday: raw.new,
    day,
  };
}

const CURSOR = /^(\d{1,16})-([1-9]\d{0,15})$/;

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
export async function listMembers(ctx: Ctx, room: string, options: ListMembersOptions = {}): Promise<MemberPage> {
  assertName(room, "room");
  const limit = options.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_MEMBERS_PAGE) {
    throw new ValidationError(`limit must be an integer from 1 to ${MAX_MEMBERS_PAGE}.`, [{ path: "limit", message: `must be 1..${MAX_MEMBERS_PAGE}` }]);
  }
  let score = "";
  let member = "";
  if (options.cursor !== undefined && options.cursor !== "") {
    const m = CURSOR.exec(options.cursor);
    if (!m) throw new ValidationError("cursor must be a nextCursor this endpoint returned.", [{ path: "cursor", message: "not a cursor of this endpoint" }]);
    score = m[1] ?? "";
    member = m[2] ?? "";
  }
  const timeout = timeoutMs(options);
  const keys = roomKeys(ctx.prefix, room);
  const raw = await runRead<{ items: [string, string, string][] | Record<string, never>; more: boolean }>(
    ctx.redis,
    MEMBERS,
    [keys.seen, keys.names],
    [ctx.now - timeout, limit, score, member],
  );
  const items = asList(raw.items);
  const last = items[items.length - 1];
  return {
    members: items.map(([id, lastSeen]) => ({ id, lastSeen: Number(lastSeen) })),
    nextCursor: raw.more && last ? `${last[1]}-${last[2]}` : null,
  };
}

/** Per-minute samples of the online count over the last `hours` (1..24), oldest first. */
export async function history(ctx: Ctx, room: string, hours = HISTORY_HOURS): Promise<{ points: { at: number; online: number }[] }> {
  assertName(room, "room");
  if (!Number.isInteger(hours) || hours < 1 || hours > HISTORY_HOURS) {
    throw new ValidationError(`hours must be an integer from 1 to ${HISTORY_HOURS}.`, [{ path: "hours", message: `must be 1..${HISTORY_HOURS}` }]);
  }
  const keys = roomKeys(ctx.prefix, room);
  // Points at minutes m with now - hours < m <= now (minute times are whole minutes).
  const low = (Math.floor((ctx.now - hours * HOUR) / MINUTE) + 1) * HISTORY_SCALE;
  const high = Math.floor(ctx.now / MINUTE) * HISTORY_SCALE + HISTORY_SCALE - 1;
  const raw = asList(await runRead<string[] | Record<string, never>>(ctx.redis, HISTORY, [keys.history], [low, high]));
  const points: { at: number; online: number }[] = [];
  for (let i = 1; i < raw.length; i += 2) {
    const score = Number(raw[i]);
    points.push({ at: Math.floor(score / HISTORY_SCALE) * MINUTE, online: score % HISTORY_SCALE });
  }
  return { points };
}

const ROOM_CURSOR = /^(\d{1,16}):([A-Za-z0-9][A-Za-z0-9_.-]{0,63})$/;

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
 * can push a room off the first page, never out of the list.
 */
export async function listRooms(ctx: Ctx, options: ListRoomsOptions = {}): Promise<RoomPage> {
  const limit = options.limit ?? MAX_ROOMS_LISTED;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_ROOMS_LISTED) {
    throw new ValidationError(`limit must be an integer from 1 to ${MAX_ROOMS_LISTED}.`, [{ path: "limit", message: `must be 1..${MAX_ROOMS_LISTED}` }]);
  }
  let score = "";
  let after = "";
  if (options.cursor !== undefined && options.cursor !== "") {
    const m = ROOM_CURSOR.exec(options.cursor);
    if (!m) throw new ValidationError("cursor must be a nextCursor this endpoint returned.", [{ path: "cursor", message: "not a cursor of this endpoint" }]);
    score = m[1] ?? "";
    after = m[2] ?? "";
  }
  const raw = await runRead<{ rooms: string[] | Record<string, never>; more: boolean }>(ctx.redis, ROOMS, [registryKeys(ctx.prefix).rooms], [limit, score, after]);
  const flat = asList(raw.rooms);
  const rooms: string[] = [];
  for (let i = 0; i < flat.length; i += 2) rooms.push(flat[i] ?? "");
  const last = flat.length >= 2 ? `${flat[flat.length - 1]}:${flat[flat.length - 2]}` : null;
  return { rooms, truncated: raw.more, nextCursor: raw.more ? last : null };
}

/** Removes every key of the room and its registry entries; true when anything existed. */
export async function deleteRoom(ctx: Ctx, room: string): Promise<boolean> {
  assertName(room, "room");
  const registry = registryKeys(ctx.prefix);
  const { value } = await runWrite<number>(
    ctx.redis,
    DELETE_ROOM,
    [registry.rooms, registry.due, ...legacyRegistryKeys(ctx.prefix), ...allRoomKeys(ctx.prefix, room, ctx.now)],
    [room],
  );
  return value > 0;
}

/** The minute a timestamp falls in (epoch ms), which labels a history point. */
export function minuteOf(ms: number): number {
  return Math.floor(ms / MINUTE) * MINUTE;
}
