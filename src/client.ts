/**
 * `edgestats/client`: a typed client for the edgestats HTTP API. No Hono, no
 * Redis; only `fetch`. Response types are the library's own result types (the
 * routes return them as they are); `OPERATIONS` lists every endpoint, checked
 * against `/openapi.json` by a test so the two cannot drift.
 *
 * ```ts
 * import { createClient } from "edgestats/client";
 * const api = createClient({ baseUrl: "https://stats.example.com", key: process.env.EDGESTATS_KEY! });
 * await api.trending.record("searches", { member: "redis" });
 * const { items } = await api.trending.top("searches", { n: 10 });
 * ```
 *
 * Writes (POST, PUT) carry an `Idempotency-Key` (a fresh UUID per call unless you pass one) reused
 * on every retry, so a retried write counts once. Retries (ClientOptions): no whole answer (network
 * error, `timeoutMs`, body included), 502/503/504 (and 429 with `retryRateLimited`), after backoff
 * or Retry-After, within `retries` and `maxRetryWaitMs`; never DELETE (it carries no key).
 *
 * Every list read takes read options last (after its query, if it has one):
 * `{ format: "csv" }` asks for `Accept: text/csv` and resolves to the CSV text,
 * `{ format: "csv", paging: true }` to a `CsvPage` (the text with its `Link` and
 * `X-Total-Count`). trending.record, counters.incr and presence.heartbeat take
 * `{ respondAsync: true }` (`Prefer: respond-async`): a 202 `Queued`, or the
 * synchronous answer when the deployment has no queue. Every call takes `{ signal }` in its last
 * options (CallOptions): aborting it rejects the call, `aborted`, never retried.
 * @module
 */
import {
  counterCalls,
  histogramCalls,
  ingestCalls,
  jobCalls,
  leaderboardCalls,
  OPERATIONS,
  presenceCalls,
  trendingCalls,
  webhookCalls,
  type Operation,
} from "./client-calls.ts";
import { abortedError, checkBaseUrl, checkOption, EdgestatsError } from "./client-errors.ts";
import { exchange, pause, requestOf } from "./client-http.ts";
import type { AsyncWriteOptions, CallOptions, ClientOptions, Query, ReadOptions } from "./client-types.ts";

export { OPERATIONS, type Job, type Operation, type WithRange } from "./client-calls.ts";
export {
  EdgestatsError,
  ReplaySummarisedError,
  type ClientErrorCode,
  type ErrorCode,
  type ServiceErrorCode,
} from "./client-errors.ts";
export type {
  AsyncWriteOptions,
  CallOptions,
  ClientOptions,
  CsvPage,
  IncrInput,
  ListResult,
  PeriodQuery,
  Queued,
  ReadOptions,
  ScoreChangeInput,
  TrendingEventInput,
  WriteOptions,
  WriteResult,
} from "./client-types.ts";
// What the calls take and answer with (types only: the bundle is unchanged), so that a caller can
// name them from here: `import type { BoardConfig } from "edgestats/client"` (review 21).
export type { IncrResult, RangeInfo, UnionOptions, UnionResult, UnionSource } from "./counters/index.ts";
export type { HistogramInfo, HistogramSettings, HistogramSummary } from "./histograms/index.ts";
export type { IngestStatus } from "./ingest/index.ts";
export type {
  BoardConfig,
  BoardList,
  BoardSettings,
  JoinInput,
  JoinView,
  PlayerView,
  ScoreResult,
  SubsetRow,
} from "./leaderboards/index.ts";
export type { HeartbeatResult, MemberPage, RoomDay, RoomStats, SiteTotal } from "./presence/index.ts";
export type { HistoryResult, MemberResult, RisingResult, StreamsPage, TopResult } from "./trending/index.ts";
export type { DeliveryRecord, Webhook, WebhookInput } from "./webhooks/index.ts";

/** What another attempt may mend: no whole answer (0), a gateway's or an overloaded service's status. */
const RETRY_STATUSES = new Set([0, 502, 503, 504]);

export function createClient(options: ClientOptions) {
  const target = { base: checkBaseUrl(options.baseUrl), key: options.key };
  const doFetch = options.fetch ?? ((request: Request) => fetch(request));
  const retries = checkOption("retries", options.retries ?? 3, 0, 100, true);
  const timeoutMs = checkOption("timeoutMs", options.timeoutMs ?? 10_000, 1, 2 ** 31 - 1);
  const backoff = options.backoffMs ?? ((attempt: number) => 100 * 2 ** (attempt - 1) * (0.5 + Math.random()));
  const retryRateLimited = options.retryRateLimited ?? false;
  const maxRetryWaitMs = checkOption("maxRetryWaitMs", options.maxRetryWaitMs ?? 30_000, 0, 2 ** 31 - 1);
  const retryable = ({ status }: EdgestatsError) => RETRY_STATUSES.has(status) || (status === 429 && retryRateLimited);

  async function send<T>(
    op: Operation,
    params: Record<string, string>,
    query?: Query,
    body?: unknown,
    call?: AsyncWriteOptions & ReadOptions,
  ): Promise<T> {
    const { url, path, init } = requestOf(target, OPERATIONS[op], params, query, body, call);
    const { method } = init;
    // DELETE carries no key, so a retry could delete what another client wrote in between.
    const maxAttempts = method === "DELETE" ? 1 : retries + 1;
    const signal = call?.signal;
    let waited = 0;
    for (let attempt = 1; ; attempt++) {
      // aborted before it starts: nothing is sent
      if (signal?.aborted) throw abortedError(method, path, signal);
      try {
        return await exchange<T>(doFetch, timeoutMs, url, init, path, call);
      } catch (error) {
        // whatever the attempt came to once the caller aborted (status 0, a partial error body), the abort is the answer
        if (signal?.aborted) throw abortedError(method, path, signal);
        if (!(error instanceof EdgestatsError) || attempt >= maxAttempts || !retryable(error)) throw error;
        const wait = Math.max(Number(backoff(attempt)) || 0, (error.retryAfterSeconds ?? 0) * 1000);
        // past the cap the error is thrown now, saying (retryAfterSeconds) when the server asked to be called again
        if (waited + wait > maxRetryWaitMs) throw error;
        waited += wait;
        await pause(wait, signal).catch(() => {
          throw abortedError(method, path, signal!);
        });
      }
    }
  }

  return {
    /**
     * `{ ok }` from the Worker alone; `redis: { ok, latencyMs }` too (one PING) with a read or admin
     * key, or with `deep: true` and a key of any scope (`?deep=1`: a writer's ingest key got no Redis
     * check, review 25). A 503 (Redis unreachable) is thrown.
     */
    health: (
      call?: CallOptions & { /** Send `deep=1`: the Redis check with any key. @default false */ deep?: boolean },
    ) =>
      send<{ ok: boolean; redis?: { ok: boolean; latencyMs: number } }>(
        "health",
        {},
        call?.deep ? { deep: 1 } : undefined,
        undefined,
        call,
      ),
    jobs: jobCalls(send),
    trending: trendingCalls(send),
    counters: counterCalls(send),
    histograms: histogramCalls(send),
    presence: presenceCalls(send),
    leaderboards: leaderboardCalls(send),
    ingest: ingestCalls(send),
    webhooks: webhookCalls(send),
  };
}

export type EdgestatsClient = ReturnType<typeof createClient>;
