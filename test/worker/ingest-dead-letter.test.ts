/**
 * Queued ingest's dead-letter handling after review 14, beside test/worker/review14-queue.test.ts:
 * with a dead-letter producer, a message still failing on its last delivery is sent there by the
 * consumer with its reason, acked and counted; an aged-out part whose send failed is sent on the
 * redelivery (the message found applied), once. Real local Upstash; an outage is an unreachable URL.
 */
import { describe, expect, it } from "vitest";
import { cleanedUpAfterAll } from "../helpers/worker.ts";
import { createIngestApi, type IngestApi } from "../helpers/ingest.ts";

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const track = cleanedUpAfterAll<IngestApi>();
const newApi = (label: string) => track(createIngestApi({ label, start: T0 }));

describe("queued ingest: dead-lettering by the consumer", () => {
  it("on its last delivery (attempts 11, max_retries 10) a message meeting a storage error is dead-lettered with its reason, acked, counted", async () => {
    const api = newApi("idl-last");
    expect((await api.post("/v1/trending/s/events", { member: "m" }, { headers: api.asyncHeaders })).status).toBe(202);
    const env = api.env as unknown as Record<string, unknown>;
    const url = env.UPSTASH_REDIS_REST_URL;
    env.UPSTASH_REDIS_REST_URL = "http://127.0.0.1:9";
    const early = await api.deliver([...api.queue.sent], { attempts: 10 });
    expect(early.retryMessages.map((r) => r.msgId)).toEqual([api.queue.sent[0]?.id]);
    expect(early.stats).toMatchObject({ retried: 1, deadLettered: 0 });
    expect(api.dlq.sent).toEqual([]);
    const last = await api.deliver([...api.queue.sent], { attempts: 11 });
    env.UPSTASH_REDIS_REST_URL = url;
    expect(last.explicitAcks).toEqual([api.queue.sent[0]?.id]);
    expect(last.retryMessages).toEqual([]);
    expect(last.stats).toMatchObject({ retried: 0, deadLettered: 1, applied: 0 });
    expect(api.dlq.sent.map((m) => m.body)).toEqual([
      {
        reason: expect.stringMatching(/^storage error: .*delivery 11, the last of max_retries 10/),
        messageId: api.queue.sent[0]?.id,
        message: api.queue.sent[0]?.body,
      },
    ]);
  });

  it("an aged-out part whose send failed: the message is retried, and the redelivery (found applied) sends it once", async () => {
    const api = newApi("idl-part-retry");
    const body = {
      events: [
        { member: "old", at: T0 - 45 * HOUR },
        { member: "fresh", count: 2 },
      ],
    };
    expect((await api.post("/v1/trending/s/events", body, { headers: api.asyncHeaders })).status).toBe(202);
    api.advance(10 * HOUR);
    const env = api.env as unknown as Record<string, unknown>;
    const dlq = env.INGEST_DLQ;
    env.INGEST_DLQ = {
      sendBatch: () => Promise.reject(new Error("queue unavailable")),
      send: () => Promise.reject(new Error("queue unavailable")),
    };
    const failed = await api.deliver([...api.queue.sent]);
    env.INGEST_DLQ = dlq;
    expect(failed.stats).toMatchObject({ applied: 1, events: 1, retried: 1, deadLettered: 0 });
    expect(failed.retryMessages.map((r) => r.msgId)).toEqual([api.queue.sent[0]?.id]);
    const again = await api.deliver([...api.queue.sent], { attempts: 2 });
    expect(again.stats).toMatchObject({ applied: 0, duplicates: 1, deadLettered: 1 });
    expect(again.explicitAcks).toEqual([api.queue.sent[0]?.id]);
    const third = await api.deliver([...api.queue.sent], { attempts: 3 });
    expect(third.stats).toMatchObject({ duplicates: 1, deadLettered: 0 });
    expect(api.dlq.sent.map((m) => (m.body as any).message.events.map((e: any) => e.member))).toEqual([["old"]]);
    const top = await api.get("/v1/trending/s/top?n=10&window=24h");
    expect(top.body.items.map((i: any) => [i.member, i.count])).toEqual([["fresh", 2]]);
  });
});
