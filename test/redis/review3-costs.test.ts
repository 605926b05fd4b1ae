/**
 * Review 3: are the command counts in docs/costs.md true? Independent of the local
 * Upstash server's INFO-commandstats counting, a plain Redis connection runs MONITOR
 * and records every command redis-server executes during one library call: the
 * EVALSHA/EVAL plus each command the script ran (MONITOR's "lua" lines). That total
 * is what Upstash bills; it is compared with the local server's counters and with
 * the row in test/costs/library.ts (which generates docs/costs.md).
 * It also checks every key a script touches is among the keys it declared
 * (Upstash's allow-key-locking locks only declared keys).
 */
import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Edgestats } from "../../src/index.ts";
import { area as counterArea } from "../costs/counters.ts";
import { area as histogramArea } from "../costs/histograms.ts";
import { area as trendingArea } from "../costs/trending.ts";
import { area } from "../costs/library.ts";
import { costOf, expected, type CostRow } from "../costs/types.ts";
import { BOOKKEEPING, Monitor } from "../helpers/monitor.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, deleteUnder, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const { target, prefix } = libraryTest("rv3cost");
const tag = `rv3c${Math.random().toString(36).slice(2, 8)}`;
const stats = new Edgestats({
  redis: new Redis({ url: target.url, token: `${target.token}.${tag}` }),
  prefix,
  // mid-hour, as the costs tests: no next-hour cleanup in a trending write
  clock: () => Date.UTC(2026, 10, 23, 12, 30),
});
const rows = area.rows;

let mon: Monitor;
beforeAll(async () => {
  mon = await Monitor.open(process.env.EDGESTATS_REDIS_URL ?? "", target, "rv3-ready");
});
afterAll(() => mon?.close());

let n = 0;

/** One call: what MONITOR saw (billed commands, keys per script) and what the local counters said. */
async function observe(fn: () => Promise<unknown>) {
  const from = await mon.mark(`rv3-from-${++n}`);
  await resetStats(target, tag);
  await fn();
  const s = await statsOf(target, tag);
  const to = await mon.mark(`rv3-to-${n}`);
  const seen = mon.lines.slice(from + 1, to).filter((l) => l.lua || !BOOKKEEPING.has(l.args[0]!.toUpperCase()));
  // a stats read/reset is not a Redis command; anything else non-lua is a top-level command the call sent
  const topLevel = seen.filter((l) => !l.lua);
  const undeclared: string[] = [];
  let declared: string[] = [];
  for (const l of seen) {
    const name = l.args[0]!.toUpperCase();
    if (!l.lua && (name === "EVALSHA" || name === "EVAL")) {
      declared = l.args.slice(3, 3 + Number(l.args[2]));
    } else if (l.lua) {
      for (const a of l.args.slice(1))
        if (a.startsWith(prefix) && a.includes(":") && !declared.includes(a)) undeclared.push(a);
    }
  }
  return {
    monitor: { roundTrips: s.requests, commands: seen.length },
    counted: costOf({ requests: s.requests, commands: s.commands }),
    topLevel: topLevel.map((l) => l.args[0]!.toUpperCase()),
    undeclared,
    lines: seen.map((l) => `${l.lua ? "lua " : ""}${l.args.join(" ")}`),
  };
}

async function check(row: CostRow, fn: () => Promise<unknown>) {
  const o = await observe(fn);
  // MONITOR's count is the truth; the local server and the doc row must both agree with it
  expect({ monitor: o.monitor, lines: o.lines }).toEqual({ monitor: expected(row), lines: o.lines });
  expect(o.counted).toEqual(o.monitor);
  expect(o.undeclared).toEqual([]);
  return o;
}

describe("review 3: library command counts, verified with MONITOR", () => {
  it("trending record and top", async () => {
    const s = stats.trending("s");
    await s.record("warm");
    await check(rows.record!, () => s.record("a"));
    await s.top({ n: 10 });
    await check(rows.top!, () => s.top({ n: 10 }));
  });

  it("counter incr, idempotent first call and replay", async () => {
    const c = stats.counter("c");
    await c.incr("m");
    await check(rows.incr!, () => c.incr("m"));
    await c.incr("m", 1, { idempotencyKey: "warm" });
    await check(rows.incrIdempotent!, () => c.incr("m", 1, { idempotencyKey: "k1" }));
    await check(rows.incrReplay!, () => c.incr("m", 1, { idempotencyKey: "k1" }));
  });

  it("presence heartbeat and leaderboard increment", async () => {
    const room = stats.presence("r");
    await room.heartbeat("u");
    await check(rows.heartbeat!, () => room.heartbeat("u"));
    const board = stats.leaderboard("b");
    await board.join("p", { name: "P" });
    await board.increment("p", 1);
    await check(rows.increment!, () => board.increment("p", 5));
  });

  it("counter rows (Worker area) through the library: new member, period=hour steady", async () => {
    const c = stats.counter("ch");
    await c.incr("m");
    await check(counterArea.rows.incrPlainNewMember!, () => c.incr("m2"));
    await c.incr({ member: "m", period: "hour" });
    await c.incr({ member: "m", period: "hour" });
    await check(counterArea.rows.incrHour!, () => c.incr({ member: "m", period: "hour" }));
  });

  it("histogram rows (Worker area) through the library: configure, observe first of day, steady, new bucket", async () => {
    const h = stats.histogram("h");
    await stats.histogram("warm").configure({ bucketWidth: 1 });
    await stats.histogram("warm").observe(1);
    await check(histogramArea.rows.putNew!, () => h.configure({ bucketWidth: 1, unit: "ms" }));
    await check(histogramArea.rows.observeFirstOfDay!, () => h.observe(42));
    // a new extreme of the day (7), uncounted here, so that the rows below fall within the day's
    // extremes, which the settings mirror (review 11: steady 5, a new bucket 6)
    await h.observe(100);
    await check(histogramArea.rows.observeSteady!, () => h.observe(42.5));
    await check(histogramArea.rows.observeNewBucket!, () => h.observe(77));
  });

  it("a trending compaction run with nothing to do", async () => {
    // a prefix of its own: the other tests' trending data would give the job work
    const idlePrefix = `${prefix}i`;
    const idle = new Edgestats({
      redis: new Redis({ url: target.url, token: `${target.token}.${tag}` }),
      prefix: idlePrefix,
      clock: () => Date.UTC(2026, 10, 23, 12, 30),
    });
    try {
      await idle.jobs.compact();
      await check(trendingArea.rows.compactIdle!, () => idle.jobs.compact());
    } finally {
      await deleteUnder(target, idlePrefix);
    }
  });

  it("a NOSCRIPT fallback bills the failed EVALSHA and the EVAL: counted as 2 round trips", async () => {
    const c = stats.counter("nos");
    await c.incr("m");
    await command(target, "SCRIPT", "FLUSH");
    const o = await observe(() => c.incr("m"));
    // MONITOR shows no line for a rejected EVALSHA (NOSCRIPT is refused before execution), so compare the
    // round trips only with what the client did, and the executed commands with the warm row
    expect(o.topLevel).toContain("EVAL");
    expect(o.counted.roundTrips).toBe(2);
    expect(o.undeclared).toEqual([]);
  });

  /** Raw REST on the local server under this file's tag (counted like the library's requests). */
  async function rest(path: string, body: unknown) {
    const res = await fetch(`${target.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${target.token}.${tag}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return (await res.json()) as unknown;
  }

  it("/pipeline: a script and plain commands are counted as MONITOR sees them", async () => {
    const k = `${prefix}:raw:p`;
    const o = await observe(() =>
      rest("/pipeline", [
        ["SET", k, "1"],
        ["EVAL", "redis.call('INCR', KEYS[1]); return redis.call('GET', KEYS[1])", "1", k],
        ["GET", k],
      ]),
    );
    expect(o.monitor.commands).toBe(5);
    expect(o.counted).toEqual(o.monitor);
  });

  // FIXED (was low): the local server's /multi-exec with a script counted every plain command in the
  // transaction twice: once per top-level command (stats.add) and again in the INFO-commandstats diff,
  // whose INFO pair wraps the whole transaction, not just the script (dev/upstash-server.ts run(), atomic
  // branch). Here SET is counted 2x: 4 commands for the 3 MONITOR shows. No product call uses /multi-exec
  // today, so no docs/costs.md row is wrong, but a future row measured through it would be overstated.
  // Fix: in the atomic branch, in countInner, subtract the top-level commands' own calls (or put the
  // INFO pair around each script inside the MULTI).
  it("/multi-exec: counted as MONITOR sees it (MULTI/EXEC not billed as commands)", async () => {
    const k = `${prefix}:raw:m`;
    const o = await observe(() =>
      rest("/multi-exec", [
        ["SET", k, "1"],
        ["EVAL", "return redis.call('INCR', KEYS[1])", "1", k],
      ]),
    );
    expect(o.monitor.commands).toBe(3);
    expect(o.counted).toEqual(o.monitor);
  });

  it("the local server refuses a script touching an undeclared key before Redis runs the command", async () => {
    // so the per-call undeclared-key check above is a second, independent witness (MONITOR)
    const k = `${prefix}:raw:undeclared`;
    let reply: unknown;
    const o = await observe(async () => (reply = await rest("/", ["EVAL", `return redis.call('GET', '${k}')`, "0"])));
    expect(JSON.stringify(reply)).toMatch(/not in KEYS/);
    expect(o.lines.filter((l) => l.startsWith("lua "))).toEqual([]);
  });

  it("an error inside a script: the commands it ran before and at the error are counted", async () => {
    const k = `${prefix}:raw:e`;
    const o = await observe(() =>
      rest("/", ["EVAL", "redis.call('SET', KEYS[1], 'x'); return redis.call('INCR', KEYS[1])", "1", k]),
    );
    // EVAL, SET, and the INCR that failed (it ran; Upstash bills it)
    expect(o.monitor.commands).toBe(3);
    expect(o.counted).toEqual(o.monitor);
  });
});
