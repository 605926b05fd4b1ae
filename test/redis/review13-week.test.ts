/**
 * Review 13: `period=week` reads past the union bound (issue 15, merged from wt-weekcap): the
 * ZCARD budget of the size records (MAX_SIZE_READS), the member read's lookup plan (one union of
 * the smallest weeks within 20,000 entries and a ZSCORE of each other week: lookupPlan in
 * src/counters/week-size.ts) and the week top-N's share of the read's 60 commands, against an
 * exact model through the library on real Redis (the local Upstash server counts the commands).
 *
 * 1. A seeded run (dev/prng.ts mulberry32) near the bound: 58 finished weeks of ~300–420 members
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
 *    44 ZCARDs and then refuse lookups that alone take 17 commands (finding 1).
 */
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../dev/prng.ts";
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
import { createRedis } from "../../src/redis/client.ts";
import { DAY, periodStart } from "../../src/time.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, resetStats, statsOf } from "../helpers/upstash-rest.ts";
import { settled } from "../helpers/settled.ts";

const lib = libraryTest("r13week", { timeoutMs: 60_000 });
const { target } = lib;
const TAG = `r13week-${Math.random().toString(36).slice(2, 8)}`;
const counted = createRedis({ url: target.url, token: `${target.token}.${TAG}`, timeoutMs: 60_000 });
const WEEK = 7 * DAY;
/** A Monday noon: 400 days back is a Sunday, so a range ending now touches 59 weeks. */
const NOW = Date.UTC(2027, 5, 14, 12);
const FROM = NOW - 400 * DAY;
const weeks: number[] = [];
for (let w = periodStart("week", FROM); w <= periodStart("week", NOW); w += WEEK) weeks.push(w);

type Agg = "sum" | "min" | "max";
type Model = Map<number, Map<string, number>>;

async function measure<T>(call: (c: Ctx) => Promise<T>, ctx: Ctx) {
  await resetStats(target, TAG);
  const got = await settled(call({ ...ctx, redis: counted }));
  const s = await statsOf(target, TAG);
  expect(s.requests).toBe(1);
  return { got, commands: s.commands, by: s.byCommand };
}

async function warm(ctx: Ctx) {
  const c = { ...ctx, redis: counted };
  const opts = { period: "week" as const, from: NOW - 14 * DAY };
  await ranked(c, "empty", "top", 1, opts);
  await memberOf(c, "empty", "x", opts).catch(() => undefined);
  await scoreRange(c, "empty", opts);
  await sorted(c, "empty", opts);
}

function unionOf(model: Model, from: number, to: number, agg: Agg) {
  const out = new Map<string, number>();
  for (const [week, members] of model) {
    if (week < periodStart("week", from) || week > periodStart("week", to)) continue;
    for (const [m, v] of members) {
      const had = out.get(m);
      out.set(m, had === undefined ? v : agg === "sum" ? had + v : agg === "min" ? Math.min(had, v) : Math.max(had, v));
    }
  }
  return out;
}
const byBytes = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const ascending = (u: Map<string, number>) =>
  [...u].map(([member, score]) => ({ member, score })).sort((a, b) => a.score - b.score || byBytes(a.member, b.member));

const cardsLua = `local out = {} for i = 1, #KEYS do out[i] = redis.call('ZCARD', KEYS[i]) end return out`;
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
  for (const seed of [1301, 1302]) {
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
          const call = (c: Ctx) =>
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
          const week = weeks[int(58)]!;
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
