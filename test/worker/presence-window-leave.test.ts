/**
 * The queued consumer merges a room's heartbeats of one 5 s window into one call at the window's
 * latest time, but compares a leave with each id's own latest time in it (sentAt; review 12).
 * Each case runs against an api with the queue and one without (synchronous), same clock
 * (test/helpers/sync-queued.ts), and both must read the same.
 */
import { describe, expect, it } from "vitest";
import type { IngestApi } from "../helpers/ingest.ts";
import { syncQueuedPair } from "../helpers/sync-queued.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";

const SECOND = 1000;
/** 12:30 UTC, on a 5 s boundary (the consumer's presence window). */
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const track = cleanedUpAfterAll<IngestApi>();

const pair = (label: string) => syncQueuedPair(track, label, T0);

describe("presence: a leave inside a queued 5 s window", () => {
  it("an id heartbeating before and after its own leave in one window is online, as synchronously", async () => {
    const p = pair("pwl-own");
    await p.heartbeat("r", ["u1"]);
    p.advance(SECOND);
    await p.leave("r", "u1");
    p.advance(SECOND);
    await p.heartbeat("r", ["u1"]);
    const sent = p.queued.queue.sent.splice(0);
    p.advance(SECOND);
    await p.queued.deliver([...sent].reverse());
    const [sync, queued] = await p.room("r");
    expect(sync).toEqual({ online: 1, activeToday: 1, newToday: 1, members: ["u1"] });
    expect(queued).toEqual(sync);
  });

  it("one message of two ids, sent before one of them left, merged with a later message of a third: only the left id is offline", async () => {
    const p = pair("pwl-multi");
    await p.heartbeat("r", ["u1", "u2"]);
    p.advance(SECOND);
    await p.leave("r", "u1");
    p.advance(SECOND);
    await p.heartbeat("r", ["u3"]);
    const sent = p.queued.queue.sent.splice(0);
    p.advance(SECOND);
    await p.queued.deliver(sent);
    const [sync, queued] = await p.room("r");
    expect(sync).toEqual({ online: 2, activeToday: 3, newToday: 3, members: expect.arrayContaining(["u2", "u3"]) });
    expect(sync.members).toHaveLength(2);
    expect(queued).toEqual(sync);
  });
});
