/**
 * Trending: top N over a sliding window of hourly buckets (docs/trending.md).
 * The public API the routes and the library use: `import * as trending from ".../trending/index.ts"`.
 */
export { compact, COMPACT_SCRIPT_BUDGET, type CompactOptions, type CompactResult } from "./compact.ts";
export { compactTrendingJob, jobs } from "./jobs.ts";
export { STANDARD_WINDOWS } from "./keys.ts";
export {
  history,
  rising,
  RISING_CANDIDATES,
  type HistoryOptions,
  type HistoryPoint,
  type HistoryResult,
  type RisingItem,
  type RisingOptions,
  type RisingResult,
} from "./signals.ts";
export { DELETE_KEYS_PER_SCRIPT, deleteStream } from "./delete.ts";
export {
  compareBytes,
  list,
  listPage,
  member,
  record,
  top,
  type ListOptions,
  type MemberResult,
  type RecordOptions,
  type StreamsPage,
  type TopItem,
  type TopOptions,
  type TopResult,
  type WindowInfo,
} from "./trending.ts";
export {
  MAX_HOUR_COUNT,
  MAX_LISTED,
  MAX_TOP_N,
  MAX_WINDOW_HOURS,
  parseEventTimes,
  type TrendingEvent,
  type TrendingEventInput,
  type TrendingSettings,
} from "./validate.ts";
