import * as z from "../zod.ts";
import { once } from "../lazy-route.ts";
import { fieldsPrecheck, intField, maxTextField, memberField, nameField, textField } from "../prechecks.ts";
import { ACTIVITY_CURSOR_MAX } from "../../src/redis/pages.ts";
import { Member, Name, intQuery } from "../schemas.ts";

/**
 * The body, query, path-parameter and response schemas of the presence routes (./presence.ts),
 * each request schema with its precheck (../lazy-route.ts `prechecked`): the usual requests (a
 * heartbeat's ids, a leave's room and id, plain-digit limits) are decided without zod, so a cold
 * isolate's first heartbeat or page-unload leave loads none; anything else, zod decides. The
 * heartbeat's are in its route's module (./presence-heartbeat.ts), re-exported here.
 */
export { HeartbeatBody, heartbeatPrecheck, HeartbeatResult } from "./presence-heartbeat.ts";

export const RoomStats = once(() =>
  z
    .object({
      room: z.string(),
      online: z.number().int().openapi({ description: "ids with a heartbeat within timeoutSeconds, exact now" }),
      timeoutSeconds: z.number().int(),
      peakToday: z.number().int().openapi({ description: "most ids online at once since UTC midnight (PCU)" }),
      peakAt: z.number().int().nullable().openapi({ description: "when peakToday was reached (epoch ms)" }),
      activeToday: z.number().int().openapi({ description: "distinct ids seen since UTC midnight (AU, exact)" }),
      newToday: z.number().int().openapi({ description: "ids first seen in this room since UTC midnight (NU)" }),
      day: z.number().int().openapi({ description: "start of the UTC day of the daily figures (epoch ms)" }),
    })
    .openapi("PresenceRoom"),
);

export const RoomDay = once(() =>
  z
    .object({
      room: z.string(),
      day: z.string().openapi({ description: "the UTC day, YYYY-MM-DD" }),
      from: z.number().int().openapi({ description: "start of the day (epoch ms)" }),
      peak: z.number().int().openapi({ description: "most ids online at once that day (PCU)" }),
      peakAt: z
        .number()
        .int()
        .nullable()
        .openapi({ description: "when peak was first reached (epoch ms); null when nobody was online" }),
      active: z.number().int().openapi({ description: "distinct ids seen that day (AU, exact)" }),
      new: z.number().int().openapi({ description: "ids seen that day for the first time in the room (NU)" }),
    })
    .openapi("PresenceRoomDay"),
);

export const SiteTotal = once(() =>
  z
    .object({
      online: z.number().int().openapi({
        description:
          "ids online across rooms in the trim job's latest sample: each room's count at its latest visit (an id in two rooms counts twice)",
      }),
      onlineAt: z.number().int().nullable().openapi({
        description: "when that sample was recorded (epoch ms): a trim run, or a room's delete; null before any",
      }),
      peakToday: z.number().int().openapi({ description: "highest per-minute sample of online since UTC midnight" }),
      peakAt: z.number().int().nullable().openapi({ description: "when peakToday was first sampled (epoch ms)" }),
      activeToday: z
        .number()
        .int()
        .openapi({ description: "distinct ids seen since UTC midnight in any room: a HyperLogLog estimate" }),
      activeTodayError: z.number().openapi({ description: "relative standard error of activeToday (0.0081 = 0.81 %)" }),
      day: z.number().int().openapi({ description: "start of the UTC day of the daily figures (epoch ms)" }),
    })
    .openapi("PresenceTotal"),
);

export const MemberPage = once(() =>
  z
    .object({
      members: z.array(z.object({ id: z.string(), lastSeen: z.number().int() })),
      nextCursor: z
        .string()
        .nullable()
        .openapi({ description: "pass as cursor for the next page; null on the last page" }),
    })
    .openapi("PresenceMembers"),
);

export const History = once(() =>
  z
    .object({
      points: z.array(
        z.object({ at: z.number().int().openapi({ description: "minute (epoch ms)" }), online: z.number().int() }),
      ),
    })
    .openapi("PresenceHistory"),
);

export const Rooms = once(() =>
  z
    .object({
      rooms: z.array(z.string()).openapi({ description: "most recently active first" }),
      truncated: z.boolean().openapi({ description: "true when more rooms follow (nextCursor is not null)" }),
      nextCursor: z
        .string()
        .nullable()
        .openapi({ description: "pass as cursor for the next page; null on the last page" }),
    })
    .openapi("PresenceRooms"),
);

export const RoomQuery = once(() =>
  z.object({
    day: z
      .string()
      .optional()
      .openapi({ description: "a UTC day, YYYY-MM-DD, within the last 400 days", example: "2026-11-20" }),
  }),
);
/** RoomQuery's precheck (../lazy-route.ts `prechecked`): no `day`, or one as text (the library parses it). */
export const roomQueryPrecheck = fieldsPrecheck({ day: textField() });
/** The query of the rooms' list, and its precheck (`limit` in plain digits, a cursor of at most ACTIVITY_CURSOR_MAX characters). */
export const RoomsQuery = once(() =>
  z.object({
    limit: intQuery(1, 1000, 1000),
    cursor: z.string().max(ACTIVITY_CURSOR_MAX).optional().openapi({ description: "nextCursor of the previous page" }),
  }),
);
export const roomsQueryPrecheck = fieldsPrecheck({
  limit: intField(1, 1000, 1000),
  cursor: maxTextField(ACTIVITY_CURSOR_MAX),
});
/** The query of the online members' list. */
export const MembersQuery = once(() =>
  z.object({
    limit: intQuery(1, 1000, 100),
    cursor: z.string().max(40).optional().openapi({ description: "nextCursor of the previous page" }),
  }),
);
/** MembersQuery's precheck: `limit` in plain digits, a cursor of at most 40 characters. */
export const membersQueryPrecheck = fieldsPrecheck({
  limit: intField(1, 1000, 100),
  cursor: maxTextField(40),
});
/** The query of a room's history. */
export const HistoryQuery = once(() => z.object({ hours: intQuery(1, 24, 24) }));
export const historyQueryPrecheck = fieldsPrecheck({ hours: intField(1, 24, 24) });
/** The path of a leave: a room and an id. */
export const LeaveParams = once(() =>
  z.object({
    room: Name().openapi({ param: { name: "room", in: "path" } }),
    id: Member().openapi({ param: { name: "id", in: "path" } }),
  }),
);
/** LeaveParams' precheck: a room name and a valid id (a page unload's leave loads no zod). */
export const leaveParamsPrecheck = fieldsPrecheck({ room: nameField, id: memberField });
