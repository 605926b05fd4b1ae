/// <reference types="vite/client" />
/**
 * The Worker bundle drops the library's whole-line Lua comments and its lines' indentation
 * (dev/lua-comments.ts, used by dev/build-worker.ts). That is safe only if every line it drops lies
 * inside a template literal (the Lua), if every template literal whose indentation it takes is Lua,
 * and if no script has a Lua long string (`[[`), inside which `--` and indentation are text.
 * Checked over every module of src/ with TypeScript's own parser, and every script still parses,
 * to the same Lua, once stripped.
 */
import luaparse from "luaparse";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { LINE_INDENT, LUA_COMMENT_LINE, stripLuaComments } from "../../dev/lua-comments.ts";
import type { Script } from "../../src/redis/script.ts";

const sources = import.meta.glob<string>(["../../src/**/*.ts"], { eager: true, query: "?raw", import: "default" });
const modules = import.meta.glob<Record<string, unknown>>(["../../src/**/*.ts"], { eager: true });

/** [start, end) of every template literal of a module (its text between the backticks). */
function templateRanges(file: string, text: string): [number, number][] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out: [number, number][] = [];
  const visit = (node: ts.Node) => {
    if (ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node))
      out.push([node.getStart(source), node.getEnd()]);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

describe("the bundle's Lua without whole-line comments", () => {
  it("drops only lines inside template literals, in the modules that define Lua", () => {
    const outside: string[] = [];
    let dropped = 0;
    for (const [file, text] of Object.entries(sources)) {
      if (stripLuaComments(text) === text) continue;
      const ranges = templateRanges(file, text);
      for (const m of text.matchAll(LUA_COMMENT_LINE)) {
        dropped++;
        const at = m.index;
        if (!ranges.some(([a, b]) => at > a && at < b)) outside.push(`${file}: ${m[0].trim()}`);
      }
    }
    expect(outside).toEqual([]);
    expect(dropped).toBeGreaterThan(300);
  });

  it("touches every module whose Lua has whole-line comments (a `NAME_LUA` text spliced into scripts too)", () => {
    // src/counters/trim.ts defines no script, only TRIM_LUA, and its comments shipped in the bundle
    const kept = Object.entries(sources)
      .filter(([, text]) => /export const [A-Z][A-Z0-9_]*_LUA = `/.test(text) || /define(Script|Lua)\(/.test(text))
      .filter(([, text]) => stripLuaComments(text) === text && new RegExp(LUA_COMMENT_LINE.source, "m").test(text))
      .map(([file]) => file);
    expect(kept).toEqual([]);
    expect(stripLuaComments(sources["../../src/counters/trim.ts"]!)).not.toEqual(sources["../../src/counters/trim.ts"]);
  });

  it("takes indentation only from Lua: a script's `lua`, a `defineLua` text, a `NAME_LUA` constant", () => {
    /** Where a template literal is: the property, constant or call it is the value of. */
    const placeOf = (node: ts.Node, file: ts.SourceFile): string => {
      const parent = node.parent;
      if (ts.isPropertyAssignment(parent)) return `property ${parent.name.getText(file)}`;
      if (ts.isVariableDeclaration(parent)) return `constant ${parent.name.getText(file)}`;
      if (ts.isCallExpression(parent)) return `call ${parent.expression.getText(file)}`;
      return ts.SyntaxKind[parent.kind];
    };
    const notLua: string[] = [];
    let indented = 0;
    for (const [file, text] of Object.entries(sources)) {
      if (stripLuaComments(text) === text) continue;
      const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
      const visit = (node: ts.Node) => {
        if (ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node)) {
          // the literal's own text: its lines after the first, which the strip may change
          if (new RegExp(LINE_INDENT.source, "m").test(node.getText(source).split("\n").slice(1).join("\n"))) {
            indented++;
            const place = placeOf(node, source);
            if (!/^(property lua|constant [A-Z][A-Z0-9_]*_LUA|call defineLua)$/.test(place))
              notLua.push(`${file}: ${place}`);
          }
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    expect(notLua).toEqual([]);
    expect(indented).toBeGreaterThan(50);
  });

  it("leaves every script's text parsing as Lua 5.1, to the same Lua, with no long string in it", () => {
    const scripts = Object.values(modules)
      .flatMap((m) => Object.values(m))
      .filter((v): v is Script => typeof v === "object" && v !== null && "text" in v && "name" in v);
    expect(scripts.length).toBeGreaterThan(40);
    // the syntax tree without comments and positions: what Redis runs
    const tree = (lua: string) =>
      JSON.stringify(luaparse.parse(lua, { luaVersion: "5.1", comments: false, locations: false, ranges: false }));
    let shorter = 0;
    for (const script of scripts) {
      expect(script.text.includes("[["), script.name).toBe(false);
      const stripped = stripLuaComments(`defineLua(\n${script.text}\n`).slice("defineLua(\n".length);
      expect(tree(stripped), script.name).toBe(tree(script.text));
      if (stripped.length < script.text.length) shorter++;
    }
    expect(shorter).toBe(scripts.length);
  });
});
