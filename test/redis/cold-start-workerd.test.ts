/**
 * bench/cold-start-workerd.ts keeps working: one fresh workerd run (the production bundle, the
 * local Upstash server over the real redis-server) and one profiled run print every figure. It
 * checks the figures are there and are CPU times, not their values (a shared machine's figures vary).
 */
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { STEPS } from "../../bench/cold-start-workerd.ts";

const ROOT = resolve(import.meta.dirname, "../..");

function runScript(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((ok) => {
    const child = spawn(process.execPath, ["bench/cold-start-workerd.ts", ...args], { cwd: ROOT });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (err += c.toString()));
    child.on("exit", (code) => ok({ code, out, err }));
  });
}

describe("bench/cold-start-workerd.ts", () => {
  it(
    "prints median, p25 and least CPU ms of every step, and the profiled functions",
    { timeout: 240_000 },
    async () => {
      const { code, out, err } = await runScript(["--runs=2", "--top=3", "--profile-runs=1"]);
      expect(code, err).toBe(0);
      expect(out).toMatch(/CPU ms of workerd's isolate thread, 2 fresh workerd runs, each primed/);
      const figure = "\\s+(\\d+\\.\\d\\d)";
      for (const step of STEPS) {
        // the last column: the runs where the step's isolate was its process's first (— when none was)
        const row = new RegExp(
          `^${step.replace(/[()]/g, "\\$&")}${figure}${figure}${figure}${figure}\\s+(\\d+\\.\\d\\d|—)$`,
          "m",
        ).exec(out);
        expect(row, `${step} in:\n${out}`).not.toBeNull();
        const [median, p25, min, all] = (row ?? []).slice(1, 5).map(Number) as [number, number, number, number];
        // A request that runs code takes some CPU; the least is at most the p25, at most the median.
        expect(min).toBeGreaterThan(0);
        expect(min).toBeLessThanOrEqual(p25);
        expect(p25).toBeLessThanOrEqual(median);
        expect(all).toBeGreaterThan(0);
        // Each step's profiled functions: at least one line `ms  name`.
        const top = new RegExp(
          `^${step.replace(/[()]/g, "\\$&")}: most sampled self time.*\\n\\s+\\d+\\.\\d\\d  \\S`,
          "m",
        );
        expect(out, step).toMatch(top);
      }
    },
  );
});
