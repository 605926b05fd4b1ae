/**
 * Issue 12 for leaderboards: what each scope may do (the scope table rows), a
 * registry that forgets empty boards and lists the most recently active first,
 * a page at a time.
 */
import { afterAll, describe, expect, it } from "vitest";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi, type TestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "lb-scope" });
afterAll(() => api.cleanup());

const base = "/v1/leaderboards";
const admin = { key: "admin" } as const;
const join = (board: string, player: string, body: Record<string, unknown> = { name: player }, on: TestApi = api) =>
  on.put(`${base}/${board}/players/${player}`, body);
const score = (board: string, player: string, body: Record<string, unknown>) =>
  api.post(`${base}/${board}/players/${player}/score`, body);
const boardKeys = async (board: string) => (await api.keys()).filter((k) => k.startsWith(`${api.prefix}:lb:${board}:`));

/** A board as the API shows it, plus its raw keys, to prove a refused request changed nothing. */
async function snapshot(board: string) {
  return {
    page: (await api.get(`${base}/${board}?limit=100`)).body,
    count: (await api.get(`${base}/${board}/count`)).body,
    keys: await boardKeys(board),
  };
}

describe("scope: what an ingest or read key can do to a board", () => {
  it("scope: re-joining replaces the profile but never the score or join time", async () => {
    await join("profiles", "ann", { name: "Ann", score: 50 });
    api.advance(1000);
    const again = await join("profiles", "ann", { name: "Ann B.", meta: { team: "x" }, score: 0 });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ created: false, name: "Ann B.", score: 50, rank: 1, joinedAt: api.now - 1000 });
    expect((await api.get(`${base}/profiles/players/ann`)).body).toMatchObject({
      name: "Ann B.",
      meta: { team: "x" },
      score: 50,
    });
  });

  it("scope: an ingest key's set (replace) may lower a score, as the contract's set and negative by do, and changes nothing else", async () => {
    await join("sets", "top", { name: "Top", score: 100 });
    await join("sets", "other", { name: "Other", score: 40 });
    const before = (await api.get(`${base}/sets/players/other`)).body;
    expect((await score("sets", "top", { set: 10 })).body).toEqual({ score: 10, rank: 2 });
    expect((await api.get(`${base}/sets/players/other`)).body).toEqual({
      ...before,
      rank: 1,
      percentile: 50,
      bestRank: 1,
    });
    // best never lowers
    expect((await score("sets", "top", { set: 5, mode: "best" })).body).toEqual({ score: 10, rank: 2 });
    expect((await score("sets", "top", { set: 90, mode: "best" })).body).toEqual({ score: 90, rank: 1 });
  });

  it("attack: an ingest key cannot delete a board or change its tie policy", async () => {
    await join("guarded", "p1", { name: "P1", score: 3 });
    const before = await snapshot("guarded");
    for (const res of [await api.del(`${base}/guarded`), await api.put(`${base}/guarded`, { ties: "reached" })]) {
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBeTypeOf("string");
    }
    expect(await snapshot("guarded")).toEqual(before);
  });

  it("attack: a read key cannot join, score, or remove a player", async () => {
    await join("readonly", "p1", { name: "P1", score: 3 });
    const before = await snapshot("readonly");
    const read = { key: "read" } as const;
    for (const res of [
      await api.put(`${base}/readonly/players/p2`, { name: "P2" }, read),
      await api.put(`${base}/readonly/players/p1`, { name: "Renamed" }, read),
      await api.post(`${base}/readonly/players/p1/score`, { set: 0 }, read),
      await api.post(`${base}/readonly/scores`, { player: "p1", by: -3 }, read),
      await api.del(`${base}/readonly/players/p1`, read),
    ]) {
      expect(res.status).toBe(403);
    }
    expect(await snapshot("readonly")).toEqual(before);
  });

  it("scope: an ingest key removes one player; a board an admin configured keeps its settings when the last one leaves", async () => {
    expect((await api.put(`${base}/configured`, { ties: "reached" }, admin)).status).toBe(200);
    await join("configured", "a", { name: "A", score: 1 });
    await join("configured", "b", { name: "B", score: 2 });
    expect((await api.del(`${base}/configured/players/a`)).status).toBe(204);
    expect((await api.get(`${base}/configured/players/b`)).body).toMatchObject({ score: 2, rank: 1 });
    expect((await api.get(base)).body.boards).toContain("configured");
    expect((await api.del(`${base}/configured/players/b`)).status).toBe(204);
    // empty: out of the list, settings kept
    expect((await api.get(base)).body.boards).not.toContain("configured");
    expect((await api.get(`${base}/configured/count`)).body).toMatchObject({ ties: "reached", players: 0 });
    api.advance(1);
    await join("configured", "c", { name: "C" });
    expect((await api.get(base)).body.boards[0]).toBe("configured");
  });

  it("attack: join and remove cycles on new boards leave nothing behind", async () => {
    const before = await api.keys();
    const listed = (await api.get(base)).body.total;
    for (let i = 0; i < 20; i++) {
      expect((await join(`churn-${i}`, "x", { name: "X", score: i })).status).toBe(201);
      expect((await api.del(`${base}/churn-${i}/players/x`)).status).toBe(204);
    }
    expect(await api.keys()).toEqual(before);
    expect((await api.get(base)).body.total).toBe(listed);
    expect((await api.get(`${base}/churn-0/count`)).status).toBe(404);
  });

  it("scores players whose entries predate the tie policy in the entry (read from the settings)", async () => {
    expect((await api.put(`${base}/legacy`, { ties: "reached" }, admin)).status).toBe(200);
    await join("legacy", "first", { name: "First" });
    await join("legacy", "second", { name: "Second" });
    // rewrite both entries the way older versions stored them: '<joinedAt>:<member>'
    const players = `${api.prefix}:lb:legacy:players`;
    for (const p of ["first", "second"]) {
      const entry = await command<string>(api.target, "HGET", players, p);
      await command(api.target, "HSET", players, p, entry.replace(/^(\d+)r:/, "$1:"));
    }
    await score("legacy", "second", { by: 5 });
    // reached: 'second' got to 5 first
    expect((await score("legacy", "first", { by: 5 })).body).toEqual({ score: 5, rank: 2 });
  });
});

describe("registry: lists recent activity first, pages, and cannot be flooded to hide a board", () => {
  const reg = createTestApi({ label: "lb-registry" });
  afterAll(() => reg.cleanup());

  it("attack: boards made in bulk cannot hide a live one: most recent activity first, offset and limit reach every board", async () => {
    await join("real", "p1", { name: "P1" }, reg);
    for (let i = 0; i < 30; i++) {
      reg.advance(1);
      await join(`flood-${String(i).padStart(2, "0")}`, "x", { name: "X" }, reg);
    }
    reg.advance(1);
    // a new player is activity: the real board is first again
    await join("real", "p2", { name: "P2" }, reg);
    const all = (await reg.get(base)).body;
    expect(all.total).toBe(31);
    expect(all.boards[0]).toBe("real");
    expect(all.boards[1]).toBe("flood-29");
    const pages: string[] = [];
    let offset: number | null = 0;
    while (offset !== null) {
      const page: { boards: string[]; next: number | null } = (await reg.get(`${base}?limit=7&offset=${offset}`)).body;
      expect(page.boards.length).toBeLessThanOrEqual(7);
      pages.push(...page.boards);
      offset = page.next;
    }
    expect(pages).toEqual(all.boards);
    for (const query of ["?limit=0", "?limit=1001", "?offset=-1"])
      expect((await reg.get(`${base}${query}`)).status, query).toBe(400);
  });
});
