import { Worker } from "node:worker_threads";
import type { LoadJob, LoadResult } from "./load-worker.ts";

export type { LoadJob, LoadResult };

export interface LoadSummary {
  requests: number;
  ok: number;
  errors: number;
  rps: number;
  p50: number;
  p95: number;
  p99: number;
  statuses: Record<string, number>;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? NaN;
}

/** Runs autocannon in a worker thread; a hard timer ends the thread if autocannon overstays. */
export function runLoad(job: LoadJob): Promise<LoadSummary> {
  return new Promise((ok, fail) => {
    const worker = new Worker(new URL("./load-worker.ts", import.meta.url), { workerData: job });
    const guard = setTimeout(
      () => {
        void worker.terminate();
        fail(new Error(`load on ${job.spec.kind} overran ${job.duration + 30} s`));
      },
      (job.duration + 30) * 1000,
    );
    worker.once("message", (result: LoadResult) => {
      clearTimeout(guard);
      void worker.terminate();
      const sorted = Float64Array.from(result.latencies).sort();
      const list = Array.from(sorted);
      ok({
        requests: result.requests,
        ok: result.ok,
        errors: result.errors,
        rps: result.requests / Math.max(result.seconds, 0.001),
        p50: percentile(list, 50),
        p95: percentile(list, 95),
        p99: percentile(list, 99),
        statuses: result.statuses,
      });
    });
    worker.once("error", (error) => {
      clearTimeout(guard);
      fail(error);
    });
  });
}
