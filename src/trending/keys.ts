import { keyOf } from "../keys.ts";
import { hourLabel } from "../time.ts";

/**
 * Windows with a cached union of their own: the 24 h and 48 h of source post
 * 000 (docs/background.md). Every other width shares one slot per stream and hour
 * (`u:x:<hour>`), so no choice of `window` can make a stream cache more than
 * three unions an hour (see docs/trending.md, "Bounded caching").
 */
export const STANDARD_WINDOWS = [24, 48] as const;

export function isStandardWindow(window: number): boolean {
  return (STANDARD_WINDOWS as readonly number[]).includes(window);
}

/**
 * Redis keys of the trending area. Registry keys start with `_`, which no
 * stream name can (names start with a letter or digit), so they never collide.
 */
export function registryKeys(prefix: string) {
  return {
    /** ZSET, every score 0: stream names in byte order for `GET /v1/trending`. */
    names: keyOf(prefix, "trending", "_names"),
    /** ZSET: stream → latest hour written; streams whose buckets all expired are pruned. */
    seen: keyOf(prefix, "trending", "_seen"),
    /**
     * ZSET: stream → earliest hour written since its last compaction (the compaction queue), and
     * each stream's mark (markOf) → −(hour of the compaction run that last finished it).
     */
    dirty: keyOf(prefix, "trending", "_dirty"),
  };
}

/** A stream's compaction mark in `_dirty` (markOf in scripts.ts): no stream name starts with "\0". */
export function markOf(stream: string): string {
  return `\0${stream}`;
}

export function streamKeys(prefix: string, stream: string) {
  const base = (...parts: (string | number)[]) => keyOf(prefix, "trending", stream, ...parts);
  return {
    /** ZSET member → count of one UTC hour. */
    bucket: (hour: number) => base("h", hourLabel(hour)),
    /**
     * HASH of per-hour cuts, written by releases before the cut moved into each
     * bucket's "\0err" member (see markersLua); only deleted now, with the stream.
     */
    cuts: base("cuts"),
    /**
     * ZSET: union of the `window` finished hours before `hour`, whose "\0err"
     * member holds -maxError (see markersLua and unionLua in scripts.ts). 24 h and 48 h have
     * a key each; every other width shares the slot `u:x:<hour>`, which also
     * holds "\0w" scored -width, the width it was built for.
     */
    union: (window: number, hour: number) => base("u", isStandardWindow(window) ? window : "x", hourLabel(hour)),
    /** Every union key of `hour`: the standard windows' and the shared slot. */
    unionsOf: (hour: number) => [
      ...STANDARD_WINDOWS.map((w) => base("u", w, hourLabel(hour))),
      base("u", "x", hourLabel(hour)),
    ],
    /** ZSET that lives only inside one script: union + current hour, for ranks (and the rare top-N fallback). */
    scratch: base("tmp"),
  };
}

/** Seconds until `untilMs`, at least 1 (EXPIRE with 0 would delete the key). */
export function secondsUntil(untilMs: number, now: number): number {
  return Math.max(1, Math.ceil((untilMs - now) / 1000));
}
