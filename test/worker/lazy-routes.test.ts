/**
 * Routes build their zod schemas on first use (functions/lazy-route.ts, issue 14 point 6):
 * loading the app builds none, a request builds only its own route's, and the answers and the
 * OpenAPI document are exactly those of the eager build they replace.
 *
 * test/fixtures/openapi.json is /openapi.json of the eager build (main before lazy routes),
 * pretty-printed. After a deliberate change to the API description, regenerate it from the app:
 * `app.request("/openapi.json")` → `JSON.stringify(await res.json(), null, 2)`, then prettier.
 * The Worker bundle serves this file as its document (functions/build/openapi-prebuilt.ts), so
 * the test below is what keeps production's /openapi.json and /docs true to the routes.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../functions/app.ts";
import { routeBuilds } from "../../functions/lazy-route.ts";
import { mounts } from "../../functions/routes/index.ts";
import { ZodNotLoaded, zodParts } from "../../functions/zod.ts";
import fixture from "../fixtures/openapi.json";
import { TEST_KEYS } from "../helpers/keys.ts";

type ErrorBody = { error: { code: string; message: string; details?: unknown[] } };

/** Whether zod is loaded in this isolate (functions/zod.ts loads it on first use). */
function zodLoaded(): boolean {
  try {
    zodParts();
    return true;
  } catch (error) {
    if (error instanceof ZodNotLoaded) return false;
    throw error;
  }
}

// Read before any app handles a request: the module graph above is all that ran.
const buildsAtLoad = routeBuilds();
const app = createApp();
const buildsAfterCreate = routeBuilds();

/** Undefined when equal, else both texts around their first difference (a 130 KB diff would drown the report). */
function firstDifference(actual: string, expected: string) {
  if (actual === expected) return undefined;
  let i = 0;
  while (actual[i] === expected[i]) i++;
  return { at: i, actual: actual.slice(i - 80, i + 80), expected: expected.slice(i - 80, i + 80) };
}

const send = (path: string, init: RequestInit = {}) => app.request(path, init, env);
const write = (path: string, body: string, contentType = "application/json") =>
  send(path, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_KEYS.ingest}`, "content-type": contentType },
    body,
  });

describe("lazy routers", () => {
  it("each mount's table lists its router's routes, in order (the app registers them from the table)", async () => {
    for (const mount of mounts) {
      const router = await mount.load();
      expect(
        router.routes.map((r) => [r.method, r.path]),
        mount.base,
      ).toEqual(mount.table);
    }
  });

  it("a route with a module of its own (Mount.alone) is its router's own route, at its place", async () => {
    const alone = mounts.filter((mount) => mount.alone);
    // the five hot writes: counter incr, trending events, heartbeats, observations, score changes
    expect(alone.flatMap((mount) => Object.keys(mount.alone ?? {})).length).toBe(5);
    for (const mount of alone)
      for (const [i, load] of Object.entries(mount.alone ?? {})) {
        const own = await load();
        expect(
          own.routes.map((r) => [r.method, r.path]),
          mount.base,
        ).toEqual([mount.table[Number(i)]]);
        // the same route object, so its spec is built once whichever module a request loaded
        expect(own.routes[0], `${mount.base} route ${i}`).toBe((await mount.load()).routes[Number(i)]);
      }
  });
});

describe("lazy route schemas", () => {
  it("loading the modules and creating the app build no route's schemas", () => {
    expect(buildsAtLoad).toBe(0);
    expect(buildsAfterCreate).toBe(0);
    expect(zodLoaded()).toBe(false);
  });

  it("the usual reads and ingest writes load no zod either: their queries, parameters and bodies are prechecked", async () => {
    const reads = [
      // (the trending top is the next test's: it builds that route first)
      "/v1/trending/s1/members/m1?window=24h",
      "/v1/counters/c1/top?n=3&period=day",
      "/v1/counters/c1/members/m1?period=day&from=2026-11-01",
      "/v1/counters/c1/range?min=10&max=%2Binf&limit=50&order=desc",
      "/v1/counters/c1/sorted?by=score&period=day",
      "/v1/histograms/h1?from=2026-11-01&top=5",
      "/v1/leaderboards/b1?page=2&limit=10&season=current",
      "/v1/leaderboards/b1/players/p1",
      "/v1/presence/r1/members?limit=10",
      "/v1/presence/r1/history?hours=3",
      "/v1/trending/s1/history?member=m1&hours=24",
      "/v1/leaderboards/b1/count",
      // the lists, which the dashboard asks first
      "/v1/counters?limit=100&offset=0",
      "/v1/histograms",
      "/v1/leaderboards?offset=0",
      "/v1/presence?limit=10",
    ];
    for (const path of reads) {
      const res = await send(path, { headers: { authorization: `Bearer ${TEST_KEYS.read}` } });
      // answered by Redis (a histogram or board that does not exist is a 404), never refused
      expect([200, 404], `${path}: ${await res.text()}`).toContain(res.status);
      expect(zodLoaded(), path).toBe(false);
    }
    // and the ingest writes whose bodies are prechecked (a histogram or player that does not exist is a 404)
    const writes: [string, unknown][] = [
      ["/v1/histograms/h1/observations", { values: [12.5, { value: 3, at: "2026-11-22T10:00:00Z" }] }],
      ["/v1/leaderboards/b1/players/p1/score", { by: 5 }],
      ["/v1/leaderboards/b1/scores", { items: [{ player: "p1", set: 10, mode: "best" }] }],
    ];
    for (const [path, body] of writes) {
      const res = await write(path, JSON.stringify(body));
      expect([200, 404], `${path}: ${await res.text()}`).toContain(res.status);
      expect(zodLoaded(), path).toBe(false);
    }
    // a leaderboard join, and a subset's ranking (a read, though a POST)
    const join = await send("/v1/leaderboards/b1/players/p9", {
      method: "PUT",
      headers: { authorization: `Bearer ${TEST_KEYS.ingest}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "P9", meta: { team: "red" } }),
    });
    expect([200, 201]).toContain(join.status);
    const rank = await send("/v1/leaderboards/b1/rank?season=current", {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_KEYS.read}`, "content-type": "application/json" },
      body: JSON.stringify({ players: ["p9", "p1"] }),
    });
    expect(rank.status, await rank.text()).toBe(200);
    expect(zodLoaded()).toBe(false);
    // a leave (a page unload's DELETE)
    const leave = await send("/v1/presence/r1/members/u1", {
      method: "DELETE",
      headers: { authorization: `Bearer ${TEST_KEYS.ingest}` },
    });
    expect(leave.status).toBe(204);
    expect(zodLoaded()).toBe(false);
    // a schedule's job call (QStash's, or an admin key's)
    const job = await send("/internal/jobs/trim", {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_KEYS.admin}` },
    });
    expect(job.status, await job.text()).toBe(200);
    expect(zodLoaded()).toBe(false);
    // and the usual refusals of reads: a bad query value, a bad name or member in the path (their
    // issues are zod's words, from the prechecks: functions/prechecks.ts `Refusal`)
    const refusals: [string, string, string][] = [
      ["/v1/counters/c1/top?n=0", "n", "Too small: expected number to be >=1"],
      ["/v1/counters/c1/members/a%01b", "member", "must not contain control characters"],
      ["/v1/histograms/h1?top=x", "top", "must be an integer from 0 to 100 in decimal digits"],
      [
        "/v1/leaderboards/b1?season=next",
        "season",
        "must be 'current', 'previous' or a season id (2026-11-23, 2026-W48, 2026-11)",
      ],
      ["/v1/presence/r1/members?limit=0", "limit", "Too small: expected number to be >=1"],
      ["/v1/trending/s1/members/m1?window=0h", "window", "must be 1h..168h or 1d..7d"],
      ["/v1/leaderboards/bad%20name/count", "board", "must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"],
    ];
    for (const [path, field, message] of refusals) {
      const res = await send(path, { headers: { authorization: `Bearer ${TEST_KEYS.read}` } });
      expect(res.status, path).toBe(400);
      expect(((await res.json()) as ErrorBody).error.details?.[0], path).toMatchObject({ path: field, message });
      expect(zodLoaded(), path).toBe(false);
    }
  });

  it("a refused request builds only its own route, once, and answers the usual 400 envelope", async () => {
    const before = routeBuilds();
    const res = await write("/v1/counters/c1/incr", JSON.stringify({ items: [{ member: "a" }, { member: "" }] }));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: {
        code: "invalid_request",
        message: "Invalid json field 'items.1.member': must not be empty.",
        details: [{ in: "json", path: "items.1.member", message: "must not be empty" }],
      },
    });
    expect(routeBuilds()).toBe(before + 1);
    // answered by the route's prechecks: zod is not loaded
    expect(zodLoaded()).toBe(false);
    // the same route again builds nothing; a bad path parameter is refused by the same validators
    const param = await write("/v1/counters/bad%20name/incr", JSON.stringify({ member: "a" }));
    expect(param.status).toBe(400);
    expect(((await param.json()) as ErrorBody).error.details).toEqual([
      { in: "param", path: "counter", message: "must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$" },
    ]);
    expect(routeBuilds()).toBe(before + 1);
  });

  it("keeps the library's media-type gate (415) and query validation of a lazily built route", async () => {
    const before = routeBuilds();
    const media = await send("/v1/trending/s1/events", {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_KEYS.ingest}`, "content-type": "text/plain" },
    });
    expect(media.status).toBe(415);
    expect(await media.json()).toEqual({
      error: {
        code: "unsupported_media_type",
        message: "Send the body as JSON with 'Content-Type: application/json'.",
      },
    });
    const query = await send("/v1/trending/s1/top?window=99x", {
      headers: { authorization: `Bearer ${TEST_KEYS.read}` },
    });
    expect(query.status).toBe(400);
    expect(((await query.json()) as ErrorBody).error.details).toEqual([
      { in: "query", path: "window", message: "must be 1h..168h or 1d..7d" },
    ]);
    // refused by the route's precheck, as zod words it
    expect(zodLoaded()).toBe(false);
    // a value the precheck leaves to zod (more than 15 digits): zod is loaded for it
    const long = await send("/v1/trending/s1/top?n=99999999999999999", {
      headers: { authorization: `Bearer ${TEST_KEYS.read}` },
    });
    expect(long.status).toBe(400);
    expect(((await long.json()) as ErrorBody).error.details).toEqual([
      { in: "query", path: "n", message: "Too big: expected int to be <=9007199254740991" },
      { in: "query", path: "n", message: "Too big: expected number to be <=100" },
    ]);
    expect(routeBuilds()).toBe(before + 2);
    expect(zodLoaded()).toBe(true);
  });

  it("route middleware still runs before validation (403 for a non-admin key, whatever the body)", async () => {
    const res = await write("/v1/counters/c1/union", "[]");
    expect(res.status).toBe(403);
    expect(((await res.json()) as ErrorBody).error.code).toBe("forbidden");
  });

  it("/openapi.json builds every route and is byte for byte the eager build's document", async () => {
    const res = await send("/openapi.json");
    expect(res.status).toBe(200);
    const text = await res.text();
    // JSON.stringify of the parsed fixture is the document as the eager build served it
    expect(firstDifference(text, JSON.stringify(fixture))).toBeUndefined();
    // the app's own /openapi.json and /docs (functions/app.ts) are described but not lazy routes
    const operations = Object.entries(fixture.paths)
      .filter(([path]) => path !== "/openapi.json" && path !== "/docs")
      .reduce((n, [, ops]) => n + Object.keys(ops).length, 0);
    expect(routeBuilds()).toBe(operations);
    // a second app shares the built routes and serves the same document
    const again = await createApp().request("/openapi.json", {}, env);
    expect(firstDifference(await again.text(), text)).toBeUndefined();
    expect(routeBuilds()).toBe(operations);
  });
});
