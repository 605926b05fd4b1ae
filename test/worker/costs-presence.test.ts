/**
 * Measures every row of test/costs/presence.ts in the state it names and
 * asserts the exact round trips and commands (the local Upstash server counts
 * each command a script runs). Each row sets its state up explicitly; scripts
 * are warmed first, so no row pays the one-off NOSCRIPT fallback.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { allRoomKeys, legacyRegistryKeys, registryKeys } from "../../src/presence/keys.ts";
import { area } from "../costs/presence.ts";
import { costOf, expected } from "../costs/types.ts";
import { createTestApi, type TestApi, cleanedUpAfterAll } from "../helpers/worker.ts";
import { command } from "../helpers/upstash-rest.ts";

const rows = area.rows;
const MIN = 60_000;
const DAY = 86_400_000;
/** 12:30:10 UTC: not an hour boundary, not within a timeout of midnight. */
const START = Date.UTC(2026, 10, 22, 12, 30, 10);
const track = cleanedUpAfterAll<TestApi>();
const newApi = (label: string, start = START) => track(createTestApi({ label, start }));

const ids = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}-${i}`);
const beat = (api: TestApi, room: string, body: unknown, headers?: Record<string, string>) =>
  api.post(`/v1/presence/${room}/heartbeats`, body, headers ? { headers } : undefined);
const trim = (api: TestApi) => api.post("/internal/jobs/trim", undefined, { key: "admin" });

/** Runs every presence script once on a throwaway prefix, so Redis has them all cached. */
beforeAll(async () => {
  const api = newApi("pcost-warm");
  await beat(api, "w", { id: "a" });
  await api.get("/v1/presence/w");
  await api.get("/v1/presence/w/members");
  await api.get("/v1/presence/w/history");
  await api.get("/v1/presence");
  await api.get("/v1/presence/w?day=2026-11-01");
  await api.get("/v1/presence/_total");
  await api.del("/v1/presence/w/members/a");
  await trim(api);
  await api.del("/v1/presence/w", { key: "admin" });
});

async function measure(api: TestApi, fn: () => Promise<{ status: number }>) {
  const m = await api.cost(fn);
  expect(m.result.status).toBeLessThan(300);
  return costOf(m);
}

describe("presence heartbeats", () => {
  const api = newApi("pcost-hb");

  beforeAll(async () => {
    await beat(api, "r", { ids: ["a", "b"] }); // first heartbeat of the day: the room becomes active
    await beat(api, "r", { ids: ids(1000, "k") });
  });

  it("known id, online", async () => {
    expect(await measure(api, () => beat(api, "r", { id: "a" }))).toEqual(expected(rows.heartbeatKnown));
  });

  it("1,000 known ids", async () => {
    expect(await measure(api, () => beat(api, "r", { ids: ids(1000, "k") }))).toEqual(
      expected(rows.heartbeatKnown1000),
    );
  });

  it("known id with an Idempotency-Key, and its replay", async () => {
    const headers = { "idempotency-key": "cost-1" };
    expect(await measure(api, () => beat(api, "r", { id: "a" }, headers))).toEqual(expected(rows.heartbeatIdempotent));
    expect(await measure(api, () => beat(api, "r", { id: "a" }, headers))).toEqual(expected(rows.heartbeatReplay));
  });

  it("new id that raises today's peak", async () => {
    expect(await measure(api, () => beat(api, "r", { id: "n1" }))).toEqual(expected(rows.heartbeatNew));
  });

  it("new id below today's peak", async () => {
    await api.del("/v1/presence/r/members/n1");
    await api.del("/v1/presence/r/members/a");
    expect(await measure(api, () => beat(api, "r", { id: "n2" }))).toEqual(expected(rows.heartbeatNewBelowPeak));
  });

  it("1,000 new ids", async () => {
    expect(await measure(api, () => beat(api, "r", { ids: ids(1000, "n") }))).toEqual(expected(rows.heartbeatNew1000));
  });

  it("known id that raises today's peak", async () => {
    const peak = newApi("pcost-peak", START - DAY);
    await beat(peak, "r", { ids: ["p", "q"] }); // both known from yesterday
    peak.setNow(START);
    await beat(peak, "r", { id: "p" }); // today's peak: 1
    expect(await measure(peak, () => beat(peak, "r", { id: "q" }))).toEqual(expected(rows.heartbeatKnownPeak));
  });

  it("first heartbeat of the UTC day in the room (known id)", async () => {
    const day = newApi("pcost-day", START - DAY);
    await beat(day, "r", { id: "a" });
    day.setNow(START);
    expect(await measure(day, () => beat(day, "r", { id: "a" }))).toEqual(expected(rows.heartbeatFirstOfDay));
  });

  it("known id back after more than a timeout of silence in the room", async () => {
    const back = newApi("pcost-back");
    await beat(back, "r", { id: "a" });
    back.advance(10 * MIN);
    expect(await measure(back, () => beat(back, "r", { id: "a" }))).toEqual(expected(rows.heartbeatReactivates));
  });
});

describe("presence reads and deletes", () => {
  const api = newApi("pcost-read");

  beforeAll(async () => {
    await beat(api, "r", { ids: ids(250, "m") });
    await trim(api);
  });

  it("room figures", async () => {
    expect(await measure(api, () => api.get("/v1/presence/r"))).toEqual(expected(rows.stats));
  });

  it("members, first and next page", async () => {
    const first = await api.get("/v1/presence/r/members?limit=100");
    expect(await measure(api, () => api.get("/v1/presence/r/members?limit=100"))).toEqual(expected(rows.membersFirst));
    const cursor = encodeURIComponent(first.body.nextCursor);
    expect(await measure(api, () => api.get(`/v1/presence/r/members?limit=100&cursor=${cursor}`))).toEqual(
      expected(rows.membersNext),
    );
  });

  it("history", async () => {
    expect(await measure(api, () => api.get("/v1/presence/r/history"))).toEqual(expected(rows.history));
  });

  it("room list, first, next and last page", async () => {
    for (const room of ["s1", "s2", "s3", "s4", "s5"]) {
      api.advance(1);
      await beat(api, room, { id: "a" });
    }
    const first = await api.get("/v1/presence?limit=2");
    expect(await measure(api, () => api.get("/v1/presence?limit=2"))).toEqual(expected(rows.roomsFirst));
    const cursor = encodeURIComponent(first.body.nextCursor);
    expect(await measure(api, () => api.get(`/v1/presence?limit=2&cursor=${cursor}`))).toEqual(
      expected(rows.roomsNext),
    );
    const next = await api.get(`/v1/presence?limit=2&cursor=${cursor}`);
    const last = encodeURIComponent(next.body.nextCursor);
    expect(await measure(api, () => api.get(`/v1/presence?limit=2&cursor=${last}`))).toEqual(expected(rows.roomsLast));
    expect((await api.get(`/v1/presence?limit=2&cursor=${last}`)).body.nextCursor).toBeNull();
  });

  it("leave", async () => {
    expect(await measure(api, () => api.del("/v1/presence/r/members/m-1"))).toEqual(expected(rows.leave));
  });

  it("leave of an id not mapped yet", async () => {
    expect(await measure(api, () => api.del("/v1/presence/r/members/never-seen"))).toEqual(
      expected(rows.leaveUnmapped),
    );
  });

  it("leave in a room that maps no id, then the room's first heartbeat (sent before it, queued)", async () => {
    const api = newApi("pcost-leave-made");
    expect(await measure(api, () => api.del("/v1/presence/fresh/members/u1"))).toEqual(expected(rows.leaveNoRoom));
    api.advance(-1000);
    expect(await measure(api, () => beat(api, "fresh", { id: "u1" }))).toEqual(expected(rows.heartbeatAfterLeaveMade));
  });

  it("a past day: archived, yesterday's and today's (live)", async () => {
    const past = newApi("pcost-day", START - 3 * DAY);
    await beat(past, "r", { ids: ["a", "b"] });
    past.advance(8 * MIN);
    await trim(past); // the room goes idle: its day is archived
    past.setNow(START - DAY);
    await beat(past, "r", { id: "a" });
    past.setNow(START);
    await beat(past, "r", { id: "a" });
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    expect(await measure(past, () => past.get(`/v1/presence/r?day=${day(START - 3 * DAY)}`))).toEqual(
      expected(rows.statsDayArchived),
    );
    expect(await measure(past, () => past.get(`/v1/presence/r?day=${day(START - DAY)}`))).toEqual(
      expected(rows.statsDayYesterday),
    );
    expect(await measure(past, () => past.get(`/v1/presence/r?day=${day(START)}`))).toEqual(
      expected(rows.statsDayToday),
    );
  });

  it("site-wide figures", async () => {
    expect(await measure(api, () => api.get("/v1/presence/_total"))).toEqual(expected(rows.total));
    const fresh = newApi("pcost-total", Date.UTC(2026, 10, 22, 23, 59, 30));
    await beat(fresh, "r", { id: "a" });
    await trim(fresh);
    fresh.setNow(Date.UTC(2026, 10, 23, 0, 0, 20));
    expect(await measure(fresh, () => fresh.get("/v1/presence/_total"))).toEqual(expected(rows.totalBeforeFirstSample));
  });

  it("delete room", async () => {
    expect(await measure(api, () => api.del("/v1/presence/r", { key: "admin" }))).toEqual(expected(rows.deleteRoom));
    // a room the trim job found idle: its count left the site-wide figure then
    const idle = newApi("pcost-del-idle");
    await beat(idle, "r", { id: "a" });
    idle.advance(8 * MIN);
    await trim(idle);
    expect(await measure(idle, () => idle.del("/v1/presence/r", { key: "admin" }))).toEqual(
      expected(rows.deleteRoomUncounted),
    );
  });
});

describe("presence trim job", () => {
  it("nothing due", async () => {
    const api = newApi("pcost-t0");
    expect(await measure(api, () => trim(api))).toEqual(expected(rows.trimIdle));
  });

  it("nothing due but an unmapped id's leave mark", async () => {
    // twice: the first warms the mark-dropping script (not run by the warm-up)
    for (const label of ["pcost-tm0", "pcost-tm1"]) {
      const api = newApi(label);
      // a room that maps an id (a leave in a room mapping none records no mark), idle before the leave
      await beat(api, "r", { id: "a" });
      api.advance(300_000 + 3 * MIN);
      await trim(api);
      expect((await api.del("/v1/presence/r/members/ghost")).status).toBe(204);
      // the room's own visits (its day records) before the mark comes due, then the run measured
      api.advance(2 * DAY);
      await trim(api);
      api.advance(300_000 + MIN);
      const cost = await measure(api, () => trim(api));
      if (label === "pcost-tm1") expect(cost).toEqual(expected(rows.trimMarks));
    }
  });

  it("1 active room, and 1 active room at the hour", async () => {
    const api = newApi("pcost-t1");
    await beat(api, "r", { ids: ["a", "b"] });
    await trim(api); // the day's first site-wide sample is taken: the measured run is a plain one
    api.advance(MIN);
    expect(await measure(api, () => trim(api))).toEqual(expected(rows.trimOneRoom));
    api.setNow(Date.UTC(2026, 10, 22, 13, 0, 5));
    await beat(api, "r", { ids: ["a", "b"] });
    expect(await measure(api, () => trim(api))).toEqual(expected(rows.trimOneRoomHourly));
  });

  it("1 active room whose sample raises the day's highest, and 1 room in its margin after its ids timed out", async () => {
    const api = newApi("pcost-tmargin");
    await beat(api, "r", { id: "a" });
    await trim(api); // the day's first site-wide sample: 1
    api.advance(MIN);
    await beat(api, "r", { ids: ["a", "b"] });
    expect(await measure(api, () => trim(api))).toEqual(expected(rows.trimSiteRaised));
    // a and b timed out 5 minutes after their heartbeat; the room stays active 2 minutes more
    api.advance(6 * MIN);
    expect(await measure(api, () => trim(api))).toEqual(expected(rows.trimMarginRoom));
  });

  it("1 active room, and a counted room the previous release deleted", async () => {
    const api = newApi("pcost-stale");
    await beat(api, "r", { ids: ["a", "b"] });
    await beat(api, "x", { id: "c" });
    await trim(api); // both counted, the day's first sample
    api.advance(MIN);
    // the previous release's delete: the registries and the room's keys, not `_online`
    const target = { url: api.env.UPSTASH_REDIS_REST_URL, token: api.env.UPSTASH_REDIS_REST_TOKEN };
    const registry = registryKeys(api.prefix);
    for (const key of [registry.rooms, registry.due, ...legacyRegistryKeys(api.prefix)])
      await command(target, "ZREM", key, "x");
    await command(target, "UNLINK", ...allRoomKeys(api.prefix, "x", START));
    expect(await measure(api, () => trim(api))).toEqual(expected(rows.trimStale));
    expect(await command(target, "HGET", registry.counted, "_sum")).toBe("2");
  });

  it("10 active rooms", async () => {
    const api = newApi("pcost-t10");
    for (let r = 0; r < 10; r++) await beat(api, `r${r}`, { id: "a" });
    await trim(api);
    api.advance(MIN);
    expect(await measure(api, () => trim(api))).toEqual(expected(rows.trimTenRooms));
  });

  it("1 active room just after midnight, carrying yesterday's concurrency", async () => {
    const api = newApi("pcost-tmid", Date.UTC(2026, 10, 22, 23, 59));
    await beat(api, "r", { ids: ["a", "b"] });
    api.setNow(Date.UTC(2026, 10, 23, 0, 1, 30));
    expect(await measure(api, () => trim(api))).toEqual(expected(rows.trimMidnight));
  });

  it("1 active room later in the first hour: yesterday already kept, or kept now after a cron gap", async () => {
    const api = newApi("pcost-thour", Date.UTC(2026, 10, 22, 23, 59));
    await beat(api, "r", { ids: ["a", "b"] });
    api.setNow(Date.UTC(2026, 10, 23, 0, 1, 30));
    await trim(api); // the window after midnight keeps yesterday
    api.setNow(Date.UTC(2026, 10, 23, 0, 10));
    await beat(api, "r", { ids: ["a", "b"] });
    await trim(api);
    api.advance(MIN);
    expect(await measure(api, () => trim(api))).toEqual(expected(rows.trimFirstHour));
    // no run from 00:00 to 00:06 (review 7): the first run after the window keeps yesterday
    const gap = newApi("pcost-tgap", Date.UTC(2026, 10, 22, 23, 59));
    await beat(gap, "r", { ids: ["a", "b"] });
    await trim(gap);
    gap.setNow(Date.UTC(2026, 10, 23, 0, 7));
    await beat(gap, "r", { ids: ["a", "b"] });
    expect(await measure(gap, () => trim(gap))).toEqual(expected(rows.trimCatchUp));
  });

  it("a room going idle after a cron gap over the window, with ids online at 00:00", async () => {
    const api = newApi("pcost-tcarry", Date.UTC(2026, 10, 22, 23, 58));
    await beat(api, "r", { ids: ["a", "b"] });
    await trim(api);
    // no run from 23:58 to 00:20, no heartbeat after midnight: a and b were online at 00:00
    api.setNow(Date.UTC(2026, 10, 23, 0, 20, 10));
    expect(await measure(api, () => trim(api))).toEqual(expected(rows.trimCatchUpCarry));
    expect((await api.get("/v1/presence/r")).body).toMatchObject({ peakToday: 2, peakAt: Date.UTC(2026, 10, 23) });
  });

  it("a room going idle", async () => {
    const api = newApi("pcost-tidle");
    await beat(api, "r", { ids: ["a", "b"] });
    await trim(api);
    api.advance(8 * MIN);
    expect(await measure(api, () => trim(api))).toEqual(expected(rows.trimGoingIdle));
  });

  it("an idle room forgetting 1,000 ids past the horizon", async () => {
    const api = newApi("pcost-tforget");
    await beat(api, "r", { ids: ids(1000, "f") });
    api.advance(8 * MIN);
    await trim(api);
    api.advance(91 * DAY);
    expect(await measure(api, () => trim(api))).toEqual(expected(rows.trimForget));
  });
});
