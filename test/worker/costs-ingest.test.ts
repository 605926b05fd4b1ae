/**
 * Measures every row of test/costs/ingest.ts in the state it names and asserts
 * the exact round trips and commands. Scripts are warmed first.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { area } from "../costs/ingest.ts";
import { costOf, expected } from "../costs/types.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";
import { createIngestApi, type IngestApi } from "../helpers/ingest.ts";

const rows = area.rows;
const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const track = cleanedUpAfterAll<IngestApi>();
const newApi = (label: string) => track(createIngestApi({ label, start: T0 }));

const STREAMS = ["pages", "search", "games"];
const events = (stream: string, r: number, n: number, members: number) =>
  Array.from({ length: n }, (_, i) => ({
    member: `${stream}-m${(r * 7 + i * 13) % members}`,
    count: 1 + ((r + i) % 3),
  }));

/** Queues `requests` async requests of `n` events round-robin over the 3 streams; returns the messages. */
async function queueTrending(api: IngestApi, requests: number, n: number, members: number) {
  api.queue.clear();
  for (let r = 0; r < requests; r++) {
    const stream = STREAMS[r % 3] as string;
    const res = await api.post(
      `/v1/trending/${stream}/events`,
      { events: events(stream, r, n, members) },
      { headers: api.asyncHeaders },
    );
    expect(res.status).toBe(202);
  }
  return [...api.queue.sent];
}

/** The same requests synchronously (into other streams), to compare. */
async function syncTrending(api: IngestApi, requests: number, n: number, members: number) {
  for (let r = 0; r < requests; r++) {
    const stream = STREAMS[r % 3] as string;
    const res = await api.post(`/v1/trending/sync-${stream}/events`, { events: events(stream, r, n, members) });
    expect(res.status).toBe(200);
  }
}

beforeAll(async () => {
  const api = newApi("icost-warm");
  await api.post("/v1/trending/w/events", { member: "w" }, { headers: api.asyncHeaders });
  await api.post("/v1/counters/w/incr", { member: "w" }, { headers: api.asyncHeaders });
  await api.post("/v1/presence/w/heartbeats", { id: "w" }, { headers: api.asyncHeaders });
  await api.deliver(api.queue.sent);
  await api.post("/v1/trending/w/events", { member: "w" });
  await api.get("/v1/ingest/status", { key: "admin" });
});

describe("queued ingest costs", () => {
  it("accepting costs no Redis command", async () => {
    const api = newApi("icost-accept");
    const m = await api.cost(() =>
      api.post("/v1/trending/s/events", { events: events("s", 0, 100, 40) }, { headers: api.asyncHeaders }),
    );
    expect(m.result.status).toBe(202);
    expect(costOf(m)).toEqual(expected(rows.accept));
  });

  it("a batch of 100 messages × 100 events, and the same requests synchronously", async () => {
    const api = newApi("icost-100");
    // steady: the hour's buckets exist (an earlier batch and earlier sync writes)
    await api.deliver(await queueTrending(api, 3, 100, 40));
    await syncTrending(api, 3, 100, 40);
    const sent = await queueTrending(api, 100, 100, 40);
    const m = await api.cost(() => api.deliver(sent));
    expect(m.result.stats).toMatchObject({ applied: 100, events: 10_000 });
    expect(costOf(m)).toEqual(expected(rows.batch100));
    expect(m.commands / 10_000).toBeLessThanOrEqual(0.1);
    expect(costOf(await api.cost(() => syncTrending(api, 100, 100, 40)))).toEqual(expected(rows.sync100));
    // all of them again, the next day: found applied, nothing written
    api.advance(12 * HOUR);
    const again = await api.cost(() => api.deliver(sent, { attempts: 2 }));
    expect(again.result.stats).toMatchObject({ applied: 0, duplicates: 100 });
    expect(costOf(again)).toEqual(expected(rows.redelivered));
  });

  it("a batch of 100 single-event messages, and the same requests synchronously", async () => {
    const api = newApi("icost-1");
    await api.deliver(await queueTrending(api, 3, 1, 20));
    await syncTrending(api, 3, 1, 20);
    const sent = await queueTrending(api, 100, 1, 20);
    const m = await api.cost(() => api.deliver(sent));
    expect(m.result.stats).toMatchObject({ applied: 100, events: 100 });
    expect(costOf(m)).toEqual(expected(rows.batch1));
    expect(m.commands / 100).toBeLessThanOrEqual(1);
    expect(costOf(await api.cost(() => syncTrending(api, 100, 1, 20)))).toEqual(expected(rows.sync1));
  });

  it("counters and presence batches", async () => {
    const api = newApi("icost-cp");
    const items = (r: number) =>
      Array.from({ length: 100 }, (_, i) => ({ member: `m${(r + i) % 50}`, by: 1 + (i % 4) }));
    await api.post("/v1/counters/c/incr", { items: items(0) });
    api.queue.clear();
    for (let r = 0; r < 100; r++)
      await api.post("/v1/counters/c/incr", { items: items(r) }, { headers: api.asyncHeaders });
    const mc = await api.cost(() => api.deliver([...api.queue.sent]));
    expect(mc.result.stats).toMatchObject({ applied: 100, events: 10_000 });
    expect(costOf(mc)).toEqual(expected(rows.counters));

    const ids = (r: number) => Array.from({ length: 10 }, (_, i) => `u${(r * 10 + i) % 200}`);
    await api.post("/v1/presence/r/heartbeats", { ids: Array.from({ length: 200 }, (_, i) => `u${i}`) });
    api.queue.clear();
    for (let r = 0; r < 100; r++)
      await api.post("/v1/presence/r/heartbeats", { ids: ids(r) }, { headers: api.asyncHeaders });
    const mp = await api.cost(() => api.deliver([...api.queue.sent]));
    expect(mp.result.stats).toMatchObject({ applied: 100, events: 1000 });
    expect(costOf(mp)).toEqual(expected(rows.presence));
  });

  it("a presence window whose ids were sent at different times", async () => {
    const api = newApi("icost-spread");
    const ids = (r: number) => Array.from({ length: 10 }, (_, i) => `u${(r * 10 + i) % 200}`);
    await api.post("/v1/presence/r/heartbeats", { ids: Array.from({ length: 200 }, (_, i) => `u${i}`) });
    api.queue.clear();
    for (let r = 0; r < 10; r++) {
      await api.post("/v1/presence/r/heartbeats", { ids: ids(r) }, { headers: api.asyncHeaders });
      api.advance(400);
    }
    const mp = await api.cost(() => api.deliver([...api.queue.sent]));
    expect(mp.result.stats).toMatchObject({ applied: 10, events: 100 });
    expect(costOf(mp)).toEqual(expected(rows.presenceSpread));
  });

  it("a keyed message: the synchronous record read and left", async () => {
    const api = newApi("icost-keyed");
    await api.post("/v1/trending/k/events", { member: "m" });
    api.queue.clear();
    const headers = { ...api.asyncHeaders, "idempotency-key": "cost-key-1" };
    expect((await api.post("/v1/trending/k/events", { member: "m" }, { headers })).status).toBe(202);
    const m = await api.cost(() => api.deliver([...api.queue.sent]));
    expect(m.result.stats).toMatchObject({ applied: 1, events: 1 });
    expect(costOf(m)).toEqual(expected(rows.keyed));
    api.queue.clear();
    expect((await api.post("/v1/trending/k/events", { member: "m" }, { headers: api.asyncHeaders })).status).toBe(202);
    const unkeyed = await api.cost(() => api.deliver([...api.queue.sent]));
    expect(unkeyed.commands).toBe(m.commands - 3);
  });

  it("status", async () => {
    const api = newApi("icost-status");
    const m = await api.cost(() => api.get("/v1/ingest/status", { key: "admin" }));
    expect(m.result.status).toBe(200);
    expect(costOf(m)).toEqual(expected(rows.status));
  });
});
