import * as z from "../zod.ts";
import * as leaderboards from "../../src/leaderboards/index.ts";
import { requireScope } from "../middleware/auth.ts";
import { ctxOf, markReplay } from "../middleware/context.ts";
import { lazyRoute, prechecked } from "../lazy-route.ts";
import { createRouter } from "../router.ts";
import { addPlayerRoutes } from "./leaderboards-players.ts";
import { Count, errorResponses, jsonResponse, notFoundResponse, writeErrorResponses } from "../schemas.ts";

import {
  tags,
  Ties,
  PlayerScore,
  Reset,
  Settings,
  Row,
  SeasonId,
  boardParams,
  boardParamsChecked,
  ListQuery,
  listQueryPrecheck,
  noContent,
  PageQuery,
  pageQueryPrecheck,
  SeasonSummary,
} from "./leaderboards-schemas.ts";

export const leaderboardsRoutes = createRouter();

lazyRoute(
  leaderboardsRoutes,
  "get",
  "/",
  () => ({
    tags,
    summary: "Names of boards with players, most recently active first, a page at a time",
    description:
      "Boards with players (or configured with PUT), ordered by their latest activity (a new player, a PUT), latest first. A board leaves the list when its last player is removed. " +
      "Page with `cursor`: the first page, then `nextCursor` until it is null; such a pass lists every board listed throughout at least once " +
      "(boards that join the list or move up while it runs follow at its end, so a board may be listed twice). " +
      "`offset`/`limit` still page by position (`next` is the offset of the following page, null on the last): a board leaving the list between two pages makes such a pass skip one.",
    request: { query: prechecked(ListQuery, listQueryPrecheck) },
    responses: () => ({
      200: jsonResponse(
        z
          .object({
            boards: z.array(z.string()),
            total: z.number().int().openapi({ description: "boards listed in all" }),
            next: z.number().int().nullable().openapi({
              description: "offset of the next page; null on the last, and on a page asked for by cursor",
            }),
            nextCursor: z.string().nullable().openapi({
              description:
                "pass as cursor for the next page; null on the last, and on a page asked for by an offset above 0",
            }),
          })
          .openapi("LeaderboardList"),
        "A page of board names from the registry.",
      ),
      ...errorResponses(),
    }),
  }),
  async (c) => c.json(await leaderboards.list(ctxOf(c), c.req.valid("query")), 200),
);

lazyRoute(
  leaderboardsRoutes,
  "put",
  "/{board}",
  () => ({
    tags,
    summary: "Create a board or change its settings: tie policy, seasons, score guards (admin)",
    description:
      "Omitted settings keep their value (`null` clears a guard). Changing `ties` or `reset` of a board with players is a 409 (`board_not_empty`). A score write outside the guards is a 422 `score_rejected` and writes nothing.",
    middleware: [requireScope("admin")] as const,
    request: {
      params: boardParams(),
      body: {
        content: {
          "application/json": {
            schema: z
              .object({
                ties: Ties().optional(),
                reset: Reset().optional(),
                keepSeasons: z
                  .number()
                  .int()
                  .min(1)
                  .max(leaderboards.MAX_KEEP_SEASONS)
                  .optional()
                  .openapi({
                    description: `finished seasons kept, 1..${leaderboards.MAX_KEEP_SEASONS} (default ${leaderboards.DEFAULT_KEEP_SEASONS})`,
                  }),
                minScore: PlayerScore()
                  .nullable()
                  .optional()
                  .openapi({ description: "lowest score a write may leave; null clears" }),
                maxScore: PlayerScore()
                  .nullable()
                  .optional()
                  .openapi({ description: "highest score a write may leave; null clears" }),
                // positive: the library refuses ≤ 0, so the document says so (review 10)
                maxIncrement: Count().nullable().optional().openapi({
                  description:
                    "most one request may add to or take from a player's score (sum of |by|), 0 < maxIncrement ≤ 1e12; null clears",
                }),
              })
              .strict()
              .openapi("LeaderboardConfig"),
          },
        },
        required: false,
      },
    },
    responses: () => ({
      200: jsonResponse(Settings(), "The board's settings."),
      ...writeErrorResponses(),
    }),
  }),
  async (c) => {
    const { board } = c.req.valid("param");
    const body = c.req.valid("json") ?? {};
    const { replayed, ...settings } = await leaderboards.configure(ctxOf(c), board, body, c.get("idempotency"));
    markReplay(c, replayed);
    return c.json(settings, 200);
  },
);

lazyRoute(
  leaderboardsRoutes,
  "get",
  "/{board}",
  () => ({
    tags,
    summary: "A page of the ranking with ranks",
    description: "A page past the end has no items. `ties` says how equal scores are ordered.",
    request: { params: boardParamsChecked(), query: prechecked(PageQuery, pageQueryPrecheck) },
    responses: () => ({
      200: jsonResponse(
        z
          .object({
            items: z.array(Row()),
            total: z.number().int(),
            page: z.number().int(),
            limit: z.number().int(),
            ties: Ties(),
            season: SeasonId(),
          })
          .openapi("LeaderboardPage"),
        "The page.",
      ),
      ...errorResponses(),
      ...notFoundResponse(),
    }),
  }),
  async (c) => {
    const { board } = c.req.valid("param");
    const { page, limit, season } = c.req.valid("query");
    return c.json(await leaderboards.page(ctxOf(c), board, { page, limit, season }), 200);
  },
);

lazyRoute(
  leaderboardsRoutes,
  "get",
  "/{board}/count",
  () => ({
    tags,
    summary: "How many players a board has, and its settings",
    request: { params: boardParamsChecked() },
    responses: () => ({
      200: jsonResponse(Settings().omit({ created: true }).openapi("LeaderboardCount"), "The board."),
      ...errorResponses(),
      ...notFoundResponse(),
    }),
  }),
  async (c) => c.json(await leaderboards.info(ctxOf(c), c.req.valid("param").board), 200),
);

lazyRoute(
  leaderboardsRoutes,
  "delete",
  "/{board}",
  () => ({
    tags,
    summary: "Delete a board with every player (admin)",
    description: "Removes every key of the board and its registry entry in one script; no keyspace scan.",
    middleware: [requireScope("admin")] as const,
    request: { params: boardParamsChecked() },
    responses: () => ({ 204: noContent, ...errorResponses() }),
  }),
  async (c) => {
    await leaderboards.deleteBoard(ctxOf(c), c.req.valid("param").board);
    return c.body(null, 204);
  },
);

// the player routes, in the order the OpenAPI document lists them
addPlayerRoutes(leaderboardsRoutes);

lazyRoute(
  leaderboardsRoutes,
  "get",
  "/{board}/seasons",
  () => ({
    tags,
    summary: "Kept seasons with their size and top 3, newest first",
    description:
      "The current season and up to `keepSeasons` finished ones; seasons nobody played are not listed. Empty for a board without seasons.",
    request: { params: boardParamsChecked() },
    responses: () => ({
      200: jsonResponse(
        z
          .object({
            board: z.string(),
            reset: Reset(),
            current: z.string().nullable(),
            seasons: z.array(SeasonSummary()),
          })
          .openapi("LeaderboardSeasons"),
        "The seasons.",
      ),
      ...errorResponses(),
      ...notFoundResponse(),
    }),
  }),
  async (c) => c.json(await leaderboards.listSeasons(ctxOf(c), c.req.valid("param").board), 200),
);
