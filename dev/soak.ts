/**
 * `npm run soak`: a longer mixed load against the real Worker (`wrangler dev`)
 * while a fault schedule runs underneath it: a slow and failing network
 * (dev/fault-proxy.ts), lost responses, redis-server stopped and restarted,
 * the local Upstash server stopped and restarted. Clients behave as the
 * README tells them to: every write carries an Idempotency-Key and is retried
 * with the same key until it is acknowledged. At the end the acknowledged
 * totals are compared with what the API reads back; they must match exactly.
 *
 *   npm run soak                      # 60 s, 8 clients
 *   SOAK_SECONDS=300 SOAK_CLIENTS=16 npm run soak
 *   npm run soak -- --abuse           # issue 12's abuse run instead (dev/abuse.ts), 60 s
 *
 * Loopback only; everything it starts it stops, and it exits non-zero on any
 * mismatch or unexpected status.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { abuseMain } from "./abuse.ts";
import { startFaultProxy, type FaultPlan, type FaultProxy } from "./fault-proxy.ts";
import { freePort, startRedis, type RedisServer } from "./redis.ts";
import { startWranglerDev } from "./wrangler.ts";
import { startUpstashServer, type UpstashServer } from "./upstash-server.ts";
import { mulberry32 } from "./prng.ts";

/** Redis (AOF on), the local Upstash server on a fixed port, and the fault proxy: each can be stopped and started. */
export async function startFaultyStack(token: string) {
  const dataDir = mkdtempSync(join(tmpdir(), "edgestats-soak-"));
  const redisPort = await freePort();
  let redis: RedisServer | undefined = await startRedis({ dataDir, port: redisPort });
  let upstash: UpstashServer | undefined = await startUpstashServer({ redisUrl: redis.url, token });
  const upstashPort = upstash.port;
  const proxy: FaultProxy = await startFaultProxy({ target: upstash.url });
  return {
    proxy,
    token,
    async stopRedis() {
      await redis?.stop();
      redis = undefined;
    },
    async startRedis() {
      redis ??= await startRedis({ dataDir, port: redisPort });
    },
    async stopUpstash() {
      await upstash?.close();
      upstash = undefined;
    },
    async startUpstash() {
      upstash ??= await startUpstashServer({ redisUrl: `redis://127.0.0.1:${redisPort}`, token, port: upstashPort });
    },
    async stop() {
      await proxy.close();
      await upstash?.close();
      await redis?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * The real Worker (`wrangler dev`) talking to Redis through the stack's fault
 * proxy, with its edge cache off so every read reaches Redis. Ready as soon as
 * it answers at all: a run may start with a fault in place.
 */
export function startWorkerBehind(
  stack: FaultyStack,
  options: { keys: { ingest: string; read: string; admin: string }; prefix: string; redisTimeoutMs: number },
) {
  return startWranglerDev({
    readyWhen: "up",
    vars: {
      UPSTASH_REDIS_REST_URL: stack.proxy.url,
      UPSTASH_REDIS_REST_TOKEN: stack.token,
      INGEST_KEYS: options.keys.ingest,
      READ_KEYS: options.keys.read,
      ADMIN_KEYS: options.keys.admin,
      KEY_PREFIX: options.prefix,
      REDIS_TIMEOUT_MS: String(options.redisTimeoutMs),
      TRENDING_CACHE_SECONDS: "0",
    },
  });
}

export type FaultyStack = Awaited<ReturnType<typeof startFaultyStack>>;

const KEYS = { ingest: "soak-ingest-key-0001", read: "soak-read-key-00001", admin: "soak-admin-key-0001" };
const MEMBERS = ["alpha", "beta", "gamma", "delta", "eps"];

interface Totals {
  counters: Map<string, number>;
  trending: Map<string, number>;
  scores: Map<string, number>;
  observations: number;
  presence: Set<string>;
}

type Op = { path: string; body: unknown; apply: (t: Totals) => void };

function randomOp(rand: () => number): Op {
  const member = MEMBERS[Math.floor(rand() * MEMBERS.length)] ?? "alpha";
  const kind = Math.floor(rand() * 5);
  if (kind === 0) {
    const by = Math.floor(rand() * 14) - 3;
    return {
      path: "/v1/counters/soak/incr",
      body: { member, by },
      apply: (t) => t.counters.set(member, (t.counters.get(member) ?? 0) + by),
    };
  }
  if (kind === 1) {
    const counts = [1 + Math.floor(rand() * 5), 1 + Math.floor(rand() * 5)];
    const other = MEMBERS[Math.floor(rand() * MEMBERS.length)] ?? "beta";
    return {
      path: "/v1/trending/soak/events",
      body: {
        events: [
          { member, count: counts[0] },
          { member: other, count: counts[1] },
        ],
      },
      apply: (t) => {
        t.trending.set(member, (t.trending.get(member) ?? 0) + (counts[0] ?? 0));
        t.trending.set(other, (t.trending.get(other) ?? 0) + (counts[1] ?? 0));
      },
    };
  }
  if (kind === 2) {
    const by = Math.floor(rand() * 20) - 5;
    return {
      path: `/v1/leaderboards/soak/players/${member}/score`,
      body: { by },
      apply: (t) => t.scores.set(member, (t.scores.get(member) ?? 0) + by),
    };
  }
  if (kind === 3) {
    const values = Array.from({ length: 1 + Math.floor(rand() * 4) }, () => Math.floor(rand() * 1000));
    return {
      path: "/v1/histograms/soak/observations",
      body: { values },
      apply: (t) => (t.observations += values.length),
    };
  }
  const ids = [`u${Math.floor(rand() * 50)}`, `u${Math.floor(rand() * 50)}`];
  return { path: "/v1/presence/soak/heartbeats", body: { ids }, apply: (t) => ids.forEach((id) => t.presence.add(id)) };
}

async function main(): Promise<void> {
  const seconds = Number(process.env.SOAK_SECONDS ?? 60);
  const clients = Number(process.env.SOAK_CLIENTS ?? 8);
  const seed = Number(process.env.SOAK_SEED ?? Date.now() % 1_000_000);
  const stack = await startFaultyStack("soak-token");
  const worker = await startWorkerBehind(stack, { keys: KEYS, prefix: "soak", redisTimeoutMs: 1000 });
  const log = (msg: string) => console.log(`[soak ${((Date.now() - started) / 1000).toFixed(1).padStart(5)} s] ${msg}`);
  const started = Date.now();
  const problems: string[] = [];
  try {
    const call = (method: string, path: string, body: unknown, key: string, idem?: string) =>
      fetch(`${worker.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": "application/json",
          ...(idem ? { "idempotency-key": idem } : {}),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    // Things that must exist before the load: the histogram and the players.
    await retry(() => call("PUT", "/v1/histograms/soak", { bucketWidth: 10 }, KEYS.admin));
    for (const m of MEMBERS)
      await retry(() => call("PUT", `/v1/leaderboards/soak/players/${m}`, { name: m }, KEYS.ingest));

    const totals: Totals = {
      counters: new Map(),
      trending: new Map(),
      scores: new Map(),
      observations: 0,
      presence: new Set(),
    };
    const stats = { acknowledged: 0, retries: 0, replayed: 0, byStatus: new Map<string, number>() };
    const deadline = started + seconds * 1000;
    const at = (fraction: number) => started + seconds * 1000 * fraction;

    const schedule: { at: number; label: string; run: () => Promise<void> }[] = [
      {
        at: at(0.1),
        label: "slow network: 30% of Redis calls delayed 300 ms",
        run: async () => stack.proxy.set({ fault: { kind: "delay", ms: 300 }, rate: 0.3 }),
      },
      {
        at: at(0.2),
        label: "failing gateway: 20% of Redis calls answered 503",
        run: async () => stack.proxy.set({ fault: { kind: "status", status: 503 }, rate: 0.2 }),
      },
      {
        at: at(0.3),
        label: "lost responses: 15% applied by Redis, answer dropped",
        run: async () => stack.proxy.set({ fault: { kind: "lose-response" }, rate: 0.15 }),
      },
      { at: at(0.4), label: "healed; redis-server stopped", run: async () => (stack.proxy.heal(), stack.stopRedis()) },
      { at: at(0.47), label: "redis-server started again (AOF kept)", run: () => stack.startRedis() },
      { at: at(0.55), label: "local Upstash server stopped", run: () => stack.stopUpstash() },
      { at: at(0.62), label: "local Upstash server started again", run: () => stack.startUpstash() },
      {
        at: at(0.7),
        label: "hangs: 5% of Redis calls never answered (client timeout)",
        run: async () => stack.proxy.set({ fault: { kind: "hang" }, rate: 0.05 }),
      },
      {
        at: at(0.8),
        label: "resets: 15% of connections reset",
        run: async () => stack.proxy.set({ fault: { kind: "reset" }, rate: 0.15 } satisfies FaultPlan),
      },
      { at: at(0.9), label: "healed", run: async () => stack.proxy.heal() },
    ];
    const faults = (async () => {
      for (const step of schedule) {
        await new Promise((r) => setTimeout(r, Math.max(0, step.at - Date.now())));
        log(step.label);
        await step.run();
      }
    })();

    let serial = 0;
    const load = Array.from({ length: clients }, async (_, client) => {
      const rand = mulberry32(seed + client);
      while (Date.now() < deadline) {
        const op = randomOp(rand);
        const key = `soak-${seed}-${client}-${++serial}`;
        // Retried with the same key until acknowledged: a 503 means "maybe not applied".
        for (let attempt = 0; ; attempt++) {
          const res = await call("POST", op.path, op.body, KEYS.ingest, key).catch(() => null);
          const status = res ? String(res.status) : "network";
          stats.byStatus.set(status, (stats.byStatus.get(status) ?? 0) + 1);
          if (res?.ok) {
            if (res.headers.get("idempotent-replayed") === "true") stats.replayed++;
            op.apply(totals);
            stats.acknowledged++;
            await res.arrayBuffer();
            break;
          }
          const text = res ? await res.text() : "";
          if (res && res.status !== 503)
            problems.push(`${op.path} ${JSON.stringify(op.body)}: ${res.status} ${text.slice(0, 200)}`);
          if (res && res.status !== 503 && attempt > 3) break;
          if (attempt > 600) throw new Error(`${op.path}: not acknowledged after ${attempt} attempts`);
          stats.retries++;
          await new Promise((r) => setTimeout(r, 50 + Math.floor(rand() * 100)));
        }
      }
    });
    await Promise.all(load);
    await faults;
    stack.proxy.heal();
    await stack.startRedis();
    await stack.startUpstash();
    log(
      `load done: ${stats.acknowledged} writes acknowledged, ${stats.retries} retries, ${stats.replayed} answered by replay`,
    );
    log(`statuses seen: ${[...stats.byStatus].map(([s, n]) => `${s}=${n}`).join(" ")}`);

    // Read everything back through the API.
    const read = async (path: string) =>
      (await retry(() => call("GET", path, undefined, KEYS.read))).json() as Promise<any>;
    const rows: [string, number, number][] = [];
    for (const m of MEMBERS) {
      rows.push([
        `counter soak/${m}`,
        totals.counters.get(m) ?? 0,
        (await read(`/v1/counters/soak/members/${m}`)).score ?? 0,
      ]);
      rows.push([
        `trending soak/${m} (24h)`,
        totals.trending.get(m) ?? 0,
        (await read(`/v1/trending/soak/members/${m}?window=24h`)).count ?? 0,
      ]);
      rows.push([
        `leaderboard soak/${m}`,
        totals.scores.get(m) ?? 0,
        (await read(`/v1/leaderboards/soak/players/${m}`)).score ?? 0,
      ]);
    }
    rows.push(["histogram soak count", totals.observations, (await read("/v1/histograms/soak")).count ?? 0]);
    rows.push(["presence soak online", totals.presence.size, (await read("/v1/presence/soak")).online ?? 0]);
    console.log(`\n${"total".padEnd(28)} ${"acknowledged".padStart(12)} ${"stored".padStart(12)}`);
    for (const [label, acknowledged, stored] of rows) {
      const mark = acknowledged === stored ? "" : "   MISMATCH";
      console.log(`${label.padEnd(28)} ${String(acknowledged).padStart(12)} ${String(stored).padStart(12)}${mark}`);
      if (mark) problems.push(`${label}: acknowledged ${acknowledged}, stored ${stored}`);
    }
    console.log(
      `\nseed ${seed}; ${seconds} s; ${clients} clients; fault proxy: ${JSON.stringify(stack.proxy.stats())}`,
    );
  } finally {
    await worker.stop();
    await stack.stop();
  }
  if (problems.length > 0) {
    console.error(`\nSOAK FAILED (${problems.length} problems):\n${problems.slice(0, 20).join("\n")}`);
    process.exit(1);
  }
  console.log("SOAK PASSED: every acknowledged write is stored exactly once.");
}

/** For setup and read-back: retries while the stack recovers. */
async function retry(fn: () => Promise<Response>): Promise<Response> {
  for (let i = 0; ; i++) {
    const res = await fn().catch(() => null);
    if (res?.ok) return res;
    if (i > 100) throw new Error(`gave up: ${res?.status} ${await res?.text()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

if (import.meta.main) {
  if (process.argv.includes("--abuse")) await abuseMain(Number(process.env.SOAK_SECONDS ?? 60));
  else await main();
}
