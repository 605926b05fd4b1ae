/**
 * The counters' one script refusal: `sorted` over more than MAX_SORTED_MEMBERS members is
 * refused by the script (`too_many_members`, 400) after one ZCARD, for the plain counter and for
 * an unfinished range, whose scratch union the script still deletes.
 */
import { describe, expect, it } from "vitest";
import { increment, MAX_SORTED_MEMBERS, sorted, type IncrItem } from "../../src/counters/index.ts";
import { ValidationError } from "../../src/errors.ts";
import { libraryTest } from "../helpers/library.ts";
import { keysUnder } from "../helpers/upstash-rest.ts";

const lib = libraryTest("counters-ref");
const NOW = Date.UTC(2026, 10, 22, 12);
const ctx = lib.ctx(NOW);

describe("sorted: too many members", () => {
  it(`refuses a counter of more than ${MAX_SORTED_MEMBERS} members, plain or over a range`, async () => {
    const n = MAX_SORTED_MEMBERS + 1;
    for (let i = 0; i < n; i += 1000) {
      const items: IncrItem[] = [];
      for (let j = i; j < Math.min(n, i + 1000); j++)
        items.push({ member: `m${j}` }, { member: `m${j}`, period: "day", at: j % 2 === 0 ? NOW : NOW - 86_400_000 });
      for (let k = 0; k < items.length; k += 1000) await increment(ctx, "big", items.slice(k, k + 1000));
    }
    const message = `Counter 'big' has ${n} members; sorted reads return at most ${MAX_SORTED_MEMBERS}. Use top, bottom or range instead.`;
    for (const options of [{}, { period: "day" as const, from: NOW - 86_400_000, to: NOW }]) {
      const error = await sorted(ctx, "big", options).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect(error).toMatchObject({ code: "too_many_members", message });
    }
    // the unfinished range's union was scratch: gone with the refusal
    expect(await keysUnder(lib.target, `${lib.prefix}:counters:big:union`)).toEqual([]);
    await increment(ctx, "small", [{ member: "b" }, { member: "a" }]);
    expect((await sorted(ctx, "small")).items.map((i) => i.member)).toEqual(["a", "b"]);
  });
});
