import * as z from "../zod.ts";
import * as limits from "../../src/counters/limits.ts";
import { requireScope } from "../middleware/auth.ts";
import { ctxOf, markReplay } from "../middleware/context.ts";
import { includeRoutes, lazyRoute, onFirstUse, prechecked } from "../lazy-route.ts";
import { counterIncrRoutes } from "./counters-incr.ts";
import { createRouter } from "../router.ts";
import { errorResponses, jsonBody, jsonResponse, notFoundResponse, writeErrorResponses } from "../schemas.ts";
import {
  Aggregate,
  counterParams,
  counterParamsChecked,
  memberParams,
  noContent,
  RangeInfo,
  RankedItem,
  DeleteQuery,
  deleteQueryPrecheck,
  ListQuery,
  listQueryPrecheck,
  MemberQuery,
  memberParamsPrecheck,
  memberQueryPrecheck,
  RankingQuery,
  rankingQueryPrecheck,
  Scored,
  ScoreRangeQuery,
  scoreRangeQueryPrecheck,
  SortedQuery,
  sortedQueryPrecheck,
  Ttl,
  UnionSource,
} from "./counters-schemas.ts";

const tags = ["Counters"];

/**
 * The counters library, loaded by the first request that calls it: a request its schemas refuse
 * (a cold isolate's first request, say) compiles none of it (~47 KB minified). The writes load
 * only their own modules, without the reads' scripts, and an increment (the commonest first
 * write) without the deletes' (~16 KB).
 */
const counters = onFirstUse(() => import("../../src/counters/index.ts"));
const counterWrites = onFirstUse(() => import("../../src/counters/counters.ts"));

export const countersRoutes = createRouter();

lazyRoute(
  countersRoutes,
  "get",
  "/",
  () => ({
    tags,
    summary: "Names of existing counters, most recently written first, a page at a time",
    description:
      "Ordered by each counter's last write, newest first, so a flood of new names cannot hide an active counter for long. Page with `cursor`: the first page, then `nextCursor` until it is null; such a pass lists every counter listed throughout at least once (counters written while it runs follow at its end, so a name may be listed twice). `offset` = the previous page's `nextOffset` still pages by position: a counter leaving the list (expired, deleted) between two pages makes such a pass skip one. (Until issue 12 the list was in byte order, one page of at most 1,000.)",
    request: { query: prechecked(ListQuery, listQueryPrecheck) },
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
            nextOffset: z.number().int().nullable().openapi({
              description: "offset of the next page; null on the last, and on a page asked for by cursor",
            }),
            nextCursor: z.string().nullable().openapi({
              description:
                "pass as cursor for the next page; null on the last, and on a page asked for by an offset above 0",
            }),
          })
          .openapi("CounterList"),
        "Counter names from the registry.",
      ),
      ...errorResponses(),
    }),
  }),
  async (c) => c.json(await (await counters()).list(ctxOf(c), c.req.valid("query")), 200),
);

includeRoutes(countersRoutes, counterIncrRoutes);

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
      request: { params: counterParamsChecked(), query: prechecked(RankingQuery, rankingQueryPrecheck) },
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
      return c.json(await (await counters()).ranked(ctxOf(c), c.req.valid("param").counter, side, n, options), 200);
    },
  );
}

lazyRoute(
  countersRoutes,
  "get",
  "/{counter}/members/{member}",
  () => ({
    tags,
    summary: `One member's score with its 1-based rank from the top and from the bottom (over a range too big to union, whose keys hold more than ${limits.MAX_UNION_ENTRIES} entries, or ${limits.MAX_UNION_MEMBERS} that may be as many distinct members, the ranks, which need their union, are null)`,
    request: {
      params: prechecked(memberParams, memberParamsPrecheck),
      query: prechecked(MemberQuery, memberQueryPrecheck),
    },
    responses: () => ({
      200: jsonResponse(
        z
          .object({
            member: z.string(),
            score: z.number(),
            // null past the union bounds (MAX_UNION_ENTRIES, MAX_UNION_MEMBERS): the score is exact, the ranks need the union
            rank: z.number().int().nullable(),
            rankFromBottom: z.number().int().nullable(),
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
    return c.json(await (await counters()).memberOf(ctxOf(c), counter, member, c.req.valid("query")), 200);
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
      params: counterParamsChecked(),
      query: prechecked(ScoreRangeQuery, scoreRangeQueryPrecheck),
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
  async (c) =>
    c.json(await (await counters()).scoreRange(ctxOf(c), c.req.valid("param").counter, c.req.valid("query")), 200),
);

lazyRoute(
  countersRoutes,
  "get",
  "/{counter}/sorted",
  () => ({
    tags,
    summary: "Every member with its score, ordered by the member's own value",
    description: `by=member orders numerically (exactly, past a double's precision too) when every member is a number, else by code point. At most ${limits.MAX_SORTED_MEMBERS} members (400 too_many_members beyond).`,
    request: {
      params: counterParamsChecked(),
      query: prechecked(SortedQuery, sortedQueryPrecheck),
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
  async (c) =>
    c.json(await (await counters()).sorted(ctxOf(c), c.req.valid("param").counter, c.req.valid("query")), 200),
);

lazyRoute(
  countersRoutes,
  "post",
  "/{counter}/union",
  () => ({
    tags,
    summary: "Store a rollup of other counters or of bucket ranges under {counter} (admin)",
    description:
      "Replaces what {counter} held. At most 100 sources expanding to at most 1,000 keys, holding at most 100,000 entries (else 400 too_many_entries, nothing written); a union with a score outside ±1e15 (weights multiply) is a 400 and {counter} keeps what it held; one Redis round trip.",
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
    const { replayed, ...result } = await (
      await counters()
    ).union(ctxOf(c), c.req.valid("param").counter, c.req.valid("json"), c.get("idempotency"));
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
    summary: `Remove a member (from the plain counter, or with period from each bucket in range, and their rollups; refused past ${limits.MAX_DELETE_KEYS} keys that may hold it, or when ${limits.MAX_DELETE_READS} commands do not show it fits: a range of at most 60 days always does)`,
    request: {
      params: prechecked(memberParams, memberParamsPrecheck),
      query: prechecked(DeleteQuery, deleteQueryPrecheck),
    },
    responses: () => ({ 204: noContent, ...writeErrorResponses() }),
  }),
  async (c) => {
    const { counter, member } = c.req.valid("param");
    await (await counterWrites()).deleteMember(ctxOf(c), counter, member, c.req.valid("query"), c.get("idempotency"));
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
    request: { params: counterParamsChecked() },
    responses: () => ({ 204: noContent, ...writeErrorResponses() }),
  }),
  async (c) => {
    await (await counterWrites()).deleteCounter(ctxOf(c), c.req.valid("param").counter, c.get("idempotency"));
    return c.body(null, 204);
  },
);
