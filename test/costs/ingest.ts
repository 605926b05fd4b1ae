/**
 * Queued ingest (issue 16): what accepting and applying queued writes costs,
 * measured and asserted by test/worker/costs-ingest.test.ts. A consumer batch
 * is up to 100 messages; each target (stream, counter, room) in it costs one
 * script: EVALSHA, SMISMEMBER of today's applied set (+1 for messages accepted
 * before today or keyed by an Idempotency-Key: yesterday's set), the library's
 * own write commands for the merged items, SADD and EXPIRE NX of the applied
 * set; and the batch one stats script (6). So a batch costs about
 * 6 + Σ targets (4 + distinct members written + the library's per-call bookkeeping).
 */
import type { CostArea, CostRow } from "./types.ts";

const row = (
  call: string,
  state: string,
  roundTrips: number,
  commands: number,
  extra: Partial<CostRow> = {},
): CostRow => ({ call, state, roundTrips, commands, ...extra });

export const area = {
  title: "Queued ingest",
  order: 60,
  rows: {
    accept: row("trending ingest, 100 events, `Prefer: respond-async`", "any (202)", 0, 0, {
      note: "Accepting costs no Redis command: the library validates the request without Redis and the Worker sends it to the queue (one `sendBatch`). The commands are paid by the consumer, below.",
    }),
    batch100: row(
      "consumer batch: 100 messages × 100 events (10,000 events)",
      "steady, 3 streams × 40 members",
      4,
      141,
      {
        target: 1000,
        note: "The issue's target is 0.1 command per event; merged per (stream, hour, member), this batch costs 0.0141 per event. Synchronously the same 100 requests cost 4,200 commands (next row), 30 × more.",
      },
    ),
    sync100: row("the same 100 requests of 100 events, synchronous", "steady", 100, 4200),
    batch1: row("consumer batch: 100 messages × 1 event", "steady, 3 streams × 20 members", 4, 81, {
      target: 100,
      note: "Single-event producers under load: ≤ 1 command per event as long as members repeat within a batch (here 0.81 per event); 100 distinct members in a batch would cost about 1.2 per event, each event then being a ZINCRBY of its own.",
    }),
    sync1: row("the same 100 requests of 1 event, synchronous", "steady", 100, 300),
    counters: row("consumer batch, counters: 100 messages × 100 increments", "steady, 1 counter × 50 members", 2, 61),
    presence: row("consumer batch, presence: 100 messages × 10 ids", "steady, 1 room, 200 known ids online", 2, 14, {
      note: "Heartbeats of a room within 5 s are applied as one heartbeat call at the latest time: the library's whole-batch script.",
    }),
    presenceSpread: row(
      "consumer batch, presence: 10 messages × 10 ids sent over 4 s of one 5 s window",
      "steady, 1 room, 200 known ids online",
      2,
      15,
      {
        note: "The window's ids were sent at different times: the heartbeat also counts at the window's earliest time, so ids that timed out within the window are in its peak (+1 ZCOUNT over the row above; review 19).",
      },
    ),
    redelivered: row("consumer batch: 100 messages × 100 events, all redelivered", "already applied", 4, 14, {
      note: "Each target's script finds its messages in the applied set and writes nothing (EVALSHA, SMISMEMBER ×2: these were accepted the day before).",
    }),
    keyed: row("consumer batch: 1 message with an `Idempotency-Key`, 1 event", "steady, member known", 2, 15, {
      note: "3 over the same message without a key: SMISMEMBER of yesterday's set (a keyed retry may come within 24 h), GET of the request's synchronous idempotency record (a request sent once each way is applied once: the record of a synchronous first send makes this one a duplicate) and, after the write, SET … NX of that record (so a synchronous retry is a replay).",
    }),
    agedPart: row("consumer batch: 1 message, 1 event fresh and 1 aged out", "steady, member known", 3, 20, {
      note: "Review 15: the apply script also records the part it leaves out (its items' indexes) in today's parts hash, in the same atomic step as the write (HSET, EXPIRE NX; only when a message of the group has an aged-out part); after the part's send, `ingest.markParts` deletes that record from today's and yesterday's hash (EVALSHA, HDEL ×2: one round trip), so a redelivery sends it no more. (Review 14 asked the applied sets for a `dl:<id>` mark instead, SMISMEMBER ×2, and SADDed it: the same 20.)",
    }),
    agedPartAgain: row("consumer batch: the same message delivered again (its ack lost)", "applied, part sent", 2, 9, {
      note: "Found in the applied set; its part's record is gone (sent): nothing written, nothing sent to the dead-letter queue. HMGET of today's and yesterday's parts hash, only for a message with an aged-out part (review 14: SMISMEMBER ×2 of its mark).",
    }),
    agedPartLate: row(
      "consumer batch: the same message delivered again, its part's send failed and the rest aged out too",
      "applied, part not sent",
      3,
      14,
      {
        note: "Review 15: the `ingest.applied` look-up finds it applied (EVALSHA, SMISMEMBER ×2: the next day) and, for a message found, the part its application left out in the parts hashes (HMGET ×2); that part alone is sent, then its record deleted (`ingest.markParts`: EVALSHA, HDEL ×2); and the batch's stats script (6: duplicates and dead-lettered). It was acked as a duplicate before, the part lost.",
      },
    ),
    deadWhole: row("consumer batch: 1 message whose items all aged out", "not applied", 3, 10, {
      note: "Review 14: before it is dead-lettered, one `ingest.applied` script for the batch's such messages asks the applied sets (EVALSHA, SMISMEMBER; no write), so a message applied before its items aged out is acked as a duplicate when delivered again. Review 17: once sent, `ingest.markParts` adds its ids to today's applied set (EVALSHA, SADD, EXPIRE NX: one round trip per batch that sends such messages), so a copy in a later batch (a keyed retry, a lost ack) is acked, not sent again (2 round trips, 7 commands before).",
    }),
    status: row("`GET /v1/ingest/status` (admin)", "any", 1, 3, {
      note: "HGETALL of this hour's and the previous hour's per-minute counters.",
    }),
  },
} satisfies CostArea;
