import { beforeAll, describe, expect, it } from "vitest";
import type { Verdict } from "../../functions/lazy-route.ts";
import {
  counterParams,
  incrPrecheck,
  IncrItem,
  ListQuery as CounterListQuery,
  listQueryPrecheck as counterListPrecheck,
  MemberQuery,
  memberParams,
  memberParamsPrecheck,
  memberQueryPrecheck,
  RankingQuery,
  rankingQueryPrecheck,
} from "../../functions/routes/counters-schemas.ts";
import {
  ListQuery as HistogramListQuery,
  listQueryPrecheck as histogramListPrecheck,
  ObservationBody,
  observationsPrecheck,
  ReadQuery,
  readQueryPrecheck,
} from "../../functions/routes/histograms.ts";
import {
  AroundQuery,
  aroundQueryPrecheck,
  BatchBody,
  batchChangesPrecheck,
  Change,
  changePrecheck,
  ListQuery as BoardListQuery,
  listQueryPrecheck as boardListPrecheck,
  PageQuery,
  pageQueryPrecheck,
  PlayerQuery,
  playerQueryPrecheck,
} from "../../functions/routes/leaderboards-schemas.ts";
import { HealthQuery, healthQueryPrecheck } from "../../functions/routes/health.ts";
import {
  HeartbeatBody,
  heartbeatPrecheck,
  HistoryQuery,
  historyQueryPrecheck,
  LeaveParams,
  leaveParamsPrecheck,
  MembersQuery,
  membersQueryPrecheck,
  RoomQuery,
  roomQueryPrecheck,
  RoomsQuery,
  roomsQueryPrecheck,
} from "../../functions/routes/presence.ts";
import {
  EventsBody,
  eventsPrecheck,
  HistoryQuery as TrendHistoryQuery,
  historyQueryPrecheck as trendHistoryPrecheck,
} from "../../functions/routes/trending.ts";
import {
  MemberLookupParams,
  memberLookupParamsPrecheck,
  RisingQuery,
  risingQueryPrecheck,
  TopQuery,
  topQueryPrecheck,
  WindowQuery,
  windowQueryPrecheck,
} from "../../functions/routes/trending-schemas.ts";
import { batchOf, nameParams, nameParamsPrecheck } from "../../functions/schemas.ts";
import { loadZod } from "../../functions/zod.ts";

// zod loads on first use (functions/zod.ts); these tests build its schemas directly.
beforeAll(async () => {
  await loadZod();
});

/**
 * A precheck (functions/lazy-route.ts `prechecked`) must answer exactly as the zod schema it
 * stands in for, whenever it answers: the same data, keys in the same order, or the same issues
 * (path and message, what the 400 envelope shows), in the same order.
 */
function agrees(
  schema: { safeParse(value: unknown): unknown },
  precheck: (value: unknown) => Verdict,
  inputs: unknown[],
) {
  let decided = 0;
  for (const input of inputs) {
    const verdict = precheck(input);
    if (verdict === undefined) continue;
    decided++;
    const zod = schema.safeParse(input) as Exclude<Verdict, undefined>;
    const shape = (v: Exclude<Verdict, undefined>) =>
      JSON.stringify(
        v.success ? { data: v.data } : { issues: v.error.issues.map((i) => ({ path: i.path, message: i.message })) },
      );
    expect(shape(verdict), JSON.stringify(input)).toBe(shape(zod));
  }
  return decided;
}

const members: unknown[] = ["a", "", "a\nb", "\ud800", "é".repeat(128), "é".repeat(129), "x".repeat(257), 1, null];
const items: unknown[] = [
  ...members.map((member) => ({ member })),
  { by: 1 },
  { member: "a", by: 2.5 },
  { member: "a", by: -1e12 },
  { member: "a", by: 1e12 + 1 },
  { member: "a", by: "1" },
  { member: "", by: 1e13 },
  { member: "a", period: "day" },
  { member: "a", period: "year" },
  { member: "", period: "year" },
  { member: "a", at: 1_700_000_000_000 },
  { member: "a", at: "2026-11-22T15:04:05Z" },
  { member: "a", at: 1.5 },
  { member: "a", at: 2 ** 60 },
  { member: "a", at: null },
  { member: "a", ttl: 60 },
  { member: "a", ttl: 0 },
  { member: "a", ttl: 1.5 },
  { member: "a", ttl: 10 * 366 * 86400 + 1 },
  { ttl: 5, at: "x", period: "hour", by: -3, member: "z" },
  { member: "a", extra: 1 },
  { member: "", extra: 1 },
  JSON.parse('{"member":"a","__proto__":{"by":1}}'),
  { member: "a", constructor: 1 },
  [],
  "a",
];

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

describe("prechecks answer as zod", () => {
  it("counter increment bodies", () => {
    const inputs: unknown[] = [
      ...items,
      ...items.map((item) => ({ items: [item] })),
      ...items.map((item) => ({ items: [{ member: "ok" }, item, { member: "" }] })),
      { items: [] },
      { items: Array.from({ length: 1000 }, (_, i) => ({ member: i % 7 ? `m${i}` : "" })) },
      { items: Array.from({ length: 1001 }, () => ({ member: "m" })) },
      { items: [{ member: "a" }], member: "a" },
      { items: "a" },
      { items: null },
      null,
      1,
    ];
    const decided = agrees(batchOf(IncrItem(), "items"), incrPrecheck, inputs);
    // Most inputs above are decided without zod: valid bodies and bad members.
    expect(decided).toBeGreaterThan(40);
  });

  it("name path parameters", () => {
    const inputs = ["c1", "", "-a", "a".repeat(64), "a".repeat(65), "é", "a b"].map((counter) => ({ counter }));
    expect(agrees(counterParams(), nameParamsPrecheck("counter"), inputs)).toBe(2);
  });

  it("/healthz queries", () => {
    const inputs = [
      {},
      { deep: "1" },
      { deep: "0" },
      { deep: "2" },
      { deep: ["1", "1"] },
      { other: "x" },
      { deep: "1", x: "y" },
    ];
    expect(agrees(HealthQuery(), healthQueryPrecheck, inputs)).toBe(5);
  });

  it("trending top and rising queries", () => {
    const counts: unknown[] = [
      undefined,
      "1",
      "10",
      "100",
      "101",
      "0",
      "",
      "010",
      "1e1",
      " 5",
      "5 ",
      "2.5",
      "-1",
      "x",
      ["1", "2"],
      "99999999999",
    ];
    const windows: unknown[] = [
      undefined,
      "24h",
      "1h",
      "168h",
      "169h",
      "7d",
      "8d",
      "1d",
      "0h",
      "24H",
      "24",
      "",
      "h",
      ["1h"],
      "01h",
      "9999h",
    ];
    const tops = counts.flatMap((n) => windows.map((window) => ({ n, window })));
    // a query lists only what was sent, and may hold other names
    const clean = (q: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(q).filter(([, v]) => v !== undefined));
    const topInputs = [...tops.map(clean), { n: "5", other: "x" }, { window: "2d", n: "3", extra: ["a"] }];
    // decided: 4 counts (absent, 1, 10, 100) × 6 windows (absent, 24h, 1h, 168h, 7d, 1d), and the last two
    expect(agrees(TopQuery(), topQueryPrecheck, topInputs)).toBe(26);
    const risingInputs = tops.map(({ n, window }) => clean({ n, baseline: window }));
    expect(agrees(RisingQuery(), risingQueryPrecheck, risingInputs)).toBe(24);
  });

  it("trending member lookups: path parameters and window", () => {
    const streams = ["s1", "", "-a", "a".repeat(65), "a b"];
    const params = streams.flatMap((stream) => members.map((member) => ({ stream, member })));
    // decided: the one good stream with the two good members ("a" and 128 × "é", 256 bytes)
    expect(agrees(MemberLookupParams(), memberLookupParamsPrecheck, params)).toBe(2);
    const windows = [undefined, "24h", "1h", "168h", "7d", "0h", "169h", "24H", "", ["1h"], "x"];
    const queries = windows.map((window) => (window === undefined ? {} : { window }));
    expect(agrees(WindowQuery(), windowQueryPrecheck, [...queries, { window: "2d", other: "x" }])).toBe(6);
  });

  it("presence room queries", () => {
    const inputs = [{}, { day: "2026-11-20" }, { day: "" }, { day: "yesterday" }, { day: ["a", "b"] }, { other: "x" }];
    expect(agrees(RoomQuery(), roomQueryPrecheck, inputs)).toBe(5);
  });

  it("counter top and bottom queries", () => {
    const counts: unknown[] = [undefined, "1", "1000", "1001", "0", "", "07", ["5", "6"]];
    const periods: unknown[] = [undefined, "hour", "day", "week", "month", "year", "Hour", "", ["day"]];
    const times: unknown[] = [undefined, "2026-11-01", "1700000000000", "", "not a time", ["a", "b"]];
    const aggregates: unknown[] = [undefined, "sum", "min", "max", "avg", ["sum"]];
    const clean = (q: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(q).filter(([, v]) => v !== undefined));
    const inputs = counts.flatMap((n) =>
      periods.flatMap((period) =>
        times.flatMap((from) =>
          aggregates.map((aggregate, i) => clean({ n, period, from, to: times[i % times.length], aggregate })),
        ),
      ),
    );
    // decided: 3 counts × 5 periods × 5 string froms × 4 aggregates, each `to` a string or absent
    expect(agrees(RankingQuery(), rankingQueryPrecheck, [...inputs, { n: "3", other: "x" }])).toBe(3 * 5 * 5 * 4 + 1);
  });

  it("trending event bodies", () => {
    const events: unknown[] = [
      ...members.map((member) => ({ member })),
      { count: 1 },
      { member: "a", count: 2.5 },
      { member: "a", count: 0 },
      { member: "a", count: -1 },
      { member: "a", count: 1e12 },
      { member: "a", count: 1e12 + 1 },
      { member: "a", count: "1" },
      { member: "", count: 0 },
      { member: "a", at: 1_700_000_000_000 },
      { member: "a", at: "2026-11-22T15:04:05Z" },
      { member: "a", at: "2026-11-22" },
      { member: "a", at: "2026-02-30" },
      { member: "a", at: "yesterday" },
      { member: "", at: "yesterday" },
      { member: "a", at: 1.5 },
      { member: "a", at: 2 ** 60 },
      { member: "a", at: null },
      { at: "2026-11-22T15:04:05+02:00", count: 3, member: "z" },
      { member: "a", extra: 1 },
      { member: "a", constructor: 1 },
      [],
    ];
    const inputs: unknown[] = [
      ...events,
      ...events.map((event) => ({ events: [event] })),
      ...events.map((event) => ({ events: [{ member: "ok" }, event, { member: "" }] })),
      { events: [] },
      { events: Array.from({ length: 1000 }, (_, i) => ({ member: i % 7 ? `m${i}` : "", count: i + 1 })) },
      { events: Array.from({ length: 1001 }, () => ({ member: "m" })) },
      { events: [{ member: "a" }], member: "a" },
      { events: "a" },
      null,
    ];
    expect(agrees(EventsBody(), eventsPrecheck, inputs)).toBeGreaterThan(30);
  });

  it("presence heartbeat bodies", () => {
    const inputs: unknown[] = [
      ...members.map((id) => ({ id })),
      ...members.map((id) => ({ ids: [id] })),
      ...members.map((id) => ({ ids: ["ok", id, ""] })),
      { ids: [] },
      { ids: Array.from({ length: 1000 }, (_, i) => (i % 7 ? `u${i}` : "")) },
      { ids: Array.from({ length: 1001 }, (_, i) => `u${i}`) },
      { ids: ["a"], id: "a" },
      { id: "a", ids: ["a"] },
      { id: "", ids: [""] },
      { ids: "a" },
      { ids: null },
      { id: undefined },
      { id: "a", extra: 1 },
      { extra: 1 },
      { constructor: 1 },
      JSON.parse('{"__proto__":{"id":"a"}}'),
      JSON.parse('{"id":"a","__proto__":{"ids":["b"]}}'),
      {},
      [],
      "a",
      null,
      1,
    ];
    expect(agrees(HeartbeatBody(), heartbeatPrecheck, inputs)).toBeGreaterThan(20);
  });

  // Reads prechecked field by field (functions/prechecks.ts).
  const clean = (q: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(q).filter(([, v]) => v !== undefined));
  /** Every combination of the values listed for each field (a field's `undefined`: absent). */
  const combinations = (values: Record<string, unknown[]>) =>
    Object.entries(values).reduce<Record<string, unknown>[]>(
      (all, [key, list]) => all.flatMap((q) => list.map((v) => ({ ...q, [key]: v }))),
      [{}],
    );
  const counts = (...good: string[]): unknown[] => [
    undefined,
    ...good,
    "0",
    "",
    "07",
    "1e1",
    " 5",
    "2.5",
    "-1",
    "x",
    ["1", "2"],
    "99999999999",
  ];

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

  // Write bodies decided only when zod takes them as they are (functions/prechecks.ts).
  const numbers: unknown[] = [
    0,
    -0,
    1.5,
    -7,
    1e12,
    -1e12,
    1e12 + 1,
    1e15,
    -1e15,
    1e15 + 2,
    1e300,
    "1",
    null,
    true,
    [1],
  ];
  const times: unknown[] = [
    undefined,
    1_700_000_000_000,
    "2026-11-22T15:04:05Z",
    "2026-11-22",
    1.5,
    2 ** 60,
    "",
    "x",
    null,
  ];

  it("histogram observation bodies", () => {
    const items = numbers.flatMap((value) => times.map((at) => clean({ value, at })));
    const inputs: unknown[] = [
      ...items,
      ...items.map((item) => ({ values: [item] })),
      ...numbers.map((value) => ({ values: [value] })),
      { values: [1, { value: 2, at: "2026-11-22" }, 3] },
      { values: [1, { value: 2, extra: 1 }] },
      { values: [1, "2"] },
      { values: [] },
      { values: Array.from({ length: 1000 }, (_, i) => i) },
      { values: Array.from({ length: 1001 }, (_, i) => i) },
      { values: [1], value: 1 },
      { at: 1, value: 2 },
      { value: 1, extra: 1 },
      JSON.parse('{"value":1,"__proto__":{"at":1}}'),
      {},
      [],
      5,
      null,
    ];
    // decided: 9 values within ±1e15 × 4 times zod takes (absent, an integer, two ISO texts) = 36, alone and in
    // `values`; the 9 bare numbers in `values`; a mixed list, 1,000 numbers, and `{at: 1, value: 2}`
    expect(agrees(ObservationBody(), observationsPrecheck, inputs)).toBe(36 + 36 + 9 + 3);
  });

  it("leaderboard score changes, one or a batch", () => {
    const modes: unknown[] = [undefined, "replace", "best", "worst", "", 1];
    const changes: unknown[] = [
      ...numbers.map((by) => ({ by })),
      ...numbers.flatMap((set) => modes.map((mode) => clean({ set, mode }))),
      { by: 1, set: 2 },
      { by: 1, extra: 1 },
      { mode: "best" },
      {},
      [],
      1,
      null,
    ];
    // decided: 6 `by` within ±1e12; 9 `set` within ±1e15 × 3 modes (absent, replace, best)
    expect(agrees(Change(), changePrecheck, changes)).toBe(6 + 9 * 3);
    const players: unknown[] = ["p1", "", "a b", 1, undefined];
    const items = changes.filter(isObject).flatMap((change) => players.map((player) => clean({ ...change, player })));
    const batches: unknown[] = [
      ...items,
      ...items.map((item) => ({ items: [item] })),
      {
        items: [
          { by: 1, player: "a" },
          { set: 2, mode: "best", player: "b" },
          { player: "c", set: 3 },
        ],
      },
      {
        items: [
          { by: 1, player: "a" },
          { by: 1, player: "" },
        ],
      },
      { items: [] },
      { items: Array.from({ length: 1001 }, () => ({ by: 1, player: "a" })) },
      { items: [{ by: 1, player: "a" }], by: 1 },
      null,
    ];
    // decided: those 33 changes with the one good player, alone and in `items`, and the mixed batch
    expect(agrees(BatchBody(), batchChangesPrecheck, batches)).toBe(33 + 33 + 1);
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
    // decided: 4 limits (absent, 1, 100, 1000) × 5 offsets (absent, 0, 1, 100, 999999999: ten digits are zod's)
    expect(agrees(CounterListQuery(), counterListPrecheck, pages)).toBe(4 * 5);
    // histograms (at most 1,000 names a page and MAX_OFFSET) and boards (offset at most 1,000,000)
    // (999999999 is past their offsets' maximum: zod's)
    expect(agrees(HistogramListQuery(), histogramListPrecheck, pages)).toBe(4 * 4);
    expect(agrees(BoardListQuery(), boardListPrecheck, pages)).toBe(4 * 4);
    const cursors = [undefined, "", "abc", "x".repeat(90), "x".repeat(91), ["a"]];
    const rooms = combinations({ limit: limits, cursor: cursors }).map(clean);
    // decided: 4 limits × 4 cursors (absent, empty, short, 90 characters)
    expect(agrees(RoomsQuery(), roomsQueryPrecheck, rooms)).toBe(4 * 4);
  });
});
