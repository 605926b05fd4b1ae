/**
 * Review 3, part 2: more docs/costs.md rows checked with MONITOR (see review3-costs.test.ts for the
 * method). A plain Redis connection runs MONITOR; each call is bracketed with ECHO markers and the
 * EVALSHA/EVAL plus the script's "lua" lines are counted, then compared with the local Upstash
 * server's counters and the row of test/costs/*.ts. Every key a script touches must be declared.
 * The Worker rows run the real Hono app on Node (createApp + app.request, as review2-library does);
 * the queued-ingest rows call the Worker's consumer (functions/queue.ts consumeIngest) with a batch
 * built as Cloudflare Queues would hand it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../functions/app.ts";
import { consumeIngest } from "../../functions/queue.ts";
import { area as counters } from "../costs/counters.ts";
import { area as histograms } from "../costs/histograms.ts";
import { area as ingest } from "../costs/ingest.ts";
import { area as leaderboards } from "../costs/leaderboards.ts";
import { area as presence } from "../costs/presence.ts";
import { costOf, expected, type CostRow } from "../costs/types.ts";
import { area as webhooks } from "../costs/webhooks.ts";
import { BOOKKEEPING, Monitor } from "../helpers/monitor.ts";
import { deleteUnder, requireTarget, resetStats, statsOf, uniquePrefix } from "../helpers/upstash-rest.ts";

const target = requireTarget(process.env.EDGESTATS_UPSTASH_URL, process.env.EDGESTATS_UPSTASH_TOKEN);
const tag = `rv3d${Math.random().toString(36).slice(2, 8)}`;
const KEYS = { ingest: "rv3c2-ingest-key-0001", read: "rv3c2-read-key-00001", admin: "rv3c2-admin-key-0001" };
const MIN = 60_000;
const prefixes: string[] = [];
afterAll(async () => {
  for (const p of prefixes) await deleteUnder(target, p);
});

let mon: Monitor;
beforeAll(async () => {
  mon = await Monitor.open(process.env.EDGESTATS_REDIS_URL ?? "", target, "rv3d-ready");
});
afterAll(() => mon?.close());

let n = 0;

/** One call: what MONITOR saw, what the local server counted, and undeclared keys (under `prefix`). */
async function observe(prefix: string, fn: () => Promise<unknown>) {
  const from = await mon.mark(`rv3d-from-${++n}`);
  await resetStats(target, tag);
  const result = await fn();
  const s = await statsOf(target, tag);
  const to = await mon.mark(`rv3d-to-${n}`);
  const seen = mon.lines.slice(from + 1, to).filter((l) => l.lua || !BOOKKEEPING.has(l.args[0]!.toUpperCase()));
  const undeclared: string[] = [];
  let declared: string[] = [];
  for (const l of seen) {
    const name = l.args[0]!.toUpperCase();
    if (!l.lua && (name === "EVALSHA" || name === "EVAL")) declared = l.args.slice(3, 3 + Number(l.args[2]));
    else if (l.lua)
      for (const a of l.args.slice(1))
        if (a.startsWith(`${prefix}:`) && !declared.includes(a)) undeclared.push(`${l.args[0]} ${a}`);
  }
  return {
    result,
    monitor: { roundTrips: s.requests, commands: seen.length },
    counted: costOf({ requests: s.requests, commands: s.commands }),
    undeclared,
    lines: seen.map((l) => `${l.lua ? "lua " : ""}${l.args.join(" ")}`),
  };
}

/** A recording queue binding (as test/helpers/ingest.ts, without cloudflare:test). */
function recordingQueue(clock: () => number) {
  const sent: { id: string; body: unknown; timestamp: number }[] = [];
  let next = 0;
  const push = (body: unknown) => sent.push({ id: `m${next++}`, body: structuredClone(body), timestamp: clock() });
  return {
    sent,
    async send(body: unknown) {
      push(body);
    },
    async sendBatch(messages: Iterable<{ body: unknown }>) {
      for (const m of messages) push(m.body);
    },
  };
}

/** The Worker's app on Node under a prefix of its own, its Redis token tagged for this file's counters. */
function worker(label: string, start: number) {
  const prefix = uniquePrefix(label);
  prefixes.push(prefix);
  let now = start;
  const app = createApp({ now: () => now });
  const queue = recordingQueue(() => now);
  const env = {
    UPSTASH_REDIS_REST_URL: target.url,
    UPSTASH_REDIS_REST_TOKEN: `${target.token}.${tag}`,
    INGEST_KEYS: KEYS.ingest,
    READ_KEYS: KEYS.read,
    ADMIN_KEYS: KEYS.admin,
    KEY_PREFIX: prefix,
    TRENDING_CACHE_SECONDS: "0",
    WEBHOOKS_ALLOW_LOCAL_HTTP: "true",
    INGEST_QUEUE: queue,
  } as unknown as Env;
  async function call(method: string, path: string, body?: unknown, opts: { key?: string; h?: object } = {}) {
    const key = opts.key ?? (method === "GET" ? KEYS.read : KEYS.ingest);
    const headers: Record<string, string> = { authorization: `Bearer ${key}`, ...(opts.h as object) };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await app.request(
      path,
      { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) },
      env,
    );
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as any) : undefined };
  }
  /** Hands the queued messages to the Worker's consumer as one batch, attempts 1. */
  async function deliver() {
    const messages = queue.sent.splice(0).map((m) => ({
      id: m.id,
      timestamp: new Date(m.timestamp),
      attempts: 1,
      body: m.body,
      ack() {},
      retry() {},
    }));
    return consumeIngest({ messages }, env, now);
  }
  return {
    prefix,
    call,
    deliver,
    queue,
    advance: (ms: number) => void (now += ms),
    setNow: (t: number) => void (now = t),
    get: (p: string, o?: { key?: string }) => call("GET", p, undefined, o),
    post: (p: string, b?: unknown, o?: { key?: string; h?: object }) => call("POST", p, b, o),
    put: (p: string, b?: unknown, o?: { key?: string; h?: object }) => call("PUT", p, b, o),
    del: (p: string, o?: { key?: string }) => call("DELETE", p, undefined, o),
    job: (name: string) => call("POST", `/internal/jobs/${name}`, undefined, { key: KEYS.admin }),
  };
}
type Worker = ReturnType<typeof worker>;

/** MONITOR is the truth: the doc row and the local server's counters must both match it; keys declared. */
async function check(w: Worker, row: CostRow, fn: () => Promise<unknown>) {
  const o = await observe(w.prefix, fn);
  const status = (o.result as { status?: number } | undefined)?.status;
  if (status !== undefined) expect(status, row.call).toBeLessThan(300);
  expect({ row: row.call, state: row.state, monitor: o.monitor, lines: o.lines }).toEqual({
    row: row.call,
    state: row.state,
    monitor: expected(row),
    lines: o.lines,
  });
  expect(o.counted).toEqual(o.monitor);
  expect(o.undeclared).toEqual([]);
  return o;
}

const T0 = Date.UTC(2026, 10, 22, 12, 30);
const admin = { key: KEYS.admin };

describe("review 3 (2): Worker rows verified with MONITOR", () => {
  it("counter incr period=day: first touch, steady, new minute", async () => {
    const w = worker("rv3d-cday", T0);
    const incr = (body: object) => () => w.post("/v1/counters/daily/incr", body);
    await w.post("/v1/counters/warm/incr", { member: "a", period: "day" });
    await incr({ member: "a", period: "day", at: "2026-11-21T10:00:00Z" })();
    w.advance(MIN);
    await check(w, counters.rows.incrDayNewBucket!, incr({ member: "a", period: "day" }));
    await check(w, counters.rows.incrDay!, incr({ member: "a", period: "day" }));
    w.advance(MIN);
    await check(w, counters.rows.incrDayMinute!, incr({ member: "a", period: "day" }));
  });

  it("counter incr with ttl: new counter, extension due, steady", async () => {
    const w = worker("rv3d-cttl", T0);
    const incr = () => w.post("/v1/counters/ttl/incr", { member: "a", ttl: 86400 });
    await w.post("/v1/counters/warm/incr", { member: "a", ttl: 86400 });
    await check(w, counters.rows.incrTtlNew!, incr);
    w.advance(1000);
    await check(w, counters.rows.incrTtlExtend!, incr);
    w.advance(1000);
    await check(w, counters.rows.incrTtl!, incr);
  });

  it("counter top 5 days up to today (first read, cached head) and delete member over 5 days", async () => {
    const w = worker("rv3d-cread", T0);
    const days = ["2026-11-18", "2026-11-19", "2026-11-20", "2026-11-21", "2026-11-22"];
    await w.post("/v1/counters/r/incr", {
      items: days.flatMap((at) => ["a", "b", "c"].map((member) => ({ member, period: "day", at: `${at}T01:00:00Z` }))),
    });
    // warm the read and delete scripts on another counter
    await w.post("/v1/counters/warm/incr", { member: "a", period: "day" });
    await w.get("/v1/counters/warm/top?period=day&from=2026-11-18&to=2026-11-22");
    await w.del("/v1/counters/warm/members/a?period=day&from=2026-11-18&to=2026-11-22");
    const top = () => w.get("/v1/counters/r/top?period=day&from=2026-11-18&to=2026-11-22");
    await check(w, counters.rows.topOpenWeek!, top);
    await check(w, counters.rows.topOpenWeekWarm!, top);
    await check(w, counters.rows.deleteMemberDays!, () =>
      w.del("/v1/counters/r/members/b?period=day&from=2026-11-18&to=2026-11-22"),
    );
  });

  it("Idempotency-Key first use and replay: counter incr, histogram observe", async () => {
    const w = worker("rv3d-idem", T0);
    await w.post("/v1/counters/c/incr", { member: "a" }, { h: { "idempotency-key": "warm" } });
    const h = { "idempotency-key": "rv3d-1" };
    await check(w, counters.rows.incrIdem!, () => w.post("/v1/counters/c/incr", { member: "a" }, { h }));
    await check(w, counters.rows.incrIdemReplay!, () => w.post("/v1/counters/c/incr", { member: "a" }, { h }));
    await w.put("/v1/histograms/h", { bucketWidth: 1 }, admin);
    await w.post("/v1/histograms/h/observations", { value: 42 }, { h: { "idempotency-key": "warm" } });
    const obs = () => w.post("/v1/histograms/h/observations", { value: 42 }, { h });
    await check(w, histograms.rows.observeIdempotent!, obs);
    await check(w, histograms.rows.observeReplay!, obs);
  });

  it("presence heartbeat: known id, new id raising the peak", async () => {
    const w = worker("rv3d-pres", Date.UTC(2026, 10, 22, 12, 30, 10));
    await w.post("/v1/presence/r/heartbeats", { ids: ["a", "b"] });
    await w.post("/v1/presence/r/heartbeats", { id: "a" });
    await check(w, presence.rows.heartbeatKnown, () => w.post("/v1/presence/r/heartbeats", { id: "a" }));
    await check(w, presence.rows.heartbeatNew, () => w.post("/v1/presence/r/heartbeats", { id: "n1" }));
  });

  it("presence trim run: idle, 1 active room", async () => {
    const idle = worker("rv3d-t0", Date.UTC(2026, 10, 22, 12, 30, 10));
    await idle.job("trim");
    await check(idle, presence.rows.trimIdle, () => idle.job("trim"));
    const w = worker("rv3d-t1", Date.UTC(2026, 10, 22, 12, 30, 10));
    await w.post("/v1/presence/r/heartbeats", { ids: ["a", "b"] });
    await w.job("trim");
    w.advance(MIN);
    await check(w, presence.rows.trimOneRoom, () => w.job("trim"));
  });

  it("leaderboard join, score change, page, subset rank", async () => {
    const w = worker("rv3d-lb", T0);
    const base = "/v1/leaderboards";
    await w.put(`${base}/warm/players/w`, { name: "w" });
    await w.put(`${base}/b/players/p0`, { name: "p0" });
    await check(w, leaderboards.rows.joinNew, () => w.put(`${base}/b/players/p1`, { name: "p1" }));
    for (let i = 2; i < 25; i++) await w.put(`${base}/b/players/p${i}`, { name: `p${i}`, score: i });
    await w.post(`${base}/b/players/p3/score`, { by: 1 });
    await check(w, leaderboards.rows.increment, () => w.post(`${base}/b/players/p3/score`, { by: 1 }));
    await w.get(`${base}/b?limit=10`);
    await check(w, leaderboards.rows.page, () => w.get(`${base}/b?page=2&limit=10`));
    const ten = Array.from({ length: 10 }, (_, i) => `p${i}`);
    await w.post(`${base}/b/rank`, { players: ten }, { key: KEYS.read });
    await check(w, leaderboards.rows.rank10, () => w.post(`${base}/b/rank`, { players: ten }, { key: KEYS.read }));
  });

  it("queued ingest: a consumer batch of 100 single-event messages, and a keyed message", async () => {
    const w = worker("rv3d-ing", T0);
    const async = { prefer: "respond-async" };
    const streams = ["pages", "search", "games"];
    const queueTrending = async (requests: number, prefix = "") => {
      for (let r = 0; r < requests; r++) {
        const s = streams[r % 3]!;
        const ev = { member: `${s}-m${(r * 7) % 20}`, count: 1 + (r % 3) };
        expect((await w.post(`/v1/trending/${prefix}${s}/events`, { events: [ev] }, { h: async })).status).toBe(202);
      }
    };
    // steady: an earlier batch and earlier synchronous writes made the hour's buckets
    await queueTrending(3);
    await w.deliver();
    for (const s of streams) await w.post(`/v1/trending/${s}/events`, { events: [{ member: `${s}-m0` }] });
    await queueTrending(100);
    const o = await check(w, ingest.rows.batch1, () => w.deliver());
    expect(o.result).toMatchObject({ applied: 100, events: 100 });

    await w.post("/v1/trending/k/events", { member: "m" });
    await w.post("/v1/trending/k/events", { member: "m" }, { h: { ...async, "idempotency-key": "rv3d-k" } });
    await check(w, ingest.rows.keyed, () => w.deliver());
  });

  it("queued ingest: a counters batch of 100 messages × 100 increments", async () => {
    const w = worker("rv3d-ingc", T0);
    const items = (r: number) =>
      Array.from({ length: 100 }, (_, i) => ({ member: `m${(r + i) % 50}`, by: 1 + (i % 4) }));
    await w.post("/v1/counters/c/incr", { items: items(0) });
    // warm the consumer's counters script (the costs test does too): no NOSCRIPT fallback in the row
    await w.post("/v1/counters/warm/incr", { member: "w" }, { h: { prefer: "respond-async" } });
    await w.deliver();
    for (let r = 0; r < 100; r++)
      await w.post("/v1/counters/c/incr", { items: items(r) }, { h: { prefer: "respond-async" } });
    const o = await check(w, ingest.rows.counters, () => w.deliver());
    expect(o.result).toMatchObject({ applied: 100, events: 10_000 });
  });

  it("webhooks minute job, no webhook", async () => {
    const w = worker("rv3d-wh", T0);
    await w.job("webhooks");
    await check(w, webhooks.rows.minuteIdle, () => w.job("webhooks"));
  });
});

describe("review 3 (2): commands Redis rejects inside a script", () => {
  async function rest(body: unknown) {
    const res = await fetch(target.url, {
      method: "POST",
      headers: { authorization: `Bearer ${target.token}.${tag}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return (await res.json()) as unknown;
  }

  it("an arity error inside a script is counted (INFO's rejected_calls), though MONITOR never shows it", async () => {
    // Redis refuses `GET` with no key before running it: commandstats counts it under rejected_calls, not
    // calls, and MONITOR prints nothing. The local server adds rejected_calls (dev/upstash-server.ts
    // parseCommandStats), so it bills EVAL + the refused GET: 2. Upstash bills what reaches it; a refused
    // inner command is the conservative side (never under-counts), and no product script issues one.
    let reply: unknown;
    const o = await observe("none", async () => (reply = await rest(["EVAL", "return redis.pcall('GET')", "0"])));
    expect(JSON.stringify(reply)).toMatch(/Wrong number of args/);
    expect(o.monitor.commands).toBe(1);
    expect(o.counted).toEqual({ roundTrips: 1, commands: 2 });
  });

  it("an unknown command inside a script is counted by nobody: the EVAL alone", async () => {
    // No cmdstat line exists for a command Redis does not know, so the INFO diff cannot see it either.
    let reply: unknown;
    const o = await observe("none", async () => (reply = await rest(["EVAL", "return redis.pcall('NOSUCH')", "0"])));
    expect(JSON.stringify(reply)).toMatch(/Unknown Redis command/);
    expect(o.monitor.commands).toBe(1);
    expect(o.counted).toEqual({ roundTrips: 1, commands: 1 });
  });

  it("a top-level command Redis rejects is counted once, like any command received", async () => {
    let reply: unknown;
    const o = await observe("none", async () => (reply = await rest(["GET"])));
    expect(JSON.stringify(reply)).toMatch(/wrong number of arguments/i);
    expect(o.monitor.commands).toBe(0);
    expect(o.counted).toEqual({ roundTrips: 1, commands: 1 });
  });
});
