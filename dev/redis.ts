import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createServer, connect, type Server } from "node:net";
import { resolve } from "node:path";
import { onExit } from "./on-exit.ts";

export interface RedisServer {
  url: string;
  port: number;
  stop(): Promise<void>;
}

export interface StartRedisOptions {
  /** Keep data here with AOF on (dev); omit for a throwaway server (tests). */
  dataDir?: string;
  /** @default a free port */
  port?: number;
}

/** Exits at once, with the way out, when redis-server is not on PATH. */
export function requireRedisServer(): void {
  const found = spawnSync("redis-server", ["--version"], { encoding: "utf8" });
  if (found.error || found.status !== 0) {
    console.error(
      "\nedgestats needs redis-server on PATH for local dev and tests, and it was not found.\n" +
        "  Debian/Ubuntu: sudo apt-get install redis-server\n" +
        "  macOS:         brew install redis\n" +
        "Or point REDIS_URL at a running Redis (redis://127.0.0.1:6379).\n",
    );
    process.exit(1);
  }
}

/** Listens on 127.0.0.1 (`port`, or a free one) and returns the port it got. */
export async function listenOnLoopback(server: Pick<Server, "once" | "listen" | "address">, port = 0): Promise<number> {
  await new Promise<void>((ok, fail) => {
    server.once("error", fail);
    server.listen(port, "127.0.0.1", () => ok());
  });
  const address = server.address();
  return typeof address === "object" && address ? address.port : 0;
}

export function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", fail);
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address();
      const port = typeof address === "object" && address ? address.port : 0;
      srv.close(() => ok(port));
    });
  });
}

function waitForPort(port: number, child: ChildProcess, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((ok, fail) => {
    const attempt = () => {
      if (child.exitCode !== null) return fail(new RedisExitedError(`redis-server exited with code ${child.exitCode}`));
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.end();
        ok();
      });
      socket.once("error", () => {
        socket.destroy();
        if (Date.now() > deadline) fail(new Error(`redis-server did not listen on ${port} within ${timeoutMs} ms`));
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

/**
 * Starts a private redis-server on loopback; it dies with this process. A free port found by
 * `freePort()` may be taken by another process before redis-server binds it (it then exits at
 * once), so a server on a port of our choosing is started again on a new one, up to 3 times.
 */
export async function startRedis(options: StartRedisOptions = {}): Promise<RedisServer> {
  requireRedisServer();
  for (let attempt = 1; ; attempt++) {
    try {
      return await startRedisOn(options, options.port ?? (await freePort()));
    } catch (error) {
      if (options.port !== undefined || attempt === 3 || !(error instanceof RedisExitedError)) throw error;
    }
  }
}

class RedisExitedError extends Error {}

async function startRedisOn(options: StartRedisOptions, port: number): Promise<RedisServer> {
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--protected-mode", "no", "--save", ""];
  if (options.dataDir) {
    const dir = resolve(options.dataDir);
    mkdirSync(dir, { recursive: true });
    args.push("--dir", dir, "--appendonly", "yes", "--appendfsync", "everysec");
  } else {
    args.push("--appendonly", "no");
  }
  const child = spawn("redis-server", args, { stdio: ["ignore", "ignore", "inherit"] });
  const cancel = onExit(() => child.kill("SIGTERM"));
  await waitForPort(port, child).catch((error: unknown) => {
    cancel();
    child.kill("SIGKILL");
    throw error;
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop: () =>
      new Promise<void>((ok) => {
        cancel();
        if (child.exitCode !== null) return ok();
        child.once("exit", () => ok());
        child.kill("SIGTERM");
      }),
  };
}
