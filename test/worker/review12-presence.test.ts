/**
 * Review 12 (adversarial) of presence's leave in a room that maps no id, through the app in workerd:
 * the queued differential around a leave (heartbeats `Prefer: respond-async`, the leave synchronous,
 * the consumer fed batches through cloudflare:test), and review 5's rule for an ingest key's leaves
 * in rooms it invents. Each pair: one api with the queue, one without (synchronous), same clock
 * (test/helpers/sync-queued.ts).
 */
import { describe, expect, it } from "vitest";
import { createIngestApi, type IngestApi } from "../helpers/ingest.ts";
import { syncQueuedPair } from "../helpers/sync-queued.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";
import { command } from "../helpers/upstash-rest.ts";
import { roomKeys } from "../../src/presence/keys.ts";

const SECOND = 1000;
/** 12:30 UTC, on a 5 s boundary (the consumer's presence window). */
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const track = cleanedUpAfterAll<IngestApi>();

const pair = (label: string) => syncQueuedPair(track, label, T0);

describe("review12: queued differential around a leave in a room that maps no id", () => {
  for (const order of ["u1 first", "u2 first"] as const) {
    it(`holds: u1's queued first heartbeat and u2's (sent after u1 left) in separate batches, ${order}: read as synchronously`, async () => {
      const p = pair(`rv12w-sep-${order[1]}`);
      await p.heartbeat("r", "u1");
      const u1 = p.queued.queue.sent.splice(0);
      p.advance(SECOND);
      await p.leave("r", "u1");
      // u2 in the next 5 s window: its own batch
      p.advance(5 * SECOND);
      await p.heartbeat("r", "u2");
      const u2 = p.queued.queue.sent.splice(0);
      p.advance(SECOND);
      for (const batch of order === "u1 first" ? [u1, u2] : [u2, u1]) await p.queued.deliver(batch);
      const [sync, queued] = await p.room("r");
      expect(sync).toEqual({ online: 1, activeToday: 2, newToday: 2, members: ["u2"] });
      expect(queued).toEqual(sync);
      expect(await command<number>(p.queued.target, "PTTL", roomKeys(p.queued.prefix, "r").ids)).toBe(-1);
    });

    it(`holds: the two in one batch of two windows (u2 ≥ 5 s later), ${order}: read as synchronously`, async () => {
      const p = pair(`rv12w-two-${order[1]}`);
      await p.heartbeat("r", "u1");
      p.advance(SECOND);
      await p.leave("r", "u1");
      p.advance(5 * SECOND);
      await p.heartbeat("r", "u2");
      const sent = p.queued.queue.sent.splice(0);
      p.advance(SECOND);
      await p.queued.deliver(order === "u1 first" ? sent : [...sent].reverse());
      const [sync, queued] = await p.room("r");
      expect(sync).toEqual({ online: 1, activeToday: 2, newToday: 2, members: ["u2"] });
      expect(queued).toEqual(sync);
    });
  }

  for (const known of [false, true]) {
    // FIXED (was BUG, medium): the consumer applies a room's heartbeats within one 5 s window together, at the
    // latest of their times (src/ingest/plan.ts planGroup, docs/ingest.md: "last-seen ... at most
    // 5 s later"). u1's heartbeat, sent BEFORE u1's leave, merged with u2's sent AFTER it in the same
    // window, is applied at u2's time, after the leave mark: the heartbeat script takes it for a
    // heartbeat after the leave and u1 reads online for a whole timeout (online, members, `_total`)
    // where synchronously it is offline. Holds for the room's first id (the `\x03` hash path,
    // known=false) as for a known one. docs/ingest.md does not say a merge can undo a leave; the
    // review 11 differential only leaves after a window's writes, so it never saw it.
    // Smallest fix: pass each id's own latest time in the window to the heartbeat call (e.g. an arg
    // list beside `batch`) and compare the leave mark with that time (`leftAt > sentAt[i]`) instead
    // of the window's `now`: no command more; or split a window's ids at a leave... the consumer
    // cannot see leaves, so the first. Fixed so: planGroup passes each id's own latest time in the
    // window (`sentAt`), the heartbeat script compares the leave mark with it.
    it(`a heartbeat sent before a leave, merged with another id's sent after it in one 5 s window, keeps the left id offline (${known ? "known id" : "room's first id"})`, async () => {
      const p = pair(`rv12w-window-${known ? "k" : "n"}`);
      if (known) {
        await p.heartbeat("r", "u1");
        await p.queued.deliver(p.queued.queue.sent.splice(0));
        p.advance(10 * SECOND);
      }
      await p.heartbeat("r", "u1");
      p.advance(SECOND);
      await p.leave("r", "u1");
      p.advance(SECOND);
      await p.heartbeat("r", "u2");
      const sent = p.queued.queue.sent.splice(0);
      p.advance(SECOND);
      await p.queued.deliver(sent);
      const [sync, queued] = await p.room("r");
      expect(sync).toMatchObject({ online: 1, members: ["u2"] });
      expect(queued).toEqual(sync);
    });
  }

  it("holds: the same ids sent in the same window, leave only after the window's writes: read as synchronously", async () => {
    const p = pair("rv12w-after");
    await p.heartbeat("r", "u1");
    p.advance(SECOND);
    await p.heartbeat("r", "u2");
    p.advance(SECOND);
    await p.leave("r", "u1");
    const sent = p.queued.queue.sent.splice(0);
    p.advance(SECOND);
    await p.queued.deliver([...sent].reverse());
    const [sync, queued] = await p.room("r");
    expect(sync).toMatchObject({ online: 1, members: ["u2"] });
    expect(queued).toEqual(sync);
  });
});

describe("review12: a room deleted between a queued heartbeat and its application", () => {
  // BUG (low): an admin DELETE of a room takes its keys (the leave mark of a room that maps no id
  // with them); a heartbeat accepted (202) before the delete and applied after it recreates the
  // room with its id online for a timeout (online, members, `_total`, `_rooms`, NU/AU today), where
  // synchronously the room reads empty after the delete. Not specific to the `\x03` hash (a
  // queued heartbeat alone does it), but the leave before it does not help: its mark went with the
  // room. Not documented (docs/presence.md, docs/ingest.md say nothing of a delete vs queued writes).
  // Smallest fix: the delete leaves a tombstone where the heartbeat already looks, e.g. an `ids`
  // hash holding only a field `\x04` = the delete's time with an expiry of 2 days (as a leave's
  // `\x03` hash), and the heartbeat skips (or applies as offline) ids whose time is before it: +2
  // commands per delete (HSET, PEXPIRE), none per heartbeat (its HMGET reads the field).
  // Kept as a documented known limit (docs/presence.md, docs/ingest.md, 2026-11-27): the tombstone
  // would break the promise that a delete removes every key of the room (docs/presence.md's table;
  // pinned by test/redis/review8-keys.test.ts and test/worker/presence.test.ts).
  // RE-EXAMINED 2026-11-28 (wt-fixpres), stays: no bounded fix keeps "a delete removes every key";
  // the recreated room is due and counted again, and with the site entry (fixpres) `_online` and
  // `_total` follow it within one run, so only the room's own figures are at stake.
  // RE-EXAMINED 2026-11-28 (wt-r18pres), stays: the tombstone costs a delete +2 (7 → 9, 9 → 11) and a
  // steady heartbeat nothing, but (1) it breaks the guarantee that a delete removes every key of the
  // room (docs/presence.md's table, test/redis/review8-keys.test.ts), and (2) the tombstone must
  // outlive the room's next first heartbeat (a pre-delete heartbeat may still be queued behind it),
  // so that heartbeat maps its id into an `ids` hash with an expiry and pays PERSIST and HDEL as a
  // leave-made hash's first does: 9 → 11 commands for a new id, over issue 14's 9, on the first
  // heartbeat of every room recreated after a delete (today that +2 is only for rooms an ingest key's
  // leave invented). Comparing each id's `sentAt` with the delete's time is no command more.
  it.fails(
    "a heartbeat sent before a leave and a room delete, applied after both, leaves the room as synchronously: empty",
    async () => {
      const p = pair("rv12w-del");
      await p.heartbeat("r", "u1");
      const late = p.queued.queue.sent.splice(0);
      p.advance(SECOND);
      await p.leave("r", "u1");
      p.advance(SECOND);
      for (const api of [p.queued, p.sync])
        expect((await api.del("/v1/presence/r", { key: "admin" })).status).toBeLessThan(300);
      p.advance(SECOND);
      await p.queued.deliver(late);
      const [sync, queued] = await p.room("r");
      expect(sync).toEqual({ online: 0, activeToday: 0, newToday: 0, members: [] });
      expect(queued).toEqual(sync);
    },
  );
});

describe("review12: an ingest key's leaves in rooms it invents (review 5's rule)", () => {
  it("leaves no key without an expiry but the registries, with any header an ingest request may carry", async () => {
    const api = track(createIngestApi({ label: "rv12w-scope", start: T0 }));
    // the registries exist (another room's heartbeat), as in any deployment
    expect((await api.post("/v1/presence/seed/heartbeats", { id: "x" })).status).toBe(200);
    const before = new Set(await api.keys());
    const variants: Record<string, string>[] = [
      {},
      api.asyncHeaders,
      { "idempotency-key": "rv12-k1" },
      { ...api.asyncHeaders, "idempotency-key": "rv12-k2" },
    ];
    let i = 0;
    for (const headers of variants) {
      for (const room of ["inv1", "inv2"]) {
        for (const id of ["u1", "u2", "u1"]) {
          api.advance(SECOND);
          const res = await api.del(`/v1/presence/${room}${i}/members/${id}`, { key: "ingest", headers });
          expect([202, 204], JSON.stringify(res.body)).toContain(res.status);
        }
      }
      i++;
    }
    // nothing was queued for a leave (synchronous), whatever the header
    expect(api.queue.sent).toEqual([]);
    const added = (await api.keys()).filter((k) => !before.has(k));
    expect(added.length).toBeGreaterThan(0);
    const lasting: string[] = [];
    for (const key of added) if ((await command<number>(api.target, "PTTL", key)) < 0) lasting.push(key);
    expect(lasting).toEqual([]);
    // the reads of an invented room show nothing of the marks
    const room = (await api.get("/v1/presence/inv10")).body;
    expect(room).toMatchObject({ online: 0, activeToday: 0, newToday: 0 });
    expect((await api.get("/v1/presence/inv10/members")).body.members).toEqual([]);
    const listed = (await api.get("/v1/presence")).body;
    expect(JSON.stringify(listed)).not.toContain("inv");
  });
});
