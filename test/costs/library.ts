import type { CostArea } from "./types.ts";

/**
 * The library (`new Edgestats(...)`) runs the service's scripts, so a call costs what the
 * matching API call costs; measured from Node in test/redis/costs-library.test.ts.
 */
export const area: CostArea = {
  title: "Library (`edgestats` package)",
  order: 90,
  rows: {
    record: {
      call: "`trending(s).record(member)`",
      state: "steady (hour already written)",
      roundTrips: 1,
      commands: 3,
    },
    top: {
      call: "`trending(s).top({ n: 10 })`",
      state: "steady, events in the current hour only",
      roundTrips: 1,
      commands: 5,
      note: "no finished hour holds an event, so there is no union to cache: each read asks the compaction queue (`ZMSCORE _dirty`, issue 15) and finds nothing to union; a stream with finished hours reads its cached union in 5 commands (docs/trending.md)",
    },
    incr: { call: "`counter(c).incr(member)`", state: "existing member", roundTrips: 1, commands: 3 },
    incrIdempotent: {
      call: "`counter(c).incr(member, 1, { idempotencyKey })`",
      state: "new key",
      roundTrips: 1,
      commands: 5,
      note: "the idempotency record: one GET and one SET in the same script",
    },
    incrReplay: {
      call: "`counter(c).incr(member, 1, { idempotencyKey })`",
      state: "repeat of a key",
      roundTrips: 1,
      commands: 2,
      note: "the GET finds the record; nothing is written",
    },
    heartbeat: { call: "`presence(r).heartbeat(id)`", state: "id online already", roundTrips: 1, commands: 5 },
    increment: { call: "`leaderboard(b).increment(player, 5)`", state: "joined player", roundTrips: 1, commands: 5 },
  },
};
