import { beforeAll, describe, expect, it } from "vitest";
import {
  ListQuery as CounterListQuery,
  listQueryPrecheck as counterListPrecheck,
  MemberQuery,
  memberParams,
  memberParamsPrecheck,
  memberQueryPrecheck,
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
import { nameParams, nameParamsPrecheck } from "../../functions/schemas.ts";
import { loadZod } from "../../functions/zod.ts";

import { agrees, clean, combinations, counts, members } from "../helpers/prechecks.ts";

// zod loads on first use (functions/zod.ts); these tests build its schemas directly.
beforeAll(async () => {
  await loadZod();
});

/** The reads' queries and path parameters, prechecked field by field (functions/prechecks.ts). */
describe("read prechecks answer as zod", () => {
  it("counter member lookups: path parameters and query", () => {
    const names = ["c1", "", "-a", "a".repeat(65), "a b", 1];
    const params = names.flatMap((counter) => members.map((member) => ({ counter, member })));
    // decided: the one good counter with the two good members
    expect(agrees(memberParams(), memberParamsPrecheck, params)).toBe(2);
    const queries = combinations({
      period: [undefined, "hour", "day", "week", "month", "year", "Hour", "", ["day"]],
      from: [undefined, "2026-11-01", "", ["a", "b"]],
      to: [undefined, "1700000000000", "not a time"],
      aggregate: [undefined, "sum", "min", "max", "avg", ["sum"]],
    }).map(clean);
    // decided: 5 periods (absent and the four; no `year`) × 3 froms × 3 tos × 4 aggregates, and the last one
    expect(agrees(MemberQuery(), memberQueryPrecheck, [...queries, { period: "day", other: "x" }])).toBe(
      5 * 3 * 3 * 4 + 1,
    );
  });

  it("counter score ranges and sorted lists: queries with defaults", () => {
    const bounds: unknown[] = [undefined, "10", "(5", "-inf", "", ["1", "2"]];
    const orders: unknown[] = [undefined, "asc", "desc", "ASC", ["asc"]];
    const ranges = combinations({ min: bounds, max: bounds, limit: counts("1", "1000"), order: orders }).map(clean);
    // decided: 5 bounds (all but the repeated one: any text is the library's to parse) on each side
    // × 3 limits (absent, 1, 1000: "0" is below the minimum, zod's to refuse) × 3 orders
    expect(agrees(ScoreRangeQuery(), scoreRangeQueryPrecheck, ranges)).toBe(5 * 5 * 3 * 3);
    const periods = combinations({
      period: [undefined, "day", "year"],
      from: [undefined, "2026-11-01"],
      aggregate: [undefined, "max", "x"],
    }).map(clean);
    // decided: 2 periods (absent, day) × 2 froms × 2 aggregates
    expect(agrees(ScoreRangeQuery(), scoreRangeQueryPrecheck, periods)).toBe(2 * 2 * 2);
    const sorted = combinations({
      by: [undefined, "member", "score", "Member", ["score"]],
      order: orders,
      period: [undefined, "hour", "year"],
    }).map(clean);
    // decided: 3 bys (absent, member, score) × 3 orders × 2 periods
    expect(agrees(SortedQuery(), sortedQueryPrecheck, [...sorted, { other: "x" }])).toBe(3 * 3 * 2 + 1);
  });

  it("jobs: the path parameter", () => {
    const params = ["compact", "trim", "no-such-job", "", undefined, 1, ["compact"]].map((job) => clean({ job }));
    // decided: the four strings (an unknown job is the route's 404, not a 400)
    expect(agrees(JobParams(), jobParamsPrecheck, params)).toBe(4);
  });

  it("histogram reads: path parameters and query", () => {
    const params = ["h1", "", "a b", "-x"].map((histogram) => ({ histogram }));
    expect(agrees(nameParams("histogram"), nameParamsPrecheck("histogram"), params)).toBe(1);
    const days: unknown[] = [undefined, "2026-11-20", "", "2026-1-20", "20261120", "yesterday", ["2026-11-20"]];
    const queries = combinations({ from: days, to: days, top: counts("1", "10", "100") }).map(clean);
    // decided: 3 good days (absent, a date, empty) on each side × 5 tops (absent, 0, 1, 10, 100)
    expect(agrees(ReadQuery(), readQueryPrecheck, [...queries, { top: "5", other: "x" }])).toBe(3 * 3 * 5 + 1);
  });

  it("leaderboard reads: path parameters, page, player and around queries", () => {
    const names = ["b1", "", "a b"];
    const params = names.flatMap((board) => names.map((player) => ({ board, player })));
    expect(agrees(nameParams("board", "player"), nameParamsPrecheck("board", "player"), params)).toBe(1);
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
    // decided seasons: absent and the five selectors the library takes
    // pages: 3 pages (absent, 1, 2) × 4 limits (absent, 1, 10, 100) × 6 seasons
    expect(agrees(PageQuery(), pageQueryPrecheck, pages)).toBe(3 * 4 * 6);
    const players = seasons.map((season) => clean({ season }));
    expect(agrees(PlayerQuery(), playerQueryPrecheck, [...players, { other: "x" }])).toBe(6 + 1);
    // around: 5 ks (absent, 0, 1, 5, 50) × 6 seasons
    const around = combinations({ k: counts("1", "5", "50"), season: seasons }).map(clean);
    expect(agrees(AroundQuery(), aroundQueryPrecheck, around)).toBe(5 * 6);
  });

  it("presence member lists and history queries", () => {
    const cursors: unknown[] = [undefined, "", "abc", "x".repeat(40), "x".repeat(41), "é".repeat(40), ["a"]];
    const lists = combinations({ limit: counts("1", "100", "1000"), cursor: cursors }).map(clean);
    // decided: 4 limits (absent, 1, 100, 1000) × 5 cursors (absent, empty, short, 40 and 40 × é)
    expect(agrees(MembersQuery(), membersQueryPrecheck, [...lists, { other: "x" }])).toBe(4 * 5 + 1);
    const hours = counts("1", "24", "25").map((h) => clean({ hours: h }));
    // decided: absent, 1, 24 (25 is over the maximum)
    expect(agrees(HistoryQuery(), historyQueryPrecheck, hours)).toBe(3);
  });

  it("trending history queries and presence leave parameters", () => {
    const queries = combinations({ member: [...members, undefined], hours: counts("1", "48", "168", "169") }).map(
      clean,
    );
    // decided: the two good members × 4 hours (absent, 1, 48, 168)
    expect(agrees(TrendHistoryQuery(), trendHistoryPrecheck, [...queries, { member: "a", other: "x" }])).toBe(
      2 * 4 + 1,
    );
    const params = ["r1", "", "a b"].flatMap((room) => members.map((id) => ({ room, id })));
    // decided: the good room with the two good ids
    expect(agrees(LeaveParams(), leaveParamsPrecheck, params)).toBe(2);
  });

  it("the lists' queries (what the dashboard asks first)", () => {
    const offsets = [undefined, "0", "1", "100", "999999999", "1000000000", "", "-1", "01", ["0", "1"]];
    const limits = [undefined, "1", "100", "1000", "1001", "0", "x"];
    const pages = combinations({ limit: limits, offset: offsets }).map(clean);
    // decided: 4 limits (absent, 1, 100, 1000) × 4 offsets (absent, 0, 1, 100: 999999999 is past
    // MAX_OFFSET, and ten digits are zod's); the counters' list, histograms (at most 1,000 names a
    // page) and boards all take offsets up to MAX_OFFSET = 1,000,000 (the counters' schema took up
    // to 1e9, which the library then refused: review 9)
    expect(agrees(CounterListQuery(), counterListPrecheck, pages)).toBe(4 * 4);
    expect(agrees(HistogramListQuery(), histogramListPrecheck, pages)).toBe(4 * 4);
    expect(agrees(BoardListQuery(), boardListPrecheck, pages)).toBe(4 * 4);
    // A registry cursor is at most 115 characters (src/redis/pages.ts ACTIVITY_CURSOR_MAX).
    const cursors = [undefined, "", "abc", "x".repeat(115), "x".repeat(116), ["a"]];
    const rooms = combinations({ limit: limits, cursor: cursors }).map(clean);
    // decided: 4 limits × 4 cursors (absent, empty, short, 115 characters)
    expect(agrees(RoomsQuery(), roomsQueryPrecheck, rooms)).toBe(4 * 4);
    const boards = combinations({ limit: limits, offset: ["0", "1", undefined], cursor: cursors }).map(clean);
    // decided: 4 limits × 3 offsets × 4 cursors (an offset with a cursor is the library's 400)
    expect(agrees(BoardListQuery(), boardListPrecheck, boards)).toBe(4 * 3 * 4);
  });
});
