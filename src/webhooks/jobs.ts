import type { Job } from "../jobs.ts";
import { deliverDue } from "./deliver.ts";
import { detectPeaks, detectTrending } from "./detect.ts";
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
 * subscribed rooms, then the deliveries due (new events and retries). One round trip with no webhook.
 */
export const webhooksJob: Job = async (ctx, config) => {
  const hooks = await stored(ctx);
  if (hooks.length === 0) return { webhooks: 0 };
  const found = await detectPeaks(ctx, hooks);
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

/** The webhooks feature's jobs, by the names functions/jobs.ts schedules them under. */
export const jobs = { "webhooks.trending": trendingWebhooksJob, webhooks: webhooksJob } satisfies Record<string, Job>;
