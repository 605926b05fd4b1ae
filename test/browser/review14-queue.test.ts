/**
 * Review 14, through wrangler dev's real local Queues (the project's wrangler.toml: producer,
 * consumer with max_retries 10, dead-letter queue) over dev/fault-proxy.ts in front of the local
 * Upstash server and a real redis-server: the aged-out part of a message is dead-lettered again
 * when the message comes back after its script committed. Companion of
 * test/worker/review14-queue.test.ts (which observes the real dead-letter binding itself).
 */
import { describe, expect, it } from "vitest";
import { queuedDev, sleep, until } from "../helpers/wrangler-dev.ts";

const suffix = Math.random().toString(36).slice(2, 10);
const KEYS = { ingest: `r14-ingest-${suffix}`, read: `r14-read-${suffix}`, admin: `r14-admin-${suffix}` };
const dev = queuedDev("r14queues", KEYS);
const status = () => dev.status();

async function call(method: string, path: string, key: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${dev.wrangler!.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

describe("review 14: queued ingest's dead-letter queue, through wrangler dev", () => {
  // Severity: medium (test/worker/review14-queue.test.ts has the fix). A message with an item that
  // aged out while queued: its first delivery sends that item to the dead-letter queue and applies
  // the rest, but the answer of its script is lost (Redis applied it); the local queue delivers it
  // again, and the item is sent to the dead-letter queue a second time (the consumer's own status
  // says so), though the rest is rightly acked as a duplicate. Re-POSTing the DLQ, as
  // docs/ingest.md advises, counts that item twice.
  it("an aged-out item is dead-lettered once, though its message's answer was lost and it came back", async () => {
    // warm-up: the consumer's counters apply script is loaded (a lost answer to an EVALSHA that
    // found no script would be a write that did not happen)
    const warm = await call(
      "POST",
      "/v1/counters/r14-warm/incr",
      KEYS.ingest,
      { member: "w" },
      { prefer: "respond-async" },
    );
    expect(warm.status).toBe(202);
    await until("the warm-up applied", status, (s) => s.applied >= 1);
    const before = await status();
    // last hour's bucket (its age counts from its end, this hour's start) with a ttl that ends
    // within a second: valid at the 202, aged out when the consumer (which waits up to 1 s to fill
    // a batch) sees it
    // (its ttl ends 300..700 ms after the 202; the consumer's batch waits 1 s)
    let now = Date.now();
    while (now % 1000 < 300 || now % 1000 > 700) {
      await sleep(50);
      now = Date.now();
    }
    const hour = Math.floor(now / 3_600_000) * 3_600_000;
    const ttl = Math.ceil((now - hour) / 1000);
    const items = [
      { member: "gone", period: "hour", at: hour - 1, ttl },
      { member: "kept", by: 4 },
    ];
    const res = await call("POST", "/v1/counters/r14-lost/incr", KEYS.ingest, { items }, { prefer: "respond-async" });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    // the consumer's next Redis call (its apply script) commits, and its answer is lost
    const base = dev.proxy!.stats().faulted["lose-response"] ?? 0;
    dev.proxy!.set({ fault: { kind: "lose-response" }, times: 1 });
    // no Redis read of ours until the consumer met it (a status read would take the fault)
    await until(
      "the consumer's script answer lost",
      async () => dev.proxy!.stats().faulted["lose-response"] ?? 0,
      (n) => n > base,
      20_000,
    );
    const d = await until(
      "the message applied and its redelivery settled",
      async () => {
        const s = await status();
        return {
          applied: s.applied - before.applied,
          duplicates: s.duplicates - before.duplicates,
          retried: s.retried - before.retried,
          deadLettered: s.deadLettered - before.deadLettered,
        };
      },
      (v) => v.duplicates >= 1 || v.applied >= 1,
    );
    expect(dev.proxy!.stats().faulted["lose-response"] ?? 0).toBe(base + 1);
    // the answer lost was the apply script's: retried once, then found applied
    expect(d).toMatchObject({ applied: 0, duplicates: 1, retried: 1 });
    const top = await call("GET", "/v1/counters/r14-lost/top?n=10", KEYS.read);
    expect(top.body.items.map((i: any) => [i.member, i.score])).toEqual([["kept", 4]]);
    expect(d.deadLettered).toBe(1);
  });
});
