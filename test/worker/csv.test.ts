import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApi } from "../helpers/worker.ts";
import { parseCsv } from "../helpers/csv.ts";

const api = createTestApi({ label: "csv" });
afterAll(() => api.cleanup());

const CSV = { accept: "text/csv" };

/** GET as CSV: checks the headers every CSV answer carries and returns its records. */
async function csv(path: string, filename: string) {
  const res = await api.get<string>(path, { headers: CSV });
  expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
  expect(res.headers.get("content-disposition")).toBe(`attachment; filename="${filename}"`);
  expect(res.headers.get("vary")).toMatch(/Accept/);
  expect(typeof res.body).toBe("string");
  return parseCsv(res.body);
}

beforeAll(async () => {
  const ok = (res: { status: number; body: unknown }) => expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
  ok(
    await api.post("/v1/trending/s1/events", {
      events: [
        { member: "a,b", count: 5 },
        { member: 'q"uote', count: 4 },
        { member: "=cmd|' /C calc'!A0", count: 3 },
        { member: "café ☕ 東京", count: 2 },
      ],
    }),
  );
  ok(
    await api.post("/v1/counters/c1/incr", {
      items: [
        { member: "m1", by: 5 },
        { member: "-m2", by: -3 },
        { member: "m3", by: 1 },
      ],
    }),
  );
  ok(await api.put("/v1/histograms/h1", { bucketWidth: 10, unit: "ms" }, { key: "admin" }));
  ok(await api.post("/v1/histograms/h1/observations", { values: [3, 12, 14] }));
  ok(await api.post("/v1/presence/r1/heartbeats", { ids: ["u1", "@u2"] }));
  ok(await api.post("/internal/jobs/trim", undefined, { key: "admin" }));
  ok(await api.put("/v1/leaderboards/b1/players/p1", { name: 'Ada, "the" first', score: 10 }));
  ok(await api.put("/v1/leaderboards/b1/players/p2", { name: "Bob", score: 20, meta: { country: "ES" } }));
});

describe("CSV export (Accept: text/csv)", () => {
  it("trending top: escaped members (comma, quote), unicode as UTF-8, formulas neutralised", async () => {
    const rows = await csv("/v1/trending/s1/top?n=10&window=1h", "trending-s1-top.csv");
    expect(rows).toEqual([
      ["rank", "member", "count"],
      ["1", "a,b", "5"],
      ["2", 'q"uote', "4"],
      ["3", "'=cmd|' /C calc'!A0", "3"],
      ["4", "café ☕ 東京", "2"],
    ]);
    // the raw text: quoted fields with doubled quotes
    const raw = (await api.get<string>("/v1/trending/s1/top?window=1h", { headers: CSV })).body;
    expect(raw).toContain('\r\n1,"a,b",5\r\n2,"q""uote",4\r\n');
    expect(new TextEncoder().encode(raw).length).toBeGreaterThan(raw.length);
  });

  it("costs what the JSON answer costs: one Redis round trip, the same read", async () => {
    const json = await api.cost(() => api.get("/v1/trending/s1/top?window=1h"));
    const asCsv = await api.cost(() => api.get("/v1/trending/s1/top?window=1h", { headers: CSV }));
    expect(asCsv.requests).toBe(1);
    expect(asCsv.requests).toBe(json.requests);
    expect(asCsv.commands).toBe(json.commands);
  });

  it("counters: top, bottom, range, sorted and the registry", async () => {
    expect(await csv("/v1/counters/c1/top?n=2", "counters-c1-top.csv")).toEqual([
      ["rank", "member", "score"],
      ["1", "m1", "5"],
      ["2", "m3", "1"],
    ]);
    expect(await csv("/v1/counters/c1/bottom?n=1", "counters-c1-bottom.csv")).toEqual([
      ["rank", "member", "score"],
      ["1", "'-m2", "-3"],
    ]);
    expect(await csv("/v1/counters/c1/range?min=0&max=%2Binf", "counters-c1-range.csv")).toEqual([
      ["member", "score"],
      ["m3", "1"],
      ["m1", "5"],
    ]);
    const sorted = await csv("/v1/counters/c1/sorted?by=score&order=desc", "counters-c1-sorted.csv");
    expect(sorted.map((r) => r[0])).toEqual(["member", "m1", "m3", "'-m2"]);
    const registry = await csv("/v1/counters", "counters.csv");
    expect(registry[0]).toEqual(["counter", "lastWriteAt"]);
    expect(registry.slice(1).map((r) => r[0])).toEqual(["c1"]);
    expect(Number(registry[1]![1])).toBeGreaterThan(0);
  });

  it("histograms: the buckets and the registry", async () => {
    expect(await csv("/v1/histograms/h1", "histograms-h1.csv")).toEqual([
      ["lower", "upper", "count"],
      ["0", "10", "1"],
      ["10", "20", "2"],
    ]);
    expect(await csv("/v1/histograms", "histograms.csv")).toEqual([["histogram"], ["h1"]]);
  });

  it("presence: members, history and the registry", async () => {
    const members = await csv("/v1/presence/r1/members", "presence-r1-members.csv");
    expect(members[0]).toEqual(["id", "lastSeen"]);
    expect(
      members
        .slice(1)
        .map((r) => r[0])
        .sort(),
    ).toEqual(["'@u2", "u1"]);
    expect(members.slice(1).every((r) => Number(r[1]) === api.now)).toBe(true);
    const history = await csv("/v1/presence/r1/history?hours=1", "presence-r1-history.csv");
    expect(history[0]).toEqual(["at", "online"]);
    expect(history.slice(1).at(-1)?.[1]).toBe("2");
    expect(await csv("/v1/presence", "presence.csv")).toEqual([["room"], ["r1"]]);
  });

  it("leaderboards: a page, around a player, seasons (none: header only) and the registry", async () => {
    const page = await csv("/v1/leaderboards/b1?page=1&limit=10", "leaderboards-b1.csv");
    expect(page[0]).toEqual(["rank", "player", "name", "score", "previousRank", "bestRank"]);
    expect(page.slice(1).map((r) => r.slice(0, 4))).toEqual([
      ["1", "p2", "Bob", "20"],
      ["2", "p1", 'Ada, "the" first', "10"],
    ]);
    const around = await csv("/v1/leaderboards/b1/players/p1/around?k=1", "leaderboards-b1-players-p1-around.csv");
    expect(around.slice(1).map((r) => r[1])).toEqual(["p2", "p1"]);
    expect(await csv("/v1/leaderboards/b1/seasons", "leaderboards-b1-seasons.csv")).toEqual([
      ["id", "from", "to", "players", "top"],
    ]);
    expect(await csv("/v1/leaderboards", "leaderboards.csv")).toEqual([["board"], ["b1"]]);
  });

  it("paging the rows cannot hold rides in headers: Link rel=next (cursor or page) and X-Total-Count", async () => {
    const first = await api.get<string>("/v1/leaderboards/b1?page=1&limit=1", { headers: CSV });
    expect(first.headers.get("x-total-count")).toBe("2");
    expect(first.headers.get("link")).toBe('</v1/leaderboards/b1?page=2&limit=1>; rel="next"');
    const last = await api.get<string>("/v1/leaderboards/b1?page=2&limit=1", { headers: CSV });
    expect(
      parseCsv(last.body)
        .slice(1)
        .map((r) => r[1]),
    ).toEqual(["p1"]);
    expect(last.headers.get("link")).toBeNull();
    // a cursor list: the next page's URL holds the JSON answer's nextCursor, and reaches every id
    const json = await api.get<{ nextCursor: string }>("/v1/presence/r1/members?limit=1");
    const page = await api.get<string>("/v1/presence/r1/members?limit=1", { headers: CSV });
    const link = /^<([^>]+)>; rel="next"$/.exec(page.headers.get("link") ?? "")?.[1] ?? "";
    expect(new URL(link, "http://x").searchParams.get("cursor")).toBe(json.body.nextCursor);
    const rest = await api.get<string>(link, { headers: CSV });
    const ids = [...parseCsv(page.body).slice(1), ...parseCsv(rest.body).slice(1)].map((r) => r[0]);
    expect(ids.sort()).toEqual(["@u2", "u1"].map((id) => (id.startsWith("@") ? `'${id}` : id)).sort());
  });

  it("registries and lists of trending", async () => {
    expect(await csv("/v1/trending", "trending.csv")).toEqual([["stream"], ["s1"]]);
  });

  it("a GET that answers no list asked for CSV: 406 with the error envelope", async () => {
    for (const path of [
      "/v1/presence/r1",
      "/v1/counters/c1/members/m1",
      "/v1/leaderboards/b1/players/p1",
      "/v1/trending/s1/members/a%2Cb",
    ]) {
      const res = await api.get(path, { headers: CSV });
      expect(res.status, path).toBe(406);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      expect(res.body.error.code).toBe("not_acceptable");
      expect(res.body.error.message).toContain(new URL(path, "http://x").pathname);
    }
  });

  it("errors stay JSON, as they would without the header", async () => {
    const cases: [string, number, string?][] = [
      ["/v1/histograms/nope", 404],
      ["/v1/counters/c1/top?n=0", 400],
      ["/v1/trending/s1/top", 401, "none"],
    ];
    for (const [path, status, key] of cases) {
      const res = await api.get(path, { headers: CSV, ...(key ? { key } : {}) });
      expect(res.status, path).toBe(status);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      expect(res.body.error.code).toBeTypeOf("string");
    }
  });

  it("without Accept: text/csv the answer is the JSON it always was (with Vary: Accept on list routes)", async () => {
    for (const accept of [undefined, "*/*", "application/json", "application/json, text/csv"]) {
      const res = await api.get("/v1/counters/c1/top?n=1", accept ? { headers: { accept } } : undefined);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      expect(res.body.items).toEqual([{ rank: 1, member: "m1", score: 5 }]);
      expect(res.headers.get("vary")).toMatch(/Accept/);
    }
    // writes ignore the header
    const write = await api.post("/v1/counters/c9/incr", { member: "x" }, { headers: CSV });
    expect(write.status).toBe(200);
    expect(write.body.results).toEqual([{ member: "x", score: 1 }]);
  });

  it("describes the CSV form in the OpenAPI document", async () => {
    const doc = (await api.get("/openapi.json", { key: "none" })).body;
    for (const path of [
      "/v1/trending/{stream}/top",
      "/v1/counters/{counter}/top",
      "/v1/histograms/{histogram}",
      "/v1/presence/{room}/members",
      "/v1/leaderboards/{board}",
    ]) {
      expect(Object.keys(doc.paths[path].get.responses["200"].content), path).toContain("text/csv");
    }
    expect(Object.keys(doc.paths["/v1/presence/{room}"].get.responses["200"].content)).not.toContain("text/csv");
    expect(doc.info.description).toContain("text/csv");
  });
});
