/**
 * Review 15, leaderboards v2 over HTTP (the Worker in workerd, real Redis behind the local Upstash
 * server, the test api's fake clock): season rollover at the exact UTC instants (ISO week 53 and the
 * year change, leap February), kept seasons and reads of seasons past `keepSeasons`, the seasons list
 * after idle periods, guards on boards that already hold data, percentile/total/movement edges, the
 * subset ranking, CSV pages, an Idempotency-Key retry of a 422, scopes and command counts.
 */
import { describe, expect, it } from "vitest";
import { command } from "../helpers/upstash-rest.ts";
import { cleanedUpAfterAll, createTestApi, type TestApi } from "../helpers/worker.ts";

const track = cleanedUpAfterAll<TestApi>();
const newApi = (label: string, start: string) => track(createTestApi({ label, start }));
const base = "/v1/leaderboards";
const admin = { key: "admin" } as const;

type Api = TestApi;
const join = (api: Api, board: string, player: string, body: Record<string, unknown> = { name: player }) =>
  api.put(`${base}/${board}/players/${player}`, body);
const score = (api: Api, board: string, player: string, body: Record<string, unknown>) =>
  api.post(`${base}/${board}/players/${player}/score`, body);
const get = (api: Api, board: string, player: string, season = "current") =>
  api.get(`${base}/${board}/players/${player}?season=${season}`);
const page = (api: Api, board: string, season = "current", limit = 100, p = 1) =>
  api.get(`${base}/${board}?limit=${limit}&page=${p}&season=${season}`);
const order = (res: { body: { items: { player: string; score: number }[] } }) =>
  res.body.items.map((r) => [r.player, r.score]);
/**
 * The TTL Redis reports may be a second or two short of the one set, which is rounded up to whole
 * seconds (so a key may outlive its end by under a second). Redis counts real seconds: read a TTL
 * right after the write that set it, before moving the fake clock.
 */
function expectTtl(api: Api, ttl: number, until: string) {
  const set = Math.ceil((Date.parse(until) - api.now) / 1000);
  expect(ttl).toBeLessThanOrEqual(set);
  expect(ttl).toBeGreaterThanOrEqual(set - 2);
}
const ttlOf = (api: Api, board: string, season: string) =>
  command<number>(api.target, "TTL", `${api.prefix}:lb:${board}:ranking:${season}`);

describe("season rollover at the exact UTC instants", () => {
  it("weekly: 2026-W53 ends Sunday 2027-01-03 23:59:59.999; 2027-W01 begins Monday 00:00; previous, ids and TTL follow", async () => {
    const api = newApi("r15-w53", "2026-12-28T00:00:00.000Z"); // Monday of 2026-W53
    await api.put(`${base}/wk`, { reset: "weekly", keepSeasons: 2 }, admin);
    await join(api, "wk", "ann", { name: "Ann", score: 5 });
    await join(api, "wk", "bob", { name: "Bob", score: 9 });
    expect((await page(api, "wk")).body.season).toBe("2026-W53");
    // W53's key lives until 2 more weeks have begun after its end (2027-01-04 + 14 days)
    expectTtl(api, await ttlOf(api, "wk", "2026-W53"), "2027-01-18T00:00:00Z");
    api.setNow("2027-01-03T23:59:59.999Z"); // the year has changed, the ISO week has not
    expect((await score(api, "wk", "ann", { by: 10 })).body).toEqual({ score: 15, rank: 1 });
    expect((await page(api, "wk")).body.season).toBe("2026-W53");
    api.setNow("2027-01-04T00:00:00.000Z");
    expect((await page(api, "wk")).body).toMatchObject({ season: "2027-W01", items: [], total: 0 });
    expect(order(await page(api, "wk", "previous"))).toEqual([
      ["ann", 15],
      ["bob", 9],
    ]);
    expect((await page(api, "wk", "previous")).body.season).toBe("2026-W53");
    expect((await score(api, "wk", "bob", { by: 1 })).body).toEqual({ score: 1, rank: 1 });
    expect((await get(api, "wk", "bob")).body).toMatchObject({ previousRank: 2, bestRank: 1, season: "2027-W01" });
    expect((await get(api, "wk", "ann", "2026-W53")).body).toMatchObject({ score: 15, rank: 1, total: 2 });
    // 2027 has 52 ISO weeks, 2026 has 53
    expect((await page(api, "wk", "2027-W53")).status).toBe(400);
    expect((await page(api, "wk", "2026-W54")).status).toBe(400);
    const seasons = await api.get(`${base}/wk/seasons`);
    expect(seasons.body).toMatchObject({ reset: "weekly", current: "2027-W01" });
    expect(seasons.body.seasons.map((s: { id: string; from: number; to: number; players: number }) => s)).toEqual([
      {
        id: "2027-W01",
        from: Date.parse("2027-01-04T00:00:00Z"),
        to: Date.parse("2027-01-11T00:00:00Z"),
        players: 1,
        top: [{ rank: 1, player: "bob", name: "Bob", score: 1 }],
      },
      {
        id: "2026-W53",
        from: Date.parse("2026-12-28T00:00:00Z"),
        to: Date.parse("2027-01-04T00:00:00Z"),
        players: 2,
        top: [
          { rank: 1, player: "ann", name: "Ann", score: 15 },
          { rank: 2, player: "bob", name: "Bob", score: 9 },
        ],
      },
    ]);
  });

  it("daily across the year change: 2026-12-31 23:59:59.999 and 2027-01-01 00:00:00.000", async () => {
    const api = newApi("r15-ny", "2026-12-31T23:59:59.999Z");
    await api.put(`${base}/ny`, { reset: "daily" }, admin);
    await join(api, "ny", "a", { name: "A", score: 3 });
    expect((await get(api, "ny", "a")).body).toMatchObject({ score: 3, rank: 1, season: "2026-12-31" });
    api.setNow("2027-01-01T00:00:00.000Z");
    expect((await get(api, "ny", "a")).body).toMatchObject({
      score: 0,
      rank: null,
      percentile: null,
      previousRank: 1,
      season: "2027-01-01",
    });
    expect((await page(api, "ny", "previous")).body).toMatchObject({ season: "2026-12-31", total: 1 });
  });

  it("monthly and daily over a leap February: 2028-02-29 is a day and ends February; its key lives keepSeasons months", async () => {
    const api = newApi("r15-leap", "2028-02-29T23:59:59.999Z");
    await api.put(`${base}/mo`, { reset: "monthly", keepSeasons: 1 }, admin);
    await api.put(`${base}/dy`, { reset: "daily", keepSeasons: 1 }, admin);
    await join(api, "mo", "a", { name: "A", score: 7 });
    await join(api, "dy", "a", { name: "A", score: 7 });
    expect((await page(api, "mo")).body.season).toBe("2028-02");
    expect((await page(api, "dy")).body.season).toBe("2028-02-29");
    // February ends 2028-03-01; one more month kept: gone at 2028-04-01
    expectTtl(api, await ttlOf(api, "mo", "2028-02"), "2028-04-01T00:00:00Z");
    expectTtl(api, await ttlOf(api, "dy", "2028-02-29"), "2028-03-02T00:00:00Z");
    api.setNow("2028-03-01T00:00:00.000Z");
    expect((await page(api, "mo")).body).toMatchObject({ season: "2028-03", total: 0 });
    expect((await page(api, "dy")).body).toMatchObject({ season: "2028-03-01", total: 0 });
    expect((await page(api, "mo", "previous")).body).toMatchObject({ season: "2028-02", total: 1 });
    expect((await page(api, "dy", "previous")).body).toMatchObject({ season: "2028-02-29", total: 1 });
    expect((await page(api, "dy", "2028-02-29")).body.total).toBe(1);
    expect((await page(api, "dy", "2027-02-29")).status).toBe(400); // 2027 is not a leap year
    const seasons = (await api.get(`${base}/mo/seasons`)).body.seasons;
    expect(seasons).toEqual([
      {
        id: "2028-02",
        from: Date.parse("2028-02-01T00:00:00Z"),
        to: Date.parse("2028-03-01T00:00:00Z"),
        players: 1,
        top: [{ rank: 1, player: "a", name: "A", score: 7 }],
      },
    ]);
  });
});

describe("kept seasons and idle periods", () => {
  it("the seasons list after days without writes: only played seasons within keepSeasons; previousRank is of the day before, not of the last day played", async () => {
    const api = newApi("r15-idle", "2026-11-01T10:00:00.000Z");
    await api.put(`${base}/idle`, { reset: "daily", keepSeasons: 3 }, admin);
    await join(api, "idle", "a", { name: "A", score: 2 });
    await join(api, "idle", "b", { name: "B", score: 1 });
    api.setNow("2026-11-02T10:00:00.000Z");
    await score(api, "idle", "b", { by: 5 });
    api.setNow("2026-11-04T10:00:00.000Z"); // 11-01 is 3 seasons back: still kept
    let list = (await api.get(`${base}/idle/seasons`)).body;
    expect(list.current).toBe("2026-11-04");
    expect(list.seasons.map((s: { id: string; players: number }) => [s.id, s.players])).toEqual([
      ["2026-11-02", 1],
      ["2026-11-01", 2],
    ]);
    api.setNow("2026-11-09T10:00:00.000Z"); // a week idle: nothing within the kept window
    list = (await api.get(`${base}/idle/seasons`)).body;
    expect(list).toMatchObject({ current: "2026-11-09", seasons: [] });
    expect((await page(api, "idle", "previous")).body).toMatchObject({ season: "2026-11-08", items: [], total: 0 });
    // b's previous season is the 8th, which b did not play: previousRank null (not the 2nd's rank 1)
    expect((await score(api, "idle", "b", { by: 1 })).body).toEqual({ score: 1, rank: 1 });
    expect((await get(api, "idle", "b")).body).toMatchObject({ previousRank: null, bestRank: 1, percentile: 0 });
    expect((await get(api, "idle", "a")).body).toMatchObject({ score: 0, rank: null, previousRank: null });
  });

  it("a season id never played, or in the future, of the board's policy reads as empty (200), another policy's id 404", async () => {
    const api = newApi("r15-ids", "2026-11-10T10:00:00.000Z");
    await api.put(`${base}/ids`, { reset: "daily", keepSeasons: 1 }, admin);
    await join(api, "ids", "a", { name: "A", score: 1 });
    expect((await page(api, "ids", "2026-10-01")).body).toMatchObject({ items: [], total: 0, season: "2026-10-01" });
    expect((await page(api, "ids", "2030-01-01")).body).toMatchObject({ items: [], total: 0, season: "2030-01-01" });
    expect((await get(api, "ids", "a", "2026-10-01")).body).toMatchObject({ score: 0, rank: null });
    expect((await page(api, "ids", "2026-11")).status).toBe(404);
    expect((await page(api, "ids", "2026-W46")).status).toBe(404);
    expect((await get(api, "ids", "a", "2026-W46")).status).toBe(404);
    expect((await api.post(`${base}/ids/rank?season=2026-11`, { players: ["a"] }, { key: "read" })).status).toBe(404);
  });

  // Low: a season past keepSeasons is hidden from GET …/seasons at once, but `?season=<id>` reads it until
  // its key expires, and a key entered before keepSeasons was lowered keeps its longer lifetime (EXPIRE NX,
  // docs/leaderboards.md "Expiry"). Pinned as documented: the reads by id and the list disagree meanwhile.
  it("keepSeasons lowered on a board with data: the list follows at once, reads by id keep the data until the key's own TTL", async () => {
    const api = newApi("r15-keep", "2026-11-10T10:00:00.000Z");
    await api.put(`${base}/keep`, { reset: "daily", keepSeasons: 5 }, admin);
    await join(api, "keep", "a", { name: "A", score: 4 });
    const lifetime = await ttlOf(api, "keep", "2026-11-10");
    expectTtl(api, lifetime, "2026-11-16T00:00:00Z");
    api.setNow("2026-11-13T10:00:00.000Z");
    expect((await api.get(`${base}/keep/seasons`)).body.seasons.map((s: { id: string }) => s.id)).toEqual([
      "2026-11-10",
    ]);
    const put = await api.put(`${base}/keep`, { keepSeasons: 1 }, admin);
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ keepSeasons: 1, reset: "daily", players: 0 });
    expect((await api.get(`${base}/keep/seasons`)).body.seasons).toEqual([]);
    expect((await page(api, "keep", "2026-11-10")).body).toMatchObject({ total: 1, season: "2026-11-10" });
    // the key keeps the lifetime it got under keepSeasons 5 (Redis' clock did not move with the fake one)
    expect(await ttlOf(api, "keep", "2026-11-10")).toBeGreaterThanOrEqual(lifetime - 2);
    // one entered now gets the new one: the 13th ends, then one more day
    await score(api, "keep", "a", { by: 1 });
    expectTtl(api, await ttlOf(api, "keep", "2026-11-13"), "2026-11-15T00:00:00Z");
  });
});

describe("a player removed and joined again, read in a finished season", () => {
  // Medium-low: on a seasonal board (ties joined) a player who played yesterday, was removed today and
  // joined again has a new ranking member (a new join sequence). Yesterday's ranking still holds the old
  // member, so yesterday's page lists the player (rank 1, with the new profile's name), but every read
  // that goes through the player's entry looks for the new member there and finds nothing: GET …/players/a
  // ?season=previous answers score 0, rank null; POST …/rank?season=previous lists a as unknown; around-me
  // is empty; today's previousRank is null. The same symptom review 4 fixed for ties reached.
  // Smallest fix (src/leaderboards/scripts.ts, removeScript/joinScript; lua.ts memberIn): when a player
  // is removed, keep the member's sequence per kept season (e.g. a `_gone:<player>` field holding
  // `<sid>:<seq>` for e.sid, e.oldSid and e.past), and on the join of a new player seed the entry's
  // `<past>` from it (under ties joined too), so memberIn finds the row of every season still kept; or
  // make the page and the seasons list hide rows whose member is not the entry's (and document it).
  it("GET, POST …/rank and around-me of ?season=previous agree with that season's page", async () => {
    const api = newApi("r15-rejoin", "2026-11-10T10:00:00.000Z");
    await api.put(`${base}/rj`, { reset: "daily" }, admin);
    await join(api, "rj", "a", { name: "A", score: 5 });
    await join(api, "rj", "b", { name: "B", score: 3 });
    api.setNow("2026-11-11T10:00:00.000Z");
    expect((await api.del(`${base}/rj/players/a`)).status).toBe(204);
    expect((await join(api, "rj", "a", { name: "A2" })).status).toBe(201);
    const prev = await page(api, "rj", "previous");
    expect(
      prev.body.items.map((r: { player: string; rank: number; score: number }) => [r.player, r.rank, r.score]),
    ).toEqual([
      ["a", 1, 5],
      ["b", 2, 3],
    ]);
    const mine = await get(api, "rj", "a", "previous");
    const subset = await api.post(`${base}/rj/rank?season=previous`, { players: ["a", "b"] }, { key: "read" });
    const around = await api.get(`${base}/rj/players/a/around?k=1&season=previous`);
    const today = await get(api, "rj", "a");
    expect({
      mine: [mine.body.score, mine.body.rank, mine.body.total],
      subset: subset.body.items.map((r: { player: string; rank: number }) => [r.player, r.rank]),
      unknown: subset.body.unknown,
      around: around.body.rank,
      previousRank: today.body.previousRank,
    }).toEqual({
      mine: [5, 1, 2],
      subset: [
        ["a", 1],
        ["b", 2],
      ],
      unknown: [],
      around: 1,
      previousRank: 1,
    });
  });
});

describe("guards and the score 0 a player enters a season with", () => {
  // Pinned as is in review 15 (low, a question more than a bug): an existing player joining again entered
  // a new season at 0 and a `by: 0` did the same, so a season's page listed scores below minScore.
  // Changed in review 20 (test/redis/review20-leaderboards.test.ts): the entry at 0 is held to the guards,
  // as a new player's join is: the join again replaces the profile only (rank null), `by: 0` is a 422. On
  // a daily board with minScore 10, a player's first increment of each season must be ≥ 10.
  it("minScore 1: a new join without score is 422; an existing player's join again does not enter the new season at 0, by 0 is 422; by 5 from 0 is 422 under minScore 10", async () => {
    const api = newApi("r15-min0", "2026-11-10T10:00:00.000Z");
    await api.put(`${base}/m1`, { reset: "daily", minScore: 1 }, admin);
    const refused = await join(api, "m1", "n", { name: "N" });
    expect(refused.status).toBe(422);
    expect(refused.body.error.code).toBe("score_rejected");
    expect((await join(api, "m1", "x", { name: "X", score: 5 })).status).toBe(201);
    expect((await join(api, "m1", "y", { name: "Y", score: 6 })).status).toBe(201);
    api.setNow("2026-11-11T10:00:00.000Z");
    expect((await join(api, "m1", "x", { name: "X" })).body).toMatchObject({ score: 0, rank: null, created: false });
    const zero = await score(api, "m1", "y", { by: 0 });
    expect(zero.status).toBe(422);
    expect(zero.body.error.code).toBe("score_rejected");
    expect(order(await page(api, "m1"))).toEqual([]);
    expect((await score(api, "m1", "y", { by: 1 })).body).toEqual({ score: 1, rank: 1 });
    await api.put(`${base}/m10`, { reset: "daily", minScore: 10 }, admin);
    await join(api, "m10", "p", { name: "P", score: 10 });
    api.setNow("2026-11-12T10:00:00.000Z");
    expect((await score(api, "m10", "p", { by: 5 })).status).toBe(422);
    expect((await score(api, "m10", "p", { by: 10 })).body).toEqual({ score: 10, rank: 1 });
  });
});

describe("guards on a board that already holds data", () => {
  it("tightening guards keeps stored scores; maxIncrement bounds |by| both ways, never a set; min/max bound set and by", async () => {
    const api = newApi("r15-guards", "2026-11-10T10:00:00.000Z");
    await join(api, "gd", "hi", { name: "Hi", score: 500 });
    await join(api, "gd", "lo", { name: "Lo", score: -50 });
    const put = await api.put(`${base}/gd`, { minScore: 0, maxScore: 100, maxIncrement: 10 }, admin);
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ minScore: 0, maxScore: 100, maxIncrement: 10, players: 2 });
    // the stored scores stay as they were
    expect(order(await page(api, "gd"))).toEqual([
      ["hi", 500],
      ["lo", -50],
    ]);
    // a change that leaves a score outside is refused even towards the range; nothing written
    for (const body of [{ by: -1 }, { by: -10 }, { set: 101 }, { set: 99, mode: "best" }])
      expect((await score(api, "gd", "hi", body)).status, JSON.stringify(body)).toBe(body.set === 99 ? 200 : 422);
    // best 99 is not better than 500: not a change, not checked, nothing written
    expect((await get(api, "gd", "hi")).body.score).toBe(500);
    expect((await score(api, "gd", "lo", { by: 10 })).status).toBe(422); // -40 still below 0
    // a set jumps any distance: maxIncrement bounds increments only
    expect((await score(api, "gd", "hi", { set: 100 })).body).toEqual({ score: 100, rank: 1 });
    expect((await score(api, "gd", "lo", { set: 0 })).body).toEqual({ score: 0, rank: 2 });
    expect((await score(api, "gd", "lo", { by: 10 })).body).toEqual({ score: 10, rank: 2 });
    expect((await score(api, "gd", "lo", { by: 11 })).status).toBe(422);
    expect((await score(api, "gd", "hi", { by: -11 })).status).toBe(422);
    expect((await score(api, "gd", "hi", { by: -10 })).body).toEqual({ score: 90, rank: 1 });
    // the bounds themselves are inside
    expect((await score(api, "gd", "hi", { by: 10 })).body).toEqual({ score: 100, rank: 1 });
    expect((await score(api, "gd", "lo", { by: -10 })).body).toEqual({ score: 0, rank: 2 });
    // a join with a score outside is refused; an existing player's join ignores its score
    expect((await join(api, "gd", "new", { name: "N", score: 101 })).status).toBe(422);
    expect((await join(api, "gd", "new", { name: "N", score: -1 })).status).toBe(422);
    const again = await join(api, "gd", "hi", { name: "Hi2", score: 5000 });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ score: 100, created: false });
    expect((await api.get(`${base}/gd/count`)).body.players).toBe(2);
    // a join's score is a set: maxIncrement does not bound it, min/max do
    expect((await join(api, "gd", "big", { name: "Big", score: 100 })).body).toMatchObject({ score: 100, rank: 2 });
  });

  it("a seasonal batch (ties reached) with one bad item: 422 naming it; nobody enters the season, no sequence taken, no key written", async () => {
    const api = newApi("r15-batch", "2026-11-10T10:00:00.000Z");
    await api.put(`${base}/bt`, { reset: "daily", ties: "reached", minScore: -5, maxIncrement: 10 }, admin);
    for (const p of ["a", "b", "c"]) await join(api, "bt", p, { name: p.toUpperCase(), score: 1 });
    api.setNow("2026-11-11T00:00:00.000Z");
    const seq = () => command<string>(api.target, "HGET", `${api.prefix}:lb:bt:settings`, "seq");
    const players = () => command<string[]>(api.target, "HGETALL", `${api.prefix}:lb:bt:players`);
    const [seqBefore, playersBefore, keysBefore] = [await seq(), await players(), await api.keys()];
    const items = [
      { player: "a", by: 5 },
      { player: "b", set: 3 },
      { player: "c", by: -6 }, // enters at 0, would leave -6 < minScore -5
    ];
    const refused = await api.post(`${base}/bt/scores`, { items });
    expect(refused.status).toBe(422);
    expect(refused.body.error).toMatchObject({ code: "score_rejected", details: [{ path: "items.2" }] });
    expect(await seq()).toBe(seqBefore);
    expect(await players()).toEqual(playersBefore);
    expect((await api.keys()).sort()).toEqual(keysBefore.sort());
    expect((await page(api, "bt")).body).toMatchObject({ total: 0, season: "2026-11-11" });
    // the same batch with the bad item fixed goes through, ties by who reached the score first
    items[2] = { player: "c", by: 3 };
    const ok = await api.post(`${base}/bt/scores`, { items });
    expect(ok.status).toBe(200);
    expect(order(await page(api, "bt"))).toEqual([
      ["a", 5],
      ["b", 3],
      ["c", 3],
    ]);
  });

  it("reset and ties stay 409 while players remain, and change once the last one left; guards and keepSeasons change with data", async () => {
    const api = newApi("r15-reset", "2026-11-10T10:00:00.000Z");
    await api.put(`${base}/rs`, { reset: "weekly" }, admin);
    await join(api, "rs", "a", { name: "A", score: 1 });
    await score(api, "rs", "a", { by: 1 }); // a is #1: the board records its told leader
    expect((await api.put(`${base}/rs`, { reset: "monthly" }, admin)).status).toBe(409);
    expect((await api.put(`${base}/rs`, { ties: "reached" }, admin)).status).toBe(409);
    // the same reset again is not a change
    expect((await api.put(`${base}/rs`, { reset: "weekly", maxScore: 10, keepSeasons: 2 }, admin)).status).toBe(200);
    expect((await api.del(`${base}/rs/players/a`)).status).toBe(204);
    const changed = await api.put(`${base}/rs`, { reset: "daily", ties: "reached" }, admin);
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ reset: "daily", ties: "reached", keepSeasons: 2, maxScore: 10, players: 0 });
  });
});

describe("percentile, total, previousRank, bestRank", () => {
  it("one player, ties, a player who joined but has not played, a player who never joined", async () => {
    const api = newApi("r15-pct", "2026-11-10T10:00:00.000Z");
    await join(api, "pc", "solo", { name: "Solo", score: 5 });
    expect((await get(api, "pc", "solo")).body).toMatchObject({
      rank: 1,
      total: 1,
      percentile: 0,
      bestRank: 1,
      previousRank: null,
    });
    // three tied at 5: fair ties give distinct ranks, percentile counts the players ranked below
    await join(api, "pc", "t2", { name: "T2", score: 5 });
    await join(api, "pc", "t3", { name: "T3", score: 5 });
    const pcts = [];
    for (const p of ["solo", "t2", "t3"]) pcts.push((await get(api, "pc", p)).body);
    expect(pcts.map((b) => [b.rank, b.total, b.percentile])).toEqual([
      [1, 3, 66.66],
      [2, 3, 33.33],
      [3, 3, 0],
    ]);
    expect((await get(api, "pc", "nobody")).status).toBe(404);
    // seasonal: joined before, not played today
    await api.put(`${base}/pcs`, { reset: "daily" }, admin);
    await join(api, "pcs", "x", { name: "X", score: 1 });
    await join(api, "pcs", "y", { name: "Y", score: 2 });
    api.setNow("2026-11-11T10:00:00.000Z");
    await score(api, "pcs", "y", { by: 1 });
    expect((await get(api, "pcs", "x")).body).toMatchObject({
      score: 0,
      rank: null,
      percentile: null,
      total: 1,
      previousRank: 2,
      bestRank: null,
    });
    expect((await get(api, "pcs", "y")).body).toMatchObject({ rank: 1, total: 1, percentile: 0, previousRank: 1 });
  });
});

describe("subset ranking (POST …/rank)", () => {
  it("duplicates once, unknown in the order given, subsetRank over ties follows the board order; costs 4 + one ZRANK per ranked player", async () => {
    const api = newApi("r15-rank", "2026-11-10T10:00:00.000Z");
    for (const [p, s] of [
      ["a", 10],
      ["b", 20],
      ["c", 10],
      ["d", 20],
      ["e", 5],
    ] as const)
      await join(api, "sr", p, { name: p.toUpperCase(), score: s });
    const body = { players: ["c", "zz", "a", "c", "d", "yy", "zz"] };
    const first = await api.post(`${base}/sr/rank`, body, { key: "read" });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      items: [
        { player: "d", name: "D", score: 20, rank: 2, subsetRank: 1 },
        { player: "a", name: "A", score: 10, rank: 3, subsetRank: 2 },
        { player: "c", name: "C", score: 10, rank: 4, subsetRank: 3 },
      ],
      unknown: ["zz", "yy"],
      season: null,
    });
    const cost = await api.cost(() => api.post(`${base}/sr/rank`, body, { key: "read" }));
    expect({ requests: cost.requests, commands: cost.commands }).toEqual({ requests: 1, commands: 4 + 3 });
    // a read: an Idempotency-Key on it keeps no record (a read key writes nothing) and answers afresh
    const keysBefore = await api.keys();
    const keyed = { key: "read", headers: { "idempotency-key": "rank-1" } };
    expect((await api.post(`${base}/sr/rank`, { players: ["e"] }, keyed)).body.items[0]).toMatchObject({ rank: 5 });
    expect(await api.keys()).toEqual(keysBefore);
    await score(api, "sr", "e", { by: 100 });
    expect((await api.post(`${base}/sr/rank`, { players: ["e"] }, keyed)).body.items[0]).toMatchObject({ rank: 1 });
    // scopes: read and admin may; ingest may not
    expect((await api.post(`${base}/sr/rank`, body, { key: "admin" })).status).toBe(200);
    const ingest = await api.post(`${base}/sr/rank`, body, { key: "ingest" });
    expect(ingest.status).toBe(403);
    // size bounds: 1,000 names (duplicates too) are fine, 1,001 or none are a 400
    const many = Array.from({ length: 1000 }, (_, i) => `u${i % 400}`);
    const big = await api.post(`${base}/sr/rank`, { players: many }, { key: "read" });
    expect(big.status).toBe(200);
    expect(big.body.unknown.length).toBe(400);
    expect((await api.post(`${base}/sr/rank`, { players: [...many, "x"] }, { key: "read" })).status).toBe(400);
    expect((await api.post(`${base}/sr/rank`, { players: [] }, { key: "read" })).status).toBe(400);
    // no such board: 404; a board without seasons has no previous season: 404
    expect((await api.post(`${base}/nosuch/rank`, { players: ["a"] }, { key: "read" })).status).toBe(404);
    expect((await api.post(`${base}/sr/rank?season=previous`, { players: ["a"] }, { key: "read" })).status).toBe(404);
  });
});

describe("pages: fair ties across pages and CSV", () => {
  it("ties ordered by join (joined) and by who reached the score first (reached), the same in one page or pages of 1, JSON and CSV", async () => {
    const api = newApi("r15-pages", "2026-11-10T10:00:00.000Z");
    await api.put(`${base}/pr`, { ties: "reached" }, admin);
    for (const b of ["pj", "pr"]) for (const p of ["p1", "p2", "p3", "p4"]) await join(api, b, p, { name: `=${p}` });
    // p4 reaches 10 first, then p2, then p3; p1 stays at 0; p3 leaves 10 and comes back
    for (const b of ["pj", "pr"]) {
      await score(api, b, "p4", { by: 10 });
      await score(api, b, "p2", { set: 10 });
      await score(api, b, "p3", { by: 11 });
      await score(api, b, "p3", { by: -1 });
    }
    const want = {
      pj: ["p2", "p3", "p4", "p1"],
      pr: ["p4", "p2", "p3", "p1"],
    };
    for (const b of ["pj", "pr"] as const) {
      const whole = await page(api, b);
      expect(
        whole.body.items.map((r: { player: string }) => r.player),
        b,
      ).toEqual(want[b]);
      const one: string[] = [];
      for (let p = 1; p <= 5; p++)
        one.push(...(await page(api, b, "current", 1, p)).body.items.map((r: { player: string }) => r.player));
      expect(one, b).toEqual(want[b]);
      const csv = await api.get(`${base}/${b}?limit=2&page=2`, { headers: { accept: "text/csv" } });
      expect(csv.status).toBe(200);
      expect(csv.headers.get("content-type")).toMatch(/^text\/csv/);
      expect(csv.headers.get("x-total-count")).toBe("4");
      const rows = (await page(api, b, "current", 2, 2)).body.items;
      const lines = [
        "rank,player,name,score,previousRank,bestRank",
        ...rows.map(
          (r: { rank: number; player: string; name: string; score: number; bestRank: number | null }) =>
            `${r.rank},${r.player},'${r.name},${r.score},,${r.bestRank ?? ""}`,
        ),
      ];
      expect(csv.body).toBe(lines.map((l) => `${l}\r\n`).join(""));
    }
  });
});

describe("Idempotency-Key and scopes", () => {
  it("a 422 keeps no record: the retry after the guard is loosened is applied once, then replayed", async () => {
    const api = newApi("r15-idem", "2026-11-10T10:00:00.000Z");
    await api.put(`${base}/id`, { maxIncrement: 5 }, admin);
    await join(api, "id", "a", { name: "A" });
    const send = () => api.post(`${base}/id/players/a/score`, { by: 8 }, { headers: { "idempotency-key": "retry-8" } });
    const refused = await send();
    expect(refused.status).toBe(422);
    expect((await send()).status).toBe(422); // judged afresh, still refused
    await api.put(`${base}/id`, { maxIncrement: 10 }, admin);
    const applied = await send();
    expect(applied.status).toBe(200);
    expect(applied.body).toEqual({ score: 8, rank: 1 });
    const replay = await send();
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual({ score: 8, rank: 1 });
    expect((await get(api, "id", "a")).body.score).toBe(8);
  });

  it("an ingest or read key cannot change reset, keepSeasons or guards, nor list seasons with an ingest key", async () => {
    const api = newApi("r15-scope", "2026-11-10T10:00:00.000Z");
    await api.put(`${base}/sc`, { reset: "daily", keepSeasons: 3, maxScore: 10 }, admin);
    for (const key of ["ingest", "read"] as const) {
      for (const body of [{ reset: "none" }, { keepSeasons: 1 }, { maxScore: null }, {}])
        expect((await api.put(`${base}/sc`, body, { key })).status, `${key} ${JSON.stringify(body)}`).toBe(403);
      expect((await api.del(`${base}/sc`, { key })).status).toBe(403);
    }
    expect((await api.get(`${base}/sc/seasons`, { key: "ingest" })).status).toBe(403);
    expect((await api.get(`${base}/sc/count`)).body).toMatchObject({ reset: "daily", keepSeasons: 3, maxScore: 10 });
  });
});

describe("command counts against docs/costs.md", () => {
  it("seasons list: 2 + (keepSeasons + 1) + seasons played + 1; a refused write 3; a finished season's page pays a ZRANK per row", async () => {
    const api = newApi("r15-cost", "2026-11-10T10:00:00.000Z");
    await api.put(`${base}/cs`, { reset: "daily", keepSeasons: 4, maxIncrement: 5 }, admin);
    for (const p of ["a", "b", "c", "d"]) await join(api, "cs", p, { name: p, score: 1 });
    api.setNow("2026-11-11T10:00:00.000Z");
    await score(api, "cs", "a", { by: 1 });
    await api.get(`${base}/cs/seasons`);
    const list = await api.cost(() => api.get(`${base}/cs/seasons`));
    expect(list.result.body.seasons.length).toBe(2);
    expect([list.requests, list.commands]).toEqual([1, 2 + 5 + 2 + 1]);
    await score(api, "cs", "a", { by: 6 });
    const refused = await api.cost(() => score(api, "cs", "a", { by: 6 }));
    expect(refused.result.status).toBe(422);
    expect([refused.requests, refused.commands]).toEqual([1, 3]);
    // a finished season's page: a ZRANK per row whose entry no longer caches that season's
    // previousRank (a wrote in the 11th since), so 6 + 1 here and 6 + 4 once all four did
    await page(api, "cs", "previous");
    let prev = await api.cost(() => page(api, "cs", "previous"));
    expect(prev.result.body.items.length).toBe(4);
    expect([prev.requests, prev.commands]).toEqual([1, 6 + 1]);
    for (const p of ["b", "c", "d"]) await score(api, "cs", p, { by: 1 });
    prev = await api.cost(() => page(api, "cs", "previous"));
    expect([prev.requests, prev.commands]).toEqual([1, 6 + 4]);
    // docs/leaderboards.md's formulas give upper bounds: the seasons list skips the profiles' HMGET when
    // no season in the window was played (2 + (keepSeasons + 1), not + 1 more), and the subset ranking
    // of names nobody ranked in the season skips the ZRANKs and the profiles' HMGET
    api.setNow("2026-11-30T10:00:00.000Z");
    const idle = await api.cost(() => api.get(`${base}/cs/seasons`));
    expect(idle.result.body.seasons).toEqual([]);
    expect([idle.requests, idle.commands]).toEqual([1, 2 + 5]);
    const unplayed = await api.cost(() => api.post(`${base}/cs/rank`, { players: ["a", "b"] }, { key: "read" }));
    expect(unplayed.result.body).toMatchObject({ items: [], unknown: ["a", "b"] });
    expect([unplayed.requests, unplayed.commands]).toEqual([1, 3]); // EVALSHA, HMGET, ZMSCORE
    const strangers = await api.cost(() => api.post(`${base}/cs/rank`, { players: ["x"] }, { key: "read" }));
    expect(strangers.result.status).toBe(200);
    expect([strangers.requests, strangers.commands]).toEqual([1, 3]); // EVALSHA, HMGET, EXISTS
  });
});
