/**
 * The counter score bound (±1e15, MAX_COUNTER_SCORE, review 10; docs/counters.md, "Score range")
 * through queued ingest: the incr script undoes a batch that leaves the range and, queued, raises
 * an error (SCORE_RANGE_ERROR) instead of returning the refusal its apply script would ignore. So
 * the group's apply script records none of its messages; the consumer applies them one by one,
 * each valid one once, and dead-letters the one past the bound at once. A group is at most one
 * library call (1,000 entries), so the error takes back everything its script tried.
 * The synchronous 400 is tested in test/worker/review10-numbers.test.ts (checked here too).
 */
import { afterAll, describe, expect, it } from "vitest";
import { createIngestApi } from "../helpers/ingest.ts";
import { keySnapshot } from "../helpers/key-snapshot.ts";

const api = createIngestApi({ label: "ctr-bound", start: "2026-11-22T12:30:00Z" });
afterAll(() => api.cleanup());

/** What the counters area holds (the consumer's own stats and applied sets left out). */
const countersSnapshot = async () =>
  (await keySnapshot(api.target, api.prefix)).filter((k) => k.includes(":counters:"));

/** Fills member x of `counter` to exactly 1e15, synchronously (1,000 × 1e12). */
async function fill(counter: string) {
  const full = { items: Array.from({ length: 1000 }, () => ({ member: "x", by: 1e12 })) };
  const res = await api.post(`/v1/counters/${counter}/incr`, full);
  expect(res.body.results.at(-1)).toEqual({ member: "x", score: 1e15 });
}

const score = async (counter: string, member: string) =>
  (await api.get(`/v1/counters/${counter}/members/${member}`)).body.score;

describe("counter score bound, queued", () => {
  it("a queued increment past 1e15 is dead-lettered and writes nothing; another counter's message is applied", async () => {
    await fill("qb");
    const before = await countersSnapshot();
    const sent = api.queue.sent.length;
    const over = await api.post("/v1/counters/qb/incr", { member: "x", by: 1 }, { headers: api.asyncHeaders });
    expect(over.status).toBe(202);
    const [overMsg] = api.queue.sent.slice(sent);
    const first = await api.deliver(api.queue.sent.slice(sent));
    expect(first.stats).toMatchObject({ applied: 0, retried: 0, deadLettered: 1 });
    expect(first.explicitAcks).toEqual([overMsg?.id]);
    expect(api.dlq.sent).toHaveLength(1);
    expect(api.dlq.sent[0]?.body.reason).toContain("±1e15");
    expect(await countersSnapshot()).toEqual(before);
    // with another counter's message in the same batch (its own group): that one is applied
    const sent2 = api.queue.sent.length;
    await api.post("/v1/counters/qb/incr", { member: "x", by: 1 }, { headers: api.asyncHeaders });
    await api.post("/v1/counters/qb2/incr", { member: "y", by: 3 }, { headers: api.asyncHeaders });
    const second = await api.deliver(api.queue.sent.slice(sent2));
    expect(second.stats).toMatchObject({ applied: 1, retried: 0, deadLettered: 1 });
    expect(await score("qb", "x")).toBe(1e15);
    expect(await score("qb2", "y")).toBe(3);
    // the synchronous path is unchanged: the 400 naming the bound, nothing written
    const sync = await api.post("/v1/counters/qb/incr", { member: "x", by: 1 });
    expect(sync.status).toBe(400);
    expect(sync.body.error.details).toEqual([
      { in: "json", path: "by", message: "resulting score must stay within ±1000000000000000" },
    ]);
    expect(await score("qb", "x")).toBe(1e15);
  });

  it("merged into one script with valid messages of its counter, only the message past the bound is dead-lettered", async () => {
    await fill("qm");
    const sent = api.queue.sent.length;
    const dead = api.dlq.sent.length;
    const h = { headers: api.asyncHeaders };
    const before = await api.post("/v1/counters/qm/incr", { member: "y", by: 2 }, h);
    // a bucket and its rollups with it: all undone with the plain key's refusal
    const over = await api.post(
      "/v1/counters/qm/incr",
      { items: [{ member: "w", period: "hour" }, { member: "x" }] },
      h,
    );
    const after = await api.post("/v1/counters/qm/incr", { member: "z" }, h);
    expect([before.status, over.status, after.status]).toEqual([202, 202, 202]);
    const result = await api.deliver(api.queue.sent.slice(sent));
    // the three met in one script, which raised; alone, the first and the last apply, once
    expect(result.stats).toMatchObject({ applied: 2, retried: 0, deadLettered: 1 });
    expect(api.dlq.sent.length - dead).toBe(1);
    expect(JSON.stringify(api.dlq.sent[dead]?.body)).toContain('"member":"w"');
    expect((await api.get("/v1/counters/qm/top?n=10")).body.items).toEqual([
      { rank: 1, member: "x", score: 1e15 },
      { rank: 2, member: "y", score: 2 },
      { rank: 3, member: "z", score: 1 },
    ]);
    expect((await api.get("/v1/counters/qm/top?period=hour")).body.items).toEqual([]);
    // redelivered, nothing counts twice, and the refused message is not sent again: its ids were
    // marked applied once it was dead-lettered (review 21; it was sent once per delivery before)
    const again = await api.deliver(api.queue.sent.slice(sent));
    expect(again.stats).toMatchObject({ applied: 0, duplicates: 3, deadLettered: 0 });
    expect(api.dlq.sent.length - dead).toBe(1);
    expect([await score("qm", "y"), await score("qm", "z")]).toEqual([2, 1]);
    // the hour bucket the refused message named is written by a valid one (so the read above sees buckets)
    expect((await api.post("/v1/counters/qm/incr", { member: "w", period: "hour" }, h)).status).toBe(202);
    expect((await api.deliver(api.queue.sent.slice(-1))).stats).toMatchObject({ applied: 1 });
    expect((await api.get("/v1/counters/qm/top?period=hour")).body.items).toEqual([{ rank: 1, member: "w", score: 1 }]);
  });

  it("a group past one call's items is never merged: the valid messages before the offender count once", async () => {
    // 600 + 600 distinct members and then one past the bound, one counter: with groups of 4,000
    // entries they made two library calls in one apply script, the first of which wrote before the
    // second raised; applied alone after it, the first call's messages would have counted twice
    await fill("qg");
    const sent = api.queue.sent.length;
    for (const prefix of ["a", "b"]) {
      const items = Array.from({ length: 600 }, (_, i) => ({ member: `${prefix}${i}` }));
      expect((await api.post("/v1/counters/qg/incr", { items }, { headers: api.asyncHeaders })).status).toBe(202);
    }
    const over = await api.post("/v1/counters/qg/incr", { member: "x" }, { headers: api.asyncHeaders });
    expect(over.status).toBe(202);
    const result = await api.deliver(api.queue.sent.slice(sent));
    expect(result.stats).toMatchObject({ applied: 2, retried: 0, deadLettered: 1, events: 1200 });
    for (const member of ["a0", "a599", "b0", "b599"]) expect([member, await score("qg", member)]).toEqual([member, 1]);
    expect(await score("qg", "x")).toBe(1e15);
  });

  it("increments merged past MAX_INCREMENT (two calls for one entry) are applied in halves: each valid message once", async () => {
    // x: 600 × 1e12 twice, one entry merged to 1.2e15, cut into 1,200 items of 1e12 (two calls). In
    // one apply script the first call (x to 1e15) would stay written when the second raised; halved,
    // the first message applies alone (6e14) and the second, past the bound alone, is dead-lettered
    const sent = api.queue.sent.length;
    const dead = api.dlq.sent.length;
    const h = { headers: api.asyncHeaders };
    const six = { items: Array.from({ length: 600 }, () => ({ member: "x", by: 1e12 })) };
    expect((await api.post("/v1/counters/qh/incr", six, h)).status).toBe(202);
    expect((await api.post("/v1/counters/qh/incr", six, h)).status).toBe(202);
    expect((await api.post("/v1/counters/qh/incr", { member: "y", by: 3 }, h)).status).toBe(202);
    const result = await api.deliver(api.queue.sent.slice(sent));
    expect(result.stats).toMatchObject({ applied: 2, retried: 0, deadLettered: 1 });
    expect(api.dlq.sent.length - dead).toBe(1);
    expect(await score("qh", "x")).toBe(6e14);
    expect(await score("qh", "y")).toBe(3);
  });
});
