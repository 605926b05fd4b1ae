/**
 * Review 21 leftovers through the library (real Redis behind the local Upstash server).
 * 2. Leaderboards' maxIncrement with fractional increments: the guard compares the request's sum of
 *    |by| per player, added as doubles in the order of the items (the Lua that ZINCRBY's own double
 *    addition matches), with the bound as the decimal text it was set with. One item exactly at the
 *    bound passes and the next double above it is refused; a batch whose double sum rounds above
 *    the bound is refused, one that rounds to it passes, so the same increments in another order
 *    can be judged otherwise (docs/leaderboards.md, "Guards").
 */
import { describe, expect, it } from "vitest";
import { RejectedError } from "../../src/errors.ts";
import * as lb from "../../src/leaderboards/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { keysUnder } from "../helpers/upstash-rest.ts";

const lib = libraryTest("r21misc");
const T = Date.UTC(2027, 2, 3, 12);

async function refusal(p: Promise<unknown>): Promise<{ code: string; path: string | undefined; message: string }> {
  try {
    await p;
  } catch (error) {
    expect(error).toBeInstanceOf(RejectedError);
    const e = error as RejectedError;
    return { code: e.code, path: e.details?.[0]?.path, message: e.message };
  }
  throw new Error("not refused");
}

describe("review 21: maxIncrement with fractional increments", () => {
  it("one item at the bound passes, the next double above is refused, either sign; set is not bounded", async () => {
    const ctx = lib.ctx(T, "inc-one");
    await lb.configure(ctx, "g", { maxIncrement: 0.3 });
    await lb.join(ctx, "g", "p", { name: "P" });
    expect(await lb.changeScore(ctx, "g", "p", { by: 0.3 })).toMatchObject({ score: 0.3 });
    expect(await lb.changeScore(ctx, "g", "p", { by: -0.3 })).toMatchObject({ score: 0 });
    for (const by of [0.30000000000000004, -0.30000000000000004])
      expect(await refusal(lb.changeScore(ctx, "g", "p", { by }))).toEqual({
        code: "score_rejected",
        path: "",
        message: expect.stringContaining("adds more than maxIncrement 0.3 to 'p'"),
      });
    expect(await lb.changeScore(ctx, "g", "p", { set: 5 })).toMatchObject({ score: 5 });
    expect((await lb.getPlayer(ctx, "g", "p")).score).toBe(5);
  });

  it("a batch's |by| sum is a double sum in item order: 0.3+0.2+0.1 passes 0.6, 0.1+0.2+0.3 is refused, nothing written", async () => {
    const ctx = lib.ctx(T, "inc-batch");
    await lb.configure(ctx, "g", { maxIncrement: 0.6 });
    await lb.join(ctx, "g", "p", { name: "P" });
    await lb.join(ctx, "g", "q", { name: "Q" });
    // 0.1 + 0.2 = 0.30000000000000004, + 0.3 = 0.6000000000000001 > 0.6: refused at the third item
    const before = (await keysUnder(lib.target, ctx.prefix)).sort();
    expect(
      await refusal(
        lb.changeScores(ctx, "g", [
          { player: "p", by: 0.1 },
          { player: "p", by: 0.2 },
          { player: "p", by: 0.3 },
        ]),
      ),
    ).toEqual({ code: "score_rejected", path: "items.2", message: expect.stringContaining("maxIncrement 0.6") });
    expect((await keysUnder(lib.target, ctx.prefix)).sort()).toEqual(before);
    expect((await lb.getPlayer(ctx, "g", "p")).score).toBe(0);
    // 0.3 + 0.2 = 0.5, + 0.1 = 0.6: passes, and ZINCRBY's sum in the same order is 0.6 too
    const done = await lb.changeScores(ctx, "g", [
      { player: "q", by: 0.3 },
      { player: "q", by: 0.2 },
      { player: "q", by: 0.1 },
    ]);
    expect(done.results.map((r) => r.score)).toEqual([0.3, 0.5, 0.6]);
    // the guard adds |by|: +0.2 then -0.1 spends 0.30000000000000004 of a 0.3 bound (refused)
    // though the score moves by 0.1; each player has a bound of their own
    await lb.configure(ctx, "g", { maxIncrement: 0.3 });
    expect(
      await refusal(
        lb.changeScores(ctx, "g", [
          { player: "q", by: 0.3 },
          { player: "p", by: 0.2 },
          { player: "p", by: -0.1 },
        ]),
      ),
    ).toMatchObject({ code: "score_rejected", path: "items.2" });
    expect((await lb.getPlayer(ctx, "g", "q")).score).toBe(0.6);
  });
});
