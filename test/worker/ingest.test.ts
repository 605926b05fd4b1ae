/**
 * Queued ingest (issue 16): `Prefer: respond-async` answers 202 after the same
 * validation as the synchronous call; the consumer merges a batch per target,
 * applies each target in one script, exactly once, and dead-letters what can
 * never apply.
 */
import { describe, expect, it } from "vitest";
import { command } from "../helpers/upstash-rest.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";
import { createIngestApi, type IngestApi } from "../helpers/ingest.ts";

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const track = cleanedUpAfterAll<IngestApi>();
const newApi = (label: string, options: { queue?: boolean } = {}) =>
  track(createIngestApi({ label, start: T0, ...options }));

/** Deterministic events: 100 per request over `members` members of `stream`, counts 1..3. */
function eventsFor(stream: string, request: number, members = 40) {
  return Array.from({ length: 100 }, (_, i) => ({
    member: `${stream}-m${(request * 7 + i * 13) % members}`,
    count: 1 + ((request + i) % 3),
  }));
}

function tally(list: { member: string; count: number }[], into = new Map<string, number>()) {
  for (const e of list) into.set(e.member, (into.get(e.member) ?? 0) + e.count);
  return into;
}

async function topOf(api: IngestApi, stream: string) {
  const top = await api.get(`/v1/trending/${stream}/top?n=100&window=24h`);
  expect(top.status).toBe(200);
  return new Map<string, number>(top.body.items.map((i: any) => [i.member, i.count]));
}

describe("Prefer: respond-async", () => {
  it("answers 202 with queued and requestId, Preference-Applied, and writes nothing to Redis", async () => {
    const api = newApi("ingest-202");
    const res = await api.post(
      "/v1/trending/s/events",
      { events: [{ member: "a" }, { member: "b", count: 2 }] },
      { headers: api.asyncHeaders },
    );
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ queued: 2, requestId: res.headers.get("x-request-id") });
    expect(res.headers.get("preference-applied")).toBe("respond-async");
    expect(await api.keys()).toEqual([]);
    expect(api.queue.sent).toHaveLength(1);
    // every event is stamped with the request's time: it lands in the hour it was sent in
    expect(api.queue.sent[0]?.body).toMatchObject({
      v: 1,
      kind: "trending",
      name: "s",
      t: T0,
      events: [
        { member: "a", count: 1, at: T0 },
        { member: "b", count: 2, at: T0 },
      ],
    });
    const c = await api.post(
      "/v1/counters/c/incr",
      { items: [{ member: "x", by: 2, period: "day" }, { member: "y" }] },
      { headers: { prefer: "wait=5, respond-async" } },
    );
    expect(c.status).toBe(202);
    expect(c.body.queued).toBe(2);
    const p = await api.post("/v1/presence/r/heartbeats", { ids: ["u1", "u2", "u3"] }, { headers: api.asyncHeaders });
    expect(p.status).toBe(202);
    expect(p.body.queued).toBe(3);
    expect(api.queue.sent.map((m) => m.body.kind)).toEqual(["trending", "counters", "presence"]);
    expect(await api.keys()).toEqual([]);
  });

  it("without the queue binding the header is ignored: synchronous 200, no Preference-Applied", async () => {
    const api = newApi("ingest-nobinding", { queue: false });
    const res = await api.post("/v1/trending/s/events", { member: "a" }, { headers: api.asyncHeaders });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ accepted: 1 });
    expect(res.headers.get("preference-applied")).toBeNull();
    expect((await topOf(api, "s")).get("a")).toBe(1);
  });

  it("a bad request is a 400 and queues nothing (schema errors and the library's own checks)", async () => {
    const api = newApi("ingest-400");
    const cases: [string, unknown][] = [
      ["/v1/trending/s/events", { events: [{ member: "a", count: -1 }] }],
      ["/v1/trending/s/events", { events: [{ member: "a", at: T0 - 60 * HOUR }] }],
      ["/v1/trending/bad:name/events", { member: "a" }],
      ["/v1/counters/c/incr", { items: [{ member: "a", at: T0 }] }],
      ["/v1/counters/c/incr", { items: [{ member: "a", period: "day", at: T0 - 500 * 24 * HOUR }] }],
      ["/v1/presence/r/heartbeats", { ids: ["ok", "bad\u0001id"] }],
    ];
    for (const [path, body] of cases) {
      const res = await api.post(path, body, { headers: api.asyncHeaders });
      expect(res.status, path).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
      expect(res.headers.get("preference-applied")).toBeNull();
    }
    expect(api.queue.sent).toEqual([]);
    expect(await api.keys()).toEqual([]);
  });
});

describe("the consumer", () => {
  it("applies 30 requests of 100 events across 3 streams, every count exact, at most 0.1 command per event", async () => {
    const api = newApi("ingest-30x100");
    const expected = new Map<string, Map<string, number>>();
    for (let r = 0; r < 30; r++) {
      const stream = ["pages", "search", "games"][r % 3] as string;
      const events = eventsFor(stream, r);
      const res = await api.post(`/v1/trending/${stream}/events`, { events }, { headers: api.asyncHeaders });
      expect(res.status).toBe(202);
      expected.set(stream, tally(events, expected.get(stream)));
    }
    expect(api.queue.sent).toHaveLength(30);
    // warm the scripts (a throwaway stream), so the measure is the steady cost
    await api.post("/v1/trending/warm/events", { member: "w" }, { headers: api.asyncHeaders });
    const warm = api.queue.sent.splice(30);
    await api.deliver(warm);

    const m = await api.cost(() => api.deliver(api.queue.sent));
    expect(m.result.explicitAcks.sort()).toEqual(api.queue.sent.map((s) => s.id).sort());
    expect(m.result.retryMessages).toEqual([]);
    expect(m.result.stats).toMatchObject({ applied: 30, events: 3000, retried: 0, deadLettered: 0, duplicates: 0 });
    // 3 group scripts and the stats script
    expect(m.requests).toBe(4);
    expect(m.commands / 3000).toBeLessThanOrEqual(0.1);
    for (const [stream, counts] of expected) expect(await topOf(api, stream)).toEqual(counts);
  });

  it("writes what the synchronous call writes: same keys, same counts, same expiries", async () => {
    const api = newApi("ingest-same");
    const events = [...eventsFor("x", 1, 10), { member: "late", count: 4, at: T0 - 3 * HOUR }];
    await api.post("/v1/trending/sync/events", { events });
    await api.post("/v1/trending/async/events", { events }, { headers: api.asyncHeaders });
    await api.deliver(api.queue.sent);
    const keys = await api.keys();
    const of = (stream: string) =>
      keys.filter((k) => k.includes(`:trending:${stream}:`)).map((k) => k.replace(`:${stream}:`, ":S:"));
    expect(of("async").sort()).toEqual(of("sync").sort());
    for (const key of keys.filter((k) => k.includes(":trending:sync:"))) {
      const twin = key.replace(":sync:", ":async:");
      expect(await command(api.target, "ZRANGE", twin, 0, -1, "WITHSCORES")).toEqual(
        await command(api.target, "ZRANGE", key, 0, -1, "WITHSCORES"),
      );
      expect(await command(api.target, "TTL", twin)).toBe(await command(api.target, "TTL", key));
    }
    expect(await topOf(api, "async")).toEqual(await topOf(api, "sync"));
    const registry = await command<string[]>(api.target, "ZRANGE", `${api.prefix}:trending:_seen`, 0, -1);
    expect(registry.sort()).toEqual(["async", "sync"]);
  });

  it("counts a redelivered message once, whatever batch it comes back in", async () => {
    const api = newApi("ingest-redeliver");
    const expected = new Map<string, number>();
    for (let r = 0; r < 20; r++) {
      const events = eventsFor("s", r, 25);
      tally(events, expected);
      await api.post("/v1/trending/s/events", { events }, { headers: api.asyncHeaders });
    }
    const sent = api.queue.sent;
    const first = await api.deliver(sent.slice(0, 10));
    expect(first.stats).toMatchObject({ applied: 10, duplicates: 0 });
    // 5..9 come back (an ack was lost) mixed with new ones, in another order
    const second = await api.deliver([...sent.slice(10, 20), ...sent.slice(5, 10)].reverse());
    expect(second.stats).toMatchObject({ applied: 10, duplicates: 5, retried: 0 });
    expect(second.explicitAcks).toHaveLength(15);
    // and all of them once more, the next day (yesterday's set still knows them)
    api.advance(20 * HOUR);
    const third = await api.deliver(sent, { attempts: 3 });
    expect(third.stats).toMatchObject({ applied: 0, duplicates: 20 });
    expect(await topOf(api, "s")).toEqual(expected);
  });

  it("applies a request retried with the same Idempotency-Key once", async () => {
    const api = newApi("ingest-idem");
    const headers = { ...api.asyncHeaders, "idempotency-key": "order-7" };
    const body = { events: [{ member: "a", count: 5 }] };
    expect((await api.post("/v1/trending/s/events", body, { headers })).status).toBe(202);
    expect((await api.post("/v1/trending/s/events", body, { headers })).status).toBe(202);
    // same batch: the second copy is settled with the first, acked as a duplicate
    const one = await api.deliver(api.queue.sent);
    expect(one.stats).toMatchObject({ applied: 1, duplicates: 1, retried: 0 });
    expect(one.explicitAcks.length).toBe(2);
    // redelivered later (an ack lost): found applied
    const again = await api.deliver(api.queue.sent.slice(1));
    expect(again.stats).toMatchObject({ applied: 0, duplicates: 1 });
    expect((await topOf(api, "s")).get("a")).toBe(5);
    // another caller's same key is another request
    await api.post("/v1/trending/s/events", body, { headers, key: "test-ingest-key-0002" });
    await api.deliver(api.queue.sent.slice(2));
    expect((await topOf(api, "s")).get("a")).toBe(10);
  });

  it("dead-letters a message that can never apply (its hour left the retention), and counts it", async () => {
    const api = newApi("ingest-dlq");
    await api.post(
      "/v1/trending/s/events",
      { events: [{ member: "old", at: T0 - 45 * HOUR }] },
      { headers: api.asyncHeaders },
    );
    await api.post("/v1/trending/s/events", { events: [{ member: "fresh" }] }, { headers: api.asyncHeaders });
    api.queue.sent.push({ id: "junk", body: { hello: "world" }, timestamp: api.now });
    api.advance(10 * HOUR);
    const res = await api.deliver(api.queue.sent);
    expect(res.stats).toMatchObject({ applied: 1, deadLettered: 2, retried: 0 });
    expect(res.explicitAcks).toHaveLength(3);
    expect(api.dlq.sent.map((m) => m.body.messageId).sort()).toEqual([api.queue.sent[0]?.id, "junk"].sort());
    expect(api.dlq.sent.find((m) => m.body.messageId === "junk")?.body.reason).toMatch(/format version/);
    expect(api.dlq.sent.find((m) => m.body.messageId !== "junk")?.body.message.events[0].member).toBe("old");
    expect([...(await topOf(api, "s")).keys()]).toEqual(["fresh"]);
    const status = await api.get("/v1/ingest/status", { key: "admin" });
    expect(status.body).toMatchObject({ applied: 1, deadLettered: 2, retried: 0, events: 1, queue: true });
    expect(status.body.oldestAgeMs).toBe(10 * HOUR);
  });
});

describe("GET /v1/ingest/status", () => {
  it("sums the last hour per minute, reports the lag, and is admin only (the lag alone is for read keys)", async () => {
    const api = newApi("ingest-status");
    const empty = await api.get("/v1/ingest/status", { key: "admin" });
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({
      oldestAgeMs: 0,
      applied: 0,
      retried: 0,
      deadLettered: 0,
      events: 0,
      duplicates: 0,
      lastBatchAt: null,
      queue: true,
    });
    await api.post("/v1/trending/s/events", { events: eventsFor("s", 0) }, { headers: api.asyncHeaders });
    api.advance(1500);
    await api.deliver(api.queue.sent);
    api.advance(40 * 60_000);
    await api.post("/v1/trending/s/events", { member: "b" }, { headers: api.asyncHeaders });
    api.advance(800);
    await api.deliver(api.queue.sent.slice(1));
    const s = await api.get("/v1/ingest/status", { key: "admin" });
    expect(s.body).toMatchObject({ applied: 2, events: 101, oldestAgeMs: 800, lastBatchAt: api.now });
    expect((await api.get("/v1/ingest/status")).status).toBe(403);
    const lag = await api.get("/v1/ingest/lag");
    expect(lag.body).toEqual({ oldestAgeMs: 800, lastBatchAt: api.now, queue: true });
    // an hour later the first batch has left the window
    api.advance(25 * 60_000);
    const later = await api.get("/v1/ingest/status", { key: "admin" });
    expect(later.body).toMatchObject({ applied: 1, events: 1, oldestAgeMs: 0 });
  });
});

describe("dashboard lag indicator", () => {
  it("the page has a lag slot and the script reads /v1/ingest/lag (hidden for good when the deployment has no queue)", async () => {
    const api = newApi("ingest-dash");
    const page = await api.get("/", { key: "none" });
    expect(page.body).toContain('id="ingest-lag"');
    const script = await api.get("/dashboard.js", { key: "none" });
    expect(script.body).toContain('getJson("/v1/ingest/lag")');
    expect(script.body).toContain("state.noQueue = true");
    const noQueue = newApi("ingest-dash-nq", { queue: false });
    expect((await noQueue.get("/v1/ingest/lag")).body).toEqual({ oldestAgeMs: 0, lastBatchAt: null, queue: false });
  });
});
