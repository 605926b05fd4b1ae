/**
 * The OpenAPI/zod schemas of the leaderboard routes (functions/routes/leaderboards.ts), kept apart
 * so the route file holds only the routes and their thin handlers.
 */
import * as z from "../zod.ts";
import * as leaderboards from "../../src/leaderboards/index.ts";
import { ACTIVITY_CURSOR_MAX } from "../../src/redis/pages.ts";
import { MAX_BATCH, MAX_INCREMENT } from "../../src/validation.ts";
import {
  batchPrecheck,
  intQuery,
  isPlainObject,
  DisplayText,
  Name,
  nameParams,
  nameParamsChecked,
} from "../schemas.ts";
import { once } from "../lazy-route.ts";
import {
  boundedNumber,
  scoreField,
  type Field,
  fieldsPrecheck,
  displayTextField,
  intField,
  nameField,
  oneOf,
  optional,
  precheckOf,
  required,
  strictObject,
  checkedTextField,
  maxTextField,
} from "../prechecks.ts";

// The score change's schemas are in its route's module (./leaderboards-score.ts), which a cold
// isolate's first score write loads without these; re-exported here for the other routes.
export {
  ByChange,
  Change,
  changePrecheck,
  PlayerScore,
  rejectedResponse,
  ScoreResult,
  SetChange,
} from "./leaderboards-score.ts";
import { ByChange, PlayerScore, SetChange } from "./leaderboards-score.ts";

export const tags = ["Leaderboards"];

export const Ties = once(() =>
  z.enum(["joined", "reached"]).openapi({
    description:
      "Of equal scores, `joined`: the earlier joiner ranks higher; `reached`: whoever reached the score first.",
  }),
);

export const Meta = once(() =>
  z
    .preprocess(
      // The value as sent: z.record copies by assignment, which drops a `__proto__` key (and the
      // size under it) before any refinement of the record could see it. Other types are the record's to refuse.
      (meta, ctx) => {
        const problem = isPlainObject(meta) ? leaderboards.metaProblem(meta) : null;
        if (problem) ctx.addIssue({ code: "custom", message: problem, input: meta });
        return meta;
      },
      z.record(z.string(), z.any()).nullable(),
    )
    .openapi({
      description: `Any JSON object up to ${leaderboards.MAX_META_BYTES} bytes.`,
      example: { country: "ES" },
    }),
);

export const Reset = once(() =>
  z.enum(["none", "daily", "weekly", "monthly"]).openapi({
    description: "Calendar seasons, UTC (weekly: ISO weeks, from Monday 00:00). `none` ranks for all time.",
  }),
);

export const Settings = once(() =>
  z
    .object({
      board: z.string(),
      ties: Ties(),
      createdAt: z.number().int().openapi({ description: "epoch ms" }),
      players: z.number().int().openapi({ description: "players ranked in the current season" }),
      created: z.boolean(),
      reset: Reset(),
      keepSeasons: z.number().int().openapi({ description: "finished seasons kept besides the current one" }),
      minScore: z.number().nullable(),
      maxScore: z.number().nullable(),
      maxIncrement: z
        .number()
        .nullable()
        .openapi({ description: "most a request may add to (or take from) a player's score" }),
      season: z.string().nullable().openapi({ description: "the current season's id; null without seasons" }),
    })
    .openapi("LeaderboardSettings"),
);

const Movement = once(() => ({
  previousRank: z.number().int().nullable().openapi({
    description:
      "final rank in the season before (seasonal boards), or the rank at the last daily snapshot (boards without seasons); null when unknown or unranked then",
  }),
  bestRank: z
    .number()
    .int()
    .nullable()
    .openapi({ description: "best rank seen at the player's own writes this season, never worse than the rank now" }),
}));

/** A ranked player as lists show it (a page, around-me, a season's top 3). */
const Ranked = once(() => ({
  rank: z.number().int(),
  player: z.string(),
  name: z.string().nullable(),
  score: z.number(),
}));

export const Row = once(() => z.object({ ...Ranked(), ...Movement() }).openapi("LeaderboardRow"));

export const SeasonQuery = once(() =>
  z
    .string()
    .optional()
    .superRefine((value, ctx) => {
      const problem = value === undefined ? null : leaderboards.seasonSelectorProblem(value);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    })
    .openapi({
      description:
        "`current` (default), `previous`, or a season id: `2026-11-23` (daily), `2026-W48` (weekly), `2026-11` (monthly)",
      example: "current",
    }),
);
export const SeasonId = once(() =>
  z.string().nullable().openapi({ description: "the season read; null for a board without seasons" }),
);

/** A player's profile and score, as a join and a player read answer them. */
const Profile = once(() => ({
  player: z.string(),
  name: z.string().nullable(),
  meta: z.record(z.string(), z.any()).nullable(),
  score: z.number(),
}));

export const Player = once(() =>
  z
    .object({
      ...Profile(),
      rank: z.number().int().nullable().openapi({ description: "null when the player has no score in the season" }),
      joinedAt: z.number().int().openapi({ description: "epoch ms" }),
      percentile: z.number().nullable().openapi({
        description: "percentage of the season's players ranked strictly below, 0..100, floored to two decimals",
      }),
      total: z.number().int().openapi({ description: "players ranked in the season" }),
      ...Movement(),
      season: SeasonId(),
    })
    .openapi("LeaderboardPlayer"),
);

export const Joined = once(() =>
  z
    .object({
      ...Profile(),
      rank: z.number().int().nullable().openapi({
        description:
          "null when an existing player joins again in a season it has not played and 0 is outside the board's guards (not entered)",
      }),
      joinedAt: z.number().int().openapi({ description: "epoch ms" }),
      created: z.boolean(),
    })
    .openapi("LeaderboardJoin"),
);

export const boardParams = once(() => nameParams("board"));
export const playerParams = once(() => nameParams("board", "player"));
/** `boardParams()` and `playerParams()`, prechecked (../lazy-route.ts). */
export const boardParamsChecked = () => nameParamsChecked("board");
export const playerParamsChecked = () => nameParamsChecked("board", "player");

/*
 * The reads' queries, each with its precheck (../lazy-route.ts `prechecked`, ../prechecks.ts):
 * numbers in plain digits and a season selector the library takes are decided without zod, so a
 * cold isolate's first page, player or around read loads none; anything else, zod decides.
 */
const seasonField = checkedTextField((selector) => leaderboards.seasonSelectorProblem(selector));
/** The body of a join. */
export const JoinBody = once(() =>
  z
    .object({
      name: DisplayText().openapi({
        example: "Alice",
        description: "display name: 1..256 UTF-8 bytes, no control characters",
      }),
      meta: Meta().optional(),
      score: PlayerScore().optional(),
    })
    .strict(),
);
/**
 * JoinBody's precheck, as Change's: a valid name, `meta` null or a JSON object the library takes
 * (metaProblem refuses a `__proto__` key and non-finite numbers: zod answers those), a score within ±1e15.
 */
const metaField: Field = (meta) =>
  meta === null || (isPlainObject(meta) && !leaderboards.metaProblem(meta)) ? meta : undefined;
const join = strictObject({
  name: required(displayTextField),
  meta: optional(metaField),
  score: optional(scoreField),
});
export const joinPrecheck = precheckOf(join);

/** The body of a subset's ranking: 1..1,000 player names. */
export const SubsetBody = once(() =>
  z
    .object({ players: z.array(Name()).min(1).max(MAX_BATCH) })
    .strict()
    .openapi("LeaderboardSubset"),
);
const subset = strictObject({
  players: (players) =>
    Array.isArray(players) &&
    players.length >= 1 &&
    players.length <= MAX_BATCH &&
    players.every((p) => typeof nameField(p) === "string")
      ? [...players]
      : undefined,
});
/** SubsetBody's precheck, as Change's. */
export const subsetPrecheck = precheckOf(subset);

/** The query of the boards' list. */
export const ListQuery = once(() =>
  z.object({
    offset: intQuery(0, 1_000_000, 0).openapi({
      description: "boards to skip: `next` of the previous page (0 with a cursor)",
    }),
    limit: intQuery(1, leaderboards.MAX_LISTED_BOARDS, leaderboards.MAX_LISTED_BOARDS).openapi({
      description: "most names to return",
    }),
    cursor: z.string().max(ACTIVITY_CURSOR_MAX).optional().openapi({ description: "nextCursor of the previous page" }),
  }),
);
export const listQueryPrecheck = fieldsPrecheck({
  offset: intField(0, 1_000_000, 0),
  limit: intField(1, leaderboards.MAX_LISTED_BOARDS, leaderboards.MAX_LISTED_BOARDS),
  cursor: maxTextField(ACTIVITY_CURSOR_MAX),
});
/** The query of a page of the ranking. */
export const PageQuery = once(() =>
  z.object({
    page: intQuery(1, 1_000_000, 1),
    limit: intQuery(1, leaderboards.MAX_PAGE_LIMIT, 10),
    season: SeasonQuery(),
  }),
);
export const pageQueryPrecheck = fieldsPrecheck({
  page: intField(1, 1_000_000, 1),
  limit: intField(1, leaderboards.MAX_PAGE_LIMIT, 10),
  season: seasonField,
});
/** The query of a player's read. */
export const PlayerQuery = once(() => z.object({ season: SeasonQuery() }));
export const playerQueryPrecheck = fieldsPrecheck({ season: seasonField });
/** The query of the players around one. */
export const AroundQuery = once(() => z.object({ k: intQuery(0, leaderboards.MAX_AROUND, 5), season: SeasonQuery() }));
export const aroundQueryPrecheck = fieldsPrecheck({ k: intField(0, leaderboards.MAX_AROUND, 5), season: seasonField });
export const noContent = { description: "Done (also when there was nothing to delete)." };

export const BatchChange = once(() =>
  z.union([ByChange().extend({ player: Name() }).strict(), SetChange().extend({ player: Name() }).strict()]),
);

export const BatchBody = once(() =>
  z
    .union([...BatchChange().options, z.object({ items: z.array(BatchChange()).min(1).max(MAX_BATCH) }).strict()])
    .openapi("LeaderboardScoreBatch"),
);

/** BatchBody's precheck, as Change's: each item with its player (a name), in BatchChange's key order. */
const byPlayer = strictObject({ by: required(boundedNumber(MAX_INCREMENT)), player: required(nameField) });
const setPlayer = strictObject({
  set: required(scoreField),
  mode: optional(oneOf(["replace", "best"])),
  player: required(nameField),
});
export const batchChangesPrecheck = batchPrecheck((item) => byPlayer(item) ?? setPlayer(item), "items");

export const SubsetRow = once(() =>
  z
    .object({
      player: z.string(),
      name: z.string().nullable(),
      score: z.number(),
      rank: z.number().int(),
      subsetRank: z.number().int(),
    })
    .openapi("LeaderboardSubsetRow"),
);

export const SeasonSummary = once(() =>
  z
    .object({
      id: z.string(),
      from: z.number().int().openapi({ description: "epoch ms of the first instant" }),
      to: z.number().int().openapi({ description: "epoch ms of the end (exclusive)" }),
      players: z.number().int(),
      top: z.array(z.object(Ranked())),
    })
    .openapi("LeaderboardSeason"),
);
