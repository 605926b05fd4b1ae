import { keyOf } from "../keys.ts";
import { hourLabel } from "../time.ts";

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
    /** ZSET: stream → earliest hour written since its last compaction (the compaction queue). */
    dirty: keyOf(prefix, "trending", "_dirty"),
  };
}

export function streamKeys(prefix: string, stream: string) {
  const base = (...parts: (string | number)[]) => keyOf(prefix, "trending", stream, ...parts);
  return {
    /** ZSET member → count of one UTC hour. */
    bucket: (hour: number) => base("h", hourLabel(hour)),
    /** HASH hour index → sum of the highest counts removed by each trim of that hour. */
    cuts: base("cuts"),
    /**
     * ZSET: union of the `window` finished hours before `hour`, plus the sentinel
     * member "\0err" scored -maxError (see UNION_LUA in scripts.ts).
     */
    union: (window: number, hour: number) => base("u", window, hourLabel(hour)),
    /** ZSET that lives only inside one script: union + current hour, for ranks (and the rare top-N fallback). */
    scratch: base("tmp"),
  };
}
