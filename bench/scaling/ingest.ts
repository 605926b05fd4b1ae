/**
 * Issue 15 point 5 for queued ingest: one consumer batch (`consumeBatch`, what the queue
 * handler runs) by its longest Redis script (SLOWLOG) and its commands, at N = 10k / 100k / 1M
 * members already in the target: the current hour of a trending stream, a plain counter.
 *
 * Each batch is the worst a queue delivers to one target: 100 messages of 100 items (Queues'
 * largest batch), all for one stream or one counter, 10,000 distinct members (cut into apply
 * scripts of at most 1,000 entries for trending and counters since review 10, one library call
 * each; MAX_GROUP_ITEMS, 4,000, for presence), half of them already in the target and half new. The
 * consumer runs in Node against the local Upstash server with the service's tag, so its
 * commands count as the service's; the batch's stats script is included.
 *
 * Runnable alone: `node bench/run.ts --only=scaling-ingest --no-scenarios --no-rtt --no-cpu --no-jobs`.
 */
import { counterKeys } from "../../src/counters/keys.ts";
import * as ingest from "../../src/ingest/index.ts";
import type { RedisClient } from "../../src/redis/client.ts";
import { hourIndex } from "../../src/time.ts";
import { registryKeys, streamKeys } from "../../src/trending/keys.ts";
import { scriptProbe } from "./measure.ts";
import { zaddMembers } from "./trending.ts";
import type { ScalingInput, Timing } from "./types.ts";

const MESSAGES = 100;
const PER_MESSAGE = 100;
const SETTINGS: ingest.IngestSettings = { trendingRetentionHours: 50, presenceTimeoutSeconds: 300 };

/** 100 queue messages of 100 items each for one target; members: half of `existing`, half new. */
function batch(
  kind: "trending" | "counters",
  name: string,
  n: number,
  now: number,
  run: string,
): ingest.QueuedMessage[] {
  const out: ingest.QueuedMessage[] = [];
  for (let m = 0; m < MESSAGES; m++) {
    const items = Array.from({ length: PER_MESSAGE }, (_, i) => {
      const k = m * PER_MESSAGE + i;
      // even k: a member already there, spread over the set; odd k: a new one
      const member =
        k % 2 === 0 ? `${kind === "trending" ? "m" : "u"}${Math.floor((k * n) / 10_000)}` : `new-${run}-${k}`;
      return kind === "trending" ? { member, count: 1, at: now } : { member, by: 1 };
    });
    const [body] = ingest.toMessages({ kind, name, t: now, r: `bench-${run}` }, items);
    out.push({
      id: `${run}-${m}`,
      timestamp: new Date(now),
      attempts: 1,
      body,
      ack: () => undefined,
      retry: () => undefined,
    });
  }
  return out;
}

export async function ingestScaling(
  input: ScalingInput & { client: RedisClient },
): Promise<{ timings: Timing[]; notes: string[] }> {
  const { redis, prefix, log } = input;
  const probe = scriptProbe(input, "ingest");
  const registry = registryKeys(prefix);
  const consume = async (messages: ingest.QueuedMessage[]) => {
    const stats = await ingest.consumeBatch({ redis: input.client, prefix, now: Date.now() }, messages, SETTINGS);
    return { status: stats.retried > 0 || stats.deadLettered > 0 ? 500 : 200, json: stats };
  };
  const describe = (j: any) => `applied=${j?.applied} events=${j?.events} retried=${j?.retried}`;

  // the scripts once, unmeasured, on small targets: no NOSCRIPT fallback in the figures
  const now0 = Date.now();
  await consume(batch("trending", "scale-ing-warm", 10, now0, `warm-t-${now0}`));
  await consume(batch("counters", "scale-ing-warm", 10, now0, `warm-c-${now0}`));

  for (const n of input.sizes) {
    const stream = `scale-ing-${n}`;
    const counter = `scale-ing-c-${n}`;
    const now = Date.now();
    const keys = streamKeys(prefix, stream);
    const hour = keys.bucket(hourIndex(now));
    log(`ingest N=${n}: loading the current hour and a counter with N members`);
    await zaddMembers(redis, hour, n, 0);
    await redis.call("EXPIRE", hour, 50 * 3600);
    for (let from = 0; from < n; from += 10_000) {
      const args: (string | number)[] = ["ZADD", counterKeys.plain(prefix, counter)];
      for (let i = from; i < Math.min(n, from + 10_000); i++) args.push(1 + (i % 1000), `u${i}`);
      await redis.call(...args);
    }
    await probe.measure(
      n,
      "ingest (N members in the target): consumer batch: 100 × 100 events, one stream (5,000 known + 5,000 new members)",
      "",
      {
        describe,
        task: () => consume(batch("trending", stream, n, now, `t-${n}-${now}`)),
      },
    );
    await probe.measure(
      n,
      "ingest (N members in the target): consumer batch: 100 × 100 increments, one counter (5,000 known + 5,000 new members)",
      "",
      {
        describe,
        task: () => consume(batch("counters", counter, n, now, `c-${n}-${now}`)),
      },
    );
    await redis.call("UNLINK", hour, keys.cuts, keys.scratch, counterKeys.plain(prefix, counter));
    for (const r of [registry.names, registry.seen, registry.dirty]) await redis.call("ZREM", r, stream);
    await redis.call("ZREM", counterKeys.names(prefix), counter);
  }
  probe.print();
  return {
    timings: probe.timings(),
    notes: [
      "Queued ingest (`--only=scaling-ingest`): one consumer batch of the largest size Queues delivers (100 messages × 100 items), all for one target, 10,000 distinct members (the most one apply script takes); N = members already in the stream's current hour / the counter. The rows count every script of the batch (the apply script and the status script).",
    ],
  };
}
