/**
 * Review 12: `period=week` size records (index fields `n:<week key>`, docs/counters.md "Week size
 * records") against an exact model, through the library on real Redis with injected time.
 *
 * Seeded runs (dev/prng.ts) over ~60 weeks of virtual time write three week counters: `a` (no ttl),
 * `t` (ttl 20 days: its weeks expire and restart) and `s` (no ttl, deleted and re-created now and
 * then). Steps: writes into the current week, late writes (`at` in past weeks), writers whose clock
 * lags up to 50 s across a week boundary, member deletes over ranges of whole weeks, counter deletes,
 * and reads of every kind (top/bottom, member present or absent, score range, sorted by score or
 * member) with sum/min/max over 1–59 weeks. Expiry: the virtual clock runs ahead of Redis', so a
 * ttl'd week key is DEL'd (and dropped from the model) once the virtual clock passes the expiry its
 * index field `b:` records, as Redis would at that virtual time; the cursors of trim.ts then drop
 * the fields. After every step, one EVAL reads each index whole: every `n:` record must be at least
 * its key's real ZCARD, have its `b:` field (no record outlives its key's field), and every week of
 * the model must hold exactly the model's members. Every answer is compared with the model and every
 * read must cost ≤ 60 commands (counted by the local Upstash server).
 *
 * Then counters near the union bound (MAX_UNION_MEMBERS = 20,000 entries, 59 weeks of ~340 members):
 * a refusal only when the real entries pass the bound, and ≤ 60 commands when they do not.
 *
 * What held: every answer (6 seeds, 1201–1206), records ≥ ZCARD after every step (late writes,
 * lagging writers at every boundary, mixed week/day batches, ttl restarts, member deletes, counter
 * re-creation), no `n:` without its `b:`, the ttl'd index trimmed, refusals exactly past the bound.
 * Findings (it.fails, both fixed in wt-week2): member deletes left records loose, so a read whose
 * weeks fit the bound could pay a ZCARD a week (63 commands); a week counter without ttl paid 10 on
 * every other first touch (the `c:w` cursor's learn; pre-existing).
 */
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../dev/prng.ts";
import type { Ctx } from "../../src/context.ts";
import {
  deleteCounter,
  deleteMember,
  increment,
  memberOf,
  ranked,
  scoreRange,
  sorted,
  type IncrItem,
} from "../../src/counters/index.ts";
import { counterKeys as K } from "../../src/counters/keys.ts";
import { MAX_UNION_MEMBERS } from "../../src/counters/limits.ts";
import { NotFoundError, ValidationError } from "../../src/errors.ts";
import { DAY, periodStart } from "../../src/time.ts";
import { command, resetStats, statsOf } from "../helpers/upstash-rest.ts";
import { settled } from "../helpers/settled.ts";
import {
  ascending,
  cardsLua,
  unionOf,
  WEEK,
  weekCounters,
  type Agg,
  type WeekModel,
} from "../helpers/week-counters.ts";

const byBytes = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Its reads are not asserted to be one request each (`measure`'s oneRequest: false). */
const { lib, target, tag: TAG, counted, measure, warm } = weekCounters("r12week", 30_000, { oneRequest: false });
const MAX_READ_COMMANDS = 60;
/** A Monday noon. */
const START = Date.UTC(2026, 0, 5, 12);

type Weeks = WeekModel;

/** The whole index of a counter and the ZCARD of each key it lists (`b:`) or records (`n:`). */
async function indexOf(ctx: Ctx, name: string) {
  const h = await command<string[]>(target, "HGETALL", K.index(ctx.prefix, name));
  const fields = new Map<string, string>();
  for (let i = 0; i + 1 < h.length; i += 2) fields.set(h[i]!, h[i + 1]!);
  const keys = [
    ...new Set([...fields.keys()].filter((f) => f.startsWith("b:") || f.startsWith("n:")).map((f) => f.slice(2))),
  ];
  const cards = new Map<string, number>();
  if (keys.length > 0) {
    const got = await command<number[]>(target, "EVAL", cardsLua, keys.length, ...keys);
    keys.forEach((k, i) => cards.set(k, Number(got[i])));
  }
  return { fields, cards };
}

interface Counter {
  name: string;
  ttl?: number;
  weeks: Weeks;
  /** week start -> recorded expiry (virtual epoch ms, 0: none), from the index after each step */
  expiry: Map<number, number>;
}

/** Every index invariant of the records, and the model's weeks against the real keys. */
async function checkIndex(ctx: Ctx, c: Counter, where: string) {
  const { fields, cards } = await indexOf(ctx, c.name);
  for (const [f, v] of fields) {
    if (!f.startsWith("n:")) continue;
    const key = f.slice(2);
    // no record outlives its key's field (the trim cursor and the deletes drop both)
    expect(fields.has(`b:${key}`), `${where}: ${f} without b: (${c.name})`).toBe(true);
    // a record is an upper bound of its week's members
    expect(Number(v), `${where}: record of ${key} below its ZCARD`).toBeGreaterThanOrEqual(cards.get(key) ?? 0);
  }
  for (const [week, members] of c.weeks) {
    const key = K.bucket(ctx.prefix, c.name, "week", week);
    const real = await command<[string, string][] | string[]>(target, "ZRANGE", key, 0, -1, "WITHSCORES");
    const got = new Map<string, number>();
    for (let i = 0; i + 1 < real.length; i += 2) got.set(String(real[i]), Number(real[i + 1]));
    expect(got, `${where}: week ${new Date(week).toISOString()} of ${c.name}`).toEqual(members);
    const b = fields.get(`b:${key}`);
    if (members.size > 0) expect(b, `${where}: ${key} not listed`).toBeDefined();
    c.expiry.set(week, b === undefined ? 0 : Number(b));
  }
}

/** Drops the ttl'd weeks whose recorded expiry the virtual clock has passed, as Redis would. */
async function expire(ctx: Ctx, c: Counter, now: number) {
  for (const [week, at] of c.expiry) {
    if (at > 0 && at < 1e15 && at <= now && c.weeks.has(week)) {
      await command(target, "DEL", K.bucket(ctx.prefix, c.name, "week", week));
      c.weeks.delete(week);
      c.expiry.delete(week);
    }
  }
}

function add(c: Counter, week: number, member: string, by: number) {
  let m = c.weeks.get(week);
  if (!m) c.weeks.set(week, (m = new Map()));
  m.set(member, (m.get(member) ?? 0) + by);
}

/** Reads `kind`/`agg` over from..to and checks it against the model; returns its commands. */
async function readCheck(
  ctx: Ctx,
  c: Counter,
  kind: string,
  agg: Agg,
  from: number,
  to: number,
  probe: string,
  where: string,
) {
  const opts = { period: "week" as const, from, to, aggregate: agg };
  const u = ascending(unionOf(c.weeks, periodStart("week", from), periodStart("week", to), agg));
  const pairs = (xs: { member: string; score: number }[]) => xs.map((i) => [i.member, i.score]);
  const label = `${where}: ${kind} ${agg} ${c.name} ${new Date(from).toISOString()}..${new Date(to).toISOString()}`;
  if (kind === "top" || kind === "bottom") {
    const r = await measure((x) => ranked(x, c.name, kind, 7, opts), ctx);
    if (!r.got.ok) throw r.got.error;
    const want = kind === "top" ? [...u].reverse().slice(0, 7) : u.slice(0, 7);
    expect(pairs(r.got.value.items), label).toEqual(pairs(want));
    return r.commands;
  }
  if (kind === "member") {
    const r = await measure((x) => memberOf(x, c.name, probe, opts), ctx);
    const at = u.findIndex((i) => i.member === probe);
    if (at < 0) {
      expect(!r.got.ok && r.got.error, label).toBeInstanceOf(NotFoundError);
    } else {
      if (!r.got.ok) throw r.got.error;
      expect([r.got.value.score, r.got.value.rank], label).toEqual([u[at]!.score, u.length - at]);
    }
    return r.commands;
  }
  if (kind === "range") {
    const lo = -2 + (probe.length % 5);
    const r = await measure((x) => scoreRange(x, c.name, { ...opts, min: String(lo), max: "+inf", limit: 4 }), ctx);
    if (!r.got.ok) throw r.got.error;
    const inRange = u.filter((i) => i.score >= lo);
    expect([r.got.value.count, pairs(r.got.value.items)], label).toEqual([inRange.length, pairs(inRange.slice(0, 4))]);
    return r.commands;
  }
  const by = kind === "sorted-member" ? ("member" as const) : ("score" as const);
  const r = await measure((x) => sorted(x, c.name, { ...opts, by }), ctx);
  if (!r.got.ok) throw r.got.error;
  const want = by === "score" ? u : [...u].sort((a, b) => byBytes(a.member, b.member));
  expect(pairs(r.got.value.items), label).toEqual(pairs(want));
  return r.commands;
}

const KINDS = ["top", "bottom", "member", "range", "sorted-score", "sorted-member"];
const AGGS: Agg[] = ["sum", "min", "max"];

async function run(seed: number, steps: number) {
  const rnd = mulberry32(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const ctx0 = lib.ctx(START, `s${seed}`);
  await warm(ctx0);
  const counters: Counter[] = [
    { name: "a", weeks: new Map(), expiry: new Map() },
    { name: "t", ttl: 20 * 86400, weeks: new Map(), expiry: new Map() },
    { name: "s", weeks: new Map(), expiry: new Map() },
  ];
  const over: string[] = [];
  let t = START;
  for (let step = 0; step < steps; step++) {
    // the clock: mostly a few hours on, sometimes to just past the next week boundary
    const nextWeek = periodStart("week", t) + WEEK;
    t = rnd() < 0.12 ? nextWeek + Math.floor(rnd() * 40_000) : t + Math.floor(rnd() * 30 * 3600_000);
    const ctx = { ...ctx0, now: t };
    const c = pick(counters);
    for (const x of counters) await expire(ctx, x, t);
    const cur = periodStart("week", t);
    const where = `seed ${seed} step ${step}`;
    const r = rnd();
    const member = `m${Math.floor(rnd() * 14)}`;
    const by = rnd() < 0.15 ? -1 : 1 + Math.floor(rnd() * 3);
    const ttl = c.ttl === undefined ? {} : { ttl: c.ttl };
    if (r < 0.3) {
      // a batch into the current week
      const items: IncrItem[] = [];
      for (let i = 0; i < 1 + Math.floor(rnd() * 4); i++)
        items.push({ member: `m${Math.floor(rnd() * 14)}`, by: 1 + Math.floor(rnd() * 3), period: "week", ...ttl });
      await increment(ctx, c.name, items);
      for (const i of items) add(c, cur, i.member, i.by ?? 1);
    } else if (r < 0.5) {
      // late: a past week (within the ttl for `t`, 380 days otherwise), batches touching two weeks
      const back = c.ttl === undefined ? 380 * DAY : (c.ttl * 1000) / 2;
      const items: IncrItem[] = [];
      for (let i = 0; i < 1 + Math.floor(rnd() * 3); i++) {
        const at = Math.max(START - 300 * DAY, t - Math.floor(rnd() * back));
        items.push({ member: `m${Math.floor(rnd() * 14)}`, by, period: "week", at, ...ttl });
      }
      await increment(ctx, c.name, items);
      for (const i of items) add(c, periodStart("week", Number(i.at)), i.member, i.by ?? 1);
    } else if (r < 0.6) {
      // a writer whose clock lags up to 50 s: just after a boundary, it still writes the week before
      const lagging = t - Math.floor(rnd() * 50_000);
      await increment({ ...ctx, now: lagging }, c.name, [{ member, by, period: "week", ...ttl }]);
      add(c, periodStart("week", lagging), member, by);
    } else if (r < 0.7) {
      // a member delete over whole weeks (1–20)
      const last = cur - Math.floor(rnd() * 30) * WEEK;
      const first = last - Math.floor(rnd() * 20) * WEEK;
      await deleteMember(ctx, c.name, member, { period: "week", from: first, to: last + WEEK - 1 });
      for (const [week, m] of c.weeks) if (week >= first && week <= last) m.delete(member);
    } else if (r < 0.72 && c.name === "s") {
      await deleteCounter(ctx, c.name);
      c.weeks.clear();
      c.expiry.clear();
    } else {
      // a read of 1–59 weeks ending in or before the current one, from and to anywhere in their weeks
      const n = 1 + Math.floor(rnd() * 59);
      const lastWeek = cur - Math.floor(rnd() * 4) * WEEK;
      const from = lastWeek - (n - 1) * WEEK + Math.floor(rnd() * WEEK);
      const to = Math.min(t, from + 400 * DAY, lastWeek + Math.floor(rnd() * WEEK));
      if (to >= from) {
        const weeksInRange = [...c.weeks.entries()].filter(
          ([w]) => w >= periodStart("week", from) && w <= periodStart("week", to),
        );
        const entries = weeksInRange.reduce((s, [, m]) => s + m.size, 0);
        const kind = pick(KINDS);
        const agg = pick(AGGS);
        const commands = await readCheck(ctx, c, kind, agg, from, to, member, where);
        if (entries <= MAX_UNION_MEMBERS && commands > MAX_READ_COMMANDS)
          over.push(`${where}: ${kind} ${agg} ${c.name} ${n} weeks: ${commands} commands`);
      }
    }
    for (const x of counters) await checkIndex(ctx, x, where);
  }
  // the ttl'd counter's index: what its fields of weeks long expired came to (the trim cursor)
  const { fields } = await indexOf({ ...ctx0, now: t }, "t");
  const stale = [...fields].filter(([f, v]) => f.startsWith("b:") && Number(v) > 0 && Number(v) < t - 2 * WEEK);
  expect(stale, `seed ${seed}: fields of weeks long expired (${fields.size} fields)`).toEqual([]);
  return { over, weeks: counters.map((c) => c.weeks.size) };
}

describe("week size records against a model", () => {
  // REVIEW12_WEEK_SEEDS=a,b,… explores other runs (tried: 1201–1206)
  const seeds = (process.env.REVIEW12_WEEK_SEEDS ?? "1201,1202,1203").split(",").map(Number);
  it.each(seeds)(
    "late writes, lagging clocks, ttl, deletes, re-created counters, reads of 1–59 weeks (seed %i)",
    async (seed) => {
      const { over, weeks } = await run(seed, 260);
      console.log(`seed ${seed}: weeks held`, weeks.join("/"));
      expect(over).toEqual([]);
    },
    600_000,
  );
});

/** Writes `count(week)` members u0… into each week, each when that week is current (its Wednesday). */
async function fill(ctx: Ctx, name: string, weeks: number[], count: (week: number, i: number) => number) {
  const model: Weeks = new Map();
  for (const [wi, week] of weeks.entries()) {
    const n = count(week, wi);
    const items: IncrItem[] = Array.from({ length: n }, (_, i) => ({
      member: `u${i}`,
      by: 1 + ((i + wi) % 5),
      period: "week" as const,
    }));
    for (let s = 0; s < items.length; s += 1000)
      await increment({ ...ctx, now: Math.min(week + 2 * DAY, ctx.now) }, name, items.slice(s, s + 1000));
    model.set(week, new Map(items.map((i) => [i.member, i.by!])));
  }
  return model;
}

const weeksBetween = (from: number, to: number) => {
  const out: number[] = [];
  for (let w = periodStart("week", from); w <= periodStart("week", to); w += WEEK) out.push(w);
  return out;
};

describe("near the union bound", () => {
  /** A Monday noon: 400 days back is a Sunday, so a range ending now touches 59 weeks. */
  const NOW = Date.UTC(2027, 5, 14, 12);
  const from = NOW - 400 * DAY;
  const weeks = weeksBetween(from, NOW);
  const THIS_WEEK = periodStart("week", NOW);

  it("random sizes ~300–400 a week: refused exactly when the real entries pass 20,000; answers as the model", async () => {
    const ctx = lib.ctx(NOW, "near");
    await warm(ctx);
    const rnd = mulberry32(77);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const sizes = weeks.map(() => 300 + Math.floor(rnd() * 100));
    const model = await fill(ctx, "n", weeks, (_, i) => sizes[i]!);
    const c: Counter = { name: "n", weeks: model, expiry: new Map() };
    const problems: string[] = [];
    for (let step = 0; step < 24; step++) {
      // late writes of new members into finished weeks raise their records (or a lagging clock
      // writes the week just ended as if current)
      if (rnd() < 0.5) {
        const w = weeks[Math.floor(rnd() * 58)]!;
        const items: IncrItem[] = Array.from({ length: 1 + Math.floor(rnd() * 30) }, (_, j) => ({
          member: `x${step}-${j}`,
          by: 1 + j,
          period: "week" as const,
          at: Math.max(w + DAY, from),
        }));
        await increment(ctx, "n", items);
        const m = c.weeks.get(periodStart("week", Number(items[0]!.at)))!;
        for (const i of items) m.set(i.member, (m.get(i.member) ?? 0) + i.by!);
      } else {
        const lagging = THIS_WEEK - 20_000;
        await increment({ ...ctx, now: lagging }, "n", [{ member: `y${step}`, by: 2, period: "week" }]);
        const m = c.weeks.get(THIS_WEEK - WEEK)!;
        m.set(`y${step}`, (m.get(`y${step}`) ?? 0) + 2);
      }
      // shrink some weeks by member deletes (records stay loose), then read a long range
      const member = `u${Math.floor(rnd() * 400)}`;
      const lo = weeks[Math.floor(rnd() * 40)]!;
      const hi = lo + Math.floor(rnd() * 19) * WEEK;
      await deleteMember(ctx, "n", member, { period: "week", from: lo, to: hi + WEEK - 1 });
      for (const [w, m] of c.weeks) if (w >= lo && w <= hi) m.delete(member);
      // a finished range of 50–58 weeks (a range ending in the current week bounds its finished
      // weeks' entries, then the distinct members of their cached union plus the current week's)
      const n = 50 + Math.floor(rnd() * 9);
      const first = weeks[58 - n]!;
      const rangeFrom = Math.max(from, first);
      const to = NOW - WEEK;
      const entries = [...c.weeks].filter(([w]) => w >= first && w < THIS_WEEK).reduce((s, [, m]) => s + m.size, 0);
      const kind = pick(["bottom", "range", "sorted"]);
      const opts = { period: "week" as const, from: rangeFrom, to };
      const r = await measure(
        async (x): Promise<{ items: { member: string; score: number }[] }> =>
          kind === "bottom"
            ? ranked(x, "n", "bottom", 5, opts)
            : kind === "range"
              ? scoreRange(x, "n", { ...opts, limit: 5 })
              : sorted(x, "n", { ...opts, by: "score" }),
        ctx,
      );
      const refused = !r.got.ok && r.got.error instanceof ValidationError;
      if (!r.got.ok && !refused) throw r.got.error;
      if (refused !== entries > MAX_UNION_MEMBERS)
        problems.push(`step ${step}: ${entries} entries, refused ${refused}`);
      if (!refused && r.commands > MAX_READ_COMMANDS)
        problems.push(`step ${step}: ${entries} entries, ${r.commands} commands`);
      if (!refused) {
        const u = ascending(unionOf(c.weeks, first, to, "sum"));
        if (r.got.ok)
          expect(r.got.value.items.slice(0, 5).map((i) => [i.member, i.score])).toEqual(
            u.slice(0, 5).map((i) => [i.member, i.score]),
          );
      }
      await checkIndex(ctx, c, `near step ${step}`);
    }
    console.log("near the bound", problems);
    expect(problems).toEqual([]);
  }, 600_000);
});

describe("records loosened by member deletes", () => {
  const NOW = Date.UTC(2027, 5, 14, 12);
  const from = NOW - 400 * DAY;
  const weeks = weeksBetween(from, NOW);

  // What is wrong: a member delete shrinks weeks but leaves their records, so a counter whose
  // finished weeks fit the bound (19,998 entries) but whose records sum just past it (20,056) makes
  // the first long read take a ZCARD of nearly every week (largest record first, each settling one
  // entry) before it may union: 58 finished weeks, 56 ZCARDs, 63 commands, past issue 15's 60 that
  // docs/counters.md claims for counters whose union fits (its "still past 60" list names only
  // ranges that pass the bound, weeks without records and member reads past the bound). Later
  // reads are cheap (the read records what it measured). Severity: low (first read only, needs
  // records within ~60 of the bound). Smallest fix: the member delete script lowers `n:<key>` of
  // each week its ZREM emptied of the member (one HINCRBY per week, or one HSET of them all), so
  // records stay exact under deletes; or cap the ZCARDs at the commands left and size the rest.
  // Fixed (wt-week2): the delete reads the records in its first HMGET and writes each lowered one
  // in the HSET of the cache generation it makes anyway (src/counters/delete-weeks.ts).
  it("58 finished weeks of 19,998 entries, records 20,056 before a member delete: the first read costs ≤ 60 commands", async () => {
    const ctx = lib.ctx(NOW, "loose");
    await warm(ctx);
    // 46 weeks of 346 members and 12 of 345 (records 20,056), then the current week (records the last)
    const finished = weeks.slice(0, 58);
    const model = await fill(ctx, "l", weeks, (_, i) => (i === 58 ? 3 : i < 46 ? 346 : 345));
    // one member out of every finished week: 19,998 entries
    await deleteMember(ctx, "l", "u0", { period: "week", from, to: NOW - WEEK });
    for (const w of finished) model.get(w)!.delete("u0");
    const c: Counter = { name: "l", weeks: model, expiry: new Map() };
    await checkIndex(ctx, c, "loose");
    const index = await indexOf(ctx, "l");
    const recorded = finished.reduce(
      (s, w) => s + Number(index.fields.get(`n:${K.bucket(ctx.prefix, "l", "week", w)}`) ?? 0),
      0,
    );
    const entries = finished.reduce((s, w) => s + model.get(w)!.size, 0);
    // the delete lowered each week's record with the member it removed (20,056 before the fix)
    expect([recorded, entries]).toEqual([19_998, 19_998]);
    const r = await measure((x) => ranked(x, "l", "bottom", 5, { period: "week", from, to: NOW - WEEK }), ctx);
    if (!r.got.ok) throw r.got.error;
    const u = ascending(unionOf(model, finished[0]!, finished.at(-1)!, "sum"));
    expect(r.got.value.items.map((i) => [i.member, i.score])).toEqual(u.slice(0, 5).map((i) => [i.member, i.score]));
    console.log("loose records: first read", r.commands, r.by);
    expect(r.commands).toBeLessThanOrEqual(MAX_READ_COMMANDS);
  }, 300_000);
});

describe("a week in progress", () => {
  const NOW = Date.UTC(2027, 5, 14, 12);
  const THIS_WEEK = periodStart("week", NOW);

  // docs/costs.md row 7: a week in progress has no record, so a steady write costs 3. A write
  // stamped into the next week before the current one ends (or a writer whose clock runs ahead)
  // creates the next week early: it must not record the week still in progress (held).
  it("a write ahead into the next week leaves the current week without a record (steady writes cost 3)", async () => {
    const ctx = lib.ctx(NOW, "ahead");
    const w = THIS_WEEK - 2 * WEEK;
    const end = w + WEEK;
    await increment({ ...ctx, now: w + DAY }, "p", [
      { member: "a", period: "week" },
      { member: "b", period: "week" },
    ]);
    // 2 minutes before the week ends, a write stamped 1 minute into the next week
    const got = await settled(
      increment({ ...ctx, now: end - 120_000 }, "p", [{ member: "c", period: "week", at: end + 60_000 }]),
    );
    expect(got.ok, String(!got.ok && got.error)).toBe(true);
    // a steady write of a new member to the current week, a minute before it ends
    // (the first refreshes the registry stamp, due once a minute)
    await increment({ ...ctx, redis: counted, now: end - 90_000 }, "p", [{ member: "d", period: "week" }]);
    await resetStats(target, TAG);
    await increment({ ...ctx, redis: counted, now: end - 85_000 }, "p", [{ member: "e", period: "week" }]);
    const by = (await statsOf(target, TAG)).byCommand;
    const index = await indexOf(ctx, "p");
    const key = K.bucket(ctx.prefix, "p", "week", w);
    expect([index.fields.get(`n:${key}`), index.cards.get(key)]).toEqual([undefined, 4]);
    expect(by).toEqual({ evalsha: 1, hmget: 1, zincrby: 1 });
  });
});

describe("first touch of a week", () => {
  const NOW = Date.UTC(2027, 5, 14, 12);
  const THIS_WEEK = periodStart("week", NOW);
  const w = THIS_WEEK - 8 * WEEK;

  async function costs(label: string) {
    const ctx = lib.ctx(NOW, label);
    const cost = async (t: number, items: IncrItem[]) => {
      await resetStats(target, TAG);
      await increment({ ...ctx, redis: counted, now: t }, "f", items);
      const s = await statsOf(target, TAG);
      return [s.commands, s.byCommand.zcard ?? 0] as const;
    };
    // load the script and the registry stamp
    await increment({ ...ctx, redis: counted, now: w + DAY }, "f", [{ member: "a", period: "week" }]);
    await increment({ ...ctx, redis: counted, now: w + DAY + 61_000 }, "f", [{ member: "b", period: "week" }]);
    const weekly: (readonly [number, number])[] = [];
    // four weeks in a row: each first touch finds the week before listed without a record
    for (const k of [1, 2, 3, 4]) weekly.push(await cost(w + k * WEEK + DAY, [{ member: "a", period: "week" }]));
    return { ctx, cost, weekly };
  }

  it("takes one ZCARD of the week before when it is listed without a record, none otherwise", async () => {
    const { ctx, cost, weekly } = await costs("first");
    expect(weekly.map(([, z]) => z)).toEqual([1, 1, 1, 1]);
    // a week after a week never written: nothing to record
    expect((await cost(w + 6 * WEEK + DAY, [{ member: "a", period: "week" }]))[1]).toBe(0);
    // a late write records the finished week it creates; the week after it then pays no ZCARD
    await increment({ ...ctx, now: w + 8 * WEEK + 3600_000 }, "f", [
      { member: "z", period: "week", at: w + 8 * WEEK - DAY },
      { member: "y", period: "week", at: w + 8 * WEEK - DAY },
    ]);
    expect((await cost(w + 8 * WEEK + DAY, [{ member: "a", period: "week" }]))[1]).toBe(0);
    const index = await indexOf(ctx, "f");
    const rec = (k: number) => index.fields.get(`n:${K.bucket(ctx.prefix, "f", "week", w + k * WEEK)}`);
    // weeks 0–3 by the next week's first touch; 6 by the late write creating 7, which records itself
    expect([0, 1, 2, 3, 4, 6, 7, 8].map(rec)).toEqual(["2", "1", "1", "1", undefined, "1", "2", undefined]);
  });

  // What is wrong: docs/costs.md row 8 says a week's first touch costs 9 (8 before the size records)
  // and row 16 that counters without `ttl` pay nothing for the index cursors; a week counter without
  // ttl written every week pays 10 every other first touch (a second HMGET: the `c:w` cursor's learn
  // step, src/counters/trim.ts). Not new: at 541a933 (before wt-week) the same writes cost 9, 8, 9,
  // 8. Severity: low (a command every other week; docs/costs.md's counts are promised exact).
  // Smallest fix: a learn that finds the group's key recorded without expiry (0) parks the cursor
  // there (`c:w` = `<group>|0`), so later first touches skip the learn; or document 9–10.
  // Fixed (wt-week2): a write that records the key of the `w`/`m` cursor's group (its only field)
  // gives the cursor that expiry, so the cursor steps past a kept week for free (trim.ts trimNote).
  // 10 since review 26: the registry's stamp (a week's first touch refreshes it) reads the
  // registry's highest first (src/redis/pages.ts stampLua)
  it("costs 10 on every first touch of a week (docs/costs.md row 9)", async () => {
    const { weekly } = await costs("first9");
    expect(weekly.map(([n]) => n)).toEqual([10, 10, 10, 10]);
  });
});

describe("lagging clocks at every boundary", () => {
  const NOW = Date.UTC(2027, 5, 14, 12);
  const THIS_WEEK = periodStart("week", NOW);

  it.each([5, 6])(
    "writers up to 59 s behind keep every record at least its week's size (seed %i)",
    async (seed) => {
      const rnd = mulberry32(seed);
      const ctx = lib.ctx(NOW, `lag${seed}`);
      const c: Counter = { name: "g", weeks: new Map(), expiry: new Map() };
      const first = THIS_WEEK - 30 * WEEK;
      let fresh = 0;
      for (let k = 1; k < 30; k++) {
        const boundary = first + k * WEEK;
        const before = boundary - WEEK;
        const steps = [
          // the week's first touch on time (records the week before)
          { now: boundary + Math.floor(rnd() * 20_000), week: boundary },
          // writers still in the week before by their clocks, before and after that first touch
          { now: boundary - 1 - Math.floor(rnd() * 59_000), week: before },
          { now: boundary - 1 - Math.floor(rnd() * 59_000), week: before },
        ];
        if (rnd() < 0.5) steps.unshift({ now: boundary - 1 - Math.floor(rnd() * 59_000), week: before });
        for (const s of steps) {
          const items: IncrItem[] = [];
          for (let i = 0; i < 1 + Math.floor(rnd() * 4); i++) {
            const member = rnd() < 0.5 ? `f${fresh++}` : `m${Math.floor(rnd() * 6)}`;
            items.push({ member, by: rnd() < 0.2 ? -1 : 1, period: "week" });
          }
          // sometimes with a late item into an older week and a day item in the same batch
          if (rnd() < 0.4) items.push({ member: `f${fresh++}`, period: "week", at: before - WEEK + DAY });
          if (rnd() < 0.3) items.push({ member: "d", period: "day" });
          await increment({ ...ctx, now: s.now }, "g", items);
          for (const i of items) {
            if (i.period !== "week") continue;
            const week = i.at === undefined ? periodStart("week", s.now) : periodStart("week", Number(i.at));
            const m = c.weeks.get(week) ?? new Map<string, number>();
            c.weeks.set(week, m);
            m.set(i.member, (m.get(i.member) ?? 0) + (i.by ?? 1));
          }
          await checkIndex(ctx, c, `seed ${seed} week ${k} at ${s.now - boundary}`);
        }
        if (rnd() < 0.2) {
          // a member delete over the last few weeks
          const member = `m${Math.floor(rnd() * 6)}`;
          await deleteMember({ ...ctx, now: boundary + 30_000 }, "g", member, {
            period: "week",
            from: before - WEEK,
            to: boundary + WEEK - 1,
          });
          for (const [w, m] of c.weeks) if (w >= before - WEEK && w <= boundary) m.delete(member);
          await checkIndex(ctx, c, `seed ${seed} delete week ${k}`);
        }
      }
      // every finished week has a record but the current one and the first, when lagging writers
      // created it after the next week's first touch (it is then sized, and recorded, by a read)
      const { fields } = await indexOf(ctx, "g");
      const recorded = [...c.weeks.keys()].filter((w) => fields.has(`n:${K.bucket(ctx.prefix, "g", "week", w)}`));
      const missing = [...c.weeks.keys()]
        .filter((w) => !fields.has(`n:${K.bucket(ctx.prefix, "g", "week", w)}`))
        .map((w) => (w - first) / WEEK);
      expect(recorded.length + missing.length).toBe(c.weeks.size);
      expect(missing.filter((k) => k !== 0 && k !== 29)).toEqual([]);
      // and reads of every kind over them answer as the model
      const end = first + 30 * WEEK - 1;
      for (const kind of KINDS)
        for (const agg of AGGS) {
          const n = await readCheck({ ...ctx, now: end }, c, kind, agg, first, first + 29 * WEEK - 1, "m3", "lag");
          expect(n).toBeLessThanOrEqual(MAX_READ_COMMANDS);
        }
    },
    300_000,
  );
});
