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
    /**
     * `_online`: room → its online count at the trim job's latest visit (rooms with someone online
     * only), and field `_sum` → their sum, the site-wide figure (site-lua.ts); no key when 0.
     */
    counted: keyOf(prefix, "presence", "_online"),
  };
}

/** Site-wide keys of the UTC day containing `ms` (names start with `_`, like the registries). */
export function siteDayKeys(prefix: string, ms: number) {
  return {
    /** HyperLogLog of every id seen that day in any room: site-wide AU (an estimate). */
    active: keyOf(prefix, "presence", "_au", dayLabel(ms)),
    /**
     * The trim job's samples of the online count across rooms, 128 bits: u32 highest sample of
     * the day, u32 when it was first reached (ms since 00:00 UTC), u32 latest sample, u32 when
     * that was taken (ms since 00:00 UTC + 1; 0: none yet). Lives to the end of the next day.
     */
    total: keyOf(prefix, "presence", "_total", dayLabel(ms)),
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
    /**
     * Id → compact id (also "seen within the horizon", which is what makes an id new), and compact
     * id n → id under the field `\x01<n>` (reverseLua, scripts.ts), to list members: one HSET maps
     * a new id both ways; and an id's latest leave (ms) under `\x02<id>` (leftField, scripts.ts).
     */
    ids: keyOf(prefix, "presence", room, "ids"),
    /** Compact id → id of ids mapped before the reverse map moved into `ids`: read for those, written never. */
    names: keyOf(prefix, "presence", room, "names"),
    /** Last compact id handed out (never handed out again). */
    seq: keyOf(prefix, "presence", room, "seq"),
    /** One sample of the online count per minute of the day (a 1,440-slot ring). */
    history: keyOf(prefix, "presence", room, "history"),
    /** The figures of past days, a 401-slot ring of DAY_RECORD_BYTES records (see below). */
    days: keyOf(prefix, "presence", room, "days"),
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
 *   bits  96..127  u32  last heartbeat, ms since 00:00 UTC + 1 (0: none yet); its top bit (96, never
 *                       part of a time: a day has fewer than 2^27 ms) is IDLED_FLAG
 *   bits 128..     u1   one per compact id seen that day (AU = BITCOUNT from byte 16)
 */
export const HEADER_BYTES = 16;
export const HEADER_BITS = HEADER_BYTES * 8;
/**
 * Set in the last-heartbeat field by the trim job when it takes a room with a heartbeat that day
 * for idle (and schedules its next visit days later); the next heartbeat's BITFIELD clears it and,
 * seeing it, makes the room active again, also when it is a late one (queued) within a timeout of
 * the room's last heartbeat, which would otherwise be online with no run visiting the room.
 */
export const IDLED_FLAG = 2 ** 31;

/**
 * History points are members `<minute of the day>` (a 1,440-slot ring: memory
 * stays bounded and a rerun of the minute overwrites its own point) scored
 * `minute index × 10^7 + online`, so one ZADD writes a point and a score range
 * reads a time range.
 */
export const HISTORY_SCALE = 10_000_000;

/**
 * The room's past days, `days`: one 18-byte record per UTC day in slot `day mod DAY_SLOTS` (day =
 * days since 1970-01-01), so a room keeps at most DAY_SLOTS × 18 bytes (7.2 KB) whatever its age:
 *
 *   bits   0..15   u16  the day the slot holds (0: empty; a slot of another day reads as empty)
 *   bits  16..47   u32  PCU
 *   bits  48..79   u32  when PCU was first reached, ms since 00:00 UTC
 *   bits  80..111  u32  AU
 *   bits 112..143  u32  NU
 *
 * A record is the daily bitmap's header and AU copied when the day is over or the room goes idle
 * (the trim job), so a day outlives its bitmap (two days) by 400 days.
 */
export const DAY_RECORD_BITS = 144;
/** Slots of the ring: today and the 400 days before it. */
export const DAY_SLOTS = 401;

/** Days since 1970-01-01 of the UTC day containing `ms`. */
export function dayNumber(ms: number): number {
  return Math.floor(ms / DAY);
}

/** Bit offset of the record of `day` (a day number) in `days`. */
export function daySlotBit(day: number): number {
  return (day % DAY_SLOTS) * DAY_RECORD_BITS;
}

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
 * next day; three days are named for safety, and tomorrow's), and the keys of earlier
 * versions (`online`, `day:`, `au:`), which expire by themselves but must go
 * with the room.
 */
export function allRoomKeys(prefix: string, room: string, now: number): string[] {
  const days = [0, 1, 2].map((back) => now - back * DAY);
  return [
    ...Object.values(roomKeys(prefix, room)),
    ...days.map((ms) => dayKeys(prefix, room, ms).daily),
    // tomorrow's too: a Worker whose clock is already past midnight may have written it (review 8)
    dayKeys(prefix, room, now + DAY).daily,
    keyOf(prefix, "presence", room, "online"),
    ...days.flatMap((ms) => [
      keyOf(prefix, "presence", room, "day", dayLabel(ms)),
      keyOf(prefix, "presence", room, "au", dayLabel(ms)),
    ]),
  ];
}
