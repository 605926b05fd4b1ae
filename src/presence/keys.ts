import { keyOf } from "../keys.ts";
import { DAY, dayLabel } from "../time.ts";

/**
 * Presence keys. Registry keys start with `_`, which no room name can, so a
 * room called `rooms` can never spell a registry key.
 */
export function registryKeys(prefix: string) {
  return {
    /** Listed rooms → last activity (ms), for `GET /v1/presence` (most recent first). */
    rooms: keyOf(prefix, "presence", "_rooms"),
    /** Room → when the trim job should visit it next (ms): active rooms now, idle rooms later. */
    due: keyOf(prefix, "presence", "_due"),
  };
}

/** Registries of earlier versions (names by bytes, last heartbeat): only deleted, never read. */
export function legacyRegistryKeys(prefix: string): string[] {
  return [keyOf(prefix, "presence", "_names"), keyOf(prefix, "presence", "_active")];
}

/** Keys of one room that do not depend on the day. */
export function roomKeys(prefix: string, room: string) {
  return {
    /** Compact id → last seen (ms), every id seen within the id horizon: online count, members, forgetting. */
    seen: keyOf(prefix, "presence", room, "seen"),
    /** Id → compact id; also "seen within the horizon", which is what makes an id new. */
    ids: keyOf(prefix, "presence", room, "ids"),
    /** Compact id → id, to list members. */
    names: keyOf(prefix, "presence", room, "names"),
    /** Last compact id handed out (never handed out again). */
    seq: keyOf(prefix, "presence", room, "seq"),
    /** One sample of the online count per minute of the day (a 1,440-slot ring). */
    history: keyOf(prefix, "presence", room, "history"),
  };
}

/**
 * The daily bitmap `daily:<yyyymmdd>` starts with a 128-bit header, read and
 * written with BITFIELD in the same command that sets the AU bits, so the
 * day's figures cost no command of their own:
 *
 *   bits   0..31   u32  NU: ids allocated that day
 *   bits  32..63   u32  PCU: most ids online at once
 *   bits  64..95   u32  when PCU was first reached, ms since 00:00 UTC
 *   bits  96..127  u32  last heartbeat, ms since 00:00 UTC + 1 (0: none yet)
 *   bits 128..     u1   one per compact id seen that day (AU = BITCOUNT from byte 16)
 */
export const HEADER_BYTES = 16;
export const HEADER_BITS = HEADER_BYTES * 8;

/**
 * History points are members `<minute of the day>` (a 1,440-slot ring: memory
 * stays bounded and a rerun of the minute overwrites its own point) scored
 * `minute index × 10^7 + online`, so one ZADD writes a point and a score range
 * reads a time range.
 */
export const HISTORY_SCALE = 10_000_000;

/** Keys of one room for the UTC day containing `ms`. */
export function dayKeys(prefix: string, room: string, ms: number) {
  return {
    /** Bitmap: a 128-bit header (NU, peak, peakAt, last heartbeat), then one bit per compact id seen that day (AU). */
    daily: keyOf(prefix, "presence", room, "daily", dayLabel(ms)),
  };
}

/**
 * Every key a room can have on the day of `now`, for deletion: its room keys,
 * the daily keys that can still exist (a daily key lives to the end of the
 * next day; three days are named for safety), and the keys of earlier
 * versions (`online`, `day:`, `au:`), which expire by themselves but must go
 * with the room.
 */
export function allRoomKeys(prefix: string, room: string, now: number): string[] {
  const days = [0, 1, 2].map((back) => now - back * DAY);
  return [
    ...Object.values(roomKeys(prefix, room)),
    ...days.map((ms) => dayKeys(prefix, room, ms).daily),
    keyOf(prefix, "presence", room, "online"),
    ...days.flatMap((ms) => [keyOf(prefix, "presence", room, "day", dayLabel(ms)), keyOf(prefix, "presence", room, "au", dayLabel(ms))]),
  ];
}
