/**
 * Runs one autocannon load in its own thread, so the load generator does not
 * share an event loop with the local Upstash server and the naive baseline
 * that live in the runner's main thread. Latencies are taken per response
 * (autocannon's summary has no p95).
 */
import { parentPort, workerData } from "node:worker_threads";
import autocannon from "autocannon";
import { generatorOf, type RequestSpec } from "./requests.ts";

export interface LoadJob {
  url: string;
  authorization: string;
  spec: RequestSpec;
  /** Concurrent connections. */
  connections: number;
  /** Seconds of load. */
  duration: number;
  /** Stop after this many requests even when time is left. */
  maxRequests: number;
}

export interface LoadResult {
  requests: number;
  ok: number;
  non2xx: number;
  errors: number;
  seconds: number;
  latencies: number[];
  statuses: Record<string, number>;
}

const job = workerData as LoadJob;
const next = generatorOf(job.spec);
const latencies: number[] = [];
const statuses: Record<string, number> = {};
const started = performance.now();

const instance = autocannon(
  {
    url: job.url,
    connections: job.connections,
    duration: job.duration,
    maxOverallRequests: job.maxRequests,
    headers: { authorization: job.authorization, "content-type": "application/json" },
    requests: [
      {
        setupRequest: (req: Record<string, unknown>) => {
          const r = next();
          req.method = r.method;
          req.path = r.path;
          req.body = r.body ?? "";
          if (r.headers) req.headers = { ...(req.headers as Record<string, string> | undefined), ...r.headers };
          return req;
        },
      },
    ],
  },
  (error: Error | null, result: { non2xx: number; errors: number; timeouts: number; duration?: number }) => {
    const seconds = result.duration ?? (performance.now() - started) / 1000;
    const requests = latencies.length;
    const out: LoadResult = {
      requests,
      ok: requests - result.non2xx,
      non2xx: result.non2xx,
      errors: result.errors + result.timeouts + (error ? 1 : 0),
      seconds,
      latencies,
      statuses,
    };
    parentPort?.postMessage(out);
  },
);

instance.on("response", (_client: unknown, status: number, _bytes: number, ms: number) => {
  latencies.push(ms);
  statuses[status] = (statuses[status] ?? 0) + 1;
});
