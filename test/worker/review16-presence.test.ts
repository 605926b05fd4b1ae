/**
 * Review 16 of presence through the app in workerd with queued ingest (`Prefer: respond-async`, the
 * consumer fed through cloudflare:test): a batch with one bad id is refused before anything is
 * queued; an Idempotency-Key replay of a queued heartbeat is not queued again; unicode and 256-byte
 * ids go through the queue, the consumer and the trim job and read as synchronously (room, members,
 * `_total`). Each pair: one api with the queue, one without, same clock (test/helpers/sync-queued.ts).
 */
import { describe, expect, it } from "vitest";
import { createIngestApi, type IngestApi } from "../helpers/ingest.ts";
import { syncQueuedPair } from "../helpers/sync-queued.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
/** 12:30 UTC, on a 5 s boundary (the consumer's presence window). */
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const track = cleanedUpAfterAll<IngestApi>();
const UNICODE = [
  "😀".repeat(64),
  "é".repeat(128),
  "a".repeat(256),
  "用户-一",
  "e\u0301",
  "0",
  " spaced ",
  "a/b",
  "100%",
];

describe("review 16: queued heartbeats", () => {
  it("a queued batch with one bad id is a 400 naming it: nothing queued, nothing written", async () => {
    const api = track(createIngestApi({ label: "rv16w-bad", start: T0 }));
    for (const bad of ["x".repeat(257), "tab\there", "\ud800", ""]) {
      const res = await api.post(
        "/v1/presence/hall/heartbeats",
        { ids: ["ok", "😀".repeat(64), bad] },
        { headers: api.asyncHeaders },
      );
      expect(res.status).toBe(400);
      expect(res.body.error.details).toEqual([expect.objectContaining({ path: "ids.2" })]);
    }
    expect(api.queue.sent).toEqual([]);
    expect(await api.keys()).toEqual([]);
  });

  it("an Idempotency-Key retry of a queued heartbeat, consumed after the first, is applied once (the first's time)", async () => {
    // docs/ingest.md: no replayed response queued (nothing is read before the 202), the consumer
    // drops the copy by its dedupe id
    const api = track(createIngestApi({ label: "rv16w-idem", start: T0 }));
    const headers = { ...api.asyncHeaders, "idempotency-key": "rv16-queued-1" };
    expect((await api.post("/v1/presence/hall/heartbeats", { id: "u1" }, { headers })).status).toBe(202);
    await api.deliver(api.queue.sent.splice(0));
    api.advance(200 * SECOND);
    expect((await api.post("/v1/presence/hall/heartbeats", { id: "u1" }, { headers })).status).toBe(202);
    expect(api.queue.sent).toHaveLength(1);
    await api.deliver(api.queue.sent.splice(0));
    // the first heartbeat's last-seen only: offline a timeout (300 s) after it
    api.advance(150 * SECOND);
    expect((await api.get("/v1/presence/hall")).body).toMatchObject({ online: 0, activeToday: 1, newToday: 1 });
    const members = (await api.get("/v1/presence/hall/members")).body.members;
    expect(members).toEqual([]);
  });

  it("unicode and 256-byte ids through the queue, the consumer and the trim job read as synchronously", async () => {
    const p = syncQueuedPair(track, "rv16w-uni", T0);
    await p.heartbeat("uni", UNICODE);
    await p.heartbeat("plain", ["p1", "p2"]);
    p.advance(10 * SECOND);
    await p.heartbeat("uni", UNICODE.slice(0, 3));
    await p.queued.deliver(p.queued.queue.sent.splice(0));
    p.advance(SECOND);
    await p.leave("uni", encodeURIComponent(UNICODE[0]!));
    const [sync, queued] = await p.room("uni");
    expect(sync).toMatchObject({ online: UNICODE.length - 1, activeToday: UNICODE.length, newToday: UNICODE.length });
    expect([...queued.members].sort()).toEqual([...sync.members].sort());
    expect(queued).toMatchObject({ online: sync.online, activeToday: sync.activeToday, newToday: sync.newToday });
    p.setNow(T0 + MINUTE);
    for (const api of [p.sync, p.queued])
      expect((await api.post("/internal/jobs/trim", undefined, { key: "admin" })).status).toBe(200);
    p.advance(SECOND);
    const totals = [];
    for (const api of [p.sync, p.queued]) {
      const t = (await api.get("/v1/presence/_total")).body;
      totals.push({ online: t.online, onlineAt: t.onlineAt, peakToday: t.peakToday, peakAt: t.peakAt });
    }
    expect(totals[0]).toEqual({
      online: UNICODE.length + 1,
      onlineAt: T0 + MINUTE,
      peakToday: UNICODE.length + 1,
      peakAt: T0 + MINUTE,
    });
    expect(totals[1]).toEqual(totals[0]);
  });

  // 1,000 ids of 256 bytes are written synchronously (one sendBatch holds about 240 KB: docs/ingest.md);
  // 160 bytes each still needs two messages in one sendBatch
  it("1,000 unicode ids of 160 UTF-8 bytes each: queued in several messages under Queues' size, applied as synchronously", async () => {
    const p = syncQueuedPair(track, "rv16w-big", T0);
    const ids = Array.from({ length: 1000 }, (_, i) => `${String(i).padStart(4, "0")}${"😀".repeat(39)}`);
    expect(new TextEncoder().encode(ids[0]).length).toBe(160);
    await p.heartbeat("big", ids);
    const sent = p.queued.queue.sent.splice(0);
    expect(sent.length).toBeGreaterThan(1);
    for (const m of sent) expect(new TextEncoder().encode(JSON.stringify(m.body)).length).toBeLessThan(128 * 1024);
    await p.queued.deliver(sent);
    p.advance(SECOND);
    const reads = [];
    for (const api of [p.sync, p.queued]) {
      const stats = (await api.get("/v1/presence/big")).body;
      const page = (await api.get("/v1/presence/big/members?limit=1000")).body;
      reads.push({
        online: stats.online,
        peakToday: stats.peakToday,
        activeToday: stats.activeToday,
        newToday: stats.newToday,
        members: page.members.map((m: { id: string }) => m.id).sort(),
        more: page.nextCursor,
      });
    }
    expect(reads[0]).toEqual({
      online: 1000,
      peakToday: 1000,
      activeToday: 1000,
      newToday: 1000,
      members: [...ids].sort(),
      more: null,
    });
    expect(reads[1]).toEqual(reads[0]);
  });
});
