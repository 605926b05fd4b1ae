/**
 * The trending rows of the cost table (test/costs/trending.ts), measured at the
 * local Upstash server in the state each row names and asserted exactly.
 */
import { afterAll, describe, expect, it } from "vitest";
import { area } from "../costs/trending.ts";
import { costOf, expected } from "../costs/types.ts";
import { createTestApi, type TestApi } from "../helpers/worker.ts";
import { longTail, ok } from "../helpers/trending.ts";

const HOUR = 3_600_000;
const MINUTE = 60_000;
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const rows = area.rows;
type Row = keyof typeof rows;

/**
 * A tie straddling the top-10 boundary: five leaders and 200 members at 10 in
 * the finished hour; in the current hour 300 members at 1, among them 50 of the
 * tied ones (11 now). Ranks 6..10 are decided inside the tie, by member.
 */
function tieAtBoundary(now: number) {
  const pad = (i: number) => String(i).padStart(3, "0");
  return [
    ...[50, 49, 48, 47, 46].map((count, i) => ({ member: `lead${i}`, count, at: now - HOUR })),
    ...Array.from({ length: 200 }, (_, i) => ({ member: `t${pad(i)}`, count: 10, at: now - HOUR })),
    ...Array.from({ length: 250 }, (_, i) => ({ member: `c${pad(i)}`, count: 1, at: now })),
    ...Array.from({ length: 50 }, (_, i) => ({ member: `t${pad(i * 4)}`, count: 1, at: now })),
  ];
}

function check(id: Row, measured: { requests: number; commands: number }) {
  expect(costOf(measured), id).toEqual(expected(rows[id]));
}

describe("trending costs", () => {
  const api: TestApi = createTestApi({ label: "cost-trend", start: T0 });
  afterAll(() => api.cleanup());
  const events = (stream: string, body: unknown, headers?: Record<string, string>) =>
    api.post(`/v1/trending/${stream}/events`, body, headers ? { headers } : undefined);

  it("warms every script (the first call after a flush pays the NOSCRIPT fallback)", async () => {
    await ok(events("warm", { member: "w" }));
    await ok(api.get("/v1/trending/warm/top"));
    await ok(api.get("/v1/trending/warm/members/w"));
    await ok(api.get("/v1/trending"));
    await ok(api.get("/v1/trending/warm/rising"));
    await ok(api.get("/v1/trending/warm/history?member=w"));
    await ok(api.del("/v1/trending/warm", { key: "admin" }));
    await ok(api.post("/internal/jobs/compact", undefined, { key: "admin" }));
  });

  it("ingest", async () => {
    check("ingestNewStream", await api.cost(() => ok(events("s1", { member: "a" }))));
    check("ingestRepeat", await api.cost(() => ok(events("s1", { member: "a" }))));
    check("ingestNewMember", await api.cost(() => ok(events("s1", { member: "b" }))));
    api.advance(HOUR);
    check("ingestNewHour", await api.cost(() => ok(events("s1", { member: "a" }))));
    const hundred = Array.from({ length: 100 }, (_, i) => ({ member: `h${i}` }));
    check("ingest100", await api.cost(() => ok(events("s1", { events: hundred }))));
    const thousand = Array.from({ length: 1000 }, (_, i) => ({ member: `k${i}` }));
    check("ingest1000", await api.cost(() => ok(events("s1", { events: thousand }))));
    const thousandSame = Array.from({ length: 1000 }, () => ({ member: "a" }));
    check("ingest1000Same", await api.cost(() => ok(events("s1", { events: thousandSame }))));
    const idem = { "idempotency-key": "cost-once-1" };
    check("ingestIdempotent", await api.cost(() => ok(events("s1", { member: "a" }, idem))));
    check("ingestReplay", await api.cost(() => ok(events("s1", { member: "a" }, idem))));
    // an event late into the finished hour before (its bucket exists): it re-opens the hour for compaction
    check("ingestLate", await api.cost(() => ok(events("s1", { member: "a", at: api.now - HOUR }))));
    api.setNow(Date.UTC(2026, 10, 22, 13, 57));
    check("ingestHourEnd", await api.cost(() => ok(events("s1", { member: "a" }))));
    api.setNow(T0);
  });

  it("top N and member lookup", async () => {
    const tail = longTail(api.now, 300);
    for (const stream of ["tail", "tail2", "tail3", "tail4"]) {
      for (let i = 0; i < tail.length; i += 1000) await ok(events(stream, { events: tail.slice(i, i + 1000) }));
    }
    await ok(events("ties", { events: tieAtBoundary(api.now) }));
    // the previous hour awaits compaction: the read pages it as a third set
    check("topFirstReadOpen", await api.cost(() => ok(api.get("/v1/trending/tail/top?n=10&window=24h"))));
    check("topWarmOpen", await api.cost(() => ok(api.get("/v1/trending/tail/top?n=10&window=24h"))));
    check("memberOpen", await api.cost(() => ok(api.get("/v1/trending/tail/members/p3?window=24h"))));
    // a lookup that finds no union builds it first, as a first read does (review 10)
    check("memberColdOpen", await api.cost(() => ok(api.get("/v1/trending/tail3/members/p3?window=24h"))));
    await ok(api.post("/internal/jobs/compact", undefined, { key: "admin" }));
    check("memberCold", await api.cost(() => ok(api.get("/v1/trending/tail4/members/p3?window=24h"))));
    check("topFirstRead", await api.cost(() => ok(api.get("/v1/trending/tail2/top?n=10&window=24h"))));
    check("topWarm", await api.cost(() => ok(api.get("/v1/trending/tail2/top?n=10&window=24h"))));
    await ok(api.get("/v1/trending/ties/top?n=10&window=24h"));
    const ties = await api.cost(() => ok(api.get("/v1/trending/ties/top?n=10&window=24h")));
    expect(ties.result.body.items.map((i: { member: string }) => i.member)).toEqual([
      "lead0",
      "lead1",
      "lead2",
      "lead3",
      "lead4",
      "t000",
      "t004",
      "t008",
      "t012",
      "t016",
    ]);
    check("topTies", ties);
    await ok(api.get("/v1/trending/tail/top?n=10&window=7h"));
    check("topOtherWindow", await api.cost(() => ok(api.get("/v1/trending/tail/top?n=10&window=7h"))));
    check("topOtherWindowSwitch", await api.cost(() => ok(api.get("/v1/trending/tail/top?n=10&window=5h"))));
    check("memberColdSwitch", await api.cost(() => ok(api.get("/v1/trending/tail/members/p3?window=7h"))));
    check("topNeverWritten", await api.cost(() => ok(api.get("/v1/trending/nothing/top?n=10&window=24h"))));
    api.advance(HOUR); // 13:30, nothing written in hour 13: the current hour is empty
    await ok(api.post("/internal/jobs/compact", undefined, { key: "admin" }));
    await ok(api.get("/v1/trending/tail/top?n=10&window=24h"));
    check("topEmptyCurrent", await api.cost(() => ok(api.get("/v1/trending/tail/top?n=10&window=24h"))));
    api.setNow(T0);
    check("memberWarm", await api.cost(() => ok(api.get("/v1/trending/tail/members/p3?window=24h"))));
  });

  it("rising and history", async () => {
    const tail = longTail(api.now, 300);
    for (let i = 0; i < tail.length; i += 1000) await ok(events("rise", { events: tail.slice(i, i + 1000) }));
    check("risingCold", await api.cost(() => ok(api.get("/v1/trending/rise/rising?n=10&baseline=24h"))));
    await ok(api.get("/v1/trending/rise/top?n=10&window=24h"));
    check("risingOpen", await api.cost(() => ok(api.get("/v1/trending/rise/rising?n=10&baseline=24h"))));
    await ok(api.post("/internal/jobs/compact", undefined, { key: "admin" }));
    check("risingWarm", await api.cost(() => ok(api.get("/v1/trending/rise/rising?n=10&baseline=24h"))));
    // another stream, warm as `rise`, whose current hour holds 300 members at 1: a tie across the
    // 200 candidates' cut
    const tied = Array.from({ length: 300 }, (_, i) => ({ member: `tie${i}` }));
    await ok(events("rtie", { events: [{ member: "tie0", at: api.now - HOUR }, ...tied] }));
    await ok(api.post("/internal/jobs/compact", undefined, { key: "admin" }));
    await ok(api.get("/v1/trending/rtie/top?n=10&window=24h"));
    check("risingTie", await api.cost(() => ok(api.get("/v1/trending/rtie/rising?n=10&baseline=24h"))));
    check("history48", await api.cost(() => ok(api.get("/v1/trending/rise/history?member=p3&hours=48"))));
    api.advance(HOUR);
    check("risingQuiet", await api.cost(() => ok(api.get("/v1/trending/rise/rising?n=10&baseline=24h"))));
    api.setNow(T0);
  });

  it("list and delete", async () => {
    check("list", await api.cost(() => ok(api.get("/v1/trending"))));
    check("delete", await api.cost(() => ok(api.del("/v1/trending/tail", { key: "admin" }))));
  });
});

describe("trending delete, retention beyond the horizon", () => {
  it("deleteLongRetention: the older hours' buckets go in scripts of 1,000 keys", async () => {
    const api = createTestApi({ label: "cost-del", start: T0, vars: { TRENDING_RETENTION_HOURS: "1000" } });
    try {
      // warm both scripts (the first call after a flush pays the NOSCRIPT fallback)
      await ok(api.post("/v1/trending/w/events", { member: "w" }));
      await ok(api.del("/v1/trending/w", { key: "admin" }));
      await ok(api.post("/v1/trending/d/events", { events: [{ member: "x", at: T0 - 168 * HOUR }, { member: "y" }] }));
      api.advance(100 * HOUR);
      check("deleteLongRetention", await api.cost(() => ok(api.del("/v1/trending/d", { key: "admin" }))));
    } finally {
      await api.cleanup();
    }
  });
});

describe("trending compaction costs", () => {
  const STREAMS = 20;
  const run = (api: TestApi) => ok(api.post("/internal/jobs/compact", undefined, { key: "admin" }));
  const perStreamHour = (m: { requests: number; commands: number }) => ({
    requests: m.requests,
    commands: m.commands / STREAMS,
  });

  it("a run with nothing to do", async () => {
    const api = createTestApi({ label: "cost-idle", start: T0 });
    try {
      await run(api);
      check("compactIdle", await api.cost(() => run(api)));
    } finally {
      await api.cleanup();
    }
  });

  for (const [id, keep] of [
    ["compactTrimmed", "3"],
    ["compactUntrimmed", "100"],
  ] as const) {
    it(`${id}: ${STREAMS} streams with one finished hour each`, async () => {
      const api = createTestApi({ label: `cost-${keep}`, start: T0, vars: { TRENDING_KEEP: keep } });
      try {
        // warm the compaction script on a stream of its own, written and compacted an hour before
        api.setNow(T0 - HOUR);
        await ok(api.post("/v1/trending/w/events", { member: "w" }));
        api.setNow(T0);
        await run(api);
        for (let s = 0; s < STREAMS; s++) {
          await ok(
            api.post(`/v1/trending/c${s}/events`, {
              events: [9, 8, 7, 6, 5, 4].map((count, i) => ({ member: `x${i}`, count })),
            }),
          );
        }
        api.setNow(T0 + HOUR - 25 * MINUTE); // 13:05
        const m = await api.cost(() => run(api));
        expect(m.result.body.result).toMatchObject({ streams: STREAMS, more: false });
        check(id, perStreamHour(m));
      } finally {
        await api.cleanup();
      }
    });
  }
});
