/**
 * The Worker under `wrangler dev` in node tests (test/browser, test/redis): its vars, and the
 * queued-ingest setup that test/browser/queues.test.ts and review 14's companion both use, the
 * project's wrangler.toml as it is (its [build], queues and consumer settings: producer, consumer,
 * max_retries 10, dead-letter queue) over dev/fault-proxy.ts in front of the local Upstash server.
 * Each file had its own copy of the vars, the start and stop, the status read and the polling.
 */
import { afterAll, beforeAll } from "vitest";
import { startFaultProxy, type FaultProxy } from "../../dev/fault-proxy.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bundleWorker, startWranglerDev, type WranglerDev } from "../../dev/wrangler.ts";
import { deleteUnder, requireTarget, uniquePrefix } from "./upstash-rest.ts";

export interface DevKeys {
  /** INGEST_KEYS as wrangler dev gets them (a comma-separated list for more than one). */
  ingest: string;
  read: string;
  admin: string;
}

/** The vars a Worker under wrangler dev needs: Redis at `url` with `token`, `keys`, `prefix`, and `extra`. */
export function workerVars(
  redis: { url: string; token: string },
  keys: DevKeys,
  prefix: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    UPSTASH_REDIS_REST_URL: redis.url,
    UPSTASH_REDIS_REST_TOKEN: redis.token,
    INGEST_KEYS: keys.ingest,
    READ_KEYS: keys.read,
    ADMIN_KEYS: keys.admin,
    KEY_PREFIX: prefix,
    ...extra,
  };
}

export interface IngestStatus {
  applied: number;
  retried: number;
  deadLettered: number;
  duplicates: number;
  events: number;
}

export interface QueuedDev {
  /** Set once beforeAll has started them. */
  wrangler: WranglerDev | undefined;
  proxy: FaultProxy | undefined;
  prefix: string;
  /** The consumer's own counters (GET /v1/ingest/status with the admin key). */
  status(): Promise<IngestStatus>;
}

/**
 * Starts (beforeAll) dev/fault-proxy.ts before the local Upstash server and wrangler dev on it,
 * under a key prefix of `label` whose requests the server counts under their own tag; stops both
 * and deletes the prefix's keys afterAll. Only the vars differ from wrangler.toml: `keys`, the
 * prefix, Redis through the proxy, and no trending cache (a read right after the consumer applied
 * must see it).
 */
export function queuedDev(label: string, keys: DevKeys): QueuedDev {
  const target = requireTarget(process.env.EDGESTATS_UPSTASH_URL, process.env.EDGESTATS_UPSTASH_TOKEN);
  const prefix = uniquePrefix(label);
  const tag = prefix.replace(/\./g, "_");
  const dev: QueuedDev = {
    wrangler: undefined,
    proxy: undefined,
    prefix,
    async status() {
      const res = await fetch(`${dev.wrangler!.url}/v1/ingest/status`, {
        headers: { authorization: `Bearer ${keys.admin}` },
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`status: ${res.status} ${text}`);
      return JSON.parse(text) as IngestStatus;
    },
  };
  beforeAll(async () => {
    dev.proxy = await startFaultProxy({ target: target.url });
    const redis = { url: dev.proxy.url, token: `${target.token}.${tag}` };
    dev.wrangler = await startWranglerDev({ vars: workerVars(redis, keys, prefix, { TRENDING_CACHE_SECONDS: "0" }) });
  }, 180_000);
  afterAll(async () => {
    await dev.wrangler?.stop();
    await dev.proxy?.close();
    await deleteUnder(target, prefix);
  });
  return dev;
}

/** The Worker of `bundledDev`: its URL once beforeAll has started it. */
export interface BundledDev {
  readonly url: string;
}

/**
 * The project's Worker bundled once (dev/wrangler.ts `bundleWorker`, into a scratch folder) and
 * served as it is by wrangler dev with `vars`, started in beforeAll and stopped (its folder
 * removed) afterAll: edits to the sources cannot reload it mid-file. test/redis/client.test.ts and
 * review19-client each had this setup.
 */
export function bundledDev(vars: Record<string, string>): BundledDev {
  const bundleDir = mkdtempSync(join(tmpdir(), "edgestats-bundle-"));
  let wrangler: WranglerDev | undefined;
  beforeAll(async () => {
    wrangler = await startWranglerDev({ script: bundleWorker(bundleDir), vars });
  }, 180_000);
  afterAll(async () => {
    await wrangler?.stop();
    rmSync(bundleDir, { recursive: true, force: true });
  }, 30_000);
  return {
    get url() {
      if (!wrangler) throw new Error("the Worker is not started yet (read its url inside a test)");
      return wrangler.url;
    },
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `read` until `done` holds, at most `timeoutMs`; throws with the last value otherwise. */
export async function until<T>(
  what: string,
  read: () => Promise<T>,
  done: (v: T) => boolean,
  timeoutMs = 40_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`${what}: not reached within ${timeoutMs} ms; last: ${JSON.stringify(value)}`);
    await sleep(200);
  }
}
