/**
 * Review 13: `period=week` reads past the union bound (issue 15, merged from wt-weekcap): the
 * ZCARD budget of the size records (MAX_SIZE_READS), the member read's lookup plan (one union of
 * the smallest weeks within 20,000 entries and a ZSCORE of each other week: lookupPlan in
 * src/counters/week-size.ts) and the week top-N's share of the read's 60 commands, against an
 * exact model through the library on real Redis (the local Upstash server counts the commands).
 *
 * 1. Seeded runs (dev/prng.ts mulberry32, seeds 1301–1304) near the bound: 58 finished weeks of ~300–420 members
 *    drawn from a shared pool, then rounds of reads of every kind (top, bottom, range, sorted,
 *    member present/absent) with sum/min/max over finished ranges and ranges ending now, and
 *    mutations between them (late writes of new members into past weeks, member deletes over
 *    ranges of weeks, writes of the current week). Every answer equals the model's; every refusal
 *    is one the docs allow (entries really past 20,000, or a member whose exact lookups would
 *    pass 60); every read ≤ 60 commands; after every step each week's record is ≥ its ZCARD (a
 *    refusal's saved sizes do not go stale under the writes that follow).
 * 2. Loose records (a ttl'd week that expired before the cursor trimmed its field keeps its
 *    record: docs/counters.md "Records are exact but for … a week expired before its field was
 *    trimmed"): the member read's ZCARD budget is computed once, from the records, so it can spend
 *    44 ZCARDs and then refuse lookups that alone take 16 commands (finding 1).
 * 3. A range ending now whose finished weeks fit (cached) and pass the bound only with the current
 *    week: member reads exact from the cached union and the current week, the rest refused.
 * 4. The same through HTTP (the real Hono app in Node, time injected: workerd cannot inject it):
 *    member scores equal the library's, refusals 400 `too_many_entries` in the envelope.
 * 5. Fractional scores past the bound: the member read's score (one union and ZSCOREs combined in
 *    Lua) equals Redis' own union of the same weeks, for sum, min and max.
 */
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../dev/prng.ts";
import { createApp } from "../../functions/app.ts";
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
import { MAX_READ_COMMANDS, MAX_UNION_MEMBERS } from "../../src/counters/limits.ts";
import { NotFoundError, ValidationError } from "../../src/errors.ts";
import { DAY, periodStart } from "../../src/time.ts";
import { command } from "../helpers/upstash-rest.ts";
import {
  ascending,
  cardsLua,
  FROM,
  NOW,
  unionOf,
  WEEK,
  weekCounters,
  weeks,
  type Agg,
  type WeekModel,
} from "../helpers/week-counters.ts";

const { lib, target, measure, warm } = weekCounters("r13week", 60_000);

type Model = WeekModel;

/** Each week's ZCARD and record (n:), in the order of `weeks`. */
async function sizes(ctx: Ctx, name: string) {
  const keys = weeks.map((w) => K.bucket(ctx.prefix, name, "week", w));
  const cards = (await command<number[]>(target, "EVAL", cardsLua, keys.length, ...keys)).map(Number);
  const recs = (
    await command<(string | null)[]>(target, "HMGET", K.index(ctx.prefix, name), ...keys.map((k) => `n:${k}`))
  ).map((r) => (r === null ? null : Number(r)));
  return { keys, cards, recs };
}

/** lookupPlan of week-size.ts over exact sizes: the commands a member read's lookups take. */
function exactLookups(cards: number[], unsized: number) {
  const sorted = [...cards].sort((a, b) => a - b);
  let sum = 0;
  let group = 0;
  for (const c of sorted) {
    if (sum + c > MAX_UNION_MEMBERS) continue;
    sum += c;
    group++;
  }
  if (group < 3) group = 0;
  return cards.length - group + unsized + (group > 0 ? 3 : 0);
}

function refusal(got: { ok: boolean; error?: unknown }) {
  expect(got.ok).toBe(false);
  const e = (got as { error: unknown }).error;
  expect(e).toBeInstanceOf(ValidationError);
  expect((e as ValidationError).code).toBe("too_many_entries");
  return (e as Error).message;
}

describe("week reads near the union bound against a seeded model", () => {
  for (const seed of [1301, 1302, 1303, 1304]) {
    it(`seed ${seed}: answers exact, refusals only where the docs allow, ≤ 60 commands, records ≥ ZCARD`, async () => {
      const rnd = mulberry32(seed);
      const int = (n: number) => Math.floor(rnd() * n);
      const ctx = lib.ctx(NOW, `s${seed}`);
      await warm(ctx);
      const model: Model = new Map();
      const add = (week: number, member: string, by: number) => {
        let m = model.get(week);
        if (!m) model.set(week, (m = new Map()));
        m.set(member, (m.get(member) ?? 0) + by);
      };
      // 58 finished weeks, each written while current: 300–420 members of a pool of 700, by 1–9
      for (const week of weeks.slice(0, 58)) {
        const n = 300 + int(121);
        const picked = new Set<number>();
        while (picked.size < n) picked.add(int(700));
        const items: IncrItem[] = [...picked].map((j) => ({ member: `p${j}`, by: 1 + int(9), period: "week" }));
        await increment({ ...ctx, now: week + 2 * DAY + int(DAY) }, "c", items);
        for (const it of items) add(week, it.member, it.by!);
      }
      const counts: number[] = [];
      const refusals: string[] = [];
      const wrongRefusals: string[] = [];
      const checkRecords = async (where: string) => {
        const s = await sizes(ctx, "c");
        s.recs.forEach((r, i) => {
          if (r !== null)
            expect(r, `${where}: record of week ${i} below its ZCARD`).toBeGreaterThanOrEqual(s.cards[i]!);
        });
        weeks.forEach((w, i) => expect(s.cards[i], `${where}: week ${i}`).toBe(model.get(w)?.size ?? 0));
        return s;
      };
      for (let round = 0; round < 5; round++) {
        for (let r = 0; r < 10; r++) {
          const endingNow = rnd() < 0.4;
          // 40–56 weeks (400 days at most), finished or ending now
          const span = 40 + int(17);
          const from = endingNow ? NOW - span * WEEK : NOW - (span + 1) * WEEK;
          const to = endingNow ? NOW : NOW - WEEK;
          const agg = (["sum", "min", "max"] as const)[int(3)]!;
          const kind = (["top", "bottom", "range", "sorted", "member", "member"] as const)[int(6)]!;
          const opts = { period: "week" as const, from, ...(endingNow ? {} : { to }), aggregate: agg };
          const u = unionOf(model, from, to, agg);
          const asc = ascending(u);
          const s = await sizes(ctx, "c");
          const inRange = weeks
            .map((w, i) => [w, i] as const)
            .filter(([w]) => w >= periodStart("week", from) && w <= periodStart("week", to));
          const entries = inRange.reduce((n, [, i]) => n + s.cards[i]!, 0);
          const label = `seed ${seed} round ${round}: ${kind} ${agg} ${span} weeks ${endingNow ? "ending now" : "finished"} (${entries} entries)`;
          const probe = rnd() < 0.15 ? "nobody" : `p${int(700)}`;
          const call = (c: Ctx): Promise<unknown> =>
            kind === "top" || kind === "bottom"
              ? ranked(c, "c", kind, 5, opts)
              : kind === "range"
                ? scoreRange(c, "c", opts)
                : kind === "sorted"
                  ? sorted(c, "c", opts)
                  : memberOf(c, "c", probe, opts);
          const got = await measure(call, ctx);
          counts.push(got.commands);
          expect(got.commands, label).toBeLessThanOrEqual(MAX_READ_COMMANDS);
          if (!got.got.ok && !(got.got.error instanceof NotFoundError)) {
            const msg = refusal(got.got);
            refusals.push(`${label}: ${msg.slice(0, 80)}`);
            if (kind === "member") {
              // refused only when the lookups alone (exact sizes) would pass 60 with the read's 4
              const lookups = exactLookups(
                inRange.filter(([w]) => w < periodStart("week", NOW)).map(([, i]) => s.cards[i]!),
                endingNow ? 1 : 0,
              );
              if (4 + lookups <= MAX_READ_COMMANDS) wrongRefusals.push(`${label}: ${msg}`);
            } else if (entries <= MAX_UNION_MEMBERS) wrongRefusals.push(`${label}: ${msg}`);
            continue;
          }
          if (kind === "member") {
            const want = u.get(probe);
            if (want === undefined) {
              expect(!got.got.ok && got.got.error, label).toBeInstanceOf(NotFoundError);
              continue;
            }
            if (!got.got.ok) throw got.got.error;
            const v = got.got.value as { score: number; rank: number | null; rankFromBottom: number | null };
            expect(v.score, label).toBe(want);
            if (v.rank !== null) {
              // ranks, when given, are those of the union (1-based, ties by member)
              const at = asc.findIndex((i) => i.member === probe);
              expect(v.rankFromBottom, label).toBe(at + 1);
              expect(v.rank, label).toBe(asc.length - at);
            }
            continue;
          }
          if (!got.got.ok) throw got.got.error;
          const pairs = (xs: { member: string; score: number }[]) => xs.map((i) => [i.member, i.score]);
          const value = got.got.value as { items: { member: string; score: number }[]; count?: number };
          if (kind === "top") expect(pairs(value.items), label).toEqual(pairs([...asc].reverse().slice(0, 5)));
          else if (kind === "bottom") expect(pairs(value.items), label).toEqual(pairs(asc.slice(0, 5)));
          else if (kind === "range") {
            // ascending from -inf, the first 100
            expect(value.count, label).toBe(u.size);
            expect(pairs(value.items), label).toEqual(pairs(asc.slice(0, 100)));
          } else expect(new Map(pairs(value.items) as [string, number][]), label).toEqual(u);
        }
        // mutations: a late write of new and old members into past weeks, a member delete over
        // whole weeks, a write of the current week
        for (let m = 0; m < 3; m++) {
          const week = weeks[1 + int(57)]!; // within 400 days of now
          const items: IncrItem[] = Array.from({ length: 5 + int(60) }, () => ({
            member: rnd() < 0.5 ? `late${int(200)}` : `p${int(700)}`,
            by: 1 + int(9),
            period: "week",
            at: week + int(WEEK),
          }));
          await increment(ctx, "c", items);
          for (const it of items) add(week, it.member, it.by!);
        }
        const victim = `p${int(700)}`;
        const a = int(58);
        const b = Math.min(57, a + int(30));
        await deleteMember(ctx, "c", victim, { period: "week", from: weeks[a]!, to: weeks[b]! + DAY });
        for (let i = a; i <= b; i++) model.get(weeks[i]!)?.delete(victim);
        const cur: IncrItem[] = Array.from({ length: 20 + int(200) }, () => ({
          member: `p${int(700)}`,
          by: 1 + int(9),
          period: "week",
        }));
        await increment(ctx, "c", cur);
        for (const it of cur) add(periodStart("week", NOW), it.member, it.by!);
        await checkRecords(`seed ${seed} after round ${round}`);
      }
      console.log(
        `review13 seed ${seed}: max commands ${Math.max(...counts)}, refusals ${refusals.length}\n${refusals.join("\n")}`,
      );
      expect(wrongRefusals).toEqual([]);
    }, 300_000);
  }
});

describe("loose records (weeks expired before their fields were trimmed)", () => {
  /**
   * 58 finished weeks: the first 54 held 4,500 members each and expired (their keys gone, their
   * fields and records of 4,500 left until the trim cursor passes: the state a ttl'd counter has
   * when its writes stop; simulated as review 12 does, by DEL, and the records as a 4,500-member
   * week leaves them), the last 4 hold 4,500 members each: 18,000 entries, within the bound.
   */
  async function build(ctx: Ctx, name: string) {
    await warm(ctx);
    const members = Array.from({ length: 4500 }, (_, j) => `m${j}`);
    const model: Model = new Map();
    for (const [i, week] of weeks.slice(0, 58).entries()) {
      const items: IncrItem[] =
        i < 54
          ? [{ member: "m0", period: "week" }]
          : members.map((member, j) => ({ member, by: 1 + ((i + j) % 7), period: "week" }));
      for (let s = 0; s < items.length; s += 1000)
        await increment({ ...ctx, now: week + 2 * DAY }, name, items.slice(s, s + 1000));
      if (i >= 54) model.set(week, new Map(items.map((it) => [it.member, it.by ?? 1])));
    }
    const index = K.index(ctx.prefix, name);
    for (const week of weeks.slice(0, 54)) {
      const key = K.bucket(ctx.prefix, name, "week", week);
      await command(target, "DEL", key);
      await command(target, "HSET", index, `n:${key}`, "4500");
    }
    return { model, range: { period: "week" as const, from: weeks[0]!, to: weeks[57]! + DAY } };
  }

  it("a top read is refused naming the 44 ZCARDs (records overstating by more than 44 can show, as the docs say); its saved sizes let the next read answer exactly", async () => {
    const ctx = lib.ctx(NOW, "loose-top");
    const { model, range } = await build(ctx, "x");
    const first = await measure((c) => ranked(c, "x", "top", 3, range), ctx);
    expect(refusal(first.got)).toMatch(/at most 44 ZCARDs/);
    expect(first.commands).toBeLessThanOrEqual(MAX_READ_COMMANDS);
    // the sizes it measured are saved exact (0 for the expired weeks, 4,500 for the live ones)
    const s = await sizes(ctx, "x");
    s.recs.slice(0, 58).forEach((r, i) => expect(r).toBeGreaterThanOrEqual(s.cards[i]!));
    expect(s.recs.slice(0, 58).filter((r) => r === 0).length).toBeGreaterThanOrEqual(40);
    const again = await measure((c) => ranked(c, "x", "top", 3, range), ctx);
    if (!again.got.ok) throw again.got.error;
    const want = [...ascending(unionOf(model, range.from, range.to, "sum"))].reverse().slice(0, 3);
    expect(again.got.value.items.map((i) => [i.member, i.score])).toEqual(want.map((i) => [i.member, i.score]));
    expect(again.commands).toBeLessThanOrEqual(MAX_READ_COMMANDS);
  }, 120_000);

  /**
   * FINDING 1 (low): the member read's ZCARD budget (sizeOf's budgetAfter, resolve.ts) is
   * computed once, from the records before any recorded week is measured. With loose records the
   * plan from records takes 57 lookups (4 weeks of "4,500" in one union, 54 ZSCOREs), which cannot
   * fit, so the budget is the full 44; the 44 ZCARDs then show most weeks empty, and the exact plan
   * takes 16 lookups, yet 1 + 3 + 44 + HSET + 16 = 65 > 60 and the read is refused (in 48 commands),
   * "looking the member up … would take 65 commands". docs/counters.md: a member read is refused "when the
   * lookups alone would pass 60"; here they take 16 (and the union even fits the bound: 18,000
   * entries). A retry answers (the sizes were saved), so only the first read is refused.
   * Smallest fix: in entriesOfWeeks, re-evaluate budgetAfter(measured) before each recorded ZCARD
   * (the plan only shrinks as measured sizes replace records), so the ZCARDs stop where the
   * lookups of the sizes known so far still fit in 60.
   * Kept as a KNOWN LIMIT (docs/counters.md "Week size records", 2026-11-27): that fix does not
   * bring it under 60. A ZCARD costs what the ZSCORE it may spare costs, so each one measured
   * moves at most one lookup off the plan: with the expired weeks measured first (ties of 4,500
   * in any order) the total stays over 60 at every stopping point (the fix tried: refused at once,
   * naming 63), and only measuring all 58 (the
   * union then fits) would answer, in more than 60. The retry answers (test below).
   */
  it.fails(
    "the first member read of those weeks answers exactly (lookups of 16 commands fit in 60)",
    async () => {
      const ctx = lib.ctx(NOW, "loose-member");
      const { model, range } = await build(ctx, "x");
      const r = await measure((c) => memberOf(c, "x", "m7", range), ctx);
      expect(r.commands).toBeLessThanOrEqual(MAX_READ_COMMANDS);
      if (!r.got.ok) throw r.got.error;
      expect(r.got.value.score).toBe(unionOf(model, range.from, range.to, "sum").get("m7"));
    },
    120_000,
  );

  it("the member read refused as above: its message, and the retry answers exactly within 60", async () => {
    const ctx = lib.ctx(NOW, "loose-member2");
    const { model, range } = await build(ctx, "x");
    const r = await measure((c) => memberOf(c, "x", "m7", range), ctx);
    console.log(`review13 loose member read: ${r.commands} commands`, r.got.ok ? "answered" : String(r.got.error));
    if (!r.got.ok) {
      expect(refusal(r.got)).toMatch(/would take \d+ commands; a read makes at most 60/);
      expect(r.commands).toBeLessThanOrEqual(MAX_READ_COMMANDS);
    }
    const again = await measure((c) => memberOf(c, "x", "m7", range), ctx);
    if (!again.got.ok) throw again.got.error;
    expect(again.got.value.score).toBe(unionOf(model, range.from, range.to, "sum").get("m7"));
    expect(again.commands).toBeLessThanOrEqual(MAX_READ_COMMANDS);
  }, 120_000);
});

describe("fractional scores past the bound", () => {
  it("a member read past the bound gives the score the range's union gives (sum of fractional increments)", async () => {
    const ctx = lib.ctx(NOW, "frac");
    await warm(ctx);
    // 58 weeks of 400 members (23,200 entries: past the bound), "f" in each with a fractional by
    const bys = [0.1, 0.2, 0.7, 1.3, 0.01, 2.9, 0.3];
    for (const [i, week] of weeks.slice(0, 58).entries()) {
      const items: IncrItem[] = Array.from({ length: 399 }, (_, j) => ({
        member: `g${j}`,
        by: 1 + ((i + j) % 5),
        period: "week",
      }));
      items.push({ member: "f", by: bys[i % bys.length]!, period: "week" });
      await increment({ ...ctx, now: week + 2 * DAY }, "f", items);
    }
    const range = { period: "week" as const, from: weeks[0]!, to: weeks[57]! + DAY };
    const results: Record<Agg, number[]> = { sum: [], min: [], max: [] };
    for (const agg of ["sum", "min", "max"] as const) {
      const r = await measure((c) => memberOf(c, "f", "f", { ...range, aggregate: agg }), ctx);
      if (!r.got.ok) throw r.got.error;
      expect(r.got.value.rank).toBeNull();
      expect(r.commands).toBeLessThanOrEqual(MAX_READ_COMMANDS);
      // what the union of the same weeks gives (Redis' own ZUNIONSTORE, as a read within the bound
      // would): one EVAL over the 58 keys into a key of this prefix
      const keys = weeks.slice(0, 58).map((w) => K.bucket(ctx.prefix, "f", "week", w));
      const dest = `${ctx.prefix}:review13-union`;
      const union = await command<string>(
        target,
        "EVAL",
        `local a = {'ZUNIONSTORE', KEYS[1], #KEYS - 1} for i = 2, #KEYS do a[#a + 1] = KEYS[i] end a[#a + 1] = 'AGGREGATE' a[#a + 1] = ARGV[2] redis.call(unpack(a)) local s = redis.call('ZSCORE', KEYS[1], ARGV[1]) redis.call('DEL', KEYS[1]) return s`,
        keys.length + 1,
        dest,
        ...keys,
        "f",
        agg.toUpperCase(),
      );
      results[agg] = [r.got.value.score, Number(union)];
      expect(r.got.value.score, agg).toBe(Number(union));
    }
    console.log("review13 fractional past the bound (member read, union):", JSON.stringify(results));
    expect(results.min[0]).toBe(0.01);
    expect(results.max[0]).toBe(2.9);
    const sum = weeks.slice(0, 58).reduce((n, _, i) => n + bys[i % bys.length]!, 0);
    expect(results.sum[0]).toBeCloseTo(sum, 9);
  }, 120_000);
});

describe("a range ending now: a cached union of 17,410 members and a current week of 3,000", () => {
  it("member reads exact (sum/min/max) from the cached union and the current week, other unions refused naming the bound, top exact or refused, ≤ 60; after a late write and a member delete too", async () => {
    const ctx = lib.ctx(NOW, "head");
    await warm(ctx);
    const model: Model = new Map();
    const put = (week: number, items: IncrItem[]) => {
      let m = model.get(week);
      if (!m) model.set(week, (m = new Map()));
      for (const it of items) m.set(it.member, (m.get(it.member) ?? 0) + (it.by ?? 1));
    };
    // 58 finished weeks of 310: 300 members of their own and h0..h9 (17,980 entries: fits, cached
    // as a union of 17,410 members), the current week 3,000 (h0..h2999): 20,410 with it, past
    for (const [i, week] of weeks.slice(0, 58).entries()) {
      const items: IncrItem[] = [
        ...Array.from({ length: 300 }, (_, j) => ({
          member: `d${i}-${j}`,
          by: 1 + ((i + j) % 9),
          period: "week" as const,
        })),
        ...Array.from({ length: 10 }, (_, j) => ({
          member: `h${j}`,
          by: 1 + ((i * 5 + j) % 9),
          period: "week" as const,
        })),
      ];
      await increment({ ...ctx, now: week + 2 * DAY }, "h", items);
      put(week, items);
    }
    const current = periodStart("week", NOW);
    for (let s = 0; s < 3000; s += 1000) {
      const items: IncrItem[] = Array.from({ length: 1000 }, (_, j) => ({
        member: `h${s + j}`,
        by: 1 + ((s + j) % 4),
        period: "week",
      }));
      await increment(ctx, "h", items);
      put(current, items);
    }
    const range = { period: "week" as const, from: FROM };
    const check = async (where: string) => {
      for (const agg of ["sum", "min", "max"] as const) {
        const u = unionOf(model, weeks[0]!, NOW, agg);
        for (const member of ["h0", "h9", "d5-7", "h2999", "late1", "nobody"]) {
          const r = await measure((c) => memberOf(c, "h", member, { ...range, aggregate: agg }), ctx);
          expect(r.commands, `${where} ${member} ${agg}`).toBeLessThanOrEqual(MAX_READ_COMMANDS);
          const want = u.get(member);
          if (want === undefined) {
            expect(!r.got.ok && r.got.error, `${where} ${member} ${agg}`).toBeInstanceOf(NotFoundError);
            continue;
          }
          if (!r.got.ok) throw r.got.error;
          // past the bound (cached union + current week): exact score, ranks null
          expect(r.got.value, `${where} ${member} ${agg}`).toMatchObject({ score: want, rank: null });
        }
        const rng = await measure((c) => scoreRange(c, "h", { ...range, aggregate: agg }), ctx);
        expect(rng.commands).toBeLessThanOrEqual(MAX_READ_COMMANDS);
        // 17,410 + 3,000 members: past the bound, refused naming it
        expect(refusal(rng.got)).toMatch(/too big to union: its keys hold at least 204\d\d bucket entries/);
        const srt = await measure((c) => sorted(c, "h", { ...range, aggregate: agg }), ctx);
        expect(srt.commands).toBeLessThanOrEqual(MAX_READ_COMMANDS);
        expect(refusal(srt.got)).toMatch(/too big to union/);
        const bot = await measure((c) => ranked(c, "h", "bottom", 3, { ...range, aggregate: agg }), ctx);
        expect(bot.commands).toBeLessThanOrEqual(MAX_READ_COMMANDS);
        expect(refusal(bot.got)).toMatch(/too big to union/);
        const top = await measure((c) => ranked(c, "h", "top", 3, { ...range, aggregate: agg }), ctx);
        expect(top.commands).toBeLessThanOrEqual(MAX_READ_COMMANDS);
        if (top.got.ok) {
          const want = [...ascending(u)].reverse().slice(0, 3);
          expect(top.got.value.items.map((i) => [i.member, i.score])).toEqual(want.map((i) => [i.member, i.score]));
        } else expect(refusal(top.got)).toMatch(/too big to union/);
      }
    };
    await check("first");
    // a late write into week 10 (moves the cache generation on: the cached union is rebuilt)
    const late: IncrItem[] = [
      { member: "late1", by: 7, period: "week", at: weeks[10]! + DAY },
      { member: "h0", by: 100, period: "week", at: weeks[10]! + DAY },
    ];
    await increment(ctx, "h", late);
    put(weeks[10]!, late);
    await check("after a late write");
    // a member delete over weeks 0..20
    await deleteMember(ctx, "h", "h0", { period: "week", from: weeks[0]!, to: weeks[20]! + DAY });
    for (const w of weeks.slice(0, 21)) model.get(w)!.delete("h0");
    await check("after a member delete");
  }, 120_000);
});

describe("the same reads through HTTP (the real Hono app in Node on the same Redis)", () => {
  const KEYS = { ingest: "review13-ingest-key-01", read: "review13-read-key-0001", admin: "review13-admin-key-001" };
  const app = createApp({ now: () => NOW });
  const env = lib.appEnv(KEYS);
  const get = async (path: string) => {
    const res = await app.request(
      new Request(`http://edgestats.test${path}`, { headers: { Authorization: `Bearer ${KEYS.read}` } }),
      undefined,
      env,
    );
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it("58 weeks of 360: member reads equal the library's (ranks null), refusals are 400 too_many_entries in the envelope naming the limits", async () => {
    const ctx = lib.ctx(NOW);
    const members = Array.from({ length: 360 }, (_, j) => `u${j}`);
    for (const [i, week] of weeks.slice(0, 58).entries())
      await increment(
        { ...ctx, now: week + 2 * DAY },
        "httpw",
        members.map((member, j) => ({ member, by: 1 + ((i * 3 + j) % 7), period: "week" as const })),
      );
    const iso = (t: number) => new Date(t).toISOString();
    const q = (agg: Agg) => `period=week&from=${iso(FROM)}&to=${iso(NOW - WEEK)}&aggregate=${agg}`;
    for (const agg of ["sum", "min", "max"] as const) {
      const lib13 = await memberOf(ctx, "httpw", "u7", { period: "week", from: FROM, to: NOW - WEEK, aggregate: agg });
      const http = await get(`/v1/counters/httpw/members/u7?${q(agg)}`);
      expect(http.status, agg).toBe(200);
      expect(http.body, agg).toMatchObject({ member: "u7", score: lib13.score, rank: null, rankFromBottom: null });
      const absent = await get(`/v1/counters/httpw/members/nobody?${q(agg)}`);
      expect(absent.status).toBe(404);
    }
    for (const path of [`top?n=3&${q("sum")}`, `range?${q("min")}`, `sorted?${q("max")}`, `bottom?n=3&${q("sum")}`]) {
      const r = await get(`/v1/counters/httpw/${path}`);
      expect(r.status, path).toBe(400);
      const error = r.body.error as { code: string; message: string };
      expect(error.code, path).toBe("too_many_entries");
      expect(error.message, path).toMatch(
        /at most 44 ZCARDs \(issue 15: at most 60 commands a read\).*Narrow the range\./,
      );
    }
  }, 120_000);
});
