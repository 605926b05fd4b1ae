/**
 * The leaderboard library on Node against real Redis behind the local Upstash
 * server: random operation sequences compared with a plain in-memory model of
 * the ranking rules (score descending, then the tie policy's order).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { NotFoundError, ValidationError } from "../../src/errors.ts";
import * as lb from "../../src/leaderboards/index.ts";
import { boardKeys } from "../../src/leaderboards/keys.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, keysUnder } from "../helpers/upstash-rest.ts";

const lib = libraryTest("lb-lib", { timeoutMs: 10_000 });
const { target, prefix } = lib;
const ctx = (now = 1_700_000_000_000) => lib.ctx(now);

type Op =
  | { kind: "join"; player: string; score: number }
  | { kind: "by"; player: string; by: number }
  | { kind: "set"; player: string; set: number; mode: "replace" | "best" }
  | { kind: "remove"; player: string };

const player = fc.constantFrom("a", "b", "c", "d", "e");
// small scores so ties are common
const small = fc.integer({ min: -3, max: 3 });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("join" as const), player, score: small }),
  fc.record({ kind: fc.constant("by" as const), player, by: small }),
  fc.record({ kind: fc.constant("by" as const), player, by: small }),
  fc.record({
    kind: fc.constant("set" as const),
    player,
    set: small,
    mode: fc.constantFrom("replace" as const, "best" as const),
  }),
  fc.record({ kind: fc.constant("remove" as const), player }),
);

/** The ranking rules, written plainly. */
class Model {
  seq = 0;
  players = new Map<string, { score: number; tie: number }>();
  readonly ties: lb.TiePolicy;
  constructor(ties: lb.TiePolicy) {
    this.ties = ties;
  }
  apply(o: Op): "ok" | "missing" {
    const p = this.players.get(o.player);
    if (o.kind === "join") {
      if (!p) this.players.set(o.player, { score: o.score, tie: ++this.seq });
      return "ok";
    }
    if (o.kind === "remove") {
      this.players.delete(o.player);
      return "ok";
    }
    if (!p) return "missing";
    const next = o.kind === "by" ? p.score + o.by : o.mode === "best" ? Math.max(p.score, o.set) : o.set;
    if (this.ties === "reached" && next !== p.score) p.tie = ++this.seq;
    p.score = next;
    return "ok";
  }
  ranking(): { player: string; score: number }[] {
    return [...this.players.entries()]
      .sort(([, x], [, y]) => y.score - x.score || x.tie - y.tie)
      .map(([player, { score }]) => ({ player, score }));
  }
}

async function run(board: string, o: Op): Promise<"ok" | "missing"> {
  try {
    if (o.kind === "join") await lb.join(ctx(), board, o.player, { name: o.player.toUpperCase(), score: o.score });
    else if (o.kind === "remove") await lb.removePlayer(ctx(), board, o.player);
    else if (o.kind === "by") await lb.changeScore(ctx(), board, o.player, { by: o.by });
    else await lb.changeScore(ctx(), board, o.player, { set: o.set, mode: o.mode });
    return "ok";
  } catch (error) {
    if (error instanceof NotFoundError) return "missing";
    throw error;
  }
}

describe("ranking against a model", () => {
  for (const ties of ["joined", "reached"] as const) {
    it(`orders by score, then by the '${ties}' tie policy, after any sequence of operations`, async () => {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
          const board = `${ties}-${n++}`;
          await lb.configure(ctx(), board, ties);
          const model = new Model(ties);
          for (const o of ops) expect(await run(board, o)).toBe(model.apply(o));
          const want = model.ranking();
          const page = await lb.page(ctx(), board, { limit: 100 });
          expect(page.items.map(({ player, score }) => ({ player, score }))).toEqual(want);
          expect(page.total).toBe(want.length);
          for (const [i, row] of want.entries()) {
            const got = await lb.getPlayer(ctx(), board, row.player);
            expect(got.rank).toBe(i + 1);
            expect(got.name).toBe(row.player.toUpperCase());
          }
          await lb.deleteBoard(ctx(), board);
        }),
        { numRuns: 20 },
      );
      expect((await keysUnder(target, prefix)).filter((k) => k.includes(`:lb:${ties}-`))).toEqual([]);
    });
  }
});

describe("library guards", () => {
  it("refuses bad input before any Redis call", async () => {
    const before = await keysUnder(target, prefix);
    await expect(lb.join(ctx(), "bad name", "p", { name: "x" })).rejects.toBeInstanceOf(ValidationError);
    await expect(lb.join(ctx(), "b", "p", { name: "x", score: Number.NaN })).rejects.toBeInstanceOf(ValidationError);
    await expect(lb.changeScore(ctx(), "b", "p", { by: Infinity })).rejects.toBeInstanceOf(ValidationError);
    await expect(lb.changeScore(ctx(), "b", "p", { set: 1, mode: "worst" as never })).rejects.toBeInstanceOf(
      ValidationError,
    );
    await expect(lb.configure(ctx(), "b", "first" as never)).rejects.toBeInstanceOf(ValidationError);
    await expect(lb.page(ctx(), "b", { limit: 101 })).rejects.toBeInstanceOf(ValidationError);
    await expect(lb.changeScores(ctx(), "b", [])).rejects.toBeInstanceOf(ValidationError);
    // a meta JSON would not store as sent: a __proto__ key (at any depth), a non-finite number
    for (const meta of [
      JSON.parse('{"__proto__":{"a":1}}') as Record<string, unknown>,
      JSON.parse('{"a":[{"__proto__":1}]}') as Record<string, unknown>,
      { a: { b: [1, Infinity] } },
      { n: Number.NaN },
    ])
      await expect(lb.join(ctx(), "b", "p", { name: "x", meta })).rejects.toBeInstanceOf(ValidationError);
    expect(await keysUnder(target, prefix)).toEqual(before);
  });

  it("stores fixed-width members and negated scores, as the scheme says", async () => {
    await lb.join(ctx(), "scheme", "zed", { name: "Zed", score: 42 });
    await lb.join(ctx(), "scheme", "amy", { name: "Amy", score: 42 });
    const k = boardKeys(prefix, "scheme");
    const raw = await command<string[]>(target, "ZRANGE", k.ranking, 0, -1, "WITHSCORES");
    expect(raw).toEqual(["000000000000001:zed", "-42", "000000000000002:amy", "-42"]);
    // the earlier joiner wins the tie even though its name sorts later
    expect((await lb.page(ctx(), "scheme")).items.map((r) => r.player)).toEqual(["zed", "amy"]);
  });

  it("keeps the largest exact scores exact through increments", async () => {
    await lb.join(ctx(), "exact", "p", { name: "P", score: 999_999_999_999_999 });
    const down = await lb.changeScore(ctx(), "exact", "p", { by: -1_000_000_000_000 });
    expect(down.score).toBe(999_999_999_999_999 - 1_000_000_000_000);
    const up = await lb.changeScore(ctx(), "exact", "p", { by: 1_000_000_000_000 });
    expect(up.score).toBe(999_999_999_999_999);
    expect((await lb.changeScore(ctx(), "exact", "p", { by: 1 })).score).toBe(1e15);
    await expect(lb.changeScore(ctx(), "exact", "p", { set: -1e15 - 1 })).rejects.toBeInstanceOf(ValidationError);
    await expect(
      lb.changeScores(ctx(), "exact", [
        { player: "p", by: -1 },
        { player: "p", by: 2 },
      ]),
    ).rejects.toBeInstanceOf(ValidationError);
    expect((await lb.getPlayer(ctx(), "exact", "p")).score).toBe(1e15);
  });
});
