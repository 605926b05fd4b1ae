import type { Ctx } from "../context.ts";
import { dayKeys } from "../presence/keys.ts";
import { HOUR, dayStart, hourIndex } from "../time.ts";
import { streamKeys } from "../trending/keys.ts";
import { MAX_PENDING } from "./deliver.ts";
import { hookKeys, registryKeys } from "./keys.ts";
import { detectPeaksScript, detectTrendingScript } from "./scripts.ts";
import type { StoredWebhook } from "./webhooks.ts";

/**
 * Detection of the events the webhooks feature finds itself, in jobs, bounded by the subscriptions:
 * only the streams and rooms some webhook names in its filter are read (at most MAX_WEBHOOKS).
 * Other features' keys are read through their keys.ts only.
 */

export interface Detected {
  /** Webhooks compared (not skipped as already compared for this hour). */
  checked: number;
  /** Events found, queued (not already waiting), and not queued because the queue was full. */
  events: number;
  queued: number;
  full: number;
}

const NONE: Detected = { checked: 0, events: 0, queued: 0, full: 0 };

/**
 * `trending.entered` / `trending.left`: the top N of the last finished hour against the hour
 * before, per subscribed webhook, once per hour (run after compaction, which has trimmed both
 * buckets to their kept members; the top N are always among them).
 */
export async function detectTrending(ctx: Ctx, hooks: StoredWebhook[]): Promise<Detected> {
  const subs = hooks.flatMap((h) => {
    const wants = (h.events.includes("trending.entered") ? "e" : "") + (h.events.includes("trending.left") ? "l" : "");
    return wants && h.filter && "stream" in h.filter ? [{ hook: h, stream: h.filter.stream, wants }] : [];
  });
  if (subs.length === 0) return NONE;
  const hour = hourIndex(ctx.now) - 1;
  const reg = registryKeys(ctx.prefix);
  const { value } = await detectTrendingScript.run<Detected>(
    ctx.redis,
    {
      pending: reg.pending,
      deliveries: reg.deliveries,
      marks: subs.map((s) => hookKeys(ctx.prefix, s.hook.name).marks),
      current: subs.map((s) => streamKeys(ctx.prefix, s.stream).bucket(hour)),
      previous: subs.map((s) => streamKeys(ctx.prefix, s.stream).bucket(hour - 1)),
    },
    {
      now: ctx.now,
      at: new Date(ctx.now).toISOString(),
      hour,
      hourStart: new Date(hour * HOUR).toISOString(),
      maxPending: MAX_PENDING,
      webhooks: subs.map((s) => s.hook.name),
      streams: subs.map((s) => s.stream),
      sizes: subs.map((s) => s.hook.n),
      wants: subs.map((s) => s.wants),
    },
  );
  return value;
}

/** `presence.peak`: today's PCU of each subscribed room above what its webhook was told today. */
export async function detectPeaks(ctx: Ctx, hooks: StoredWebhook[]): Promise<Detected> {
  const subs = hooks.flatMap((h) =>
    h.events.includes("presence.peak") && h.filter && "room" in h.filter ? [{ hook: h, room: h.filter.room }] : [],
  );
  if (subs.length === 0) return NONE;
  const reg = registryKeys(ctx.prefix);
  const start = dayStart(ctx.now);
  const { value } = await detectPeaksScript.run<Detected>(
    ctx.redis,
    {
      pending: reg.pending,
      deliveries: reg.deliveries,
      marks: subs.map((s) => hookKeys(ctx.prefix, s.hook.name).marks),
      dailies: subs.map((s) => dayKeys(ctx.prefix, s.room, ctx.now).daily),
    },
    {
      now: ctx.now,
      at: new Date(ctx.now).toISOString(),
      day: new Date(start).toISOString().slice(0, 10),
      dayStart: start,
      maxPending: MAX_PENDING,
      webhooks: subs.map((s) => s.hook.name),
      rooms: subs.map((s) => s.room),
    },
  );
  return value;
}
