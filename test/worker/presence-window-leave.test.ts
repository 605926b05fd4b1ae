/**
 * The queued consumer merges a room's heartbeats of one 5 s window into one call at the window's
 * latest time, but compares a leave with each id's own latest time in it (sentAt; review 12).
 * Each case runs against an api with the queue and one without (synchronous), same clock, and
 * both must read the same.
 */
import { describe, expect, it } from "vitest";
import { createIngestApi, type IngestApi } from "../helpers/ingest.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";

const SECOND = 1000;
/** 12:30 UTC, on a 5 s boundary (the consumer's presence window). */
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const track = cleanedUpAfterAll<IngestApi>();

function pair(label: string) {
  const queued = track(createIngestApi({ label: `${label}-q`, start: T0 }));
  const sync = track(createIngestApi({ label: `${label}-s`, start: T0, queue: false }));
  return {
    queued,
    advance(ms: number) {
      queued.advance(ms);
      sync.advance(ms);
    },
    async beat(room: string, ids: string[]) {
      const q = await queued.post(`/v1/presence/${room}/heartbeats`, { ids }, { headers: queued.asyncHeaders });
      expect(q.status).toBe(202);
      expect((await sync.post(`/v1/presence/${room}/heartbeats`, { ids })).status).toBe(200);
    },
    async leave(room: string, id: string) {
      for (const api of [queued, sync]) expect((await api.del(`/v1/presence/${room}/members/${id}`)).status).toBe(204);
    },
    async reads(room: string) {
      const out = [];
      for (const api of [sync, queued]) {
        const stats = (await api.get(`/v1/presence/${room}`)).body;
        const members = (await api.get(`/v1/presence/${room}/members`)).body.members.map((m: any) => m.id);
        out.push({ online: stats.online, activeToday: stats.activeToday, newToday: stats.newToday, members });
      }
      return out as [unknown, unknown];
    },
  };
}

describe("presence: a leave inside a queued 5 s window", () => {
  it("an id heartbeating before and after its own leave in one window is online, as synchronously", async () => {
    const p = pair("pwl-own");
    await p.beat("r", ["u1"]);
    p.advance(SECOND);
    await p.leave("r", "u1");
    p.advance(SECOND);
    await p.beat("r", ["u1"]);
    const sent = p.queued.queue.sent.splice(0);
    p.advance(SECOND);
    await p.queued.deliver([...sent].reverse());
    const [sync, queued] = await p.reads("r");
    expect(sync).toEqual({ online: 1, activeToday: 1, newToday: 1, members: ["u1"] });
    expect(queued).toEqual(sync);
  });

  it("one message of two ids, sent before one of them left, merged with a later message of a third: only the left id is offline", async () => {
    const p = pair("pwl-multi");
    await p.beat("r", ["u1", "u2"]);
    p.advance(SECOND);
    await p.leave("r", "u1");
    p.advance(SECOND);
    await p.beat("r", ["u3"]);
    const sent = p.queued.queue.sent.splice(0);
    p.advance(SECOND);
    await p.queued.deliver(sent);
    const [sync, queued] = await p.reads("r");
    expect(sync).toEqual({ online: 2, activeToday: 3, newToday: 3, members: expect.arrayContaining(["u2", "u3"]) });
    expect((sync as { members: string[] }).members).toHaveLength(2);
    expect(queued).toEqual(sync);
  });
});
