/**
 * Review 17: queued ingest end to end in the worker pool. The producer is the real route (the
 * recording INGEST_QUEUE of test/helpers/ingest.ts keeps what it is sent); the consumer is the
 * Worker's `consumeIngest` (or `consumeBatch` with a client on the same real Redis) fed
 * cloudflare:test message batches; every read goes through the real routes against the real
 * local Upstash server. Each queued scenario is compared with the same requests written
 * synchronously (a second api without a queue binding, same clock). A confirmed bug is an
 * `it.fails` asserting the right behaviour, with its severity and the suggested fix above it.
 */
import { createExecutionContext, getQueueResult } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { consumeBatch } from "../../src/ingest/consume.ts";
import {
  answerLostFor,
  batchOf,
  createIngestApi,
  deliverBatch as deliver,
  failingFor,
  INGEST_SETTINGS as SETTINGS,
  toDlq,
  type IngestApi,
} from "../helpers/ingest.ts";
import { TEST_INGEST_KEY_2 } from "../helpers/keys.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const track = cleanedUpAfterAll<IngestApi>();

const queued = (label: string) => track(createIngestApi({ label, start: T0 }));
const direct = (label: string) => track(createIngestApi({ label, start: T0, queue: false }));

/** The i-th request of a mixed workload: trending, counters (plain, period, decrements) and presence. */
function request(i: number): { path: string; body: unknown } {
  switch (i % 3) {
    case 0:
      return {
        path: `/v1/trending/s${i % 2}/events`,
        body: { events: [{ member: `m${i % 7}`, count: (i % 5) + 1 }, { member: `m${(i + 3) % 7}` }] },
      };
    case 1:
      return {
        path: `/v1/counters/c${i % 2}/incr`,
        body: {
          items: [
            { member: `p${i % 6}`, by: i % 4 === 0 ? -2 : (i % 4) + 1 },
            { member: `p${i % 5}`, by: 3, period: "day" },
            { member: `p${i % 3}`, by: 1, period: "hour" },
          ],
        },
      };
    default:
      return { path: `/v1/presence/r${i % 2}/heartbeats`, body: { ids: [`u${i % 9}`, `u${(i * 5) % 11}`] } };
  }
}

/** Everything the mixed workload can be read back by, through the routes. */
async function readAll(api: IngestApi) {
  const out: Record<string, unknown> = {};
  for (const s of ["s0", "s1"])
    out[`trending ${s}`] = (await api.get(`/v1/trending/${s}/top?n=100&window=24h`)).body.items;
  for (const c of ["c0", "c1"]) {
    out[`counter ${c}`] = (await api.get(`/v1/counters/${c}/top?n=100`)).body.items;
    for (const period of ["day", "hour"])
      out[`counter ${c} ${period}`] = (
        await api.get(`/v1/counters/${c}/top?n=100&period=${period}&from=2026-11-22&to=2026-11-22`)
      ).body.items;
  }
  for (const r of ["r0", "r1"]) {
    const room = (await api.get(`/v1/presence/${r}`)).body;
    out[`room ${r}`] = { online: room.online, peakToday: room.peakToday, activeToday: room.activeToday };
  }
  return out;
}

/**
 * Presence members of both sides: the same ids, each queued last-seen never earlier than its
 * synchronous one and at most 5 s later (docs/ingest.md: heartbeats of a room within 5 s are
 * applied together at the latest of their times).
 */
async function expectSameMembers(q: IngestApi, d: IngestApi) {
  for (const r of ["r0", "r1"]) {
    const seen = async (api: IngestApi) =>
      new Map<string, number>(
        (await api.get(`/v1/presence/${r}/members?limit=100`)).body.members.map((m: any) => [m.id, m.lastSeen]),
      );
    const [qs, ds] = [await seen(q), await seen(d)];
    expect([...qs.keys()].sort(), r).toEqual([...ds.keys()].sort());
    for (const [id, at] of ds) {
      expect(qs.get(id), `${r} ${id}`).toBeGreaterThanOrEqual(at);
      expect(qs.get(id), `${r} ${id}`).toBeLessThanOrEqual(at + 5000);
    }
  }
}

/** Sends `n` requests of the mixed workload to both apis, 200 ms apart; the queued side gets 202s. */
async function sendBoth(q: IngestApi, d: IngestApi, n: number) {
  for (let i = 0; i < n; i++) {
    const { path, body } = request(i);
    const a = await q.post(path, body, { headers: q.asyncHeaders });
    expect(a.status, `${path} queued`).toBe(202);
    const b = await d.post(path, body);
    expect(b.status, `${path} direct`).toBe(200);
    q.advance(200);
    d.advance(200);
  }
}

describe("review 17: batches of 100 and 101 mixed messages", () => {
  for (const n of [100, 101]) {
    it(`holds: ${n} messages of every queueable kind in one batch read as their synchronous writes, and a redelivery of the whole batch changes nothing`, async () => {
      const q = queued(`r17-mixed-${n}`);
      const d = direct(`r17-mixed-${n}-d`);
      await sendBoth(q, d, n);
      expect(q.queue.sent).toHaveLength(n);
      q.advance(2000);
      d.advance(2000);
      const first = await deliver(q, q.queue.sent);
      expect(first.stats).toMatchObject({ applied: n, retried: 0, deadLettered: 0, duplicates: 0 });
      expect(first.explicitAcks).toHaveLength(n);
      expect(first.retryMessages).toEqual([]);
      expect(await readAll(q)).toEqual(await readAll(d));
      await expectSameMembers(q, d);
      // the consumer crashed before its acks reached Queues: the same batch again
      q.advance(5000);
      d.advance(5000);
      const again = await deliver(q, q.queue.sent, 2);
      expect(again.stats).toMatchObject({ applied: 0, duplicates: n, retried: 0, deadLettered: 0 });
      expect(again.explicitAcks).toHaveLength(n);
      expect(await readAll(q)).toEqual(await readAll(d));
      await expectSameMembers(q, d);
      const status = await q.get("/v1/ingest/status", { key: "admin" });
      expect(status.body).toMatchObject({ applied: n, deadLettered: 0 });
    });
  }

  it("holds: histogram observations and leaderboard writes with Prefer: respond-async are applied at once (200), nothing queued", async () => {
    const q = queued("r17-notq");
    expect((await q.put("/v1/histograms/h", { bucketWidth: 10 }, { key: "admin" })).status).toBe(201);
    const h = await q.post("/v1/histograms/h/observations", { values: [1, 2, 30] }, { headers: q.asyncHeaders });
    expect(h.status).toBe(200);
    expect(h.headers.get("preference-applied")).toBeNull();
    expect(q.queue.sent).toEqual([]);
    expect((await q.get("/v1/histograms/h")).body.count).toBe(3);
    const join = await q.put("/v1/leaderboards/b/players/p", { name: "P", score: 2 }, { headers: q.asyncHeaders });
    expect(join.status).toBe(201);
    const l = await q.post("/v1/leaderboards/b/players/p/score", { by: 5 }, { headers: q.asyncHeaders });
    expect(l.status).toBe(200);
    expect(l.body.score).toBe(7);
    expect(l.headers.get("preference-applied")).toBeNull();
    expect(q.queue.sent).toEqual([]);
  });
});

describe("review 17: a script Redis applied whose answer was lost, mid-batch", () => {
  it("holds: only that target's messages are retried; their redelivery is a duplicate; reads equal the synchronous writes", async () => {
    const q = queued("r17-lost");
    const d = direct("r17-lost-d");
    await sendBoth(q, d, 30);
    q.advance(1000);
    d.advance(1000);
    const batch = batchOf(q.queue.sent, 1);
    // every counters c1 script commits and then "times out"
    const stats = await consumeBatch(
      { redis: answerLostFor(q, ":counters:c1"), prefix: q.prefix, now: q.now },
      batch.messages,
      SETTINGS,
    );
    const result = await getQueueResult(batch, createExecutionContext());
    const c1 = q.queue.sent.filter((m) => m.body.kind === "counters" && m.body.name === "c1");
    expect(c1.length).toBeGreaterThan(0);
    expect(result.retryMessages.map((r) => r.msgId).sort()).toEqual(c1.map((m) => m.id).sort());
    expect(stats.retried).toBe(c1.length);
    q.advance(2000);
    d.advance(2000);
    const again = await deliver(q, c1, 2);
    expect(again.stats).toMatchObject({ applied: 0, duplicates: c1.length, retried: 0 });
    expect(await readAll(q)).toEqual(await readAll(d));
    await expectSameMembers(q, d);
  });
});

describe("review 17: the last delivery's storage error", () => {
  // Severity: low. On its last delivery (attempts = max_retries + 1) a message whose group script
  // Redis applied but whose answer was lost (a timeout after the commit) is sent to the
  // dead-letter queue "with the storage error as its reason" and counted `deadLettered`, although
  // its counts are in: re-POSTed as docs/ingest.md advises, it counts twice. Earlier deliveries
  // are safe (the redelivery finds it applied); only the last one has no redelivery to find out.
  // Fix: before dead-lettering a message on a storage error at its last delivery, ask the applied
  // sets once (findApplied, as the probes do); found → acked as applied (a duplicate); not found
  // or still failing → dead-lettered as now, its reason saying whether it may have been applied.
  // Fixed in review 17 (consume.ts: `lastChance`).
  it("a message applied on its last delivery whose answer was lost is not dead-lettered", async () => {
    const q = queued("r17-last-lost");
    expect((await q.post("/v1/counters/c/incr", { member: "a", by: 4 }, { headers: q.asyncHeaders })).status).toBe(202);
    const batch = batchOf(q.queue.sent, 11);
    const redis = answerLostFor(q, ":counters:c");
    const stats = await consumeBatch({ redis, prefix: q.prefix, now: q.now }, batch.messages, SETTINGS, {
      maxRetries: 10,
      deadLetter: toDlq(q),
    });
    const result = await getQueueResult(batch, createExecutionContext());
    expect((await q.get("/v1/counters/c/members/a")).body.score).toBe(4);
    expect(stats).toMatchObject({ deadLettered: 0, duplicates: 1, retried: 0 });
    expect(result.explicitAcks).toEqual([q.queue.sent[0]?.id]);
    expect(q.dlq.sent).toEqual([]);
    // the apply script, the one look-up (only on a last delivery's storage error), the stats script
    expect(redis.scripts).toBe(3);
  });

  it("holds: a last delivery whose script never ran (the look-up finds nothing) is dead-lettered with the storage error", async () => {
    const q = queued("r17-last-never");
    expect((await q.post("/v1/counters/c/incr", { member: "a", by: 4 }, { headers: q.asyncHeaders })).status).toBe(202);
    const batch = batchOf(q.queue.sent, 11);
    const stats = await consumeBatch(
      { redis: failingFor(q, ":counters:c"), prefix: q.prefix, now: q.now },
      batch.messages,
      SETTINGS,
      { maxRetries: 10, deadLetter: toDlq(q) },
    );
    const result = await getQueueResult(batch, createExecutionContext());
    expect(stats).toMatchObject({ deadLettered: 1, duplicates: 0, retried: 0 });
    expect(result.explicitAcks).toEqual([q.queue.sent[0]?.id]);
    expect(q.dlq.sent).toHaveLength(1);
    expect(q.dlq.sent[0]?.body.reason).toMatch(/^storage error: .*\(delivery 11, the last of max_retries 10\)$/);
    expect((await q.get("/v1/counters/c/members/a")).status).toBe(404);
  });

  it("holds: with storage still down for the look-up, it is dead-lettered, its reason saying it may have applied", async () => {
    const q = queued("r17-last-down");
    expect((await q.post("/v1/counters/c/incr", { member: "a", by: 4 }, { headers: q.asyncHeaders })).status).toBe(202);
    const down = { ...q.env, UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9" } as unknown as Env;
    const { stats, ...result } = await deliver(q, q.queue.sent, 11, down);
    expect(stats).toMatchObject({ deadLettered: 1, retried: 0 });
    expect(result.explicitAcks).toEqual([q.queue.sent[0]?.id]);
    expect(q.dlq.sent).toHaveLength(1);
    expect(q.dlq.sent[0]?.body.reason).toMatch(/last of max_retries 10\); not known whether applied already/);
  });
});

describe("review 17: Idempotency-Key on a queued request", () => {
  const keyed = (api: IngestApi, key: string, queue = true) => ({
    headers: { ...(queue ? api.asyncHeaders : {}), "idempotency-key": key },
  });
  const body = { items: [{ member: "a", by: 5 }] };

  it("holds: retried queued before the consumer ran and after it applied it: counted once", async () => {
    const q = queued("r17-idem-q");
    expect((await q.post("/v1/counters/c/incr", body, keyed(q, "k1"))).status).toBe(202);
    q.advance(1000);
    expect((await q.post("/v1/counters/c/incr", body, keyed(q, "k1"))).status).toBe(202);
    q.advance(1000);
    const first = await deliver(q, q.queue.sent.slice(0, 1));
    expect(first.stats).toMatchObject({ applied: 1 });
    expect((await q.post("/v1/counters/c/incr", body, keyed(q, "k1"))).status).toBe(202);
    const rest = await deliver(q, q.queue.sent.slice(1));
    expect(rest.stats).toMatchObject({ applied: 0, duplicates: 2 });
    expect((await q.get("/v1/counters/c/members/a")).body.score).toBe(5);
  });

  it("holds: retried synchronously after the consumer applied it, a replay; before, the consumer then finds it applied", async () => {
    const q = queued("r17-idem-s");
    expect((await q.post("/v1/counters/c/incr", body, keyed(q, "after"))).status).toBe(202);
    await deliver(q, q.queue.sent);
    const replay = await q.post("/v1/counters/c/incr", body, keyed(q, "after", false));
    expect(replay.status).toBe(200);
    expect((await q.get("/v1/counters/c/members/a")).body.score).toBe(5);
    q.queue.clear();
    expect((await q.post("/v1/counters/c/incr", body, keyed(q, "before"))).status).toBe(202);
    expect((await q.post("/v1/counters/c/incr", body, keyed(q, "before", false))).status).toBe(200);
    expect((await q.get("/v1/counters/c/members/a")).body.score).toBe(10);
    const late = await deliver(q, q.queue.sent);
    expect(late.stats).toMatchObject({ applied: 0, duplicates: 1 });
    expect((await q.get("/v1/counters/c/members/a")).body.score).toBe(10);
  });
});

describe("review 17: messages that aged out whole, sent more than once", () => {
  /** Two events 45 h old: the whole message leaves the 50 h retention 10 h later. */
  const stale = {
    events: [
      { member: "old", at: T0 - 45 * HOUR },
      { member: "older", at: T0 - 46 * HOUR },
    ],
  };
  const keyed = (api: IngestApi) => ({ headers: { ...api.asyncHeaders, "idempotency-key": "r17-stale" } });

  // Severity: medium. A keyed request (its client retried it: same Idempotency-Key, same body) is
  // two messages of one dedupe id. When the whole message can no longer apply, each copy takes the
  // probe path (problemOf runs before the copies are grouped by dedupe id), none is found applied,
  // and each is dead-lettered: the dead-letter queue holds the one acknowledged request twice (two
  // messageIds, so the docs' "drop the copy with the same messageId" does not catch it) and
  // `deadLettered` counts 2. Re-POSTed as docs/ingest.md advises, it counts twice. Fix: group the
  // probes by dedupe id (and canonical id) as the applied messages' copies are: dead-letter the
  // first, ack the others as duplicates. Fixed in review 17 (consume.ts: `probed`).
  it("copies of a keyed request that aged out whole, in one batch, are dead-lettered once", async () => {
    const q = queued("r17-stale-copies");
    for (let i = 0; i < 2; i++) {
      expect((await q.post("/v1/trending/s/events", stale, keyed(q))).status).toBe(202);
      q.advance(1000);
    }
    q.advance(10 * HOUR);
    const res = await deliver(q, q.queue.sent);
    expect(res.explicitAcks).toHaveLength(2);
    expect(res.stats).toMatchObject({ applied: 0, deadLettered: 1, duplicates: 1, retried: 0 });
    expect(q.dlq.sent).toHaveLength(1);
  });

  // Severity: medium (same bug): the copies' dead-letter send failing handed them all back; the
  // send succeeding on the next delivery then sent both. Fixed with it: a copy is acked as a
  // duplicate (the first carries the request, retried with its reason).
  it("copies of a keyed request that aged out whole: a failed send retries the first, the next delivery sends one", async () => {
    const q = queued("r17-stale-copies-fail");
    for (let i = 0; i < 2; i++) {
      expect((await q.post("/v1/trending/s/events", stale, keyed(q))).status).toBe(202);
      q.advance(1000);
    }
    q.advance(10 * HOUR);
    const dlq = (q.env as unknown as Record<string, unknown>).INGEST_DLQ as {
      sendBatch: (m: unknown) => Promise<void>;
    };
    const send = dlq.sendBatch;
    dlq.sendBatch = async () => {
      throw new Error("the dead-letter queue refused the batch");
    };
    const failed = await deliver(q, q.queue.sent);
    // the first is retried with its reason; its copy, acked as a duplicate (the first carries the request)
    expect(failed.retryMessages.map((r) => r.msgId)).toEqual([q.queue.sent[0]?.id]);
    expect(failed.explicitAcks).toEqual([q.queue.sent[1]?.id]);
    dlq.sendBatch = send;
    q.advance(2000);
    const res = await deliver(q, q.queue.sent, 2);
    expect(res.explicitAcks).toHaveLength(2);
    expect(q.dlq.sent).toHaveLength(1);
  });

  // Severity: medium (same bug, presence): a keyed heartbeat request older than yesterday and its
  // retry in one batch were both dead-lettered. Fixed with it.
  it("copies of a keyed heartbeat request older than yesterday, in one batch, are dead-lettered once", async () => {
    const q = queued("r17-stale-presence");
    for (let i = 0; i < 2; i++) {
      const res = await q.post("/v1/presence/r/heartbeats", { ids: ["u1", "u2"] }, keyed(q));
      expect(res.status).toBe(202);
      q.advance(1000);
    }
    q.advance(60 * HOUR);
    const res = await deliver(q, q.queue.sent);
    expect(res.explicitAcks).toHaveLength(2);
    expect(q.dlq.sent).toHaveLength(1);
    expect(res.stats).toMatchObject({ deadLettered: 1, duplicates: 1 });
  });

  // Severity: low. The same copies in two batches (the retry queued after the first was
  // dead-lettered and acked, or Queues handing them to different batches) are each dead-lettered:
  // nothing records a message dead-lettered whole, so the second's look-up finds nothing. Two
  // messageIds, one request; the docs' "drop the copy of the same messageId" did not catch it. Fix: record the dedupe ids of a keyed message
  // dead-lettered whole (e.g. SADD them to the applied set of the day in the markParts script once
  // sent: found "applied" later, a copy is acked as a duplicate), one round trip per such batch.
  // Fixed in review 17 (ingest.markParts adds them to the applied set).
  it("copies of a keyed request that aged out whole, in two batches, are dead-lettered once", async () => {
    const q = queued("r17-stale-two-batches");
    for (let i = 0; i < 2; i++) {
      expect((await q.post("/v1/trending/s/events", stale, keyed(q))).status).toBe(202);
      q.advance(1000);
    }
    q.advance(10 * HOUR);
    const first = await deliver(q, q.queue.sent.slice(0, 1));
    expect(first.stats).toMatchObject({ deadLettered: 1 });
    q.advance(1000);
    const second = await deliver(q, q.queue.sent.slice(1));
    expect(second.explicitAcks).toEqual([q.queue.sent[1]?.id]);
    expect(q.dlq.sent).toHaveLength(1);
    expect(second.stats).toMatchObject({ deadLettered: 0, duplicates: 1 });
  });

  it("holds: one copy that aged out whole is dead-lettered whole, once, with its reason and messageId", async () => {
    const q = queued("r17-stale-one");
    expect((await q.post("/v1/trending/s/events", stale, keyed(q))).status).toBe(202);
    q.advance(10 * HOUR);
    const res = await deliver(q, q.queue.sent);
    expect(res.explicitAcks).toEqual([q.queue.sent[0]?.id]);
    expect(q.dlq.sent).toHaveLength(1);
    expect(q.dlq.sent[0]?.body).toMatchObject({ messageId: q.queue.sent[0]?.id, message: q.queue.sent[0]?.body });
    expect(q.dlq.sent[0]?.body.reason).toMatch(/retention/);
  });
});

describe("review 17: 1,000-item bodies", () => {
  it("holds: a 1,000-increment and a 1,000-event request, queued, read as their synchronous writes; ten of each in one batch", async () => {
    const q = queued("r17-big");
    const d = direct("r17-big-d");
    for (let r = 0; r < 10; r++) {
      const incr = {
        items: Array.from({ length: 1000 }, (_, i) => ({ member: `m${(i * 7 + r) % 1500}`, by: (i % 9) - 3 || 1 })),
      };
      const events = {
        events: Array.from({ length: 1000 }, (_, i) => ({ member: `e${(i * 13 + r) % 1200}`, count: (i % 4) + 1 })),
      };
      for (const [path, b] of [
        ["/v1/counters/big/incr", incr],
        ["/v1/trending/big/events", events],
      ] as const) {
        expect((await q.post(path, b, { headers: q.asyncHeaders })).status).toBe(202);
        expect((await d.post(path, b)).status).toBe(200);
      }
      q.advance(100);
      d.advance(100);
    }
    const res = await deliver(q, q.queue.sent);
    expect(res.stats).toMatchObject({ applied: q.queue.sent.length, events: 20_000, retried: 0, deadLettered: 0 });
    const read = async (api: IngestApi) => ({
      counter: (await api.get("/v1/counters/big/range?min=-inf&max=+inf&limit=2000")).body,
      trending: (await api.get("/v1/trending/big/top?n=100&window=24h")).body.items,
    });
    expect(await read(q)).toEqual(await read(d));
  });
});

describe("review 17: a key's scope and the times through the queue", () => {
  it("holds: the same Idempotency-Key from two ingest keys is two requests, queued as synchronously (each counted once)", async () => {
    const q = queued("r17-two-keys");
    const body = { member: "a", by: 2 };
    for (const key of ["ingest", TEST_INGEST_KEY_2, "ingest", TEST_INGEST_KEY_2]) {
      const res = await q.post("/v1/counters/c/incr", body, {
        key,
        headers: { ...q.asyncHeaders, "idempotency-key": "shared" },
      });
      expect(res.status).toBe(202);
    }
    const res = await deliver(q, q.queue.sent);
    expect(res.stats).toMatchObject({ applied: 2, duplicates: 2 });
    expect((await q.get("/v1/counters/c/members/a")).body.score).toBe(4);
  });

  it("holds: an `at` 4 min ahead (within the 5 min allowed at accept time) applies when consumed later, in its own hour", async () => {
    const q = queued("r17-ahead");
    const d = direct("r17-ahead-d");
    const at = T0 + 29 * 60_000 + 4 * 60_000; // 13:03, accepted at 12:30 + 29 min = 12:59
    q.advance(29 * 60_000);
    d.advance(29 * 60_000);
    const body = { events: [{ member: "soon", count: 2, at }] };
    expect((await q.post("/v1/trending/s/events", body, { headers: q.asyncHeaders })).status).toBe(202);
    expect((await d.post("/v1/trending/s/events", body)).status).toBe(200);
    const late = { events: [{ member: "later", at: q.now + 6 * 60_000 }] };
    expect((await q.post("/v1/trending/s/events", late, { headers: q.asyncHeaders })).status).toBe(400);
    expect(q.queue.sent).toHaveLength(1);
    q.advance(2 * HOUR);
    d.advance(2 * HOUR);
    expect((await deliver(q, q.queue.sent)).stats).toMatchObject({ applied: 1, deadLettered: 0 });
    const read = async (api: IngestApi) => (await api.get("/v1/trending/s/members/soon?window=24h")).body;
    expect(await read(q)).toEqual(await read(d));
    expect((await read(q)).count).toBe(2);
  });
});
