/**
 * Webhooks: admin-managed subscriptions to events (trending.entered/left/rising, presence.peak,
 * leaderboard.leader), delivered at least once, signed, through QStash or directly.
 * Other features report their events with `emit`.
 */
export {
  put,
  list,
  remove,
  deliveries,
  test,
  emit,
  emitBlock,
  emitMany,
  subscriptions,
  settingsOf,
  type Webhook,
  type DeliveryRecord,
  type EventInput,
} from "./webhooks.ts";
export { verifySignature, signature, SIGNATURE_HEADER } from "./sign.ts";
export { deliverDue, type DeliverySettings, DELIVERY_LOG_SIZE, MAX_ATTEMPTS } from "./deliver.ts";
export {
  EVENT_TYPES,
  MAX_WEBHOOKS,
  MIN_SECRET_LENGTH,
  MAX_TOP_N,
  MAX_RISING_THRESHOLD,
  type EventType,
  type Filter,
  type WebhookInput,
} from "./validate.ts";
export { emitLua } from "./scripts.ts";
export { PEAK_ROLLOVER_MS } from "./detect.ts";
export { RISING_BASELINE_HOURS, RISING_EVENTS_PER_STREAM, RISING_STREAMS_PER_RUN, risingCursorKey } from "./rising.ts";
export { jobs, trendingWebhooksJob, webhooksJob } from "./jobs.ts";
