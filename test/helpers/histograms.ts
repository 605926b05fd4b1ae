/** What the histogram read tests share (test/redis/histograms-bounds, -checks and -edges). */
import { beforeAll, expect } from "vitest";
import type { Ctx } from "../../src/context.ts";
import { put as putHistogram, read as readHistogram } from "../../src/histograms/index.ts";
import { histogramKeys, monthOf } from "../../src/histograms/keys.ts";
import { DAY, dayLabel } from "../../src/time.ts";
import type { Edgestats } from "../../src/index.ts";
import { createRedis } from "../../src/redis/client.ts";
import { libraryTest, type LibraryTest } from "./library.ts";
import { command, resetStats, statsOf } from "./upstash-rest.ts";

/** A number rounded to 15 significant digits, as the documented bucket bounds are. */
export const r15 = (x: number) => Number(x.toPrecision(15));

/**
 * The documented bucket of `v` (docs/histograms.md), as a model: i with round15(i·w) ≤ v <
 * round15((i+1)·w). The review 18 and review 20 histogram files each had a copy.
 */
export function modelBucket(v: number, w: number): number {
  let i = Math.floor(v / w);
  while (r15(i * w) > v) i--;
  while (r15((i + 1) * w) <= v) i++;
  return i;
}

/** Day starts from `from` to `to`, inclusive. */
export const range = (from: number, to: number) =>
  Array.from({ length: (to - from) / DAY + 1 }, (_, i) => from + i * DAY);

/** `n` consecutive integers from `start`. */
export const upTo = (n: number, start = 0) => Array.from({ length: n }, (_, i) => start + i);

/**
 * `client` without its pipeline, as the library adapts a user's own client: a histogram read then
 * runs the one script that loads its union itself, where `client` would send a ZPOPMIN after it.
 */
export function withoutPipeline(client: Pick<Ctx["redis"], "evalsha" | "eval" | "ping">): Ctx["redis"] {
  return {
    evalsha: client.evalsha.bind(client),
    eval: client.eval.bind(client),
    ping: client.ping.bind(client),
  } as unknown as Ctx["redis"];
}

/**
 * The setup of the read tests that count commands (histograms-bounds and -checks): their library
 * test, a client whose token carries a tag of their own (the local Upstash server counts its
 * commands apart), the read script loaded once (so every measured read is one EVALSHA that hits),
 * and `measured` / `load` (`histogramLoaders`).
 */
export function histogramReadTest(label: string, now: number) {
  const lib = libraryTest(label, { timeoutMs: 20_000 });
  const tag = `${label}-${Math.random().toString(36).slice(2, 8)}`;
  const counted = createRedis({ url: lib.target.url, token: `${lib.target.token}.${tag}`, timeoutMs: 20_000 });
  beforeAll(async () => {
    await putHistogram(lib.ctx(now), "warm", { bucketWidth: 1 });
    await readHistogram({ ...lib.ctx(now), redis: counted }, "warm");
  });
  return { lib, counted, tag, ...histogramLoaders(lib, counted, tag) };
}

/**
 * The bounds tests' reads and loads: `measured` reads through `counted` (a client whose token
 * carries `tag`, so the local Upstash server counts its commands apart) and returns the answer or
 * refusal with the commands it cost; `load` writes days of buckets straight into Redis.
 */
export function histogramLoaders(lib: LibraryTest, counted: Ctx["redis"], tag: string) {
  const { target } = lib;
  const TAG = tag;
  /** A read through the counting client: its answer (or refusal) and the commands it cost. */
  async function measured(ctx: Ctx, name: string, from: string, to: string) {
    await resetStats(target, TAG);
    const result = await readHistogram({ ...ctx, redis: counted }, name, { from, to }).then(
      (r) => ({ ok: true as const, r }),
      (e: unknown) => ({ ok: false as const, message: (e as Error).message }),
    );
    const stats = await statsOf(target, TAG);
    expect(stats.requests).toBe(1);
    return { ...result, commands: stats.commands, byCommand: stats.byCommand };
  }

  /**
   * Writes each day's values (width 1: value v in bucket floor(v), one observation each) as
   * observing would: the day set, its extremes, and its month rollup with the day's sum as
   * `s:<yyyymmdd>` (`oldSum`: the previous layout's member `sum` of the day and of its month).
   */
  async function load(ctx: Ctx, name: string, days: [number, number[]][], oldSum = false): Promise<void> {
    await putHistogram(ctx, name, { bucketWidth: 1 });
    const months = new Map<string, Map<string, number>>();
    for (const [day, values] of days) {
      const monthKey = histogramKeys.month(ctx.prefix, name, monthOf(day));
      const month = months.get(monthKey) ?? new Map<string, number>();
      months.set(monthKey, month);
      const counts = new Map<string, number>();
      for (const v of values) counts.set(String(Math.floor(v)), (counts.get(String(Math.floor(v))) ?? 0) + 1);
      const sum = values.reduce((x, y) => x + y, 0);
      const members: (string | number)[] = [];
      for (const [b, n] of counts) {
        members.push(n, b);
        month.set(b, (month.get(b) ?? 0) + n);
      }
      if (oldSum) {
        members.push(sum, "sum");
        month.set("sum", (month.get("sum") ?? 0) + sum);
      } else month.set(`s:${dayLabel(day)}`, sum);
      for (let i = 0; i < members.length; i += 20_000)
        await command(target, "ZADD", histogramKeys.day(ctx.prefix, name, day), ...members.slice(i, i + 20_000));
      const ext = histogramKeys.ext(ctx.prefix, name, day);
      await command(target, "ZADD", ext, Math.max(...values), "max", -Math.min(...values), "min");
    }
    for (const [key, members] of months) {
      const flat = [...members].flatMap(([m, score]) => [score, m]);
      for (let i = 0; i < flat.length; i += 20_000) await command(target, "ZADD", key, ...flat.slice(i, i + 20_000));
    }
  }
  return { measured, load };
}

/**
 * `days` and, in every month they touch, each other day of the month with one value (`value`): so
 * the edge months of a range over `days` hold data outside it and are read day by day, as a test
 * of the checks on days means (an edge month whose days outside the range hold nothing is read as
 * its rollup, which is exactly its days in the range: test/redis/histograms-checks.test.ts).
 */
export function withOutsideDays(days: [number, number[]][], value = 0): [number, number[]][] {
  const given = new Set(days.map(([d]) => d));
  const out: [number, number[]][] = [...days];
  for (const month of new Set(days.map(([d]) => monthOf(d)))) {
    const next = new Date(month);
    next.setUTCMonth(next.getUTCMonth() + 1);
    for (let d = month; d < next.getTime(); d += DAY) if (!given.has(d)) out.push([d, [value]]);
  }
  return out.sort((a, b) => a[0] - b[0]);
}

/**
 * Every name a pass by cursor over the histograms list lists (pages of `limit`), calling `between`
 * after each page; the pass must end (review 24 and 25 registry files).
 */
export async function histogramsPass(
  stats: Edgestats,
  limit: number,
  between: (page: number) => Promise<void> = async () => {},
): Promise<string[]> {
  const seen: string[] = [];
  let page = await stats.histograms({ limit });
  seen.push(...page.histograms);
  for (let n = 0; page.nextCursor !== null && n < 100; n += 1) {
    await between(n);
    page = await stats.histograms({ limit, cursor: page.nextCursor });
    seen.push(...page.histograms);
  }
  expect(page.nextCursor).toBeNull();
  return seen;
}
