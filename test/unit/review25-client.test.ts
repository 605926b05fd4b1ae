/**
 * Review 25: the public option types of both entries (`edgestats`, src/index.ts, and
 * `edgestats/client`, src/client.ts), read through the TypeScript checker: every optional property
 * of an exported `…Options`, `…Input`, `…Config` or `…Settings` type says in JSDoc what leaving it
 * out means (`@default`), so that an editor's hover tells what a call does without it. Each bug found was fixed in
 * review 25's second phase; the comment above its test says what was wrong, its severity and the fix.
 */
import { resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const entries = ["src/index.ts", "src/client.ts"].map((file) => resolve(root, file));
const program = ts.createProgram(entries, {
  allowImportingTsExtensions: true,
  noEmit: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  strict: true,
});
const checker = program.getTypeChecker();

/** `entry: Type.property` for each optional property of an exported option type without `@default`, one level deep. */
function undocumented(): string[] {
  const missing: string[] = [];
  for (const entry of entries) {
    const module = checker.getSymbolAtLocation(program.getSourceFile(entry)!)!;
    for (const exported of checker.getExportsOfModule(module)) {
      if (!/(Options|Input|Config|Settings)$/.test(exported.name)) continue;
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const type = checker.getDeclaredTypeOfSymbol(symbol);
      for (const property of checker.getPropertiesOfType(type)) {
        if (!(property.flags & ts.SymbolFlags.Optional)) continue;
        const tags = property.getJsDocTags(checker).map((tag) => tag.name);
        // an object of settings says its defaults on its own properties
        const inner = checker.getTypeOfSymbol(property).getNonNullableType();
        const settings =
          (inner.flags & ts.TypeFlags.Object) !== 0 &&
          inner.getCallSignatures().length === 0 &&
          inner.getProperties().length > 0;
        if (!tags.includes("default") && !settings)
          missing.push(`${entry.slice(root.length + 1)}: ${exported.name}.${property.name}`);
      }
    }
  }
  return missing;
}

describe("option types: every optional property says its default", () => {
  it("the checker finds the option types of both entries", () => {
    const names = new Set<string>();
    for (const entry of entries)
      for (const s of checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(entry)!)!))
        names.add(s.name);
    for (const name of ["EdgestatsOptions", "ClientOptions", "WriteOptions", "ReadOptions", "IncrInput", "BoardConfig"])
      expect(names, name).toContain(name);
  });

  // Fixed (was low): the client's write options and inputs leave out what omitting a field means:
  // AsyncWriteOptions.respondAsync, ReadOptions.paging, IncrInput.period / at / ttl (a plain
  // counter; now; the counter's expiry unchanged) and WebhookInput.filter have no `@default`, so an
  // editor's hover says nothing of the behaviour without them. Fix: a `@default` (with a word of what
  // it means) on each.
  it("no optional property of an exported option type without `@default`", () => {
    expect(undocumented()).toEqual([]);
  });
});
