/**
 * A naive leaderboard (test/redis/review11-leaderboards-model.test.ts): docs/leaderboards.md written as
 * plain maps and sorts, and the commands each call costs by docs/costs.md's leaderboard rows and their
 * footnotes (a call's EVALSHA counts as one command, as the local server counts it). Time only moves
 * forward in the walks, so a finished season is frozen and previousRank is its final rank.
 */
import { seasonAt, seasonBefore, type Reset } from "../../src/leaderboards/seasons.ts";

export type Ties = "joined" | "reached";
export type Change = { player: string; by: number } | { player: string; set: number; mode: "replace" | "best" };

const MAX = 1e15;
const MAX_BY = 1e12;
const LETTER: Record<Reset, string> = { none: "n", daily: "d", weekly: "w", monthly: "m" };
/** JS has −0, Redis prints 0 and the library answers 0. */
const z = (x: number) => (x === 0 ? 0 : x);

interface Entry {
  name: string;
  joinedAt: number;
  /** Which join this is: a removed and re-joined player is another ranking member. */
  gen: number;
  /** Tie-break sequence of the player's member in the season it last wrote in. */
  seq: number;
  /** Best rank seen at the player's writes in season `bestSid`. */
  best: number | null;
  bestSid: string;
  /** Earlier joins of the player whose rows in finished seasons read as its own (review 15). */
  inherited: Set<number>;
  /** The seasons this join wrote in, and whether it took earlier joins' members (a removal keeps them then). */
  sids: Set<string>;
  seeded: boolean;
}
interface Row {
  player: string;
  gen: number;
  seq: number;
  score: number;
}
interface Config {
  ties?: Ties | undefined;
  reset?: Reset | undefined;
  keepSeasons?: number | undefined;
  minScore?: number | null | undefined;
  maxScore?: number | null | undefined;
  maxIncrement?: number | null | undefined;
}

export class Model {
  exists = false;
  implicit = false;
  inRegistry = false;
  createdAt = 0;
  ties: Ties = "joined";
  reset: Reset = "none";
  keep = 12;
  min: number | null = null;
  max: number | null = null;
  inc: number | null = null;
  seq = 0;
  gens = 0;
  entries = new Map<string, Entry>();
  /** Removed players: their joins' rows a join again reads (`gone:<player>` in the settings), under the policy then. */
  gone = new Map<string, { ties: Ties; gens: Set<number> }>();
  seasons = new Map<string, Map<string, Row>>();
  snap = new Map<string, number>();
  /** The #1 last told to leaderboard.leader (the `_leader` field). */
  told: { sid: string; player: string } | null = null;
  readonly hook: boolean;
  constructor(hook: boolean) {
    this.hook = hook;
  }

  sid(now: number) {
    return this.reset === "none" ? "all" : seasonAt(this.reset, now).id;
  }
  season(sid: string) {
    let s = this.seasons.get(sid);
    if (!s) this.seasons.set(sid, (s = new Map()));
    return s;
  }
  order(sid: string): Row[] {
    return [...(this.seasons.get(sid)?.values() ?? [])].sort((a, b) => b.score - a.score || a.seq - b.seq);
  }
  /** The player's rank in `sid` as its current entry's member (a row of an earlier join is another member). */
  rankOf(sid: string, player: string): number | null {
    const e = this.entries.get(player);
    const i = this.order(sid).findIndex((r) => r.player === player && (r.gen === e?.gen || e?.inherited.has(r.gen)));
    return i < 0 ? null : i + 1;
  }
  scoreIn(sid: string, player: string): number {
    return this.seasons.get(sid)?.get(player)?.score ?? 0;
  }
  nameOf(player: string) {
    return this.entries.get(player)?.name ?? null;
  }
  listed() {
    return this.inRegistry;
  }
  snapshot() {
    this.snap = new Map(this.order("all").map((r, i) => [r.player, i + 1]));
  }
  cfgText() {
    const t = (v: number | null) => (v === null ? "" : String(v));
    return `${LETTER[this.reset]}|${this.keep}|${t(this.min)}|${t(this.max)}|${t(this.inc)}`;
  }
  private seasonal() {
    return this.reset !== "none";
  }
  private prevSid(now: number) {
    return this.seasonal() ? seasonBefore(seasonAt(this.reset, now))!.id : null;
  }

  /** previousRank and bestRank of a player read in the current season at `rank` (docs: Movement). */
  movement(player: string, rank: number | null, now: number) {
    const e = this.entries.get(player)!;
    const sid = this.sid(now);
    const prevSid = this.prevSid(now);
    const previousRank = prevSid ? this.rankOf(prevSid, player) : (this.snap.get(player) ?? null);
    const best = e.bestSid === sid ? e.best : null;
    return { previousRank, bestRank: rank === null ? null : Math.min(best ?? rank, rank) };
  }
  private seen(player: string, sid: string): boolean {
    const e = this.entries.get(player)!;
    const rank = this.rankOf(sid, player)!;
    if (e.bestSid !== sid) e.best = null;
    e.bestSid = sid;
    if (e.best === null || rank < e.best) {
      e.best = rank;
      return true;
    }
    return false;
  }
  /** A joined player's first write of the season: enters at 0 (under reached with a new sequence). */
  private enter(player: string, sid: string, lastSeq: { v: number | null }) {
    const e = this.entries.get(player)!;
    if (this.ties === "reached") e.seq = lastSeq.v = ++this.seq;
    e.best = null;
    e.bestSid = sid;
    e.sids.add(sid);
    this.season(sid).set(player, { player, gen: e.gen, seq: e.seq, score: 0 });
    // ZADD, EXPIRE NX and the ZRANK of the season before (seasonal), HINCRBY (reached)
    return 1 + (this.seasonal() ? 2 : 0) + (this.ties === "reached" ? 1 : 0);
  }
  /** Outside the board's guards [min, max]. */
  private outside(v: number): boolean {
    return (this.min !== null && v < this.min) || (this.max !== null && v > this.max);
  }
  private createBoard(now: number, implicit: boolean) {
    Object.assign(this, { exists: true, implicit, createdAt: now, ties: "joined", reset: "none", keep: 12 });
    Object.assign(this, { min: null, max: null, inc: null });
  }

  join(player: string, name: string, score: number | undefined, now: number) {
    if (score !== undefined && Math.abs(score) > MAX) return { kind: "invalid" as const, cost: 0 };
    const e = this.entries.get(player);
    const sid = this.sid(now);
    if (e) {
      e.name = name;
      let cost = 4; // EVALSHA, HMGET, HSET of the profile, ZSCORE
      const row = this.seasons.get(sid)?.get(player);
      // review 20: a player not in the season is not entered at 0 outside the guards (profile only)
      if (!row && this.outside(0)) {
        return {
          kind: "existing" as const,
          cost,
          answer: { created: false, score: 0, rank: null, joinedAt: e.joinedAt },
        };
      }
      let entered = false;
      if (!row) {
        cost += this.enter(player, sid, { v: null });
        entered = true;
      }
      cost += 1; // ZRANK
      if (this.seen(player, sid) || entered) cost += 1; // HSET of the entry
      const answer = {
        created: false,
        score: this.scoreIn(sid, player),
        rank: this.rankOf(sid, player)!,
        joinedAt: e.joinedAt,
      };
      return { kind: "existing" as const, cost, answer };
    }
    const v = z(score ?? 0);
    // a board that does not exist has no guards (deleted, or gone with its last player)
    if (!this.exists) this.createBoard(now, true);
    if ((this.min !== null && v < this.min) || (this.max !== null && v > this.max))
      return { kind: "rejected" as const, cost: 2 };
    const sidNow = this.sid(now);
    const gen = ++this.gens;
    const seq = ++this.seq;
    // a player removed before: HDEL of its kept members, and under the same policy they read as its
    // own (the ZRANK of the season before for previousRank)
    const gone = this.gone.get(player);
    this.gone.delete(player);
    const seeded = gone?.ties === this.ties;
    const extra = gone ? 1 + (seeded && this.seasonal() ? 1 : 0) : 0;
    const inherited = seeded ? gone.gens : new Set<number>();
    const sids = new Set([sidNow]);
    this.entries.set(player, { name, joinedAt: now, gen, seq, best: null, bestSid: sidNow, inherited, sids, seeded });
    this.season(sidNow).set(player, { player, gen, seq, score: v });
    this.seen(player, sidNow);
    this.inRegistry = true;
    const answer = {
      created: true,
      player,
      name,
      meta: null,
      score: v,
      rank: this.rankOf(sidNow, player)!,
      joinedAt: now,
    };
    // 10: the board's registry stamp is ZREVRANGE + ZADD (review 26)
    return { kind: "created" as const, cost: 10 + (this.seasonal() ? 1 : 0) + extra, answer };
  }

  changes(list: Change[], now: number) {
    const no = { results: [], leader: false, label: "", index: 0 };
    for (const c of list)
      if ("by" in c ? Math.abs(c.by) > MAX_BY : Math.abs(c.set) > MAX)
        return { ...no, kind: "invalid" as const, cost: 0 };
    const distinct = [...new Set(list.map((c) => c.player))];
    for (const p of distinct)
      if (!this.entries.has(p))
        return { ...no, kind: "missing" as const, cost: 2, index: list.findIndex((c) => c.player === p) };
    const sid = this.sid(now);
    const rows = this.season(sid);
    // pass 1: nothing written; every intermediate result within ±1e15 and the guards
    const sim = new Map(distinct.map((p) => [p, rows.get(p)?.score ?? 0]));
    const spent = new Map<string, number>();
    // review 23: a player absent from the season has no score of it to beat, so its first write, if
    // a best, takes the value (as replace)
    const absent = new Set(distinct.filter((p) => !rows.has(p)));
    const modeOf = (c: Change, seen: Set<string>) => {
      const first = absent.has(c.player) && !seen.has(c.player);
      seen.add(c.player);
      return "mode" in c && (c.mode === "replace" || first) ? "replace" : "best";
    };
    const seen1 = new Set<string>();
    for (const [i, c] of list.entries()) {
      const before = sim.get(c.player)!;
      const mode = modeOf(c, seen1);
      let after: number;
      if ("by" in c) {
        after = before + c.by;
        spent.set(c.player, (spent.get(c.player) ?? 0) + Math.abs(c.by));
        if (this.inc !== null && spent.get(c.player)! > this.inc)
          return { ...no, kind: "guard" as const, cost: 3, index: i };
      } else after = mode === "replace" ? c.set : Math.max(before, c.set);
      if (Math.abs(after) > MAX) return { ...no, kind: "range" as const, cost: 3, index: i };
      if (after !== before) {
        if (this.min !== null && after < this.min) return { ...no, kind: "guard" as const, cost: 3, index: i };
        if (this.max !== null && after > this.max) return { ...no, kind: "guard" as const, cost: 3, index: i };
      }
      sim.set(c.player, after);
    }
    // review 20: a player entering the season whose result is the 0 it entered with is held to the guards
    for (const p of distinct)
      if (!rows.has(p) && sim.get(p) === 0 && this.outside(0)) {
        const index = list.map((c) => c.player).lastIndexOf(p);
        return { ...no, kind: "guard" as const, cost: 3, index };
      }
    let cost = 3; // EVALSHA, HMGET, ZMSCORE
    const lastSeq = { v: null as number | null };
    const moved = new Set<string>();
    for (const p of distinct)
      if (!rows.has(p)) {
        cost += this.enter(p, sid, lastSeq);
        moved.add(p);
      }
    const entered = moved.size > 0;
    let reachedMove = false;
    let writes = 0;
    const results: { player: string; score: number; rank: number }[] = [];
    const seen2 = new Set<string>();
    for (const c of list) {
      const row = rows.get(c.player)!;
      const before = row.score;
      const mode = modeOf(c, seen2);
      const after = z("by" in c ? before + c.by : mode === "replace" ? c.set : Math.max(before, c.set));
      if ("by" in c || after !== before) writes += 1; // ZINCRBY, or ZADD of a new value
      if (this.ties === "reached" && after !== before && row.seq !== lastSeq.v) {
        row.seq = lastSeq.v = ++this.seq;
        this.entries.get(c.player)!.seq = row.seq;
        cost += 3; // HINCRBY, ZADD + ZREM of the member
        moved.add(c.player);
        reachedMove = true;
      }
      row.score = after;
      results.push({ player: c.player, score: after, rank: 0 });
    }
    cost += writes + distinct.length; // a ZRANK per player
    const rankOf = new Map(distinct.map((p) => [p, this.rankOf(sid, p)!]));
    for (const r of results) r.rank = rankOf.get(r.player)!;
    let improved = false;
    for (const p of distinct)
      if (this.seen(p, sid)) {
        moved.add(p);
        improved = true;
      }
    // leaderboard.leader: #1 after the whole request against the one last told this season
    const told = this.told?.sid === sid ? this.told.player : null;
    // a late write into a finished season, once a later season's leader is told, is neither told nor recorded
    const late = this.told !== null && this.told.sid.length === sid.length && this.told.sid > sid;
    let top = late ? null : (distinct.find((p) => rankOf.get(p) === 1) ?? null);
    let zrange = false;
    if (!top && told && rankOf.has(told)) {
      top = this.order(sid)[0]!.player;
      zrange = true;
      cost += 1;
    }
    const leader = top !== null && top !== told;
    if (leader) {
      this.told = { sid, player: top! };
      cost += this.hook ? 7 : 1; // HGETALL of the webhooks (+ queueing as emit does)
    }
    if (moved.size > 0 || leader) cost += 1; // one HSET of entries and `_leader`
    // the states docs/costs.md names (one change that writes, unless named otherwise); the rest are "other"
    let label = ": other";
    const c = list[0]!;
    const wrote = writes === 1;
    if (list.length > 1) label = ": batch";
    else if (!entered && !leader && !improved)
      label = !wrote
        ? "mode" in c && c.mode === "best"
          ? ": best not better"
          : ": same value"
        : reachedMove
          ? ": steady, reached"
          : ": steady";
    else if (wrote && !entered && improved && !leader && !reachedMove) label = ": best improves";
    else if (wrote && !entered && leader && !reachedMove)
      label = zrange ? ": leader drops" : this.hook ? ": takes the lead, webhook" : ": takes the lead";
    else if (wrote && entered && !leader)
      label = this.ties === "reached" ? ": first of season, reached" : ": first of season";
    return { kind: "written" as const, cost, results, leader, label, index: 0 };
  }

  remove(player: string, now: number) {
    const e = this.entries.get(player);
    if (!e) return { kind: "none" as const, cost: 2 };
    this.entries.delete(player);
    const sid = this.sid(now);
    this.seasons.get(sid)?.delete(player);
    if (this.told?.player === player) this.told = null;
    // a finished season may rank this join (or an earlier one it took): +1, the HSET keeping its members
    const kept = this.seasonal() && (e.seeded || [...e.sids].some((s) => s !== sid));
    if (kept) this.gone.set(player, { ties: this.ties, gens: new Set([...e.inherited, e.gen]) });
    const k = kept ? 1 : 0;
    if (this.entries.size > 0) return { kind: "removed" as const, cost: 6 + k };
    this.inRegistry = false;
    if (!this.implicit) return { kind: "last" as const, cost: 8 + k };
    // a board only joins made goes entirely, its snapshot with it (and the settings, the kept members)
    this.exists = false;
    this.snap = new Map();
    this.gone = new Map();
    return { kind: "last" as const, cost: 9 + k };
  }

  configure(c: Config, now: number) {
    const bad = (v: number | null | undefined, bound: number, positive = false) =>
      typeof v === "number" && (!Number.isFinite(v) || Math.abs(v) > bound || (positive && v <= 0));
    if (
      bad(c.minScore, MAX) ||
      bad(c.maxScore, MAX) ||
      bad(c.maxIncrement, MAX_BY, true) ||
      (typeof c.minScore === "number" && typeof c.maxScore === "number" && c.minScore > c.maxScore)
    )
      return { kind: "invalid" as const, cost: 0 };
    // a board that does not exist starts from the defaults (a deleted board kept nothing)
    const min = c.minScore === undefined ? (this.exists ? this.min : null) : c.minScore;
    const max = c.maxScore === undefined ? (this.exists ? this.max : null) : c.maxScore;
    if (min !== null && max !== null && min > max) return { kind: "invalid" as const, cost: 2 };
    const created = !this.exists;
    const ties = c.ties ?? (created ? "joined" : this.ties);
    const reset = c.reset ?? (created ? "none" : this.reset);
    let cost = 2; // EVALSHA, HMGET of the settings
    if (!created && (ties !== this.ties || reset !== this.reset)) {
      cost += 1; // HLEN
      if (this.entries.size > 0) return { kind: "conflict" as const, cost: cost + 1 };
    }
    if (created) {
      this.createBoard(now, false);
      cost += 1;
    } else if (ties !== this.ties) cost += 1;
    if (!created && this.implicit) cost += 1; // HDEL implicit
    const oldText = this.cfgText();
    Object.assign(this, { ties, reset, keep: c.keepSeasons ?? this.keep, min, max });
    if (c.maxIncrement !== undefined) this.inc = c.maxIncrement;
    if (this.cfgText() !== oldText) cost += 2; // HSET cfg in the settings and `_cfg` in the players hash
    this.implicit = false;
    this.inRegistry = true;
    cost += 2 + (created ? 0 : 1); // ZREVRANGE and ZADD of the registry (review 26), ZCARD
    const sid = this.sid(now);
    return {
      kind: "written" as const,
      cost,
      answer: {
        board: "b",
        ties,
        created,
        createdAt: this.createdAt,
        players: created ? 0 : this.order(sid).length,
        ...this.settings(now),
      },
    };
  }
  private settings(now: number) {
    return {
      reset: this.reset,
      keepSeasons: this.keep,
      minScore: this.min,
      maxScore: this.max,
      maxIncrement: this.inc,
      season: this.seasonal() ? this.sid(now) : null,
    };
  }

  deleteBoard() {
    Object.assign(this, { exists: false, inRegistry: false, told: null });
    this.entries = new Map();
    this.gone = new Map();
    this.seasons = new Map();
    this.snap = new Map();
  }

  private rowsOf(rows: Row[], firstRank: number, now: number) {
    return rows.map((r, i) => ({
      rank: firstRank + i,
      player: r.player,
      name: this.nameOf(r.player),
      score: r.score,
      ...this.movement(r.player, firstRank + i, now),
    }));
  }

  page(sid: string, now: number, page: number, limit: number) {
    if (!this.exists) return { cost: 2, label: "missing" };
    const order = this.order(sid);
    const rows = order.slice((page - 1) * limit, page * limit);
    const season = this.seasonal() ? sid : null;
    const answer = {
      items: this.rowsOf(rows, (page - 1) * limit + 1, now),
      total: order.length,
      page,
      limit,
      ties: this.ties,
      season,
    };
    // HMGET settings, ZRANGE, ZCARD; with rows two HMGETs (profiles, entries) and ZMSCORE of the snapshot
    const label = rows.length === 0 ? "empty" : this.seasonal() ? "seasonal, rows" : "none, rows";
    return { answer, cost: 4 + (rows.length > 0 ? 2 + (this.seasonal() ? 0 : 1) : 0), label };
  }

  get(player: string, now: number) {
    const e = this.entries.get(player);
    if (!e) return { cost: 2, label: "missing" };
    const sid = this.sid(now);
    const rank = this.rankOf(sid, player);
    const total = this.order(sid).length;
    const answer = {
      player,
      name: e.name,
      meta: null,
      score: rank === null ? 0 : this.scoreIn(sid, player),
      rank,
      joinedAt: e.joinedAt,
      percentile: rank === null ? null : Math.floor(((total - rank) * 10_000) / total) / 100,
      total,
      ...this.movement(player, rank, now),
      season: this.seasonal() ? sid : null,
    };
    const label = !this.seasonal() ? "none" : rank === null ? "seasonal, not played" : "seasonal, played";
    return { answer, cost: 6 + (this.seasonal() ? 0 : 1), label };
  }

  around(player: string, k: number, now: number) {
    if (!this.entries.has(player)) return { cost: 2, label: "missing" };
    const sid = this.sid(now);
    const rank = this.rankOf(sid, player);
    const season = this.seasonal() ? sid : null;
    if (rank === null) return { answer: { player, rank: null, items: [], season }, cost: 3, label: "unranked" };
    const start = Math.max(0, rank - 1 - k);
    const items = this.rowsOf(this.order(sid).slice(start, rank + k), start + 1, now);
    return {
      answer: { player, rank, items, season },
      cost: 6 + (this.seasonal() ? 0 : 1),
      label: this.seasonal() ? "seasonal" : "none",
    };
  }

  rank(names: string[], now: number) {
    const unique = [...new Set(names)];
    const known = unique.filter((p) => this.entries.has(p));
    if (known.length === 0 && !this.exists) return { cost: 3, label: "missing" };
    const sid = this.sid(now);
    const rows = known
      .map((p) => ({ player: p, name: this.nameOf(p), score: this.scoreIn(sid, p), rank: this.rankOf(sid, p) }))
      .filter((r): r is typeof r & { rank: number } => r.rank !== null)
      .sort((a, b) => a.rank - b.rank)
      .map((r, i) => ({ ...r, subsetRank: i + 1 }));
    const ranked = new Set(rows.map((r) => r.player));
    const answer = { items: rows, unknown: unique.filter((p) => !ranked.has(p)), season: this.seasonal() ? sid : null };
    // HMGET of entries; EXISTS when none joined; ZMSCORE; a ZRANK per ranked player; HMGET of their profiles
    const cost = 3 + rows.length + (rows.length > 0 ? 1 : 0);
    return { answer, cost, label: `${rows.length > 0 ? "4 + n" : known.length === 0 ? "none joined" : "none ranked"}` };
  }

  info(now: number) {
    if (!this.exists) return { cost: 2 };
    const sid = this.sid(now);
    const answer = {
      board: "b",
      ties: this.ties,
      createdAt: this.createdAt,
      players: this.order(sid).length,
      ...this.settings(now),
    };
    return { answer, cost: 3 };
  }

  seasonsList(now: number) {
    if (!this.exists) return { cost: 2, label: "missing" };
    if (!this.seasonal())
      return { answer: { board: "b", reset: "none", current: null, seasons: [] }, cost: 2, label: "none" };
    const seasons = [];
    let s: ReturnType<typeof seasonBefore> = seasonAt(this.reset, now);
    for (let i = 0; i <= this.keep && s; i++, s = seasonBefore(s)) {
      const o = this.order(s.id);
      if (o.length > 0)
        seasons.push({
          id: s.id,
          from: s.from,
          to: s.to,
          players: o.length,
          top: o
            .slice(0, 3)
            .map((r, j) => ({ rank: j + 1, player: r.player, name: this.nameOf(r.player), score: r.score })),
        });
    }
    const answer = { board: "b", reset: this.reset, current: seasonAt(this.reset, now).id, seasons };
    // HMGET settings; a ZCARD per kept season; a ZRANGE per played one; one HMGET of their profiles
    const cost = 2 + this.keep + 1 + seasons.length + (seasons.length > 0 ? 1 : 0);
    return { answer, cost, label: `keep ${this.keep}, ${seasons.length} played` };
  }
}
