/**
 * The top-down member delete (src/counters/delete-script.ts) against a model, on real Redis:
 * adversarial sequences (mixed signs, partial quarters/days/months, rollups emptied at 0, writes
 * into deleted hours, lives without `q` or without `s` and `q`, a counter deleted and rewritten,
 * ttls with time travel, day counters). After every step: the raw hours, the delete's `removed`,
 * the claim the delete rests on (a rollup lacking the member and unmarked has no key below it
 * holding it), every rollup's sums while the life keeps `s`, and reads (top N, member past the
 * bound). Written in review; the cases it found are in counters-delete-cases.test.ts.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { deletePlan } from "../../src/counters/calendar.ts";
import { deleteCounter, deleteMember, increment, ranked, type IncrItem } from "../../src/counters/index.ts";
import { counterKeys } from "../../src/counters/keys.ts";
import { DAY, HOUR, periodEnd, periodStart } from "../../src/time.ts";
import { command } from "../helpers/upstash-rest.ts";
import { libraryTest } from "../helpers/library.ts";
import {
  counterState,
  goneButListed,
  spanOf,
  rollupMismatches,
  ghosts,
  hoursJson,
  memberPastBound,
} from "../helpers/counter-state.ts";

const lib = libraryTest("counters-delmodel", { timeoutMs: 30_000 });
const { target, prefix } = lib;
const NOW = Date.UTC(2026, 10, 20, 12, 30);
const ctx = lib.ctx(NOW);
const { zscores, stateOf, claimViolations, advance, outlivedRollups } = counterState(lib);

// ---------------------------------------------------------------------------------------------
// The model-based property

/** Hot days around a month boundary and mid-month, so quarters, days and months are cut often. */
const HOT_DAYS = [
  Date.UTC(2026, 9, 30),
  Date.UTC(2026, 9, 31),
  Date.UTC(2026, 10, 1),
  Date.UTC(2026, 10, 2),
  Date.UTC(2026, 10, 19),
  Date.UTC(2026, 10, 20),
];
const hot = fc
  .tuple(fc.constantFrom(...HOT_DAYS), fc.integer({ min: 0, max: 23 }))
  .map(([d, h]) => Math.min(periodStart("hour", NOW), d + h * HOUR));
const anyTime = fc.integer({ min: NOW - 399 * DAY, max: NOW }).map((t) => periodStart("hour", t));
const time = fc.oneof({ weight: 5, arbitrary: hot }, { weight: 1, arbitrary: anyTime });
const member = fc.constantFrom("a", "b", "c");
const writeOp = fc
  .array(fc.record({ member, by: fc.constantFrom(-3, -2, -1, 0, 1, 2, 3), at: time }), { minLength: 1, maxLength: 8 })
  .map((writes) => ({ kind: "write" as const, writes }));
/** Short ranges inside the hot days, some up to 400 days. */
const deleteOp = fc
  .tuple(fc.constantFrom("a", "b"), time, fc.oneof(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 9600 })))
  .map(([m, from, hours]) => ({
    kind: "delete" as const,
    member: m,
    from,
    to: Math.min(periodStart("hour", NOW), from + hours * HOUR),
  }));
/** A pair of ops that empties a rollup at 0 and leaves its other hours holding the member (+k, -k). */
const zeroOp = fc
  .tuple(
    fc.constantFrom("a", "b"),
    fc.constantFrom(...HOT_DAYS.slice(0, 4)),
    fc.integer({ min: 0, max: 2 }),
    fc.boolean(),
  )
  .map(([m, day, q, again]) => ({ kind: "zero" as const, member: m, at: day + q * 6 * HOUR, again }));
const recreateOp = fc.constant({ kind: "recreate" as const });
type Op =
  | { kind: "write"; writes: { member: string; by: number; at: number }[] }
  | { kind: "delete"; member: string; from: number; to: number }
  | { kind: "zero"; member: string; at: number; again: boolean }
  | { kind: "recreate" };
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: writeOp },
  { weight: 4, arbitrary: deleteOp },
  { weight: 2, arbitrary: zeroOp },
  { weight: 1, arbitrary: recreateOp },
);
type Life = "new" | "noQ" | "noSQ";

/** Turns `name`'s life into one begun before quarter rollups (noQ) or before any rollup (noSQ). */
async function age(name: string, life: Life) {
  if (life === "new") return;
  const index = counterKeys.index(prefix, name);
  await command(target, "HDEL", index, "q");
  if (life === "noSQ") await command(target, "HDEL", index, "s");
  const fields = await command<string[]>(target, "HKEYS", index);
  const doomed = life === "noQ" ? [":by-quarter:"] : [":by-quarter:", ":by-day:", ":by-month:"];
  for (const f of fields.filter((f) => f.startsWith("b:") && doomed.some((d) => f.includes(d)))) {
    await command(target, "UNLINK", f.slice(2));
    await command(target, "HDEL", index, f);
  }
}

let run = 0;

async function runOps(life: Life, ops: Op[]) {
  const name = `rev-${life}-${run++}`;
  const model = new Map<number, Map<string, number>>();
  const apply = async (writes: { member: string; by: number; at: number }[]) => {
    const items: IncrItem[] = writes.map((w) => ({ member: w.member, by: w.by, period: "hour", at: w.at }));
    await increment(ctx, name, items);
    for (const w of writes) {
      const h = periodStart("hour", w.at);
      const m = model.get(h) ?? new Map<string, number>();
      m.set(w.member, (m.get(w.member) ?? 0) + w.by);
      model.set(h, m);
    }
  };
  const del = async (m: string, from: number, to: number) => {
    const lo = periodStart("hour", from);
    const hi = periodEnd("hour", to);
    const before = await stateOf(name);
    const pruned = "s" in before.fields;
    let expected = 0;
    for (const [h, ms] of model) if (h >= lo && h < hi && ms.has(m)) expected++;
    const got = await deleteMember(ctx, name, m, { period: "hour", from, to }).catch((e: unknown) => e as Error);
    if (got instanceof Error) {
      // only a life read key by key may meet the limit here (the data is a few dozen hours)
      expect(got.message, `${m} ${new Date(from).toISOString()}..${new Date(to).toISOString()}`).toContain(
        "at most 1750 keys",
      );
      expect(pruned).toBe(false);
      const keys = deletePlan("hour", lo, hi).filter((s) => s.level !== "quarter").length;
      expect(keys).toBeGreaterThan(1750);
      // refused before any write
      const after = await stateOf(name);
      expect(hoursJson(after.hours)).toEqual(hoursJson(before.hours));
      expect(after.fields).toEqual(before.fields);
      return;
    }
    expect(got.removed, `removed ${m} ${new Date(lo).toISOString()}..${new Date(hi).toISOString()}`).toBe(expected);
    for (const [h, ms] of model) if (h >= lo && h < hi) ms.delete(m);
  };
  let aged = false;
  for (const o of ops) {
    if (o.kind === "write") await apply(o.writes);
    else if (o.kind === "delete") await del(o.member, o.from, o.to);
    else if (o.kind === "zero") {
      // +3 and -3 in two hours of a quarter, +2 in a third: the delete of the third takes the
      // quarter, day and month to 0 where the member held nothing else; they keep it at 0, as
      // hours outside the range hold it (before, and still where that is unknown: dropped, marked)
      await apply([
        { member: o.member, by: 3, at: o.at + HOUR },
        { member: o.member, by: -3, at: o.at + 2 * HOUR },
        { member: o.member, by: 2, at: o.at + 4 * HOUR },
      ]);
      await del(o.member, o.at + 4 * HOUR, o.at + 4 * HOUR);
      // then a delete under the rollups that one emptied (the removed 3 reaches no rollup)
      if (o.again) await del(o.member, o.at + HOUR, o.at + HOUR);
    } else {
      await deleteCounter(ctx, name);
      model.clear();
      aged = false;
    }
    // the first writes of a life are the old code's
    if (!aged && o.kind !== "recreate" && model.size > 0) {
      await age(name, life);
      aged = true;
    }
    const st = await stateOf(name);
    expect(hoursJson(st.hours)).toEqual(hoursJson(model));
    expect(claimViolations(st, name)).toEqual([]);
    // emptied keys leave the index (the delete infers some keys are not empty without an EXISTS)
    expect(goneButListed(st), "listed, never expiring, gone").toEqual([]);
    if ("s" in st.fields) {
      expect(rollupMismatches(st, "q" in st.fields)).toEqual([]);
      expect(ghosts(st, "q" in st.fields), "held at 0 by a rollup only").toEqual([]);
      // a finished range read after every step: its cached union must follow the deletes
      if (life !== "noSQ") {
        const [from, to] = [HOT_DAYS[0]!, HOT_DAYS[3]! + 23 * HOUR];
        const top = await ranked(ctx, name, "top", 100, { period: "hour", from, to });
        // a new life's rollups list exactly their hours' members (a delete that takes one to 0 keeps
        // the member while an hour holds it), so members held at 0 count too; older lives may hold
        // rollups an older delete marked (z:), which lack such members
        const zeros = life === "new";
        const got = Object.fromEntries(top.items.filter((i) => zeros || i.score !== 0).map((i) => [i.member, i.score]));
        const want = [...modelSum(model, from, periodEnd("hour", to))].filter(([, v]) => zeros || v !== 0);
        expect(got, "cached top").toEqual(Object.fromEntries(want));
      }
    }
  }
  return { name, model };
}

/** Sums of the model over [from, end) (members present, zeros kept). */
function modelSum(model: Map<number, Map<string, number>>, from: number, end: number) {
  const out = new Map<string, number>();
  for (const [h, ms] of model) if (h >= from && h < end) for (const [m, v] of ms) out.set(m, (out.get(m) ?? 0) + v);
  return out;
}

describe("top-down member delete: adversarial sequences against a model", () => {
  for (const life of ["new", "noQ", "noSQ"] as const) {
    it(`${life}: raw hours, removed, the claim and every rollup after mixed writes, partial and zeroing deletes, rewrites`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 3, maxLength: 10 }), async (ops) => {
          const { name, model } = await runOps(life, ops);
          const st = await stateOf(name);
          if (life === "noSQ" || !("s" in st.fields)) return;
          // reads: the top-N union (0 counted as absent: a rollup drops a member at 0) and the member
          // read past the union bound (exact presence), over the hot days and a long range
          const ranges: [number, number][] = [
            [HOT_DAYS[0]! + 5 * HOUR, HOT_DAYS[3]! + 17 * HOUR],
            [HOT_DAYS[1]!, HOT_DAYS[2]! + 23 * HOUR],
            [NOW - 399 * DAY, periodStart("hour", NOW)],
            [HOT_DAYS[4]! + 13 * HOUR, periodStart("hour", NOW)],
          ];
          for (const [from, to] of ranges) {
            const want = modelSum(model, periodStart("hour", from), periodEnd("hour", to));
            const top = await ranked(ctx, name, "top", 100, { period: "hour", from, to });
            const got = Object.fromEntries(top.items.filter((i) => i.score !== 0).map((i) => [i.member, i.score]));
            const wantNonZero = Object.fromEntries([...want].filter(([, v]) => v !== 0));
            expect(got, `top ${new Date(from).toISOString()}..${new Date(to).toISOString()}`).toEqual(wantNonZero);
            // a member at 0 may read as absent: a whole day or month inside the range that dropped
            // it at 0 (z:) answers for its hours, which may hold it at +k and -k (reported)
            for (const m of ["a", "b", "c"])
              expect((await memberPastBound(ctx, name, m, from, to)) ?? 0, `${m} ${new Date(from).toISOString()}`).toBe(
                want.get(m) ?? 0,
              );
          }
        }),
        { numRuns: 25 },
      );
    });
  }
});

// ---------------------------------------------------------------------------------------------
describe("top-down member delete with ttls and expiry", () => {
  const T0 = Date.UTC(2026, 10, 20, 0, 10);
  type TOp =
    | { kind: "write"; items: { member: string; by: number; back: number; ttl: number | undefined }[] }
    | { kind: "advance"; ms: number }
    | { kind: "delete"; member: string; back: number; hours: number };
  const tOp: fc.Arbitrary<TOp> = fc.oneof(
    {
      weight: 3,
      arbitrary: fc
        .array(
          fc.record({
            member,
            by: fc.constantFrom(-2, -1, 1, 2, 3),
            back: fc.integer({ min: 0, max: 8 }),
            ttl: fc.constantFrom(undefined, 300, 1800, 3600, 4 * 3600, 20 * 3600),
          }),
          { minLength: 1, maxLength: 6 },
        )
        .map((items) => ({ kind: "write" as const, items })),
    },
    {
      weight: 2,
      arbitrary: fc
        .constantFrom(60_000, 10 * 60_000, 45 * 60_000, 2 * HOUR, 7 * HOUR)
        .map((ms) => ({ kind: "advance" as const, ms })),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.constantFrom("a", "b"), fc.integer({ min: 0, max: 10 }), fc.integer({ min: 0, max: 12 }))
        .map(([m, back, hours]) => ({ kind: "delete" as const, member: m, back, hours })),
    },
  );
  let tRun = 0;

  it("consistent clocks: every rollup outlives its hours, the claim holds, a delete leaves no live hour in range holding the member", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(tOp, { minLength: 3, maxLength: 14 }), async (ops) => {
        const name = `ttl-${tRun++}`;
        // the callers' clock follows Redis' (real time plus the time travelled): consistent clocks
        const start = Date.now();
        let travelled = 0;
        for (const o of ops) {
          const clock = T0 + travelled + (Date.now() - start);
          const c = lib.ctx(clock);
          if (o.kind === "advance") {
            await advance(name, o.ms);
            travelled += o.ms;
          } else if (o.kind === "write") {
            const items: IncrItem[] = o.items.map((i) => {
              let at = periodStart("hour", clock) - i.back * HOUR;
              // the write refuses a bucket older than its ttl: those go to the current hour
              if (i.ttl !== undefined && periodEnd("hour", at) < clock - i.ttl * 1000) at = clock;
              return { member: i.member, by: i.by, period: "hour", at, ...(i.ttl ? { ttl: i.ttl } : {}) };
            });
            await increment(c, name, items);
          } else {
            const from = periodStart("hour", clock) - o.back * HOUR;
            const to = Math.min(periodStart("hour", clock), from + o.hours * HOUR);
            await deleteMember(c, name, o.member, { period: "hour", from, to });
            const st = await stateOf(name);
            const left = [...st.hours].filter(([h, ms]) => h >= from && h <= to && ms.has(o.member));
            expect(
              left.map(([h]) => new Date(h).toISOString()),
              `${o.member} left in range`,
            ).toEqual([]);
          }
          const st = await stateOf(name);
          expect(await outlivedRollups(st)).toEqual([]);
          expect(claimViolations(st, name)).toEqual([]);
        }
      }),
      { numRuns: 25 },
    );
  });
});

describe("a life begun before quarter rollups, continued by this code", () => {
  /**
   * Such a life (no `q`) still gets quarter rollups for the hours written since (the write always
   * makes them), but its deletes follow the older links and never reach a quarter: the member
   * stays in those quarters. Nothing reads them in that life (reads use quarters only with `q`), so
   * answers are right; the deleted member's counts are left in Redis until the quarters expire
   * (never, without ttl). Was it.fails (the delete's doc says it removes the member from the
   * range's rollups); fixed: such a delete takes it from the quarters above the hours that lost it
   * (delete-zero.ts, `oldQuarters`).
   */
  it("a delete leaves the member in the quarters written since", async () => {
    const name = "old-life-quarters";
    const H = Date.UTC(2026, 10, 10, 7);
    await increment(ctx, name, [{ member: "x", period: "hour", at: H - DAY }]);
    await age(name, "noQ");
    await increment(ctx, name, [{ member: "m", period: "hour", at: H }]);
    const quarter = counterKeys.rollup(prefix, name, "hour", "quarter", Date.UTC(2026, 10, 10, 6));
    expect(await command(target, "ZSCORE", quarter, "m")).toBe("1");
    expect((await deleteMember(ctx, name, "m", { period: "hour", from: H, to: H })).removed).toBe(1);
    expect(await command(target, "ZSCORE", quarter, "m")).toBeNull();
  });

  it("in such a life a partial quarter keeps what its hours outside the range hold, a whole one loses the member", async () => {
    const name = "old-life-quarters-2";
    const H = Date.UTC(2026, 10, 10, 7);
    await increment(ctx, name, [{ member: "x", period: "hour", at: H - DAY }]);
    await age(name, "noQ");
    await increment(
      ctx,
      name,
      [H, H - HOUR, H + 6 * HOUR, H + 8 * HOUR].map((at, i) => ({
        member: "m",
        by: i + 1,
        period: "hour" as const,
        at,
      })),
    );
    const quarter = (h: number) =>
      counterKeys.rollup(prefix, name, "hour", "quarter", Math.floor(h / (6 * HOUR)) * 6 * HOUR);
    // 07:00 to 17:00: hour 06 (m 2) of the 06-12 quarter stays in it; the 12-18 quarter is whole
    const { removed } = await deleteMember(ctx, name, "m", { period: "hour", from: H, to: H + 10 * HOUR });
    expect(removed).toBe(3);
    expect(await command(target, "ZSCORE", quarter(H), "m")).toBe("2");
    expect(await command(target, "ZSCORE", quarter(H + 6 * HOUR), "m")).toBeNull();
    const index = counterKeys.index(prefix, name);
    expect(await command(target, "HEXISTS", index, `b:${quarter(H + 6 * HOUR)}`)).toBe(0);
  });
});

describe("top-down member delete of a day counter (months over days), its index shared with hours", () => {
  const dayTime = fc.oneof(
    fc
      .tuple(fc.constantFrom(...HOT_DAYS), fc.integer({ min: -3, max: 3 }))
      .map(([d, k]) => Math.min(periodStart("day", NOW), d + k * DAY)),
    fc.integer({ min: NOW - 399 * DAY, max: NOW }).map((t) => periodStart("day", t)),
  );
  type DOp =
    | { kind: "write"; writes: { member: string; by: number; at: number }[] }
    | { kind: "delete"; member: string; from: number; days: number };
  const dOp: fc.Arbitrary<DOp> = fc.oneof(
    fc
      .array(fc.record({ member, by: fc.constantFrom(-3, -1, 0, 1, 2, 3), at: dayTime }), {
        minLength: 1,
        maxLength: 8,
      })
      .map((writes) => ({ kind: "write" as const, writes })),
    fc
      .tuple(
        fc.constantFrom("a", "b"),
        dayTime,
        fc.oneof(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 400 })),
      )
      .map(([m, from, days]) => ({ kind: "delete" as const, member: m, from, days })),
  );
  let dRun = 0;

  it("raw days, removed, the months' claim and sums", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(dOp, { minLength: 2, maxLength: 10 }), async (ops) => {
        const name = `day-${dRun++}`;
        // an hour written first: the index (and its s, q) is shared with the day buckets
        await increment(ctx, name, [{ member: "h", period: "hour", at: NOW }]);
        const model = new Map<number, Map<string, number>>();
        for (const o of ops) {
          if (o.kind === "write") {
            await increment(
              ctx,
              name,
              o.writes.map((w) => ({ ...w, period: "day" as const })),
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
          }
          const flat = await command<string[]>(target, "HGETALL", counterKeys.index(prefix, name));
          const fields = new Set(flat.filter((_, i) => i % 2 === 0));
          const days = new Map<number, Map<string, number>>();
          const months = new Map<string, Map<string, number>>();
          for (const f of fields) {
            const m = /:day:(\d{8})$/.exec(f);
            if (f.startsWith("b:") && m) {
              const s = await zscores(f.slice(2));
              if (s.size > 0) days.set(Date.UTC(+m[1]!.slice(0, 4), +m[1]!.slice(4, 6) - 1, +m[1]!.slice(6)), s);
            } else if (f.startsWith("b:") && f.includes(":day:by-month:"))
              months.set(f.slice(2), await zscores(f.slice(2)));
          }
          expect(hoursJson(days)).toEqual(hoursJson(model));
          // the claim (the life has s and q) and, while s holds, the months' sums
          for (const [d, ms] of days) {
            const key = counterKeys.rollup(prefix, name, "day", "month", periodStart("month", d));
            if (fields.has(`z:${key}`)) continue;
            for (const m of ms.keys()) expect(months.get(key)?.has(m), `${key} lacks ${m}`).toBe(true);
          }
          if (fields.has("s"))
            for (const [key, held] of months) {
              const [a, b] = spanOf(key.replace(":day:", ":hour:"));
              const sums = new Map<string, number>();
              for (const [d, ms] of days)
                if (d >= a && d < b) for (const [m, v] of ms) sums.set(m, (sums.get(m) ?? 0) + v);
              const nonZero = (x: Map<string, number>) => Object.fromEntries([...x].filter(([, v]) => v !== 0).sort());
              expect(nonZero(held), key).toEqual(nonZero(sums));
            }
        }
      }),
      { numRuns: 25 },
    );
  });
});
