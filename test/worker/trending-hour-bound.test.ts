/**
 * The bound on one member's count in one hour (MAX_HOUR_COUNT = 5e13, review 10; docs/trending.md,
 * "Counts and exactness") through queued ingest: the record script refuses past it by raising an
 * error, so a queued message that would pass it is retried (and, after Queues' max_retries,
 * dead-lettered), never marked applied with its events dropped. The synchronous 400 is tested in
 * test/worker/review10-numbers.test.ts.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createIngestApi } from "../helpers/ingest.ts";

const api = createIngestApi({ label: "trend-bound", start: "2026-11-22T12:30:00Z" });
afterAll(() => api.cleanup());

describe("trending hour bound, queued", () => {
  it("a queued event past 5e13 is retried, not applied; the other stream's message is applied", async () => {
    const fill = Array.from({ length: 50 }, () => ({ member: "x", count: 1e12 }));
    expect((await api.post("/v1/trending/qb/events", { events: fill })).status).toBe(200);
    const over = await api.post("/v1/trending/qb/events", { member: "x" }, { headers: api.asyncHeaders });
    const other = await api.post("/v1/trending/qb2/events", { member: "y", count: 3 }, { headers: api.asyncHeaders });
    expect([over.status, other.status]).toEqual([202, 202]);
    const [overMsg, otherMsg] = api.queue.sent;
    const first = await api.deliver(api.queue.sent);
    expect(first.stats).toMatchObject({ applied: 1, retried: 1 });
    expect(first.explicitAcks).toEqual([otherMsg?.id]);
    expect(first.retryMessages.map((r) => r.msgId)).toEqual([overMsg?.id]);
    // nothing of the refused message was written, and a redelivery is refused again
    const again = await api.deliver(overMsg ? [overMsg] : [], { attempts: 2 });
    expect(again.stats).toMatchObject({ applied: 0, retried: 1 });
    expect((await api.get("/v1/trending/qb/top")).body.items).toEqual([{ rank: 1, member: "x", count: 5e13 }]);
    expect((await api.get("/v1/trending/qb2/top")).body.items).toEqual([{ rank: 1, member: "y", count: 3 }]);
  });

  it("the check costs no command: a new stream's first write is 7 commands for 1 member or 100, a steady one 2 + members", async () => {
    const hundred = Array.from({ length: 100 }, (_, i) => ({ member: `m${i}` }));
    const one = await api.cost(() => api.post("/v1/trending/cost1/events", { member: "a" }));
    const many = await api.cost(() => api.post("/v1/trending/cost100/events", { events: hundred }));
    const steady = await api.cost(() => api.post("/v1/trending/cost100/events", { events: hundred }));
    expect([one.result.status, many.result.status, steady.result.status]).toEqual([200, 200, 200]);
    expect([one.commands, many.commands, steady.commands]).toEqual([7, 7, 102]);
    // the new bucket's ZADD wrote each member's count (and the sentinel), as ZINCRBY would have
    const top = await api.get("/v1/trending/cost100/top?n=2");
    expect(top.body.items).toEqual([
      { rank: 1, member: "m0", count: 2 },
      { rank: 2, member: "m1", count: 2 },
    ]);
  });
});
