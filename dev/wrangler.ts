/**
 * `wrangler dev` for tests, the soak and the benchmarks: its own port,
 * inspector port, persistence directory and vars (passed as `--var`, with an
 * empty `--env-file` so the `.dev.vars` that `npm run dev` owns is never read),
 * ready when `/healthz` answers, and stopped with the workerd it spawned.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { onExit } from "./on-exit.ts";
import { freePort } from "./redis.ts";

const ROOT = resolve(import.meta.dirname, "..");
const WRANGLER = join(ROOT, "node_modules/wrangler/bin/wrangler.js");

export interface WranglerDevOptions {
  /** Worker vars and secrets, passed as `--var NAME:VALUE`. */
  vars: Record<string, string>;
  /**
   * A Worker bundled by `bundleWorker`, served as it is (with the modules next to it), so edits
   * to the sources cannot reload it in the middle of a run.
   * @default the project's Worker, bundled and watched by wrangler
   */
  script?: string;
  /** @default a free port */
  port?: number;
  /**
   * `healthy`: ready when /healthz answers 200; `up`: when it answers at all
   * (for runs that start with Redis down).
   * @default "healthy"
   */
  readyWhen?: "healthy" | "up";
  /** @default 90000 */
  readyTimeoutMs?: number;
  /** Pass wrangler's output through instead of only keeping it for errors. @default false */
  verbose?: boolean;
}

export interface WranglerDev {
  url: string;
  port: number;
  /** What wrangler printed so far (for failure messages). */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Bundles the Worker into `outDir` (`wrangler deploy --dry-run`: the modules it would upload) and
 * returns the entry module's path; the project's Worker has its chunks next to it.
 * `config`: another wrangler config (e.g. the bench's naive baseline Worker) instead of wrangler.toml.
 */
export function bundleWorker(outDir: string, config?: string): string {
  const built = spawnSync(
    process.execPath,
    [WRANGLER, "deploy", "--dry-run", "--outdir", outDir, ...(config ? ["--config", config] : [])],
    {
      cwd: ROOT,
      encoding: "utf8",
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1" },
    },
  );
  if (built.status !== 0) throw new Error(`wrangler deploy --dry-run failed:\n${built.stderr || built.stdout}`);
  // The project's Worker is several ES modules (dev/build-worker.ts): the entry and its chunks, side
  // by side; the package.json lets Node import them as they are (bench/cpu, bench/cold-start).
  if (!config) writeFileSync(join(outDir, "package.json"), '{"type":"module"}\n');
  // The script is named after the entry (`index.js` for the project's Worker).
  return join(outDir, config ? (readdirSync(outDir).find((f) => f.endsWith(".js")) ?? "index.js") : "index.js");
}

/**
 * A wrangler config that serves `script` as it is, with the modules next to it (its chunks),
 * written to `dir`; returns its path. `wrangler dev <script> --no-bundle` attaches no module but
 * the script; and it reads no wrangler.toml (it looks for one from the script's directory, a
 * temporary one), so this config holds nothing else either: the Worker runs with the settings
 * it had that way (wrangler's default compatibility date, no bindings but the `--var`s).
 */
function scriptConfig(script: string, dir: string): string {
  const path = join(dir, "wrangler.json");
  writeFileSync(
    path,
    JSON.stringify({
      main: resolve(script),
      base_dir: dirname(resolve(script)),
      no_bundle: true,
      find_additional_modules: true,
      rules: [{ type: "ESModule", globs: ["**/chunk-*.js"] }],
    }),
  );
  return path;
}

/**
 * `freePort()` releases the port it found before wrangler binds it (and workerd binds ports of its
 * own too), so another test starting at the same moment can take one in between; wrangler then
 * exits with "Address already in use" (seen once in CI, in the dashboard suite). Such a start is
 * tried again on new free ports (a port the caller chose is tried again as it is).
 */
const START_ATTEMPTS = 3;

export async function startWranglerDev(options: WranglerDevOptions): Promise<WranglerDev> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options, options.port ?? (await freePort()), await freePort());
    } catch (error) {
      if (!(error instanceof PortTakenError)) throw error;
      if (attempt === START_ATTEMPTS)
        throw new Error(`${START_ATTEMPTS} starts found a port taken. The last one: ${error.message}`, {
          cause: error,
        });
    }
  }
}

/** wrangler (workerd) exited because a port it was given was taken by the time it bound it. */
class PortTakenError extends Error {}

async function startOnce(options: WranglerDevOptions, port: number, inspectorPort: number): Promise<WranglerDev> {
  const scratch = mkdtempSync(join(tmpdir(), "edgestats-wrangler-"));
  const envFile = join(scratch, "empty.env");
  writeFileSync(envFile, "");
  const args = [
    WRANGLER,
    "dev",
    ...(options.script ? ["--config", scriptConfig(options.script, scratch)] : []),
    "--port",
    String(port),
    "--ip",
    "127.0.0.1",
    "--inspector-port",
    String(inspectorPort),
    "--env-file",
    envFile,
    "--persist-to",
    join(scratch, "state"),
    "--show-interactive-dev-session=false",
    ...Object.entries(options.vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
  ];
  // process.execPath: the Node running us (npm scripts put Node 24 first on PATH).
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1", CI: "1" },
    stdio: ["ignore", "pipe", "pipe"],
    // Its own process group, so stopping it also ends the workerd it spawns.
    detached: true,
  });
  let output = "";
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
    if (options.verbose) process.stderr.write(chunk);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  let exited = false;
  const exit = new Promise<void>((ok) => child.on("exit", () => ((exited = true), ok())));
  const signal = (name: NodeJS.Signals) => {
    try {
      if (child.pid) process.kill(-child.pid, name);
    } catch {
      // already gone
    }
  };
  // Never outlive the process that started it, even when a run is cut short.
  const cancelKill = onExit(() => signal("SIGKILL"));

  async function stop() {
    cancelKill();
    if (!exited) {
      signal("SIGTERM");
      const killer = setTimeout(() => signal("SIGKILL"), 5000);
      await exit;
      clearTimeout(killer);
    }
    rmSync(scratch, { recursive: true, force: true });
  }

  const url = `http://127.0.0.1:${port}`;
  const ready = (status: number) => (options.readyWhen === "up" ? status > 0 : status === 200);
  const deadline = Date.now() + (options.readyTimeoutMs ?? 90_000);
  while (Date.now() < deadline && !exited) {
    // The Redis check (deep=1) needs an API key of any scope; keyless /healthz only says the Worker is up.
    const key = [options.vars.READ_KEYS, options.vars.ADMIN_KEYS, options.vars.INGEST_KEYS]
      .map((l) => l?.split(",")[0]?.trim())
      .find((k) => k);
    const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
    const status = await fetch(`${url}/healthz${key ? "?deep=1" : ""}`, { headers }).then(
      (r) => r.status,
      () => 0,
    );
    if (ready(status)) return { url, port, output: () => output, stop };
    await new Promise((r) => setTimeout(r, 300));
  }
  await stop();
  const message = `wrangler dev did not answer ${url}/healthz${exited ? " (it exited)" : ""}. Output:\n${output.slice(-4000)}`;
  if (exited && /address already in use/i.test(output)) throw new PortTakenError(message);
  throw new Error(message);
}
