import { LinearRouter } from "hono/router/linear-router";
import { describe, expect, it } from "vitest";
import { PresplitLinearRouter } from "../../functions/linear-router.ts";
import { mounts } from "../../functions/routes/index.ts";
import { mergePath } from "hono/utils/url";

/**
 * functions/linear-router.ts must match as Hono's LinearRouter does: the same handlers, in the
 * same order, with the same parameters, for the app's own routes (its middleware patterns and
 * every mount's table) and paths near them.
 */
describe("PresplitLinearRouter matches as LinearRouter", () => {
  const routes: [string, string][] = [
    ["ALL", "*"],
    ["ALL", "/v1/*"],
    ["ALL", "/internal/*"],
    ...mounts.flatMap((m) =>
      m.table.map(([method, path]) => [method, mergePath(mergePath("/", m.base), path)] as [string, string]),
    ),
    ["GET", "/openapi.json"],
    ["GET", "/docs"],
    ["GET", "/a/*/b"],
    ["GET", "/files/*"],
  ];
  const hono = new LinearRouter<number>();
  const ours = new PresplitLinearRouter<number>();
  routes.forEach(([method, path], i) => {
    hono.add(method, path, i);
    ours.add(method, path, i);
  });
  const paths = [
    "/",
    "/healthz",
    "/healthz/",
    "/openapi.json",
    "/docs",
    "/v1",
    "/v1/",
    "/v1/trending",
    "/v1/trending/",
    "/v1/trending/s1/events",
    "/v1/trending/s1/events/",
    "/v1/trending/s1/top",
    "/v1/trending//top",
    "/v1/trending/s1/members/m%20x",
    "/v1/counters/c1/incr",
    "/v1/counters/c1/members/m1",
    "/v1/counters/c1/members/",
    "/v1/counters/c1",
    "/v1/presence/_total",
    "/v1/presence/r1/heartbeats",
    "/v1/presence/r1/members/u1",
    "/v1/leaderboards/b1/players/p1/around",
    "/v1/leaderboards/b1/players/p1/score",
    "/v1/nothing/here",
    "/internal/jobs/compact",
    "/dashboard/app.js",
    "/dashboard.js",
    "/a/x/b",
    "/a/x/y/b",
    "/files/x/y",
    "/files",
    "/filesx",
  ];
  it.each(["GET", "POST", "PUT", "DELETE", "PATCH"])("%s", (method) => {
    for (const path of paths) {
      const expected = JSON.stringify(hono.match(method, path));
      expect(JSON.stringify(ours.match(method, path)), `${method} ${path}`).toBe(expected);
    }
  });
});
