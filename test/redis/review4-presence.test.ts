/**
 * Adversarial review (round 4) of presence against a model. A seeded random run (dev/prng.ts)
 * of heartbeats (single ids and batches, some applied late with an `at` in the past as the
 * queued-ingest consumer does), leaves and trim-job runs at arbitrary seconds (every minute
 * while a room is active or near midnight, otherwise once an hour), over several UTC days with a
 * 120 s timeout and the 2-day id horizon, interleaved with every read, each compared with a model
 * built from docs/presence.md. Targeted tests pin what the model found.
 */
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../dev/prng.ts";
import type { Config } from "../../src/config.ts";
import type { Ctx } from "../../src/context.ts";
import * as presence from "../../src/presence/index.ts";
import { createRedis } from "../../src/redis/client.ts";
import { DAY, HOUR, MINUTE, SECOND, dayLabel, dayStart } from "../../src/time.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const { createTrimJob, heartbeat, history, leave, members, rooms, stats, total } = presence;
const lib = libraryTest("review4-presence");
const target = lib.target;
const D0 = Date.UTC(2026, 11, 10); // a Thursday, 00:00 UTC

// ---------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------

interface RoomModel {
  /** Applied heartbeats per id (their `at`) and leaves per id, to compute true concurrency. */
  beats: Map<string, number[]>;
  leaves: Map<string, number[]>;
  /** What `seen` should hold: id → last seen (GT on heartbeats, LT on leaves), mapped ids only. */
  score: Map<string, number>;
  /** Per UTC day (its start): distinct ids heartbeated (AU) and ids new (NU). */
  au: Map<number, Set<string>>;
  nu: Map<number, number>;
  /** Latest heartbeat time of the room (max `at`): "active until a timeout + 2 min after it". */
  lastBeat: number;
  /** History points the trim job should have written: minute (ms) → online. */
  points: Map<number, number>;
}

interface Mismatch {
  kind: string;
  at: number;
  detail: string;
}

interface RunOptions {
  seed: number;
  /** Largest delay of a queued heartbeat (its `at` is this much in the past at most); 0: all synchronous. */
  lagMs: number;
  /** While rooms are active, the trim job runs every 1..gapMinutes minutes (1: the cron); always every minute near midnight. */
  gapMinutes?: number;
  days: number;
}

const TIMEOUT_S = 120;
const TIMEOUT = TIMEOUT_S * SECOND;
const HORIZON_DAYS = 2;
const ROOMS = ["ra", "rb", "rc"];

/** Ids online at `t` by the documented definition (a heartbeat at most a timeout old, no leave since). */
function onlineAt(m: RoomModel, id: string, t: number): boolean {
  const leaves = m.leaves.get(id) ?? [];
  return (m.beats.get(id) ?? []).some((a) => a <= t && t <= a + TIMEOUT && !leaves.some((l) => a <= l && l <= t));
}
function concurrency(m: RoomModel, t: number): number {
  let n = 0;
  for (const id of m.beats.keys()) if (onlineAt(m, id, t)) n += 1;
  return n;
}
/** The true PCU of the day starting `from`, up to `until`, and when it was first reached. */
function truePeak(m: RoomModel, from: number, until: number): { peak: number; peakAt: number | null } {
  const candidates = new Set<number>([from]);
  for (const beats of m.beats.values()) for (const a of beats) if (a >= from && a <= until) candidates.add(a);
  let peak = 0;
  let at: number | null = null;
  for (const t of [...candidates].sort((a, b) => a - b)) {
    const c = concurrency(m, t);
    if (c > peak) {
      peak = c;
      at = t;
    }
  }
  return { peak, peakAt: at };
}

async function runModel(opts: RunOptions): Promise<{ mismatches: Mismatch[]; counts: Record<string, number> }> {
  const rand = mulberry32(opts.seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const tag = `rv4p${opts.seed}${Math.random().toString(36).slice(2, 6)}`;
  const redis = createRedis({ url: target.url, token: `${target.token}.${tag}` });
  const prefix = lib.ctx(D0, `rv4m${opts.seed}`).prefix;
  const at = (now: number): Ctx => ({ redis, prefix, now });
  const config: Config = { ...lib.config, presenceTimeoutSeconds: TIMEOUT_S, presenceIdHorizonDays: HORIZON_DAYS };
  const job = createTrimJob({ chunkRooms: 2 });
  const opt = { timeoutSeconds: TIMEOUT_S };
  const mismatches: Mismatch[] = [];
  const counts: Record<string, number> = {};
  const warm = new Set<string>();
  let lastCommands = 0;
  const bump = (k: string) => (counts[k] = (counts[k] ?? 0) + 1);
  const check = (kind: string, t: number, got: unknown, want: unknown) => {
    bump(`checked:${kind}`);
    if (JSON.stringify(got) !== JSON.stringify(want))
      mismatches.push({ kind, at: t, detail: `got ${JSON.stringify(got)} want ${JSON.stringify(want)}` });
  };
  /** Runs `fn` and checks its command count against `want` (docs/costs.md rows), when given. */
  async function costed<T>(kind: string, t: number, want: number | null, fn: () => Promise<T>): Promise<T> {
    await resetStats(target, tag);
    const value = await fn();
    const s = await statsOf(target, tag);
    lastCommands = s.commands;
    // The first call of a kind loads its script (EVALSHA misses, then EVAL): not counted.
    if (!warm.has(kind)) {
      warm.add(kind);
      lastCommands = NaN;
      return value;
    }
    if (s.requests !== 1 && kind !== "trim") check(`roundtrips:${kind}`, t, s.requests, 1);
    if (want !== null) check(`cost:${kind}`, t, s.commands, want);
    return value;
  }

  const model = new Map<string, RoomModel>(
    ROOMS.map((r) => [
      r,
      {
        beats: new Map(),
        leaves: new Map(),
        score: new Map(),
        au: new Map(),
        nu: new Map(),
        lastBeat: -Infinity,
        points: new Map(),
      },
    ]),
  );
  // Ids: a few shared between rooms (the site-wide AU counts them once), most per room.
  const pool = (room: string) => [...Array.from({ length: 9 }, (_, i) => `${room}-u${i}`), "shared0", "shared1"];
  const inSession = new Map<string, Set<string>>(ROOMS.map((r) => [r, new Set()]));
  const lastLeave = new Map<string, number>(); // `${room}/${id}` → time of the id's last leave
  const siteSamples: { t: number; online: number }[] = [];

  const countOnline = (m: RoomModel, t: number) => [...m.score.values()].filter((s) => s >= t - TIMEOUT).length;
  const activeAt = (m: RoomModel, t: number) => countOnline(m, t) > 0 || t - m.lastBeat < TIMEOUT + 2 * MINUTE;
  const dense = (t: number) => {
    const sinceMidnight = t - dayStart(t);
    if (sinceMidnight < 6 * MINUTE || sinceMidnight > DAY - 6 * MINUTE) return true;
    return [...model.values()].some((m) => t - m.lastBeat < TIMEOUT + 4 * MINUTE || countOnline(m, t) > 0);
  };

  // --- operations -------------------------------------------------------------------------
  async function doHeartbeat(room: string, ids: string[], t: number) {
    const m = model.get(room)!;
    const day = dayStart(t);
    const dailyKey = `${prefix}:presence:${room}:daily:${dayLabel(t)}`;
    const [peakBefore, lastRaw] = await command<number[]>(
      target,
      "BITFIELD",
      dailyKey,
      "GET",
      "u32",
      32,
      "GET",
      "u32",
      96,
    );
    // bit 96 is the trim job's mark that it took the room for idle (IDLED_FLAG): the next heartbeat reactivates it
    const idled = (lastRaw ?? 0) >= 2 ** 31;
    const lastBefore = (lastRaw ?? 0) % 2 ** 31;
    const unique = [...new Set(ids)];
    const fresh = unique.filter((id) => !m.score.has(id));
    const auToday = m.au.get(day) ?? new Set<string>();
    const firstToday = unique.some((id) => !auToday.has(id) || fresh.includes(id));
    // docs/costs.md: 5, +2 new ids, +1 PFADD (first of an id today), +1 peak raised, +3 on the day's
    // first heartbeat (two expiries, the ZCOUNT of the ids online at 00:00), +4 when the room (re)becomes active;
    // a late heartbeat: +1 ZCOUNT at the day's latest heartbeat, +1 BITFIELD writing that time back
    // (with the peak, when raised), +1 ZCOUNT of its answer (synchronous, as here: review 24).
    const atMidnight =
      lastBefore === 0 ? [...m.score.values()].filter((s) => s >= day - TIMEOUT && s <= day).length : 0;
    // An id that left after t (this heartbeat was queued, the leave applied first) gets the last-seen
    // of time order: at most the leave's, a timeout before it (review 2; the leave's mark in `ids`).
    const leftAfter = (id: string) => {
      const l = lastLeave.get(`${room}/${id}`);
      return l !== undefined && l > t && l - TIMEOUT - 1 < t ? l - TIMEOUT - 1 : undefined;
    };
    const own = unique.filter((id) => leftAfter(id) === undefined);
    for (const id of unique) m.score.set(id, Math.max(m.score.get(id) ?? -Infinity, leftAfter(id) ?? t));
    const ofDay = t - day;
    const late = lastBefore > ofDay + 1;
    // online at its own time; a late heartbeat's own ids were online then whatever their later last-seen
    // (an id that left after it is counted by its last-seen alone)
    const online = late
      ? own.length + [...m.score].filter(([id, s]) => !own.includes(id) && s >= t - TIMEOUT && s < t).length
      : [...m.score.values()].filter((s) => s >= t - TIMEOUT && s <= t).length;
    // its answer: what a read at its time counts, ids seen after its time included (review 24; the
    // own-time count above is what the peak needs)
    const answer = late ? [...m.score.values()].filter((s) => s >= t - TIMEOUT).length : online;
    const latest = day + lastBefore - 1;
    const atLatest = late ? [...m.score.values()].filter((s) => s >= latest - TIMEOUT && s <= latest).length : 0;
    const reactivates = lastBefore === 0 || idled || ofDay + 1 - lastBefore >= TIMEOUT;
    const raised = Math.max(online, atMidnight, atLatest) > (peakBefore ?? 0);
    const want =
      5 +
      (fresh.length > 0 ? 2 : 0) +
      (firstToday ? 1 : 0) +
      (raised || late ? 1 : 0) +
      (lastBefore === 0 ? 3 : 0) +
      // the room becomes active: _due, the room list's stamp (ZREVRANGE + ZADD, review 26), history
      (reactivates ? 5 : 0) +
      (late ? 2 : 0);
    const res = await costed("heartbeat", t, want, () => heartbeat(at(t), room, ids, opt));
    check("heartbeat.new", t, res.new, fresh.length);
    check("heartbeat.online", t, res.online, answer);
    for (const id of unique) {
      m.beats.set(id, [...(m.beats.get(id) ?? []), t]);
      auToday.add(id);
    }
    m.au.set(day, auToday);
    m.nu.set(day, (m.nu.get(day) ?? 0) + fresh.length);
    m.lastBeat = Math.max(m.lastBeat, t);
    bump(fresh.length > 0 ? "heartbeat:new" : "heartbeat:known");
  }

  async function doLeave(room: string, id: string, t: number) {
    const m = model.get(room)!;
    const before = m.score.get(id);
    const wasOnline = before !== undefined && before >= t - TIMEOUT;
    if (before !== undefined) m.score.set(id, Math.min(before, t - TIMEOUT - 1));
    m.leaves.set(id, [...(m.leaves.get(id) ?? []), t]);
    lastLeave.set(`${room}/${id}`, t);
    const res = await costed("leave", t, before !== undefined ? 4 : 2, () => leave(at(t), room, id, opt));
    check("leave.left", t, res.left, wasOnline);
    bump("leave");
  }

  async function doTrim(t: number) {
    const res = await costed("trim", t, null, () => job(at(t), config));
    let sample = 0;
    for (const [room, m] of model) {
      const n = countOnline(m, t);
      sample += n;
      if (activeAt(m, t)) m.points.set(Math.floor(t / MINUTE) * MINUTE, n);
      // Forgetting: every id idle past the horizon goes (a forgotten id comes back as new).
      for (const [id, s] of m.score) if (s < t - HORIZON_DAYS * DAY) m.score.delete(id);
      void room;
    }
    check("trim.online", t, res.online, sample);
    // A run records the site-wide sample in its last chunk: a run with no room due records none.
    if (Number(res.rooms) > 0) siteSamples.push({ t, online: sample });
    else {
      bump("trim:nothing-due");
      if (!Number.isNaN(lastCommands)) check("cost:trim.nothing-due", t, lastCommands, 2);
    }
    bump("trim");
  }

  // --- reads --------------------------------------------------------------------------------
  async function readAll(t: number) {
    const room = pick(ROOMS);
    const m = model.get(room)!;
    const today = dayStart(t);
    const s = await costed("stats", t, 4, () => stats(at(t), room, opt));
    const peak = truePeak(m, today, t);
    check("stats.online", t, s.online, countOnline(m, t));
    check("stats.activeToday", t, s.activeToday, m.au.get(today)?.size ?? 0);
    check("stats.newToday", t, s.newToday, m.nu.get(today) ?? 0);
    check("stats.peakToday", t, s.peakToday, peak.peak);
    check("stats.peakAt", t, s.peakAt, peak.peakAt);
    // Past days: yesterday (live) and an older one (archived, or a day without data).
    for (const back of [1, 2 + Math.floor(rand() * (opts.days + 1))]) {
      const from = today - back * DAY;
      if (from < D0 - DAY) continue;
      const d = await costed(back === 1 ? "day.yesterday" : "day.archived", t, back === 1 ? 3 : 2, () =>
        presence.day(at(t), room, new Date(from).toISOString().slice(0, 10), opt),
      );
      const p = truePeak(m, from, from + DAY - 1);
      const kind = back === 1 ? "yesterday" : "archived";
      check(`day.${kind}.peak`, t, d.peak, p.peak);
      check(`day.${kind}.peakAt`, t, d.peakAt, p.peakAt);
      check(`day.${kind}.active`, t, d.active, m.au.get(from)?.size ?? 0);
      check(`day.${kind}.new`, t, d.new, m.nu.get(from) ?? 0);
      if ((m.au.get(from)?.size ?? 0) > 0) bump(`day.${kind}:with-data`);
    }
    // Members, paged with a random limit; nothing happens between pages here.
    const limit = 1 + Math.floor(rand() * 4);
    const listed: { id: string; lastSeen: number }[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 20; page += 1) {
      const p = await costed("members", t, null, () => members(at(t), room, { ...opt, limit, cursor }));
      listed.push(...p.members);
      if (p.nextCursor === null) break;
      cursor = p.nextCursor;
    }
    const want = [...m.score].filter(([, sc]) => sc >= t - TIMEOUT).map(([id, lastSeen]) => ({ id, lastSeen }));
    const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : 1);
    check("members.set", t, [...listed].sort(byId), want.sort(byId));
    if (listed.length > 0) bump("members.listed");
    check(
      "members.order",
      t,
      listed.every((x, i) => i === 0 || listed[i - 1]!.lastSeen <= x.lastSeen),
      true,
    );
    // History of the last 24 h.
    const h = await costed("history", t, 2, () => history(at(t), room, 24));
    const low = (Math.floor((t - 24 * HOUR) / MINUTE) + 1) * MINUTE;
    const wantPoints = [...m.points]
      .filter(([minute]) => minute >= low && minute <= t)
      .sort((a, b) => a[0] - b[0])
      .map(([minute, online]) => ({ at: minute, online }));
    check("history", t, h.points, wantPoints);
    if (wantPoints.length > 0) bump("history:with-points");
    // Site-wide figures.
    const tot = await costed("total", t, null, () => total(at(t)));
    // docs/costs.md: 3, or 4 after midnight before the day's first sample
    if (!Number.isNaN(lastCommands))
      check("cost:total", t, lastCommands, siteSamples.some((x) => x.t >= today) ? 3 : 4);
    const todays = siteSamples.filter((x) => x.t >= today);
    const latest = siteSamples[siteSamples.length - 1];
    if (latest && latest.t >= today - DAY) {
      check("total.online", t, tot.online, latest.online);
      check("total.onlineAt", t, tot.onlineAt, latest.t);
    }
    let top = 0;
    let topAt: number | null = null;
    for (const x of todays)
      if (x.online > top) {
        top = x.online;
        topAt = x.t;
      }
    check("total.peakToday", t, tot.peakToday, top);
    check("total.peakAt", t, tot.peakAt, topAt);
    const distinct = new Set<string>();
    for (const rm of model.values()) for (const id of rm.au.get(today) ?? []) distinct.add(id);
    check("total.activeToday≈", t, Math.abs(tot.activeToday - distinct.size) <= 1 + distinct.size * 0.03, true);
    // The room list: rooms active within two days (skipping a room at the 2-day boundary).
    const list = await costed("rooms", t, 2, () => rooms(at(t)));
    for (const r of ROOMS) {
      const since = t - model.get(r)!.lastBeat;
      if (since >= 2 * DAY && since < 2 * DAY + 2 * HOUR) continue;
      check(`rooms.${since < 2 * DAY ? "listed" : "unlisted"}`, t, list.rooms.includes(r), since < 2 * DAY);
    }
    bump("reads");
  }

  // --- the run --------------------------------------------------------------------------------
  let clock = D0 + 8 * HOUR;
  const end = D0 + opts.days * DAY;
  let nextCron = clock;
  const scheduleCron = (after: number) => {
    const sinceMidnight = after - dayStart(after);
    const nearMidnight = sinceMidnight < 6 * MINUTE || sinceMidnight > DAY - 7 * MINUTE;
    const gap = nearMidnight ? 1 : 1 + Math.floor(rand() * (opts.gapMinutes ?? 1));
    const base = dense(after) ? Math.floor(after / MINUTE + gap) * MINUTE : Math.floor(after / HOUR + 1) * HOUR;
    nextCron = base + Math.floor(rand() * 59_000);
  };
  scheduleCron(clock);
  // Activity windows: each room gets 1..3 sessions a day of 10..50 minutes, one of them across midnight.
  const windows: { room: string; from: number; to: number }[] = [];
  for (let d = 0; d < opts.days; d += 1) {
    for (const room of ROOMS) {
      // rc sleeps on days 1 and 2, past the 2-day horizon: its ids come back as new on day 3
      if (room === "rc" && (d === 1 || d === 2)) continue;
      const n = 1 + Math.floor(rand() * 3);
      for (let i = 0; i < n; i += 1) {
        const from = D0 + d * DAY + 9 * HOUR + Math.floor(rand() * 14 * HOUR);
        windows.push({ room, from, to: from + (10 + Math.floor(rand() * 40)) * MINUTE });
      }
      if (room === "ra")
        windows.push({ room, from: D0 + (d + 1) * DAY - 15 * MINUTE, to: D0 + (d + 1) * DAY + 12 * MINUTE });
    }
    // rb goes quiet a few minutes before midnight
    windows.push({
      room: "rb",
      from: D0 + (d + 1) * DAY - 25 * MINUTE,
      to: D0 + (d + 1) * DAY - 3 * MINUTE - Math.floor(rand() * 3 * MINUTE),
    });
  }
  windows.sort((a, b) => a.from - b.from);
  const nextWindowStart = (t: number) => Math.min(...windows.filter((w) => w.from > t).map((w) => w.from), end);

  while (clock < end) {
    const live = windows.filter((w) => w.from <= clock && clock < w.to);
    let step: number;
    if (live.length === 0) {
      // Nothing going on: jump towards the next window, but never past a cron run.
      step = Math.max(1, nextWindowStart(clock) - clock);
    } else {
      step = 3_000 + Math.floor(rand() * 40_000);
    }
    if (clock + step >= nextCron) {
      clock = nextCron;
      await doTrim(clock);
      if (rand() < 0.05) await doTrim(clock + Math.floor(rand() * 1000)); // a rerun within the minute
      if (rand() < 0.3) await readAll(clock + 500);
      scheduleCron(clock);
      continue;
    }
    clock += step;
    for (const w of live) {
      const room = w.room;
      const session = inSession.get(room)!;
      const id = pick(pool(room));
      const r = rand();
      if (session.has(id) && r < 0.08) {
        session.delete(id);
        await doLeave(room, id, clock);
      } else if (session.has(id) && r < 0.16) {
        session.delete(id); // drops silently: times out
      } else {
        session.add(id);
        const batch = rand() < 0.4 ? [...session] : [id];
        const late = opts.lagMs > 0 && rand() < 0.4 ? Math.floor(rand() * opts.lagMs) : 0;
        const t = clock - late;
        // May be before one of these ids' leave: it must not bring the id back (review 2, fixed 2026-11-27).
        await doHeartbeat(room, batch, t);
      }
    }
    if (rand() < 0.1) await readAll(clock + 1);
  }
  // The cron goes on (once an hour when nothing is active): a final look two and more days later.
  while (clock < end + 2 * DAY + 6 * HOUR) {
    clock = nextCron;
    await doTrim(clock);
    if (clock > end + 2 * DAY) await readAll(clock + 500);
    scheduleCron(clock);
  }
  return { mismatches, counts };
}

function summary(mismatches: Mismatch[]): Record<string, { n: number; first: string }> {
  const out: Record<string, { n: number; first: string }> = {};
  for (const x of mismatches) {
    const k = x.kind;
    if (!out[k]) out[k] = { n: 0, first: `${new Date(x.at).toISOString()} ${x.detail}` };
    out[k].n += 1;
  }
  return out;
}

/** The kinds of check about PCU (peakToday, peak, peakAt of every read); the rest is checked apart. */
const isPeak = (kind: string) => /peak/i.test(kind) && !kind.startsWith("total.");
/** The records of days two and more days old (`?day=`, the ring of past days). */
const isRecord = (kind: string) => kind.startsWith("day.archived.");
const runs = new Map<string, ReturnType<typeof runModel>>();
function once(name: string, opts: RunOptions) {
  if (!runs.has(name)) runs.set(name, runModel(opts));
  return runs.get(name)!;
}
const SYNC: RunOptions = { seed: 4001, lagMs: 0, days: 4 };
const LATE: RunOptions = { seed: 4002, lagMs: 30_000, days: 4 };
const SPARSE: RunOptions = { seed: 4003, lagMs: 10_000, days: 4, gapMinutes: 12 };

describe("presence against a model (seeded, 4 UTC days, 3 rooms, timeout 120 s, horizon 2 days)", () => {
  it(
    "synchronous heartbeats: online, AU, NU (today, yesterday), members, history, _total, room list, forgetting and costs match",
    { timeout: 300_000 },
    async () => {
      const { mismatches, counts } = await once("sync", SYNC);
      // the run did exercise what it claims to
      expect(counts["heartbeat:new"]).toBeGreaterThan(30);
      expect(counts["leave"]).toBeGreaterThan(20);
      expect(counts["reads"]).toBeGreaterThan(100);
      expect(counts["checked:day.archived.active"]).toBeGreaterThan(50);
      expect(counts["day.archived:with-data"]).toBeGreaterThan(20);
      expect(counts["day.yesterday:with-data"]).toBeGreaterThan(50);
      expect(counts["history:with-points"]).toBeGreaterThan(100);
      expect(counts["members.listed"]).toBeGreaterThan(50);
      expect(summary(mismatches.filter((x) => !isPeak(x.kind) && !isRecord(x.kind)))).toEqual({});
    },
  );

  it("queued heartbeats up to 30 s late: everything but PCU matches", { timeout: 300_000 }, async () => {
    const { mismatches, counts } = await once("late", LATE);
    expect(counts["reads"]).toBeGreaterThan(100);
    expect(summary(mismatches.filter((x) => !isPeak(x.kind)))).toEqual({});
  });

  it(
    "trim runs 1 to 12 minutes apart (every minute near midnight): everything but PCU matches",
    { timeout: 300_000 },
    async () => {
      const { mismatches, counts } = await once("sparse", SPARSE);
      expect(counts["checked:history"]).toBeGreaterThan(100);
      expect(summary(mismatches.filter((x) => !isPeak(x.kind)))).toEqual({});
    },
  );

  // FIXED (was medium): see "day records of a room that goes idle around midnight" below: in
  // this run room rb comes back on 2026-12-10 with an 11th id, then goes idle between the last
  // run before midnight and the first after; its record keeps the figures of its earlier idle
  // visit that day (AU and NU 10, not 11). Medium.
  it("synchronous heartbeats: the records of past days hold the day's AU and NU", { timeout: 300_000 }, async () => {
    const { mismatches } = await once("sync", SYNC);
    expect(summary(mismatches.filter((x) => isRecord(x.kind) && !isPeak(x.kind)))).toEqual({});
  });

  // FIXED (was medium, 2026-11-27): see "ids online at midnight" below (the same cause): the seeded run met one day whose
  // true peak was at 00:00 and was reported lower, reached at the day's first heartbeat.
  it("synchronous heartbeats: PCU and peakAt equal the true maximum concurrency", { timeout: 300_000 }, async () => {
    const { mismatches } = await once("sync", SYNC);
    expect(summary(mismatches.filter((x) => isPeak(x.kind)))).toEqual({});
  });

  // FIXED for this run (was medium, 2026-11-27: a late heartbeat also counts its own ids and who was online at the
  // day's latest heartbeat, and moves peakAt back to its time when it counts the peak; exactness is not
  // guaranteed in general, see "a peak between a late heartbeat and the latest one" below). Was: see "a late heartbeat" below: with queued heartbeats the day's peak is understated on
  // several days (yesterday and archived records included). Medium.
  it("queued heartbeats: PCU and peakAt equal the true maximum concurrency", { timeout: 300_000 }, async () => {
    const { mismatches } = await once("late", LATE);
    expect(summary(mismatches.filter((x) => isPeak(x.kind)))).toEqual({});
  });
});

// Heartbeats up to 100 s late against a 120 s timeout (the queue's retries reach 303 s): a late
// heartbeat sees who was online at its own time and at the room's latest heartbeat, not in
// between (see "a peak between a late heartbeat and the latest one" below), so the day's peak can
// be missed for a while and dated when a heartbeat in time order reaches it again. Measured
// 2026-11-27: 53 of 1,554 (seed 4002) and 82 of 1,526 (seed 4005) peak checks differ, every one a
// peak read below the true one (4 and 14) or its peakAt (49 and 68; mostly the records of two or
// three room-days whose peak was missed, then reached again later); no peak above the true one;
// everything else exact (up to 30 s late, nothing differs: "queued heartbeats" above). Pinned: what
// holds.
const LAG100: RunOptions[] = [
  { seed: 4002, lagMs: 100_000, days: 4 },
  { seed: 4005, lagMs: 100_000, days: 4 },
];
/**
 * A peak check whose figure is above the model's (peakAt aside). A late heartbeat overstates only
 * by ids that came online after its time and left within a timeout of it ("a late heartbeat and
 * leaves after its time" below); these runs meet none.
 */
const overstated = (x: Mismatch) => {
  const m = /got (\d+) want (\d+)/.exec(x.detail);
  return !/peakAt/.test(x.kind) && m !== null && Number(m[1]) > Number(m[2]);
};

describe("queued heartbeats up to 100 s late (120 s timeout)", () => {
  for (const opts of LAG100) {
    it(
      `seed ${opts.seed}: everything but PCU matches; PCU is never above the true peak`,
      { timeout: 300_000 },
      async () => {
        const { mismatches, counts } = await once(`lag100-${opts.seed}`, opts);
        expect(counts["reads"]).toBeGreaterThan(100);
        expect(summary(mismatches.filter((x) => !isPeak(x.kind)))).toEqual({});
        expect(summary(mismatches.filter((x) => isPeak(x.kind) && overstated(x)))).toEqual({});
      },
    );
  }
});

// ---------------------------------------------------------------------------------------------
// What the model found, pinned
// ---------------------------------------------------------------------------------------------

const T_OPT = { timeoutSeconds: TIMEOUT_S };
const CONFIG: Config = { ...lib.config, presenceTimeoutSeconds: TIMEOUT_S, presenceIdHorizonDays: HORIZON_DAYS };
const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describe("PCU when heartbeats are applied out of time order (queued ingest)", () => {
  const T0 = D0 + 12 * HOUR;
  // FIXED (2026-11-27, as suggested below in spirit without a field per id: a late heartbeat also counts
  // `ZCOUNT seen <latest-timeout> <latest>` at the room's latest heartbeat of the day, +1 command on late
  // heartbeats only, and dates a peak found so at its own time or the recorded peak's, whichever is later).
  // Was: x heartbeats at 0 and 100 ms; y's queued heartbeat of 50 ms is applied after them. At
  // 50 ms x and y were both online (true PCU 2), but the late heartbeat counts `ZCOUNT seen
  // <at-timeout> <at>`, which leaves x out (its last-seen, 100, is after 50), and no other heartbeat
  // ever sees both: peakToday stays 1 once y times out. The review-2 fix (upper bound = the
  // heartbeat's own time, against overcounting) is what drops x. Severity: medium — docs/presence.md
  // says "PCU is exact"; with queued ingest the day's peak (today, ?day=, archived records) is
  // understated whenever an id heartbeats again before a late heartbeat lands (the model run with
  // up to 30 s lag meets it on most days). Smallest fix: a late heartbeat (its `now` below the
  // highest last-seen) cannot know who was online at its time from last-seen alone; either keep a
  // session start per id (ZADD NX of the start in a second set) and count ids started <= now and
  // last-seen >= now - timeout, or document the limit ("exact for heartbeats applied in time order").
  it("a late heartbeat's peak counts ids that heartbeated before and after its time", async () => {
    const ctx = lib.ctx(T0, "late-under");
    const at = (ms: number) => ({ ...ctx, now: T0 + ms });
    await heartbeat(at(0), "r", ["x"], T_OPT);
    await heartbeat(at(100), "r", ["x"], T_OPT);
    await heartbeat(at(50), "r", ["y"], T_OPT); // queued at 50 ms, applied now
    // y is gone at 120 050, x still online until 120 100
    const s = await stats(at(TIMEOUT + 80), "r", T_OPT);
    expect(s.online).toBe(1);
    expect({ peakToday: s.peakToday, peakAt: s.peakAt }).toEqual({ peakToday: 2, peakAt: T0 + 50 });
  });

  // FIXED (2026-11-27: the case is gone with the previous fix; and the read dates a peak it supplies at 00:00
  // only while the day has no heartbeat, else at the day's latest heartbeat). Was: in the same situation, while both are still online the read sees online (2) above the
  // recorded peak (1) and takes it for ids carried over midnight: peakAt = 00:00 of the day, when
  // nobody was online (the room's first heartbeat was at 12:00). Severity: low (peakAt only, and
  // only until the ids time out, when peakToday falls back to 1: the figure moves from read to
  // read). Fix: with the previous finding fixed the case disappears; else the read should take
  // online > peak as "carried" only when today's bitmap has no heartbeat yet (header bits 96..127).
  it("peakAt of a peak the read supplies is not 00:00 when nobody was online then", async () => {
    const ctx = lib.ctx(T0, "late-peakat");
    const at = (ms: number) => ({ ...ctx, now: T0 + ms });
    await heartbeat(at(0), "r", ["x"], T_OPT);
    await heartbeat(at(100), "r", ["x"], T_OPT);
    await heartbeat(at(50), "r", ["y"], T_OPT);
    const s = await stats(at(200), "r", T_OPT);
    expect(s.peakToday).toBe(2);
    expect(s.peakAt).not.toBe(dayStart(T0));
    expect(s.peakAt).toBe(T0 + 50);
  });
});

describe("a peak between a late heartbeat and the latest one", () => {
  const T0 = D0 + 13 * HOUR;
  // KNOWN LIMIT (docs/presence.md, left open after the 2026-11-27 fix): p heartbeats at 0 (online to 120 s),
  // q at 100 s and 130 s, y's queued heartbeat of 50 s is applied last. At 100 s p, q and y were online
  // (true PCU 3), but no instant the heartbeats can count sees all three: y's own time (50 s) does not
  // see q (seen after it), the room's latest heartbeat (130 s) does not see p (gone at 120 s), and q's
  // heartbeat at 100 s was applied before y's. PCU reads 2. Severity: low — needs a heartbeat late by
  // more than the gap between another id's session start and a third id's timeout.
  // RE-EXAMINED 2026-11-27 (wt-presence), still open: not exact within the bound. y's heartbeat would
  // need who was online at each time between 50 s and 130 s: q's heartbeat at 100 s (its 130 s one
  // overwrote it in `seen`), or the count q's heartbeat measured then. Neither is kept, and keeping
  // either costs every heartbeat in time order a command (5 → 6): its five (EVALSHA, HMGET ids,
  // BITFIELD daily, ZADD seen, ZCOUNT seen) write only last-seen and the day's header, the BITFIELD runs
  // before the count is known (its old last-heartbeat field decides the count's bounds and the midnight
  // count, both before the ZADD), and the header has no free field (the AU bits follow it). A late
  // heartbeat's own commands cannot read back what was overwritten. The error is one-sided (a peak
  // missed, never one invented) and measured by the 100 s-lag model runs above.
  // RE-EXAMINED 2026-11-28 (wt-fixpres), stays for the reasons above (no free header field, +1 per
  // steady heartbeat).
  // RE-EXAMINED 2026-11-28 (wt-r18pres), stays: keeping q's 100 s count or time costs every heartbeat
  // in time order a command; a known id's would fit (5 → 6 ≤ issue 14's 6), a new id's would not
  // (9 → 10, over issue 14's 9), and a new id's heartbeat must keep it too (it may be the one whose
  // count a later late heartbeat needs). Reading the last-seen scores between the two times instead
  // is a ZRANGEBYSCORE that grows with the room (issue 15).
  it.fails("a late heartbeat's peak at a time between its own and the room's latest heartbeat", async () => {
    const ctx = lib.ctx(T0, "late-between");
    const at = (ms: number) => ({ ...ctx, now: T0 + ms });
    await heartbeat(at(0), "r", ["p"], T_OPT);
    await heartbeat(at(100_000), "r", ["q"], T_OPT);
    await heartbeat(at(130_000), "r", ["q"], T_OPT);
    await heartbeat(at(50_000), "r", ["y"], T_OPT); // queued at 50 s, applied now
    const s = await stats(at(131_000), "r", T_OPT);
    expect(s.online).toBe(2); // q and y
    expect({ peakToday: s.peakToday, peakAt: s.peakAt }).toEqual({ peakToday: 3, peakAt: T0 + 100_000 });
  });
});

describe("a late heartbeat and leaves after its time", () => {
  const T0 = D0 + 14 * HOUR;
  // KNOWN LIMIT (docs/presence.md, left open; as before 2026-11-27): a leave moves the id's last-seen
  // back to a timeout before the leave, a time when the id may not have been online yet. A late
  // heartbeat counts the ids whose last-seen is within the timeout before its own time, so it counts
  // such ids as online with it: z1 (online 100..101 s) and z2 (160..161 s) both left, and y's queued
  // heartbeat of 50 s counts y, z1 and z2, though y was online with one of them at a time (true PCU 2).
  // Severity: low — needs leaves within a timeout after a late heartbeat's time, by ids that came
  // online after it.
  // RE-EXAMINED 2026-11-27 (wt-presence), still open: not exact within the bound. A leave must put
  // last-seen below its time minus a timeout, and whatever value it writes, a late heartbeat of the
  // timeout after that value counts the id; whether the id was online then depends on when it came
  // online (z1 at 100 s), which nothing keeps. Reading the scores in the window is a read growing with
  // the room (issue 15); a per-room set of leaves (shifted last-seen, last heartbeat) costs each leave
  // 2 commands (4 → 6) and an id's first heartbeat after a leave a ZREM (above 5), and would only turn
  // the overcount into an undercount: the true 2 here is z1's 100 s with y, the history case 1 lacks.
  // RE-EXAMINED 2026-11-28 (wt-fixpres), stays for the reasons above (when an id came online is kept
  // nowhere; keeping it costs each leave 2 commands).
  // RE-EXAMINED 2026-11-28 (wt-r18pres), stays: besides the leave's +2 (4 → 6), an id's first
  // heartbeat after a leave would pay a ZREM of its entry, and a new id's heartbeat is at issue 14's
  // 9 already; reading the window's scores to tell is a ZRANGEBYSCORE growing with the room (issue 15).
  it.fails("a late heartbeat does not count ids that came online after it and left", async () => {
    const ctx = lib.ctx(T0, "late-leaves");
    const at = (ms: number) => ({ ...ctx, now: T0 + ms });
    await heartbeat(at(100_000), "r", ["z1"], T_OPT);
    await leave(at(101_000), "r", "z1", T_OPT);
    await heartbeat(at(160_000), "r", ["z2"], T_OPT);
    await leave(at(161_000), "r", "z2", T_OPT);
    await heartbeat(at(50_000), "r", ["y"], T_OPT); // queued at 50 s, applied now
    const s = await stats(at(162_000), "r", T_OPT);
    expect(s.online).toBe(1); // y
    expect(s.peakToday).toBe(2);
  });
});

describe("ids online at midnight", () => {
  // FIXED (2026-11-27: the day's first heartbeat and the trim job's runs after midnight count the
  // ids online AT 00:00, ZCOUNT seen <dayStart - timeout> <dayStart>, as suggested below). Was: 5 ids are online at 00:00 (heartbeats at 23:58:30, timeout 120 s); 3 of them time out
  // at 00:00:30, before the day's first trim run (cron at :40 s) and before any heartbeat of the
  // day. The true PCU of the day is 5, at 00:00; the run samples 2 (and, had a heartbeat come
  // first, it would record its own count at its own time). Severity: medium — "PCU is exact" and
  // "Ids carried over midnight are covered by the trim job's samples in the first timeout after
  // 00:00" do not hold for ids that time out before the first sample: up to a minute of cron
  // jitter plus the first heartbeat's delay, i.e. most of a short timeout. Smallest fix: count
  // the concurrency AT 00:00 rather than at the sample: while today's bitmap has no heartbeat
  // (header bits 96..127 are 0), `ZCOUNT seen <dayStart-timeout> <dayStart>` is exactly the ids
  // online at 00:00 (no last-seen is after midnight yet); the day's first heartbeat (before its
  // ZADD) and the carry runs record that with peakAt 0 (+1 command on the day's first heartbeat).
  it("today's peak counts every id online at 00:00, also those gone before the first sample", async () => {
    const ctx = lib.ctx(D0, "carry-lost");
    const mid = D0 + DAY;
    await heartbeat({ ...ctx, now: mid - 90_000 }, "r", ["a", "b", "c", "d", "e"], T_OPT);
    await heartbeat({ ...ctx, now: mid - 10_000 }, "r", ["a", "b"], T_OPT);
    const job = createTrimJob();
    await job({ ...ctx, now: mid - 50_000 }, CONFIG);
    await job({ ...ctx, now: mid + 40_000 }, CONFIG);
    const s = await stats({ ...ctx, now: mid + 45_000 }, "r", T_OPT);
    expect(s.online).toBe(2);
    expect({ peakToday: s.peakToday, peakAt: s.peakAt }).toEqual({ peakToday: 5, peakAt: mid });
  });

  it("the day's first heartbeat counts the ids online at 00:00, also those gone before it", async () => {
    const ctx = lib.ctx(D0, "carry-beat");
    const mid = D0 + DAY;
    await heartbeat({ ...ctx, now: mid - 90_000 }, "r", ["a", "b", "c", "d"], T_OPT);
    await leave({ ...ctx, now: mid - 60_000 }, "r", "d", T_OPT); // offline before midnight: not counted
    await heartbeat({ ...ctx, now: mid - 10_000 }, "r", ["a"], T_OPT);
    // no trim run; b and c time out at 00:00:30, the first heartbeat of the day comes at 00:01
    const res = await heartbeat({ ...ctx, now: mid + 60_000 }, "r", ["z"], T_OPT);
    expect(res.online).toBe(2); // a and z
    const s = await stats({ ...ctx, now: mid + 61_000 }, "r", T_OPT);
    expect({ peakToday: s.peakToday, peakAt: s.peakAt }).toEqual({ peakToday: 3, peakAt: mid });
  });

  it("a run after midnight records the ids online at 00:00 of a room all gone by then", async () => {
    const ctx = lib.ctx(D0, "carry-idle");
    const mid = D0 + DAY;
    await heartbeat({ ...ctx, now: mid - 100_000 }, "r", ["a", "b", "c"], T_OPT);
    const job = createTrimJob();
    await job({ ...ctx, now: mid - 50_000 }, CONFIG);
    // all three time out at 00:00:20; the first run of the day at 00:01:10, no heartbeat today
    await job({ ...ctx, now: mid + 70_000 }, CONFIG);
    const s = await stats({ ...ctx, now: mid + 80_000 }, "r", T_OPT);
    expect(s.online).toBe(0);
    expect({ peakToday: s.peakToday, peakAt: s.peakAt }).toEqual({ peakToday: 3, peakAt: mid });
    // and the day's record keeps it once the day is archived
    await job({ ...ctx, now: mid + DAY + 70_000 }, CONFIG);
    const kept = await presence.day({ ...ctx, now: mid + 2 * DAY + HOUR }, "r", iso(mid), T_OPT);
    expect(kept).toMatchObject({ peak: 3, peakAt: mid });
  });

  it("when the first sample comes while all are still online, the peak is theirs at 00:00 (holds)", async () => {
    const ctx = lib.ctx(D0, "carry-kept");
    const mid = D0 + DAY;
    await heartbeat({ ...ctx, now: mid - 10_000 }, "r", ["a", "b", "c"], T_OPT);
    await createTrimJob()({ ...ctx, now: mid + 20_000 }, CONFIG);
    await heartbeat({ ...ctx, now: mid + 30_000 }, "r", ["z"], T_OPT);
    const s = await stats({ ...ctx, now: mid + 200_000 }, "r", T_OPT);
    expect({ online: s.online, peakToday: s.peakToday, peakAt: s.peakAt }).toEqual({
      online: 0,
      peakToday: 4,
      peakAt: mid + 30_000,
    });
    expect({ active: s.activeToday, new: s.newToday }).toEqual({ active: 1, new: 1 });
  });
});

describe("day records of a room that goes idle around midnight", () => {
  // FIXED (was medium; the carry step now runs for every visited room): the room's last heartbeat is at 23:55:30 (timeout 120 s: active until 23:59:30). The
  // run of 23:59:10 sees it active (no record: the carry window is after midnight), the run of
  // 00:00:10 sees it idle: the idle branch archives TODAY (empty: nothing written) and the carry
  // branch, which archives yesterday, runs only for active rooms. The day is never recorded and
  // reads as zeros once it is two days old, though the trim job ran in the window after midnight
  // (docs/presence.md: a day is lost only when the job did not run when it ended). Severity:
  // medium — a whole day's PCU/AU/NU silently lost for every room whose idle moment falls between
  // the last run before midnight and the first after (rooms that close shortly before midnight).
  // Smallest fix: in trimScript, run the `if carry then archive(yesterday)` step for every visited
  // room (move it out of `if active`); a room idle since before yesterday's last run has nothing to
  // add (its record is already the same figures).
  it("a room idle by the first run after midnight still gets yesterday's record", async () => {
    const ctx = lib.ctx(D0, "idle-midnight");
    const mid = D0 + DAY;
    await heartbeat({ ...ctx, now: mid - 4 * MINUTE - 30_000 }, "r", ["a", "b"], T_OPT);
    const job = createTrimJob();
    // the cron every minute at :10 from 23:50 to 00:10, then every hour
    for (let t = mid - 10 * MINUTE + 10_000; t < mid + 10 * MINUTE; t += MINUTE) await job({ ...ctx, now: t }, CONFIG);
    for (let t = mid + HOUR + 10_000; t < mid + DAY + 2 * HOUR; t += HOUR) await job({ ...ctx, now: t }, CONFIG);
    const yesterday = iso(D0);
    // while it is yesterday, the live bitmap answers
    const live = await presence.day({ ...ctx, now: mid + HOUR }, "r", yesterday, T_OPT);
    expect(live).toMatchObject({ peak: 2, active: 2, new: 2 });
    // two days later the record answers
    const kept = await presence.day({ ...ctx, now: mid + DAY + 2 * HOUR }, "r", yesterday, T_OPT);
    expect(kept).toMatchObject({ peak: 2, active: 2, new: 2 });
  });

  it("a room idle a minute before the last run of the day keeps its record (holds)", async () => {
    const ctx = lib.ctx(D0, "idle-before");
    const mid = D0 + DAY;
    await heartbeat({ ...ctx, now: mid - 6 * MINUTE }, "r", ["a", "b"], T_OPT);
    const job = createTrimJob();
    for (let t = mid - 10 * MINUTE + 10_000; t < mid + 10 * MINUTE; t += MINUTE) await job({ ...ctx, now: t }, CONFIG);
    await job({ ...ctx, now: mid + DAY + HOUR }, CONFIG);
    const kept = await presence.day({ ...ctx, now: mid + DAY + 2 * HOUR }, "r", iso(D0), T_OPT);
    expect(kept).toMatchObject({ peak: 2, peakAt: mid - 6 * MINUTE, active: 2, new: 2 });
  });
});

describe("site-wide figures", () => {
  // LEFT OPEN (2026-11-27): the nothing-due run's row in docs/costs.md has a target of 2 commands, and a
  // sample there would be 1,440 commands a day on an idle deployment for a timestamp.
  // DOCUMENTED NOW (docs/presence.md says "the latest run that visited a room"; recording a sample
  // on idle runs would cost +1 each), kept as it.fails for the stronger behaviour: a run with no room due records no sample (its last chunk records it, and
  // there is no chunk), so `onlineAt` is the latest run that visited a room, not "the trim job's
  // latest run": hours after the last room went idle it still names that run, and on a day whose
  // runs had nothing due it stays yesterday's (or null on a fresh deployment whose runs ran).
  // Severity: low — `online` is right (0: the last visit of a room recorded its 0). Fix: say so in
  // docs/presence.md ("onlineAt: the latest run that had rooms to visit"), or record the sample
  // also when nothing is due (+1 command on the 2-command idle run: costs.md row 14).
  // RE-EXAMINED 2026-11-28 (wt-fixpres), stays: the site entry in `_due` makes every run sample
  // while `_online` holds a count (also with no room due); with nobody counted it is out and an idle
  // run lists nothing, so a sample there would still be the +1 command on the 2-command idle run.
  // RE-EXAMINED 2026-11-28 (wt-r18pres), stays: issue 14's target for an idle run is 2 commands and
  // it costs 2 (one read script listing the due rooms); the sample's BITFIELD would make it 3.
  it.fails("onlineAt is the time of the trim job's latest run", async () => {
    const ctx = lib.ctx(D0, "total-at");
    const t = D0 + 9 * HOUR;
    await heartbeat({ ...ctx, now: t }, "r", ["a"], T_OPT);
    const job = createTrimJob();
    await job({ ...ctx, now: t + 30_000 }, CONFIG);
    await job({ ...ctx, now: t + 10 * MINUTE }, CONFIG); // the room goes idle: a sample of 0
    const last = t + 3 * HOUR;
    expect((await job({ ...ctx, now: last }, CONFIG)).rooms).toBe(0);
    const tot = await total({ ...ctx, now: last + 1000 });
    expect(tot.online).toBe(0);
    expect(tot.onlineAt).toBe(last);
  });
});

describe("the id horizon (2 days)", () => {
  it("a forgotten id comes back as new, with a fresh compact id; its old days keep their AU and NU", async () => {
    const ctx = lib.ctx(D0, "horizon");
    const t = D0 + 10 * HOUR;
    const job = createTrimJob();
    expect(await heartbeat({ ...ctx, now: t }, "r", ["a", "b"], T_OPT)).toMatchObject({ new: 2 });
    await job({ ...ctx, now: t + 10 * MINUTE }, CONFIG); // idle: record of day 0
    // b stays within the horizon, a does not
    expect(await heartbeat({ ...ctx, now: t + DAY + HOUR }, "r", ["b"], T_OPT)).toMatchObject({ new: 0 });
    await job({ ...ctx, now: t + DAY + HOUR + 10 * MINUTE }, CONFIG);
    // the room is due when a passes the horizon
    const r = await job({ ...ctx, now: t + 2 * DAY + MINUTE }, CONFIG);
    expect(r).toMatchObject({ forgotten: 1 });
    const back = await heartbeat({ ...ctx, now: t + 2 * DAY + 2 * MINUTE }, "r", ["a", "b"], T_OPT);
    expect(back).toMatchObject({ new: 1, online: 2 });
    const now = { ...ctx, now: t + 2 * DAY + 3 * MINUTE };
    expect(await presence.day(now, "r", iso(D0), T_OPT)).toMatchObject({ peak: 2, active: 2, new: 2 });
    expect(await stats(now, "r", T_OPT)).toMatchObject({ activeToday: 2, newToday: 1, online: 2 });
    const seq = await command<string>(target, "GET", `${ctx.prefix}:presence:r:seq`);
    expect(seq).toBe("3"); // a's old compact id is not handed out again
    const listed = await members(now, "r", { ...T_OPT, limit: 10 });
    expect(listed.members.map((m) => m.id).sort()).toEqual(["a", "b"]);
  });
});

describe("a heartbeat retried by the queue past the active margin", () => {
  // FIXED (2026-11-27: the trim job marks the day's bitmap when it takes a room for idle, IDLED_FLAG; the next
  // heartbeat, late or not, clears the mark and makes the room active again; +1 command per room going idle).
  // Was: default timeout (300 s). a heartbeats at 0; b's heartbeat, sent at 240 s, fails to apply
  // and Queues retries it (1, 2, 4 … 60 s: up to 303 s late with max_retries 10, docs/ingest.md).
  // The run of 430 s finds the room idle (no heartbeat for timeout + 2 min) and schedules it days
  // later; b's heartbeat then lands at its own time, 240 s: 240 s after the last heartbeat, less
  // than a timeout, so it does not make the room active again. b is online until 540 s, but no run
  // visits the room: history has no point at 480 s (and `_total` misses b). Severity: low — needs
  // a retry delay above the 2-minute margin; the chart shows 0/no point for a few minutes and the
  // day's record misses b (a documented limit for that part). Smallest fix: the heartbeat script
  // could compare its online-until (now + timeout) with the room's due score (`ZSCORE _due room`,
  // +1 command) and reschedule when the room is idle, or ACTIVE_MARGIN_MS could cover the
  // consumer's longest retry span.
  it("the room is sampled while the late id is online", async () => {
    const ctx = lib.ctx(D0, "late-idle");
    const t = D0 + 9 * HOUR;
    const config = lib.config; // 300 s
    const job = createTrimJob();
    await heartbeat({ ...ctx, now: t }, "r", ["a"]);
    await job({ ...ctx, now: t + 60_000 }, config);
    await job({ ...ctx, now: t + 430_000 }, config); // idle now
    await heartbeat({ ...ctx, now: t + 240_000 }, "r", ["b"]); // applied at about 440 s
    expect((await stats({ ...ctx, now: t + 450_000 }, "r")).online).toBe(1);
    await job({ ...ctx, now: t + 480_000 }, config);
    const points = (await history({ ...ctx, now: t + 490_000 }, "r", 1)).points;
    expect(points).toContainEqual({ at: t + 480_000, online: 1 });
  });
});

describe("a short timeout and the carry window", () => {
  // FIXED (was low; the window is now at least 2 minutes): with PRESENCE_TIMEOUT_SECONDS below 60 (allowed: 5..86400) the carry window (the first
  // timeout after midnight) can hold no cron run at all: here the runs are at :40 s and the
  // timeout is 30 s. A room active across midnight then never gets yesterday's record (its idle
  // visit archives today only), and the day reads as zeros once two days old. Severity: low (a
  // non-default setting; with 300 s every cron run of the first 5 minutes is in the window).
  // Smallest fix: carry while `now - dayStart <= max(timeout, 2 minutes)` (the records are
  // rewritten idempotently), or refuse PRESENCE_TIMEOUT_SECONDS below 60.
  it("yesterday is recorded for a room active across midnight with a 30 s timeout", async () => {
    const ctx = lib.ctx(D0, "short-carry");
    const config: Config = { ...lib.config, presenceTimeoutSeconds: 30 };
    const opt = { timeoutSeconds: 30 };
    const mid = D0 + DAY;
    const job = createTrimJob();
    for (let s = -5 * MINUTE; s <= 5 * MINUTE; s += 20_000) await heartbeat({ ...ctx, now: mid + s }, "r", ["a"], opt);
    for (let s = -6 * MINUTE + 40_000; s < 10 * MINUTE; s += MINUTE) await job({ ...ctx, now: mid + s }, config);
    await job({ ...ctx, now: mid + DAY + HOUR }, config);
    const kept = await presence.day({ ...ctx, now: mid + DAY + 2 * HOUR }, "r", iso(D0), opt);
    expect(kept).toMatchObject({ peak: 1, active: 1, new: 1 });
  });
});

describe("a late heartbeat and the room's last-heartbeat time", () => {
  // FIXED (was low; the later time is written back): a late heartbeat wrote its own, older time into today's last-heartbeat field (bits
  // 96..127: `SET u32 96 ofDay+1`, not a maximum). The next heartbeat measures the room's silence
  // from that older time: here 124 s (over the 120 s timeout) though the room's last heartbeat
  // was 25 s before (the late one needs a delay near a timeout: queue retries reach 303 s). It
  // takes the room for newly active and rewrites `_due`, `_rooms` (the list order moves), the
  // history placeholder and its lifetime: 9 commands instead of the 5 of docs/costs.md ("known
  // id, online"). Severity: low (4 extra commands on such heartbeats, a listing refresh out of
  // turn; only after a delay of about a timeout). Smallest fix: the heartbeat's BITFIELD returns
  // the old value (it already reads it as `last`): when `last > ofDay + 1`, write `last` back
  // (one command, only for late heartbeats), so the field stays the day's latest heartbeat.
  it("a heartbeat 25 s after the room's last one costs 5 commands", async () => {
    const tag = `rv4late${Math.random().toString(36).slice(2, 6)}`;
    const redis = createRedis({ url: target.url, token: `${target.token}.${tag}` });
    const { prefix } = lib.ctx(D0, "late-last");
    const t = D0 + 15 * HOUR;
    const at = (ms: number): Ctx => ({ redis, prefix, now: t + ms });
    await heartbeat(at(0), "warm", ["w"], T_OPT); // loads the script
    await heartbeat(at(0), "r", ["a", "b"], T_OPT);
    await heartbeat(at(100_000), "r", ["a"], T_OPT);
    await heartbeat(at(1_000), "r", ["b"], T_OPT); // queued at 1 s, retried, applied after the 100 s one
    await resetStats(target, tag);
    const res = await heartbeat(at(125_000), "r", ["a"], T_OPT); // 25 s after the room's last heartbeat
    expect(res.online).toBe(1);
    const s = await statsOf(target, tag);
    expect({ requests: s.requests, commands: s.commands }).toEqual({ requests: 1, commands: 5 });
  });
});

describe("odd batches", () => {
  it("an id twice in one batch is one new id, one AU bit, one compact id", async () => {
    const ctx = lib.ctx(D0, "dup");
    const t = D0 + 10 * HOUR;
    expect(await heartbeat({ ...ctx, now: t }, "r", ["a", "a", "b", "a"], T_OPT)).toMatchObject({ new: 2, online: 2 });
    expect(await heartbeat({ ...ctx, now: t + 1 }, "r", ["b", "b"], T_OPT)).toMatchObject({ new: 0, online: 2 });
    expect(await stats({ ...ctx, now: t + 2 }, "r", T_OPT)).toMatchObject({
      activeToday: 2,
      newToday: 2,
      peakToday: 2,
      peakAt: t,
    });
    expect(await command<string>(target, "GET", `${ctx.prefix}:presence:r:seq`)).toBe("2");
  });
});
