import type { Config } from "../config.ts";
import type { Ctx } from "../context.ts";
import { asList, type Idempotency, type Written } from "../redis/script.ts";
import { assertName, invalid } from "../validation.ts";
import {
  DELIVERY_LOG_SIZE,
  LEASE_MS,
  MAX_PENDING,
  MAX_RECENT,
  sendAll,
  type Claimed,
  type DeliverySettings,
} from "./deliver.ts";
import { emitBlock } from "./emit.ts";
import { hookKeys, registryKeys } from "./keys.ts";
import { deliveriesScript, listScript } from "./read-scripts.ts";
import { emitManyScript, enqueueScript, putScript, removeScript } from "./scripts.ts";
import {
  DEFAULT_RISING_THRESHOLD,
  DEFAULT_TOP_N,
  EVENT_TYPES,
  MAX_WEBHOOKS,
  checkWebhook,
  type EventType,
  type Filter,
  type FilterKind,
  type WebhookInput,
} from "./validate.ts";

/** A webhook as listed: everything but its secret, which is never returned. */
export interface Webhook {
  name: string;
  url: string;
  events: EventType[];
  filter: Filter | null;
  /** Top-N compared by trending.entered/left. */
  n: number;
  /** Least score of a trending.rising event this webhook receives (null when it does not subscribe to it). */
  threshold: number | null;
  createdAt: number;
  updatedAt: number;
}

/** A webhook as stored (with its secret): what detection and delivery read. */
export interface StoredWebhook extends Webhook {
  secret: string;
}

/** The delivery settings of a deployment (QSTASH_TOKEN, QSTASH_URL, WEBHOOKS_ALLOW_LOCAL_HTTP). */
export function settingsOf(config: Config): DeliverySettings {
  return {
    qstash: config.qstashToken ? { url: config.qstashUrl, token: config.qstashToken } : undefined,
    allowLocalHttp: config.webhooksAllowLocalHttp,
  };
}

function publicOf(hook: StoredWebhook): Webhook {
  return {
    name: hook.name,
    url: hook.url,
    events: hook.events,
    filter: hook.filter,
    n: hook.n,
    threshold: hook.threshold,
    createdAt: hook.createdAt,
    updatedAt: hook.updatedAt,
  };
}

/** Every webhook with its secret (for detection and delivery; never answered to a client). */
export async function stored(ctx: Ctx): Promise<StoredWebhook[]> {
  const flat = asList(
    await listScript.run<string[] | Record<string, never>>(ctx.redis, { hooks: registryKeys(ctx.prefix).hooks }, {}),
  );
  const hooks: StoredWebhook[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const s = JSON.parse(flat[i + 1] as string) as Omit<StoredWebhook, "name">;
    hooks.push({ ...s, filter: s.filter ?? null, threshold: s.threshold ?? null, name: flat[i] as string });
  }
  return hooks.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Creates or replaces webhook `name` (at most MAX_WEBHOOKS); `created` says which. */
export async function put(
  ctx: Ctx,
  name: string,
  input: WebhookInput,
  settings: Pick<DeliverySettings, "allowLocalHttp">,
  idempotency?: Idempotency,
): Promise<Written<{ webhook: Webhook; created: boolean }>> {
  checkWebhook(name, input, settings.allowLocalHttp);
  const threshold = input.events.includes("trending.rising") ? (input.threshold ?? DEFAULT_RISING_THRESHOLD) : null;
  const saved = {
    url: input.url,
    events: input.events,
    filter: input.filter ?? null,
    n: input.n ?? DEFAULT_TOP_N,
    threshold,
    secret: input.secret,
  };
  const { value, replayed } = await putScript.run<{ created: boolean; createdAt: number; updatedAt: number }>(
    ctx.redis,
    { hooks: registryKeys(ctx.prefix).hooks, marks: hookKeys(ctx.prefix, name).marks },
    { name, settings: JSON.stringify(saved), now: ctx.now, max: MAX_WEBHOOKS },
    idempotency,
  );
  const webhook = publicOf({ ...saved, name, createdAt: value.createdAt, updatedAt: value.updatedAt });
  return { webhook, created: value.created, replayed };
}

/** Every webhook, by name, without secrets. */
export async function list(ctx: Ctx): Promise<{ webhooks: Webhook[] }> {
  return { webhooks: (await stored(ctx)).map(publicOf) };
}

/** Queued deliveries one slice of a DELETE's drop scans (ZSCAN COUNT). */
export const PURGE_SLICE = 2_000;
/** Slices a DELETE scans at most (a full queue and a margin); the claim drops what a cut-short scan leaves. */
export const PURGE_MAX_SLICES = Math.ceil(MAX_PENDING / PURGE_SLICE) + 2;

/**
 * Deletes webhook `name`, its delivery log and its detection state, and drops its queued
 * deliveries (bounded by the queue's 10,000), so they neither hold the queue's room nor take the
 * next runs' sends; `deleted: false` when there was none.
 */
export async function remove(ctx: Ctx, name: string): Promise<Written<{ deleted: boolean }>> {
  assertName(name, "name");
  const keys = hookKeys(ctx.prefix, name);
  const reg = registryKeys(ctx.prefix);
  const { value, replayed } = await removeScript.run<{ deleted: boolean }>(
    ctx.redis,
    { hooks: reg.hooks, log: keys.log, marks: keys.marks, pending: reg.pending, deliveries: reg.deliveries },
    { name, count: PURGE_SLICE, maxSlices: PURGE_MAX_SLICES },
  );
  return { deleted: value.deleted, replayed };
}

/** One entry of a webhook's delivery log. */
export interface DeliveryRecord {
  delivery: string;
  event: string;
  type: string;
  attempt: number;
  /** When this attempt was made (epoch ms). */
  at: number;
  via: "direct" | "qstash";
  outcome: "delivered" | "published" | "retrying" | "failed";
  status: number | null;
  error: string | null;
  messageId: string | null;
  /** When a `retrying` delivery is due again (epoch ms). */
  retryAt?: number;
}

/** The latest delivery attempts of webhook `name`, newest first (at most DELIVERY_LOG_SIZE). */
export async function deliveries(
  ctx: Ctx,
  name: string,
  options: { limit?: number | undefined } = {},
): Promise<{ deliveries: DeliveryRecord[] }> {
  assertName(name, "name");
  const limit = options.limit ?? DELIVERY_LOG_SIZE;
  if (!Number.isInteger(limit) || limit < 1 || limit > DELIVERY_LOG_SIZE)
    invalid([{ path: "limit", message: `must be an integer from 1 to ${DELIVERY_LOG_SIZE}` }]);
  const raw = asList(
    await deliveriesScript.run<string[] | Record<string, never>>(
      ctx.redis,
      { hooks: registryKeys(ctx.prefix).hooks, log: hookKeys(ctx.prefix, name).log },
      { name, limit },
    ),
  );
  return { deliveries: raw.map(recordOf) };
}

/**
 * A log entry as answered: entries logged before 2026-11-26 hold `at` as an ISO-8601 string; the
 * log keeps 50 per webhook, so they linger until pushed out, and are answered in epoch ms too.
 */
function recordOf(entry: string): DeliveryRecord {
  const record = JSON.parse(entry) as Omit<DeliveryRecord, "at"> & { at: number | string };
  return { ...record, at: typeof record.at === "string" ? Date.parse(record.at) : record.at };
}

/**
 * Who subscribes to `type`: the names their filters give (`null` in the list: a webhook without a
 * filter, i.e. every stream or board) and the least `threshold` among them (trending.rising). For
 * a detector that should look only where someone listens (one round trip: the webhooks' HGETALL).
 */
export async function subscriptions(
  ctx: Ctx,
  type: EventType,
): Promise<{ names: (string | null)[]; threshold: number | null }> {
  const hooks = (await stored(ctx)).filter((h) => h.events.includes(type));
  const names = [...new Set(hooks.map((h) => (h.filter ? (Object.values(h.filter)[0] as string) : null)))];
  const thresholds = hooks.map((h) => h.threshold).filter((t): t is number => t !== null);
  return { names, threshold: thresholds.length > 0 ? Math.min(...thresholds) : null };
}

/** An event as `emit` takes it: its type, what it is about (for filters), its data, and what makes it unique. */
export interface EventInput {
  type: EventType;
  /** The stream, room or board it is about, matched against webhooks' filters. */
  subject?: { kind: FilterKind; name: string } | undefined;
  data: Record<string, unknown>;
  /** trending.rising: the member's score; webhooks with a higher `threshold` do not get the event. */
  score?: number | undefined;
  /**
   * What distinguishes this event from others of its type and subject (e.g. the hour and the new
   * leader): the event id is a digest of type, subject and key, so emitting the same facts twice
   * gives the same id, which receivers deduplicate on.
   */
  key: string;
}

async function eventIdOf(type: string, subject: string, key: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-1", new TextEncoder().encode(`${type}\n${subject}\n${key}`));
  return `evt_${[...new Uint8Array(digest)]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("")
    .slice(0, 32)}`;
}

/**
 * The hook other features call when they detect an event (trending.rising, leaderboard.leader):
 * queues it for every webhook subscribed to its type whose filter matches, in one round trip. The
 * minute job delivers it (at least once, retried with backoff). The same facts (type, subject,
 * key) emitted again are not queued again for a webhook already told (`repeated` when none is
 * left), among the last MAX_RECENT deliveries. Nothing
 * is queued, and the cost is one HGETALL, when no webhook subscribes.
 */
export async function emit(
  ctx: Ctx,
  event: EventInput,
): Promise<{ id: string; queued: number; full: number; repeated: boolean }> {
  if (!(EVENT_TYPES as readonly string[]).includes(event.type))
    throw new Error(`emit: unknown event type '${event.type}'`);
  const subject = event.subject?.name ?? "";
  const id = await eventIdOf(event.type, subject, event.key);
  const body = JSON.stringify({ id, type: event.type, at: ctx.now, data: event.data });
  const reg = registryKeys(ctx.prefix);
  const { value } = await enqueueScript.run<{ queued: number; full: number; repeated?: boolean }>(
    ctx.redis,
    { hooks: reg.hooks, pending: reg.pending, deliveries: reg.deliveries, recent: reg.recent },
    {
      eventId: id,
      eventType: event.type,
      kind: event.subject?.kind ?? "",
      subject,
      score: event.score ?? "",
      only: "",
      body,
      now: ctx.now,
      lease: 0,
      maxPending: MAX_PENDING,
      maxRecent: MAX_RECENT,
    },
  );
  return { id, queued: value.queued, full: value.full, repeated: value.repeated === true };
}

// `emitBlock` lives in ./emit.ts (a leaderboard score change loads it without this module).
export { emitBlock };

/**
 * `emit` for several events in one round trip (one script): each is queued as `emit` would, the
 * same facts again are `repeated`. For a detector that finds many at once (trending.rising).
 */
export async function emitMany(
  ctx: Ctx,
  events: readonly EventInput[],
  /** trending.rising: the hour's told set (`risingToldKey`) and how long it is kept (ms; relative, as Redis's clock is not ctx.now). */
  risingTold?: { key: string; ttlMs: number },
): Promise<{ queued: number; full: number; repeated: number }> {
  if (events.length === 0) return { queued: 0, full: 0, repeated: 0 };
  for (const e of events)
    if (!(EVENT_TYPES as readonly string[]).includes(e.type)) throw new Error(`emit: unknown event type '${e.type}'`);
  const block = emitBlock(ctx);
  const { value } = await emitManyScript.run<{ queued: number; full: number; repeated: number }>(
    ctx.redis,
    { hookKeys: risingTold ? [...block.keys, risingTold.key] : block.keys },
    {
      hookArgs: risingTold ? [...block.args, risingTold.ttlMs] : block.args,
      types: events.map((e) => e.type),
      kinds: events.map((e) => e.subject?.kind ?? ""),
      subjects: events.map((e) => e.subject?.name ?? ""),
      eventKeys: events.map((e) => e.key),
      datas: events.map((e) => JSON.stringify(e.data)),
      scores: events.map((e) => e.score ?? ""),
    },
  );
  return value;
}

/**
 * Queues a `webhook.test` event for webhook `name` and claims it: `send()` delivers it now (the
 * route runs it under waitUntil); if that fails, the minute job retries it like any delivery.
 */
export async function test(
  ctx: Ctx,
  settings: DeliverySettings,
  name: string,
  idempotency?: Idempotency,
): Promise<Written<{ id: string; send: () => Promise<{ delivered: number; retrying: number; failed: number }> }>> {
  assertName(name, "name");
  const id = `evt_test_${crypto.randomUUID().replace(/-/g, "")}`;
  const body = JSON.stringify({
    id,
    type: "webhook.test",
    at: ctx.now,
    data: { webhook: name },
  });
  const reg = registryKeys(ctx.prefix);
  const { value, replayed } = await enqueueScript.run<{ claimed: Claimed[] | Record<string, never>; event: string }>(
    ctx.redis,
    { hooks: reg.hooks, pending: reg.pending, deliveries: reg.deliveries, recent: reg.recent },
    {
      eventId: id,
      eventType: "webhook.test",
      kind: "",
      subject: "",
      score: "",
      only: name,
      body,
      now: ctx.now,
      lease: ctx.now + LEASE_MS,
      maxPending: MAX_PENDING,
      maxRecent: MAX_RECENT,
    },
    idempotency,
  );
  // a replay (same Idempotency-Key) answers the first test's id and sends nothing again
  if (replayed) return { id: value.event, send: () => sendAll(ctx, settings, []), replayed };
  const claimed = asList(value.claimed);
  return { id, send: () => sendAll(ctx, settings, claimed), replayed };
}
