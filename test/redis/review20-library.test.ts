/**
 * Review 20: the library next to the service for the same bad input. The details of a 400 name
 * where each bad field was (`in`: "query" | "param" | "json", as functions/router.ts `refuse`
 * says it) and its path; the library's ValidationError carried `path` and `message` only, so a
 * caller that handles both (the client's errors and the library's) could not tell an option from
 * a name. Real redis-server behind the local Upstash server; the service is the real Hono app.
 */
import { describe, expect, it } from "vitest";
import { createApp } from "../../functions/app.ts";
import { Edgestats, ValidationError, type EdgestatsError } from "../../src/index.ts";
import { appHttp, libraryTest } from "../helpers/library.ts";

const lib = libraryTest("review20lib");
const KEYS = { ingest: "review20-ingest-key-01", read: "review20-read-key-0001", admin: "review20-admin-key-001" };
const now = Date.UTC(2026, 10, 28, 12, 30);
const app = createApp({ now: () => now });
const http = appHttp(app, lib.appEnv(KEYS), KEYS.admin);
const stats = new Edgestats({ redis: lib.redis, prefix: lib.ctx(now, "review20own").prefix, clock: () => now });

type Route = [method: string, path: string, body?: unknown];
interface Row {
  name: string;
  call: (s: Edgestats) => Promise<unknown>;
  route: Route;
}

const ROWS: Row[] = [
  { name: "trending.top n 0", call: (s) => s.trending("t").top({ n: 0 }), route: ["GET", "/v1/trending/t/top?n=0"] },
  {
    name: "trending.top window 0h",
    call: (s) => s.trending("t").top({ window: "0h" }),
    route: ["GET", "/v1/trending/t/top?window=0h"],
  },
  {
    name: "trending.rising baseline 8d",
    call: (s) => s.trending("t").rising({ baseline: "8d" }),
    route: ["GET", "/v1/trending/t/rising?baseline=8d"],
  },
  {
    name: "trending.history hours 0",
    call: (s) => s.trending("t").history("a", { hours: 0 }),
    route: ["GET", "/v1/trending/t/history?member=a&hours=0"],
  },
  { name: "streamPage limit 0", call: (s) => s.streamPage({ limit: 0 }), route: ["GET", "/v1/trending?limit=0"] },
  { name: "counter.top n 0", call: (s) => s.counter("c").top({ n: 0 }), route: ["GET", "/v1/counters/c/top?n=0"] },
  {
    name: "counter.range limit 0",
    call: (s) => s.counter("c").range({ limit: 0 }),
    route: ["GET", "/v1/counters/c/range?limit=0"],
  },
  {
    name: "counter.sorted order up",
    call: (s) => s.counter("c").sorted({ order: "up" as "asc" }),
    route: ["GET", "/v1/counters/c/sorted?order=up"],
  },
  {
    name: "counter.top period year",
    call: (s) => s.counter("c").top({ period: "year" as "day" }),
    route: ["GET", "/v1/counters/c/top?period=year"],
  },
  { name: "counters limit 0", call: (s) => s.counters({ limit: 0 }), route: ["GET", "/v1/counters?limit=0"] },
  { name: "counters offset -1", call: (s) => s.counters({ offset: -1 }), route: ["GET", "/v1/counters?offset=-1"] },
  {
    name: "histograms limit 1001",
    call: (s) => s.histograms({ limit: 1001 }),
    route: ["GET", "/v1/histograms?limit=1001"],
  },
  {
    name: "presence.members limit 0",
    call: (s) => s.presence("r").members({ limit: 0 }),
    route: ["GET", "/v1/presence/r/members?limit=0"],
  },
  {
    name: "presence.history hours 25",
    call: (s) => s.presence("r").history({ hours: 25 }),
    route: ["GET", "/v1/presence/r/history?hours=25"],
  },
  { name: "rooms limit 0", call: (s) => s.rooms({ limit: 0 }), route: ["GET", "/v1/presence?limit=0"] },
  {
    name: "leaderboard.page page 0",
    call: (s) => s.leaderboard("b").page({ page: 0 }),
    route: ["GET", "/v1/leaderboards/b?page=0"],
  },
  {
    name: "leaderboard.get season bad",
    call: (s) => s.leaderboard("b").get("ada", { season: "bad" }),
    route: ["GET", "/v1/leaderboards/b/players/ada?season=bad"],
  },
  { name: "boards limit 0", call: (s) => s.boards({ limit: 0 }), route: ["GET", "/v1/leaderboards?limit=0"] },
  {
    name: "trending.record empty member",
    call: (s) => s.trending("t").record({ member: "" }),
    route: ["POST", "/v1/trending/t/events", { member: "" }],
  },
  {
    name: "histogram.configure bucketWidth 0",
    call: (s) => s.histogram("h").configure({ bucketWidth: 0 }),
    route: ["PUT", "/v1/histograms/h", { bucketWidth: 0 }],
  },
  {
    name: "leaderboard.configure ties x",
    call: (s) => s.leaderboard("b").configure({ ties: "x" as "joined" }),
    route: ["PUT", "/v1/leaderboards/b", { ties: "x" }],
  },
  {
    name: "trending.member long name",
    call: (s) => s.trending("t").member("x".repeat(300)),
    route: ["GET", `/v1/trending/t/members/${"x".repeat(300)}`],
  },
  { name: "counter bad name", call: (s) => s.counter("-c").top(), route: ["GET", "/v1/counters/-c/top"] },
];

const caught = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as EdgestatsError,
  );
/** Each detail's place and path (the messages are the library's own words, zod's on the service). */
const located = (details: readonly { in?: string; path: string }[] | undefined) =>
  (details ?? []).map((d) => ({ in: d.in, path: d.path }));

// Medium (fixed in this branch, was it.fails): the library's ValidationError details had no `in`,
// where the service's 400 for the same input says "query", "param" or "json". Fix: label them by the
// method's route (src/library/locate.ts: each handle method's path parameters and where its other
// input goes), so the same bad input gives the same details' shape both ways.
describe("the same bad input: the same code, and details with the same `in` and `path`", () => {
  it.each(ROWS.map((r) => [r.name, r] as const))("%s", async (_, row) => {
    const mine = await caught(row.call(stats));
    const theirs = await http(...row.route);
    expect(theirs.status).toBe(400);
    expect(mine).toBeInstanceOf(ValidationError);
    expect(mine?.code).toBe(theirs.body.error.code);
    expect(located(mine?.details)).toEqual(located(theirs.body.error.details));
    expect(located(mine?.details).every((d) => d.in !== undefined)).toBe(true);
  });

  it("a located error keeps its class, code, message and the method's name", async () => {
    const handle = stats.counter("c");
    expect(handle.top.name).toBe("top");
    const error = await caught(handle.top({ n: 0 }));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error?.message).toBe("Invalid field 'n': must be an integer from 1 to 1000.");
    expect(error?.stack).toContain("ValidationError");
  });

  it("an idempotencyKey's refusal stays unlabelled (the service's Idempotency-Key header refusal has no `in`)", async () => {
    const error = await caught(stats.counter("c").incr("a", 1, { idempotencyKey: "" }));
    expect(error?.details).toEqual([{ path: "idempotencyKey", message: "1-255 visible ASCII characters" }]);
  });
});
