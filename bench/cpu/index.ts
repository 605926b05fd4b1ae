/**
 * Starts bench/cpu/host.ts in a Node process of its own (the bench's process
 * hosts the local Upstash server, whose CPU must not count) with eval
 * disallowed as on Workers, and returns what it measured.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CpuResult, HostSpec, JobRun, JobsResult } from "./host.ts";

export type { CpuResult, JobRun, JobsResult };

const HOST = join(import.meta.dirname, "host.ts");

export async function runHost<T extends CpuResult | JobsResult>(spec: HostSpec, timeoutMs: number): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), "edgestats-bench-host-"));
  const file = join(dir, "spec.json");
  writeFileSync(file, JSON.stringify(spec));
  try {
    return await new Promise<T>((ok, fail) => {
      // process.execPath: the Node running the bench (npm scripts put Node 24 first on PATH).
      const child = spawn(process.execPath, ["--disallow-code-generation-from-strings", HOST, file], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      let err = "";
      child.stdout.on("data", (c: Buffer) => (out += c.toString()));
      child.stderr.on("data", (c: Buffer) => (err = (err + c.toString()).slice(-8000)));
      const guard = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      child.on("exit", (code) => {
        clearTimeout(guard);
        const line = out.trim().split("\n").pop() ?? "";
        if (code === 0 && line.startsWith("{")) ok(JSON.parse(line) as T);
        else fail(new Error(`bench host (${spec.mode}) exited ${code}: ${err.slice(-3000) || out.slice(-1000)}`));
      });
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `node bench/cpu/index.ts [--bundle=<entry.js>] [--compare=<other entry.js>] [--rounds=1] [--quick]`:
 * the `cpu` mode alone, on a Redis and local Upstash server of its own (`npm run bench` runs it
 * with the rest). Without `--bundle` it bundles the Worker (`wrangler deploy --dry-run`).
 * `--jobs[=10,100,1000]`: the `jobs` mode alone instead (at the sizes given), without the Workers
 * the rest of the bench starts: prints its JobsResult as JSON, then bench/results/README.md's "Jobs"
 * section as a full run would write it.
 * `--compare` measures a second bundle too, the two alternating `--rounds` times on the same
 * Redis, for a like-for-like comparison on a shared machine.
 */
if (import.meta.main) {
  const { startStack } = await import("../../dev/stack.ts");
  const { bundleWorker } = await import("../../dev/wrangler.ts");
  const args = new Map(
    process.argv.slice(2).map((a) => {
      const [k = "", v = "true"] = a.replace(/^--/, "").split("=");
      return [k, v] as const;
    }),
  );
  const built = args.get("bundle") ? undefined : mkdtempSync(join(tmpdir(), "edgestats-cpu-bundle-"));
  const bundles = [args.get("bundle") ?? bundleWorker(built ?? ""), args.get("compare")].filter(
    (b): b is string => b !== undefined,
  );
  const stack = await startStack();
  try {
    const jobs = args.get("jobs");
    if (jobs !== undefined) {
      const sizes = jobs === "true" ? [10, 100, 1000] : jobs.split(",").map(Number);
      const spec: HostSpec = {
        mode: "jobs",
        bundle: bundles[0] ?? "",
        upstashUrl: stack.upstash.url,
        token: stack.token,
        quick: args.has("quick"),
        sizes,
      };
      const result = await runHost<JobsResult>(spec, 1_800_000);
      const { jobsSection } = await import("../lib/report.ts");
      console.log(JSON.stringify(result, null, 2));
      console.log(jobsSection(result));
    } else {
      const results: CpuResult[][] = bundles.map(() => []);
      for (let round = 0; round < Number(args.get("rounds") ?? 1); round++)
        for (const [i, bundle] of bundles.entries()) {
          const spec: HostSpec = {
            mode: "cpu",
            bundle,
            upstashUrl: stack.upstash.url,
            token: stack.token,
            quick: args.has("quick"),
          };
          results[i]?.push(await runHost<CpuResult>(spec, 900_000));
        }
      const labels = results[0]?.[0]?.cases.map((c) => c.label) ?? [];
      const median = (values: number[]) =>
        [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)] ?? NaN;
      console.log(`CPU ms per call (median over rounds; each a median of three passes), Node ${process.version}:`);
      console.log(`  ${"".padEnd(62)} ${bundles.map((_, i) => (i ? "--compare" : "bundle").padStart(10)).join("")}`);
      for (const label of labels)
        console.log(
          `  ${label.padEnd(62)} ${results
            .map((runs) =>
              median(runs.map((r) => r.cases.find((c) => c.label === label)?.cpuMs ?? NaN))
                .toFixed(2)
                .padStart(10),
            )
            .join("")}`,
        );
    }
  } finally {
    await stack.stop();
    if (built) rmSync(built, { recursive: true, force: true });
  }
}
