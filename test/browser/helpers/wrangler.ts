/**
 * Starts `wrangler dev` for a browser test: its own port, inspector port,
 * persistence directory and vars, so it neither reads the `.dev.vars` that
 * `npm run dev` owns nor collides with another wrangler on the machine.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export interface WranglerDev {
  url: string;
  /** Everything wrangler printed so far (for failure messages). */
  output(): string;
  stop(): Promise<void>;
}

export interface WranglerDevOptions {
  /** Worker vars and secrets, passed as `--var NAME:VALUE`. */
  vars: Record<string, string>;
  /** @default 90_000 */
  startTimeoutMs?: number;
}

export function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const server = createServer();
    server.unref();
    server.on("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? ok(address.port) : fail(new Error("no port"))));
    });
  });
}

export async function startWranglerDev(options: WranglerDevOptions): Promise<WranglerDev> {
  const root = resolve(import.meta.dirname, "../../..");
  const port = await freePort();
  const inspectorPort = await freePort();
  const scratch = mkdtempSync(join(tmpdir(), "edgestats-browser-"));
  // An explicit (empty) env file makes wrangler skip .dev.vars; the vars come from --var.
  const envFile = join(scratch, "empty.env");
  writeFileSync(envFile, "");
  const args = [
    join(root, "node_modules/wrangler/bin/wrangler.js"),
    "dev",
    "--port", String(port),
    "--ip", "127.0.0.1",
    "--inspector-port", String(inspectorPort),
    "--env-file", envFile,
    "--persist-to", join(scratch, "state"),
    "--show-interactive-dev-session=false",
    ...Object.entries(options.vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
  ];
  // process.execPath: the Node that runs vitest (npm scripts put Node 24 first on PATH).
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
    // Its own process group, so stop() also ends workerd, which wrangler spawns.
    detached: true,
  });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  let exited = false;
  const exit = new Promise<void>((ok) => child.on("exit", () => ((exited = true), ok())));

  async function stop() {
    if (!exited && child.pid) {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // already gone
      }
      const killer = setTimeout(() => {
        try {
          if (child.pid) process.kill(-child.pid, "SIGKILL");
        } catch {
          // already gone
        }
      }, 5000);
      await exit;
      clearTimeout(killer);
    }
    rmSync(scratch, { recursive: true, force: true });
  }

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (options.startTimeoutMs ?? 90_000);
  while (Date.now() < deadline) {
    if (exited) break;
    const ok = await fetch(`${url}/healthz`).then((r) => r.ok, () => false);
    if (ok) return { url, output: () => output, stop };
    await new Promise((r) => setTimeout(r, 300));
  }
  await stop();
  throw new Error(`wrangler dev did not answer ${url}/healthz${exited ? " (it exited)" : ""}. Output:\n${output.slice(-4000)}`);
}
