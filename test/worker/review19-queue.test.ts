/**
 * Review 19: copies of one keyed request (a request with an Idempotency-Key and its client's
 * retry) where one copy can no longer apply and the other still can. Each item is stamped at its
 * request's accept time (an event without `at`, a counter bucket's time), so the first request's
 * copy can age out (a bucket past its `ttl`, an hour past the trending retention) while the
 * retry's, stamped later, is still fresh. Review 17 matched copies within the apply path and
 * within the dead-letter (too old) path; these tests cross the two, in one batch and in two. The
 * producer is the real route (test/helpers/ingest.ts records what it sends), the consumer the
 * Worker's `consumeIngest` (or `consumeBatch` on a client of the same real Redis whose one
 * target's scripts arrive later), reads go through the routes against the local Upstash server.
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { consumeBatch } from "../../src/ingest/consume.ts";
import type { RedisClient } from "../../src/redis/client.ts";
import {
  createIngestApi,
  delayedFor,
  failingFor,
  INGEST_SETTINGS,
  toDlq,
  type IngestApi,
  type Sent,
} from "../helpers/ingest.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";

const MINUTE = 60_000;
const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const track = cleanedUpAfterAll<IngestApi>();
const queued = (label: string) => track(createIngestApi({ label, start: T0 }));

/** An hour bucket increment kept an hour after its hour ends: stamped 12:30, it cannot apply after 14:00. */
const INCR = { items: [{ member: "a", by: 5, period: "hour", ttl: 3600 }] };
const keyed = (api: IngestApi, key: string) => ({ headers: { ...api.asyncHeaders, "idempotency-key": key } });

/** The member's score over the day's hour buckets (the union of 00:00 … 23:00), 0 when none. */
async function hourScore(api: IngestApi, counter = "c") {
  const res = await api.get(
    `/v1/counters/${counter}/top?n=10&period=hour&from=2026-11-22T00:00:00Z&to=2026-11-22T23:00:00Z`,
  );
  expect(res.status).toBe(200);
  return (res.body.items as { member: string; score: number }[]).find((i) => i.member === "a")?.score ?? 0;
}

/**
 * The request queued at 12:30 and its client's retry (same key, same body) at 13:30; the
 * consumer is behind: at 14:10 the first copy's bucket (12:00, ttl 1 h) has expired, the retry's
 * (13:00) has not.
 */
async function requestAndRetry(api: IngestApi, key: string): Promise<[Sent, Sent]> {
  expect((await api.post("/v1/counters/c/incr", INCR, keyed(api, key))).status).toBe(202);
  api.advance(HOUR);
  expect((await api.post("/v1/counters/c/incr", INCR, keyed(api, key))).status).toBe(202);
  api.advance(40 * MINUTE);
  const [first, retry] = api.queue.sent;
  expect(first?.body.d).toBeDefined();
  expect(retry?.body.d).toBe(first?.body.d);
  return [first as Sent, retry as Sent];
}

/**
 * Delivers `messages` as one batch to consumeBatch on `redis` (a client of the api's real Redis),
 * with the api's recording dead-letter queue; returns the batch's figures and acks.
 */
async function consumeOn(api: IngestApi, messages: Sent[], redis: RedisClient, attempts: number | number[] = 1) {
  const batch = createMessageBatch(
    "edgestats-ingest",
    messages.map((m, i) => ({
      id: m.id,
      timestamp: m.timestamp,
      attempts: typeof attempts === "number" ? attempts : (attempts[i] ?? 1),
      body: m.body,
    })),
  );
  const stats = await consumeBatch({ redis, prefix: api.prefix, now: api.now }, batch.messages, INGEST_SETTINGS, {
    deadLetter: toDlq(api),
  });
  return { ...(await getQueueResult(batch, createExecutionContext())), stats };
}

/** The counter's scripts reach Redis 50 ms after the batch's others (a slower link): the look-up runs first. */
const slowCounter = (api: IngestApi) => delayedFor(api, ":counters:c", 50);

describe("review 19: a keyed request's stale copy and its fresh retry in one batch", () => {
  // Severity: medium. The first copy can no longer apply (its bucket expired while queued) and
  // takes the look-up path (`ingest.applied`), its retry the apply path; the two run concurrently
  // and nothing matches a probe with an applying copy (review 17 matched probes with probes and
  // applied copies with applied copies). The look-up does not find the request applied (it is
  // sent before, or runs before, the retry's script), so the first copy is dead-lettered while the
  // retry applies: one acknowledged request, counted once and held in the dead-letter queue;
  // re-POSTed as docs/ingest.md advises, it counts twice (and `deadLettered` reports a loss that
  // is none). Fix: after the batch is read, a probe whose dedupe id (or canonical id) is an entry's
  // of the apply path is that entry's copy: settled with it (acked as a duplicate once it is
  // applied or found applied; retried with it on a storage error; acked when it is dead-lettered
  // on a bound), and not looked up at all (one round trip fewer, none more).
  // Fixed in review 19 (consume.ts: `lookUps`, the probes with no copy applying).
  it("the stale first copy is acked as a duplicate, not dead-lettered; the retry applies once", async () => {
    const q = queued("r19-cross-first");
    const [first, retry] = await requestAndRetry(q, "r19-a");
    const redis = slowCounter(q);
    const res = await consumeOn(q, [first, retry], redis);
    // the counter's apply script and the stats script: no look-up (before: the look-up, and
    // ingest.markParts after the dead-letter send; 4)
    expect(redis.scripts).toBe(2);
    expect(await hourScore(q)).toBe(5);
    expect(q.dlq.sent).toEqual([]);
    expect(res.explicitAcks.sort()).toEqual([first.id, retry.id].sort());
    expect(res.retryMessages).toEqual([]);
    expect(res.stats).toMatchObject({ applied: 1, duplicates: 1, deadLettered: 0, retried: 0 });
  });

  // Severity: medium (same bug): the retry's copy handed over first in the batch. Fixed with it.
  it("the same with the retry first in the batch", async () => {
    const q = queued("r19-cross-retry");
    const [first, retry] = await requestAndRetry(q, "r19-b");
    const res = await consumeOn(q, [retry, first], slowCounter(q));
    expect(await hourScore(q)).toBe(5);
    expect(q.dlq.sent).toEqual([]);
    expect(res.explicitAcks.sort()).toEqual([first.id, retry.id].sort());
    expect(res.stats).toMatchObject({ applied: 1, duplicates: 1, deadLettered: 0 });
  });

  // Severity: medium (same bug, trending): an event without `at` is stamped with its request's
  // time; the first request's hour left the 50 h retention while queued, the retry's 2 h later
  // did not. The retry's script reaches Redis 50 ms after the look-up (a slower link for that
  // stream): the look-up cannot find it applied, whatever the scheduling. Fixed with it.
  it("trending, the retry's script slower than the look-up: the first copy is not dead-lettered", async () => {
    const q = queued("r19-cross-trending");
    const body = { events: [{ member: "a", count: 3 }] };
    expect((await q.post("/v1/trending/s/events", body, keyed(q, "r19-t"))).status).toBe(202);
    q.advance(2 * HOUR);
    expect((await q.post("/v1/trending/s/events", body, keyed(q, "r19-t"))).status).toBe(202);
    q.advance(49 * HOUR);
    const res = await consumeOn(q, q.queue.sent, delayedFor(q, ":trending:s", 50));
    // the retry's event (14:30, 49 h ago) counted once; the first copy's hour (12:00) has left the retention
    expect((await q.get("/v1/trending/s/members/a?window=50h")).body.count).toBe(3);
    expect(q.dlq.sent).toEqual([]);
    expect(res.explicitAcks).toHaveLength(2);
    expect(res.stats).toMatchObject({ applied: 1, duplicates: 1, deadLettered: 0 });
  });

  // Severity: low (same bug, no double count): the retry's group meets a storage error and is
  // retried; the stale copy, looked up meanwhile, is dead-lettered and its ids marked applied, so
  // the retry's redelivery is acked as a duplicate. The request is then counted once, but only in
  // the dead-letter queue, as a record the synchronous route refuses too (its bucket past its ttl),
  // while a fresh copy of it could have applied. Fixed with the above: the stale copy is retried
  // with the copy it goes with. Fixed with it.
  it("the fresh retry's storage error retries both copies; their redelivery applies the request once, nothing dead-lettered", async () => {
    const q = queued("r19-cross-error");
    const [first, retry] = await requestAndRetry(q, "r19-e");
    const failed = await consumeOn(q, [first, retry], failingFor(q, ":counters:c"));
    expect(q.dlq.sent).toEqual([]);
    expect(failed.retryMessages.map((r) => r.msgId).sort()).toEqual([first.id, retry.id].sort());
    q.advance(2000);
    const again = await q.deliver([first, retry], { attempts: 2 });
    expect(again.stats).toMatchObject({ applied: 1, duplicates: 1, deadLettered: 0 });
    expect(q.dlq.sent).toEqual([]);
    expect(await hourScore(q)).toBe(5);
  });
});

describe("review 19: copies with different deliveries left", () => {
  // Severity: low. Two fresh copies of a keyed request in one batch, the first on its last
  // delivery (attempts 11 of max_retries 10), its client's retry on its first; their group meets
  // a storage error. The first is asked once more (review 17's last chance), not found, and
  // dead-lettered with the storage error; the retry, handed back, applies on its redelivery: the
  // request applied and in the dead-letter queue, counted twice once re-POSTed. Fix: when the
  // copy applied is on its last delivery and another copy has deliveries left, that copy carries
  // the request (handed back) and the one on its last delivery is acked as its duplicate; no
  // command more. Fixed in review 19 (consume.ts: `carrier`).
  it("a last delivery's storage error with a copy that has deliveries left: the copy carries the request, nothing dead-lettered", async () => {
    const q = queued("r19-last-copy");
    const body = { items: [{ member: "a", by: 5 }] };
    expect((await q.post("/v1/counters/c/incr", body, keyed(q, "r19-l"))).status).toBe(202);
    q.advance(MINUTE);
    expect((await q.post("/v1/counters/c/incr", body, keyed(q, "r19-l"))).status).toBe(202);
    const [first, retry] = q.queue.sent as [Sent, Sent];
    const failed = await consumeOn(q, [first, retry], failingFor(q, ":counters:c"), [11, 1]);
    expect(q.dlq.sent).toEqual([]);
    expect(failed.retryMessages.map((r) => r.msgId)).toEqual([retry.id]);
    expect(failed.explicitAcks).toEqual([first.id]);
    expect(failed.stats).toMatchObject({ retried: 1, duplicates: 1, deadLettered: 0 });
    q.advance(2000);
    const again = await q.deliver([retry], { attempts: 2 });
    expect(again.stats).toMatchObject({ applied: 1, deadLettered: 0 });
    expect(q.dlq.sent).toEqual([]);
    expect((await q.get("/v1/counters/c/members/a")).body.score).toBe(5);
  });
});

describe("review 19: through the Worker's consumer", () => {
  it("holds: both copies, in either order, on the Worker's own client: applied once, nothing dead-lettered", async () => {
    for (const order of ["first", "retry"] as const) {
      const q = queued(`r19-worker-${order}`);
      const [first, retry] = await requestAndRetry(q, `r19-w-${order}`);
      const res = await q.deliver(order === "first" ? [first, retry] : [retry, first]);
      expect(res.stats).toMatchObject({ applied: 1, duplicates: 1, deadLettered: 0, retried: 0 });
      expect(q.dlq.sent).toEqual([]);
      expect(await hourScore(q)).toBe(5);
      // and the batch delivered again (its acks lost): nothing more
      q.advance(2000);
      const again = await q.deliver([first, retry], { attempts: 2 });
      expect(again.stats).toMatchObject({ applied: 0, duplicates: 2, deadLettered: 0 });
      expect(q.dlq.sent).toEqual([]);
      expect(await hourScore(q)).toBe(5);
    }
  });

  it("holds: a stale copy whose fresh copy passes a counter's score bound: the request is dead-lettered once (the fresh copy)", async () => {
    const q = queued("r19-worker-bound");
    expect((await q.post("/v1/counters/c/incr", INCR, keyed(q, "r19-bound"))).status).toBe(202);
    q.advance(HOUR);
    // the 13:00 bucket's member filled to exactly 1e15, synchronously (1,000 × 1e12)
    const full = { items: Array.from({ length: 1000 }, () => ({ member: "a", by: 1e12, period: "hour", ttl: 3600 })) };
    expect((await q.post("/v1/counters/c/incr", full)).status).toBe(200);
    expect((await q.post("/v1/counters/c/incr", INCR, keyed(q, "r19-bound"))).status).toBe(202);
    q.advance(40 * MINUTE);
    const [first, retry] = q.queue.sent as [Sent, Sent];
    const res = await q.deliver([first, retry]);
    expect(res.stats).toMatchObject({ applied: 0, duplicates: 1, deadLettered: 1 });
    expect(q.dlq.sent.map((m) => m.body.messageId)).toEqual([retry.id]);
    expect(q.dlq.sent[0]?.body.reason).toMatch(/±1e15/);
    expect(await hourScore(q)).toBe(1e15);
  });
});

describe("review 19: the same copies in two batches", () => {
  it("holds: the retry applied first, the stale first copy in a later batch is found applied and acked", async () => {
    const q = queued("r19-two-retry-first");
    const [first, retry] = await requestAndRetry(q, "r19-c");
    const one = await q.deliver([retry]);
    expect(one.stats).toMatchObject({ applied: 1 });
    q.advance(MINUTE);
    const two = await q.deliver([first]);
    expect(two.explicitAcks).toEqual([first.id]);
    expect(two.stats).toMatchObject({ applied: 0, duplicates: 1, deadLettered: 0 });
    expect(q.dlq.sent).toEqual([]);
    expect(await hourScore(q)).toBe(5);
  });

  // The request is in the dead-letter queue once (its first copy, whole: `messageId` and
  // `message` as queued), and the retry in a later batch is acked as that request, not applied:
  // counted once after the operator's re-POST, never twice. (Applying the retry instead would
  // count it twice once the record already sent is re-POSTed.)
  it("holds: the stale first copy dead-lettered first, the fresh retry in a later batch is acked, not applied", async () => {
    const q = queued("r19-two-first-first");
    const [first, retry] = await requestAndRetry(q, "r19-d");
    const one = await q.deliver([first]);
    expect(one.stats).toMatchObject({ deadLettered: 1 });
    expect(q.dlq.sent.map((m) => m.body)).toEqual([
      { reason: expect.stringMatching(/ttl/), messageId: first.id, message: first.body },
    ]);
    q.advance(MINUTE);
    const two = await q.deliver([retry]);
    expect(two.explicitAcks).toEqual([retry.id]);
    expect(two.stats).toMatchObject({ applied: 0, duplicates: 1, deadLettered: 0 });
    expect(q.dlq.sent).toHaveLength(1);
    expect(await hourScore(q)).toBe(0);
  });
});
