/**
 * Starts bench/cpu/host.ts in a Node process of its own (the bench's process
 * hosts the local Upstash server, whose CPU must not count) with eval
 * disallowed as on Workers, and returns what it measured.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CpuResult, HostSpec, JobsResult } from "./host.ts";

export type { CpuResult, JobsResult };

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
