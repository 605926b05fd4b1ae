import * as z from "../zod.ts";
import * as trending from "../../src/trending/index.ts";
import { edgeCached } from "../edge-cache.ts";
import { requireScope } from "../middleware/auth.ts";
import { ctxOf } from "../middleware/context.ts";
import { includeRoutes, lazyRoute, once, prechecked } from "../lazy-route.ts";
import { settings, trendingEventsRoutes } from "./trending-events.ts";
import { fieldsPrecheck, intTextField, memberField } from "../prechecks.ts";
import { createRouter } from "../router.ts";
import { errorResponses, jsonResponse, Member, intText, nameParamsChecked } from "../schemas.ts";
import {
  MemberLookupParams,
  memberLookupParamsPrecheck,
  RisingQuery,
  risingQueryPrecheck,
  StreamsQuery,
  streamsQueryPrecheck,
  TopQuery,
  topQueryPrecheck,
  WindowQuery,
  windowQueryPrecheck,
} from "./trending-schemas.ts";

export { EventsBody, eventsPrecheck } from "./trending-events.ts";

const tags = ["Trending"];

const WindowInfo = once(() =>
  z
    .object({
      hours: z.number().int().openapi({ description: "finished hours before the current one" }),
      from: z.number().int().openapi({ description: "start of the oldest hour read, epoch ms (inclusive)" }),
      to: z.number().int().openapi({ description: "end of the current hour, epoch ms (exclusive)" }),
    })
    .openapi("TrendingWindow"),
);

const TopResponse = once(() =>
  z
    .object({
      stream: z.string(),
      window: WindowInfo(),
      items: z.array(z.object({ rank: z.number().int(), member: z.string(), count: z.number() })),
      exact: z
        .boolean()
        .openapi({ description: "true when no trimming touched the window: the true top N with true counts" }),
      maxError: z.number().openapi({ description: "each count is at most this much below the truth; 0 when exact" }),
      topProven: z
        .boolean()
        .openapi({ description: "the set and order are proven even though counts may be low by up to maxError" }),
      generatedAt: z
        .number()
        .int()
        .openapi({ description: "when this answer was computed (epoch ms); older than now on an edge-cache hit" }),
    })
    .openapi("TrendingTop"),
);

const MemberResponse = once(() =>
  z
    .object({
      member: z.string(),
      count: z.number(),
      rank: z.number().int().nullable().openapi({
        description:
          "1-based, ties by member byte order; null when the member has no count; the best rank it can have when rankExact is false",
      }),
      rankExact: z.boolean().openapi({
        description:
          "Whether rank is exact; false for a member deep in a big window, whose rank is given as bounds (an extension of the contract)",
      }),
      rankMax: z
        .number()
        .int()
        .optional()
        .openapi({ description: "Only when rankExact is false: the worst rank the member can have" }),
      window: WindowInfo(),
      exact: z.boolean(),
      maxError: z.number(),
      generatedAt: z.number().int(),
    })
    .openapi("TrendingMember"),
);

const RisingResponse = once(() =>
  z
    .object({
      stream: z.string(),
      baselineHours: z
        .number()
        .int()
        .openapi({ description: "finished hours before the current one the baseline averages over" }),
      elapsed: z
        .number()
        .openapi({ description: "part of the current hour elapsed (0..1); the baseline is scaled by it" }),
      candidates: z
        .number()
        .int()
        .openapi({
          description: `members considered: the current hour's top ${trending.RISING_CANDIDATES} by count (fewer when it has fewer)`,
        }),
      items: z.array(
        z.object({
          member: z.string(),
          count: z.number().openapi({ description: "count in the current hour so far" }),
          baseline: z.number().openapi({
            description:
              "expected count for the elapsed part of this hour: the member's average hourly count over the baseline hours × elapsed",
          }),
          ratio: z.number().nullable().openapi({ description: "count / baseline; null when the baseline is 0" }),
          score: z.number().openapi({
            description: "(count − baseline) / √(baseline + 1); only members with score > 0 are listed, highest first",
          }),
        }),
      ),
      exact: z.boolean().openapi({ description: "true when no baseline hour was trimmed: every baseline is exact" }),
      maxError: z.number().openapi({ description: "every baseline is at most this much below the true one" }),
      generatedAt: z.number().int(),
    })
    .openapi("TrendingRising"),
);

const HistoryResponse = once(() =>
  z
    .object({
      stream: z.string(),
      member: z.string(),
      hours: z.number().int().openapi({ description: "finished hours covered; the current hour is the last point" }),
      points: z.array(
        z.object({
          hour: z.number().int().openapi({ description: "start of the UTC hour, epoch ms" }),
          count: z.number().openapi({ description: "the member's count stored for that hour" }),
          maxError: z.number().openapi({
            description:
              "the true count is in [count, count + maxError]: what compaction trimmed from that hour; 0 when never trimmed (exact)",
          }),
        }),
      ),
      exact: z.boolean().openapi({ description: "true when no point's hour was trimmed" }),
      generatedAt: z.number().int(),
    })
    .openapi("TrendingHistory"),
);

export const HistoryQuery = once(() =>
  z.object({
    member: Member(),
    hours: intText(1, trending.MAX_WINDOW_HOURS).optional().openapi({
      type: "integer",
      minimum: 1,
      maximum: trending.MAX_WINDOW_HOURS,
      example: 48,
      description: "finished hours back, at most the retention; default 48 (the retention when shorter)",
    }),
  }),
);
/** HistoryQuery's precheck (../prechecks.ts): a valid member, `hours` absent or in plain digits. */
export const historyQueryPrecheck = fieldsPrecheck({
  member: memberField,
  hours: intTextField(1, trending.MAX_WINDOW_HOURS),
});

export const trendingRoutes = createRouter();

lazyRoute(
  trendingRoutes,
  "get",
  "/",
  () => ({
    tags,
    summary: "List streams (registry, byte order), with cursor pagination",
    description:
      "A page of at most `limit` names after `cursor`; `nextCursor` (the page's last name) is null on the last page. " +
      "Until review 19 the list stopped at the first 1,000 names without a sign.",
    request: { query: prechecked(StreamsQuery, streamsQueryPrecheck) },
    responses: () => ({
      200: jsonResponse(
        z
          .object({
            streams: z.array(z.string()),
            nextCursor: z
              .string()
              .nullable()
              .openapi({ description: "pass as cursor for the next page; null on the last page" }),
          })
          .openapi("TrendingStreams"),
        "One page of stream names.",
      ),
      ...errorResponses(),
    }),
  }),
  async (c) => {
    const { limit, cursor } = c.req.valid("query");
    return c.json(await trending.listPage(ctxOf(c), { limit, ...(cursor ? { cursor } : {}) }), 200);
  },
);

includeRoutes(trendingRoutes, trendingEventsRoutes);

lazyRoute(
  trendingRoutes,
  "get",
  "/{stream}/top",
  () => ({
    tags,
    summary: "Top N over the last `window` finished hours plus the current hour",
    description:
      "One Redis round trip (a threshold read: a few commands whatever the stream's size), or none when served from the Workers cache (TRENDING_CACHE_SECONDS; send `Cache-Control: no-cache` for a fresh answer, or `max-age=N` to accept nothing older than N seconds). `X-Edgestats-Cache` says hit, miss or bypass, or off (TRENDING_CACHE_SECONDS=0, or a `*.workers.dev` host, where the Cache API does nothing); `Age` on a hit says how old the answer is.",
    request: { params: nameParamsChecked("stream"), query: prechecked(TopQuery, topQueryPrecheck) },
    responses: () => ({ 200: jsonResponse(TopResponse(), "The top N."), ...errorResponses() }),
  }),
  async (c) => {
    const { stream } = c.req.valid("param");
    const { n, window } = c.req.valid("query");
    // a window the query does not name is the library's default: 24 h, or the retention if shorter
    const windowHours = c.req.query("window") === undefined ? undefined : window;
    const top = () => trending.top(ctxOf(c), stream, { ...settings(c), n, windowHours });
    return c.json(await edgeCached(c, "trending", [stream, n, window], c.get("config").trendingCacheSeconds, top), 200);
  },
);

lazyRoute(
  trendingRoutes,
  "get",
  "/{stream}/rising",
  () => ({
    tags,
    summary: "Members of the current hour most above their own baseline rate (one Redis round trip)",
    description: `Candidates are the current hour's top ${trending.RISING_CANDIDATES} members by count (bounded work, never a scan). A member's baseline is its average hourly count over the \`baseline\` finished hours before this one, scaled to the elapsed part of this hour; score = (count − baseline) / √(baseline + 1), so a jump from 0 to 3 does not outrank one from 100 to 400. Only members with a positive score are listed.`,
    request: { params: nameParamsChecked("stream"), query: prechecked(RisingQuery, risingQueryPrecheck) },
    responses: () => ({
      200: jsonResponse(RisingResponse(), "The rising members, highest score first."),
      ...errorResponses(),
    }),
  }),
  async (c) => {
    const { stream } = c.req.valid("param");
    const { n, baseline } = c.req.valid("query");
    const baselineHours = c.req.query("baseline") === undefined ? undefined : baseline;
    return c.json(await trending.rising(ctxOf(c), stream, { ...settings(c), n, baselineHours }), 200);
  },
);

lazyRoute(
  trendingRoutes,
  "get",
  "/{stream}/history",
  () => ({
    tags,
    summary: "One member's count hour by hour (one Redis round trip)",
    description:
      "Points for the `hours` finished hours and the current one, oldest first. Compaction trims finished hours to their top members: a point's `maxError` says how far below the truth its count may be (0: exact), and `exact` is false when any point's hour was trimmed.",
    request: { params: nameParamsChecked("stream"), query: prechecked(HistoryQuery, historyQueryPrecheck) },
    responses: () => ({ 200: jsonResponse(HistoryResponse(), "The member's hourly counts."), ...errorResponses() }),
  }),
  async (c) => {
    const { stream } = c.req.valid("param");
    const { member, hours } = c.req.valid("query");
    return c.json(
      await trending.history(ctxOf(c), stream, member, { ...settings(c), ...(hours === undefined ? {} : { hours }) }),
      200,
    );
  },
);

lazyRoute(
  trendingRoutes,
  "get",
  "/{stream}/members/{member}",
  () => ({
    tags,
    summary: "Count and rank of one member over a window (one Redis round trip)",
    request: {
      params: prechecked(MemberLookupParams, memberLookupParamsPrecheck),
      query: prechecked(WindowQuery, windowQueryPrecheck),
    },
    responses: () => ({ 200: jsonResponse(MemberResponse(), "The member's count and rank."), ...errorResponses() }),
  }),
  async (c) => {
    const { stream, member } = c.req.valid("param");
    const { window } = c.req.valid("query");
    const windowHours = c.req.query("window") === undefined ? undefined : window;
    return c.json(await trending.member(ctxOf(c), stream, member, { ...settings(c), windowHours }), 200);
  },
);

lazyRoute(
  trendingRoutes,
  "delete",
  "/{stream}",
  () => ({
    tags,
    summary: "Delete a stream: every bucket, union and registry entry (admin)",
    middleware: [requireScope("admin")] as const,
    request: { params: nameParamsChecked("stream") },
    responses: () => ({ 204: { description: "Deleted (also when it did not exist)." }, ...errorResponses() }),
  }),
  async (c) => {
    const { stream } = c.req.valid("param");
    await trending.deleteStream(ctxOf(c), stream, settings(c));
    return c.body(null, 204);
  },
);
