import { beforeAll, describe, expect, it } from "vitest";
import {
  counterParams,
  DeleteQuery,
  deleteQueryPrecheck,
  incrPrecheck,
  IncrItem,
  RankingQuery,
  rankingQueryPrecheck,
} from "../../functions/routes/counters-schemas.ts";
import { ObservationBody, observationsPrecheck } from "../../functions/routes/histograms.ts";
import {
  BatchBody,
  batchChangesPrecheck,
  Change,
  changePrecheck,
  JoinBody,
  joinPrecheck,
  SubsetBody,
  subsetPrecheck,
} from "../../functions/routes/leaderboards-schemas.ts";
import { HealthQuery, healthQueryPrecheck } from "../../functions/routes/health.ts";
import { HeartbeatBody, heartbeatPrecheck, RoomQuery, roomQueryPrecheck } from "../../functions/routes/presence.ts";
import { EventsBody, eventsPrecheck } from "../../functions/routes/trending.ts";
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
import { batchOf, nameParamsPrecheck } from "../../functions/schemas.ts";
import { loadZod } from "../../functions/zod.ts";
import type { Verdict } from "../../functions/lazy-route.ts";

import { agrees, clean, combinations, isObject, members } from "../helpers/prechecks.ts";
// zod loads on first use (functions/zod.ts); these tests build its schemas directly.
beforeAll(async () => {
  await loadZod();
});

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
    expect(tally(counterParams(), nameParamsPrecheck("counter"), inputs)).toEqual({
      accepted: 2,
      refused: 5,
      toZod: 0,
    });
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
    expect(tally(HealthQuery(), healthQueryPrecheck, inputs)).toEqual({ accepted: 5, refused: 2, toZod: 0 });
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
    // accepted: 5 counts (absent, 1, 10, 100, 010) × 6 windows (absent, 24h, 1h, 168h, 7d, 1d), and
    // the last two; refused: all the others, each issue as zod's (digits but out of range, not
    // digits, a window parseWindow refuses, a repeated name)
    expect(tally(TopQuery(), topQueryPrecheck, topInputs)).toEqual({ accepted: 32, refused: 226, toZod: 0 });
    const risingInputs = tops.map(({ n, window }) => clean({ n, baseline: window }));
    expect(tally(RisingQuery(), risingQueryPrecheck, risingInputs)).toEqual({ accepted: 30, refused: 226, toZod: 0 });
  });

  it("trending member lookups: path parameters and window", () => {
    const streams = ["s1", "", "-a", "a".repeat(65), "a b"];
    const params = streams.flatMap((stream) => members.map((member) => ({ stream, member })));
    // accepted: the one good stream with the two good members ("a" and 128 × "é", 256 bytes);
    // refused: a bad stream or member; to zod: a member that is not a string
    expect(tally(MemberLookupParams(), memberLookupParamsPrecheck, params)).toEqual({
      accepted: 2,
      refused: 33,
      toZod: 10,
    });
    const windows = [undefined, "24h", "1h", "168h", "7d", "0h", "169h", "24H", "", ["1h"], "x"];
    const queries = windows.map((window) => (window === undefined ? {} : { window }));
    expect(tally(WindowQuery(), windowQueryPrecheck, [...queries, { window: "2d", other: "x" }])).toEqual({
      accepted: 6,
      refused: 6,
      toZod: 0,
    });
  });

  it("presence room queries", () => {
    const inputs = [{}, { day: "2026-11-20" }, { day: "" }, { day: "yesterday" }, { day: ["a", "b"] }, { other: "x" }];
    expect(tally(RoomQuery(), roomQueryPrecheck, inputs)).toEqual({ accepted: 5, refused: 1, toZod: 0 });
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
    expect(tally(RankingQuery(), rankingQueryPrecheck, [...inputs, { n: "3", other: "x" }])).toEqual({
      accepted: 401,
      refused: 2192,
      toZod: 0,
    });
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

  it("leaderboard joins and subset rankings", () => {
    const metas: unknown[] = [
      undefined,
      null,
      { country: "ES" },
      {},
      { nested: { a: [1, "b", null] }, "1": true },
      { big: "x".repeat(5000) },
      JSON.parse('{"__proto__":{"a":1}}'),
      [],
      "x",
      1,
    ];
    const joins = combinations({
      name: [...members, undefined],
      meta: metas,
      score: [undefined, 0, 1.5, 1e15, 1e16, "1"],
    })
      .map((join): unknown => clean(join))
      .concat([{ name: "a", extra: 1 }, {}, null, []]);
    // decided: 2 good names × 5 metas (absent, null, and three objects within the size) × 4 scores (absent, 0, 1.5, 1e15)
    expect(agrees(JoinBody(), joinPrecheck, joins)).toBe(2 * 5 * 4);
    const names = ["p1", "", "a b", 1];
    const subsets: unknown[] = [
      ...names.map((p) => ({ players: [p] })),
      { players: ["a", "b", "c"] },
      { players: [] },
      { players: Array.from({ length: 1000 }, (_, i) => `p${i}`) },
      { players: Array.from({ length: 1001 }, (_, i) => `p${i}`) },
      { players: "a" },
      { players: ["a"], extra: 1 },
      {},
    ];
    // decided: one good name alone, three, and 1,000
    expect(agrees(SubsetBody(), subsetPrecheck, subsets)).toBe(3);
  });

  it("counter member delete queries", () => {
    const queries = combinations({
      period: [undefined, "hour", "day", "year", ["day"]],
      from: [undefined, "2026-11-01", ["a", "b"]],
      to: [undefined, "1700000000000"],
      aggregate: [undefined, "sum"],
    }).map(clean);
    // accepted: 3 periods × 2 froms × 2 tos, `aggregate` ignored as zod strips it; refused: the rest
    expect(tally(DeleteQuery(), deleteQueryPrecheck, queries)).toEqual({ accepted: 24, refused: 36, toZod: 0 });
  });
});
