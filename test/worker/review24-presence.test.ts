/**
 * Review 24 of presence through the app in workerd with queued ingest (`Prefer: respond-async`, the
 * consumer fed through cloudflare:test): scopes and refusals of queued heartbeats (nothing queued);
 * a queued batch retried with its Idempotency-Key after its ids timed out (applied once, as the
 * synchronous replay); a heartbeat sent just before midnight and applied after it, queued against
 * synchronous; an id expiring at the read's very millisecond, queued as synchronous.
 */
import { describe, expect, it } from "vitest";
import { createIngestApi, type IngestApi } from "../helpers/ingest.ts";
import { syncQueuedPair } from "../helpers/sync-queued.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const TIMEOUT = 300 * SECOND;
/** 12:30 UTC, on a 5 s boundary (the consumer's presence window). */
const T0 = Date.UTC(2026, 10, 23, 12, 30);
const track = cleanedUpAfterAll<IngestApi>();

describe("review 24: queued heartbeats refused before the queue", () => {
  it("a read key's queued heartbeat is a 403; a bad room or id a 400; nothing queued or written", async () => {
    const api = track(createIngestApi({ label: "rv24w-scope", start: T0 }));
    const headers = api.asyncHeaders;
    expect((await api.post("/v1/presence/s/heartbeats", { id: "a" }, { key: "read", headers })).status).toBe(403);
    expect((await api.post(`/v1/presence/${"r".repeat(65)}/heartbeats`, { id: "a" }, { headers })).status).toBe(400);
    const bad = await api.post("/v1/presence/s/heartbeats", { ids: ["a", "."] }, { headers });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.map((d: { path: string }) => d.path)).toEqual(["ids.1"]);
    expect(api.queue.sent.length).toBe(0);
    expect(await api.keys()).toEqual([]);
  });
});

describe("review 24: a queued batch retried with its key after its ids timed out", () => {
  it("applied once: the retry refreshes nobody, as the synchronous replay; a new key refreshes them", async () => {
    const p = syncQueuedPair(track, "rv24w-idem", T0);
    const headers = { "idempotency-key": "rv24w-retry" };
    await p.write("/v1/presence/i/heartbeats", { ids: ["a", "b"] }, { headers });
    await p.queued.deliver(p.queued.queue.sent.splice(0));
    p.advance(TIMEOUT + SECOND);
    await p.write("/v1/presence/i/heartbeats", { ids: ["a", "b"] }, { headers });
    await p.queued.deliver(p.queued.queue.sent.splice(0));
    const [sync, queued] = await p.room("i");
    expect(sync).toMatchObject({ online: 0, activeToday: 2, newToday: 2 });
    expect(queued).toEqual(sync);
    await p.write("/v1/presence/i/heartbeats", { ids: ["a", "b"] }, { headers: { "idempotency-key": "rv24w-2" } });
    await p.queued.deliver(p.queued.queue.sent.splice(0));
    const [sync2, queued2] = await p.room("i");
    expect(sync2).toMatchObject({ online: 2, members: ["a", "b"] });
    expect(queued2).toEqual(sync2);
  });
});

describe("review 24: midnight and the timeout's last millisecond, queued as synchronous", () => {
  it("a heartbeat at 23:59:59.999 applied after midnight: yesterday's figures, online today, carried peak", async () => {
    const midnight = Date.UTC(2026, 10, 24);
    const p = syncQueuedPair(track, "rv24w-mid", midnight - 1);
    await p.heartbeat("m", ["a", "b"]);
    p.advance(3 * SECOND);
    await p.queued.deliver(p.queued.queue.sent.splice(0));
    const [sync, queued] = await p.room("m");
    expect(sync).toMatchObject({ online: 2, activeToday: 0, newToday: 0 });
    expect(queued).toEqual(sync);
    const yesterday = "2026-11-23";
    const dayOf = async (api: IngestApi) => (await api.get(`/v1/presence/m?day=${yesterday}`)).body;
    expect(await dayOf(p.sync)).toMatchObject({ peak: 2, peakAt: midnight - 1, active: 2, new: 2 });
    expect(await dayOf(p.queued)).toEqual(await dayOf(p.sync));
    const statsOf = async (api: IngestApi) => (await api.get("/v1/presence/m")).body;
    expect(await statsOf(p.sync)).toMatchObject({ peakToday: 2, peakAt: midnight });
    expect(await statsOf(p.queued)).toEqual(await statsOf(p.sync));
  });

  it("an id read at the very ms its timeout ends is online; 1 ms later not; queued as synchronous", async () => {
    const p = syncQueuedPair(track, "rv24w-edge", T0);
    await p.heartbeat("e", "a");
    p.advance(MINUTE);
    await p.heartbeat("e", "b");
    await p.queued.deliver(p.queued.queue.sent.splice(0));
    p.setNow(T0 + TIMEOUT);
    const [sync, queued] = await p.room("e");
    expect(sync).toMatchObject({ online: 2, members: ["a", "b"] });
    expect(queued).toEqual(sync);
    p.advance(1);
    const [sync2, queued2] = await p.room("e");
    expect(sync2).toMatchObject({ online: 1, members: ["b"] });
    expect(queued2).toEqual(sync2);
  });
});
