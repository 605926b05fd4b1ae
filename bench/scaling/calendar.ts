/**
 * Issue 15, long calendar ranges: the longest Redis script (SLOWLOG with
 * slowlog-log-slower-than 0, the script's own time in µs) and the commands of
 * a 400-day hourly counter read, a 60-day hourly member delete (the most keys one
 * call may change), 400-day deletes of a sparse and an absent member, and a 400-day histogram read, at N members an hour (counters) and N buckets a day
 * (histograms). Data are loaded straight into Redis with the library's key
 * schema (raw buckets, rollups, index fields), so the same data serve the
 * code before rollups, which ignores them.
 *
 * Standalone: `node bench/scaling/calendar.ts [N ...] [--src=<dir with an older src/>]`
 * starts its own Redis and local Upstash server and prints a table. From the
 * bench: `calendarScaling(...)` returns timings for the report.
 */
import { connectResp, type RespClient } from "../../dev/resp.ts";
import { startStack } from "../../dev/stack.ts";
import type { UpstashServer } from "../../dev/upstash-server.ts";
import type { Ctx } from "../../src/context.ts";
import type * as CountersLib from "../../src/counters/index.ts";
import type * as HistogramsLib from "../../src/histograms/index.ts";
import { counterKeys } from "../../src/counters/keys.ts";
import { createRedis } from "../../src/redis/client.ts";
import { DAY, HOUR, periodLabel, periodStart } from "../../src/time.ts";
import type { Timing } from "./types.ts";

/** Now, for the whole run: 400 days back start mid-October 2025. */
const NOW = Date.UTC(2026, 10, 22, 12, 30);
const FROM = Date.UTC(2025, 9, 19, 5);
const TO = Date.UTC(2026, 10, 21, 17);
const PIPE = 200;

type Lib = {
  counters: typeof CountersLib;
  histograms: typeof HistogramsLib;
};

export interface CalendarInput {
  redis: RespClient;
  /** The library talks to Redis through this (a bench tag keeps its counts apart). */
  lib: ReturnType<typeof createRedis>;
  upstash: UpstashServer;
  tag: string;
  prefix: string;
  sizes: number[];
  log: (msg: string) => void;
  /** Another src/ tree to load (the code before rollups, for the "before" figures). */
  src?: string;
}

export interface CalendarPoint {
  call: string;
  n: number;
  /** Longest script in ms (SLOWLOG), the median of 5 calls. */
  scriptMs: number;
  commands: number;
}

async function slowest(redis: RespClient, run: () => Promise<unknown>): Promise<number> {
  await redis.call("SLOWLOG", "RESET");
  await run();
  const log = (await redis.call("SLOWLOG", "GET", 1000)) as [number, number, number, Buffer[]][];
  let worst = 0;
  for (const entry of log) {
    const name = String(entry[3]?.[0] ?? "").toUpperCase();
    if (name.startsWith("EVAL") || name.startsWith("FCALL")) worst = Math.max(worst, Number(entry[2]));
  }
  return worst / 1000;
}

/**
 * Hourly counter with `n` members an hour over FROM..TO, raw buckets plus quarter-day, day and month rollups
 * and their index fields, in a life begun with quarter rollups (index fields `s` and `q`).
 */
async function loadCounter(redis: RespClient, prefix: string, name: string, n: number): Promise<void> {
  const base = `${prefix}:counters:${name}`;
  const index = `${base}:index`;
  let batch: (string | number)[][] = [];
  const flush = async () => {
    if (batch.length) await redis.pipeline(batch);
    batch = [];
  };
  const members: (string | number)[] = [];
  for (let i = 0; i < n; i++) members.push(1 + (i % 5), `user-${i}`);
  const rollups = new Set<string>();
  for (let t = periodStart("hour", FROM - 2 * DAY); t <= NOW; t += HOUR) {
    const hour = `${base}:hour:${periodLabel("hour", t)}`;
    const quarter = counterKeys.rollup(prefix, name, "hour", "quarter", t);
    const day = `${base}:hour:by-day:${periodLabel("day", t)}`;
    const month = `${base}:hour:by-month:${periodLabel("month", t)}`;
    batch.push(["ZADD", hour, ...members], ["HSET", index, `b:${hour}`, 0]);
    // rollups: the same members, summed (ZUNIONSTORE with the hour keeps it exact)
    for (const k of [quarter, day, month]) batch.push(["ZUNIONSTORE", k, 2, k, hour]);
    for (const k of [quarter, day, month]) {
      if (rollups.has(k)) continue;
      rollups.add(k);
      batch.push(["HSET", index, `b:${k}`, 0]);
    }
    if (batch.length >= PIPE) await flush();
  }
  batch.push(["HSET", index, "late", 1, "s", 1, "q", 1]);
  await flush();
}

/** Histogram with `n` distinct buckets a day for 400 days, its days' extremes and month rollups. */
async function loadHistogram(redis: RespClient, prefix: string, name: string, n: number): Promise<void> {
  const base = `${prefix}:hist:${name}`;
  await redis.call(
    "HSET",
    base,
    "bucketWidth",
    1,
    "retentionDays",
    400,
    "createdAt",
    NOW - 401 * DAY,
    "rollupsSince",
    0,
  );
  let batch: (string | number)[][] = [];
  const buckets: (string | number)[] = [];
  for (let i = 0; i < n; i++) buckets.push(1 + (i % 9), i);
  for (let d = periodStart("day", NOW - 400 * DAY); d <= NOW; d += DAY) {
    const day = `${base}:${periodLabel("day", d)}`;
    const month = `${base}:${periodLabel("month", d)}`;
    batch.push(
      ["ZADD", day, ...buckets, n * 3, "sum"],
      ["ZADD", `${day}:ext`, n - 1, "max", 0, "min"],
      ["ZUNIONSTORE", month, 2, month, day],
    );
    if (batch.length >= PIPE) {
      await redis.pipeline(batch);
      batch = [];
    }
  }
  if (batch.length) await redis.pipeline(batch);
}

export async function calendarPoints(input: CalendarInput): Promise<CalendarPoint[]> {
  const { redis, upstash, tag, prefix, log } = input;
  const root = input.src ?? new URL("../../src/", import.meta.url).pathname;
  const lib: Lib = {
    counters: await import(`${root}/counters/index.ts`),
    histograms: await import(`${root}/histograms/index.ts`),
  };
  const ctx: Ctx = { redis: input.lib, prefix, now: NOW };
  const out: CalendarPoint[] = [];
  const old = (await redis.call("CONFIG", "GET", "slowlog-log-slower-than")) as Buffer[];
  await redis.call("CONFIG", "SET", "slowlog-log-slower-than", 0);
  await redis.call("CONFIG", "SET", "slowlog-max-len", 1000);
  const measure = async (call: string, n: number, run: () => Promise<unknown>) => {
    await run().catch(() => undefined); // loads the script (NOSCRIPT fallback), not measured
    // the median of 5 runs: a shared machine's other load stretches single scripts
    const times: number[] = [];
    let commands = 0;
    for (let i = 0; i < 5; i++) {
      upstash.reset(tag);
      times.push(await slowest(redis, run));
      commands = upstash.stats(tag).commands;
    }
    const scriptMs = times.sort((a, b) => a - b)[2] as number;
    out.push({ call, n, scriptMs, commands });
    log(
      `calendar: ${call} at ${n}: ${scriptMs.toFixed(1)} ms (runs ${times.map((t) => t.toFixed(1)).join(", ")}), ${commands} commands`,
    );
  };
  try {
    for (const n of input.sizes) {
      const name = `cal-${n}`;
      log(`calendar: loading a 400-day hourly counter with ${n} members an hour`);
      await loadCounter(redis, prefix, name, n);
      const range = { period: "hour" as const, from: FROM, to: TO };
      await measure("counter top, hourly, 400 days (uncached)", n, async () => {
        // a write into a finished hour moves the cache generation on: every read builds its union
        await lib.counters.increment(ctx, name, [{ member: "late", period: "hour", at: FROM + HOUR }]);
        upstash.reset(tag);
        return lib.counters.ranked(ctx, name, "top", 10, range);
      });
      // the most keys one member delete may change (1,750): 60 days of a member in every hour
      const sixty = { period: "hour" as const, from: TO - 1439 * HOUR, to: TO };
      let victim = n;
      // each call deletes another member that is in every hour
      await measure("counter delete member, hourly, 60 days", n, () =>
        lib.counters.deleteMember(ctx, name, `user-${--victim}`, sixty),
      );
      // issue 15: over 400 days the keys are read top down, so the work follows the member
      await measure("counter delete member, hourly, 400 days, absent", n, () =>
        lib.counters.deleteMember(ctx, name, "nobody", range),
      );
      await measure("counter delete member, hourly, 400 days, in 2 hours of one day", n, async () => {
        const at = [Date.UTC(2026, 5, 10, 3), Date.UTC(2026, 5, 10, 15)];
        await lib.counters.increment(
          ctx,
          name,
          at.map((t) => ({ member: "sparse", period: "hour" as const, at: t })),
        );
        upstash.reset(tag);
        return lib.counters.deleteMember(ctx, name, "sparse", range);
      });
      await redis.call("UNLINK", ...(await keysOf(redis, `${prefix}:counters:${name}*`)));
      const hist = `cal-h-${n}`;
      log(`calendar: loading a 400-day histogram with ${n} buckets a day`);
      await loadHistogram(redis, prefix, hist, n);
      await measure("histogram read, 400 days", n, () =>
        lib.histograms.read(ctx, hist, { from: "2025-10-19", to: "2026-11-22" }),
      );
      await redis.call("UNLINK", ...(await keysOf(redis, `${prefix}:hist:${hist}*`)));
    }
  } finally {
    await redis.call("CONFIG", "SET", "slowlog-log-slower-than", String(old[1] ?? "10000"));
  }
  return out;
}

/** Bench-private Redis only: SCAN for cleanup, never on a request path. */
async function keysOf(redis: RespClient, pattern: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = "0";
  do {
    const reply = (await redis.call("SCAN", cursor, "MATCH", pattern, "COUNT", 1000)) as [Buffer, Buffer[]];
    cursor = reply[0].toString();
    out.push(...reply[1].map(String));
  } while (cursor !== "0");
  return out.length ? out : ["__none__"];
}

/** For the bench report: one timing row per call, the longest script at each size. */
export async function calendarScaling(input: CalendarInput): Promise<{ timings: Timing[]; notes: string[] }> {
  const points = await calendarPoints(input);
  const byCall = new Map<string, Timing>();
  for (const p of points) {
    const t = byCall.get(p.call) ?? { name: `${p.call}: longest script (SLOWLOG)`, points: [] };
    t.points.push({ n: p.n, ms: p.scriptMs, detail: `${p.commands} commands` });
    byCall.set(p.call, t);
  }
  return {
    timings: [...byCall.values()],
    notes: ["calendar: N = counter members an hour / histogram buckets a day, 400-day ranges"],
  };
}

if (process.argv[1]?.endsWith("calendar.ts")) {
  const args = process.argv.slice(2);
  const src = args.find((a) => a.startsWith("--src="))?.slice(6);
  const sizes = args.filter((a) => /^\d+$/.test(a)).map(Number);
  const stack = await startStack();
  const redis = await connectResp(stack.redisUrl);
  const lib = createRedis({ url: stack.upstash.url, token: `${stack.token}.cal`, timeoutMs: 120_000 });
  try {
    const points = await calendarPoints({
      redis,
      lib,
      upstash: stack.upstash,
      tag: "cal",
      prefix: "bench",
      sizes: sizes.length ? sizes : [100, 1000],
      log: console.log,
      ...(src ? { src } : {}),
    });
    console.log("| call | N | longest script (ms) | commands |\n| --- | --- | --- | --- |");
    for (const p of points) console.log(`| ${p.call} | ${p.n} | ${p.scriptMs.toFixed(1)} | ${p.commands} |`);
  } finally {
    redis.close();
    await stack.stop();
  }
}
