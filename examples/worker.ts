/**
 * A plain Cloudflare Worker using the library (no edgestats service):
 *
 *   POST /search?q=redis   counts a search (trending + a daily counter)
 *   GET  /trending?n=10     the top searches of the last 24 h
 *   cron "5 * * * *"        compaction and counter sweep; "* * * * *" presence trim
 *
 * Secrets: UPSTASH_REDIS_REST_URL, UPSTASH_REDIS_REST_TOKEN.
 */
import { Redis } from "@upstash/redis/cloudflare";
import { Edgestats, EdgestatsError } from "edgestats";

export interface Env {
  UPSTASH_REDIS_REST_URL: string;
  UPSTASH_REDIS_REST_TOKEN: string;
  /** @default "es" */
  KEY_PREFIX?: string;
}

function statsOf(env: Env): Edgestats {
  // No retries: a re-sent increment would count twice (pass idempotencyKey to writes you retry).
  return new Edgestats({ redis: Redis.fromEnv(env, { retry: { retries: 0 } }), prefix: env.KEY_PREFIX ?? "es" });
}

/** The library's errors carry a code; map them to statuses like the service does. */
export function errorResponse(error: unknown): Response {
  if (!(error instanceof EdgestatsError)) throw error;
  const status =
    { invalid_request: 400, not_found: 404, storage_unavailable: 503 }[error.code] ??
    (error.code.endsWith("conflict") ? 409 : 500);
  return Response.json({ error: { code: error.code, message: error.message, details: error.details } }, { status });
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    const stats = statsOf(env);
    try {
      if (request.method === "POST" && url.pathname === "/search") {
        const q = url.searchParams.get("q") ?? "";
        const { accepted } = await stats.trending("searches").record(q);
        await stats.counter("searches-daily").incr({ member: q, period: "day" });
        return Response.json({ accepted });
      }
      if (request.method === "GET" && url.pathname === "/trending") {
        const n = Number(url.searchParams.get("n") ?? 10);
        const top = await stats.trending("searches").top({ n });
        return Response.json({ items: top.items, exact: top.exact });
      }
      return Response.json(
        { error: { code: "not_found", message: "Try POST /search?q= or GET /trending." } },
        { status: 404 },
      );
    } catch (error) {
      return errorResponse(error);
    }
  },

  async scheduled(controller: { cron: string }, env: Env): Promise<void> {
    const stats = statsOf(env);
    if (controller.cron === "5 * * * *") {
      await stats.jobs.compact();
      await stats.jobs.sweepCounters();
    } else {
      await stats.jobs.trim();
    }
  },
};
