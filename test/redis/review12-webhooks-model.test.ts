/**
 * Review 12: webhooks and signals against an exact model, on real Redis (local Upstash server), a
 * real receiver (node:http, below) and the QStash stand-in (test/helpers/webhook-receiver.ts), every
 * time injected.
 *
 * The model test drives seeded random minutes of presence heartbeats, leaderboard score writes and
 * trending records (presence.peak, leaderboard.leader, trending.entered/left hourly, trending.rising
 * over 7 streams that the runs read 5 at a time), webhook creates / replaces (URL, secret, events, filter, n) / deletes, the
 * minute and hourly jobs (sometimes missed, sometimes twice at once: a cron beside a QStash retry),
 * and a receiver that fails deterministically (a hash of the attempt; some URLs always 500). A
 * model written from docs/webhooks.md says, for each job run, which attempts reach which URL with
 * which body and status, and at the end each webhook's delivery log: each event delivered once per
 * webhook life (none lost once queued, none twice), retried after 1, 2, 4 ... 64 minutes, given
 * up after 8 attempts, dropped when its webhook is deleted, sent to the URL and signed with the
 * secret of the webhook at the time of the attempt.
 */
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mulberry32 } from "../../dev/prng.ts";
import { readConfig } from "../../src/config.ts";
import type { Ctx } from "../../src/context.ts";
import * as leaderboards from "../../src/leaderboards/index.ts";
import * as presence from "../../src/presence/index.ts";
import { jobs as presenceJobs } from "../../src/presence/jobs.ts";
import { DAY, HOUR, MINUTE, dayStart, hourIndex } from "../../src/time.ts";
import * as trending from "../../src/trending/index.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { command } from "../helpers/upstash-rest.ts";

const lib = libraryTest("review12-wh");
const config = readConfig({ WEBHOOKS_ALLOW_LOCAL_HTTP: "true" });
const direct: webhooks.DeliverySettings = { allowLocalHttp: true, timeoutMs: 3000 };
const RET = { retentionHours: 50 };

// ---------------------------------------------------------------------------------------------
// The receiver: records every request; fails (500) a URL whose path says `-dead`, and otherwise
// 3 attempts in 10, chosen by a hash of what is sent and how often it was sent before, so the
// outcome does not depend on the order of the parallel deliveries.

interface Got {
  path: string;
  headers: Record<string, string>;
  body: string;
  status: number;
}

function fnv(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** JSON with sorted keys: the model and the receiver name an event's content the same way. */
function canon(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canon).join(",")}]`;
  if (value !== null && typeof value === "object")
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canon((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(value);
}

const seenTimes = new Map<string, number>();
/** Whether the receiver refuses this attempt (shared by the receiver and the model). */
function refuses(path: string, type: string, data: unknown): boolean {
  const key = `${path}|${type}|${canon(data)}`;
  const nth = seenTimes.get(key) ?? 0;
  seenTimes.set(key, nth + 1);
  if (path.includes("-dead")) return true;
  return fnv(`${key}|${nth}`) % 10 < 3;
}
const modelSeen = new Map<string, number>();
function modelRefuses(path: string, type: string, data: unknown): boolean {
  const key = `${path}|${type}|${canon(data)}`;
  const nth = modelSeen.get(key) ?? 0;
  modelSeen.set(key, nth + 1);
  if (path.includes("-dead")) return true;
  return fnv(`${key}|${nth}`) % 10 < 3;
}

let server: Server;
let base: string;
const received: Got[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers[k] = v;
      const path = req.url ?? "";
      let status = 200;
      if (path.startsWith("/m/")) {
        const parsed = JSON.parse(body) as { type: string; data: unknown };
        status = refuses(path, parsed.type, parsed.data) ? 500 : 200;
      }
      received.push({ path, headers, body, status });
      res.writeHead(status, { "content-type": "text/plain" }).end("ok");
    });
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((ok) => server.close(ok));
});

/** An event id as docs/webhooks.md describes it: a digest of type, subject and key. */
const eventId = (type: string, subject: string, key: string) =>
  `evt_${createHash("sha1").update(`${type}\n${subject}\n${key}`).digest("hex").slice(0, 32)}`;

const bytes = (a: string, b: string) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

// ---------------------------------------------------------------------------------------------
// The model.

type Kind = "stream" | "room" | "board" | "all" | "rising";
interface Row {
  member: string;
  rank: number;
  count: number;
}
interface Life {
  name: string;
  life: number;
  createdAt: number;
  path: string;
  secret: string;
  events: string[];
  filter: Record<string, string> | null;
  n: number;
  threshold: number | null;
  peak: { day: string; peak: number } | null;
  trending: { hour: number; told: Row[] } | null;
  /** Expected delivery log, newest first. */
  log: { at: number; type: string; attempt: number; outcome: string; retryAt?: number }[];
}
interface Body {
  id: string | null;
  type: string;
  at: number;
  data: Record<string, unknown>;
}
interface Delivery {
  key: string;
  life: Life;
  body: Body;
  attempts: number;
  due: number;
}
interface Attempt {
  path: string;
  type: string;
  data: string;
  status: number;
  at: number;
  id: string | null;
  secret: string;
  delivery: string | null;
}

class Model {
  lives = new Map<string, Life>();
  pending = new Map<string, Delivery>();
  counts = new Map<string, Map<number, Map<string, number>>>();
  boards = new Map<string, { scores: number[]; told: number | null }>();
  /** Attempts the runs since the last `take()` should have made. */
  attempts: Attempt[] = [];
  leaderSeq = 0;
  /** trending.rising told (`<event id>:<name>:<createdAt>`, as `_recent`), and the streams written. */
  recent = new Set<string>();
  streams = new Set<string>();
  /** webhooks:_risingCursor (src/webhooks/rising.ts): what the rising runs read in all. */
  risingCursor = 0;
  /** What the run exercised, so a seed that exercises nothing fails. */
  stats = {
    dropped: 0,
    failed: 0,
    retried: 0,
    delivered: {} as Record<string, number>,
    deletes: 0,
    replaces: 0,
    resets: 0,
    turns: 0,
  };

  topOf(stream: string, hour: number, n: number): Row[] {
    return [...(this.counts.get(stream)?.get(hour) ?? [])]
      .sort((x, y) => y[1] - x[1] || bytes(x[0], y[0]))
      .slice(0, n)
      .map(([member, count], i) => ({ member, rank: i + 1, count }));
  }

  queue(life: Life, key: string, body: Body, now: number) {
    const id = `${key}:${life.name}`;
    const waiting = this.pending.get(id);
    if (waiting && waiting.life === life) return;
    this.pending.set(id, { key: id, life, body, attempts: 0, due: now });
  }

  record(stream: string, hour: number, member: string, count: number) {
    this.streams.add(stream);
    let hours = this.counts.get(stream);
    if (!hours) this.counts.set(stream, (hours = new Map()));
    let members = hours.get(hour);
    if (!members) hours.set(hour, (members = new Map()));
    members.set(member, (members.get(member) ?? 0) + count);
  }

  /** A score write by `player` (index, joined in that order) of +by: a new #1 is told to the subscribers. */
  score(board: string, player: number, by: number, now: number) {
    const b = this.boards.get(board)!;
    b.scores[player]! += by;
    // #1: highest score, then the earlier joiner ('joined', the default)
    let top = 0;
    for (let i = 1; i < b.scores.length; i++) if (b.scores[i]! > b.scores[top]!) top = i;
    if (top !== player || b.told === player) return;
    const data = {
      board,
      player: `p${player}`,
      score: b.scores[player],
      previous: b.told === null ? null : `p${b.told}`,
      season: null,
    };
    b.told = player;
    const key = `leader#${++this.leaderSeq}`;
    for (const life of this.lives.values()) {
      if (!life.events.includes("leaderboard.leader")) continue;
      if (life.filter && life.filter.board !== board) continue;
      this.queue(life, key, { id: null, type: "leaderboard.leader", at: now, data }, now);
    }
  }

  detectTrending(now: number) {
    const hour = hourIndex(now) - 1;
    for (const life of [...this.lives.values()].sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const wantsE = life.events.includes("trending.entered");
      const wantsL = life.events.includes("trending.left");
      if (!(wantsE || wantsL) || !life.filter?.stream) continue;
      if ((life.trending?.hour ?? -1) >= hour) continue;
      const stream = life.filter.stream;
      const nowTop = this.topOf(stream, hour, life.n);
      const before = life.trending?.told ?? this.topOf(stream, hour - 1, life.n);
      const inNow = new Set(nowTop.map((r) => r.member));
      const inBefore = new Set(before.map((r) => r.member));
      const entered = nowTop.filter((r) => !inBefore.has(r.member));
      const left = before
        .filter((r) => !inNow.has(r.member))
        .map((r) => ({ member: r.member, previousRank: r.rank, previousCount: r.count }));
      for (const [type, members, wants] of [
        ["trending.entered", entered, wantsE],
        ["trending.left", left, wantsL],
      ] as const) {
        if (!wants || members.length === 0) continue;
        const id = eventId(type, stream, `${life.n}\n${hour}`);
        const data = { stream, hour: hour * HOUR, n: life.n, members };
        this.queue(life, id, { id, type, at: now, data }, now);
      }
      life.trending = { hour, told: nowTop };
    }
  }

  async detectPeaks(now: number, dayOf: (room: string, start: number) => Promise<{ peak: number; peakAt: number }>) {
    const start = dayStart(now);
    const label = isoDay(start);
    const yLabel = isoDay(start - DAY);
    const rollover = now - start < webhooks.PEAK_ROLLOVER_MS;
    for (const life of this.lives.values()) {
      if (!life.events.includes("presence.peak") || !life.filter?.room) continue;
      const room = life.filter.room;
      const mark = life.peak;
      if (mark && mark.day > label) continue;
      const tell = async (dayLabel: string, dayStartMs: number, told: number) => {
        const { peak, peakAt } = await dayOf(room, dayStartMs);
        if (peak <= told) return;
        const id = eventId("presence.peak", room, `${dayLabel}\n${peak}`);
        const data = { room, day: dayLabel, peak, peakAt, previous: told };
        this.queue(life, id, { id, type: "presence.peak", at: now, data }, now);
        life.peak = { day: dayLabel, peak };
      };
      if (rollover && mark?.day !== label && life.createdAt < start)
        await tell(yLabel, start - DAY, mark?.day === yLabel ? mark.peak : 0);
      await tell(label, start, mark?.day === label ? mark.peak : 0);
    }
  }

  /**
   * trending.rising: the streams subscribed (every stream written, for a webhook without a filter),
   * 5 a run taking turns; each item of the rising read at or above the least threshold, for each
   * webhook whose filter and threshold it matches and that was not told it this hour.
   */
  async detectRising(now: number, read: (stream: string) => Promise<trending.RisingItem[]>, runs = 1) {
    const subs = [...this.lives.values()].filter((l) => l.events.includes("trending.rising"));
    if (subs.length === 0) return;
    const least = Math.min(...subs.map((l) => l.threshold!));
    const named = subs.flatMap((l) => (l.filter?.stream ? [l.filter.stream] : []));
    const all = subs.some((l) => l.filter === null) ? [...this.streams] : [];
    const streams = [...new Set([...named, ...all])].sort();
    const per = webhooks.RISING_STREAMS_PER_RUN;
    // the rotation's cursor (review 13): INCRBY'd by `per` with the registry's list (a webhook
    // without a filter) on every run, else only when the named streams are more than a turn
    // (each of the runs at once takes its own turn: the INCRBYs follow one another)
    const listing = subs.some((l) => l.filter === null);
    const turn: string[] = [];
    for (let run = 0; run < runs; run++) {
      const before = this.risingCursor;
      if (listing || streams.length > per) this.risingCursor += per;
      const start = streams.length > per ? before % streams.length : 0;
      for (const s of streams.length > per ? [...streams, ...streams].slice(start, start + per) : streams)
        if (!turn.includes(s)) turn.push(s);
    }
    if (streams.length > per) this.stats.turns += 1;
    const hour = hourIndex(now) * HOUR;
    for (const stream of turn) {
      for (const item of await read(stream)) {
        if (item.score < least) continue;
        const id = eventId("trending.rising", stream, `${new Date(hour).toISOString()}\n${item.member}`);
        const { member, count, baseline, ratio, score } = item;
        const data = { stream, hour, member, count, baseline, ratio, score };
        for (const life of subs) {
          if (life.filter && life.filter.stream !== stream) continue;
          if (life.threshold! > score) continue;
          const told = `${id}:${life.name}:${life.createdAt}`;
          if (this.recent.has(told)) continue;
          this.recent.add(told);
          this.queue(life, id, { id, type: "trending.rising", at: now, data }, now);
        }
      }
    }
  }

  /** A delivery run at `now`: the due deliveries, each one attempt. */
  deliver(now: number) {
    const due = [...this.pending.values()].filter((d) => d.due <= now);
    if (due.length > 25) throw new Error(`model: ${due.length} deliveries due at once; lower the volume`);
    for (const d of due) {
      const life = this.lives.get(d.life.name);
      if (life !== d.life) {
        this.stats.dropped += 1;
        this.pending.delete(d.key);
        continue;
      }
      d.attempts += 1;
      const refused = modelRefuses(life.path, d.body.type, d.body.data);
      this.attempts.push({
        path: life.path,
        type: d.body.type,
        data: canon(d.body.data),
        status: refused ? 500 : 200,
        at: d.body.at,
        id: d.body.id,
        secret: life.secret,
        delivery: d.body.id === null ? null : `${d.body.id}:${life.name}`,
      });
      if (!refused) {
        life.log.unshift({ at: now, type: d.body.type, attempt: d.attempts, outcome: "delivered" });
        this.stats.delivered[d.body.type] = (this.stats.delivered[d.body.type] ?? 0) + 1;
        this.pending.delete(d.key);
      } else if (d.attempts >= webhooks.MAX_ATTEMPTS) {
        life.log.unshift({ at: now, type: d.body.type, attempt: d.attempts, outcome: "failed" });
        this.stats.failed += 1;
        this.pending.delete(d.key);
      } else {
        const retryAt = now + 60_000 * 2 ** (d.attempts - 1);
        life.log.unshift({ at: now, type: d.body.type, attempt: d.attempts, outcome: "retrying", retryAt });
        this.stats.retried += 1;
        d.due = retryAt;
      }
      life.log.length = Math.min(life.log.length, webhooks.DELIVERY_LOG_SIZE);
    }
  }
}

// ---------------------------------------------------------------------------------------------

const NAMES = ["w1", "w2", "w3", "w4", "w5"];
const STREAMS = ["s1", "s2"];
/** trending.rising watches more streams than a run reads (5): the runs take turns. */
const ALL_STREAMS = ["s1", "s2", "s3", "s4", "s5", "s6", "s7"];
const ROOMS = ["r1", "r2"];
const BOARDS = ["b1", "b2"];
const PLAYERS = 5;
const POOL = ["ant", "bee", "cat", "dog", "eel", "fox"];

describe("webhooks against an exact model: random writes, webhook changes, failures, retries, duplicate runs", () => {
  const totals: Record<string, number> = {};
  for (const seed of [3, 41, 977, 2026]) {
    it(`seed ${seed}: every attempt, body, signature and log entry is the model's`, async () => {
      const rnd = mulberry32(seed);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
      // 21:40 to 00:40 UTC: three hourly comparisons and a midnight (presence.peak's rollover)
      const T0 = Date.UTC(2026, 10, 22, 21, 40);
      const ctx0 = lib.ctx(T0, `model-${seed}`);
      const at = (t: number): Ctx => ({ ...ctx0, now: t });
      const model = new Model();
      for (const board of BOARDS) {
        for (let p = 0; p < PLAYERS; p++)
          await leaderboards.join(at(T0 - HOUR + p * 1000), board, `p${p}`, { name: `p${p}` });
        model.boards.set(board, { scores: Array(PLAYERS).fill(0) as number[], told: null });
      }
      const lifeCount = new Map<string, number>();
      let version = 0;
      let mark = received.length;
      const dayOf = async (room: string, start: number, now: number) => {
        const view = await presence.day(at(now), room, isoDay(start));
        return { peak: view.peak, peakAt: view.peakAt ?? 0 };
      };

      const risingOf = async (stream: string, now: number) =>
        (
          await trending.rising(at(now), stream, {
            retentionHours: config.trendingRetentionHours,
            n: webhooks.RISING_EVENTS_PER_STREAM,
            baselineHours: Math.min(webhooks.RISING_BASELINE_HOURS, config.trendingRetentionHours),
          })
        ).items;

      /** Compares the receiver's requests since the last check with the model's attempts. */
      const check = async (label: string, runNow: number) => {
        const got = received.slice(mark);
        mark = received.length;
        const want = model.attempts;
        model.attempts = [];
        const norm = (a: { path: string; type: string; data: string; status: number }) =>
          `${a.path} ${a.type} ${a.status} ${a.data}`;
        expect(got.map((g) => norm({ ...g, ...parsed(g) })).sort(), label).toEqual(want.map(norm).sort());
        for (const g of got) {
          const body = JSON.parse(g.body) as Body;
          const w = want.find((a) => norm(a) === norm({ ...g, ...parsed(g) }))!;
          expect(body.at, label).toBe(w.at);
          if (w.id !== null) expect(body.id, label).toBe(w.id);
          else expect(body.id, label).toMatch(/^evt_[0-9a-f]{32}$/);
          expect(g.headers["edgestats-event"], label).toBe(body.type);
          expect(g.headers["edgestats-delivery"], label).toBe(`${body.id}:${g.path.slice(3).split("-")[0]}`);
          expect(
            await webhooks.verifySignature(w.secret, g.body, g.headers["edgestats-signature"] ?? "", runNow),
            `${label}: signature`,
          ).toBe(true);
        }
      };
      const parsed = (g: Got) => {
        const b = JSON.parse(g.body) as Body;
        return { type: b.type, data: canon(b.data) };
      };

      const MINUTES = 180;
      for (let m = 0; m < MINUTES; m++) {
        const t = T0 + m * MINUTE;
        const hourAgo = Math.floor(m / 60);
        // presence: ids from a pool growing through the run, so peaks keep rising
        for (const room of ROOMS) {
          if (rnd() < 0.5) {
            const ids = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => `u${Math.floor(rnd() * (3 + m / 12))}`);
            await presence.heartbeat(at(t + 10_000), room, [...new Set(ids)]);
          }
        }
        // leaderboards: a positive increment of one player
        if (rnd() < 0.5) {
          const board = pick(BOARDS);
          const p = Math.floor(rnd() * PLAYERS);
          const by = 1 + Math.floor(rnd() * 6);
          await leaderboards.changeScore(at(t + 15_000), board, `p${p}`, { by });
          model.score(board, p, by, t + 15_000);
        }
        // trending: a few hits in this hour
        if (rnd() < 0.7) {
          const stream = rnd() < 0.5 ? pick(STREAMS) : pick(ALL_STREAMS);
          const member = pick(POOL);
          const count = 1 + Math.floor(rnd() * 3 + hourAgo);
          await trending.record(at(t + 20_000), stream, [{ member, count }], RET);
          model.record(stream, hourIndex(t), member, count);
        }
        // webhook changes
        if (rnd() < 0.1 || m < NAMES.length) {
          const name = m < NAMES.length ? NAMES[m]! : pick(NAMES);
          const existing = model.lives.get(name);
          const now = t + 25_000;
          if (existing && rnd() < 0.4) {
            expect((await webhooks.remove(at(now), name)).deleted).toBe(true);
            model.lives.delete(name);
            model.stats.deletes += 1;
          } else {
            const kind =
              m < NAMES.length
                ? (["stream", "room", "board", "all", "rising"] as const)[m]!
                : pick<Kind>(["stream", "stream", "room", "room", "board", "all", "rising", "rising"]);
            const events =
              kind === "stream"
                ? pick([["trending.entered"], ["trending.left"], ["trending.entered", "trending.left"]])
                : kind === "room"
                  ? ["presence.peak"]
                  : kind === "rising"
                    ? ["trending.rising"]
                    : ["leaderboard.leader"];
            const filter: Record<string, string> | null =
              kind === "stream"
                ? { stream: pick(STREAMS) }
                : kind === "room"
                  ? { room: pick(ROOMS) }
                  : kind === "board"
                    ? { board: pick(BOARDS) }
                    : kind === "rising" && rnd() < 0.6
                      ? { stream: pick(ALL_STREAMS) }
                      : null;
            const n = kind === "stream" ? 1 + Math.floor(rnd() * 3) : 10;
            const threshold = kind === "rising" ? pick([1, 3, 6, 2.5]) : null;
            const lifeNo = existing ? existing.life : (lifeCount.get(name) ?? 0) + 1;
            lifeCount.set(name, lifeNo);
            const path = `/m/${name}-L${lifeNo}-s${seed}-v${++version}${rnd() < 0.15 ? "-dead" : ""}`;
            const secret = `secret-${seed}-${version}-${Math.floor(rnd() * 1e9)}`;
            const input: webhooks.WebhookInput = {
              url: `${base}${path}`,
              events: events as webhooks.EventType[],
              secret,
              n,
              ...(threshold !== null ? { threshold } : {}),
              ...(filter ? { filter: filter as webhooks.Filter } : {}),
            };
            const put = await webhooks.put(at(now), name, input, direct);
            expect(put.created).toBe(!existing);
            if (existing) {
              const reset = canon(existing.filter) !== canon(filter) || existing.n !== n;
              Object.assign(existing, { path, secret, events, filter, n, threshold });
              model.stats.replaces += 1;
              if (reset) {
                Object.assign(existing, { peak: null, trending: null });
                model.stats.resets += 1;
              }
            } else {
              model.lives.set(name, {
                name,
                life: lifeNo,
                createdAt: now,
                path,
                secret,
                events,
                filter,
                n,
                threshold,
                peak: null,
                trending: null,
                log: [],
              });
            }
          }
        }
        // the hourly job at minute 5 (sometimes twice at once)
        if (new Date(t).getUTCMinutes() === 5) {
          const now = t + 28_000;
          const runs = rnd() < 0.3 ? 2 : 1;
          await trending.compact(at(now), RET);
          await Promise.all(Array.from({ length: runs }, () => webhooks.trendingWebhooksJob(at(now), config)));
          model.detectTrending(now);
          model.deliver(now);
          await check(`seed ${seed} minute ${m}: hourly job`, now);
        }
        // the minute job: sometimes missed, sometimes twice at once
        const r = rnd();
        if (r >= 0.1) {
          const now = t + 30_000;
          const runs = r > 0.85 ? 2 : 1;
          // as the minute cron: the presence trim first (it records a peak carried over midnight)
          await presenceJobs.trim!(at(now), config);
          await Promise.all(Array.from({ length: runs }, () => webhooks.webhooksJob(at(now), config)));
          await model.detectPeaks(now, (room, start) => dayOf(room, start, now));
          await model.detectRising(now, (stream) => risingOf(stream, now), runs);
          const cur = await command<string | null>(lib.target, "GET", webhooks.risingCursorKey(ctx0.prefix));
          // the service's cursor is the model's (a NOSCRIPT re-send must not advance it twice)
          expect(Number(cur ?? 0), `seed ${seed} minute ${m}: rising cursor`).toBe(model.risingCursor);
          model.deliver(now);
          await check(`seed ${seed} minute ${m}: minute job`, now);
        }
        // late heartbeats, after the run: the day's last minute's peak is told by the rollover
        if (rnd() < 0.3) {
          const room = pick(ROOMS);
          await presence.heartbeat(at(t + 45_000), room, [`late${m}`, `u${Math.floor(rnd() * 4)}`]);
        }
      }
      // drain: minute runs until every delivery is settled (8 attempts take 127 minutes)
      let t = T0 + MINUTES * MINUTE;
      for (let i = 0; i < 140 && model.pending.size > 0; i++) {
        t += MINUTE;
        await presenceJobs.trim!(at(t), config);
        await webhooks.webhooksJob(at(t), config);
        await model.detectPeaks(t, (room, start) => dayOf(room, start, t));
        await model.detectRising(t, (stream) => risingOf(stream, t));
        model.deliver(t);
        await check(`seed ${seed} drain ${i}`, t);
      }
      expect(model.pending.size).toBe(0);
      // each live webhook's log is the model's: newest first (one run's attempts in any order)
      for (const life of model.lives.values()) {
        const log = (await webhooks.deliveries(at(t), life.name)).deliveries.map((e) => ({
          at: e.at,
          type: e.type,
          attempt: e.attempt,
          outcome: e.outcome as string,
          ...(e.retryAt !== undefined ? { retryAt: e.retryAt } : {}),
        }));
        for (let i = 1; i < log.length; i++) expect(log[i]!.at).toBeLessThanOrEqual(log[i - 1]!.at);
        // a full log (50) may keep part of its oldest run: compare the runs it holds whole
        const cut = log.length === webhooks.DELIVERY_LOG_SIZE ? log[log.length - 1]!.at : -1;
        const order = (xs: typeof log) =>
          xs.filter((x) => x.at > cut).sort((a, b) => b.at - a.at || (canon(a) < canon(b) ? -1 : 1));
        expect(order(log), `log of ${life.name}`).toEqual(order(life.log));
      }
      // each event reached each URL at most once with a 2xx (no duplicate once acknowledged)
      const ok = received.filter((g) => g.path.includes(`-s${seed}-`) && g.status === 200);
      const keys = ok.map((g) => `${g.path.split("-v")[0]}|${g.headers["edgestats-delivery"]}|${g.body}`);
      expect(new Set(keys).size).toBe(keys.length);
      expect(ok.length).toBeGreaterThan(10);
      for (const [k, v] of Object.entries(model.stats)) if (typeof v === "number") totals[k] = (totals[k] ?? 0) + v;
      for (const [k, v] of Object.entries(model.stats.delivered)) totals[k] = (totals[k] ?? 0) + v;
    });
  }

  it("the seeds together exercised every event type, retries, give-ups, drops, replaces and deletes", () => {
    for (const k of ["presence.peak", "leaderboard.leader", "trending.entered", "trending.left", "trending.rising"])
      expect(totals[k], k).toBeGreaterThan(1);
    for (const k of ["retried", "failed", "dropped", "deletes", "replaces", "resets", "turns"])
      expect(totals[k], k).toBeGreaterThan(0);
  });
});
