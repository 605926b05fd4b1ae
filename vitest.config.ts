import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { TEST_INGEST_KEY_2, TEST_KEYS, TEST_SIGNING_KEYS } from "./test/helpers/keys.ts";

/**
 * Three projects, all against real Redis (started by `npm test`, see dev/test.ts):
 * - unit:   pure logic on Node;
 * - redis:  the library and the local Upstash server through @upstash/redis on Node;
 * - worker: routes and the scheduled handler inside workerd, fetching the local Upstash server;
 * - browser: the dashboard in headless Chromium against `wrangler dev` (test/browser).
 */
const upstashUrl = process.env.EDGESTATS_UPSTASH_URL ?? "";
const upstashToken = process.env.EDGESTATS_UPSTASH_TOKEN ?? "";

export default defineConfig({
  test: {
    projects: [
      // Property tests are CPU-bound: under a loaded machine (CI beside other work) vitest's 5 s
      // default failed two of them at ~8 s (CI of wt-streams, 2026-11-28).
      { test: { name: "unit", include: ["test/unit/**/*.test.ts"], environment: "node", testTimeout: 30_000 } },
      {
        test: {
          name: "redis",
          include: ["test/redis/**/*.test.ts"],
          environment: "node",
          testTimeout: 30_000,
          hookTimeout: 30_000,
        },
      },
      {
        plugins: [
          cloudflareTest({
            // The tests import the app from source; wrangler.toml's main is the built Worker
            // (.wrangler/worker/index.js, dev/build-worker.ts), which a fresh clone has not built.
            main: "./functions/index.ts",
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                UPSTASH_REDIS_REST_URL: upstashUrl,
                UPSTASH_REDIS_REST_TOKEN: upstashToken,
                INGEST_KEYS: `${TEST_KEYS.ingest},${TEST_INGEST_KEY_2}`,
                READ_KEYS: TEST_KEYS.read,
                ADMIN_KEYS: TEST_KEYS.admin,
                QSTASH_CURRENT_SIGNING_KEY: TEST_SIGNING_KEYS.current,
                QSTASH_NEXT_SIGNING_KEY: TEST_SIGNING_KEYS.next,
                TRENDING_CACHE_SECONDS: "0",
              },
            },
          }),
        ],
        test: { name: "worker", include: ["test/worker/**/*.test.ts"], testTimeout: 60_000, hookTimeout: 30_000 },
      },
      {
        test: {
          name: "browser",
          include: ["test/browser/**/*.test.ts"],
          environment: "node",
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
