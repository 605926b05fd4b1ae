import { afterAll, describe, expect, it } from "vitest";
import { createTestApi, type TestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "leaderboards" });
afterAll(() => api.cleanup());

const base = "/v1/leaderboards";
const join = (board: string, player: string, body: Record<string, unknown> = { name: player }) =>
  api.put(`${base}/${board}/players/${player}`, body);
const score = (board: string, player: string, body: Record<string, unknown>) =>
  api.post(`${base}/${board}/players/${player}/score`, body);

async function joinMany(t: TestApi, board: string, count: number) {
  for (let i = 0; i < count; i += 25) {
    await Promise.all(
      Array.from({ length: Math.min(25, count - i) }, (_, j) => {
        const n = i + j;
        // distinct scores: p000 highest
        return t.put(`${base}/${board}/players/p${String(n).padStart(3, "0")}`, {
          name: `Player ${n}`,
          score: 10_000 - n,
        });
      }),
    );
  }
}

describe("the post's operations", () => {
  it("joins, increments, scores, ranks, counts, lists and removes", async () => {
    const first = await join("g1", "alice", { name: "Alice", meta: { country: "ES" } });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      created: true,
      player: "alice",
      name: "Alice",
      meta: { country: "ES" },
      score: 0,
      rank: 1,
      joinedAt: api.now,
    });
    api.advance(1000);
    expect((await join("g1", "bob", { name: "Bob", score: 5 })).status).toBe(201);

    const inc = await score("g1", "alice", { by: 7 });
    expect(inc.status).toBe(200);
    expect(inc.body).toEqual({ score: 7, rank: 1 });
    expect((await score("g1", "alice", { by: -3 })).body).toEqual({ score: 4, rank: 2 });

    const bob = await api.get(`${base}/g1/players/bob`);
    expect(bob.status).toBe(200);
    expect(bob.body).toEqual({
      player: "bob",
      name: "Bob",
      meta: null,
      score: 5,
      rank: 1,
      joinedAt: api.now,
      percentile: 50,
      total: 2,
      previousRank: null,
      bestRank: 1,
      season: null,
    });

    const page = await api.get(`${base}/g1?page=1&limit=10`);
    expect(page.status).toBe(200);
    expect(page.body).toEqual({
      items: [
        { rank: 1, player: "bob", name: "Bob", score: 5, previousRank: null, bestRank: 1 },
        { rank: 2, player: "alice", name: "Alice", score: 4, previousRank: null, bestRank: 1 },
      ],
      total: 2,
      page: 1,
      limit: 10,
      ties: "joined",
      season: null,
    });
    expect((await api.get(`${base}/g1/count`)).body).toMatchObject({ board: "g1", players: 2, ties: "joined" });

    expect((await api.del(`${base}/g1/players/alice`)).status).toBe(204);
    expect((await api.get(`${base}/g1/players/alice`)).status).toBe(404);
    expect((await api.get(`${base}/g1`)).body.total).toBe(1);
    expect((await api.del(`${base}/g1/players/alice`)).status).toBe(204); // idempotent
    expect((await score("g1", "alice", { by: 1 })).status).toBe(404);
  });

  it("joining again replaces the profile but never resets the score or join time", async () => {
    const first = await join("g2", "carol", { name: "Carol", score: 40 });
    api.advance(5000);
    await score("g2", "carol", { by: 2 });
    const again = await join("g2", "carol", { name: "Caroline", meta: { level: 3 }, score: 0 });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ created: false, name: "Caroline", score: 42, joinedAt: first.body.joinedAt });
    expect((await api.get(`${base}/g2/players/carol`)).body).toMatchObject({
      name: "Caroline",
      meta: { level: 3 },
      score: 42,
    });
  });

  it("sets scores with replace and best", async () => {
    await join("g3", "dan", { name: "Dan", score: 50 });
    expect((await score("g3", "dan", { set: 30, mode: "best" })).body.score).toBe(50);
    expect((await score("g3", "dan", { set: 70, mode: "best" })).body.score).toBe(70);
    expect((await score("g3", "dan", { set: 30 })).body.score).toBe(30);
    expect((await score("g3", "dan", { set: -12.5, mode: "replace" })).body.score).toBe(-12.5);
  });

  it("applies a batch of changes atomically, refusing it whole on one unknown player", async () => {
    await join("g4", "a", { name: "A" });
    await join("g4", "b", { name: "B" });
    const ok = await api.post(`${base}/g4/scores`, {
      items: [
        { player: "a", by: 3 },
        { player: "b", set: 9 },
        { player: "a", by: 1 },
      ],
    });
    expect(ok.status).toBe(200);
    expect(ok.body.results).toEqual([
      { player: "a", score: 3, rank: 2 },
      { player: "b", score: 9, rank: 1 },
      { player: "a", score: 4, rank: 2 },
    ]);
    const keysBefore = await api.keys();
    const bad = await api.post(`${base}/g4/scores`, {
      items: [
        { player: "a", by: 100 },
        { player: "ghost", by: 1 },
      ],
    });
    expect(bad.status).toBe(404);
    expect((await api.get(`${base}/g4/players/a`)).body.score).toBe(4);
    expect(await api.keys()).toEqual(keysBefore);
  });

  it("lists the boards that exist, most recently active first, and forgets deleted ones", async () => {
    const res = await api.get(base);
    expect(res.status).toBe(200);
    // all four were joined within the same fake millisecond: ties in reverse name order
    expect(res.body.boards).toEqual(["g4", "g3", "g2", "g1"]);
    expect(res.body).toMatchObject({ total: 4, next: null });
    await api.del(`${base}/g3`, { key: "admin" });
    expect((await api.get(base)).body.boards).toEqual(["g4", "g2", "g1"]);
  });
});

describe("ties", () => {
  it("joined (default): of equal scores the earlier joiner ranks higher, whoever got there first", async () => {
    await join("tj", "early", { name: "Early" });
    api.advance(1);
    await join("tj", "late", { name: "Late" });
    await score("tj", "late", { by: 10 }); // late reaches 10 first
    api.advance(1);
    await score("tj", "early", { by: 10 });
    const page = await api.get(`${base}/tj`);
    expect(page.body.items.map((r: any) => [r.rank, r.player, r.score])).toEqual([
      [1, "early", 10],
      [2, "late", 10],
    ]);
  });

  it("reached: whoever reached the score first ranks higher, and reaching it again counts anew", async () => {
    const created = await api.put(`${base}/tr`, { ties: "reached" }, { key: "admin" });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ board: "tr", ties: "reached", players: 0, created: true });
    await join("tr", "early", { name: "Early" });
    await join("tr", "late", { name: "Late" });
    await score("tr", "late", { by: 10 });
    await score("tr", "early", { set: 10, mode: "best" });
    let page = await api.get(`${base}/tr`);
    expect(page.body.ties).toBe("reached");
    expect(page.body.items.map((r: any) => r.player)).toEqual(["late", "early"]);
    // an unchanged score keeps its place in the tie order
    await score("tr", "late", { by: 0 });
    await score("tr", "late", { set: 5, mode: "best" });
    expect((await api.get(`${base}/tr`)).body.items.map((r: any) => r.player)).toEqual(["late", "early"]);
    // late leaves 10 and comes back: now early was there first
    await score("tr", "late", { by: 1 });
    await score("tr", "late", { by: -1 });
    page = await api.get(`${base}/tr`);
    expect(page.body.items.map((r: any) => [r.rank, r.player, r.score])).toEqual([
      [1, "early", 10],
      [2, "late", 10],
    ]);
    expect((await api.get(`${base}/tr/players/late`)).body.rank).toBe(2);
  });

  it("refuses to change the tie policy of a board with players, allows it on an empty one", async () => {
    const res = await api.put(`${base}/tr`, { ties: "joined" }, { key: "admin" });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("board_not_empty");
    expect((await api.put(`${base}/tr`, {}, { key: "admin" })).body).toMatchObject({
      ties: "reached",
      created: false,
      players: 2,
    });
    expect((await api.put(`${base}/tr`, { ties: "reached" }, { key: "admin" })).status).toBe(200);
    await api.put(`${base}/tempty`, undefined, { key: "admin" });
    expect((await api.put(`${base}/tempty`, { ties: "reached" }, { key: "admin" })).body.ties).toBe("reached");
  });
});

describe("pages and around-me", () => {
  it("serves limit 100, the last partial page and an empty page past the end", async () => {
    await joinMany(api, "big", 150);
    const first = await api.get(`${base}/big?page=1&limit=100`);
    expect(first.status).toBe(200);
    expect(first.body.items).toHaveLength(100);
    expect(first.body.total).toBe(150);
    expect(first.body.items[0]).toEqual({
      rank: 1,
      player: "p000",
      name: "Player 0",
      score: 10_000,
      previousRank: null,
      bestRank: 1,
    });
    expect(first.body.items[99]).toEqual({
      rank: 100,
      player: "p099",
      name: "Player 99",
      score: 9901,
      previousRank: null,
      bestRank: expect.any(Number),
    });
    const second = await api.get(`${base}/big?page=2&limit=100`);
    expect(second.body.items.map((r: any) => r.rank)).toEqual(Array.from({ length: 50 }, (_, i) => 101 + i));
    const past = await api.get(`${base}/big?page=3&limit=100`);
    expect(past.status).toBe(200);
    expect(past.body).toMatchObject({ items: [], total: 150, page: 3, limit: 100 });
    expect((await api.get(`${base}/big?limit=101`)).status).toBe(400);
    expect((await api.get(`${base}/big?page=0`)).status).toBe(400);
    expect((await api.get(`${base}/nosuchboard`)).status).toBe(404);
  });

  it("returns k rows above and below, fewer at the top and bottom", async () => {
    const mid = await api.get(`${base}/big/players/p050/around?k=2`);
    expect(mid.status).toBe(200);
    expect(mid.body.rank).toBe(51);
    expect(mid.body.items.map((r: any) => [r.rank, r.player])).toEqual([
      [49, "p048"],
      [50, "p049"],
      [51, "p050"],
      [52, "p051"],
      [53, "p052"],
    ]);
    const top = await api.get(`${base}/big/players/p000/around?k=3`);
    expect(top.body.items.map((r: any) => r.rank)).toEqual([1, 2, 3, 4]);
    const bottom = await api.get(`${base}/big/players/p149/around`);
    expect(bottom.body.items.map((r: any) => r.rank)).toEqual([145, 146, 147, 148, 149, 150]);
    expect(bottom.body.items[5]).toEqual({
      rank: 150,
      player: "p149",
      name: "Player 149",
      score: 9851,
      previousRank: null,
      bestRank: expect.any(Number),
    });
    expect((await api.get(`${base}/big/players/nobody/around`)).status).toBe(404);
    expect((await api.get(`${base}/big/players/p000/around?k=51`)).status).toBe(400);
  });
});

describe("atomicity and precision", () => {
  it("sums 200 concurrent increments on one player exactly", async () => {
    await join("race", "hot", { name: "Hot" });
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => score("race", "hot", { by: i + 1 })));
    expect(results.every((r) => r.status === 200)).toBe(true);
    // every intermediate total is distinct and the last one is the full sum: nothing lost
    const totals = new Set(results.map((r) => r.body.score));
    expect(totals.size).toBe(200);
    expect((await api.get(`${base}/race/players/hot`)).body.score).toBe((200 * 201) / 2);
  });

  it("keeps integer scores exact up to ±1e15 and refuses to leave that range", async () => {
    await join("exact", "max", { name: "Max", score: 1e15 - 1 });
    expect((await score("exact", "max", { by: 1 })).body.score).toBe(1e15);
    const keysBefore = await api.keys();
    const over = await score("exact", "max", { by: 1 });
    expect(over.status).toBe(400);
    expect((await api.get(`${base}/exact/players/max`)).body.score).toBe(1e15);
    expect(await api.keys()).toEqual(keysBefore);
    await join("exact", "min", { name: "Min", score: -1e15 + 3 });
    expect((await score("exact", "min", { by: -3 })).body.score).toBe(-1e15);
    expect((await score("exact", "min", { by: 999_999_999_999 })).body.score).toBe(-1e15 + 999_999_999_999);
    expect((await api.get(`${base}/exact`)).body.items.map((r: any) => r.player)).toEqual(["max", "min"]);
  });

  it("replays a score change sent again with the same Idempotency-Key", async () => {
    await join("idem", "x", { name: "X" });
    const headers = { "idempotency-key": "lb-inc-1" };
    const a = await api.post(`${base}/idem/players/x/score`, { by: 5 }, { headers });
    const b = await api.post(`${base}/idem/players/x/score`, { by: 5 }, { headers });
    expect(a.body).toEqual({ score: 5, rank: 1 });
    expect(b.body).toEqual(a.body);
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    expect((await api.get(`${base}/idem/players/x`)).body.score).toBe(5);
  });
  it("keeps no Idempotency-Key record for a refused change, so the retry is judged afresh", async () => {
    const headers = { "idempotency-key": "lb-refused-1" };
    await join("idem2", "x", { name: "X" });
    const idemKeys = async () => (await api.keys()).filter((k) => k.includes(":idem:"));
    const recorded = await idemKeys();
    const refused = await api.post(
      `${base}/idem2/scores`,
      {
        items: [
          { player: "x", by: 1 },
          { player: "ghost", by: 1 },
        ],
      },
      { headers },
    );
    expect(refused.status).toBe(404);
    expect(await idemKeys()).toEqual(recorded);
    await join("idem2", "ghost", { name: "Ghost" });
    const retried = await api.post(
      `${base}/idem2/scores`,
      {
        items: [
          { player: "x", by: 1 },
          { player: "ghost", by: 1 },
        ],
      },
      { headers },
    );
    expect(retried.status).toBe(200);
    expect(retried.headers.get("idempotent-replayed")).toBeNull();
    const replay = await api.post(
      `${base}/idem2/scores`,
      {
        items: [
          { player: "x", by: 1 },
          { player: "ghost", by: 1 },
        ],
      },
      { headers },
    );
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect((await api.get(`${base}/idem2/players/x`)).body.score).toBe(1);
  });
});

describe("board deletion", () => {
  it("leaves no key of the board behind and touches no other board", async () => {
    await api.put(`${base}/doomed`, { ties: "reached" }, { key: "admin" });
    await join("doomed", "a", { name: "A", meta: { x: 1 } });
    await join("doomed", "b", { name: "B" });
    await score("doomed", "a", { by: 3 });
    const before = await api.keys();
    expect(before.filter((k) => k.includes(":lb:doomed:")).length).toBe(4);
    expect((await api.del(`${base}/doomed`, { key: "ingest" })).status).toBe(403);
    expect((await api.del(`${base}/doomed`, { key: "admin" })).status).toBe(204);
    const after = await api.keys();
    expect(after.filter((k) => k.includes(":lb:doomed"))).toEqual([]);
    expect(after).toEqual(before.filter((k) => !k.includes(":lb:doomed:")));
    expect((await api.get(base)).body.boards).not.toContain("doomed");
    expect((await api.get(`${base}/doomed`)).status).toBe(404);
    expect((await api.get(`${base}/g2/players/carol`)).status).toBe(200);
    expect((await api.del(`${base}/doomed`, { key: "admin" })).status).toBe(204);
  });
});

describe("bad input", () => {
  it("answers 400 and writes nothing", async () => {
    const fresh = createTestApi({ label: "lb-bad" });
    try {
      const cases: [string, string, unknown, string?][] = [
        ["PUT", `${base}/-bad/players/p`, { name: "x" }],
        ["PUT", `${base}/b/players/has:colon`, { name: "x" }],
        ["PUT", `${base}/${"x".repeat(65)}/players/p`, { name: "x" }],
        ["PUT", `${base}/b/players/p`, {}],
        ["PUT", `${base}/b/players/p`, { name: "" }],
        ["PUT", `${base}/b/players/p`, { name: "a\u0001b" }],
        ["PUT", `${base}/b/players/p`, { name: "x", score: 1e16 }],
        ["PUT", `${base}/b/players/p`, { name: "x", score: "NaN" }],
        ["PUT", `${base}/b/players/p`, { name: "x", meta: [1, 2] }],
        ["PUT", `${base}/b/players/p`, { name: "x", meta: { big: "y".repeat(5000) } }],
        ["PUT", `${base}/b/players/p`, { name: "x", extra: 1 }],
        ["PUT", `${base}/b`, { ties: "first" }, "admin"],
        ["PUT", `${base}/b`, { ties: "joined", other: 1 }, "admin"],
        ["POST", `${base}/b/players/p/score`, { by: "NaN" }],
        ["POST", `${base}/b/players/p/score`, { by: 1e13 }],
        ["POST", `${base}/b/players/p/score`, { set: 1e300 }],
        ["POST", `${base}/b/players/p/score`, { set: 1, mode: "worst" }],
        ["POST", `${base}/b/players/p/score`, { by: 1, set: 2 }],
        ["POST", `${base}/b/players/p/score`, {}],
        ["POST", `${base}/b/scores`, { items: [] }],
        [
          "POST",
          `${base}/b/scores`,
          {
            items: [
              { player: "ok", by: 1 },
              { player: "bad name", by: 1 },
            ],
          },
        ],
        ["POST", `${base}/b/scores`, { items: Array.from({ length: 1001 }, () => ({ player: "p", by: 1 })) }],
      ];
      for (const [method, path, body, key] of cases) {
        const res = await fresh.call(method, path, body, key ? { key } : {});
        expect(res.status, `${method} ${path} ${JSON.stringify(body).slice(0, 80)}`).toBe(400);
        expect(res.body.error.code).toBe("invalid_request");
      }
      const raw = await fresh.post(`${base}/b/players/p/score`, undefined, {
        raw: '{"by": NaN}',
        headers: { "content-type": "application/json" },
      });
      expect(raw.status).toBe(400);
      // a meta JSON would not store as sent (a __proto__ key at any depth, a number past the
      // double range) is refused with the meta named, not stored changed
      for (const text of [
        '{"name":"x","meta":{"__proto__":{"a":1},"y":2}}',
        '{"name":"x","meta":{"a":[{"__proto__":1}]}}',
        '{"name":"x","meta":{"a":{"n":-1e400}}}',
      ]) {
        const res = await fresh.call("PUT", `${base}/b/players/p`, undefined, {
          raw: text,
          headers: { "content-type": "application/json" },
        });
        expect(res.status, text).toBe(400);
        expect(res.body.error).toMatchObject({ code: "invalid_request", details: [{ path: "meta" }] });
      }
      expect(await fresh.keys()).toEqual([]);
    } finally {
      await fresh.cleanup();
    }
  });
});

describe("scopes", () => {
  it("settings need admin; players join, score and leave with ingest; reads with read", async () => {
    const fresh = createTestApi({ label: "lb-scopes" });
    try {
      expect((await fresh.put(`${base}/s`, { ties: "reached" }, { key: "ingest" })).status).toBe(403);
      expect((await fresh.put(`${base}/s`, { ties: "reached" }, { key: "read" })).status).toBe(403);
      expect(await fresh.keys()).toEqual([]);
      expect((await fresh.put(`${base}/s/players/p`, { name: "P" }, { key: "read" })).status).toBe(403);
      expect((await fresh.put(`${base}/s/players/p`, { name: "P" }, { key: "ingest" })).status).toBe(201);
      expect((await fresh.post(`${base}/s/players/p/score`, { by: 1 }, { key: "ingest" })).status).toBe(200);
      expect((await fresh.get(`${base}/s/players/p`, { key: "ingest" })).status).toBe(403);
      expect((await fresh.get(`${base}/s/players/p`, { key: "read" })).body.score).toBe(1);
      expect((await fresh.del(`${base}/s/players/p`, { key: "read" })).status).toBe(403);
      expect((await fresh.del(`${base}/s/players/p`, { key: "ingest" })).status).toBe(204);
      expect((await fresh.get(`${base}/s/players/p`)).status).toBe(404);
    } finally {
      await fresh.cleanup();
    }
  });
});

describe("cost", () => {
  it("every endpoint is exactly one Redis round trip", async () => {
    const calls: [string, () => Promise<{ status: number }>, number][] = [
      ["configure", () => api.put(`${base}/costly`, {}, { key: "admin" }), 200],
      ["join", () => join("costly", "a", { name: "A" }), 200],
      ["score", () => score("costly", "a", { by: 1 }), 200],
      ["set", () => score("costly", "a", { set: 5, mode: "best" }), 200],
      [
        "batch",
        () =>
          api.post(`${base}/costly/scores`, {
            items: [
              { player: "a", by: 1 },
              { player: "a", by: 2 },
            ],
          }),
        200,
      ],
      ["get", () => api.get(`${base}/costly/players/a`), 200],
      ["around", () => api.get(`${base}/costly/players/a/around?k=3`), 200],
      ["page", () => api.get(`${base}/costly?limit=100`), 200],
      ["count", () => api.get(`${base}/costly/count`), 200],
      ["list", () => api.get(base), 200],
      ["remove", () => api.del(`${base}/costly/players/a`), 204],
      ["delete", () => api.del(`${base}/costly`, { key: "admin" }), 204],
    ];
    // warm the script cache (the first call after a flush pays the NOSCRIPT fallback)
    for (const [, call] of calls) await call();
    await join("costly", "a", { name: "A" });
    for (const [label, call, status] of calls) {
      const { result, requests } = await api.cost(call);
      expect(result.status, label).toBe(status);
      expect(requests, label).toBe(1);
    }
  });

  it("describes every leaderboard endpoint in the OpenAPI document", async () => {
    const doc = (await api.get("/openapi.json", { key: "none" })).body;
    for (const path of [
      "/v1/leaderboards",
      "/v1/leaderboards/{board}",
      "/v1/leaderboards/{board}/players/{player}",
      "/v1/leaderboards/{board}/players/{player}/score",
      "/v1/leaderboards/{board}/players/{player}/around",
      "/v1/leaderboards/{board}/scores",
      "/v1/leaderboards/{board}/count",
    ]) {
      expect(doc.paths[path], path).toBeDefined();
    }
    expect(doc.paths["/v1/leaderboards/{board}"].delete).toBeDefined();
    expect(doc.paths["/v1/leaderboards/{board}/players/{player}"].put.responses["201"]).toBeDefined();
    // v2: subset ranking, seasons, the season query, guards and the 422
    expect(doc.paths["/v1/leaderboards/{board}/rank"].post.requestBody).toBeDefined();
    expect(doc.paths["/v1/leaderboards/{board}/seasons"].get).toBeDefined();
    for (const path of [
      "/v1/leaderboards/{board}",
      "/v1/leaderboards/{board}/players/{player}",
      "/v1/leaderboards/{board}/players/{player}/around",
      "/v1/leaderboards/{board}/rank",
    ]) {
      const method = path.endsWith("/rank") ? "post" : "get";
      expect(
        doc.paths[path][method].parameters.map((p: { name: string }) => p.name),
        path,
      ).toContain("season");
    }
    const config = doc.components.schemas.LeaderboardConfig.properties;
    expect(Object.keys(config).sort()).toEqual([
      "keepSeasons",
      "maxIncrement",
      "maxScore",
      "minScore",
      "reset",
      "ties",
    ]);
    expect(doc.paths["/v1/leaderboards/{board}/players/{player}/score"].post.responses["422"]).toBeDefined();
    expect(doc.paths["/v1/leaderboards/{board}/scores"].post.responses["422"]).toBeDefined();
    expect(Object.keys(doc.components.schemas.LeaderboardPlayer.properties)).toEqual(
      expect.arrayContaining(["percentile", "total", "previousRank", "bestRank", "season"]),
    );
    expect(Object.keys(doc.components.schemas.LeaderboardRow.properties)).toEqual(
      expect.arrayContaining(["previousRank", "bestRank"]),
    );
  });
});
