import { keyOf } from "../keys.ts";

/**
 * Webhook keys. Registry keys start with `_`, which no webhook name can (names start with a letter
 * or digit), so a webhook called `pending` never spells a registry key.
 */
export function registryKeys(prefix: string) {
  return {
    /** HASH: webhook name → its settings as JSON (`url`, `events`, `filter`, `n`, `secret`, `createdAt`). */
    hooks: keyOf(prefix, "webhooks", "_hooks"),
    /** ZSET: delivery id → when it is due next (ms); a claimed delivery is due again when its lease ends. */
    pending: keyOf(prefix, "webhooks", "_pending"),
    /** HASH: delivery id → `{"webhook","event","type","body","attempts"}` while it waits or is in flight. */
    deliveries: keyOf(prefix, "webhooks", "_deliveries"),
    /** ZSET: the latest delivery ids `emit` queued (`<event id>:<webhook>`) → when (ms), at most MAX_RECENT: an event is queued once per webhook. */
    recent: keyOf(prefix, "webhooks", "_recent"),
  };
}

/**
 * SET: the trending.rising deliveries (`<event id>:<webhook>:<createdAt>`) queued in hour `hour`
 * (hours since the epoch), so each member is told at most once an hour; it expires after the hour.
 */
export function risingToldKey(prefix: string, hour: number): string {
  return keyOf(prefix, "webhooks", "_rising", hour);
}

/** Keys of one webhook, deleted with it. */
export function hookKeys(prefix: string, name: string) {
  return {
    /** LIST: the latest delivery attempts, newest first, capped (DELIVERY_LOG_SIZE). */
    log: keyOf(prefix, "webhooks", name, "log"),
    /** HASH: what detection last told this webhook (`trending`: last hour compared; `peak`: highest peak sent), and whose (`of`, marks.ts). */
    marks: keyOf(prefix, "webhooks", name, "marks"),
  };
}
