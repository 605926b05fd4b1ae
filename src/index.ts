/**
 * edgestats as a library: trending, counters, histograms, presence and
 * leaderboards over Upstash Redis, one Lua script (one round trip) per call.
 *
 * ```ts
 * import { Redis } from "@upstash/redis";
 * import { Edgestats } from "edgestats";
 *
 * const stats = new Edgestats({ redis: Redis.fromEnv(), prefix: "es" });
 * await stats.trending("searches").record("redis");
 * const { items } = await stats.trending("searches").top({ n: 10 });
 * ```
 *
 * Same scripts, key schema and guarantees as the edgestats service; no Hono,
 * no Workers globals (runs on Node ≥ 20, Workers, Deno, Bun, Vercel).
 * @module
 */
export { Edgestats, type EdgestatsOptions, type EdgestatsRedis, type JobResult } from "./library/edgestats.ts";
export {
  CounterHandle,
  HistogramHandle,
  LeaderboardHandle,
  PresenceHandle,
  type PlayerScoreChange,
  TrendingHandle,
  type CounterItem,
  type TrendingTopOptions,
  type WindowOptions,
  type WriteOptions,
  type Written,
} from "./library/handles.ts";
export type {
  AroundOptions,
  MembersOptions,
  PresenceHistoryOptions,
  RisingOptions,
  TrendingHistoryOptions,
} from "./library/shared.ts";
// Every error class the library throws, and FieldIssue (functions/errors.ts maps each class to its status).
export * from "./errors.ts";
// the codes those errors carry (src/error-codes.ts: types only)
export type { ConflictErrorCode, RejectedErrorCode, ServiceErrorCode, ValidationErrorCode } from "./error-codes.ts";
export { createRedis, type LibraryRedis, type RedisOptions } from "./redis/client.ts";
// the paging of the registry lists (stats.counters(), stats.histograms()); boards and rooms page by cursor too
export type { PageOptions as RegistryPageOptions } from "./validation.ts";
export type { Config } from "./config.ts";
export type { Period } from "./time.ts";
export type {
  // what `record` takes (`at` epoch ms or ISO-8601); src/trending's own TrendingEvent is the parsed one
  TrendingEventInput as TrendingEvent,
  TopResult,
  TopItem,
  MemberResult,
  WindowInfo,
  CompactResult,
  RisingResult,
  RisingItem,
  HistoryResult,
  ListOptions as StreamListOptions,
  StreamsPage,
} from "./trending/index.ts";
export type {
  IncrItem,
  ScoreRangeOptions,
  SortedOptions,
  UnionOptions,
  UnionSource,
  RangeInfo,
  Aggregate,
  PeriodOptions as CounterPeriodOptions,
  ReadOptions as CounterReadOptions,
  ListOptions as CounterListOptions,
} from "./counters/index.ts";
export type {
  HistogramSettings,
  HistogramInfo,
  HistogramSummary,
  Observation,
  ReadOptions as HistogramReadOptions,
  ListOptions as HistogramListOptions,
  Bucket,
} from "./histograms/index.ts";
export type {
  HeartbeatResult,
  RoomStats,
  MemberPage,
  RoomDay,
  SiteTotal,
  ListRoomsOptions,
  RoomPage,
} from "./presence/index.ts";
export type {
  BoardConfig,
  BoardList,
  ListOptions as BoardListOptions,
  BoardSettings,
  JoinInput,
  PageOptions,
  PlayerView,
  Reset,
  Row,
  ScoreResult,
  SeasonOption,
  SeasonSummary,
  SubsetRow,
  ScoreChange,
  SetMode,
  TiePolicy,
} from "./leaderboards/index.ts";
