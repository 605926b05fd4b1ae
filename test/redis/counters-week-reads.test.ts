/**
 * Issue 15 for `week` counters: a read over up to 400 days (at most 59 week keys) costs at most 60
 * commands, every aggregate and read kind, answered as a model of the weeks says. Week counters keep
 * no rollups; what bounds their union without a ZCARD a week is each week's size record (index field
 * `n:<key>`, docs/counters.md "Week size records"), an upper bound of its members that writes keep
 * and reads sum. Counts are exact (the local Upstash server counts the commands of one client).
 */
import { describe, expect, it } from "vitest";
import type { Ctx } from "../../src/context.ts";
import {
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
import { ValidationError } from "../../src/errors.ts";
import { DAY, periodStart } from "../../src/time.ts";
import { command, resetStats, statsOf } from "../helpers/upstash-rest.ts";
import { ascending, NOW, unionOf, WEEK, weekCounters, type WeekModel } from "../helpers/week-counters.ts";

const { lib, target, tag: TAG, counted, measure, warm } = weekCounters("cweek", 30_000);
const THIS_WEEK = periodStart("week", NOW);

type Model = WeekModel;

function add(model: Model, week: number, member: string, by: number) {
  let m = model.get(week);
  if (!m) model.set(week, (m = new Map()));
  m.set(member, (m.get(member) ?? 0) + by);
}

/** Writes `members(week)` into each week from..to, each when that week is current (its Wednesday). */
async function writeWeekly(ctx: Ctx, name: string, weeks: number[], members: (week: number) => IncrItem[]) {
  const model: Model = new Map();
  for (const week of weeks) {
    const items = members(week);
    for (let s = 0; s < items.length; s += 1000)
      await increment({ ...ctx, now: Math.min(week + 2 * DAY, NOW) }, name, items.slice(s, s + 1000));
    for (const i of items) add(model, week, i.member, i.by ?? 1);
  }
  return model;
}

const weeksBetween = (from: number, to: number) => {
  const out: number[] = [];
  for (let w = periodStart("week", from); w <= periodStart("week", to); w += WEEK) out.push(w);
  return out;
};

/** Every read kind and aggregate over from..to, checked against the model; returns the commands of each. */
async function readAll(ctx: Ctx, name: string, model: Model, from: number, to: number) {
  const counts: Record<string, number> = {};
  const range = { period: "week" as const, from, to };
  const first = periodStart("week", from);
  const last = periodStart("week", to);
  for (const agg of ["sum", "min", "max"] as const) {
    const u = ascending(unionOf(model, first, last, agg));
    const opts = { ...range, aggregate: agg };
    const top = await measure((c) => ranked(c, name, "top", 5, opts), ctx);
    counts[`top ${agg}`] = top.commands;
    expect(top.got.ok, String(!top.got.ok && top.got.error)).toBe(true);
    if (top.got.ok)
      expect(top.got.value.items.map((i) => [i.member, i.score])).toEqual(
        [...u]
          .reverse()
          .slice(0, 5)
          .map((i) => [i.member, i.score]),
      );
    const bottom = await measure((c) => ranked(c, name, "bottom", 5, opts), ctx);
    counts[`bottom ${agg}`] = bottom.commands;
    if (bottom.got.ok)
      expect(bottom.got.value.items.map((i) => [i.member, i.score])).toEqual(
        u.slice(0, 5).map((i) => [i.member, i.score]),
      );
    else throw bottom.got.error;
    const probe = u[Math.floor(u.length / 2)]!;
    const member = await measure((c) => memberOf(c, name, probe.member, opts), ctx);
    counts[`member ${agg}`] = member.commands;
    if (!member.got.ok) throw member.got.error;
    expect(member.got.value.score).toBe(probe.score);
    expect(member.got.value.rank).toBe(u.length - u.indexOf(probe));
    const rng = await measure((c) => scoreRange(c, name, { ...opts, min: "-inf", max: "+inf", limit: 3 }), ctx);
    counts[`range ${agg}`] = rng.commands;
    if (!rng.got.ok) throw rng.got.error;
    expect(rng.got.value.count).toBe(u.length);
    const all = await measure((c) => sorted(c, name, { ...opts, by: "score" }), ctx);
    counts[`sorted ${agg}`] = all.commands;
    if (!all.got.ok) throw all.got.error;
    expect(all.got.value.items).toEqual(u);
  }
  return counts;
}

const small = (week: number): IncrItem[] =>
  ["a", "b", "c", "d"].map((m, j) => ({ member: m, by: 1 + ((week / WEEK + j * 5) % 11), period: "week" as const }));

describe("week reads over 400 days", () => {
  it("a counter written every week: every read of 52, 58 or 59 weeks costs at most 60 commands", async () => {
    const ctx = lib.ctx(NOW, "weekly");
    await warm(ctx);
    const weeks = weeksBetween(NOW - 407 * DAY, NOW);
    expect(weeks).toHaveLength(60);
    const model = await writeWeekly(ctx, "w", weeks, small);
    const ranges: [string, number, number][] = [
      ["59 ending now", NOW - 400 * DAY, NOW],
      ["58 finished", NOW - 400 * DAY, NOW - WEEK],
      ["59 finished", THIS_WEEK - WEEK - 400 * DAY + 12 * 3600_000, THIS_WEEK - WEEK + 12 * 3600_000],
      ["52 ending now", NOW - 51 * WEEK, NOW],
    ];
    const all: Record<string, Record<string, number>> = {};
    for (const [label, from, to] of ranges) {
      // twice: the first read builds the cache slot, the second reads it
      all[label] = await readAll(ctx, "w", model, from, to);
      all[`${label}, again`] = await readAll(ctx, "w", model, from, to);
    }
    console.log("week reads, weekly counter", JSON.stringify(all));
    for (const counts of Object.values(all)) for (const n of Object.values(counts)) expect(n).toBeLessThanOrEqual(60);
  });
});

/** The size records of a counter's week keys (index fields `n:`), and each key's ZCARD. */
async function records(ctx: Ctx, name: string, weeks: number[]) {
  const out: { week: number; listed: boolean; record: number | null; card: number }[] = [];
  for (const week of weeks) {
    const key = K.bucket(ctx.prefix, name, "week", week);
    const [listed, record] = await command<[string | null, string | null]>(
      target,
      "HMGET",
      K.index(ctx.prefix, name),
      `b:${key}`,
      `n:${key}`,
    );
    const card = await command<number>(target, "ZCARD", key);
    out.push({ week, listed: listed !== null, record: record === null ? null : Number(record), card });
  }
  return out;
}

describe("week size records", () => {
  it("a write creating a week records the week before it (one ZCARD); steady writes cost what they did", async () => {
    const ctx = lib.ctx(NOW, "writes");
    await warm(ctx);
    const w0 = THIS_WEEK - 2 * WEEK;
    const at = (t: number) => ({ ...ctx, redis: counted, now: t });
    const cost = async (t: number, items: IncrItem[]) => {
      await resetStats(target, TAG);
      await increment(at(t), "c", items);
      return (await statsOf(target, TAG)).byCommand;
    };
    await increment({ ...ctx, redis: counted, now: w0 + DAY }, "warm", [{ member: "a", period: "week" }]);
    await cost(w0 + DAY, [{ member: "a", period: "week" }]);
    await cost(w0 + DAY + 61_000, [{ member: "b", period: "week" }]);
    // steady: HMGET, ZINCRBY (and the EVALSHA); a new member the same
    expect(await cost(w0 + DAY + 62_000, [{ member: "a", period: "week" }])).toEqual({
      evalsha: 1,
      hmget: 1,
      zincrby: 1,
    });
    expect(await cost(w0 + DAY + 63_000, [{ member: "c", period: "week" }])).toEqual({
      evalsha: 1,
      hmget: 1,
      zincrby: 1,
    });
    // the next week's first touch: + one ZCARD of the week before, its record in the HSET it pays anyway
    const first = await cost(w0 + WEEK + DAY, [{ member: "a", period: "week" }]);
    expect(first.zcard).toBe(1);
    expect((await records(ctx, "c", [w0, w0 + WEEK])).map((r) => [r.record, r.card])).toEqual([
      [3, 3],
      [null, 1],
    ]);
    // a late write into the recorded week: its record rises by the new members, in the HSET of
    // the generation a late write pays anyway (no command more than before)
    const late = await cost(w0 + WEEK + DAY + 61_000, [
      { member: "d", period: "week", at: w0 + DAY },
      { member: "a", period: "week", at: w0 + DAY },
      { member: "d", period: "week", at: w0 + DAY },
    ]);
    // the first write of a new minute refreshes the registry stamp: ZREVRANGE (the registry's
    // highest, review 26) and ZADD
    expect(late).toEqual({ evalsha: 1, hmget: 1, zincrby: 3, incr: 1, hset: 1, zrevrange: 1, zadd: 1 });
    expect((await records(ctx, "c", [w0]))[0]).toMatchObject({ record: 4, card: 4 });
    // in a batch with plain and day items (the week's entry not the first of the script's keys)
    await increment(at(w0 + WEEK + DAY + 61_500), "c", [
      { member: "p" },
      { member: "p", period: "day", at: w0 + DAY },
      { member: "e", period: "week", at: w0 + DAY },
    ]);
    expect((await records(ctx, "c", [w0]))[0]).toMatchObject({ record: 5, card: 5 });
    // a finished week a late write creates records what it adds
    await increment(at(w0 + WEEK + DAY + 62_000), "c", [
      { member: "x", period: "week", at: w0 - 3 * WEEK },
      { member: "y", period: "week", at: w0 - 3 * WEEK },
    ]);
    expect((await records(ctx, "c", [w0 - 3 * WEEK]))[0]).toMatchObject({ record: 2, card: 2 });
  });

  it.each([11, 12, 13])(
    "records never fall below a week's size: late writes, lagging clocks, member deletes (seed %i)",
    async (first) => {
      const ctx = lib.ctx(NOW, `bounds${first}`);
      let seed = first;
      const rnd = () => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed / 2 ** 31;
      };
      const weeks = weeksBetween(NOW - 20 * WEEK, NOW);
      let t = weeks[0]! + DAY;
      for (let step = 0; step < 400; step++) {
        t = Math.min(NOW, t + Math.floor(rnd() * 2 * DAY));
        const r = rnd();
        const member = `m${Math.floor(rnd() * 12)}`;
        const current = periodStart("week", t);
        const past = weeks.filter((w) => w <= current);
        const week = past[Math.floor(rnd() * past.length)]!;
        if (r < 0.55) {
          await increment({ ...ctx, now: t }, "b", [{ member, by: rnd() < 0.2 ? -1 : 1, period: "week" }]);
        } else if (r < 0.8) {
          await increment({ ...ctx, now: t }, "b", [
            { member, by: 1, period: "week", at: Math.min(week + 3 * DAY, t) },
          ]);
        } else if (r < 0.88) {
          // a Worker whose clock lags: it writes into a week that has ended as if current
          const lag = periodStart("week", t) - 30_000;
          if (lag > weeks[0]!) await increment({ ...ctx, now: lag }, "b", [{ member, period: "week" }]);
        } else if (r < 0.96) {
          await deleteMember({ ...ctx, now: t }, "b", member, { period: "week", from: week, to: week + WEEK - 1 });
        } else {
          // a ttl'd write into the current week (its key may expire and restart later)
          await increment({ ...ctx, now: t }, "b", [{ member, period: "week", ttl: 2 * 86400 }]);
        }
      }
      const rs = await records(ctx, "b", weeks);
      for (const r of rs)
        if (r.listed && r.record !== null) expect(r.record, JSON.stringify(r)).toBeGreaterThanOrEqual(r.card);
      // most finished weeks have one
      expect(rs.filter((r) => r.listed && r.record !== null).length).toBeGreaterThan(10);
    },
  );
});

describe("a recorded week written again", () => {
  it("restarts from the members a late write adds when it expired; a lagging clock raises it", async () => {
    const ctx = lib.ctx(NOW, "restart");
    const w = THIS_WEEK - 3 * WEEK;
    for (const name of ["late", "lag"]) {
      // written with a ttl of 10 days while current, then recorded by the next week's first write
      await increment({ ...ctx, now: w + DAY }, name, [
        { member: "a", period: "week", ttl: 10 * 86400 },
        { member: "b", period: "week", ttl: 10 * 86400 },
      ]);
      await increment({ ...ctx, now: w + WEEK + DAY }, name, [{ member: "a", period: "week" }]);
      expect((await records(ctx, name, [w]))[0]).toMatchObject({ record: 2, card: 2 });
    }
    // it expires (Redis would have dropped it by then: the virtual clock is past its expiry)
    await command(target, "DEL", K.bucket(ctx.prefix, "late", "week", w));
    await increment({ ...ctx, now: w + 12 * DAY }, "late", [{ member: "c", period: "week", at: w + DAY }]);
    expect((await records(ctx, "lag", [w]))[0]).toMatchObject({ listed: true, record: 2, card: 2 });
    expect((await records(ctx, "late", [w]))[0]).toMatchObject({ listed: true, record: 1, card: 1 });
    // a Worker whose clock lags puts the week in progress: not a late write, one HSET more
    await resetStats(target, TAG);
    await increment({ ...ctx, redis: counted, now: w + WEEK - 30_000 }, "lag", [{ member: "c", period: "week" }]);
    expect((await statsOf(target, TAG)).byCommand).toMatchObject({ hset: 1, zincrby: 1 });
    expect((await records(ctx, "lag", [w]))[0]).toMatchObject({ listed: true, record: 3, card: 3 });
  });
});

describe("week reads in other states", () => {
  const from = NOW - 400 * DAY;
  const weeks = weeksBetween(from, NOW);

  it("weeks written before size records: the first long read sizes them (as before) and records them, the next reads do not", async () => {
    const ctx = lib.ctx(NOW, "old");
    await warm(ctx);
    const model = await writeWeekly(ctx, "o", weeks, small);
    // what an index written before this release holds: no n: fields
    const index = K.index(ctx.prefix, "o");
    await command(target, "HDEL", index, ...weeks.map((w) => `n:${K.bucket(ctx.prefix, "o", "week", w)}`));
    const to = NOW - WEEK;
    const first = await measure((c) => ranked(c, "o", "top", 5, { period: "week", from, to }), ctx);
    expect(first.got.ok).toBe(true);
    // 58 finished weeks: EVALSHA, HMGET, HMGET, 58 ZCARDs, ZUNIONSTORE, EXPIRE, HSET (the records
    // ride in it), ZRANGE
    expect(first.by.zcard).toBe(58);
    expect(first.commands).toBe(65);
    expect((await records(ctx, "o", weeks.slice(0, 58))).every((r) => r.record === r.card)).toBe(true);
    const counts = await readAll(ctx, "o", model, from, NOW);
    for (const n of Object.values(counts)) expect(n).toBeLessThanOrEqual(60);
  });

  it("weeks written out of order (late writes) record themselves", async () => {
    const ctx = lib.ctx(NOW, "backfill");
    await warm(ctx);
    const model: Model = new Map();
    // newest first, then every other week again
    for (const week of [...weeks].reverse()) {
      const items = small(week).map((i) => ({ ...i, at: Math.max(Math.min(week + 3 * DAY, NOW), from) }));
      await increment(ctx, "f", items);
      for (const i of items) add(model, week, i.member, i.by ?? 1);
    }
    for (const week of weeks.filter((_, i) => i % 2 === 0)) {
      const items = [
        { member: `late${week % 3}`, by: 2, period: "week" as const, at: Math.max(Math.min(week + DAY, NOW), from) },
      ];
      await increment(ctx, "f", items);
      for (const i of items) add(model, week, i.member, i.by);
    }
    const rs = await records(ctx, "f", weeks);
    // every finished week has its exact size; the current one none
    expect(rs.slice(0, -1).every((r) => r.record === r.card)).toBe(true);
    expect(rs.at(-1)!.record).toBeNull();
    const counts = await readAll(ctx, "f", model, from, NOW);
    for (const n of Object.values(counts)) expect(n).toBeLessThanOrEqual(60);
  });

  it("every other week written: the weeks no later week recorded are sized once, then recorded by the read", async () => {
    const ctx = lib.ctx(NOW, "gaps");
    await warm(ctx);
    const model = await writeWeekly(
      ctx,
      "g",
      weeks.filter((_, i) => i % 2 === 0),
      small,
    );
    const finished = { period: "week" as const, from, to: NOW - WEEK };
    const first = await measure((c) => ranked(c, "g", "top", 5, finished), ctx);
    // 29 finished weeks written, none followed by a written week: a ZCARD each
    expect(first.by.zcard).toBe(29);
    expect(first.commands).toBeLessThanOrEqual(60);
    const again = await readAll(ctx, "g", model, from, NOW);
    for (const n of Object.values(again)) expect(n).toBeLessThanOrEqual(60);
  });

  it("a counter past the union bound: refusals and member reads, as before", async () => {
    const ctx = lib.ctx(NOW, "large");
    await warm(ctx);
    // 360 members every week: 59 × 360 = 21,240 entries, past MAX_UNION_MEMBERS (a week union has no member bound)
    const members = Array.from({ length: 360 }, (_, i) => `u${i}`);
    await writeWeekly(ctx, "l", weeks, (week) =>
      members.map((member, i) => ({ member, by: 1 + ((i + week / WEEK) % 5), period: "week" as const })),
    );
    expect(59 * 360).toBeGreaterThan(MAX_UNION_MEMBERS);
    const range = { period: "week" as const, from, to: NOW - WEEK };
    const counts: Record<string, number> = {};
    const top = await measure((c) => ranked(c, "l", "top", 5, range), ctx);
    counts.top = top.commands;
    expect(!top.got.ok && top.got.error).toBeInstanceOf(ValidationError);
    const rng = await measure((c) => scoreRange(c, "l", range), ctx);
    counts.range = rng.commands;
    expect(!rng.got.ok && rng.got.error).toBeInstanceOf(ValidationError);
    const member = await measure((c) => memberOf(c, "l", "u7", range), ctx);
    counts.member = member.commands;
    expect(member.got.ok && member.got.value.rank).toBeNull();
    // 52 weeks of the same: 52 × 360 = 18,720 entries, within the bound from the records alone
    const short = { period: "week" as const, from: NOW - 52 * WEEK, to: NOW - WEEK };
    const top52 = await measure((c) => ranked(c, "l", "top", 5, short), ctx);
    counts.top52 = top52.commands;
    expect(top52.got.ok).toBe(true);
    const open = { period: "week" as const, from };
    const topOpen = await measure((c) => ranked(c, "l", "top", 5, open), ctx);
    counts.topOpen = topOpen.commands;
    expect(!topOpen.got.ok && topOpen.got.error).toBeInstanceOf(ValidationError);
    const sortedOpen = await measure((c) => sorted(c, "l", open), ctx);
    counts.sortedOpen = sortedOpen.commands;
    expect(!sortedOpen.got.ok && sortedOpen.got.error).toBeInstanceOf(ValidationError);
    console.log("week reads past the bound", JSON.stringify(counts));
    // showing the union passes the bound would take a ZCARD a week until it does (56 × 360 >
    // 20,000: 59 commands, 61 with weeks of ~345): it stops at MAX_SIZE_READS, EVALSHA, HMGET,
    // HMGET, 44 ZCARDs, and refuses; a member read then looks the member up in one union of 55
    // weeks and a ZSCORE of the other 3 (was a ZSCORE a week, 117: counters-week-cap.test.ts)
    expect(counts).toEqual({ top: 47, range: 47, member: 53, top52: 7, topOpen: 47, sortedOpen: 47 });
  });
});
