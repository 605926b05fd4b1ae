/**
 * The calls of `edgestats/client` (./client.ts), one group per feature, each over `send` (one call
 * of an operation: its request, attempts and retries, ./client.ts), and OPERATIONS, the endpoint
 * each call names. Answer types are the library's result types (the routes return them as they
 * are), checked field by field against /openapi.json's schemas (test/unit/review21-client.test.ts).
 * @module
 */
import type {
  AsyncWriteOptions,
  At,
  CallOptions,
  IncrInput,
  Json,
  ListResult,
  PeriodQuery,
  Query,
  ReadOptions,
  ScoreChangeInput,
  TrendingEventInput,
  WriteOptions,
  WriteResult,
} from "./client-types.ts";
import type * as counters from "./counters/index.ts";
import type { IngestStatus } from "./ingest/index.ts";
import type * as histograms from "./histograms/index.ts";
import type * as lb from "./leaderboards/index.ts";
import type * as presence from "./presence/index.ts";
import type { HistoryResult, MemberResult, RisingResult, StreamsPage, TopResult } from "./trending/index.ts";
import type * as webhooks from "./webhooks/index.ts";

/** Every endpoint of the API: `name: [method, path]`. */
export const OPERATIONS = {
  health: ["GET", "/healthz"],
  runJob: ["POST", "/internal/jobs/{job}"],
  listStreams: ["GET", "/v1/trending"],
  recordEvents: ["POST", "/v1/trending/{stream}/events"],
  trendingTop: ["GET", "/v1/trending/{stream}/top"],
  trendingMember: ["GET", "/v1/trending/{stream}/members/{member}"],
  trendingRising: ["GET", "/v1/trending/{stream}/rising"],
  trendingHistory: ["GET", "/v1/trending/{stream}/history"],
  deleteStream: ["DELETE", "/v1/trending/{stream}"],
  listCounters: ["GET", "/v1/counters"],
  incr: ["POST", "/v1/counters/{counter}/incr"],
  counterTop: ["GET", "/v1/counters/{counter}/top"],
  counterBottom: ["GET", "/v1/counters/{counter}/bottom"],
  counterMember: ["GET", "/v1/counters/{counter}/members/{member}"],
  deleteCounterMember: ["DELETE", "/v1/counters/{counter}/members/{member}"],
  counterRange: ["GET", "/v1/counters/{counter}/range"],
  counterSorted: ["GET", "/v1/counters/{counter}/sorted"],
  counterUnion: ["POST", "/v1/counters/{counter}/union"],
  deleteCounter: ["DELETE", "/v1/counters/{counter}"],
  listHistograms: ["GET", "/v1/histograms"],
  putHistogram: ["PUT", "/v1/histograms/{histogram}"],
  readHistogram: ["GET", "/v1/histograms/{histogram}"],
  deleteHistogram: ["DELETE", "/v1/histograms/{histogram}"],
  observe: ["POST", "/v1/histograms/{histogram}/observations"],
  listRooms: ["GET", "/v1/presence"],
  heartbeat: ["POST", "/v1/presence/{room}/heartbeats"],
  leave: ["DELETE", "/v1/presence/{room}/members/{id}"],
  // before roomStats: a path matcher trying operations in order must find this one first
  presenceTotal: ["GET", "/v1/presence/_total"],
  roomStats: ["GET", "/v1/presence/{room}"],
  deleteRoom: ["DELETE", "/v1/presence/{room}"],
  roomMembers: ["GET", "/v1/presence/{room}/members"],
  roomHistory: ["GET", "/v1/presence/{room}/history"],
  listBoards: ["GET", "/v1/leaderboards"],
  configureBoard: ["PUT", "/v1/leaderboards/{board}"],
  boardPage: ["GET", "/v1/leaderboards/{board}"],
  deleteBoard: ["DELETE", "/v1/leaderboards/{board}"],
  boardCount: ["GET", "/v1/leaderboards/{board}/count"],
  joinBoard: ["PUT", "/v1/leaderboards/{board}/players/{player}"],
  getPlayer: ["GET", "/v1/leaderboards/{board}/players/{player}"],
  removePlayer: ["DELETE", "/v1/leaderboards/{board}/players/{player}"],
  changeScore: ["POST", "/v1/leaderboards/{board}/players/{player}/score"],
  changeScores: ["POST", "/v1/leaderboards/{board}/scores"],
  around: ["GET", "/v1/leaderboards/{board}/players/{player}/around"],
  rankPlayers: ["POST", "/v1/leaderboards/{board}/rank"],
  boardSeasons: ["GET", "/v1/leaderboards/{board}/seasons"],
  ingestStatus: ["GET", "/v1/ingest/status"],
  ingestLag: ["GET", "/v1/ingest/lag"],
  listWebhooks: ["GET", "/v1/webhooks"],
  putWebhook: ["PUT", "/v1/webhooks/{name}"],
  deleteWebhook: ["DELETE", "/v1/webhooks/{name}"],
  testWebhook: ["POST", "/v1/webhooks/{name}/test"],
  webhookDeliveries: ["GET", "/v1/webhooks/{name}/deliveries"],
} as const satisfies Record<string, readonly ["GET" | "POST" | "PUT" | "DELETE", string]>;

export type Operation = keyof typeof OPERATIONS;

/** One call of operation `op` (./client.ts): its path parameters, query, JSON body and options. */
export type Send = <T>(
  op: Operation,
  params: Record<string, string>,
  query?: Query,
  body?: unknown,
  call?: AsyncWriteOptions & ReadOptions,
) => Promise<T>;

type R<F extends (...args: never[]) => unknown> = Awaited<ReturnType<F>>;

/** A periodic job `jobs.run` runs now. */
export type Job = "compact" | "trim" | "sweep-counters" | "leaderboards.snapshot" | "webhooks" | "webhooks.trending";

/**
 * A counter read's answer, with the `range` it has over a period range (`period` with `from`/`to`).
 * The library's return types lose it: TS reduces `T | (T & { range })` to `T` (review 21).
 */
export type WithRange<T> = T & { range?: counters.RangeInfo };

export const jobCalls = (send: Send) => ({
  /** Runs a periodic job now (admin key). */
  run: (job: Job, call?: CallOptions) =>
    send<{ job: string; startedAt: number; result: Record<string, unknown> }>("runJob", { job }, undefined, {}, call),
});

export const trendingCalls = (send: Send) => ({
  /** The first page of streams (at most 1,000 names); `page` reaches the rest. */
  list: <O extends ReadOptions = Json>(read?: O) =>
    send<ListResult<O, StreamsPage>>("listStreams", {}, undefined, undefined, read),
  /** A page of streams; a pass follows `nextCursor` as `cursor` until it is null. */
  page: <O extends ReadOptions = Json>(query: { limit?: number; cursor?: string | null } = {}, read?: O) =>
    send<ListResult<O, StreamsPage>>("listStreams", {}, query, undefined, read),
  record: <W extends AsyncWriteOptions = WriteOptions>(
    stream: string,
    events: TrendingEventInput | TrendingEventInput[],
    write?: W,
  ) =>
    send<WriteResult<W, { accepted: number }>>(
      "recordEvents",
      { stream },
      undefined,
      Array.isArray(events) ? { events } : events,
      write,
    ),
  top: <O extends ReadOptions = Json>(stream: string, query: { n?: number; window?: string } = {}, read?: O) =>
    send<ListResult<O, TopResult>>("trendingTop", { stream }, query, undefined, read),
  member: (stream: string, member: string, query: { window?: string } = {}, call?: CallOptions) =>
    send<MemberResult>("trendingMember", { stream, member }, query, undefined, call),
  rising: <O extends ReadOptions = Json>(stream: string, query: { n?: number; baseline?: string } = {}, read?: O) =>
    send<ListResult<O, RisingResult>>("trendingRising", { stream }, query, undefined, read),
  history: <O extends ReadOptions = Json>(stream: string, member: string, query: { hours?: number } = {}, read?: O) =>
    send<ListResult<O, HistoryResult>>("trendingHistory", { stream }, { member, ...query }, undefined, read),
  delete: (stream: string, call?: CallOptions) => send<void>("deleteStream", { stream }, undefined, undefined, call),
});

export const counterCalls = (send: Send) => ({
  /** One page of counter names, most recently written first; a pass follows `nextCursor` as `cursor` until it is null (or `nextOffset` as `offset`). */
  list: <O extends ReadOptions = Json>(
    query: { limit?: number; cursor?: string | null; offset?: number } = {},
    read?: O,
  ) => send<ListResult<O, R<typeof counters.list>>>("listCounters", {}, query, undefined, read),
  incr: <W extends AsyncWriteOptions = WriteOptions>(counter: string, items: IncrInput | IncrInput[], write?: W) =>
    send<WriteResult<W, counters.IncrResult>>(
      "incr",
      { counter },
      undefined,
      Array.isArray(items) ? { items } : items,
      write,
    ),
  top: <O extends ReadOptions = Json>(counter: string, query: PeriodQuery & { n?: number } = {}, read?: O) =>
    send<ListResult<O, WithRange<R<typeof counters.ranked>>>>("counterTop", { counter }, query, undefined, read),
  bottom: <O extends ReadOptions = Json>(counter: string, query: PeriodQuery & { n?: number } = {}, read?: O) =>
    send<ListResult<O, WithRange<R<typeof counters.ranked>>>>("counterBottom", { counter }, query, undefined, read),
  member: (counter: string, member: string, query: PeriodQuery = {}, call?: CallOptions) =>
    send<WithRange<R<typeof counters.memberOf>>>("counterMember", { counter, member }, query, undefined, call),
  removeMember: (counter: string, member: string, query: Omit<PeriodQuery, "aggregate"> = {}, call?: CallOptions) =>
    send<void>("deleteCounterMember", { counter, member }, query, undefined, call),
  range: <O extends ReadOptions = Json>(
    counter: string,
    query: PeriodQuery & { min?: string; max?: string; limit?: number; order?: "asc" | "desc" } = {},
    read?: O,
  ) =>
    send<ListResult<O, WithRange<R<typeof counters.scoreRange>>>>("counterRange", { counter }, query, undefined, read),
  sorted: <O extends ReadOptions = Json>(
    counter: string,
    query: PeriodQuery & { by?: "member" | "score"; order?: "asc" | "desc" } = {},
    read?: O,
  ) => send<ListResult<O, WithRange<R<typeof counters.sorted>>>>("counterSorted", { counter }, query, undefined, read),
  union: (counter: string, body: counters.UnionOptions, write?: WriteOptions) =>
    send<counters.UnionResult>("counterUnion", { counter }, undefined, body, write),
  delete: (counter: string, call?: CallOptions) => send<void>("deleteCounter", { counter }, undefined, undefined, call),
});

export const histogramCalls = (send: Send) => ({
  /** One page of histogram names; a pass follows `nextCursor` as `cursor` until it is null (or `next` as `offset`). */
  list: <O extends ReadOptions = Json>(
    query: { limit?: number; cursor?: string | null; offset?: number } = {},
    read?: O,
  ) => send<ListResult<O, R<typeof histograms.list>>>("listHistograms", {}, query, undefined, read),
  configure: (histogram: string, settings: histograms.HistogramSettings, write?: WriteOptions) =>
    send<histograms.HistogramInfo & { created: boolean }>("putHistogram", { histogram }, undefined, settings, write),
  observe: (
    histogram: string,
    values: number | { value: number; at?: At } | (number | { value: number; at?: At })[],
    write?: WriteOptions,
  ) =>
    send<{ accepted: number }>(
      "observe",
      { histogram },
      undefined,
      Array.isArray(values) ? { values } : typeof values === "number" ? { value: values } : values,
      write,
    ),
  /** The summary; its CSV form is the buckets. */
  read: <O extends ReadOptions = Json>(
    histogram: string,
    query: { from?: string; to?: string; top?: number } = {},
    read?: O,
  ) => send<ListResult<O, histograms.HistogramSummary>>("readHistogram", { histogram }, query, undefined, read),
  delete: (histogram: string, call?: CallOptions) =>
    send<void>("deleteHistogram", { histogram }, undefined, undefined, call),
});

export const presenceCalls = (send: Send) => ({
  /** A page of rooms; a pass follows `nextCursor` as `cursor` until it is null. */
  list: <O extends ReadOptions = Json>(query: { limit?: number; cursor?: string | null } = {}, read?: O) =>
    send<ListResult<O, R<typeof presence.rooms>>>("listRooms", {}, query, undefined, read),
  heartbeat: <W extends AsyncWriteOptions = WriteOptions>(room: string, ids: string | string[], write?: W) =>
    send<WriteResult<W, presence.HeartbeatResult>>(
      "heartbeat",
      { room },
      undefined,
      Array.isArray(ids) ? { ids } : { id: ids },
      write,
    ),
  leave: (room: string, id: string, call?: CallOptions) =>
    send<void>("leave", { room, id }, undefined, undefined, call),
  room: (room: string, call?: CallOptions) =>
    send<presence.RoomStats>("roomStats", { room }, undefined, undefined, call),
  day: (room: string, day: string, call?: CallOptions) =>
    send<presence.RoomDay>("roomStats", { room }, { day }, undefined, call),
  total: (call?: CallOptions) => send<presence.SiteTotal>("presenceTotal", {}, undefined, undefined, call),
  members: <O extends ReadOptions = Json>(
    room: string,
    query: { limit?: number; cursor?: string | null } = {},
    read?: O,
  ) => send<ListResult<O, presence.MemberPage>>("roomMembers", { room }, query, undefined, read),
  history: <O extends ReadOptions = Json>(room: string, query: { hours?: number } = {}, read?: O) =>
    send<ListResult<O, R<typeof presence.history>>>("roomHistory", { room }, query, undefined, read),
  delete: (room: string, call?: CallOptions) => send<void>("deleteRoom", { room }, undefined, undefined, call),
});

export const leaderboardCalls = (send: Send) => ({
  /** A page of boards; a pass follows `nextCursor` as `cursor` until it is null (or `next` as `offset`). */
  list: <O extends ReadOptions = Json>(
    query: { limit?: number; cursor?: string | null; offset?: number } = {},
    read?: O,
  ) => send<ListResult<O, lb.BoardList>>("listBoards", {}, query, undefined, read),
  configure: (board: string, body: lb.BoardConfig = {}, write?: WriteOptions) =>
    send<Omit<lb.BoardSettings, "created"> & { created: boolean }>("configureBoard", { board }, undefined, body, write),
  page: <O extends ReadOptions = Json>(
    board: string,
    query: { page?: number; limit?: number; season?: string } = {},
    read?: O,
  ) => send<ListResult<O, R<typeof lb.page>>>("boardPage", { board }, query, undefined, read),
  count: (board: string, call?: CallOptions) =>
    send<R<typeof lb.info>>("boardCount", { board }, undefined, undefined, call),
  join: (board: string, player: string, body: lb.JoinInput, write?: WriteOptions) =>
    send<lb.JoinView>("joinBoard", { board, player }, undefined, body, write),
  player: (board: string, player: string, query: { season?: string } = {}, call?: CallOptions) =>
    send<lb.PlayerView>("getPlayer", { board, player }, query, undefined, call),
  /** A subset of players (friends) in board order, with global and subset ranks (a read key is enough). */
  rank: (board: string, players: string[], query: { season?: string } = {}, call?: CallOptions) =>
    send<R<typeof lb.rankPlayers>>("rankPlayers", { board }, query, { players }, call),
  seasons: <O extends ReadOptions = Json>(board: string, read?: O) =>
    send<ListResult<O, R<typeof lb.listSeasons>>>("boardSeasons", { board }, undefined, undefined, read),
  around: <O extends ReadOptions = Json>(
    board: string,
    player: string,
    query: { k?: number; season?: string } = {},
    read?: O,
  ) => send<ListResult<O, R<typeof lb.around>>>("around", { board, player }, query, undefined, read),
  /** `{ by }` adds (may be negative); `{ set, mode }` replaces, or keeps the best with `mode: "best"`. */
  score: (board: string, player: string, change: ScoreChangeInput, write?: WriteOptions) =>
    send<{ score: number; rank: number }>("changeScore", { board, player }, undefined, change, write),
  scores: (board: string, changes: (ScoreChangeInput & { player: string })[], write?: WriteOptions) =>
    send<{ results: lb.ScoreResult[] }>("changeScores", { board }, undefined, { items: changes }, write),
  removePlayer: (board: string, player: string, call?: CallOptions) =>
    send<void>("removePlayer", { board, player }, undefined, undefined, call),
  delete: (board: string, call?: CallOptions) => send<void>("deleteBoard", { board }, undefined, undefined, call),
});

/** Queued ingest (`Prefer: respond-async`): the consumer's figures (admin) and its lag (read). */
export const ingestCalls = (send: Send) => ({
  status: (call?: CallOptions) =>
    send<IngestStatus & { queue: boolean }>("ingestStatus", {}, undefined, undefined, call),
  lag: (call?: CallOptions) =>
    send<Pick<IngestStatus, "oldestAgeMs" | "lastBatchAt"> & { queue: boolean }>(
      "ingestLag",
      {},
      undefined,
      undefined,
      call,
    ),
});

/** Webhooks (admin key): subscriptions, a test event, the delivery log. Secrets are sent, never returned. */
export const webhookCalls = (send: Send) => ({
  list: <O extends ReadOptions = Json>(read?: O) =>
    send<ListResult<O, { webhooks: webhooks.Webhook[] }>>("listWebhooks", {}, undefined, undefined, read),
  put: (name: string, settings: webhooks.WebhookInput, write?: WriteOptions) =>
    send<{ webhook: webhooks.Webhook; created: boolean }>("putWebhook", { name }, undefined, settings, write),
  delete: (name: string, call?: CallOptions) =>
    send<{ deleted: boolean }>("deleteWebhook", { name }, undefined, undefined, call),
  test: (name: string, write?: WriteOptions) => send<{ id: string }>("testWebhook", { name }, undefined, {}, write),
  deliveries: <O extends ReadOptions = Json>(name: string, query: { limit?: number } = {}, read?: O) =>
    send<ListResult<O, { deliveries: webhooks.DeliveryRecord[] }>>(
      "webhookDeliveries",
      { name },
      query,
      undefined,
      read,
    ),
});
