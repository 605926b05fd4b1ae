/**
 * The Workers edge cache for reads that may be a little old (trending top N): a
 * cached answer is served without a Redis round trip while the request accepts
 * its age. Entries are per deployment and per UTC hour (a new hour, new keys),
 * and the Cache API expires them after `seconds`.
 */
import type { Context } from "hono";
import { hourIndex } from "../src/time.ts";
import type { AppEnv } from "./types.ts";

/** A cacheable answer: it says when it was computed, which gives its age on a hit. */
export interface Generated {
  generatedAt: number;
}

/**
 * Edge-cache key: deployment (Redis URL + key prefix), the read's `parts` (area, name, options)
 * and the hour, never shared across them.
 */
async function cacheKey(c: Context<AppEnv>, area: string, parts: readonly (string | number)[]): Promise<string> {
  const deployment = `${c.env.UPSTASH_REDIS_REST_URL ?? ""}\n${c.get("config").keyPrefix}`;
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(deployment));
  const id = [...new Uint8Array(digest).slice(0, 12)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `https://edgestats.cache/${area}/${id}/${parts.join("/")}/${hourIndex(c.get("now"))}`;
}

/**
 * The oldest cached answer the request accepts, in seconds: 0 for
 * `Cache-Control: no-cache`/`no-store`/`max-age=0` (a fresh answer), the
 * request's `max-age` when it is shorter than ours, else ours.
 */
function acceptedAge(c: Context<AppEnv>, seconds: number): number {
  const header = (c.req.header("cache-control") ?? "").toLowerCase();
  if (/\bno-cache\b|\bno-store\b/.test(header)) return 0;
  const maxAge = /\bmax-age\s*=\s*"?(\d+)/.exec(header);
  return maxAge ? Math.min(seconds, Number(maxAge[1])) : seconds;
}

/**
 * The answer of `compute`, or a cached one young enough for the request. Sets
 * `X-Edgestats-Cache` (hit, miss, bypass, or off: `seconds` ≤ 0, or a
 * `*.workers.dev` host, where the Cache API does nothing), and on a hit `Age`;
 * `Cache-Control` tells the client how long the answer stays good.
 */
export async function edgeCached<T extends Generated>(
  c: Context<AppEnv>,
  area: string,
  parts: readonly (string | number)[],
  seconds: number,
  compute: () => Promise<T>,
): Promise<T> {
  // The Cache API silently does nothing on *.workers.dev (it needs a route on a custom domain):
  // say so instead of reporting misses that can never turn into hits.
  if (seconds <= 0 || new URL(c.req.url).hostname.endsWith(".workers.dev")) {
    c.header("X-Edgestats-Cache", "off");
    return compute();
  }

  // workers-types' CacheStorage has `default`; the DOM lib's declaration shadows it
  const cache = (caches as unknown as { default: Cache }).default;
  const key = await cacheKey(c, area, parts);
  const accepted = acceptedAge(c, seconds);
  const fresh = accepted === 0;
  if (!fresh) {
    const hit = await cache.match(key);
    const body = hit ? ((await hit.json()) as T) : undefined;
    const age = body ? Math.max(0, Math.floor((c.get("now") - body.generatedAt) / 1000)) : 0;
    // the Cache API expires entries by itself; this also honours a shorter max-age the client asked for
    if (body && age <= accepted) {
      c.header("X-Edgestats-Cache", "hit");
      c.header("Age", String(age));
      c.header("Cache-Control", `private, max-age=${Math.max(0, seconds - age)}`);
      return body;
    }
  }
  const result = await compute();
  const text = JSON.stringify(result);
  await cache.put(
    key,
    new Response(text, {
      headers: { "content-type": "application/json", "cache-control": `public, max-age=${seconds}` },
    }),
  );
  c.header("X-Edgestats-Cache", fresh ? "bypass" : "miss");
  c.header("Cache-Control", `private, max-age=${seconds}`);
  return result;
}
