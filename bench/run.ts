/**
 * `npm run bench`: starts redis-server, the local Upstash server, and under
 * `wrangler dev` the service (edge cache on and off), the naive baseline and
 * the floor Worker (both from bench/baseline/worker.ts), plus a service and a
 * naive instance whose Upstash traffic passes a fault proxy adding 20 ms per
 * round trip. Runs every scenario against the service, the naive baseline and
 * the floor; the 20 ms run; Worker CPU per request and the jobs' commands per
 * hour on the production bundle in Node (bench/cpu/); the scaling curves; and
 * writes bench/results/README.md, bench/results/bench.svg and raw JSON.
 *
 * Flags: `--only=<feature, scenario id, rtt, cpu, jobs or a scaling part>[,...]` (scaling parts:
 * scaling-trending, scaling-signals, scaling-presence, scaling-leaderboards,
 * scaling-leaderboard-scripts, scaling-presence-scripts, scaling-counters, scaling-histograms,
 * scaling-ingest, scaling-calendar; see bench/scaling/index.ts), `--quick` (1 s loads,
 * fewer calls, scaling up to 100k), `--no-scaling`, `--no-scenarios`, `--no-rtt`, `--no-cpu`,
 * `--no-jobs`, `--max-scale=<N>` (largest scaling size).
 * Everything listens on loopback; every load and loop is bounded.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { startFaultProxy } from "../dev/fault-proxy.ts";
import { connectResp } from "../dev/resp.ts";
import { startStack } from "../dev/stack.ts";
import { measure, type Measured, type Side } from "./lib/measure.ts";
import { bundleWorker, startWranglerDev } from "../dev/wrangler.ts";
import { writeReport, type ScenarioResult } from "./lib/report.ts";
import { SCENARIOS, type Scenario, type Sides } from "./scenarios.ts";
import { runHost, type CpuResult, type JobsResult } from "./cpu/index.ts";
import { measureColdStart } from "./cold-start.ts";
import { measureWorkerdColdStarts } from "./cold-start-workerd.ts";
import { runScaling, type ScalingResult } from "./scaling/index.ts";
import { presenceMemory, type MemoryFigures } from "./presence-memory.ts";

const args = new Map(
  process.argv.slice(2).map((a) => {
    const [k = "", v = "true"] = a.replace(/^--/, "").split("=");
    return [k, v] as const;
  }),
);
const only = args.get("only")?.split(",");
const quick = args.has("quick");
// A quick run stops the scaling curves at 100k (the 1M step alone takes minutes).
const maxScale = Number(args.get("max-scale") ?? (quick ? 100_000 : 1_000_000));
const started = Date.now();
const log = (msg: string) => console.log(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(3)} s] ${msg}`);

const KEYS = { ingest: "bench-ingest-key-0001", read: "bench-read-key-00001", admin: "bench-admin-key-0001" };
const TAGS = {
  service: "bench-svc",
  serviceNoCache: "bench-svc-nocache",
  naive: "bench-naive",
  floor: "bench-floor",
  serviceRtt: "bench-svc-rtt",
  naiveRtt: "bench-naive-rtt",
};
/** Round-trip time the fault proxy adds to every Redis HTTP request of the 20 ms run. */
const RTT_MS = 20;

log("starting redis-server, the local Upstash server and a 20 ms fault proxy in front of it");
const stack = await startStack();
const upstashUrl = stack.upstash.url;
const proxy = await startFaultProxy({ target: upstashUrl });
proxy.set({ kind: "delay", ms: RTT_MS });
const common = {
  UPSTASH_REDIS_REST_URL: upstashUrl,
  INGEST_KEYS: KEYS.ingest,
  READ_KEYS: KEYS.read,
  ADMIN_KEYS: KEYS.admin,
  KEY_PREFIX: "bench",
  RATE_LIMIT_PER_10S: "0",
};
log("bundling the Worker and the naive baseline Worker");
const bundleDir = mkdtempSync(join(tmpdir(), "edgestats-bench-bundle-"));
const script = bundleWorker(join(bundleDir, "service"));
// The naive baseline and the floor: one small Worker, bundled by wrangler like the service,
// with the service's compatibility date and flags.
const compat = readFileSync("wrangler.toml", "utf8");
const naiveConfig = join(bundleDir, "naive-wrangler.toml");
writeFileSync(
  naiveConfig,
  [
    `name = "edgestats-bench-naive"`,
    `main = ${JSON.stringify(resolve("bench/baseline/worker.ts"))}`,
    /^compatibility_date\s*=.*$/m.exec(compat)?.[0] ?? `compatibility_date = "2026-11-01"`,
    /^compatibility_flags\s*=.*$/m.exec(compat)?.[0] ?? `compatibility_flags = ["nodejs_compat"]`,
    "",
  ].join("\n"),
);
const naiveScript = bundleWorker(join(bundleDir, "naive"), naiveConfig);
log("starting wrangler dev: service (edge cache on, off, 20 ms), naive (0 ms, 20 ms), floor");
const naiveVars = (tag: string, prefix: string, url = upstashUrl) => ({
  UPSTASH_REDIS_REST_URL: url,
  UPSTASH_REDIS_REST_TOKEN: `${stack.token}.${tag}`,
  NAIVE_PREFIX: prefix,
  NAIVE_TOP_CACHE: process.env.NAIVE_TOP_CACHE === "1" ? "1" : "0",
});
const [svc, svcNoCache, naive, floor, svcRtt, naiveRtt] = await Promise.all([
  startWranglerDev({
    script,
    vars: { ...common, UPSTASH_REDIS_REST_TOKEN: `${stack.token}.${TAGS.service}`, TRENDING_CACHE_SECONDS: "5" },
  }),
  startWranglerDev({
    script,
    vars: {
      ...common,
      KEY_PREFIX: "benchnc",
      UPSTASH_REDIS_REST_TOKEN: `${stack.token}.${TAGS.serviceNoCache}`,
      TRENDING_CACHE_SECONDS: "0",
      REDIS_TIMEOUT_MS: "60000",
      // the scaling bench subscribes a webhook (bench/scaling/signals.ts) to a local URL nothing listens on
      WEBHOOKS_ALLOW_LOCAL_HTTP: "true",
    },
  }),
  startWranglerDev({ script: naiveScript, vars: naiveVars(TAGS.naive, "naive") }),
  startWranglerDev({ script: naiveScript, vars: { ...naiveVars(TAGS.floor, "floor"), FLOOR: "1" } }),
  startWranglerDev({
    script,
    vars: {
      ...common,
      KEY_PREFIX: "benchrtt",
      UPSTASH_REDIS_REST_URL: proxy.url,
      UPSTASH_REDIS_REST_TOKEN: `${stack.token}.${TAGS.serviceRtt}`,
      TRENDING_CACHE_SECONDS: "0",
      REDIS_TIMEOUT_MS: "60000",
    },
  }),
  startWranglerDev({ script: naiveScript, vars: naiveVars(TAGS.naiveRtt, "naivertt", proxy.url) }),
]);

const admin = `Bearer ${KEYS.admin}`;
const resp = await connectResp(stack.redisUrl);
const sides: Sides = {
  resp,
  naivePrefix: "naive",
  service: { name: "service", url: svc.url, authorization: admin, tag: TAGS.service },
  serviceNoCache: { name: "service", url: svcNoCache.url, authorization: admin, tag: TAGS.serviceNoCache },
  naive: { name: "naive", url: naive.url, authorization: admin, tag: TAGS.naive },
};
const floorSide: Side = { name: "floor", url: floor.url, authorization: admin, tag: TAGS.floor };
const rttService: Side = { name: "service", url: svcRtt.url, authorization: admin, tag: TAGS.serviceRtt };
const rttSides: Sides = {
  resp,
  naivePrefix: "naivertt",
  service: rttService,
  serviceNoCache: rttService,
  naive: { name: "naive", url: naiveRtt.url, authorization: admin, tag: TAGS.naiveRtt },
};

const wanted = (id: string, feature: string) => !only || only.includes(id) || only.includes(feature);
const results: ScenarioResult[] = [];
const rtt: ScenarioResult[] = [];
let cpu: CpuResult | null = null;
let jobs: JobsResult | null = null;
let scaling: ScalingResult | null = null;
let memory: MemoryFigures | null = null;
let failure: unknown = null;

try {
  if (!args.has("no-scenarios")) {
    for (const scenario of SCENARIOS) {
      if (!wanted(scenario.id, scenario.feature)) continue;
      // Quick: 10 probe calls (3 where the scenario asks for fewer, e.g. 1,000-item batches).
      const probeCalls = scenario.probeCalls === undefined ? (quick ? 10 : 20) : quick ? 3 : scenario.probeCalls;
      const result = await runScenario(scenario, sides, { seconds: quick ? 1 : 3, probeCalls, floor: floorSide });
      results.push(result);
    }
  }
  if (!args.has("no-rtt")) {
    for (const scenario of SCENARIOS) {
      if (scenario.rtt === false || !(wanted(scenario.id, scenario.feature) || only?.includes("rtt"))) continue;
      const calls = Math.min(scenario.rtt ?? 10, quick ? 5 : 10);
      rtt.push(await runScenario(scenario, rttSides, { seconds: 0, probeCalls: calls, label: `${RTT_MS} ms` }));
    }
  }
  if (!args.has("no-cpu") && (!only || only.includes("cpu"))) {
    try {
      log("Worker CPU per request: the production bundle in Node");
      cpu = await runHost<CpuResult>({ mode: "cpu", bundle: script, upstashUrl, token: stack.token, quick }, 900_000);
      log("cold start: module evaluation and first requests, fresh processes (bench/cold-start.ts)");
      cpu.coldStart = await measureColdStart(script, quick ? 5 : 21, { upstash: upstashUrl, token: stack.token });
      log("cold start in workerd itself: fresh workerd processes, one isolate per kind (bench/cold-start-workerd.ts)");
      cpu.workerdColdStart = await measureWorkerdColdStarts({ runs: quick ? 5 : 20, bundle: script });
    } catch (error) {
      log(`cpu: FAILED ${String(error)}`);
    }
  }
  if (!args.has("no-jobs") && (!only || only.includes("jobs"))) {
    try {
      log("jobs: commands per hour at 10 / 100 / 1,000 active streams and rooms (fake clock)");
      jobs = await runHost<JobsResult>(
        { mode: "jobs", bundle: script, upstashUrl, token: stack.token, quick, sizes: [10, 100, 1000] },
        1_800_000,
      );
    } catch (error) {
      log(`jobs: FAILED ${String(error)}`);
    }
  }
  if (!args.has("no-scaling")) {
    scaling = await runScaling({ stack, service: sides.serviceNoCache, prefix: "benchnc", maxScale, log, wanted });
  }
  if (!only || only.includes("presence-memory")) {
    try {
      memory = await presenceMemory(stack.redisUrl);
    } catch (error) {
      log(`presence memory: FAILED ${String(error)}`);
    }
  }
} catch (error) {
  failure = error;
  log(`FAILED: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
} finally {
  const elapsed = (Date.now() - started) / 1000;
  mkdirSync("bench/results/raw", { recursive: true });
  writeFileSync(
    `bench/results/raw/bench-${new Date(started).toISOString().replace(/[:.]/g, "-")}.json`,
    JSON.stringify({ started, elapsed, results, rtt, cpu, jobs, scaling, memory }, null, 2),
  );
  const partial =
    Boolean(only) ||
    failure !== null ||
    ["no-scaling", "no-scenarios", "no-rtt", "no-cpu", "no-jobs", "max-scale"].some((flag) => args.has(flag));
  const written = writeReport({
    started,
    elapsed,
    results,
    rtt,
    rttMs: RTT_MS,
    cpu,
    jobs,
    scaling,
    memory,
    quick,
    partial,
  });
  log(`wrote ${written.join(", ")} in ${elapsed.toFixed(0)} s`);
  resp.close();
  await Promise.all([svc, svcNoCache, naive, floor, svcRtt, naiveRtt].map((w) => w.stop()));
  await proxy.close();
  await stack.stop();
  rmSync(bundleDir, { recursive: true, force: true });
}
process.exit(failure ? 1 : 0);

/** Seeds and measures one scenario on the naive side, the service and (given) the floor. */
async function runScenario(
  scenario: Scenario,
  on: Sides,
  options: { seconds: number; probeCalls: number; floor?: Side; label?: string },
): Promise<ScenarioResult> {
  const name = options.label ? `${scenario.id} (${options.label})` : scenario.id;
  const service: Side = on[scenario.serviceSide ?? "service"];
  // The no-cache instance has its own key prefix, so seed it rather than the cached one.
  const seedSides = { ...on, service };
  const base = { scenario: scenario.id, feature: scenario.feature, label: scenario.label };
  try {
    if (scenario.setup) {
      log(`${name}: seeding`);
      await scenario.setup(seedSides);
    }
    const measureOptions = {
      seconds: options.seconds,
      probeCalls: options.probeCalls,
      ...(scenario.maxRequests ? { maxRequests: scenario.maxRequests } : {}),
    };
    const measured: Partial<Record<Side["name"], Measured>> = {};
    for (const side of [on.naive, service, ...(options.floor ? [options.floor] : [])]) {
      log(`${name}: ${side.name}`);
      const noLoad = side.name === "naive" && scenario.naiveLoad === false;
      measured[side.name] = await measure(
        stack.upstash,
        side,
        scenario.spec,
        noLoad ? { ...measureOptions, seconds: 0 } : measureOptions,
      );
    }
    return { ...base, service: measured.service ?? null, naive: measured.naive ?? null, floor: measured.floor ?? null };
  } catch (error) {
    log(`${name}: FAILED ${String(error)}`);
    return { ...base, service: null, naive: null, floor: null, error: String(error) };
  }
}
