/**
 * Request generators for the load driver, by name, so a load worker thread
 * (which cannot receive functions) can build them from plain parameters.
 * Each generator returns the next request of one connection; members are
 * drawn from a fixed pool so top-N reads see realistic skew.
 */
export interface GeneratedRequest {
  method: string;
  path: string;
  body?: string;
  /** Extra headers (e.g. `idempotency-key`). */
  headers?: Record<string, string>;
}

export interface RequestSpec {
  /** A key of GENERATORS. */
  kind: string;
  /** URL path prefix of the side under test (e.g. "" for the service, "" for the baseline). */
  base: string;
  /** Generator-specific parameters. */
  params: Record<string, string | number>;
}

type Generator = (params: Record<string, string | number>) => () => GeneratedRequest;

/** A Zipf-ish pick from 0..size-1: a few members are hot, most are cold. */
export function skewed(size: number): number {
  return Math.min(size - 1, Math.floor(size * Math.random() ** 3));
}

function num(params: Record<string, string | number>, name: string, fallback: number): number {
  const v = params[name];
  return v === undefined ? fallback : Number(v);
}

/** A fresh `Idempotency-Key` per request when `params.idempotency` is set (each request is a first use). */
function idempotencyOf(params: Record<string, string | number>): () => Record<string, string> | undefined {
  if (!params.idempotency) return () => undefined;
  const run = Math.random().toString(36).slice(2, 10);
  let n = 0;
  return () => ({ "idempotency-key": `bench-${run}-${n++}` });
}

function str(params: Record<string, string | number>, name: string, fallback: string): string {
  const v = params[name];
  return v === undefined ? fallback : String(v);
}

export const GENERATORS: Record<string, Generator> = {
  /** POST trending events: `batch` events per request over a pool of `pool` members (`idempotency`: a fresh key each). */
  trendingIngest: (p) => {
    const batch = num(p, "batch", 1);
    const pool = num(p, "pool", 5000);
    const path = `/v1/trending/${str(p, "stream", "bench")}/events`;
    const headers = idempotencyOf(p);
    return () => {
      const events = Array.from({ length: batch }, () => ({ member: `m${skewed(pool)}` }));
      return { method: "POST", path, body: JSON.stringify(batch === 1 ? events[0] : { events }), headers: headers() };
    };
  },
  /** GET a fixed path (reads). */
  get: (p) => {
    const path = str(p, "path", "/healthz");
    return () => ({ method: "GET", path });
  },
  /** GET `prefix{i}suffix` for i = 0..count-1 in turn (one cold read per stream). */
  getEach: (p) => {
    const prefix = str(p, "prefix", "");
    const suffix = str(p, "suffix", "");
    const count = num(p, "count", 1);
    const offset = num(p, "offset", 0);
    const stride = num(p, "stride", 1);
    let i = offset;
    return () => {
      const path = `${prefix}${i % count}${suffix}`;
      i += stride;
      return { method: "GET", path };
    };
  },
  /** POST a counter increment of a skewed member, or `batch` of them as `{items}` (`idempotency`: a fresh key each). */
  counterIncr: (p) => {
    const pool = num(p, "pool", 5000);
    const batch = num(p, "batch", 1);
    const path = `/v1/counters/${str(p, "counter", "bench")}/incr`;
    const headers = idempotencyOf(p);
    return () => {
      const items = Array.from({ length: batch }, () => ({ member: `page${skewed(pool)}` }));
      return { method: "POST", path, body: JSON.stringify(batch === 1 ? items[0] : { items }), headers: headers() };
    };
  },
  /** POST one histogram observation (a latency-like value in ms). */
  histogramObserve: (p) => {
    const path = `/v1/histograms/${str(p, "histogram", "bench")}/observations`;
    return () => ({ method: "POST", path, body: JSON.stringify({ value: Math.round(20 + 400 * Math.random() ** 2) }) });
  },
  /** POST a heartbeat of a random id of `pool`, or `batch` ids as `{ids}`. */
  presenceHeartbeat: (p) => {
    const pool = num(p, "pool", 10000);
    const batch = num(p, "batch", 1);
    const path = `/v1/presence/${str(p, "room", "bench")}/heartbeats`;
    const id = () => `user-${Math.floor(Math.random() * pool)}`;
    return () => ({
      method: "POST",
      path,
      body: JSON.stringify(batch === 1 ? { id: id() } : { ids: Array.from({ length: batch }, id) }),
    });
  },
  /** POST a score increment for a random player of `pool` (already joined). */
  leaderboardIncr: (p) => {
    const pool = num(p, "pool", 1000);
    const board = str(p, "board", "bench");
    return () => ({
      method: "POST",
      path: `/v1/leaderboards/${board}/players/p${Math.floor(Math.random() * pool)}/score`,
      body: JSON.stringify({ by: 1 + Math.floor(Math.random() * 10) }),
    });
  },
  /** GET a random page of a board. */
  leaderboardPage: (p) => {
    const pages = num(p, "pages", 10);
    const board = str(p, "board", "bench");
    return () => ({
      method: "GET",
      path: `/v1/leaderboards/${board}?page=${1 + Math.floor(Math.random() * pages)}&limit=10`,
    });
  },
  /** GET around-me of a random player. */
  leaderboardAround: (p) => {
    const pool = num(p, "pool", 1000);
    const board = str(p, "board", "bench");
    return () => ({
      method: "GET",
      path: `/v1/leaderboards/${board}/players/p${Math.floor(Math.random() * pool)}/around?k=5`,
    });
  },
};

export function generatorOf(spec: RequestSpec): () => GeneratedRequest {
  const make = GENERATORS[spec.kind];
  if (!make) throw new Error(`no request generator '${spec.kind}'`);
  const next = make(spec.params);
  return () => {
    const r = next();
    return { ...r, path: spec.base + r.path };
  };
}
