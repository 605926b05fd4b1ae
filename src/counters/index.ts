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
  MAX_LISTED,
  MAX_SORTED_MEMBERS,
  MAX_UNION_ENTRIES,
  MAX_UNION_MEMBERS,
  UNION_CACHE_SLOTS,
  type ListOptions,
  type RangeInfo,
  type ReadOptions,
  type ScoreRangeOptions,
  type SortedOptions,
} from "./reads.ts";
export { AGGREGATES, type Aggregate } from "./keys.ts";
export { jobs, sweepCountersJob } from "./jobs.ts";
export { parseBucketTime, MAX_RANGE_DAYS, type PeriodOptions } from "./select.ts";
export { incrScript } from "./scripts.ts";
export {
  MAX_BUCKET_AGE_DAYS,
  MAX_DELETE_BUCKETS,
  MAX_RAW_BUCKETS,
  MAX_TTL_SECONDS,
  MAX_UNION_KEYS,
} from "./validate.ts";
