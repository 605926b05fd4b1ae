/**
 * Trending: what each call costs in Upstash commands, per state, measured and
 * asserted by test/worker/costs-trending.test.ts. Before issue 14 (same states):
 * ingest 6 / 105 / 1,005, late 7, `Idempotency-Key` 8, first read 10, tie at the
 * boundary 12, never-written stream 8, delete 6, compaction per stream-hour
 * 19.35 trimmed / 16.35 not, empty run 3. Before issue 15: first read 8, never-written
 * stream 4, slot switch 9, member lookup 9 (merging the window), compaction per stream-hour
 * 11.25 trimmed / 9.25 not (it built the 24 h and 48 h unions of every stream).
 */
import type { CostArea, CostRow } from "./types.ts";

const row = (call: string, state: string, commands: number, extra: Partial<CostRow> = {}): CostRow => ({
  call,
  state,
  roundTrips: 1,
  commands,
  ...extra,
});

export const area = {
  title: "Trending",
  order: 10,
  rows: {
    ingestRepeat: row("trending ingest, 1 event", "steady, repeat member", 3, { naive: 2, target: 3 }),
    ingestNewMember: row("trending ingest, 1 event", "steady, new member", 3, { naive: 2, target: 3 }),
    ingestNewHour: row("trending ingest, 1 event", "first event of the stream's hour", 6, {
      naive: 2,
      note: "A bucket's first write also sets its expiry and records its hour in the registry and the compaction queue (`EXPIRE`, `ZADD _seen`, `ZADD _dirty`): once per stream and hour, never again in that hour. A new stream is also listed in `_names` (+1).",
    }),
    ingestNewStream: row("trending ingest, 1 event", "first event of a new stream", 7, { naive: 2 }),
    ingest100: row("trending ingest, 100 events", "steady, 100 new members", 102, { naive: 200, target: 102 }),
    ingest1000: row("trending ingest, 1,000 events", "steady, 1,000 new members", 1002, { naive: 2000 }),
    ingest1000Same: row("trending ingest, 1,000 events", "steady, all of one member", 3, {
      naive: 2000,
      note: "A batch is summed per (hour, member) before the script: 1,000 hits on one page are one `ZINCRBY`.",
    }),
    ingestIdempotent: row("trending ingest, 1 event, `Idempotency-Key`", "steady, first request", 4, { target: 5 }),
    ingestReplay: row("trending ingest, 1 event, `Idempotency-Key`", "replay", 3, {
      note: "`SET … NX` finds the key taken, then `GET` of the record (2 before: a first request now pays one command less, a retry one more).",
    }),
    ingestLate: row("trending ingest, 1 event", "late: `at` in a finished hour", 5, {
      naive: 2,
      note: "A late event re-queues its hour for compaction (`ZADD _dirty`) and deletes the cached unions that hold its hour (`UNLINK`), so the next read sees it. A write in the last 5 minutes of its hour does the same for the next hour's unions (a Worker whose clock has passed the hour may have built them).",
    }),
    ingestHourEnd: row("trending ingest, 1 event", "steady, last 5 minutes of the hour", 5, { naive: 2 }),
    topWarm: row("trending top-10 / 24 h", "warm, long-tailed counts", 5, { naive: 5 }),
    topTies: row("trending top-10 / 24 h", "warm, a 200-member tie at the boundary", 5, {
      naive: 5,
      target: 5,
      note: "The threshold read's first page is 256 deep (32 before): a deeper page costs no more commands, and a tie of up to about 250 members at the top-N boundary settles in one round. A larger tie takes up to 4 commands per further round; past 1,024 members it merges (always exact).",
    }),
    topEmptyCurrent: row("trending top-10 / 24 h", "warm, current hour empty", 4, { naive: 5 }),
    topFirstRead: row("trending top-10 / 24 h", "first read of the hour, previous hour compacted", 9, {
      naive: 5,
      note: "The first read of an hour (or after a late event) builds the window's union in the same script: `ZMSCORE _dirty` (is the previous hour compacted? the stream's entry and its compaction mark, review 17), `ZUNIONSTORE` of trimmed hours only, `EXPIRE`, one more `ZMSCORE`. Compaction no longer builds unions nobody reads (issue 15).",
    }),
    topFirstReadOpen: row("trending top-10 / 24 h", "first read of the hour, previous hour not yet compacted", 12, {
      naive: 5,
      note: "Until compaction has trimmed the previous hour (minute 5), the union leaves it out (`ZADD` of a marker saying so) and the read pages it as a third sorted set: no script copies a raw hour of 1M members (7.2 s before issue 15, see bench).",
    }),
    topWarmOpen: row("trending top-10 / 24 h", "warm, previous hour not yet compacted", 7, {
      naive: 5,
      note: "A third page and lookups: `ZREVRANGE` and `ZMSCORE` of the previous hour, `ZMSCORE` of its candidates in the union.",
    }),
    topOtherWindow: row("trending top-10 / 7 h", "warm", 5, { naive: 5 }),
    topOtherWindowSwitch: row("trending top-10 / 5 h", "after a 7 h read (shared slot rebuilt)", 11, {
      naive: 5,
      note: "Widths other than 24 h and 48 h share one cached union per stream and hour (bounded memory, issue 12): reading another width rebuilds it, +1 command (`ZADD` of the width it holds) over a first read, and +1 `UNLINK` of the other width's union first (a `ZUNIONSTORE` over it would free its members inside the script: up to `TRENDING_KEEP` × its hours).",
    }),
    topNeverWritten: row("trending top-10 / 24 h", "stream never written", 5, { naive: 5 }),
    memberWarm: row("trending member lookup / 24 h", "warm", 6, {
      note: "O(log N), nothing merged (9 commands and a merge of the whole window before issue 15): `ZMSCORE` of the member in the union and the current hour (with each one's cut, the current hour's too since review 10), then the members that could rank above it (`ZREVRANGEBYSCORE` ≥ its count / sets, at most 1,000 a set) and their counts elsewhere. Deeper in a big window: rank bounds from `ZCOUNT`s (`rankExact: false`).",
    }),
    memberOpen: row("trending member lookup / 24 h", "warm, previous hour not yet compacted", 9),
    memberCold: row("trending member lookup / 24 h", "first lookup of the hour, previous hour compacted", 10, {
      note: "A lookup that finds no valid union builds it first, as a first top read does: `ZMSCORE _dirty`, `ZUNIONSTORE`, `EXPIRE`, one more `ZMSCORE` (+4 over warm).",
    }),
    memberColdOpen: row(
      "trending member lookup / 24 h",
      "first lookup of the hour, previous hour not yet compacted",
      14,
      {
        note: "+5 over warm: the same, plus `ZADD` of the marker that leaves the previous hour out. The most a lookup costs: 23 commands, cold, previous hour open, the shared slot holding another width (+`UNLINK`), and both rank passes overflowing into bounds (`ZREVRANGE` ×3, `ZCOUNT` ×6): measured in test/redis/review10-trending-model.test.ts (until review 10 the docs gave 17 as the most and had no cold row).",
      },
    ),
    memberColdSwitch: row("trending member lookup / 7 h", "after a 5 h read (shared slot rebuilt)", 12, {
      note: "+2 over a first lookup, as for a top read: `UNLINK` of the other width's union and `ZADD` of the width the slot holds.",
    }),
    risingCold: row("trending rising / 24 h baseline", "no cached union of the baseline hours", 27, {
      note: "The current hour's top 200 (the candidates: `ZREVRANGE`), a lookup of them in the 24 h union (a miss here), then one `ZMSCORE` of them per baseline hour: 3 + baseline hours. Never builds a union (the read writes nothing).",
    }),
    risingOpen: row(
      "trending rising / 24 h baseline",
      "warm (a top read's union), previous hour not yet compacted",
      4,
      { note: "The union leaves the previous hour out until compaction has trimmed it: its bucket is asked too." },
    ),
    risingWarm: row("trending rising / 24 h baseline", "warm (a top read's union of the baseline hours)", 3, {
      note: "The baseline hours are exactly the window of the top read's cached union: one `ZMSCORE` of the 200 candidates there.",
    }),
    risingQuiet: row("trending rising", "current hour empty", 2),
    risingTie: row("trending rising / 24 h baseline", "warm, a tie across the 200 candidates' cut", 4, {
      note: "+1 over warm: `ZREVRANGE` gives tied counts in descending byte order, so the tie at the cut is read again in ascending order (`ZRANGE … BYSCORE`, at most the places left), as every ranking here orders ties.",
    }),
    history48: row("trending member history / 48 h", "any", 50, {
      note: "One `ZMSCORE` (the member and the hour's cut) per hour: 48 finished hours and the current one.",
    }),
    list: row("trending list streams", "any", 2),
    delete: row("trending delete stream", "any", 5),
    deleteLongRetention: row("trending delete stream", "retention 1,000 h (beyond the 168 h horizon)", 11, {
      roundTrips: 2,
      note: "One script deletes what a write can still reach (the registry entries, the 168 + 3 hours' buckets, the unions, atomically: `ZREM` ×3, `UNLINK`); the buckets of older hours, which a retention above 168 h keeps alive and no write reaches, follow in scripts of at most 1,000 keys (`EVALSHA` + an `UNLINK` per 200): one more round trip per 1,000 hours of retention past 169, 11 round trips and 63 commands at the largest retention, 9,600 h. Before review 10 they were left until they expired.",
    }),
    compactIdle: row("trending compaction run", "nothing to do", 2, { target: 2 }),
    compactTrimmed: row(
      "trending compaction, per stream-hour",
      "run of 20 streams × 1 finished hour, each trimmed",
      8.25,
      {
        roundTrips: 3,
        target: 12,
        note: "Per stream and hour: `ZSCORE` `_dirty` and `_seen` (the overlap-safe re-check), `ZCARD`, and when the hour is trimmed `ZREVRANGE` of the (keep+1)-th member, `ZREMRANGEBYRANK` and `ZINCRBY` of the hour's cut (an hour with more than keep members to remove: `ZRANGESTORE` of its top keep, `UNLINK`, `RENAME`, +4), `EXISTS` of the stream's unions (only those a read built are completed), `ZADD _dirty` (the stream's entry and its compaction mark in one command). The run's round trips (queue, batch, and a second queue read because the batch was full) are shared by its 20 streams. The cut lives in the bucket itself, so no hash is read, cleaned or expired.",
      },
    ),
    compactUntrimmed: row(
      "trending compaction, per stream-hour",
      "run of 20 streams × 1 finished hour, nothing to trim",
      5.25,
      { roundTrips: 3, target: 12 },
    ),
  },
} satisfies CostArea;
