/**
 * Run by the Worker's build (dev/build-worker.ts, wrangler.toml `[build]`) before it bundles: writes
 * functions/build/openapi.json.txt, the OpenAPI document the Worker bundle serves
 * (functions/build/openapi-prebuilt.ts). The document is test/fixtures/openapi.json, which
 * test/worker/lazy-routes.test.ts proves equal to the one the app builds from its routes, in the
 * compact form /openapi.json answers with.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "..");
export const FIXTURE = resolve(ROOT, "test/fixtures/openapi.json");
export const OUTPUT = resolve(ROOT, "functions/build/openapi.json.txt");

/** The text /openapi.json answers with: `c.json(document)` is `JSON.stringify(document)`. */
export function documentText(): string {
  return JSON.stringify(JSON.parse(readFileSync(FIXTURE, "utf8")));
}

/** Writes OUTPUT (unless it is current). */
export function writePrebuiltDocument(): void {
  const text = documentText();
  // Unchanged bytes keep the file's mtime, so `wrangler dev` does not rebuild for nothing.
  let current = "";
  try {
    current = readFileSync(OUTPUT, "utf8");
  } catch {
    // first build
  }
  if (current !== text) writeFileSync(OUTPUT, text);
}

if (import.meta.main) writePrebuiltDocument();
