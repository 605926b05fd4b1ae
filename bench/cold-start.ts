/**
 * Cold start of the production bundle (issue 14, point 6): CPU to evaluate the
 * module and CPU of the first requests, each in a fresh Node process (median
 * of `--runs`, default 9).
 *
 *   PATH=$PWD/node_modules/node/bin:$PATH node bench/cold-start.ts [--bundle=/path/index.js] [--runs=9] [--json]
 *     [--compare=/path/other/index.js]
 *
 * Without `--bundle` it builds one with `wrangler deploy --dry-run` (what
 * `wrangler deploy` uploads). A bundle is its entry module and every other `.js`
 * module next to it (the chunks its `import()`s load: dev/build-worker.ts splits
 * the Worker), copied together, so a single-module bundle (one built before the
 * split, say to /tmp from main) and a split one are measured alike. `--compare`
 * measures a second bundle in the same run, alternating their fresh processes, for a like-for-like comparison on a
 * shared machine (compare min and p25 over 30 runs or more, not single runs).
 * CPU is `process.cpuUsage()` (user + system, all threads of the process, so
 * V8's background compilation counts too). Node 24
 * stands in for workerd: same V8, and the bundle imports nothing Node lacks;
 * like bench/cpu it runs with `--disallow-code-generation-from-strings`, as
 * Workers refuse eval (so zod validates without its `new Function` JIT there too).
 * The first requests need no Redis (a refused write, /healthz), so the figures
 * are the Worker's own CPU; `/openapi.json` and `/docs` are measured apart
 * because only they need the OpenAPI document (which the bundle serves
 * prebuilt from a chunk of its own: functions/build/openapi-prebuilt.ts).
 * `module` is importing the entry module: compiling and evaluating it and the
 * chunks it imports statically (zod, hono, @upstash/redis, the middleware, the
 * routes table). A request's figure includes the chunks its route loads with
 * `import()` on first use (the refused write: the counters routes and library).
 * The child serves every module from memory through a module hook, as workerd
 * has them (Node would read each from disk and look up its package.json), but
 * Node's module machinery still adds a little per module that workerd's does not.
 * `module compile` is V8 parsing and compiling the entry's modules alone (in
 * another fresh process, as `vm.SourceTextModule`s, unlinked): the part of
 * `module` that only less code reduces; the rest is evaluating them. No zod
 * schema is built then: a route builds its request schemas (without their
 * OpenAPI metadata) on its first request (functions/lazy-route.ts), which the
 * `first request` figure includes (the tests' app builds every route's for
 * `/openapi.json`; the bundle has no generator); and the refused write, like
 * /healthz, validates without zod (a precheck: functions/lazy-route.ts
 * `prechecked`), so it builds none.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { bundleWorker } from "../dev/wrangler.ts";

const args = new Map(
  process.argv.slice(2).map((a) => {
    const [k = "", v = "true"] = a.replace(/^--/, "").split("=");
    return [k, v] as const;
  }),
);
const runs = Number(args.get("runs") ?? 9);

/** The steps one fresh process measures, in order. */
export const STEPS = [
  "module",
  "module compile",
  "first request",
  "second request",
  "first /healthz",
  "first /openapi.json",
  "first /docs",
] as const;
export type ColdStart = Record<(typeof STEPS)[number], number>;
export interface ColdStartResult {
  median: ColdStart;
  /** The first quartile: with `min`, what to compare between two bundles on a busy machine. */
  p25: ColdStart;
  /** The least CPU seen: the figure least disturbed by other processes on a shared machine. */
  min: ColdStart;
}

// Runs in the child: imports the bundle, then sends the requests, timing each.
const CHILD = `
const url = process.argv[1];
const ms = (u) => (u.user + u.system) / 1000;
// Node loads fetch, Request, Response, streams and WebCrypto lazily (undici, about 40 ms on the
// first use); workerd has them built in. Warm them first so the figures are the Worker's own.
{
  const req = new Request("http://warm.test/", { method: "POST", body: JSON.stringify({ a: 1 }), headers: { "content-type": "application/json" } });
  await req.clone().text();
  await new Response(new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode("x")); c.close(); } })).arrayBuffer();
  new Headers({ a: "b" }); new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array([120])); new URL("http://warm.test/?a=1");
  await crypto.subtle.digest("SHA-256", new Uint8Array(1)); AbortSignal.timeout(1000); structuredClone({});
  // Node loads randomUUID() and fills its pool of random bytes on the first call (~0.5 ms), and
  // builds its navigator global on the first read (~0.4 ms; zod reads it); workerd has both built in.
  crypto.randomUUID(); typeof navigator;
  await fetch("http://127.0.0.1:9/").catch(() => {});
  // Node builds DecompressionStream from its zlib and stream modules on first use (~12 ms); workerd's is native.
  const gzip = new Uint8Array([31, 139, 8, 0, 0, 0, 0, 0, 0, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
  await new Response(new Blob([gzip]).stream().pipeThrough(new DecompressionStream("gzip"))).text();
}
// workerd has a Worker's modules in memory; Node would read each from disk and look up its package.json
// (~0.3 ms a module, more on the first). So every module of the bundle is read first and served from
// memory through a module hook, warmed with a module of its own.
const { readdirSync, readFileSync } = await import("node:fs");
const { registerHooks } = await import("node:module");
const dir = new URL(".", url);
const sources = new Map(readdirSync(dir).filter((f) => f.endsWith(".js")).map((f) => [new URL(f, dir).href, readFileSync(new URL(f, dir), "utf8")]));
sources.set(new URL("warm-hooks.js", dir).href, "export default 1;");
registerHooks({
  resolve(specifier, context, next) {
    const href = context.parentURL ? new URL(specifier, context.parentURL).href : specifier;
    return sources.has(href) ? { url: href, shortCircuit: true } : next(specifier, context);
  },
  load(href, context, next) {
    const source = sources.get(href);
    return source === undefined ? next(href, context) : { format: "module", source, shortCircuit: true };
  },
});
await import(new URL("warm-hooks.js", dir).href);
let t = process.cpuUsage();
const mod = await import(url);
const out = { module: ms(process.cpuUsage(t)) };
const key = "cold-start-ingest-key-0001";
const env = {
  UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9", UPSTASH_REDIS_REST_TOKEN: "unused",
  INGEST_KEYS: key, READ_KEYS: "cold-start-read-key-0001", ADMIN_KEYS: "cold-start-admin-key-0001",
};
console.error = () => {};
const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} };
async function step(name, path, init, ...statuses) {
  t = process.cpuUsage();
  const res = await mod.default.fetch(new Request("http://cold.test" + path, init), env, ctx);
  await res.arrayBuffer();
  out[name] = ms(process.cpuUsage(t));
  if (!statuses.includes(res.status)) throw new Error(name + ": status " + res.status + ", expected " + statuses.join(" or "));
}
// A write with an empty member: auth, body guard, JSON parse, zod validation, the 400 envelope; no Redis.
const write = () => ({ method: "POST", headers: { authorization: "Bearer " + key, "content-type": "application/json" }, body: JSON.stringify({ items: [{ member: "a" }, { member: "" }] }) });
await step("first request", "/v1/counters/c1/incr", write(), 400);
await step("second request", "/v1/counters/c1/incr", write(), 400);
// 503 from a build whose /healthz still pings Redis (there is none here); its CPU is then a failed fetch.
await step("first /healthz", "/healthz", {}, 200, 503);
await step("first /openapi.json", "/openapi.json", {}, 200);
await step("first /docs", "/docs", {}, 200);
console.log(JSON.stringify(out));
`;

// Runs in another child: only compiles the entry module and the modules it imports statically, as
// the import does before evaluating them (a second compile in one process would hit V8's cache).
const COMPILE_CHILD = `
const { readFileSync } = await import("node:fs");
const { SourceTextModule } = await import("node:vm");
const modules = new Map();
const load = (url) => {
  if (modules.has(url.href)) return;
  const code = readFileSync(url, "utf8");
  modules.set(url.href, code);
  // esbuild puts a module's static imports first: import{a as b}from"./chunk-X.js";import"./chunk-Y.js";
  const statement = /\\s*import\\s*(?:[^;"'()]*?from\\s*)?["']([^"']+)["']\\s*;?/y;
  for (let m; (m = statement.exec(code)); ) load(new URL(m[1], url));
};
load(new URL(process.argv[1]));
const t = process.cpuUsage();
for (const [identifier, code] of modules) new SourceTextModule(code, { identifier });
const u = process.cpuUsage(t);
console.log(JSON.stringify({ "module compile": (u.user + u.system) / 1000 }));
`;

/** The value at fraction `p` of the sorted values (0: the least, 0.5: the median). */
function quantile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) * p)] ?? 0;
}

function summarize(samples: ColdStart[]): ColdStartResult {
  const by = (p: number) =>
    Object.fromEntries(
      STEPS.map((s) => [
        s,
        quantile(
          samples.map((x) => x[s]),
          p,
        ),
      ]),
    ) as ColdStart;
  return { median: by(0.5), p25: by(0.25), min: by(0) };
}

/** Measures the bundles' cold starts, their fresh processes interleaved so that a busy spell of the machine weighs on each alike. */
export function measureColdStarts(bundles: readonly string[], times = runs): ColdStartResult[] {
  const dir = mkdtempSync(join(tmpdir(), "edgestats-cold-"));
  const files = bundles.map((bundle, i) => {
    // The entry and its chunks, in a package of ES modules (Node needs .mjs for an ES module outside one).
    const copy = join(dir, String(i));
    mkdirSync(copy);
    writeFileSync(join(copy, "package.json"), '{"type":"module"}');
    for (const name of readdirSync(dirname(bundle)).filter((f) => f.endsWith(".js")))
      copyFileSync(join(dirname(bundle), name), join(copy, name));
    return join(copy, basename(bundle));
  });
  try {
    const samples: ColdStart[][] = files.map(() => []);
    for (let i = 0; i < times; i++) {
      files.forEach((file, b) => {
        const run = (script: string, ...flags: string[]) => {
          const child = spawnSync(
            process.execPath,
            [
              "--disallow-code-generation-from-strings",
              ...flags,
              "--input-type=module",
              "-e",
              script,
              pathToFileURL(file).href,
            ],
            {
              encoding: "utf8",
            },
          );
          if (child.status !== 0) throw new Error(`cold-start child failed:\n${child.stderr}`);
          return JSON.parse(child.stdout.trim().split("\n").pop() ?? "{}") as Partial<ColdStart>;
        };
        samples[b]?.push({
          ...run(CHILD),
          ...run(COMPILE_CHILD, "--experimental-vm-modules", "--no-warnings"),
        } as ColdStart);
      });
    }
    return samples.map(summarize);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function measureColdStart(bundle: string, times = runs): ColdStartResult {
  return measureColdStarts([bundle], times)[0] as ColdStartResult;
}

if (import.meta.main) {
  let bundle = args.get("bundle");
  let built: string | undefined;
  if (!bundle) {
    built = mkdtempSync(join(tmpdir(), "edgestats-bundle-"));
    bundle = bundleWorker(built);
  }
  try {
    const compare = args.get("compare");
    const bundles = compare ? [bundle, compare] : [bundle];
    const results = measureColdStarts(bundles);
    if (args.has("json")) console.log(JSON.stringify(compare ? results : results[0]));
    else {
      console.log(`cold start, Node ${process.version}, ${runs} fresh processes, CPU ms (user + system):`);
      const columns = ["median", "p25", "min"] as const;
      const width = 7 * columns.length + columns.length - 1;
      if (compare)
        console.log(
          `  ${"".padEnd(20)} ${bundles.map((_, i) => (i ? "--compare" : "bundle").padStart(width)).join("  ")}`,
        );
      console.log(`  ${"".padEnd(20)} ${bundles.map(() => columns.map((c) => c.padStart(7)).join(" ")).join("  ")}`);
      for (const step of STEPS)
        console.log(
          `  ${step.padEnd(20)} ${results.map((r) => columns.map((c) => r[c][step].toFixed(1).padStart(7)).join(" ")).join("  ")}`,
        );
    }
  } finally {
    if (built) rmSync(built, { recursive: true, force: true });
  }
}
