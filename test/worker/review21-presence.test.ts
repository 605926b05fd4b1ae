/**
 * Review 21 of presence through the app in workerd with queued ingest (`Prefer: respond-async`, the
 * consumer fed through cloudflare:test): a refused batch does not take its Idempotency-Key; a leave
 * and a heartbeat in the same millisecond, queued and direct; one id queued into many rooms and the
 * site-wide figures after the trim job; CSV of the presence lists from workerd. Each pair: one api
 * with the queue, one without, same clock.
 */
import { describe, expect, it } from "vitest";
import { createIngestApi, type IngestApi } from "../helpers/ingest.ts";
import { syncQueuedPair } from "../helpers/sync-queued.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
/** 12:30 UTC, on a 5 s boundary (the consumer's presence window). */
const T0 = Date.UTC(2026, 10, 23, 12, 30);
const track = cleanedUpAfterAll<IngestApi>();

describe("review 21: refused batches and their Idempotency-Key", () => {
  it("a batch mixing valid and invalid ids is a 400 that neither queues, writes nor keeps its key", async () => {
    for (const queued of [true, false]) {
      const api = track(createIngestApi({ label: `rv21w-idem-${queued}`, start: T0, queue: queued }));
      const headers = { "idempotency-key": "rv21-mixed", ...(queued ? api.asyncHeaders : {}) };
      const bad = await api.post("/v1/presence/m/heartbeats", { ids: ["ok", "", "also-ok", 7] }, { headers });
      expect(bad.status, `queued ${queued}`).toBe(400);
      expect(bad.body.error.details.map((d: { path: string }) => d.path)).toEqual(["ids.1", "ids.3"]);
      expect(api.queue.sent.length).toBe(0);
      // the same key with the corrected batch is a first request: applied, not a 409 nor a replay
      const good = await api.post("/v1/presence/m/heartbeats", { ids: ["ok", "also-ok"] }, { headers });
      expect(good.status, `queued ${queued}`).toBe(queued ? 202 : 200);
      await api.deliver(api.queue.sent.splice(0));
      expect((await api.get("/v1/presence/m")).body).toMatchObject({ online: 2, activeToday: 2, newToday: 2 });
    }
  });
});

describe("review 21: a leave and a heartbeat in the same millisecond", () => {
  it("leave, then heartbeat in its millisecond: online, queued as directly", async () => {
    const p = syncQueuedPair(track, "rv21w-lh", T0);
    await p.heartbeat("s", ["a", "b"]);
    await p.queued.deliver(p.queued.queue.sent.splice(0));
    p.advance(10 * SECOND);
    await p.leave("s", "a");
    await p.heartbeat("s", "a");
    await p.queued.deliver(p.queued.queue.sent.splice(0));
    const [sync, queued] = await p.room("s");
    expect(sync).toMatchObject({ online: 2, activeToday: 2, newToday: 2 });
    expect(queued).toEqual(sync);
  });

  it("a heartbeat sent 1 ms before a leave and applied after it (queued) leaves the id offline", async () => {
    const p = syncQueuedPair(track, "rv21w-hl", T0);
    await p.heartbeat("s", ["a", "b"]);
    await p.queued.deliver(p.queued.queue.sent.splice(0));
    p.advance(10 * SECOND);
    await p.heartbeat("s", "a");
    p.advance(1);
    await p.leave("s", "a");
    await p.queued.deliver(p.queued.queue.sent.splice(0));
    const [sync, queued] = await p.room("s");
    expect(sync).toMatchObject({ online: 1 });
    expect(queued).toEqual(sync);
  });
});

describe("review 21: one id queued into many rooms", () => {
  it("each room counts it; after the trim job `_total` has it once per room online and once in activeToday", async () => {
    const api = track(createIngestApi({ label: "rv21w-many", start: T0 }));
    const rooms = Array.from({ length: 40 }, (_, i) => `q${i}`);
    for (const r of rooms)
      expect(
        (await api.post(`/v1/presence/${r}/heartbeats`, { id: "roamer" }, { headers: api.asyncHeaders })).status,
      ).toBe(202);
    await api.deliver(api.queue.sent.splice(0));
    api.advance(30 * SECOND);
    const trim = await api.post("/internal/jobs/trim", undefined, { key: "admin" });
    expect(trim.status).toBe(200);
    expect(trim.body.result).toMatchObject({ rooms: 40, online: 40, siteOnline: 40 });
    expect((await api.get("/v1/presence/_total")).body).toMatchObject({ online: 40, activeToday: 1 });
    expect((await api.get("/v1/presence/q39")).body).toMatchObject({ online: 1, activeToday: 1, newToday: 1 });
    // the list holds every room, in CSV too
    const csv = await api.get("/v1/presence", { headers: { accept: "text/csv" } });
    const lines = String(csv.body).split("\r\n");
    expect(lines[0]).toBe("room");
    expect(lines.slice(1, -1).sort()).toEqual([...rooms].sort());
    api.advance(MINUTE);
  });
});
