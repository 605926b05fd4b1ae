/**
 * Review 22: the library's counter reads (`edgestats`'s CounterHandle top, bottom, member, range
 * and sorted) declare the `range` a period-range read answers with, as the HTTP client's
 * `WithRange<T>` (src/client-calls.ts) does: `range?: RangeInfo`. Checked through the TypeScript
 * checker on a probe file that reads `.range` off each answer. `it.fails` marks a confirmed bug
 * (comment: severity, the fix).
 */
import { resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");

/** The checker's errors on `text`, compiled as test/unit/__review22-probe.ts (never written to disk). */
function diagnostics(text: string): string[] {
  const probe = resolve(root, "test/unit/__review22-probe.ts");
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true,
    strict: true,
    exactOptionalPropertyTypes: true,
    noEmit: true,
    skipLibCheck: true,
    lib: ["lib.es2023.d.ts", "lib.dom.d.ts"],
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const read = host.readFile.bind(host);
  host.readFile = (file) => (resolve(file) === probe ? text : read(file));
  const exists = host.fileExists.bind(host);
  host.fileExists = (file) => resolve(file) === probe || exists(file);
  const program = ts.createProgram([probe], options, host);
  return ts
    .getPreEmitDiagnostics(program, program.getSourceFile(probe))
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
}

const READS: [string, string][] = [
  ["top", 'h.top({ period: "day", from: "2026-11-01", to: "2026-11-02" })'],
  ["bottom", 'h.bottom({ period: "day", from: "2026-11-01", to: "2026-11-02" })'],
  ["member", 'h.member("m", { period: "day", from: "2026-11-01", to: "2026-11-02" })'],
  ["range", 'h.range({ period: "day", from: "2026-11-01", to: "2026-11-02" })'],
  ["sorted", 'h.sorted({ period: "day", from: "2026-11-01", to: "2026-11-02" })'],
];

/** A probe that reads each answer's `range` as `RangeInfo | undefined`, and as the client declares it. */
function probe(): string {
  return [
    'import type { CounterHandle, RangeInfo } from "../../src/index.ts";',
    'import type { createClient } from "../../src/client.ts";',
    "declare const h: CounterHandle;",
    "type Client = ReturnType<typeof createClient>;",
    "type Eq<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;",
    "export async function f(): Promise<void> {",
    ...READS.flatMap(([name, call], i) => [
      `  const a${i} = await ${call}; // ${name}`,
      `  const r${i}: RangeInfo | undefined = a${i}.range;`,
      // optional, not always there: reading a field of it unchecked is an error
      `  // @ts-expect-error range is optional (a plain read has none)`,
      `  void a${i}.range.period;`,
      `  void r${i};`,
    ]),
    // the library's and the client's answers name `range` with one type
    "  const same: Eq<Awaited<ReturnType<CounterHandle['top']>>['range'], Awaited<ReturnType<Client['counters']['member']>>['range']> = true;",
    "  void same;",
    "}",
  ].join("\n");
}

describe("review 22: the library's counter reads declare `range` (as the client's WithRange does)", () => {
  it("the probe of the checker itself fails on a read of a field that does not exist", () => {
    const errors = diagnostics(
      'import type { CounterHandle } from "../../src/index.ts";\ndeclare const h: CounterHandle;\nexport const x = h.top().then((a) => a.nope);',
    );
    expect(errors.join("\n")).toMatch(/Property 'nope' does not exist/);
  });

  // Severity: medium (types only; the runtime answer has `range`). What: reads.ts's `withRange`
  // returned `T | (T & { range })`, which TypeScript reduces to `T`, so `(await h.top({ period,
  // from, to })).range` did not compile for library users (the client's WithRange<T> declared it).
  // Fix: type withRange's answer as `T & { range?: RangeInfo }`.
  it("CounterHandle top, bottom, member, range and sorted answer `range?: RangeInfo`", () => {
    expect(diagnostics(probe())).toEqual([]);
  });
});
