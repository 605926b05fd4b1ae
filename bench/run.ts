/**
 * `npm run bench`: starts redis-server, the local Upstash server, `wrangler dev`
 * (the service, twice: edge cache on and off) and the naive baseline, runs
 * every scenario against both, then the scaling curves, and writes
 * bench/results/README.md, bench/results/bench.svg and raw JSON.
 *
 * Flags: `--only=<feature or scenario id>[,...]`, `--quick` (1 s loads),
 * `--no-scaling`, `--no-scenarios`, `--max-scale=<N>` (largest scaling size).
 * Everything listens on loopback; every load and loop is bounded.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectResp } from "../dev/resp.ts";
import { startStack } from "../dev/stack.ts";
import { startNaive } from "./baseline/server.ts";
import { measure, type Measured, type Side } from "./lib/measure.ts";
import { bundleWorker, startWranglerDev } from "../dev/wrangler.ts";
import { writeReport, type ScenarioResult } from "./lib/report.ts";
import { SCENARIOS, type Sides } from "./scenarios.ts";
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
const maxScale = Number(args.get("max-scale") ?? 1_000_000);
const started = Date.now();
const log = (msg: string) => console.log(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(3)} s] ${msg}`);

const KEYS = { ingest: "bench-ingest-key-0001", read: "bench-read-key-00001", admin: "bench-admin-key-0001" };
const TAGS = { service: "bench-svc", serviceNoCache: "bench-svc-nocache", naive: "bench-naive" };

log("starting redis-server and the local Upstash server");
const stack = await startStack();
const upstashUrl = stack.upstash.url;
const common = {
  UPSTASH_REDIS_REST_URL: upstashUrl,
  INGEST_KEYS: KEYS.ingest,
  READ_KEYS: KEYS.read,
  ADMIN_KEYS: KEYS.admin,
  KEY_PREFIX: "bench",
  RATE_LIMIT_PER_10S: "0",
};
log("bundling the Worker");
const bundleDir = mkdtempSync(join(tmpdir(), "edgestats-bench-bundle-"));
const script = bundleWorker(bundleDir);
log("starting wrangler dev (edge cache on and off) and the naive baseline");
const [svc, svcNoCache, naive] = await Promise.all([
  startWranglerDev({ script, vars: { ...common, UPSTASH_REDIS_REST_TOKEN: `${stack.token}.${TAGS.service}`, TRENDING_CACHE_SECONDS: "5" } }),
  startWranglerDev({ script, vars: { ...common, KEY_PREFIX: "benchnc", UPSTASH_REDIS_REST_TOKEN: `${stack.token}.${TAGS.serviceNoCache}`, TRENDING_CACHE_SECONDS: "0", REDIS_TIMEOUT_MS: "60000" } }),
  startNaive({ url: upstashUrl, token: `${stack.token}.${TAGS.naive}`, prefix: "naive" }),
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

const wanted = (id: string, feature: string) => !only || only.includes(id) || only.includes(feature);
const results: ScenarioResult[] = [];
let scaling: ScalingResult | null = null;
let memory: MemoryFigures | null = null;
let failure: unknown = null;

try {
  if (!args.has("no-scenarios")) {
    for (const scenario of SCENARIOS) {
      if (!wanted(scenario.id, scenario.feature)) continue;
      const service: Side = sides[scenario.serviceSide ?? "service"];
      // The no-cache instance has its own key prefix, so seed it rather than the cached one.
      const seedSides = { ...sides, service };
      try {
        if (scenario.setup) {
          log(`${scenario.id}: seeding`);
          await scenario.setup(seedSides);
        }
        const options = {
          seconds: quick ? 1 : 3,
          ...(scenario.maxRequests ? { maxRequests: scenario.maxRequests } : {}),
        };
        const measured: Record<string, Measured> = {};
        for (const side of [sides.naive, service]) {
          log(`${scenario.id}: ${side.name}`);
          measured[side.name] = await measure(stack.upstash, side, scenario.spec, options);
        }
        results.push({ scenario: scenario.id, feature: scenario.feature, label: scenario.label, service: measured.service ?? null, naive: measured.naive ?? null });
      } catch (error) {
        log(`${scenario.id}: FAILED ${String(error)}`);
        results.push({ scenario: scenario.id, feature: scenario.feature, label: scenario.label, service: null, naive: null, error: String(error) });
      }
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
    JSON.stringify({ started, elapsed, results, scaling, memory }, null, 2),
  );
  const partial = Boolean(only) || failure !== null || ["no-scaling", "no-scenarios", "max-scale"].some((flag) => args.has(flag));
  const written = writeReport({ started, elapsed, results, scaling, memory, quick, partial });
  log(`wrote ${written.join(", ")} in ${elapsed.toFixed(0)} s`);
  resp.close();
  await Promise.all([svc.stop(), svcNoCache.stop(), naive.close()]);
  await stack.stop();
  rmSync(bundleDir, { recursive: true, force: true });
}
process.exit(failure ? 1 : 0);
