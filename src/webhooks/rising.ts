import type { Ctx } from "../context.ts";
import { HOUR, MINUTE, hourIndex } from "../time.ts";
import * as trending from "../trending/index.ts";
import { risingToldKey } from "./keys.ts";
import { emitMany, type StoredWebhook } from "./webhooks.ts";

// trending.rising, apart from detect.ts's entered/left and peaks: it reads through the trending
// feature's own rising read and keeps no marks, so it shares none of their scripts.
/** Streams one minute run reads for `trending.rising` (2 round trips each at most: the rising read, one emit of its findings). */
export const RISING_STREAMS_PER_RUN = 5;
/** Rising members one stream may report per run, highest score first. */
export const RISING_EVENTS_PER_STREAM = 10;
/** The baseline (finished hours) the current hour is compared with: the GET's default. */
export const RISING_BASELINE_HOURS = 24;

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
 * least threshold is emitted (the enqueue gives it only to webhooks whose own threshold it
 * reaches); its id is made of the hour and the member, so it is sent at most once per hour
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
  // when a webhook has no filter, then two a stream (its rising read, and its events' queueing);
  // short of one stream, nothing is read and the streams wait for the next runs (`more`)
  const affordable = Math.floor((subrequests - (listing ? 1 : 0)) / 2);
  if (affordable < 1) return { ...none, of: new Set(named).size, more: true };
  const all = listing ? await trending.list(ctx) : [];
  const streams = [...new Set([...named, ...all])].sort();
  const per = Math.min(RISING_STREAMS_PER_RUN, affordable);
  // take turns: the run of minute m reads the streams from m × per on (wrapping)
  const start = streams.length > per ? (Math.floor(ctx.now / MINUTE) * per) % streams.length : 0;
  const turn = streams.length > per ? [...streams, ...streams].slice(start, start + per) : streams;
  const hour = hourIndex(ctx.now) * HOUR;
  // the event id's key keeps the ISO hour it was made of before `data.hour` became epoch ms
  // (2026-11-26), so a member found rising before and after the upgrade is one event
  const hourKey = new Date(hour).toISOString();
  // told once per member, hour and webhook life, in a set of the hour (kept one hour past its end)
  const told = { key: risingToldKey(ctx.prefix, hourIndex(ctx.now)), ttlMs: hour + 2 * HOUR - ctx.now };
  const out: RisingDetected = { ...none, streams: turn.length, of: streams.length, more: streams.length > turn.length };
  for (const stream of turn) {
    const found = await trending.rising(ctx, stream, {
      retentionHours,
      n: RISING_EVENTS_PER_STREAM,
      baselineHours: Math.min(RISING_BASELINE_HOURS, retentionHours),
    });
    const above = found.items.filter((item) => item.score >= threshold);
    if (above.length === 0) continue;
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
