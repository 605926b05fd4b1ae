/**
 * The player routes of a board (join, score, batch scores, one player, around a player, leave,
 * rank a subset), registered by ./leaderboards.ts between its board routes and its season routes:
 * the order in which /openapi.json lists them.
 */
import * as z from "../zod.ts";
import * as leaderboards from "../../src/leaderboards/index.ts";
import { ctxOf, markReplay } from "../middleware/context.ts";
import { includeRoutes, lazyRoute, prechecked } from "../lazy-route.ts";
import { scoreRoutes } from "./leaderboards-score.ts";
import type { Routes } from "../router.ts";
import {
  errorResponses,
  jsonBody,
  jsonResponse,
  normalizeBatch,
  notFoundResponse,
  writeErrorResponses,
} from "../schemas.ts";

import {
  AroundQuery,
  aroundQueryPrecheck,
  JoinBody,
  joinPrecheck,
  SubsetBody,
  subsetPrecheck,
  batchChangesPrecheck,
  boardParamsChecked,
  playerParamsChecked,
  PlayerQuery,
  playerQueryPrecheck,
  tags,
  Row,
  SeasonId,
  Player,
  Joined,
  ScoreResult,
  rejectedResponse,
  noContent,
  type BatchChange,
  BatchBody,
  SubsetRow,
} from "./leaderboards-schemas.ts";

/** Adds the player routes to `routes` (the leaderboards' list, mounted at /v1/leaderboards). */
export function addPlayerRoutes(routes: Routes): void {
  lazyRoute(
    routes,
    "put",
    "/{board}/players/{player}",
    () => ({
      tags,
      summary: "Join a player, or replace the profile of one who joined before",
      description:
        "Creates the board with default settings if needed. Joining again replaces `name` and `meta` but never the score or join time; `score` applies to new players only.",
      request: { params: playerParamsChecked(), ...jsonBody(prechecked(JoinBody, joinPrecheck)) },
      responses: () => ({
        200: jsonResponse(Joined(), "The player existed; the profile was replaced."),
        201: jsonResponse(Joined(), "The player joined."),
        ...writeErrorResponses(),
      }),
    }),
    async (c) => {
      const { board, player } = c.req.valid("param");
      const body = c.req.valid("json");
      const { replayed, ...joined } = await leaderboards.join(ctxOf(c), board, player, body, c.get("idempotency"));
      markReplay(c, replayed);
      return joined.created ? c.json(joined, 201) : c.json(joined, 200);
    },
  );

  includeRoutes(routes, scoreRoutes);

  lazyRoute(
    routes,
    "post",
    "/{board}/scores",
    () => ({
      tags,
      summary: "Score changes for several players in one atomic request",
      description:
        "`{player, by}` / `{player, set, mode?}` or `{items: [...]}` (up to 1,000), applied in order. One unknown player, out-of-range result or guard breach (422 `score_rejected`) refuses the whole batch.",
      request: { params: boardParamsChecked(), ...jsonBody(prechecked(BatchBody, batchChangesPrecheck)) },
      responses: () => ({
        200: jsonResponse(
          z.object({ results: z.array(ScoreResult()) }),
          "Each change's score; ranks are after the whole batch.",
        ),
        ...writeErrorResponses(),
        ...notFoundResponse(),
        ...rejectedResponse(),
      }),
    }),
    async (c) => {
      const { board } = c.req.valid("param");
      const body = c.req.valid("json");
      const changes = normalizeBatch<z.infer<ReturnType<typeof BatchChange>>, "items">(body, "items");
      // a refusal of an `items` list names the item, as its validation does, also in a list of one
      const list = "items" in body;
      const { results, replayed } = await leaderboards.changeScores(
        ctxOf(c),
        board,
        changes,
        c.get("idempotency"),
        list,
      );
      markReplay(c, replayed);
      return c.json({ results }, 200);
    },
  );

  lazyRoute(
    routes,
    "get",
    "/{board}/players/{player}",
    () => ({
      tags,
      summary: "A player's score, rank, percentile, movement, profile and join time in a season",
      description: "A player who joined but has no score in the season reads as score 0, rank null.",
      request: { params: playerParamsChecked(), query: prechecked(PlayerQuery, playerQueryPrecheck) },
      responses: () => ({ 200: jsonResponse(Player(), "The player."), ...errorResponses(), ...notFoundResponse() }),
    }),
    async (c) => {
      const { board, player } = c.req.valid("param");
      return c.json(await leaderboards.getPlayer(ctxOf(c), board, player, c.req.valid("query")), 200);
    },
  );

  lazyRoute(
    routes,
    "get",
    "/{board}/players/{player}/around",
    () => ({
      tags,
      summary: "The player with up to k rows above and below",
      request: {
        params: playerParamsChecked(),
        query: prechecked(AroundQuery, aroundQueryPrecheck),
      },
      responses: () => ({
        200: jsonResponse(
          z
            .object({
              player: z.string(),
              rank: z.number().int().nullable(),
              items: z.array(Row()),
              season: SeasonId(),
            })
            .openapi("LeaderboardAround"),
          "Rows around the player (none when the player has no score in the season).",
        ),
        ...errorResponses(),
        ...notFoundResponse(),
      }),
    }),
    async (c) => {
      const { board, player } = c.req.valid("param");
      const { k, season } = c.req.valid("query");
      return c.json(await leaderboards.around(ctxOf(c), board, player, k, { season }), 200);
    },
  );

  lazyRoute(
    routes,
    "delete",
    "/{board}/players/{player}",
    () => ({
      tags,
      summary: "Remove a player (ingest)",
      description:
        "The contract gives this to ingest keys (the game server removes a player who leaves). It removes that one player; the board's settings stay unless only joins made the board, and removing its last player takes the board out of the list.",
      request: { params: playerParamsChecked() },
      responses: () => ({ 204: noContent, ...errorResponses() }),
    }),
    async (c) => {
      const { board, player } = c.req.valid("param");
      await leaderboards.removePlayer(ctxOf(c), board, player);
      return c.body(null, 204);
    },
  );

  lazyRoute(
    routes,
    "post",
    "/{board}/rank",
    () => ({
      tags,
      summary: "Rank a subset of players (friends, a team) in board order (read key)",
      description:
        "A read, though a POST (the list can be long): a read key is enough. Each known player with a score in the season comes back with the global `rank` and the rank within the subset; the others are listed in `unknown`. One round trip: an HMGET, a ZMSCORE, a ZRANK per ranked player and an HMGET of profiles. 404 for an unknown board (an EXISTS, only when none of the players ever joined).",
      request: {
        params: boardParamsChecked(),
        query: prechecked(PlayerQuery, playerQueryPrecheck),
        ...jsonBody(prechecked(SubsetBody, subsetPrecheck)),
      },
      responses: () => ({
        200: jsonResponse(
          z
            .object({ items: z.array(SubsetRow()), unknown: z.array(z.string()), season: SeasonId() })
            .openapi("LeaderboardSubsetRanks"),
          "The players in board order.",
        ),
        ...errorResponses(),
        ...notFoundResponse(),
      }),
    }),
    async (c) => {
      const { board } = c.req.valid("param");
      return c.json(
        await leaderboards.rankPlayers(ctxOf(c), board, c.req.valid("json").players, c.req.valid("query")),
        200,
      );
    },
  );
}
