/**
 * Review (adversarial): the queue consumer's acknowledgement against its Redis commit, under real
 * network faults (dev/fault-proxy.ts in front of the local Upstash server): a group whose script
 * ran but whose answer was lost, reset or replaced by a 503 is retried, and its redelivery must
 * be found applied. Messages are made by the producer's own code (acceptItems, toMessages), fed
 * as Queues would: in any order, in mixed batches, some twice, until every one is acked.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFaultProxy, type Fault, type FaultProxy } from "../../dev/fault-proxy.ts";
import * as counters from "../../src/counters/index.ts";
import { NotFoundError } from "../../src/errors.ts";
import { acceptItems, consumeBatch, toMessages, type QueuedMessage } from "../../src/ingest/index.ts";
import { createRedis, type RedisClient } from "../../src/redis/client.ts";
import { libraryTest } from "../helpers/library.ts";
import { mulberry32 } from "../../dev/prng.ts";

const lib = libraryTest("review-ingest");
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const settings = { trendingRetentionHours: 50, presenceTimeoutSeconds: 300 };
let proxy: FaultProxy;

beforeAll(async () => {
  proxy = await startFaultProxy({ target: lib.target.url });
});
afterAll(async () => {
  await proxy?.close();
});

/** A deterministic generator (mulberry32), so a failing schedule can be replayed. */
const prng = mulberry32;

interface Queued {
  id: string;
  body: unknown;
  acked: boolean;
}

/** Hands `list` to the consumer as one batch; records acks (retries stay un-acked). */
async function deliver(prefix: string, redis: RedisClient, list: Queued[], now: number) {
  const messages: QueuedMessage[] = list.map((q) => ({
    id: q.id,
    timestamp: new Date(now),
    attempts: 1,
    body: q.body,
    ack: () => {
      q.acked = true;
    },
    retry: () => undefined,
  }));
  return consumeBatch({ redis, prefix, now }, messages, settings, { onStatsError: () => undefined });
}

async function scoreOf(prefix: string, counter: string, member: string): Promise<number> {
  try {
    return (await counters.memberOf({ redis: lib.redis, prefix, now: T0 }, counter, member)).score;
  } catch (error) {
    if (error instanceof NotFoundError) return 0;
    throw error;
  }
}

describe("review: consumer ack vs commit under network faults", () => {
  const faults: Fault[] = [{ kind: "lose-response" }, { kind: "reset" }, { kind: "status", status: 503 }];

  for (const fault of faults) {
    it(`holds (${fault.kind === "status" ? "503" : fault.kind}, every script): nothing is acked that was not applied, and the redelivery counts once`, async () => {
      const ctx = lib.ctx(T0, `rv-fault-${fault.kind}`);
      const accepted = await acceptItems("counters", "c", [{ member: "m", by: 7 }], ctx.prefix, T0, settings);
      const queued: Queued[] = toMessages({ kind: "counters", name: "c", t: T0, r: "req-1" }, accepted).map((body) => ({
        id: "q1",
        body,
        acked: false,
      }));
      // warm the apply script, so the faulted request is the EVALSHA that runs it (not a NOSCRIPT)
      const warm = await acceptItems("counters", "warm", [{ member: "w" }], ctx.prefix, T0, settings);
      await deliver(
        ctx.prefix,
        lib.redis,
        [{ id: "w", body: toMessages({ kind: "counters", name: "warm", t: T0, r: "w" }, warm)[0], acked: false }],
        T0,
      );
      const faulty = createRedis({ url: proxy.url, token: lib.target.token, timeoutMs: 5000 });
      proxy.set({ fault, times: 1 });
      const first = await deliver(ctx.prefix, faulty, queued, T0);
      proxy.heal();
      expect(first).toMatchObject({ applied: 0, retried: 1 });
      expect(queued[0]?.acked).toBe(false);
      // lose-response: applied upstream; reset and 503: the proxy never forwarded it
      expect(await scoreOf(ctx.prefix, "c", "m")).toBe(fault.kind === "lose-response" ? 7 : 0);
      const again = await deliver(ctx.prefix, faulty, queued, T0 + 5000);
      expect(again.applied + again.duplicates).toBe(1);
      expect(queued[0]?.acked).toBe(true);
      expect(await scoreOf(ctx.prefix, "c", "m")).toBe(7);
    });
  }

  it("holds: 40 requests over 3 counters, random batches with duplicates, 35 % of Redis calls faulted: every total exact", async () => {
    const ctx = lib.ctx(T0, "rv-fault-mix");
    const rnd = prng(20261126);
    const expected = new Map<string, number>();
    const queued: Queued[] = [];
    for (let r = 0; r < 40; r++) {
      const counter = `c${r % 3}`;
      const items = Array.from({ length: 1 + Math.floor(rnd() * 20) }, () => ({
        member: `m${Math.floor(rnd() * 6)}`,
        by: Math.floor(rnd() * 9) - 2,
      }));
      for (const item of items) {
        const k = `${counter}/${item.member}`;
        expected.set(k, (expected.get(k) ?? 0) + item.by);
      }
      const accepted = await acceptItems("counters", counter, items, ctx.prefix, T0, settings);
      for (const body of toMessages({ kind: "counters", name: counter, t: T0, r: `req-${r}` }, accepted))
        queued.push({ id: `q${queued.length}`, body, acked: false });
    }
    const faulty = createRedis({ url: proxy.url, token: lib.target.token, timeoutMs: 5000 });
    const kinds: Fault[] = [{ kind: "lose-response" }, { kind: "reset" }, { kind: "status", status: 502 }];
    let now = T0;
    for (let round = 0; round < 60 && queued.some((q) => !q.acked); round++) {
      // Queues redelivers what was not acked, in any order, sometimes an acked one again (a lost ack)
      const pending = queued.filter((q) => !q.acked || rnd() < 0.05);
      const batch = pending.sort(() => rnd() - 0.5).slice(0, 1 + Math.floor(rnd() * 12));
      proxy.set({ fault: kinds[Math.floor(rnd() * kinds.length)] as Fault, rate: 0.35 });
      now += 1000;
      await deliver(ctx.prefix, faulty, batch, now);
    }
    proxy.heal();
    expect(queued.filter((q) => !q.acked)).toEqual([]);
    expect(Object.keys(proxy.stats().faulted).length).toBeGreaterThan(0);
    // everything once more, healthy: all duplicates
    const replay = await deliver(ctx.prefix, lib.redis, queued, now + 1000);
    expect(replay).toMatchObject({ applied: 0, duplicates: queued.length });
    for (const [k, by] of expected) {
      const [counter, member] = k.split("/") as [string, string];
      expect(await scoreOf(ctx.prefix, counter, member), k).toBe(by);
    }
  });
});
