/**
 * Review 25: queued ingest (`Prefer: respond-async`). The producer is the real route (the
 * recording INGEST_QUEUE of test/helpers/ingest.ts keeps what it is sent); the consumer is the
 * Worker's `consumeIngest` (or `consumeBatch` on a client of the same real Redis) fed
 * cloudflare:test message batches; reads go through the real routes against the real local
 * Upstash server. A confirmed bug is an `it.fails` asserting the right behaviour, with its
 * severity and the suggested fix above it; the rest pins what was checked and found right.
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { prefersAsync } from "../../functions/middleware/context.ts";
import { consumeBatch } from "../../src/ingest/consume.ts";
import type { RedisClient } from "../../src/redis/client.ts";
import { createIngestApi, failingFor, INGEST_SETTINGS, toDlq, type IngestApi, type Sent } from "../helpers/ingest.ts";
import { TEST_INGEST_KEY_2, TEST_KEYS } from "../helpers/keys.ts";
import { command } from "../helpers/upstash-rest.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";

const MINUTE = 60_000;
const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const track = cleanedUpAfterAll<IngestApi>();
const queued = (label: string) => track(createIngestApi({ label, start: T0 }));
const direct = (label: string) => track(createIngestApi({ label, start: T0, queue: false }));
const withPrefer = (prefer: string) => ({ headers: { prefer } });
const keyed = (api: IngestApi, key: string) => ({ headers: { ...api.asyncHeaders, "idempotency-key": key } });

/**
 * Delivers `messages` as one batch to consumeBatch on `redis`, each on its delivery of `attempts`;
 * `delays` has the delaySeconds each retry asked for (getQueueResult does not report them).
 */
async function consumeOn(api: IngestApi, messages: Sent[], redis: RedisClient, attempts: number[]) {
  const batch = createMessageBatch(
    "edgestats-ingest",
    messages.map((m, i) => ({ id: m.id, timestamp: m.timestamp, attempts: attempts[i] ?? 1, body: m.body })),
  );
  const delays: Record<string, number | undefined> = {};
  for (const m of batch.messages) {
    const retry = m.retry.bind(m);
    Object.defineProperty(m, "retry", {
      value: (options?: QueueRetryOptions) => {
        delays[m.id] = options?.delaySeconds;
        retry(options);
      },
    });
  }
  const stats = await consumeBatch({ redis, prefix: api.prefix, now: api.now }, batch.messages, INGEST_SETTINGS, {
    deadLetter: toDlq(api),
    maxRetries: 10,
  });
  return { ...(await getQueueResult(batch, createExecutionContext())), stats, delays };
}

/** A client of the api's real Redis (every script reaches it). */
const real = (api: IngestApi) => failingFor(api, "\u0000no key has this\u0000");

/** A member's score, 0 when absent (404). */
async function scoreOf(api: IngestApi, member: string, counter = "c") {
  const res = await api.get(`/v1/counters/${counter}/members/${member}`);
  if (res.status === 404) return 0;
  expect(res.status).toBe(200);
  return res.body.score as number;
}

async function topOf(api: IngestApi, stream = "s") {
  const res = await api.get(`/v1/trending/${stream}/top?n=100&window=24h`);
  expect(res.status).toBe(200);
  return Object.fromEntries(res.body.items.map((i: any) => [i.member, i.count]));
}

describe("review 25: Prefer header variants", () => {
  it.each([
    "respond-async",
    "Respond-Async",
    "RESPOND-ASYNC",
    "  respond-async  ",
    "respond-async; wait=10",
    "respond-async;foo=bar",
    "wait=10, respond-async",
    "return=minimal,respond-async",
    "handling=lenient, respond-async, wait=5",
    'respond-async=""',
    "respond-async=; wait=3",
  ])("holds: %j queues (202, Preference-Applied, one message)", async (prefer) => {
    const q = queued("r25-prefer-yes");
    const res = await q.post("/v1/trending/s/events", { member: "a" }, withPrefer(prefer));
    expect(res.status).toBe(202);
    expect(res.headers.get("preference-applied")).toBe("respond-async");
    expect(res.body).toEqual({ queued: 1, requestId: res.headers.get("x-request-id") });
    expect(q.queue.sent).toHaveLength(1);
  });

  it.each(["respond-sync", "norespond-async", "respond-async-later", "wait=10", "return=representation", ""])(
    "holds: %j is written synchronously (200, no Preference-Applied, nothing queued)",
    async (prefer) => {
      const q = queued("r25-prefer-no");
      const res = await q.post("/v1/trending/s/events", { member: "a" }, withPrefer(prefer));
      expect(res.status).toBe(200);
      expect(res.headers.get("preference-applied")).toBeNull();
      expect(q.queue.sent).toEqual([]);
    },
  );

  it("holds: two Prefer headers (the Fetch API joins them with ', ') queue", async () => {
    const q = queued("r25-prefer-two");
    const headers = new Headers({ authorization: `Bearer ${TEST_KEYS.ingest}`, "content-type": "application/json" });
    headers.append("prefer", "wait=10");
    headers.append("prefer", "respond-async");
    const res = await q.app.request(
      "/v1/counters/c/incr",
      { method: "POST", headers, body: JSON.stringify({ member: "a" }) },
      q.env,
    );
    expect(res.status).toBe(202);
    expect(q.queue.sent).toHaveLength(1);
  });

  // Severity: low. RFC 7240 §2: "Empty or zero-length values on both the preference token and
  // within parameters are equivalent to no value being specified at all", so `respond-async=""`
  // (and `respond-async=` with BWS) ask for the same as `respond-async`. prefersAsync compares
  // the whole `name=value` text with the token, so these are written synchronously. Harmless
  // (a preference may be ignored) but not the RFC's reading. Fix: compare the part before `=`
  // (trimmed) when the value is empty.
  // Fixed in review 25 (functions/middleware/context.ts prefersAsync).
  it('respond-async="" (an empty value) is respond-async (RFC 7240 §2)', () => {
    expect(prefersAsync('respond-async=""')).toBe(true);
    expect(prefersAsync("respond-async =")).toBe(true);
  });

  it("holds: a value that is not empty does not turn a preference into respond-async, nor a quoted one", () => {
    expect(prefersAsync('foo="respond-async"')).toBe(false);
    expect(prefersAsync("respond-asyncx")).toBe(false);
    expect(prefersAsync(undefined)).toBe(false);
  });
});

describe("review 25: refusals of queued writes name their error and queue nothing", () => {
  const cases: [
    string,
    string,
    unknown,
    { key?: string; headers?: Record<string, string>; raw?: string },
    number,
    string,
  ][] = [
    ["no key", "/v1/trending/s/events", { member: "a" }, { key: "none" }, 401, "unauthorized"],
    ["read key", "/v1/counters/c/incr", { member: "a" }, { key: "read" }, 403, "forbidden"],
    ["bad member", "/v1/trending/s/events", { member: "" }, {}, 400, "invalid_request"],
    ["by past 1e12", "/v1/counters/c/incr", { member: "a", by: 2e12 }, {}, 400, "invalid_request"],
    ["bad name", "/v1/presence/-bad/heartbeats", { id: "u" }, {}, 400, "invalid_request"],
    ["at ahead", "/v1/trending/s/events", { member: "a", at: T0 + 10 * MINUTE }, {}, 400, "invalid_request"],
    [
      "not json",
      "/v1/counters/c/incr",
      undefined,
      { raw: "{", headers: { "content-type": "application/json" } },
      400,
      "",
    ],
    [
      "wrong type",
      "/v1/counters/c/incr",
      undefined,
      { raw: "member=a", headers: { "content-type": "text/plain" } },
      415,
      "",
    ],
  ];
  it.each(cases)(
    "holds: %s → its status, the error envelope, nothing queued",
    async (_, path, body, init, status, code) => {
      const q = queued("r25-refusals");
      const res = await q.post(path, body, { ...init, headers: { ...init.headers, ...q.asyncHeaders } } as any);
      expect(res.status).toBe(status);
      expect(typeof res.body.error.code).toBe("string");
      if (code) expect(res.body.error.code).toBe(code);
      expect(res.headers.get("preference-applied")).toBeNull();
      expect(q.queue.sent).toEqual([]);
      expect(await q.keys()).toEqual([]);
    },
  );

  it("holds: a queue that refuses the send is 503 storage_unavailable, nothing written", async () => {
    const q = queued("r25-send-fails");
    (q.env as any).INGEST_QUEUE = {
      async sendBatch() {
        throw new Error("queue unavailable");
      },
    };
    const res = await q.post("/v1/counters/c/incr", { member: "a" }, { headers: q.asyncHeaders });
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe("storage_unavailable");
    expect(await q.keys()).toEqual([]);
  });
});

describe("review 25: a batch mixing kinds, stale messages and duplicates", () => {
  it("holds: fresh messages of three kinds applied, two stale dead-lettered, a redelivery and a keyed copy acked as duplicates", async () => {
    const q = queued("r25-mixed");
    // stale by the time the consumer runs: a trending event of T0's hour (51 h later: past the 50 h
    // retention) and a heartbeat of T0 (two days later: before yesterday)
    expect((await q.post("/v1/trending/old/events", { member: "x" }, { headers: q.asyncHeaders })).status).toBe(202);
    expect((await q.post("/v1/presence/old/heartbeats", { id: "u0" }, { headers: q.asyncHeaders })).status).toBe(202);
    // applied late (a backlog), redelivered an hour later (its ack lost; within 24 h of its
    // application, the applied sets' promise)
    expect((await q.post("/v1/counters/c/incr", { member: "d", by: 3 }, { headers: q.asyncHeaders })).status).toBe(202);
    const [staleT, staleP, early] = q.queue.sent.splice(0) as [Sent, Sent, Sent];
    q.advance(50 * HOUR);
    expect((await q.deliver([early])).stats).toMatchObject({ applied: 1 });
    q.advance(HOUR);
    const fresh: [string, unknown][] = [
      ["/v1/trending/s/events", { events: [{ member: "a" }, { member: "b", count: 2 }] }],
      [
        "/v1/counters/c/incr",
        {
          items: [
            { member: "a", by: 2 },
            { member: "d", by: 1 },
          ],
        },
      ],
      ["/v1/presence/r/heartbeats", { ids: ["u1", "u2"] }],
    ];
    for (const [path, body] of fresh) expect((await q.post(path, body, { headers: q.asyncHeaders })).status).toBe(202);
    // a keyed request and its client's retry
    const k = { events: [{ member: "k" }] };
    expect((await q.post("/v1/trending/s/events", k, keyed(q, "r25-k"))).status).toBe(202);
    q.advance(1000);
    expect((await q.post("/v1/trending/s/events", k, keyed(q, "r25-k"))).status).toBe(202);
    const batch = [
      q.queue.sent[4]!,
      staleT,
      q.queue.sent[0]!,
      early,
      q.queue.sent[1]!,
      staleP,
      q.queue.sent[2]!,
      q.queue.sent[3]!,
    ];
    const res = await q.deliver(batch, { attempts: 1 });
    expect(res.retryMessages).toEqual([]);
    expect(res.explicitAcks.sort()).toEqual(batch.map((m) => m.id).sort());
    expect(res.stats).toMatchObject({ applied: 4, deadLettered: 2, duplicates: 2, retried: 0, events: 2 + 2 + 2 + 1 });
    expect(q.dlq.sent.map((m) => m.body.messageId).sort()).toEqual([staleT.id, staleP.id].sort());
    expect(await topOf(q)).toEqual({ a: 1, b: 2, k: 1 });
    expect(await scoreOf(q, "a")).toBe(2);
    expect(await scoreOf(q, "d")).toBe(4);
    expect((await q.get("/v1/presence/r")).body.online).toBe(2);
    expect((await q.get("/v1/presence/old")).body.online).toBe(0);
    // the same batch again (every ack lost): all duplicates, nothing sent again
    q.advance(2000);
    const again = await q.deliver(batch, { attempts: 2 });
    expect(again.stats).toMatchObject({ applied: 0, deadLettered: 0 });
    expect(again.stats.duplicates).toBe(batch.length);
    expect(q.dlq.sent).toHaveLength(2);
    expect(await topOf(q)).toEqual({ a: 1, b: 2, k: 1 });
  });
});

describe("review 25: Idempotency-Key with different bodies across the two ways of sending", () => {
  const a = { items: [{ member: "a", by: 5 }] };
  const b = { items: [{ member: "a", by: 7 }] };

  it("holds: sync body A then queued body B under the same key: both applied (docs: the queued one cannot be refused)", async () => {
    const q = queued("r25-idem-sync-a-async-b");
    expect((await q.post("/v1/counters/c/incr", a, { headers: { "idempotency-key": "k" } })).status).toBe(200);
    expect((await q.post("/v1/counters/c/incr", b, keyed(q, "k"))).status).toBe(202);
    expect((await q.deliver(q.queue.sent)).stats).toMatchObject({ applied: 1, duplicates: 0 });
    expect(await scoreOf(q, "a")).toBe(12);
    // the record stays the synchronous one's: A replays, B is a 409
    const replay = await q.post("/v1/counters/c/incr", a, { headers: { "idempotency-key": "k" } });
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    const other = await q.post("/v1/counters/c/incr", b, { headers: { "idempotency-key": "k" } });
    expect(other.status).toBe(409);
    expect(await scoreOf(q, "a")).toBe(12);
  });

  it("holds: queued body A consumed, then sync body B under the key: 409, nothing written; sync A: the summarised replay", async () => {
    const q = queued("r25-idem-async-a-sync-b");
    expect((await q.post("/v1/counters/c/incr", a, keyed(q, "k"))).status).toBe(202);
    expect((await q.deliver(q.queue.sent)).stats).toMatchObject({ applied: 1 });
    const other = await q.post("/v1/counters/c/incr", b, { headers: { "idempotency-key": "k" } });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe("idempotency_key_reused");
    const replay = await q.post("/v1/counters/c/incr", a, { headers: { "idempotency-key": "k" } });
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-summarised")).toBe("true");
    expect(replay.body).toMatchObject({ replayed: true, summarised: true, summary: { queued: true } });
    expect(await scoreOf(q, "a")).toBe(5);
  });

  it("holds: the same key and body queued by two ingest keys are two requests, both applied", async () => {
    const q = queued("r25-idem-two-keys");
    expect((await q.post("/v1/counters/c/incr", a, keyed(q, "k"))).status).toBe(202);
    expect((await q.post("/v1/counters/c/incr", a, { ...keyed(q, "k"), key: TEST_INGEST_KEY_2 })).status).toBe(202);
    expect((await q.deliver(q.queue.sent)).stats).toMatchObject({ applied: 2, duplicates: 0 });
    expect(await scoreOf(q, "a")).toBe(10);
  });
});

describe("review 25: an ingest key rotated out between the 202 and the consumer", () => {
  // Decided: the 202 promised the write (it was authorized when it arrived); the consumer does not
  // re-authorize, and a message carries no key. Pinned; docs/ingest.md says so since review 25.
  it("holds: the write accepted under the removed key is applied; the removed key is refused (401) from then on", async () => {
    const q = queued("r25-rotated");
    const res = await q.post(
      "/v1/counters/c/incr",
      { member: "a", by: 4 },
      { headers: q.asyncHeaders, key: TEST_INGEST_KEY_2 },
    );
    expect(res.status).toBe(202);
    expect(JSON.stringify(q.queue.sent[0]?.body)).not.toContain(TEST_INGEST_KEY_2);
    (q.env as any).INGEST_KEYS = TEST_KEYS.ingest;
    const refused = await q.post(
      "/v1/counters/c/incr",
      { member: "a" },
      { headers: q.asyncHeaders, key: TEST_INGEST_KEY_2 },
    );
    expect(refused.status).toBe(401);
    expect(q.queue.sent).toHaveLength(1);
    expect((await q.deliver(q.queue.sent)).stats).toMatchObject({ applied: 1 });
    expect(await scoreOf(q, "a")).toBe(4);
  });
});

describe("review 25: a write that throws a non-storage error", () => {
  // A counter key of the wrong type (a collision no route makes; set here by hand): its script
  // fails with Redis's WRONGTYPE, not a storage error. The other target of the batch applies.
  it("holds: only that target's message is retried (1 s), the other applied; on its last delivery it is dead-lettered, named", async () => {
    const q = queued("r25-wrongtype");
    expect((await q.post("/v1/counters/c/incr", { member: "a", by: 2 }, { headers: q.asyncHeaders })).status).toBe(202);
    expect((await q.post("/v1/counters/ok/incr", { member: "a", by: 3 }, { headers: q.asyncHeaders })).status).toBe(
      202,
    );
    // break "c": its plain key is a zset under the prefix; replace it with a string
    expect((await q.post("/v1/counters/c/incr", { member: "z" })).status).toBe(200);
    const keys = (await q.keys()).filter((k: string) => k.endsWith(":counters:c") || /:counters:c$|:c$/.test(k));
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) {
      await command(q.target, "DEL", key);
      await command(q.target, "SET", key, "not a zset");
    }
    const [bad, good] = q.queue.sent as [Sent, Sent];
    const one = await consumeOn(q, [bad, good], real(q), [1, 1]);
    expect(one.stats).toMatchObject({ applied: 1, retried: 1, deadLettered: 0 });
    expect(one.retryMessages).toEqual([{ msgId: bad.id }]);
    expect(one.delays).toEqual({ [bad.id]: 1 });
    expect(await scoreOf(q, "a", "ok")).toBe(3);
    q.advance(5 * MINUTE);
    const last = await q.deliver([bad], { attempts: 11 });
    expect(last.stats).toMatchObject({ deadLettered: 1, retried: 0 });
    expect(last.explicitAcks).toEqual([bad.id]);
    expect(q.dlq.sent.map((m) => m.body.messageId)).toEqual([bad.id]);
    expect(q.dlq.sent[0]?.body.reason).toMatch(/WRONGTYPE/);
  });

  // Severity: low. The reason of a message dead-lettered after a non-storage error (Redis's own
  // reply to the script: WRONGTYPE, a script bug) says "storage error: …", which sends the operator
  // to look at Upstash's availability. Fix: consume.ts names it by kind (`storage error` only for a
  // StorageUnavailableError, else `error`).
  // Fixed in review 25 (consume.ts: `error: …` unless a StorageUnavailableError).
  it("the dead-letter reason of a non-storage error does not call it a storage error", async () => {
    const q = queued("r25-wrongtype-reason");
    expect((await q.post("/v1/counters/c/incr", { member: "a", by: 2 }, { headers: q.asyncHeaders })).status).toBe(202);
    expect((await q.post("/v1/counters/c/incr", { member: "z" })).status).toBe(200);
    for (const key of (await q.keys()).filter((k: string) => /:c$/.test(k))) {
      await command(q.target, "DEL", key);
      await command(q.target, "SET", key, "not a zset");
    }
    await q.deliver(q.queue.sent, { attempts: 11 });
    expect(q.dlq.sent).toHaveLength(1);
    expect(q.dlq.sent[0]?.body.reason).toMatch(/WRONGTYPE/);
    expect(q.dlq.sent[0]?.body.reason).not.toMatch(/^storage error/);
  });
});

describe("review 25: retry delays", () => {
  it("holds: 1, 2, 4 … 60 s by attempt; attempt 11 (the last of max_retries 10) is dead-lettered, not retried", async () => {
    const q = queued("r25-delays");
    expect((await q.post("/v1/counters/c/incr", { member: "a" }, { headers: q.asyncHeaders })).status).toBe(202);
    const [m] = q.queue.sent as [Sent];
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 10; attempt++) {
      const r = await consumeOn(q, [m], failingFor(q, ":counters:c"), [attempt]);
      expect(r.retryMessages).toEqual([{ msgId: m.id }]);
      delays.push(r.delays[m.id]!);
    }
    expect(delays).toEqual([1, 2, 4, 8, 16, 32, 60, 60, 60, 60]);
    const last = await consumeOn(q, [m], failingFor(q, ":counters:c"), [11]);
    expect(last.retryMessages).toEqual([]);
    expect(last.stats).toMatchObject({ deadLettered: 1 });
  });
});

describe("review 25: order within a batch for one member", () => {
  it("holds: increments and decrements of one member in one batch, any order, sum as one request carrying them", async () => {
    const q = queued("r25-order");
    const d = direct("r25-order-d");
    const bodies = [
      { items: [{ member: "a", by: 5, period: "day" }] },
      { items: [{ member: "a", by: -3, period: "day" }] },
      { items: [{ member: "a", by: 2.5 }] },
    ];
    for (const body of bodies)
      expect((await q.post("/v1/counters/c/incr", body, { headers: q.asyncHeaders })).status).toBe(202);
    await q.deliver([...q.queue.sent].reverse());
    expect((await d.post("/v1/counters/c/incr", { items: bodies.flatMap((b) => b.items) })).status).toBe(200);
    const read = async (api: IngestApi) => ({
      plain: await scoreOf(api, "a"),
      day: (await api.get("/v1/counters/c/top?n=10&period=day&from=2026-11-22&to=2026-11-22")).body.items,
    });
    expect(await read(q)).toEqual(await read(d));
  });

  // Near the ±1e15 bound the order of separate requests matters. Accepted in the order +20 then −20
  // at 1e15 − 10: synchronously the first is refused (400) and the second applied. Queued, their
  // sum (0) is applied: both requests count and the score never leaves the bound. Docs: the result
  // is that of one request carrying both; pinned against that request sent synchronously.
  it("holds: +20 then −20 queued at 1e15 − 10 apply together (their sum); the score ends where one request carrying both leaves it", async () => {
    const q = queued("r25-bound-order");
    const d = direct("r25-bound-order-d");
    const full = { items: Array.from({ length: 1000 }, () => ({ member: "a", by: 1e12 })) };
    for (const api of [q, d]) {
      expect((await api.post("/v1/counters/c/incr", full)).status).toBe(200);
      expect((await api.post("/v1/counters/c/incr", { member: "a", by: -10 })).status).toBe(200);
    }
    expect((await q.post("/v1/counters/c/incr", { member: "a", by: 20 }, { headers: q.asyncHeaders })).status).toBe(
      202,
    );
    expect((await q.post("/v1/counters/c/incr", { member: "a", by: -20 }, { headers: q.asyncHeaders })).status).toBe(
      202,
    );
    const res = await q.deliver(q.queue.sent);
    const one = await d.post("/v1/counters/c/incr", {
      items: [
        { member: "a", by: 20 },
        { member: "a", by: -20 },
      ],
    });
    expect(await scoreOf(q, "a")).toBe(await scoreOf(d, "a"));
    // that request is refused whole synchronously (the script checks each ZINCRBY's answer, and
    // +20 first passes the bound); queued, the increments are merged per member first, so the sum
    // (0) is checked and both messages apply. The score is the same either way (nothing moved).
    expect(one.status).toBe(400);
    expect(res.stats).toMatchObject({ applied: 2, deadLettered: 0 });
    expect(await scoreOf(q, "a")).toBe(1e15 - 10);
  });
});

describe("review 25: command counts of a consumed batch against docs/costs.md", () => {
  it("holds: a keyed message costs 3 commands more than the same message unkeyed (docs/ingest.md)", async () => {
    const plain = queued("r25-cost-plain");
    const withKey = queued("r25-cost-keyed");
    for (const api of [plain, withKey])
      expect((await api.post("/v1/counters/c/incr", { member: "warm" })).status).toBe(200);
    expect((await plain.post("/v1/counters/c/incr", { member: "a" }, { headers: plain.asyncHeaders })).status).toBe(
      202,
    );
    expect((await withKey.post("/v1/counters/c/incr", { member: "a" }, keyed(withKey, "k"))).status).toBe(202);
    const p = await plain.cost(() => plain.deliver(plain.queue.sent));
    const k = await withKey.cost(() => withKey.deliver(withKey.queue.sent));
    expect(p.result.stats.applied).toBe(1);
    expect(k.result.stats.applied).toBe(1);
    expect(k.requests).toBe(p.requests);
    expect(k.commands - p.commands).toBe(3);
  });
});

describe("review 25: more refusals and routes that never queue", () => {
  it("holds: past the rate limit a queued write is 429 rate_limited, nothing queued", async () => {
    const q = track(createIngestApi({ label: "r25-rate", start: T0, vars: { RATE_LIMIT_PER_10S: "1" } }));
    expect((await q.post("/v1/counters/c/incr", { member: "a" }, { headers: q.asyncHeaders })).status).toBe(202);
    const res = await q.post("/v1/counters/c/incr", { member: "a" }, { headers: q.asyncHeaders });
    expect(res.status).toBe(429);
    expect(res.body.error.code).toBe("rate_limited");
    expect(q.queue.sent).toHaveLength(1);
  });

  it("holds: a presence leave ignores the header (synchronous, no Preference-Applied; histograms and leaderboards: review 17)", async () => {
    const q = queued("r25-never-queued");
    const leave = await q.del("/v1/presence/r/members/u1", { headers: q.asyncHeaders });
    expect(leave.status).toBe(204);
    expect(leave.headers.get("preference-applied")).toBeNull();
    expect(q.queue.sent).toEqual([]);
  });
});

describe("review 25: too big for one sendBatch, with an Idempotency-Key", () => {
  const events = Array.from({ length: 1000 }, (_, i) => ({
    member: `${String(i).padStart(4, "0")}${"m".repeat(252)}`,
  }));
  it("holds: written synchronously with its record; the same request again (queued or not) is a replay", async () => {
    const q = queued("r25-too-big-keyed");
    const first = await q.post("/v1/trending/s/events", { events }, keyed(q, "big"));
    expect(first.status).toBe(200);
    expect(first.headers.get("preference-applied")).toBeNull();
    const again = await q.post("/v1/trending/s/events", { events }, keyed(q, "big"));
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(q.queue.sent).toEqual([]);
    const top = await q.get("/v1/trending/s/top?n=1&window=24h");
    expect(top.body.items[0].count).toBe(1);
  });
});

describe("review 25: a stale queued copy of a request applied synchronously", () => {
  it("holds: sent synchronously, then queued under the same key; the copy aged out when consumed: acked, not dead-lettered", async () => {
    const q = queued("r25-stale-of-sync");
    const body = { items: [{ member: "a", by: 5, period: "hour", ttl: 3600 }] };
    expect((await q.post("/v1/counters/c/incr", body, { headers: { "idempotency-key": "k" } })).status).toBe(200);
    q.advance(MINUTE);
    expect((await q.post("/v1/counters/c/incr", body, keyed(q, "k"))).status).toBe(202);
    q.advance(2 * HOUR);
    const res = await q.deliver(q.queue.sent);
    expect(res.stats).toMatchObject({ duplicates: 1, deadLettered: 0, applied: 0 });
    expect(q.dlq.sent).toEqual([]);
  });
});

describe("review 25: bounds met by a merged batch", () => {
  it("holds: ten +1e12 increments queued at 1e15 − 5e12: five applied, five dead-lettered naming the bound; the score ends at 1e15", async () => {
    const q = queued("r25-bound-five");
    const full = { items: Array.from({ length: 995 }, () => ({ member: "a", by: 1e12 })) };
    expect((await q.post("/v1/counters/c/incr", full)).status).toBe(200);
    for (let i = 0; i < 10; i++)
      expect((await q.post("/v1/counters/c/incr", { member: "a", by: 1e12 }, { headers: q.asyncHeaders })).status).toBe(
        202,
      );
    const res = await q.deliver(q.queue.sent);
    expect(res.retryMessages).toEqual([]);
    expect(res.stats).toMatchObject({ applied: 5, deadLettered: 5, events: 5 });
    expect(await scoreOf(q, "a")).toBe(1e15);
    for (const m of q.dlq.sent) expect(m.body.reason).toMatch(/1e15/);
    // the batch again (acks lost): nothing applied or sent twice
    q.advance(2000);
    const again = await q.deliver(q.queue.sent, { attempts: 2 });
    expect(again.stats).toMatchObject({ applied: 0, deadLettered: 0, duplicates: 10 });
    expect(q.dlq.sent).toHaveLength(5);
    expect(await scoreOf(q, "a")).toBe(1e15);
  });

  it("holds: sixty events of count 1e12 for one member and hour: fifty applied (5e13), ten dead-lettered", async () => {
    const q = queued("r25-hour-bound");
    for (let i = 0; i < 60; i++)
      expect(
        (await q.post("/v1/trending/s/events", { member: "a", count: 1e12 }, { headers: q.asyncHeaders })).status,
      ).toBe(202);
    const res = await q.deliver(q.queue.sent);
    expect(res.retryMessages).toEqual([]);
    expect(res.stats).toMatchObject({ applied: 50, deadLettered: 10 });
    expect((await topOf(q)).a).toBe(5e13);
  });
});

describe("review 25: an error on the EVAL path (Redis did not know the script yet)", () => {
  /**
   * A client of the api's real Redis that does not know any script yet (a fresh or flushed Redis,
   * a new release's script): every EVALSHA answers NOSCRIPT, as Redis does, so each call goes on
   * with EVAL of the script's text (src/redis/run.ts), which the real Redis runs.
   */
  const unloaded = (api: IngestApi): RedisClient => {
    const redis = real(api);
    return {
      ping: () => redis.ping(),
      evalsha: (() =>
        Promise.reject(
          Object.assign(new Error("NOSCRIPT No matching script. Please use EVAL."), { name: "UpstashError" }),
        )) as RedisClient["evalsha"],
      eval: redis.eval,
    };
  };

  it("holds: on that path a queued write applies as usual", async () => {
    const q = queued("r25-eval-ok");
    expect((await q.post("/v1/counters/c/incr", { member: "a", by: 2 }, { headers: q.asyncHeaders })).status).toBe(202);
    const one = await consumeOn(q, q.queue.sent, unloaded(q), [1]);
    expect(one.stats).toMatchObject({ applied: 1 });
    expect(await scoreOf(q, "a")).toBe(2);
  });

  it("holds: on that path a bound is still a bound: dead-lettered at once, naming it", async () => {
    const q = queued("r25-eval-bound");
    const full = { items: Array.from({ length: 1000 }, () => ({ member: "a", by: 1e12 })) };
    expect((await q.post("/v1/counters/c/incr", full)).status).toBe(200);
    expect((await q.post("/v1/counters/c/incr", { member: "a", by: 1 }, { headers: q.asyncHeaders })).status).toBe(202);
    const one = await consumeOn(q, q.queue.sent, unloaded(q), [1]);
    expect(one.stats).toMatchObject({ deadLettered: 1, retried: 0 });
    expect(q.dlq.sent[0]?.body.reason).toMatch(/±1e15/);
    expect(await scoreOf(q, "a")).toBe(1e15);
  });

  // Severity: low (it takes an error reply of Redis's own: a script bug, a key of the wrong type).
  // boundRefusal (src/ingest/dead-letter.ts) takes any error whose message *contains* `ERR
  // counters.incr out_of_range` (or `ERR trending.record hour_count`) for the bound. An error of an
  // EVAL carries the request (`…, command was: ["eval","<script text>",…]`), and the apply script's
  // text holds those very strings, so on the EVAL path every script error reads as the bound: a
  // message alone is dead-lettered at once as "a counter score outside ±1e15" (its ids marked
  // applied, so a fixed release cannot apply it either), not retried; the same error via EVALSHA is
  // retried. Fix: match the bound in the reply's own text (before `, command was: `), not in the
  // command echoed after it.
  // Fixed in review 25 (dead-letter.ts boundRefusal reads the text before `, command was: `).
  it("a script error is retried, not dead-lettered as a bound refusal", async () => {
    const q = queued("r25-eval-wrongtype");
    expect((await q.post("/v1/counters/c/incr", { member: "a", by: 2 }, { headers: q.asyncHeaders })).status).toBe(202);
    expect((await q.post("/v1/counters/c/incr", { member: "z" })).status).toBe(200);
    for (const key of (await q.keys()).filter((k: string) => /:c$/.test(k))) {
      await command(q.target, "DEL", key);
      await command(q.target, "SET", key, "not a zset");
    }
    const one = await consumeOn(q, q.queue.sent, unloaded(q), [1]);
    expect(q.dlq.sent.map((m) => m.body.reason)).toEqual([]);
    expect(one.stats).toMatchObject({ retried: 1, deadLettered: 0 });
    expect(one.retryMessages).toEqual([{ msgId: q.queue.sent[0]!.id }]);
  });
});
