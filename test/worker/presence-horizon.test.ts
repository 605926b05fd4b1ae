/**
 * Issue 12 for presence: id maps forget ids idle past PRESENCE_ID_HORIZON_DAYS
 * without breaking AU/NU, empty rooms leave the registries, the room list
 * cannot be flooded to hide a room, and what each scope can do to a room.
 * Driven by the fake clock (Redis TTLs run on real time, so keys that would
 * have expired are checked through the API, not by their absence).
 */
import { describe, expect, it } from "vitest";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi, type TestApi, cleanedUpAfterAll } from "../helpers/worker.ts";

const MIN = 60_000;
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 22, 12, 30, 10);
const track = cleanedUpAfterAll<TestApi>();
const newApi = (label: string, vars?: Record<string, string>) =>
  track(createTestApi({ label, start: T0, ...(vars ? { vars } : {}) }));

const trim = (api: TestApi) => api.post("/internal/jobs/trim", undefined, { key: "admin" });
const key = (api: TestApi, ...parts: string[]) => [api.prefix, "presence", ...parts].join(":");
const redis = <T = unknown>(api: TestApi, ...args: (string | number)[]) => command<T>(api.target, ...args);
const label = (ms: number) => new Date(ms).toISOString().slice(0, 10).replace(/-/g, "");
/** Every room a read key can page through, in order. */
async function allRooms(api: TestApi, limit: number): Promise<string[]> {
  const rooms: string[] = [];
  let cursor: string | null = null;
  do {
    const res: { status: number; body: { rooms: string[]; nextCursor: string | null } } = await api.get(
      `/v1/presence?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
    );
    expect(res.status).toBe(200);
    rooms.push(...res.body.rooms);
    cursor = res.body.nextCursor;
  } while (cursor);
  return rooms;
}

describe("the id horizon", () => {
  it("forgets ids idle past the horizon: the maps shrink, the id comes back new, AU of a kept day is unchanged", async () => {
    const api = newApi("phz-forget");
    await api.post("/v1/presence/h/heartbeats", { ids: ["a", "b", "c"] });
    const oldB = await redis<string>(api, "HGET", key(api, "h", "ids"), "b");
    api.advance(45 * DAY);
    await api.post("/v1/presence/h/heartbeats", { id: "a" });
    // 90 days and an hour after b and c were last seen: both are past the horizon.
    api.setNow(T0 + 90 * DAY + 3_600_000);
    await api.post("/v1/presence/h/heartbeats", { ids: ["a", "x"] });
    const today = key(api, "h", "daily", label(api.now));
    const before = await api.get("/v1/presence/h");
    expect(before.body).toMatchObject({ activeToday: 2, newToday: 1 });
    const bitsBefore = await redis<number>(api, "BITCOUNT", today);
    // each id is mapped both ways in one hash
    expect(await redis<number>(api, "HLEN", key(api, "h", "ids"))).toBe(8);

    const run = await trim(api);
    expect(run.body.result).toMatchObject({ forgotten: 2 });
    expect(await redis<number>(api, "HLEN", key(api, "h", "ids"))).toBe(4);
    expect(await redis<number>(api, "ZCARD", key(api, "h", "seen"))).toBe(2);
    expect(await redis(api, "HGET", key(api, "h", "ids"), "b")).toBeNull();
    // Today's figures and bitmap are exactly what they were.
    expect((await api.get("/v1/presence/h")).body).toMatchObject({
      activeToday: 2,
      newToday: 1,
      peakToday: before.body.peakToday,
    });
    expect(await redis<number>(api, "BITCOUNT", today)).toBe(bitsBefore);

    // b comes back: new again, with a compact id never handed out before.
    const back = await api.post("/v1/presence/h/heartbeats", { id: "b" });
    expect(back.body).toEqual({ online: 3, new: 1 });
    const newB = await redis<string>(api, "HGET", key(api, "h", "ids"), "b");
    expect(Number(newB)).toBe(5);
    expect(Number(newB)).not.toBe(Number(oldB));
    expect((await api.get("/v1/presence/h")).body).toMatchObject({ activeToday: 3, newToday: 2 });

    // The next day, yesterday's bitmap is still exact: a, x, b.
    api.advance(DAY);
    await trim(api);
    expect(await redis<number>(api, "BITCOUNT", today, 16, -1)).toBe(3);
    // a, seen 90 days ago, is not forgotten while it is within the horizon of its last heartbeat.
    expect(await redis(api, "HGET", key(api, "h", "ids"), "a")).not.toBeNull();
  });

  it("honours PRESENCE_ID_HORIZON_DAYS", async () => {
    const api = newApi("phz-short", { PRESENCE_ID_HORIZON_DAYS: "3" });
    await api.post("/v1/presence/s/heartbeats", { ids: ["p", "q"] });
    api.advance(3 * DAY - MIN);
    expect((await trim(api)).body.result.forgotten).toBe(0);
    api.advance(2 * MIN);
    expect((await trim(api)).body.result.forgotten).toBe(2);
    expect((await api.post("/v1/presence/s/heartbeats", { id: "p" })).body).toEqual({ online: 1, new: 1 });
    const bad = createTestApi({ label: "phz-bad", vars: { PRESENCE_ID_HORIZON_DAYS: "1" } });
    expect((await bad.post("/v1/presence/s/heartbeats", { id: "p" })).status).toBe(500);
  });
});

describe("registries", () => {
  it("an idle room leaves the room list two days after its last activity, and every key once its ids are forgotten", async () => {
    const api = newApi("phz-empty");
    await api.post("/v1/presence/gone/heartbeats", { ids: ["a", "b"] });
    await api.post("/v1/presence/stays/heartbeats", { id: "c" });
    expect(await allRooms(api, 10)).toEqual(expect.arrayContaining(["gone", "stays"]));
    api.advance(10 * MIN);
    expect((await trim(api)).body.result).toMatchObject({ rooms: 2, idle: 2 });
    // Idle, but its history and today's figures are still readable: listed.
    expect(await allRooms(api, 10)).toEqual(expect.arrayContaining(["gone", "stays"]));
    // Nothing is due until the listing ends: a run costs its fixed 2 commands.
    const quiet = await api.cost(() => trim(api));
    expect([quiet.result.body.result.rooms, quiet.commands]).toEqual([0, 2]);
    api.advance(2 * DAY);
    await api.post("/v1/presence/stays/heartbeats", { id: "c" });
    await trim(api);
    expect(await allRooms(api, 10)).toEqual(["stays"]);
    // Once the horizon passes, the room has no key and no registry entry left.
    api.advance(91 * DAY);
    await trim(api);
    for (const part of ["seen", "ids", "names", "seq"])
      expect(await redis<number>(api, "EXISTS", key(api, "gone", part))).toBe(0);
    expect(await redis(api, "ZSCORE", key(api, "_due"), "gone")).toBeNull();
    expect(await redis(api, "ZSCORE", key(api, "_rooms"), "gone")).toBeNull();
    expect((await trim(api)).body.result.rooms).toBe(0);
  });

  it("attack: a flood of new rooms cannot hide a room from the list (cursor pages reach it)", async () => {
    const api = newApi("phz-flood");
    await api.post("/v1/presence/real/heartbeats", { id: "u" });
    const flood = Array.from({ length: 150 }, (_, i) => `spam${i}`);
    for (const room of flood) {
      api.advance(10);
      await api.post(`/v1/presence/${room}/heartbeats`, { id: "x" });
    }
    const first = await api.get("/v1/presence?limit=100");
    expect(first.body.rooms).toHaveLength(100);
    expect(first.body.rooms).not.toContain("real");
    expect(first.body.truncated).toBe(true);
    const rooms = await allRooms(api, 100);
    expect(rooms).toHaveLength(151);
    expect(new Set(rooms).size).toBe(151);
    expect(rooms[150]).toBe("real");
    // The flood goes quiet; the real room stays active: two days later only it is listed.
    for (let day = 1; day <= 2; day++) {
      api.advance(DAY);
      await api.post("/v1/presence/real/heartbeats", { id: "u" });
      await trim(api);
    }
    api.advance(MIN);
    await trim(api);
    expect(await allRooms(api, 100)).toEqual(["real"]);
    expect((await api.get("/v1/presence?cursor=bad")).status).toBe(400);
    expect((await api.get("/v1/presence?limit=1001")).status).toBe(400);
  });
});

describe("scopes", () => {
  it("scope: leave (ingest) only ends the online session: history, AU, NU, PCU and the mapping stay", async () => {
    const api = newApi("phz-leave");
    await api.post("/v1/presence/l/heartbeats", { ids: ["a", "b"] });
    api.advance(MIN);
    await trim(api);
    const stats = (await api.get("/v1/presence/l")).body;
    const history = (await api.get("/v1/presence/l/history")).body;
    expect((await api.del("/v1/presence/l/members/a")).status).toBe(204);
    expect((await api.get("/v1/presence/l")).body).toEqual({ ...stats, online: 1 });
    expect((await api.get("/v1/presence/l/history")).body).toEqual(history);
    expect((await api.get("/v1/presence/l/members")).body.members.map((m: { id: string }) => m.id)).toEqual(["b"]);
    // both ids mapped both ways, and a's leave mark (for heartbeats sent before it, applied after)
    expect(await redis<number>(api, "HLEN", key(api, "l", "ids"))).toBe(5);
    // Back within the horizon: known, not new.
    expect((await api.post("/v1/presence/l/heartbeats", { id: "a" })).body).toEqual({ online: 2, new: 0 });
    // Leave never takes an idle id's last-seen forward (so it cannot postpone forgetting).
    api.advance(DAY);
    const seenBefore = await redis<string>(api, "ZSCORE", key(api, "l", "seen"), "1");
    await api.del("/v1/presence/l/members/a");
    expect(await redis<string>(api, "ZSCORE", key(api, "l", "seen"), "1")).toBe(seenBefore);
  });

  it("attack: heartbeats and leaves cannot shorten a room's key lifetimes or put one on its id map", async () => {
    const api = newApi("phz-ttl");
    await api.post("/v1/presence/t/heartbeats", { ids: ["a", "b"] });
    api.advance(MIN);
    await trim(api);
    const daily = key(api, "t", "daily", label(api.now));
    const history = key(api, "t", "history");
    const [dailyTtl, historyTtl] = [await redis<number>(api, "PTTL", daily), await redis<number>(api, "PTTL", history)];
    expect(dailyTtl).toBeGreaterThan(0);
    expect(historyTtl).toBeGreaterThan(25 * 3_600_000);
    // Late in the day, after a long silence, with leaves in between: every ingest write there is.
    api.setNow(Date.UTC(2026, 10, 22, 23, 59, 0));
    await api.del("/v1/presence/t/members/a");
    await api.post("/v1/presence/t/heartbeats", { ids: ["a", "b", "c"] });
    await api.del("/v1/presence/t/members/b");
    const slack = 2_000; // real time passing between the two readings
    expect(await redis<number>(api, "PTTL", daily)).toBeGreaterThan(dailyTtl - slack);
    expect(await redis<number>(api, "PTTL", history)).toBeGreaterThan(historyTtl - slack);
    for (const part of ["seen", "ids", "seq"]) expect(await redis<number>(api, "PTTL", key(api, "t", part))).toBe(-1);
  });

  it("scope: only admin deletes a room or runs the trim job", async () => {
    const api = newApi("phz-admin");
    await api.post("/v1/presence/z/heartbeats", { id: "a" });
    const keys = await api.keys();
    for (const k of ["ingest", "read"]) {
      expect((await api.del("/v1/presence/z", { key: k })).status).toBe(403);
      expect((await api.post("/internal/jobs/trim", undefined, { key: k })).status).toBe(403);
    }
    expect(await api.keys()).toEqual(keys);
  });
});
