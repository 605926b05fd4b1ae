/**
 * One side (service or naive) of one scenario: an exact cost probe (calls in
 * sequence, Redis round trips and commands read from the local Upstash
 * server's counters for that side's tag) and a bounded load (autocannon).
 */
import type { UpstashServer } from "../../dev/upstash-server.ts";
import { percentile, runLoad, type LoadSummary } from "./load.ts";
import { generatorOf, type RequestSpec } from "./requests.ts";

export interface Side {
  name: "service" | "naive" | "floor";
  url: string;
  authorization: string;
  /** Token tag the side's Redis traffic is counted under. */
  tag: string;
}

export interface Cost {
  calls: number;
  /** Redis HTTP round trips per API call. */
  requests: number;
  /** Redis commands per API call, commands inside scripts included. */
  commands: number;
  byCommand: Record<string, number>;
  /** Statuses the probe saw (to catch a side answering errors). */
  statuses: Record<string, number>;
  /** Latency of the probe's sequential calls (one at a time, nothing else in flight), ms. */
  p50: number;
  p95: number;
}

export interface Measured {
  cost: Cost;
  load: LoadSummary | null;
}

export interface MeasureOptions {
  /** Sequential calls the cost is averaged over. @default 20 */
  probeCalls?: number;
  /** Calls made before the probe so scripts are cached in Redis. @default 1 */
  warmupCalls?: number;
  /** Connections of the load. @default 8 */
  connections?: number;
  /** Seconds of load; 0 skips the load. @default 3 */
  seconds?: number;
  /** Upper bound of load requests. @default 20000 */
  maxRequests?: number;
}

export async function call(
  side: Side,
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
): Promise<{ status: number; json: any }> {
  const res = await fetch(side.url + path, {
    method,
    headers: { authorization: side.authorization, "content-type": "application/json", ...headers },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  let json: unknown = text;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    // not JSON
  }
  return { status: res.status, json };
}

/** Runs `fn` and returns what the side's tag cost at the local Upstash server. */
export async function costOf(
  upstash: UpstashServer,
  tag: string,
  fn: () => Promise<unknown>,
): Promise<{ requests: number; commands: number; byCommand: Record<string, number> }> {
  upstash.reset(tag);
  await fn();
  const s = upstash.stats(tag);
  return { requests: s.requests, commands: s.commands, byCommand: { ...s.byCommand } };
}

/**
 * Waits until the side's tag sent no Redis request for `quietMs` (at most `maxMs`): a load ends
 * when the client stops, but a Worker may still be working through requests already in flight
 * (a naive 1,000-item batch runs thousands of round trips), which would land in the next probe.
 */
export async function settle(upstash: UpstashServer, tag: string, quietMs = 300, maxMs = 120_000): Promise<void> {
  const deadline = Date.now() + maxMs;
  let last = upstash.stats(tag).requests;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, quietMs));
    const now = upstash.stats(tag).requests;
    if (now === last) return;
    last = now;
  }
}

export async function measure(
  upstash: UpstashServer,
  side: Side,
  spec: RequestSpec,
  options: MeasureOptions = {},
): Promise<Measured> {
  const probeCalls = options.probeCalls ?? 20;
  await settle(upstash, side.tag);
  const next = generatorOf(spec);
  const statuses: Record<string, number> = {};
  const latencies: number[] = [];
  const one = async () => {
    const r = next();
    const t0 = performance.now();
    const res = await call(side, r.method, r.path, r.body, r.headers);
    latencies.push(performance.now() - t0);
    statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    return res;
  };
  for (let i = 0; i < (options.warmupCalls ?? 1); i++) await one();
  for (const k of Object.keys(statuses)) delete statuses[k];
  latencies.length = 0;
  const spent = await costOf(upstash, side.tag, async () => {
    for (let i = 0; i < probeCalls; i++) await one();
  });
  const byCommand = Object.fromEntries(Object.entries(spent.byCommand).map(([k, v]) => [k, v / probeCalls]));
  const sorted = [...latencies].sort((a, b) => a - b);
  const cost: Cost = {
    calls: probeCalls,
    requests: spent.requests / probeCalls,
    commands: spent.commands / probeCalls,
    byCommand,
    statuses,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
  };

  const seconds = options.seconds ?? 3;
  if (seconds <= 0) return { cost, load: null };
  await settle(upstash, side.tag);
  // The load continues where the probe's sequence ended (cold reads need fresh streams).
  const offset = Number(spec.params.offset ?? 0) + (options.warmupCalls ?? 1) + probeCalls;
  const load = await runLoad({
    url: side.url,
    authorization: side.authorization,
    spec: { ...spec, params: { ...spec.params, offset } },
    connections: options.connections ?? 8,
    duration: seconds,
    maxRequests: options.maxRequests ?? 20_000,
  });
  return { cost, load };
}
