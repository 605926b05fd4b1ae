/**
 * Cold start of the production bundle (issue 14, point 6): CPU to evaluate the
 * module and CPU of the first requests, each in a fresh Node process (median
 * of `--runs`, default 9).
 *
 *   PATH=$PWD/node_modules/node/bin:$PATH node bench/cold-start.ts [--bundle=/path/index.js] [--runs=9] [--json]
 *     [--compare=/path/other/index.js] [--no-writes] [--kinds=first counter incr,first trending event]
 *     [--kinds=first counter incr,counter incr after a refused write,...] (a first incr's parts: SPLIT_KINDS)
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
 * `first read` is the first request of a fresh process of its own: a read refused by its query
 * (`window=99x`), decided by its precheck (functions/prechecks.ts) without zod since the usual
 * refusals are prechecked too; it loaded zod and built its first zod schemas before, as the first
 * request of a route that is not prechecked still does (functions/zod.ts). `--zod` lists, per
 * route family, whether an answered read and the usual refusals load zod (`ZOD_PROBES`).
 * The first requests need no Redis (a refused write, /healthz), so the figures
 * are the Worker's own CPU. Node's own warm-ups run first (its fetch, streams, WebCrypto, and the
 * getters and setters of Request, Response and Headers, which are JavaScript in Node and native
 * in workerd), then the young generation is emptied and held at V8's initial size (`CHILD_FLAGS`),
 * so the scavenges timed (one falls in the first request) are those of the Worker's own
 * allocations, not of Node's garbage. Each request is built before its timing starts (as
 * bench/cpu does: in workerd the runtime builds it; Node's first one is ~0.5 ms).
 * Accepted writes (`first counter incr`, `first trending event`, `first
 * presence heartbeat`, `first histogram observation` (two values), `first leaderboard score` (`by`):
 * one item, each the first request of a fresh process of its own; a first process creates the
 * histogram and joins the player) and answered reads (`first trending top`, `first leaderboard page`:
 * prechecked, so they load no zod) need a Redis: the script starts one with a local Upstash server
 * (`--no-writes` skips them). Their figures include Node's fetch of the one
 * Upstash call, warmed first (20 calls) as a native fetch needs no warming, and
 * measured alone after the write (`Node fetch, one Upstash call`: subtract it
 * for the Worker's own CPU); `second write (presence)` is the next heartbeat; `/openapi.json` and `/docs` are measured apart
 * because only they need the OpenAPI document (which the bundle serves
 * prebuilt from a chunk of its own: functions/build/openapi-prebuilt.ts).
 * `module` is importing the entry module: compiling and evaluating it and the
 * chunks it imports statically (hono, @upstash/redis, the middleware, the
 * routes table, and what every route's first request needs: functions/lazy-route.ts and the shared
 * schemas, functions/mount.ts; zod loads on first use: functions/zod.ts). A request's figure
 * includes the chunks its route loads with `import()` on first use (the refused
 * write: the counter increment's route and its schemas, not zod, not the library).
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
import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { startStack } from "../dev/stack.ts";
import { bundleWorker } from "../dev/wrangler.ts";
import { CHILD, COMPILE_CHILD } from "./lib/cold-start-children.ts";

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
  "first read",
] as const;
/** The first requests that need a Redis, each the first request of a fresh process of its own. */
const WRITE_KINDS = [
  "first counter incr",
  "first trending event",
  "first presence heartbeat",
  "first histogram observation",
  "first leaderboard score",
  "first trending top",
  "first leaderboard page",
] as const;
/**
 * Run only when `--kinds` names them: a counter incr timed after another request of the same fresh
 * process (not timed; the young generation emptied again after it), which split `first counter
 * incr` into parts (docs/costs.md, "Cold start"). A refused trending event (400, an empty member)
 * runs what every write's first request runs (Hono's dispatch, the middleware, the body guard, a
 * precheck, an error answer) and none of the increment's code; a refused counter incr (an empty
 * member) also loads the increment's route and runs its validators, not the library; an accepted
 * incr of another counter leaves the steady state's cost (Node's fetch included).
 */
const SPLIT_KINDS = [
  "counter incr after a refused write",
  "counter incr after a refused incr",
  "counter incr after an accepted incr",
] as const;
/** What the fresh processes of accepted writes measure (with a Redis: `--no-writes` leaves them out). */
export const WRITE_STEPS = [
  ...WRITE_KINDS,
  ...SPLIT_KINDS,
  "second write (presence)",
  "Node fetch, one Upstash call",
] as const;
export type ColdStart = Record<(typeof STEPS)[number], number> & Partial<Record<(typeof WRITE_STEPS)[number], number>>;
export interface ColdStartResult {
  median: ColdStart;
  /** The first quartile: with `min`, what to compare between two bundles on a busy machine. */
  p25: ColdStart;
  /** The least CPU seen: the figure least disturbed by other processes on a shared machine. */
  min: ColdStart;
}

/** The value at fraction `p` of the sorted values (0: the least, 0.5: the median). */
function quantile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) * p)] ?? 0;
}

function summarize(samples: ColdStart[]): ColdStartResult {
  const steps = [...STEPS, ...WRITE_STEPS].filter((step) => samples.some((x) => x[step] !== undefined));
  const by = (p: number) =>
    Object.fromEntries(
      steps.map((step) => [
        step,
        quantile(
          samples.map((x) => x[step] ?? NaN),
          p,
        ),
      ]),
    ) as ColdStart;
  return { median: by(0.5), p25: by(0.25), min: by(0) };
}

/** Where the accepted writes' fresh processes send their Redis calls (a local Upstash server). */
export interface WriteTarget {
  upstash: string;
  token: string;
}

/** Runs a child Node process to its end without blocking this one's event loop (it may host the Upstash server). */
function runChild(args: string[]): Promise<string> {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (err = (err + c.toString()).slice(-4000)));
    child.on("exit", (code) => (code === 0 ? ok(out) : fail(new Error(`cold-start child failed:\n${err}`))));
  });
}

/**
 * Measures the bundles' cold starts, their fresh processes interleaved so that a busy spell of the
 * machine weighs on each alike. With `writes`, each run also starts a fresh process per accepted
 * single-item write (counter incr, trending event, presence heartbeat) whose first request it is.
 */
export async function measureColdStarts(
  bundles: readonly string[],
  times = runs,
  writes?: WriteTarget,
): Promise<ColdStartResult[]> {
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
  const run = async (file: string, script: string, flags: string[] = [], arg?: unknown) => {
    const out = await runChild([
      "--disallow-code-generation-from-strings",
      ...flags,
      "--input-type=module",
      "-e",
      script,
      pathToFileURL(file).href,
      ...(arg === undefined ? [] : [JSON.stringify(arg)]),
    ]);
    return JSON.parse(out.trim().split("\n").pop() ?? "{}") as Partial<ColdStart>;
  };
  // `--kinds=first counter incr,first trending event`: only those writes, and none of the other
  // processes (module, compile, first read), for a longer run of the figures a change is about
  const only = args.get("kinds")?.split(",");
  const kinds: readonly string[] = only
    ? [...WRITE_KINDS, ...SPLIT_KINDS].filter((k) => only.includes(k))
    : WRITE_KINDS;
  try {
    // The histogram and the player the writes write to, then a throwaway write of each kind: Redis
    // then has the scripts (an EVALSHA of each run's first write would otherwise be answered
    // NOSCRIPT once, and the write sent again).
    if (writes) await run(files[0] ?? "", CHILD, CHILD_FLAGS, { ...writes, kind: "setup" });
    if (writes) for (const kind of kinds) await run(files[0] ?? "", CHILD, CHILD_FLAGS, { ...writes, kind });
    const samples: ColdStart[][] = files.map(() => []);
    for (let i = 0; i < times; i++) {
      for (const [b, file] of files.entries()) {
        let sample = only
          ? {}
          : {
              ...(await run(file, CHILD, CHILD_FLAGS)),
              ...(await run(file, COMPILE_CHILD, COMPILE_FLAGS)),
              ...(await run(file, CHILD, CHILD_FLAGS, { kind: "first read" })),
            };
        if (writes)
          for (const kind of kinds)
            sample = { ...sample, ...(await run(file, CHILD, CHILD_FLAGS, { ...writes, kind })) };
        samples[b]?.push(sample as ColdStart);
      }
    }
    return samples.map(summarize);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A request sent as the first of a fresh process by `--zod`, with the key of a scope (read by default). */
export interface Probe {
  family: string;
  what: string;
  method?: string;
  path: string;
  body?: unknown;
  key?: "read" | "ingest" | "admin";
}

/**
 * Per route family, an answered request and the usual refusals (a bad query value, a bad name or
 * member in the path): which of them load zod on a cold isolate's first request (`--zod`).
 */
export const ZOD_PROBES: readonly Probe[] = [
  { family: "counters", what: "top (answered)", path: "/v1/counters/cold/top?n=10" },
  { family: "counters", what: "top n=0", path: "/v1/counters/cold/top?n=0" },
  { family: "counters", what: "top period=year", path: "/v1/counters/cold/top?period=year" },
  { family: "counters", what: "member lookup, bad member", path: "/v1/counters/cold/members/a%01b" },
  { family: "counters", what: "list limit=5000", path: "/v1/counters/?limit=5000" },
  {
    family: "counters",
    what: "incr, empty member",
    method: "POST",
    path: "/v1/counters/cold/incr",
    body: { member: "" },
    key: "ingest",
  },
  { family: "histograms", what: "read (answered)", path: "/v1/histograms/cold" },
  { family: "histograms", what: "read top=x", path: "/v1/histograms/cold?top=x" },
  { family: "histograms", what: "read, bad name", path: "/v1/histograms/bad%20name" },
  { family: "presence", what: "room (answered)", path: "/v1/presence/cold" },
  { family: "presence", what: "members limit=0", path: "/v1/presence/cold/members?limit=0" },
  {
    family: "presence",
    what: "leave, bad id",
    method: "DELETE",
    path: "/v1/presence/cold/members/a%01b",
    key: "ingest",
  },
  {
    family: "presence",
    what: "heartbeat, empty id",
    method: "POST",
    path: "/v1/presence/cold/heartbeats",
    body: { id: "" },
    key: "ingest",
  },
  { family: "leaderboards", what: "page (answered)", path: "/v1/leaderboards/cold?limit=10" },
  { family: "leaderboards", what: "page limit=0", path: "/v1/leaderboards/cold?limit=0" },
  { family: "leaderboards", what: "around k=x", path: "/v1/leaderboards/cold/players/p1/around?k=x" },
  { family: "leaderboards", what: "player, bad name", path: "/v1/leaderboards/cold/players/bad%20name" },
  { family: "trending", what: "top (answered)", path: "/v1/trending/cold/top?n=10" },
  { family: "trending", what: "top window=99x", path: "/v1/trending/cold/top?window=99x" },
  { family: "trending", what: "member lookup, bad member", path: "/v1/trending/cold/members/a%01b" },
  { family: "webhooks", what: "list (answered, admin)", path: "/v1/webhooks/", key: "admin" },
  { family: "webhooks", what: "deliveries limit=0 (admin)", path: "/v1/webhooks/w1/deliveries?limit=0", key: "admin" },
  {
    family: "webhooks",
    what: "delete, bad name (admin)",
    method: "DELETE",
    path: "/v1/webhooks/bad%20name",
    key: "admin",
  },
  { family: "ingest", what: "status (answered, admin)", path: "/v1/ingest/status", key: "admin" },
  { family: "ingest", what: "lag (answered)", path: "/v1/ingest/lag" },
];

export interface ProbeResult extends Probe {
  status: number;
  /** Whether the request loaded zod's chunk (null: a bundle without the split). */
  zod: boolean | null;
  cpu: number;
}

/** Sends each probe as the first request of a fresh process of `bundle` (see `measureColdStarts`). */
export async function probeZod(bundle: string, writes: WriteTarget): Promise<ProbeResult[]> {
  const dir = mkdtempSync(join(tmpdir(), "edgestats-probe-"));
  try {
    writeFileSync(join(dir, "package.json"), '{"type":"module"}');
    for (const name of readdirSync(dirname(bundle)).filter((f) => f.endsWith(".js")))
      copyFileSync(join(dirname(bundle), name), join(dir, name));
    const file = pathToFileURL(join(dir, basename(bundle))).href;
    const child = async (arg: unknown) =>
      JSON.parse(
        (
          await runChild([
            "--disallow-code-generation-from-strings",
            ...CHILD_FLAGS,
            "--input-type=module",
            "-e",
            CHILD,
            file,
            JSON.stringify(arg),
          ])
        )
          .trim()
          .split("\n")
          .pop() ?? "{}",
      ) as { status: number; zod: boolean | null; cpu: number };
    await child({ ...writes, kind: "setup" });
    const results: ProbeResult[] = [];
    for (const probe of ZOD_PROBES) results.push({ ...probe, ...(await child({ ...writes, kind: "probe", probe })) });
    return results;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The timing child's: `gc()` to empty the young generation before the import, and the young
 * generation held at V8's initial semi-space (1 MB without pointer compression, as Node is built),
 * which a fresh isolate starts with; V8 would grow it under the harness's own allocations.
 */
const CHILD_FLAGS = ["--expose-gc", "--max-semi-space-size=1"];
const COMPILE_FLAGS = ["--experimental-vm-modules", "--no-warnings"];

export async function measureColdStart(bundle: string, times = runs, writes?: WriteTarget): Promise<ColdStartResult> {
  return (await measureColdStarts([bundle], times, writes))[0] as ColdStartResult;
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
    if (args.has("zod")) {
      // Which first requests load zod, per route family (no timing runs).
      const stack = await startStack();
      try {
        for (const [i, file] of bundles.entries()) {
          const results = await probeZod(file, { upstash: stack.upstash.url, token: stack.token });
          if (args.has("json")) console.log(JSON.stringify(results));
          else {
            console.log(`first request of a fresh process, ${i ? "--compare" : "bundle"} ${file}:`);
            console.log(`  ${"family".padEnd(13)} ${"request".padEnd(30)} status  zod  CPU ms`);
            for (const r of results)
              console.log(
                `  ${r.family.padEnd(13)} ${r.what.padEnd(30)} ${String(r.status).padStart(6)}  ${r.zod === null ? "  ?" : r.zod ? "yes" : " no"}  ${r.cpu.toFixed(1).padStart(6)}`,
              );
          }
        }
      } finally {
        await stack.stop();
      }
      process.exit(0);
    }
    // Accepted writes need a Redis: ours, behind a local Upstash server in this process.
    const stack = args.has("no-writes") ? undefined : await startStack();
    let results: ColdStartResult[];
    try {
      results = await measureColdStarts(
        bundles,
        runs,
        stack ? { upstash: stack.upstash.url, token: stack.token } : undefined,
      );
    } finally {
      await stack?.stop();
    }
    if (args.has("json")) console.log(JSON.stringify(compare ? results : results[0]));
    else {
      console.log(`cold start, Node ${process.version}, ${runs} fresh processes, CPU ms (user + system):`);
      const columns = ["median", "p25", "min"] as const;
      const width = 7 * columns.length + columns.length - 1;
      const steps = [...STEPS, ...WRITE_STEPS].filter((step) => results[0]?.median[step] !== undefined);
      const label = Math.max(28, ...steps.map((step) => step.length));
      if (compare)
        console.log(
          `  ${"".padEnd(label)} ${bundles.map((_, i) => (i ? "--compare" : "bundle").padStart(width)).join("  ")}`,
        );
      console.log(`  ${"".padEnd(label)} ${bundles.map(() => columns.map((c) => c.padStart(7)).join(" ")).join("  ")}`);
      for (const step of steps)
        console.log(
          `  ${step.padEnd(label)} ${results.map((r) => columns.map((c) => (r[c][step] ?? NaN).toFixed(1).padStart(7)).join(" ")).join("  ")}`,
        );
    }
  } finally {
    if (built) rmSync(built, { recursive: true, force: true });
  }
}
