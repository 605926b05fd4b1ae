/**
 * Issue 15: a counter read never unions more than MAX_UNION_ENTRIES bucket entries. Past the
 * bound a top-N sum is read from the range's keys by the threshold algorithm (exact: the property
 * test runs it on every range with the bound at 0, against a model of the union), a member read
 * gives the exact score without its ranks, and every other read is refused with a 400 naming the
 * limit, before anything is unioned.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { increment, memberOf, ranked, scoreRange, sorted, union, type IncrItem } from "../../src/counters/index.ts";
import { memberScript, THRESHOLD_LOOKUPS, topScript } from "../../src/counters/read-scripts.ts";
import { MAX_UNION_ENTRIES, MAX_UNION_MEMBERS } from "../../src/counters/limits.ts";
import { memberSource, source } from "../../src/counters/reads.ts";
import { ValidationError } from "../../src/errors.ts";
import { asList } from "../../src/redis/script.ts";
import { DAY } from "../../src/time.ts";
import { libraryTest } from "../helpers/library.ts";
import { topOfSums } from "../helpers/sums.ts";
import { createRedis } from "../../src/redis/client.ts";
import { command, keysUnder, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const lib = libraryTest("counters-bounds", { timeoutMs: 30_000 });
const NOW = Date.UTC(2026, 10, 20, 12, 30);
const ctx = lib.ctx(NOW);

async function zunionstoreCalls(): Promise<number> {
  const info = await command<string>(lib.target, "INFO", "commandstats");
  return Number(/cmdstat_zunionstore:calls=(\d+)/.exec(info)?.[1] ?? 0);
}

let run = 0;

describe("threshold top N over many keys", () => {
  it("equals the union's top N, or declines (never a wrong answer)", async () => {
    // up to 300 members over 6 finished days and today: sets deeper than the first page (64), ties,
    // negative and zero sums, members in one day only
    const item = fc.record({
      member: fc.integer({ min: 0, max: 299 }).map((i) => (i % 7 === 0 ? `M${i}` : `m${i}`)),
      by: fc.integer({ min: -2, max: 6 }),
      day: fc.integer({ min: 0, max: 6 }),
    });
    let settled = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(item, { minLength: 1, maxLength: 1500 }), async (items) => {
        const name = `many-${run++}`;
        const writes: IncrItem[] = items.map((i) => ({
          member: i.member,
          by: i.by,
          period: "day",
          at: NOW - (6 - i.day) * DAY,
        }));
        await increment(ctx, name, writes);
        for (const [label, to, kept] of [
          ["finished", NOW - DAY, items.filter((i) => i.day < 6)],
          ["ending now", undefined, items],
        ] as const) {
          for (const n of [1, 5, 40]) {
            const src = source(ctx, name, { period: "day", from: NOW - 6 * DAY, ...(to ? { to } : {}) });
            // a bound of 0: no union may be built, so every answer is the threshold algorithm's
            const reply: string[] | unknown = await topScript
              .run<string[]>(ctx.redis, src.keys, { ...src.args, maxEntries: 0, n, rev: 1 })
              .then(
                (r) => asList(r),
                (e: unknown) => e,
              );
            if (reply instanceof ValidationError) {
              expect(reply.code).toBe("too_many_entries");
              continue;
            }
            settled++;
            const flat = reply as string[];
            const got: string[] = [];
            for (let i = 0; i + 1 < flat.length; i += 2) got.push(`${flat[i]}=${Number(flat[i + 1])}`);
            expect(got, `${label} n=${n}`).toEqual(topOfSums(kept, n));
          }
        }
      }),
      { numRuns: 25 },
    );
    // most draws settle; a refusal is allowed only where the n-th sum ties what is unseen
    expect(settled).toBeGreaterThan(100);
  });
});

describe("the threshold read's budget", () => {
  it(`spends at most ${THRESHOLD_LOOKUPS} lookups over all its rounds, then declines`, async () => {
    // 7 finished days of 3,000 members each, none in two days, scores falling slowly: no leader
    // stands out, so no round settles (the worst case: it declines after its whole budget)
    const name = "flat";
    const items: IncrItem[] = [];
    for (let d = 1; d <= 7; d++)
      for (let j = 0; j < 3000; j++)
        items.push({ member: `d${d}-${j}`, by: 100_000 - j, period: "day", at: NOW - d * DAY });
    for (let s = 0; s < items.length; s += 1000) await increment(ctx, name, items.slice(s, s + 1000));
    const tag = `counters-budget-${Math.random().toString(36).slice(2, 8)}`;
    const counted = createRedis({ url: lib.target.url, token: `${lib.target.token}.${tag}`, timeoutMs: 20_000 });
    const src = source(ctx, name, { period: "day", from: NOW - 7 * DAY, to: NOW - DAY });
    await resetStats(lib.target, tag);
    // a bound of 0: the threshold algorithm, never the union
    await expect(topScript.run(counted, src.keys, { ...src.args, maxEntries: 0, n: 10, rev: 1 })).rejects.toMatchObject(
      {
        code: "too_many_entries",
      },
    );
    const { byCommand } = await statsOf(lib.target, tag);
    // rounds 64 and 256 deep (64·49 + 256·49 = 15,680 lookups); 1,024 deep would pass the budget
    // in all (it was a budget per round: a third round, 7 × 8 more ZMSCOREs, 108–115 ms at 100,000 a day)
    expect(byCommand.zrange).toBe(14);
    expect(byCommand.zmscore).toBe(7 * 1 + 7 * 2);
  });
});

describe(`the members bound (${MAX_UNION_MEMBERS})`, () => {
  // 7 finished days of 3,000 members each (21,000 entries, far below MAX_UNION_ENTRIES): a union
  // is linear in the members it makes, so 21,000 distinct ones are not unioned, 3,000 shared are
  const week = { period: "day" as const, from: NOW - 7 * DAY, to: NOW - DAY };
  // through a counting client: which commands these reads ran, whatever other files run meanwhile
  const tag = `counters-members-${Math.random().toString(36).slice(2, 8)}`;
  const counted = {
    ...ctx,
    redis: createRedis({ url: lib.target.url, token: `${lib.target.token}.${tag}`, timeoutMs: 20_000 }),
  };
  const unions = async () => (await statsOf(lib.target, tag)).byCommand.zunionstore ?? 0;
  const write = async (name: string, nameOf: (day: number, j: number) => string) => {
    const items: IncrItem[] = [];
    for (let d = 1; d <= 7; d++)
      for (let j = 0; j < 3000; j++)
        items.push({ member: nameOf(d, j), by: 1 + (j % 97), period: "day", at: NOW - d * DAY });
    for (let s = 0; s < items.length; s += 1000) await increment(ctx, name, items.slice(s, s + 1000));
  };

  it("unions 21,000 entries of 3,000 shared members (the month rollup shows how few they are)", async () => {
    await write("shared", (_d, j) => `s${j}`);
    await resetStats(lib.target, tag);
    expect(await memberOf(counted, "shared", "s96", week)).toMatchObject({ score: 7 * 97, rank: expect.any(Number) });
    expect(await unions()).toBe(1);
    expect((await scoreRange(ctx, "shared", { ...week, min: "600", limit: 5 })).count).toBeGreaterThan(0);
  });

  it("does not union 21,000 distinct members: the score without ranks, the union's reads refused", async () => {
    await write("distinct", (d, j) => `d${d}-${j}`);
    await resetStats(lib.target, tag);
    expect(await memberOf(counted, "distinct", "d3-96", week)).toMatchObject({
      score: 97,
      rank: null,
      rankFromBottom: null,
    });
    await expect(scoreRange(counted, "distinct", { ...week, min: "90" })).rejects.toMatchObject({
      code: "too_many_entries",
      message: expect.stringContaining(`or ${MAX_UNION_MEMBERS} when they may hold as many distinct members`),
    });
    expect(await unions()).toBe(0);
    // six of those days, 18,000 members, are within the bound: unioned, ranks and all
    const six = await memberOf(counted, "distinct", "d3-96", { ...week, to: NOW - 2 * DAY });
    expect(six).toMatchObject({ score: 97, rank: expect.any(Number) });
    expect(await unions()).toBe(1);
  });
});

describe("the bound on a union's work", () => {
  it("is one ZCARD a month when that bounds it, else one a key, and the union is built only within it", async () => {
    // two days of the same month, 50 members each, none in common: the month rollup holds 100, so
    // the month's bound is 2 × 100 = 200 entries where the days hold 100
    // the same data in three counters: a union read once is cached, and a cached union is read whatever its size
    const src = async (name: string) => {
      const items: IncrItem[] = [];
      for (let i = 0; i < 50; i++) {
        items.push({ member: `a${i}`, by: 1 + i, period: "day", at: NOW - 4 * DAY });
        items.push({ member: `b${i}`, by: 1 + i, period: "day", at: NOW - 3 * DAY });
      }
      await increment(ctx, name, items);
      return source(ctx, name, { period: "day", from: NOW - 4 * DAY, to: NOW - 3 * DAY });
    };
    const member = async (name: string, maxEntries: number) => {
      const { keys, args } = await src(name);
      return memberScript.run<unknown[]>(ctx.redis, keys, { ...args, maxEntries, member: "b49" }).then(asList);
    };
    // within the month's bound: unioned (ranks known)
    expect(await member("apart-200", 200)).toEqual(["50", 0, 99]);
    // past the month's bound but within the days' own sizes: unioned too
    expect(await member("apart-100", 100)).toEqual(["50", 0, 99]);
    // past both: the score alone
    expect(await member("apart-99", 99)).toEqual(["50", false, false]);
  });
});

describe("a member read over 400 days past the bound", () => {
  it("counts whole months' rollups first, then spends its commands on one ZSCORE a key: at most 60", async () => {
    // 400 days of one `day` counter ending today (15 days, 12 whole months, 20 days: 47 keys);
    // each day holds `x` and one of five others, so each month's rollup holds 6 members
    const name = "year";
    const first = NOW - 399 * DAY;
    const items: IncrItem[] = [];
    for (let d = 0; d < 400; d++) {
      items.push({ member: "x", by: 1, period: "day", at: first + d * DAY });
      items.push({ member: `m${d % 5}`, by: 2, period: "day", at: first + d * DAY });
    }
    await increment(ctx, name, items);
    const tag = `counters-bounds-${Math.random().toString(36).slice(2, 8)}`;
    const counted = createRedis({ url: lib.target.url, token: `${lib.target.token}.${tag}`, timeoutMs: 20_000 });
    const read = async (maxEntries: number, perKey = false) => {
      // source() has no edge plan (one ZSCORE a key), memberSource() what memberOf reads
      const { keys, args } = (perKey ? source : memberSource)(ctx, name, { period: "day", from: first });
      expect(keys.buckets).toHaveLength(47);
      await resetStats(lib.target, tag);
      const out = asList(await memberScript.run<unknown[]>(counted, keys, { ...args, maxEntries, member: "x" }));
      return { out, commands: (await statsOf(lib.target, tag)).commands };
    };
    // two whole months' rollups (6 members each) already pass 10: certain, with no ZCARD of a day.
    // EVALSHA, HMGET of the marks, HMGET of the live keys, 2 ZCARDs, then one ZSCORE a key: 47
    // (was 70: the 14 months' ZCARDs, then days' until past the limit)
    expect(await read(10, true)).toEqual({ out: ["400", false, false], commands: 52 });
    // the edge months read as their rollups minus the days outside the range (counters-edges.test.ts),
    // none of which were written: 12 whole months + 2 rollups, 19 commands
    expect(await read(10)).toEqual({ out: ["400", false, false], commands: 19 });
    // within the bound: the union, and the ranks (x leads with 400; m0..m4 hold 160 each)
    expect((await read(MAX_UNION_ENTRIES)).out).toEqual(["400", 0, 5]);
  });
});

describe(`a range over ${MAX_UNION_ENTRIES} entries`, () => {
  const name = "big";
  const days = [NOW - 3 * DAY, NOW - 2 * DAY];
  const perDay = MAX_UNION_ENTRIES / 2 + 1;
  const range = { period: "day" as const, from: days[0], to: days[1] };

  it("is written: two finished days of 50,001 members each", async () => {
    for (const at of days) {
      for (let s = 0; s < perDay; s += 1000) {
        const items: IncrItem[] = [];
        for (let i = s; i < Math.min(s + 1000, perDay); i++) {
          // three leaders; everyone else 1–5 a day
          const by = i < 3 ? 1000 - i : 1 + (i % 5);
          items.push({ member: `p${i}`, by, period: "day", at });
        }
        await increment(ctx, name, items);
      }
    }
  }, 120_000);

  it("answers a top-N sum by the threshold algorithm, without a union", async () => {
    const before = await zunionstoreCalls();
    const top = await ranked(ctx, name, "top", 3, range);
    expect(top.items).toEqual([
      { rank: 1, member: "p0", score: 2000 },
      { rank: 2, member: "p1", score: 1998 },
      { rank: 3, member: "p2", score: 1996 },
    ]);
    expect(await zunionstoreCalls()).toBe(before);
    // nothing was cached either
    const cached = (await keysUnder(lib.target, lib.prefix)).filter((k) => k.includes(`:${name}:union:`));
    expect(cached).toEqual([]);
  });

  it("refuses a top N whose n-th place ties below the first pages", async () => {
    // the 4th and later places are all 10 (5 + 5), far more of them than the deepest round reads
    await expect(ranked(ctx, name, "top", 10, range)).rejects.toMatchObject({ code: "too_many_entries" });
  });

  it("refuses every read that needs the union, naming the limit, before any union", async () => {
    const before = await zunionstoreCalls();
    const reads = [
      () => ranked(ctx, name, "bottom", 3, range),
      () => scoreRange(ctx, name, { ...range, min: "1000" }),
      () => sorted(ctx, name, range),
      () => ranked(ctx, name, "top", 3, { ...range, aggregate: "max" }),
    ];
    for (const read of reads) {
      const err = await read().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).code).toBe("too_many_entries");
      expect((err as ValidationError).message).toContain(String(MAX_UNION_ENTRIES));
    }
    expect(await zunionstoreCalls()).toBe(before);
  });

  it("answers one member's score (a ZSCORE per key), with ranks null: they need the union", async () => {
    const before = await zunionstoreCalls();
    expect(await memberOf(ctx, name, "p0", range)).toMatchObject({
      member: "p0",
      score: 2000,
      rank: null,
      rankFromBottom: null,
    });
    expect(await memberOf(ctx, name, "p9", { ...range, aggregate: "max" })).toMatchObject({ score: 5, rank: null });
    expect(await memberOf(ctx, name, "p8", { ...range, aggregate: "min" })).toMatchObject({ score: 4, rank: null });
    await expect(memberOf(ctx, name, "nobody", range)).rejects.toMatchObject({ code: "not_found" });
    expect(await zunionstoreCalls()).toBe(before);
  });

  it("refuses an admin union of both days before writing anything, and builds one of a day", async () => {
    await increment(ctx, "rollup", [{ member: "kept", by: 7 }]);
    const before = await zunionstoreCalls();
    await expect(
      union(ctx, "rollup", { sources: [{ counter: name, period: "day", from: days[0], to: days[1] }] }),
    ).rejects.toMatchObject({ code: "too_many_entries", message: expect.stringContaining("100002 entries") });
    expect(await zunionstoreCalls()).toBe(before);
    // the destination still holds what it held
    expect(await memberOf(ctx, "rollup", "kept")).toMatchObject({ score: 7, rank: 1 });
    const one = await union(ctx, "rollup", {
      sources: ["rollup", { counter: name, period: "day", from: days[0], to: days[0] }],
    });
    expect(one).toMatchObject({ members: perDay + 1, sourcesUsed: 2 });
    expect(await memberOf(ctx, "rollup", "kept")).toMatchObject({ score: 7 });
  });

  it("still answers each day alone (one key is read in place, whatever its size)", async () => {
    const one = await memberOf(ctx, name, "p0", { period: "day", from: days[0], to: days[0] });
    expect(one).toMatchObject({ score: 1000, rank: 1 });
  });
});
