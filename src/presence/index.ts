/**
 * Presence: who is online in a room now (heartbeats within a timeout), the
 * room's daily peak, active and new ids, per-minute history and the room list.
 * The routes and the library handle import this module as `presence`.
 */
export {
  deleteRoom,
  heartbeat,
  leave,
  minuteOf,
  type HeartbeatOptions,
  type HeartbeatResult,
  type PresenceOptions,
} from "./presence.ts";
export {
  history,
  day,
  members,
  rooms,
  stats,
  total,
  HLL_STANDARD_ERROR,
  type ListMembersOptions,
  type ListRoomsOptions,
  type MemberPage,
  type RoomDay,
  type RoomPage,
  type SiteTotal,
  type RoomStats,
} from "./reads.ts";
export {
  DAYS_KEPT,
  DEFAULT_TIMEOUT_SECONDS,
  HISTORY_HOURS,
  MAX_MEMBERS_PAGE,
  MAX_ROOMS_LISTED,
  requireIds,
} from "./validate.ts";
export { createTrimJob, jobs, trimPresenceJob, type TrimOptions } from "./jobs.ts";
/** The heartbeat's script, which the queued-ingest consumer wraps (src/ingest/plan.ts). */
export { heartbeatScript } from "./scripts.ts";
