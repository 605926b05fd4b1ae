import type { CostArea, CostRow } from "./types.ts";

/** Measured: list (EVALSHA, HMGET, ZRANGE) + step (EVALSHA, HMGET, DEL of a stale build, ZRANGE, ZADD, EXISTS, RENAME, EXPIRE, HSET + HDEL of the progress, HSET + HDEL of the job state). */
const SNAPSHOT_BOARD_100 = 17;

const r = (call: string, state: string, commands: number, extra: Partial<CostRow> = {}): CostRow => ({
  call,
  state,
  roundTrips: 1,
  commands,
  ...extra,
});

/** Leaderboard calls, measured by test/worker/costs-leaderboards.test.ts. */
export const area = {
  title: "Leaderboards",
  order: 50,
  rows: {
    configureNew: r("leaderboard PUT board", "new board", 5),
    configureExisting: r("leaderboard PUT board", "existing board", 5, {
      note: "The board's activity stamp in the registry: `ZREVRANGE` of the highest, then `ZADD` above it (review 26: +1, so a pass over the list by cursor never misses a board re-stamped by a Worker whose clock lags).",
    }),
    joinNewBoard: r("leaderboard join", "first player of a new board", 10),
    joinNew: r("leaderboard join", "new player", 10, {
      note: "A new player takes the next tie-break sequence (`HINCRBY`), a ranking entry, a players entry and a profile, and moves the board up the list (registry `ZREVRANGE` + `ZADD`, review 26: above its highest); the answer carries the rank (`ZRANK`).",
    }),
    joinExisting: r("leaderboard join", "existing player (profile replaced)", 5),
    joinNewSeasonal: r("leaderboard join, daily board", "new player", 11, {
      note: "As on a board without seasons, and the season key gets its lifetime (`EXPIRE … NX`) when the player enters it (review 11 measured it; the join rows named no board type).",
    }),
    joinExistingSeasonFirst: r(
      "leaderboard join, daily board",
      "existing player, the player's first write of the season",
      9,
      {
        note: "Joining again enters the season at 0, as a first score change does: `ZADD`, `EXPIRE … NX`, the `ZRANK` of the season before and the `HSET` of the entry on top of the profile's `HSET`, `ZSCORE` and `ZRANK`. A join in a season the player already entered costs the 5 above.",
      },
    ),
    joinExistingSeasonFirstReached: r(
      "leaderboard join, daily board, `ties: reached`",
      "existing player, the player's first write of the season",
      10,
      { note: "+1: the new tie-break sequence (`HINCRBY`) it enters the season with." },
    ),
    increment: r("leaderboard increment", "steady", 5, {
      naive: 3,
      target: 5,
      note: "`HMGET` of the player's entry (ranking member and tie policy), `ZMSCORE` so a result outside ±1e15 is refused before anything is written (the one command the naive code does not spend: it has no range check, so no exactness bound), `ZINCRBY`, `ZRANK`. A batch pays the `HMGET` and `ZMSCORE` once.",
    }),
    incrementIdempotent: r("leaderboard increment, `Idempotency-Key`", "steady, first request", 7, { target: 7 }),
    incrementTakesLead: r("leaderboard increment", "takes the lead, no `leaderboard.leader` webhook", 7, {
      note: "A write that leaves a player at rank 1 compares it with the board's last told leader (`_leader` in the players hash, read by the same `HMGET`): a new #1 is stored (in the `HSET` of the entries, which a better rank pays anyway) and queued for the webhooks in the same script, one round trip: `HGETALL` of the webhooks. The leader scoring again costs the steady 5.",
    }),
    incrementTakesLeadHook: r("leaderboard increment", "takes the lead, one `leaderboard.leader` webhook", 13, {
      note: "Queueing as `emit` does (docs/webhooks.md): `ZMSCORE` + `ZADD` + `ZREMRANGEBYRANK` of the recent delivery ids, `ZCARD` of the queue, `HSETNX` + `ZADD` of the delivery.",
    }),
    setLeaderFallsBack: r(
      "leaderboard set, `mode: replace`",
      "the leader's own write drops it to #2 (the new #1 did not write)",
      8,
      {
        note: "The leader's own write moved it down: `ZRANGE … 0 0` finds the new #1, stored and queued (`HGETALL` of the webhooks).",
      },
    ),
    incrementReplay: r("leaderboard increment, `Idempotency-Key`", "replay", 2),
    incrementReached: r("leaderboard increment", "steady, `ties: reached`", 9, {
      note: "Reaching a new score takes a new place in the tie order: `HINCRBY` of the sequence, `ZADD` + `ZREM` of the ranking member (the new one first, so a season key whose only player moves never empties and keeps its TTL), `HSET` of the players entry.",
    }),
    setReplace: r("leaderboard set, `mode: replace`", "steady, new value", 5),
    setBestNotBetter: r("leaderboard set, `mode: best`", "steady, not better (nothing written)", 4),
    setBestBetter: r("leaderboard set, `mode: best`", "steady, better", 5),
    batch100: r("leaderboard batch scores, 100 players", "steady", 203, { naive: 300 }),
    incrementBetterRank: r("leaderboard increment", "steady, the player's best rank improves", 6, {
      note: "`bestRank` is kept in the player's entry (read by the `HMGET` every change does anyway); one `HSET` writes it when a change brings a better rank than the season's best so far.",
    }),
    incrementGuarded: r("leaderboard increment, board with guards", "steady", 5, {
      note: "The guards (`minScore`, `maxScore`, `maxIncrement`) and the season settings travel in the players hash (`_cfg`), read by the same `HMGET` as the player's entry: no command added.",
    }),
    incrementRejected: r("leaderboard increment refused by a guard (422)", "any", 3, {
      note: "`HMGET` and `ZMSCORE`, then the refusal: nothing written.",
    }),
    incrementSeasonal: r("leaderboard increment, daily board", "steady", 5),
    incrementSeasonFirst: r("leaderboard increment, daily board", "the player's first write of the season", 9, {
      note: "The player enters the season at 0 (`ZADD`), the season key gets its lifetime (`EXPIRE … NX`), the final rank of the season before is kept (`ZRANK`) and the entry rewritten (`HSET`): once per player per season.",
    }),
    incrementSeasonFirstReached: r(
      "leaderboard increment, daily board, `ties: reached`",
      "the player's first write of the season",
      10,
      {
        note: "As under `ties: joined`, and the player enters the season with a new tie-break sequence (`HINCRBY`: it reaches 0 in this season now), which the change then keeps: no second move (12 before review 4, when it entered with last season's member and then moved).",
      },
    ),
    get: r("leaderboard get player", "board without seasons", 7, {
      note: "`HMGET` (entry and settings), `ZSCORE`, `ZRANK`, `ZCARD` (total and percentile), `HGET` of the profile, `ZSCORE` in the daily snapshot (`previousRank`); was 5 before `total`/`percentile`, 6 before the snapshot.",
    }),
    getSeasonalIdle: r("leaderboard get player, daily board", "player has not played this season", 6, {
      note: "No `ZRANK` in the season; one `ZRANK` in the season before gives `previousRank` (a player who played this season has it in the entry).",
    }),
    page: r("leaderboard page, limit 10", "board without seasons", 7, {
      naive: 12,
      note: "One `HMGET` of the rows' entries gives `bestRank` (was 5), one `ZMSCORE` of the daily snapshot the rows' `previousRank` (was 6): the same 7 for any `limit`.",
    }),
    pageSeasonal: r("leaderboard page, limit 10, daily board", "rows played this season", 6),
    around: r("leaderboard around-me, k = 5", "board without seasons", 7, {
      naive: 14,
      note: "As a page: the rows' `previousRank` is one `ZMSCORE` of the daily snapshot (was 6).",
    }),
    rank10: r("leaderboard subset ranking, 10 players", "any", 14, {
      note: "`HMGET` of entries, `ZMSCORE`, one `ZRANK` per ranked player, `HMGET` of profiles: 4 + n.",
    }),
    rank100: r("leaderboard subset ranking, 100 players", "any", 104),
    seasons: r("leaderboard seasons", "daily board, keepSeasons 12, 2 seasons played", 18, {
      note: "`ZCARD` of each kept season (current + keepSeasons), `ZRANGE` of the top 3 of each one played, one `HMGET` of their profiles.",
    }),
    seasonsNonePlayed: r("leaderboard seasons", "daily board, keepSeasons 5, none played", 8, {
      note: "2 + (keepSeasons + 1): the `ZCARD` of each kept season, nothing else.",
    }),
    rankNoneRanked: r("leaderboard subset ranking, 3 players", "none ranked in the season, some joined", 3, {
      note: "`HMGET` of entries and `ZMSCORE`, and one command to tell a board from none; no `ZRANK` and no profiles.",
    }),
    rankNoneJoined: r("leaderboard subset ranking, 2 players", "none of the names ever joined", 3),
    configureSeasons: r("leaderboard PUT board, reset and guards", "existing board", 7),
    count: r("leaderboard count", "any", 3),
    remove: r("leaderboard remove player", "not the last player", 6),
    removeLast: r("leaderboard remove player", "last player of a board made by joins", 9, {
      note: "The last player's removal takes the board out of the registry and, when no admin configured it, deletes its settings: `HLEN` of the players hash (the sixth command every removal runs) tells it empty, then `ZREM`, `HGET`, `UNLINK`.",
    }),
    removeSeasonal: r("leaderboard remove player, daily board", "a player a finished season still ranks", 7, {
      note: "As a removal that is not the last, and the player's ranking member in each kept season it was in is kept (`HSET` of `gone:<player>` in the settings), so a join again reads those seasons (review 15). A player of the current season only costs the 6.",
    }),
    joinAgainSeasonal: r("leaderboard join, daily board", "a player removed while a finished season ranks it", 13, {
      note: "As a new player (11), and the kept members come into the new entry (read by the same `HMGET` of the settings): `ZRANK` in the season before for `previousRank`, `HDEL` of `gone:<player>`.",
    }),
    removeMissing: r("leaderboard remove player", "no such player", 2),
    deleteBoard: r("leaderboard delete board", "any", 3),
    list: r("leaderboard list boards", "first page, or a page by offset", 3),
    listNext: r("leaderboard list boards", "next page by cursor (cursor board not moved)", 5, {
      note: "`ZSCORE` + `ZREVRANK` of the cursor's board (a binary search among equal activity times if it moved or left), `ZREVRANGE` of the page, `ZCARD` for `total`.",
    }),
    listLast: r("leaderboard list boards", "last page of a pass by cursor", 6, {
      note: "+1 on the page that ends the pass: `ZREVRANGEBYSCORE` of the boards whose activity rose above the pass's start while it ran (at most `limit` + 1), listed at its end.",
    }),
    snapshotDone: r("job `leaderboards.snapshot`", "later run of the same UTC day", 2, {
      note: "The pass of the day is complete: `HMGET` of the job's state, nothing else. The hourly cron runs it 24 times a day.",
    }),
    snapshotBoard: r(
      "job `leaderboards.snapshot`",
      "first run of the day, one board of 100 players",
      SNAPSHOT_BOARD_100,
      {
        roundTrips: 2,
        note: "A script listing the registry's next page of boards, then a script per 50 boards copying at most `LEADERBOARD_SNAPSHOT_CHUNK` (5,000) ranking members: `HMGET` of the settings, `DEL` of a stale build, `ZRANGE`, one `ZADD` per 1,000 members, `EXISTS`, `UNLINK` of the previous snapshot and `RENAME` (+1: a RENAME over it freed its members inside the script, 151 ms at 1M players; UNLINK frees them in the background), `EXPIRE`, `HSET`/`HDEL` of the progress, and `HMGET` of the job's state before moving it (+1, review 8: a late run whose clock is a day behind never moves a later day's pass back nor takes a second snapshot that day). A board of 1M players: 200 scripts of about 10 commands, spread over runs by `LEADERBOARD_SNAPSHOT_SCRIPTS` (40).",
      },
    ),
  },
} satisfies CostArea;
