/**
 * Review 23, leaderboards over HTTP (the Worker's app, real Redis behind the local Upstash server, the
 * test api's fake clock): the error envelope of every bad parameter (code and field), refusals that
 * write nothing, an absent player and board, a config change on a board with players, ties over
 * pages and around-me, and the season boundary at UTC midnight through the routes.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { cleanedUpAfterAll, createTestApi, type TestApi } from "../helpers/worker.ts";

const track = cleanedUpAfterAll<TestApi>();
let api: TestApi;
const admin = { key: "admin" } as const;

beforeAll(async () => {
  api = track(createTestApi({ label: "r23-lb", start: "2027-03-31T23:59:59.000Z" }));
  const ok = (res: { status: number }) => expect(res.status).toBeLessThan(300);
  ok(await api.put("/v1/leaderboards/b", {}, admin));
  for (const p of ["p0", "p1", "p2", "p3", "p4"]) {
    ok(await api.put(`/v1/leaderboards/b/players/${p}`, { name: p.toUpperCase(), score: 10 }));
    api.advance(1);
  }
});

describe("bad parameters: 400 invalid_request naming the field, nothing written", () => {
  const reads: [string, string][] = [
    ["/v1/leaderboards/b?page=", "page"],
    ["/v1/leaderboards/b?page=abc", "page"],
    ["/v1/leaderboards/b?page=0", "page"],
    ["/v1/leaderboards/b?limit=1.0", "limit"],
    ["/v1/leaderboards/b?limit=101", "limit"],
    ["/v1/leaderboards/b?limit=-1", "limit"],
    ["/v1/leaderboards/b?season=", "season"],
    ["/v1/leaderboards/b?season=2027-02-30", "season"],
    ["/v1/leaderboards/b/players/p0/around?k=51", "k"],
    ["/v1/leaderboards/b/players/p0/around?k=1e1", "k"],
    ["/v1/leaderboards/b/players/p0?season=nope", "season"],
  ];
  it.each(reads)("GET %s", async (path, field) => {
    const res = await api.get(path);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("invalid_request");
    expect(JSON.stringify(res.body.error.details ?? [])).toContain(field);
  });

  const writes: [string, unknown][] = [
    ["by as text", { by: "5" }],
    ["by and set", { by: 1, set: 2 }],
    ["mode without set", { by: 1, mode: "best" }],
    ["mode worst", { set: 1, mode: "worst" }],
    ["by past 1e12", { by: 1e13 }],
    ["set past 1e15", { set: 2e15 }],
    ["empty body", {}],
    ["unknown field", { by: 1, extra: true }],
  ];
  it.each(writes)("POST score %s", async (_label, body) => {
    const before = (await api.get("/v1/leaderboards/b/players/p0")).body.score;
    const res = await api.post("/v1/leaderboards/b/players/p0/score", body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("invalid_request");
    expect((await api.get("/v1/leaderboards/b/players/p0")).body.score).toBe(before);
  });

  it("PUT of the board with a bad keepSeasons, guard or ties is a 400 and keeps the settings", async () => {
    for (const body of [{ keepSeasons: 0 }, { maxIncrement: -1 }, { ties: "first" }, { minScore: 3, maxScore: 2 }]) {
      const res = await api.put("/v1/leaderboards/b", body, admin);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
    }
    expect((await api.get("/v1/leaderboards/b/count")).body).toMatchObject({
      keepSeasons: 12,
      maxIncrement: null,
      ties: "joined",
      minScore: null,
      maxScore: null,
    });
  });
});

describe("absent player and board, config on a board with players", () => {
  it("404 not_found for an absent player's read, around and score; 204 for its removal", async () => {
    for (const res of [
      await api.get("/v1/leaderboards/b/players/zz"),
      await api.get("/v1/leaderboards/b/players/zz/around"),
      await api.post("/v1/leaderboards/b/players/zz/score", { by: 1 }),
      await api.get("/v1/leaderboards/none"),
      await api.get("/v1/leaderboards/none/players/p0/around"),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe("not_found");
    }
    expect((await api.del("/v1/leaderboards/b/players/zz")).status).toBe(204);
    expect((await api.get("/v1/leaderboards/b")).body.total).toBe(5);
  });

  it("PUT reset on a board with players: 409 board_not_empty, nothing changed", async () => {
    const res = await api.put("/v1/leaderboards/b", { reset: "daily", keepSeasons: 3 }, admin);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("board_not_empty");
    expect((await api.get("/v1/leaderboards/b/count")).body).toMatchObject({ reset: "none", keepSeasons: 12 });
  });
});

describe("ties over pages and around-me", () => {
  it("equal scores rank by join order on every page and in around-me", async () => {
    const pages = [];
    for (let page = 1; page <= 3; page++)
      pages.push(...(await api.get(`/v1/leaderboards/b?limit=2&page=${page}`)).body.items);
    expect(pages.map((r: { player: string; rank: number }) => [r.player, r.rank])).toEqual([
      ["p0", 1],
      ["p1", 2],
      ["p2", 3],
      ["p3", 4],
      ["p4", 5],
    ]);
    const around = (await api.get("/v1/leaderboards/b/players/p4/around?k=2")).body;
    expect(around.rank).toBe(5);
    expect(around.items.map((r: { player: string }) => r.player)).toEqual(["p2", "p3", "p4"]);
  });
});

describe("season boundary through the routes", () => {
  it("a daily board: a write at 23:59:59.999 counts in the old day, one at 00:00 in the new", async () => {
    api.setNow("2027-03-31T23:59:59.999Z");
    expect((await api.put("/v1/leaderboards/d", { reset: "daily" }, admin)).status).toBe(200);
    expect((await api.put("/v1/leaderboards/d/players/a", { name: "A", score: 5 })).status).toBe(201);
    api.setNow("2027-04-01T00:00:00.000Z");
    const now = (await api.post("/v1/leaderboards/d/players/a/score", { by: 2 })).body;
    expect(now).toMatchObject({ score: 2, rank: 1 });
    expect((await api.get("/v1/leaderboards/d?season=previous")).body).toMatchObject({
      season: "2027-03-31",
      items: [expect.objectContaining({ player: "a", score: 5 })],
    });
    expect((await api.get("/v1/leaderboards/d/players/a")).body).toMatchObject({
      season: "2027-04-01",
      score: 2,
      previousRank: 1,
    });
  });
});

describe("CSV of a board", () => {
  it("a page as CSV: the rows of the JSON, formulas in names neutralised, negative and fractional scores as numbers", async () => {
    api.setNow("2027-05-01T10:00:00.000Z");
    await api.put("/v1/leaderboards/csv/players/x", { name: "=cmd()", score: -1.5 });
    await api.put("/v1/leaderboards/csv/players/y", { name: 'Y, the "second"', score: 1e15 });
    const json = (await api.get("/v1/leaderboards/csv")).body;
    const res = await api.get("/v1/leaderboards/csv", { headers: { accept: "text/csv" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/csv/);
    expect(res.headers.get("x-total-count")).toBe(String(json.total));
    expect(res.body).toBe(
      "rank,player,name,score,previousRank,bestRank\r\n" +
        '1,y,"Y, the ""second""",1000000000000000,,1\r\n' +
        "2,x,'=cmd(),-1.5,,1\r\n", // x was first when it joined: bestRank 1
    );
  });
});
