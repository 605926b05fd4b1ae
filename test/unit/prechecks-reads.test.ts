import { beforeAll, describe, expect, it } from "vitest";
import {
  ListQuery as CounterListQuery,
  listQueryPrecheck as counterListPrecheck,
  MemberQuery,
  memberParams,
  memberParamsPrecheck,
  memberQueryPrecheck,
  RankingQuery,
  rankingQueryPrecheck,
  ScoreRangeQuery,
  scoreRangeQueryPrecheck,
  SortedQuery,
  sortedQueryPrecheck,
} from "../../functions/routes/counters-schemas.ts";
import {
  ListQuery as HistogramListQuery,
  listQueryPrecheck as histogramListPrecheck,
  ReadQuery,
  readQueryPrecheck,
} from "../../functions/routes/histograms.ts";
import {
  AroundQuery,
  aroundQueryPrecheck,
  ListQuery as BoardListQuery,
  listQueryPrecheck as boardListPrecheck,
  PageQuery,
  pageQueryPrecheck,
  PlayerQuery,
  playerQueryPrecheck,
} from "../../functions/routes/leaderboards-schemas.ts";
import {
  HistoryQuery,
  historyQueryPrecheck,
  LeaveParams,
  leaveParamsPrecheck,
  MembersQuery,
  membersQueryPrecheck,
  RoomsQuery,
  roomsQueryPrecheck,
} from "../../functions/routes/presence.ts";
import {
  HistoryQuery as TrendHistoryQuery,
  historyQueryPrecheck as trendHistoryPrecheck,
} from "../../functions/routes/trending.ts";
import { JobParams, jobParamsPrecheck } from "../../functions/routes/jobs.ts";
import { DeliveriesQuery, deliveriesQueryPrecheck } from "../../functions/routes/webhooks.ts";
import {
  MemberLookupParams,
  memberLookupParamsPrecheck,
  RisingQuery,
  risingQueryPrecheck,
  TopQuery,
  topQueryPrecheck,
} from "../../functions/routes/trending-schemas.ts";
import { intQuery, nameParams, nameParamsPrecheck } from "../../functions/schemas.ts";
import { fieldsPrecheck, intField } from "../../functions/prechecks.ts";
import * as z from "../../functions/zod.ts";
import { loadZod } from "../../functions/zod.ts";
import type { Verdict } from "../../functions/lazy-route.ts";

import { agrees, clean, combinations, counts, members } from "../helpers/prechecks.ts";

// zod loads on first use (functions/zod.ts); these tests build its schemas directly.
beforeAll(async () => {
  await loadZod();
});

/** The reads' queries and path parameters, prechecked field by field (functions/prechecks.ts). */
/**
 * `agrees` (each decided input answered exactly as zod does), then how many inputs the precheck
 * accepted, how many it refused (with zod's issues), and how many it left to zod.
 */
function tally(
  schema: { safeParse(value: unknown): unknown },
  precheck: (value: unknown) => Verdict,
  inputs: unknown[],
) {
  const decided = agrees(schema, precheck, inputs);
  const accepted = inputs.filter((input) => precheck(input)?.success === true).length;
  return { accepted, refused: decided - accepted, toZod: inputs.length - decided };
}

describe("read prechecks answer as zod", () => {
  it("counter member lookups: path parameters and query", () => {
    const names = ["c1", "", "-a", "a".repeat(65), "a b", 1];
    const params = names.flatMap((counter) => members.map((member) => ({ counter, member })));
    // accepted: the one good counter with the two good members; refused: a bad counter or member
    // (each its issue); to zod: a counter or member that is not a string (Hono's are)
    expect(tally(memberParams(), memberParamsPrecheck, params)).toEqual({ accepted: 2, refused: 33, toZod: 19 });
    const queries = combinations({
      period: [undefined, "hour", "day", "week", "month", "year", "Hour", "", ["day"]],
      from: [undefined, "2026-11-01", "", ["a", "b"]],
      to: [undefined, "1700000000000", "not a time"],
      aggregate: [undefined, "sum", "min", "max", "avg", ["sum"]],
    }).map(clean);
    // accepted: 5 periods (absent and the four; no `year`) × 3 froms × 3 tos × 4 aggregates, and the
    // last one; refused: every other (`year`, a repeated name: zod's enum and string issues)
    expect(tally(MemberQuery(), memberQueryPrecheck, [...queries, { period: "day", other: "x" }])).toEqual({
      accepted: 181,
      refused: 468,
      toZod: 0,
    });
  });

  it("counter score ranges and sorted lists: queries with defaults", () => {
    const bounds: unknown[] = [undefined, "10", "(5", "-inf", "", ["1", "2"]];
    const orders: unknown[] = [undefined, "asc", "desc", "ASC", ["asc"]];
    const ranges = combinations({ min: bounds, max: bounds, limit: counts("1", "1000"), order: orders }).map(clean);
    // accepted: 5 bounds (all but the repeated one: any text is the library's to parse) on each side
    // × 4 limits (absent, 1, 1000, 07) × 3 orders; refused: the rest ("0" below the minimum, "1e1"
    // not digits, a repeated name...), each issue as zod's
    expect(tally(ScoreRangeQuery(), scoreRangeQueryPrecheck, ranges)).toEqual({
      accepted: 300,
      refused: 2040,
      toZod: 0,
    });
    const periods = combinations({
      period: [undefined, "day", "year"],
      from: [undefined, "2026-11-01"],
      aggregate: [undefined, "max", "x"],
    }).map(clean);
    // accepted: 2 periods (absent, day) × 2 froms × 2 aggregates; refused: `year` or `x`
    expect(tally(ScoreRangeQuery(), scoreRangeQueryPrecheck, periods)).toEqual({ accepted: 8, refused: 10, toZod: 0 });
    const sorted = combinations({
      by: [undefined, "member", "score", "Member", ["score"]],
      order: orders,
      period: [undefined, "hour", "year"],
    }).map(clean);
    // accepted: 3 bys (absent, member, score) × 3 orders × 2 periods, and the last one
    expect(tally(SortedQuery(), sortedQueryPrecheck, [...sorted, { other: "x" }])).toEqual({
      accepted: 19,
      refused: 57,
      toZod: 0,
    });
  });

  it("jobs: the path parameter", () => {
    const params = ["compact", "trim", "no-such-job", "", undefined, 1, ["compact"]].map((job) => clean({ job }));
    // accepted: the four strings (an unknown job is the route's 404, not a 400); refused: a repeated
    // name; to zod: absent and a number
    expect(tally(JobParams(), jobParamsPrecheck, params)).toEqual({ accepted: 4, refused: 1, toZod: 2 });
  });

  it("histogram reads: path parameters and query", () => {
    const params = ["h1", "", "a b", "-x"].map((histogram) => ({ histogram }));
    expect(tally(nameParams("histogram"), nameParamsPrecheck("histogram"), params)).toEqual({
      accepted: 1,
      refused: 3,
      toZod: 0,
    });
    const days: unknown[] = [undefined, "2026-11-20", "", "2026-1-20", "20261120", "yesterday", ["2026-11-20"]];
    const queries = combinations({ from: days, to: days, top: counts("1", "10", "100") }).map(clean);
    // accepted: 3 good days (absent, a date, empty) on each side × 6 tops (absent, 0, 1, 10, 100,
    // 07), and the last one; refused: every other (a bad day, a top out of range or not digits)
    expect(tally(ReadQuery(), readQueryPrecheck, [...queries, { top: "5", other: "x" }])).toEqual({
      accepted: 55,
      refused: 632,
      toZod: 0,
    });
  });

  it("leaderboard reads: path parameters, page, player and around queries", () => {
    const names = ["b1", "", "a b"];
    const params = names.flatMap((board) => names.map((player) => ({ board, player })));
    expect(tally(nameParams("board", "player"), nameParamsPrecheck("board", "player"), params)).toEqual({
      accepted: 1,
      refused: 8,
      toZod: 0,
    });
    const seasons: unknown[] = [
      undefined,
      "current",
      "previous",
      "2026-11-23",
      "2026-W48",
      "2026-11",
      "",
      "next",
      "2026-13",
      "2026-W60",
      ["current"],
    ];
    const pages = combinations({ page: counts("1", "2"), limit: counts("1", "10", "100"), season: seasons }).map(clean);
    // accepted seasons: absent and the five selectors the library takes (refused: the others, with
    // the library's problem); pages: 4 pages (absent, 1, 2, 07) × 5 limits (absent, 1, 10, 100, 07)
    // × 6 seasons
    expect(tally(PageQuery(), pageQueryPrecheck, pages)).toEqual({ accepted: 120, refused: 1882, toZod: 0 });
    const players = seasons.map((season) => clean({ season }));
    expect(tally(PlayerQuery(), playerQueryPrecheck, [...players, { other: "x" }])).toEqual({
      accepted: 7,
      refused: 5,
      toZod: 0,
    });
    // around: 6 ks (absent, 0, 1, 5, 50, 07) × 6 seasons
    const around = combinations({ k: counts("1", "5", "50"), season: seasons }).map(clean);
    expect(tally(AroundQuery(), aroundQueryPrecheck, around)).toEqual({ accepted: 36, refused: 118, toZod: 0 });
  });

  it("presence member lists and history queries", () => {
    // zod counts a cursor's code points: 40 emoji (80 UTF-16 units) are 40
    const cursors: unknown[] = [
      undefined,
      "",
      "abc",
      "x".repeat(40),
      "x".repeat(41),
      "é".repeat(40),
      "😀".repeat(40),
      "😀".repeat(41),
      "\ud800".repeat(41),
      ["a"],
    ];
    const lists = combinations({ limit: counts("1", "100", "1000"), cursor: cursors }).map(clean);
    // accepted: 5 limits (absent, 1, 100, 1000, 07) × 6 cursors (absent, empty, short, 40, 40 × é
    // and 40 × 😀), and the last one; refused: the rest (a cursor over 40 characters, a repeated name...)
    expect(tally(MembersQuery(), membersQueryPrecheck, [...lists, { other: "x" }])).toEqual({
      accepted: 31,
      refused: 110,
      toZod: 0,
    });
    const hours = counts("1", "24", "25").map((h) => clean({ hours: h }));
    // accepted: absent, 1, 24, 07; refused: the rest (25 is over the maximum)
    expect(tally(HistoryQuery(), historyQueryPrecheck, hours)).toEqual({ accepted: 4, refused: 10, toZod: 0 });
  });

  it("trending history queries and presence leave parameters", () => {
    const queries = combinations({ member: [...members, undefined], hours: counts("1", "48", "168", "169") }).map(
      clean,
    );
    // accepted: the two good members × 5 hours (absent, 1, 48, 168, 07), and the last one; to zod: a
    // member absent or not a string
    expect(tally(TrendHistoryQuery(), trendHistoryPrecheck, [...queries, { member: "a", other: "x" }])).toEqual({
      accepted: 11,
      refused: 95,
      toZod: 45,
    });
    const params = ["r1", "", "a b"].flatMap((room) => members.map((id) => ({ room, id })));
    // accepted: the good room with the two good ids; to zod: an id that is not a string
    expect(tally(LeaveParams(), leaveParamsPrecheck, params)).toEqual({ accepted: 2, refused: 19, toZod: 6 });
  });

  it("the lists' queries (what the dashboard asks first)", () => {
    const offsets = [undefined, "0", "1", "100", "999999999", "1000000000", "", "-1", "01", ["0", "1"]];
    const limits = [undefined, "1", "100", "1000", "1001", "0", "x"];
    const pages = combinations({ limit: limits, offset: offsets }).map(clean);
    // accepted: 4 limits (absent, 1, 100, 1000) × 5 offsets (absent, 0, 1, 100, 01: 999999999 is
    // past MAX_OFFSET); refused: the rest; the counters' list, histograms (at most 1,000 names a
    // page) and boards all take offsets up to MAX_OFFSET = 1,000,000 (the counters' schema took up
    // to 1e9, which the library then refused: review 9)
    expect(tally(CounterListQuery(), counterListPrecheck, pages)).toEqual({ accepted: 20, refused: 50, toZod: 0 });
    expect(tally(HistogramListQuery(), histogramListPrecheck, pages)).toEqual({ accepted: 20, refused: 50, toZod: 0 });
    expect(tally(BoardListQuery(), boardListPrecheck, pages)).toEqual({ accepted: 20, refused: 50, toZod: 0 });
    // A registry cursor is at most 115 characters (src/redis/pages.ts ACTIVITY_CURSOR_MAX).
    const cursors = [
      undefined,
      "",
      "abc",
      "x".repeat(115),
      "x".repeat(116),
      "😀".repeat(115),
      "😀".repeat(57) + "a",
      ["a"],
    ];
    const rooms = combinations({ limit: limits, cursor: cursors }).map(clean);
    // accepted: 4 limits × 6 cursors (absent, empty, short, 115 characters, 115 emoji, 58
    // characters in 115 units)
    expect(tally(RoomsQuery(), roomsQueryPrecheck, rooms)).toEqual({ accepted: 24, refused: 32, toZod: 0 });
    const boards = combinations({ limit: limits, offset: ["0", "1", undefined], cursor: cursors }).map(clean);
    // accepted: 4 limits × 3 offsets × 6 cursors (an offset with a cursor is the library's 400)
    expect(tally(BoardListQuery(), boardListPrecheck, boards)).toEqual({ accepted: 72, refused: 96, toZod: 0 });
  });

  it("webhook deliveries' query (admin)", () => {
    const queries = counts("1", "50", "51").map((limit) => clean({ limit }));
    // accepted: absent, 1, 50, 07 (the log keeps 50); refused: the rest
    expect(tally(DeliveriesQuery(), deliveriesQueryPrecheck, queries)).toEqual({ accepted: 4, refused: 10, toZod: 0 });
  });

  it("integers: the bounds' issues, long digits left to zod, negative ranges", () => {
    const values = ["0", "5", "-5", "-6", "6", "-0", "--1", "1-", "", "999999999999999", "9999999999999999", ["1"]];
    const inputs = [undefined, ...values].map((k) => clean({ k }));
    // accepted: absent, 0, 5, -5, -0; to zod: 16 digits (zod's `.int()` adds an issue past 2^53)
    expect(tally(z.object({ k: intQuery(-5, 5, 0) }), fieldsPrecheck({ k: intField(-5, 5, 0) }), inputs)).toEqual({
      accepted: 5,
      refused: 7,
      toZod: 1,
    });
  });

  it("the usual refusals of reads are decided, each issue as zod words it", () => {
    // What a cold isolate's first refused read now answers without loading zod (bench/cold-start.ts --zod).
    const cases: [{ safeParse(value: unknown): unknown }, (value: unknown) => Verdict, unknown, string[]][] = [
      [TopQuery(), topQueryPrecheck, { window: "99x" }, ["window: must be 1h..168h or 1d..7d"]],
      [
        TopQuery(),
        topQueryPrecheck,
        { n: "0", window: ["1h", "2h"] },
        ["n: Too small: expected number to be >=1", "window: Invalid input: expected string, received array"],
      ],
      [RisingQuery(), risingQueryPrecheck, { n: "x" }, ["n: must be an integer from 1 to 100 in decimal digits"]],
      [RankingQuery(), rankingQueryPrecheck, { n: "1001" }, ["n: Too big: expected number to be <=1000"]],
      [
        RankingQuery(),
        rankingQueryPrecheck,
        { period: "year" },
        ['period: Invalid option: expected one of "hour"|"day"|"week"|"month"'],
      ],
      [
        MemberLookupParams(),
        memberLookupParamsPrecheck,
        { stream: "a b", member: "a\u0001b" },
        ["stream: must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", "member: must not contain control characters"],
      ],
      [memberParams(), memberParamsPrecheck, { counter: "c", member: "" }, ["member: must not be empty"]],
      [ReadQuery(), readQueryPrecheck, { from: "yesterday" }, ["from: must be a date YYYY-MM-DD"]],
      [
        MembersQuery(),
        membersQueryPrecheck,
        { cursor: "x".repeat(41) },
        ["cursor: Too big: expected string to have <=40 characters"],
      ],
      [PageQuery(), pageQueryPrecheck, { limit: "0" }, ["limit: Too small: expected number to be >=1"]],
      [DeliveriesQuery(), deliveriesQueryPrecheck, { limit: "51" }, ["limit: Too big: expected number to be <=50"]],
    ];
    for (const [schema, precheck, input, issues] of cases) {
      expect(tally(schema, precheck, [input]), JSON.stringify(input)).toEqual({ accepted: 0, refused: 1, toZod: 0 });
      const verdict = precheck(input);
      expect(
        verdict?.success === false && verdict.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`),
      ).toEqual(issues);
    }
  });
});
