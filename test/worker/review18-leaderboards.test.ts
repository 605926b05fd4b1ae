/**
 * Review 18, leaderboards v1 and v2 over HTTP (the Worker in workerd, real Redis behind the local
 * Upstash server, the test api's fake clock): Idempotency-Key replays and conflicts, `Prefer:
 * respond-async` (not a queued route for leaderboards: answered synchronously), limits and their 400
 * envelopes, numeric edges (-0, 1e308, past ±1e15, fractional sums), player ids at the length limit and
 * unicode display names, rejoin after removal, scopes, paging against a model while writes interleave, and
 * command counts that do not grow with the board (issue 15).
 */
import { describe, expect, it } from "vitest";
import { cleanedUpAfterAll, createTestApi, type TestApi } from "../helpers/worker.ts";

const track = cleanedUpAfterAll<TestApi>();
const newApi = (label: string, start = "2026-11-10T10:00:00.000Z") => track(createTestApi({ label, start }));
const base = "/v1/leaderboards";
const admin = { key: "admin" } as const;

const join = (api: TestApi, board: string, player: string, body: Record<string, unknown> = { name: player }) =>
  api.put(`${base}/${board}/players/${player}`, body);
const score = (api: TestApi, board: string, player: string, body: unknown, headers?: Record<string, string>) =>
  api.post(`${base}/${board}/players/${player}/score`, body, headers ? { headers } : undefined);
const get = (api: TestApi, board: string, player: string) => api.get(`${base}/${board}/players/${player}`);
const page = (api: TestApi, board: string, limit = 100, p = 1) => api.get(`${base}/${board}?limit=${limit}&page=${p}`);

function expectValidation(res: { status: number; body: any }, path?: string) {
  expect(res.status).toBe(400);
  expect(res.body.error.code).toBe("invalid_request");
  expect(typeof res.body.error.message).toBe("string");
  if (path !== undefined) expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
}

describe("Idempotency-Key on leaderboard writes", () => {
  it("a retry of a score change counts once and replays the first answer; the same key with another body is a 409", async () => {
    const api = newApi("r18-idem");
    await join(api, "b", "a", { name: "A" });
    const h = { "idempotency-key": "k-1" };
    expect((await score(api, "b", "a", { by: 5 }, h)).body).toEqual({ score: 5, rank: 1 });
    const replay = await score(api, "b", "a", { by: 5 }, h);
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual({ score: 5, rank: 1 });
    const other = await score(api, "b", "a", { by: 7 }, h);
    expect(other.status).toBe(409);
    expect(typeof other.body.error.code).toBe("string");
    expect((await get(api, "b", "a")).body.score).toBe(5);
    // a batch retried counts once too
    const hb = { "idempotency-key": "k-batch" };
    const batch = {
      items: [
        { player: "a", by: 1 },
        { player: "a", set: 100, mode: "best" },
      ],
    };
    const first = await api.post(`${base}/b/scores`, batch, { headers: hb });
    expect(first.status).toBe(200);
    expect((await api.post(`${base}/b/scores`, batch, { headers: hb })).body).toEqual(first.body);
    expect((await get(api, "b", "a")).body.score).toBe(100);
  });

  it("a join retried with its key replays 201 and does not rewrite the profile of a later join", async () => {
    const api = newApi("r18-idem-join");
    const h = { headers: { "idempotency-key": "j-1" } };
    const first = await api.put(`${base}/b/players/p`, { name: "First", score: 3 }, h);
    expect(first.status).toBe(201);
    await api.put(`${base}/b/players/p`, { name: "Second" });
    const again = await api.put(`${base}/b/players/p`, { name: "First", score: 3 }, h);
    expect(again.status).toBe(201);
    expect((await get(api, "b", "p")).body).toMatchObject({ name: "Second", score: 3 });
  });
});

describe("Idempotency-Key on PUT and DELETE", () => {
  it("a join or a configure with the key of another body is a 409; a DELETE is not replayed (it is not a POST or PUT)", async () => {
    const api = newApi("r18-idem-put");
    const h = { headers: { "idempotency-key": "jj" } };
    expect((await api.put(`${base}/b/players/p`, { name: "One" }, h)).status).toBe(201);
    expect((await api.put(`${base}/b/players/p`, { name: "Two" }, h)).status).toBe(409);
    expect((await get(api, "b", "p")).body.name).toBe("One");
    const cfg = (body: unknown) => api.put(`${base}/b`, body, { key: "admin", headers: { "idempotency-key": "cfg" } });
    expect((await cfg({ ties: "joined" })).status).toBe(200);
    expect((await cfg({ keepSeasons: 4 })).status).toBe(409);
    const del = () => api.del(`${base}/b/players/p`, { headers: { "idempotency-key": "del" } });
    expect((await del()).status).toBe(204);
    expect((await join(api, "b", "p", { name: "Three" })).status).toBe(201);
    expect((await del()).status).toBe(204);
    expect((await get(api, "b", "p")).status).toBe(404);
  });
});

describe("Prefer: respond-async is not a queued route for leaderboards", () => {
  it("a score change with the header is applied synchronously, once", async () => {
    const api = newApi("r18-async");
    await join(api, "b", "a");
    const res = await score(api, "b", "a", { by: 2 }, { prefer: "respond-async" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ score: 2, rank: 1 });
    expect(res.headers.get("preference-applied")).toBeNull();
    expect((await get(api, "b", "a")).body.score).toBe(2);
  });
});

describe("limits and their 400 envelopes, nothing written", () => {
  it("page, limit and k bounds; scores past the bounds, 1e308, strings, null", async () => {
    const api = newApi("r18-limits");
    await join(api, "b", "a", { name: "A", score: 1 });
    expectValidation(await page(api, "b", 101), "limit");
    expectValidation(await page(api, "b", 0), "limit");
    expectValidation(await page(api, "b", 10, 0), "page");
    expectValidation(await page(api, "b", 10, 1_000_001), "page");
    expect((await page(api, "b", 100, 1_000_000)).body).toMatchObject({ items: [], total: 1 });
    expectValidation(await api.get(`${base}/b/players/a/around?k=51`), "k");
    expect((await api.get(`${base}/b/players/a/around?k=50`)).status).toBe(200);
    for (const body of [
      { set: 1e308 },
      { set: 1e15 + 2 },
      { set: -1e15 - 2 },
      { by: 1e12 + 1 },
      { by: "5" },
      { by: null },
      { set: 1, mode: "sum" },
      {},
      { by: 1, set: 2 },
    ]) {
      const res = await score(api, "b", "a", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
    }
    // a raw NaN/Infinity is not JSON
    const raw = await api.post(`${base}/b/players/a/score`, undefined, {
      raw: '{"by": NaN}',
      headers: { "content-type": "application/json" },
    });
    expect(raw.status).toBe(400);
    expect((await get(api, "b", "a")).body.score).toBe(1);
    // the subset ranking: 1..1000 names
    expectValidation(await api.post(`${base}/b/rank`, { players: [] }, { key: "read" }));
    const many = Array.from({ length: 1001 }, (_, i) => `p${i}`);
    expectValidation(await api.post(`${base}/b/rank`, { players: many }, { key: "read" }));
  });

  it("a score at ±1e15 stays exact; an increment that would pass it is refused and writes nothing", async () => {
    const api = newApi("r18-edges");
    await join(api, "b", "a", { name: "A", score: 1e15 - 1 });
    expect((await score(api, "b", "a", { by: 1 })).body).toEqual({ score: 1e15, rank: 1 });
    expectValidation(await score(api, "b", "a", { by: 1 }));
    expect((await get(api, "b", "a")).body.score).toBe(1e15);
    await join(api, "b", "z", { name: "Z", score: -1e15 });
    expectValidation(await score(api, "b", "z", { by: -1 }));
    expect((await get(api, "b", "z")).body).toMatchObject({ score: -1e15, rank: 2 });
  });

  it("-0 reads as 0 and ties with 0 by join order", async () => {
    const api = newApi("r18-negzero");
    await join(api, "b", "first", { name: "F", score: 0 });
    await join(api, "b", "second", { name: "S" });
    expect((await score(api, "b", "second", { set: -0 })).body).toEqual({ score: 0, rank: 2 });
    const res = await page(api, "b");
    expect(res.body.items.map((r: { player: string; score: number }) => [r.player, r.score])).toEqual([
      ["first", 0],
      ["second", 0],
    ]);
  });
});

describe("player ids and names", () => {
  it("an id of 64 characters and a unicode display name of 256 UTF-8 bytes are kept; 65 or 257 are a 400", async () => {
    const api = newApi("r18-names");
    const id = "a" + "b".repeat(62) + "9";
    expect(id.length).toBe(64);
    const name = "é".repeat(127) + "xy"; // 256 bytes
    expect((await join(api, "b", id, { name, meta: { flag: "🏳️‍🌈" } })).status).toBe(201);
    expect((await get(api, "b", id)).body).toMatchObject({ player: id, name, meta: { flag: "🏳️‍🌈" } });
    expect((await page(api, "b")).body.items[0]).toMatchObject({ player: id, name });
    expectValidation(await join(api, "b", id + "c", { name: "x" }));
    expectValidation(await join(api, "b", "p", { name: name + "z" }), "name");
    expectValidation(await join(api, "b", "p", { name: "a\u0000b" }), "name");
    expect((await page(api, "b")).body.total).toBe(1);
  });
});

describe("rejoin after removal, delete, scopes", () => {
  it("a removed player joins again as new: 201, its score from the body, after the players who stayed on ties", async () => {
    const api = newApi("r18-rejoin");
    await join(api, "b", "a", { name: "A", score: 5 });
    await join(api, "b", "b", { name: "B", score: 5 });
    expect((await api.del(`${base}/b/players/a`)).status).toBe(204);
    expect((await get(api, "b", "a")).status).toBe(404);
    const again = await join(api, "b", "a", { name: "A2", score: 5 });
    expect(again.status).toBe(201);
    expect(again.body).toMatchObject({ score: 5, rank: 2, created: true });
    expect((await page(api, "b")).body.items.map((r: { player: string }) => r.player)).toEqual(["b", "a"]);
    expect((await api.del(`${base}/b`, admin)).status).toBe(204);
    expect((await page(api, "b")).status).toBe(404);
    expect(await api.keys()).toEqual([]);
  });

  it("a read key cannot write; an ingest key cannot configure, delete or list seasons-only admin things", async () => {
    const api = newApi("r18-scope");
    await join(api, "b", "a");
    await score(api, "b", "a", { by: 1 });
    expect((await api.post(`${base}/b/scores`, { player: "a", by: 1 }, { key: "read" })).status).toBe(403);
    expect((await score(api, "b", "a", { by: 1 }, undefined)).status).toBe(200);
    expect((await api.post(`${base}/b/players/a/score`, { by: 1 }, { key: "read" })).status).toBe(403);
    expect((await api.put(`${base}/b/players/z`, { name: "z" }, { key: "read" })).status).toBe(403);
    expect((await api.del(`${base}/b/players/a`, { key: "read" })).status).toBe(403);
    expect((await api.put(`${base}/b`, { ties: "reached" }, { key: "ingest" })).status).toBe(403);
    expect((await api.del(`${base}/b`, { key: "ingest" })).status).toBe(403);
    expect((await get(api, "b", "a")).body.score).toBe(2);
  });
});

describe("paging against a model while writes interleave", () => {
  it("every page equals the model's slice of the order at that moment (score desc, then join order)", async () => {
    const api = newApi("r18-paging");
    let seed = 18;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed / 2 ** 31);
    const model = new Map<string, { score: number; seq: number }>();
    let seq = 0;
    const n = 23;
    for (let i = 0; i < n; i++) {
      const s = Math.floor(rnd() * 6);
      await join(api, "b", `p${i}`, { name: `P${i}`, score: s });
      model.set(`p${i}`, { score: s, seq: seq++ });
    }
    const sorted = () =>
      [...model.entries()].sort((x, y) => y[1].score - x[1].score || x[1].seq - y[1].seq).map(([p, v]) => [p, v.score]);
    for (let round = 0; round < 3; round++) {
      for (let p = 1; p <= 5; p++) {
        const res = await page(api, "b", 5, p);
        const want = sorted().slice((p - 1) * 5, p * 5);
        expect(res.body.items.map((r: { player: string; score: number }) => [r.player, r.score])).toEqual(want);
        expect(res.body.items.map((r: { rank: number }) => r.rank)).toEqual(want.map((_, i) => (p - 1) * 5 + i + 1));
        // interleaved writes between pages
        const who = `p${Math.floor(rnd() * n)}`;
        const entry = model.get(who)!;
        if (rnd() < 0.5) {
          const by = Math.floor(rnd() * 5) - 2;
          await score(api, "b", who, { by });
          entry.score += by;
        } else {
          const set = Math.floor(rnd() * 6);
          await score(api, "b", who, { set, mode: "best" });
          entry.score = Math.max(entry.score, set);
        }
      }
    }
    // around-me agrees with the page for every player
    const all = sorted();
    for (let i = 0; i < all.length; i += 4) {
      const [who] = all[i] as [string, number];
      const res = await api.get(`${base}/b/players/${who}/around?k=2`);
      expect(res.body.rank).toBe(i + 1);
      expect(res.body.items.map((r: { player: string }) => r.player)).toEqual(
        all.slice(Math.max(0, i - 2), i + 3).map(([p]) => p),
      );
    }
  });
});

describe("command counts do not grow with the board (issue 15)", () => {
  it("get, page, around-me, increment and remove cost the same on 5 and on 400 players", async () => {
    const api = newApi("r18-scale");
    const measure = async (board: string) => {
      const c = async (f: () => Promise<unknown>) => (await api.cost(f)).commands;
      return {
        get: await c(() => get(api, board, "p3")),
        page: await c(() => page(api, board, 100, 1)),
        around: await c(() => api.get(`${base}/${board}/players/p3/around?k=50`)),
        incr: await c(() => score(api, board, "p1", { by: 1 })),
        rank: await c(() => api.post(`${base}/${board}/rank`, { players: ["p3", "p4"] }, { key: "read" })),
      };
    };
    for (let i = 0; i < 5; i++) await join(api, "small", `p${i}`, { name: "x", score: i });
    for (let i = 0; i < 400; i++) await join(api, "big", `p${i}`, { name: "x", score: i % 97 });
    await measure("small"); // the first call of each script in this isolate loads it (EVALSHA miss, +1)
    const small = await measure("small");
    const big = await measure("big");
    expect(big).toEqual(small);
  }, 120_000);
});
