/**
 * Issue 15 for `week` counters past the union bound: every read over 400 days costs at most 60
 * commands (counted by the local Upstash server), answered exactly or refused with a 400 naming the
 * limit. Before (docs/counters.md "Week size records", "Still past 60"): showing that 58 weeks of
 * 360 members pass the bound took a ZCARD a week until it did (refused in 59 commands, 61 with
 * weeks of ~345), and a member read then took a ZSCORE a week (117). Now the bound's ZCARDs of
 * recorded weeks stop at MAX_SIZE_READS (a refusal in 47), and a member read looks the member up
 * in one union of its smallest weeks within the bound and a ZSCORE of each other week
 * (src/counters/resolve.ts `lookupPlan`), or is refused when that would pass 60 commands.
 * Every answer is compared with a model of the weeks; every write is a real increment.
 */
import { describe, expect, it } from "vitest";
import type { Ctx } from "../../src/context.ts";
import { increment, memberOf, ranked, scoreRange, sorted, type IncrItem } from "../../src/counters/index.ts";
import { counterKeys as K } from "../../src/counters/keys.ts";
import { MAX_READ_COMMANDS, MAX_SIZE_READS, MAX_UNION_MEMBERS } from "../../src/counters/limits.ts";
import { NotFoundError, ValidationError } from "../../src/errors.ts";
import { DAY, periodStart } from "../../src/time.ts";
import { command } from "../helpers/upstash-rest.ts";
import { FROM, NOW, WEEK, weekCounters, weeks } from "../helpers/week-counters.ts";

const { lib, target, measure, warm } = weekCounters("cwcap", 60_000);
/** 58 finished weeks (cache `all`) and 59 ending now (cache `head`: 58 and the current week). */
const FINISHED = { period: "week" as const, from: FROM, to: NOW - WEEK };
const ENDING_NOW = { period: "week" as const, from: FROM };

type Agg = "sum" | "min" | "max";
type Model = Map<number, Map<string, number>>;

/** Writes `items(week, i)` into each week while it is current (its Wednesday), 1,000 a call. */
async function writeWeekly(ctx: Ctx, name: string, items: (week: number, i: number) => IncrItem[]) {
  const model: Model = new Map();
  for (const [i, week] of weeks.entries()) {
    const list = items(week, i);
    for (let s = 0; s < list.length; s += 1000)
      await increment({ ...ctx, now: Math.min(week + 2 * DAY, NOW) }, name, list.slice(s, s + 1000));
    const m = new Map<string, number>();
    for (const it of list) m.set(it.member, (m.get(it.member) ?? 0) + (it.by ?? 1));
    model.set(week, m);
  }
  return model;
}

/** The member's score over weeks from..to of the model, combined as the union would; undefined: absent. */
function scoreOf(model: Model, member: string, from: number, to: number, agg: Agg) {
  let out: number | undefined;
  for (const [week, members] of model) {
    const v = members.get(member);
    if (week < periodStart("week", from) || week > periodStart("week", to) || v === undefined) continue;
    out = out === undefined ? v : agg === "sum" ? out + v : agg === "min" ? Math.min(out, v) : Math.max(out, v);
  }
  return out;
}

/** The 400 a read past the bound gets: too_many_entries, naming the limit. */
function refusedNaming(got: { ok: boolean; error?: unknown }, limit: RegExp) {
  expect(got.ok).toBe(false);
  const e = (got as { error: unknown }).error;
  expect(e).toBeInstanceOf(ValidationError);
  expect((e as ValidationError).code).toBe("too_many_entries");
  expect((e as Error).message).toMatch(limit);
}

const records = async (ctx: Ctx, name: string) =>
  (
    await command<(string | null)[]>(
      target,
      "HMGET",
      K.index(ctx.prefix, name),
      ...weeks.map((w) => `n:${K.bucket(ctx.prefix, name, "week", w)}`),
    )
  ).map((r) => (r === null ? null : Number(r)));

describe("week reads past the union bound, within 60 commands", () => {
  it("58 weeks of 320–409 members: refusals in 47 commands, member reads exact in ≤ 60 (were 58 and 117)", async () => {
    const ctx = lib.ctx(NOW, "mixed");
    await warm(ctx);
    // week i holds u0..u(n-1), n = 320 + (37 i mod 90): about 21,000 entries in 58 weeks, past
    // MAX_UNION_MEMBERS; scores vary by member and week; x<i> is only in week i
    const sizeOf = (i: number) => 320 + ((37 * i) % 90);
    const model = await writeWeekly(ctx, "m", (_week, i) => [
      ...Array.from({ length: sizeOf(i) }, (_, j) => ({
        member: `u${j}`,
        by: 1 + ((i * 7 + j * 3) % 11),
        period: "week" as const,
      })),
      { member: `x${i}`, by: 100 + i, period: "week" as const },
    ]);
    const entries = weeks.slice(0, 58).reduce((n, _, i) => n + sizeOf(i) + 1, 0);
    expect(entries).toBeGreaterThan(MAX_UNION_MEMBERS);
    const counts: Record<string, number> = {};
    for (const [label, range] of [
      ["finished", FINISHED],
      ["ending now", ENDING_NOW],
    ] as const) {
      const calls: [string, (c: Ctx) => Promise<unknown>][] = [
        ["top", (c) => ranked(c, "m", "top", 5, range)],
        ["bottom", (c) => ranked(c, "m", "bottom", 5, range)],
        ["range", (c) => scoreRange(c, "m", range)],
        ["sorted", (c) => sorted(c, "m", range)],
      ];
      for (const [kind, call] of calls) {
        const r = await measure(call, ctx);
        counts[`${kind} ${label}`] = r.commands;
        refusedNaming(r.got, new RegExp(`at most ${MAX_SIZE_READS} ZCARDs`));
        // EVALSHA, 2 HMGETs, MAX_SIZE_READS ZCARDs (a refused read caches nothing)
        expect(r.by.zcard).toBe(MAX_SIZE_READS);
      }
      // members in every week, in the weeks of the largest sizes only, in one week, and absent
      const to = range === FINISHED ? NOW - WEEK : NOW;
      for (const member of ["u0", "u319", "u400", "x0", "x57", "x30", "nobody"])
        for (const agg of ["sum", "min", "max"] as const) {
          const r = await measure((c) => memberOf(c, "m", member, { ...range, aggregate: agg }), ctx);
          counts[`member ${label}`] = Math.max(counts[`member ${label}`] ?? 0, r.commands);
          const want = scoreOf(model, member, FROM, to, agg);
          if (want === undefined) {
            expect(!r.got.ok && r.got.error).toBeInstanceOf(NotFoundError);
            continue;
          }
          if (!r.got.ok) throw r.got.error;
          expect(r.got.value, `${member} ${agg} ${label}`).toMatchObject({
            score: want,
            rank: null,
            rankFromBottom: null,
          });
        }
    }
    console.log("week reads past the bound, 58 weeks of 320–409", JSON.stringify(counts));
    for (const n of Object.values(counts)) expect(n).toBeLessThanOrEqual(MAX_READ_COMMANDS);
    // refusals: EVALSHA, HMGET, HMGET, 44 ZCARDs; member reads: that, then one union of the smallest
    // weeks within the bound (ZUNIONSTORE, ZSCORE, UNLINK) and a ZSCORE of each other week (and of
    // the current week ending now)
    expect(counts).toMatchObject({
      "top finished": 47,
      "bottom finished": 47,
      "range finished": 47,
      "sorted finished": 47,
      "top ending now": 47,
      "sorted ending now": 47,
    });
    // 53: 3 + 44 + 6 (a union of the 55 smallest weeks, 3 ZSCOREs); 54 ending now (+ the current week)
    expect(counts["member finished"]).toBe(53);
    expect(counts["member ending now"]).toBe(54);
  });

  it("58 weeks of 345 members: refused in 47 (was 61); a member read in 51 (was 119)", async () => {
    const ctx = lib.ctx(NOW, "even");
    await warm(ctx);
    const members = Array.from({ length: 345 }, (_, j) => `v${j}`);
    const model = await writeWeekly(ctx, "e", (_week, i) =>
      members.map((member, j) => ({ member, by: 1 + ((i + j) % 5), period: "week" as const })),
    );
    expect(58 * 345).toBeGreaterThan(MAX_UNION_MEMBERS);
    const top = await measure((c) => ranked(c, "e", "top", 5, FINISHED), ctx);
    refusedNaming(top.got, /at most 44 ZCARDs/);
    expect(top.commands).toBe(47);
    const m = await measure((c) => memberOf(c, "e", "v7", FINISHED), ctx);
    if (!m.got.ok) throw m.got.error;
    expect(m.got.value.score).toBe(scoreOf(model, "v7", FROM, NOW - WEEK, "sum"));
    expect(m.got.value.rank).toBeNull();
    // 3 + 44 ZCARDs; 57 weeks of 345 within 20,000: ZUNIONSTORE, ZSCORE, UNLINK; one ZSCORE
    expect(m.by).toMatchObject({ zcard: 44, zunionstore: 1, zscore: 2, unlink: 1 });
    expect(m.commands).toBe(51);
  });

  it("records looser than the weeks: the ZCARDs show the union fits, it is answered exactly and the records are put right", async () => {
    const ctx = lib.ctx(NOW, "loose");
    await warm(ctx);
    const members = Array.from({ length: 300 }, (_, j) => `w${j}`);
    const model = await writeWeekly(ctx, "l", (_week, i) =>
      members.map((member, j) => ({ member, by: 1 + ((i * 3 + j) % 7), period: "week" as const })),
    );
    // 58 × 300 = 17,400 entries fit; records of 400 (an upper bound, as a member written back
    // from a score of 0 leaves one) sum to 23,200: 32 ZCARDs show it fits
    const index = K.index(ctx.prefix, "l");
    const fields = weeks.slice(0, 58).flatMap((w) => [`n:${K.bucket(ctx.prefix, "l", "week", w)}`, "400"]);
    await command(target, "HSET", index, ...fields);
    const top = await measure((c) => ranked(c, "l", "top", 3, FINISHED), ctx);
    if (!top.got.ok) throw top.got.error;
    const sums = new Map<string, number>();
    for (const member of members) sums.set(member, scoreOf(model, member, FROM, NOW - WEEK, "sum")!);
    const want = [...sums].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? 1 : -1)).slice(0, 3);
    expect(top.got.value.items.map((i) => [i.member, i.score])).toEqual(want);
    expect(top.by.zcard).toBe(32);
    expect(top.commands).toBeLessThanOrEqual(MAX_READ_COMMANDS);
    // the 32 it measured are recorded exactly (in the cache mark's HSET), the rest as they were
    const rs = await records(ctx, "l");
    expect(rs.slice(0, 58).filter((r) => r === 300)).toHaveLength(32);
    expect(rs.slice(0, 58).filter((r) => r === 400)).toHaveLength(26);
  });

  it("weeks too large to look up in 60 commands: the member read is refused naming the limit (it took 66)", async () => {
    const ctx = lib.ctx(NOW, "big");
    await warm(ctx);
    // 4,500 members a week: only 4 weeks fit one union (18,000), the other 54 would each take a ZSCORE
    const members = Array.from({ length: 4500 }, (_, j) => `b${j}`);
    await writeWeekly(ctx, "b", () => members.map((member) => ({ member, period: "week" as const })));
    const m = await measure((c) => memberOf(c, "b", "b1", FINISHED), ctx);
    refusedNaming(m.got, /would take 66 commands; a read makes at most 60/);
    // EVALSHA, HMGET, HMGET, the 5 ZCARDs that show the weeks pass the bound
    expect(m.commands).toBe(8);
    // 16 weeks: one union of 4 and 12 ZSCOREs
    const short = { period: "week" as const, from: NOW - 16 * WEEK, to: NOW - WEEK };
    const ok = await measure((c) => memberOf(c, "b", "b1", short), ctx);
    if (!ok.got.ok) throw ok.got.error;
    expect(ok.got.value).toMatchObject({ score: 16, rank: null });
    expect(ok.commands).toBeLessThanOrEqual(MAX_READ_COMMANDS);
  }, 300_000);
});

describe("a top-N sum of a week counter past the bound", () => {
  /** `n` members in each of the last `k` finished weeks, `lead0`…`lead2` far ahead of them all. */
  async function build(ctx: Ctx, name: string, k: number, n: number) {
    const model: Model = new Map();
    for (let i = 0; i < k; i++) {
      const week = periodStart("week", NOW) - (k - i) * WEEK;
      const items: IncrItem[] = Array.from({ length: n }, (_, j) => ({
        member: `t${j}`,
        by: 1 + ((i + j) % 9),
        period: "week" as const,
      }));
      for (const l of [0, 1, 2]) items.push({ member: `lead${l}`, by: 1000 - 100 * l, period: "week" });
      for (let s = 0; s < items.length; s += 1000)
        await increment({ ...ctx, now: week + 2 * DAY }, name, items.slice(s, s + 1000));
      model.set(week, new Map(items.map((it) => [it.member, it.by ?? 1])));
    }
    return { model, range: { period: "week" as const, from: NOW - k * WEEK, to: NOW - WEEK } };
  }

  it("12 weeks of 1,800: the threshold algorithm answers exactly within 60 commands", async () => {
    const ctx = lib.ctx(NOW, "thr12");
    await warm(ctx);
    const { model, range } = await build(ctx, "t", 12, 1800);
    const r = await measure((c) => ranked(c, "t", "top", 3, range), ctx);
    if (!r.got.ok) throw r.got.error;
    const sums = new Map<string, number>();
    for (const m of model.values()) for (const [member, v] of m) sums.set(member, (sums.get(member) ?? 0) + v);
    const want = [...sums].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? 1 : -1)).slice(0, 3);
    expect(r.got.value.items.map((i) => [i.member, i.score])).toEqual(want);
    // EVALSHA, 2 HMGETs, 12 ZCARDs, the HSET recording the last week's (no week after it was
    // written), one round: 12 ZRANGEs and 12 ZMSCOREs
    expect(r.by).toMatchObject({ zcard: 12, hset: 1, zrange: 12, zmscore: 12 });
    expect(r.commands).toBe(40);
  });

  it("30 weeks of 700: a round would take 90 commands (it answered in 93), so the read is refused within 60", async () => {
    const ctx = lib.ctx(NOW, "thr30");
    await warm(ctx);
    const { range } = await build(ctx, "t", 30, 700);
    const r = await measure((c) => ranked(c, "t", "top", 3, range), ctx);
    refusedNaming(r.got, /too big to union/);
    expect(r.commands).toBeLessThanOrEqual(MAX_READ_COMMANDS);
  });
});
