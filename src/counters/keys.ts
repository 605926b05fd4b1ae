import { keyOf } from "../keys.ts";
import { periodLabel, type Period } from "../time.ts";
import { levelLabel, type Level } from "./calendar.ts";
import { UNION_CACHE_SLOTS } from "./limits.ts";

/**
 * Keys of the counters area. Names never start with `_` (NAME_PATTERN), so the
 * area-wide keys below can never be spelled by a counter name, and names never
 * contain `:`, so one counter's keys can never be another's.
 */
export const counterKeys = {
  /** The counter itself: a sorted set member → score (also where `POST …/union` stores a rollup). */
  plain: (prefix: string, name: string) => keyOf(prefix, "counters", name),
  /** One calendar bucket of a period counter, e.g. `…:pageviews:day:20261122`. */
  bucket: (prefix: string, name: string, period: Period, start: number) =>
    keyOf(prefix, "counters", name, period, periodLabel(period, start)),
  /**
   * Calendar rollup (issue 15): the sum of a counter's `fine` buckets over one quarter-day, day or month, e.g.
   * `…:pageviews:hour:by-day:20261122`, `…:pageviews:hour:by-quarter:20261122T06` (hours 06–12 UTC).
   */
  rollup: (prefix: string, name: string, fine: Period, coarse: Level, start: number) =>
    keyOf(prefix, "counters", name, fine, `by-${coarse}`, levelLabel(coarse, start)),
  /** A key of a decomposed range (calendar.ts): the bucket of `period` at `start` (`level` "bucket"), or its rollup over `level`. */
  part: (prefix: string, name: string, period: Period, level: "bucket" | Level, start: number) =>
    level === "bucket"
      ? counterKeys.bucket(prefix, name, period, start)
      : counterKeys.rollup(prefix, name, period, level, start),
  /**
   * Hash: `b:<bucket key>` → its expiry for each bucket of the counter's current life, `late` = cache generation, `r` = when a period write last set the registry score (epoch ms), `u:<slot key>` = what the slot caches,
   * `s` = 1 while every rollup of the life is exactly the sum of its parts, `q` = 1 when the life began with quarter-day rollups (every hour written since has one), `z:<rollup key>` = 1 once a member delete dropped a member from that rollup at exactly 0 (edges.ts, `edgeSum`), `c:<kind>` = a cursor of the expired fields dropped (trim.ts).
   */
  index: (prefix: string, name: string) => keyOf(prefix, "counters", name, "index"),
  /** Cache slot `slot` of the counter: the union of one finished range (which one, the index field `u:<this key>` says). */
  union: (prefix: string, name: string, slot: number) => keyOf(prefix, "counters", name, "union", String(slot)),
  /** Scratch key for the union of an unfinished range; the same script deletes it. */
  scratch: (prefix: string, name: string) => keyOf(prefix, "counters", name, "union", "tmp"),
  /** Registry: every live counter name, scored by its last write (epoch ms), so lists show recent activity first. */
  names: (prefix: string) => keyOf(prefix, "counters", "_names"),
  /** Registry companion: name → epoch ms when its last key expires (absent: never). */
  expiry: (prefix: string) => keyOf(prefix, "counters", "_expiry"),
  /** A global counter; each index's `late` value comes from it, so cache marks never repeat across lives. */
  seq: (prefix: string) => keyOf(prefix, "counters", "_seq"),
  /** Hash: bucket keys orphaned by deleting their counter → epoch ms of the delete (for the sweep job). */
  purge: (prefix: string) => keyOf(prefix, "counters", "_purge"),
};

export type { Aggregate } from "./limits.ts";

/**
 * Every cache key of a counter (its slots and the scratch key): what deleting it frees. Here, not
 * with the reads that fill them, so the writes' module graph (./counters.ts) holds no read.
 */
export function cacheKeys(prefix: string, name: string): string[] {
  const K = counterKeys;
  return [...Array.from({ length: UNION_CACHE_SLOTS }, (_, i) => K.union(prefix, name, i)), K.scratch(prefix, name)];
}

/** The keys both writes of a counter's members declare (the counter, its index and the registries). */
export function writeKeys(prefix: string, name: string) {
  return {
    plain: counterKeys.plain(prefix, name),
    index: counterKeys.index(prefix, name),
    names: counterKeys.names(prefix),
    expiry: counterKeys.expiry(prefix),
    seq: counterKeys.seq(prefix),
  };
}
