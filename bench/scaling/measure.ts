import type { UpstashServer } from "../../dev/upstash-server.ts";
import { percentile } from "../lib/load.ts";
import { call, type Side } from "../lib/measure.ts";
import type { Point } from "./types.ts";

/**
 * Calls `path` once unmeasured, then `calls` times in sequence (`before`, if
 * given, runs ahead of each call, outside the measured cost) and returns latency percentiles and the exact
 * Redis cost per call. Throws when a call does not answer 2xx.
 */
export async function sample(
  upstash: UpstashServer,
  side: Side,
  method: string,
  path: string,
  calls: number,
  options: { body?: unknown; before?: () => Promise<void>; note?: (json: any) => string } = {},
): Promise<Point> {
  const latencies: number[] = [];
  let requests = 0;
  let commands = 0;
  let note = "";
  // One uncounted call first: a script's first call after new data may cost the NOSCRIPT fallback.
  await options.before?.();
  await call(side, method, path, options.body);
  for (let i = 0; i < calls; i++) {
    await options.before?.();
    upstash.reset(side.tag);
    const t0 = performance.now();
    const res = await call(side, method, path, options.body);
    latencies.push(performance.now() - t0);
    const s = upstash.stats(side.tag);
    requests += s.requests;
    commands += s.commands;
    if (res.status >= 300)
      throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.json).slice(0, 300)}`);
    if (options.note) note = options.note(res.json);
  }
  latencies.sort((a, b) => a - b);
  return {
    calls,
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    requests: requests / calls,
    commands: commands / calls,
    ...(note ? { note } : {}),
  };
}

/** Runs `task` and returns its wall time in ms. */
export async function timed<T>(task: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await task();
  return { ms: performance.now() - t0, value };
}
