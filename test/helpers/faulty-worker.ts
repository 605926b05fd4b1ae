/**
 * The real Worker under `wrangler dev` talking to Redis through dev/fault-proxy.ts, started before
 * the file's tests and stopped after them, with a caller that sends GETs with the read key and
 * everything else with the ingest key (the setup test/redis/faults-worker.test.ts and
 * review16-worker.test.ts each had).
 */
import { afterAll, beforeAll } from "vitest";
import { startFaultyStack, startWorkerBehind, type FaultyStack } from "../../dev/soak.ts";
import type { WranglerDev } from "../../dev/wrangler.ts";

export interface Answer {
  status: number;
  /** The JSON answer, as the tests read it. */
  body: any;
  headers: Headers;
  /** Wall time of the call, ms. */
  ms: number;
}

export function faultyWorkerForTests(label: string, redisTimeoutMs: number) {
  const keys = {
    ingest: `${label}-ingest-key-0001`,
    read: `${label}-read-key-00001`,
    admin: `${label}-admin-key-0001`,
  };
  let stack: FaultyStack | undefined;
  let worker: WranglerDev | undefined;
  beforeAll(async () => {
    stack = await startFaultyStack(`${label}-token`);
    worker = await startWorkerBehind(stack, { keys, prefix: label, redisTimeoutMs });
  }, 90_000);
  afterAll(async () => {
    await worker?.stop();
    await stack?.stop();
  }, 30_000);
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("the Worker and its stack start in beforeAll");
    return value;
  };
  return {
    keys,
    get stack(): FaultyStack {
      return started(stack);
    },
    get url(): string {
      return started(worker).url;
    },
    async call(method: string, path: string, body?: unknown, idem?: string): Promise<Answer> {
      const start = performance.now();
      const res = await fetch(`${started(worker).url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${method === "GET" ? keys.read : keys.ingest}`,
          "content-type": "application/json",
          ...(idem ? { "idempotency-key": idem } : {}),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      return {
        status: res.status,
        body: text ? JSON.parse(text) : undefined,
        headers: res.headers,
        ms: performance.now() - start,
      };
    },
  };
}
