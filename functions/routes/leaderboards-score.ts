/**
 * The score change's route (POST /v1/leaderboards/{board}/players/{player}/score) and its schemas,
 * in a module of its own: a cold isolate's first score write loads this and the library's writes
 * (src/leaderboards/leaderboards.ts), not the other leaderboard routes nor their schemas and
 * reads (functions/routes/index.ts `Mount.alone`; ./leaderboards-players.ts includes the route at
 * its place).
 */
import * as z from "../zod.ts";
import { changeScore } from "../../src/leaderboards/leaderboards.ts";
import { MAX_INCREMENT } from "../../src/validation.ts";
import { ctxOf, markReplay } from "../middleware/context.ts";
import { lazyRoute, once, prechecked } from "../lazy-route.ts";
import { boundedNumber, oneOf, optional, precheckOf, required, scoreField, strictObject } from "../prechecks.ts";
import { createRouter } from "../router.ts";
import {
  Increment,
  jsonBody,
  jsonResponse,
  nameParamsChecked,
  notFoundResponse,
  Score,
  writeErrorResponses,
} from "../schemas.ts";

const tags = ["Leaderboards"];
/** The board and player in the path, prechecked (../lazy-route.ts). */
const playerParamsChecked = () => nameParamsChecked("board", "player");

export const PlayerScore = once(() => Score().openapi({ description: "finite, within ±1e15 (integers are exact)" }));

export const ByChange = once(() => z.object({ by: Increment() }));
export const SetChange = once(() =>
  z.object({
    set: PlayerScore(),
    mode: z
      .enum(["replace", "best"])
      .optional()
      .openapi({ description: "`best` keeps the higher of the old and new score. @default replace" }),
  }),
);
export const Change = once(() =>
  z.union([ByChange().strict(), SetChange().strict()]).openapi("LeaderboardScoreChange"),
);
/**
 * Change's precheck (../lazy-route.ts `prechecked`): `{by}` within ±1e12 or `{set, mode?}` within
 * ±1e15, as zod accepts them, decided without zod (a cold isolate's first score write loads none);
 * any problem, zod decides and words.
 */
const byChange = strictObject({ by: required(boundedNumber(MAX_INCREMENT)) });
const setChange = strictObject({
  set: required(scoreField),
  mode: optional(oneOf(["replace", "best"])),
});
export const changePrecheck = precheckOf((value) => byChange(value) ?? setChange(value));
export const ScoreResult = once(() =>
  z.object({ player: z.string(), score: z.number(), rank: z.number().int() }).openapi("LeaderboardScore"),
);

export const rejectedResponse = once(
  () =>
    ({
      422: {
        description:
          "`score_rejected`: the write breaks the board's guards (minScore, maxScore, maxIncrement); nothing was written.",
        content: {
          "application/json": {
            schema: z.object({
              error: z.object({
                code: z.string(),
                message: z.string(),
                details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
              }),
            }),
          },
        },
      },
    }) as const,
);

export const scoreRoutes = createRouter();

lazyRoute(
  scoreRoutes,
  "post",
  "/{board}/players/{player}/score",
  () => ({
    tags,
    summary: "Increment (`by`, may be negative) or set (`set`, `mode` replace|best) a score",
    description:
      "Atomic. 404 when the player has not joined; 400 when the result would leave ±1e15; 422 `score_rejected` when it breaks the board's guards. On a seasonal board the player's first write of a season enters it at 0.",
    request: { params: playerParamsChecked(), ...jsonBody(prechecked(Change, changePrecheck)) },
    responses: () => ({
      200: jsonResponse(ScoreResult().omit({ player: true }), "The new score and 1-based rank."),
      ...writeErrorResponses(),
      ...notFoundResponse(),
      ...rejectedResponse(),
    }),
  }),
  async (c) => {
    const { board, player } = c.req.valid("param");
    const { score, rank, replayed } = await changeScore(
      ctxOf(c),
      board,
      player,
      c.req.valid("json"),
      c.get("idempotency"),
    );
    markReplay(c, replayed);
    return c.json({ score, rank }, 200);
  },
);
