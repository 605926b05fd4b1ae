/**
 * Review 19 of presence through the app in workerd with queued ingest (`Prefer: respond-async`, the
 * consumer fed through cloudflare:test): queued heartbeats read as direct ones, peaks included
 * (test/helpers/sync-queued.ts compares the figures without them); duplicates in a batch; the
 * expiry instant. Each pair: one api with the queue, one without, same clock.
 */
import { describe, expect, it } from "vitest";
import { createIngestApi, type IngestApi } from "../helpers/ingest.ts";
import { syncQueuedPair } from "../helpers/sync-queued.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";

const SECOND = 1000;
/** 12:30 UTC, on a 5 s boundary (the consumer's presence window). */
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const track = cleanedUpAfterAll<IngestApi>();

async function peaks(api: IngestApi, room: string) {
  const s = (await api.get(`/v1/presence/${room}`)).body;
  return {
    online: s.online,
    peakToday: s.peakToday,
    peakAt: s.peakAt,
    activeToday: s.activeToday,
    newToday: s.newToday,
  };
}

describe("review 19: queued heartbeats read as direct ones, peaks included", () => {
  it("a batch repeating ids, queued, reads as synchronously (online, peak, AU, NU, members)", async () => {
    const p = syncQueuedPair(track, "rv19w-dup", T0);
    await p.heartbeat("d", ["x", "x", "y", "x"]);
    p.advance(SECOND);
    await p.heartbeat("d", ["y", "y", "z"]);
    await p.queued.deliver(p.queued.queue.sent.splice(0));
    p.advance(SECOND);
    const [sync, queued] = await p.room("d");
    expect(sync).toMatchObject({ online: 3, activeToday: 3, newToday: 3 });
    expect(queued).toEqual(sync);
    expect(await peaks(p.queued, "d")).toEqual(await peaks(p.sync, "d"));
  });

  // FIXED (was MEDIUM; an `it.fails` until review 19's phase 2). The consumer applies a room's
  // heartbeats of one 5 s window in one call at the window's
  // latest time (src/ingest/plan.ts), and the script counts who is online at that time only: ids
  // that timed out between an earlier heartbeat of the window and its end were online with that
  // heartbeat (synchronously counted, PCU 3 here) but are not counted queued (PCU 2, peakAt moved to
  // the window's end). docs/presence.md says PCU is exact for heartbeats in time order and
  // docs/ingest.md that queued ids are applied at the window's latest time, but neither says the
  // peak of a window can read low: on a busy room every window where someone times out can hide a
  // peak, and `presence.peak` never fires for it. Fix: with `sentAt` (non-uniform windows only: the
  // queued path; no synchronous call pays), count also at the window's earliest time s before the
  // ZADD: ZCOUNT seen [s − timeout, s] plus the batch's ids sent at s that this count missed (their
  // previous last-seen, which a ZMSCORE gives), and take the larger count with its time; or split a
  // window whose ids were sent at different times into calls per time when it matters. Fixed so
  // (src/presence/scripts.ts): such a call also counts at the window's earliest time, a lower bound
  // (+1 ZCOUNT, queued windows with ids sent at different times only; docs/presence.md).
  it("ids sent at one timeout's edge within one 5 s window: the queued peak is the synchronous one", async () => {
    const p = syncQueuedPair(track, "rv19w-edge", T0);
    const timeout = (await p.sync.get("/v1/presence/e")).body.timeoutSeconds * SECOND;
    await p.heartbeat("e", ["c", "d"]);
    await p.queued.deliver(p.queued.queue.sent.splice(0));
    // a at the instant c and d time out (they are online with it: 3), b 3 s later (c, d gone: 2)
    p.advance(timeout);
    await p.heartbeat("e", "a");
    p.advance(3 * SECOND);
    await p.heartbeat("e", "b");
    await p.queued.deliver(p.queued.queue.sent.splice(0));
    p.advance(SECOND);
    const sync = await peaks(p.sync, "e");
    expect(sync).toMatchObject({ online: 2, peakToday: 3, peakAt: T0 + timeout });
    expect(await peaks(p.queued, "e")).toEqual(sync);
  });

  it("a window's id that left after its time and was offline before it is not counted at the window's start", async () => {
    // the count at the window's earliest time is a lower bound: z (offline before the window, sent
    // 2 s into it, left 1 s later) must not make the peak earlier or higher than synchronously
    const p = syncQueuedPair(track, "rv19w-left", T0);
    const timeout = (await p.sync.get("/v1/presence/z")).body.timeoutSeconds * SECOND;
    await p.heartbeat("z", "z");
    await p.queued.deliver(p.queued.queue.sent.splice(0));
    p.advance(timeout + 10 * SECOND);
    await p.heartbeat("z", "c");
    await p.queued.deliver(p.queued.queue.sent.splice(0));
    p.advance(10 * SECOND); // W: a 5 s window starts
    await p.heartbeat("z", "a");
    p.advance(2 * SECOND);
    await p.heartbeat("z", "z");
    p.advance(SECOND);
    await p.leave("z", "z");
    p.advance(SECOND);
    await p.heartbeat("z", "b");
    await p.queued.deliver(p.queued.queue.sent.splice(0));
    p.advance(SECOND);
    const sync = await peaks(p.sync, "z");
    const queued = await peaks(p.queued, "z");
    expect(sync).toMatchObject({ online: 3, peakToday: 3 });
    expect(queued.peakToday).toBe(sync.peakToday);
    expect(queued.peakAt).toBeGreaterThanOrEqual(sync.peakAt);
    expect({ ...queued, peakAt: 0 }).toEqual({ ...sync, peakAt: 0 });
  });

  it("an Idempotency-Key retry sent queued after a synchronous first is applied once (the first's time)", async () => {
    const api = track(createIngestApi({ label: "rv19w-idem", start: T0 }));
    const timeout = (await api.get("/v1/presence/i")).body.timeoutSeconds * SECOND;
    const key = { "idempotency-key": "rv19-sync-then-queued" };
    expect((await api.post("/v1/presence/i/heartbeats", { id: "u" }, { headers: key })).status).toBe(200);
    api.advance(timeout - 10 * SECOND);
    const retry = await api.post(
      "/v1/presence/i/heartbeats",
      { id: "u" },
      { headers: { ...key, ...api.asyncHeaders } },
    );
    expect([200, 202]).toContain(retry.status);
    await api.deliver(api.queue.sent.splice(0));
    // the first heartbeat's last-seen only: offline a timeout after it
    api.advance(20 * SECOND);
    expect((await api.get("/v1/presence/i")).body).toMatchObject({ online: 0, activeToday: 1 });
  });
});
