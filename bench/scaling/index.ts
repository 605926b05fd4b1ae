/**
 * The scaling curves: trending top-10 vs members per hour (before/after
 * compaction), presence count and trimming vs room size, leaderboard reads vs
 * board size, each at 1k → 10k → 100k → 1M. Data is loaded straight into
 * the bench's private Redis; the measured calls go through the service.
 *
 * Parts (`node bench/run.ts --only=<id>[,...] --no-scenarios --no-rtt --no-cpu --no-jobs` runs some):
 * scaling-trending, scaling-signals, scaling-presence, scaling-leaderboards, and the longest-script
 * (SLOWLOG) + commands-per-call curves at 10k / 100k / 1M of issue 15 point 5:
 * scaling-leaderboard-scripts, scaling-presence-scripts, scaling-counters, scaling-histograms
 * (N = buckets a day, 50 / 500 / 5,000), scaling-ingest (queue consumer batch); scaling-calendar (400-day hourly counter and histogram).
 */
import { connectResp, type RespClient } from "../../dev/resp.ts";
import type { Stack } from "../../dev/stack.ts";
import { createRedis } from "../../src/redis/client.ts";
import type { Side } from "../lib/measure.ts";
import { calendarScaling } from "./calendar.ts";
import { counterScaling } from "./counters.ts";
import { histogramScaling } from "./histograms.ts";
import { ingestScaling } from "./ingest.ts";
import { leaderboardScriptScaling } from "./leaderboard-scripts.ts";
import { presenceScriptScaling } from "./presence-scripts.ts";
import { leaderboardScaling } from "./leaderboards.ts";
import { presenceScaling } from "./presence.ts";
import { signalsScaling } from "./signals.ts";
import { trendingScaling } from "./trending.ts";
import type { ScalingResult } from "./types.ts";

export type { ScalingResult };

export interface ScalingOptions {
  stack: Stack;
  /** The service instance to measure (edge cache off) and its key prefix. */
  service: Side;
  prefix: string;
  maxScale: number;
  log: (msg: string) => void;
  wanted: (id: string, feature: string) => boolean;
}

/** Removes every key matching `pattern` (bench-private Redis only; never on a request path). */
async function unlinkMatching(redis: RespClient, pattern: string): Promise<void> {
  let cursor = "0";
  for (let i = 0; i < 100_000; i++) {
    const reply = (await redis.call("SCAN", cursor, "MATCH", pattern, "COUNT", 1000)) as [Buffer, Buffer[]];
    cursor = reply[0].toString();
    if (reply[1].length) await redis.call("UNLINK", ...reply[1]);
    if (cursor === "0") return;
  }
}

export async function runScaling(options: ScalingOptions): Promise<ScalingResult> {
  const { stack, service, prefix, log } = options;
  const sizes = [1_000, 10_000, 100_000, 1_000_000].filter((n) => n <= options.maxScale);
  const result: ScalingResult = { curves: [], timings: [], notes: [] };
  const resp = await connectResp(stack.redisUrl);
  // Loaders that go through the library count under their own tag, apart from the measured calls.
  const loader = createRedis({ url: stack.upstash.url, token: `${stack.token}.bench-load`, timeoutMs: 60_000 });
  const run = async (id: string, task: () => Promise<Partial<ScalingResult>>) => {
    if (!options.wanted(id, "scaling")) return;
    try {
      const part = await task();
      result.curves.push(...(part.curves ?? []));
      result.timings.push(...(part.timings ?? []));
      result.notes.push(...(part.notes ?? []));
    } catch (error) {
      log(`${id}: FAILED ${String(error)}`);
      result.notes.push(`${id} failed: ${String(error).slice(0, 300)}`);
    }
  };
  try {
    // Streams left by the scenarios would be compacted with the measured one and blur its time.
    await unlinkMatching(resp, `${prefix}:trending:*`);
    await run("scaling-trending", () =>
      trendingScaling({ redis: resp, upstash: stack.upstash, side: service, prefix, sizes, log }),
    );
    await run("scaling-signals", () =>
      signalsScaling({
        redis: resp,
        upstash: stack.upstash,
        side: service,
        prefix,
        sizes: sizes.filter((n) => n >= 10_000),
        log,
      }),
    );
    await run("scaling-presence", () =>
      presenceScaling({
        redis: loader,
        upstash: stack.upstash,
        side: service,
        prefix,
        sizes,
        timeoutSeconds: 300,
        log,
      }),
    );
    await run("scaling-leaderboards", () =>
      leaderboardScaling({ redis: resp, upstash: stack.upstash, side: service, prefix, sizes, log }),
    );
    // Issue 15 point 5: longest script and commands per call of every path at 10k / 100k / 1M.
    const input = { redis: resp, upstash: stack.upstash, side: service, prefix, log };
    const large = sizes.filter((n) => n >= 10_000);
    await run("scaling-leaderboard-scripts", () => leaderboardScriptScaling({ ...input, sizes: large }));
    await run("scaling-presence-scripts", () => presenceScriptScaling({ ...input, sizes: large, loader }));
    await run("scaling-counters", () => counterScaling({ ...input, sizes: large }));
    // N = buckets a day, up to the 5,000 cap (the driver of histogram scripts; values observed never are)
    await run("scaling-histograms", () => histogramScaling({ ...input, sizes: [50, 500, 5000] }));
    // the queue consumer runs in Node; its client carries the service's tag so the probe counts its commands
    const consumer = createRedis({ url: stack.upstash.url, token: `${stack.token}.${service.tag}`, timeoutMs: 60_000 });
    await run("scaling-ingest", () => ingestScaling({ ...input, sizes: large, client: consumer }));
    await run("scaling-calendar", () =>
      calendarScaling({
        redis: resp,
        lib: loader,
        upstash: stack.upstash,
        tag: "bench-load",
        prefix,
        sizes: sizes.filter((n) => n <= 1000),
        log,
      }),
    );
  } finally {
    resp.close();
  }
  return result;
}
