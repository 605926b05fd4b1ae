/**
 * Faults between the library and Redis: a private redis-server (AOF on, so a
 * restart keeps what was acknowledged), the local Upstash server, and the
 * fault proxy in front of it. Each fault must surface as
 * StorageUnavailableError (the API's 503), never as a partial write, and the
 * client must recover by itself once the fault heals.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFaultProxy, type FaultProxy } from "../../dev/fault-proxy.ts";
import { freePort, startRedis, type RedisServer } from "../../dev/redis.ts";
import { startUpstashServer, type UpstashServer } from "../../dev/upstash-server.ts";
import { StorageUnavailableError } from "../../src/errors.ts";
import { keyOf } from "../../src/keys.ts";
import { createRedis } from "../../src/redis/client.ts";
import { defineScript, type Idempotency } from "../../src/redis/script.ts";
import { command, type RestTarget } from "../helpers/upstash-rest.ts";

const TOKEN = "fault-token";
const prefix = "faults";
let dataDir: string;
let redisPort: number;
let upstashPort: number;
let redisServer: RedisServer | undefined;
let upstash: UpstashServer | undefined;
let proxy: FaultProxy;
let direct: RestTarget;

const incr = defineScript({
  name: "test.incr",
  write: true,
  keys: ["board", "totals"],
  args: ["member", "by"],
  lua: `
-- Two keys in one script: a fault can never leave one updated and not the other.
redis.call('HINCRBY', totals, 'writes', 1)
return redis.call('ZINCRBY', board, by, member)
`,
});

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "edgestats-faults-"));
  redisPort = await freePort();
  redisServer = await startRedis({ dataDir, port: redisPort });
  upstash = await startUpstashServer({ redisUrl: redisServer.url, token: TOKEN });
  upstashPort = upstash.port;
  proxy = await startFaultProxy({ target: upstash.url });
  direct = { url: upstash.url, token: TOKEN };
});

afterAll(async () => {
  await proxy?.close();
  await upstash?.close();
  await redisServer?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/**
 * The library's client, through the proxy. The timeout is generous so a healthy
 * call on a loaded CI machine never times out; tests of a hang pass a short one.
 */
function client(timeoutMs = 5000) {
  return createRedis({ url: proxy.url, token: TOKEN, timeoutMs });
}

function keys(name: string) {
  return { board: keyOf(prefix, "board", name), totals: keyOf(prefix, "totals", name) };
}

function idem(key: string): Idempotency {
  return { key: keyOf(prefix, "idem", key), fingerprint: "same-body" };
}

async function stored(name: string): Promise<{ score: number; writes: number }> {
  const { board, totals } = keys(name);
  const score = await command<string | null>(direct, "ZSCORE", board, "m");
  const writes = await command<string | null>(direct, "HGET", totals, "writes");
  return { score: Number(score ?? 0), writes: Number(writes ?? 0) };
}

describe("injected faults", () => {
  it.each([
    ["hang (no answer: the client's timeout fires)", { kind: "hang" } as const],
    ["502 from a gateway", { kind: "status", status: 502 } as const],
    ["503 from the REST server", { kind: "status", status: 503 } as const],
    ["connection reset", { kind: "reset" } as const],
  ])("%s: StorageUnavailableError, nothing written, then recovery", async (label, fault) => {
    const name = label.split(" ")[0] ?? "x";
    const redis = client();
    proxy.set({ fault, times: 1 });
    const error = await incr
      .run(fault.kind === "hang" ? client(300) : redis, keys(name), { member: "m", by: 7 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageUnavailableError);
    expect(await stored(name)).toEqual({ score: 0, writes: 0 });
    // Healed (times: 1): the next call goes through without any reconnect dance.
    expect(await incr.run(redis, keys(name), { member: "m", by: 7 })).toEqual({ value: "7", replayed: false });
    expect(await stored(name)).toEqual({ score: 7, writes: 1 });
  });

  it("a hang is cut by the client timeout (an abort), not left waiting", async () => {
    proxy.set({ fault: { kind: "hang" }, times: 1 });
    const error = await incr.run(client(200), keys("abort"), { member: "m", by: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageUnavailableError);
    expect(String((error as Error).cause)).toMatch(/TimeoutError|aborted|timed? ?out/i);
  });

  it("a slow answer within the timeout is just slow", async () => {
    proxy.set({ fault: { kind: "delay", ms: 100 }, times: 1 });
    expect(await incr.run(client(), keys("slow"), { member: "m", by: 2 })).toEqual({ value: "2", replayed: false });
  });

  it("a lost response: 503 to the client, applied once; the retry with its Idempotency-Key replays instead of counting again", async () => {
    const redis = client();
    proxy.set({ fault: { kind: "lose-response" }, times: 1 });
    const error = await incr.run(redis, keys("lost"), { member: "m", by: 5 }, idem("lost")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageUnavailableError);
    expect(await stored("lost")).toEqual({ score: 5, writes: 1 }); // it did happen
    const retry = await incr.run(redis, keys("lost"), { member: "m", by: 5 }, idem("lost"));
    expect(retry).toEqual({ value: "5", replayed: true });
    expect(await stored("lost")).toEqual({ score: 5, writes: 1 });
  });

  it("why retry is off: @upstash/redis' default retry re-sends a write whose response was lost, counting it twice", async () => {
    const retrying = new Redis({
      url: proxy.url,
      token: TOKEN,
      automaticDeserialization: false,
      enableTelemetry: false,
    });
    proxy.set({ fault: { kind: "lose-response" }, times: 1 });
    await retrying.eval("return redis.call('INCRBY', KEYS[1], 1)", [keyOf(prefix, "retried")], []);
    expect(Number(await command(direct, "GET", keyOf(prefix, "retried")))).toBe(2);
  });
});

describe("outages", () => {
  it("the Upstash server stopped and started again: 503 meanwhile, recovery after", async () => {
    const redis = client();
    await incr.run(redis, keys("upstash-down"), { member: "m", by: 1 });
    await upstash?.close();
    upstash = undefined;
    const viaProxy = await incr.run(redis, keys("upstash-down"), { member: "m", by: 1 }).catch((e: unknown) => e);
    expect(viaProxy).toBeInstanceOf(StorageUnavailableError);
    const refused = await incr
      .run(
        createRedis({ url: `http://127.0.0.1:${upstashPort}`, token: TOKEN, timeoutMs: 5000 }),
        keys("upstash-down"),
        { member: "m", by: 1 },
      )
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StorageUnavailableError);
    upstash = await startUpstashServer({ redisUrl: `redis://127.0.0.1:${redisPort}`, token: TOKEN, port: upstashPort });
    expect(await incr.run(redis, keys("upstash-down"), { member: "m", by: 1 })).toEqual({
      value: "2",
      replayed: false,
    });
    expect(await stored("upstash-down")).toEqual({ score: 2, writes: 2 });
  });

  it("redis-server killed and restarted mid-load: every acknowledged increment is stored exactly once", async () => {
    const redis = client();
    let acknowledged = 0;
    const failures: unknown[] = [];
    let stopAt = 60;
    let done = 0;
    let outage: Promise<void> | undefined;
    // 8 clients x 30 writes, each with its own Idempotency-Key, retried on 503 like a careful client.
    const clients = Array.from({ length: 8 }, async (_, c) => {
      for (let i = 0; i < 30; i++) {
        const by = 1 + ((c + i) % 4);
        for (let attempt = 0; ; attempt++) {
          try {
            await incr.run(redis, keys("killed"), { member: "m", by }, idem(`killed:${c}:${i}`));
            acknowledged += by;
            break;
          } catch (error) {
            failures.push(error);
            if (attempt > 200) throw error;
            await new Promise((r) => setTimeout(r, 50));
          }
        }
        if (++done === stopAt) {
          stopAt = -1;
          outage = (async () => {
            await redisServer?.stop();
            await new Promise((r) => setTimeout(r, 300));
            redisServer = await startRedis({ dataDir, port: redisPort });
          })();
        }
      }
    });
    await Promise.all(clients);
    await outage;
    expect(failures.length).toBeGreaterThan(0); // the outage was felt
    for (const failure of failures) expect(failure).toBeInstanceOf(StorageUnavailableError);
    const result = await stored("killed");
    expect(result.score).toBe(acknowledged);
    expect(result.writes).toBe(8 * 30);
  });
});
