import type { CostArea, CostRow } from "./types.ts";

const r = (call: string, state: string, commands: number, extra: Partial<CostRow> = {}): CostRow => ({ call, state, roundTrips: 1, commands, ...extra });

/** Leaderboard calls, measured by test/worker/costs-leaderboards.test.ts. */
export const area = {
  title: "Leaderboards",
  order: 50,
  rows: {
    configureNew: r("leaderboard PUT board", "new board", 4),
    configureExisting: r("leaderboard PUT board", "existing board", 4),
    joinNewBoard: r("leaderboard join", "first player of a new board", 9),
    joinNew: r("leaderboard join", "new player", 9, {
      note: "A new player takes the next tie-break sequence (`HINCRBY`), a ranking entry, a players entry and a profile, and moves the board up the list (registry `ZADD`); the answer carries the rank (`ZRANK`).",
    }),
    joinExisting: r("leaderboard join", "existing player (profile replaced)", 5),
    increment: r("leaderboard increment", "steady", 5, {
      naive: 3,
      target: 5,
      note: "`HMGET` of the player's entry (ranking member and tie policy), `ZMSCORE` so a result outside ±1e15 is refused before anything is written (the one command the naive code does not spend: it has no range check, so no exactness bound), `ZINCRBY`, `ZRANK`. A batch pays the `HMGET` and `ZMSCORE` once.",
    }),
    incrementIdempotent: r("leaderboard increment, `Idempotency-Key`", "steady, first request", 7, { target: 7 }),
    incrementReplay: r("leaderboard increment, `Idempotency-Key`", "replay", 2),
    incrementReached: r("leaderboard increment", "steady, `ties: reached`", 9, {
      note: "Reaching a new score takes a new place in the tie order: `HINCRBY` of the sequence, `ZREM` + `ZADD` of the ranking member, `HSET` of the players entry.",
    }),
    setReplace: r("leaderboard set, `mode: replace`", "steady, new value", 5),
    setBestNotBetter: r("leaderboard set, `mode: best`", "steady, not better (nothing written)", 4),
    setBestBetter: r("leaderboard set, `mode: best`", "steady, better", 5),
    batch100: r("leaderboard batch scores, 100 players", "steady", 203, { naive: 300 }),
    get: r("leaderboard get player", "any", 5),
    page: r("leaderboard page, limit 10", "any", 5, { naive: 12 }),
    around: r("leaderboard around-me, k = 5", "any", 5, { naive: 14 }),
    count: r("leaderboard count", "any", 3),
    remove: r("leaderboard remove player", "not the last player", 6),
    removeLast: r("leaderboard remove player", "last player of a board made by joins", 9, {
      note: "The last player's removal takes the board out of the registry and, when no admin configured it, deletes its settings: `EXISTS`, `ZREM`, `HGET`, `DEL`.",
    }),
    removeMissing: r("leaderboard remove player", "no such player", 2),
    deleteBoard: r("leaderboard delete board", "any", 3),
    list: r("leaderboard list boards", "any", 3),
  },
} satisfies CostArea;
