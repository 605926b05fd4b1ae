import * as z from "../zod.ts";
import type { Context } from "hono";
import { record } from "../../src/trending/trending.ts";
import type { TrendingEvent } from "../../src/trending/validate.ts";
import { ctxOf, markReplay, queueIfAsync } from "../middleware/context.ts";
import { lazyRoute, once, prechecked } from "../lazy-route.ts";
import { createRouter } from "../router.ts";
import { parseAt } from "../../src/time.ts";
import { MAX_INCREMENT } from "../../src/validation.ts";
import {
  At,
  batchOf,
  batchPrecheck,
  Count,
  isPlainObject,
  jsonBody,
  jsonResponse,
  Member,
  memberPrecheck,
  nameParamsChecked,
  normalizeBatch,
  queuedResponse,
  writeErrorResponses,
} from "../schemas.ts";
import type { AppEnv } from "../types.ts";

/**
 * The events route (POST /v1/trending/{stream}/events) and its schemas, in a module of its own: a
 * cold isolate's first event loads this and the library's record, not the other trending routes
 * nor their schemas and edge cache (functions/routes/index.ts `Mount.alone`; ./trending.ts
 * includes the route at its place).
 */

const tags = ["Trending"];

/** The deployment's trending settings, as the library takes them. */
export function settings(c: Context<AppEnv>) {
  return { retentionHours: c.get("config").trendingRetentionHours };
}

const Event = once(() =>
  z.object({
    member: Member(),
    count: Count().optional().openapi({ description: "finite, 0 < count ≤ 1e12; default 1" }),
    at: At().optional(),
  }),
);
export const EventsBody = once(() => batchOf(Event(), "events").openapi("TrendingEvents"));
const EVENT_KEYS = new Set(["member", "count", "at"]);

/**
 * The precheck (../lazy-route.ts) of EventsBody: valid events and bad members are decided without
 * zod (the data in Event's key order, `at` parsed to epoch ms as `At` does); any other problem,
 * zod decides.
 */
export const eventsPrecheck = batchPrecheck((item, path, issues) => {
  if (!isPlainObject(item)) return undefined;
  for (const key in item) if (!EVENT_KEYS.has(key)) return undefined;
  const { count, at } = item;
  const member = memberPrecheck(item.member, [...path, "member"], issues);
  if (member === undefined) return undefined;
  const data: Record<string, unknown> = { member };
  if ("count" in item) {
    if (typeof count !== "number" || !(count > 0 && count <= MAX_INCREMENT)) return undefined;
    data.count = count;
  }
  if ("at" in item) {
    const ms = Number.isSafeInteger(at) || typeof at === "string" ? parseAt(at) : null;
    if (ms === null) return undefined;
    data.at = ms;
  }
  return data;
}, "events");

export const trendingEventsRoutes = createRouter();

lazyRoute(
  trendingEventsRoutes,
  "post",
  "/{stream}/events",
  () => ({
    tags,
    summary: "Record one event or up to 1,000 (one Redis round trip)",
    description:
      "Each event adds `count` to its member in the UTC hour bucket of `at` (default now). `at` must fall in an hour a window can still read (at most min(retention, 168) hours back) and be at most 5 minutes in the future.",
    request: { params: nameParamsChecked("stream"), ...jsonBody(prechecked(EventsBody, eventsPrecheck)) },
    responses: () => ({
      200: jsonResponse(z.object({ accepted: z.number().int() }), "Events recorded."),
      202: queuedResponse(),
      ...writeErrorResponses(),
    }),
  }),
  async (c) => {
    const { stream } = c.req.valid("param");
    const events = normalizeBatch(c.req.valid("json") as TrendingEvent | { events: TrendingEvent[] }, "events");
    const queued = await queueIfAsync(c, "trending", stream, events);
    if (queued) return c.json(queued, 202);
    const { accepted, replayed } = await record(ctxOf(c), stream, events, {
      ...settings(c),
      idempotency: c.get("idempotency"),
    });
    markReplay(c, replayed);
    return c.json({ accepted }, 200);
  },
);
