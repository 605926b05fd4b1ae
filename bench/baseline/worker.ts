/**
 * The naive baseline as a Worker, so the bench serves it under the same
 * `wrangler dev` (workerd) as the service and the ratios compare code, not
 * harnesses. Bundled by `bench/run.ts` with a generated wrangler config.
 *
 * Each Redis command is one POST of the command as a JSON array to the
 * Upstash REST URL with the bearer token: exactly the request @upstash/redis
 * sends for a single command with auto-pipelining off (as the service's
 * client is configured), through workerd's fetch like the service's.
 *
 * `FLOOR=1` makes it the floor Worker instead: every request is answered
 * after one pipelined Upstash call (`/pipeline` with one `PING`) and nothing
 * else — no routing, validation or script; what any Worker that touches
 * Upstash once per request pays on this machine.
 */
import { createNaive } from "./naive.ts";

interface NaiveEnv {
  UPSTASH_REDIS_REST_URL: string;
  UPSTASH_REDIS_REST_TOKEN: string;
  NAIVE_PREFIX?: string;
  /** "1": keep the post's hourly top_ key between reads (see naive.ts). */
  NAIVE_TOP_CACHE?: string;
  FLOOR?: string;
}

let handler: ((request: Request) => Promise<Response>) | undefined;

async function floor(env: NaiveEnv): Promise<Response> {
  const res = await fetch(`${env.UPSTASH_REDIS_REST_URL}/pipeline`, {
    method: "POST",
    headers: { authorization: `Bearer ${env.UPSTASH_REDIS_REST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify([["PING"]]),
  });
  const body = await res.text();
  return new Response(JSON.stringify({ floor: true, upstash: res.status, bytes: body.length }), {
    status: res.ok ? 200 : 502,
    headers: { "content-type": "application/json" },
  });
}

export default {
  async fetch(request: Request, env: NaiveEnv): Promise<Response> {
    const path = new URL(request.url).pathname;
    if (path === "/healthz") return new Response("ok");
    if (env.FLOOR === "1") return floor(env);
    handler ??= createNaive({
      url: env.UPSTASH_REDIS_REST_URL,
      token: env.UPSTASH_REDIS_REST_TOKEN,
      prefix: env.NAIVE_PREFIX ?? "naive",
      topCache: env.NAIVE_TOP_CACHE === "1",
    });
    return handler(request);
  },
};
