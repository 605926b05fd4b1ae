/**
 * A brand-new room's first id, left before its queued first heartbeat is applied (queued ingest,
 * `Prefer: respond-async`; the leave is synchronous): it must read offline, as synchronously.
 * Was a known limit until 2026-11-27 (docs/presence.md, "Leave"): a leave in a room that maps no
 * id recorded no mark, so the heartbeat applied after it brought the id online for a timeout.
 */
import { describe, expect, it } from "vitest";
import { createIngestApi, type IngestApi } from "../helpers/ingest.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";
import { command } from "../helpers/upstash-rest.ts";
import { roomKeys } from "../../src/presence/keys.ts";

const SECOND = 1000;
/** 12:30 UTC, on a 5 s boundary (the consumer's presence window). */
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const track = cleanedUpAfterAll<IngestApi>();

describe("presence: a leave before the room's first queued heartbeat is applied", () => {
  it("keeps the id offline once that heartbeat is applied; the room's id map then has no expiry", async () => {
    const api = track(createIngestApi({ label: "pleave-q-new", start: T0 }));
    const ids = roomKeys(api.prefix, "r").ids;
    const beat = await api.post("/v1/presence/r/heartbeats", { id: "u1" }, { headers: api.asyncHeaders });
    expect(beat.status).toBe(202);
    const queued = api.queue.sent.splice(0);
    api.advance(SECOND);
    expect((await api.del("/v1/presence/r/members/u1")).status).toBe(204);
    // the mark is in a hash made by the leave, with an expiry (no key without one for a name an
    // ingest key invents: review 5)
    expect(await command<number>(api.target, "PTTL", ids)).toBeGreaterThan(0);
    api.advance(SECOND);
    await api.deliver(queued);
    const room = (await api.get("/v1/presence/r")).body;
    expect(room).toMatchObject({ online: 0, activeToday: 1, newToday: 1 });
    expect((await api.get("/v1/presence/r/members")).body.members).toEqual([]);
    // mapped now: the map must outlive the leave's expiry
    expect(await command<number>(api.target, "PTTL", ids)).toBe(-1);
    expect(await command<string>(api.target, "HGET", ids, "u1")).toBe("1");
    // and u1 comes back as a known id
    api.advance(SECOND);
    const back = await api.post("/v1/presence/r/heartbeats", { id: "u1" });
    expect(back.body).toEqual({ online: 1, new: 0 });
  });
});
