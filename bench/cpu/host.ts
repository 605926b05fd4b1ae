/**
 * Runs the production bundle (`wrangler deploy --dry-run` output) in a plain
 * Node process of its own, started by bench/cpu/index.ts with
 * `--disallow-code-generation-from-strings` (Workers forbid eval and
 * `new Function`, so zod's JIT is off here too). Two modes:
 *
 * - `cpu`: process.cpuUsage() around many sequential `fetch` calls of the
 *   bundle's default export, per case; nothing subtracted. This process holds
 *   only the Worker code and Node's fetch (the local Upstash server lives in
 *   the bench's process), so the figure is the Worker's JavaScript plus
 *   Node's fetch of its one Upstash call — the `floor` case measures the
 *   latter alone. (Cold start, module evaluation and first requests, is
 *   bench/cold-start.ts's: this process's first call would also pay Node's own
 *   first fetch, undici's loading and the first reads of every module from disk,
 *   ~100 ms that a Worker never pays.)
 * - `jobs`: a fake clock (Date.now replaced before the bundle is imported, so
 *   the app's request clock is the fake one) drives writes through `fetch` and
 *   the cron jobs through the bundle's `scheduled`, and the local Upstash
 *   server's per-tag counters give the jobs' commands.
 *
 * Input: a JSON HostSpec file as argv[2]. Output: one JSON line on stdout.
 */
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import type { ColdStartResult } from "../cold-start.ts";
import type { WorkerdColdStart } from "../cold-start-workerd.ts";

export interface HostSpec {
  mode: "cpu" | "jobs";
  /** Path of the bundled Worker script. */
  bundle: string;
  upstashUrl: string;
  /** The bare token of the local Upstash server (tags are appended here). */
  token: string;
  quick: boolean;
  /** jobs mode: active streams and rooms per step. */
  sizes?: number[];
}

export interface CpuCase {
  label: string;
  items: number;
  calls: number;
  /** CPU ms per call (user + system). */
  cpuMs: number;
  /** Wall ms per call (includes the Upstash round trip). */
  wallMs: number;
  /** Target from issue 14, when there is one. */
  targetMs?: number;
}

export interface CpuResult {
  cases: CpuCase[];
  /** Cold start (bench/cold-start.ts, fresh processes), when the bench measured it. */
  coldStart?: ColdStartResult;
  /** Cold start in workerd itself (bench/cold-start-workerd.ts), when the bench measured it. */
  workerdColdStart?: WorkerdColdStart;
  node: string;
  jitless: boolean;
}

export interface JobRun {
  commands: number;
  requests: number;
  byCommand: Record<string, number>;
}

export interface JobStep {
  /** Active streams and rooms. */
  n: number;
  /** Minutes simulated; the trim figure per hour is 60 × the mean of the steady minutes. */
  minutes: number;
  /**
   * Commands of the hourly cron run ("5 * * * *": compaction + counter sweep) with `n` dirty streams,
   * every script already loaded and the day's leaderboard snapshot pass already done.
   */
  hourly: JobRun & { result: unknown };
  /** Commands of one minute's trim run in steady state (mean over the measured minutes). */
  trim: JobRun & { result: unknown };
  /** Commands per hour: one hourly run + 60 trim runs. */
  perHour: number;
}

/** Both cron runs on a prefix with no streams, rooms, counters, boards or webhooks at all. */
export interface JobsIdle {
  /**
   * What every run costs, hour after hour: the scripts loaded, the day's snapshot pass done (the
   * state test/worker/audit-targets.test.ts and docs/costs.md pin).
   */
  steady: { hourly: JobRun; trim: JobRun };
  /** The day's first hourly run, scripts loaded: the leaderboard snapshot pass of the day opens and closes. */
  dayFirstHourly: JobRun;
  /**
   * The very first runs on a Redis that has none of the job scripts (a new database, or after
   * SCRIPT FLUSH: each script answered NOSCRIPT, then sent by EVAL), at :05 of a UTC day's first
   * hour: the hourly run (also the day's first), then the trim run.
   */
  cold: { hourly: JobRun; trim: JobRun };
}

export interface JobsResult {
  steps: JobStep[];
  idle: JobsIdle;
}

type Fetcher = {
  fetch(request: Request, env: unknown, ctx: unknown): Promise<Response>;
  scheduled(controller: unknown, env: unknown, ctx: unknown): void;
};

const spec = JSON.parse(readFileSync(process.argv[2] ?? "", "utf8")) as HostSpec;
const realNow = Date.now.bind(Date);
let fakeNow: number | null = null;
if (spec.mode === "jobs") {
  // Before the import: the app captures Date.now when it is created.
  Date.now = () => fakeNow ?? realNow();
}

const KEYS = { ingest: "cpu-ingest-key-0001", admin: "cpu-admin-key-00001" };
const envOf = (prefix: string, tag: string) => ({
  UPSTASH_REDIS_REST_URL: spec.upstashUrl,
  UPSTASH_REDIS_REST_TOKEN: `${spec.token}.${tag}`,
  INGEST_KEYS: KEYS.ingest,
  READ_KEYS: "cpu-read-key-000001",
  ADMIN_KEYS: KEYS.admin,
  KEY_PREFIX: prefix,
  TRENDING_CACHE_SECONDS: "0",
  RATE_LIMIT_PER_10S: "0",
  REDIS_TIMEOUT_MS: "60000",
});

function executionContext() {
  const pending: Promise<unknown>[] = [];
  return {
    pending,
    ctx: { waitUntil: (p: Promise<unknown>) => void pending.push(p), passThroughOnException() {}, props: {} },
  };
}

const worker = ((await import(pathToFileURL(spec.bundle).href)) as { default: Fetcher }).default;

function cpuMs(u: NodeJS.CpuUsage): number {
  return (u.user + u.system) / 1000;
}

function request(path: string, body: unknown, headers: Record<string, string> = {}): Request {
  return new Request(`https://edgestats.bench${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEYS.ingest}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

async function send(env: unknown, req: Request): Promise<Response> {
  const { ctx, pending } = executionContext();
  const res = await worker.fetch(req, env, ctx);
  const text = await res.text();
  await Promise.all(pending);
  if (res.status >= 300)
    throw new Error(`${req.method} ${new URL(req.url).pathname}: ${res.status} ${text.slice(0, 300)}`);
  return res;
}

async function stats(tag: string): Promise<{ requests: number; commands: number; byCommand: Record<string, number> }> {
  const res = await fetch(`${spec.upstashUrl}/__local/stats?tag=${encodeURIComponent(tag)}`, {
    headers: { authorization: `Bearer ${spec.token}` },
  });
  return (await res.json()) as { requests: number; commands: number; byCommand: Record<string, number> };
}

async function reset(tag: string): Promise<void> {
  await fetch(`${spec.upstashUrl}/__local/reset?tag=${encodeURIComponent(tag)}`, {
    method: "POST",
    headers: { authorization: `Bearer ${spec.token}` },
  });
}

// ---------------------------------------------------------------- cpu mode

async function cpuMode(): Promise<CpuResult> {
  const env = envOf("cpu", "bench-cpu");

  const scale = spec.quick ? 0.25 : 1;
  const callsFor = (items: number) => Math.max(5, Math.round((items === 1 ? 400 : items === 100 ? 100 : 30) * scale));
  let serial = 0;
  const member = () => `m${serial++ % 5000}`;
  const id = () => `user-${serial++ % 20000}`;
  type Make = () => Request;
  const cases: { label: string; items: number; targetMs?: number; make: Make }[] = [];
  for (const items of [1, 100, 1000]) {
    const target = items === 1 ? 1 : items === 1000 ? 8 : undefined;
    const t = target === undefined ? {} : { targetMs: target };
    cases.push({
      label: `trending ingest, ${items} event${items === 1 ? "" : "s"}`,
      items,
      ...t,
      make: () =>
        request(
          "/v1/trending/cpu/events",
          items === 1 ? { member: member() } : { events: Array.from({ length: items }, () => ({ member: member() })) },
        ),
    });
    cases.push({
      label: `counter incr, ${items} item${items === 1 ? "" : "s"}`,
      items,
      ...t,
      make: () =>
        request(
          "/v1/counters/cpu/incr",
          items === 1 ? { member: member() } : { items: Array.from({ length: items }, () => ({ member: member() })) },
        ),
    });
    cases.push({
      label: `presence heartbeat, ${items} id${items === 1 ? "" : "s"}`,
      items,
      ...t,
      make: () =>
        request("/v1/presence/cpu/heartbeats", items === 1 ? { id: id() } : { ids: Array.from({ length: items }, id) }),
    });
  }
  cases.sort((a, b) => a.items - b.items);
  cases.push({
    label: "trending ingest, 1 event + Idempotency-Key",
    items: 1,
    make: () =>
      request("/v1/trending/cpu/events", { member: member() }, { "idempotency-key": `cpu-${serial++}-${realNow()}` }),
  });

  // Warm-up of every case first: scripts cached in Redis, and the Worker's shared code (router,
  // validation, client) optimised as in a busy isolate, whichever case comes first.
  for (let round = 0; round < 2; round++) {
    for (const c of cases) for (let i = 0; i < Math.min(30, callsFor(c.items)); i++) await send(env, c.make());
  }
  // The floor: Node's fetch of one pipelined Upstash call, nothing else (workerd does this natively).
  const floorBody = JSON.stringify([["PING"]]);
  const floorCall = () =>
    fetch(`${spec.upstashUrl}/pipeline`, {
      method: "POST",
      headers: { authorization: `Bearer ${spec.token}.bench-cpu`, "content-type": "application/json" },
      body: floorBody,
    }).then((r) => r.text());
  for (let i = 0; i < 50; i++) await floorCall();
  const all = [
    { label: "floor: Node's fetch of one Upstash pipeline call, no Worker", items: 0, make: null as Make | null },
    ...cases.map((c) => ({ ...c, make: c.make as Make | null })),
  ];
  const samples = new Map<string, { cpu: number; wall: number }[]>();
  // Three measured passes over every case, the median pass per case reported (GC and the
  // machine's other load land in one pass, not in all three).
  for (let pass = 0; pass < 3; pass++) {
    for (const c of all) {
      const calls = callsFor(c.items || 1);
      // Requests are built before timing: in workerd the runtime builds them, not the Worker.
      const requests = c.make ? Array.from({ length: calls }, c.make) : [];
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      if (c.make) for (const req of requests) await send(env, req);
      else for (let i = 0; i < calls; i++) await floorCall();
      const list = samples.get(c.label) ?? [];
      list.push({ cpu: cpuMs(process.cpuUsage(c0)) / calls, wall: (performance.now() - t0) / calls });
      samples.set(c.label, list);
    }
  }
  const out: CpuCase[] = all.map((c) => {
    const list = (samples.get(c.label) ?? []).sort((a, b) => a.cpu - b.cpu);
    const mid = list[Math.floor(list.length / 2)] ?? { cpu: NaN, wall: NaN };
    const target = "targetMs" in c && typeof c.targetMs === "number" ? { targetMs: c.targetMs } : {};
    return {
      label: c.label,
      items: c.items,
      calls: callsFor(c.items || 1),
      cpuMs: mid.cpu,
      wallMs: mid.wall,
      ...target,
    };
  });
  let jitless = false;
  try {
    new Function("");
  } catch {
    jitless = true;
  }
  return { cases: out, node: process.version, jitless };
}

// ---------------------------------------------------------------- jobs mode

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Runs `task` for 0..count-1 with at most `width` in flight. */
async function inParallel(count: number, width: number, task: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, count) }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

async function cron(env: unknown, expression: string, at: number): Promise<unknown> {
  const { ctx, pending } = executionContext();
  worker.scheduled({ cron: expression, scheduledTime: at, noRetry() {} }, env, ctx);
  const results = await Promise.all(pending);
  return results[0];
}

async function measureRun(tag: string, run: () => Promise<unknown>) {
  await reset(tag);
  const result = await run();
  const s = await stats(tag);
  return { commands: s.commands, requests: s.requests, byCommand: s.byCommand, result };
}

/** `measureRun` without the jobs' result (the idle runs report only what they cost). */
async function costOf(tag: string, run: () => Promise<unknown>): Promise<JobRun> {
  const { commands, requests, byCommand } = await measureRun(tag, run);
  return { commands, requests, byCommand };
}

/**
 * The idle states, measured first: before any other run has loaded the job scripts. The clock is
 * at `day0` (a UTC midnight ahead of the real clock), so the first hourly run is the day's first
 * and no run falls into the presence trim's window after midnight but the cold ones (no rooms).
 */
async function idleRuns(day0: number): Promise<JobsIdle> {
  const tag = "bench-jobs-idle";
  // Nothing else runs meanwhile (the bench's parts run one after another), and whatever ran before
  // (e.g. `npm run bench` run twice on one Redis via REDIS_URL) may have loaded the job scripts.
  const flushed = await fetch(spec.upstashUrl, {
    method: "POST",
    headers: { authorization: `Bearer ${spec.token}`, "content-type": "application/json" },
    body: JSON.stringify(["SCRIPT", "FLUSH"]),
  });
  if (!flushed.ok) throw new Error(`SCRIPT FLUSH: ${flushed.status} ${await flushed.text()}`);
  const env = envOf("jobs0", tag);
  const at = (t: number, expression: string) => {
    fakeNow = t;
    return costOf(tag, () => cron(env, expression, t));
  };
  const coldHourly = await at(day0 + 5 * MINUTE, "5 * * * *");
  const coldTrim = await at(day0 + 5 * MINUTE, "* * * * *");
  // An hour on: what each run costs from then on, every hour of the day.
  const steadyHourly = await at(day0 + HOUR + 5 * MINUTE, "5 * * * *");
  const steadyTrim = await at(day0 + HOUR + 6 * MINUTE, "* * * * *");
  const dayFirstHourly = await at(day0 + DAY + 5 * MINUTE, "5 * * * *");
  return {
    steady: { hourly: steadyHourly, trim: steadyTrim },
    dayFirstHourly,
    cold: { hourly: coldHourly, trim: coldTrim },
  };
}

/**
 * One size: `n` rooms and streams under `prefix`, from `base` (a full hour, at least 01:00 UTC, the
 * step ending before midnight). Returns the measured runs under `tag`.
 */
async function step(n: number, prefix: string, tag: string, base: number, minutes: number, steadyFrom: number) {
  const writeEnv = envOf(prefix, "bench-jobs-load");
  const jobEnv = envOf(prefix, tag);
  // The prefix's first hourly run of the day (nothing to compact yet), unmeasured: the measured one
  // below is then an ordinary hour's, not the one that also takes the day's leaderboard snapshot pass.
  fakeNow = base - HOUR + 5 * MINUTE;
  await cron(jobEnv, "5 * * * *", fakeNow);
  const trims: Awaited<ReturnType<typeof measureRun>>[] = [];
  for (let m = 0; m < minutes; m++) {
    fakeNow = base + m * MINUTE + 1000;
    // Every room gets a heartbeat from a new id each minute (ids leave after the timeout),
    // and in the first minute every stream gets a batch of 20 events.
    await inParallel(n, 8, async (r) => {
      await send(writeEnv, request(`/v1/presence/room-${r}/heartbeats`, { id: `u${m}` }));
      if (m === 0) {
        await send(
          writeEnv,
          request(`/v1/trending/stream-${r}/events`, {
            events: Array.from({ length: 20 }, (_, i) => ({ member: `m${(i * 7 + r) % 50}` })),
          }),
        );
      }
    });
    const at = base + m * MINUTE + 30_000;
    fakeNow = at;
    const run = await measureRun(tag, () => cron(jobEnv, "* * * * *", at));
    if (m >= steadyFrom) trims.push(run);
  }
  // Compaction of the hour the streams wrote in, at :05 of the next hour.
  const compactAt = base + HOUR + 5 * MINUTE;
  fakeNow = compactAt;
  const hourly = await measureRun(tag, () => cron(jobEnv, "5 * * * *", compactAt));
  return { hourly, trims };
}

async function jobsMode(): Promise<JobsResult> {
  const sizes = spec.sizes ?? [10, 100, 1000];
  // The fake clock starts at the next UTC midnight of the real one and only runs ahead, so
  // expiries scripts set relative to Redis's clock stay in the future, and the time of day the
  // bench happens to run at changes nothing (a trim run in the first hour of a UTC day costs more).
  const day0 = Math.ceil(realNow() / DAY) * DAY;
  const idle = await idleRuns(day0);
  const minutes = spec.quick ? 7 : 10;
  // Steady state: the presence timeout (300 s) has passed, so every run removes the id that left.
  const steadyFrom = 6;
  // Each size its own prefix (own registries) and its own hours, from 01:00 two days on (the idle
  // runs' days over), so runs never see another's data. First an unmeasured size-1 step loads
  // every script the steps run: the figures are what each hour costs, not a script's first load.
  const hour = (i: number) => day0 + 2 * DAY + HOUR + 2 * i * HOUR;
  await step(1, "jobswarm", "bench-jobs-warm", hour(0), minutes, steadyFrom);
  const steps: JobStep[] = [];
  for (const [i, n] of sizes.entries()) {
    const { hourly, trims } = await step(n, `jobs${n}`, `bench-jobs-${n}`, hour(i + 1), minutes, steadyFrom);
    const mean = (f: (t: (typeof trims)[number]) => number) =>
      trims.reduce((s, t) => s + f(t), 0) / Math.max(1, trims.length);
    const byCommand: Record<string, number> = {};
    for (const t of trims)
      for (const [k, v] of Object.entries(t.byCommand)) byCommand[k] = (byCommand[k] ?? 0) + v / trims.length;
    const trim = {
      commands: mean((t) => t.commands),
      requests: mean((t) => t.requests),
      byCommand,
      result: trims[trims.length - 1]?.result,
    };
    steps.push({ n, minutes, hourly, trim, perHour: hourly.commands + 60 * trim.commands });
  }
  return { steps, idle };
}

const result = spec.mode === "cpu" ? await cpuMode() : await jobsMode();
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
