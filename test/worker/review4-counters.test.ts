/**
 * Review 4, counters through the Worker: queued increments (Prefer: respond-async) whose late
 * writes land, merged with other requests', in one write, against cached range unions (a finished
 * range's slot and the head of a range ending now). Review 3 found a trending batch of late events
 * of two finished hours leaving a cached union stale; here every cached read after the consumer
 * ran must equal the same reads of a twin counter written synchronously, and the model's sums.
 */
import { describe, expect, it } from "vitest";
import { createIngestApi, type IngestApi } from "../helpers/ingest.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";

const T0 = Date.UTC(2026, 10, 22, 12, 30);
const track = cleanedUpAfterAll<IngestApi>();
const iso = (ms: number) => new Date(ms).toISOString();

async function top(api: IngestApi, counter: string, query: string): Promise<string[]> {
  const res = await api.get(`/v1/counters/${counter}/top?n=20&${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return (res.body.items as { member: string; score: number }[]).map((i) => `${i.member}=${i.score}`);
}

describe("queued late increments and cached unions", () => {
  it("several requests' late writes of different finished hours, merged into one write, invalidate both caches", async () => {
    const api = track(createIngestApi({ label: "rv4-queued", start: T0 }));
    const h = (hour: number, minute = 10) => iso(Date.UTC(2026, 10, 22, hour, minute));
    const base = {
      items: [
        { member: "a", by: 1, period: "hour", at: h(9) },
        { member: "b", by: 2, period: "hour", at: h(10) },
        { member: "c", by: 3, period: "hour", at: h(11) },
        { member: "a", by: 4, period: "hour" },
      ],
    };
    for (const c of ["q", "s"]) expect((await api.post(`/v1/counters/${c}/incr`, base)).status).toBe(200);
    const finished = `period=hour&from=${h(9)}&to=${h(11)}`;
    const head = `period=hour&from=${h(9)}`;
    // cache both: the finished range's union, and the head of the range ending now
    for (const c of ["q", "s"]) {
      expect(await top(api, c, finished)).toEqual(["c=3", "b=2", "a=1"]);
      expect(await top(api, c, head)).toEqual(["a=5", "c=3", "b=2"]);
    }
    // three requests: late writes of hours 9 and 11 (different requests), a fractional decrement of
    // hour 10, and one of the current hour; queued for q, synchronous for s
    const requests = [
      { items: [{ member: "b", by: 10, period: "hour", at: h(9, 40) }] },
      {
        items: [
          { member: "c", by: -0.5, period: "hour", at: h(10, 5) },
          { member: "d", by: 7, period: "hour", at: h(11, 50) },
        ],
      },
      { items: [{ member: "b", by: 0.25, period: "hour" }] },
    ];
    for (const body of requests) {
      expect((await api.post("/v1/counters/q/incr", body, { headers: api.asyncHeaders })).status).toBe(202);
      expect((await api.post("/v1/counters/s/incr", body)).status).toBe(200);
    }
    api.advance(20_000);
    const res = await api.deliver(api.queue.sent);
    expect(res.stats).toMatchObject({ applied: 3, events: 4 });
    for (const c of ["s", "q"]) {
      expect(await top(api, c, finished), c).toEqual(["b=12", "d=7", "c=2.5", "a=1"]);
      expect(await top(api, c, head), c).toEqual(["b=12.25", "d=7", "a=5", "c=2.5"]);
      // and again, from the caches just rebuilt
      expect(await top(api, c, finished), c).toEqual(["b=12", "d=7", "c=2.5", "a=1"]);
      expect(await top(api, c, head), c).toEqual(["b=12.25", "d=7", "a=5", "c=2.5"]);
    }
  });

  it("a request of the hour applied after that hour has ended counts as late and invalidates the finished range", async () => {
    const api = track(createIngestApi({ label: "rv4-delay", start: Date.UTC(2026, 10, 22, 12, 59, 30) }));
    await api.post("/v1/counters/d/incr", { member: "x", period: "hour", at: "2026-11-22T11:30:00Z" });
    // accepted at 12:59:30 without `at`: stamped with the request's time, hour 12
    expect(
      (await api.post("/v1/counters/d/incr", { member: "y", by: 3, period: "hour" }, { headers: api.asyncHeaders }))
        .status,
    ).toBe(202);
    // the consumer runs late, after a read at 13:05 cached hours 11-12 (finished) without y
    api.setNow(Date.UTC(2026, 10, 22, 13, 5));
    const range = "period=hour&from=2026-11-22T11:00:00Z&to=2026-11-22T12:00:00Z";
    expect(await top(api, "d", range)).toEqual(["x=1"]);
    api.advance(30_000);
    const res = await api.deliver(api.queue.sent);
    expect(res.stats).toMatchObject({ applied: 1 });
    expect(await top(api, "d", range)).toEqual(["y=3", "x=1"]);
    expect(await top(api, "d", "period=hour&from=2026-11-22T12:00:00Z&to=2026-11-22T12:00:00Z")).toEqual(["y=3"]);
  });
});
