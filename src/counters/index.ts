/**
 * Counters: named sorted-set counters, optionally bucketed by calendar period
 * (docs/counters.md). The public API the routes and the library use:
 * `import * as counters from ".../src/counters/index.ts"`.
 */
export { deleteCounter, deleteMember, increment, type IncrItem, type IncrResult } from "./counters.ts";
export { union, type UnionOptions, type UnionResult, type UnionSource } from "./union.ts";
export {
  list,
  memberOf,
  ranked,
  scoreRange,
  sorted,
  type ListOptions,
  type RangeInfo,
  type ReadOptions,
  type ScoreRangeOptions,
  type SortedOptions,
} from "./reads.ts";
export { jobs, sweepCountersJob } from "./jobs.ts";
export { parseBucketTime, type PeriodOptions } from "./select.ts";
export { incrScript } from "./scripts.ts";
// The bounds the routes' schemas state, also importable alone (./limits.ts) without the library.
export {
  AGGREGATES,
  MAX_BUCKET_AGE_DAYS,
  MAX_COUNTER_SCORE,
  MAX_DELETE_KEYS,
  MAX_DELETE_SCRIPT_KEYS,
  MAX_DELETE_READS,
  MAX_LISTED,
  MAX_RANGE_DAYS,
  MAX_RAW_BUCKETS,
  MAX_SORTED_MEMBERS,
  MAX_TTL_SECONDS,
  MAX_UNION_ENTRIES,
  MAX_UNION_KEYS,
  MAX_UNION_MEMBERS,
  UNION_CACHE_SLOTS,
  type Aggregate,
} from "./limits.ts";
