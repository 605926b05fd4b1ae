/**
 * Issue 19, presence history: a room's figures of any of the last 400 days
 * (`GET /v1/presence/{room}?day=`) and the site-wide figures
 * (`GET /v1/presence/_total`). Driven by the fake clock; each call is checked
 * to be one round trip with its exact command count (test/costs/presence.ts
 * has the same figures per state).
 */
import { describe, expect, it } from "vitest";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi, type TestApi, cleanedUpAfterAll } from "../helpers/worker.ts";

const MIN = 60_000;
const DAY = 86_400_000;
/** 12:30:10 UTC on 2026-11-22: not an hour boundary, not within a timeout of midnight. */
const T0 = Date.UTC(2026, 10, 22, 12, 30, 10);
const D0 = Date.UTC(2026, 10, 22);
const track = cleanedUpAfterAll<TestApi>();
const newApi = (label: string, start = T0) => track(createTestApi({ label, start }));

const trim = (api: TestApi) => api.post("/internal/jobs/trim", undefined, { key: "admin" });
const beat = (api: TestApi, room: string, ids: string[]) => api.post(`/v1/presence/${room}/heartbeats`, { ids });
const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const dayOf = (api: TestApi, room: string, ms: number) => api.get(`/v1/presence/${room}?day=${iso(ms)}`);

describe("a room's past days", () => {
  it("keeps a day's peak, peakAt, active and new when the room goes idle, and reads it back 400 days later in one round trip", async () => {
    const api = newApi("phist-idle");
    await beat(api, "r", ["a", "b"]);
    api.advance(10_000);
    await beat(api, "r", ["c"]); // peak 3 at T0 + 10 s
    api.advance(MIN);
    await beat(api, "r", ["a"]);
    api.advance(8 * MIN);
    await trim(api); // everyone timed out: the room goes idle and its day is kept
    const want = { room: "r", day: "2026-11-22", from: D0, peak: 3, peakAt: T0 + 10_000, active: 3, new: 3 };
    expect((await dayOf(api, "r", T0)).body).toEqual(want); // today, live
    api.setNow(T0 + DAY);
    expect((await dayOf(api, "r", T0)).body).toEqual(want); // yesterday, live
    for (const later of [2, 30, 400]) {
      api.setNow(T0 + later * DAY);
      const m = await api.cost(() => dayOf(api, "r", T0));
      expect(m.result.status).toBe(200);
      expect(m.result.body).toEqual(want);
      expect([m.requests, m.commands]).toEqual([1, 2]);
    }
  });

  it("keeps yesterday's figures of a room active across midnight (the trim job's first runs of the day)", async () => {
    const api = newApi("phist-midnight", Date.UTC(2026, 10, 22, 23, 50));
    await beat(api, "r", ["a", "b", "c"]);
    api.setNow(Date.UTC(2026, 10, 22, 23, 58));
    await beat(api, "r", ["a", "b", "c", "d"]); // peak 4 at 23:58
    api.setNow(Date.UTC(2026, 10, 23, 0, 0, 30));
    await trim(api); // keeps yesterday; today's peak starts at the 4 carried over midnight
    await beat(api, "r", ["a", "e"]); // today: a is active again, e is new, 5 online
    api.setNow(Date.UTC(2026, 10, 23, 0, 1, 30));
    await trim(api); // a later run of the window rewrites the same record
    api.setNow(Date.UTC(2026, 10, 23, 0, 10));
    await trim(api); // the room goes idle: today's figures are kept
    api.setNow(Date.UTC(2026, 10, 25, 12));
    expect((await dayOf(api, "r", D0)).body).toEqual({
      room: "r",
      day: "2026-11-22",
      from: D0,
      peak: 4,
      peakAt: Date.UTC(2026, 10, 22, 23, 58),
      active: 4,
      new: 4,
    });
    expect((await dayOf(api, "r", D0 + DAY)).body).toEqual({
      room: "r",
      day: "2026-11-23",
      from: D0 + DAY,
      peak: 5,
      peakAt: Date.UTC(2026, 10, 23, 0, 0, 30),
      active: 2,
      new: 1,
    });
  });

  it("reads a day without data as zeros, and a slot left by a day 401 days earlier as no data", async () => {
    const api = newApi("phist-empty");
    await beat(api, "r", ["a"]);
    api.advance(8 * MIN);
    await trim(api);
    api.setNow(T0 + 403 * DAY);
    const zero = { room: "r", peak: 0, peakAt: null, active: 0, new: 0 };
    // 2026-11-22 + 401 days uses the same slot of the ring as 2026-11-22: it must not read as that day.
    expect((await dayOf(api, "r", T0 + 401 * DAY)).body).toMatchObject({ ...zero, day: iso(T0 + 401 * DAY) });
    expect((await dayOf(api, "r", T0 + 402 * DAY)).body).toMatchObject(zero);
    expect((await dayOf(api, "nobody", T0 + 390 * DAY)).body).toMatchObject({ ...zero, room: "nobody" });
  });

  it("answers 400 for a day in the future, older than 400 days, or not a date", async () => {
    const api = newApi("phist-400");
    for (const day of [iso(T0 + DAY), iso(T0 - 401 * DAY), "2026-02-30", "20261122", "2026-11-2", ""]) {
      const res = await api.get(`/v1/presence/r?day=${day}`);
      expect(res.status, day).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
      expect(res.body.error.details[0].path).toBe("day");
    }
    expect((await api.get(`/v1/presence/r?day=${iso(T0 - 400 * DAY)}`)).status).toBe(200);
    expect((await api.get("/v1/presence/r?day=2026-11-22")).status).toBe(200);
    expect(await api.keys()).toEqual([]);
  });

  it("deletes the kept days with the room", async () => {
    const api = newApi("phist-del");
    await beat(api, "r", ["a"]);
    api.advance(8 * MIN);
    await trim(api);
    expect(await command<number>(api.target, "EXISTS", `${api.prefix}:presence:r:days`)).toBe(1);
    expect((await api.del("/v1/presence/r", { key: "admin" })).status).toBe(204);
    expect(await command<number>(api.target, "EXISTS", `${api.prefix}:presence:r:days`)).toBe(0);
    api.setNow(T0 + 5 * DAY);
    expect((await dayOf(api, "r", T0)).body).toMatchObject({ peak: 0, active: 0 });
  });
});

describe("site-wide figures", () => {
  it("online across rooms at the last trim run, today's highest sample, and distinct ids across rooms (HyperLogLog)", async () => {
    const api = newApi("phist-total");
    const empty = await api.get("/v1/presence/_total");
    expect(empty.body).toEqual({
      online: 0,
      onlineAt: null,
      peakToday: 0,
      peakAt: null,
      activeToday: 0,
      activeTodayError: 0.0081,
      day: D0,
    });
    await beat(api, "lobby", ["a", "b", "c"]);
    await beat(api, "game", ["b", "c", "d", "e"]); // b and c in two rooms: online counts them twice, active once
    api.advance(MIN);
    await trim(api);
    const sampledAt = api.now;
    const m = await api.cost(() => api.get("/v1/presence/_total"));
    expect([m.requests, m.commands]).toEqual([1, 3]);
    expect(m.result.body).toEqual({
      online: 7,
      onlineAt: sampledAt,
      peakToday: 7,
      peakAt: sampledAt,
      activeToday: 5,
      activeTodayError: 0.0081,
      day: D0,
    });
    // Some leave: online drops at the next run, the day's peak stays.
    await api.del("/v1/presence/game/members/d");
    await api.del("/v1/presence/game/members/e");
    api.advance(MIN);
    await trim(api);
    expect((await api.get("/v1/presence/_total")).body).toMatchObject({
      online: 5,
      onlineAt: api.now,
      peakToday: 7,
      peakAt: sampledAt,
      activeToday: 5,
    });
    // Every room idle: the runs that visit them record 0.
    api.advance(10 * MIN);
    await trim(api);
    expect((await api.get("/v1/presence/_total")).body).toMatchObject({ online: 0, peakToday: 7, activeToday: 5 });
  });

  it("counts the rooms of every chunk of a run", async () => {
    const api = track(createTestApi({ label: "phist-chunks", start: T0 }));
    for (let r = 0; r < 120; r++) await beat(api, `room${r}`, [`u${r}`, "shared"]);
    api.advance(MIN);
    await trim(api); // 120 rooms: three script calls of 50
    const total = (await api.get("/v1/presence/_total")).body;
    expect(total).toMatchObject({ online: 240, peakToday: 240 });
    // 121 distinct ids; the HyperLogLog's error at this size is far below its 0.81 % standard error
    expect(Math.abs(total.activeToday - 121)).toBeLessThanOrEqual(2);
  });

  it("stands on yesterday's last sample after midnight until the day's first run; today's peak and active start at 0", async () => {
    const api = newApi("phist-total-midnight", Date.UTC(2026, 10, 22, 23, 58));
    await beat(api, "r", ["a", "b"]);
    await trim(api);
    api.setNow(Date.UTC(2026, 10, 23, 0, 0, 20));
    const m = await api.cost(() => api.get("/v1/presence/_total"));
    expect([m.requests, m.commands]).toEqual([1, 4]);
    expect(m.result.body).toEqual({
      online: 2,
      onlineAt: Date.UTC(2026, 10, 22, 23, 58),
      peakToday: 0,
      peakAt: null,
      activeToday: 0,
      activeTodayError: 0.0081,
      day: Date.UTC(2026, 10, 23),
    });
  });

  it("a heartbeat of ids already seen today in the room costs what it did; the first of each id a day adds one PFADD", async () => {
    const api = newApi("phist-cost");
    await beat(api, "r", ["a", "b"]);
    const known = await api.cost(() => beat(api, "r", ["a", "b"]));
    const fresh = await api.cost(() => beat(api, "r", ["a", "c"]));
    expect([known.requests, known.commands]).toEqual([1, 5]);
    expect([fresh.requests, fresh.commands]).toEqual([1, 9]);
  });

  it("is a path of its own: `_total` is not a room", async () => {
    const api = newApi("phist-path");
    expect((await api.post("/v1/presence/_total/heartbeats", { id: "a" })).status).toBe(400);
    expect((await api.get("/v1/presence/_total", { key: "ingest" })).status).toBe(403);
    // Site-wide figures are today's only: a `day` is refused, not answered with today's figures.
    const day = await api.cost(() => api.get("/v1/presence/_total?day=2026-11-21"));
    expect(day.result.status).toBe(400);
    expect(day.result.body.error).toMatchObject({ code: "invalid_request", details: [{ path: "day" }] });
    expect([day.requests, day.commands]).toEqual([0, 0]);
    const doc = (await api.get("/openapi.json", { key: "none" })).body;
    expect(doc.paths["/v1/presence/_total"].get).toBeDefined();
    expect(doc.paths["/v1/presence/{room}"].get.parameters.map((p: { name: string }) => p.name)).toContain("day");
    expect(doc.components.schemas.PresenceTotal.properties.activeTodayError).toBeDefined();
    expect(doc.components.schemas.PresenceRoomDay.properties.peakAt).toBeDefined();
  });
});
