/// <reference types="vite/client" />
/**
 * Every Lua script keeps its declared contract (src/redis/script.ts, defineScript):
 * - its name is `<feature>.<op>`, and no two scripts share one;
 * - its body reads only its declared keys and arguments, the functions of the shared Lua it
 *   `uses` and Lua/Redis builtins: an undeclared name is a global, which Redis refuses to read
 *   at run time only on the path that reaches it;
 * - it never reads KEYS or ARGV itself (the generated header does, by name);
 * - every declared key and argument is used;
 * - shared Lua reads only its parameters, its own locals and the libraries it declares.
 * The whole generated text parses as Lua 5.1 and reads no global but builtins.
 */
import luaparse from "luaparse";
import { describe, expect, it } from "vitest";
import { defineScript, type ContractScript, type LuaLibrary, type Script } from "../../src/redis/script.ts";

/** What Redis's Lua offers scripts. */
const BUILTINS = new Set([
  "redis",
  "cjson",
  "cmsgpack",
  "struct",
  "bit",
  "string",
  "math",
  "table",
  "tonumber",
  "tostring",
  "type",
  "ipairs",
  "pairs",
  "unpack",
  "error",
  "pcall",
  "xpcall",
  "next",
  "select",
  "assert",
  "rawget",
  "rawset",
  "setmetatable",
  "getmetatable",
]);

const modules = import.meta.glob<Record<string, unknown>>(
  // scripts live in the library only (the Worker's modules would also load the dashboard's browser code)
  ["../../src/**/*.ts"],
  { eager: true },
);

function isScript(value: unknown): value is Script {
  return (
    typeof value === "object" &&
    value !== null &&
    "text" in value &&
    "name" in value &&
    typeof (value as Script).text === "string"
  );
}

function collect(): Script[] {
  const seen = new Set<Script>();
  const visit = (value: unknown) => {
    if (isScript(value)) seen.add(value);
    else if (
      value &&
      typeof value === "object" &&
      !Array.isArray(value) &&
      Object.getPrototypeOf(value) === Object.prototype
    ) {
      for (const v of Object.values(value as Record<string, unknown>)) if (isScript(v)) seen.add(v);
    }
  };
  for (const mod of Object.values(modules)) for (const value of Object.values(mod)) visit(value);
  return [...seen];
}

/** The names a chunk reads or writes without declaring them (luaparse's scope analysis). */
function freeNames(lua: string): Set<string> {
  const chunk = luaparse.parse(lua, { scope: true, luaVersion: "5.1" }) as { globals?: { name: string }[] };
  return new Set((chunk.globals ?? []).map((g) => g.name));
}

function librariesOf(uses: readonly LuaLibrary[], out: LuaLibrary[] = []): LuaLibrary[] {
  for (const lib of uses) {
    if (out.includes(lib)) continue;
    librariesOf(lib.uses, out);
    out.push(lib);
  }
  return out;
}

const scripts = collect();
const contracts = scripts.filter((s): s is ContractScript => "spec" in s);

describe("script contracts", () => {
  it("finds the scripts", () => {
    expect(scripts.length).toBeGreaterThan(40);
  });

  it("declares every script with defineScript", () => {
    expect(scripts.filter((s) => !("spec" in s)).map((s) => s.name)).toEqual([]);
  });

  it("refuses a name declared twice (a script's own argument clashing with a shared list's)", () => {
    expect(() =>
      defineScript({ name: "test.twice", write: false, keys: ["a"], args: ["limit", "...limit"], lua: "return 1" }),
    ).toThrow("test.twice: limit declared twice");
  });

  it("names every script <feature>.<op>, each once", () => {
    const names = scripts.map((s) => s.name);
    for (const name of names) expect(name).toMatch(/^[a-z]+\.[a-z][A-Za-z]*$/);
    expect(new Set(names).size).toBe(names.length);
  });

  it("names script constants <op>Script and shared Lua <name>Lua", () => {
    const sources = import.meta.glob<string>(["../../src/**/*.ts"], { eager: true, query: "?raw", import: "default" });
    const bad: string[] = [];
    for (const [file, text] of Object.entries(sources)) {
      for (const m of text.matchAll(/\bconst (\w+)\s*=\s*define(Script|Lua)\(/g)) {
        const [, constant = "", kind = ""] = m;
        if (!new RegExp(`^[a-z][A-Za-z0-9]*${kind}$`).test(constant)) bad.push(`${file}: ${constant}`);
      }
    }
    expect(Object.keys(sources).length).toBeGreaterThan(40);
    expect(bad).toEqual([]);
  });

  it("every script's whole text parses and reads no global but builtins", () => {
    for (const script of scripts) {
      const text = script.text.split("\n").slice(1).join("\n");
      const free = [...freeNames(text)].filter((n) => !BUILTINS.has(n) && n !== "KEYS" && n !== "ARGV");
      expect(free, script.name).toEqual([]);
    }
  });

  it.each(contracts.map((s) => [s.name, s] as const))(
    "%s reads only what it declares, and uses all of it",
    (_name, script) => {
      const libs = librariesOf(script.spec.uses ?? []);
      const provided = new Set([...script.declared, ...libs.flatMap((l) => l.exports)]);
      const free = freeNames(script.spec.lua);
      expect(free.has("KEYS") || free.has("ARGV"), `${script.name} reads KEYS/ARGV by position`).toBe(false);
      const undeclared = [...free].filter((n) => !BUILTINS.has(n) && !provided.has(n));
      expect(undeclared, `${script.name}: undeclared names`).toEqual([]);
      const unused = script.declared.filter((n) => !free.has(n));
      expect(unused, `${script.name}: declared but unused`).toEqual([]);
      const unusedLibs = (script.spec.uses ?? []).filter((l) => !l.exports.some((e) => free.has(e)));
      expect(
        unusedLibs.map((l) => l.name),
        `${script.name}: libraries it does not call`,
      ).toEqual([]);
    },
  );

  it("a result declared up front reads only the script's declared names and builtins", () => {
    const upFront = contracts.filter((s) => s.spec.resultUpFront !== undefined);
    expect(upFront.map((s) => s.name)).toContain("histograms.observe");
    for (const script of upFront) {
      expect(script.write, script.name).toBe(true);
      const free = [...freeNames(`return ${script.spec.resultUpFront}`)];
      expect(
        free.filter((n) => !BUILTINS.has(n) && !script.declared.includes(n)),
        script.name,
      ).toEqual([]);
      expect(free.includes("KEYS") || free.includes("ARGV"), script.name).toBe(false);
    }
  });

  it("shared Lua reads only its parameters, its locals and the libraries it declares", () => {
    const libs = librariesOf(contracts.flatMap((s) => s.spec.uses ?? []));
    for (const lib of libs) {
      const provided = new Set(librariesOf(lib.uses).flatMap((l) => l.exports));
      const free = [...freeNames(lib.lua)].filter((n) => !BUILTINS.has(n) && !provided.has(n));
      expect(free, lib.name).toEqual([]);
      for (const name of lib.exports)
        expect(lib.lua, `${lib.name} defines ${name}`).toMatch(new RegExp(`local\\s+(function\\s+)?${name}\\b`));
    }
  });
});
