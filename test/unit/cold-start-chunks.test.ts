/**
 * What a cold isolate's first request loads besides the entry (issue 14, point 6), read from the
 * Worker bundle's own account of its chunks (esbuild's metafile, dev/build-worker.ts): the modules
 * every route's first request needs (functions/lazy-route.ts, functions/schemas.ts and the library
 * modules they import) are in the entry's static imports (functions/mount.ts says why), so a hot
 * write's first request loads its own route and library only; the QStash signature check, which
 * only /internal requests run, is not in the entry.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

interface Output {
  imports: { path: string; kind: string }[];
  inputs: Record<string, unknown>;
  entryPoint?: string;
}

const ROOT = resolve(import.meta.dirname, "../..");
let dir = "";
let outputs: Record<string, Output> = {};

/** The chunks `chunk` imports statically, itself included. */
function closure(chunk: string, seen = new Set<string>()): Set<string> {
  if (seen.has(chunk)) return seen;
  seen.add(chunk);
  for (const i of outputs[chunk]?.imports ?? []) if (i.kind !== "dynamic-import") closure(i.path, seen);
  return seen;
}

/** The source modules of `chunks`. */
const sourcesOf = (chunks: Iterable<string>) => [...chunks].flatMap((c) => Object.keys(outputs[c]?.inputs ?? {}));

/** The chunk a dynamic `import()` of `source` loads. */
function chunkOf(source: string): string {
  const found = Object.entries(outputs).find(([, o]) => o.entryPoint === source)?.[0];
  if (!found) throw new Error(`no chunk is the entry of ${source}`);
  return found;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "edgestats-chunks-"));
  const built = spawnSync(
    process.execPath,
    ["--input-type=module", "-e", `await (await import("./dev/build-worker.ts")).buildWorker(${JSON.stringify(dir)});`],
    { cwd: ROOT, encoding: "utf8" },
  );
  if (built.status !== 0) throw new Error(built.stderr);
  const meta = JSON.parse(readFileSync(join(dir, "meta.json"), "utf8")) as { outputs: Record<string, Output> };
  outputs = meta.outputs;
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the Worker bundle's chunks", () => {
  const entry = () => closure(Object.keys(outputs).find((o) => o.endsWith("/index.js")) ?? "");
  const shared = [
    "functions/lazy-route.ts",
    "functions/route-validators.ts",
    "functions/schemas.ts",
    "src/time.ts",
    "src/validation.ts",
  ];

  it("loads what every route's first request needs with the entry", () => {
    const sources = sourcesOf(entry());
    for (const source of shared) expect(sources).toContain(source);
  });

  it("leaves the QStash signature check out of the entry", () => {
    expect(sourcesOf(entry())).not.toContain("functions/middleware/qstash.ts");
  });

  it.each([
    "functions/routes/counters-incr.ts",
    "functions/routes/trending-events.ts",
    "functions/routes/presence-heartbeat.ts",
    "functions/routes/histograms-observe.ts",
    "functions/routes/leaderboards-score.ts",
    "functions/routes/health.ts",
  ])("%s's first request loads none of them again", (route) => {
    const inEntry = entry();
    const loaded = [...closure(chunkOf(route))].filter((c) => !inEntry.has(c));
    expect(loaded.length).toBeGreaterThan(0);
    const sources = sourcesOf(loaded);
    expect(sources).toContain(route);
    for (const source of shared) expect(sources).not.toContain(source);
  });
});
