/**
 * A Node script: record some activity and print what edgestats makes of it.
 *
 *   UPSTASH_REDIS_REST_URL=... UPSTASH_REDIS_REST_TOKEN=... node examples/node.ts
 *
 * (Node ≥ 22.18 runs TypeScript directly.) `main` is exported so CI runs it
 * against the local Upstash server.
 */
import { Redis } from "@upstash/redis";
import { Edgestats, type EdgestatsRedis } from "edgestats";

export async function main(redis: EdgestatsRedis = Redis.fromEnv(), prefix = "example-node") {
  const stats = new Edgestats({ redis, prefix });

  // Trending: one call per batch, whatever its size.
  const searches = stats.trending("searches");
  await searches.record([
    { member: "redis" },
    { member: "workers", count: 2 },
    { member: "redis" },
    { member: "redis" },
  ]);
  const top = await searches.top({ n: 3, window: "24h" });

  // Counters: a plain one and a daily one.
  const hits = stats.counter("hits");
  await hits.incr("/home", 3);
  await hits.incr([{ member: "/docs" }, { member: "/home", period: "day" }]);
  const topPages = await hits.top({ n: 2 });

  // Histograms: declare the bucket width once, then observe.
  const boot = stats.histogram("boot-ms");
  await boot.configure({ bucketWidth: 50, unit: "ms" });
  await boot.observe([120, 180, 240, 900]);
  const { count, p50, max } = await boot.read();

  // Presence and a leaderboard.
  const lobby = stats.presence("lobby");
  await lobby.heartbeat(["ada", "grace"]);
  const weekly = stats.leaderboard("weekly");
  await weekly.join("ada", { name: "Ada" });
  await weekly.join("grace", { name: "Grace" });
  await weekly.increment("grace", 30);
  await weekly.increment("ada", 10);
  const page = await weekly.page({ limit: 10 });

  return {
    trending: top.items.map((i) => `${i.member}:${i.count}`),
    exact: top.exact,
    pages: topPages.items.map((i) => `${i.member}:${i.score}`),
    boot: { count, p50, max },
    online: await lobby.count(),
    leaders: page.items.map((r) => `${r.rank}. ${r.name} ${r.score}`),
  };
}

if (import.meta.main) console.log(await main());
