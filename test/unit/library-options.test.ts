/**
 * The library's options objects against the service's routes: each method whose route takes a query
 * names exactly that query's parameters (src/library/inputs.ts, QUERY_OPTIONS), read from the
 * OpenAPI document (test/fixtures/openapi.json, which test/worker/lazy-routes.test.ts keeps equal
 * to the app's), less those the method takes as an argument of its own; the options the service
 * has no query for are library-only and listed here as such. Every public method of the library
 * is in one of these lists, so a method added without its check, or a query parameter added to a
 * route without its option, fails here. test/redis/library-options.test.ts checks that each method
 * really refuses an unknown option (nothing sent) and takes each listed one.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { Edgestats } from "../../src/library/edgestats.ts";
import {
  CounterHandle,
  HistogramHandle,
  LeaderboardHandle,
  PresenceHandle,
  TrendingHandle,
} from "../../src/library/handles.ts";
import { QUERY_OPTIONS, SETTINGS, WRITE_OPTIONS } from "../../src/library/inputs.ts";
import fixture from "../fixtures/openapi.json" with { type: "json" };

type Parameter = { name: string; in: string };
const doc = fixture as unknown as {
  paths: Record<string, Record<string, { parameters?: Parameter[] } | Parameter[]>>;
};

/** The query parameters of one operation (its own and its path's). */
function queryOf(method: string, path: string): string[] {
  const item = doc.paths[path];
  const op = item?.[method] as { parameters?: Parameter[] } | undefined;
  expect(op, `${method.toUpperCase()} ${path} is in the OpenAPI document`).toBeDefined();
  const shared = (item?.parameters as Parameter[] | undefined) ?? [];
  return [...shared, ...(op?.parameters ?? [])].filter((p) => p.in === "query").map((p) => p.name);
}

type Key = keyof typeof QUERY_OPTIONS;
/** Each method with query options, its route, and the query parameters it takes as an argument instead. */
const ROUTES: Record<Key, [method: "get" | "post" | "delete", path: string, asArgument?: string[]]> = {
  "trending.top": ["get", "/v1/trending/{stream}/top"],
  "trending.member": ["get", "/v1/trending/{stream}/members/{member}"],
  "trending.rising": ["get", "/v1/trending/{stream}/rising"],
  "trending.history": ["get", "/v1/trending/{stream}/history", ["member"]],
  "counter.top": ["get", "/v1/counters/{counter}/top"],
  "counter.bottom": ["get", "/v1/counters/{counter}/bottom"],
  "counter.member": ["get", "/v1/counters/{counter}/members/{member}"],
  "counter.range": ["get", "/v1/counters/{counter}/range"],
  "counter.sorted": ["get", "/v1/counters/{counter}/sorted"],
  "counter.remove": ["delete", "/v1/counters/{counter}/members/{member}"],
  "histogram.read": ["get", "/v1/histograms/{histogram}"],
  "presence.members": ["get", "/v1/presence/{room}/members"],
  "presence.history": ["get", "/v1/presence/{room}/history"],
  "leaderboard.get": ["get", "/v1/leaderboards/{board}/players/{player}"],
  "leaderboard.rank": ["post", "/v1/leaderboards/{board}/rank"],
  "leaderboard.page": ["get", "/v1/leaderboards/{board}"],
  "leaderboard.around": ["get", "/v1/leaderboards/{board}/players/{player}/around"],
  "stats.counters": ["get", "/v1/counters"],
  "stats.histograms": ["get", "/v1/histograms"],
  "stats.rooms": ["get", "/v1/presence"],
  "stats.boards": ["get", "/v1/leaderboards"],
  "stats.streamPage": ["get", "/v1/trending"],
};

/** The writes: their options are `WriteOptions`, library-only (the service's `Idempotency-Key` header). */
const WRITES = [
  "trending.record",
  "counter.incr",
  "counter.union",
  "histogram.configure",
  "histogram.observe",
  "presence.heartbeat",
  "leaderboard.configure",
  "leaderboard.join",
  "leaderboard.increment",
  "leaderboard.set",
  "leaderboard.score",
  "leaderboard.scores",
];

/** Methods that take no options object (a name, a day or nothing; the handles' factories). */
const NO_OPTIONS = [
  "trending.delete",
  "counter.delete",
  "histogram.delete",
  "presence.leave",
  "presence.count",
  "presence.stats",
  "presence.day",
  "presence.delete",
  "leaderboard.seasons",
  "leaderboard.info",
  "leaderboard.remove",
  "leaderboard.delete",
  "stats.trending",
  "stats.counter",
  "stats.histogram",
  "stats.presence",
  "stats.leaderboard",
  "stats.presenceTotal",
  "stats.streams",
];

const methodsOf = (name: string, cls: { prototype: object }) =>
  Object.getOwnPropertyNames(cls.prototype)
    .filter((m) => m !== "constructor")
    .map((m) => `${name}.${m}`);

describe("the library's query options are the routes' query parameters", () => {
  it.each(Object.keys(ROUTES) as Key[])("%s", (key) => {
    const [method, path, asArgument = []] = ROUTES[key];
    const query = queryOf(method, path);
    for (const name of asArgument) expect(query, `${path} takes ${name}`).toContain(name);
    expect([...QUERY_OPTIONS[key]].sort()).toEqual(query.filter((q) => !asArgument.includes(q)).sort());
  });

  it("every option set is checked here", () => {
    expect(Object.keys(ROUTES).sort()).toEqual(Object.keys(QUERY_OPTIONS).sort());
  });

  it("every public method of the library is a query read, a write or takes no options", () => {
    const all = [
      ...methodsOf("trending", TrendingHandle),
      ...methodsOf("counter", CounterHandle),
      ...methodsOf("histogram", HistogramHandle),
      ...methodsOf("presence", PresenceHandle),
      ...methodsOf("leaderboard", LeaderboardHandle),
      ...methodsOf("stats", Edgestats),
    ].sort();
    expect(all).toEqual([...Object.keys(QUERY_OPTIONS), ...WRITES, ...NO_OPTIONS].sort());
  });
});

describe("the library-only options", () => {
  it("a write's options: idempotencyKey alone", () => {
    expect([...WRITE_OPTIONS]).toEqual(["idempotencyKey"]);
  });

  it("new Edgestats(options): the settings docs/library.md's table documents", () => {
    const doc = readFileSync(new URL("../../docs/library.md", import.meta.url), "utf8");
    const table = doc.slice(doc.indexOf("| Option |"), doc.indexOf("\n\n", doc.indexOf("| Option |")));
    // first cells: `redis`, `trending.retentionHours` / `keep` / `compactBatches`, …
    const documented = table
      .split("\n")
      .slice(2)
      .flatMap((row) => {
        const names = [...(row.split("|")[1] ?? "").matchAll(/`([\w.]+)`/g)].map((m) => m[1]!);
        const group = names[0]!.includes(".") ? names[0]!.split(".")[0]! : "";
        return names.map((n) => (n.includes(".") || !group ? n : `${group}.${n}`));
      });
    const ours = [
      ...[...SETTINGS.edgestats].filter((n) => n !== "trending" && n !== "presence"),
      ...[...SETTINGS.trending].map((n) => `trending.${n}`),
      ...[...SETTINGS.presence].map((n) => `presence.${n}`),
    ];
    expect(documented.sort()).toEqual(ours.sort());
  });
});
