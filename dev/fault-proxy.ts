/**
 * A fault-injecting HTTP proxy for the local Upstash server: point a client's
 * UPSTASH_REDIS_REST_URL at it and choose what goes wrong.
 *
 * Faults (each for every request, for the next `times` requests, or at random
 * with probability `rate`; optionally only `after` some requests went through):
 * - `delay`          forward after `ms` milliseconds (a slow network or Redis);
 * - `status`         answer `status` (e.g. 502/503) without forwarding, with `body` if given
 *                    (a gateway's HTML page) or a JSON `{"error"}`;
 * - `reset`          destroy the connection before forwarding (nothing happened);
 * - `hang`           accept and never answer (the client's timeout must fire);
 * - `lose-response`  forward, let Redis apply the command, then destroy the
 *                    connection instead of answering: the case where a client
 *                    that retries on its own would apply a write twice;
 * - `cut-body`       forward (applied), send the answer's headers and half its
 *                    body, then destroy the connection;
 * - `stall-body`     forward (applied), send the headers and half the body, and
 *                    never the rest (the client's timeout must cover reading it).
 *
 * In process: `startFaultProxy({ target })`. From a shell:
 * `node dev/fault-proxy.ts --target http://127.0.0.1:PORT [--port P]`, then
 * `POST /__fault` with a JSON `FaultPlan` (or `{}` to heal) and
 * `GET /__fault` for the counters. Loopback only.
 */
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { parseArgs } from "node:util";
import { listenOnLoopback } from "./redis.ts";

export type Fault =
  | { kind: "none" }
  | { kind: "delay"; ms: number }
  | { kind: "status"; status: number; body?: string }
  | { kind: "reset" }
  | { kind: "hang" }
  | { kind: "lose-response" }
  | { kind: "cut-body" }
  | { kind: "stall-body" };

export interface FaultPlan {
  fault: Fault;
  /** Apply the fault to only this many of the next requests, then heal. @default every request */
  times?: number;
  /** Apply the fault to each request with this probability (0..1). @default 1 */
  rate?: number;
  /** Let this many requests through untouched first (to break a multi-step job half way). @default 0 */
  after?: number;
}

export interface FaultStats {
  /** Requests forwarded whose answer reached the client. */
  forwarded: number;
  /** Requests hit by a fault, by kind (`lose-response` ones were applied upstream). */
  faulted: Record<string, number>;
}

export interface FaultProxy {
  url: string;
  port: number;
  /** Changes the fault for the requests that follow. */
  set(plan: FaultPlan | Fault): void;
  /** Back to forwarding everything untouched. */
  heal(): void;
  stats(): FaultStats;
  close(): Promise<void>;
}

export interface FaultProxyOptions {
  /** The local Upstash server, e.g. `http://127.0.0.1:38123`. */
  target: string;
  /** @default a free port */
  port?: number;
}

const HEALTHY: FaultPlan = { fault: { kind: "none" } };

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const target = new URL(options.target);
  let plan: FaultPlan = HEALTHY;
  let remaining = Infinity;
  let passes = 0;
  const stats: FaultStats = { forwarded: 0, faulted: {} };
  const sockets = new Set<Socket>();

  function setPlan(next: FaultPlan | Fault): void {
    plan = "fault" in next ? next : { fault: next };
    remaining = plan.times ?? Infinity;
    passes = plan.after ?? 0;
  }

  /** The fault this request gets, consuming one of `times`. */
  function draw(): Fault {
    if (plan.fault.kind === "none" || remaining <= 0) return { kind: "none" };
    if (passes > 0) {
      passes--;
      return { kind: "none" };
    }
    if (plan.rate !== undefined && Math.random() >= plan.rate) return { kind: "none" };
    remaining--;
    stats.faulted[plan.fault.kind] = (stats.faulted[plan.fault.kind] ?? 0) + 1;
    return plan.fault;
  }

  function readBody(req: IncomingMessage): Promise<Buffer> {
    return new Promise((ok, fail) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => ok(Buffer.concat(chunks)));
      req.on("error", fail);
    });
  }

  function forward(
    req: IncomingMessage,
    body: Buffer,
  ): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
    return new Promise((ok, fail) => {
      const headers = { ...req.headers, host: target.host, "content-length": String(body.length) };
      const up = httpRequest(
        { hostname: target.hostname, port: target.port, path: req.url, method: req.method, headers },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            const out: Record<string, string> = {};
            for (const [k, v] of Object.entries(res.headers)) {
              if (v !== undefined && k !== "transfer-encoding" && k !== "connection")
                out[k] = Array.isArray(v) ? v.join(", ") : v;
            }
            ok({ status: res.statusCode ?? 502, headers: out, body: Buffer.concat(chunks) });
          });
          res.on("error", fail);
        },
      );
      up.on("error", fail);
      up.end(body);
    });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    if (req.url?.startsWith("/__fault")) {
      if (req.method === "POST") setPlan(body.length ? (JSON.parse(body.toString("utf8")) as FaultPlan) : HEALTHY);
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ plan, stats }));
      return;
    }
    const fault = draw();
    switch (fault.kind) {
      case "reset":
        req.socket.destroy();
        return;
      case "hang":
        return; // the socket stays open until the client gives up or the proxy closes
      case "status":
        res
          .writeHead(fault.status, { "content-type": fault.body === undefined ? "application/json" : "text/html" })
          .end(fault.body ?? JSON.stringify({ error: `fault-proxy: injected ${fault.status}` }));
        return;
      case "delay":
        await new Promise((r) => setTimeout(r, fault.ms));
        break;
      default:
        break;
    }
    let answer;
    try {
      answer = await forward(req, body);
    } catch {
      // Upstream down (e.g. the Upstash server stopped): what a gateway would say.
      if (!res.headersSent)
        res
          .writeHead(502, { "content-type": "application/json" })
          .end(JSON.stringify({ error: "fault-proxy: upstream unreachable" }));
      return;
    }
    if (fault.kind === "lose-response") {
      req.socket.destroy();
      return;
    }
    if (fault.kind === "cut-body" || fault.kind === "stall-body") {
      // the full length announced, half of it sent: the client is left reading the rest
      res.writeHead(answer.status, { ...answer.headers, "content-length": String(answer.body.length) });
      res.write(answer.body.subarray(0, Math.floor(answer.body.length / 2)), () => {
        if (fault.kind === "cut-body") req.socket.destroy();
      });
      return;
    }
    if (res.destroyed) return;
    stats.forwarded++;
    res.writeHead(answer.status, answer.headers).end(answer.body);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => req.socket.destroy());
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  const port = await listenOnLoopback(server, options.port);
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    set: setPlan,
    heal: () => setPlan(HEALTHY),
    stats: () => structuredClone(stats),
    close: () =>
      new Promise<void>((ok) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => ok());
      }),
  };
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { target: { type: "string" }, port: { type: "string" } } });
  if (!values.target) {
    console.error("usage: node dev/fault-proxy.ts --target http://127.0.0.1:PORT [--port P]");
    process.exit(2);
  }
  const proxy = await startFaultProxy({ target: values.target, ...(values.port ? { port: Number(values.port) } : {}) });
  console.log(
    `fault proxy ${proxy.url} -> ${values.target}; POST ${proxy.url}/__fault {"fault":{"kind":"delay","ms":500},"rate":0.5}`,
  );
  const stop = () => proxy.close().then(() => process.exit(0));
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}
