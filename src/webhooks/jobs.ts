import type { Job } from "../jobs.ts";
import { deliverDue } from "./deliver.ts";
import { detectPeaks, detectRising, detectTrending } from "./detect.ts";
import { settingsOf, stored } from "./webhooks.ts";

/**
 * Cron "5 * * * *", after `compact` (and `POST /internal/jobs/webhooks.trending`):
 * trending.entered/left between the last two finished hours, then the deliveries due.
 * One round trip with no webhook.
 */
export const trendingWebhooksJob: Job = async (ctx, config) => {
  const hooks = await stored(ctx);
  if (hooks.length === 0) return { webhooks: 0 };
  const found = await detectTrending(ctx, hooks);
  const sent = await deliverDue(ctx, settingsOf(config));
  return {
    webhooks: hooks.length,
    checked: found.checked,
    events: found.events,
    queued: found.queued,
    full: found.full,
    ...sent,
  };
};

/**
 * Cron "* * * * *", after `trim` (and `POST /internal/jobs/webhooks`): presence.peak of the
 * subscribed rooms, trending.rising of the subscribed streams (`rising*`: detect.ts, detectRising),
 * then the deliveries due (new events and retries). One round trip with no webhook; rising adds
 * nothing while no webhook subscribes to it (it shares the webhooks' read).
 */
export const webhooksJob: Job = async (ctx, config) => {
  const hooks = await stored(ctx);
  if (hooks.length === 0) return { webhooks: 0 };
  const found = await detectPeaks(ctx, hooks);
  const rising = await detectRising(ctx, hooks, config.trendingRetentionHours);
  const sent = await deliverDue(ctx, settingsOf(config));
  return {
    webhooks: hooks.length,
    checked: found.checked,
    events: found.events,
    queued: found.queued,
    full: found.full,
    ...(rising.of > 0
      ? {
          risingStreams: rising.streams,
          risingEvents: rising.events,
          risingQueued: rising.queued,
          risingRepeated: rising.repeated,
          risingFull: rising.full,
          risingMore: rising.more,
        }
      : {}),
    ...sent,
  };
};

/** The webhooks feature's jobs, by the names functions/jobs.ts schedules them under. */
export const jobs = { "webhooks.trending": trendingWebhooksJob, webhooks: webhooksJob } satisfies Record<string, Job>;
