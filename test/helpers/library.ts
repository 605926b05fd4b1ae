/**
 * The one way library tests (test/redis) reach Redis: the local Upstash server through the
 * library's own client (createRedis: no retries, no deserialisation), a prefix of their own that
 * is deleted after the file, and a context at any time.
 *
 *   const lib = libraryTest("counters");
 *   const ctx = lib.ctx(Date.UTC(2026, 10, 22, 12));
 *   const other = lib.ctx(T0, "another-prefix-label"); // a fresh prefix, also cleaned up
 */
import { afterAll, beforeAll, expect } from "vitest";
import type { createApp } from "../../functions/app.ts";
import { startFaultProxy, type FaultProxy } from "../../dev/fault-proxy.ts";
import type { Config } from "../../src/config.ts";
import { readConfig } from "../../src/config.ts";
import type { Ctx } from "../../src/context.ts";
import { Edgestats } from "../../src/library/edgestats.ts";
import { createRedis, type RedisClient } from "../../src/redis/client.ts";
import { deleteUnder, requireTarget, resetStats, statsOf, uniquePrefix, type RestTarget } from "./upstash-rest.ts";

export interface LibraryTest {
  /** The local Upstash server (for `command`, `keysUnder`, stats). */
  target: RestTarget;
  /** The library's client on it. */
  redis: Ctx["redis"];
  /** This file's prefix. */
  prefix: string;
  /** The service's defaults, as `readConfig({})` gives them. */
  config: Config;
  /** A context at `now` (epoch ms); with a label, under a fresh prefix of its own. */
  ctx(now: number, label?: string): Ctx;
  /**
   * The Worker's env for the real app (`createApp().request(…, env)`) on this file's database and
   * prefix, with `keys` as its API keys, the trending edge cache off, and `extra` vars.
   */
  appEnv(keys: { ingest: string; read: string; admin: string }, extra?: Record<string, string>): Record<string, string>;
  /**
   * dev/fault-proxy.ts in front of the local Upstash server for this file (started before its
   * tests, closed after), and the library's client through it (2 s timeout): read both inside tests.
   */
  faultProxy(): { readonly proxy: FaultProxy; readonly redis: RedisClient };
}

/** Sets up a test file's Redis access; its keys are deleted after the file. */
export function libraryTest(label: string, options: { timeoutMs?: number } = {}): LibraryTest {
  const target = requireTarget(process.env.EDGESTATS_UPSTASH_URL, process.env.EDGESTATS_UPSTASH_TOKEN);
  const redis = createRedis({ url: target.url, token: target.token, ...options });
  const prefix = uniquePrefix(label);
  const prefixes = [prefix];
  afterAll(async () => {
    for (const p of prefixes) await deleteUnder(target, p);
  });
  return {
    target,
    redis,
    prefix,
    config: readConfig({}),
    ctx(now, own) {
      if (own === undefined) return { redis, prefix, now };
      const fresh = uniquePrefix(own);
      prefixes.push(fresh);
      return { redis, prefix: fresh, now };
    },
    appEnv(keys, extra = {}) {
      return {
        UPSTASH_REDIS_REST_URL: target.url,
        UPSTASH_REDIS_REST_TOKEN: target.token,
        INGEST_KEYS: keys.ingest,
        READ_KEYS: keys.read,
        ADMIN_KEYS: keys.admin,
        KEY_PREFIX: prefix,
        TRENDING_CACHE_SECONDS: "0",
        ...extra,
      };
    },
    faultProxy() {
      let proxy: FaultProxy | undefined;
      let proxied: RedisClient | undefined;
      beforeAll(async () => {
        proxy = await startFaultProxy({ target: target.url });
        proxied = createRedis({ url: proxy.url, token: target.token, timeoutMs: 2000 });
      });
      afterAll(async () => {
        await proxy?.close();
      });
      const started = <T>(x: T | undefined): T => {
        if (x === undefined) throw new Error("faultProxy(): read it inside a test (it starts in beforeAll)");
        return x;
      };
      return {
        get proxy() {
          return started(proxy);
        },
        get redis() {
          return started(proxied);
        },
      };
    },
  };
}

/**
 * A request to the real app (`createApp()`, with `env`, as `libraryTest`'s `appEnv` makes it) with
 * the API key `key`, a JSON body when given: its status and parsed body. The library-next-to-the-
 * service files (review 14, review 17, library-inputs) each had a copy.
 */
export function appHttp(app: ReturnType<typeof createApp>, env: Record<string, string>, key: string) {
  return async (method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const headers: Record<string, string> = { authorization: `Bearer ${key}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    const init = { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) };
    const res = await app.request(path, init, env);
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
}

/**
 * A library (`new Edgestats`) on a fresh prefix of `lib`'s, whose clock the test sets, its
 * context at that clock, and `commands(call)`: the Redis commands of `call`, which must be one
 * round trip (its client's token tag is its own). The review 11 and review 20 leaderboard files
 * each had a copy.
 */
export function libraryBench(lib: LibraryTest, label: string, start: number) {
  const prefix = lib.ctx(0, label).prefix;
  const tag = `lb${Math.random().toString(36).slice(2, 8)}`;
  const redis = createRedis({ url: lib.target.url, token: `${lib.target.token}.${tag}` });
  const clock = { now: start };
  const stats = new Edgestats({ redis, prefix, clock: () => clock.now });
  async function commands(call: () => Promise<unknown>): Promise<number> {
    await resetStats(lib.target, tag);
    await call();
    const s = await statsOf(lib.target, tag);
    expect(s.requests, JSON.stringify(s.byCommand)).toBe(1);
    return s.commands;
  }
  return { stats, clock, commands, ctx: (): Ctx => ({ redis, prefix, now: clock.now }) };
}
