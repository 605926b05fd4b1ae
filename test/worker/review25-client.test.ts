/**
 * Review 25: `edgestats/client` against the Worker in workerd (the Hono app with the test bindings,
 * on the local Upstash server, through test/helpers/recording-fetch.ts), and the library
 * (`Edgestats`) on the same database and prefix. What a path parameter the URL cannot carry makes of
 * a call (an empty name changed the route: another route's answer, typed as this one's), a
 * `nextCursor` handed back as `cursor`, the health route's `deep`, every registry list paged by
 * cursor to its end (JSON and CSV), and the library next to the route on the same bad inputs (class,
 * code, field and its location). Each bug found was fixed in
 * review 25's second phase; the comment above its test says what was wrong, its severity and the fix.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { EdgestatsError, type CsvPage } from "../../src/client.ts";
import { Edgestats, type EdgestatsError as LibraryError } from "../../src/index.ts";
import { createRedis } from "../../src/redis/client.ts";
import { workerClient, type Sent } from "../helpers/recording-fetch.ts";
import { cleanedUpAfterAll, createTestApi, TEST_KEYS, type TestApi } from "../helpers/worker.ts";

const track = cleanedUpAfterAll<TestApi>();
const start = Date.UTC(2026, 10, 28, 12, 30);

/** The rejection of `pending` (the test fails if it resolves). */
async function refusal(pending: Promise<unknown>): Promise<EdgestatsError> {
  const outcome = await pending.then(
    (value) => ({ resolved: value }),
    (error: unknown) => ({ error }),
  );
  if ("resolved" in outcome) throw new Error(`resolved: ${JSON.stringify(outcome.resolved)?.slice(0, 200)}`);
  return outcome.error as EdgestatsError;
}

describe("a path parameter the URL cannot carry is refused before anything is sent", () => {
  let api: TestApi;
  let sent: Sent[];
  let client: ReturnType<typeof workerClient>;
  beforeAll(async () => {
    api = track(createTestApi({ label: "r25-empty", start }));
    sent = [];
    client = workerClient(api, sent);
    await client.presence.heartbeat("r", ["x"]);
    await client.leaderboards.join("b", "p1", { name: "P1" });
    await client.histograms.configure("h", { bucketWidth: 1 });
    await client.counters.incr("c", { member: "x" });
  });

  // Fixed (was medium): an empty name leaves an empty path segment, and the URL `/v1/presence/` is the room
  // list's (the router takes a trailing '/' as the same path): presence.room("") resolved with
  // `{ rooms, truncated, nextCursor }` typed as RoomStats (its `online` undefined), and likewise
  // leaderboards.page("") with the board list and histograms.read("") with the histogram list, so
  // a caller's bad input came back as a wrong answer, not an error. The dot segments were refused
  // before sending already (review 18); the fix: requestOf (src/client-http.ts) refuses an empty
  // path parameter the same way, 400 invalid_request at {in: "param", path: <name>}, nothing sent.
  it("presence.room(''), leaderboards.page(''), histograms.read(''): 400 invalid_request at the name, nothing sent", async () => {
    for (const [name, pending] of [
      ["room", client.presence.room("")],
      ["board", client.leaderboards.page("")],
      ["histogram", client.histograms.read("")],
    ] as const) {
      const before = sent.length;
      const error = await refusal(pending);
      expect(error, name).toBeInstanceOf(EdgestatsError);
      expect({ status: error.status, code: error.code }).toEqual({ status: 400, code: "invalid_request" });
      expect(error.details).toEqual([expect.objectContaining({ in: "param", path: name })]);
      expect(sent.length, `${name}: nothing sent`).toBe(before);
    }
  });

  // Fixed (was low): an empty member or id is a 404 "No route" on a GET (counters.member: the code a caller
  // reads as "no such member") or PUT, a 405 on a PUT of a board, histogram or webhook, where the
  // library (and the route, for a name it can carry) refuses it as invalid input. Same fix.
  it("an empty member, player, id or name on any other call: 400 invalid_request at it, nothing sent", async () => {
    const calls: [string, () => Promise<unknown>][] = [
      ["member", () => client.counters.member("c", "")],
      ["member", () => client.trending.member("s", "")],
      ["player", () => client.leaderboards.player("b", "")],
      ["player", () => client.leaderboards.join("b", "", { name: "Q" })],
      ["board", () => client.leaderboards.configure("")],
      ["histogram", () => client.histograms.configure("", { bucketWidth: 1 })],
      ["stream", () => client.trending.top("")],
      ["id", () => client.presence.leave("r", "")],
    ];
    for (const [name, pending] of calls) {
      const before = sent.length;
      const error = await refusal(pending());
      expect({ status: error.status, code: error.code }, name).toEqual({ status: 400, code: "invalid_request" });
      expect(error.details).toEqual([expect.objectContaining({ in: "param", path: name })]);
      expect(sent.length, `${name}: nothing sent`).toBe(before);
    }
  });

  // Fixed (was low): "_total" is no room name (API.md: GET /v1/presence/_total is the site-wide total), but
  // presence.room("_total") resolved with the site total (`SiteTotal`) typed as RoomStats, while
  // the library refuses `presence("_total")` at `room`. Fix: the client checks a name parameter
  // (stream, counter, histogram, room, board, player, webhook) against the contract's name pattern,
  // with the route's refusal, before sending.
  it("presence.room('_total'): refused as the library refuses it, at `room`, nothing sent", async () => {
    const before = sent.length;
    const error = await refusal(client.presence.room("_total"));
    expect({ status: error.status, code: error.code }).toEqual({ status: 400, code: "invalid_request" });
    expect(error.details).toEqual([expect.objectContaining({ in: "param", path: "room" })]);
    expect(sent.length).toBe(before);
  });

  it("the library refuses the same inputs (ValidationError at the name)", async () => {
    const lib = new Edgestats({
      redis: createRedis({ url: api.target.url, token: api.target.token }),
      prefix: api.prefix,
      clock: () => api.now,
    });
    for (const [path, pending] of [
      ["room", lib.presence("").stats()],
      ["room", lib.presence("_total").stats()],
      ["board", lib.leaderboard("").page()],
      ["histogram", lib.histogram("").read()],
      ["member", lib.counter("c").member("")],
    ] as const) {
      const error = (await refusal(pending)) as unknown as LibraryError;
      expect(error.code, path).toBe("invalid_request");
      expect(error.details).toEqual([expect.objectContaining({ in: "param", path })]);
    }
  });

  it("a member the URL can carry (with '/', '?', '#', '%2e%2e') travels encoded: the route's own 404", async () => {
    for (const member of ["x/y", "x?y", "x#y", "%2e%2e"]) {
      const error = await refusal(client.counters.member("c", member));
      expect({ status: error.status, code: error.code }).toEqual({ status: 404, code: "not_found" });
      expect(error.message).toContain(`'${member}'`);
    }
  });
});

describe("a refusal of the URL's path says so", () => {
  // Fixed (was low): DELETE …/members/ (a trailing '/') and a path whose percent-escapes are not
  // UTF-8 were refused with details `{ in: "json", path: "path" }`: the body, which a DELETE has
  // none of. Fix: functions/middleware/request.ts gives them `in: "param"`, where the path's are.
  it("a DELETE ending in '/' and a path with bad percent-escapes: details in the path", async () => {
    const api = track(createTestApi({ label: "r25-path", start }));
    const trailing = await api.del("/v1/counters/c/members/", { key: "admin" });
    expect(trailing.status).toBe(400);
    expect(trailing.body.error.details).toEqual([expect.objectContaining({ in: "param", path: "path" })]);
    const escapes = await api.get("/v1/counters/%FF/top");
    expect(escapes.status).toBe(400);
    expect(escapes.body.error.details).toEqual([expect.objectContaining({ in: "param", path: "path" })]);
  });
});

describe("cursors: every registry list and page, followed by `nextCursor` to its end", () => {
  let api: TestApi;
  let client: ReturnType<typeof workerClient>;
  const names = ["a1", "b2", "c3", "d4"];
  beforeAll(async () => {
    api = track(createTestApi({ label: "r25-cursors", start }));
    client = workerClient(api);
    for (const [i, n] of names.entries()) {
      // each name written at its own millisecond: the registries order by the last write
      api.setNow(start + i);
      await client.trending.record(n, { member: "x" });
      await client.counters.incr(n, { member: "x" });
      await client.histograms.configure(n, { bucketWidth: 1 });
      await client.histograms.observe(n, 1);
      await client.presence.heartbeat(n, ["x"]);
      await client.leaderboards.join(n, "p", { name: "P" });
      await client.presence.heartbeat("room", [n]);
    }
  });

  type Page = { nextCursor: string | null } & Record<string, unknown>;
  const lists: [string, (cursor?: string) => Promise<Page>, string][] = [
    ["trending", (cursor) => client.trending.page({ limit: 1, cursor }) as unknown as Promise<Page>, "streams"],
    ["counters", (cursor) => client.counters.list({ limit: 1, cursor }) as unknown as Promise<Page>, "counters"],
    ["histograms", (cursor) => client.histograms.list({ limit: 1, cursor }) as unknown as Promise<Page>, "histograms"],
    ["rooms", (cursor) => client.presence.list({ limit: 1, cursor }) as unknown as Promise<Page>, "rooms"],
    ["boards", (cursor) => client.leaderboards.list({ limit: 1, cursor }) as unknown as Promise<Page>, "boards"],
    [
      "members",
      (cursor) => client.presence.members("room", { limit: 1, cursor }) as unknown as unknown as Promise<Page>,
      "members",
    ],
  ];

  for (const [label, page, field] of lists) {
    it(`${label}: a pass with limit 1 lists each name once`, async () => {
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < 20; i++) {
        const answer = await page(cursor);
        for (const row of answer[field] as (string | { id: string })[])
          seen.push(typeof row === "string" ? row : row.id);
        if (answer.nextCursor === null) break;
        cursor = answer.nextCursor;
      }
      const expected = label === "rooms" ? [...names, "room"] : names;
      expect([...seen].sort()).toEqual([...expected].sort());
    });
  }

  it("histograms: the list is most recently written first (the registry's order), page by page", async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      const answer = await client.histograms.list({ limit: 1, ...(cursor ? { cursor } : {}) });
      seen.push(...answer.histograms);
      if (answer.nextCursor === null) break;
      cursor = answer.nextCursor;
    }
    expect(seen).toEqual([...names].reverse());
  });

  it("CSV: `next` of each page, sent back as the query, reaches the same names", async () => {
    for (const [label, list] of [
      ["counters", (q: Record<string, string>) => client.counters.list(q as never, { format: "csv", paging: true })],
      [
        "histograms",
        (q: Record<string, string>) => client.histograms.list(q as never, { format: "csv", paging: true }),
      ],
      ["boards", (q: Record<string, string>) => client.leaderboards.list(q as never, { format: "csv", paging: true })],
      ["rooms", (q: Record<string, string>) => client.presence.list(q as never, { format: "csv", paging: true })],
    ] as const) {
      const seen: string[] = [];
      let query: Record<string, string> | null = { limit: "1" };
      for (let i = 0; query && i < 20; i++) {
        const { csv, next }: CsvPage = await list(query);
        seen.push(
          ...csv
            .split("\r\n")
            .slice(1)
            .filter(Boolean)
            .map((line) => line.split(",")[0]!),
        );
        query = next;
      }
      const expected = label === "rooms" ? [...names, "room"] : names;
      expect([...seen].sort(), label).toEqual([...expected].sort());
    }
  });

  // Fixed (was low): a pass written `list({ cursor: page.nextCursor })` sends the last page's null as the text
  // "null" (requestOf leaves out undefined values only): 400 "not a cursor of this endpoint" where
  // the caller meant "from the start". The query types say `cursor?: string`, but `nextCursor` is
  // `string | null` and a JS caller (or one past `as`) passes it on. Fix: requestOf leaves out null
  // values too (and the query types take `null`), as the routes take an empty `cursor=`.
  it("a null cursor (the last page's nextCursor) is left out: the first page", async () => {
    const first = await client.counters.list({ limit: 1 });
    const again = await client.counters.list({ limit: 1, cursor: null });
    expect(again).toEqual(first);
  });
});

describe("health", () => {
  // Fixed (was low): GET /healthz takes `deep=1` (any API key: also PING Redis; its OpenAPI query), but
  // `health()` has no way to send it, so a client with an ingest key (a writer's, the one most
  // often deployed) never gets the Redis check the route offers it. Fix: `health({ deep: true })`
  // (CallOptions & { deep?: boolean }) sends `?deep=1`.
  it("health({ deep: true }) with an ingest key sends deep=1 and gets the Redis check", async () => {
    const api = track(createTestApi({ label: "r25-health", start }));
    const sent: Sent[] = [];
    const ingest = workerClient(api, sent, { key: TEST_KEYS.ingest });
    const answer = await ingest.health({ deep: true });
    expect(sent.at(-1)!.url).toMatch(/\/healthz\?deep=1$/);
    expect(answer.redis?.ok).toBe(true);
  });

  it("health() with an ingest key: the Worker alone, no Redis check; with the admin key, the check", async () => {
    const api = track(createTestApi({ label: "r25-health2", start }));
    expect(await workerClient(api, [], { key: TEST_KEYS.ingest }).health()).toEqual({ ok: true });
    const admin = await workerClient(api).health();
    expect(admin.redis?.ok).toBe(true);
  });
});

describe("the library next to the route: the same bad input, the same class, code and field", () => {
  let api: TestApi;
  let lib: Edgestats;
  beforeAll(() => {
    api = track(createTestApi({ label: "r25-parity", start }));
    lib = new Edgestats({
      redis: createRedis({ url: api.target.url, token: api.target.token }),
      prefix: api.prefix,
      clock: () => api.now,
    });
  });

  const cases: [
    string,
    (lib: Edgestats) => Promise<unknown>,
    (api: TestApi) => Promise<{ status: number; body: any }>,
  ][] = [
    [
      "trending at ahead",
      (l) => l.trending("s").record({ member: "a", at: start + 3_600_000 }),
      (a) => a.post("/v1/trending/s/events", { member: "a", at: start + 3_600_000 }),
    ],
    ["trending top n", (l) => l.trending("s").top({ n: 1001 }), (a) => a.get("/v1/trending/s/top?n=1001")],
    [
      "trending history hours",
      (l) => l.trending("s").history("a", { hours: 0 }),
      (a) => a.get("/v1/trending/s/history?member=a&hours=0"),
    ],
    [
      "counter by",
      (l) => l.counter("c").incr({ member: "a", by: 1e13 }),
      (a) => a.post("/v1/counters/c/incr", { member: "a", by: 1e13 }),
    ],
    [
      "counter ttl",
      (l) => l.counter("c").incr({ member: "a", ttl: 1.5 }),
      (a) => a.post("/v1/counters/c/incr", { member: "a", ttl: 1.5 }),
    ],
    [
      "counter from>to",
      (l) => l.counter("c").top({ period: "day", from: "2026-11-07", to: "2026-11-01" }),
      (a) => a.get("/v1/counters/c/top?period=day&from=2026-11-07&to=2026-11-01"),
    ],
    ["counter range min", (l) => l.counter("c").range({ min: "abc" }), (a) => a.get("/v1/counters/c/range?min=abc")],
    ["counter list cursor", (l) => l.counters({ cursor: "zzz" }), (a) => a.get("/v1/counters?cursor=zzz")],
    [
      "histogram bucketWidth",
      (l) => l.histogram("h").configure({ bucketWidth: 0 }),
      (a) => a.put("/v1/histograms/h", { bucketWidth: 0 }, { key: "admin" }),
    ],
    ["histogram list cursor", (l) => l.histograms({ cursor: "zzz" }), (a) => a.get("/v1/histograms?cursor=zzz")],
    ["presence day", (l) => l.presence("r").day("2026-13-01"), (a) => a.get("/v1/presence/r?day=2026-13-01")],
    [
      "presence members cursor",
      (l) => l.presence("r").members({ cursor: "zzz" }),
      (a) => a.get("/v1/presence/r/members?cursor=zzz"),
    ],
    [
      "board min>max",
      (l) => l.leaderboard("b").configure({ minScore: 5, maxScore: 1 }),
      (a) => a.put("/v1/leaderboards/b", { minScore: 5, maxScore: 1 }, { key: "admin" }),
    ],
    [
      "board season",
      (l) => l.leaderboard("b").page({ season: "nope" }),
      (a) => a.get("/v1/leaderboards/b?season=nope"),
    ],
    [
      "board rank player",
      (l) => l.leaderboard("b").rank(["-x"]),
      (a) => a.post("/v1/leaderboards/b/rank", { players: ["-x"] }, { key: "read" }),
    ],
    ["histogram absent", (l) => l.histogram("hx").read(), (a) => a.get("/v1/histograms/hx")],
    [
      "player absent",
      (l) => l.leaderboard("b2").score("q", { by: 1 }),
      (a) => a.post("/v1/leaderboards/b2/players/q/score", { by: 1 }),
    ],
  ];

  for (const [label, viaLib, viaHttp] of cases) {
    it(`${label}`, async () => {
      const error = (await refusal(viaLib(lib) as Promise<unknown>)) as unknown as LibraryError;
      const http = await viaHttp(api);
      const status = { ValidationError: 400, NotFoundError: 404 }[error.constructor.name];
      expect(http.status).toBe(status);
      expect(http.body.error.code).toBe(error.code);
      const where = (d: { in?: string; path: string }[] | undefined) => d?.map((x) => `${x.in}:${x.path}`);
      expect(where(http.body.error.details)).toEqual(where(error.details));
    });
  }
});
