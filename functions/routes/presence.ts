import * as z from "../zod.ts";
import * as presence from "../../src/presence/index.ts";
import { requireScope } from "../middleware/auth.ts";
import { ctxOf } from "../middleware/context.ts";
import { includeRoutes, lazyRoute, prechecked } from "../lazy-route.ts";
import { heartbeatRoutes, timeoutOf } from "./presence-heartbeat.ts";
import { createRouter } from "../router.ts";
import { invalid } from "../../src/validation.ts";
import { errorResponses, jsonResponse, nameParamsChecked } from "../schemas.ts";
import {
  HeartbeatBody,
  heartbeatPrecheck,
  History,
  HistoryQuery,
  historyQueryPrecheck,
  LeaveParams,
  leaveParamsPrecheck,
  MemberPage,
  MembersQuery,
  membersQueryPrecheck,
  RoomDay,
  RoomQuery,
  roomQueryPrecheck,
  Rooms,
  RoomsQuery,
  roomsQueryPrecheck,
  RoomStats,
  SiteTotal,
} from "./presence-schemas.ts";

// The schemas and their prechecks are in ./presence-schemas.ts; re-exported for those that take them from here.
export {
  HeartbeatBody,
  heartbeatPrecheck,
  HistoryQuery,
  historyQueryPrecheck,
  LeaveParams,
  leaveParamsPrecheck,
  MembersQuery,
  membersQueryPrecheck,
  RoomQuery,
  roomQueryPrecheck,
  RoomsQuery,
  roomsQueryPrecheck,
};

const tags = ["Presence"];

/** The room path parameter, prechecked (../lazy-route.ts). */
const roomParamsChecked = () => nameParamsChecked("room");

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

includeRoutes(presenceRoutes, heartbeatRoutes);

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
      "Bounded work, no scan over rooms. `online` and `peakToday` come from the trim job, which keeps each room's online count at its latest visit and samples their sum " +
      "each minute (a run capped before visiting every active room counts the others at their last visit, each room once) and keeps the day's highest sample. " +
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
