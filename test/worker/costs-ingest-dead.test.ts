/**
 * What queued ingest's dead-letter paths cost (review 14's fixes), measured against the real local
 * Upstash server and asserted as rows of test/costs/ingest.ts: a message with an aged-out item
 * (applied, its part sent and marked), the same message delivered again (found applied, its part's
 * record gone: nothing sent), the same after a failed send once the rest aged out too (found
 * applied, the part recorded at the application sent: review 15), and a message that can no longer
 * apply at all (looked up in the applied sets, then dead-lettered).
 */
import { describe, expect, it } from "vitest";
import { area } from "../costs/ingest.ts";
import { costOf, expected } from "../costs/types.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";
import { createIngestApi, type IngestApi } from "../helpers/ingest.ts";

const rows = area.rows;
const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const track = cleanedUpAfterAll<IngestApi>();
const newApi = (label: string) => track(createIngestApi({ label, start: T0 }));

describe("costs: queued ingest's dead-letter paths", () => {
  it("an aged-out item: applied and its part marked once; delivered again, nothing sent", async () => {
    const api = newApi("icost-part");
    const body = { events: [{ member: "old", at: T0 - 45 * HOUR }, { member: "fresh" }] };
    // warm: the scripts loaded (a first such message, elsewhere), the stream's hour and member known
    expect((await api.post("/v1/trending/w/events", body, { headers: api.asyncHeaders })).status).toBe(202);
    const [warm] = api.queue.sent.splice(0);
    await api.post("/v1/trending/p/events", { member: "fresh" });
    expect((await api.post("/v1/trending/p/events", body, { headers: api.asyncHeaders })).status).toBe(202);
    api.advance(10 * HOUR);
    await api.deliver([warm!]);
    api.dlq.clear();
    const first = await api.cost(() => api.deliver([...api.queue.sent]));
    expect(first.result.stats).toMatchObject({ applied: 1, deadLettered: 1, events: 1, retried: 0 });
    expect(api.dlq.sent).toHaveLength(1);
    expect(costOf(first)).toEqual(expected(rows.agedPart));
    const again = await api.cost(() => api.deliver([...api.queue.sent], { attempts: 2 }));
    expect(again.result.stats).toMatchObject({ applied: 0, duplicates: 1, deadLettered: 0 });
    expect(again.result.explicitAcks).toEqual([api.queue.sent[0]?.id]);
    expect(api.dlq.sent).toHaveLength(1);
    expect(costOf(again)).toEqual(expected(rows.agedPartAgain));
  });

  it("a part whose send failed, delivered again once the rest aged out too: found applied, its part sent", async () => {
    const api = newApi("icost-late");
    const body = {
      events: [
        { member: "old", at: T0 - 45 * HOUR },
        { member: "edge", at: T0 - 38 * HOUR },
      ],
    };
    // warm: the same path taken first by a message of another stream (the scripts loaded)
    for (const stream of ["w", "p"])
      expect((await api.post(`/v1/trending/${stream}/events`, body, { headers: api.asyncHeaders })).status).toBe(202);
    api.advance(10 * HOUR);
    const env = api.env as unknown as Record<string, unknown>;
    const dlq = env.INGEST_DLQ;
    env.INGEST_DLQ = { sendBatch: () => Promise.reject(new Error("queue unavailable")) };
    const first = await api.deliver([...api.queue.sent]);
    env.INGEST_DLQ = dlq;
    expect(first.stats).toMatchObject({ applied: 2, events: 2, retried: 2, deadLettered: 0 });
    // the next day: "edge" aged out as well
    api.advance(3 * HOUR);
    const [warm, message] = api.queue.sent;
    await api.deliver([warm!], { attempts: 2 });
    api.dlq.clear();
    const m = await api.cost(() => api.deliver([message!], { attempts: 2 }));
    expect(m.result.stats).toMatchObject({ applied: 0, duplicates: 1, deadLettered: 1, retried: 0 });
    expect(m.result.explicitAcks).toEqual([message!.id]);
    expect(api.dlq.sent.map((s) => (s.body as any).message.events.map((e: any) => e.member))).toEqual([["old"]]);
    expect(costOf(m)).toEqual(expected(rows.agedPartLate));
  });

  it("a message that can no longer apply: looked up, then dead-lettered", async () => {
    const api = newApi("icost-dead");
    const body = { events: [{ member: "old", at: T0 - 45 * HOUR }] };
    // warm: the scripts loaded (a first such message)
    for (const stream of ["w", "d"])
      expect((await api.post(`/v1/trending/${stream}/events`, body, { headers: api.asyncHeaders })).status).toBe(202);
    const [warm] = api.queue.sent.splice(0, 1);
    api.advance(10 * HOUR);
    await api.deliver([warm!]);
    api.dlq.clear();
    const m = await api.cost(() => api.deliver([...api.queue.sent]));
    expect(m.result.stats).toMatchObject({ applied: 0, deadLettered: 1, duplicates: 0 });
    expect(api.dlq.sent).toHaveLength(1);
    expect(costOf(m)).toEqual(expected(rows.deadWhole));
  });
});
