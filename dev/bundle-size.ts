/**
 * `npm run bundle-size`: bundles the Worker as `wrangler deploy` would
 * (`--dry-run`, minified per wrangler.toml) and fails when its gzip size is
 * over the budget, so a dependency that bloats the cold start is caught in CI.
 * It also fails when a module other than zod imports a path that wrangler.toml's
 * `[alias]` replaces: wrangler matches an import path as written, whoever imports it.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { bundleWorker } from "./wrangler.ts";

/**
 * KiB of gzip. Measured 188 KiB on 2026-11-25 with the dashboard's CSV export merged (minified, no
 * keepNames; zod's locales, compile() and fromJSONSchema() aliased away in wrangler.toml: 238 KiB
 * without), 198.2 KiB later that day with our own code for issue 15's bounds (counters' union
 * bound and threshold read over many keys, histograms sized before their union) and lazy routes;
 * the rest is headroom, well under what a new dependency adds (tens of KiB).
 */
export const BUDGET_KIB = 202;

/** The import paths wrangler.toml's `[alias]` replaces. */
function aliasedPaths(): string[] {
  const toml = readFileSync(resolve(import.meta.dirname, "../wrangler.toml"), "utf8");
  const section = /^\[alias\]\n([\s\S]*?)(?=^\[|(?![\s\S]))/m.exec(toml)?.[1] ?? "";
  return [...section.matchAll(/^"([^"]+)"\s*=/gm)].map((m) => m[1] ?? "");
}

/** Bundled modules outside zod that import an aliased path (they would get zod's stand-in). */
function strayAliasImports(script: string): string[] {
  const map = JSON.parse(readFileSync(`${script}.map`, "utf8")) as {
    sources: string[];
    sourcesContent?: (string | null)[];
  };
  const stray: string[] = [];
  for (const path of aliasedPaths()) {
    const quoted = new RegExp(`\\bfrom\\s*["']${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}["']`);
    map.sources.forEach((source, i) => {
      if (!source.includes("node_modules/zod/") && quoted.test(map.sourcesContent?.[i] ?? ""))
        stray.push(`${source} imports ${path}`);
    });
  }
  return stray;
}

const dir = mkdtempSync(join(tmpdir(), "edgestats-bundle-"));
try {
  const file = bundleWorker(dir);
  const script = readFileSync(file);
  const kib = gzipSync(script).length / 1024;
  const line = `bundle: ${(script.length / 1024).toFixed(0)} KiB, ${kib.toFixed(1)} KiB gzip (budget ${BUDGET_KIB} KiB gzip)`;
  const stray = strayAliasImports(file);
  if (kib > BUDGET_KIB) {
    console.error(`${line}: OVER BUDGET`);
    process.exitCode = 1;
  } else console.log(line);
  if (stray.length > 0) {
    console.error(`wrangler.toml [alias] is meant for zod's own imports, but:\n  ${stray.join("\n  ")}`);
    process.exitCode = 1;
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
