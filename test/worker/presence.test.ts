import { describe, expect, it } from "vitest";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi, type TestApi, cleanedUpAfterAll } from "../helpers/worker.ts";

const MIN = 60_000;
const track = cleanedUpAfterAll<TestApi>();
const newApi = (label: string, start?: string) => track(createTestApi({ label, ...(start ? { start } : {}) }));

const uuids = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => `${tag}-${String(i).padStart(6, "0")}-4b7d-4f0a-9a55-0c1d2e3f4a5b`);
const runTrim = (api: TestApi) => api.post("/internal/jobs/trim", undefined, { key: "admin" });
const zcard = (api: TestApi, room: string) =>
  command<number>(api.target, "ZCARD", `${api.prefix}:presence:${room}:seen`);

describe("heartbeats and the online count", () => {
  const api = newApi("pres-hb");

  it("records one id or a batch and returns the online count", async () => {
    const one = await api.post("/v1/presence/lobby/heartbeats", { id: "alice" });
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ online: 1, new: 1 });
    const again = await api.post("/v1/presence/lobby/heartbeats", { id: "alice" });
    expect(again.body).toEqual({ online: 1, new: 0 });
    const batch = await api.post("/v1/presence/lobby/heartbeats", { ids: ["bob", "carol", "alice", "bob"] });
    expect(batch.body).toEqual({ online: 3, new: 2 });
    const stats = await api.get("/v1/presence/lobby");
    expect(stats.status).toBe(200);
    expect(stats.body).toMatchObject({
      room: "lobby",
      online: 3,
      timeoutSeconds: 300,
      peakToday: 3,
      activeToday: 3,
      newToday: 3,
    });
    expect(stats.body.peakAt).toBe(api.now);
  });

  it("counts an id offline once the timeout passes, with no trimming job run", async () => {
    api.advance(299_000);
    await api.post("/v1/presence/lobby/heartbeats", { id: "carol" });
    api.advance(1_000); // alice and bob: exactly 300 s idle, still online
    expect((await api.get("/v1/presence/lobby")).body.online).toBe(3);
    api.advance(1);
    const after = await api.get("/v1/presence/lobby");
    expect(after.body.online).toBe(1);
    expect(after.body.peakToday).toBe(3);
    expect(after.body.activeToday).toBe(3);
    const members = await api.get("/v1/presence/lobby/members");
    expect(members.body.members.map((m: { id: string }) => m.id)).toEqual(["carol"]);
    // Nothing was trimmed: the idle members are still stored, just not counted.
    expect(await zcard(api, "lobby")).toBe(3);
    const back = await api.post("/v1/presence/lobby/heartbeats", { id: "alice" });
    expect(back.body).toEqual({ online: 2, new: 0 });
  });

  it("honours PRESENCE_TIMEOUT_SECONDS", async () => {
    const short = track(createTestApi({ label: "pres-tmo", vars: { PRESENCE_TIMEOUT_SECONDS: "30" } }));
    await short.post("/v1/presence/r/heartbeats", { id: "x" });
    short.advance(30_001);
    const stats = await short.get("/v1/presence/r");
    expect(stats.body).toMatchObject({ online: 0, timeoutSeconds: 30, peakToday: 1 });
  });

  it("takes an id offline at once on leave", async () => {
    const res = await api.del("/v1/presence/lobby/members/alice");
    expect(res.status).toBe(204);
    expect((await api.get("/v1/presence/lobby")).body.online).toBe(1);
    expect((await api.del("/v1/presence/lobby/members/nobody")).status).toBe(204);
    expect((await api.del("/v1/presence/lobby/members/alice")).status).toBe(204);
    const members = await api.get("/v1/presence/lobby/members");
    expect(members.body.members.map((m: { id: string }) => m.id)).toEqual(["carol"]);
  });

  it("leaves with an id that needs percent-encoding in the path", async () => {
    const id = "user/42 ü?#";
    await api.post("/v1/presence/enc/heartbeats", { id });
    expect((await api.get("/v1/presence/enc")).body.online).toBe(1);
    expect((await api.del(`/v1/presence/enc/members/${encodeURIComponent(id)}`)).status).toBe(204);
    expect((await api.get("/v1/presence/enc")).body.online).toBe(0);
  });

  it("replays a heartbeat with the same Idempotency-Key without counting its new ids twice", async () => {
    const headers = { "idempotency-key": "hb-1" };
    const first = await api.post("/v1/presence/idem/heartbeats", { ids: ["n1", "n2"] }, { headers });
    const second = await api.post("/v1/presence/idem/heartbeats", { ids: ["n1", "n2"] }, { headers });
    expect(second.body).toEqual(first.body);
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    expect((await api.get("/v1/presence/idem")).body.newToday).toBe(2);
  });

  it("reads an unknown room as empty", async () => {
    const res = await api.get("/v1/presence/never-seen");
    expect(res.body).toMatchObject({ online: 0, peakToday: 0, peakAt: null, activeToday: 0, newToday: 0 });
  });
});

describe("active, new and peak users across UTC midnight", () => {
  const api = newApi("pres-day", "2026-11-22T23:57:00Z");

  it("starts new daily figures at 00:00 UTC and keeps ids seen before as not new", async () => {
    await api.post("/v1/presence/game/heartbeats", { ids: ["a", "b", "c"] });
    api.advance(MIN);
    await api.post("/v1/presence/game/heartbeats", { ids: ["d"] });
    const late = await api.get("/v1/presence/game");
    expect(late.body).toMatchObject({
      online: 4,
      peakToday: 4,
      activeToday: 4,
      newToday: 4,
      day: Date.UTC(2026, 10, 22),
    });

    api.setNow("2026-11-23T00:01:00Z");
    const early = await api.get("/v1/presence/game");
    // Still online from yesterday: concurrent now (so today's peak, reached at 00:00) but not seen today.
    expect(early.body).toMatchObject({
      online: 4,
      peakToday: 4,
      peakAt: Date.UTC(2026, 10, 23),
      activeToday: 0,
      newToday: 0,
      day: Date.UTC(2026, 10, 23),
    });

    const hb = await api.post("/v1/presence/game/heartbeats", { ids: ["a", "e"] });
    expect(hb.body).toEqual({ online: 5, new: 1 });
    const peakAt = api.now;
    api.advance(MIN);
    await api.del("/v1/presence/game/members/b");
    await api.del("/v1/presence/game/members/c");
    const now = await api.get("/v1/presence/game");
    expect(now.body).toMatchObject({ online: 3, peakToday: 5, peakAt, activeToday: 2, newToday: 1 });
  });

  it("records the concurrency carried over midnight as the new day's peak in the job", async () => {
    const carry = newApi("pres-carry", "2026-11-23T23:59:00Z");
    await carry.post("/v1/presence/r/heartbeats", { ids: ["p", "q"] });
    carry.setNow("2026-11-24T00:00:00Z");
    expect((await runTrim(carry)).status).toBe(200);
    carry.advance(10 * MIN); // both idle now
    const stats = await carry.get("/v1/presence/r");
    expect(stats.body).toMatchObject({
      online: 0,
      peakToday: 2,
      peakAt: Date.UTC(2026, 10, 24),
      activeToday: 0,
      newToday: 0,
    });
  });
});

describe("trimming job", () => {
  const api = newApi("pres-trim", "2026-11-22T12:00:00Z");

  it("samples every active room, through POST /internal/jobs/trim, keeping idle ids as last-seen", async () => {
    await api.post("/v1/presence/r1/heartbeats", { ids: ["a", "b", "c"] });
    await api.post("/v1/presence/r2/heartbeats", { ids: ["x", "y"] });
    api.advance(4 * MIN);
    await api.post("/v1/presence/r1/heartbeats", { id: "a" });
    api.advance(2 * MIN); // b, c, x, y idle for 6 minutes
    expect(await zcard(api, "r1")).toBe(3);
    const forbidden = await api.post("/internal/jobs/trim", undefined, { key: "ingest" });
    expect(forbidden.status).toBe(403);
    const run = await runTrim(api);
    expect(run.status).toBe(200);
    expect(run.body.result).toMatchObject({ rooms: 2, online: 1, forgotten: 0 });
    // Idle ids stay as last-seen until the id horizon: they are not counted, only remembered.
    expect(await zcard(api, "r1")).toBe(3);
    expect(await zcard(api, "r2")).toBe(2);
    // Idempotent: a rerun of the same minute writes the same point.
    const rerun = await runTrim(api);
    expect(rerun.body.result).toMatchObject({ rooms: 2, online: 1 });
    const points = (await api.get("/v1/presence/r1/history")).body.points;
    expect(points).toEqual([{ at: api.now, online: 1 }]);
    expect((await api.get("/v1/presence/r1")).body.online).toBe(1);
  });

  it("samples one history point per minute and serves the last hours", async () => {
    const start = api.now;
    const expected: { at: number; online: number }[] = [{ at: start, online: 1 }];
    for (let m = 1; m <= 5; m++) {
      api.setNow(start + m * MIN);
      await api.post("/v1/presence/r1/heartbeats", { ids: Array.from({ length: m }, (_, i) => `h${i}`) });
      await runTrim(api);
      // 'a' (last seen two minutes before start) is online until start + 3 min.
      expected.push({ at: start + m * MIN, online: m + (m <= 3 ? 1 : 0) });
    }
    const res = await api.get("/v1/presence/r1/history?hours=24");
    expect(res.status).toBe(200);
    expect(res.body.points).toEqual(expected);
    // Everyone is idle from start + 10 min: the next run records the 0.
    api.setNow(start + 11 * MIN);
    await runTrim(api);
    api.setNow(start + 65 * MIN);
    const lastHour = await api.get("/v1/presence/r1/history?hours=1");
    expect(lastHour.body.points).toEqual([{ at: start + 11 * MIN, online: 0 }]);
    const all = await api.get("/v1/presence/r1/history");
    expect(all.body.points).toEqual([...expected, { at: start + 11 * MIN, online: 0 }]);
    expect((await api.get("/v1/presence/r1/history?hours=25")).status).toBe(400);
  });

  it("stops visiting rooms idle past the timeout, and keeps history to 24 h", async () => {
    api.advance(30 * MIN);
    const run = await runTrim(api);
    // r1 is visited once more (r2 went idle long before) and scheduled for when its listing ends.
    expect(run.body.result).toMatchObject({ rooms: 1, idle: 1, online: 0 });
    expect((await runTrim(api)).body.result.rooms).toBe(0);
    api.advance(24 * 60 * MIN);
    await api.post("/v1/presence/r1/heartbeats", { id: "a" });
    await runTrim(api);
    const points = (await api.get("/v1/presence/r1/history")).body.points;
    expect(points).toEqual([{ at: api.now, online: 1 }]);
  });
});

describe("listing members with cursor pagination", () => {
  const api = newApi("pres-page");
  let onlineAfter: string[] = [];

  it("pages through every online member, least recently seen first, no repeats", async () => {
    await api.post("/v1/presence/hall/heartbeats", { ids: uuids(120, "a") });
    api.advance(1000);
    await api.post("/v1/presence/hall/heartbeats", { ids: uuids(130, "b") });
    api.advance(1000);
    const seen: { id: string; lastSeen: number }[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: { status: number; body: { members: { id: string; lastSeen: number }[]; nextCursor: string | null } } =
        await api.get(`/v1/presence/hall/members?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.members);
      cursor = res.body.nextCursor;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toHaveLength(250);
    expect(new Set(seen.map((m) => m.id)).size).toBe(250);
    expect(new Set(seen.map((m) => m.id))).toEqual(new Set([...uuids(120, "a"), ...uuids(130, "b")]));
    const times = seen.map((m) => m.lastSeen);
    expect(times).toEqual([...times].sort((x, y) => x - y));
    expect(times[0]).toBe(api.now - 2000);
    expect(times[249]).toBe(api.now - 1000);
  });

  it("never skips a member that stays online while the pages are read", async () => {
    const first = await api.get("/v1/presence/hall/members?limit=50");
    // Members on the next pages heartbeat meanwhile; one already listed leaves.
    const again = uuids(10, "a").slice(5);
    await api.post("/v1/presence/hall/heartbeats", { ids: again });
    const left: string = first.body.members[49].id;
    await api.del(`/v1/presence/hall/members/${left}`);
    const ids = new Set<string>(first.body.members.map((m: { id: string }) => m.id));
    let cursor: string | null = first.body.nextCursor;
    while (cursor) {
      const res = await api.get(`/v1/presence/hall/members?limit=50&cursor=${encodeURIComponent(cursor)}`);
      for (const m of res.body.members) ids.add(m.id);
      cursor = res.body.nextCursor;
    }
    expect(ids.size).toBe(250);
    onlineAfter = [...uuids(130, "b"), ...again].filter((id) => id !== left);
  });

  it("leaves out idle members and rejects a forged cursor", async () => {
    api.advance(300_000 - 1000); // the 'a' batch (except those that heartbeat again) is now idle
    const res = await api.get("/v1/presence/hall/members?limit=1000");
    expect(res.body.nextCursor).toBeNull();
    expect(new Set(res.body.members.map((m: { id: string }) => m.id))).toEqual(new Set(onlineAfter));
    const bad = await api.get("/v1/presence/hall/members?cursor=not-a-cursor");
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].path).toBe("cursor");
    expect((await api.get("/v1/presence/hall/members?limit=1001")).status).toBe(400);
  });
});

describe("10,000 ids in one room", () => {
  const api = newApi("pres-10k");

  it("takes 10 batches of 1,000, one round trip each, and lists them all", async () => {
    const all = uuids(10_000, "u");
    let last = 0;
    for (let b = 0; b < 10; b++) {
      api.advance(10);
      const { result, requests } = await api.cost(() =>
        api.post("/v1/presence/arena/heartbeats", { ids: all.slice(b * 1000, (b + 1) * 1000) }),
      );
      expect(result.status).toBe(200);
      if (b > 0) expect(requests).toBe(1);
      last = result.body.online;
    }
    expect(last).toBe(10_000);
    expect((await api.get("/v1/presence/arena")).body).toMatchObject({
      online: 10_000,
      peakToday: 10_000,
      activeToday: 10_000,
      newToday: 10_000,
    });
    const ids = new Set<string>();
    let cursor: string | null = null;
    do {
      const res: { body: { members: { id: string }[]; nextCursor: string | null } } = await api.get(
        `/v1/presence/arena/members?limit=1000${cursor ? `&cursor=${cursor}` : ""}`,
      );
      for (const m of res.body.members) ids.add(m.id);
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(ids.size).toBe(10_000);
    api.advance(301_000);
    const run = await runTrim(api);
    expect(run.body.result).toMatchObject({ rooms: 1, online: 0 });
    expect((await api.get("/v1/presence/arena")).body).toMatchObject({ online: 0, activeToday: 10_000 });
  });
});

describe("bad input", () => {
  const api = newApi("pres-bad");
  const cases: [string, unknown][] = [
    ["empty id", { id: "" }],
    ["257-byte id", { id: "a".repeat(257) }],
    ["257-byte id in a batch", { ids: ["ok", "é".repeat(128) + "x"] }],
    ["1,001 ids", { ids: uuids(1001, "z") }],
    ["control character", { id: "bad\u0007id" }],
    ["newline in a batch", { ids: ["fine", "line\nbreak"] }],
    ["empty batch", { ids: [] }],
    ["both id and ids", { id: "a", ids: ["b"] }],
    ["neither", {}],
    ["unknown field", { id: "a", at: 5 }],
    ["number id", { id: 5 }],
  ];

  it.each(cases)("rejects %s with 400 and writes nothing", async (_label, body) => {
    const res = await api.post("/v1/presence/room/heartbeats", body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("invalid_request");
    expect(res.body.error.details.length).toBeGreaterThan(0);
    expect(await api.keys()).toEqual([]);
  });

  it("names the bad item of a batch", async () => {
    const res = await api.post("/v1/presence/room/heartbeats", { ids: ["ok", "", "also ok"] });
    expect(res.body.error.details[0].path).toBe("ids.1");
  });

  it("rejects bad room names and ids in paths, writing nothing", async () => {
    expect((await api.post("/v1/presence/-bad/heartbeats", { id: "a" })).status).toBe(400);
    expect((await api.post(`/v1/presence/${"r".repeat(65)}/heartbeats`, { id: "a" })).status).toBe(400);
    expect((await api.del(`/v1/presence/room/members/${"a".repeat(257)}`)).status).toBe(400);
    expect((await api.del("/v1/presence/room/members/a%07b")).status).toBe(400);
    expect(await api.keys()).toEqual([]);
  });

  it("accepts a 256-byte multi-byte id", async () => {
    const res = await api.post("/v1/presence/room/heartbeats", { id: "é".repeat(128) });
    expect(res.status).toBe(200);
  });
});

describe("room registry, deletion, costs and OpenAPI", () => {
  const api = newApi("pres-reg");

  it("lists rooms most recently active first and deletes a room with every key (admin)", async () => {
    for (const room of ["zeta", "Alpha", "beta", "alpha"]) {
      api.advance(1000);
      await api.post(`/v1/presence/${room}/heartbeats`, { id: "u1" });
    }
    const list = await api.get("/v1/presence");
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ rooms: ["alpha", "beta", "Alpha", "zeta"], truncated: false, nextCursor: null });
    expect((await api.del("/v1/presence/beta")).status).toBe(403);
    expect((await api.del("/v1/presence/beta", { key: "admin" })).status).toBe(204);
    expect((await api.get("/v1/presence")).body.rooms).toEqual(["alpha", "Alpha", "zeta"]);
    expect((await api.keys()).filter((k) => k.includes(":presence:beta:"))).toEqual([]);
    expect((await api.get("/v1/presence/beta")).body.online).toBe(0);
    // A new heartbeat brings the room back, and its ids count as new again.
    expect((await api.post("/v1/presence/beta/heartbeats", { id: "u1" })).body).toEqual({ online: 1, new: 1 });
  });

  it("costs exactly one Redis round trip per API call", async () => {
    const calls: [string, () => Promise<{ status: number }>][] = [
      ["heartbeat", () => api.post("/v1/presence/cost/heartbeats", { ids: ["a", "b"] })],
      ["stats", () => api.get("/v1/presence/cost")],
      ["members", () => api.get("/v1/presence/cost/members?limit=1")],
      ["members page 2", () => api.get("/v1/presence/cost/members?limit=1&cursor=" + `${api.now}-1`)],
      ["history", () => api.get("/v1/presence/cost/history")],
      ["rooms", () => api.get("/v1/presence")],
      ["leave", () => api.del("/v1/presence/cost/members/a")],
      ["delete room", () => api.del("/v1/presence/gone", { key: "admin" })],
    ];
    for (const [name, call] of calls) {
      await call(); // cache the script
      const { result, requests } = await api.cost(call);
      expect([name, result.status]).toEqual([name, expect.any(Number)]);
      expect(result.status, name).toBeLessThan(300);
      expect(requests, name).toBe(1);
    }
  });

  it("runs as many Redis commands for 1,000 ids as for one (whole-batch commands)", async () => {
    const many = uuids(1000, "c");
    await api.post("/v1/presence/bulk/heartbeats", { id: "warm" });
    const oneNew = await api.cost(() => api.post("/v1/presence/bulk/heartbeats", { id: "solo" }));
    const manyNew = await api.cost(() => api.post("/v1/presence/bulk/heartbeats", { ids: many }));
    const oneKnown = await api.cost(() => api.post("/v1/presence/bulk/heartbeats", { id: "solo" }));
    const manyKnown = await api.cost(() => api.post("/v1/presence/bulk/heartbeats", { ids: many }));
    expect(manyNew.result.body).toEqual({ online: 1002, new: 1000 });
    expect([oneNew.requests, manyNew.requests, oneKnown.requests, manyKnown.requests]).toEqual([1, 1, 1, 1]);
    expect(manyNew.commands).toBe(oneNew.commands);
    expect(manyKnown.commands).toBe(oneKnown.commands);
    expect(oneKnown.commands).toBeLessThan(oneNew.commands);
  });

  it("describes every presence endpoint in /openapi.json", async () => {
    const doc = (await api.get("/openapi.json", { key: "none" })).body;
    expect(doc.paths["/v1/presence/{room}/heartbeats"].post).toBeDefined();
    expect(doc.paths["/v1/presence/{room}/members/{id}"].delete).toBeDefined();
    expect(doc.paths["/v1/presence/{room}"].get).toBeDefined();
    expect(doc.paths["/v1/presence/{room}"].delete).toBeDefined();
    expect(doc.paths["/v1/presence/{room}/members"].get).toBeDefined();
    expect(doc.paths["/v1/presence/{room}/history"].get).toBeDefined();
    expect(doc.paths["/v1/presence"].get).toBeDefined();
    expect(doc.components.schemas.PresenceRoom.properties.peakToday).toBeDefined();
  });
});
