import { describe, expect, it } from "vitest";
import { boardKeys, playerOfMember, registryKey, SEQ_WIDTH, snapshotStateKey } from "../../src/leaderboards/keys.ts";
import {
  changeIssues,
  MAX_META_BYTES,
  metaProblem,
  negated,
  profileIssues,
  scoreOf,
  scoreProblem,
} from "../../src/leaderboards/validate.ts";

describe("leaderboard scores", () => {
  it("negates scores without ever producing -0 and reads them back exactly", () => {
    expect(negated(0)).toBe("0");
    expect(negated(-0)).toBe("0");
    expect(negated(5)).toBe("-5");
    expect(negated(-12.5)).toBe("12.5");
    expect(Object.is(scoreOf("-0"), 0)).toBe(true);
    expect(Object.is(scoreOf("0"), 0)).toBe(true);
    for (const v of [1e15, -1e15, 999_999_999_999_999, 2 ** 53 - 1, 0.1, -3.25]) expect(scoreOf(negated(v))).toBe(v);
  });

  it("accepts finite scores within ±1e15 and increments within ±1e12", () => {
    expect(scoreProblem(1e15)).toBeNull();
    expect(scoreProblem(-1e15)).toBeNull();
    expect(scoreProblem(1e15 + 1)).toMatch(/within/);
    expect(scoreProblem(Number.NaN)).toMatch(/finite/);
    expect(scoreProblem(Infinity)).toMatch(/finite/);
    expect(scoreProblem("1")).toMatch(/finite/);
    expect(changeIssues({ by: 1e12 }, "").filter(Boolean)).toEqual([]);
    expect(changeIssues({ by: 1e12 + 1 }, "")[0]?.path).toBe("by");
    expect(changeIssues({ set: 1, mode: "worst" as never }, "items.2.")[1]?.path).toBe("items.2.mode");
  });

  it("checks profiles: name as a member, meta an object of bounded size", () => {
    expect(profileIssues("Alice", { a: 1 }, 3).filter(Boolean)).toEqual([]);
    expect(profileIssues("", null, undefined)[0]?.path).toBe("name");
    expect(metaProblem([1])).toMatch(/object/);
    expect(metaProblem("x")).toMatch(/object/);
    expect(metaProblem({ s: "x".repeat(MAX_META_BYTES) })).toMatch(/bytes/);
    expect(metaProblem(null)).toBeNull();
    // what JSON would not store as sent, at any depth; a key or string named __proto__ is fine
    expect(metaProblem(JSON.parse('{"__proto__":"x"}'))).toMatch(/__proto__/);
    expect(metaProblem(JSON.parse('{"a":{"b":[{"__proto__":{}}]}}'))).toMatch(/__proto__/);
    expect(metaProblem({ a: [1, 2, -Infinity] })).toMatch(/finite/);
    expect(metaProblem(JSON.parse('{"n":1e400}'))).toMatch(/finite/);
    expect(metaProblem({ proto: "__proto__", constructor: 1, a: [null, { b: 1.5 }] })).toBeNull();
  });
});

describe("leaderboard keys", () => {
  it("gives each board a fixed set of keys apart from the registry", () => {
    const k = boardKeys("es", "g1");
    expect(Object.values(k)).toEqual([
      "es:lb:g1:settings",
      "es:lb:g1:ranking",
      "es:lb:g1:players",
      "es:lb:g1:profiles",
      "es:lb:g1:snap",
      "es:lb:g1:snap:next",
    ]);
    // a board name cannot start with '_', so no board's keys can be the registry or the snapshot job's state
    expect(registryKey("es")).toBe("es:lb:_boards");
    expect(snapshotStateKey("es")).toBe("es:lb:_snap");
  });

  it("reads the player back from a fixed-width member", () => {
    const member = `${"7".padStart(SEQ_WIDTH, "0")}:p.1-x`;
    expect(playerOfMember(member)).toBe("p.1-x");
    // lexicographic order of fixed-width sequences is numeric order
    const a = `${"9".padStart(SEQ_WIDTH, "0")}:z`;
    const b = `${"10".padStart(SEQ_WIDTH, "0")}:a`;
    expect(a < b).toBe(true);
  });
});
