/**
 * Review 21: queued ingest. The producer is the real route (the recording INGEST_QUEUE of
 * test/helpers/ingest.ts keeps what it is sent, as the earlier queue reviews); the consumer is the
 * Worker's `consumeIngest` (or `consumeBatch` on a client of the same real Redis whose scripts on
 * one target fail, or fail once) fed cloudflare:test message batches; every read goes through the
 * real routes against the real local Upstash server. A confirmed bug is an `it.fails` asserting
 * the right behaviour, with its severity and the suggested fix above it.
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { consumeBatch } from "../../src/ingest/consume.ts";
import { MAX_MESSAGE_BYTES, MAX_SEND_BYTES } from "../../src/ingest/message.ts";
import { createRedis, type RedisClient } from "../../src/redis/client.ts";
import { createIngestApi, failingFor, INGEST_SETTINGS, toDlq, type IngestApi, type Sent } from "../helpers/ingest.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";

const MINUTE = 60_000;
const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const track = cleanedUpAfterAll<IngestApi>();
const queued = (label: string) => track(createIngestApi({ label, start: T0 }));
const direct = (label: string) => track(createIngestApi({ label, start: T0, queue: false }));
const keyed = (api: IngestApi, key: string) => ({ headers: { ...api.asyncHeaders, "idempotency-key": key } });
const bytesOf = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).length;

/**
 * Delivers `messages` as one batch to consumeBatch on `redis` (a client of the api's real Redis),
 * each on its delivery of `attempts` (max_retries 10), with the api's recording dead-letter queue.
 */
async function consumeOn(api: IngestApi, messages: Sent[], redis: RedisClient, attempts: number[]) {
  const batch = createMessageBatch(
    "edgestats-ingest",
    messages.map((m, i) => ({ id: m.id, timestamp: m.timestamp, attempts: attempts[i] ?? 1, body: m.body })),
  );
  const stats = await consumeBatch({ redis, prefix: api.prefix, now: api.now }, batch.messages, INGEST_SETTINGS, {
    deadLetter: toDlq(api),
    maxRetries: 10,
  });
  return { ...(await getQueueResult(batch, createExecutionContext())), stats };
}

/** A member's score, 0 when absent (404). */
async function scoreOf(api: IngestApi, member: string, counter = "c") {
  const res = await api.get(`/v1/counters/${counter}/members/${member}`);
  if (res.status === 404) return 0;
  expect(res.status).toBe(200);
  return res.body.score as number;
}

/** A client of the api's real Redis whose `n`-th script call (1-based) fails as an unreachable Upstash would. */
function failingNth(api: { env: Env }, n: number): RedisClient {
  const real = createRedis({ url: api.env.UPSTASH_REDIS_REST_URL, token: api.env.UPSTASH_REDIS_REST_TOKEN });
  let calls = 0;
  const gate = <T>(run: () => Promise<T>): Promise<T> =>
    ++calls === n ? Promise.reject(new TypeError("fetch failed")) : run();
  return {
    ping: () => real.ping(),
    evalsha: ((sha: string, keys: string[], args: string[]) =>
      gate(() => real.evalsha(sha, keys, args))) as RedisClient["evalsha"],
    eval: ((text: string, keys: string[], args: string[]) =>
      gate(() => real.eval(text, keys, args))) as RedisClient["eval"],
  };
}

describe("review 21: a message dead-lettered on its last delivery's storage error, and a copy of it", () => {
  // Severity: medium. A keyed request is queued, and its client's retry (same Idempotency-Key,
  // same body) a minute later. The first copy meets a storage outage on every delivery; on its
  // last (attempts 11 of max_retries 10) the look-up (review 17's last chance) finds it not
  // applied, and it is dead-lettered with the storage error, but its ids are NOT added to the
  // applied set, as review 17 does for a message dead-lettered because it aged out. The retry,
  // consumed once storage is back, applies the request: it is applied AND in the dead-letter
  // queue, counted twice once re-POSTed as docs/ingest.md advises. Fix: consume.ts's probeAll
  // passes the message's `ids` for a last chance too (settleDead marks them applied once sent,
  // markParts' `dead`), so a copy in a later batch is acked as a duplicate and the request lives
  // in the dead-letter queue only (as a stale copy dead-lettered first, review 19).
  // Fixed in review 21 (consume.ts probeAll: a last chance dead-lettered with its ids).
  it("the retry in a later batch is acked as the request the dead-letter queue holds, not applied", async () => {
    const q = queued("r21-last-retry");
    const body = { items: [{ member: "a", by: 5 }] };
    expect((await q.post("/v1/counters/c/incr", body, keyed(q, "r21-a"))).status).toBe(202);
    q.advance(MINUTE);
    expect((await q.post("/v1/counters/c/incr", body, keyed(q, "r21-a"))).status).toBe(202);
    const [first, retry] = q.queue.sent as [Sent, Sent];
    q.advance(10 * MINUTE);
    const one = await consumeOn(q, [first], failingFor(q, ":counters:c"), [11]);
    expect(one.stats).toMatchObject({ deadLettered: 1, retried: 0, applied: 0 });
    expect(q.dlq.sent.map((m) => m.body.messageId)).toEqual([first.id]);
    q.advance(MINUTE);
    const two = await q.deliver([retry]);
    // counted once in all: in the dead-letter queue (to re-POST) or applied, never both
    expect((await scoreOf(q, "a")) / 5 + q.dlq.sent.length).toBe(1);
    expect(two.explicitAcks).toEqual([retry.id]);
    expect(two.stats).toMatchObject({ applied: 0, duplicates: 1 });
  });

  // Severity: medium (the same cause, within one batch). The first copy has an aged-out item (an
  // hour bucket past its ttl) and is on its last delivery; its retry (stamped an hour later: its
  // bucket still fresh) has deliveries left. Their group meets a storage error: review 19's
  // carrier does not apply (the first has a part), so the first is looked up, not found, and
  // dead-lettered whole; the retry is handed back and applies the request on its redelivery:
  // applied and in the dead-letter queue. Fix: as above (its ids marked once it is sent, so the
  // retry's redelivery is found applied and acked).
  // Fixed in review 21 (the same change).
  it("the same copies in one batch: the retry handed back is not applied after the first was dead-lettered", async () => {
    const q = queued("r21-last-part");
    const body = {
      items: [
        { member: "a", by: 5, period: "hour", ttl: 3600 },
        { member: "b", by: 1 },
      ],
    };
    expect((await q.post("/v1/counters/c/incr", body, keyed(q, "r21-p"))).status).toBe(202);
    q.advance(HOUR);
    expect((await q.post("/v1/counters/c/incr", body, keyed(q, "r21-p"))).status).toBe(202);
    q.advance(40 * MINUTE);
    const [first, retry] = q.queue.sent as [Sent, Sent];
    const one = await consumeOn(q, [first, retry], failingFor(q, ":counters:c"), [11, 1]);
    expect(one.retryMessages.map((r) => r.msgId)).toEqual([retry.id]);
    expect(q.dlq.sent.map((m) => m.body.messageId)).toEqual([first.id]);
    q.advance(2000);
    await q.deliver([retry], { attempts: 2 });
    expect((await scoreOf(q, "b")) + q.dlq.sent.length).toBe(1);
  });

  // Severity: low. A message refused by a bound (a counter score past ±1e15) is dead-lettered at
  // once, its ids not marked either: its keyed retry, consumed after the score came down (a
  // decrement in between), applies the request, which the dead-letter queue also holds. Fix: mark
  // its ids as the others (dead.push with `ids` in applyEntries' bound branch).
  // Fixed in review 21 (consume.ts: the bound branch dead-letters with the message's ids).
  it("a keyed request dead-lettered on a bound: its retry consumed after the score came down is acked, not applied", async () => {
    const q = queued("r21-bound-retry");
    const full = { items: Array.from({ length: 1000 }, () => ({ member: "a", by: 1e12 })) };
    expect((await q.post("/v1/counters/c/incr", full)).status).toBe(200);
    const body = { items: [{ member: "a", by: 7 }] };
    expect((await q.post("/v1/counters/c/incr", body, keyed(q, "r21-b"))).status).toBe(202);
    q.advance(MINUTE);
    expect((await q.post("/v1/counters/c/incr", body, keyed(q, "r21-b"))).status).toBe(202);
    const [first, retry] = q.queue.sent as [Sent, Sent];
    const one = await q.deliver([first]);
    expect(one.stats).toMatchObject({ deadLettered: 1 });
    expect(q.dlq.sent[0]?.body.reason).toMatch(/±1e15/);
    expect((await q.post("/v1/counters/c/incr", { member: "a", by: -1e12 })).status).toBe(200);
    q.advance(MINUTE);
    await q.deliver([retry]);
    const applied = (await scoreOf(q, "a")) - (1e15 - 1e12);
    expect(applied / 7 + q.dlq.sent.length).toBe(1);
  });

  it("holds: a last delivery dead-lettered alone, with no copy, is in the dead-letter queue once and applied nowhere", async () => {
    const q = queued("r21-last-alone");
    expect((await q.post("/v1/counters/c/incr", { member: "a", by: 3 }, { headers: q.asyncHeaders })).status).toBe(202);
    const [only] = q.queue.sent as [Sent];
    const one = await consumeOn(q, [only], failingFor(q, ":counters:c"), [11]);
    expect(one.stats).toMatchObject({ deadLettered: 1, retried: 0 });
    expect(one.explicitAcks).toEqual([only.id]);
    expect(q.dlq.sent.map((m) => m.body)).toEqual([
      { reason: expect.stringMatching(/^storage error: /), messageId: only.id, message: only.body },
    ]);
    expect(await scoreOf(q, "a")).toBe(0);
  });
});

describe("review 21: a batch of 100 with bad items", () => {
  it("holds: one message with an invalid item and one unreadable body among 100: the rest applied, the two reported once, nothing retried", async () => {
    const q = queued("r21-bad-items");
    let expected = 0;
    for (let i = 0; i < 98; i++) {
      const res = await q.post(
        `/v1/trending/s${i % 3}/events`,
        { events: [{ member: `m${i % 5}`, count: 2 }] },
        { headers: q.asyncHeaders },
      );
      expect(res.status).toBe(202);
      expected += 2;
    }
    // an item that can no longer apply in a message of three (an event 49 h old leaves the 50 h
    // retention while queued) ...
    const mixed = { events: [{ member: "m0" }, { member: "old", at: T0 - 49 * HOUR }, { member: "m1", count: 3 }] };
    expect((await q.post("/v1/trending/s0/events", mixed, { headers: q.asyncHeaders })).status).toBe(202);
    q.advance(2 * HOUR);
    // ... and a body no producer of this format wrote
    const bad: Sent = {
      id: "bad-0001",
      body: { v: 1, kind: "trending", name: "s0", t: q.now, r: "x", events: "no" },
      timestamp: q.now,
    };
    const batch = [...q.queue.sent, bad];
    expect(batch).toHaveLength(100);
    const res = await q.deliver(batch);
    expect(res.retryMessages).toEqual([]);
    expect(res.explicitAcks.sort()).toEqual(batch.map((m) => m.id).sort());
    expect(res.stats).toMatchObject({ applied: 99, deadLettered: 2, retried: 0, events: 98 + 2 });
    expect(q.dlq.sent.map((m) => m.body.messageId).sort()).toEqual([bad.id, q.queue.sent[98]?.id].sort());
    const part = q.dlq.sent.find((m) => m.body.messageId !== bad.id)?.body;
    expect(part.reason).toMatch(/^1 of 3 items: /);
    expect(part.message.events).toEqual([{ member: "old", count: 1, at: T0 - 49 * HOUR }]);
    let total = 0;
    for (const s of ["s0", "s1", "s2"]) {
      const top = await q.get(`/v1/trending/${s}/top?n=100&window=24h`);
      for (const item of top.body.items) total += item.count;
    }
    expect(total).toBe(expected + 4);
    // the batch again (every ack lost): nothing counted or dead-lettered twice but the unreadable body
    q.advance(2000);
    const again = await q.deliver(batch, { attempts: 2 });
    expect(again.stats).toMatchObject({ applied: 0, duplicates: 99, retried: 0 });
    expect(q.dlq.sent.filter((m) => m.body.messageId !== bad.id)).toHaveLength(1);
  });
});

describe("review 21: a message retried after a partial apply", () => {
  it("holds: a target cut into three scripts, the second failing: only its message retried; the batch again counts nothing twice", async () => {
    const q = queued("r21-partial");
    // three messages of 600 distinct counter members: three scripts (a counters script takes 1,000 entries)
    for (const tag of ["x", "y", "z"]) {
      const items = Array.from({ length: 600 }, (_, i) => ({ member: `${tag}${i}`, by: 2 }));
      expect((await q.post("/v1/counters/c/incr", { items }, { headers: q.asyncHeaders })).status).toBe(202);
    }
    const sent = q.queue.sent;
    const one = await consumeOn(q, sent, failingNth(q, 2), [1, 1, 1]);
    expect(one.stats).toMatchObject({ applied: 2, retried: 1 });
    expect(one.retryMessages).toHaveLength(1);
    q.advance(2000);
    const two = await consumeOn(q, sent, failingNth(q, 0), [2, 2, 2]);
    expect(two.stats).toMatchObject({ applied: 1, duplicates: 2, retried: 0 });
    for (const member of ["x0", "x599", "y0", "y599", "z0", "z599"]) expect(await scoreOf(q, member)).toBe(2);
    expect(q.dlq.sent).toEqual([]);
  });
});

describe("review 21: every queueable kind in one batch (histograms and leaderboards are never queued: review 17), and the 202's count", () => {
  it("holds: trending, counters and presence in one batch: the 202s' `queued` add up to the events applied and the status's", async () => {
    const q = queued("r21-mixed");
    let queuedItems = 0;
    const requests: [string, unknown][] = [
      ["/v1/trending/s/events", { events: [{ member: "a" }, { member: "a", count: 2 }, { member: "b" }] }],
      [
        "/v1/counters/c/incr",
        {
          items: [
            { member: "a", by: 2 },
            { member: "a", by: -1, period: "day" },
          ],
        },
      ],
      ["/v1/presence/r/heartbeats", { ids: ["u1", "u2", "u3"] }],
    ];
    for (let i = 0; i < 10; i++)
      for (const [path, body] of requests) {
        const res = await q.post(path, body, { headers: q.asyncHeaders });
        expect(res.status).toBe(202);
        expect(res.headers.get("preference-applied")).toBe("respond-async");
        queuedItems += res.body.queued;
      }
    expect(queuedItems).toBe(10 * 8);
    expect(q.queue.sent).toHaveLength(30);
    const res = await q.deliver(q.queue.sent);
    expect(res.stats).toMatchObject({ applied: 30, events: queuedItems, deadLettered: 0, retried: 0 });
    const status = await q.get("/v1/ingest/status", { key: "admin" });
    expect(status.body).toMatchObject({ applied: 30, events: queuedItems });
    const top = await q.get("/v1/trending/s/top?n=10&window=24h");
    expect(Object.fromEntries(top.body.items.map((i: any) => [i.member, i.count]))).toEqual({ a: 30, b: 10 });
    expect(await scoreOf(q, "a")).toBe(20);
    expect((await q.get("/v1/presence/r")).body.online).toBe(3);
  });
});

describe("review 21: Idempotency-Key across the two ways of sending", () => {
  const body = {
    items: [
      { member: "a", by: 5 },
      { member: "b", by: 1 },
    ],
  };
  it("holds: sent synchronously, then queued re-serialized (other key order, spaces): the consumer takes it for the same request", async () => {
    const q = queued("r21-idem-sync-first");
    expect((await q.post("/v1/counters/c/incr", body, { headers: { "idempotency-key": "k" } })).status).toBe(200);
    const raw = ' { "items" : [ { "by" : 5, "member" : "a" }, { "by": 1, "member": "b" } ] } ';
    const res = await q.post("/v1/counters/c/incr", undefined, {
      raw,
      headers: { ...keyed(q, "k").headers, "content-type": "application/json" },
    });
    expect(res.status).toBe(202);
    const consumed = await q.deliver(q.queue.sent);
    expect(consumed.stats).toMatchObject({ applied: 0, duplicates: 1 });
    expect([await scoreOf(q, "a"), await scoreOf(q, "b")]).toEqual([5, 1]);
  });

  it("holds: queued, then sent synchronously before the consumer ran: applied once, the consumer finds the record", async () => {
    const q = queued("r21-idem-queued-first");
    expect((await q.post("/v1/counters/c/incr", body, keyed(q, "k"))).status).toBe(202);
    expect((await q.post("/v1/counters/c/incr", body, { headers: { "idempotency-key": "k" } })).status).toBe(200);
    const consumed = await q.deliver(q.queue.sent);
    expect(consumed.stats).toMatchObject({ applied: 0, duplicates: 1 });
    expect([await scoreOf(q, "a"), await scoreOf(q, "b")]).toEqual([5, 1]);
    // and a synchronous retry after that is a replay
    const replay = await q.post("/v1/counters/c/incr", body, { headers: { "idempotency-key": "k" } });
    expect(replay.status).toBe(200);
    expect(await scoreOf(q, "a")).toBe(5);
  });
});

describe("review 21: sizes", () => {
  /** `n` events of distinct members of about `len` bytes. */
  const events = (n: number, len: number) =>
    Array.from({ length: n }, (_, i) => ({ member: `${String(i).padStart(4, "0")}${"m".repeat(len - 4)}` }));

  it("holds: 1,000 events of ~150-byte members: several messages under 128 KB in one sendBatch under 256 KB, all applied", async () => {
    const q = queued("r21-split");
    const res = await q.post("/v1/trending/s/events", { events: events(1000, 150) }, { headers: q.asyncHeaders });
    expect(res.status).toBe(202);
    expect(res.body.queued).toBe(1000);
    const sizes = q.queue.sent.map((m) => bytesOf(m.body));
    expect(sizes.length).toBeGreaterThan(1);
    for (const size of sizes) expect(size).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
    expect(MAX_MESSAGE_BYTES).toBeLessThan(128 * 1024);
    expect(sizes.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(MAX_SEND_BYTES);
    expect(q.queue.sent.reduce((n, m) => n + m.body.events.length, 0)).toBe(1000);
    const consumed = await q.deliver(q.queue.sent);
    expect(consumed.stats).toMatchObject({ applied: q.queue.sent.length, events: 1000 });
    const d = direct("r21-split-direct");
    expect((await d.post("/v1/trending/s/events", { events: events(1000, 150) })).status).toBe(200);
    const read = async (api: IngestApi) => (await api.get("/v1/trending/s/top?n=100&window=24h")).body.items;
    expect(await read(q)).toEqual(await read(d));
  });

  it("holds: 1,000 events of 256-byte members (over one sendBatch) are written synchronously, nothing queued", async () => {
    const q = queued("r21-too-big");
    const res = await q.post("/v1/trending/s/events", { events: events(1000, 256) }, { headers: q.asyncHeaders });
    expect(res.status).toBe(200);
    expect(res.headers.get("preference-applied")).toBeNull();
    expect(q.queue.sent).toEqual([]);
    expect((await q.get("/v1/trending/s/top?n=1&window=24h")).body.items).toHaveLength(1);
  });

  it("holds: a body over 1 MiB with Prefer: respond-async is a 413 and nothing is queued", async () => {
    const q = queued("r21-413");
    const raw = `{"events":[{"member":"a"}]${" ".repeat(1024 * 1024)}}`;
    const res = await q.post("/v1/trending/s/events", undefined, {
      raw,
      headers: { ...q.asyncHeaders, "content-type": "application/json" },
    });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe("payload_too_large");
    expect(q.queue.sent).toEqual([]);
  });
});

describe("review 21: queued writes to a target deleted before they were applied", () => {
  // The write was accepted (202) before the delete and is applied after it: as the presence known
  // limit (docs/ingest.md), it lands as a write after the delete; pinned here against the same
  // sequence sent synchronously in that order (write, delete, write), so the target's reads agree.
  it("holds: a counter deleted between a queued increment's 202 and its application reads as incr-after-delete", async () => {
    const q = queued("r21-deleted-counter");
    const d = direct("r21-deleted-counter-d");
    for (const api of [q, d])
      expect((await api.post("/v1/counters/c/incr", { items: [{ member: "a", by: 4, period: "day" }] })).status).toBe(
        200,
      );
    expect(
      (
        await q.post(
          "/v1/counters/c/incr",
          { items: [{ member: "b", by: 2, period: "day" }] },
          { headers: q.asyncHeaders },
        )
      ).status,
    ).toBe(202);
    for (const api of [q, d]) expect((await api.del("/v1/counters/c", { key: "admin" })).status).toBe(204);
    expect((await d.post("/v1/counters/c/incr", { items: [{ member: "b", by: 2, period: "day" }] })).status).toBe(200);
    const res = await q.deliver(q.queue.sent);
    expect(res.stats).toMatchObject({ applied: 1 });
    const read = async (api: IngestApi) => ({
      top: (await api.get("/v1/counters/c/top?n=10&period=day&from=2026-11-22&to=2026-11-22")).body.items,
      a: await scoreOf(api, "a"),
    });
    expect(await read(q)).toEqual(await read(d));
  });

  it("holds: a trending stream deleted between a queued event's 202 and its application reads as record-after-delete", async () => {
    const q = queued("r21-deleted-stream");
    const d = direct("r21-deleted-stream-d");
    for (const api of [q, d])
      expect((await api.post("/v1/trending/s/events", { events: [{ member: "a" }] })).status).toBe(200);
    expect(
      (await q.post("/v1/trending/s/events", { events: [{ member: "b" }] }, { headers: q.asyncHeaders })).status,
    ).toBe(202);
    for (const api of [q, d]) expect((await api.del("/v1/trending/s", { key: "admin" })).status).toBe(204);
    expect((await d.post("/v1/trending/s/events", { events: [{ member: "b" }] })).status).toBe(200);
    await q.deliver(q.queue.sent);
    const read = async (api: IngestApi) => (await api.get("/v1/trending/s/top?n=10&window=24h")).body.items;
    expect(await read(q)).toEqual(await read(d));
  });
});
