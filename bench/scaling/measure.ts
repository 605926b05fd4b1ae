import type { UpstashServer } from "../../dev/upstash-server.ts";
import { percentile } from "../lib/load.ts";
import { call, type Side } from "../lib/measure.ts";
import type { RespClient } from "../../dev/resp.ts";
import type { Point, ScalingInput, Timing } from "./types.ts";

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

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? 0;
}

/** Runs `task` with every command logged by SLOWLOG; returns the longest script (µs) and how many ran. */
export async function longestScript<T>(
  redis: RespClient,
  task: () => Promise<T>,
): Promise<{ value: T; us: number; scripts: number; durations: number[] }> {
  await redis.call("CONFIG", "SET", "slowlog-max-len", "100000");
  await redis.call("CONFIG", "SET", "slowlog-log-slower-than", "0");
  await redis.call("SLOWLOG", "RESET");
  try {
    const value = await task();
    const entries = (await redis.call("SLOWLOG", "GET", "100000")) as unknown[][];
    let us = 0;
    let scripts = 0;
    const durations: number[] = [];
    for (const entry of entries) {
      const args = entry[3] as unknown[];
      const name = String(args?.[0] ?? "").toUpperCase();
      if (!name.startsWith("EVAL")) continue;
      scripts++;
      us = Math.max(us, Number(entry[2]));
      durations.push(Number(entry[2]));
    }
    return { value, us, scripts, durations };
  } finally {
    await redis.call("CONFIG", "SET", "slowlog-log-slower-than", "10000");
    await redis.call("SLOWLOG", "RESET");
  }
}

/**
 * Measures single calls by their longest Redis script (SLOWLOG), commands, round trips and scripts,
 * keeping one timing curve per call name and a log line per call (`print` shows them).
 */
export function scriptProbe(input: Pick<ScalingInput, "redis" | "upstash" | "side" | "log">, area: string) {
  const { redis, upstash, side, log } = input;
  const timings: Record<string, Timing> = {};
  const lines: string[] = [];
  const measure = async (
    n: number,
    name: string,
    path: string,
    options: {
      method?: string;
      describe?: (json: any) => string;
      body?: unknown;
      warm?: boolean;
      /** Statuses besides 2xx the call may answer (a refusal measured on purpose, e.g. 400). */
      accept?: number[];
      /** Runs instead of one call of `path` (e.g. a job called until it reports no more work); measured as a whole. */
      task?: () => Promise<{ status: number; json: any }>;
      /**
       * Measures the call this many times and keeps the median longest script (a read: the same
       * answer each time), so one preemption of redis-server on a shared machine is not the figure.
       */
      repeat?: number;
    } = {},
  ) => {
    const { method = "GET", describe = () => "", body, warm = false, accept = [], task, repeat = 1 } = options;
    const run = task ?? (() => call(side, method, path, body));
    if (warm) await run();
    const runs: { r: Awaited<ReturnType<typeof longestScript<{ status: number; json: any }>>>; ms: number }[] = [];
    let cost = { commands: 0, requests: 0 };
    for (let i = 0; i < repeat; i++) {
      upstash.reset(side.tag);
      const t0 = performance.now();
      const r = await longestScript(redis, run);
      runs.push({ r, ms: performance.now() - t0 });
      cost = upstash.stats(side.tag);
    }
    const sorted = [...runs].sort((a, b) => a.r.us - b.r.us);
    const { r, ms } = sorted[Math.floor((sorted.length - 1) / 2)] as (typeof runs)[number];
    const spread =
      repeat > 1 ? `, median of ${repeat} calls (${runs.map((x) => (x.r.us / 1000).toFixed(2)).join(", ")} ms)` : "";
    const many = r.durations.length > 3 ? `, median script ${(median(r.durations) / 1000).toFixed(2)} ms` : "";
    if (r.value.status >= 300 && !accept.includes(r.value.status))
      throw new Error(`${method} ${path}: ${r.value.status} ${JSON.stringify(r.value.json).slice(0, 300)}`);
    const status = r.value.status >= 300 ? `HTTP ${r.value.status}, ` : "";
    const detail = `${status}${cost.commands} commands, ${cost.requests} round trips, ${r.scripts} scripts${many}, ${ms.toFixed(0)} ms wall${spread}; ${describe(r.value.json)}`;
    const curve = (timings[`longest script: ${name}`] ??= { name: `longest script: ${name}`, points: [] });
    curve.points.push({ n, ms: r.us / 1000, detail });
    lines.push(
      `N=${n.toLocaleString("en-US").padStart(9)} | ${name.padEnd(58)} | longest script ${(r.us / 1000).toFixed(2).padStart(8)} ms | ${detail}`,
    );
    log(`${area} N=${n}: ${name}: longest script ${(r.us / 1000).toFixed(2)} ms (${detail})`);
    return r.value.json;
  };
  return {
    measure,
    timings: (): Timing[] => Object.values(timings),
    print: () => console.log(["", `${area}: longest Redis script per call (SLOWLOG)`, ...lines, ""].join("\n")),
  };
}
