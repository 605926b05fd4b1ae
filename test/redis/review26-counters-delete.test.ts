/**
 * Review 26: the member delete after commit 7f74cd4 (src/counters/delete-removals.ts: emptied keys
 * checked a level at a time, `forgetLater` / `settle` / `flush`, one EXISTS for many keys, halves
 * when some are gone, one HDEL a level), on real Redis against a model of the raw buckets.
 *
 * After every delete (no key expires in Redis meanwhile; one property moves the deletes' clock to
 * near the recorded expiries): every listed key of the counter exists (an emptied key left listed
 * would have the next write trust its recorded expiry and make the key again without its ttl),
 * every existing bucket or rollup key is listed (a live key dropped from the index is invisible to
 * the reads that use listed keys), every existing key of a ttl'd counter has a ttl, week size
 * records (`n:`) go with an emptied week and stay an upper bound of a live week's size (lowered by
 * one where it lost the member), and reads of every kind (top, bottom, range, sorted, member,
 * union) over random ranges match the model. Found nothing wrong (review 26).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  deleteMember,
  increment,
  memberOf,
  ranked,
  scoreRange,
  sorted,
  union,
  type IncrItem,
} from "../../src/counters/index.ts";
import { counterKeys } from "../../src/counters/keys.ts";
import { NotFoundError } from "../../src/errors.ts";
import { keyOf } from "../../src/keys.ts";
import { DAY, HOUR, periodEnd, periodStart } from "../../src/time.ts";
import { counterState, ghosts, hoursJson, rollupMismatches } from "../helpers/counter-state.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, keysUnder } from "../helpers/upstash-rest.ts";

const lib = libraryTest("review26-cdel", { timeoutMs: 30_000 });
const { target, prefix } = lib;
const NOW = Date.UTC(2026, 10, 20, 12, 30);
const ctx = lib.ctx(NOW);
const { stateOf, zscores, olderZeroDelete } = counterState(lib);
const TTL = 120 * 86_400;
// more runs for a longer search: R26_RUNS=50 npm test -- test/redis/review26-counters-delete.test.ts
const RUNS = Number(process.env.R26_RUNS ?? 12);

type Model = Map<number, Map<string, number>>;

/** Every key of `name`'s buckets and rollups of `period` that exists in Redis. */
async function existing(name: string, period: string) {
  const head = `${counterKeys.plain(prefix, name)}:${period}:`;
  return (await keysUnder(target, prefix)).filter((k) => k.startsWith(head));
}

/** The index invariants after a delete (nothing expired meanwhile). */
async function indexProblems(name: string, period: "hour" | "day" | "week" | "month", ttl: boolean) {
  const flat = await command<string[]>(target, "HGETALL", counterKeys.index(prefix, name));
  const fields = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) fields.set(flat[i]!, flat[i + 1]!);
  const head = `${counterKeys.plain(prefix, name)}:${period}:`;
  const out: string[] = [];
  const keys = new Set(await existing(name, period));
  for (const [f] of fields) {
    if (!f.startsWith("b:") || !f.slice(2).startsWith(head)) continue;
    if (!keys.has(f.slice(2))) out.push(`listed, gone: ${f.slice(2 + head.length)}`);
  }
  for (const k of keys) {
    if (!fields.has(`b:${k}`)) out.push(`exists, unlisted: ${k.slice(head.length)}`);
    if (ttl && (await command<number>(target, "PTTL", k)) < 0) out.push(`no ttl: ${k.slice(head.length)}`);
    const rec = fields.get(`n:${k}`);
    if (period === "week") {
      const card = await command<number>(target, "ZCARD", k);
      // an upper bound (a week in progress, or listed before the next week's first write, has none)
      if (rec !== undefined && Number(rec) < card) out.push(`week ${k.slice(head.length)} n:${rec} card ${card}`);
    }
  }
  for (const [f] of fields)
    if (f.startsWith("n:") && !keys.has(f.slice(2))) out.push(`record of a gone week: ${f.slice(2 + head.length)}`);
  return out;
}

function sumOf(model: Model, from: number, end: number) {
  const out = new Map<string, number>();
  for (const [t, ms] of model) if (t >= from && t < end) for (const [m, v] of ms) out.set(m, (out.get(m) ?? 0) + v);
  return out;
}

/** Turns `name`'s life into one begun before quarter rollups (as counters-delete-model.test.ts does). */
async function age(name: string) {
  const index = counterKeys.index(prefix, name);
  await command(target, "HDEL", index, "q");
  const fields = await command<string[]>(target, "HKEYS", index);
  for (const f of fields.filter((f) => f.startsWith("b:") && f.includes(":by-quarter:"))) {
    await command(target, "UNLINK", f.slice(2));
    await command(target, "HDEL", index, f);
  }
}

const nonZero = (m: Map<string, number>) => Object.fromEntries([...m].filter(([, v]) => v !== 0).sort());

/** Reads of every kind over [from, to] against the model (members at 0 may read absent). */
async function readsAgree(
  name: string,
  model: Model,
  period: "hour" | "day" | "week" | "month",
  from: number,
  to: number,
) {
  const want = sumOf(model, periodStart(period, from), periodEnd(period, to));
  const opts = { period, from, to };
  const label = `${new Date(from).toISOString()}..${new Date(to).toISOString()}`;
  const top = await ranked(ctx, name, "top", 100, opts);
  const got = new Map(top.items.map((i) => [i.member, i.score]));
  expect(nonZero(got), `top ${label}`).toEqual(nonZero(want));
  const bottom = await ranked(ctx, name, "bottom", 100, opts);
  expect(nonZero(new Map(bottom.items.map((i) => [i.member, i.score]))), `bottom ${label}`).toEqual(nonZero(want));
  const range = await scoreRange(ctx, name, { ...opts, min: 1, limit: 1000 });
  expect(Object.fromEntries(range.items.map((i) => [i.member, i.score]).sort()), `range ${label}`).toEqual(
    Object.fromEntries([...want].filter(([, v]) => v >= 1).sort()),
  );
  const all = await sorted(ctx, name, opts);
  expect(nonZero(new Map(all.items.map((i) => [i.member, i.score]))), `sorted ${label}`).toEqual(nonZero(want));
  for (const m of ["a", "b", "c", "d", "z"]) {
    const one = await memberOf(ctx, name, m, opts).catch((e: unknown) => {
      if (e instanceof NotFoundError) return null;
      throw e;
    });
    expect(one?.score ?? 0, `member ${m} ${label}`).toBe(want.get(m) ?? 0);
  }
  const dest = `${name}-u`;
  await union(ctx, dest, { sources: [{ counter: name, ...opts }] });
  expect(nonZero(await zscores(counterKeys.plain(prefix, dest))), `union ${label}`).toEqual(nonZero(want));
}

// ---------------------------------------------------------------------------------------------
describe("review 26: hour counters, emptied keys leave the index, live ones stay, against a model", () => {
  // around a month boundary: quarters, days and months cut by the ranges
  const DAYS = [Date.UTC(2026, 9, 30), Date.UTC(2026, 9, 31), Date.UTC(2026, 10, 1), Date.UTC(2026, 10, 2)];
  const hourAt = fc
    .tuple(fc.integer({ min: 0, max: DAYS.length - 1 }), fc.integer({ min: 0, max: 23 }))
    .map(([d, h]) => DAYS[d]! + h * HOUR);
  const member = fc.constantFrom("a", "b", "c", "d");
  const delMember = fc.constantFrom("a", "b", "c", "d", "z");
  type Op =
    | { kind: "write"; writes: { member: string; by: number; at: number }[] }
    | { kind: "dense"; member: string; day: number; every: number }
    | { kind: "wide"; member: string; every: number }
    | { kind: "older"; day: number; q: number }
    | { kind: "delete"; member: string; from: number; hours: number | undefined; keyed: boolean; replay: boolean };
  const op: fc.Arbitrary<Op> = fc.oneof(
    {
      weight: 3,
      arbitrary: fc
        .array(fc.record({ member, by: fc.constantFrom(-2, -1, 1, 2, 5), at: hourAt }), {
          minLength: 1,
          maxLength: 10,
        })
        .map((writes) => ({ kind: "write" as const, writes })),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(member, fc.integer({ min: 0, max: DAYS.length - 1 }), fc.constantFrom(1, 2, 3, 5))
        .map(([m, day, every]) => ({ kind: "dense" as const, member: m, day, every })),
    },
    {
      weight: 1,
      // a quarter, day and month an older release's delete took to 0 and marked (z:), as
      // counters-delete-index.test.ts makes them: "z" +3 and -3 in two hours, the third's +2 deleted
      arbitrary: fc
        .tuple(fc.integer({ min: 0, max: DAYS.length - 1 }), fc.integer({ min: 0, max: 3 }))
        .map(([day, q]) => ({ kind: "older" as const, day, q })),
    },
    {
      weight: 1,
      // every few hours from October 25 to now: a delete to now may be split into parts (600 keys a script)
      arbitrary: fc
        .tuple(member, fc.constantFrom(1, 2, 3, 7))
        .map(([m, every]) => ({ kind: "wide" as const, member: m, every })),
    },
    {
      weight: 4,
      arbitrary: fc
        .tuple(
          delMember,
          hourAt,
          fc.oneof(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 100 }), fc.constant(undefined)),
          fc.boolean(),
          fc.boolean(),
        )
        .map(([m, from, hours, keyed, replay]) => ({ kind: "delete" as const, member: m, from, hours, keyed, replay })),
    },
  );
  const WIDE = Date.UTC(2026, 9, 25);
  const LAST = periodStart("hour", NOW);
  let run = 0;

  for (const [ttl, life] of [
    [false, "new"],
    [true, "new"],
    [false, "noQ"],
    [true, "noS"],
  ] as const) {
    it(
      `${ttl ? "ttl'd" : "no ttl"}, ${life} life: raw hours, index, rollups and reads after mixed writes and deletes`,
      async () => {
        await fc.assert(
          fc.asyncProperty(fc.array(op, { minLength: 2, maxLength: 8 }), async (ops) => {
            const name = `r26h-${ttl ? "t" : "n"}-${life}-${run++}`;
            let aged = life === "new";
            const model: Model = new Map();
            const write = async (writes: { member: string; by: number; at: number }[]) => {
              const items: IncrItem[] = writes.map((w) => ({
                member: w.member,
                by: w.by,
                period: "hour",
                at: w.at,
                ...(ttl ? { ttl: TTL } : {}),
              }));
              for (let i = 0; i < items.length; i += 500) await increment(ctx, name, items.slice(i, i + 500));
              for (const w of writes) {
                const m = model.get(w.at) ?? new Map<string, number>();
                m.set(w.member, (m.get(w.member) ?? 0) + w.by);
                model.set(w.at, m);
              }
            };
            let keys = 0;
            const olderMonths = new Set<number>();
            for (const o of ops) {
              if (o.kind === "write") await write(o.writes);
              else if (o.kind === "dense") {
                const writes = [];
                for (let h = 0; h < 24; h += o.every)
                  writes.push({ member: o.member, by: 1, at: DAYS[o.day]! + h * HOUR });
                await write(writes);
              } else if (o.kind === "older") {
                const at = DAYS[o.day]! + o.q * 6 * HOUR;
                const month = periodStart("month", at);
                if (olderMonths.has(month) || life !== "new") continue;
                olderMonths.add(month);
                await write([
                  { member: "z", by: 3, at: at + HOUR },
                  { member: "z", by: -3, at: at + 2 * HOUR },
                  { member: "z", by: 2, at: at + 4 * HOUR },
                ]);
                await olderZeroDelete(name, "z", at + 4 * HOUR);
                model.get(at + 4 * HOUR)!.delete("z");
              } else if (o.kind === "wide") {
                const writes = [];
                for (let t = WIDE; t <= LAST; t += o.every * HOUR) writes.push({ member: o.member, by: 2, at: t });
                await write(writes);
              } else {
                const to = o.hours === undefined ? LAST : Math.min(LAST, o.from + o.hours * HOUR);
                let expected = 0;
                for (const [h, ms] of model) if (h >= o.from && h <= to && ms.has(o.member)) expected++;
                const idem = o.keyed
                  ? { key: keyOf(prefix, "idem", `${name}-${keys}`), fingerprint: `fp-${name}-${keys++}` }
                  : undefined;
                const opts = { period: "hour" as const, from: o.from, ...(o.hours === undefined ? {} : { to }) };
                const got = await deleteMember(ctx, name, o.member, opts, idem);
                expect(got.removed, "removed").toBe(expected);
                for (const [h, ms] of model) if (h >= o.from && h <= to) ms.delete(o.member);
                expect(await indexProblems(name, "hour", ttl), "index after the delete").toEqual([]);
                if (idem && o.replay) {
                  // the same request again: the recorded answer, nothing changed
                  const st0 = await stateOf(name);
                  expect((await deleteMember(ctx, name, o.member, opts, idem)).removed, "replayed").toBe(expected);
                  expect((await stateOf(name)).fields).toEqual(st0.fields);
                }
              }
              if (!aged && model.size > 0) {
                if (life === "noQ") await age(name);
                // a life whose rollups are no longer known exact (a write restarted an expired key): read key by key
                else await command(target, "HDEL", counterKeys.index(prefix, name), "s");
                aged = true;
              }
              const st = await stateOf(name);
              expect(hoursJson(st.hours)).toEqual(hoursJson(model));
              if ("s" in st.fields) {
                expect(rollupMismatches(st, life === "new")).toEqual([]);
                expect(ghosts(st, life === "new")).toEqual([]);
              }
            }
            // then writes into every hour the deletes touched, and reads of every kind
            await write(DAYS.flatMap((d) => [0, 7, 13, 23].map((h) => ({ member: "a", by: 1, at: d + h * HOUR }))));
            expect(await indexProblems(name, "hour", ttl), "index after the writes").toEqual([]);
            for (const [from, to] of [
              [DAYS[0]! + 5 * HOUR, DAYS[3]! + 17 * HOUR],
              [DAYS[1]!, DAYS[2]! + 23 * HOUR],
              [DAYS[2]! + 6 * HOUR, DAYS[2]! + 11 * HOUR],
              [DAYS[0]!, DAYS[3]! + 23 * HOUR],
            ] as const)
              await readsAgree(name, model, "hour", from, to);
          }),
          { numRuns: RUNS },
        );
      },
      40_000 * (RUNS / 12 + 1),
    );
  }
});

// ---------------------------------------------------------------------------------------------
describe("review 26: week and month counters, week size records follow the deletes", () => {
  const W0 = periodStart("week", NOW - 40 * 7 * DAY);
  // the k-th bucket of the period's 41 (weeks) or 13 (months, November 2025 on)
  const at = (period: "week" | "month", k: number) =>
    period === "week" ? W0 + k * 7 * DAY : Date.UTC(2025, 10 + Math.min(k, 12), 1);
  const weekAt = fc.integer({ min: 0, max: 40 });
  const member = fc.constantFrom("a", "b", "c", "d");
  type Op =
    | { kind: "write"; writes: { member: string; by: number; at: number }[] }
    | { kind: "delete"; member: string; from: number; weeks: number };
  // from, at: bucket numbers (at())
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc
      .array(fc.record({ member, by: fc.constantFrom(-1, 1, 3), at: weekAt }), { minLength: 1, maxLength: 12 })
      .map((writes) => ({ kind: "write" as const, writes })),
    fc
      .tuple(member, weekAt, fc.integer({ min: 0, max: 41 }))
      .map(([m, from, weeks]) => ({ kind: "delete" as const, member: m, from, weeks })),
  );
  let run = 0;
  async function records(name: string) {
    const flat = await command<string[]>(target, "HGETALL", counterKeys.index(prefix, name));
    const out = new Map<string, number>();
    for (let i = 0; i + 1 < flat.length; i += 2)
      if (flat[i]!.startsWith("n:")) out.set(flat[i]!.slice(2), Number(flat[i + 1]));
    return out;
  }

  for (const [period, ttl] of [
    ["week", false],
    ["week", true],
    ["month", false],
  ] as const) {
    it(
      `${period}, ${ttl ? "ttl'd" : "no ttl"}: raw buckets, n: records exact for live weeks and gone with emptied ones, reads`,
      async () => {
        await fc.assert(
          fc.asyncProperty(fc.array(op, { minLength: 2, maxLength: 8 }), async (ops) => {
            const name = `r26w-${period}-${ttl ? "t" : "n"}-${run++}`;
            const model: Model = new Map();
            for (const o of ops) {
              if (o.kind === "write") {
                await increment(
                  ctx,
                  name,
                  o.writes.map((w) => ({ ...w, at: at(period, w.at), period, ...(ttl ? { ttl: 400 * 86_400 } : {}) })),
                );
                for (const w of o.writes.map((w) => ({ ...w, at: at(period, w.at) }))) {
                  const m = model.get(w.at) ?? new Map<string, number>();
                  m.set(w.member, (m.get(w.member) ?? 0) + w.by);
                  model.set(w.at, m);
                }
              } else {
                const from = at(period, o.from);
                const to = Math.min(periodStart(period, NOW), at(period, o.from + o.weeks));
                let expected = 0;
                for (const [w, ms] of model) if (w >= from && w <= to && ms.has(o.member)) expected++;
                const before = await records(name);
                // a finished range read (and cached) before the delete, read again after it
                const cached = { period, from: at(period, 0), to: at(period, period === "week" ? 30 : 9) };
                await ranked(ctx, name, "top", 100, cached);
                const got = await deleteMember(ctx, name, o.member, { period, from, to });
                expect(got.removed).toBe(expected);
                // each week that lost the member and lives: its record less one; the others as they were
                const want = new Map<string, number>();
                for (const [w, ms] of model) {
                  const k = counterKeys.bucket(prefix, name, period, w);
                  const rec = before.get(k);
                  if (rec === undefined) continue;
                  const lost = w >= from && w <= to && ms.has(o.member);
                  const lives = [...ms.keys()].some((m) => m !== o.member || !lost);
                  if (lives) want.set(k, lost ? Math.max(0, rec - 1) : rec);
                }
                expect(Object.fromEntries(await records(name)), "records after the delete").toEqual(
                  Object.fromEntries(want),
                );
                for (const [w, ms] of model) if (w >= from && w <= to) ms.delete(o.member);
                const top = await ranked(ctx, name, "top", 100, cached);
                expect(
                  nonZero(new Map(top.items.map((i) => [i.member, i.score]))),
                  "cached top after the delete",
                ).toEqual(nonZero(sumOf(model, cached.from, periodEnd(period, cached.to))));
              }
              expect(await indexProblems(name, period, ttl)).toEqual([]);
              const raw = new Map<number, Map<string, number>>();
              for (const k of await existing(name, period)) {
                const label = k.slice(k.lastIndexOf(":") + 1);
                const start = [...model.keys()].find((w) => k === counterKeys.bucket(prefix, name, period, w));
                expect(start, label).toBeDefined();
                raw.set(start!, await zscores(k));
              }
              expect(hoursJson(raw)).toEqual(hoursJson(model));
            }
            await readsAgree(name, model, period, at(period, 0), at(period, 40));
            await readsAgree(name, model, period, at(period, 3), at(period, 7));
          }),
          { numRuns: RUNS },
        );
      },
      40_000 * (RUNS / 12 + 1),
    );
  }
});

// ---------------------------------------------------------------------------------------------
describe("review 26: deletes at a clock near the recorded expiries (rollups read under, no exact guarantee)", () => {
  const D = Date.UTC(2026, 10, 19);
  // 2 days: hours recorded to expire at NOW + 2 days, rollups 1 hour later (the slack)
  const SHORT = 2 * 86_400;
  const member = fc.constantFrom("a", "b", "c");
  const hourAt = fc.integer({ min: 0, max: 35 }).map((h) => D + h * HOUR);
  type Op =
    | { kind: "write"; writes: { member: string; by: number; at: number }[] }
    | { kind: "delete"; member: string; from: number; hours: number; late: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc
      .array(fc.record({ member, by: fc.constantFrom(-1, 1, 2), at: hourAt }), { minLength: 1, maxLength: 16 })
      .map((writes) => ({ kind: "write" as const, writes })),
    fc
      .tuple(
        member,
        hourAt,
        fc.integer({ min: 0, max: 30 }),
        // the delete's clock: now, before the hours' recorded expiry, past it, within a minute of the rollups'
        fc.constantFrom(0, SHORT * 1000 - 600_000, SHORT * 1000 - 10_000, SHORT * 1000 + 3_570_000),
      )
      .map(([m, from, hours, late]) => ({ kind: "delete" as const, member: m, from, hours, late })),
  );
  let run = 0;

  it(
    "raw hours, index, rollups",
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 2, maxLength: 8 }), async (ops) => {
          const name = `r26near-${run++}`;
          const model: Model = new Map();
          for (const o of ops) {
            if (o.kind === "write") {
              await increment(
                ctx,
                name,
                o.writes.map((w) => ({ ...w, period: "hour" as const, ttl: SHORT })),
              );
              for (const w of o.writes) {
                const m = model.get(w.at) ?? new Map<string, number>();
                m.set(w.member, (m.get(w.member) ?? 0) + w.by);
                model.set(w.at, m);
              }
            } else {
              const to = Math.min(D + 35 * HOUR, o.from + o.hours * HOUR);
              let expected = 0;
              for (const [h, ms] of model) if (h >= o.from && h <= to && ms.has(o.member)) expected++;
              const got = await deleteMember(lib.ctx(NOW + o.late), name, o.member, {
                period: "hour",
                from: o.from,
                to,
              });
              expect(got.removed).toBe(expected);
              for (const [h, ms] of model) if (h >= o.from && h <= to) ms.delete(o.member);
              expect(await indexProblems(name, "hour", true)).toEqual([]);
            }
            const st = await stateOf(name);
            expect(hoursJson(st.hours)).toEqual(hoursJson(model));
            if ("s" in st.fields) {
              expect(rollupMismatches(st, true)).toEqual([]);
              expect(ghosts(st, true)).toEqual([]);
            }
          }
        }),
        { numRuns: RUNS },
      );
    },
    40_000 * (RUNS / 12 + 1),
  );
});

// ---------------------------------------------------------------------------------------------
describe("review 26: a keyed delete split into parts, then writes and reads", () => {
  it("every part runs, the index stays exact, a replay answers the total and changes nothing", async () => {
    const name = "r26-split-keyed";
    const from = Date.UTC(2026, 9, 25);
    const last = periodStart("hour", NOW);
    const model: Model = new Map();
    const items: IncrItem[] = [];
    for (let t = from; t <= last; t += HOUR) {
      const m = new Map<string, number>([["a", 1]]);
      items.push({ member: "a", period: "hour", at: t, ttl: TTL });
      if (t % (5 * HOUR) === 0) {
        items.push({ member: "b", period: "hour", at: t, ttl: TTL });
        m.set("b", 1);
      }
      model.set(t, m);
    }
    for (let i = 0; i < items.length; i += 1000) await increment(ctx, name, items.slice(i, i + 1000));
    const idem = { key: keyOf(prefix, "idem", name), fingerprint: `fp-${name}` };
    const opts = { period: "hour" as const, from: Date.UTC(2026, 9, 28, 5) };
    const got = await deleteMember(ctx, name, "a", opts, idem);
    let expected = 0;
    for (const [h, ms] of model) if (h >= opts.from && ms.delete("a")) expected++;
    expect(got).toEqual({ removed: expected, replayed: false });
    // it ran in parts: each part before the last kept its own record
    const partRecords = (await keysUnder(target, prefix)).filter((k) => k.startsWith(`${idem.key}:`));
    expect(partRecords.length).toBeGreaterThan(0);
    expect(await indexProblems(name, "hour", true)).toEqual([]);
    const st = await stateOf(name);
    expect(hoursJson(st.hours)).toEqual(hoursJson(model));
    expect(rollupMismatches(st, true)).toEqual([]);
    expect(ghosts(st, true)).toEqual([]);
    expect(await deleteMember(ctx, name, "a", opts, idem)).toEqual({ removed: expected, replayed: true });
    expect((await stateOf(name)).fields).toEqual(st.fields);
    // writes into emptied hours get their ttl again; reads agree
    const again: IncrItem[] = [0, 30, 100, 300].map((k) => ({
      member: "c",
      period: "hour",
      at: opts.from + k * HOUR,
      ttl: TTL,
    }));
    await increment(ctx, name, again);
    for (const i of again) model.get(i.at as number)!.set("c", 1);
    expect(await indexProblems(name, "hour", true)).toEqual([]);
    await readsAgree(name, model, "hour", opts.from, last);
    await readsAgree(name, model, "hour", Date.UTC(2026, 10, 1, 3), Date.UTC(2026, 10, 3, 20));
  }, 60_000);
});

// ---------------------------------------------------------------------------------------------
describe("review 26: day counters (months over days), ttl'd, index and reads", () => {
  const D0 = Date.UTC(2026, 8, 20);
  const dayAt = fc.integer({ min: 0, max: 60 }).map((k) => D0 + k * DAY);
  const member = fc.constantFrom("a", "b", "c");
  type Op =
    | { kind: "write"; writes: { member: string; by: number; at: number }[] }
    | { kind: "delete"; member: string; from: number; days: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc
      .array(fc.record({ member, by: fc.constantFrom(-1, 1, 2), at: dayAt }), { minLength: 1, maxLength: 20 })
      .map((writes) => ({ kind: "write" as const, writes })),
    fc
      .tuple(member, dayAt, fc.integer({ min: 0, max: 45 }))
      .map(([m, from, days]) => ({ kind: "delete" as const, member: m, from, days })),
  );
  let run = 0;

  it(
    "raw days, index, reads",
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 2, maxLength: 8 }), async (ops) => {
          const name = `r26d-${run++}`;
          const model: Model = new Map();
          for (const o of ops) {
            if (o.kind === "write") {
              await increment(
                ctx,
                name,
                o.writes.map((w) => ({ ...w, period: "day" as const, ttl: TTL })),
              );
              for (const w of o.writes) {
                const m = model.get(w.at) ?? new Map<string, number>();
                m.set(w.member, (m.get(w.member) ?? 0) + w.by);
                model.set(w.at, m);
              }
            } else {
              const to = Math.min(periodStart("day", NOW), o.from + o.days * DAY);
              let expected = 0;
              for (const [d, ms] of model) if (d >= o.from && d <= to && ms.has(o.member)) expected++;
              const got = await deleteMember(ctx, name, o.member, { period: "day", from: o.from, to });
              expect(got.removed).toBe(expected);
              for (const [d, ms] of model) if (d >= o.from && d <= to) ms.delete(o.member);
              expect(await indexProblems(name, "day", true)).toEqual([]);
            }
          }
          await readsAgree(name, model, "day", D0, D0 + 60 * DAY);
          await readsAgree(name, model, "day", D0 + 9 * DAY, D0 + 43 * DAY);
        }),
        { numRuns: RUNS },
      );
    },
    40_000 * (RUNS / 12 + 1),
  );
});
