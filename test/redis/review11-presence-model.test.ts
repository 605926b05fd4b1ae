/**
 * Adversarial review (round 11) of presence over long horizons: a seeded run (dev/prng.ts) of 6 UTC
 * days and a tail of 2.5 more, five rooms and about 3,400 ids (300,000 ids heartbeated), through the
 * library against real Redis (the local Upstash server) with injected time. Heartbeats come in time
 * order as batches of up to 1,000 ids (in one room, a few are applied up to 30 s late, as queued
 * ingest does), with explicit leaves, silent drops and silences over a timeout; rooms go idle and
 * come back, one sleeps past the
 * 2-day id horizon (forgotten, dropped from the registries, its counter restarting); the trim job runs
 * every minute but for outages of hours (three across midnight, one of them over the first hour),
 * some runs twice in a minute. Every read (online, AU, NU, PCU today and of past days, member pages,
 * history, site-wide figures, the room list) is compared with a plain model written from
 * docs/presence.md, and every trim run's commands with docs/costs.md. Review 4's model
 * (test/redis/review4-presence.test.ts) covers short horizons and late heartbeats in depth; the known
 * limits it pins are not re-reported here. Other seeds (11002, 11003) and the default timeout (300 s)
 * with a 3-day horizon (seed 11004) were run while writing this: they found the same two findings
 * and nothing else.
 */
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../dev/prng.ts";
import type { Config } from "../../src/config.ts";
import type { Ctx } from "../../src/context.ts";
import * as presence from "../../src/presence/index.ts";
import { createRedis } from "../../src/redis/client.ts";
import { DAY, HOUR, MINUTE, dayLabel, dayStart } from "../../src/time.ts";
import { area } from "../costs/presence.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const { createTrimJob, heartbeat, history, leave, members, rooms, stats, total } = presence;
const lib = libraryTest("review11-presence");
const costRows = area.rows;
const target = lib.target;
const D0 = Date.UTC(2026, 11, 14); // a Monday, 00:00 UTC
const SEED = 11_001;
const TIMEOUT_S = 120;
const T = TIMEOUT_S * 1000;
const HORIZON_DAYS = 2;
const H = HORIZON_DAYS * DAY;
const T_OPT = { timeoutSeconds: TIMEOUT_S };
const CONFIG: Config = { ...lib.config, presenceTimeoutSeconds: TIMEOUT_S, presenceIdHorizonDays: HORIZON_DAYS };
const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const MARGIN = 2 * MINUTE; // ACTIVE_MARGIN_MS: active until a timeout plus 2 minutes after the last heartbeat
const BUDGET = 1000; // ids one trim script call forgets at most
/** Redis orders equal scores by member bytes: compact ids as strings. */
const byScoreThenMember = (a: [number, number], b: [number, number]) =>
  a[0] - b[0] || (String(a[1]) < String(b[1]) ? -1 : String(a[1]) > String(b[1]) ? 1 : 0);

// ---------------------------------------------------------------------------------------------
// The model (docs/presence.md)
// ---------------------------------------------------------------------------------------------

interface DayFig {
  peak: number;
  peakAt: number | null;
  au: Set<string>;
  nu: number;
  /** The day's latest heartbeat (max `at`), or null. */
  last: number | null;
  /** Ids online at 00:00 that no heartbeat of the day or run of the window has counted yet. */
  carryUncounted: boolean;
  /** A run took the room for idle after the day's last heartbeat, on that day (docs: "going idle"). */
  idleVisit: boolean;
  /** A run visited the room in the first hour of the next day. */
  nextHourVisit: boolean;
}

interface RoomModel {
  name: string;
  late: boolean;
  score: Map<string, number>; // mapped ids → last seen
  compact: Map<string, number>;
  seq: number;
  lastLeave: Map<string, number>;
  days: Map<number, DayFig>;
  /** lag room only: every heartbeat's `at` per id, for the true concurrency */
  beats: Map<string, number[]>;
  points: Map<number, number>;
  due: number | null;
  listed: number | null;
  /** The trim job's idle mark on the day's bitmap. */
  idled: Set<number>;
  /** Archive snapshots the ring of past days should hold (what the mechanism wrote), day → figures. */
  ring: Map<number, { peak: number; peakAt: number | null; active: number; new: number }>;
}

interface Mismatch {
  kind: string;
  at: number;
  detail: string;
}

const ROOMS = [
  { name: "hall", pool: 1300, late: false },
  { name: "lobby", pool: 600, late: false },
  { name: "night", pool: 450, late: false },
  { name: "sleepy", pool: 350, late: false },
  { name: "lag", pool: 120, late: true },
];
const DAYS = 6;

function fig(m: RoomModel, day: number): DayFig {
  let f = m.days.get(day);
  if (!f)
    m.days.set(
      day,
      (f = {
        peak: 0,
        peakAt: null,
        au: new Set(),
        nu: 0,
        last: null,
        carryUncounted: false,
        idleVisit: false,
        nextHourVisit: false,
      }),
    );
  return f;
}
const hasData = (f: DayFig | undefined) => !!f && (f.nu > 0 || f.peak > 0 || f.last !== null);
/** What the day's bitmap holds: a peak carried over midnight only once counted (trim-script.ts `archive`). */
const written = (f: DayFig | undefined) => !!f && (f.nu > 0 || f.last !== null || (f.peak > 0 && !f.carryUncounted));
const countOnline = (m: RoomModel, t: number) => {
  let n = 0;
  for (const s of m.score.values()) if (s >= t - T) n += 1;
  return n;
};
const maxScore = (m: RoomModel) => {
  let x: number | undefined;
  for (const s of m.score.values()) if (x === undefined || s > x) x = s;
  return x;
};
/** docs: activity = the day's latest heartbeat or the latest last-seen (a heartbeat before midnight). */
const activityOf = (m: RoomModel, t: number) => {
  const last = m.days.get(dayStart(t))?.last ?? null;
  const top = maxScore(m);
  if (last === null && top === undefined) return undefined;
  return Math.max(last ?? -Infinity, top ?? -Infinity);
};

/** True PCU of a day from every heartbeat (lag room: heartbeats applied out of order): a sweep of online spans. */
function sweepPeak(m: RoomModel, from: number): { peak: number; peakAt: number | null } {
  const events: [number, number][] = [];
  for (const beats of m.beats.values()) {
    // an id is online from a heartbeat to a timeout after it: merge its spans, +1 at the start, -1 after the end
    const sorted = [...beats].sort((a, b) => a - b);
    let s: number | null = null;
    let e = 0;
    for (const a of sorted) {
      if (s !== null && a <= e + 1) e = Math.max(e, a + T);
      else {
        if (s !== null) events.push([s, 1], [e + 1, -1]);
        s = a;
        e = a + T;
      }
    }
    if (s !== null) events.push([s, 1], [e + 1, -1]);
  }
  events.sort((a, b) => a[0] - b[0]);
  let cur = 0;
  let i = 0;
  while (i < events.length && events[i]![0] <= from) cur += events[i++]![1];
  let peak = cur;
  let peakAt: number | null = cur > 0 ? from : null;
  while (i < events.length && events[i]![0] < from + DAY) {
    const t = events[i]![0];
    while (i < events.length && events[i]![0] === t) cur += events[i++]![1];
    if (cur > peak) {
      peak = cur;
      peakAt = t;
    }
  }
  return { peak, peakAt };
}

interface RunResult {
  mismatches: Mismatch[];
  counts: Record<string, number>;
}

async function runModel(seed: number): Promise<RunResult> {
  const rand = mulberry32(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  // the trim job's commands are counted on a client of its own (the local server counts per token tag)
  const tag = `rv11p${seed}${Math.random().toString(36).slice(2, 6)}`;
  const redis = lib.redis;
  const jobRedis = createRedis({ url: target.url, token: `${target.token}.${tag}` });
  let jobCommands = 0;
  const prefix = lib.ctx(D0, `rv11m${seed}`).prefix;
  const at = (now: number): Ctx => ({ redis, prefix, now });
  const job = createTrimJob();
  const mismatches: Mismatch[] = [];
  const counts: Record<string, number> = {};
  const bump = (k: string, n = 1) => (counts[k] = (counts[k] ?? 0) + n);
  const check = (kind: string, t: number, got: unknown, want: unknown) => {
    bump(`checked:${kind}`);
    if (JSON.stringify(got) !== JSON.stringify(want))
      mismatches.push({ kind, at: t, detail: `got ${JSON.stringify(got)} want ${JSON.stringify(want)}` });
  };

  const model = new Map<string, RoomModel>(
    ROOMS.map((r) => [
      r.name,
      {
        name: r.name,
        late: r.late,
        score: new Map(),
        compact: new Map(),
        seq: 0,
        lastLeave: new Map(),
        days: new Map(),
        beats: new Map(),
        points: new Map(),
        due: null,
        listed: null,
        idled: new Set(),
        ring: new Map(),
      },
    ]),
  );
  /**
   * The room list's stamp (src/redis/pages.ts stampLua, review 26): `t`, or, when another room's
   * stamp is not below it, the highest (its room the last of equals in byte order) + 1; never lower.
   */
  const stampRoom = (m: RoomModel, t: number) => {
    let top: RoomModel | null = null;
    for (const o of model.values())
      if (
        o.listed !== null &&
        (top === null || o.listed > top.listed! || (o.listed === top.listed && o.name > top.name))
      )
        top = o;
    const at = top !== null && top !== m && top.listed! >= t ? top.listed! + 1 : t;
    m.listed = Math.max(m.listed ?? -Infinity, at);
  };
  const pools = new Map(
    ROOMS.map((r) => [
      r.name,
      Array.from({ length: r.pool }, (_, i) => (i % 97 === 0 ? `shared${i}` : `${r.name}-${i}`)),
    ]),
  );
  const samples: { t: number; online: number }[] = [];
  /** `_online`: each room's count at its latest visit (rooms with someone online only). */
  const countedRooms = new Map<string, number>();
  let midnightSeen = dayStart(D0);

  /** Crossing 00:00: the ids online then count in the new day's peak, at 00:00 (docs: "counted at 00:00"). */
  function crossMidnight(t: number) {
    while (dayStart(t) > midnightSeen) {
      midnightSeen += DAY;
      for (const m of model.values()) {
        let carried = 0;
        for (const s of m.score.values()) if (s >= midnightSeen - T && s <= midnightSeen) carried += 1;
        if (carried > 0) {
          const f = fig(m, midnightSeen);
          f.peak = carried;
          f.peakAt = midnightSeen;
          f.carryUncounted = true;
        }
      }
    }
  }

  // --- writes -----------------------------------------------------------------------------
  async function doHeartbeat(room: string, ids: string[], t: number) {
    const m = model.get(room)!;
    const day = dayStart(t);
    const f = fig(m, day);
    const unique = [...new Set(ids)];
    const fresh = unique.filter((id) => !m.compact.has(id));
    const late = f.last !== null && f.last > t;
    const reactivates = f.last === null || m.idled.has(day) || (!late && t - f.last >= T);
    for (const id of fresh) m.compact.set(id, ++m.seq);
    // a heartbeat sent before a leave and applied after it gets the last-seen of time order (review 2)
    const leftAfter = (id: string) => {
      const l = m.lastLeave.get(id);
      return l !== undefined && l > t && l - T - 1 < t ? l - T - 1 : undefined;
    };
    const own = new Set(unique.filter((id) => leftAfter(id) === undefined));
    for (const id of unique) m.score.set(id, Math.max(m.score.get(id) ?? -Infinity, leftAfter(id) ?? t));
    // a late heartbeat counts its own ids and those seen within the timeout before its time (docs)
    let online = late ? own.size : countOnline(m, t);
    if (late) for (const [id, s] of m.score) if (!own.has(id) && s >= t - T && s < t) online += 1;
    // its answer: what a read at its time counts, ids seen after a late one's time included (review 24)
    const answer = late ? [...m.score.values()].filter((s) => s >= t - T).length : online;
    const res = await heartbeat(at(t), room, ids, T_OPT);
    check("heartbeat.new", t, res.new, fresh.length);
    check("heartbeat.online", t, res.online, answer);
    f.carryUncounted = false; // the day's first heartbeat counts the ids online at 00:00
    f.idleVisit = false; // back after a run took it for idle: that run's record is not the day's
    for (const id of unique) {
      f.au.add(id);
      if (m.late) m.beats.set(id, [...(m.beats.get(id) ?? []), t]);
    }
    f.nu += fresh.length;
    if (!m.late && online > f.peak) {
      f.peak = online;
      f.peakAt = t;
    }
    f.last = Math.max(f.last ?? -Infinity, t);
    if (reactivates) {
      m.idled.delete(day);
      siteEntry = true; // the site entry rides in the room's ZADD (fixpres)
      m.due = t;
      stampRoom(m, t);
    }
    bump(late ? "heartbeat:late" : "heartbeat");
    bump("heartbeat:ids", unique.length);
    bump("heartbeat:new-ids", fresh.length);
  }

  /**
   * Leave marks of ids not mapped at their leave (review 11, fixed 2026-11-27): `room\nid` → when
   * the trim job's schedule lists the mark's entry (a timeout and 2 days after the leave).
   */
  const unmappedMarks = new Map<string, number>();
  async function doLeave(room: string, id: string, t: number) {
    const m = model.get(room)!;
    const before = m.score.get(id);
    const wasOnline = before !== undefined && before >= t - T;
    if (before !== undefined) m.score.set(id, Math.min(before, t - T - 1));
    // the mark is written for an id not mapped yet too (its first heartbeat may still be queued)
    const newer = (m.lastLeave.get(id) ?? -Infinity) < t;
    if (newer) m.lastLeave.set(id, t);
    if (newer && !m.compact.has(id)) unmappedMarks.set(`${room}\n${id}`, t + T + 2 * DAY);
    const res = await leave(at(t), room, id, T_OPT);
    check("leave.left", t, res.left, wasOnline);
    bump("leave");
  }

  // --- the trim job ----------------------------------------------------------------------------
  let warmTrim = false;
  /** `_due`'s site entry (SITE_ENTRY, fixpres): there exactly while `_online` holds a count. */
  let siteEntry = false;
  /** The latest trim run: ids online at 00:00 are counted by the day's first heartbeat or run (a cron gap delays it). */
  let lastTrimAt = -Infinity;
  let warmDue = false;
  let warmMarks = false;
  async function doTrim(t: number) {
    const today = dayStart(t);
    const yesterday = today - DAY;
    const carryWindow = t - today <= Math.max(T, 2 * MINUTE);
    const catchUp = !carryWindow && t - today < HOUR;
    const hourly = Math.floor(t / MINUTE) % 60 === 0;
    const minute = Math.floor(t / MINUTE) * MINUTE;
    const visited = [...model.values()]
      .filter((m) => m.due !== null && m.due <= t)
      .sort((a, b) => a.due! - b.due! || (a.name < b.name ? -1 : 1));
    let budget = BUDGET;
    let sum = 0;
    // docs/costs.md: 2 listing the due rooms; 1 EVALSHA per chunk of 50; per room as below; +1 the site sample
    let cost = 2 + (visited.length > 0 ? Math.ceil(visited.length / 50) : 0);
    let plain = visited.length > 0 && !carryWindow && !catchUp && !hourly;
    let forgottenNow = 0;
    // `_online`: one HMGET a chunk; the counts that changed in one HSET with the sum, those gone to 0
    // in one HDEL (one DEL of the key instead when nobody is counted any more)
    let recounted = 0;
    let uncounted = 0;
    if (visited.length > 0) cost += 1;
    for (const m of visited) {
      const count = countOnline(m, t);
      sum += count;
      if (count !== (countedRooms.get(m.name) ?? 0)) {
        if (count > 0) {
          countedRooms.set(m.name, count);
          recounted += 1;
        } else {
          countedRooms.delete(m.name);
          uncounted += 1;
        }
      }
      const activity = activityOf(m, t);
      const active = count > 0 || (activity !== undefined && t - activity < T + MARGIN);
      cost += 1; // ZCOUNT
      if (count === 0) cost += 2; // BITFIELD header and ZRANGE top: the room's last activity
      if (count === 0) plain = false;
      if (count === 0 && active) bump("cost:margin-room(+2)");
      const tf = m.days.get(today);
      if (carryWindow) {
        const yf = m.days.get(yesterday);
        cost += 1 + (written(yf) ? 3 : 0);
        if (written(yf)) m.ring.set(yesterday, snapshot(yf!));
        if (yf) yf.nextHourVisit = true;
        // the record is current: yesterday's bitmap gets the idle mark (once; only a bitmap with a heartbeat)
        if (yf && yf.last !== null && !m.idled.has(yesterday)) {
          cost += 1;
          m.idled.add(yesterday);
        }
        if (count > 0) cost += 1; // BITFIELD GET of today's peak (an idle room's rides in its header read)
        if ((tf?.last ?? null) === null && (count > 0 || (activity !== undefined && activity >= today - T))) {
          cost += 1; // ZCOUNT at 00:00
          if (tf?.carryUncounted) {
            tf.carryUncounted = false;
            cost += 2; // BITFIELD SET of the peak, EXPIRE of the new daily key
          }
        }
      } else if (catchUp) {
        // yesterday's header: its idle mark says the ring's record is current (fixed after review 11)
        const yf = m.days.get(yesterday);
        cost += 1;
        if (yf && yf.last !== null && !m.idled.has(yesterday)) {
          cost += 4; // BITCOUNT, BITFIELD SET, EXPIRE of the record; the mark
          m.ring.set(yesterday, snapshot(yf));
          m.idled.add(yesterday);
        } else if (yf && yf.last === null && written(yf)) {
          cost += 1; // only the peak carried over its midnight: the ring's slot
          if (!m.ring.has(yesterday)) {
            cost += 3;
            m.ring.set(yesterday, snapshot(yf));
          }
        }
        if (yf) yf.nextHourVisit = true;
        // ids online at 00:00, while today has no heartbeat, in a room nobody is online in
        if (count === 0 && (tf?.last ?? null) === null && activity !== undefined && activity >= today - T) {
          cost += 1; // ZCOUNT at 00:00
          if (tf?.carryUncounted) {
            tf.carryUncounted = false;
            cost += 2; // BITFIELD SET of the peak, EXPIRE
          }
        }
      }
      if (active) {
        m.points.set(minute, count);
        cost += 1;
        if (hourly) {
          cost += 3; // EXPIRE of history, the stamp's ZREVRANGE and ZADD
          stampRoom(m, t);
        }
      }
      // forgetting: ids idle past the horizon, lowest last-seen first, a budget per script call
      let full = false;
      if (budget > 0) {
        cost += 1;
        const old = [...m.score]
          .filter(([, s]) => s < t - H)
          .map(([id, s]) => [s, m.compact.get(id)!, id] as [number, number, string])
          .sort((a, b) => byScoreThenMember([a[0], a[1]], [b[0], b[1]]))
          .slice(0, budget);
        if (old.length > 0) {
          cost += 3;
          for (const [, , id] of old) {
            m.score.delete(id);
            m.compact.delete(id);
            m.lastLeave.delete(id);
          }
          forgottenNow += old.length;
          full = old.length === budget;
          budget -= old.length;
          plain = false;
        }
      }
      if (!active) {
        plain = false;
        bump("trim:idle-visit");
        const f = m.days.get(today);
        if (written(f)) {
          cost += 3;
          m.ring.set(today, snapshot(f!));
          f!.idleVisit = true;
        }
        cost += 1; // EXPIRE history
        if (f?.last !== null && f?.last !== undefined && !m.idled.has(today)) {
          cost += 1;
          m.idled.add(today);
        }
        const unlisted = activity === undefined || t - activity >= 2 * DAY;
        if (unlisted && m.listed !== null) m.listed = null;
        if (unlisted) cost += 1;
        cost += 1; // ZRANGE oldest
        let oldest: number | undefined;
        for (const s of m.score.values()) if (oldest === undefined || s < oldest) oldest = s;
        if (oldest !== undefined) {
          let next = oldest + H;
          if (!unlisted) next = Math.min(next, activity! + 2 * DAY);
          if (full) next = t;
          m.due = next;
          cost += 1;
        } else {
          // nothing left: counter, schedule and listing go
          cost += 1 + (m.compact.size === 0 ? 1 : 0) + 1 + (unlisted ? 0 : 1);
          if (m.compact.size === 0) m.seq = 0;
          m.due = null;
          m.listed = null;
          bump("trim:dropped");
        }
      }
    }
    bump("trim:forgotten", forgottenNow);
    const siteSum = [...countedRooms.values()].reduce((a, b) => a + b, 0);
    if (siteSum === 0) cost += uncounted > 0 ? 1 : 0;
    else cost += (recounted + uncounted > 0 ? 1 : 0) + (uncounted > 0 ? 1 : 0);
    if (recounted + uncounted > 0) bump("cost:site-count-changed");
    // a run visiting every due room: every room counted is among them, the sample is their sum
    if (visited.length > 0) check("trim.site-sum-is-visited-sum", t, siteSum, sum);
    if (visited.length > 0) {
      // the sample's ZREM of the site entry as the last count leaves, or its ZADD back (+1 each)
      if ((siteSum <= 0 && siteEntry) || (siteSum > 0 && !siteEntry)) cost += 1;
      siteEntry = siteSum > 0;
      const todays = samples.filter((x) => x.t >= today);
      const high = Math.max(0, ...todays.map((x) => x.online));
      cost += 1 + (sum > high ? 1 : 0) + (todays.length === 0 ? 1 : 0);
      if (sum > high || todays.length === 0) plain = false;
      if (sum > high && todays.length > 0) bump("cost:site-peak-raised(+1)");
      samples.push({ t, online: sum });
    }
    // leave marks of ids never mapped, listed with the due rooms: EVALSHA, an HMGET each, an HDEL
    // of each mark whose id is still unmapped, one ZREM
    const dueMarks = [...unmappedMarks].filter(([, dropAt]) => dropAt <= t);
    let marksWarm = true;
    if (dueMarks.length > 0) {
      cost += 2 + dueMarks.length;
      plain = false;
      for (const [key] of dueMarks) {
        unmappedMarks.delete(key);
        const [room, id] = key.split("\n") as [string, string];
        const m = model.get(room)!;
        if (!m.compact.has(id) && m.lastLeave.has(id)) {
          cost += 1;
          m.lastLeave.delete(id);
        }
      }
      marksWarm = warmMarks;
      warmMarks = true;
      bump("trim:unmapped-marks", dueMarks.length);
    }
    lastTrimAt = t;
    const res = await job({ ...at(t), redis: jobRedis }, CONFIG);
    const after = (await statsOf(target, tag)).commands;
    const s = { commands: after - jobCommands };
    jobCommands = after;
    check("trim.rooms", t, res.rooms, visited.length);
    check("trim.online", t, res.online, sum);
    check("trim.siteOnline", t, res.siteOnline, visited.length > 0 ? siteSum : null);
    check("trim.forgotten", t, res.forgotten, forgottenNow);
    // The first run of each kind loads its scripts (EVALSHA misses, then EVAL): not counted.
    const warm = visited.length > 0 ? warmTrim : warmDue;
    if (visited.length > 0) warmTrim = true;
    else warmDue = true;
    if (warm && marksWarm) {
      if (visited.length === 0 && dueMarks.length === 0) check("cost:trim.nothing-due", t, s.commands, 2);
      else if (plain) check("cost:trim.plain", t, s.commands, cost);
      else check("cost:trim", t, s.commands, cost);
    }
    bump(visited.length > 0 ? "trim" : "trim:nothing-due");
  }
  const snapshot = (f: DayFig) => ({ peak: f.peak, peakAt: f.peakAt, active: f.au.size, new: f.nu });

  // --- reads --------------------------------------------------------------------------------
  async function readAll(t: number, room: string) {
    const m = model.get(room)!;
    const today = dayStart(t);
    const tf = m.days.get(today);
    const s = await stats(at(t), room, T_OPT);
    check("stats.online", t, s.online, countOnline(m, t));
    check("stats.activeToday", t, s.activeToday, tf?.au.size ?? 0);
    check("stats.newToday", t, s.newToday, tf?.nu ?? 0);
    // ids online at 00:00 not yet counted: before the day's first run, or within the window's first runs
    // (pending, by design), or after them
    const pending = t - today <= 2 * MINUTE || lastTrimAt < today;
    const carry = tf?.carryUncounted ? (pending ? "~carry-pending" : "~carry-uncounted") : "";
    if (m.late) {
      const p = sweepPeak(m, today);
      check("stats.peakToday≤true(lag)", t, s.peakToday <= p.peak, true);
      if (s.peakToday !== p.peak) bump("lag:peak-read-low");
    } else {
      check(`stats.peakToday${carry}`, t, s.peakToday, tf?.peak ?? 0);
      check(`stats.peakAt${carry}`, t, s.peakAt, tf?.peakAt ?? null);
    }
    // Yesterday (live, its bitmap) and an older day (the ring of past days).
    for (const back of [1, int(2, 9)]) {
      const from = today - back * DAY;
      if (from < D0) continue;
      const d = await presence.day(at(t), room, iso(from), T_OPT);
      const f = m.days.get(from);
      const kind = back === 1 ? "yesterday" : "archived";
      let want: { peak: number; peakAt: number | null; active: number; new: number } | null = {
        peak: f?.peak ?? 0,
        peakAt: f?.peakAt ?? null,
        active: f?.au.size ?? 0,
        new: f?.nu ?? 0,
      };
      const label = f?.carryUncounted ? "~carry-uncounted" : "";
      // the ring holds a record older than the day's end though a run visited the room when it ended
      const ring = m.ring.get(from);
      const stale =
        back > 1 &&
        hasData(f) &&
        (f!.idleVisit || f!.nextHourVisit) &&
        ring &&
        !f!.carryUncounted &&
        JSON.stringify(ring) !== JSON.stringify(snapshot(f!))
          ? "~stale-record"
          : "";
      if (back > 1 && hasData(f) && !f!.idleVisit && !f!.nextHourVisit) {
        // docs: "a day is kept only if the trim job ran when it ended for that room": no run did
        want = null;
        bump("day.archived:lost-documented");
      }
      if (back > 1 && hasData(f)) bump("day.archived:with-data");
      if (want === null) continue;
      if (m.late) {
        const p = sweepPeak(m, from);
        check(`day.${kind}.peak≤true(lag)`, t, d.peak <= p.peak, true);
        if (d.peak !== p.peak) bump("lag:peak-read-low");
      } else {
        check(`day.${kind}.peak${label}${stale}`, t, d.peak, want.peak);
        check(`day.${kind}.peakAt${label}${stale}`, t, d.peakAt, want.peakAt);
      }
      check(`day.${kind}.active${stale}`, t, d.active, want.active);
      check(`day.${kind}.new${stale}`, t, d.new, want.new);
    }
    // Members, paged; now and then members of the first page heartbeat between pages (they move to the
    // end: docs, "may be listed twice but is never skipped").
    const limit = countOnline(m, t) < 60 ? 7 : pick([97, 333, 1000]);
    const want = [...m.score].filter(([, sc]) => sc >= t - T).map(([id, lastSeen]) => ({ id, lastSeen }));
    const moving = want.length > limit && rand() < 0.25;
    const listed: { id: string; lastSeen: number }[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 200; page += 1) {
      const p = await members(at(t), room, { ...T_OPT, limit, cursor });
      listed.push(...p.members);
      if (p.nextCursor === null) break;
      cursor = p.nextCursor;
      if (moving && page === 0) {
        const movers = p.members.filter(() => rand() < 0.3).map((x) => x.id);
        if (movers.length > 0) await doHeartbeat(room, movers, t);
        bump("members:moved", movers.length);
      }
    }
    const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : 1);
    if (moving) {
      // every id online throughout is listed; an id twice only when it moved
      const got = new Set(listed.map((x) => x.id));
      check("members.moving.none-skipped", t, want.filter((x) => !got.has(x.id)).length, 0);
      check("members.moving.no-strangers", t, [...got].filter((id) => !m.score.has(id)).length, 0);
    } else {
      check("members.set", t, [...listed].sort(byId), want.sort(byId));
      check(
        "members.order",
        t,
        listed.every((x, i) => i === 0 || listed[i - 1]!.lastSeen <= x.lastSeen),
        true,
      );
    }
    bump("members.listed", listed.length);
    // Today as a day (`?day=` today): the same figures as the room's.
    const d = await presence.day(at(t), room, iso(today), T_OPT);
    const s2 = await stats(at(t), room, T_OPT);
    check("day.today", t, [d.peak, d.peakAt, d.active, d.new], [s2.peakToday, s2.peakAt, s2.activeToday, s2.newToday]);
    // History of the last 1..24 h.
    const hours = pick([1, 6, 24, 24]);
    const h = await history(at(t), room, hours);
    const low = (Math.floor((t - hours * HOUR) / MINUTE) + 1) * MINUTE;
    const wantPoints = [...m.points]
      .filter(([minute]) => minute >= low && minute <= t)
      .sort((a, b) => a[0] - b[0])
      .map(([minute, online]) => ({ at: minute, online }));
    check("history", t, h.points, wantPoints);
    bump("history.points", wantPoints.length);
    if (wantPoints.some((p) => p.at < today)) bump("history:across-midnight");
    bump("reads");
  }

  async function readSite(t: number) {
    const today = dayStart(t);
    const tot = await total(at(t));
    const todays = samples.filter((x) => x.t >= today);
    const latest = samples[samples.length - 1];
    const want = latest && latest.t >= today - DAY ? { online: latest.online, at: latest.t } : { online: 0, at: null };
    check("total.online", t, tot.online, want.online);
    check("total.onlineAt", t, tot.onlineAt, want.at);
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
    for (const rm of model.values()) for (const id of rm.days.get(today)?.au ?? []) distinct.add(id);
    check("total.activeToday≈", t, Math.abs(tot.activeToday - distinct.size) <= 1 + distinct.size * 0.03, true);
    // The room list: the registry the docs describe (activity, refreshed hourly; gone two days after quiet).
    const list = await rooms(at(t));
    const wantRooms = [...model.values()]
      .filter((m) => m.listed !== null)
      // equal activity (the same hourly run refreshed both): Redis's reverse order of names
      .sort((a, b) => b.listed! - a.listed! || (a.name < b.name ? 1 : -1))
      .map((m) => m.name);
    check("rooms.set", t, [...list.rooms].sort(), [...wantRooms].sort());
    check("rooms.order", t, list.rooms.join(), wantRooms.join());
    // the same list two rooms a page: one pass lists each once
    const paged: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i += 1) {
      const p = await rooms(at(t), { limit: 2, cursor });
      paged.push(...p.rooms);
      if (p.nextCursor === null) break;
      cursor = p.nextCursor;
    }
    check("rooms.paged", t, paged.join(), wantRooms.join());
  }

  // --- the schedule -------------------------------------------------------------------------
  type Ev = { t: number; kind: "beat" | "read" | "site"; room: string; ids?: string[]; at?: number; leaves?: string[] };
  const events: Ev[] = [];
  const windowsOf = (room: string, d: number): [number, number][] => {
    const day = D0 + d * DAY;
    const w: [number, number][] = [];
    const span = () => (20 + int(0, 70)) * MINUTE;
    if (room === "night") {
      if (d > 0) w.push([day - 40 * MINUTE, day + 35 * MINUTE]);
    } else if (room === "sleepy") {
      // its first session ends a minute before midnight, the cron down (outage below): nothing of the next day
      if (d === 0) w.push([day + DAY - 50 * MINUTE, day + DAY - MINUTE]);
      if (d >= 4) w.push([day + 10 * HOUR + int(0, 600) * MINUTE, 0]);
    } else if (room === "lag") w.push([day + 9 * HOUR + int(0, 700) * MINUTE, 0]);
    else {
      for (let i = 0; i < int(1, 2); i += 1) w.push([day + 7 * HOUR + int(0, 900) * MINUTE, 0]);
      // hall often runs across midnight, with an earlier session the same day
      if (room === "hall" && rand() < 0.6) w.push([day + DAY - int(5, 30) * MINUTE, 0]);
    }
    // the lag room's sessions are short: its heartbeats come every few seconds, so that late ones overtake others
    return w.map(([a, b]) => [a, b || a + (room === "lag" ? 25 * MINUTE : span())]);
  };
  for (const r of ROOMS) {
    const pool = pools.get(r.name)!;
    for (let d = 0; d < DAYS; d += 1) {
      for (const [from, to] of windowsOf(r.name, d)) {
        const present = new Set<string>();
        let t = from;
        while (t < to) {
          // joins, silent drops, explicit leaves
          const joins = int(0, Math.ceil(pool.length / 25));
          for (let i = 0; i < joins && present.size < 450; i += 1) present.add(pick(pool));
          const leaves: string[] = [];
          for (const id of [...present]) {
            const x = rand();
            if (x < 0.03) present.delete(id);
            else if (x < 0.035 && !r.late && leaves.length < 1) {
              present.delete(id);
              leaves.push(id);
            }
          }
          if (present.size > 0) {
            const lag = r.late && rand() < 0.3 ? int(1, 30_000) : 0;
            events.push({ t: t + lag, kind: "beat", room: r.name, ids: [...present], at: t, leaves });
          }
          if (rand() < 0.05) events.push({ t: t + int(1, 20_000), kind: "read", room: r.name });
          // a silence over the timeout now and then: everyone is offline, the room comes back active
          t += rand() < 0.04 ? int(150, 400) * 1000 : r.late ? int(6, 30) * 1000 : int(30, 110) * 1000;
        }
        events.push({ t: to + int(0, 10) * MINUTE, kind: "read", room: r.name });
      }
    }
  }
  // a flash crowd in hall once a day: 1,000 ids in one heartbeat (the batch limit)
  for (let d = 0; d < DAYS; d += 1) {
    const from = int(0, 300);
    const ids = pools.get("hall")!.slice(from, from + 1000);
    events.push({ t: D0 + d * DAY + int(7, 22) * HOUR + int(0, 3599) * 1000, kind: "beat", room: "hall", ids, at: 0 });
  }
  for (const ev of events) if (ev.kind === "beat" && ev.at === 0) ev.at = ev.t;
  // reads at quiet times too, and of the whole site
  for (let t = D0 + 8 * HOUR; t < D0 + (DAYS + 2.5) * DAY; t += int(40, 200) * MINUTE) {
    events.push({ t, kind: "read", room: pick(ROOMS).name });
    events.push({ t: t + 1, kind: "site", room: "" });
  }
  for (let d = 1; d <= DAYS + 2; d += 1) {
    // just after midnight: before and in the carry window, and in the first hour
    events.push({ t: D0 + d * DAY + int(5, 100) * 1000, kind: "site", room: "" });
    events.push({ t: D0 + d * DAY + int(3, 50) * MINUTE, kind: "read", room: pick(["hall", "night"]) });
  }
  events.sort((a, b) => a.t - b.t);
  // Outages: the cron is down; three across midnight (one over the whole first hour).
  const outages: [number, number][] = [
    [D0 + DAY - 3 * MINUTE, D0 + DAY + 25 * MINUTE],
    [D0 + 2 * DAY + 11 * HOUR, D0 + 2 * DAY + 15 * HOUR],
    [D0 + 3 * DAY - 10 * MINUTE, D0 + 3 * DAY + 80 * MINUTE],
    [D0 + 4 * DAY + 3 * HOUR, D0 + 4 * DAY + 9 * HOUR],
    [D0 + 5 * DAY - 2 * MINUTE, D0 + 5 * DAY + 4 * MINUTE],
    [D0 + 6 * DAY + 14 * HOUR, D0 + 6 * DAY + 16 * HOUR],
  ];
  const down = (t: number) => outages.some(([a, b]) => t >= a && t < b);

  let e = 0;
  const end = D0 + (DAYS + 2.5) * DAY;
  for (let minute = D0 + 6 * HOUR; minute < end; minute += MINUTE) {
    const runAt = minute + int(0, 58_000);
    while (e < events.length && events[e]!.t < runAt) {
      const ev = events[e++]!;
      crossMidnight(ev.t);
      if (ev.kind === "beat") {
        for (const id of ev.leaves ?? []) await doLeave(ev.room, id, ev.at!);
        await doHeartbeat(ev.room, ev.ids!, ev.at!);
      } else if (ev.kind === "read") await readAll(ev.t, ev.room);
      else await readSite(ev.t);
    }
    crossMidnight(runAt);
    if (down(runAt)) {
      bump("trim:down");
      continue;
    }
    // The cron runs every minute; a run with nothing due changes nothing, so most are left out (a few
    // are made, for their cost), which keeps the run short.
    const anyDue = [...model.values()].some((m) => m.due !== null && m.due <= runAt);
    if (!anyDue && rand() > 0.01) continue;
    await doTrim(runAt);
    if (rand() < 0.04) await doTrim(runAt + int(1, 1000)); // twice in the minute
  }
  return { mismatches, counts };
}

function summary(mismatches: Mismatch[]): Record<string, { n: number; first: string }> {
  const out: Record<string, { n: number; first: string }> = {};
  for (const x of mismatches) {
    const o = (out[x.kind] ??= { n: 0, first: `${new Date(x.at).toISOString()} ${x.detail}` });
    o.n += 1;
  }
  return out;
}

let run: Promise<RunResult> | undefined;
const once = () => (run ??= runModel(SEED));
/** Mismatches of the two findings pinned below (the model labels them), and reads in the first 2 minutes
 * after midnight, before any run or heartbeat counted the ids online at 00:00 (docs: the window's runs do). */
const isFinding = (kind: string) => kind.includes("~stale-record") || kind.includes("~carry-uncounted");
const isPending = (kind: string) => kind.includes("~carry-pending");

describe("presence against a model over 6 days and 2.5 of trim runs, 5 rooms, thousands of ids", () => {
  it(
    "online, AU, NU, PCU (today, yesterday, kept days), members, history, _total, room list, forgetting: as the docs say",
    { timeout: 120_000 },
    async () => {
      const { mismatches, counts } = await once();
      // the run did exercise what it claims to
      expect(counts["heartbeat:new-ids"]).toBeGreaterThan(2500);
      expect(counts["trim:forgotten"]).toBe(counts["heartbeat:new-ids"]); // every id, once past the horizon
      expect(counts["trim:dropped"]).toBeGreaterThanOrEqual(4); // rooms with nothing left, counters restarted
      expect(counts["heartbeat:late"]).toBeGreaterThan(20);
      expect(counts["leave"]).toBeGreaterThan(500);
      expect(counts["trim:idle-visit"]).toBeGreaterThan(200);
      expect(counts["trim:down"]).toBeGreaterThan(600);
      expect(counts["reads"]).toBeGreaterThan(200);
      expect(counts["members.listed"]).toBeGreaterThan(10_000);
      expect(counts["history:across-midnight"]).toBeGreaterThan(50);
      expect(counts["day.archived:with-data"]).toBeGreaterThan(40);
      expect(counts["checked:day.yesterday.active"]).toBeGreaterThan(150);
      expect(counts["checked:rooms.set"]).toBeGreaterThan(80);
      expect(summary(mismatches.filter((x) => !isFinding(x.kind) && !isPending(x.kind)))).toEqual({});
    },
  );

  it("trim runs: nothing due 2 commands; a plain minute 2 + 2 a chunk (+1 when a count changed) + 3 an active room + 1 (docs/costs.md)", async () => {
    const { mismatches, counts } = await once();
    expect(counts["checked:cost:trim.nothing-due"]).toBeGreaterThan(50);
    expect(counts["checked:cost:trim.plain"]).toBeGreaterThan(500);
    // every other run (the hour, the window and first hour after midnight, idle visits, forgetting,
    // drops) against the rows' notes, plus the two states docs/costs.md omitted (pinned below, now listed)
    expect(counts["checked:cost:trim"]).toBeGreaterThan(500);
    expect(counts["cost:margin-room(+2)"]).toBeGreaterThan(50);
    expect(counts["cost:site-peak-raised(+1)"]).toBeGreaterThan(20);
    expect(counts["cost:site-count-changed"]).toBeGreaterThan(100);
    expect(summary(mismatches.filter((x) => x.kind.startsWith("cost:")))).toEqual({});
  });

  // BUG (medium), the model's view of "a room back after an idle visit ... keeps the whole day" below.
  // Fixed 2026-11-27 (see there).
  it("the records of past days hold the day's figures when a run visited the room as the day ended", async () => {
    const { mismatches } = await once();
    expect(summary(mismatches.filter((x) => x.kind.includes("~stale-record")))).toEqual({});
  });

  // BUG (low), the model's view of "ids online at 00:00 count in the day's peak after a cron gap" below:
  // room sleepy's first session ends at 23:59 with 123 ids online, the cron is down over the window:
  // 2026-12-15 reads a peak of 0, live and as yesterday. Fixed 2026-11-27 (see there); reads before the
  // day's first run stay pending (nothing can count them earlier).
  it("the day's peak counts the ids online at 00:00 also after a cron gap over the window", async () => {
    const { mismatches } = await once();
    expect(summary(mismatches.filter((x) => x.kind.includes("~carry-uncounted")))).toEqual({});
  });
});

// ---------------------------------------------------------------------------------------------
// What the model found, pinned
// ---------------------------------------------------------------------------------------------

/** A context at any time on a fresh prefix, through a client whose commands are counted (tag). */
function counted(label: string) {
  const tag = `rv11${label}${Math.random().toString(36).slice(2, 6)}`;
  const redis = createRedis({ url: target.url, token: `${target.token}.${tag}` });
  const { prefix } = lib.ctx(D0, label);
  const at = (now: number): Ctx => ({ redis, prefix, now });
  const commands = async <R>(fn: () => Promise<R>): Promise<{ value: R; commands: number }> => {
    await resetStats(target, tag);
    const value = await fn();
    return { value, commands: (await statsOf(target, tag)).commands };
  };
  return { at, commands };
}

describe("a cron gap over the window after midnight", () => {
  // BUG (medium): the catch-up of the first hour after midnight (review 7) keeps yesterday only
  // "for a room whose ring slot does not hold it yet". A room that went idle earlier yesterday has
  // a record of that visit in its slot; when it came back later that day and was active over
  // midnight, and the cron missed the window (here down 23:58:10 to 00:20:10), the catch-up run
  // finds the slot holding yesterday and keeps the stale record: AU and NU of the earlier session
  // only, the later one's ids and peak gone for good once the day is two days old, though the trim
  // job did run in the first hour after midnight (docs/presence.md: "a day is kept only if the trim
  // job ran when it ended for that room (going idle, or the first hour after midnight)"). The model
  // run above meets it for 2026-12-14 (AU 120 kept of 197, peak 105 of 143; other seeds alike).
  // Not an artefact of the outage's length: 25 minutes over midnight is enough. Smallest fix: the
  // heartbeat that brings an idled room back already clears the idle mark (IDLED_FLAG) on that day's
  // bitmap, so a record is current only while the mark is set: the catch-up should read yesterday's
  // last-heartbeat field with the slot (one BITFIELD GET of yesterday's header, +1 a room in those
  // runs, or only when the slot holds yesterday) and archive again when the mark is clear.
  // Fixed 2026-11-27 (trim-script.ts): the catch-up reads yesterday's header instead of the slot (the
  // same one command in those runs) and rewrites the record when the mark is clear, then sets it; the
  // window's first run sets it after its record (+1 once a room and day), so only stale records pay.
  it("a room back after an idle visit and active over midnight keeps the whole day", async () => {
    const { at } = counted("stale");
    const job = createTrimJob();
    const mid = D0 + DAY;
    await heartbeat(at(D0 + 10 * HOUR), "r", ["a", "b"], T_OPT);
    await job(at(D0 + 10 * HOUR + 30_000), CONFIG);
    await job(at(D0 + 10 * HOUR + 6 * MINUTE), CONFIG); // idle: a record of {peak 2, AU 2, NU 2}
    await heartbeat(at(mid - 2 * MINUTE), "r", ["a", "c", "d", "e"], T_OPT);
    await job(at(mid - 2 * MINUTE + 10_000), CONFIG);
    await heartbeat(at(mid - 30_000), "r", ["a", "c", "d", "e"], T_OPT);
    // the cron is down from 23:58:10 to 00:20:10: the catch-up window's run
    await job(at(mid + 20 * MINUTE + 10_000), CONFIG);
    const live = await presence.day(at(mid + 21 * MINUTE), "r", iso(D0), T_OPT);
    expect(live).toMatchObject({ peak: 4, peakAt: mid - 2 * MINUTE, active: 5, new: 5 });
    for (let t = mid + HOUR; t < mid + 2 * DAY; t += HOUR) await job(at(t + 10_000), CONFIG);
    const kept = await presence.day(at(mid + 2 * DAY), "r", iso(D0), T_OPT);
    expect(kept).toMatchObject({ peak: 4, peakAt: mid - 2 * MINUTE, active: 5, new: 5 });
  });

  // BUG (low): ids online at 00:00 count in the new day's peak only through the day's first
  // heartbeat or a run in the window (the first max(timeout, 2 min) after midnight); the catch-up
  // runs of the rest of the first hour keep yesterday's record but do not count them. A room whose
  // last session ended just before midnight, with the cron down over the window, shows a peak of 0
  // for the day (live and, two days on, in its record) though 4 ids were online at 00:00; docs say
  // "PCU is exact" and "Ids carried over midnight are counted at 00:00" with no such limit. Smallest
  // fix: in the catch-up branch, while today's bitmap has no heartbeat (header bits 96..127 are 0),
  // do what the window's runs do (ZCOUNT seen <00:00 - timeout> <00:00>: still exact, no last-seen
  // is after midnight yet; +1 command per room in those runs and +2 when it sets the peak), or
  // extend the window's carry step to the whole first hour.
  // Fixed 2026-11-27 as suggested, for rooms nobody is online in (a room with anyone online past the
  // window heartbeated today, which counted them): their header is read already, so no command more
  // until the count (+1, +2 when it sets the peak).
  it("ids online at 00:00 count in the day's peak after a cron gap over the window", async () => {
    const { at } = counted("carrygap");
    const job = createTrimJob();
    const mid = D0 + DAY;
    await heartbeat(at(mid - 5 * MINUTE), "r", ["a", "b", "c", "d"], T_OPT);
    await job(at(mid - 5 * MINUTE + 10_000), CONFIG);
    await heartbeat(at(mid - 30_000), "r", ["a", "b", "c", "d"], T_OPT);
    // the cron is down from 23:55:10 to 00:20:10, no heartbeat after midnight
    await job(at(mid + 20 * MINUTE + 10_000), CONFIG);
    const s = await stats(at(mid + 21 * MINUTE), "r", T_OPT);
    expect({ peakToday: s.peakToday, peakAt: s.peakAt }).toEqual({ peakToday: 4, peakAt: mid });
    for (let t = mid + HOUR; t < mid + 2 * DAY; t += HOUR) await job(at(t + 10_000), CONFIG);
    const kept = await presence.day(at(mid + 2 * DAY + HOUR), "r", iso(mid), T_OPT);
    expect(kept).toMatchObject({ peak: 4, peakAt: mid });
  });

  it("the same gap with the room's one session: yesterday's record is kept (holds)", async () => {
    const { at } = counted("gapone");
    const job = createTrimJob();
    const mid = D0 + DAY;
    await heartbeat(at(mid - 2 * MINUTE), "r", ["a", "c", "d", "e"], T_OPT);
    await job(at(mid - 2 * MINUTE + 10_000), CONFIG);
    await heartbeat(at(mid - 30_000), "r", ["a", "c"], T_OPT);
    await job(at(mid + 20 * MINUTE + 10_000), CONFIG);
    for (let t = mid + HOUR; t < mid + 2 * DAY; t += HOUR) await job(at(t + 10_000), CONFIG);
    const kept = await presence.day(at(mid + 2 * DAY), "r", iso(D0), T_OPT);
    expect(kept).toMatchObject({ peak: 4, peakAt: mid - 2 * MINUTE, active: 4, new: 4 });
  });
});

describe("the trim job's commands (docs/costs.md, Presence)", () => {
  // 7 and 34 until the site-wide count kept each room's last count (+1 HMGET of `_online` a chunk)
  it("a run with nothing due: 2; one active room in a plain minute: 8; ten: 35 (holds)", async () => {
    const { at, commands } = counted("cost");
    const job = createTrimJob();
    const t = D0 + 9 * HOUR + 5 * MINUTE;
    await job(at(t - MINUTE), CONFIG); // loads the scripts
    expect((await commands(() => job(at(t), CONFIG))).commands).toBe(2);
    await heartbeat(at(t), "r0", ["a"], T_OPT);
    await job(at(t + 10_000), CONFIG); // the day's first sample, which raises the day's highest
    await heartbeat(at(t + 20_000), "r0", ["a"], T_OPT);
    expect((await commands(() => job(at(t + MINUTE), CONFIG))).commands).toBe(8);
    for (let i = 1; i < 10; i += 1) await heartbeat(at(t + MINUTE + 1000), `r${i}`, ["a"], T_OPT);
    await job(at(t + MINUTE + 10_000), CONFIG); // a sample of 10: the day's highest rises
    expect((await commands(() => job(at(t + 2 * MINUTE), CONFIG))).commands).toBe(35);
  });

  // DOC GAP (low): docs/costs.md prices an active room at 3 commands a run (rows 18 and 20: ZCOUNT,
  // ZADD of the point, ZRANGEBYSCORE) and the site-wide sample at 1 a run; the model run finds two
  // states it does not list (164 and 120 runs of ~1,900), and no other run differs from the rows' notes:
  // (1) a room active only through its margin (nobody online, last heartbeat within timeout + 2 min:
  // docs/presence.md calls it active and it gets its point of 0) costs 5: the script reads its last
  // activity (BITFIELD, ZRANGE) before it knows it is still active; two runs per session end. (2) A
  // run whose sample raises the day's highest site-wide sample costs 1 more (BITFIELD SET of the peak
  // and its time): every run of a day's rising hours, not only the day's first sample (row 21).
  // Smallest fix: two rows/notes in test/costs/presence.ts (then `npm run costs`): "1 room within the
  // 2 minutes after its ids timed out: 9" and "+1 when the sample raises the day's highest".
  // Fixed 2026-11-27: the two rows (trimMarginRoom, trimSiteRaised) are in docs/costs.md.
  it("a run with a room in its 2-minute margin, and one raising the site-wide peak, cost what docs/costs.md lists", async () => {
    const { at, commands } = counted("costgap");
    const job = createTrimJob();
    const t = D0 + 9 * HOUR + 5 * MINUTE;
    await heartbeat(at(t), "r", ["a"], T_OPT);
    await job(at(t + 10_000), CONFIG); // loads the scripts; the day's first sample
    await heartbeat(at(t + 20_000), "r", ["a", "b"], T_OPT);
    const rising = await commands(() => job(at(t + MINUTE), CONFIG)); // sample 2 > 1
    // a and b timed out at t + 140 s; the room is active until t + 260 s
    const margin = await commands(() => job(at(t + 3 * MINUTE), CONFIG));
    expect(margin.value).toMatchObject({ rooms: 1, idle: 0, online: 0 });
    expect((await history(at(t + 3 * MINUTE + 1), "r", 1)).points).toContainEqual({ at: t + 3 * MINUTE, online: 0 });
    expect({ rising: rising.commands, margin: margin.commands }).toEqual({
      rising: costRows.trimSiteRaised.commands, // 10
      margin: costRows.trimMarginRoom.commands, // 11
    });
  });
});

describe("lifetimes and the ring of past days over long horizons (docs/presence.md, Redis keys)", () => {
  it("every key's deadline is the documented one, set relative to the injected time (holds)", async () => {
    const { at } = counted("ttl");
    const { prefix } = at(0);
    const key = (...parts: string[]) => [prefix, "presence", ...parts].join(":");
    const pttl = async (k: string) => Number(await command<number>(target, "PTTL", k));
    const job = createTrimJob();
    const t = D0 + 10 * HOUR + 17_000;
    await heartbeat(at(t), "r", ["a"], T_OPT);
    const endOfTomorrow = dayStart(t) + 2 * DAY - t;
    const near = (got: number, want: number) => expect(Math.abs(got - want)).toBeLessThanOrEqual(1500);
    near(await pttl(key("r", "daily", dayLabel(t))), endOfTomorrow);
    near(await pttl(key("_au", dayLabel(t))), endOfTomorrow);
    near(await pttl(key("r", "history")), 26 * HOUR);
    for (const k of ["seen", "ids", "seq"]) expect(await pttl(key("r", k))).toBe(-1); // no TTL: the horizon
    await job(at(t + 30_000), CONFIG);
    near(await pttl(key("_total", dayLabel(t))), endOfTomorrow - 30_000);
    await job(at(t + 10 * MINUTE), CONFIG); // idle: history 25 h, the day's record
    near(await pttl(key("r", "history")), 25 * HOUR);
    near(await pttl(key("r", "days")), 401 * DAY);
  });

  it("a record 400 days old is read back; the ring's slot is reused only 401 days on (holds)", async () => {
    const { at } = counted("ring");
    const job = createTrimJob();
    const day0 = D0 + 2 * DAY;
    const session = async (from: number, ids: string[]) => {
      await heartbeat(at(from), "r", ids, T_OPT);
      await job(at(from + 30_000), CONFIG);
      await job(at(from + 10 * MINUTE), CONFIG); // idle: the day's record
    };
    await session(day0 + 9 * HOUR, ["a", "b"]);
    await session(day0 + DAY + 9 * HOUR, ["a", "b", "c"]);
    // 400 days on: both days read from the ring (ids forgotten long since: the room was dropped)
    const later = day0 + 400 * DAY + 9 * HOUR;
    await job(at(later - HOUR), CONFIG);
    expect(await presence.day(at(later), "r", iso(day0), T_OPT)).toMatchObject({ peak: 2, active: 2, new: 2 });
    // a session on day0 + 401 writes the slot of day0: day0 + 1 keeps its own, 400 days old by then
    await session(day0 + 401 * DAY + 9 * HOUR, ["z"]);
    const now = at(day0 + 401 * DAY + 12 * HOUR);
    expect(await presence.day(now, "r", iso(day0 + DAY), T_OPT)).toMatchObject({ peak: 3, active: 3, new: 1 });
    await expect(presence.day(now, "r", iso(day0), T_OPT)).rejects.toThrow();
    // the room came back after being dropped: its counter restarted, z is new, AU exact
    expect(await stats(now, "r", T_OPT)).toMatchObject({ activeToday: 1, newToday: 1, peakToday: 1 });
  });
});
