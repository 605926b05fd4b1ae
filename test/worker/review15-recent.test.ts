/**
 * Review 15 (the most recent code): queued ingest's dead-letter fixes of review 14
 * (src/ingest/consume.ts, src/ingest/dead-letter.ts): the `ingest.applied` look-up of a message
 * that can no longer apply, the `dl:<id>` marks of aged-out parts, and what the status counters
 * say. The Worker's own consumer (functions/queue.ts) in workerd against the real local Upstash
 * server; the queue bindings record what is sent (test/helpers/ingest.ts), a failing dead-letter
 * queue is a binding that rejects, as in test/worker/ingest-dead-letter.test.ts.
 */
import { describe, expect, it } from "vitest";
import { cleanedUpAfterAll } from "../helpers/worker.ts";
import { createIngestApi, type IngestApi } from "../helpers/ingest.ts";

const HOUR = 3_600_000;
/** 02:30 UTC: the deliveries below (10 h and 13 h later) stay on the same UTC day. */
const T0 = Date.UTC(2026, 10, 22, 2, 30);
const track = cleanedUpAfterAll<IngestApi>();
const newApi = (label: string) => track(createIngestApi({ label, start: T0 }));

const failingQueue = {
  sendBatch: () => Promise.reject(new Error("queue unavailable")),
  send: () => Promise.reject(new Error("queue unavailable")),
};

const members = (api: IngestApi) => api.dlq.sent.map((m) => (m.body as any).message.events.map((e: any) => e.member));

/**
 * A queued trending write of `events`, first delivered 10 h later while the dead-letter queue
 * refuses every send (its aged-out part is not sent; the message is retried): the api and that
 * first delivery.
 */
async function queuedThenFailedSend(label: string, events: { member: string; at?: number }[]) {
  const api = newApi(label);
  expect((await api.post("/v1/trending/s/events", { events }, { headers: api.asyncHeaders })).status).toBe(202);
  api.advance(10 * HOUR);
  const env = api.env as unknown as Record<string, unknown>;
  const dlq = env.INGEST_DLQ;
  env.INGEST_DLQ = failingQueue;
  const first = await api.deliver([...api.queue.sent]);
  env.INGEST_DLQ = dlq;
  return { api, first };
}

describe("review 15: queued ingest's aged-out parts", () => {
  // Severity: medium (acknowledged items lost, silently: no log, counted a duplicate). A message
  // applied with an aged-out part whose dead-letter send failed is retried "to send its part
  // then" (dead-letter.ts, settleDead); but when by that redelivery the rest of the message has
  // aged out too (the retention passes an hour boundary between deliveries: retries come 1–60 s
  // apart, so it takes a first delivery in an hour's last minute; or a DLQ outage longer than
  // that), the whole message goes the probe path (consume.ts, probeAll): found applied, it is
  // acked as a duplicate and the part that was never sent is dropped.
  // Fix: in probeAll, look the messages' `dl:<id>` marks up with the applied ids (the look-up
  // script can return both); a message found applied but not marked whose split at its accept
  // time `t` (or at its first delivery) had an aged-out part dead-letters that part (the items
  // already past the retention when it was first applied: those before the applied items' hours),
  // instead of acking. Smallest: when a part's send fails, record the part's body under its mark
  // key (`dlp:<id>`, same script as markParts) and have probeAll send what it finds there.
  // Fixed: the apply script records the part it leaves out (the parts hash), `ingest.applied`
  // returns the records of the messages it finds, and probeAll sends that part.
  it("a part whose send failed is still sent when, by the redelivery, the rest of its message aged out too", async () => {
    // first delivery 10 h later: "old" is past the 50 h retention, "edge" (48 h) applies
    const { api, first } = await queuedThenFailedSend("r15-part-probe", [
      { member: "old", at: T0 - 45 * HOUR },
      { member: "edge", at: T0 - 38 * HOUR },
    ]);
    expect(first.stats).toMatchObject({ applied: 1, events: 1, retried: 1, deadLettered: 0 });
    expect(first.retryMessages.map((r) => r.msgId)).toEqual([api.queue.sent[0]?.id]);
    // the redelivery, once "edge" is past the retention as well
    api.advance(3 * HOUR);
    const again = await api.deliver([...api.queue.sent], { attempts: 2 });
    expect(again.explicitAcks).toEqual([api.queue.sent[0]?.id]);
    // right: the part "old" (never sent) is dead-lettered now, once, and counted; "edge" is not (applied)
    expect(members(api)).toEqual([["old"]]);
    expect(again.stats).toMatchObject({ deadLettered: 1 });
  });

  // Severity: medium (items applied and dead-lettered too: re-POSTed from the dead-letter queue as
  // docs/ingest.md says, they count twice). Same cause as above: the part a redelivery sends is
  // the message split at the redelivery's time, not the part its first application left out. When
  // an applied item ages out between the failed send and the redelivery (an hour boundary), the
  // part sent then holds it too, although it was applied at the first delivery.
  // Fix (src/ingest/consume.ts with the apply script): keep the part decided at the application
  // (its body, or its items' indexes, under `dl:<id>`'s pending form written by the apply script in
  // the same atomic step) and send exactly that on a redelivery; the same record fixes the probe
  // path above.
  // Fixed: a redelivery found applied sends the part recorded at its application (item indexes).
  it("the part sent on the redelivery is the one left out at the application: not an item applied since aged out", async () => {
    const { api, first } = await queuedThenFailedSend("r15-part-grown", [
      { member: "old", at: T0 - 45 * HOUR },
      { member: "edge", at: T0 - 38 * HOUR },
      { member: "fresh" },
    ]);
    // "edge" and "fresh" applied, the part "old" not sent
    expect(first.stats).toMatchObject({ applied: 1, events: 2, retried: 1 });
    api.advance(3 * HOUR);
    const again = await api.deliver([...api.queue.sent], { attempts: 2 });
    expect(again.explicitAcks).toEqual([api.queue.sent[0]?.id]);
    expect(again.stats).toMatchObject({ applied: 0, duplicates: 1, deadLettered: 1 });
    // right: "old" alone ("edge" was applied at the first delivery)
    expect(members(api)).toEqual([["old"]]);
  });

  it("pins: the same message delivered again while its rest still applies sends the failed part once, and a third delivery nothing", async () => {
    const { api } = await queuedThenFailedSend("r15-part-once", [
      { member: "old", at: T0 - 45 * HOUR },
      { member: "edge", at: T0 - 38 * HOUR },
    ]);
    api.advance(30_000);
    const again = await api.deliver([...api.queue.sent], { attempts: 2 });
    expect(again.stats).toMatchObject({ applied: 0, duplicates: 1, deadLettered: 1, retried: 0 });
    const third = await api.deliver([...api.queue.sent], { attempts: 3 });
    expect(third.stats).toMatchObject({ applied: 0, duplicates: 1, deadLettered: 0, retried: 0 });
    expect(members(api)).toEqual([["old"]]);
  });

  it("pins: a whole message aged out and never applied is dead-lettered once, whole, under its messageId", async () => {
    const api = newApi("r15-whole");
    const body = { events: [{ member: "gone", at: T0 - 45 * HOUR }] };
    expect((await api.post("/v1/trending/s/events", body, { headers: api.asyncHeaders })).status).toBe(202);
    api.advance(10 * HOUR);
    const first = await api.deliver([...api.queue.sent]);
    expect(first.stats).toMatchObject({ applied: 0, deadLettered: 1, duplicates: 0 });
    expect(first.explicitAcks).toEqual([api.queue.sent[0]?.id]);
    expect(api.dlq.sent.map((m) => (m.body as any).messageId)).toEqual([api.queue.sent[0]?.id]);
  });
});
