/**
 * `npm run bundle-size`: bundles the Worker as `wrangler deploy` would
 * (`--dry-run`: dev/build-worker.ts, minified, split into an entry module and
 * the chunks its `import()`s load) and fails when its gzip size is over the
 * budget, or the entry's (the entry module and the chunks it imports statically:
 * what every cold isolate compiles) is over its own, so a dependency that bloats
 * the cold start is caught in CI. It also fails when a module other than the one
 * an alias is meant for imports a path that dev/build-worker.ts's `ALIASES` replaces
 * (matched as written, whoever imports it), when `wrangler deploy` would not upload a module of the
 * build, and when the bundle's /openapi.json and /docs are
 * not exactly the app's (the bundle serves the document prebuilt from
 * test/fixtures/openapi.json, see functions/build/openapi-prebuilt.ts, which
 * test/worker/lazy-routes.test.ts proves equal to what the app builds) or its
 * zod validation (without zod-to-openapi in the bundle) answers otherwise.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";
import { docsPage } from "../functions/routes/docs.ts";
import { ALIASES, OUTDIR } from "./build-worker.ts";
import { documentText } from "./openapi-prebuilt.ts";
import { bundleWorker } from "./wrangler.ts";

/**
 * KiB of gzip. Measured 188 KiB on 2026-11-25 with the dashboard's CSV export merged (minified, no
 * keepNames; zod's locales, compile() and fromJSONSchema() aliased away in wrangler.toml: 238 KiB
 * without), 198.2 KiB later that day with our own code for issue 15's bounds (counters' union
 * bound and threshold read over many keys, histograms sized before their union) and lazy routes;
 * 201.7 KiB once the bundle served the OpenAPI document prebuilt (functions/build/openapi-prebuilt.ts):
 * zod-to-openapi and zod's JSON Schema code left it (-14 KiB of gzip, ~48 KB less code for V8 to
 * parse on every cold start) and the document came in as 21 KB of gzipped base64, which gzip
 * cannot shrink (+17 KiB) but V8 scans far faster than code (bench/cold-start.ts, 60 interleaved runs:
 * module -2.4 ms min, -2.9 ms p25); 203.8 KiB with the admin union's bound, the members bound of
 * counter unions and the idempotency prelude's up-front record (our own code); 205.2 KiB on 2026-11-26.
 * Then split into modules (dev/build-worker.ts; sizes are the gzip of all of them together, as
 * wrangler reports an upload): 210.8 KiB (the chunks' imports and exports of each other add ~6 KiB),
 * 209.4 KiB with the OpenAPI document as plain JSON text in its own chunk (gzip does better on it than
 * on gzipped base64), 195.5 KiB once the app imported zod's parts by name (functions/zod.ts) and
 * esbuild could leave the rest of zod out. Of that, the entry's (what every cold isolate compiles:
 * zod, hono, @upstash/redis, the middleware and the routes table) is 62.0 KiB. 199.3 KiB (entry 62.8)
 * with the histogram reads' piped ZPOPMIN and k-part check and the counters' edge sums, merged the
 * same day (our own code); 189.5 KiB once the rate limiter was our own script instead of
 * @upstash/ratelimit (36 KB raw), 190.0 KiB with the first requests' prechecks. The rest is
 * headroom (~4 KiB for all, ~3 KiB for the entry), well under what a new dependency adds (tens of KiB).
 * Gzipped largest module first since 2026-11-26 (`gzipKib`): main then measured 189.7 KiB by that
 * rule (190-193.5 in directory order), and 191.5 once the counters routes loaded their library on
 * first use (their limits in a module of their own), routes built their validators themselves and
 * routes were matched by our own LinearRouter; 193.3 with the histogram reads' checks before a union
 * of many parts (their Lua text, in a chunk only histogram reads load). The budget moved to 197
 * then to keep ~4 KiB of headroom: what a cold isolate compiles is the entry's budget below.
 * The entry went from 63.1 to 38.3 KiB once zod and @hono/zod-openapi loaded on first use
 * (functions/zod.ts); its budget went from 66 to 42 KiB with them, so they cannot come back unseen.
 * 197.1 KiB on 2026-11-26 with our own code only: prechecks for most routes (functions/prechecks.ts,
 * which keep zod out of their first requests) and the counters' quarter-day rollups (issue 15). The
 * budget went to 200 to keep ~3 KiB of headroom; the entry (38.3 KiB) did not move. 197.7 KiB (entry
 * 38.4) with the last prechecks the same day. 199.6 KiB (entry 38.4) the next day, again our own
 * code only: the histogram reads' predicted probe (issue 15: its Lua text, in the chunk only
 * histogram reads load) and the prechecks of the counter range, sorted list and jobs route. The
 * budget went to 203 to keep ~3 KiB of headroom. 201.6 KiB with the top-down member delete
 * (its Lua); then 187.4 once the build drops the library's whole-line Lua comments
 * (dev/lua-comments.ts: ~36 KB of text for readers of the source). The budget went back to 192,
 * ~4.5 KiB of headroom, so that saving is not spent unseen. 191.9 KiB on 2026-11-27 (entry 37.0,
 * was 39.4: Hono's default routers out of it), our own code only: review 7's fixes (the presence
 * catch-up of yesterday, the union's finite check, cut error messages, the webhook URL ranges) and
 * the score change's own small webhooks chunk. The budget went to 195 to keep ~3 KiB of headroom.
 * 195.6 KiB later that day (entry 37.1), our own code only: the counter index's trimming
 * (src/counters/trim.ts, issue 15), the member delete's read budget, the presence late-heartbeat
 * and idle-flag fixes, canonical JSON fingerprints. The budget went to 198 (~2.5 KiB of headroom).
 * 202.4 KiB on 2026-11-27, later (entry 37.4), our own code only, review 10's fixes: the canonical
 * JSON digest beside the raw one, the score bounds of counters and trending (and their undo and
 * refusal texts), the member delete keeping a member at 0 (src/counters/delete-zero.ts), the
 * histogram read's edge months, the trending stream delete past the horizon, the guards kept as
 * sent. The budget went to 206 (~3.5 KiB of headroom). 206.2 KiB on 2026-11-27, later still (entry
 * 41.2: the shared route modules moved into it for first requests, issue 14), our own code only:
 * the jobs' shared subrequest budget (src/job-budget.ts and each job's planning against it), the
 * week reads' bounded lookups (src/counters/week-size.ts), member deletes run in parts, the
 * webhook marks naming their webhook, the rising cursor and the snapshot carried over a day. The
 * budget went to 209 (~3 KiB of headroom); the entry's stays 42. 208.8 KiB (entry 41.5) on
 * 2026-11-27 with our own code since; 206.6 KiB (entry 41.5) on 2026-11-28 once the build took the
 * library's Lua indentation too (dev/lua-comments.ts: -2.2 KiB, ~13 KB of text). The budget stays
 * at 209, so that saving is not spent unseen. Review 15's fix of a player removed from a seasonal
 * board and joined again (its members kept per season: Lua text each leaderboard script carries)
 * added ~0.3 KiB the same day, presence's trim run ~0.2 (counted rooms no run visits again leave
 * the site-wide sum; the day's peak rises by what a run counted itself). 208.0 KiB (entry 41.5)
 * with review 15's dashboard fixes (+0.8 KiB, our own code: the dashboard's browser modules, which
 * the Worker serves), then ~0.5 KiB more with compaction reading what is left of its plan before
 * each batch (`SubrequestBudgetSpent`) and a keyed split member delete's part records of earlier
 * days' slices (its Lua's MGET): 208.6 KiB. The budget stayed at 209. Then, the same day,
 * `createRedis` became the library's own Upstash REST client (src/redis/http.ts: EVALSHA, EVAL, PING
 * and pipelines, the same requests) instead of @upstash/redis's `Redis`, whose ~360 commands were
 * ~17 KiB of the entry's gzip: 191.6 KiB (measured on its own branch's base as 206.6 → 189.3, entry
 * 41.5 → 24.4, 65 KB of code, was 141). The budgets went to 194 and 27 (~3 KiB of headroom each),
 * so @upstash/redis cannot come back into the Worker unseen. Stop 43 (review 16: the client's
 * storage-error classes, a 410 and Retry-After for webhooks, bucket-bound ties, every job's early
 * stop, typed error codes): 192.8 KiB, entry 24.9. Build-time SHA-1s of the write scripts (branch
 * wt-firstwrite, +1.5 KiB) were measured and left out: no gain shown, and workerd digests natively.
 * Stop 44 (review 17: the limiter before /healthz's PING and admin jobs, the header guard; the
 * client's 10 MB request refusal, reply cap and one deadline per call; the queue's dead-letter
 * dedupe and last-delivery check; the OpenAPI document's 429s and its own two paths; the presence
 * site entry): 194.2 KiB, entry 25.6. The budget went to 197 (~3 KiB of headroom); the entry's
 * stays 27.
 * Stop 45 (review 18: the webhook URL check expands IPv6 before judging it, CSV for HEAD; the counters'
 * order and sort enums shared with the library's check): 194.5 KiB, entry 25.6.
 * Stop 46 (review 19: /docs security headers, the dashboard keeps an off-page choice, the
 * scheduled entry names failed jobs, webhooks jobs report `more`, the counters sweep runs batch after
 * batch, the queue settles a stale copy with its fresh one, rising's tie rule, the stream list's
 * paging): 195.8 KiB, entry 25.8.
 * Stop 47 (review 20: a QStash signature claimed once, API headers outside /v1, the library's
 * error details located like the service's, the counters' library checks, the stream list's
 * empty cursor; a season entered at a guarded 0; the service's own 400s located): 196.9 KiB, entry
 * 25.9. 0.1 KiB of headroom is left.
 * Then, on 2026-11-28, without a change of behaviour: @hono/zod-openapi's `Hono` as `HonoBase`
 * (functions/build/hono.ts: Hono's default routers out of the zod chunk, -2.6 KiB), the chunks named
 * `chunk-0`, `chunk-1`... instead of by their hash (dev/build-worker.ts `shortChunkNames`: -1.3
 * KiB), functions/csv.ts loaded on a GET's first 2xx answer instead of with the entry (entry -1.6
 * KiB, +0.4 in all) and the dashboard's browser modules' whitespace minified too (-2.0 KiB):
 * 191.3 KiB, entry 24.0. The budgets stay at 197 and 27, so that saving is not spent unseen.
 * Stop 48 (review 21: the queue marks a dead-lettered message applied, the hour-edge late write
 * clears the previous hour's cached totals, presence refusals named as HTTP names them, a union's
 * item of another type names its field, jobs stop at 20 s of wall clock): 191.5 KiB, entry 24.0.
 * Stop 50 (review 22: /openapi.json states each operation's scope, batches name each bad item,
 * the histogram mean clamped, an unmapped cron fails): 192.2 KiB, entry 24.0.
 * Review 23 (the counters list pages by cursor, the rising webhook pages its members, a season's
 * first best takes its value, the histograms list pages by cursor): 192.8 KiB, entry 24.0.
 */
export const BUDGET_KIB = 197;
/** KiB of gzip of the entry module and the chunks it imports statically (see BUDGET_KIB). */
export const ENTRY_BUDGET_KIB = 27;

/** The import paths dev/build-worker.ts's `ALIASES` replaces. */
function aliasedPaths(): string[] {
  return Object.keys(ALIASES);
}

/** The modules `entry` imports statically, itself included (esbuild puts a module's static imports first). */
export function staticClosure(entry: string, seen = new Set<string>()): Set<string> {
  if (seen.has(entry)) return seen;
  seen.add(entry);
  const code = readFileSync(entry, "utf8");
  const statement = /\s*import\s*(?:[^;"'()]*?from\s*)?["']([^"']+)["']\s*;?/y;
  for (let m; (m = statement.exec(code));) staticClosure(join(dirname(entry), m[1] ?? ""), seen);
  return seen;
}

/**
 * KiB of gzip of `files` together (as wrangler reports an upload's size), largest first: in the
 * directory's order the figure moved by up to 2 KiB with nothing but the chunks' hash names (what
 * gzip's window sees next to what changes), so it could cross the budget with no code change.
 */
function gzipKib(files: Iterable<string>): number {
  const ordered = [...files]
    .map((f) => ({ f, data: readFileSync(f) }))
    .sort((a, b) => b.data.length - a.data.length || (a.f < b.f ? -1 : 1));
  return gzipSync(Buffer.concat(ordered.map((x) => x.data))).length / 1024;
}

/** The modules each aliased path is meant for (by a part of their path); zod's when not listed. */
const ALIAS_IMPORTERS: Record<string, string> = {
  "./openapi-document.ts": "/functions/app.ts",
  "@asteasolutions/zod-to-openapi": "node_modules/@hono/zod-openapi/",
  hono: "node_modules/@hono/zod-openapi/",
  zod: "node_modules/@hono/zod-openapi/",
};

/**
 * Bundled modules that import an aliased path they are not meant to (they would get the stand-in),
 * from the source maps dev/build-worker.ts wrote next to the modules (the dry run uploads none).
 */
function strayAliasImports(): string[] {
  const stray: string[] = [];
  for (const name of readdirSync(OUTDIR).filter((f) => f.endsWith(".js.map")))
    stray.push(...strayInMap(JSON.parse(readFileSync(join(OUTDIR, name), "utf8")) as SourceMap));
  return [...new Set(stray)];
}

interface SourceMap {
  sources: string[];
  sourcesContent?: (string | null)[];
}

function strayInMap(map: SourceMap): string[] {
  const stray: string[] = [];
  for (const path of aliasedPaths()) {
    // An import or re-export of the path, not a type-only one (which the bundle does not contain).
    const quoted = new RegExp(
      `^\\s*(?:import|export)\\s+(?!type\\b)[^;]*?\\bfrom\\s*["']${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}["']`,
      "m",
    );
    map.sources.forEach((source, i) => {
      if (!source.includes(ALIAS_IMPORTERS[path] ?? "node_modules/zod/") && quoted.test(map.sourcesContent?.[i] ?? ""))
        stray.push(`${source} imports ${path}`);
    });
  }
  return stray;
}

/**
 * The modules a route imports alone for its feature's writes (functions/routes/counters.ts:
 * `onFirstUse(() => import(...))`), so a first write compiles only the writes' part of its library.
 * Not trending's or presence's: their routes import their library statically, and a lazy import of
 * the writes alone measured slower (bench/cold-start.ts, 41 interleaved runs: first trending event
 * +0.2 ms, heartbeat +0.4, trending top +0.5 at the median; a second module load costs more than
 * the reads' code it saves, which V8 only pre-parses).
 */
const WRITE_MODULES = ["src/counters/counters.ts"];

interface Metafile {
  outputs: Record<string, { inputs: Record<string, unknown>; imports: { path: string; kind: string }[] }>;
}

/**
 * Read modules (`reads.ts`, `read-scripts.ts`) that a write module's chunk loads with it (the
 * chunks it imports statically), from esbuild's metafile: an import added to a write module that
 * reaches the reads would silently put them back in every first write.
 */
function writesLoadingReads(): string[] {
  const { outputs } = JSON.parse(readFileSync(join(OUTDIR, "meta.json"), "utf8")) as Metafile;
  const problems: string[] = [];
  for (const module of WRITE_MODULES) {
    const chunk = Object.keys(outputs).find((o) => o.endsWith(".js") && module in (outputs[o]?.inputs ?? {}));
    if (!chunk) {
      problems.push(`${module} is in no module of the build`);
      continue;
    }
    const seen = new Set<string>();
    for (const stack = [chunk]; stack.length > 0;) {
      const next = stack.pop() ?? "";
      if (seen.has(next)) continue;
      seen.add(next);
      for (const imp of outputs[next]?.imports ?? []) if (imp.kind === "import-statement") stack.push(imp.path);
    }
    const reads = [...seen]
      .flatMap((o) => Object.keys(outputs[o]?.inputs ?? {}))
      .filter((i) => /\/(reads|read-scripts)\.ts$/.test(i));
    if (reads.length > 0) problems.push(`${module} loads ${reads.join(", ")}`);
  }
  return problems;
}

// Runs in a fresh Node process: the bundle's answers to /openapi.json, /docs and a write its
// zod schemas refuse (validation runs without zod-to-openapi in the bundle).
const SERVE = `
const mod = await import(process.argv[1]);
const key = "bundle-size-ingest-key-0001";
const env = { UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9", UPSTASH_REDIS_REST_TOKEN: "unused", INGEST_KEYS: key };
const send = async (path, init) => {
  const res = await mod.default.fetch(new Request("http://bundle.test" + path, init), env, { waitUntil() {}, passThroughOnException() {}, props: {} });
  return res.status + " " + (await res.text());
};
const refused = await send("/v1/counters/c1/incr", { method: "POST", headers: { authorization: "Bearer " + key, "content-type": "application/json" }, body: JSON.stringify({ items: [{ member: "a" }, { member: "" }] }) });
const served = { openapi: await send("/openapi.json"), docs: await send("/docs"), refused };
// Every chunk links and evaluates (a request loads most only on first use).
const { readdirSync } = await import("node:fs");
const dir = new URL(".", process.argv[1]);
const broken = [];
for (const name of readdirSync(dir).filter((f) => f.endsWith(".js")))
  await import(new URL(name, dir).href).catch((e) => broken.push(name + ": " + e.message));
console.log(JSON.stringify({ ...served, broken }));
`;

/** The answer test/worker/lazy-routes.test.ts expects to the refused write above. */
const REFUSED = `400 ${JSON.stringify({
  error: {
    code: "invalid_request",
    message: "Invalid json field 'items.1.member': must not be empty.",
    details: [{ in: "json", path: "items.1.member", message: "must not be empty" }],
  },
})}`;

/** What the bundle gets wrong of /openapi.json, /docs, validation and loading its modules (empty when all are right). */
async function servingProblems(script: string, dir: string): Promise<string[]> {
  // The entry and its chunks, in a package of ES modules (Node needs .mjs for an ES module outside one).
  const copy = join(dir, "serve");
  mkdirSync(copy);
  writeFileSync(join(copy, "package.json"), '{"type":"module"}');
  for (const name of readdirSync(dirname(script)).filter((f) => f.endsWith(".js")))
    copyFileSync(join(dirname(script), name), join(copy, name));
  const file = join(copy, "index.js");
  const child = spawnSync(
    process.execPath,
    ["--disallow-code-generation-from-strings", "--input-type=module", "-e", SERVE, pathToFileURL(file).href],
    { encoding: "utf8" },
  );
  if (child.status !== 0) return [`the bundle did not answer:\n${child.stderr}`];
  const { broken, ...served } = JSON.parse(child.stdout.trim().split("\n").pop() ?? "{}") as Record<string, string> & {
    broken?: string[];
  };
  const expected = documentText();
  const problems: string[] = [];
  if (served.openapi !== `200 ${expected}`) problems.push("/openapi.json is not test/fixtures/openapi.json");
  if (served.docs !== `200 ${String(await docsPage(JSON.parse(expected)))}`)
    problems.push("/docs is not the fixture's page");
  if (served.refused !== REFUSED) problems.push(`a refused write answers ${served.refused}, not ${REFUSED}`);
  for (const module of broken ?? []) problems.push(`a module does not load: ${module}`);
  return problems;
}

const dir = mkdtempSync(join(tmpdir(), "edgestats-bundle-"));
try {
  const file = bundleWorker(join(dir, "bundle"));
  const modules = readdirSync(dirname(file))
    .filter((f) => f.endsWith(".js"))
    .map((f) => join(dirname(file), f));
  const entry = staticClosure(file);
  const kib = gzipKib(modules);
  const entryKib = gzipKib(entry);
  const raw = (files: Iterable<string>) => [...files].reduce((n, f) => n + readFileSync(f).length, 0) / 1024;
  const line =
    `bundle: ${modules.length} modules, ${raw(modules).toFixed(0)} KiB, ${kib.toFixed(1)} KiB gzip (budget ${BUDGET_KIB} KiB gzip); ` +
    `entry: ${entry.size} modules, ${raw(entry).toFixed(0)} KiB, ${entryKib.toFixed(1)} KiB gzip (budget ${ENTRY_BUDGET_KIB} KiB gzip)`;
  // Every module the build wrote must be uploaded (wrangler.toml's ESModule rule must match each chunk).
  const uploaded = new Set(modules.map((f) => basename(f)));
  const missing = readdirSync(OUTDIR).filter((f) => f.endsWith(".js") && !uploaded.has(f));
  if (missing.length > 0) {
    console.error(`wrangler deploy would not upload these modules of the build: ${missing.join(", ")}`);
    process.exitCode = 1;
  }
  const stray = strayAliasImports();
  if (kib > BUDGET_KIB || entryKib > ENTRY_BUDGET_KIB) {
    console.error(`${line}: OVER BUDGET`);
    process.exitCode = 1;
  } else console.log(line);
  if (stray.length > 0) {
    console.error(`dev/build-worker.ts's ALIASES are meant for other modules' imports, but:\n  ${stray.join("\n  ")}`);
    process.exitCode = 1;
  }
  const reads = writesLoadingReads();
  if (reads.length > 0) {
    console.error(`a first write would load read modules:\n  ${reads.join("\n  ")}`);
    process.exitCode = 1;
  } else console.log(`bundle: the writes' modules load no read module (${WRITE_MODULES.join(", ")})`);
  const problems = await servingProblems(file, dir);
  if (problems.length > 0) {
    console.error(`the bundle's answers:\n  ${problems.join("\n  ")}`);
    process.exitCode = 1;
  } else
    console.log(
      "bundle: /openapi.json and /docs are test/fixtures/openapi.json's, validation answers as the app, every module loads",
    );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
