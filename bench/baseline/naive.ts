/**
 * THE NAIVE BASELINE: the same endpoints as the service, written straight
 * from the blog posts the service started from, one Redis command per HTTP
 * call to Upstash and no caching. It exists only so the bench can report
 * every figure as a ratio to it; nothing in the service imports it.
 *
 * Where a post cannot work as written (a command option that does not exist,
 * a command Upstash does not serve), the nearest thing the post's author would
 * have written is used and the comment says so.
 */
export interface NaiveOptions {
  /** The Upstash REST URL. */
  url: string;
  /** The Upstash REST token (with a `.tag` so the local server counts it apart). */
  token: string;
  /** @default "naive" */
  prefix?: string;
  /** @default Date.now */
  now?: () => number;
  /** Keep the post's hourly `top_` key between reads. @default NAIVE_TOP_CACHE=1 in the environment */
  topCache?: boolean;
}

type Json = Record<string, unknown>;
type Handler = (m: string[], url: URL, body: Json) => Promise<Response>;

/** Post 1: buckets expire "after 50 hrs" (its figure, 179200 s, is 49.8 h). */
const BUCKET_TTL = 179200;
/** Post 1: "remove any stat whose rank is greater than 240". */
const KEEP = 240;
/** Keep the post's hourly `top_` key between reads (see the trending read). @default off, as issue 8 asks */
const TOP_CACHE = typeof process !== "undefined" && process.env?.NAIVE_TOP_CACHE === "1";
/** Post 2's counter config carries a ttl; a month here. */
const COUNTER_TTL = 30 * 86400;
const PRESENCE_TIMEOUT_S = 300;

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

/** Post 1's bucket name, `20180708_20`: UTC date and hour. */
function hourKey(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}_${p(d.getUTCHours())}`;
}

function dayKey(ms: number): string {
  return hourKey(ms).slice(0, 8);
}

function atOf(value: unknown, now: number): number {
  if (typeof value === "number") return value;
  if (typeof value === "string") return Date.parse(value);
  return now;
}

function pairs(flat: unknown): [string, number][] {
  const list = Array.isArray(flat) ? (flat as string[]) : [];
  const out: [string, number][] = [];
  for (let i = 0; i + 1 < list.length; i += 2) out.push([String(list[i]), Number(list[i + 1])]);
  return out;
}

/** The key of the naive trending bucket of `stream` for the hour of `ms` (for the bench's seeding). */
export function naiveBucketKey(prefix: string, stream: string, ms: number): string {
  return [prefix, "trend", stream, hourKey(ms)].join(":");
}

export function createNaive(options: NaiveOptions): (request: Request) => Promise<Response> {
  const prefix = options.prefix ?? "naive";
  const now = options.now ?? Date.now;
  const topCache = options.topCache ?? TOP_CACHE;
  const key = (...parts: (string | number)[]) => [prefix, ...parts].join(":");

  /** One command, one HTTP request: what the posts' clients do against Upstash. */
  async function cmd(...args: (string | number)[]): Promise<unknown> {
    const res = await fetch(options.url, {
      method: "POST",
      headers: { authorization: `Bearer ${options.token}`, "content-type": "application/json" },
      body: JSON.stringify(args.map(String)),
    });
    const body = (await res.json()) as { result?: unknown; error?: string };
    if (body.error) throw new Error(`${args[0]}: ${body.error}`);
    return body.result;
  }

  const routes: [string, RegExp, Handler][] = [
    // ---- trending (post 1) ----
    [
      "POST",
      /^\/v1\/trending\/([^/]+)\/events$/,
      async ([, stream = ""], _url, body) => {
        const events = (Array.isArray(body.events) ? body.events : [body]) as Json[];
        for (const e of events) {
          const bucket = naiveBucketKey(prefix, stream, atOf(e.at, now()));
          // The post's `ZADD key 1 member INCR EX 179200` does not exist (ZADD has no EX),
          // so it is ZINCRBY plus the "separate call which adds extra latency".
          await cmd("ZINCRBY", bucket, Number(e.count ?? 1), String(e.member));
          await cmd("EXPIRE", bucket, BUCKET_TTL);
        }
        return json(200, { accepted: events.length });
      },
    ],
    [
      "GET",
      /^\/v1\/trending\/([^/]+)\/top$/,
      async ([, stream = ""], url) => {
        const n = Number(url.searchParams.get("n") ?? 10);
        const hours = Number((url.searchParams.get("window") ?? "24h").replace("h", ""));
        const t = now();
        const top = key("trend", stream, `top_${hourKey(t)}`);
        let flat = await cmd("ZRANGE", top, -n, -1, "WITHSCORES");
        // Issue 8 specifies the baseline's read as the post's whole path with no caching
        // (ZRANGE → ZCARD → ZREMRANGEBYRANK → ZUNIONSTORE → EXPIRE → ZRANGE on every call);
        // NAIVE_TOP_CACHE=1 keeps the post's hourly top_ key instead (up to an hour stale,
        // and never counting the current hour).
        if (!topCache || !Array.isArray(flat) || flat.length === 0) {
          // "if err no such key is returned, which will happen when the new hour rolls"
          const previous = key("trend", stream, hourKey(t - 3600_000));
          const card = Number(await cmd("ZCARD", previous));
          if (card > KEEP) await cmd("ZREMRANGEBYRANK", previous, 0, -(KEEP + 1));
          const sources = Array.from({ length: hours }, (_, i) =>
            key("trend", stream, hourKey(t - (i + 1) * 3600_000)),
          );
          await cmd("ZUNIONSTORE", top, sources.length, ...sources);
          await cmd("EXPIRE", top, 3600);
          flat = await cmd("ZRANGE", top, -n, -1, "WITHSCORES");
        }
        // `ZRANGE -10 -1` lists the 10th highest first; the post never reverses it.
        const items = pairs(flat)
          .reverse()
          .map(([member, count], i) => ({ rank: i + 1, member, count }));
        return json(200, { stream, window: { hours }, items, generatedAt: t });
      },
    ],
    // ---- counters (post 3, the Python RedisZSetCounter) ----
    [
      "POST",
      /^\/v1\/counters\/([^/]+)\/incr$/,
      async ([, counter = ""], _url, body) => {
        const items = (Array.isArray(body.items) ? body.items : [body]) as Json[];
        const results = [];
        for (const item of items) {
          const k = key("counter", counter);
          const score = await cmd("ZINCRBY", k, Number(item.by ?? 1), String(item.member));
          await cmd("EXPIRE", k, COUNTER_TTL);
          results.push({ member: item.member, score: Number(score) });
        }
        return json(200, { results });
      },
    ],
    [
      "GET",
      /^\/v1\/counters\/([^/]+)\/top$/,
      async ([, counter = ""], url) => {
        const n = Number(url.searchParams.get("n") ?? 10);
        const flat = await cmd("ZREVRANGE", key("counter", counter), 0, n - 1, "WITHSCORES");
        return json(200, { items: pairs(flat).map(([member, score], i) => ({ rank: i + 1, member, score })) });
      },
    ],
    // ---- histograms (post 2: interval as member, ZINCRBY 1, daily keys, ZUNIONSTORE) ----
    [
      "PUT",
      /^\/v1\/histograms\/([^/]+)$/,
      async ([, name = ""], _url, body) => {
        await cmd("HSET", key("hist", name, "config"), "bucketWidth", Number(body.bucketWidth ?? 10));
        return json(200, { bucketWidth: Number(body.bucketWidth ?? 10) });
      },
    ],
    [
      "POST",
      /^\/v1\/histograms\/([^/]+)\/observations$/,
      async ([, name = ""], _url, body) => {
        const values = (Array.isArray(body.values) ? body.values : [body]) as (Json | number)[];
        const width = Number((await cmd("HGET", key("hist", name, "config"), "bucketWidth")) ?? 10);
        for (const v of values) {
          const value = typeof v === "number" ? v : Number(v.value);
          const at = typeof v === "number" ? now() : atOf(v.at, now());
          await cmd("ZINCRBY", key("hist", name, dayKey(at)), 1, Math.floor(value / width) * width);
        }
        return json(200, { accepted: values.length });
      },
    ],
    [
      "GET",
      /^\/v1\/histograms\/([^/]+)$/,
      async ([, name = ""], url) => {
        const t = now();
        const from = url.searchParams.has("from") ? atOf(url.searchParams.get("from"), t) : t;
        const to = url.searchParams.has("to") ? atOf(url.searchParams.get("to"), t) : t;
        const width = Number((await cmd("HGET", key("hist", name, "config"), "bucketWidth")) ?? 10);
        const days: string[] = [];
        for (let d = from; d <= to + 1; d += 86400_000) days.push(key("hist", name, dayKey(d)));
        let source = days[0] ?? key("hist", name, dayKey(t));
        if (days.length > 1) {
          source = key("hist", name, "union");
          await cmd("ZUNIONSTORE", source, days.length, ...days);
        }
        // The post sorts members with SORT and then ZSCOREs each; Upstash has no SORT,
        // so it is all members with scores in one ZRANGE and the sorting in code.
        const buckets = pairs(await cmd("ZRANGE", source, 0, -1, "WITHSCORES"))
          .map(([lower, count]) => ({ lower: Number(lower), upper: Number(lower) + width, count }))
          .sort((a, b) => a.lower - b.lower);
        const count = buckets.reduce((s, b) => s + b.count, 0);
        const quantile = (q: number) => {
          let seen = 0;
          for (const b of buckets) if ((seen += b.count) >= q * count) return b.upper;
          return null;
        };
        return json(200, {
          count,
          min: buckets[0]?.lower ?? null,
          max: buckets[buckets.length - 1]?.upper ?? null,
          mean: count ? buckets.reduce((s, b) => s + b.count * (b.lower + width / 2), 0) / count : null,
          p50: quantile(0.5),
          p90: quantile(0.9),
          p99: quantile(0.99),
          buckets,
        });
      },
    ],
    // ---- presence (post 4: cid → int id in a hash, int ids in a zset scored by time) ----
    [
      "POST",
      /^\/v1\/presence\/([^/]+)\/heartbeats$/,
      async ([, room = ""], _url, body) => {
        const ids = (Array.isArray(body.ids) ? body.ids : [body.id]) as string[];
        const t = now();
        for (const id of ids) {
          let n = await cmd("HGET", key("presence", "ids"), id);
          if (n === null) {
            n = await cmd("INCR", key("presence", "seq"));
            await cmd("HSET", key("presence", "ids"), id, String(n));
          }
          await cmd("ZADD", key("presence", room), t, String(n));
        }
        return json(200, { online: Number(await cmd("ZCARD", key("presence", room))) });
      },
    ],
    [
      "GET",
      /^\/v1\/presence\/([^/]+)$/,
      async ([, room = ""]) => {
        // The post trims in a backend thread every second; a Worker has no thread, so the read trims.
        await cmd("ZREMRANGEBYSCORE", key("presence", room), "-inf", now() - PRESENCE_TIMEOUT_S * 1000);
        const online = Number(await cmd("ZCARD", key("presence", room)));
        return json(200, { online, timeoutSeconds: PRESENCE_TIMEOUT_S });
      },
    ],
    // ---- leaderboards (post 5: members `<joinedAt>:<player>`, negative scores, a hash per player) ----
    [
      "PUT",
      /^\/v1\/leaderboards\/([^/]+)\/players\/([^/]+)$/,
      async ([, board = "", player = ""], _url, body) => {
        const hash = key("lb", board, player);
        const exists = Number(await cmd("EXISTS", hash)) === 1;
        if (!exists) {
          const rankingId = `${now()}:${player}`;
          await cmd("HSET", hash, "name", String(body.name ?? player), "userRankingId", rankingId);
          await cmd("ZADD", key("lb", board), "NX", -Number(body.score ?? 0), rankingId);
        }
        return json(exists ? 200 : 201, { player });
      },
    ],
    [
      "POST",
      /^\/v1\/leaderboards\/([^/]+)\/players\/([^/]+)\/score$/,
      async ([, board = "", player = ""], _url, body) => {
        const rankingId = String(await cmd("HGET", key("lb", board, player), "userRankingId"));
        const score = -Number(await cmd("ZINCRBY", key("lb", board), -Number(body.by ?? 0), rankingId));
        const rank = Number(await cmd("ZRANK", key("lb", board), rankingId)) + 1;
        return json(200, { score, rank });
      },
    ],
    [
      "GET",
      /^\/v1\/leaderboards\/([^/]+)$/,
      async ([, board = ""], url) => {
        const page = Number(url.searchParams.get("page") ?? 1);
        const limit = Number(url.searchParams.get("limit") ?? 10);
        const from = (page - 1) * limit;
        const rows = pairs(await cmd("ZRANGE", key("lb", board), from, from + limit - 1, "WITHSCORES"));
        const items = [];
        for (const [i, [id, score]] of rows.entries()) {
          const player = id.slice(id.indexOf(":") + 1);
          const name = await cmd("HGET", key("lb", board, player), "name");
          items.push({ rank: from + i + 1, player, name, score: -score });
        }
        const total = Number(await cmd("ZCOUNT", key("lb", board), "-inf", "+inf"));
        return json(200, { items, total, page, limit });
      },
    ],
    [
      "GET",
      /^\/v1\/leaderboards\/([^/]+)\/players\/([^/]+)\/around$/,
      async ([, board = "", player = ""], url) => {
        const k = Number(url.searchParams.get("k") ?? 5);
        const rankingId = String(await cmd("HGET", key("lb", board, player), "userRankingId"));
        const rank = Number(await cmd("ZRANK", key("lb", board), rankingId));
        const from = Math.max(0, rank - k);
        const rows = pairs(await cmd("ZRANGE", key("lb", board), from, rank + k, "WITHSCORES"));
        const items = [];
        for (const [i, [id, score]] of rows.entries()) {
          const who = id.slice(id.indexOf(":") + 1);
          const name = await cmd("HGET", key("lb", board, who), "name");
          items.push({ rank: from + i + 1, player: who, name, score: -score });
        }
        return json(200, { items });
      },
    ],
  ];

  return async (request) => {
    const url = new URL(request.url);
    for (const [method, pattern, handler] of routes) {
      if (method !== request.method) continue;
      const m = pattern.exec(url.pathname);
      if (!m) continue;
      const text = request.method === "GET" ? "" : await request.text();
      const body = (text ? JSON.parse(text) : {}) as Json;
      try {
        return await handler(Array.from(m), url, body);
      } catch (error) {
        return json(500, { error: { code: "internal", message: String(error) } });
      }
    }
    return json(404, { error: { code: "not_found", message: `naive: no route ${request.method} ${url.pathname}` } });
  };
}
