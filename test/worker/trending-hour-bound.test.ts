/**
 * The bound on one member's count in one hour (MAX_HOUR_COUNT = 5e13, review 10; docs/trending.md,
 * "Counts and exactness") through queued ingest: the record script refuses past it by raising an
 * error and writes nothing, so a queued message that would pass it is never marked applied with its
 * events dropped. It can never apply (an hour's count only grows), so the consumer dead-letters it at
 * once; the valid messages the consumer merged with it into one script are applied on their own.
 * The synchronous 400 is tested in test/worker/review10-numbers.test.ts.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createIngestApi } from "../helpers/ingest.ts";

const api = createIngestApi({ label: "trend-bound", start: "2026-11-22T12:30:00Z" });
afterAll(() => api.cleanup());

describe("trending hour bound, queued", () => {
  it("a queued event past 5e13 is dead-lettered, not applied; the other stream's message is applied", async () => {
    const fill = Array.from({ length: 50 }, () => ({ member: "x", count: 1e12 }));
    expect((await api.post("/v1/trending/qb/events", { events: fill })).status).toBe(200);
    const sent = api.queue.sent.length;
    const over = await api.post("/v1/trending/qb/events", { member: "x" }, { headers: api.asyncHeaders });
    const other = await api.post("/v1/trending/qb2/events", { member: "y", count: 3 }, { headers: api.asyncHeaders });
    expect([over.status, other.status]).toEqual([202, 202]);
    const [overMsg, otherMsg] = api.queue.sent.slice(sent);
    const first = await api.deliver(api.queue.sent.slice(sent));
    expect(first.stats).toMatchObject({ applied: 1, retried: 0, deadLettered: 1 });
    expect(first.explicitAcks.sort()).toEqual([overMsg?.id, otherMsg?.id].sort());
    expect(api.dlq.sent).toHaveLength(1);
    expect(JSON.stringify(api.dlq.sent[0]?.body)).toContain("5e13");
    // nothing of the refused message was written
    expect((await api.get("/v1/trending/qb/top")).body.items).toEqual([{ rank: 1, member: "x", count: 5e13 }]);
    expect((await api.get("/v1/trending/qb2/top")).body.items).toEqual([{ rank: 1, member: "y", count: 3 }]);
  });

  it("merged into one script with valid messages of its stream, only the message past the bound is dead-lettered", async () => {
    const fill = Array.from({ length: 50 }, () => ({ member: "x", count: 1e12 }));
    expect((await api.post("/v1/trending/qm/events", { events: fill })).status).toBe(200);
    const sent = api.queue.sent.length;
    const dead = api.dlq.sent.length;
    const before = await api.post("/v1/trending/qm/events", { member: "y", count: 2 }, { headers: api.asyncHeaders });
    const over = await api.post("/v1/trending/qm/events", { member: "x", count: 4 }, { headers: api.asyncHeaders });
    const after = await api.post("/v1/trending/qm/events", { member: "z" }, { headers: api.asyncHeaders });
    expect([before.status, over.status, after.status]).toEqual([202, 202, 202]);
    const msgs = api.queue.sent.slice(sent);
    const result = await api.deliver(msgs);
    // the three met in one script, which refused; alone, the first and the last apply
    expect(result.stats).toMatchObject({ applied: 2, retried: 0, deadLettered: 1 });
    expect(api.dlq.sent.length - dead).toBe(1);
    expect(JSON.stringify(api.dlq.sent[dead]?.body)).toContain('"count":4');
    expect((await api.get("/v1/trending/qm/top")).body.items).toEqual([
      { rank: 1, member: "x", count: 5e13 },
      { rank: 2, member: "y", count: 2 },
      { rank: 3, member: "z", count: 1 },
    ]);
  });

  it("a group past one call's items is never merged: the valid messages before the offender count once", async () => {
    // 600 + 600 distinct members and then one past the bound, one stream: merged into one group they
    // made two library calls in one apply script, the first of which wrote before the second raised;
    // applied alone after it, the first call's messages then counted twice (found in review)
    const fill = Array.from({ length: 50 }, () => ({ member: "x", count: 1e12 }));
    expect((await api.post("/v1/trending/qg/events", { events: fill })).status).toBe(200);
    const sent = api.queue.sent.length;
    for (const prefix of ["a", "b"]) {
      const events = Array.from({ length: 600 }, (_, i) => ({ member: `${prefix}${i}` }));
      const res = await api.post("/v1/trending/qg/events", { events }, { headers: api.asyncHeaders });
      expect(res.status).toBe(202);
    }
    expect((await api.post("/v1/trending/qg/events", { member: "x" }, { headers: api.asyncHeaders })).status).toBe(202);
    const result = await api.deliver(api.queue.sent.slice(sent));
    expect(result.stats).toMatchObject({ applied: 2, retried: 0, deadLettered: 1 });
    for (const member of ["a0", "a599", "b0", "b599"]) {
      const res = await api.get(`/v1/trending/qg/members/${member}`);
      expect([member, res.status, res.body.count]).toEqual([member, 200, 1]);
    }
    expect((await api.get("/v1/trending/qg/members/x")).body.count).toBe(5e13);
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
