/**
 * Cold start of the production bundle in workerd itself (issue 14, point 6), measured with V8's
 * CPU profiler over the inspector (Chrome DevTools Protocol), not in Node standing in for it
 * (bench/cold-start.ts).
 *
 *   PATH=$PWD/node_modules/node/bin:$PATH node bench/cold-start-workerd.ts [--runs=15] [--interval=50]
 *     [--bundle=/path/index.js] [--top=15] [--json] [--unprimed]
 *
 * Each run starts a fresh workerd (through the miniflare that wrangler uses, with an inspector port)
 * hosting one Worker per kind below, each its own isolate. A Worker's entry is a small wrapper that
 * imports the bundle's entry module on a request of its own (`/__load`), so the module's
 * evaluation is profiled as the request's CPU; then the kind's first request is sent to it and
 * profiled alone. Profiling: `Profiler.setSamplingInterval` (`--interval` µs, default 50),
 * `Profiler.start` before the request is sent, `Profiler.stop` once its answer is read; the figure
 * is the time of every sample but `(idle)`: JavaScript, `(garbage collector)` and `(program)` (V8
 * and workerd's own C++ run on the isolate's thread: the native Request/Response/Headers, fetch's
 * set-up, WebCrypto's SHA-1). `--top=K` also prints the K functions with the most self time over
 * all runs of each kind (what to look at when a figure is high).
 *
 * A cold isolate in production starts in a workerd process that has served other Workers for
 * hours. So each fresh process first runs a primer Worker (not the bundle: PRIMER), and the kinds'
 * order rotates from run to run: a kind's figures are those of the runs where its isolate was not
 * its process's first, which paid ~1.5–2 ms more whatever the kind on a loaded machine, primer or
 * not (the last column gives those runs' median; `--unprimed` leaves the primer out).
 *
 * Not included: workerd parses (compiles) every module of a bundle when it loads the Worker, before
 * an inspector can attach, so `module evaluation` is instantiating and evaluating the entry module
 * and its static imports (with V8's lazy compilation of the functions it runs), not their parse
 * (bench/cold-start.ts `module compile` measures that part in Node: the same V8). Likewise a first
 * request's figure excludes parsing the chunks its `import()`s load, which Node's figure includes.
 * The request is built by the runtime outside the profiled isolate (miniflare's entry Worker).
 *
 * The kinds: `first counter incr`, `first trending event`, `first presence heartbeat` (accepted
 * single-item writes: one Upstash call each, to a local Upstash server over redis-server, its
 * waiting is idle), `first refused write` (a counter incr with an empty member: 400, no Redis) and
 * `first read` (a trending top read refused by its query, `window=99x`: 400, decided by a precheck).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { freePort } from "../dev/redis.ts";
import { cdp, type CpuProfile, processCpuMs, profileCpu, workerdPid } from "./lib/v8-cpu.ts";
import { startStack } from "../dev/stack.ts";
import { bundleWorker } from "../dev/wrangler.ts";
import {
  convertV4MiniflareOptions,
  Miniflare,
} from "../node_modules/wrangler/node_modules/miniflare/dist/src/index.js";

const args = new Map(
  process.argv.slice(2).map((a) => {
    const [k = "", v = "true"] = a.replace(/^--/, "").split("=");
    return [k, v] as const;
  }),
);

const INGEST_KEY = "cold-start-ingest-key-0001";
const READ_KEY = "cold-start-read-key-0001";
const post = (body: unknown): RequestInit => ({
  method: "POST",
  headers: { authorization: `Bearer ${INGEST_KEY}`, "content-type": "application/json" },
  body: JSON.stringify(body),
});

/** Each kind's first request: path, init, the status it must answer. */
export const KINDS = {
  "first counter incr": ["/v1/counters/cold/incr", post({ member: "m1" }), 200],
  "first trending event": ["/v1/trending/cold/events", post({ member: "m1" }), 200],
  "first presence heartbeat": ["/v1/presence/cold/heartbeats", post({ id: "u1" }), 200],
  "first refused write": ["/v1/counters/c1/incr", post({ items: [{ member: "a" }, { member: "" }] }), 400],
  "first read": ["/v1/trending/s1/top?window=99x", { headers: { authorization: `Bearer ${READ_KEY}` } }, 400],
} as const satisfies Record<string, readonly [string, RequestInit, number]>;
export type Kind = keyof typeof KINDS;
export const STEPS = ["module evaluation", ...(Object.keys(KINDS) as Kind[]), "empty request (floor)"] as const;
export type Step = (typeof STEPS)[number];

/**
 * The bundle's entry, imported on `/__load` so that its evaluation is a request of its own;
 * `/__noop` answers without running the bundle (the floor).
 */
const WRAPPER = `let mod;
export default {
  async fetch(request, env, ctx) {
    const path = new URL(request.url).pathname;
    if (path === "/__noop") return new Response("");
    if (path === "/__load") {
      mod = await import("./index.js");
      return new Response("loaded");
    }
    return mod.default.fetch(request, env, ctx);
  },
};
`;

/**
 * A Worker of its own, run once in each fresh workerd process before any measured isolate: one
 * Upstash call over workerd's fetch, a SHA-1, a JSON reply. What only the first of a process's
 * isolates pays (its first outbound connection, its first digest: ~2 ms, charged to whichever kind
 * ran first, measured by reordering them) is not a cold isolate's cost where workerd serves many
 * Workers for hours; `--unprimed` leaves it out, as before. Its call goes to a server of its own
 * (PRIMER_URL), not to the Upstash server: the measured isolate still opens its own connection.
 */
const PRIMER = `export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const body = await request.json();
    const headers = new Headers({ "x-request-id": crypto.randomUUID(), "x-path": url.pathname });
    const res = await fetch(env.PRIMER_URL, {
      method: "POST",
      headers: { authorization: "Bearer primer", "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(3000),
    });
    const digest = await crypto.subtle.digest("SHA-1", new TextEncoder().encode(await res.text()));
    return Response.json({ primed: digest.byteLength }, { headers });
  },
};
`;

/** The modules of a bundle (its entry and the chunks next to it) behind the wrapper entry. */
function modulesOf(entry: string) {
  const dir = dirname(entry);
  return {
    modulesRoot: dir,
    modules: [
      { type: "ESModule" as const, path: join(dir, "cold-start-entry.js"), contents: WRAPPER },
      ...readdirSync(dir)
        .filter((f) => f.endsWith(".js"))
        .map((f) => ({ type: "ESModule" as const, path: join(dir, f), contents: readFileSync(join(dir, f), "utf8") })),
    ],
  };
}

type Cpu = ReturnType<typeof processCpuMs>;

const settle = () => new Promise((r) => setTimeout(r, 30));

/**
 * One fresh workerd with one Worker (isolate) per kind, each on a socket of its own (no miniflare
 * entry Worker in between): per kind, its module evaluation and its first request, then an empty
 * request (the floor: workerd's HTTP handling of a request that runs nothing). `profile`: sampled
 * by the V8 profiler instead (for where the time goes), not timed.
 */
async function run(
  entry: string,
  bindings: Record<string, string>,
  kinds: readonly Kind[],
  primerUrl: string | undefined,
  profile?: { interval: number },
): Promise<Partial<Record<Step, Cpu>>[] | Map<Step, Map<string, number>>> {
  const inspectorPort = await freePort();
  const code = modulesOf(entry);
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      ...(profile ? { inspectorPort } : {}),
      workers: [
        ...kinds.map((_, i) => ({
          name: `cold${i}`,
          ...code,
          compatibilityDate: "2026-11-01",
          compatibilityFlags: ["nodejs_compat"],
          bindings,
          unsafeDirectSockets: [{ host: "127.0.0.1", port: 0 }],
        })),
        ...(primerUrl
          ? [
              {
                name: "primer",
                modules: true,
                script: PRIMER,
                compatibilityDate: "2026-11-01",
                bindings: { PRIMER_URL: primerUrl },
                unsafeDirectSockets: [{ host: "127.0.0.1", port: 0 }],
              },
            ]
          : []),
      ],
    } as never),
  );
  try {
    await mf.ready;
    const pid = workerdPid();
    if (primerUrl) {
      const res = await fetch(await mf.unsafeGetDirectURL("primer"), { method: "POST", body: '[["PING"]]' });
      if (res.status !== 200) throw new Error(`primer: status ${res.status}: ${await res.text()}`);
      await res.arrayBuffer();
    }
    const figures: Partial<Record<Step, Cpu>>[] = [];
    const selfTimes = new Map<Step, Map<string, number>>();
    for (const [i, kind] of kinds.entries()) {
      const base = String(await mf.unsafeGetDirectURL(`cold${i}`)).replace(/\/$/, "");
      const session = profile ? await cdp(`ws://127.0.0.1:${inspectorPort}/core:user:cold${i}`) : undefined;
      try {
        if (session) {
          await session.send("Profiler.enable");
          await session.send("Profiler.setSamplingInterval", { interval: profile?.interval });
        }
        const measured = async (step: Step, path: string, init: RequestInit, status: number) => {
          await settle();
          await session?.send("Profiler.start");
          const before = processCpuMs(pid);
          const res = await fetch(base + path, init);
          const text = await res.text();
          const after = processCpuMs(pid);
          const cpu = { thread: after.thread - before.thread, all: after.all - before.all };
          if (session) {
            const { profile: p } = await session.send<{ profile: CpuProfile }>("Profiler.stop");
            const self = selfTimes.get(step) ?? new Map<string, number>();
            for (const [name, ms] of profileCpu(p).self) self.set(name, (self.get(name) ?? 0) + ms);
            selfTimes.set(step, self);
          }
          if (res.status !== status) throw new Error(`${path}: status ${res.status}, expected ${status}: ${text}`);
          return cpu;
        };
        const [path, init, status] = KINDS[kind];
        figures.push({
          "module evaluation": await measured("module evaluation", "/__load", {}, 200),
          [kind]: await measured(kind, path, init, status),
          "empty request (floor)": await measured("empty request (floor)", "/__noop", {}, 200),
        });
      } finally {
        session?.close();
      }
    }
    return profile ? selfTimes : figures;
  } finally {
    await mf.dispose();
  }
}

function quantile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) * p)] ?? NaN;
}

export interface WorkerdColdStart {
  runs: number;
  /** Whether each workerd process ran the primer Worker before the measured isolates. */
  primed: boolean;
  /** Per step: median, p25, least CPU ms of workerd's main thread (the isolates'); the median of all its threads. */
  steps: Record<
    Step,
    {
      median: number;
      p25: number;
      min: number;
      allThreads: number;
      samples: number;
      /** Median of the runs where the step's isolate was its process's first (NaN when none was). */
      firstOfProcess: number;
    }
  >;
  /** With `top`: per step, the functions with the most sampled self time over the profiled runs (ms per run). */
  top: Partial<Record<Step, [string, number][]>>;
}

export async function measureWorkerdColdStarts(options: {
  runs: number;
  bundle?: string;
  /** Also profile `profileRuns` more runs with the V8 sampling profiler and list the `top` functions of each step. */
  top?: number;
  profileRuns?: number;
  interval?: number;
  /** Run the primer Worker in each fresh workerd process first (PRIMER). @default true */
  primed?: boolean;
}): Promise<WorkerdColdStart> {
  const primed = options.primed ?? true;
  // what the primer calls: answers [{"result":"PONG"}] to anything
  const primer = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end('[{"result":"PONG"}]'));
  });
  await new Promise<void>((ok) => primer.listen(0, "127.0.0.1", ok));
  const primerUrl = primed ? `http://127.0.0.1:${(primer.address() as AddressInfo).port}/pipeline` : undefined;
  const scratch = mkdtempSync(join(tmpdir(), "edgestats-cold-workerd-"));
  const stack = await startStack();
  try {
    const entry = options.bundle ?? bundleWorker(scratch);
    const bindings = {
      UPSTASH_REDIS_REST_URL: stack.upstash.url,
      UPSTASH_REDIS_REST_TOKEN: stack.token,
      INGEST_KEYS: INGEST_KEY,
      READ_KEYS: READ_KEY,
      ADMIN_KEYS: "cold-start-admin-key-0001",
      KEY_PREFIX: "coldstart",
      TRENDING_CACHE_SECONDS: "0",
    };
    const kinds = Object.keys(KINDS) as Kind[];
    // A throwaway run first: Redis then has each write's script (an EVALSHA of a measured first
    // write would otherwise be answered NOSCRIPT once and sent again), and the machine's caches are warm.
    await run(entry, bindings, kinds, primerUrl);
    // The first isolate of a process paid ~1.5–2 ms more than the next ones whatever its kind, on a
    // loaded machine even after the primer (measured by reordering the kinds: the counter incr,
    // always first until then, looked the dearest). So each run rotates the kinds, and a kind's figures are those of the runs
    // where it was not first; its runs as the first isolate are reported apart (`firstOfProcess`).
    const later = new Map<Step, Cpu[]>(STEPS.map((s) => [s, []]));
    const first = new Map<Step, Cpu[]>(STEPS.map((s) => [s, []]));
    for (let i = 0; i < options.runs; i++) {
      const order = kinds.map((_, j) => kinds[(i + j) % kinds.length]!);
      const figures = (await run(entry, bindings, order, primerUrl)) as Partial<Record<Step, Cpu>>[];
      for (const [j, f] of figures.entries())
        for (const [step, cpu] of Object.entries(f)) (j === 0 ? first : later).get(step as Step)?.push(cpu);
    }
    const steps = {} as WorkerdColdStart["steps"];
    for (const step of STEPS) {
      const firsts = first.get(step) ?? [];
      // with fewer runs than kinds, a kind may never be a later isolate: its first runs stand in
      const list = later.get(step)?.length ? later.get(step)! : firsts;
      const thread = list.map((x) => x.thread);
      steps[step] = {
        median: quantile(thread, 0.5),
        p25: quantile(thread, 0.25),
        min: quantile(thread, 0),
        allThreads: quantile(
          list.map((x) => x.all),
          0.5,
        ),
        samples: list.length,
        firstOfProcess: quantile(
          firsts.map((x) => x.thread),
          0.5,
        ),
      };
    }
    const top: WorkerdColdStart["top"] = {};
    if (options.top) {
      const profileRuns = options.profileRuns ?? 5;
      const self = new Map<Step, Map<string, number>>();
      for (let i = 0; i < profileRuns; i++) {
        const got = (await run(entry, bindings, kinds, primerUrl, { interval: options.interval ?? 50 })) as Map<
          Step,
          Map<string, number>
        >;
        for (const [step, times] of got) {
          const into = self.get(step) ?? new Map<string, number>();
          for (const [name, us] of times) into.set(name, (into.get(name) ?? 0) + us);
          self.set(step, into);
        }
      }
      for (const [step, times] of self)
        top[step] = [...times]
          .sort((a, b) => b[1] - a[1])
          .slice(0, options.top)
          .map(([name, us]) => [name, us / 1000 / profileRuns]);
    }
    return { runs: options.runs, primed, steps, top };
  } finally {
    await stack.stop();
    primer.close();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The bench's table (bench/results/README.md): CPU ms per step, the targets of issue 14 marked. */
export function workerdTable(result: WorkerdColdStart): string {
  const f = (x: number) => (Number.isNaN(x) ? "—" : x.toFixed(1));
  const label: Record<Step, string> = {
    "module evaluation": "module evaluation (target ≤ 30) [1]",
    "first counter incr": "first request: a counter incr, 1 item, accepted (target ≤ 10)",
    "first trending event": "first request: a trending event, accepted (target ≤ 10)",
    "first presence heartbeat": "first request: a presence heartbeat, accepted (target ≤ 10)",
    "first refused write": "first request: a refused counter write (target ≤ 10)",
    "first read": "first request: a read refused by its query, prechecked (target ≤ 10)",
    "empty request (floor)": "an empty request to a warm isolate (workerd's floor)",
  };
  const rows = STEPS.map((step) => {
    const s = result.steps[step];
    return `| ${label[step]} | ${f(s.min)} | ${f(s.p25)} | **${f(s.median)}** | ${f(s.allThreads)} | ${f(s.firstOfProcess)} |`;
  });
  return [
    `Cold start in workerd itself (\`node bench/cold-start-workerd.ts\`): ${result.runs} fresh workerd processes through the miniflare wrangler uses, ${result.primed ? "each running a primer Worker (one fetch, a SHA-1) before " : ""}one isolate per kind, the kinds' order rotating from run to run; CPU ms of workerd's main thread, where the isolates run (what a Worker's CPU limit counts), from the kernel's per-thread counters, over the runs where the kind's isolate was not its process's first (the last column: those where it was; without the primer the first isolate paid ~1.5–2 ms more whatever the kind). Each figure includes workerd's own handling of the HTTP request (the floor) and, for accepted writes, its native fetch of the one Upstash call.`,
    "",
    "| step | min | p25 | median | all threads, median | first isolate of its process, median |",
    "|---|---:|---:|---:|---:|---:|",
    ...rows,
    "",
    "[1] Instantiating and evaluating the entry and its static imports; workerd parses every module when it loads the Worker, before anything can be timed (`module compile` in Node's table above, the same V8).",
  ].join("\n");
}

if (import.meta.main) {
  const result = await measureWorkerdColdStarts({
    runs: Number(args.get("runs") ?? 15),
    ...(args.has("bundle") ? { bundle: args.get("bundle") } : {}),
    top: Number(args.get("top") ?? 0),
    profileRuns: Number(args.get("profile-runs") ?? 5),
    interval: Number(args.get("interval") ?? 50),
    primed: !args.has("unprimed"),
  });
  if (args.has("json")) console.log(JSON.stringify(result, null, 2));
  else {
    const f = (x: number) => x.toFixed(2).padStart(7);
    console.log(
      `workerd cold start, CPU ms of workerd's isolate thread, ${result.runs} fresh workerd runs` +
        (result.primed ? ", each primed (PRIMER)" : ", unprimed"),
    );
    console.log(
      `${"".padEnd(26)} median     p25     min   (all threads, median)   (first isolate of its process, median)`,
    );
    for (const [step, s] of Object.entries(result.steps))
      console.log(
        `${step.padEnd(26)}${f(s.median)} ${f(s.p25)} ${f(s.min)}   ${f(s.allThreads)}   ${Number.isNaN(s.firstOfProcess) ? "      —" : f(s.firstOfProcess)}`,
      );
    for (const [step, list] of Object.entries(result.top)) {
      console.log(`\n${step}: most sampled self time, ms per run (V8 profiler; waiting counts too, see above)`);
      for (const [name, ms] of list) console.log(`  ${f(ms)}  ${name}`);
    }
  }
}
