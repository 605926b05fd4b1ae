/**
 * The side-by-side scenarios: each is one endpoint under one condition, run
 * against the service and the naive baseline with the same request sequence.
 */
import type { RespClient } from "../dev/resp.ts";
import { naiveBucketKey } from "./baseline/naive.ts";
import { call, type Side } from "./lib/measure.ts";
import type { RequestSpec } from "./lib/requests.ts";

export interface Sides {
  /** The service with its edge cache on (TRENDING_CACHE_SECONDS=5). */
  service: Side;
  /** The same service with the edge cache off, to measure reads that reach Redis. */
  serviceNoCache: Side;
  naive: Side;
  /** Straight to Redis, for seeding the naive baseline (its key schema is ours). */
  resp: RespClient;
  /** The naive baseline's key prefix. */
  naivePrefix: string;
}

export interface Scenario {
  id: string;
  feature: string;
  label: string;
  spec: RequestSpec;
  /** Which service instance to measure. @default "service" */
  serviceSide?: "service" | "serviceNoCache";
  /** Seeds both sides before measuring. */
  setup?: (sides: Sides) => Promise<void>;
  /** Bounded load requests (cold reads can be made only once each). */
  maxRequests?: number;
  /** Sequential calls of the cost probe. @default 20 */
  probeCalls?: number;
  /**
   * `false`: the naive side gets the probe only, no load (a naive 1,000-item batch is
   * thousands of sequential round trips; under load it would still be running minutes later).
   */
  naiveLoad?: false;
  /**
   * In the 20 ms round-trip run: `false` leaves the scenario out (the edge-cache hit never
   * reaches Redis; 1,000-item batches would take the naive side minutes), a number sets its
   * sequential calls. @default included, with the run's default calls
   */
  rtt?: false | number;
}

/** Streams seeded for the cold-read scenario: every read of one of them is its first. */
export const COLD_STREAMS = 200;
const PLAYERS = 1000;
const HOUR = 3600_000;

/** Runs `tasks` with at most `width` in flight. */
export async function inParallel(count: number, width: number, task: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, count) }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

async function expectOk(side: Side, method: string, path: string, body?: unknown): Promise<void> {
  const res = await call(side, method, path, body);
  if (res.status >= 300)
    throw new Error(`${side.name} ${method} ${path}: ${res.status} ${JSON.stringify(res.json).slice(0, 300)}`);
}

/**
 * A day of events for one stream: 300 distinct members in the last finished
 * hour (more than the 240 the post keeps, so its read path trims) and 240
 * skewed events over the 23 hours before, plus 20 in the current hour.
 */
function dayOfEvents(now: number, seed: number) {
  const lastHour = Array.from({ length: 300 }, (_, i) => ({
    member: `m${i}`,
    count: 1 + ((i * 13 + seed) % 7),
    at: now - HOUR,
  }));
  const earlier = Array.from({ length: 240 }, (_, i) => ({
    member: `m${(i * 7 + seed) % 60}`,
    count: 1 + ((i * 13 + seed) % 5),
    at: now - (2 + (i % 23)) * HOUR,
  }));
  const current = Array.from({ length: 20 }, (_, i) => ({ member: `m${i}`, count: 1, at: now }));
  return [...lastHour, ...earlier, ...current];
}

/**
 * Seeds the service through its API (one batch per stream) and the naive
 * baseline straight into Redis: through its own API that would be ~1,100
 * sequential round trips per stream, setup time that measures nothing.
 */
async function seedStreams(sides: Sides, prefix: string, count: number): Promise<void> {
  const now = Date.now();
  await inParallel(count, 8, (i) =>
    expectOk(sides.service, "POST", `/v1/trending/${prefix}${i}/events`, { events: dayOfEvents(now, i) }),
  );
  for (let i = 0; i < count; i++) {
    const commands = dayOfEvents(now, i).map((e) => [
      "ZINCRBY",
      naiveBucketKey(sides.naivePrefix, `${prefix}${i}`, e.at),
      e.count,
      e.member,
    ]);
    const replies = await sides.resp.pipeline(commands);
    const failed = replies.find((r) => r instanceof Error);
    if (failed) throw failed;
  }
}

const top = (stream: string) => `/v1/trending/${stream}/top?n=10&window=24h`;

export const SCENARIOS: Scenario[] = [
  {
    id: "trending-ingest-1",
    feature: "trending",
    label: "trending ingest, 1 event/request",
    spec: { kind: "trendingIngest", base: "", params: { batch: 1, stream: "ingest1" } },
  },
  {
    id: "trending-ingest-100",
    feature: "trending",
    label: "trending ingest, 100 events/request",
    spec: { kind: "trendingIngest", base: "", params: { batch: 100, stream: "ingest100" } },
    rtt: 3,
  },
  {
    id: "trending-ingest-1000",
    feature: "trending",
    label: "trending ingest, 1,000 events/request",
    spec: { kind: "trendingIngest", base: "", params: { batch: 1000, stream: "ingest1000" } },
    probeCalls: 5,
    maxRequests: 400,
    naiveLoad: false,
    rtt: false,
  },
  {
    id: "trending-ingest-1-idem",
    feature: "trending",
    label: "trending ingest, 1 event + Idempotency-Key",
    spec: { kind: "trendingIngest", base: "", params: { batch: 1, stream: "ingest1idem", idempotency: 1 } },
  },
  {
    id: "trending-top-cold",
    feature: "trending",
    label: "trending top-10 / 24 h, cold",
    serviceSide: "serviceNoCache",
    spec: {
      kind: "getEach",
      base: "",
      params: { prefix: "/v1/trending/cold-", suffix: "/top?n=10&window=24h", count: COLD_STREAMS },
    },
    setup: (sides) => seedStreams(sides, "cold-", COLD_STREAMS),
    maxRequests: COLD_STREAMS - 30,
  },
  {
    id: "trending-top-warm",
    feature: "trending",
    label: "trending top-10 / 24 h, warm in Redis",
    serviceSide: "serviceNoCache",
    spec: { kind: "get", base: "", params: { path: top("warm-0") } },
    setup: (sides) => seedStreams(sides, "warm-", 1),
  },
  {
    id: "trending-top-edge",
    feature: "trending",
    label: "trending top-10 / 24 h, edge-cache hit",
    spec: { kind: "get", base: "", params: { path: top("edge-0") } },
    setup: (sides) => seedStreams(sides, "edge-", 1),
    rtt: false,
  },
  {
    id: "counter-incr",
    feature: "counters",
    label: "counter increment",
    spec: { kind: "counterIncr", base: "", params: { counter: "pages" } },
  },
  {
    id: "counter-incr-idem",
    feature: "counters",
    label: "counter increment + Idempotency-Key",
    spec: { kind: "counterIncr", base: "", params: { counter: "pagesidem", idempotency: 1 } },
  },
  {
    id: "counter-incr-1000",
    feature: "counters",
    label: "counter increment, 1,000 items/request",
    spec: { kind: "counterIncr", base: "", params: { counter: "pages1000", batch: 1000 } },
    probeCalls: 5,
    maxRequests: 400,
    naiveLoad: false,
    rtt: false,
  },
  {
    id: "counter-top",
    feature: "counters",
    label: "counter top-10",
    spec: { kind: "get", base: "", params: { path: "/v1/counters/pages/top?n=10" } },
  },
  {
    id: "histogram-observe",
    feature: "histograms",
    label: "histogram observe",
    spec: { kind: "histogramObserve", base: "", params: { histogram: "latency" } },
    setup: async (sides) => {
      for (const side of [sides.service, sides.naive]) {
        await expectOk(side, "PUT", "/v1/histograms/latency", { bucketWidth: 10, unit: "ms" });
      }
    },
  },
  {
    id: "histogram-read",
    feature: "histograms",
    label: "histogram read",
    spec: { kind: "get", base: "", params: { path: "/v1/histograms/latency" } },
  },
  {
    id: "presence-heartbeat",
    feature: "presence",
    label: "presence heartbeat",
    spec: { kind: "presenceHeartbeat", base: "", params: { room: "lobby", pool: 10000 } },
  },
  {
    id: "presence-heartbeat-1000",
    feature: "presence",
    label: "presence heartbeat, 1,000 ids/request",
    spec: { kind: "presenceHeartbeat", base: "", params: { room: "hall", pool: 10000, batch: 1000 } },
    probeCalls: 5,
    maxRequests: 400,
    naiveLoad: false,
    rtt: false,
  },
  {
    id: "presence-count",
    feature: "presence",
    label: "presence count",
    spec: { kind: "get", base: "", params: { path: "/v1/presence/lobby" } },
  },
  {
    id: "leaderboard-incr",
    feature: "leaderboards",
    label: "leaderboard increment",
    spec: { kind: "leaderboardIncr", base: "", params: { board: "arena", pool: PLAYERS } },
    setup: async (sides) => {
      for (const side of [sides.service, sides.naive]) {
        await inParallel(PLAYERS, 32, (i) =>
          expectOk(side, "PUT", `/v1/leaderboards/arena/players/p${i}`, { name: `Player ${i}` }),
        );
      }
    },
  },
  {
    id: "leaderboard-page",
    feature: "leaderboards",
    label: "leaderboard page (10)",
    spec: { kind: "leaderboardPage", base: "", params: { board: "arena", pages: 20 } },
  },
  {
    id: "leaderboard-around",
    feature: "leaderboards",
    label: "leaderboard around-me (k=5)",
    spec: { kind: "leaderboardAround", base: "", params: { board: "arena", pool: PLAYERS } },
  },
];
