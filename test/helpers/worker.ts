/**
 * Drives the Hono app inside workerd the way the honojs examples do:
 * `app.request(path, init, env)`, with a fake clock and a key prefix of its own.
 */
import { env as baseEnv } from "cloudflare:workers";
import { afterAll } from "vitest";
import { createApp } from "../../functions/app.ts";
import { TEST_KEYS } from "./keys.ts";
import {
  deleteUnder,
  keysUnder,
  requireTarget,
  resetStats,
  statsOf,
  uniquePrefix,
  type TagStats,
} from "./upstash-rest.ts";

export { TEST_KEYS };
export type KeyKind = keyof typeof TEST_KEYS | "none" | string;

export interface TestApiOptions {
  /** Label for the key prefix. */
  label: string;
  /** @default 2026-11-22T12:30:00Z */
  start?: number | string;
  /** Extra or overridden bindings (config vars). */
  vars?: Record<string, string>;
}

export interface TestResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export function createTestApi(options: TestApiOptions) {
  const target = requireTarget(baseEnv.UPSTASH_REDIS_REST_URL, baseEnv.UPSTASH_REDIS_REST_TOKEN);
  const prefix = uniquePrefix(options.label);
  // The local Upstash server counts requests per token tag: this prefix is the tag.
  const tag = prefix.replace(/\./g, "_");
  let now =
    typeof options.start === "string" ? Date.parse(options.start) : (options.start ?? Date.UTC(2026, 10, 22, 12, 30));
  const app = createApp({ now: () => now });
  const env = {
    ...baseEnv,
    KEY_PREFIX: prefix,
    UPSTASH_REDIS_REST_TOKEN: `${target.token}.${tag}`,
    ...options.vars,
  } as unknown as Env;

  async function call<T = any>(
    method: string,
    path: string,
    body?: unknown,
    init: { key?: KeyKind; headers?: Record<string, string>; raw?: BodyInit } = {},
  ): Promise<TestResponse<T>> {
    const kind = init.key ?? (method === "GET" ? "read" : "ingest");
    const key = kind in TEST_KEYS ? TEST_KEYS[kind as keyof typeof TEST_KEYS] : kind;
    const headers: Record<string, string> = { ...init.headers };
    if (kind !== "none") headers.authorization = `Bearer ${key}`;
    let payload: BodyInit | undefined = init.raw;
    if (body !== undefined) {
      payload = JSON.stringify(body);
      headers["content-type"] ??= "application/json";
    }
    const res = await app.request(path, { method, headers, ...(payload !== undefined ? { body: payload } : {}) }, env);
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON (HTML pages); keep the text
    }
    return { status: res.status, body: parsed as T, headers: res.headers };
  }

  return {
    app,
    env,
    prefix,
    target,
    get now() {
      return now;
    },
    /** Moves the fake clock. */
    setNow(value: number | string) {
      now = typeof value === "string" ? Date.parse(value) : value;
    },
    advance(ms: number) {
      now += ms;
    },
    get: <T = any>(path: string, init?: { key?: KeyKind; headers?: Record<string, string> }) =>
      call<T>("GET", path, undefined, init),
    post: <T = any>(
      path: string,
      body?: unknown,
      init?: { key?: KeyKind; headers?: Record<string, string>; raw?: BodyInit },
    ) => call<T>("POST", path, body, init),
    put: <T = any>(path: string, body?: unknown, init?: { key?: KeyKind; headers?: Record<string, string> }) =>
      call<T>("PUT", path, body, init),
    del: <T = any>(path: string, init?: { key?: KeyKind; headers?: Record<string, string> }) =>
      call<T>("DELETE", path, undefined, init),
    call,
    /** Every Redis key this test api wrote. */
    keys: () => keysUnder(target, prefix),
    cleanup: () => deleteUnder(target, prefix),
    /** Requests/commands the local Upstash server served for this api since the last reset. */
    stats: (): Promise<TagStats> => statsOf(target, tag),
    resetStats: () => resetStats(target, tag),
    /** Runs `fn` and returns how many Redis HTTP round trips and commands it cost. */
    async cost<T>(fn: () => Promise<T>): Promise<{ result: T; requests: number; commands: number }> {
      await resetStats(target, tag);
      const result = await fn();
      const s = await statsOf(target, tag);
      return { result, requests: s.requests, commands: s.commands };
    },
  };
}

export type TestApi = ReturnType<typeof createTestApi>;

/**
 * For files that make a test api per test: `const track = cleanedUpAfterAll<TestApi>()`, then
 * `track(createTestApi(...))` returns the api and deletes its keys after the file's tests.
 */
export function cleanedUpAfterAll<A extends { cleanup(): Promise<unknown> }>(): (api: A) => A {
  const apis: A[] = [];
  afterAll(async () => {
    for (const api of apis) await api.cleanup();
  });
  return (api) => {
    apis.push(api);
    return api;
  };
}
