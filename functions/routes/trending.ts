import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { hourIndex } from "../../src/time.ts";
import { MAX_TOP_N } from "../../src/trending/options.ts";
import { deleteStream, listStreams, memberTrending, topTrending, type TopResult } from "../../src/trending/read.ts";
import { recordEvents, type TrendingEvent } from "../../src/trending/write.ts";
import { requireScope } from "../middleware/auth.ts";
import { ctxOf, markReplay } from "../middleware/context.ts";
import { queuedResponse, queueIfAsync } from "../middleware/respond-async.ts";
import { createRouter } from "../router.ts";
import { At, batchOf, Count, errorResponses, jsonBody, jsonResponse, Member, Name, nameParams, normalizeBatch, Window, writeErrorResponses, intQuery } from "../schemas.ts";
import type { AppEnv } from "../types.ts";

const tags = ["Trending"];

const Event = z.object({
  member: Member,
  count: Count.optional().openapi({ description: "finite, 0 < count ≤ 1e12; default 1" }),
  at: At.optional(),
});
const EventsBody = batchOf(Event, "events").openapi("TrendingEvents");

const WindowInfo = z
  .object({
    hours: z.number().int().openapi({ description: "finished hours before the current one" }),
    from: z.number().int().openapi({ description: "start of the oldest hour read, epoch ms (inclusive)" }),
    to: z.number().int().openapi({ description: "end of the current hour, epoch ms (exclusive)" }),
  })
  .openapi("TrendingWindow");

const TopResponse = z
  .object({
    stream: z.string(),
    window: WindowInfo,
    items: z.array(z.object({ rank: z.number().int(), member: z.string(), count: z.number() })),
    exact: z.boolean().openapi({ description: "true when no trimming touched the window: the true top N with true counts" }),
    maxError: z.number().openapi({ description: "each count is at most this much below the truth; 0 when exact" }),
    topProven: z.boolean().openapi({ description: "the set and order are proven even though counts may be low by up to maxError" }),
    generatedAt: z.number().int().openapi({ description: "when this answer was computed (epoch ms); older than now on an edge-cache hit" }),
  })
  .openapi("TrendingTop");

const MemberResponse = z
  .object({
    member: z.string(),
    count: z.number(),
    rank: z.number().int().nullable().openapi({ description: "1-based, ties by member byte order; null when the member has no count; the best rank it can have when rankExact is false" }),
    rankExact: z.boolean().openapi({ description: "Whether rank is exact; false for a member deep in a big window, whose rank is given as bounds (an extension of the contract)" }),
    rankMax: z.number().int().optional().openapi({ description: "Only when rankExact is false: the worst rank the member can have" }),
    window: WindowInfo,
    exact: z.boolean(),
    maxError: z.number(),
    generatedAt: z.number().int(),
  })
  .openapi("TrendingMember");

const streamParams = nameParams("stream");
const TopQuery = z.object({ n: intQuery(1, MAX_TOP_N, 10), window: Window });
const WindowQuery = z.object({ window: Window });

function settings(c: Context<AppEnv>) {
  return { retentionHours: c.get("config").trendingRetentionHours };
}

export const trendingRoutes = createRouter();

trendingRoutes.openapi(
  createRoute({
    method: "get",
    path: "/",
    tags,
    summary: "List streams (registry, byte order, at most 1,000)",
    responses: { 200: jsonResponse(z.object({ streams: z.array(z.string()) }).openapi("TrendingStreams"), "Stream names."), ...errorResponses },
  }),
  async (c) => c.json({ streams: await listStreams(ctxOf(c)) }, 200),
);

trendingRoutes.openapi(
  createRoute({
    method: "post",
    path: "/{stream}/events",
    tags,
    summary: "Record one event or up to 1,000 (one Redis round trip)",
    description:
      "Each event adds `count` to its member in the UTC hour bucket of `at` (default now). `at` may be up to the retention in the past and at most 5 minutes in the future.",
    request: { params: streamParams, ...jsonBody(EventsBody) },
    responses: { 200: jsonResponse(z.object({ accepted: z.number().int() }), "Events recorded."), 202: queuedResponse, ...writeErrorResponses },
  }),
  async (c) => {
    const { stream } = c.req.valid("param");
    const events = normalizeBatch(c.req.valid("json") as TrendingEvent | { events: TrendingEvent[] }, "events");
    const queued = await queueIfAsync(c, "trending", stream, events);
    if (queued) return c.json(queued, 202);
    const { accepted, replayed } = await recordEvents(ctxOf(c), stream, events, { ...settings(c), idempotency: c.get("idempotency") });
    markReplay(c, replayed);
    return c.json({ accepted }, 200);
  },
);

/** Edge-cache key: deployment (Redis URL + key prefix), stream, n, window and hour, never shared across them. */
async function cacheKey(c: Context<AppEnv>, stream: string, n: number, windowHours: number): Promise<string> {
  const deployment = `${c.env.UPSTASH_REDIS_REST_URL ?? ""}\n${c.get("config").keyPrefix}`;
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(deployment));
  const id = [...new Uint8Array(digest).slice(0, 12)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `https://edgestats.cache/trending/${id}/${stream}/${n}/${windowHours}/${hourIndex(c.get("now"))}`;
}

/**
 * The oldest cached answer the request accepts, in seconds: 0 for
 * `Cache-Control: no-cache`/`no-store`/`max-age=0` (a fresh answer), the
 * request's `max-age` when it is shorter than ours, else ours.
 */
function acceptedAge(c: Context<AppEnv>, seconds: number): number {
  const header = (c.req.header("cache-control") ?? "").toLowerCase();
  if (/\bno-cache\b|\bno-store\b/.test(header)) return 0;
  const maxAge = /\bmax-age\s*=\s*"?(\d+)/.exec(header);
  return maxAge ? Math.min(seconds, Number(maxAge[1])) : seconds;
}

trendingRoutes.openapi(
  createRoute({
    method: "get",
    path: "/{stream}/top",
    tags,
    summary: "Top N over the last `window` finished hours plus the current hour",
    description:
      "One Redis round trip (a threshold read: a few commands whatever the stream's size), or none when served from the Workers cache (TRENDING_CACHE_SECONDS; send `Cache-Control: no-cache` for a fresh answer, or `max-age=N` to accept nothing older than N seconds). `X-Edgestats-Cache` says hit, miss or bypass, or off (TRENDING_CACHE_SECONDS=0, or a `*.workers.dev` host, where the Cache API does nothing); `Age` on a hit says how old the answer is.",
    request: { params: streamParams, query: TopQuery },
    responses: { 200: jsonResponse(TopResponse, "The top N."), ...errorResponses },
  }),
  async (c) => {
    const { stream } = c.req.valid("param");
    const { n, window } = c.req.valid("query");
    const seconds = c.get("config").trendingCacheSeconds;
    const compute = () => topTrending(ctxOf(c), stream, { ...settings(c), n, windowHours: window });
    // The Cache API silently does nothing on *.workers.dev (it needs a route on a custom domain):
    // say so instead of reporting misses that can never turn into hits.
    if (seconds <= 0 || new URL(c.req.url).hostname.endsWith(".workers.dev")) {
      c.header("X-Edgestats-Cache", "off");
      return c.json(await compute(), 200);
    }

    // workers-types' CacheStorage has `default`; the DOM lib's declaration shadows it
    const cache = (caches as unknown as { default: Cache }).default;
    const key = await cacheKey(c, stream, n, window);
    const accepted = acceptedAge(c, seconds);
    const fresh = accepted === 0;
    if (!fresh) {
      const hit = await cache.match(key);
      const body = hit ? ((await hit.json()) as TopResult) : undefined;
      const age = body ? Math.max(0, Math.floor((c.get("now") - body.generatedAt) / 1000)) : 0;
      // the Cache API expires entries by itself; this also honours a shorter max-age the client asked for
      if (body && age <= accepted) {
        c.header("X-Edgestats-Cache", "hit");
        c.header("Age", String(age));
        c.header("Cache-Control", `private, max-age=${Math.max(0, seconds - age)}`);
        return c.json(body, 200);
      }
    }
    const result = await compute();
    const text = JSON.stringify(result);
    await cache.put(key, new Response(text, { headers: { "content-type": "application/json", "cache-control": `public, max-age=${seconds}` } }));
    c.header("X-Edgestats-Cache", fresh ? "bypass" : "miss");
    c.header("Cache-Control", `private, max-age=${seconds}`);
    return c.json(result, 200);
  },
);

trendingRoutes.openapi(
  createRoute({
    method: "get",
    path: "/{stream}/members/{member}",
    tags,
    summary: "Count and rank of one member over a window (one Redis round trip)",
    request: {
      params: z.object({ stream: Name.openapi({ param: { name: "stream", in: "path" } }), member: Member.openapi({ param: { name: "member", in: "path" } }) }),
      query: WindowQuery,
    },
    responses: { 200: jsonResponse(MemberResponse, "The member's count and rank."), ...errorResponses },
  }),
  async (c) => {
    const { stream, member } = c.req.valid("param");
    const { window } = c.req.valid("query");
    return c.json(await memberTrending(ctxOf(c), stream, member, { ...settings(c), windowHours: window }), 200);
  },
);

trendingRoutes.openapi(
  createRoute({
    method: "delete",
    path: "/{stream}",
    tags,
    summary: "Delete a stream: every bucket, union and registry entry (admin)",
    middleware: [requireScope("admin")] as const,
    request: { params: streamParams },
    responses: { 204: { description: "Deleted (also when it did not exist)." }, ...errorResponses },
  }),
  async (c) => {
    const { stream } = c.req.valid("param");
    await deleteStream(ctxOf(c), stream, settings(c));
    return c.body(null, 204);
  },
);
