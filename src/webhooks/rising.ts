import type { Ctx } from "../context.ts";
import { keyOf } from "../keys.ts";
import { asList } from "../redis/script.ts";
import { HOUR, MINUTE, hourIndex } from "../time.ts";
import * as trending from "../trending/index.ts";
import { registryKeys as trendingRegistry } from "../trending/keys.ts";
import { listScript } from "../trending/read-scripts.ts";
import { MAX_LISTED, MAX_TOP_N } from "../trending/validate.ts";
import { risingToldKey } from "./keys.ts";
import { emitMany, type StoredWebhook } from "./webhooks.ts";

// trending.rising, apart from detect.ts's entered/left and peaks: it reads through the trending
// feature's own rising read and keeps no marks, so it shares none of their scripts.
/** Streams one minute run reads for `trending.rising` (2 round trips each at most: the rising read, one emit of its findings). */
export const RISING_STREAMS_PER_RUN = 5;
/**
 * Rising members one stream may report per run: a page of the members at or above the least
 * threshold (highest score first), the page turning each minute (see detectRising).
 */
export const RISING_EVENTS_PER_STREAM = 10;
/** The baseline (finished hours) the current hour is compared with: the GET's default. */
export const RISING_BASELINE_HOURS = 24;

/**
 * STRING: the rotation's cursor, a count INCRBY'd by each run's turn (the streams it reads), so the
 * next run starts where the last one stopped however many streams each run's share pays (review
 * 13: turns of `minute × per` with a `per` varying run to run skipped some streams for good).
 * Taken modulo the streams listed: when the list changes, one round of turns is shifted once.
 */
export function risingCursorKey(prefix: string): string {
  return keyOf(prefix, "webhooks", "_risingCursor");
}

/**
 * The streams to read, and where this run's turn starts: the registry's list (a webhook without a
 * filter) with the cursor's INCRBY in the same request; with named streams only, the INCRBY alone,
 * and only when they are more than one turn (`rotating`). Without a pipeline (a library user's
 * client), turns by the minute as before.
 */
async function streamsAndStart(
  ctx: Ctx,
  named: string[],
  listing: boolean,
  per: number,
): Promise<{ streams: string[]; start: number | null }> {
  const key = risingCursorKey(ctx.prefix);
  const after = (p: { incrby: (key: string, by: number) => unknown }) => void p.incrby(key, per);
  let all: string[] = [];
  let cursor: number | null = null;
  if (listing) {
    const piped = await listScript.runPiped<string[] | Record<string, never>>(
      ctx.redis,
      { names: trendingRegistry(ctx.prefix).names },
      { after: "", limit: MAX_LISTED },
      after,
      true, // a NOSCRIPT answer must not advance the cursor twice
    );
    if (piped) {
      all = asList(piped.value);
      cursor = Number(piped.after[0]) - per;
    } else all = await trending.list(ctx);
  }
  const streams = [...new Set([...named, ...all])].sort();
  if (!listing && streams.length > per && ctx.redis.pipeline) {
    const p = ctx.redis.pipeline();
    after(p);
    cursor = Number(((await p.exec()) as unknown[])[0]) - per;
  }
  return { streams, start: cursor };
}

export interface RisingDetected {
  /** Streams read this run, and how many the subscriptions name in all (`more`: some wait for a later run). */
  streams: number;
  of: number;
  more: boolean;
  /** Rising members at or above the least threshold, queued (for at least one webhook), already sent this hour, not queued (full). */
  events: number;
  queued: number;
  repeated: number;
  full: number;
}

/**
 * `trending.rising`: the trending feature's rising read (`trending.rising`, the same as
 * `GET /v1/trending/{stream}/rising`) on the streams the subscribed webhooks name (a webhook
 * without a filter: every stream of the registry, at most 1,000), at most RISING_STREAMS_PER_RUN
 * per run, taking turns minute by minute when there are more. Each member whose score reaches the
 * least threshold is emitted, RISING_EVENTS_PER_STREAM a run (the enqueue gives it only to webhooks
 * whose own threshold it reaches); its id is made of the hour and the member, so it is sent at most once per hour
 * however many runs see it.
 */
export async function detectRising(
  ctx: Ctx,
  hooks: StoredWebhook[],
  retentionHours: number,
  subrequests = Number.POSITIVE_INFINITY,
): Promise<RisingDetected> {
  const subs = hooks.filter((h) => h.events.includes("trending.rising"));
  const threshold = Math.min(...subs.map((h) => h.threshold ?? Infinity));
  const none = { streams: 0, of: 0, more: false, events: 0, queued: 0, repeated: 0, full: 0 };
  if (subs.length === 0) return none;
  const named = subs.flatMap((h) => (h.filter && "stream" in h.filter ? [h.filter.stream] : []));
  const listing = subs.some((h) => h.filter === null);
  // at most `subrequests` round trips (the job's share of its invocation's): the registry's list
  // (with the cursor's INCRBY) when a webhook has no filter, else the INCRBY alone when the named
  // streams are more than a turn, then two a stream (its rising read, and its events' queueing);
  // short of one stream, nothing is read and the streams wait for the next runs (`more`)
  const distinct = new Set(named).size;
  const first = listing ? 1 : 0;
  let affordable = Math.floor((subrequests - first) / 2);
  if (!listing && distinct > Math.min(RISING_STREAMS_PER_RUN, affordable)) {
    affordable = Math.floor((subrequests - 1) / 2);
  }
  if (affordable < 1) return { ...none, of: distinct, more: true };
  const per = Math.min(RISING_STREAMS_PER_RUN, affordable);
  const { streams, start: cursor } = await streamsAndStart(ctx, named, listing, per);
  // take turns: from the cursor (what the runs before read in all), or the minute × per without one
  const start =
    streams.length <= per
      ? 0
      : cursor !== null
        ? ((cursor % streams.length) + streams.length) % streams.length
        : (Math.floor(ctx.now / MINUTE) * per) % streams.length;
  const turn = streams.length > per ? [...streams, ...streams].slice(start, start + per) : streams;
  const hour = hourIndex(ctx.now) * HOUR;
  // the event id's key keeps the ISO hour it was made of before `data.hour` became epoch ms
  // (2026-11-26), so a member found rising before and after the upgrade is one event
  const hourKey = new Date(hour).toISOString();
  // told once per member, hour and webhook life, in a set of the hour (kept one hour past its end)
  const told = { key: risingToldKey(ctx.prefix, hourIndex(ctx.now)), ttlMs: hour + 2 * HOUR - ctx.now };
  const out: RisingDetected = { ...none, streams: turn.length, of: streams.length, more: streams.length > turn.length };
  for (const stream of turn) {
    // the read's most items (the same one command: it reads all its candidates anyway), then a page
    // of RISING_EVENTS_PER_STREAM of those at or above the threshold, the page turning each minute:
    // members told already stay at the top all hour, so the top page alone never told the ones
    // below it (review 23); now each is told within ⌈members / page⌉ minutes, a run's cost unchanged
    const found = await trending.rising(ctx, stream, {
      retentionHours,
      n: MAX_TOP_N,
      baselineHours: Math.min(RISING_BASELINE_HOURS, retentionHours),
    });
    const all = found.items.filter((item) => item.score >= threshold);
    if (all.length === 0) continue;
    const pages = Math.ceil(all.length / RISING_EVENTS_PER_STREAM);
    const page = Math.floor(ctx.now / MINUTE) % pages;
    const above = all.slice(page * RISING_EVENTS_PER_STREAM, (page + 1) * RISING_EVENTS_PER_STREAM);
    out.events += above.length;
    const sent = await emitMany(
      ctx,
      above.map((item) => ({
        type: "trending.rising" as const,
        subject: { kind: "stream" as const, name: stream },
        key: `${hourKey}\n${item.member}`,
        score: item.score,
        data: {
          stream,
          hour,
          member: item.member,
          count: item.count,
          baseline: item.baseline,
          ratio: item.ratio,
          score: item.score,
        },
      })),
      told,
    );
    out.queued += sent.queued;
    out.repeated += sent.repeated;
    out.full += sent.full;
  }
  return out;
}
