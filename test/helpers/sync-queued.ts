/**
 * The queued-ingest differential, in one place: two apps on one fake clock, one synchronous (no
 * queue binding, so a stray `Prefer: respond-async` there cannot queue) and one with Cloudflare
 * Queues ingest (`Prefer: respond-async`; the consumer is fed by hand through `queued.deliver`),
 * each write sent to both, so a test can compare what they read. Review 11's differential, review
 * 12's presence tests and the presence window tests each had their own copy of this driver; one
 * copy keeps them sending, leaving and reading the same way.
 */
import { expect } from "vitest";
import { createIngestApi, type IngestApi } from "./ingest.ts";
import type { TestResponse } from "./worker.ts";

/** A room as presence reads it: its figures (peaks aside) and the ids of its members, in list order. */
export interface RoomRead {
  online: number;
  activeToday: number;
  newToday: number;
  members: string[];
}

export interface SyncQueued {
  sync: IngestApi;
  queued: IngestApi;
  /** The time both clocks started at. */
  start: number;
  /** Moves both clocks. */
  advance(ms: number): void;
  setNow(value: number): void;
  /**
   * One write to both, synchronous first: the synchronous app must answer `syncStatus` (200 unless
   * the request is to be refused), the queued one 202 with `Preference-Applied: respond-async`.
   */
  write(
    path: string,
    body: unknown,
    options?: { headers?: Record<string, string>; syncStatus?: number },
  ): Promise<{ sync: TestResponse; queued: TestResponse }>;
  /** A presence heartbeat of one id (`{ id }`) or several (`{ ids }`) to both. */
  heartbeat(room: string, ids: string | string[]): Promise<void>;
  /** A presence leave on both: synchronous on both sides (leaves are not queueable), 204. */
  leave(room: string, id: string): Promise<void>;
  /** What each reads of a room, synchronous first. */
  room(room: string): Promise<[RoomRead, RoomRead]>;
}

/**
 * `track`: the file's `cleanedUpAfterAll<IngestApi>()`, so both apps' keys go after its tests.
 */
export function syncQueuedPair(track: (api: IngestApi) => IngestApi, label: string, start: number): SyncQueued {
  const sync = track(createIngestApi({ label: `${label}-sync`, start, queue: false }));
  const queued = track(createIngestApi({ label: `${label}-q`, start }));
  const both = [sync, queued] as const;

  async function write(
    path: string,
    body: unknown,
    options: { headers?: Record<string, string>; syncStatus?: number } = {},
  ) {
    const headers = options.headers ?? {};
    const s = await sync.post(path, body, { headers });
    const q = await queued.post(path, body, { headers: { ...headers, ...queued.asyncHeaders } });
    expect(s.status, JSON.stringify({ path, body, headers, answer: s.body })).toBe(options.syncStatus ?? 200);
    expect(q.status, JSON.stringify({ path, body, headers, answer: q.body })).toBe(202);
    expect(q.headers.get("preference-applied")).toBe("respond-async");
    return { sync: s, queued: q };
  }

  async function readRoom(api: IngestApi, room: string): Promise<RoomRead> {
    const stats = (await api.get(`/v1/presence/${room}`)).body;
    const members = (await api.get(`/v1/presence/${room}/members`)).body.members.map((m: { id: string }) => m.id);
    return { online: stats.online, activeToday: stats.activeToday, newToday: stats.newToday, members };
  }

  return {
    sync,
    queued,
    start,
    advance(ms) {
      for (const api of both) api.advance(ms);
    },
    setNow(value) {
      for (const api of both) api.setNow(value);
    },
    write,
    async heartbeat(room, ids) {
      await write(`/v1/presence/${room}/heartbeats`, typeof ids === "string" ? { id: ids } : { ids });
    },
    async leave(room, id) {
      for (const api of both) expect((await api.del(`/v1/presence/${room}/members/${id}`)).status).toBe(204);
    },
    async room(room) {
      return [await readRoom(sync, room), await readRoom(queued, room)];
    },
  };
}
