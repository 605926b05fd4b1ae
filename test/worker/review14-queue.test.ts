/**
 * Review 14: queued ingest's dead-letter queue. The producer is the real route (test/helpers/ingest.ts
 * records what it sends); the consumer is the Worker's `consumeIngest` fed cloudflare:test message
 * batches against the real local Upstash server; the dead-letter producer is wrangler.toml's real
 * INGEST_DLQ binding (miniflare's queue broker, with its size limits), observed by a pass-through
 * that keeps what the binding accepted. A storage outage is a real one: an Upstash URL nobody
 * listens on. A confirmed bug is an `it.fails` asserting the right behaviour, with its severity
 * and the suggested fix above it.
 */
import { createExecutionContext, getQueueResult } from "cloudflare:test";
import { env as workerEnv } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { consumeBatch } from "../../src/ingest/consume.ts";
import { MAX_MESSAGE_BYTES, MAX_SEND_BYTES, MAX_SEND_MESSAGES } from "../../src/ingest/message.ts";
import { command } from "../helpers/upstash-rest.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";
import { batchOf, createIngestApi, deliverBatch as deliver, failingFor, type IngestApi } from "../helpers/ingest.ts";

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const track = cleanedUpAfterAll<IngestApi>();

/** What the real INGEST_DLQ binding accepted (bodies of the messages of each resolved sendBatch). */
interface RealDlq {
  accepted: any[];
  refused: string[];
  /** Each sendBatch's message count and JSON bytes of its bodies, as Queues measures a batch. */
  sends: { messages: number; bytes: number }[];
}

/** An ingest api whose INGEST_DLQ is wrangler.toml's real binding, behind a pass-through that keeps what it accepted. */
function newApi(label: string): IngestApi & { realDlq: RealDlq } {
  const api = track(createIngestApi({ label, start: T0 }));
  const real = (workerEnv as unknown as { INGEST_DLQ: Queue<unknown> }).INGEST_DLQ;
  const realDlq: RealDlq = { accepted: [], refused: [], sends: [] };
  (api.env as unknown as Record<string, unknown>).INGEST_DLQ = {
    async send(body: unknown) {
      await real.send(body);
      realDlq.accepted.push(body);
    },
    async sendBatch(messages: Iterable<MessageSendRequest<unknown>>) {
      const list = [...messages];
      realDlq.sends.push({
        messages: list.length,
        bytes: list.reduce((n, m) => n + new TextEncoder().encode(JSON.stringify(m.body)).length, 0),
      });
      try {
        await real.sendBatch(list);
      } catch (error) {
        realDlq.refused.push(error instanceof Error ? error.message : String(error));
        throw error;
      }
      realDlq.accepted.push(...list.map((m) => m.body));
    },
  };
  return Object.assign(api, { realDlq });
}

/** The api's env with Upstash unreachable (nothing listens on port 9): every script fails as in an outage. */
const down = (api: IngestApi) => ({ ...api.env, UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9" }) as unknown as Env;

const async = (api: IngestApi) => ({ headers: api.asyncHeaders });

async function topOf(api: IngestApi, stream: string) {
  const top = await api.get(`/v1/trending/${stream}/top?n=100&window=24h`);
  expect(top.status).toBe(200);
  return Object.fromEntries(top.body.items.map((i: any) => [i.member, i.count]));
}

/** A trending request with one event 45 h old (it leaves the 50 h retention 10 h later) and one fresh. */
const halfStale = {
  events: [
    { member: "old", at: T0 - 45 * HOUR },
    { member: "fresh", count: 3 },
  ],
};

describe("review 14: the aged-out part of a message is dead-lettered once", () => {
  // Severity: medium. The aged-out items of a message are sent to the dead-letter queue before
  // the message's group is applied and before its dedupe id is looked up, on every delivery. A
  // message whose answer was lost after Redis applied it (or whose group met a storage error, or
  // a keyed retry of it) comes back and sends the same items to the dead-letter queue again, and
  // `deadLettered` counts each copy. docs/ingest.md tells the operator to re-POST what the DLQ
  // holds: each extra copy is then counted twice (or more) — "nothing counted twice" broken, by
  // the recovery procedure the docs prescribe. Fix: send the aged-out part only after its group
  // is settled, and only when the group's script applied the message (not when it was found a
  // duplicate): e.g. keep the split part on the Entry, and dead-letter it where the group is acked
  // as applied (a storage error retries the message whole, nothing dead-lettered yet). A failure
  // of that send after the apply can then only retry the message (found applied next time, and
  // its part sent then); or record the part's id (`dl:<dedupe id>`) in the apply script's SADD and
  // skip the send when the id is found.
  it("a redelivery after its answer was lost (applied, ack lost) sends nothing more to the dead-letter queue", async () => {
    const api = newApi("r14-dlq-redelivery");
    expect((await api.post("/v1/trending/s/events", halfStale, async(api))).status).toBe(202);
    api.advance(10 * HOUR);
    const first = await deliver(api, api.queue.sent);
    expect(first.stats).toMatchObject({ applied: 1, deadLettered: 1, retried: 0, events: 1 });
    expect(api.realDlq.accepted).toHaveLength(1);
    expect(api.realDlq.accepted[0].message.events.map((e: any) => e.member)).toEqual(["old"]);
    // Queues delivers it again (the ack was lost): a duplicate, nothing written, nothing dead-lettered
    api.advance(1000);
    const again = await deliver(api, api.queue.sent, 2);
    expect(again.stats).toMatchObject({ applied: 0, duplicates: 1, retried: 0 });
    expect(await topOf(api, "s")).toEqual({ fresh: 3 });
    expect(again.stats.deadLettered).toBe(0);
    expect(api.realDlq.accepted).toHaveLength(1);
    const status = await api.get("/v1/ingest/status", { key: "admin" });
    expect(status.body).toMatchObject({ applied: 1, duplicates: 1, deadLettered: 1 });
  });

  // Severity: medium (same bug, same fix): a storage outage retries the message up to max_retries
  // times; each delivery dead-letters its aged-out items again before the script fails.
  it("a storage outage that retries the message does not dead-letter its aged-out items once per delivery", async () => {
    const api = newApi("r14-dlq-outage");
    expect((await api.post("/v1/trending/s/events", halfStale, async(api))).status).toBe(202);
    api.advance(10 * HOUR);
    for (let attempt = 1; attempt <= 3; attempt++) {
      const failed = await deliver(api, api.queue.sent, attempt, down(api));
      expect(failed.retryMessages.map((r) => r.msgId)).toEqual([api.queue.sent[0]?.id]);
      expect(failed.explicitAcks).toEqual([]);
      api.advance(2000);
    }
    const healed = await deliver(api, api.queue.sent, 4);
    expect(healed.stats).toMatchObject({ applied: 1, events: 1, retried: 0 });
    expect(await topOf(api, "s")).toEqual({ fresh: 3 });
    // the one aged-out event, once (it was sent 4 times: once per delivery)
    expect(api.realDlq.accepted.map((b) => b.message.events.map((e: any) => e.member))).toEqual([["old"]]);
  });

  // Severity: low-medium (same root cause): two copies of a keyed request in one batch (a client's
  // retry with its Idempotency-Key; the stale event carries its own `at`, so both copies hold it)
  // are applied once, but each copy's aged-out part reaches the dead-letter queue.
  it("copies of a keyed request in one batch dead-letter its aged-out event once", async () => {
    const api = newApi("r14-dlq-copies");
    const body = {
      events: [
        { member: "old", at: T0 - 45 * HOUR },
        { member: "fresh", count: 3, at: T0 },
      ],
    };
    for (let i = 0; i < 2; i++) {
      const res = await api.post("/v1/trending/s/events", body, {
        headers: { ...api.asyncHeaders, "idempotency-key": "r14-copy" },
      });
      expect(res.status).toBe(202);
      api.advance(1000);
    }
    api.advance(10 * HOUR);
    const res = await deliver(api, api.queue.sent);
    expect(res.stats).toMatchObject({ applied: 1, duplicates: 1, events: 1, retried: 0 });
    expect(await topOf(api, "s")).toEqual({ fresh: 3 });
    expect(api.realDlq.accepted).toHaveLength(1);
  });

  // Severity: medium (same root cause, the whole message this time): the checks of an item's age
  // run before the dedupe lookup, so a message applied near the end of its events' retention and
  // delivered again after it (its ack lost; or its script committed but the answer timed out, then
  // retried with the 1…60 s back-off) goes whole to the dead-letter queue, counted `deadLettered`
  // although every item of it was applied. Re-POSTed from the DLQ as the docs advise, all of it
  // counts twice. Fix: as above, ask the applied sets before dead-lettering; e.g. a message that
  // can no longer apply is checked in its group's SMISMEMBER (its id sent with the group, no write)
  // and acked as a duplicate when found, dead-lettered only when not.
  it("a message applied just before its events left the retention, delivered again after, is a duplicate, not dead-lettered", async () => {
    const api = newApi("r14-dlq-edge");
    const body = { events: [{ member: "edge", count: 2, at: T0 - 49 * HOUR }] };
    expect((await api.post("/v1/trending/s/events", body, async(api))).status).toBe(202);
    const first = await deliver(api, api.queue.sent);
    expect(first.stats).toMatchObject({ applied: 1, events: 1, deadLettered: 0 });
    const top = await api.get("/v1/trending/s/top?n=10&window=50h");
    expect(top.body.items.map((i: any) => [i.member, i.count])).toEqual([["edge", 2]]);
    // the ack was lost; Queues delivers it again after the hour left the 50 h retention
    api.advance(2 * HOUR);
    const again = await deliver(api, api.queue.sent, 2);
    expect(again.explicitAcks).toEqual([api.queue.sent[0]?.id]);
    expect(api.realDlq.accepted).toEqual([]);
    expect(again.stats).toMatchObject({ applied: 0, duplicates: 1, deadLettered: 0 });
  });

  it("holds: the first delivery of such a message dead-letters the aged-out items to the real queue and applies the rest", async () => {
    const api = newApi("r14-dlq-first");
    expect((await api.post("/v1/trending/s/events", halfStale, async(api))).status).toBe(202);
    api.advance(10 * HOUR);
    const res = await deliver(api, api.queue.sent);
    expect(res.explicitAcks).toEqual([api.queue.sent[0]?.id]);
    expect(res.stats).toMatchObject({ applied: 1, deadLettered: 1, events: 1, retried: 0 });
    expect(api.realDlq.accepted).toEqual([
      {
        reason: expect.stringMatching(/^1 of 2 items: /),
        messageId: api.queue.sent[0]?.id,
        message: expect.objectContaining({ events: [{ member: "old", count: 1, at: T0 - 45 * HOUR }] }),
      },
    ]);
    expect(await topOf(api, "s")).toEqual({ fresh: 3 });
  });
});

/** `n` events of distinct ~230-byte members, 45 h old: one message of about 85 KB that ages out 10 h later. */
function bigStale(tag: string, n = 320) {
  return {
    events: Array.from({ length: n }, (_, i) => ({
      member: `${tag}-${String(i).padStart(4, "0")}-${"x".repeat(220)}`,
      at: T0 - 45 * HOUR,
    })),
  };
}

describe("review 14: the consumer's dead-letter sends keep to Queues' limits", () => {
  // Severity: low-medium. functions/queue.ts sends a batch's dead messages to INGEST_DLQ in
  // sendBatch calls of up to 100 messages, but with no bound on their bytes. Each dead message
  // carries its whole body (up to 100 KB, MAX_MESSAGE_BYTES); Cloudflare Queues refuses a
  // sendBatch over 256 KB in all (the limit src/ingest/message.ts encodes as MAX_SEND_BYTES and
  // the producer keeps), so a batch with three or more such messages cannot be dead-lettered at
  // all: the consumer retries them all, every delivery fails the same way, and after max_retries
  // Queues moves them to the DLQ itself, ten deliveries later, without the `reason`, counted as
  // `retried` (40 for 4 messages) and never as `deadLettered`. Realistic: an outage longer than
  // the trending retention leaves every queued big request dead at once. Neither the local
  // simulator nor the vitest pool enforces Queues' size limits (measured: a 1 MB sendBatch and a
  // 200 KB message are accepted locally), so this test measures what the consumer hands the real
  // binding against the limit the producer itself keeps. Fix: cut the dead-letter sends with
  // `sendBatches` of src/ingest/message.ts (≤ 100 messages and ≤ MAX_SEND_BYTES each, measured on
  // the wrapped `{reason, messageId, message}` bodies), settling each message by the send that
  // carried it.
  it("four ~85 KB messages that can no longer apply are dead-lettered in sendBatches within Queues' 256 KB", async () => {
    const api = newApi("r14-dlq-bytes");
    for (const tag of ["a", "b", "c", "d"]) {
      const res = await api.post(`/v1/trending/big${tag}/events`, bigStale(tag), async(api));
      expect(res.status).toBe(202);
    }
    // one message each, each well under Queues' 128 KB per message: the producer kept the limits
    expect(api.queue.sent).toHaveLength(4);
    const sizes = api.queue.sent.map((m) => new TextEncoder().encode(JSON.stringify(m.body)).length);
    for (const size of sizes) expect(size).toBeGreaterThan(80_000);
    for (const size of sizes) expect(size).toBeLessThan(MAX_MESSAGE_BYTES);
    api.advance(10 * HOUR);
    const res = await deliver(api, api.queue.sent);
    expect(res.stats).toMatchObject({ applied: 0, deadLettered: 4, retried: 0 });
    expect(api.realDlq.accepted.map((b) => b.messageId).sort()).toEqual(api.queue.sent.map((m) => m.id).sort());
    // each send within what Cloudflare accepts (the local binding does not check)
    for (const send of api.realDlq.sends) {
      expect(send.messages).toBeLessThanOrEqual(MAX_SEND_MESSAGES);
      expect(send.bytes).toBeLessThanOrEqual(MAX_SEND_BYTES);
    }
  });

  it("holds: two such messages (under 256 KB together) reach the real dead-letter queue in one send, with their reason", async () => {
    const api = newApi("r14-dlq-two");
    for (const tag of ["a", "b"]) {
      expect((await api.post(`/v1/trending/big${tag}/events`, bigStale(tag), async(api))).status).toBe(202);
    }
    api.advance(10 * HOUR);
    const res = await deliver(api, api.queue.sent);
    expect(res.stats).toMatchObject({ applied: 0, deadLettered: 2, retried: 0 });
    expect(res.explicitAcks.sort()).toEqual(api.queue.sent.map((m) => m.id).sort());
    expect(api.realDlq.accepted).toHaveLength(2);
    expect(api.realDlq.sends).toHaveLength(1);
    expect(api.realDlq.sends[0]?.bytes).toBeLessThanOrEqual(MAX_SEND_BYTES);
    for (const body of api.realDlq.accepted) expect(body.reason).toMatch(/retention/);
  });
});

describe("review 14: the status counts what reaches the dead-letter queue", () => {
  // Severity: low. wrangler.toml's consumer has max_retries = 10: a message whose 11th delivery
  // (attempts = 11; miniflare's broker: maxAttempts = maxRetries + 1) is retried again is moved
  // to the dead-letter queue by Queues. The consumer retries it as any other and counts it in
  // `retried`; `deadLettered` ("messages sent to the dead-letter queue in the last hour") never
  // counts it, so an operator reading the status sees 0 dead-lettered while the DLQ fills (and the
  // DLQ copy has no `reason`). Fix: give the consumer max_retries (a var kept equal to
  // wrangler.toml's, e.g. INGEST_MAX_RETRIES = 10) and, on a message's last attempt, send it to
  // INGEST_DLQ itself with the storage error as its reason, ack it and count it `deadLettered`
  // (or at least count it there when retrying it on its last attempt).
  it("a message retried on its last delivery (attempts 11 of max_retries 10) is counted dead-lettered", async () => {
    const api = newApi("r14-last-attempt");
    for (const stream of ["ok", "bad"])
      expect((await api.post(`/v1/trending/${stream}/events`, { member: "m" }, async(api))).status).toBe(202);
    const batch = batchOf(api.queue.sent, 11);
    const stats = await consumeBatch(
      { redis: failingFor(api, ":trending:bad:"), prefix: api.prefix, now: api.now },
      batch.messages,
      { trendingRetentionHours: 50, presenceTimeoutSeconds: 300 },
    );
    const result = await getQueueResult(batch, createExecutionContext());
    expect(result.explicitAcks).toEqual([api.queue.sent[0]?.id]);
    expect(stats.applied).toBe(1);
    const status = await api.get("/v1/ingest/status", { key: "admin" });
    expect(status.body).toMatchObject({ applied: 1, deadLettered: 1 });
  });
});

describe("review 14: merging per target keeps an ingest key's ttl from shortening an expiry", () => {
  it("holds: ttl 1, a decrement and one member across messages of a batch leave every expiry as long or longer, the scores summed", async () => {
    const api = newApi("r14-merge-ttl");
    const day = "2026-11-22T08:00:00Z";
    // synchronously: the plain counter without expiry, the day bucket with 30 days
    expect((await api.post("/v1/counters/mx/incr", { member: "a", by: 5 })).status).toBe(200);
    const sync = await api.post("/v1/counters/mx/incr", {
      member: "a",
      by: 2,
      period: "day",
      at: day,
      ttl: 30 * 86_400,
    });
    expect(sync.status).toBe(200);
    const keys = (await api.keys()).filter((k) => k.includes(":counters:mx"));
    const before = new Map<string, number>();
    for (const k of keys) before.set(k, await command<number>(api.target, "PTTL", k));
    expect(before.get(`${api.prefix}:counters:mx`)).toBe(-1);
    expect([...before.values()].some((t) => t > 29 * 86_400_000)).toBe(true);
    // queued, one batch: ttl 1 on both keys, the same member in three messages, a decrement
    const bodies = [
      {
        items: [
          { member: "a", ttl: 1 },
          { member: "a", period: "day", at: day, ttl: 1 },
        ],
      },
      {
        items: [
          { member: "a", by: -3, period: "day", at: day },
          { member: "b", by: 2, ttl: 1 },
        ],
      },
      {
        items: [
          { member: "a", by: 10 },
          { member: "a", period: "day", at: day, by: 4, ttl: 5 },
        ],
      },
    ];
    for (const body of bodies) expect((await api.post("/v1/counters/mx/incr", body, async(api))).status).toBe(202);
    const res = await deliver(api, api.queue.sent);
    expect(res.stats).toMatchObject({ applied: 3, events: 6, retried: 0, deadLettered: 0 });
    for (const [k, ttl] of before) {
      const after = await command<number>(api.target, "PTTL", k);
      if (ttl === -1) expect(after, k).toBe(-1);
      else expect(after, k).toBeGreaterThan(ttl - 60_000);
    }
    expect((await api.get("/v1/counters/mx/members/a")).body.score).toBe(16);
    expect((await api.get("/v1/counters/mx/members/b")).body.score).toBe(2);
    const bucket = await api.get(`/v1/counters/mx/top?n=10&period=day&from=${Date.parse(day)}&to=${Date.parse(day)}`);
    expect(bucket.body.items.map((i: any) => [i.member, i.score])).toEqual([["a", 4]]);
  });
});
