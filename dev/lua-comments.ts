/**
 * The Worker bundle's Lua without its whole-line comments and its indentation (dev/build-worker.ts,
 * `luaComments`). The comments say why a script does what it does; they are for readers of the
 * source, and in the bundle they were ~36 KB of its text (the gzip budget, dev/bundle-size.ts, had
 * 1.4 KiB left). The indentation (nested blocks, the prelude's, the `lua:` templates') was another
 * ~13 KB of text and 2.2 KiB of the bundle's gzip: Lua, like the TypeScript around it, ignores
 * whitespace at a line's start but inside a long string, which no script uses.
 * A script's SHA-1 is computed at run time from the text it ships with, so the bundle's scripts
 * simply have other SHA-1s than the source's (each is loaded by EVAL on its first call).
 *
 * Only modules that define Lua (`defineScript(`, `defineLua(`, or a Lua text exported as a
 * `NAME_LUA` constant that scripts splice in, e.g. src/counters/trim.ts) are touched, and only
 * lines that are a Lua comment and nothing else: optional indentation, `--`, then a space or the
 * line's end; and then every line's leading spaces and tabs. TypeScript never has such a comment
 * line here (prettier writes a decrement as `--x`), and Lua reads a line starting with `--` as a
 * comment everywhere but inside a long string (`[[`), which no script uses; every template literal
 * of these modules that spans indented lines is Lua (a script's `lua`, a `defineLua` text, a
 * `NAME_LUA` constant), and every script parses to the same Lua once stripped
 * (test/unit/lua-comments.test.ts checks all three).
 */
export const LUA_COMMENT_LINE = /^[ \t]*--(?: .*)?\r?\n/gm;

/** A module's own Lua: a script, a shared library, or a Lua text constant (`export const X_LUA = \``). */
const DEFINES_LUA = /defineScript\(|defineLua\(|^export const [A-Z][A-Z0-9_]*_LUA = `/m;

/** A line's indentation. */
export const LINE_INDENT = /^[ \t]+/gm;

/**
 * The source less its whole-line Lua comments and every line's indentation, or the source itself
 * when it defines no Lua.
 */
export function stripLuaComments(source: string): string {
  if (!DEFINES_LUA.test(source)) return source;
  return source.replace(LUA_COMMENT_LINE, "").replace(LINE_INDENT, "");
}
