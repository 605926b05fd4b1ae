/**
 * Review 17, through the Worker: what a late event costs the reads that follow it, in the cost
 * table's units (test/costs/trending.ts). Until review 17 a late event after compaction sent every
 * read of the stream down the three-set path (the previous hour paged beside the union) until the
 * next compaction run: 12 commands cold, 7 warm, 9 for a member lookup (test/redis/review17-trending.test.ts).
 */
import { afterAll, describe, expect, it } from "vitest";
import { area } from "../costs/trending.ts";
import { costOf, expected } from "../costs/types.ts";
import { createTestApi, type TestApi } from "../helpers/worker.ts";
import { longTail, ok } from "../helpers/trending.ts";

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 24, 12, 30);
const rows = area.rows;

describe("review 17: reads after a late event, through the Worker", () => {
  const api: TestApi = createTestApi({ label: "r17-trend", start: T0 });
  afterAll(() => api.cleanup());
  const events = (stream: string, body: unknown) => api.post(`/v1/trending/${stream}/events`, body);

  it("a late event after compaction: the next read is a first read (9), then warm (5), lookups 6", async () => {
    // load the scripts (a first EVALSHA meets NOSCRIPT and is sent again)
    await ok(events("warm", { member: "w" }));
    await ok(api.get("/v1/trending/warm/top"));
    await ok(api.get("/v1/trending/warm/members/w"));
    await ok(api.post("/internal/jobs/compact", undefined, { key: "admin" }));

    const tail = longTail(api.now, 300);
    for (let i = 0; i < tail.length; i += 1000) await ok(events("s", { events: tail.slice(i, i + 1000) }));
    await ok(api.post("/internal/jobs/compact", undefined, { key: "admin" }));
    await ok(api.get("/v1/trending/s/top?n=10&window=24h"));
    expect(costOf(await api.cost(() => ok(api.get("/v1/trending/s/top?n=10&window=24h"))))).toEqual(
      expected(rows.topWarm),
    );

    // one event stamped in the previous hour, and one two hours back
    await ok(
      events("s", {
        events: [
          { member: "late", at: api.now - HOUR },
          { member: "p7", at: api.now - 2 * HOUR },
        ],
      }),
    );
    const cold = costOf(await api.cost(() => ok(api.get("/v1/trending/s/top?n=10&window=24h"))));
    const warm = costOf(await api.cost(() => ok(api.get("/v1/trending/s/top?n=10&window=24h"))));
    const member = costOf(await api.cost(() => ok(api.get("/v1/trending/s/members/late?window=24h"))));
    expect({ cold, warm, member }).toEqual({
      cold: expected(rows.topFirstRead),
      warm: expected(rows.topWarm),
      member: expected(rows.memberWarm),
    });
    const answer = await ok(api.get("/v1/trending/s/members/late?window=24h"));
    expect(answer.body).toMatchObject({ member: "late", count: 1 });

    // the next run re-trims the late hours; the union the reads built is left as it is (nothing to complete)
    const run = await ok(api.post("/internal/jobs/compact", undefined, { key: "admin" }));
    expect(run.body.result).toMatchObject({ streams: 1, unionsBuilt: 0, more: false });
  });
});
