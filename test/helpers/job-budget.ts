/**
 * What the tests of the jobs' subrequest budget (src/job-budget.ts) share: a library context on a
 * test api's Redis and clock, work set up in parallel batches, webhooks whose receiver refuses
 * every delivery (the local Upstash server), leaderboard.leader events queued for them, and one
 * scheduled run counted twice, by the budget and by the local server. The subrequest-budget,
 * subrequest-reserve and review 13 tests each had their own copy; one copy keeps them counting the
 * same way.
 */
import { expect } from "vitest";
import { runScheduledCounted } from "../../functions/scheduled.ts";
import { createRedis } from "../../src/redis/client.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import type { TestApi } from "./worker.ts";

const admin = { key: "admin" };

/** The library's context on `api`'s Redis and key prefix, at `now` (the api's clock by default). */
export const ctxOf = (api: TestApi, now = api.now) => ({
  redis: createRedis({ url: api.env.UPSTASH_REDIS_REST_URL, token: api.env.UPSTASH_REDIS_REST_TOKEN }),
  prefix: api.prefix,
  now,
});

/** Runs `fn` over `items`, `width` at a time. */
export async function inParallel<T>(items: T[], width: number, fn: (item: T) => Promise<unknown>) {
  for (let i = 0; i < items.length; i += width) await Promise.all(items.slice(i, i + width).map(fn));
}

/**
 * `putHook(api, name, settings)` for webhooks delivering to `path` on the local Upstash server
 * (which refuses them: each delivery is one fetch, then a retry), signed with `secret`.
 */
export const webhookPutter =
  (path: string, secret: string) => async (api: TestApi, name: string, settings: Record<string, unknown>) => {
    const res = await api.put(
      `/v1/webhooks/${name}`,
      { url: `${api.env.UPSTASH_REDIS_REST_URL}/${path}`, secret, ...settings },
      admin,
    );
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
  };

export interface LeaderEvents {
  /** The emit's clock (the api's by default). */
  now?: number;
  /** Players are `p<tag>-<i>` with a tag, `p<i>` without. */
  tag?: number;
  /** When set, each emit must have queued this many deliveries (one a subscribed webhook). */
  queued?: number;
}

/** `events` leaderboard.leader events on board "b", each for its own player (its dedup key). */
export async function queueLeaderEvents(api: TestApi, events: number, options: LeaderEvents = {}) {
  for (let i = 0; i < events; i++) {
    const player = options.tag === undefined ? `p${i}` : `p${options.tag}-${i}`;
    const sent = await webhooks.emit(ctxOf(api, options.now ?? api.now), {
      type: "leaderboard.leader",
      subject: { kind: "board", name: "b" },
      data: { board: "b", player },
      key: player,
    });
    if (options.queued !== undefined) expect(sent.queued).toBe(options.queued);
  }
}

export type Results = Record<string, Record<string, unknown>>;

/**
 * Fires `cron` at `at` with `env` (the api's by default) and checks what it sent twice: every job
 * answered without an error, the budget's count equals the local server's Redis requests plus one
 * fetch a claimed delivery, and it stays within `limit`.
 */
export async function fireCounted(api: TestApi, cron: string, at: number, limit: number, env: Env = api.env) {
  await api.resetStats();
  const run = await runScheduledCounted(cron, at, env);
  const redis = (await api.stats()).requests;
  const results = run.results as Results;
  const deliveries = Object.values(results).reduce((sum, r) => sum + Number(r.claimed ?? 0), 0);
  for (const [name, result] of Object.entries(results)) expect(result.error, `${name} at ${limit}`).toBeUndefined();
  expect(run.subrequests, `counted = sent at ${limit}`).toBe(redis + deliveries);
  expect(run.subrequests, `within ${limit}`).toBeLessThanOrEqual(limit);
  return { ...run, results };
}
