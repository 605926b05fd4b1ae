import type { Job } from "../jobs.ts";
import { asList, runWrite } from "../redis/script.ts";
import { HOUR, MINUTE, SECOND } from "../time.ts";
import { dayKeys, registryKeys, roomKeys } from "./keys.ts";
import { DAY_TTL_SECONDS, HISTORY_HOURS, minuteOf } from "./presence.ts";
import { ACTIVE_ROOMS, TRIM } from "./scripts.ts";

/** Rooms one run visits at most; the most recently active first. */
export const TRIM_MAX_ROOMS = 2000;
/** Rooms per script call (3 keys each). */
export const TRIM_CHUNK_ROOMS = 50;
/** Idle members one script call removes at most, so no call blocks Redis for long. */
export const TRIM_REMOVE_BUDGET = 20_000;
/**
 * A room stays in the active registry this long past its last heartbeat plus
 * the timeout, so the run after everyone went idle still records a 0.
 */
export const ACTIVE_MARGIN_MS = 2 * MINUTE;

export interface TrimOptions {
  /** Rooms one run visits at most, most recently active first. @default 2000 */
  maxRooms?: number;
  /** Rooms per script call (one round trip each). @default 50 */
  chunkRooms?: number;
  /** Idle members one script call removes at most. @default 20000 */
  removeBudget?: number;
}

/**
 * Every minute: removes idle members from every active room, samples each
 * room's online count into its per-minute history and today's peak.
 * Idempotent (a rerun of the same minute rewrites the same point; removing
 * idle members twice removes nothing) and bounded: at most `maxRooms` rooms
 * and `removeBudget` removals per script call; what is left waits for the
 * next run, which is harmless because reads count by time, not by trimming.
 */
export function createTrimJob(options: TrimOptions = {}): Job {
  const maxRooms = options.maxRooms ?? TRIM_MAX_ROOMS;
  const chunkRooms = options.chunkRooms ?? TRIM_CHUNK_ROOMS;
  const removeBudget = options.removeBudget ?? TRIM_REMOVE_BUDGET;
  return async (ctx, config) => {
    const cutoff = ctx.now - config.presenceTimeoutSeconds * SECOND;
    const registry = registryKeys(ctx.prefix);
    const { value: rooms } = await runWrite<string[] | Record<string, never>>(ctx.redis, ACTIVE_ROOMS, [registry.active], [cutoff - ACTIVE_MARGIN_MS, maxRooms]);
    const list = asList(rooms);
    const minute = minuteOf(ctx.now);
    let removed = 0;
    let online = 0;
    let calls = 1;
    for (let i = 0; i < list.length; i += chunkRooms) {
      const keys = list.slice(i, i + chunkRooms).flatMap((room) => {
        const k = roomKeys(ctx.prefix, room);
        return [k.online, dayKeys(ctx.prefix, room, ctx.now).day, k.history];
      });
      const { value } = await runWrite<{ removed: number; online: number }>(ctx.redis, TRIM, keys, [
        cutoff,
        ctx.now,
        minute,
        minute - HISTORY_HOURS * HOUR,
        (HISTORY_HOURS + 1) * HOUR / SECOND,
        DAY_TTL_SECONDS,
        removeBudget,
      ]);
      removed += value.removed;
      online += value.online;
      calls += 1;
    }
    return { rooms: list.length, removed, online, minute, calls, capped: list.length === maxRooms };
  };
}

export const trimPresenceJob: Job = createTrimJob();
