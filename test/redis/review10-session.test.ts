/**
 * Review 10 (session), library side: the member delete that keeps a member at 0 in partial
 * rollups (src/counters/delete-zero.ts, delete-layout.ts `deleteOutside`), read back through every
 * read shape against a naive model of the hours. test/redis/counters-delete-model.test.ts checks
 * the stored state and one fixed range's top after each step; this file aims at what it does not
 * vary: the read's range (start and end inside quarters, days and months, across the month
 * boundary, each cached finished range read again after later deletes), its side (top and bottom),
 * the member read (score, presence at 0, and its rank against the top list's order), and
 * deletes laid out to leave partial rollups at exactly 0 on both sides of a range.
 * Deterministic: fast-check with a fixed seed. Real parts: the library on real Redis.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { deleteMember, increment, memberOf, ranked, type IncrItem } from "../../src/counters/index.ts";
import { NotFoundError } from "../../src/errors.ts";
import { HOUR } from "../../src/time.ts";
import { libraryTest } from "../helpers/library.ts";

const lib = libraryTest("r10sess-counters", { timeoutMs: 60_000 });
const NOW = Date.UTC(2026, 10, 20, 12, 30);
const ctx = lib.ctx(NOW);

/** Two days each side of the month boundary: quarters, days and a month cut by every range. */
const BASE = Date.UTC(2026, 9, 30);
const SPAN_HOURS = 4 * 24;
const hourAt = (i: number) => BASE + i * HOUR;
const MEMBERS = ["a", "b", "c"] as const;

type Model = Map<number, Map<string, number>>;

const write = fc
  .array(
    fc.record({
      member: fc.constantFrom(...MEMBERS),
      by: fc.constantFrom(-3, -2, -1, 1, 2, 3),
      h: fc.integer({ min: 0, max: SPAN_HOURS - 1 }),
    }),
    { minLength: 1, maxLength: 6 },
  )
  .map((writes) => ({ kind: "write" as const, writes }));
/** +k and -k in two hours of one quarter (or day), +j in a third: the third's delete leaves its rollups at 0. */
const zero = fc
  .record({
    member: fc.constantFrom("a", "b"),
    h: fc.integer({ min: 0, max: SPAN_HOURS - 30 }),
    k: fc.integer({ min: 1, max: 4 }),
    gaps: fc.tuple(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 8 })),
    j: fc.integer({ min: 1, max: 4 }),
    width: fc.integer({ min: 0, max: 2 }),
  })
  .map((z) => ({ kind: "zero" as const, ...z }));
const del = fc
  .record({
    member: fc.constantFrom(...MEMBERS),
    h: fc.integer({ min: 0, max: SPAN_HOURS - 1 }),
    len: fc.oneof(fc.integer({ min: 0, max: 8 }), fc.integer({ min: 0, max: 60 })),
  })
  .map((d) => ({ kind: "delete" as const, ...d }));
const range = fc
  .tuple(fc.integer({ min: 0, max: SPAN_HOURS - 1 }), fc.integer({ min: 0, max: SPAN_HOURS - 1 }))
  .map(([x, y]) => [Math.min(x, y), Math.max(x, y)] as const);
type Op =
  | { kind: "write"; writes: { member: string; by: number; h: number }[] }
  | { kind: "zero"; member: string; h: number; k: number; gaps: [number, number]; j: number; width: number }
  | { kind: "delete"; member: string; h: number; len: number };

/** Ranges every step reads again (finished: cached unions that later deletes must move on). */
const FIXED: (readonly [number, number])[] = [
  [0, SPAN_HOURS - 1], // whole days both sides of the month boundary
  [3, 50], // starts and ends inside quarters
  [25, 47], // one whole day but its first hour
  [6, 17], // two whole quarters
  [40, 80], // across the month boundary, partial days
];

function sumOf(model: Model, lo: number, hi: number): Map<string, number> {
  const out = new Map<string, number>();
  for (let i = lo; i <= hi; i++)
    for (const [m, v] of model.get(i) ?? new Map<string, number>()) out.set(m, (out.get(m) ?? 0) + v);
  return out;
}

let run = 0;

async function check(name: string, model: Model, [lo, hi]: readonly [number, number], label: string) {
  const options = { period: "hour" as const, from: hourAt(lo), to: hourAt(hi) };
  const want = Object.fromEntries(sumOf(model, lo, hi));
  const top = await ranked(ctx, name, "top", 100, options);
  const bottom = await ranked(ctx, name, "bottom", 100, options);
  const asMap = (items: { member: string; score: number }[]) =>
    Object.fromEntries(items.map((i) => [i.member, i.score]));
  expect(asMap(top.items), `${label} top [${lo}, ${hi}]`).toEqual(want);
  expect(asMap(bottom.items), `${label} bottom [${lo}, ${hi}]`).toEqual(want);
  expect(
    bottom.items.map((i) => i.member),
    `${label} bottom is top reversed`,
  ).toEqual(top.items.map((i) => i.member).reverse());
  for (const m of MEMBERS) {
    const got = await memberOf(ctx, name, m, options).catch((e: unknown) => e);
    if (m in want) {
      expect(got, `${label} member ${m} [${lo}, ${hi}]`).not.toBeInstanceOf(Error);
      const read = got as { score: number; rank: number | null };
      expect(read.score, `${label} member ${m} [${lo}, ${hi}]`).toBe(want[m]);
      expect(read.rank, `${label} rank ${m}`).toBe(top.items.findIndex((i) => i.member === m) + 1);
    } else {
      expect(got, `${label} member ${m} absent [${lo}, ${hi}]`).toBeInstanceOf(NotFoundError);
    }
  }
}

async function runOps(ops: Op[], reads: (readonly [number, number])[]) {
  const name = `r10s-${run++}`;
  const model: Model = new Map();
  const apply = async (writes: { member: string; by: number; h: number }[]) => {
    const items: IncrItem[] = writes.map((w) => ({ member: w.member, by: w.by, period: "hour", at: hourAt(w.h) }));
    await increment(ctx, name, items);
    for (const w of writes) {
      const m = model.get(w.h) ?? new Map<string, number>();
      m.set(w.member, (m.get(w.member) ?? 0) + w.by);
      model.set(w.h, m);
    }
  };
  const remove = async (member: string, lo: number, hi: number) => {
    let expected = 0;
    for (let i = lo; i <= hi; i++) if (model.get(i)?.has(member)) expected++;
    const got = await deleteMember(ctx, name, member, { period: "hour", from: hourAt(lo), to: hourAt(hi) });
    expect(got.removed, `removed ${member} [${lo}, ${hi}]`).toBe(expected);
    for (let i = lo; i <= hi; i++) model.get(i)?.delete(member);
  };
  for (const [step, o] of ops.entries()) {
    if (o.kind === "write") await apply(o.writes);
    else if (o.kind === "delete") await remove(o.member, o.h, Math.min(SPAN_HOURS - 1, o.h + o.len));
    else {
      const a = o.h;
      const b = a + o.gaps[0];
      const c = b + o.gaps[1];
      await apply([
        { member: o.member, by: o.k, h: a },
        { member: o.member, by: -o.k, h: b },
        { member: o.member, by: o.j, h: c },
      ]);
      // the third hour alone (or with its neighbours): its rollups' sums go to exactly 0
      await remove(o.member, Math.max(c - o.width, b + 1), Math.min(SPAN_HOURS - 1, c + o.width));
    }
    for (const r of [...FIXED, ...reads]) await check(name, model, r, `step ${step} ${o.kind}`);
  }
}

describe("member delete keeping members at 0: every read shape against a naive model", () => {
  it("held at 0 on both sides of a range: top, bottom, member reads over ranges cut anywhere", async () => {
    // +2 at 01:00 and -2 at 04:00 (quarter 00-06), +5 at 08:00 (quarter 06-12), then delete 08:00:
    // the 06-12 quarter and the day hold the member at 0 (the quarter holds nothing else: dropped)
    await runOps(
      [
        {
          kind: "write",
          writes: [
            { member: "a", by: 2, h: 1 },
            { member: "a", by: -2, h: 4 },
            { member: "a", by: 5, h: 8 },
            { member: "b", by: 1, h: 30 },
          ],
        },
        { kind: "delete", member: "a", h: 8, len: 0 },
        { kind: "delete", member: "a", h: 1, len: 0 },
        { kind: "write", writes: [{ member: "a", by: 3, h: 50 }] },
        { kind: "delete", member: "a", h: 4, len: 46 },
      ],
      [
        [0, 5],
        [2, 23],
        [4, 4],
        [0, 23],
      ],
    );
  });

  it("random sequences (fixed seed)", { timeout: 300_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof({ weight: 3, arbitrary: write }, { weight: 3, arbitrary: zero }, { weight: 3, arbitrary: del }),
          {
            minLength: 3,
            maxLength: 10,
          },
        ),
        fc.array(range, { minLength: 2, maxLength: 3 }),
        async (ops, reads) => runOps(ops, reads),
      ),
      { numRuns: 12, seed: 20261127, endOnFailure: true },
    );
  });
});
