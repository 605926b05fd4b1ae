import type { Config } from "../config.ts";
import { deferred, leftOf, withNeeds, type Job, type JobCtx } from "../jobs.ts";
import { DELIVER_BATCH, deliverDue } from "./deliver.ts";
import { detectPeaks, detectTrending } from "./detect.ts";
import { detectRising, RISING_STREAMS_PER_RUN } from "./rising.ts";
import { settingsOf, stored } from "./webhooks.ts";

/** Subrequests of the smallest run with work: the webhooks, one detection script, the claim, one delivery, the settle. */
const LEAST_SUBREQUESTS = 5;
/**
 * Subrequests kept back for a webhooks job while the jobs before it in the trigger run: its
 * smallest run and 5 deliveries more, so a busy presence trim or compaction never holds the
 * deliveries to one a run (on the free plan's 50).
 */
const KEPT_BACK = LEAST_SUBREQUESTS + 5;
/** Deliveries a run sends before trending.rising reads when its share cannot pay both (review 13). */
const DELIVERIES_KEPT = 5;
/** Subrequests of rising's full turn: the registry's list (or the cursor), two a stream. */
const RISING_FULL = 1 + 2 * RISING_STREAMS_PER_RUN;

interface Sent {
  claimed: number;
  dropped: number;
  delivered: number;
  retrying: number;
  failed: number;
  /** Claimed but not sent: the run's share no longer paid them (deliver.ts), due again at once. */
  unsent?: number;
  deliveriesDeferred?: true;
  /** Deliveries stay due now (past the claim's limit, or given back unsent): the job's `more`. */
  more?: boolean;
}

/** Two delivery passes' figures as one. */
function sum(a: Sent, b: Sent): Sent {
  return {
    claimed: a.claimed + b.claimed,
    dropped: a.dropped + b.dropped,
    delivered: a.delivered + b.delivered,
    retrying: a.retrying + b.retrying,
    failed: a.failed + b.failed,
    ...(a.unsent || b.unsent ? { unsent: (a.unsent ?? 0) + (b.unsent ?? 0) } : {}),
    ...(b.deliveriesDeferred && a.claimed === 0 ? { deliveriesDeferred: true } : {}),
    // the second pass's claim came last: it says what stays due (a deferred one: the first's)
    ...(b.more !== undefined || a.more !== undefined ? { more: b.more ?? a.more } : {}),
  };
}

/**
 * The deliveries due, as many as the job's share of its invocation's subrequests pays (one each,
 * with the claim and the settle around them; DELIVER_BATCH at most): those not claimed stay due
 * for the next run. Sent with the invocation's counted fetch.
 */
async function deliverWithin(ctx: JobCtx, config: Config, atMost = DELIVER_BATCH): Promise<Sent> {
  const limit = Math.min(atMost, leftOf(ctx) - 2);
  if (limit < 1) return { claimed: 0, dropped: 0, delivered: 0, retrying: 0, failed: 0, deliveriesDeferred: true };
  return deliverDue(ctx, { ...settingsOf(config), fetch: ctx.budget?.fetch }, limit, () => leftOf(ctx));
}

/**
 * Cron "5 * * * *", after `compact` (and `POST /internal/jobs/webhooks.trending`):
 * trending.entered/left between the last two finished hours, then the deliveries due.
 * One round trip with no webhook.
 */
export const trendingWebhooksJob: Job = withNeeds(
  async (ctx, config) => {
    if (leftOf(ctx) < LEAST_SUBREQUESTS) return deferred();
    const hooks = await stored(ctx);
    if (hooks.length === 0) return { webhooks: 0 };
    const found = await detectTrending(ctx, hooks);
    const sent = await deliverWithin(ctx, config);
    return {
      webhooks: hooks.length,
      checked: found.checked,
      events: found.events,
      queued: found.queued,
      full: found.full,
      ...sent,
    };
  },
  // the webhooks' list, detectTrending, the claim and the settle
  { scripts: 4, least: KEPT_BACK },
);

/**
 * Cron "* * * * *", after `trim` (and `POST /internal/jobs/webhooks`): presence.peak of the
 * subscribed rooms, trending.rising of the subscribed streams (`rising*`: rising.ts, detectRising),
 * then the deliveries due (new events and retries). One round trip with no webhook; rising adds
 * nothing while no webhook subscribes to it (it shares the webhooks' read). Rising reads what the
 * share of subrequests leaves past the smallest delivery step (claim, one delivery, settle); on a
 * share too small for its full turn and 5 deliveries, up to 5 due deliveries are sent first.
 */
export const webhooksJob: Job = withNeeds(
  async (ctx, config) => {
    if (leftOf(ctx) < LEAST_SUBREQUESTS) return deferred();
    const hooks = await stored(ctx);
    if (hooks.length === 0) return { webhooks: 0 };
    const found = await detectPeaks(ctx, hooks);
    // KEPT_BACK's 5 deliveries are the deliveries', not rising's: when the share cannot pay rising's
    // full turn and 5 deliveries (a busy trim on the free plan's 50), up to 5 due go first (one
    // claim, found empty when none is due) and rising reads with what is left; its own events go
    // in the second pass if the share still pays it, else next minute. A roomy share: as before.
    const tight =
      hooks.some((h) => h.events.includes("trending.rising")) && leftOf(ctx) - 3 < RISING_FULL + DELIVERIES_KEPT;
    const firstLimit = Math.min(DELIVERIES_KEPT, leftOf(ctx) - 2);
    const first = tight ? await deliverWithin(ctx, config, DELIVERIES_KEPT) : null;
    const rising = await detectRising(ctx, hooks, config.trendingRetentionHours, leftOf(ctx) - 3);
    // a first pass that claimed fewer than it could found nothing more due: only rising's events may be
    const drained = first !== null && !first.deliveriesDeferred && first.claimed < firstLimit;
    const second = first && drained && rising.queued === 0 ? null : await deliverWithin(ctx, config);
    const sent = first ? (second ? sum(first, second) : first) : second!;
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
  },
  // the webhooks' list, detectPeaks, the registry's list and the rising read, emitMany, the claim, the settle
  { scripts: 7, least: KEPT_BACK },
);

/** The webhooks feature's jobs, by the names functions/jobs.ts schedules them under. */
export const jobs = { "webhooks.trending": trendingWebhooksJob, webhooks: webhooksJob } satisfies Record<string, Job>;
