import type { Ctx } from "../context.ts";
import type { Idempotency, Written } from "../redis/script.ts";
import { DAY, HOUR, MINUTE, SECOND, dayStart } from "../time.ts";
import { NAME_RULE, assertName, invalid, isName, memberProblem } from "../validation.ts";
import { allRoomKeys, dayKeys, legacyRegistryKeys, registryKeys, roomKeys, siteDayKeys } from "./keys.ts";
import { UNMAPPED_MARK_KEPT_MS, deleteRoomScript, heartbeatScript, leaveScript, markEntry } from "./scripts.ts";
import { requireIds, timeoutMs } from "./validate.ts";

// Presence's writes (heartbeat, leave, delete a room) and the lifetimes they and the trim job give
// keys; the reads are in reads.ts.

/** History lives this long past its last refresh while the room is active (refreshed every hour). */
export const HISTORY_ACTIVE_TTL_SECONDS = (26 * HOUR) / SECOND;
/** ... and this long once the room went idle: its last day stays readable. */
export const HISTORY_IDLE_TTL_SECONDS = (25 * HOUR) / SECOND;

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
  /**
   * Each id's own time (ms, aligned with `ids`), when it is earlier than `ctx.now`: the queued
   * consumer applies a window's ids at its latest time, but a leave is compared with each id's own.
   * @default undefined (every id's time is `ctx.now`)
   */
  sentAt?: readonly number[];
}

export interface HeartbeatResult {
  /**
   * Ids online in the room right after this heartbeat: those a read at its time counts, ids seen
   * after its time (by a Worker whose clock is ahead) included (docs/presence.md, review 24).
   */
  online: number;
  /** Ids of this batch not seen in the room within the id horizon (never, or forgotten since). */
  new: number;
}

/**
 * Records that `ids` are online in `room` now; one round trip. `internal.queued`: the queued
 * consumer's call, which drops the answer (a late heartbeat then skips the command that makes it).
 */
export async function heartbeat(
  ctx: Ctx,
  room: string,
  ids: readonly string[],
  options: HeartbeatOptions = {},
  internal: { queued?: boolean } = {},
): Promise<Written<HeartbeatResult>> {
  assertName(room, "room");
  requireIds(ids);
  if (options.sentAt && options.sentAt.length !== ids.length)
    throw new Error("presence.heartbeat: sentAt must give one time per id");
  const timeout = timeoutMs(options.timeoutSeconds);
  const keys = roomKeys(ctx.prefix, room);
  const registry = registryKeys(ctx.prefix);
  const { value, replayed } = await heartbeatScript.run<HeartbeatResult>(
    ctx.redis,
    {
      ...keys,
      daily: dayKeys(ctx.prefix, room, ctx.now).daily,
      due: registry.due,
      rooms: registry.rooms,
      siteActive: siteDayKeys(ctx.prefix, ctx.now).active,
    },
    {
      now: ctx.now,
      cutoff: ctx.now - timeout,
      timeout,
      ofDay: ctx.now - dayStart(ctx.now),
      dailyTtl: dailyTtlSeconds(ctx.now),
      historyTtl: HISTORY_ACTIVE_TTL_SECONDS,
      room,
      answer: internal.queued ? 0 : 1,
      batch: ids,
      sentAt: options.sentAt ?? [],
    },
    options.idempotency,
  );
  return { ...value, replayed };
}

/**
 * Takes `id` offline at once: its last-seen moves to just past the timeout
 * (never later than it was). It only ends the online session: the id stays
 * mapped (not new when it comes back), and AU, NU, PCU and history keep their
 * values. `left`: the id was online.
 */
export async function leave(
  ctx: Ctx,
  room: string,
  id: string,
  options: PresenceOptions = {},
): Promise<Written<{ left: boolean }>> {
  // the one id is the field `id`, as `DELETE …/members/{id}` names it (requireIds would say `id.0`;
  // review 19); a bad room and a bad id are refused together, as that route does (review 21)
  const problem = typeof id === "string" ? memberProblem(id) : "must be a string";
  const issues = isName(room) ? [] : [{ path: "room", message: NAME_RULE }];
  if (problem) issues.push({ path: "id", message: problem });
  if (issues.length > 0) invalid(issues);
  const timeout = timeoutMs(options.timeoutSeconds);
  const keys = roomKeys(ctx.prefix, room);
  const { value, replayed } = await leaveScript.run<number>(
    ctx.redis,
    { ...keys, due: registryKeys(ctx.prefix).due },
    {
      id,
      now: ctx.now,
      offlineAt: ctx.now - timeout - 1,
      entry: markEntry(room, id),
      dropAt: ctx.now + timeout + UNMAPPED_MARK_KEPT_MS,
      // the expiry of an `ids` hash the leave makes (relative: Redis's clock may differ from ours)
      keep: timeout + UNMAPPED_MARK_KEPT_MS,
    },
  );
  return { left: value === 1, replayed };
}

/**
 * Removes every key of the room and its registry entries, and its count from the site-wide online
 * figure (a new sample then); `existed`: anything was there.
 */
export async function deleteRoom(ctx: Ctx, room: string): Promise<Written<{ existed: boolean }>> {
  assertName(room, "room");
  const registry = registryKeys(ctx.prefix);
  const { value, replayed } = await deleteRoomScript.run<number>(
    ctx.redis,
    {
      counted: registry.counted,
      site: siteDayKeys(ctx.prefix, ctx.now).total,
      due: registry.due,
      registries: [registry.rooms, ...legacyRegistryKeys(ctx.prefix)],
      roomKeys: allRoomKeys(ctx.prefix, room, ctx.now),
    },
    { room, ofDay: ctx.now - dayStart(ctx.now), dailyTtl: dailyTtlSeconds(ctx.now) },
  );
  return { existed: value > 0, replayed };
}

/** The minute a timestamp falls in (epoch ms), which labels a history point. */
export function minuteOf(ms: number): number {
  return Math.floor(ms / MINUTE) * MINUTE;
}
