/**
 * Through the real (local) queue: the worker pool runs wrangler.toml's producer
 * and consumer, so requests accepted with `Prefer: respond-async` are delivered
 * to the Worker's `queue` handler in batches (max 100, 1 s timeout) and applied
 * with the deployment's own config (KEY_PREFIX "es"): this test uses streams of
 * its own there and deletes them.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createTestApi } from "../helpers/worker.ts";

const run = Math.random().toString(36).slice(2, 8);
const STREAMS = ["pages", "search", "games"].map((s) => `q-${run}-${s}`);

describe("queued ingest through the local queue", () => {
  const api = createTestApi({ label: "ingest-queue", start: Date.now(), vars: { KEY_PREFIX: "es" } });
  afterAll(async () => {
    for (const stream of STREAMS) await api.del(`/v1/trending/${stream}`, { key: "admin" });
  });

  it("30 requests of 100 events over 3 streams are all applied within seconds, every count exact", async () => {
    const expected = new Map<string, Map<string, number>>();
    for (let r = 0; r < 30; r++) {
      const stream = STREAMS[r % 3] as string;
      const events = Array.from({ length: 100 }, (_, i) => ({
        member: `m${(r * 7 + i * 13) % 40}`,
        count: 1 + ((r + i) % 3),
      }));
      const res = await api.post(`/v1/trending/${stream}/events`, { events }, { headers: { prefer: "respond-async" } });
      expect(res.status).toBe(202);
      const counts = expected.get(stream) ?? new Map<string, number>();
      for (const e of events) counts.set(e.member, (counts.get(e.member) ?? 0) + e.count);
      expected.set(stream, counts);
    }
    const started = Date.now();
    const read = async (stream: string) => {
      api.setNow(Date.now());
      const top = await api.get(`/v1/trending/${stream}/top?n=100&window=24h`);
      return new Map<string, number>(top.body.items.map((i: any) => [i.member, i.count]));
    };
    for (;;) {
      const got = await Promise.all(STREAMS.map(read));
      if (
        STREAMS.every(
          (s, i) => JSON.stringify([...(got[i] ?? [])].sort()) === JSON.stringify([...(expected.get(s) ?? [])].sort()),
        )
      )
        break;
      if (Date.now() - started > 15_000) {
        for (const [i, s] of STREAMS.entries()) expect(got[i]).toEqual(expected.get(s));
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    console.log(`queued ingest: 3,000 events applied ${Date.now() - started} ms after the last 202`);
  });
});
