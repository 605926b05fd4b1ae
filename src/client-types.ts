/**
 * The types of `edgestats/client` (./client.ts): its options, what a call resolves to, and the
 * inputs of its writes. Types only, so the client's bundle carries nothing of this module
 * (test/redis/library-package.test.ts: the packed client imports its errors module alone).
 * @module
 */
import type { Period } from "./time.ts";

export interface ClientOptions {
  /** Where the service runs, e.g. `https://stats.example.com` (no trailing path). */
  baseUrl: string;
  /** An API key: ingest for writes, read for GETs, admin for everything. */
  key: string;
  /** @default globalThis.fetch */
  fetch?: (input: Request) => Promise<Response>;
  /**
   * Retries after the first attempt, of a request safe to repeat: a GET, or a POST or PUT (each
   * carries an Idempotency-Key, so a repeat is replayed, not applied again); never a DELETE (it
   * carries none). Retried: no whole answer (a network error, `timeoutMs` passed), 502, 503, 504, and
   * 429 with `retryRateLimited`; never another 4xx, a 500 or a 2xx that is not JSON. An integer
   * from 0 to 100 (another value is refused by createClient, `invalid_request`).
   * @default 3
   */
  retries?: number;
  /** Delay before retry `attempt` (1-based), in ms; the answer's Retry-After when longer. @default 100 × 2^(attempt-1), ±50 % jitter */
  backoffMs?: (attempt: number) => number;
  /**
   * Abort an attempt after this many ms, from sending it to reading its body whole (a body that
   * stalls or trickles past it is cut off: its request aborted, its body cancelled), then retry; it
   * holds whether or not `fetch` honours the Request's signal. Per attempt: a call lasts at most
   * (retries + 1) × timeoutMs + maxRetryWaitMs. From 1 to 2^31 − 1 (setTimeout's range).
   * @default 10000
   */
  timeoutMs?: number;
  /**
   * Retry a 429 (rate limited) as a 503: after its Retry-After, within `retries` and
   * `maxRetryWaitMs`, and only a request safe to repeat (see `retries`). Off by default: a call
   * over the key's limit fails at once (its `retryAfterSeconds` says when to come back) rather than
   * wait up to `maxRetryWaitMs`; a batch job or a script wanting to be paced turns it on.
   * @default false
   */
  retryRateLimited?: boolean;
  /**
   * The most a call waits between its attempts, in ms, in total (backoff and Retry-After together).
   * A retry whose wait would go past it is not made: the error is thrown at once, with the
   * `retryAfterSeconds` the server asked for. 0: no retry that waits (with the default backoff, none).
   * @default 30000
   */
  maxRetryWaitMs?: number;
}

/** What every call takes last (a read's and a write's options extend it). */
export interface CallOptions {
  /**
   * Aborts the call: the attempt in flight (its request, and the reading of its answer's body) and
   * any wait before a retry. The call then rejects with an EdgestatsError, code `aborted` (status 0,
   * `cause` the signal's reason), and is not retried; one aborted before it starts sends nothing. A
   * write aborted after it was sent may have been applied: repeat it with the same `idempotencyKey`
   * to learn its result without applying it twice. An abort after the call resolved does nothing.
   * @default undefined (the call ends by its answer, `timeoutMs` or the end of its retries)
   */
  signal?: AbortSignal;
}

export interface WriteOptions extends CallOptions {
  /** Sent as `Idempotency-Key`. @default crypto.randomUUID(), one per call, reused by its retries */
  idempotencyKey?: string;
}

/** Write options of the writes the service can queue (trending events, counter increments, heartbeats). */
export interface AsyncWriteOptions extends WriteOptions {
  /**
   * Send `Prefer: respond-async`: a deployment with an ingest queue validates the write, queues it
   * and answers 202 `Queued`; one without answers synchronously, as if not asked. Tell them apart
   * with `"queued" in result`.
   * @default false (the write is applied before the call resolves)
   */
  respondAsync?: boolean;
}

/** The 202 of a queued write (the service's `Queued` schema): items queued, and the request's id (also `X-Request-Id`). */
export interface Queued {
  queued: number;
  requestId: string;
}

/** What a queueable write resolves to for write options `W`: with `respondAsync`, `Queued` or the synchronous answer. */
export type WriteResult<W, T> = true extends Prop<W, "respondAsync"> ? Queued | T : T;

/** The type of `O`'s property `K`, never when it has none (an `extends` on the object would trip TS's weak-type check). */
type Prop<O, K extends string> = O[keyof O & K];

/** Read options of a list read (every GET that answers a list has a CSV form, API.md v2). */
export interface ReadOptions extends CallOptions {
  /** `"csv"`: send `Accept: text/csv` and resolve to the CSV text (errors still come as EdgestatsError). @default "json" */
  format?: "json" | "csv";
  /** With `format: "csv"`: resolve to a `CsvPage`, the text with the paging its headers carry. @default false (the CSV text alone) */
  paging?: boolean;
}

/** A CSV answer with its paging headers (CSV rows cannot hold `nextCursor` or `total`). */
export interface CsvPage {
  csv: string;
  /** `X-Total-Count`: how many rows the whole list has when these are a page or a `limit` cut of it; else null. */
  total: number | null;
  /**
   * The query of the next page, from `Link: <…>; rel="next"` (this query with `cursor`, `offset` or
   * `page` advanced; values as sent, so strings); null on the last page.
   */
  next: Record<string, string> | null;
}

/** What a list read resolves to for read options `O`: the JSON result, the CSV text, or a `CsvPage`. */
export type ListResult<O, T> =
  "csv" extends Prop<O, "format">
    ? Prop<O, "format"> extends "csv"
      ? true extends Prop<O, "paging">
        ? Prop<O, "paging"> extends true
          ? CsvPage
          : string | CsvPage
        : string
      : T | string | CsvPage
    : T;

/** The default read: JSON. */
export type Json = { format?: "json" };

/** A call's query; undefined and null values are left out (null: the last page's `nextCursor`). */
export type Query = Record<string, string | number | null | undefined>;
export type At = number | string;

export interface TrendingEventInput {
  member: string;
  /** @default 1 */
  count?: number;
  /** Epoch ms or ISO-8601. @default now */
  at?: At;
}
export interface IncrInput {
  member: string;
  /** @default 1 */
  by?: number;
  /** Count in this calendar bucket (UTC; ISO weeks). @default undefined (a plain counter, no buckets) */
  period?: Period;
  /** With `period`: the time whose bucket is counted, epoch ms or ISO-8601. @default now */
  at?: At;
  /** Seconds the counter (with `period`, its bucket) lives after this write; it only adds life, never shortens it. @default undefined (an existing expiry is left alone; a new key never expires) */
  ttl?: number;
}
export type PeriodQuery = {
  period?: Period;
  from?: At;
  to?: At;
  aggregate?: "sum" | "min" | "max";
};
export type ScoreChangeInput = { by: number } | { set: number; mode?: "replace" | "best" };
