import { describe, expect, it } from "vitest";
import { isName, memberProblem, utf8Length } from "../../src/validation.ts";

describe("names and members", () => {
  it("accepts names by the contract's pattern only", () => {
    for (const ok of ["a", "A1", "page.views", "x_y-z", "9".repeat(64)]) expect(isName(ok)).toBe(true);
    for (const bad of ["", "-a", ".a", "a:b", "a*", "a{b}", "a b", "é", "9".repeat(65)])
      expect(isName(bad)).toBe(false);
  });

  it("measures members in UTF-8 bytes and refuses control characters", () => {
    expect(memberProblem("a".repeat(256))).toBeNull();
    expect(memberProblem("a".repeat(257))).toMatch(/256/);
    expect(utf8Length("é".repeat(128))).toBe(256);
    expect(memberProblem("é".repeat(128))).toBeNull();
    expect(memberProblem("é".repeat(128) + "a")).toMatch(/256/);
    expect(memberProblem("")).toMatch(/empty/);
    expect(memberProblem("a\nb")).toMatch(/control/);
    expect(memberProblem("a\u0085b")).toMatch(/control/);
    expect(memberProblem("\ud800")).toMatch(/surrogate/);
    expect(memberProblem("😀 ok")).toBeNull();
  });
});
