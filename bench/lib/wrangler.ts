/**
 * Starts `wrangler dev` for the service on a free loopback port with the
 * bench's vars, and stops it. Its state goes to a throwaway directory so the
 * bench never shares a Cache API store with someone's `npm run dev`, and an
 * empty env file stands in for `.dev.vars` (which `npm run dev` owns).
 *
 * The Worker is bundled once (`wrangler deploy --dry-run`) and served with
 * `--no-bundle`: wrangler's own watcher would rebuild and reload the Worker
 * in the middle of a load whenever a source file changes.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../dev/redis.ts";

export interface WranglerDev {
  url: string;
  stop(): Promise<void>;
}

/** Bundles the Worker into `outDir` and returns the script path. */
export function bundleWorker(outDir: string): string {
  const built = spawnSync(process.execPath, ["node_modules/wrangler/bin/wrangler.js", "deploy", "--dry-run", "--outdir", outDir], {
    encoding: "utf8",
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1" },
  });
  if (built.status !== 0) throw new Error(`wrangler deploy --dry-run failed:\n${built.stderr || built.stdout}`);
  return join(outDir, "index.js");
}

export interface WranglerOptions {
  /** A bundled Worker (from `bundleWorker`). */
  script: string;
  /** Worker vars and secrets, passed as `--var NAME:VALUE`. */
  vars: Record<string, string>;
  /** How long to wait for `/healthz` to answer. @default 90000 */
  readyTimeoutMs?: number;
  /** Print wrangler's own output (for debugging the bench). @default false */
  verbose?: boolean;
}

export async function startWrangler(options: WranglerOptions): Promise<WranglerDev> {
  const port = await freePort();
  const inspector = await freePort();
  const state = mkdtempSync(join(tmpdir(), "edgestats-bench-"));
  const envFile = join(state, "empty.env");
  writeFileSync(envFile, "");
  const args = [
    "node_modules/wrangler/bin/wrangler.js",
    "dev",
    options.script,
    "--no-bundle",
    "--env-file", envFile,
    "--port", String(port),
    "--ip", "127.0.0.1",
    "--inspector-port", String(inspector),
    "--persist-to", state,
    "--show-interactive-dev-session=false",
    "--log-level", options.verbose ? "log" : "warn",
    ...Object.entries(options.vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
  ];
  const child = spawn(process.execPath, args, {
    stdio: ["ignore", options.verbose ? "inherit" : "ignore", "inherit"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1" },
  });
  const kill = () => child.kill("SIGTERM");
  process.once("exit", kill);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (options.readyTimeoutMs ?? 90_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited with code ${child.exitCode}`);
    const ok = await fetch(`${url}/healthz`).then((r) => r.status < 500, () => false);
    if (ok) break;
    if (Date.now() > deadline) {
      child.kill("SIGTERM");
      throw new Error(`wrangler dev did not answer /healthz on ${url} in time`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  return {
    url,
    stop: () =>
      new Promise<void>((ok) => {
        process.off("exit", kill);
        const done = () => {
          rmSync(state, { recursive: true, force: true });
          ok();
        };
        if (child.exitCode !== null) return done();
        const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
        child.once("exit", () => {
          clearTimeout(timer);
          done();
        });
        child.kill("SIGTERM");
      }),
  };
}
