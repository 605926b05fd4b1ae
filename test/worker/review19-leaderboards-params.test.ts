/**
 * Review 19: query parameters a route does not name, on the leaderboards' reads and on the other
 * features' (the Worker's app in workerd, real Redis behind the local Upstash server, the test api's
 * fake clock). `GET /v1/leaderboards/{board}?extra=1` answered 200 as if `extra` were not there;
 * every other feature's reads (trending, counters, histograms, presence, webhooks, ingest, /healthz)
 * do the same: no route's query schema refuses a name it does not know (request bodies are strict,
 * queries are not). So leaderboards were not the odd one out, and the rule is pinned here for every
 * feature and written once in docs/architecture.md (Routes): an unknown query name is ignored, the
 * answer and its Redis cost are those of the request without it, and the names a route knows are
 * still checked with it present.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { cleanedUpAfterAll, createTestApi, type TestApi } from "../helpers/worker.ts";

const track = cleanedUpAfterAll<TestApi>();
let api: TestApi;
const admin = { key: "admin" } as const;
/** Names no route knows: a cache-buster, a tracking tag, a typo of a known option, a repeated one. */
const UNKNOWN = "extra=1&_=1732800000000&utm_source=mail&limt=5&x=1&x=2";

beforeAll(async () => {
  api = track(createTestApi({ label: "r19-params", start: "2026-11-10T10:00:00.000Z" }));
  const ok = (res: { status: number }) => expect(res.status).toBeLessThan(300);
  ok(await api.put("/v1/leaderboards/b", { reset: "weekly" }, admin));
  for (const [player, score] of [
    ["ada", 30],
    ["bob", 20],
    ["cy", 10],
  ] as const) {
    ok(await api.put(`/v1/leaderboards/b/players/${player}`, { name: player }));
    ok(await api.post(`/v1/leaderboards/b/players/${player}/score`, { set: score }));
  }
  ok(await api.post("/v1/trending/s/events", { member: "a" }));
  ok(await api.post("/v1/counters/c/incr", { member: "a", by: 2 }));
  ok(await api.put("/v1/histograms/h", { bucketWidth: 10 }, admin));
  ok(await api.post("/v1/histograms/h/observations", { value: 12 }));
  ok(await api.post("/v1/presence/r/heartbeats", { id: "a" }));
});

/** `path` with the unknown names appended to its query. */
const withUnknown = (path: string) => `${path}${path.includes("?") ? "&" : "?"}${UNKNOWN}`;

/** The read of `path` with the unknown names answers as without them: status, body and Redis commands. */
async function expectIgnored(path: string, read: (path: string) => ReturnType<TestApi["get"]>) {
  await read(path); // its script loaded first (a first EVALSHA is NOSCRIPT, then EVAL: one more round trip)
  const plain = await api.cost(() => read(path));
  const extra = await api.cost(() => read(withUnknown(path)));
  expect(plain.result.status, path).toBe(200);
  expect({ status: extra.result.status, body: extra.result.body }, withUnknown(path)).toEqual({
    status: plain.result.status,
    body: plain.result.body,
  });
  expect({ requests: extra.requests, commands: extra.commands }, path).toEqual({
    requests: plain.requests,
    commands: plain.commands,
  });
}

const get = (path: string) => api.get(path, admin);

/** `path` with the unknown names too is the 400 envelope on its known name `field` alone. */
async function expectRefused(path: string, field: string) {
  const res = await api.get(withUnknown(path), admin);
  expect(res.status).toBe(400);
  expect(res.body.error.code).toBe("invalid_request");
  expect(res.body.error.details.map((d: { path: string }) => d.path)).toEqual([field]);
}

describe("leaderboards' reads ignore a query name they do not know, as every feature's do", () => {
  it.each([
    "/v1/leaderboards",
    "/v1/leaderboards/b",
    "/v1/leaderboards/b?page=1&limit=2&season=current",
    "/v1/leaderboards/b/count",
    "/v1/leaderboards/b/players/bob",
    "/v1/leaderboards/b/players/bob/around?k=1",
    "/v1/leaderboards/b/seasons",
  ])("GET %s", async (path) => {
    await expectIgnored(path, get);
  });

  it("POST /v1/leaderboards/b/rank (a read with a body): its query's unknown names are ignored too", async () => {
    await expectIgnored("/v1/leaderboards/b/rank?season=current", (path) =>
      api.post(path, { players: ["cy", "ada", "nobody"] }, { key: "read" }),
    );
  });

  it("a known name is still checked beside unknown ones: a bad limit is the 400 envelope", async () => {
    await expectRefused("/v1/leaderboards/b?limit=0", "limit");
  });
});

describe("the other features' reads: the same rule", () => {
  it.each([
    "/v1/trending",
    "/v1/trending/s/top?n=5",
    "/v1/trending/s/members/a",
    "/v1/trending/s/rising",
    "/v1/trending/s/history?member=a",
    "/v1/counters",
    "/v1/counters/c/top",
    "/v1/counters/c/members/a",
    "/v1/counters/c/range",
    "/v1/counters/c/sorted",
    "/v1/histograms",
    "/v1/histograms/h",
    "/v1/presence",
    "/v1/presence/r",
    "/v1/presence/r/members",
    "/v1/presence/r/history",
    "/v1/webhooks",
    "/v1/ingest/lag",
  ])("GET %s", async (path) => {
    await expectIgnored(path, get);
  });

  it("a known name is still checked beside unknown ones on another feature: counters' n", async () => {
    await expectRefused("/v1/counters/c/top?n=0", "n");
  });
});
