import type { Routes } from "../router.ts";

/**
 * Where each router is mounted, with its routes' methods and paths, known without loading it.
 *
 * Each router is a module of its own, imported on the first request that reaches one of its
 * routes (issue 14, point 6): the Worker is built with code splitting (dev/build-worker.ts), so a
 * cold isolate compiles and evaluates only the app's core at start, and a request then loads only
 * its own feature's routes and library (the dashboard, the jobs, webhooks... stay unloaded until
 * used). The app registers every route at once from `table`, in this order (matching and the
 * order of routes are exactly as if the routers were loaded: functions/mount.ts), so the table
 * must list each router's routes as it records them; functions/mount.ts refuses a router that
 * differs, and test/worker/lazy-routes.test.ts checks every mount.
 */
export interface Mount {
  /** The mount base; each route's path is relative to it. */
  base: string;
  /** `[method, path]` of each route the router records, in order (upper-case method, Hono's `/:param` path). */
  table: readonly (readonly [string, string])[];
  /** The router's module. */
  load: () => Promise<Routes>;
  /**
   * Routes whose first request loads a module of their own instead of the router's, by their index
   * in `table`: a router recording that route alone, which the router's module includes at its
   * place (the same route, so its schemas are built once whichever loaded it). A cold isolate's
   * first write (a counter increment, a heartbeat...) then compiles its own route's definition
   * and the part of its library it runs, not its feature's other routes nor their reads' code.
   */
  alone?: Readonly<Record<number, () => Promise<Routes>>>;
}

/** Every router of the app, in the order it adds them. */
export const mounts: readonly Mount[] = [
  { base: "/", table: [["GET", "/healthz"]], load: () => import("./health.ts").then((m) => m.healthRoutes) },
  {
    base: "/",
    table: [["POST", "/internal/jobs/:job"]],
    load: () => import("./jobs.ts").then((m) => m.jobRoutes),
  },
  {
    base: "/v1/trending",
    table: [
      ["GET", "/"],
      ["POST", "/:stream/events"],
      ["GET", "/:stream/top"],
      ["GET", "/:stream/rising"],
      ["GET", "/:stream/history"],
      ["GET", "/:stream/members/:member"],
      ["DELETE", "/:stream"],
    ],
    load: () => import("./trending.ts").then((m) => m.trendingRoutes),
    alone: { 1: () => import("./trending-events.ts").then((m) => m.trendingEventsRoutes) },
  },
  {
    base: "/v1/counters",
    table: [
      ["GET", "/"],
      ["POST", "/:counter/incr"],
      ["GET", "/:counter/top"],
      ["GET", "/:counter/bottom"],
      ["GET", "/:counter/members/:member"],
      ["GET", "/:counter/range"],
      ["GET", "/:counter/sorted"],
      ["POST", "/:counter/union"],
      ["DELETE", "/:counter/members/:member"],
      ["DELETE", "/:counter"],
    ],
    load: () => import("./counters.ts").then((m) => m.countersRoutes),
    alone: { 1: () => import("./counters-incr.ts").then((m) => m.counterIncrRoutes) },
  },
  {
    base: "/v1/histograms",
    table: [
      ["GET", "/"],
      ["PUT", "/:histogram"],
      ["POST", "/:histogram/observations"],
      ["GET", "/:histogram"],
      ["DELETE", "/:histogram"],
    ],
    load: () => import("./histograms.ts").then((m) => m.histogramsRoutes),
    alone: { 2: () => import("./histograms-observe.ts").then((m) => m.observeRoutes) },
  },
  {
    base: "/v1/presence",
    table: [
      ["GET", "/"],
      ["POST", "/:room/heartbeats"],
      ["DELETE", "/:room/members/:id"],
      ["GET", "/_total"],
      ["GET", "/:room"],
      ["GET", "/:room/members"],
      ["GET", "/:room/history"],
      ["DELETE", "/:room"],
    ],
    load: () => import("./presence.ts").then((m) => m.presenceRoutes),
    alone: { 1: () => import("./presence-heartbeat.ts").then((m) => m.heartbeatRoutes) },
  },
  {
    base: "/v1/leaderboards",
    table: [
      ["GET", "/"],
      ["PUT", "/:board"],
      ["GET", "/:board"],
      ["GET", "/:board/count"],
      ["DELETE", "/:board"],
      ["PUT", "/:board/players/:player"],
      ["POST", "/:board/players/:player/score"],
      ["POST", "/:board/scores"],
      ["GET", "/:board/players/:player"],
      ["GET", "/:board/players/:player/around"],
      ["DELETE", "/:board/players/:player"],
      ["POST", "/:board/rank"],
      ["GET", "/:board/seasons"],
    ],
    load: () => import("./leaderboards.ts").then((m) => m.leaderboardsRoutes),
    alone: { 6: () => import("./leaderboards-score.ts").then((m) => m.scoreRoutes) },
  },
  {
    base: "/v1/ingest",
    table: [
      ["GET", "/status"],
      ["GET", "/lag"],
    ],
    load: () => import("./ingest.ts").then((m) => m.ingestRoutes),
  },
  {
    base: "/v1/webhooks",
    table: [
      ["GET", "/"],
      ["PUT", "/:name"],
      ["DELETE", "/:name"],
      ["POST", "/:name/test"],
      ["GET", "/:name/deliveries"],
    ],
    load: () => import("./webhooks.ts").then((m) => m.webhooksRoutes),
  },
  {
    base: "/",
    table: [
      ["GET", "/"],
      ["GET", "/dashboard.js"],
      ["GET", "/dashboard/:module"],
      ["GET", "/dashboard.css"],
    ],
    load: () => import("./dashboard.tsx").then((m) => m.dashboardRoutes),
  },
];
