import type { Ctx } from "../context.ts";
import { asList } from "../redis/script.ts";
import { hookKeys, registryKeys } from "./keys.ts";
import { claimScript, settleScript } from "./scripts.ts";
import { SIGNATURE_HEADER, signature } from "./sign.ts";

/** How deliveries leave: through QStash when a token is set, else a direct signed POST. */
export interface DeliverySettings {
  /** QStash's publish API (`{url}/v2/publish/{destination}`, `Authorization: Bearer {token}`); absent: direct delivery. */
  qstash?: { url: string; token: string } | undefined;
  /** Accept `http://` webhook URLs on localhost / 127.0.0.1 / [::1] (development and tests only). */
  allowLocalHttp: boolean;
  /** Milliseconds one direct delivery (or one publish to QStash) may take. @default 10000 */
  timeoutMs?: number;
  /** The fetch deliveries go out with: a job's counts its invocation's subrequests (src/job-budget.ts). @default fetch */
  fetch?: typeof fetch | undefined;
}

/** Attempts of a direct delivery before it is given up (logged `failed`). */
export const MAX_ATTEMPTS = 8;
/** First retry after a minute, doubling: 1, 2, 4 ... 64 minutes (about two hours in all). */
export const RETRY_BASE_MS = 60_000;
export const RETRY_CAP_MS = 6 * 3_600_000;
/** A claimed delivery not settled within this (its run died) is due again. */
export const LEASE_MS = 5 * 60_000;
/** Deliveries one run sends at most (one subrequest each; a Worker on the free plan has 50). */
export const DELIVER_BATCH = 25;
/** Entries kept in each webhook's delivery log. */
export const DELIVERY_LOG_SIZE = 50;
// MAX_PENDING and MAX_RECENT: ./emit.ts, which `emitBlock` needs without the delivery step.
export { MAX_PENDING, MAX_RECENT } from "./emit.ts";
/** Retries QStash makes of a published delivery (its own backoff). */
export const QSTASH_RETRIES = 5;

/** A delivery handed to a sender: the event body as queued, and where and how to send it. */
export interface Claimed {
  id: string;
  webhook: string;
  /** The webhook's createdAt: which life of the name the delivery is for. */
  since: number;
  url: string;
  secret: string;
  body: string;
  attempts: number;
  event: string;
  type: string;
}

/** How one attempt went, as the delivery log keeps it. */
export interface Attempt {
  ok: boolean;
  /** `delivered` (the receiver answered 2xx) or `published` (QStash accepted it and now delivers and retries). */
  outcome: "delivered" | "published" | null;
  /** When the attempt was made (epoch ms). */
  at: number;
  via: "direct" | "qstash";
  /** HTTP status of the receiver (direct) or of QStash (publish); null when no answer came. */
  status: number | null;
  error: string | null;
  /** QStash's message id of a published delivery. */
  messageId: string | null;
  /** The receiver said stop for good (410 Gone): not retried, logged `failed` (review 16). */
  final?: boolean | undefined;
  /** Not to be retried before this (epoch ms): a 429 or 503 answer's `Retry-After` (review 16). */
  notBefore?: number | undefined;
}

/**
 * When a 429 or 503 answer's `Retry-After` (RFC 9110 §10.2.3: delay seconds or an HTTP date) asks
 * the next attempt to wait, as epoch ms; undefined for other answers, a header that is neither, or
 * a time not after `nowMs`. The settle caps it at RETRY_CAP_MS from now.
 */
export function retryAfterOf(status: number, header: string | null, nowMs: number): number | undefined {
  if ((status !== 429 && status !== 503) || header === null) return undefined;
  const text = header.trim();
  const at = /^\d{1,10}$/.test(text) ? nowMs + Number(text) * 1000 : Date.parse(text);
  return Number.isFinite(at) && at > nowMs ? at : undefined;
}

/**
 * QStash deduplication ids: letters, digits, `-`, `_`, `.`. The delivery id (`evt_<hex>:<webhook>`)
 * and the webhook's createdAt: a retried publish of one life is deduplicated, while a webhook
 * deleted and created again under its name, told the same event afresh, is not swallowed by
 * QStash's deduplication of the old life's publish (review 12).
 */
function dedupId(delivery: Claimed): string {
  return `${delivery.id}:${String(delivery.since)}`.replace(/[^A-Za-z0-9_.-]/g, "-");
}

/** Sends one delivery (direct or through QStash) and says how it went; never throws. */
export async function send(delivery: Claimed, settings: DeliverySettings, nowMs: number): Promise<Attempt> {
  const via = settings.qstash ? "qstash" : "direct";
  const at = nowMs;
  const sig = await signature(delivery.secret, delivery.body, nowMs);
  const headers: Record<string, string> = { "content-type": "application/json" };
  let target = delivery.url;
  if (settings.qstash) {
    // QStash forwards Upstash-Forward-* headers to the destination (without the prefix) and signs
    // its own request (Upstash-Signature); ours rides along so receivers check one scheme either way.
    target = `${settings.qstash.url.replace(/\/+$/, "")}/v2/publish/${delivery.url}`;
    headers.authorization = `Bearer ${settings.qstash.token}`;
    headers["upstash-method"] = "POST";
    headers["upstash-retries"] = String(QSTASH_RETRIES);
    headers["upstash-deduplication-id"] = dedupId(delivery);
    headers[`upstash-forward-${SIGNATURE_HEADER.toLowerCase()}`] = sig;
    headers["upstash-forward-edgestats-event"] = delivery.type;
    headers["upstash-forward-edgestats-delivery"] = delivery.id;
  } else {
    headers[SIGNATURE_HEADER.toLowerCase()] = sig;
    headers["edgestats-event"] = delivery.type;
    headers["edgestats-delivery"] = delivery.id;
    headers["user-agent"] = "edgestats-webhooks";
  }
  try {
    const res = await (settings.fetch ?? fetch)(target, {
      method: "POST",
      headers,
      body: delivery.body,
      // a redirect is a failure: the URL an admin set is the only place events go
      redirect: "manual",
      signal: AbortSignal.timeout(settings.timeoutMs ?? 10_000),
    });
    const ok = res.status >= 200 && res.status < 300;
    // only QStash's answer is read (its message id); a receiver's body is not ours to download
    let text = "";
    if (settings.qstash) text = await res.text().catch(() => "");
    else await res.body?.cancel().catch(() => undefined);
    let messageId: string | null = null;
    if (ok && settings.qstash) {
      try {
        const parsed = JSON.parse(text) as { messageId?: unknown };
        if (typeof parsed.messageId === "string") messageId = parsed.messageId;
      } catch {
        // an answer without a message id is still an accepted publish
      }
    }
    const outcome = ok ? (settings.qstash ? "published" : "delivered") : null;
    // a receiver's 410 Gone is final; QStash's own answers (a publish) are not the receiver's
    const final = !settings.qstash && res.status === 410;
    const notBefore = retryAfterOf(res.status, res.headers.get("retry-after"), nowMs);
    return {
      ok,
      outcome,
      at,
      via,
      status: res.status,
      error: ok ? null : `HTTP ${res.status}`,
      messageId,
      ...(final ? { final } : {}),
      ...(notBefore !== undefined ? { notBefore } : {}),
    };
  } catch (error) {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return { ok: false, outcome: null, at, via, status: null, error: message.slice(0, 200), messageId: null };
  }
}

/**
 * Sends claimed deliveries in parallel and settles them in one script. The last `unsent` of them
 * are not sent: the settle undoes their claims (settleScript), and they are due again at once.
 */
export async function sendAll(
  ctx: Ctx,
  settings: DeliverySettings,
  claimed: Claimed[],
  unsent = 0,
): Promise<{ delivered: number; retrying: number; failed: number }> {
  if (claimed.length === 0) return { delivered: 0, retrying: 0, failed: 0 };
  const sent = claimed.slice(0, claimed.length - unsent);
  const attempts: (Attempt | { unsent: true })[] = await Promise.all(sent.map((d) => send(d, settings, ctx.now)));
  for (let i = sent.length; i < claimed.length; i++) attempts.push({ unsent: true });
  const reg = registryKeys(ctx.prefix);
  const { value } = await settleScript.run<{ delivered: number; retrying: number; failed: number }>(
    ctx.redis,
    {
      hooks: reg.hooks,
      pending: reg.pending,
      deliveries: reg.deliveries,
      logs: claimed.map((d) => hookKeys(ctx.prefix, d.webhook).log),
    },
    {
      now: ctx.now,
      maxAttempts: MAX_ATTEMPTS,
      retryBase: RETRY_BASE_MS,
      retryCap: RETRY_CAP_MS,
      logSize: DELIVERY_LOG_SIZE,
      ids: claimed.map((d) => d.id),
      results: attempts.map((a, i) => JSON.stringify({ ...a, since: claimed[i]!.since })),
    },
  );
  return value;
}

/**
 * Claims the due deliveries (at most `limit`), sends them and settles them: 1 round trip when none is due, else 2.
 * `left` (a job's: `JobBudget.left`, read after the claim) is what the run may still send: the
 * deliveries it does not pay with the settle, and a re-send of the settle should Redis lose its
 * scripts once more, are not sent (`unsent`, due again at once): a delivery sent is always settled
 * (unsettled, it would be sent again after its lease), and none loses an attempt unsent. @default unbounded
 */
export async function deliverDue(
  ctx: Ctx,
  settings: DeliverySettings,
  limit = DELIVER_BATCH,
  left: () => number = () => Number.POSITIVE_INFINITY,
) {
  const reg = registryKeys(ctx.prefix);
  const { value } = await claimScript.run<{
    claimed: Claimed[] | Record<string, never>;
    dropped: number;
    more?: boolean;
  }>(
    ctx.redis,
    { hooks: reg.hooks, pending: reg.pending, deliveries: reg.deliveries },
    { now: ctx.now, lease: ctx.now + LEASE_MS, limit },
  );
  const claimed = asList(value.claimed);
  const unsent = Math.max(0, Math.min(claimed.length, claimed.length + 1 - left()));
  const settled = await sendAll(ctx, settings, claimed, unsent);
  // `claimed`: the deliveries sent (one subrequest each); `unsent` only when some were not; `more`:
  // deliveries stay due now (past the claim's limit, or given back unsent)
  return {
    claimed: claimed.length - unsent,
    dropped: value.dropped,
    ...settled,
    ...(unsent > 0 ? { unsent } : {}),
    more: value.more === true || unsent > 0,
  };
}
