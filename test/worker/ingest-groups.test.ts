/**
 * Queued ingest per target: a storage error in one group retries only that
 * group's messages; counters and presence applied from the queue write what
 * their synchronous calls write.
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { consumeBatch, retryDelaySeconds } from "../../src/ingest/consume.ts";
import { command } from "../helpers/upstash-rest.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";
import { createIngestApi, failingFor, type IngestApi } from "../helpers/ingest.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const track = cleanedUpAfterAll<IngestApi>();
const newApi = (label: string) => track(createIngestApi({ label, start: T0 }));
const settings = { trendingRetentionHours: 50, presenceTimeoutSeconds: 300 };

describe("partial failure", () => {
  it("a storage error in one group retries only its messages; the others are applied and acked", async () => {
    const api = newApi("ingest-partial");
    for (const stream of ["ok1", "bad", "ok2", "bad"]) {
      await api.post(
        `/v1/trending/${stream}/events`,
        { events: [{ member: "m", count: 2 }] },
        { headers: api.asyncHeaders },
      );
    }
    const sent = api.queue.sent;
    const batch = createMessageBatch(
      "edgestats-ingest",
      sent.map((m) => ({ id: m.id, timestamp: m.timestamp, attempts: 2, body: m.body })),
    );
    const ctx = createExecutionContext();
    const stats = await consumeBatch(
      { redis: failingFor(api, ":trending:bad:"), prefix: api.prefix, now: api.now },
      batch.messages,
      settings,
    );
    const result = await getQueueResult(batch, ctx);
    expect(stats).toMatchObject({ applied: 2, retried: 2, deadLettered: 0 });
    expect(result.explicitAcks.sort()).toEqual([sent[0]?.id, sent[2]?.id].sort());
    expect(result.retryMessages.map((r) => r.msgId).sort()).toEqual([sent[1]?.id, sent[3]?.id].sort());
    // backing off with the attempts (the test harness does not report the delay it was given)
    expect([1, 2, 3, 7, 30].map(retryDelaySeconds)).toEqual([1, 2, 4, 60, 60]);
    expect((await api.keys()).some((k) => k.includes(":trending:bad:"))).toBe(false);
    // the retried messages come back alone, Redis answers: applied once
    const again = await api.deliver(
      [sent[1], sent[3]].filter((m) => m !== undefined),
      { attempts: 3 },
    );
    expect(again.stats).toMatchObject({ applied: 2, retried: 0 });
    const top = await api.get("/v1/trending/bad/top");
    expect(top.body.items).toEqual([{ rank: 1, member: "m", count: 4 }]);
    expect((await api.get("/v1/trending/ok1/top")).body.items).toEqual([{ rank: 1, member: "m", count: 2 }]);
    const status = await api.get("/v1/ingest/status", { key: "admin" });
    expect(status.body).toMatchObject({ applied: 4, retried: 2 });
  });
});

/** Keys of `a` and of `b` with their names swapped out, each with its type's content and TTL. */
async function snapshot(api: IngestApi, area: string, name: string) {
  const keys = (await api.keys()).filter(
    (k) => k.startsWith(`${api.prefix}:${area}:${name}:`) || k === `${api.prefix}:${area}:${name}`,
  );
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const type = await command<string>(api.target, "TYPE", key);
    const content =
      type === "zset"
        ? await command(api.target, "ZRANGE", key, 0, -1, "WITHSCORES")
        : type === "hash"
          ? // the index's `late` value comes from a global sequence: only whether it is set matters
            Object.fromEntries(
              (await command<string[]>(api.target, "HGETALL", key))
                .map((v, i, all) => (all[i - 1] === "late" ? "set" : v.replaceAll(`:${name}:`, ":N:")))
                .flatMap((v, i, all) => (i % 2 === 0 ? [[v, all[i + 1]]] : [])),
            )
          : await command(api.target, "GET", key);
    out[key.replace(`:${name}`, ":N")] = { type, content, ttl: await command(api.target, "TTL", key) };
  }
  return out;
}

describe("counters and presence from the queue", () => {
  // Queues do not order messages, so the consumer applies a batch as one request per counter; where the
  // outcome depends on order (a ttl on a later write of a key another write created), it is that batch's.
  it("counter increments (plain with ttl, day buckets, repeated members, a decrement) merge into what the synchronous calls write", async () => {
    const api = newApi("ingest-counters");
    const requests = [
      { items: [{ member: "a", by: 2, ttl: 7200 }, { member: "b" }, { member: "a", period: "day" }] },
      {
        items: [
          { member: "a", by: -1 },
          { member: "c", by: 5, period: "day", at: T0 - DAY, ttl: 86400 * 3 },
          { member: "a", period: "day" },
        ],
      },
      { member: "b", by: 3 },
    ];
    for (const body of requests) {
      expect((await api.post("/v1/counters/sync/incr", body)).status).toBe(200);
      expect((await api.post("/v1/counters/async/incr", body, { headers: api.asyncHeaders })).status).toBe(202);
    }
    const res = await api.deliver(api.queue.sent);
    expect(res.stats).toMatchObject({ applied: 3, events: 7 });
    expect(await snapshot(api, "counters", "async")).toEqual(await snapshot(api, "counters", "sync"));
    expect((await api.get("/v1/counters/async/top?n=10")).body.items).toEqual([
      { rank: 1, member: "b", score: 4 },
      { rank: 2, member: "a", score: 1 },
    ]);
    const names = await command<string[]>(api.target, "ZRANGE", `${api.prefix}:counters:_names`, 0, -1);
    expect(names.sort()).toEqual(["async", "sync"]);
  });

  it("heartbeats from the queue give the room the figures synchronous heartbeats give", async () => {
    const api = newApi("ingest-presence");
    const batches = [["u1", "u2", "u3"], ["u2", "u4"], ["u5"]];
    for (const ids of batches) {
      await api.post("/v1/presence/sync/heartbeats", { ids });
      await api.post("/v1/presence/async/heartbeats", { ids }, { headers: api.asyncHeaders });
      api.advance(1000);
    }
    const res = await api.deliver(api.queue.sent);
    expect(res.stats).toMatchObject({ applied: 3, events: 6 });
    const [a, s] = [await api.get("/v1/presence/async"), await api.get("/v1/presence/sync")];
    expect({ ...a.body, room: "x" }).toEqual({ ...s.body, room: "x" });
    expect(a.body).toMatchObject({ online: 5, activeToday: 5, newToday: 5, peakToday: 5 });
    const members = await api.get("/v1/presence/async/members");
    // last seen is the heartbeat's time (within the 5 s window it was merged in), not the consumer's
    expect(Math.max(...members.body.members.map((m: any) => m.lastSeen))).toBe(T0 + 2000);
    expect(Math.min(...members.body.members.map((m: any) => m.lastSeen))).toBeGreaterThanOrEqual(T0);
  });

  it("a heartbeat from before yesterday is dead-lettered", async () => {
    const api = newApi("ingest-presence-old");
    await api.post("/v1/presence/r/heartbeats", { id: "u1" }, { headers: api.asyncHeaders });
    api.advance(2 * DAY);
    const res = await api.deliver(api.queue.sent);
    expect(res.stats).toMatchObject({ applied: 0, deadLettered: 1 });
    expect(api.dlq.sent[0]?.body.reason).toBe("heartbeat older than yesterday");
  });
});

describe("bounded apply scripts", () => {
  it("attack: 12 queued requests of 1,000 new members to one stream are applied in scripts of at most 1,000 items, exactly", async () => {
    const api = newApi("ingest-chunks");
    for (let r = 0; r < 12; r++) {
      const events = Array.from({ length: 1000 }, (_, i) => ({ member: `r${r}-m${i}` }));
      expect((await api.post("/v1/trending/big/events", { events }, { headers: api.asyncHeaders })).status).toBe(202);
    }
    const { result, requests } = await api.cost(() => api.deliver(api.queue.sent));
    expect(result.stats).toMatchObject({ applied: 12, events: 12_000 });
    // 12,000 items in chunks of whole messages up to 1,000 entries (trending: one library call per
    // apply script, so an hour-bound refusal takes back all the script tried): 12 apply scripts,
    // plus the batch record (was 3 + 1 with chunks of 4,000)
    expect(requests).toBe(13);
    const top = await api.get("/v1/trending/big/members/r11-m999?window=1h");
    expect(top.body.count).toBe(1);
    const redelivered = await api.deliver(api.queue.sent);
    expect(redelivered.stats).toMatchObject({ applied: 0 });
    expect((await api.get("/v1/trending/big/members/r0-m0?window=1h")).body.count).toBe(1);
  });

  it("counters too: 5 queued requests of 1,000 new members to one counter are 5 apply scripts (was 2 with chunks of 4,000)", async () => {
    const api = newApi("ingest-counter-chunks");
    for (let r = 0; r < 5; r++) {
      const items = Array.from({ length: 1000 }, (_, i) => ({ member: `r${r}-m${i}` }));
      expect((await api.post("/v1/counters/big/incr", { items }, { headers: api.asyncHeaders })).status).toBe(202);
    }
    const { result, requests } = await api.cost(() => api.deliver(api.queue.sent));
    expect(result.stats).toMatchObject({ applied: 5, events: 5000 });
    // one library call per apply script, so a score-bound error takes back all the script tried
    // (test/worker/counters-score-bound-queued.test.ts): 5 apply scripts plus the batch record (was 2 + 1)
    expect(requests).toBe(6);
    expect((await api.get("/v1/counters/big/members/r4-m999")).body.score).toBe(1);
    expect((await api.deliver(api.queue.sent)).stats).toMatchObject({ applied: 0, duplicates: 5 });
    expect((await api.get("/v1/counters/big/members/r0-m0")).body.score).toBe(1);
  });

  it("bounds scripts by merged entries, not raw items: 12 requests about the same 1,000 members are one apply script", async () => {
    const api = newApi("ingest-merged-chunks");
    for (let r = 0; r < 12; r++) {
      const events = Array.from({ length: 1000 }, (_, i) => ({ member: `m${i}` }));
      expect((await api.post("/v1/trending/same/events", { events }, { headers: api.asyncHeaders })).status).toBe(202);
    }
    const { result, requests } = await api.cost(() => api.deliver(api.queue.sent));
    expect(result.stats).toMatchObject({ applied: 12, events: 12_000 });
    // 12,000 items merge into 1,000 entries (hour, member): one apply script, plus the batch record
    expect(requests).toBe(2);
    expect((await api.get("/v1/trending/same/members/m999?window=1h")).body.count).toBe(12);
  });
});
