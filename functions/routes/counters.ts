import { z } from "@hono/zod-openapi";
import * as counters from "../../src/counters/index.ts";
import { PERIODS } from "../../src/time.ts";
import { requireScope } from "../middleware/auth.ts";
import { ctxOf, markReplay } from "../middleware/context.ts";
import { queuedResponse, queueIfAsync } from "../middleware/respond-async.ts";
import { lazyRoute, once } from "../lazy-route.ts";
import { createRouter } from "../router.ts";
import {
  batchOf,
  errorResponses,
  Increment,
  intQuery,
  jsonBody,
  jsonResponse,
  Member,
  Name,
  nameParams,
  normalizeBatch,
  notFoundResponse,
  writeErrorResponses,
} from "../schemas.ts";

const tags = ["Counters"];

const PeriodName = once(() =>
  z.enum(PERIODS).openapi({ description: "UTC calendar period (ISO weeks, Monday first)" }),
);
const Aggregate = once(() =>
  z.enum(counters.AGGREGATES).openapi({
    description: `How a member's scores combine across buckets; a member missing from a bucket is skipped, not counted as 0. A sum reads calendar rollups; min and max read every bucket, at most ${counters.MAX_RAW_BUCKETS}. @default sum`,
  }),
);
const Ttl = once(() =>
  z.number().int().min(1).max(counters.MAX_TTL_SECONDS).openapi({
    description:
      "Seconds the written key lives. A key this write creates gets it. An existing key's expiry is only ever extended (when less than ttl is left, to ttl plus up to a tenth of it, at most 1 h more), never shortened; an existing key without expiry keeps none. In a batch a key gets the largest ttl of its items. So an ingest key cannot expire data beyond its own increments.",
  }),
);
const Order = once(() => z.enum(["asc", "desc"]));
const TimeQuery = once(() =>
  z.string().openapi({ description: "epoch ms or ISO-8601 (a date such as 2026-11-01 is its UTC midnight)" }),
);
/**
 * A time in a body, parsed by the library rather than by the shared `At`, so a
 * date that does not exist (2026-02-30) is refused instead of rolled into March.
 */
const TimeValue = once(() =>
  z.union([z.number().int(), z.string()]).openapi({
    type: "string",
    description: "epoch ms or ISO-8601; a real date in years 1000..9999",
    example: "2026-11-22T15:04:05Z",
  }),
);
/** `at` of an increment: like TimeValue, and bounded by what a bucket can usefully store. */
const AtValue = once(() =>
  TimeValue().openapi({
    description: `the time the increment belongs to; only with period. At most ${counters.MAX_BUCKET_AGE_DAYS} days (and at most the item's ttl) in the past, at most 5 minutes ahead. @default now`,
  }),
);

/** Query options every read takes to read the union of period buckets instead of the plain counter. */
const periodQuery = once(() => ({
  period: PeriodName().optional().openapi({
    description: "Read the buckets of this period from `from` to `to` instead of the plain counter.",
  }),
  from: TimeQuery().optional().openapi({
    description: `First period (the one containing this time). Needs period. @default the period of \`to\``,
  }),
  to: TimeQuery()
    .optional()
    .openapi({
      description: `Last period, inclusive; at most ${counters.MAX_RANGE_DAYS} days after from. Needs period. @default now`,
    }),
  aggregate: Aggregate().optional(),
}));

const RangeInfo = once(() =>
  z
    .object({
      period: PeriodName(),
      from: z.number().int().openapi({ description: "start of the first period, epoch ms" }),
      to: z.number().int().openapi({ description: "start of the last period, epoch ms" }),
      aggregate: Aggregate(),
      buckets: z.number().int(),
      finished: z.boolean().openapi({ description: "the range has ended, so its union is cached" }),
    })
    .openapi("CounterRange"),
);

const Scored = once(() => z.object({ member: z.string(), score: z.number() }));
const RankedItem = once(() =>
  Scored()
    .extend({ rank: z.number().int().openapi({ description: "1-based" }) })
    .openapi("CounterRankedItem"),
);

const IncrItem = once(() =>
  z
    .object({
      member: Member(),
      by: Increment().optional().openapi({ description: "may be negative (a decrement). @default 1" }),
      period: PeriodName().optional().openapi({
        description: "store in the bucket of this UTC period. @default none (the plain counter)",
      }),
      at: AtValue().optional(),
      ttl: Ttl().optional(),
    })
    .openapi("CounterIncrement"),
);

type IncrBody = z.infer<ReturnType<typeof IncrItem>>;

const UnionSource = once(() =>
  z.union([
    Name().openapi({ description: "another counter (its plain key)" }),
    z
      .object({ counter: Name(), period: PeriodName(), from: TimeValue().optional(), to: TimeValue().optional() })
      .strict()
      .openapi({ description: "a counter's buckets of `period` from `from` to `to` (defaults as for reads)" }),
  ]),
);

const counterParams = once(() => nameParams("counter"));
const memberParams = once(() =>
  counterParams().extend({ member: Member().openapi({ param: { name: "member", in: "path" } }) }),
);
const noContent = { description: "Done (also when there was nothing to delete)." };

export const countersRoutes = createRouter();

lazyRoute(
  countersRoutes,
  "get",
  "/",
  () => ({
    tags,
    summary: "Names of existing counters, most recently written first, a page at a time",
    description:
      "Ordered by each counter's last write, newest first, so a flood of new names cannot hide an active counter for long, and every name stays reachable by paging with `offset` = the previous page's `nextOffset`. (Until issue 12 the list was in byte order, one page of at most 1,000.)",
    request: {
      query: z.object({
        limit: intQuery(1, counters.MAX_LISTED, counters.MAX_LISTED),
        offset: intQuery(0, 1_000_000_000, 0).openapi({
          description: "names to skip: the previous page's nextOffset. @default 0",
        }),
      }),
    },
    responses: () => ({
      200: jsonResponse(
        z
          .object({
            counters: z.array(z.string()).openapi({ description: "the page's names, most recently written first" }),
            items: z.array(
              z.object({
                counter: z.string(),
                lastWriteAt: z.number().int().openapi({ description: "epoch ms of its last write" }),
              }),
            ),
            nextOffset: z
              .number()
              .int()
              .nullable()
              .openapi({ description: "offset of the next page; null on the last page" }),
          })
          .openapi("CounterList"),
        "Counter names from the registry.",
      ),
      ...errorResponses(),
    }),
  }),
  async (c) => c.json(await counters.list(ctxOf(c), c.req.valid("query")), 200),
);

lazyRoute(
  countersRoutes,
  "post",
  "/{counter}/incr",
  () => ({
    tags,
    summary: "Increment or decrement members (one item or up to 1,000), optionally into calendar buckets",
    description:
      "One Redis round trip including expiries. Without `ttl` an existing expiry stays and a new key never expires; with `ttl` an existing expiry is only ever extended (see `ttl`).",
    request: { params: counterParams(), ...jsonBody(batchOf(IncrItem(), "items")) },
    responses: () => ({
      200: jsonResponse(
        z.object({ results: z.array(Scored()) }).openapi("CounterIncrResult"),
        "Each item's member and its score after the item.",
      ),
      202: queuedResponse(),
      ...writeErrorResponses(),
    }),
  }),
  async (c) => {
    const { counter } = c.req.valid("param");
    const items = normalizeBatch(c.req.valid("json") as IncrBody | { items: IncrBody[] }, "items");
    const queued = await queueIfAsync(c, "counters", counter, items);
    if (queued) return c.json(queued, 202);
    const { replayed, ...result } = await counters.increment(ctxOf(c), counter, items, c.get("idempotency"));
    markReplay(c, replayed);
    return c.json(result, 200);
  },
);

for (const side of ["top", "bottom"] as const) {
  lazyRoute(
    countersRoutes,
    "get",
    `/{counter}/${side}`,
    () => ({
      tags,
      summary: side === "top" ? "The n highest-scoring members" : "The n lowest-scoring members",
      description:
        "Rank 1 is the highest (top) or lowest (bottom) score; equal scores in reverse (top) or plain (bottom) byte order of the member, as Redis orders them.",
      request: { params: counterParams(), query: z.object({ n: intQuery(1, 1000, 10), ...periodQuery() }) },
      responses: () => ({
        200: jsonResponse(
          z
            .object({ counter: z.string(), items: z.array(RankedItem()), range: RangeInfo().optional() })
            .openapi("CounterRanking"),
          "The members.",
        ),
        ...errorResponses(),
      }),
    }),
    async (c) => {
      const { n, ...options } = c.req.valid("query");
      return c.json(await counters.ranked(ctxOf(c), c.req.valid("param").counter, side, n, options), 200);
    },
  );
}

lazyRoute(
  countersRoutes,
  "get",
  "/{counter}/members/{member}",
  () => ({
    tags,
    summary: "One member's score with its 1-based rank from the top and from the bottom",
    request: { params: memberParams(), query: z.object(periodQuery()) },
    responses: () => ({
      200: jsonResponse(
        z
          .object({
            member: z.string(),
            score: z.number(),
            rank: z.number().int(),
            rankFromBottom: z.number().int(),
            range: RangeInfo().optional(),
          })
          .openapi("CounterMember"),
        "The member.",
      ),
      ...errorResponses(),
      ...notFoundResponse(),
    }),
  }),
  async (c) => {
    const { counter, member } = c.req.valid("param");
    return c.json(await counters.memberOf(ctxOf(c), counter, member, c.req.valid("query")), 200);
  },
);

lazyRoute(
  countersRoutes,
  "get",
  "/{counter}/range",
  () => ({
    tags,
    summary: "Members whose score lies in [min, max], with the full count",
    description:
      "Bounds: a number, `(` + number for exclusive, `-inf`, `+inf` (send `+` as `%2B`; a bare `inf` also works).",
    request: {
      params: counterParams(),
      query: z.object({
        min: z.string().default("-inf").openapi({ example: "10" }),
        max: z.string().default("+inf").openapi({ example: "+inf" }),
        limit: intQuery(1, 1000, 100),
        order: Order().default("asc").openapi({ description: "asc: lowest score first. @default asc" }),
        ...periodQuery(),
      }),
    },
    responses: () => ({
      200: jsonResponse(
        z
          .object({ items: z.array(Scored()), count: z.number().int(), range: RangeInfo().optional() })
          .openapi("CounterScoreRange"),
        "Members in range.",
      ),
      ...errorResponses(),
    }),
  }),
  async (c) => c.json(await counters.scoreRange(ctxOf(c), c.req.valid("param").counter, c.req.valid("query")), 200),
);

lazyRoute(
  countersRoutes,
  "get",
  "/{counter}/sorted",
  () => ({
    tags,
    summary: "Every member with its score, ordered by the member's own value",
    description: `by=member orders numerically when every member is a number, else by code point. At most ${counters.MAX_SORTED_MEMBERS} members (400 too_many_members beyond).`,
    request: {
      params: counterParams(),
      query: z.object({
        by: z.enum(["member", "score"]).default("member"),
        order: Order().default("asc"),
        ...periodQuery(),
      }),
    },
    responses: () => ({
      200: jsonResponse(
        z
          .object({
            by: z.string(),
            order: z.string(),
            numeric: z.boolean(),
            count: z.number().int(),
            items: z.array(Scored()),
            range: RangeInfo().optional(),
          })
          .openapi("CounterSorted"),
        "Every member.",
      ),
      ...errorResponses(),
    }),
  }),
  async (c) => c.json(await counters.sorted(ctxOf(c), c.req.valid("param").counter, c.req.valid("query")), 200),
);

lazyRoute(
  countersRoutes,
  "post",
  "/{counter}/union",
  () => ({
    tags,
    summary: "Store a rollup of other counters or of bucket ranges under {counter} (admin)",
    description:
      "Replaces what {counter} held. At most 100 sources expanding to at most 1,000 keys; one Redis round trip.",
    middleware: [requireScope("admin")] as const,
    request: {
      params: counterParams(),
      ...jsonBody(
        z
          .object({
            sources: z.array(UnionSource()).min(1).max(100),
            aggregate: Aggregate().optional(),
            weights: z
              .array(z.number().finite().min(-1e12).max(1e12))
              .optional()
              .openapi({ description: "one per source. @default all 1" }),
            ttl: Ttl().optional().openapi({ description: "seconds the rollup lives. @default kept until deleted" }),
          })
          .strict()
          .openapi("CounterUnion"),
      ),
    },
    responses: () => ({
      200: jsonResponse(
        z
          .object({
            counter: z.string(),
            members: z.number().int(),
            sourcesUsed: z.number().int(),
            sourceKeys: z.number().int(),
            aggregate: Aggregate(),
          })
          .openapi("CounterUnionResult"),
        "The rollup was stored.",
      ),
      ...writeErrorResponses(),
    }),
  }),
  async (c) => {
    const { replayed, ...result } = await counters.union(
      ctxOf(c),
      c.req.valid("param").counter,
      c.req.valid("json"),
      c.get("idempotency"),
    );
    markReplay(c, replayed);
    return c.json(result, 200);
  },
);

lazyRoute(
  countersRoutes,
  "delete",
  "/{counter}/members/{member}",
  () => ({
    tags,
    summary: `Remove a member (from the plain counter, or with period from each bucket in range, at most ${counters.MAX_DELETE_BUCKETS} buckets a call, and their rollups)`,
    request: {
      params: memberParams(),
      query: z.object({ period: periodQuery().period, from: periodQuery().from, to: periodQuery().to }),
    },
    responses: () => ({ 204: noContent, ...writeErrorResponses() }),
  }),
  async (c) => {
    const { counter, member } = c.req.valid("param");
    await counters.deleteMember(ctxOf(c), counter, member, c.req.valid("query"), c.get("idempotency"));
    return c.body(null, 204);
  },
);

lazyRoute(
  countersRoutes,
  "delete",
  "/{counter}",
  () => ({
    tags,
    summary: "Delete a counter, its buckets and its registry entry (admin)",
    middleware: [requireScope("admin")] as const,
    request: { params: counterParams() },
    responses: () => ({ 204: noContent, ...writeErrorResponses() }),
  }),
  async (c) => {
    await counters.deleteCounter(ctxOf(c), c.req.valid("param").counter, c.get("idempotency"));
    return c.body(null, 204);
  },
);
