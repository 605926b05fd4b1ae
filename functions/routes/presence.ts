import * as z from "../zod.ts";
import * as presence from "../../src/presence/presence.ts";
import { requireScope } from "../middleware/auth.ts";
import { ctxOf, markReplay, queueIfAsync } from "../middleware/context.ts";
import { lazyRoute, once, prechecked, type Verdict } from "../lazy-route.ts";
import { fieldsPrecheck, intField, maxTextField, memberField, nameField, textField } from "../prechecks.ts";
import { createRouter } from "../router.ts";
import { ACTIVITY_CURSOR_MAX } from "../../src/redis/pages.ts";
import { invalid } from "../../src/validation.ts";
import {
  MAX_BATCH_ITEMS,
  Member,
  memberPrecheck,
  Name,
  errorResponses,
  intQuery,
  isPlainObject,
  jsonBody,
  jsonResponse,
  nameParamsChecked,
  writeErrorResponses,
  queuedResponse,
} from "../schemas.ts";

const tags = ["Presence"];

/**
 * `{"id"}` or `{"ids":[...]}` of plain strings (not `{"ids":[{"id"}]}` as
 * batchOf would build), so the contract's shape needs its own schema.
 */
export const HeartbeatBody = once(() =>
  z
    .object({
      id: Member().optional(),
      ids: z
        .array(Member())
        .min(1)
        .max(MAX_BATCH_ITEMS)
        .optional()
        .openapi({ description: `1..${MAX_BATCH_ITEMS} ids` }),
    })
    .strict()
    .superRefine((body, ctx) => {
      if ((body.id === undefined) === (body.ids === undefined))
        ctx.addIssue({ code: "custom", path: [], message: "send exactly one of 'id' or 'ids'" });
    })
    .openapi("PresenceHeartbeat", { example: { ids: ["3f1c9a6e-4b7d-4f0a-9a55-0c1d2e3f4a5b", "user-42"] } }),
);

/**
 * The precheck (../lazy-route.ts) of HeartbeatBody: `{"id"}` or `{"ids":[1..1000 strings]}` is
 * decided without zod (valid ids, and bad ones with their issues, as the members' own refinement
 * reports them); any other body, zod decides.
 */
export function heartbeatPrecheck(body: unknown): Verdict {
  if (!isPlainObject(body)) return undefined;
  const keys = Object.keys(body);
  if (keys.length !== 1) return undefined;
  const issues: { path: (string | number)[]; message: string }[] = [];
  let data: Record<string, unknown>;
  if (keys[0] === "id") {
    const id = memberPrecheck(body.id, ["id"], issues);
    if (id === undefined) return undefined;
    data = { id };
  } else if (keys[0] === "ids") {
    const list = body.ids;
    if (!Array.isArray(list) || list.length < 1 || list.length > MAX_BATCH_ITEMS) return undefined;
    const ids: string[] = [];
    for (let i = 0; i < list.length; i++) {
      const id = memberPrecheck(list[i], ["ids", i], issues);
      if (id === undefined) return undefined;
      ids.push(id);
    }
    data = { ids };
  } else return undefined;
  return issues.length > 0 ? { success: false, error: { issues } } : { success: true, data };
}

const HeartbeatResult = once(() =>
  z
    .object({
      online: z.number().int().openapi({ description: "ids online in the room right after this heartbeat" }),
      new: z.number().int().openapi({ description: "ids of this request never seen in the room before" }),
    })
    .openapi("PresenceHeartbeatResult"),
);

const RoomStats = once(() =>
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

const RoomDay = once(() =>
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

const SiteTotal = once(() =>
  z
    .object({
      online: z.number().int().openapi({
        description: "ids online across rooms at the trim job's latest run (an id in two rooms counts twice)",
      }),
      onlineAt: z
        .number()
        .int()
        .nullable()
        .openapi({ description: "when that run sampled it (epoch ms); null before any run" }),
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

const MemberPage = once(() =>
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

const History = once(() =>
  z
    .object({
      points: z.array(
        z.object({ at: z.number().int().openapi({ description: "minute (epoch ms)" }), online: z.number().int() }),
      ),
    })
    .openapi("PresenceHistory"),
);

const Rooms = once(() =>
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

/** The room path parameter, prechecked (../lazy-route.ts). */
const roomParamsChecked = () => nameParamsChecked("room");
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
const timeoutOf = (c: { get(key: "config"): { presenceTimeoutSeconds: number } }) => ({
  timeoutSeconds: c.get("config").presenceTimeoutSeconds,
});

/** The path of a leave: a room and an id. */
export const LeaveParams = once(() =>
  z.object({
    room: Name().openapi({ param: { name: "room", in: "path" } }),
    id: Member().openapi({ param: { name: "id", in: "path" } }),
  }),
);
/** LeaveParams' precheck: a room name and a valid id (a page unload's leave loads no zod). */
export const leaveParamsPrecheck = fieldsPrecheck({ room: nameField, id: memberField });

export const presenceRoutes = createRouter();

lazyRoute(
  presenceRoutes,
  "get",
  "/",
  () => ({
    tags,
    summary: "Rooms active within two days, most recently active first, with cursor pagination",
    description:
      "A pass (the first page, then `nextCursor` until it is null) lists every room listed throughout at least once: " +
      "rooms whose activity rose while the pass ran (a room active again, the hourly refresh) follow at its end, " +
      "so such a room may be listed twice. Cursors of earlier versions (`<score>:<room>`) are still accepted.",
    request: { query: prechecked(RoomsQuery, roomsQueryPrecheck) },
    responses: () => ({ 200: jsonResponse(Rooms(), "One page of rooms."), ...errorResponses() }),
  }),
  async (c) => {
    const { limit, cursor } = c.req.valid("query");
    return c.json(await presence.rooms(ctxOf(c), { limit, ...(cursor === undefined ? {} : { cursor }) }), 200);
  },
);

lazyRoute(
  presenceRoutes,
  "post",
  "/{room}/heartbeats",
  () => ({
    tags,
    summary: "Mark one id or up to 1,000 ids online now; returns the online count",
    request: { params: roomParamsChecked(), ...jsonBody(prechecked(HeartbeatBody, heartbeatPrecheck)) },
    responses: () => ({
      200: jsonResponse(HeartbeatResult(), "Recorded."),
      202: queuedResponse(),
      ...writeErrorResponses(),
    }),
  }),
  async (c) => {
    const body = c.req.valid("json");
    const ids = body.ids ?? (body.id === undefined ? [] : [body.id]);
    const queued = await queueIfAsync(c, "presence", c.req.valid("param").room, ids);
    if (queued) return c.json(queued, 202);
    const { replayed, ...value } = await presence.heartbeat(ctxOf(c), c.req.valid("param").room, ids, {
      ...timeoutOf(c),
      idempotency: c.get("idempotency"),
    });
    markReplay(c, replayed);
    return c.json(value, 200);
  },
);

lazyRoute(
  presenceRoutes,
  "delete",
  "/{room}/members/{id}",
  () => ({
    tags,
    summary: "Take an id offline at once (leave)",
    description:
      "Ends the id's online session only: its mapping, today's active/new/peak figures and the history stay.",
    request: { params: prechecked(LeaveParams, leaveParamsPrecheck) },
    responses: () => ({
      204: { description: "The id is offline (also when it was not online)." },
      ...errorResponses(),
    }),
  }),
  async (c) => {
    const { room, id } = c.req.valid("param");
    await presence.leave(ctxOf(c), room, id, timeoutOf(c));
    return c.body(null, 204);
  },
);

lazyRoute(
  presenceRoutes,
  "get",
  "/_total",
  () => ({
    tags,
    summary: "Site-wide: online now, today's peak and active ids across rooms",
    description:
      "Bounded work, no scan over rooms. `online` and `peakToday` come from the trim job, which sums the online count of every room it visits " +
      "each minute (every active room; a capped run of more than 2,000 active rooms counts the rooms it visited) and keeps the day's highest sum. " +
      "`activeToday` counts distinct ids across rooms with a HyperLogLog: an estimate with a relative standard error of 0.81 % (`activeTodayError`). " +
      "`_total` is not a valid room name, so no room can shadow this path. " +
      "The figures are today's only: a `day` is refused (400); a room's past day is `GET /v1/presence/{room}?day=`.",
    responses: () => ({ 200: jsonResponse(SiteTotal(), "The site-wide figures."), ...errorResponses() }),
  }),
  async (c) => {
    // The site-wide figures are today's only (the trim job's sample of yesterday is gone by the
    // next day). Ignored, a `day` would be answered with today's figures as if they were that day's.
    if (c.req.query("day") !== undefined)
      invalid([
        { path: "day", message: "site-wide figures are today's only: a room's day is GET /v1/presence/{room}?day=" },
      ]);
    return c.json(await presence.total(ctxOf(c)), 200);
  },
);

lazyRoute(
  presenceRoutes,
  "get",
  "/{room}",
  () => ({
    tags,
    summary: "Online now, peak, active and new users today; or the figures of a past day (`?day=`)",
    description:
      "`online` counts heartbeats within the timeout at this moment, whether or not the trim job has run. Unknown rooms read as empty. " +
      "With `day=YYYY-MM-DD` (UTC, today or one of the 400 days before; else 400): that day's `peak`, `peakAt`, `active` and `new`. " +
      "Today and yesterday are live; older days are the record the trim job kept when the day ended or the room went idle. A day without data reads as zeros.",
    request: { params: roomParamsChecked(), query: prechecked(RoomQuery, roomQueryPrecheck) },
    responses: () => ({
      200: jsonResponse(z.union([RoomStats(), RoomDay()]), "The room's figures (today's, or the day's with `day`)."),
      ...errorResponses(),
    }),
  }),
  async (c) => {
    const room = c.req.valid("param").room;
    const { day } = c.req.valid("query");
    if (day !== undefined) return c.json(await presence.day(ctxOf(c), room, day, timeoutOf(c)), 200);
    return c.json(await presence.stats(ctxOf(c), room, timeoutOf(c)), 200);
  },
);

lazyRoute(
  presenceRoutes,
  "get",
  "/{room}/members",
  () => ({
    tags,
    summary: "Online members, least recently seen first, with cursor pagination",
    description:
      "A member that heartbeats while you page moves to the end: it may appear twice, but no member online throughout is skipped.",
    request: { params: roomParamsChecked(), query: prechecked(MembersQuery, membersQueryPrecheck) },
    responses: () => ({ 200: jsonResponse(MemberPage(), "One page of online members."), ...errorResponses() }),
  }),
  async (c) => {
    const { limit, cursor } = c.req.valid("query");
    return c.json(
      await presence.members(ctxOf(c), c.req.valid("param").room, {
        ...timeoutOf(c),
        limit,
        ...(cursor === undefined ? {} : { cursor }),
      }),
      200,
    );
  },
);

lazyRoute(
  presenceRoutes,
  "get",
  "/{room}/history",
  () => ({
    tags,
    summary: "Online count sampled each minute by the trim job, oldest first",
    description: "Minutes without a sample (the job did not run, or the room had been idle) have no point.",
    request: { params: roomParamsChecked(), query: prechecked(HistoryQuery, historyQueryPrecheck) },
    responses: () => ({ 200: jsonResponse(History(), "Points of the last `hours` hours."), ...errorResponses() }),
  }),
  async (c) => c.json(await presence.history(ctxOf(c), c.req.valid("param").room, c.req.valid("query").hours), 200),
);

lazyRoute(
  presenceRoutes,
  "delete",
  "/{room}",
  () => ({
    tags,
    summary: "Delete a room: every key, its id mapping and its registry entries (admin)",
    middleware: [requireScope("admin")] as const,
    request: { params: roomParamsChecked() },
    responses: () => ({ 204: { description: "Deleted (also when it did not exist)." }, ...errorResponses() }),
  }),
  async (c) => {
    await presence.deleteRoom(ctxOf(c), c.req.valid("param").room);
    return c.body(null, 204);
  },
);
