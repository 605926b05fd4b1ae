import { keyOf } from "../keys.ts";

/**
 * A board is a fixed set of keys (four, plus its daily snapshot and the
 * snapshot's build on boards without seasons), so deleting it (or handing every key
 * to a script in KEYS) never needs a scan. Player data lives in per-board
 * hashes keyed by player rather than one hash per player as in source post 004
 * (docs/background.md), which would make the set of keys grow with the board.
 */
export interface BoardKeys {
  /** Hash: `ties`, `createdAt`, `seq` (the tie-break sequence). */
  settings: string;
  /** Sorted set: member `<15-digit seq>:<player>`, score = −score. */
  ranking: string;
  /** Hash: player → `<joinedAt>:<ranking member>`. */
  players: string;
  /** Hash: player → profile JSON `{"name","meta"}` (opaque to Lua). */
  profiles: string;
  /** Sorted set (boards without seasons): player → rank at the last daily snapshot (jobs.ts). */
  snapshot: string;
  /** Sorted set: the snapshot being built, renamed over `snapshot` when complete. */
  snapshotNext: string;
}

export function boardKeys(prefix: string, board: string): BoardKeys {
  return {
    settings: keyOf(prefix, "lb", board, "settings"),
    ranking: keyOf(prefix, "lb", board, "ranking"),
    players: keyOf(prefix, "lb", board, "players"),
    profiles: keyOf(prefix, "lb", board, "profiles"),
    snapshot: keyOf(prefix, "lb", board, "snap"),
    snapshotNext: keyOf(prefix, "lb", board, "snap", "next"),
  };
}

/** Sorted set of board names (all scores 0, so it reads back in name order). `_` cannot start a board name. */
export function registryKey(prefix: string): string {
  return keyOf(prefix, "lb", "_boards");
}

/** Hash: the snapshot job's progress (`day` of the last complete pass, `cursor` of the pass under way). */
export function snapshotStateKey(prefix: string): string {
  return keyOf(prefix, "lb", "_snap");
}

/** Width of the tie-break sequence in ranking members; fixed so lexicographic order is numeric order. */
export const SEQ_WIDTH = 15;

/** The player named by a ranking member `<seq>:<player>`. */
export function playerOfMember(member: string): string {
  return member.slice(SEQ_WIDTH + 1);
}
