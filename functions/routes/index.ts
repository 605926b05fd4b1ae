import type { Routes } from "../router.ts";
import { countersRoutes } from "./counters.ts";
import { dashboardRoutes } from "./dashboard.tsx";
import { histogramsRoutes } from "./histograms.ts";
import { ingestRoutes } from "./ingest.ts";
import { leaderboardsRoutes } from "./leaderboards.ts";
import { presenceRoutes } from "./presence.ts";
import { trendingRoutes } from "./trending.ts";
import { webhooksRoutes } from "./webhooks.ts";

/** Feature routers and where they are mounted; each router's paths are relative to its base. */
export const featureRoutes: [string, Routes][] = [
  ["/v1/trending", trendingRoutes],
  ["/v1/counters", countersRoutes],
  ["/v1/histograms", histogramsRoutes],
  ["/v1/presence", presenceRoutes],
  ["/v1/leaderboards", leaderboardsRoutes],
  ["/v1/ingest", ingestRoutes],
  ["/v1/webhooks", webhooksRoutes],
  ["/", dashboardRoutes],
];
