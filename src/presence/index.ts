/**
 * Presence: who is online in a room now (heartbeats within a timeout), the
 * room's daily peak, active and new ids, per-minute history and the room list.
 * The routes and the library handle import this module as `presence`.
 */
export {
  deleteRoom,
  heartbeat,
  history,
  leave,
  listMembers,
  listRooms,
  minuteOf,
  roomStats,
  type HeartbeatOptions,
  type HeartbeatResult,
  type ListMembersOptions,
  type ListRoomsOptions,
  type MemberPage,
  type PresenceOptions,
  type RoomPage,
  type RoomStats,
} from "./presence.ts";
export { DEFAULT_TIMEOUT_SECONDS, HISTORY_HOURS, MAX_MEMBERS_PAGE, MAX_ROOMS_LISTED, requireIds } from "./validate.ts";
export { createTrimJob, jobs, type TrimOptions } from "./jobs.ts";
