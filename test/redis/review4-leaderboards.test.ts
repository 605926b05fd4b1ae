/**
 * Review 4, leaderboards against a model: a seeded random sequence (dev/prng.ts, mulberry32) of
 * joins, score changes (by, set replace, set best, batches with several changes to one player,
 * batches one item of which breaks a guard), removes and re-joins, settings changes, across season
 * boundaries (the injected clock, stepping exactly onto 00:00:00.000 UTC and onto the millisecond
 * before, over ISO week 53 and a year end), with every read compared with a plain model after
 * each step. Real Redis behind the local Upstash server; no mocks.
 */
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../dev/prng.ts";
import { ConflictError, NotFoundError, RejectedError, ValidationError } from "../../src/errors.ts";
import * as lb from "../../src/leaderboards/index.ts";
import { seasonAt, seasonBefore, seasonById, type Reset } from "../../src/leaderboards/seasons.ts";
import { createRedis } from "../../src/redis/client.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const lib = libraryTest("rv4lb", { timeoutMs: 10_000 });
const { target } = lib;
const DAY = 86_400_000;

interface Row {
  seq: number;
  score: number;
}
interface Entry {
  name: string;
  joinedAt: number;
  /** The ranking member's tie-break sequence now. */
  seq: number;
  /** Season of the latest write, best rank seen at writes in it, previousRank cached at entry. */
  sid: string;
  best: number | null;
  prev: number | null;
  /** The season written in before `sid` and its best rank (a finished season's bestRank). */
  oldSid: string | null;
  oldBest: number | null;
  /** Under ties reached: the sequence of the player's member in each earlier season it wrote in (the keep newest). */
  past: Map<string, number>;
}
type Change = { player: string; by: number } | { player: string; set: number; mode: "replace" | "best" };

/** The rules of docs/leaderboards.md, written plainly. */
class Model {
  seq = 0;
  entries = new Map<string, Entry>();
  seasons = new Map<string, Map<string, Row>>();
  cfg: {
    ties: lb.TiePolicy;
    reset: Reset;
    keep: number;
    min: number | null;
    max: number | null;
    inc: number | null;
  };
  constructor(ties: lb.TiePolicy, reset: Reset, keep: number) {
    this.cfg = { ties, reset, keep, min: null, max: null, inc: null };
  }
  sid(now: number) {
    return seasonAt(this.cfg.reset, now).id;
  }
  /** Board without seasons: player → rank at the last daily snapshot (keyed by player, so a re-join reads it). */
  snap = new Map<string, number>();
  /** Per season key: the PTTL it got when it came into being (ms) and the real time of that. */
  ttl = new Map<string, { pttl: number; at: number }>();
  season(sid: string) {
    let s = this.seasons.get(sid);
    if (!s) this.seasons.set(sid, (s = new Map()));
    return s;
  }
  /** A season key that comes into being (its first member, or the first after its last left) gets its TTL. */
  created(sid: string, now: number) {
    if (this.cfg.reset === "none" || (this.seasons.get(sid)?.size ?? 0) > 0) return;
    // it lives until keepSeasons newer seasons have begun
    let s = seasonAt(this.cfg.reset, now);
    let end = s.to!;
    for (let i = 0; i <= this.cfg.keep; i++, s = seasonAt(this.cfg.reset, s.to!)) end = s.to!;
    this.ttl.set(sid, { pttl: end - now, at: Date.now() });
  }
  order(sid: string): [string, Row][] {
    return [...(this.seasons.get(sid) ?? new Map<string, Row>()).entries()].sort(
      ([, a], [, b]) => b.score - a.score || a.seq - b.seq,
    );
  }
  rank(sid: string, player: string): number | null {
    const i = this.order(sid).findIndex(([p]) => p === player);
    return i < 0 ? null : i + 1;
  }
  /** Rank in `sid` of the member with sequence `seq` (the ranking holds members, not players). */
  rankOfMember(sid: string, player: string, seq: number): number | null {
    const row = this.seasons.get(sid)?.get(player);
    return row && row.seq === seq ? this.rank(sid, player) : null;
  }
  /** The sequence of the player's member in `sid` (lua.ts memberIn: the latest when none is kept for sid). */
  seqIn(e: Entry, sid: string): number {
    return sid === e.sid ? e.seq : (e.past.get(sid) ?? e.seq);
  }
  prevSid(now: number): string | null {
    const before = seasonBefore(seasonAt(this.cfg.reset, now));
    return before ? before.id : null;
  }
  /**
   * A joined player's first write of the season: enters at 0, previousRank cached. Under ties joined
   * with its member; under reached with a new sequence (it reaches 0 in this season now), the member
   * it leaves kept by season.
   */
  enter(player: string, now: number) {
    const e = this.entries.get(player)!;
    const sid = this.sid(now);
    const s = this.season(sid);
    if (s.has(player)) return;
    this.created(sid, now);
    const prevSid = this.prevSid(now);
    const prev = prevSid ? this.rankOfMember(prevSid, player, this.seqIn(e, prevSid)) : null;
    if (e.sid !== sid) {
      if (this.cfg.ties === "reached") {
        e.past.set(e.sid, e.seq);
        e.past.delete(sid);
        const newest = [...e.past.keys()].sort().reverse().slice(0, this.cfg.keep);
        for (const k of [...e.past.keys()]) if (!newest.includes(k)) e.past.delete(k);
      }
      e.oldSid = e.sid;
      e.oldBest = e.best;
      e.best = null;
    }
    if (this.cfg.ties === "reached") e.seq = ++this.seq;
    s.set(player, { seq: e.seq, score: 0 });
    e.prev = prev;
    e.sid = sid;
  }
  /** Outside the board's guards [min, max]. */
  outside(v: number): boolean {
    return (this.cfg.min !== null && v < this.cfg.min) || (this.cfg.max !== null && v > this.cfg.max);
  }
  seen(player: string, now: number) {
    const e = this.entries.get(player)!;
    const r = this.rank(this.sid(now), player)!;
    if (e.best === null || r < e.best) e.best = r;
  }
  join(player: string, name: string, score: number | undefined, now: number): "created" | "existing" | "rejected" {
    const e = this.entries.get(player);
    if (e) {
      e.name = name;
      // review 20: not entered at 0 outside the guards (the profile only)
      if (!this.season(this.sid(now)).has(player) && this.outside(0)) return "existing";
      this.enter(player, now);
      this.seen(player, now);
      return "existing";
    }
    const v = score ?? 0;
    if ((this.cfg.min !== null && v < this.cfg.min) || (this.cfg.max !== null && v > this.cfg.max)) return "rejected";
    const seq = ++this.seq;
    const sid = this.sid(now);
    this.created(sid, now);
    // a player removed before reads the finished seasons it was in with the members it had
    // there (review 15), when the board kept its tie policy
    const gone = this.gone.get(player);
    this.gone.delete(player);
    const created: Entry = {
      name,
      joinedAt: now,
      seq,
      sid,
      best: null,
      prev: null,
      oldSid: null,
      oldBest: null,
      past: gone?.ties === this.cfg.ties ? gone.past : new Map(),
    };
    this.entries.set(player, created);
    this.season(sid).set(player, { seq, score: v });
    const prevSid = this.prevSid(now);
    if (prevSid) created.prev = this.rankOfMember(prevSid, player, this.seqIn(created, prevSid));
    this.seen(player, now);
    return "created";
  }
  /** null: written; else what refuses it (and nothing changes). */
  changes(list: Change[], now: number): null | { kind: "missing" | "guard" | "range"; index: number } {
    for (const [i, c] of list.entries()) if (!this.entries.has(c.player)) return { kind: "missing", index: i };
    const sid = this.sid(now);
    const s = this.season(sid);
    const sim = new Map<string, number>();
    const spent = new Map<string, number>();
    // review 23: a player absent from the season has no score of it to beat, so its first write, if
    // a best, takes the value (as replace)
    const absent = new Set(list.map((c) => c.player).filter((p) => !s.has(p)));
    const modeOf = (c: Change, seen: Set<string>) => {
      const first = absent.has(c.player) && !seen.has(c.player);
      seen.add(c.player);
      return "mode" in c && (c.mode === "replace" || first) ? "replace" : "best";
    };
    const seen1 = new Set<string>();
    for (const [i, c] of list.entries()) {
      const before = sim.get(c.player) ?? s.get(c.player)?.score ?? 0;
      const mode = modeOf(c, seen1);
      let after: number;
      if ("by" in c) {
        after = before + c.by;
        spent.set(c.player, (spent.get(c.player) ?? 0) + Math.abs(c.by));
        if (this.cfg.inc !== null && spent.get(c.player)! > this.cfg.inc) return { kind: "guard", index: i };
      } else after = mode === "replace" ? c.set : Math.max(before, c.set);
      if (Math.abs(after) > 1e15) return { kind: "range", index: i };
      if (after !== before) {
        if (this.cfg.min !== null && after < this.cfg.min) return { kind: "guard", index: i };
        if (this.cfg.max !== null && after > this.cfg.max) return { kind: "guard", index: i };
      }
      sim.set(c.player, after);
    }
    // review 20: a player entering the season whose result is the 0 it entered with is held to the guards
    for (const [p, v] of sim)
      if (!s.has(p) && v === 0 && this.outside(0))
        return { kind: "guard", index: list.map((c) => c.player).lastIndexOf(p) };
    for (const c of list) this.enter(c.player, now);
    const seen2 = new Set<string>();
    for (const c of list) {
      const row = s.get(c.player)!;
      const mode = modeOf(c, seen2);
      const after = "by" in c ? row.score + c.by : mode === "replace" ? c.set : Math.max(row.score, c.set);
      if (this.cfg.ties === "reached" && after !== row.score) {
        row.seq = ++this.seq;
        this.entries.get(c.player)!.seq = row.seq;
      }
      row.score = after;
    }
    for (const p of new Set(list.map((c) => c.player))) this.seen(p, now);
    return null;
  }
  /** previousRank and bestRank of `player` read at `rank` in season `sid` (docs: Movement). */
  movement(sid: string, player: string, rank: number | null): { previousRank: number | null; bestRank: number | null } {
    const e = this.entries.get(player);
    if (!e) return { previousRank: null, bestRank: null };
    const before = this.cfg.reset === "none" ? null : seasonBefore(seasonById(sid)!);
    let prev: number | null = null;
    let best: number | null = null;
    let known = this.cfg.reset === "none";
    if (e.sid === sid) {
      prev = e.prev;
      best = e.best;
      known = true;
    } else {
      if (e.oldSid === sid) {
        best = e.oldBest;
        known = e.oldBest !== null;
      }
      const seq = before ? this.seqIn(e, before.id) : e.seq;
      if (before && (this.cfg.ties !== "reached" || e.sid < sid || seq !== e.seq)) {
        prev = this.rankOfMember(before.id, player, seq);
      }
    }
    if (known && rank !== null && (best === null || rank < best)) best = rank;
    // a board without seasons reads previousRank from the daily snapshot, never taken here
    return { previousRank: this.cfg.reset === "none" ? (this.snap.get(player) ?? null) : prev, bestRank: best };
  }
  /**
   * Removed players: the sequence of their member in each finished season that holds it (the
   * settings' `gone:<player>`). Under ties reached, as the entry keeps it (<past> and the latest
   * season, the keepSeasons + 1 newest); under joined, every season its member is in.
   */
  gone = new Map<string, { ties: lb.TiePolicy; past: Map<string, number> }>();
  remove(player: string, now: number) {
    const e = this.entries.get(player);
    if (!e) return;
    this.entries.delete(player);
    const sid = this.sid(now);
    this.seasons.get(sid)?.delete(player);
    if (this.cfg.reset === "none") return;
    const past = new Map(e.past);
    if (this.cfg.ties === "reached") {
      past.set(e.sid, e.seq);
      const newest = [...past.keys()]
        .sort()
        .reverse()
        .slice(0, this.cfg.keep + 1);
      for (const k of [...past.keys()]) if (!newest.includes(k)) past.delete(k);
    } else for (const [k, rows] of this.seasons) if (k !== sid && rows.get(player)?.seq === e.seq) past.set(k, e.seq);
    this.gone.set(player, { ties: this.cfg.ties, past });
  }
}

/** Season boundaries to step onto: the next UTC midnight, ISO Monday and first of the month. */
function nextBoundary(now: number, rnd: () => number): number {
  const day = (Math.floor(now / DAY) + 1) * DAY;
  const week = seasonAt("weekly", now).to!;
  const month = seasonAt("monthly", now).to!;
  const pick = rnd();
  return pick < 0.6 ? day : pick < 0.85 ? week : month;
}

async function refusal(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
    return null;
  } catch (error) {
    return error;
  }
}

/** What the seeded runs exercised, so a degenerate walk is noticed (checked after the seeds). */
const tally: Record<string, number> = {};
const count = (what: string) => (tally[what] = (tally[what] ?? 0) + 1);

const PLAYERS = ["a", "b", "c", "d", "e", "f"];

async function runSeed(seed: number, ties: lb.TiePolicy, reset: Reset, steps: number) {
  const rnd = mulberry32(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const pickPlayer = () => PLAYERS[int(0, PLAYERS.length - 1)]!;
  const board = `m${seed}`;
  // Sunday 2026-12-27 22:00 UTC: the walk crosses days, ISO weeks 52 → 53 → 2027-W01, a month and a year
  let now = Date.UTC(2026, 11, 27, 22);
  // a prefix of its own: the snapshot job's once-a-day state is per prefix
  const base = lib.ctx(now, `seed${seed}`);
  const ctx = () => ({ ...base, now });
  let snapDay = "";
  // in the registry: after a PUT or a new player, out once the last player leaves
  let listed = true;
  const keep = int(1, 4);
  const m = new Model(ties, reset, keep);
  await lb.configure(ctx(), board, { ties, reset, keepSeasons: keep });
  const log: string[] = [];
  const at = () => `seed ${seed} step ${log.length}: ${log.slice(-6).join(" ; ")}`;

  let lastSid = m.sid(now);
  for (let step = 0; step < steps; step++) {
    // time: mostly small steps, sometimes exactly onto a boundary or the millisecond before it
    const t = rnd();
    if (t < 0.1) now = nextBoundary(now, rnd);
    else if (t < 0.16) now = nextBoundary(now, rnd) - 1;
    else if (t < 0.35) now += int(1, 5) * 3_600_000;
    else now += int(1, 1000);
    const sid = m.sid(now);
    if (now % DAY === 0) count("step exactly at 00:00:00.000");
    if (step > 0 && sid !== lastSid) count("season change");
    const today = seasonAt("daily", now).id;
    if (reset === "none" && today !== snapDay) {
      // the daily snapshot (job leaderboards.snapshot), first thing of each UTC day
      snapDay = today;
      const res = (await lb.jobs["leaderboards.snapshot"]!(ctx(), lib.config)) as { snapshots: number; more: boolean };
      // a board without players has left the registry: no snapshot, the last one stays (its TTL is real time)
      expect(res, at()).toMatchObject({ snapshots: listed ? 1 : 0, more: false });
      if (listed) {
        m.snap = new Map(m.order("all").map(([pl], i) => [pl, i + 1]));
        count("snapshot");
      }
    }
    lastSid = sid;
    const op = rnd();
    if (op < 0.2) {
      const p = pickPlayer();
      const score = rnd() < 0.5 ? int(-2, 4) : undefined;
      const name = `${p.toUpperCase()}${int(0, 9)}`;
      log.push(`${new Date(now).toISOString()} join ${p} ${String(score)}`);
      const want = m.join(p, name, score, now);
      count(`join ${want}`);
      if (want === "created") listed = true;
      const got = await refusal(lb.join(ctx(), board, p, { name, ...(score === undefined ? {} : { score }) }));
      if (want === "rejected") expect(got, at()).toBeInstanceOf(RejectedError);
      else expect(got, at()).toBeNull();
    } else if (op < 0.55) {
      const n = rnd() < 0.5 ? 1 : int(2, 5);
      const list: Change[] = [];
      for (let i = 0; i < n; i++) {
        // several changes to the same player are common
        const p = i > 0 && rnd() < 0.5 ? list[i - 1]!.player : pickPlayer();
        const k = rnd();
        list.push(
          k < 0.55 ? { player: p, by: int(-3, 3) } : { player: p, set: int(-2, 5), mode: k < 0.8 ? "replace" : "best" },
        );
      }
      log.push(`${new Date(now).toISOString()} scores ${JSON.stringify(list)}`);
      const want = m.changes(list, now);
      count(want === null ? "scores written" : `scores ${want.kind}`);
      if (new Set(list.map((c) => c.player)).size < list.length) count("batch naming a player twice");
      const got = (await refusal(lb.changeScores(ctx(), board, list))) as { details?: { path: string }[] } | null;
      if (want === null) expect(got, at()).toBeNull();
      else if (want.kind === "missing") expect(got, at()).toBeInstanceOf(NotFoundError);
      else if (want.kind === "range") expect(got, at()).toBeInstanceOf(ValidationError);
      else {
        expect(got, at()).toBeInstanceOf(RejectedError);
        expect(got?.details?.[0]?.path, at()).toBe(n > 1 ? `items.${want.index}` : "");
      }
    } else if (op < 0.65) {
      const p = pickPlayer();
      log.push(`${new Date(now).toISOString()} remove ${p}`);
      count(m.entries.has(p) ? "remove" : "remove unknown");
      const had = m.entries.has(p);
      m.remove(p, now);
      if (had && m.entries.size === 0) listed = false;
      await lb.removePlayer(ctx(), board, p);
    } else if (op < 0.72) {
      // settings: guards, keepSeasons, and sometimes a tie policy or reset change (409 unless empty)
      const c: lb.BoardConfig = {};
      const g = rnd();
      if (g < 0.3) c.minScore = rnd() < 0.4 ? null : int(-3, 6);
      else if (g < 0.6) c.maxScore = rnd() < 0.4 ? null : int(2, 8);
      else if (g < 0.8) c.maxIncrement = rnd() < 0.4 ? null : int(1, 4);
      else c.keepSeasons = int(1, 4);
      const flip = rnd() < 0.15;
      if (flip) c.ties = m.cfg.ties === "joined" ? "reached" : "joined";
      log.push(`${new Date(now).toISOString()} configure ${JSON.stringify(c)}`);
      const got = await refusal(lb.configure(ctx(), board, c));
      count(got === null ? "configure" : `configure ${(got as Error).constructor.name}`);
      const min = c.minScore === undefined ? m.cfg.min : c.minScore;
      const max = c.maxScore === undefined ? m.cfg.max : c.maxScore;
      if (min !== null && max !== null && min > max) expect(got, at()).toBeInstanceOf(ValidationError);
      else if (flip && m.entries.size > 0) expect(got, at()).toBeInstanceOf(ConflictError);
      else {
        expect(got, at()).toBeNull();
        listed = true;
        m.cfg = {
          ...m.cfg,
          min,
          max,
          inc: c.maxIncrement === undefined ? m.cfg.inc : c.maxIncrement,
          keep: c.keepSeasons ?? m.cfg.keep,
          ties: c.ties ?? m.cfg.ties,
        };
      }
    }

    // the live season's key lives until keepSeasons newer seasons have begun (set when it came into being)
    const life = m.ttl.get(sid);
    // (under ties reached too: a new member is added before the old one is removed, so the key never empties)
    if (reset !== "none" && life && (m.seasons.get(sid)?.size ?? 0) > 0) {
      const pttl = await command<number>(target, "PTTL", `${base.prefix}:lb:${board}:ranking:${sid}`);
      expect(Math.abs(pttl - (life.pttl - (Date.now() - life.at))), at()).toBeLessThan(5_000);
    }

    // reads after every step
    const order = m.order(sid);
    const total = order.length;
    const nameOf = (p: string) => m.entries.get(p)?.name ?? null;
    const rowIn =
      (season: string) =>
      ([p, r]: [string, Row], i: number) => ({
        rank: i + 1,
        player: p,
        name: nameOf(p),
        score: r.score,
        ...m.movement(season, p, i + 1),
      });
    const rowOf = rowIn(sid);
    const limit = int(1, 4);
    const pageNo = int(1, 3);
    const page = await lb.page(ctx(), board, { page: pageNo, limit });
    expect(page.total, at()).toBe(total);
    expect(page.ties, at()).toBe(m.cfg.ties);
    expect(page.season, at()).toBe(reset === "none" ? null : sid);
    expect(page.items, at()).toEqual(order.map(rowOf).slice((pageNo - 1) * limit, pageNo * limit));

    const p = pickPlayer();
    const e = m.entries.get(p);
    if (!e) expect(await refusal(lb.getPlayer(ctx(), board, p)), at()).toBeInstanceOf(NotFoundError);
    else {
      const got = await lb.getPlayer(ctx(), board, p);
      const rank = m.rank(sid, p);
      const prevSid = m.prevSid(now);
      expect(got, at()).toMatchObject({
        player: p,
        name: e.name,
        joinedAt: e.joinedAt,
        score: m.seasons.get(sid)?.get(p)?.score ?? 0,
        rank,
        total,
        percentile: rank === null ? null : Math.floor(((total - rank) * 10_000) / total) / 100,
        bestRank: rank === null ? null : e.sid === sid ? Math.min(e.best ?? rank, rank) : null,
        previousRank:
          reset === "none"
            ? (m.snap.get(p) ?? null)
            : e.sid === sid
              ? e.prev
              : prevSid
                ? m.rankOfMember(prevSid, p, e.seq)
                : null,
        season: reset === "none" ? null : sid,
      });
      const k = int(0, 2);
      const around = await lb.around(ctx(), board, p, k);
      if (rank === null) expect(around, at()).toMatchObject({ rank: null, items: [] });
      else {
        expect(around.rank, at()).toBe(rank);
        expect(around.items, at()).toEqual(order.map(rowOf).slice(Math.max(0, rank - 1 - k), rank + k));
      }
    }

    const subset = [pickPlayer(), pickPlayer(), pickPlayer(), "nobody"];
    const ranked = await lb.rankPlayers(ctx(), board, subset);
    const want = order
      .map((row, i) => ({ player: row[0], name: nameOf(row[0]), score: row[1].score, rank: i + 1 }))
      .filter((r) => subset.includes(r.player))
      .map((r, i) => ({ ...r, subsetRank: i + 1 }));
    expect(ranked.items, at()).toEqual(want);
    expect(ranked.unknown, at()).toEqual([...new Set(subset)].filter((x) => !want.some((w) => w.player === x)));

    const info = await lb.info(ctx(), board);
    expect(info, at()).toMatchObject({
      ties: m.cfg.ties,
      reset,
      players: total,
      keepSeasons: m.cfg.keep,
      minScore: m.cfg.min,
      maxScore: m.cfg.max,
      maxIncrement: m.cfg.inc,
    });

    if (reset !== "none" && step % 3 === 0) {
      // the seasons list: the current and keepSeasons before it that anyone played, newest first, top 3
      const list = await lb.listSeasons(ctx(), board);
      const wantSeasons = [];
      let s: ReturnType<typeof seasonBefore> = seasonAt(reset, now);
      for (let i = 0; i <= m.cfg.keep && s; i++, s = seasonBefore(s)) {
        const o = m.order(s.id);
        if (o.length > 0)
          wantSeasons.push({
            id: s.id,
            from: s.from,
            to: s.to,
            players: o.length,
            top: o.slice(0, 3).map(([pl, r], j) => ({ rank: j + 1, player: pl, name: nameOf(pl), score: r.score })),
          });
      }
      expect(list, at()).toEqual({ board, reset, current: sid, seasons: wantSeasons });
      // a finished season read by id, and as `previous`
      const prev = m.prevSid(now)!;
      for (const season of [prev, "previous"]) {
        const old = await lb.page(ctx(), board, { season, limit: 100 });
        const o = m.order(prev);
        expect(old.season, at()).toBe(prev);
        expect(old.total, at()).toBe(o.length);
        expect(old.items, at()).toEqual(o.map(rowIn(prev)));
      }
      // per player in the finished season: under ties joined the entry's member names the row, under
      // reached the member the entry keeps for that season
      {
        const q = pickPlayer();
        const e = m.entries.get(q);
        if (e) {
          const rank = m.rankOfMember(prev, q, m.seqIn(e, prev));
          const total = m.order(prev).length;
          expect(await lb.getPlayer(ctx(), board, q, { season: "previous" }), at()).toMatchObject({
            score: rank === null ? 0 : m.seasons.get(prev)!.get(q)!.score,
            rank,
            total,
            percentile: rank === null ? null : Math.floor(((total - rank) * 10_000) / total) / 100,
            ...m.movement(prev, q, rank),
            season: prev,
          });
        }
      }
    }
  }
  await lb.deleteBoard(ctx(), board);
}

describe("leaderboards against a model (seeded)", () => {
  const cases: [number, lb.TiePolicy, Reset][] = [
    [1, "joined", "daily"],
    [2, "reached", "daily"],
    [3, "joined", "weekly"],
    [4, "reached", "weekly"],
    [5, "joined", "monthly"],
    [6, "reached", "monthly"],
    [7, "joined", "none"],
    [8, "reached", "none"],
  ];
  for (const [seed, ties, reset] of cases)
    it(`seed ${seed}: ties ${ties}, reset ${reset}`, { timeout: 120_000 }, async () => {
      await runSeed(seed, ties, reset, 150);
    });
  it("the seeds exercised every kind of step", () => {
    for (const what of [
      "join created",
      "join existing",
      "join rejected",
      "scores written",
      "scores missing",
      "scores guard",
      "batch naming a player twice",
      "remove",
      "configure",
      "configure ConflictError",
      "configure ValidationError",
      "step exactly at 00:00:00.000",
      "season change",
      "snapshot",
    ])
      expect(tally[what] ?? 0, `${what}: ${JSON.stringify(tally)}`).toBeGreaterThan(0);
  });
});

/** Commands one call costs, counted by the local server under a token tag of its own. */
async function commandsOf(
  now: number,
  fn: (ctx: ReturnType<typeof lib.ctx>) => Promise<unknown>,
  warm: "read" | "write" = "write",
): Promise<number> {
  // a read is run once first, so its script is cached (writes here come after a warm call of their script)
  if (warm === "read") await fn(lib.ctx(now));
  const tag = `rv4${Math.random().toString(36).slice(2, 8)}`;
  const redis = createRedis({ url: target.url, token: `${target.token}.${tag}` });
  const ctx = { ...lib.ctx(now), redis };
  await resetStats(target, tag);
  await fn(ctx);
  const stats = await statsOf(target, tag);
  // one round trip, the script already cached (a first EVALSHA that misses would be a second)
  expect(stats.requests, JSON.stringify(stats.byCommand)).toBe(1);
  return stats.commands;
}

describe("finished seasons read per player", () => {
  // Sunday 2026-12-27: the daily season of the 27th, then the 28th from 00:00:00.000
  const D27 = Date.UTC(2026, 11, 27, 12);
  const D28 = Date.UTC(2026, 11, 28);

  it("ties reached: a player who scored this season still reads its rank in the previous season", async () => {
    // FIXED (was medium): get player, around-me and the subset ranking of a finished season look the
    // player up by the entry's member, which under `ties: reached` is replaced at every score change;
    // after one write in the new season the player reads `score: 0, rank: null` in `?season=previous`
    // (and is `unknown` in the subset ranking) although the page of that season shows the row at #1.
    // Fixed: under 'r' the entry keeps the member of each earlier season the player wrote in
    // (`<past>`, lua.ts memberIn), and every read looks the player up by the season it reads.
    const b = "prevreached";
    await lb.configure(lib.ctx(D27), b, { ties: "reached", reset: "daily" });
    await lb.join(lib.ctx(D27), b, "a", { name: "A", score: 10 });
    await lb.join(lib.ctx(D27), b, "b", { name: "B", score: 5 });
    await lb.changeScore(lib.ctx(D28), b, "a", { by: 1 });
    const page = await lb.page(lib.ctx(D28), b, { season: "previous" });
    expect(page.items.map((r) => [r.player, r.rank, r.score])).toEqual([
      ["a", 1, 10],
      ["b", 2, 5],
    ]);
    const ranked = await lb.rankPlayers(lib.ctx(D28), b, ["a", "b"], { season: "previous" });
    const around = await lb.around(lib.ctx(D28), b, "a", 1, { season: "previous" });
    const got = await lb.getPlayer(lib.ctx(D28), b, "a", { season: "previous" });
    expect({ score: got.score, rank: got.rank, aroundRank: around.rank, unknown: ranked.unknown }).toEqual({
      score: 10,
      rank: 1,
      aroundRank: 1,
      unknown: [],
    });
  });

  it("ties reached: each kept season answers the player's own row, a late write goes back to its season's member", async () => {
    const b = "pastreached";
    await lb.configure(lib.ctx(D27), b, { ties: "reached", reset: "daily", keepSeasons: 2 });
    await lb.join(lib.ctx(D27), b, "a", { name: "A", score: 10 });
    await lb.join(lib.ctx(D27), b, "b", { name: "B", score: 10 });
    // the 28th: b first, then a; the 29th: a alone, then b
    await lb.changeScore(lib.ctx(D28), b, "b", { by: 5 });
    await lb.changeScore(lib.ctx(D28 + 1), b, "a", { by: 5 });
    const D29 = D28 + DAY;
    await lb.changeScore(lib.ctx(D29), b, "a", { by: 7 });
    await lb.changeScore(lib.ctx(D29 + 1), b, "b", { by: 3 });
    // a Worker whose clock still says the 28th: the write lands in the 28th with a's member there
    await lb.changeScore(lib.ctx(D29 - 1), b, "a", { by: 1 });
    const rows = async (season: string) =>
      (await lb.page(lib.ctx(D29 + 2), b, { season })).items.map((r) => [r.player, r.score]);
    expect(await rows("2026-12-27")).toEqual([
      ["a", 10],
      ["b", 10],
    ]);
    expect(await rows("2026-12-28")).toEqual([
      ["a", 6],
      ["b", 5],
    ]);
    expect(await rows("current")).toEqual([
      ["a", 7],
      ["b", 3],
    ]);
    for (const [season, player, score, rank] of [
      ["2026-12-27", "a", 10, 1],
      ["2026-12-27", "b", 10, 2],
      ["2026-12-28", "a", 6, 1],
      ["2026-12-28", "b", 5, 2],
      ["current", "a", 7, 1],
      ["current", "b", 3, 2],
    ] as const) {
      const got = await lb.getPlayer(lib.ctx(D29 + 2), b, player, { season });
      expect([season, player, got.score, got.rank], `${player} in ${season}`).toEqual([season, player, score, rank]);
      expect((await lb.around(lib.ctx(D29 + 2), b, player, 0, { season })).rank).toBe(rank);
    }
    // previousRank is cached when the player enters a season: b entered the 29th while first on the 28th
    expect((await lb.getPlayer(lib.ctx(D29 + 2), b, "b")).previousRank).toBe(1);
    // back on the 29th, a's member there moves on (and the 29th's key kept one row per player)
    await lb.changeScore(lib.ctx(D29 + 3), b, "a", { by: 1 });
    expect(await rows("current")).toEqual([
      ["a", 8],
      ["b", 3],
    ]);
    expect(
      (await lb.rankPlayers(lib.ctx(D29 + 4), b, ["b", "a"], { season: "2026-12-28" })).items.map((r) => [
        r.player,
        r.rank,
      ]),
    ).toEqual([
      ["a", 1],
      ["b", 2],
    ]);
  });

  it("ties joined: the same reads hold after a write in the new season (the member never changes)", async () => {
    const b = "prevjoined";
    await lb.configure(lib.ctx(D27), b, { ties: "joined", reset: "daily" });
    await lb.join(lib.ctx(D27), b, "a", { name: "A", score: 10 });
    await lb.join(lib.ctx(D27), b, "b", { name: "B", score: 5 });
    await lb.changeScore(lib.ctx(D28), b, "b", { by: 1 });
    const got = await lb.getPlayer(lib.ctx(D28), b, "b", { season: "previous" });
    expect([got.score, got.rank, got.total, got.percentile]).toEqual([5, 2, 2, 0]);
    const now = await lb.getPlayer(lib.ctx(D28), b, "b");
    expect([now.score, now.rank, now.previousRank, now.bestRank]).toEqual([1, 1, 2, 1]);
    const ranked = await lb.rankPlayers(lib.ctx(D28), b, ["b", "a", "b"], { season: "2026-12-27" });
    expect(ranked.items.map((r) => [r.player, r.rank, r.subsetRank])).toEqual([
      ["a", 1, 1],
      ["b", 2, 2],
    ]);
  });

  it("ties reached: entering a new season at 0 does not carry last season's tie place", async () => {
    // FIXED (was low): under `ties: reached` a player entering a season at 0 (a `by: 0`, a `best`
    // that is not better, or joining again) keeps the member of its last score change in an
    // earlier season, so players level at 0 this season rank by who changed score *last season*,
    // not by who reached 0 *this* season (docs/leaderboards.md: "whoever reaches a score first
    // this season wins"). Here b reaches 0 this season before a, yet a ranks first.
    // Fixed: under 'r', enterSeason takes a new sequence number (HINCRBY, a new member) as a change does.
    const b = "enterreached";
    await lb.configure(lib.ctx(D27), b, { ties: "reached", reset: "daily" });
    await lb.join(lib.ctx(D27), b, "a", { name: "A" });
    await lb.join(lib.ctx(D27), b, "b", { name: "B" });
    await lb.changeScore(lib.ctx(D28), b, "b", { by: 0 });
    await lb.changeScore(lib.ctx(D28 + 1000), b, "a", { by: 0 });
    const page = await lb.page(lib.ctx(D28 + 2000), b);
    expect(page.items.map((r) => r.player)).toEqual(["b", "a"]);
  });

  it("a write at 23:59:59.999 lands in the old day, one at 00:00:00.000 in the new (week 53 to 2027-W01)", async () => {
    const b = "edge";
    const sunday = Date.UTC(2027, 0, 3); // Sunday of 2026-W53
    await lb.configure(lib.ctx(sunday), b, { reset: "weekly" });
    await lb.join(lib.ctx(sunday), b, "a", { name: "A", score: 1 });
    const monday = Date.UTC(2027, 0, 4);
    await lb.changeScore(lib.ctx(monday - 1), b, "a", { by: 2 });
    await lb.changeScore(lib.ctx(monday), b, "a", { by: 5 });
    expect((await lb.getPlayer(lib.ctx(monday), b, "a", { season: "2026-W53" })).score).toBe(3);
    const now = await lb.getPlayer(lib.ctx(monday), b, "a");
    expect([now.season, now.score, now.previousRank]).toEqual(["2027-W01", 5, 1]);
    // week 53's key lives until keepSeasons (12) newer weeks have begun: 2027-03-29
    const ttl = await command<number>(target, "PTTL", `${lib.prefix}:lb:${b}:ranking:2026-W53`);
    const want = Date.UTC(2027, 2, 29) - sunday;
    expect(Math.abs(ttl - want)).toBeLessThan(10_000);
  });
});

describe("season key lifetime", () => {
  it("ties reached: a season key keeps its TTL when its only player's first write of the season changes the score", async () => {
    // FIXED (was medium: a key that never expires, Redis memory growing per season and board):
    // the score script enters the player at 0 (ZADD + EXPIRE NX), applies the change, then under
    // ties 'reached' moves the player to a new member with ZREM + ZADD. When the player is the
    // season's only member, the ZREM empties the key, Redis deletes it with its TTL, and the ZADD
    // makes a new key without one. deleteBoard only names the current and 52 past seasons, so the
    // key outlives everything. Same for any season whose members all leave this way.
    // Fix: in scoreScript, ZADD the new member before the ZREM of the old one (the key never empties),
    // or call expireSeason after the reached move when the player entered the season in this call.
    const b = "ttlreached";
    const d1 = Date.UTC(2026, 11, 30, 12);
    await lb.configure(lib.ctx(d1), b, { ties: "reached", reset: "daily", keepSeasons: 2 });
    await lb.join(lib.ctx(d1), b, "a", { name: "A" });
    const d2 = d1 + DAY;
    await lb.changeScore(lib.ctx(d2), b, "a", { by: 1 });
    const pttl = await command<number>(target, "PTTL", `${lib.prefix}:lb:${b}:ranking:2026-12-31`);
    // the key of the 31st lives until the start of 2027-01-03
    expect(Math.abs(pttl - (Date.UTC(2027, 0, 3) - d2))).toBeLessThan(5_000);
  });

  it("ties joined: the same first write keeps the key's TTL", async () => {
    const b = "ttljoined";
    const d1 = Date.UTC(2026, 11, 30, 12);
    await lb.configure(lib.ctx(d1), b, { reset: "daily", keepSeasons: 2 });
    await lb.join(lib.ctx(d1), b, "a", { name: "A" });
    const d2 = d1 + DAY;
    await lb.changeScore(lib.ctx(d2), b, "a", { by: 1 });
    const pttl = await command<number>(target, "PTTL", `${lib.prefix}:lb:${b}:ranking:2026-12-31`);
    expect(Math.abs(pttl - (Date.UTC(2027, 0, 3) - d2))).toBeLessThan(5_000);
  });
});

describe("command counts in the states docs/costs.md names", () => {
  it("a daily board: first write of the season 9, steady 5, guard refusal 3, reads 6/6/14/18/3, removes 7/2", async () => {
    const d1 = Date.UTC(2026, 11, 30, 12, 30);
    const d2 = d1 + DAY;
    const b = "costd";
    const names = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];
    await lb.configure(lib.ctx(d1), b, { reset: "daily", keepSeasons: 12 });
    for (const p of names) await lb.join(lib.ctx(d1), b, p, { name: p.toUpperCase(), score: 1 });
    // the leader of day 2 writes first, so a's first write below changes no #1
    await lb.changeScore(lib.ctx(d2), b, "j", { by: 100 });
    expect(await commandsOf(d2, (c) => lb.changeScore(c, b, "a", { by: 1 }))).toBe(9);
    expect(await commandsOf(d2, (c) => lb.changeScore(c, b, "a", { by: 1 }))).toBe(5);
    expect(await commandsOf(d2, (c) => lb.getPlayer(c, b, "b"), "read")).toBe(6);
    expect(await commandsOf(d2, (c) => lb.changeScore(c, b, "a", { set: 1, mode: "best" }))).toBe(4);
    expect(await commandsOf(d2, (c) => lb.changeScore(c, b, "a", { set: 3, mode: "replace" }))).toBe(5);
    for (const p of names.slice(1, 9)) await lb.changeScore(lib.ctx(d2), b, p, { by: 0 });
    expect(await commandsOf(d2, (c) => lb.page(c, b, { limit: 10 }), "read")).toBe(6);
    expect(await commandsOf(d2, (c) => lb.rankPlayers(c, b, names), "read")).toBe(14);
    expect(await commandsOf(d2, (c) => lb.listSeasons(c, b), "read")).toBe(18);
    expect(await commandsOf(d2, (c) => lb.info(c, b), "read")).toBe(3);
    expect(await commandsOf(d2, (c) => lb.join(c, b, "a", { name: "A2" }))).toBe(5);
    await lb.configure(lib.ctx(d2), b, { maxIncrement: 10 });
    let refused: unknown = null;
    const refusedCost = await commandsOf(d2, (c) =>
      lb.changeScore(c, b, "a", { by: 11 }).catch((e: unknown) => (refused = e)),
    );
    expect(refused).toBeInstanceOf(RejectedError);
    expect(refusedCost).toBe(3);
    expect(await commandsOf(d2, (c) => lb.changeScore(c, b, "a", { by: 10 }))).toBe(5);
    await lb.removePlayer(lib.ctx(d2), b, "nobody");
    expect(await commandsOf(d2, (c) => lb.removePlayer(c, b, "nobody"))).toBe(2);
    // 7: a finished season ranks a, so its member there is kept for a join again (review 15)
    expect(await commandsOf(d2, (c) => lb.removePlayer(c, b, "a"))).toBe(7);
    await lb.deleteBoard(lib.ctx(d2), "never-made");
    expect(await commandsOf(d2, (c) => lb.deleteBoard(c, b))).toBe(3);
  });

  it("a board without seasons: reads 7, reached steady increment 9, first join of a board made by joins 10, its last player 9", async () => {
    const t = Date.UTC(2026, 11, 30, 12, 30);
    const b = "costn";
    await lb.configure(lib.ctx(t), b, { ties: "reached" });
    for (const p of ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"])
      await lb.join(lib.ctx(t), b, p, { name: p, score: 100 });
    await lb.changeScore(lib.ctx(t), b, "l", { by: 1 });
    expect(await commandsOf(t, (c) => lb.changeScore(c, b, "l", { by: 1 }))).toBe(9);
    expect(await commandsOf(t, (c) => lb.getPlayer(c, b, "c"), "read")).toBe(7);
    expect(await commandsOf(t, (c) => lb.page(c, b, { limit: 10 }), "read")).toBe(7);
    expect(await commandsOf(t, (c) => lb.around(c, b, "f", 5), "read")).toBe(7);
    // seasons: 2 + (keepSeasons + 1) + seasons played + 1 (docs/leaderboards.md, Cost per call)
    await lb.configure(lib.ctx(t), "costw", { reset: "weekly", keepSeasons: 3 });
    await lb.join(lib.ctx(t), "costw", "a", { name: "A" });
    expect(await commandsOf(t, (c) => lb.listSeasons(c, "costw"), "read")).toBe(2 + 4 + 1 + 1);
    await lb.changeScore(lib.ctx(t + 7 * DAY), "costw", "a", { by: 1 });
    expect(await commandsOf(t + 7 * DAY, (c) => lb.listSeasons(c, "costw"), "read")).toBe(2 + 4 + 2 + 1);
    const made = "costj";
    await lb.removePlayer(lib.ctx(t), b, "nobody");
    // 10: the registry's stamp reads the highest first (review 26, src/redis/pages.ts stampLua)
    expect(await commandsOf(t, (c) => lb.join(c, made, "p", { name: "P" }))).toBe(10);
    expect(await commandsOf(t, (c) => lb.removePlayer(c, made, "p"))).toBe(9);
    expect(await commandsOf(t, (c) => lb.list(c), "read")).toBe(3);
  });
});

describe("ties reached across seasons: command counts", () => {
  it("a first write of the season 10 (the joined board's 9 and a new sequence), steady 9, a second change in one batch 2 more", async () => {
    const d1 = Date.UTC(2026, 11, 30, 12, 30);
    const d2 = d1 + DAY;
    const b = "costrd";
    await lb.configure(lib.ctx(d1), b, { ties: "reached", reset: "daily" });
    for (const p of ["a", "b", "c"]) await lb.join(lib.ctx(d1), b, p, { name: p, score: 1 });
    await lb.changeScore(lib.ctx(d2), b, "c", { by: 100 });
    // entering takes the new sequence, so the change that follows keeps it (no ZADD/ZREM move)
    expect(await commandsOf(d2, (c) => lb.changeScore(c, b, "a", { by: 1 }))).toBe(10);
    expect(await commandsOf(d2, (c) => lb.changeScore(c, b, "a", { by: 1 }))).toBe(9);
    // the batch's second change of a: a holds the sequence its first change took, so only its ZINCRBY
    const batch = await commandsOf(d2, (c) =>
      lb.changeScores(c, b, [
        { player: "a", by: 1 },
        { player: "a", by: 1 },
      ]),
    );
    expect(batch).toBe(10);
    const page = await lb.page(lib.ctx(d2), b);
    expect(page.items.map((r) => [r.player, r.score])).toEqual([
      ["c", 100],
      ["a", 4],
    ]);
  });
});

describe("season selectors", () => {
  it("ids of another policy are 404, malformed ones 400, `previous` without seasons 404; week 53 exists in 2026 only", async () => {
    const t = Date.UTC(2027, 0, 5, 12);
    await lb.configure(lib.ctx(t), "selw", { reset: "weekly" });
    await lb.join(lib.ctx(t), "selw", "a", { name: "A" });
    await lb.configure(lib.ctx(t), "seln", {});
    await lb.join(lib.ctx(t), "seln", "a", { name: "A" });
    expect((await lb.page(lib.ctx(t), "selw", { season: "2026-W53" })).season).toBe("2026-W53");
    expect((await lb.page(lib.ctx(t), "selw", { season: "previous" })).season).toBe("2026-W53");
    for (const season of ["2027-W53", "2026-13", "2026-02-30", "2026-W00", "2026-1-01", "latest"])
      expect(await refusal(lb.page(lib.ctx(t), "selw", { season })), season).toBeInstanceOf(ValidationError);
    for (const season of ["2026-12-27", "2026-12"])
      expect(await refusal(lb.page(lib.ctx(t), "selw", { season })), season).toBeInstanceOf(NotFoundError);
    // thunks: each read starts only when awaited
    for (const read of [
      () => lb.page(lib.ctx(t), "seln", { season: "previous" }),
      () => lb.getPlayer(lib.ctx(t), "seln", "a", { season: "previous" }),
      () => lb.around(lib.ctx(t), "seln", "a", 1, { season: "2027-W01" }),
      () => lb.rankPlayers(lib.ctx(t), "seln", ["a"], { season: "2027-01" }),
    ])
      expect(await refusal(read())).toBeInstanceOf(NotFoundError);
    // a season nobody played reads as empty
    expect(await lb.page(lib.ctx(t), "selw", { season: "2026-W40" })).toMatchObject({ items: [], total: 0 });
  });
});
