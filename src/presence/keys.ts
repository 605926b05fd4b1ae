import { keyOf } from "../keys.ts";
import { DAY, dayLabel } from "../time.ts";

/**
 * Presence keys. Registry keys start with `_`, which no room name can, so a
 * room called `active` can never spell a registry key.
 */
export function registryKeys(prefix: string) {
  return {
    /** Every room that ever had a heartbeat, score 0 (so ZRANGE BYLEX lists names sorted). */
    names: keyOf(prefix, "presence", "_names"),
    /** Room → last heartbeat (ms): the rooms the trim job visits. */
    active: keyOf(prefix, "presence", "_active"),
  };
}

/** Keys of one room that do not depend on the day. */
export function roomKeys(prefix: string, room: string) {
  return {
    /** Compact id → last seen (ms). */
    online: keyOf(prefix, "presence", room, "online"),
    /** Id → compact id; also "seen before", which is what makes an id new. */
    ids: keyOf(prefix, "presence", room, "ids"),
    /** Compact id → id, to list members. */
    names: keyOf(prefix, "presence", room, "names"),
    /** Last compact id handed out. */
    seq: keyOf(prefix, "presence", room, "seq"),
    /** Per-minute samples of the online count, member `<minuteMs>:<online>`, score minuteMs. */
    history: keyOf(prefix, "presence", room, "history"),
  };
}

/** Keys of one room for the UTC day containing `ms`. */
export function dayKeys(prefix: string, room: string, ms: number) {
  const label = dayLabel(ms);
  return {
    /** Hash: new, peak, peakAt. */
    day: keyOf(prefix, "presence", room, "day", label),
    /** Bitmap over compact ids: who was seen that day (exact AU). */
    au: keyOf(prefix, "presence", room, "au", label),
  };
}

/**
 * Day keys live 48 h after their last write, so at any moment only the keys
 * of today and the two days before can exist; deleting a room removes those.
 */
export function recentDayKeys(prefix: string, room: string, now: number): string[] {
  return [0, 1, 2].flatMap((back) => Object.values(dayKeys(prefix, room, now - back * DAY)));
}
