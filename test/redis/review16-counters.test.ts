/**
 * Review 16: counter reads over weeks and periods against a naive model written in this file, on
 * real Redis through the library (time injected as `ctx.now`) and, for CSV and the error envelope,
 * through the real app. A seeded run (dev/prng.ts) steps a clock day by day from 2026-12-20 to
 * 2028-03-08 (UTC has no DST: the edges are ISO week 53 of 2026, weeks 52 of 2026 and 2027, the
 * turns of years and months, and the leap day 2028-02-29) and writes batches into one counter's
 * `day`, `week` and `month` buckets and its plain key: integer increments of both signs, late
 * writes up to 20 days back, some with a `ttl` (long enough that nothing expires while the test
 * runs: the model keeps every count), member deletes over period ranges up to 60 days and on the
 * plain key. At checkpoints (inside week 53, after the year's turn, around the leap day, at the
 * end) every read is compared with the model over fixed edge ranges (so finished ranges come from
 * the union cache, which later late writes must invalidate) and seeded ones: top and bottom (n = 3
 * and all), each member (404 when absent) with both ranks, score ranges (inclusive, exclusive,
 * infinite bounds; `limit` cuts, `count` does not; both orders), sorted by member and by score,
 * with `sum`, `min` and `max`; CSV of top and range answers; the counters list paged by one.
 * Ranges exactly at the 400-day limit are read (and unioned by an admin, weighted); one millisecond
 * more is a 400 with the envelope. A week counter past the union bound (58 weeks of 360 members)
 * answers member reads exactly in one request of at most 60 commands, and refuses top/bottom
 * (pinned). A cached finished range sees a member delete and a counter's new life. Hour buckets
 * (read through quarter, day and month rollups) across the leap day and the turn of 2027/28, with a
 * member delete over the leap day's hours, match the model up to 400 days.
 * What held: every read and refusal; no bug found in these reads (the webhook findings are in
 * review16-webhooks-delivery.test.ts).
 */
import { describe, expect, it } from "vitest";
import { createApp } from "../../functions/app.ts";
import { mulberry32 } from "../../dev/prng.ts";
import type { Ctx } from "../../src/context.ts";
import {
  deleteCounter,
  deleteMember,
  increment,
  list,
  memberOf,
  ranked,
  scoreRange,
  sorted,
  union,
} from "../../src/counters/index.ts";
import { createRedis } from "../../src/redis/client.ts";
import { NotFoundError, ValidationError } from "../../src/errors.ts";
import type { Period } from "../../src/time.ts";
import { parseCsv } from "../helpers/csv.ts";
import { addTo } from "../helpers/week-counters.ts";
import { libraryTest } from "../helpers/library.ts";
import { keysUnder, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const lib = libraryTest("review16-cnt", { timeoutMs: 30_000 });
const KEYS = { ingest: "rv16-ingest-key-0001", read: "rv16-read-key-000001", admin: "rv16-admin-key-00001" };
let now = Date.UTC(2026, 11, 20, 10, 30);
const app = createApp({ now: () => now });
const env = lib.appEnv(KEYS);

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NAME = "views";
const MEMBERS = ["a", "b", "c", "d", "e", "f", "g", "h"];
type P = "hour" | "day" | "week" | "month";
/** The periods the long run writes; `hour` is written by its own test below, into the same counter. */
const PERIODS: P[] = ["day", "week", "month"];
type Agg = "sum" | "min" | "max";

// ---- the calendar, written out again: UTC, ISO weeks from Monday
function startOf(period: P, t: number): number {
  if (period === "hour") return Math.floor(t / HOUR) * HOUR;
  const day = Math.floor(t / DAY) * DAY;
  if (period === "day") return day;
  if (period === "week") return day - ((new Date(day).getUTCDay() + 6) % 7) * DAY;
  const d = new Date(t);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}
function nextOf(period: P, start: number): number {
  if (period === "hour") return start + HOUR;
  if (period === "day") return start + DAY;
  if (period === "week") return start + 7 * DAY;
  const d = new Date(start);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}
function startsBetween(period: P, from: number, to: number): number[] {
  const out: number[] = [];
  for (let s = startOf(period, from); s <= startOf(period, to); s = nextOf(period, s)) out.push(s);
  return out;
}

// ---- the model: bucket start → member → score, per period; and the plain key
const buckets: Record<P, Map<number, Map<string, number>>> = {
  hour: new Map(),
  day: new Map(),
  week: new Map(),
  month: new Map(),
};
const plain = new Map<string, number>();

function add(period: P | undefined, at: number, member: string, by: number) {
  let m = plain;
  if (period) {
    const s = startOf(period, at);
    m = buckets[period].get(s) ?? new Map();
    buckets[period].set(s, m);
  }
  m.set(member, (m.get(member) ?? 0) + by);
}

function unionOf(period: P | undefined, from: number, to: number, agg: Agg): Map<string, number> {
  if (!period) return new Map(plain);
  const out = new Map<string, number>();
  for (const s of startsBetween(period, from, to)) {
    for (const [member, score] of buckets[period].get(s) ?? []) {
      addTo(out, member, score, agg);
    }
  }
  return out;
}

/** Redis order: score, then member bytes (ASCII here). */
const asc = (m: Map<string, number>) =>
  [...m]
    .map(([member, score]) => ({ member, score }))
    .sort((x, y) => x.score - y.score || (x.member < y.member ? -1 : x.member > y.member ? 1 : 0));

interface Read {
  period?: P;
  from?: number;
  to?: number;
  aggregate?: Agg;
}
const optionsOf = (r: Read) =>
  r.period ? { period: r.period as Period, from: r.from, to: r.to, aggregate: r.aggregate } : {};

async function checkRead(ctx: Ctx, r: Read, rand: () => number, label: string) {
  const model = unionOf(r.period, r.from ?? 0, r.to ?? 0, r.aggregate ?? "sum");
  const up = asc(model);
  const down = [...up].reverse();
  const o = optionsOf(r);
  const top = await ranked(ctx, NAME, "top", 3, o);
  expect(top.items, `${label} top`).toEqual(down.slice(0, 3).map((x, i) => ({ rank: i + 1, ...x })));
  if (r.period) {
    expect((top as { range?: { buckets: number; from: number; to: number } }).range, `${label} range`).toMatchObject({
      period: r.period,
      from: startOf(r.period, r.from!),
      to: startOf(r.period, r.to!),
      buckets: startsBetween(r.period, r.from!, r.to!).length,
    });
  }
  const bottomAll = await ranked(ctx, NAME, "bottom", 1000, o);
  expect(bottomAll.items, `${label} bottom`).toEqual(up.map((x, i) => ({ rank: i + 1, ...x })));
  for (const member of MEMBERS) {
    const i = down.findIndex((x) => x.member === member);
    if (i < 0) {
      await expect(memberOf(ctx, NAME, member, o), `${label} ${member} absent`).rejects.toBeInstanceOf(NotFoundError);
    } else {
      expect(await memberOf(ctx, NAME, member, o), `${label} member ${member}`).toMatchObject({
        member,
        score: down[i]!.score,
        rank: i + 1,
        rankFromBottom: up.length - i,
      });
    }
  }
  // a score range: bounds from the scores present (or beside them), inclusive or exclusive
  const scores = up.map((x) => x.score);
  const pick = () =>
    scores.length && rand() < 0.8 ? scores[Math.floor(rand() * scores.length)]! : Math.floor(rand() * 20) - 5;
  let lo = pick();
  let hi = pick();
  if (lo > hi) [lo, hi] = [hi, lo];
  const loEx = rand() < 0.3;
  const hiEx = rand() < 0.3;
  const min = rand() < 0.15 ? "-inf" : `${loEx ? "(" : ""}${lo}`;
  const max = rand() < 0.15 ? "+inf" : `${hiEx ? "(" : ""}${hi}`;
  const inRange = up.filter(
    (x) =>
      (min === "-inf" || (loEx ? x.score > lo : x.score >= lo)) &&
      (max === "+inf" || (hiEx ? x.score < hi : x.score <= hi)),
  );
  const order = rand() < 0.5 ? "asc" : "desc";
  const limit = 1 + Math.floor(rand() * 3);
  const range = await scoreRange(ctx, NAME, { ...o, min, max, limit, order });
  expect(range.items, `${label} range ${min}..${max} ${order} ${limit}`).toEqual(
    (order === "asc" ? inRange : [...inRange].reverse()).slice(0, limit),
  );
  expect(range.count, `${label} range count`).toBe(inRange.length);
  const byMember = await sorted(ctx, NAME, { ...o, by: "member", order: "desc" });
  expect(byMember.items, `${label} sorted by member`).toEqual([...up].sort((x, y) => (x.member < y.member ? 1 : -1)));
  expect(byMember.count).toBe(up.length);
  const byScore = await sorted(ctx, NAME, { ...o, by: "score", order: "asc" });
  expect(byScore.items, `${label} sorted by score`).toEqual(up);
}

async function http(path: string, accept = "application/json") {
  const res = await app.request(path, { headers: { authorization: `Bearer ${KEYS.read}`, accept } }, env);
  const text = await res.text();
  return { status: res.status, text, headers: res.headers };
}

const q = (r: Read) =>
  r.period ? `period=${r.period}&from=${r.from}&to=${r.to}&aggregate=${r.aggregate ?? "sum"}` : "";

async function checkCsv(r: Read) {
  const model = unionOf(r.period, r.from ?? 0, r.to ?? 0, r.aggregate ?? "sum");
  const up = asc(model);
  const down = [...up].reverse();
  const top = await http(`/v1/counters/${NAME}/top?n=5&${q(r)}`, "text/csv");
  expect(top.status).toBe(200);
  expect(top.headers.get("content-type")).toMatch(/^text\/csv/);
  expect(parseCsv(top.text)).toEqual([
    ["rank", "member", "score"],
    ...down.slice(0, 5).map((x, i) => [String(i + 1), x.member, String(x.score)]),
  ]);
  const range = await http(`/v1/counters/${NAME}/range?min=-inf&max=%2Binf&limit=2&${q(r)}`, "text/csv");
  expect(range.status).toBe(200);
  expect(parseCsv(range.text)).toEqual([
    ["member", "score"],
    ...up.slice(0, 2).map((x) => [x.member, String(x.score)]),
  ]);
  expect(range.headers.get("x-total-count")).toBe(String(up.length));
}

/** The fixed edge ranges of a checkpoint (only those that lie within 400 days of now and are not in the future). */
function edgeReads(): Read[] {
  const d = (s: string) => Date.parse(s);
  const ranges: [number, number][] = [
    [d("2026-12-28T00:00:00Z"), d("2027-01-03T23:59:59.999Z")], // ISO 2026-W53 exactly
    [d("2027-01-01T00:00:00Z"), d("2027-01-01T00:00:00Z")], // New Year's day: W53, January
    [d("2026-12-21T12:00:00Z"), d("2027-01-04T00:00:00Z")], // W52, W53, 2027-W01
    [d("2026-12-31T23:59:59.999Z"), d("2027-01-01T00:00:00Z")], // the last ms of the year, the first of the next
    [d("2027-12-27T00:00:00Z"), d("2028-01-03T00:00:00Z")], // 2027-W52 and 2028-W01
    [d("2028-02-28T00:00:00Z"), d("2028-03-01T00:00:00Z")], // around the leap day
    [d("2028-02-29T00:00:00Z"), d("2028-02-29T23:59:59.999Z")], // the leap day alone
    [d("2027-02-01T00:00:00Z"), d("2028-02-29T12:00:00Z")], // 393 days into the leap day
  ];
  const out: Read[] = [];
  for (const [from, to] of ranges) {
    if (to > now || now - from > 400 * DAY || to - from > 400 * DAY) continue;
    for (const period of PERIODS)
      for (const aggregate of ["sum", "min", "max"] as Agg[]) out.push({ period, from, to, aggregate });
  }
  return out;
}

const CHECKPOINTS = [
  "2027-01-02T18:00:00Z",
  "2027-01-10T09:00:00Z",
  "2028-01-04T09:00:00Z",
  "2028-03-01T06:00:00Z",
  "2028-03-08T20:00:00Z",
].map((s) => Date.parse(s));

describe("counter reads over days, weeks and months against a model", () => {
  it("a seeded year and a quarter of writes, late writes, ttl'd writes and member deletes: every read matches", async () => {
    const rand = mulberry32(16_2026);
    const ctx = () => lib.ctx(now);
    let checked = 0;
    const end = CHECKPOINTS.at(-1)!;
    let next = 0;
    for (let t = now; t <= end; t += DAY) {
      // every day's writes at a random time of it (the clock never runs backwards)
      const day = Math.floor(t / DAY) * DAY;
      while (next < CHECKPOINTS.length && CHECKPOINTS[next]! < day + DAY && CHECKPOINTS[next]! >= now) {
        // a checkpoint inside this day: reads there, before the day's writes after it
        now = CHECKPOINTS[next]!;
        for (const r of edgeReads()) {
          await checkRead(
            ctx(),
            r,
            rand,
            `${new Date(now).toISOString()} ${r.period} ${new Date(r.from!).toISOString()}..${new Date(r.to!).toISOString()} ${r.aggregate}`,
          );
          checked++;
        }
        // seeded ranges ending now or earlier, up to 400 days long
        for (let i = 0; i < 9; i++) {
          const period = PERIODS[i % 3]!;
          const to = now - Math.floor(rand() * 60) * DAY - Math.floor(rand() * DAY);
          const from = Math.max(to - Math.floor(rand() * 400 * DAY), now - 400 * DAY);
          const aggregate = (["sum", "min", "max"] as Agg[])[Math.floor(rand() * 3)]!;
          await checkRead(ctx(), { period, from, to, aggregate }, rand, `seeded ${period} ${from}..${to} ${aggregate}`);
          checked++;
        }
        await checkRead(ctx(), {}, rand, "plain");
        await checkCsv({ period: "week", from: now - 20 * DAY, to: now, aggregate: "sum" });
        await checkCsv({ period: "day", from: now - 400 * DAY, to: now, aggregate: "max" });
        await checkCsv({});
        next++;
      }
      now = Math.max(now, day + Math.floor(rand() * DAY));
      const edge = [
        "2026-12-28",
        "2026-12-31",
        "2027-01-01",
        "2027-01-03",
        "2027-01-04",
        "2027-12-27",
        "2028-01-02",
        "2028-01-03",
        "2028-02-28",
        "2028-02-29",
        "2028-03-01",
      ].includes(new Date(day).toISOString().slice(0, 10));
      if (!edge && rand() < 0.45) continue;
      const items: { member: string; by: number; period?: P; at?: number; ttl?: number }[] = [];
      // an edge day writes into each of its buckets at least once
      if (edge)
        for (const period of PERIODS) {
          items.push({ member: "e", by: 1, period, at: now });
          add(period, now, "e", 1);
        }
      const batch = 1 + Math.floor(rand() * 5);
      for (let i = 0; i < batch; i++) {
        const member = MEMBERS[Math.floor(rand() * MEMBERS.length)]!;
        const by = Math.floor(rand() * 13) - 3;
        const roll = rand();
        const period: P | undefined = roll < 0.3 ? "day" : roll < 0.6 ? "week" : roll < 0.85 ? "month" : undefined;
        const late = period && rand() < 0.25 ? Math.floor(rand() * 20 * DAY) : 0;
        const at = now - late;
        const ttl = rand() < 0.2 ? 500 * 86_400 : undefined;
        items.push({ member, by, ...(period ? { period, at } : {}), ...(ttl ? { ttl } : {}) });
        add(period, at, member, by);
      }
      await increment(ctx(), NAME, items);
      // now and then a member delete over a period range (or the plain key)
      if (rand() < 0.05) {
        const member = MEMBERS[Math.floor(rand() * MEMBERS.length)]!;
        const roll = rand();
        const period: P | undefined = roll < 0.3 ? "day" : roll < 0.6 ? "week" : roll < 0.85 ? "month" : undefined;
        if (period) {
          const to = now - Math.floor(rand() * 30 * DAY);
          const from = to - Math.floor(rand() * 60 * DAY);
          await deleteMember(ctx(), NAME, member, { period, from, to });
          for (const s of startsBetween(period, from, to)) buckets[period].get(s)?.delete(member);
        } else {
          await deleteMember(ctx(), NAME, member);
          plain.delete(member);
        }
      }
    }
    expect(checked).toBeGreaterThan(100);
    // the labels of the ISO weeks at the turns of the years, and the leap day
    const keys = await keysUnder(lib.target, lib.prefix);
    const has = (suffix: string) => keys.some((k) => k.endsWith(suffix));
    expect(
      [":week:2026-W53", ":week:2027-W52", ":week:2028-W01", ":day:20280229", ":month:202802"].filter((s) => !has(s)),
    ).toEqual([]);
    expect(has(":week:2027-W53") || has(":week:2027-W01")).toBe(true); // 2027-W01 started 2027-01-04
    expect(has(":week:2027-W53")).toBe(false); // 2027 has 52 ISO weeks
  }, 300_000);

  it("a range of exactly 400 days is read (all three periods, all aggregates); one ms more is a 400 with the envelope and writes nothing", async () => {
    const ctx = lib.ctx(now);
    const to = now;
    const from = to - 400 * DAY;
    for (const period of PERIODS)
      for (const aggregate of ["sum", "min", "max"] as Agg[])
        await checkRead(ctx, { period, from, to, aggregate }, mulberry32(400), `400 days ${period} ${aggregate}`);
    const before = await keysUnder(lib.target, lib.prefix);
    for (const period of PERIODS) {
      for (const path of ["top", "bottom", "range", "sorted", "members/a"]) {
        const over = await http(`/v1/counters/${NAME}/${path}?period=${period}&from=${from - 1}&to=${to}`);
        expect({ path, period, status: over.status }).toEqual({ path, period, status: 400 });
        const body = JSON.parse(over.text) as { error: { code: string; message: string; details?: unknown } };
        expect(body.error.code).toBe("invalid_request");
        expect(body.error.message).toMatch(/400 days/);
      }
      await expect(ranked(ctx, NAME, "top", 3, { period, from: from - 1, to })).rejects.toBeInstanceOf(ValidationError);
    }
    // an admin union of the week buckets over exactly 400 days, weighted: the model's union × 2 (× -1 for min);
    // one ms more is refused and the target keeps what it held
    for (const [aggregate, weight] of [
      ["sum", 2],
      ["min", -1],
    ] as const) {
      const done = await union(ctx, "u16", {
        sources: [{ counter: NAME, period: "week", from, to }],
        aggregate,
        weights: [weight],
      });
      // Redis weighs each bucket's score before it aggregates: min of (-1 × score) is -(max)
      const modelAgg: Agg = weight < 0 && aggregate === "min" ? "max" : aggregate;
      const want = asc(new Map([...unionOf("week", from, to, modelAgg)].map(([m, v]) => [m, v * weight])));
      expect(done).toMatchObject({ members: want.length, sourceKeys: startsBetween("week", from, to).length });
      expect((await ranked(ctx, "u16", "bottom", 1000)).items).toEqual(want.map((x, i) => ({ rank: i + 1, ...x })));
    }
    const held = (await ranked(ctx, "u16", "top", 1000)).items;
    await expect(
      union(ctx, "u16", { sources: [{ counter: NAME, period: "week", from: from - 1, to }] }),
    ).rejects.toBeInstanceOf(ValidationError);
    expect((await ranked(ctx, "u16", "top", 1000)).items).toEqual(held);
    // ISO dates: 2027-02-03 .. 2028-03-08 is 399 days; 2027-02-02 .. 2028-03-08 is 400; -02-01 is 401
    for (const [fromDate, status] of [
      ["2027-02-02", 200],
      ["2027-02-01", 400],
    ] as const) {
      const res = await http(`/v1/counters/${NAME}/top?period=week&from=${fromDate}&to=2028-03-08`);
      expect({ fromDate, status: res.status }).toEqual({ fromDate, status });
    }
    // not a date: 2027-02-29; a real one: 2028-02-29
    expect((await http(`/v1/counters/${NAME}/top?period=day&from=2027-02-29&to=2027-03-01`)).status).toBe(400);
    expect((await http(`/v1/counters/${NAME}/top?period=day&from=2028-02-29&to=2028-02-29`)).status).toBe(200);
    const after = await keysUnder(lib.target, lib.prefix);
    // the refused reads wrote nothing (the accepted ones may have cached a union; u16 is the admin union's)
    expect(after.filter((k) => !before.includes(k) && !k.includes(":union:") && !k.includes(":u16"))).toEqual([]);
  });

  it("the counters list pages one name at a time, most recently written first, every name once", async () => {
    const ctx = lib.ctx(now);
    const names = ["p1", "p2", "p3", "p4"];
    for (const [i, n] of names.entries()) await increment({ ...ctx, now: now + (i + 1) * 1000 }, n, [{ member: "x" }]);
    const seen: string[] = [];
    let offset: number | null = 0;
    while (offset !== null) {
      const page = await list({ ...ctx, now: now + 10_000 }, { offset, limit: 1 });
      seen.push(...page.counters);
      offset = page.nextOffset;
    }
    expect(seen.slice(0, 4)).toEqual(["p4", "p3", "p2", "p1"]);
    expect([...seen].sort()).toEqual(["p1", "p2", "p3", "p4", "u16", NAME]);
  });
});

describe("a week counter past the union bound (58 weeks of 360 members: 20,880 entries > 20,000)", () => {
  it("top and bottom (sum, min, max), member reads and the refusals of the rest match the model, each read within 60 commands", async () => {
    const T = Date.UTC(2027, 5, 2, 12); // a Wednesday
    const ctx = lib.ctx(T);
    const rand = mulberry32(58);
    const model = new Map<number, Map<string, number>>();
    const first = startOf("week", T - 399 * DAY);
    const weeks = startsBetween("week", T - 399 * DAY, T);
    expect(weeks).toHaveLength(58);
    for (const w of weeks) {
      const m = new Map<string, number>();
      const pool = Array.from({ length: 400 }, (_, i) => `m${String(i).padStart(3, "0")}`);
      for (let i = 0; i < 360; i++) {
        const [member] = pool.splice(Math.floor(rand() * pool.length), 1);
        m.set(member!, Math.floor(rand() * 250) - 50);
      }
      model.set(w, m);
      const at = Math.max(Math.min(w + DAY, T), T - 399 * DAY);
      await increment(
        ctx,
        "wk",
        [...m].map(([member, by]) => ({ member, by, period: "week" as const, at })),
      );
    }
    // a leader that stands out, and member deletes over part of the range
    for (const w of weeks.slice(0, 40)) {
      model.get(w)!.set("m007", (model.get(w)!.get("m007") ?? 0) + 1000);
      await increment(ctx, "wk", [
        { member: "m007", by: 1000, period: "week", at: Math.max(Math.min(w + DAY, T), T - 399 * DAY) },
      ]);
    }
    const deleted: string[] = [];
    for (const member of ["m001", "m002"]) {
      const from = weeks[10]!;
      const to = weeks[30]!;
      await deleteMember(ctx, "wk", member, { period: "week", from, to });
      for (const w of weeks) if (w >= from && w <= to) model.get(w)!.delete(member);
      deleted.push(member);
    }
    const options = (aggregate: Agg) => ({ period: "week" as const, from: first + 2 * DAY, to: T, aggregate });
    const union = (aggregate: Agg) => {
      const out = new Map<string, number>();
      for (const w of weeks) for (const [member, score] of model.get(w)!) addTo(out, member, score, aggregate);
      return asc(out);
    };
    const outcomes: string[] = [];
    // member reads go through a client of their own token tag, so the local server counts their commands
    const tag = `rv16wk${Math.random().toString(36).slice(2, 8)}`;
    const counted = { ...ctx, redis: createRedis({ url: lib.target.url, token: `${lib.target.token}.${tag}` }) };
    // the script loaded first (a cold EVALSHA pays a NOSCRIPT and an EVAL: 2 requests)
    await memberOf(counted, "wk", "m007", options("sum"));
    for (const aggregate of ["sum", "min", "max"] as Agg[]) {
      const up = union(aggregate);
      const down = [...up].reverse();
      for (const side of ["top", "bottom"] as const) {
        try {
          const got = await ranked(ctx, "wk", side, 10, options(aggregate));
          expect(got.items, `${side} ${aggregate}`).toEqual(
            (side === "top" ? down : up).slice(0, 10).map((x, i) => ({ rank: i + 1, ...x })),
          );
          outcomes.push(`${side} ${aggregate}: answered`);
        } catch (error) {
          expect(error, `${side} ${aggregate}`).toBeInstanceOf(ValidationError);
          outcomes.push(`${side} ${aggregate}: ${(error as ValidationError).code}`);
        }
      }
      for (const member of ["m007", "m001", "m399", "m200", "zzz"]) {
        const want = up.find((x) => x.member === member);
        try {
          await resetStats(lib.target, tag);
          const got = await memberOf(counted, "wk", member, options(aggregate));
          expect(got.score, `member ${member} ${aggregate}`).toBe(want?.score);
          const cost = await statsOf(lib.target, tag);
          expect({ member, aggregate, requests: cost.requests }).toEqual({ member, aggregate, requests: 1 });
          expect(cost.commands, `member ${member} ${aggregate}: commands`).toBeLessThanOrEqual(60);
        } catch (error) {
          if (want) throw error;
          expect(error).toBeInstanceOf(NotFoundError);
        }
      }
    }
    // past the bound a top or bottom over 58 weeks is refused (the threshold algorithm's 65,536
    // lookups cannot pay one round over 58 keys, 64 × 58² = 215,296; docs/counters.md): pinned so a
    // change shows here
    expect(outcomes).toEqual(
      ["sum", "min", "max"].flatMap((a) => [`top ${a}: too_many_entries`, `bottom ${a}: too_many_entries`]),
    );
  }, 120_000);
});

describe("cached unions of finished ranges after deletes", () => {
  it("a member delete and a counter delete (then writes of a new life) are seen by the next read of a cached range", async () => {
    const T = Date.UTC(2027, 1, 20, 12); // after every period of the range has ended
    const ctx = lib.ctx(T);
    const from = Date.UTC(2026, 11, 28); // 2026-W53 .. 2027-W01
    const to = Date.UTC(2027, 0, 10);
    for (const period of PERIODS) {
      const name = `cache-${period}`;
      await increment(ctx, name, [
        { member: "x", by: 5, period, at: Date.UTC(2026, 11, 31, 12) },
        { member: "y", by: 3, period, at: Date.UTC(2027, 0, 1, 12) },
        { member: "x", by: 1, period, at: Date.UTC(2027, 0, 4, 12) },
      ]);
      const o = { period: period as Period, from, to };
      const first = await ranked(ctx, name, "top", 10, o);
      expect(first.items.map((i) => [i.member, i.score])).toEqual([
        ["x", 6],
        ["y", 3],
      ]);
      // served from the cache the second time
      const again = (await ranked(ctx, name, "top", 10, o)) as { range?: { finished: boolean } };
      expect(again.range).toMatchObject({ finished: true });
      await deleteMember(ctx, name, "x", o);
      expect((await ranked(ctx, name, "top", 10, o)).items.map((i) => [i.member, i.score])).toEqual([["y", 3]]);
      await expect(memberOf(ctx, name, "x", o)).rejects.toBeInstanceOf(NotFoundError);
      await deleteCounter(ctx, name);
      await increment(ctx, name, [{ member: "z", by: 2, period, at: Date.UTC(2027, 0, 2, 12) }]);
      expect((await ranked(ctx, name, "top", 10, o)).items.map((i) => [i.member, i.score])).toEqual([["z", 2]]);
      expect((await scoreRange(ctx, name, { ...o, min: "-inf", max: "+inf" })).count).toBe(1);
    }
  });
});

describe("hour buckets across the leap day and the turn of 2027/28 (rollups of quarters, days, months)", () => {
  it("every read of hour ranges matches the model: edge hours, partial days and months, up to 400 days", async () => {
    const T = Date.UTC(2028, 2, 9, 5, 30);
    now = T;
    const ctx = lib.ctx(T);
    const rand = mulberry32(2028);
    const spans: [string, string][] = [
      ["2027-12-31T20:00:00Z", "2028-01-01T04:00:00Z"],
      ["2028-01-31T22:00:00Z", "2028-02-01T01:00:00Z"],
      ["2028-02-28T21:00:00Z", "2028-03-01T03:00:00Z"],
    ];
    for (const [a, b] of spans) {
      for (let t = Date.parse(a); t <= Date.parse(b); t += HOUR) {
        const items = [];
        for (let i = 0; i < 3; i++) {
          const member = MEMBERS[Math.floor(rand() * MEMBERS.length)]!;
          const by = Math.floor(rand() * 13) - 3;
          const at = t + Math.floor(rand() * HOUR);
          items.push({ member, by, period: "hour" as const, at });
          add("hour", at, member, by);
        }
        await increment(ctx, NAME, items);
      }
    }
    // a member delete over the leap day's hours
    await deleteMember(ctx, NAME, "a", { period: "hour", from: Date.UTC(2028, 1, 29), to: Date.UTC(2028, 1, 29, 23) });
    for (const s of startsBetween("hour", Date.UTC(2028, 1, 29), Date.UTC(2028, 1, 29, 23)))
      buckets.hour.get(s)?.delete("a");
    const d = (x: string) => Date.parse(x);
    const reads: [number, number][] = [
      [d("2027-12-31T23:00:00Z"), d("2028-01-01T00:59:59Z")], // the last hour of the year and the first
      [d("2027-12-31T00:00:00Z"), d("2028-01-01T23:00:00Z")], // two whole days (day rollups)
      [d("2028-01-31T23:30:00Z"), d("2028-02-29T23:59:59Z")], // an hour of January, the whole of February
      [d("2028-02-29T00:00:00Z"), d("2028-02-29T23:59:59Z")], // the leap day
      [d("2028-02-29T05:00:00Z"), d("2028-03-01T02:00:00Z")], // partial quarters on both sides
      [T - 400 * DAY, T], // 400 days of hours
      [d("2027-12-01T00:00:00Z"), d("2028-03-01T12:00:00Z")], // whole months and partial ones
    ];
    for (const [from, to] of reads)
      // min and max read every bucket: at most 401 (a 400 past it, docs/counters.md)
      for (const aggregate of (startsBetween("hour", from, to).length > 401 ? ["sum"] : ["sum", "min", "max"]) as Agg[])
        await checkRead(
          ctx,
          { period: "hour", from, to, aggregate },
          rand,
          `hour ${new Date(from).toISOString()}..${new Date(to).toISOString()} ${aggregate}`,
        );
  }, 120_000);
});
