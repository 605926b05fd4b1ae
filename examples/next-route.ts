/**
 * A Next.js App Router route handler (`app/api/scores/route.ts`), or any
 * Web-standard runtime: plain `Request` in, `Response` out.
 *
 *   POST { "player": "ada", "name": "Ada", "points": 10 }   adds points (joins the player first)
 *   GET  ?page=1                                          a page of the weekly board
 *
 * Env: UPSTASH_REDIS_REST_URL, UPSTASH_REDIS_REST_TOKEN.
 */
import { Redis } from "@upstash/redis";
import { Edgestats, EdgestatsError, NotFoundError } from "edgestats";

const BOARD = "weekly";
let stats: Edgestats | undefined;
function edgestats(): Edgestats {
  // Created on first use, so importing the module needs no env (Next.js builds import routes).
  stats ??= new Edgestats({
    redis: Redis.fromEnv({ retry: { retries: 0 } }),
    prefix: process.env.EDGESTATS_PREFIX ?? "es",
  });
  return stats;
}

function fail(error: unknown): Response {
  if (!(error instanceof EdgestatsError)) throw error;
  const status = error.code === "not_found" ? 404 : error.code === "storage_unavailable" ? 503 : 400;
  return Response.json({ error: { code: error.code, message: error.message, details: error.details } }, { status });
}

export async function POST(request: Request): Promise<Response> {
  const body = (await request.json().catch(() => null)) as { player?: string; name?: string; points?: number } | null;
  if (!body || typeof body.player !== "string" || typeof body.points !== "number") {
    return Response.json(
      { error: { code: "invalid_request", message: 'Send {"player", "name"?, "points"}.' } },
      { status: 400 },
    );
  }
  const board = edgestats().leaderboard(BOARD);
  // The request's own id makes a retried POST count once.
  const idempotencyKey = request.headers.get("idempotency-key") ?? undefined;
  try {
    try {
      return Response.json(await board.increment(body.player, body.points, { idempotencyKey }));
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      await board.join(body.player, { name: body.name ?? body.player });
      return Response.json(await board.increment(body.player, body.points, { idempotencyKey }));
    }
  } catch (error) {
    return fail(error);
  }
}

export async function GET(request: Request): Promise<Response> {
  const page = Number(new URL(request.url).searchParams.get("page") ?? 1);
  try {
    return Response.json(await edgestats().leaderboard(BOARD).page({ page, limit: 10 }));
  } catch (error) {
    return fail(error);
  }
}
