/**
 * Adversarial review of scopes through queued ingest (`Prefer: respond-async`): the queue must not
 * be a way around a scope. A refused request queues nothing, and what an ingest key queues is
 * applied by the consumer with an ingest key's limits (here: a `ttl` never shortens or sets an
 * expiry on an existing counter, docs/guarantees.md › Scopes are absolute).
 */
import { describe, expect, it } from "vitest";
import { createIngestApi, type IngestApi } from "../helpers/ingest.ts";
import { command } from "../helpers/upstash-rest.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";

const track = cleanedUpAfterAll<IngestApi>();

describe("review: queued ingest keeps the scopes", () => {
  it("no key, an unknown key or a read key with Prefer: respond-async is refused and queues nothing", async () => {
    const api = track(createIngestApi({ label: "review-q-refused" }));
    const writes: [string, unknown][] = [
      ["/v1/trending/qs/events", { member: "a" }],
      ["/v1/counters/qc/incr", { member: "a" }],
      ["/v1/presence/qr/heartbeats", { id: "u1" }],
    ];
    for (const [path, body] of writes) {
      for (const [key, status] of [
        ["none", 401],
        ["not-a-configured-key-0", 401],
        ["read", 403],
      ] as const) {
        const res = await api.post(path, body, { key, headers: api.asyncHeaders });
        expect({ path, key, status: res.status }).toEqual({ path, key, status });
      }
    }
    expect(api.queue.sent).toEqual([]);
    expect(await api.keys()).toEqual([]);
  });

  it("an ingest key's queued ttl: 1 on a counter without expiry lands only the increment; the counter keeps no expiry", async () => {
    const api = track(createIngestApi({ label: "review-q-ttl" }));
    expect((await api.post("/v1/counters/qk/incr", { member: "a", by: 5 })).status).toBe(200);
    const key = `${api.prefix}:counters:qk`;
    expect(await command(api.target, "PTTL", key)).toBe(-1);
    const queued = await api.post(
      "/v1/counters/qk/incr",
      {
        items: [
          { member: "a", ttl: 1 },
          { member: "b", ttl: 1 },
        ],
      },
      { headers: api.asyncHeaders },
    );
    expect(queued.status).toBe(202);
    const result = await api.deliver(api.queue.sent);
    expect(result.retryMessages).toEqual([]);
    expect(await command(api.target, "PTTL", key)).toBe(-1);
    expect((await api.get("/v1/counters/qk/members/a")).body.score).toBe(6);
    expect((await api.get("/v1/counters/qk/members/b")).body.score).toBe(1);
  });

  it("a queued message cannot name a target the API would refuse: a forged message with a bad name is dead-lettered, writing nothing", async () => {
    const api = track(createIngestApi({ label: "review-q-forged" }));
    expect((await api.post("/v1/counters/qf/incr", { member: "a" }, { headers: api.asyncHeaders })).status).toBe(202);
    const [sent] = api.queue.sent;
    if (!sent) throw new Error("nothing queued");
    // what a message would look like if it reached the queue some other way: a key-spelling name
    const forged = { ...sent, id: "forged-1", body: { ...sent.body, name: "qf:index" } };
    const result = await api.deliver([forged]);
    expect(result.retryMessages).toEqual([]);
    expect(api.dlq.sent.map((m) => [m.body.messageId, m.body.message.name])).toEqual([["forged-1", "qf:index"]]);
    const keys = await api.keys();
    expect(keys.filter((k) => k.includes("qf:index"))).toEqual([]);
  });
});
