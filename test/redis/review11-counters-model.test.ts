/**
 * Review 11: counters against a naive model over long horizons, through the library on real Redis
 * with injected time (`ctx.now`). Seeded workloads (dev/prng.ts) run 110–450 simulated days over six
 * counters: `h` (hour buckets, some `day` ones and plain writes), `d` (day), `w` (week, with and
 * without `ttl`), `m` (month, numeric members, with and without `ttl`), `p` (plain, with and
 * without `ttl`) and `u` (plain, and the target of admin unions). Writes are batches of integer and
 * dyadic-fraction increments of both signs (dyadic, so every sum is exact in a double whatever the
 * order the keys are read in, as docs/counters.md "Fractional scores" requires for exactness), late
 * into any period up to 400 days back, up to 5 minutes ahead, and a few refused ones (too old, older
 * than their ttl, too far ahead, `at` without `period`, `by` past ±1e12). Member deletes run over
 * ranges up to 400 days (and past it), counter deletes restart lives, unions mix plain keys and bucket
 * ranges with weights and aggregates. Reads of every kind (top/bottom, member, score range, sorted by
 * member/score, plain or over ranges up to 400 days and beyond, partial days and months at the
 * edges, repeated ranges so the union caches are hit and invalidated) are compared with the model of
 * the docs, and so is every refusal; each read is one request of at most 60 commands (issue 15),
 * counted by the local Upstash server.
 *
 * Expiry: the virtual clock runs far ahead of Redis's. test/helpers/virtual-expiry.ts PERSISTs keys,
 * which would defeat the scripts' extension (`PEXPIRE … GT` on a persisted key does nothing, and the
 * plain key's PTTL then reads -1, "kept for ever"), so here every key with a TTL keeps it and each
 * step of the virtual clock shortens it by the step (`shift`, one EVAL); a key whose TTL runs out is
 * deleted, as Redis would at that virtual time. The model predicts each key's expiry from the docs
 * ("TTL": created with the ttl, extended to ttl + min(ttl/10, 1 h) when less than ttl is left, never
 * shortened, none for a key created without one) and checks it against the TTL Redis holds.
 * Known limits not re-tested: ttl'd hour/day buckets under longer rollups (so `h`/`d` take no ttl),
 * older-release `z:` marks, dense hour deletes over more than 60 days may be refused.
 *
 * A second test drives an hour counter past the union bound (bulk hours of 1,000 new members) with
 * members of both signs and member deletes: member reads answered from edges and tops by the
 * threshold algorithm, against the model. What held: every answer and refusal of both runs. What
 * did not (the findings at the end; counted, not failed, in the runs): three reads past 60 commands,
 * fixed since (wt-cfix: a read's ZCARDs capped at MAX_SIZE_READS, the threshold algorithm's rounds
 * at the commands left, per-key ZSCOREs of min/max and week reads likewise; past them a 400).
 * REVIEW11_SEEDS / REVIEW11_BOUND_SEED explore other runs (tried: 2001-2003, 3001-3003, 4001-4002;
 * bound seeds 7-12: no other mismatch).
 */
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../dev/prng.ts";
import type { Ctx } from "../../src/context.ts";
import {
  deleteCounter,
  deleteMember,
  increment,
  memberOf,
  ranked,
  scoreRange,
  sorted,
  union,
  type IncrItem,
  type UnionSource,
} from "../../src/counters/index.ts";
import { counterKeys as K, cacheKeys } from "../../src/counters/keys.ts";
import { MAX_SORTED_MEMBERS, MAX_UNION_MEMBERS } from "../../src/counters/limits.ts";
import { NotFoundError, ValidationError, type EdgestatsError } from "../../src/errors.ts";
import { createRedis } from "../../src/redis/client.ts";
import type { Period } from "../../src/time.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, resetStats, statsOf } from "../helpers/upstash-rest.ts";
import { settled, type Result } from "../helpers/settled.ts";
import { addTo } from "../helpers/week-counters.ts";

const lib = libraryTest("r11cnt", { timeoutMs: 30_000 });
const { target } = lib;
const TAG = `r11cnt-${Math.random().toString(36).slice(2, 8)}`;
/** Reads go through this client: its token carries TAG, so the local server counts its commands apart. */
const counted = createRedis({ url: target.url, token: `${target.token}.${TAG}`, timeoutMs: 30_000 });

const SEC = 1000;
const HOUR = 3600 * SEC;
const DAY = 24 * HOUR;
/** Issue 15: the most commands one read may cost. */
const MAX_READ_COMMANDS = 60;
/** Slack on a TTL compared with the model: the real seconds the run takes shorten every TTL a little. */
const TOL = 90 * SEC;

// ---- the calendar, written out again (not the library's): UTC, ISO weeks from Monday
function startOf(period: Period, t: number): number {
  if (period === "hour") return Math.floor(t / HOUR) * HOUR;
  const day = Math.floor(t / DAY) * DAY;
  if (period === "day") return day;
  if (period === "week") return day - ((new Date(day).getUTCDay() + 6) % 7) * DAY;
  const d = new Date(t);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}
function endOf(period: Period, t: number): number {
  const s = startOf(period, t);
  if (period === "hour") return s + HOUR;
  if (period === "day") return s + DAY;
  if (period === "week") return s + 7 * DAY;
  const d = new Date(s);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}
function periodsIn(period: Period, from: number, to: number): number {
  let n = 0;
  for (let t = startOf(period, from); t <= to; t = endOf(period, t)) n++;
  return n;
}

/** Redis orders equal scores by member bytes (UTF-8), which is code point order. */
const bytes = (a: string, b: string) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
/** -0 and 0 are the same score to a reader. */
const z = (n: number) => n + 0;

type Members = Map<string, number>;
interface KeyData {
  members: Members;
  /** Virtual epoch ms the docs say the key expires at; null: never. */
  expiresAt: number | null;
}

/** One counter: its plain key and its buckets, by Redis key name. */
class CounterModel {
  plain: KeyData | undefined;
  /** `${period}|${start}` → bucket. */
  buckets = new Map<string, KeyData & { period: Period; start: number; key: string }>();
  readonly name: string;
  readonly prefix: string;
  constructor(name: string, prefix: string) {
    this.name = name;
    this.prefix = prefix;
  }
  bucketKey(period: Period, start: number) {
    return K.bucket(this.prefix, this.name, period, start);
  }
  /** Every key of the model (plain and buckets) with its Redis key name. */
  *keys(): Generator<[string, KeyData]> {
    if (this.plain) yield [K.plain(this.prefix, this.name), this.plain];
    for (const b of this.buckets.values()) yield [b.key, b];
  }
  drop(key: string) {
    if (key === K.plain(this.prefix, this.name)) this.plain = undefined;
    for (const [id, b] of this.buckets) if (b.key === key) this.buckets.delete(id);
  }
  /** Buckets of `period` from the period of `from` to the period of `to`. */
  inRange(period: Period, from: number, to: number) {
    const lo = startOf(period, from);
    const hi = startOf(period, to);
    return [...this.buckets.values()].filter((b) => b.period === period && b.start >= lo && b.start <= hi);
  }
  /** The union Redis would make of those buckets (a member missing from a bucket is skipped). */
  union(period: Period, from: number, to: number, aggregate: "sum" | "min" | "max"): Members {
    const out: Members = new Map();
    for (const b of this.inRange(period, from, to)) {
      for (const [m, s] of b.members) {
        const had = out.get(m);
        if (had === undefined) out.set(m, s);
        else out.set(m, aggregate === "sum" ? had + s : aggregate === "min" ? Math.min(had, s) : Math.max(had, s));
      }
    }
    return out;
  }
}

interface Spec {
  /** What its writes name: plain (no period) and/or periods. */
  writes: (Period | "plain")[];
  ttls: (number | undefined)[];
  numeric?: boolean;
}
const SPECS: Record<string, Spec> = {
  h: { writes: ["hour", "hour", "hour", "hour", "day", "plain"], ttls: [undefined] },
  d: { writes: ["day"], ttls: [undefined] },
  w: { writes: ["week"], ttls: [undefined, undefined, 20 * 86400, 60 * 86400, 200 * 86400] },
  m: { writes: ["month"], ttls: [undefined, 90 * 86400, 400 * 86400], numeric: true },
  p: { writes: ["plain"], ttls: [undefined, 2 * 3600, 86400, 10 * 86400] },
  u: { writes: ["plain"], ttls: [undefined, 6 * 3600] },
  // also fed by bulk batches of 500-1,000 members (mostly new), so long ranges pass the union bound
  big: { writes: ["day", "hour"], ttls: [undefined] },
};
const NAMES = Object.keys(SPECS);
// members whose byte order differs from UTF-16 order, and a tail
const POOL = [
  "a",
  "b",
  "B",
  "é",
  "\uffff",
  "\u{10000}",
  "日本",
  "m",
  "mm",
  ...Array.from({ length: 12 }, (_, i) => `t${i}`),
];
const NUMERIC = ["1", "2", "10", "-3", "0.5", "007", "42", "1e3", "-0.25", "99", "100000000000000001"];

const msg = (r: Result<unknown>) => (r.ok ? "ok" : `${(r.error as Error).name}: ${(r.error as Error).message}`);

/** Shortens every tracked TTL by `d` ms (deleting what runs out): answers per key the ms left, -1 none, -2 absent, -3 expired now. */
const SHIFT = `
local d, margin, out = tonumber(ARGV[1]), tonumber(ARGV[2]), {}
for i, k in ipairs(KEYS) do
  local t = redis.call('PTTL', k)
  if t > 0 then
    if t - d <= margin then
      redis.call('DEL', k)
      out[i] = -3
    else
      if d > 0 then redis.call('PEXPIRE', k, t - d) end
      out[i] = t - d
    end
  else
    out[i] = t
  end
end
return out`;

const stats = {
  steps: 0,
  writes: 0,
  writeRefusals: 0,
  reads: 0,
  nonEmptyReads: 0,
  readRefusals: 0,
  longReads: 0,
  deletes: 0,
  deleteRefusals1750: 0,
  deleteRemoved: 0,
  unions: 0,
  unionRefusals: 0,
  counterDeletes: 0,
  expired: 0,
  extended: 0,
  maxReadCommands: 0,
  maxReadWhat: "",
  maxDeleteCommands: 0,
  weekReadsOver60: 0,
  minMaxReadsOver60: 0,
  thresholdTopsOver60: 0,
  maxOver60: 0,
  bulks: 0,
  boundRefusals: 0,
  pastBoundAnswers: 0,
  unrankedMembers: 0,
  sortedRefusals: 0,
};

/** Mismatches found (each kept as an it.fails below once understood); the run stops at the first. */
function run(seed: number, simDays: number, steps: number) {
  return async () => {
    const rnd = mulberry32(seed);
    const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
    const base = lib.ctx(0, `r11-${seed}`);
    const prefix = base.prefix;
    let now = Date.UTC(2027, 0, 1, 0, 0, 0) + int(0, 40) * DAY + int(0, 86399) * SEC;
    const stepMs = Math.floor((simDays * DAY) / steps);
    const ctx = (): Ctx => ({ ...base, now });
    const models = new Map(NAMES.map((n) => [n, new CounterModel(n, prefix)]));
    const model = (n: string) => models.get(n)!;
    /** Keys with a TTL (or just written) that the next shift visits. */
    const tracked = new Set<string>();
    const ranges: {
      name: string;
      period: Period;
      from: number | string | undefined;
      to: number | string | undefined;
    }[] = [];
    const iso = (t: number) => new Date(t).toISOString();
    const when = () => `seed ${seed} step ${stats.steps} at ${iso(now)}`;

    const member = (name: string) => {
      if (SPECS[name]!.numeric) return pick(NUMERIC);
      return POOL[Math.floor(rnd() ** 1.8 * POOL.length)] ?? "a";
    };
    const by = () => (rnd() < 0.6 ? int(-3, 9) : int(-12, 40) / 4);

    /** Advances the virtual clock: TTLs shortened, expired keys gone from Redis and the model (checked against the docs' expiry). */
    async function advance(ms: number) {
      now += ms;
      const keys = new Set(tracked);
      // only counters whose writes name a ttl (and u, a union's target) hold keys that expire
      const expiring = [...models.values()].filter((m) => SPECS[m.name]!.ttls.some((t) => t !== undefined));
      const byKey = new Map<string, [CounterModel, KeyData]>();
      for (const m of expiring)
        for (const [key, data] of m.keys()) {
          byKey.set(key, [m, data]);
          if (data.expiresAt !== null) keys.add(key);
        }
      const list = [...keys];
      for (let i = 0; i < list.length; i += 500) {
        const batch = list.slice(i, i + 500);
        const left = await command<number[]>(target, "EVAL", SHIFT, batch.length, ...batch, ms, 5 * SEC);
        batch.forEach((key, j) => {
          const t = Number(left[j]);
          if (t < 0) tracked.delete(key);
          else tracked.add(key);
          const found = byKey.get(key);
          if (found) {
            {
              const [m, data] = found;
              const at = `${when()}: ${key} (model expiry ${data.expiresAt === null ? "none" : iso(data.expiresAt)})`;
              if (t === -1) expect(data.expiresAt, `${at}: Redis keeps it for ever`).toBeNull();
              else if (t > 0) {
                expect(data.expiresAt, `${at}: Redis has ${t} ms left`).not.toBeNull();
                expect(Math.abs(now + t - data.expiresAt!), `${at}: Redis expires it at ${iso(now + t)}`).toBeLessThan(
                  TOL,
                );
              } else {
                // gone: by its expiry (-3 now, -2 before), never while the docs say it lives
                expect(data.expiresAt, `${at}: gone from Redis`).not.toBeNull();
                expect(data.expiresAt!, `${at}: gone from Redis`).toBeLessThanOrEqual(now + TOL);
                stats.expired++;
                m.drop(key);
              }
            }
          }
        });
      }
      // nothing the docs say has expired is still there
      for (const m of expiring)
        for (const [key, data] of m.keys())
          if (data.expiresAt !== null)
            expect(data.expiresAt, `${when()}: ${key} should have expired`).toBeGreaterThan(now - TOL);
    }

    // ------------------------------------------------------------------ writes
    async function write() {
      const name = pick(NAMES);
      const spec = SPECS[name]!;
      const m = model(name);
      const n = rnd() < 0.6 ? int(1, 3) : int(4, 30);
      // one batch in ten carries one item the docs refuse, which refuses the whole batch
      const badAt = rnd() < 0.1 ? int(0, n - 1) : -1;
      let bad: string | null = null;
      const items: IncrItem[] = [];
      for (let i = 0; i < n; i++) {
        const kind = pick(spec.writes);
        const ttl = pick(spec.ttls);
        const item: IncrItem = { member: member(name), by: by() };
        if (ttl !== undefined) item.ttl = ttl;
        // the oldest time the item may name: 400 days back, and no earlier than its ttl allows
        const oldest = Math.max(now - 400 * DAY, ttl === undefined ? -Infinity : now - ttl * SEC - HOUR);
        if (kind !== "plain") {
          item.period = kind;
          const r = rnd();
          let at: number | undefined;
          if (r < 0.45) at = undefined;
          else if (r < 0.65) at = now - int(0, 72) * HOUR - int(0, 3599) * SEC;
          else if (r < 0.9) at = now - int(0, 400) * DAY + int(1, 86399) * SEC;
          else if (r < 0.95) at = now + int(0, 300) * SEC;
          else at = now - 400 * DAY; // exactly 400 days back
          if (at !== undefined && at < oldest) at = oldest + int(0, now - oldest);
          if (i === badAt) {
            const how = int(0, 2);
            at =
              how === 0
                ? now - 400 * DAY - int(1, 48 * 3600) * SEC
                : how === 1
                  ? now + 301 * SEC + int(0, 3600) * SEC
                  : ttl !== undefined
                    ? now - ttl * SEC - int(1, 30) * DAY - int(0, 86399) * SEC
                    : now - 400 * DAY - SEC;
          }
          if (at !== undefined) item.at = rnd() < 0.3 ? iso(at) : at;
          const t = at ?? now;
          if (t > now + 300 * SEC) bad ??= "more than 5 minutes in the future";
          else if (t < now - 400 * DAY) bad ??= "more than 400 days in the past";
          else if (ttl !== undefined && endOf(kind, t) < now - ttl * SEC) bad ??= "older than the item's ttl";
        } else if (i === badAt) {
          if (rnd() < 0.5) {
            item.at = now;
            bad ??= "at without period";
          } else {
            item.by = pick([1e12 + 1, Number.NaN, -2e12, Infinity]);
            bad ??= "by";
          }
        }
        items.push(item);
      }
      // a member taken to exactly 0 within a quarter, a day or a month: +k in one hour, -k in another
      if (name === "h" && badAt < 0 && rnd() < 0.25) {
        const who = member(name);
        const k = int(1, 5);
        const t0 = startOf("hour", now - int(0, 30) * DAY - int(0, 23) * HOUR);
        const t1 = Math.min(now, t0 + pick([1, 2, 5, 7, 30, 200]) * HOUR);
        items.push({ member: who, by: k, period: "hour", at: t0 }, { member: who, by: -k, period: "hour", at: t1 });
      }
      const got = await settled(increment(ctx(), name, items));
      const at = `${when()}: incr ${name} ${JSON.stringify(items)}`;
      stats.writes++;
      if (bad !== null) {
        stats.writeRefusals++;
        expect(got.ok ? "accepted" : got.error, `${at}: should be refused (${bad})`).toBeInstanceOf(ValidationError);
        return;
      }
      expect(msg(got), at).toBe("ok");
      if (!got.ok) return;
      // the model: each item in order, each key's expiry by the docs' rules (the largest ttl of its items)
      const touched = new Map<KeyData, { created: boolean; ttl: number }>();
      const want: number[] = [];
      for (const item of items) {
        let data: KeyData;
        if (item.period === undefined) {
          data = m.plain ??= { members: new Map(), expiresAt: null };
          tracked.add(K.plain(prefix, name));
        } else {
          const t = item.at === undefined ? now : typeof item.at === "string" ? Date.parse(item.at) : item.at;
          const start = startOf(item.period, t);
          const id = `${item.period}|${start}`;
          let b = m.buckets.get(id);
          if (!b) {
            b = {
              members: new Map(),
              expiresAt: null,
              period: item.period,
              start,
              key: m.bucketKey(item.period, start),
            };
            m.buckets.set(id, b);
          }
          data = b;
          tracked.add(b.key);
        }
        let mark = touched.get(data);
        if (!mark) touched.set(data, (mark = { created: data.members.size === 0, ttl: 0 }));
        mark.ttl = Math.max(mark.ttl, item.ttl ?? 0);
        const s = (data.members.get(item.member) ?? 0) + (item.by ?? 1);
        data.members.set(item.member, s);
        want.push(s);
      }
      // each key's expiry by the docs: created with the largest ttl of its items (none without), an
      // expiring one extended to ttl + min(ttl/10, 1 h) when less than ttl is left, one without kept so
      for (const [data, { created, ttl }] of touched) {
        if (created) data.expiresAt = ttl > 0 ? now + ttl * SEC : null;
        else if (ttl > 0 && data.expiresAt !== null && data.expiresAt - now < ttl * SEC) {
          data.expiresAt = now + ttl * SEC + Math.min(Math.ceil(ttl / 10), 3600) * SEC;
          stats.extended++;
        }
      }
      tracked.add(K.index(prefix, name));
      expect(
        got.value.results.map((r) => z(r.score)),
        at,
      ).toEqual(want.map(z));
    }

    /** 500-1,000 members, mostly new, into one day or hour of `big`: long ranges then pass the union bound. */
    async function bulk() {
      const m = model("big");
      const period = rnd() < 0.7 ? ("day" as const) : ("hour" as const);
      const at = rnd() < 0.8 ? now - int(0, 30) * DAY - int(0, 86399) * SEC : now - int(0, 399) * DAY;
      const items: IncrItem[] = Array.from({ length: int(500, 1000) }, () => ({
        member: rnd() < 0.1 ? member("big") : `u${int(0, 59_999)}`,
        by: int(1, 3),
        period,
        at,
      }));
      const got = await settled(increment(ctx(), "big", items));
      expect(msg(got), `${when()}: bulk ${period} at ${iso(at)}`).toBe("ok");
      const start = startOf(period, at);
      const id = `${period}|${start}`;
      let b = m.buckets.get(id);
      if (!b)
        m.buckets.set(
          id,
          (b = { members: new Map(), expiresAt: null, period, start, key: m.bucketKey(period, start) }),
        );
      const want = items.map((item) => {
        const v = (b.members.get(item.member) ?? 0) + item.by!;
        b.members.set(item.member, v);
        return v;
      });
      if (got.ok)
        expect(
          got.value.results.map((r) => r.score),
          `${when()}: bulk`,
        ).toEqual(want);
      stats.bulks++;
    }

    // ------------------------------------------------------------------ reads
    const pickTime = (): number => {
      const r = rnd();
      if (r < 0.3) return now - int(0, 48) * HOUR - int(0, 3599) * SEC;
      if (r < 0.6) return now - int(0, 449) * DAY - int(0, 86399) * SEC;
      if (r < 0.75) {
        // a month's or day's first or last hour
        const d = new Date(now - int(0, 14) * 30 * DAY);
        const first = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
        return rnd() < 0.5 ? first : first - int(0, 1) * HOUR - 1;
      }
      if (r < 0.85) return now + int(0, 3) * DAY;
      return now;
    };
    const span = (): number => {
      const r = rnd();
      if (r < 0.25) return int(0, 30) * HOUR + int(0, 3599) * SEC;
      if (r < 0.5) return int(0, 60) * DAY + int(0, 86399) * SEC;
      if (r < 0.8) return int(60, 400) * DAY - int(0, 86399) * SEC;
      if (r < 0.9) return 400 * DAY;
      if (r < 0.95) return 400 * DAY + int(1, 86400) * SEC; // refused
      return -int(1, 72) * HOUR; // from after to: refused
    };
    const asParam = (t: number): number | string => {
      const r = rnd();
      if (r < 0.6) return t;
      if (r < 0.8) return iso(t);
      if (r < 0.9) return String(t);
      return iso(startOf("day", t)).slice(0, 10);
    };
    const parsed = (v: number | string | undefined, dflt: number): number =>
      v === undefined ? dflt : typeof v === "number" ? v : /^\d+$/.test(v) ? Number(v) : Date.parse(v);

    /** One read through the counting client: one request, at most MAX_READ_COMMANDS commands. */
    async function measured<T>(what: string, call: (c: Ctx) => Promise<T>): Promise<Result<T>> {
      await resetStats(target, TAG);
      const got = await settled(call({ ...base, redis: counted, now }));
      const s = await statsOf(target, TAG);
      stats.reads++;
      // one request; none for a refusal checked before Redis
      if (got.ok || !(got.error instanceof ValidationError)) expect(s.requests, `${what}: requests`).toBe(1);
      else expect(s.requests, `${what}: requests`).toBeLessThanOrEqual(1);
      // the findings below, counted here rather than failed: a min/max range (finding 2) pays a
      // ZCARD per bucket, a top by the threshold algorithm (3) reads per key; a long week range
      // (finding 1) is held to the 60 since the weeks' size records
      const known = /"aggregate":"(min|max)"/.test(what) ? 2 : s.byCommand.zmscore && / top \d+$/.test(what) ? 3 : 0;
      if (s.commands > MAX_READ_COMMANDS && known > 0) {
        if (known === 2) stats.minMaxReadsOver60++;
        else stats.thresholdTopsOver60++;
        stats.maxOver60 = Math.max(stats.maxOver60, s.commands);
      } else {
        expect(s.commands, `${what}: ${s.commands} commands ${JSON.stringify(s.byCommand)}`).toBeLessThanOrEqual(
          MAX_READ_COMMANDS,
        );
        if (s.commands > stats.maxReadCommands) {
          stats.maxReadCommands = s.commands;
          stats.maxReadWhat = `${what} ${JSON.stringify(s.byCommand)}`;
        }
      }
      return got;
    }

    async function read() {
      let name: string;
      let period: Period | undefined;
      let from: number | string | undefined;
      let to: number | string | undefined;
      if (ranges.length > 0 && rnd() < 0.3) {
        // a range read before: its cached union, or what a late write made of it
        ({ name, period, from, to } = pick(ranges));
      } else {
        name = rnd() < 0.15 ? "big" : pick(NAMES);
        const kinds = SPECS[name]!.writes;
        const k = rnd() < 0.1 ? pick(["hour", "day", "week", "month"] as const) : pick(kinds);
        period = k === "plain" ? undefined : k;
        if (period) {
          const t = pickTime();
          const sp = span();
          to = rnd() < 0.15 ? undefined : asParam(t);
          from = rnd() < 0.1 ? undefined : asParam(parsed(to, now) - sp);
          if (typeof from === "number" && from < Date.UTC(1000, 0, 1)) from = undefined;
          ranges.push({ name, period, from, to });
          if (ranges.length > 30) ranges.shift();
        }
      }
      for (const c of cacheKeys(prefix, name)) tracked.add(c);
      const m = model(name);
      const aggregate =
        period && rnd() < 0.2 ? pick(["min", "max"] as const) : rnd() < 0.05 ? ("sum" as const) : undefined;
      const agg = aggregate ?? "sum";
      // the model's answer, or the refusal the docs name
      let refusal: string | null = null;
      let data: Members;
      let info: object | undefined;
      // entries of the raw keys in range: what any union of the range walks at most
      let entries = 0;
      if (!period) {
        if (aggregate !== undefined) refusal = "aggregate without period";
        data = m.plain?.members ?? new Map();
      } else {
        const toT = parsed(to, now);
        const fromT = parsed(from, toT);
        if (fromT > toT) refusal = "from after to";
        else if (toT - fromT > 400 * DAY) refusal = "more than 400 days";
        else if (agg !== "sum" && periodsIn(period, fromT, toT) > 401) refusal = "min/max past 401 buckets";
        data = refusal ? new Map() : m.union(period, fromT, toT, agg);
        if (!refusal) for (const b of m.inRange(period, fromT, toT)) entries += b.members.size;
        info = {
          period,
          from: startOf(period, fromT),
          to: startOf(period, toT),
          aggregate: agg,
          buckets: refusal ? 0 : periodsIn(period, fromT, toT),
          finished: endOf(period, toT) <= now,
        };
        if (!refusal && toT - fromT > 300 * DAY) stats.longReads++;
      }
      const opts = { ...(period ? { period, from, to } : {}), ...(aggregate ? { aggregate } : {}) };
      const desc = [...data].sort((a, b) => b[1] - a[1] || bytes(b[0], a[0]));
      const asc = [...desc].reverse();
      const items = (xs: [string, number][]) => xs.map(([member, score]) => ({ member, score: z(score) }));
      const clean = (xs: { member: string; score: number }[]) =>
        xs.map((x) => ({ member: x.member, score: z(x.score) }));
      const op = rnd();
      const what = `${when()}: ${name} ${JSON.stringify(opts)} (model ${data.size} members)`;
      if (data.size > 0) stats.nonEmptyReads++;
      const check = <T>(got: Result<T>, label: string): got is { ok: true; value: T } => {
        if (refusal) {
          stats.readRefusals++;
          expect(got.ok ? "answered" : got.error, `${what} ${label}: should be refused (${refusal})`).toBeInstanceOf(
            ValidationError,
          );
          return false;
        }
        if (!got.ok && entries > MAX_UNION_MEMBERS && (got.error as EdgestatsError).code === "too_many_entries") {
          // the union bound (docs/counters.md, issue 15): only where the range's keys hold more than that many entries
          stats.boundRefusals++;
          return false;
        }
        if (entries > MAX_UNION_MEMBERS) stats.pastBoundAnswers++;
        expect(msg(got), `${what} ${label}`).toBe("ok");
        if (got.ok && info) expect((got.value as { range?: object }).range, `${what} ${label}: range`).toEqual(info);
        return got.ok;
      };
      if (op < 0.3) {
        const side = rnd() < 0.7 ? "top" : "bottom";
        const n = pick([1, 2, 3, 5, 10, 1000]);
        const got = await measured(`${what} ${side} ${n}`, (c) => ranked(c, name, side, n, opts));
        if (!check(got, `${side} ${n}`)) return;
        const want = items((side === "top" ? desc : asc).slice(0, n)).map((x, i) => ({ rank: i + 1, ...x }));
        expect(
          got.value.items.map((x) => ({ rank: x.rank, member: x.member, score: z(x.score) })),
          `${what} ${side} ${n}`,
        ).toEqual(want);
      } else if (op < 0.55) {
        const who = rnd() < 0.85 && data.size > 0 ? pick([...data.keys()]) : member(name);
        const got = await measured(`${what} member ${who}`, (c) => memberOf(c, name, who, opts));
        if (!refusal && !data.has(who)) {
          expect(got.ok ? got.value : got.error, `${what} member ${who}: absent`).toBeInstanceOf(NotFoundError);
          return;
        }
        if (!check(got, `member ${who}`)) return;
        // past the union bound the score is exact and the ranks null (they need the union)
        const unranked = got.value.rank === null;
        if (unranked) {
          stats.unrankedMembers++;
          expect(entries, `${what} member ${who}: ranks null within the bound`).toBeGreaterThan(MAX_UNION_MEMBERS);
        }
        expect(
          { score: z(got.value.score), rank: got.value.rank, rankFromBottom: got.value.rankFromBottom },
          `${what} member ${who}`,
        ).toEqual({
          score: z(data.get(who)!),
          rank: unranked ? null : desc.findIndex(([k]) => k === who) + 1,
          rankFromBottom: unranked ? null : asc.findIndex(([k]) => k === who) + 1,
        });
      } else if (op < 0.8) {
        const bound = () => {
          const r = rnd();
          if (r < 0.15) return rnd() < 0.5 ? "-inf" : "+inf";
          const v = pick([-5, -1, 0, 0.25, 1, 2.5, 3, 7, 12, 30]);
          return rnd() < 0.3 ? `(${v}` : String(v);
        };
        let min = bound();
        let max = bound();
        if (rnd() < 0.9) {
          const val = (b: string) => (b === "-inf" ? -Infinity : b === "+inf" ? Infinity : Number(b.replace("(", "")));
          if (val(min) > val(max)) [min, max] = [max, min];
        }
        const limit = pick([1, 3, 10, 100, 1000]);
        const order = rnd() < 0.5 ? ("asc" as const) : ("desc" as const);
        const val = (b: string) => (b === "-inf" ? -Infinity : b === "+inf" ? Infinity : Number(b.replace("(", "")));
        const ex = (b: string) => b.startsWith("(");
        const label = `range ${min}..${max} limit ${limit} ${order}`;
        const got = await measured(`${what} ${label}`, (c) => scoreRange(c, name, { ...opts, min, max, limit, order }));
        if (val(min) > val(max)) {
          expect(got.ok ? "answered" : got.error, `${what} ${label}`).toBeInstanceOf(ValidationError);
          return;
        }
        if (!check(got, label)) return;
        const inRange = (order === "asc" ? asc : desc).filter(
          ([, s]) => (ex(min) ? s > val(min) : s >= val(min)) && (ex(max) ? s < val(max) : s <= val(max)),
        );
        expect({ count: got.value.count, items: clean(got.value.items) }, `${what} ${label}`).toEqual({
          count: inRange.length,
          items: items(inRange.slice(0, limit)),
        });
      } else {
        const byWhat = rnd() < 0.6 ? ("member" as const) : ("score" as const);
        const order = rnd() < 0.5 ? ("asc" as const) : ("desc" as const);
        const label = `sorted by ${byWhat} ${order}`;
        const got = await measured(`${what} ${label}`, (c) => sorted(c, name, { ...opts, by: byWhat, order }));
        if (!refusal && data.size > MAX_SORTED_MEMBERS) {
          // more than 10,000 members: 400 too_many_members (or the union bound's refusal first)
          expect(got.ok ? "answered" : (got.error as EdgestatsError).code, `${what} ${label}`).toMatch(
            /^too_many_(members|entries)$/,
          );
          stats.sortedRefusals++;
          return;
        }
        if (!check(got, label)) return;
        let want: [string, number][];
        let numeric = false;
        if (byWhat === "score") want = order === "asc" ? asc : desc;
        else {
          numeric = [...data.keys()].every((k) => DECIMAL.test(k));
          const sign = order === "asc" ? 1 : -1;
          want = [...data].sort((a, b) => sign * ((numeric ? Number(a[0]) - Number(b[0]) : 0) || bytes(a[0], b[0])));
        }
        expect(
          { numeric: got.value.numeric, count: got.value.count, items: clean(got.value.items) },
          `${what} ${label}`,
        ).toEqual({ numeric, count: data.size, items: items(want) });
      }
    }

    // ------------------------------------------------------------------ member deletes
    async function deleteOne() {
      const name = pick(NAMES);
      const spec = SPECS[name]!;
      const m = model(name);
      const kind = pick(spec.writes);
      const present = [...m.buckets.values(), ...(m.plain ? [m.plain] : [])].flatMap((b) => [...b.members.keys()]);
      const who = present.length > 0 && rnd() < 0.8 ? pick(present) : member(name);
      const what = `${when()}: delete ${name} ${who}`;
      await resetStats(target, TAG);
      if (kind === "plain") {
        const had = m.plain?.members.has(who) ?? false;
        const got = await settled(deleteMember({ ...base, redis: counted, now }, name, who));
        expect(msg(got), what).toBe("ok");
        if (got.ok) expect(got.value.removed, what).toBe(had ? 1 : 0);
        if (had) {
          m.plain!.members.delete(who);
          if (m.plain!.members.size === 0) m.plain = undefined;
        }
        stats.deletes++;
        return;
      }
      const period = kind;
      const toT = rnd() < 0.2 ? now : pickTime();
      const r = rnd();
      const sp =
        r < 0.5
          ? int(0, 72) * HOUR
          : r < 0.75
            ? int(3, 60) * DAY
            : r < 0.95
              ? int(61, 400) * DAY
              : 400 * DAY + int(1, 48) * HOUR;
      const fromT = toT - sp;
      const opts = { period, from: asParam(fromT), to: asParam(toT) };
      const f = parsed(opts.from, 0);
      const t = parsed(opts.to, 0);
      const label = `${what} ${JSON.stringify(opts)}`;
      const got = await settled(deleteMember({ ...base, redis: counted, now }, name, who, opts));
      const s = await statsOf(target, TAG);
      stats.maxDeleteCommands = Math.max(stats.maxDeleteCommands, s.commands);
      stats.deletes++;
      if (t - f > 400 * DAY || f > t) {
        expect(got.ok ? "done" : got.error, `${label}: past 400 days`).toBeInstanceOf(ValidationError);
        return;
      }
      const hit = m.inRange(period, f, t).filter((b) => b.members.has(who));
      if (!got.ok && endOf(period, t) - startOf(period, f) > 60 * DAY && period === "hour") {
        // the documented refusal: more than 1,750 keys may hold it; within its 60 commands, nothing written
        expect((got.error as Error).message, label).toMatch(/1,?750/);
        expect(s.commands, `${label}: a refusal's commands`).toBeLessThanOrEqual(62);
        stats.deleteRefusals1750++;
        return;
      }
      expect(msg(got), label).toBe("ok");
      if (!got.ok) return;
      expect(got.value.removed, `${label}: removed`).toBe(hit.length);
      stats.deleteRemoved += hit.length;
      for (const b of hit) {
        b.members.delete(who);
        if (b.members.size === 0) m.buckets.delete(`${b.period}|${b.start}`);
      }
    }

    // ------------------------------------------------------------------ unions into u
    async function unionOne() {
      const n = int(1, 3);
      const sources: UnionSource[] = [];
      const parts: { keys: Members[]; weight: number }[] = [];
      let keys = 0;
      const weights: number[] = [];
      for (let i = 0; i < n; i++) {
        const r = rnd();
        const weight = pick([1, 1, 2, -1, 0.5, 0]);
        weights.push(weight);
        if (r < 0.4) {
          const src = pick(["p", "u", "h", "m"]);
          sources.push(src);
          parts.push({ keys: [model(src).plain?.members ?? new Map()], weight });
          keys++;
        } else {
          const [src, period, maxDays] = pick([
            ["d", "day", 120],
            ["w", "week", 400],
            ["h", "hour", 44],
            ["m", "month", 400],
            ["h", "day", 60],
          ] as const);
          const toT = rnd() < 0.3 ? now : pickTime();
          const fromT = toT - int(0, maxDays) * DAY - int(0, 86399) * SEC;
          sources.push({ counter: src, period, from: fromT, to: toT });
          parts.push({
            keys: model(src)
              .inRange(period, fromT, toT)
              .map((b) => b.members),
            weight,
          });
          keys += periodsIn(period, fromT, toT);
        }
      }
      const aggregate = pick(["sum", "sum", "min", "max"] as const);
      const ttl = rnd() < 0.3 ? pick([6 * 3600, 3 * 86400]) : undefined;
      const options = {
        sources,
        aggregate,
        ...(rnd() < 0.7 ? { weights } : {}),
        ...(ttl ? { ttl } : {}),
      };
      const what = `${when()}: union u ${JSON.stringify(options)}`;
      const got = await settled(union(ctx(), "u", options));
      stats.unions++;
      tracked.add(K.plain(prefix, "u"));
      if (keys > 1000) {
        stats.unionRefusals++;
        expect(got.ok ? "done" : got.error, `${what}: more than 1,000 keys`).toBeInstanceOf(ValidationError);
        return;
      }
      expect(msg(got), what).toBe("ok");
      if (!got.ok) return;
      const out: Members = new Map();
      for (const p of parts) {
        const w = "weights" in options ? p.weight : 1;
        for (const key of p.keys)
          for (const [mem, s] of key) {
            addTo(out, mem, s * w, aggregate);
          }
      }
      expect({ members: got.value.members, sourceKeys: got.value.sourceKeys }, what).toEqual({
        members: out.size,
        sourceKeys: keys,
      });
      model("u").plain = out.size > 0 ? { members: out, expiresAt: ttl ? now + ttl * SEC : null } : undefined;
    }

    async function deleteWhole() {
      const name = pick(NAMES);
      const got = await settled(deleteCounter(ctx(), name));
      expect(msg(got), `${when()}: delete counter ${name}`).toBe("ok");
      const m = model(name);
      m.plain = undefined;
      m.buckets.clear();
      stats.counterDeletes++;
    }

    // every script loaded once, so each measured read is one EVALSHA that hits
    const warm = { ...base, redis: counted, now };
    await increment(warm, "warm", [{ member: "x", period: "day" }]);
    await ranked(warm, "warm", "top", 1, { period: "day" });
    await memberOf(warm, "warm", "x", { period: "day" });
    await scoreRange(warm, "warm", { period: "day" });
    await sorted(warm, "warm", { period: "day" });
    await ranked(warm, "warm", "top", 1);
    await deleteCounter(warm, "warm");

    for (let i = 0; i < steps; i++) {
      stats.steps++;
      await advance(Math.max(SEC, Math.round((stepMs * (0.2 + 1.6 * rnd())) / SEC) * SEC));
      const r = rnd();
      if (r < 0.05) await bulk();
      else if (r < 0.5) await write();
      else if (r < 0.58) await deleteOne();
      else if (r < 0.6) await unionOne();
      else if (r < 0.6025) await deleteWhole();
      else {
        await read();
        if (rnd() < 0.5) await read();
      }
    }
  };
}

/** REVIEW11_SEEDS=seed:days:steps,... explores other runs; the committed ones are below. */
const SEEDS = (process.env.REVIEW11_SEEDS ?? "1101:450:500,1102:220:350,1103:110:250")
  .split(",")
  .map((x) => x.split(":").map(Number) as [number, number, number]);

describe("review 11: counters against a model over long horizons", () => {
  for (const [seed, days, steps] of SEEDS)
    it(`seed ${seed}: ${days} days, ${steps} steps`, run(seed, days, steps), 300_000);
  it("what the runs covered", () => {
    console.log(JSON.stringify(stats, null, 1));
    expect(stats.reads).toBeGreaterThan(300);
    expect(stats.nonEmptyReads).toBeGreaterThan(200);
    expect(stats.expired).toBeGreaterThan(10);
    expect(stats.extended).toBeGreaterThan(10);
    expect(stats.deleteRemoved).toBeGreaterThan(20);
  });
});

describe("review 11: past the union bound, against the model", () => {
  /**
   * An hour counter whose ranges hold more than MAX_UNION_MEMBERS entries (bulk hours of 1,000 new
   * members), and four members written in both signs (pairs summing to 0 in a quarter, a day, a
   * month), deleted over ranges: member reads then answer from edges (rollup minus parts outside,
   * quarters; docs/counters.md "The union bound") with exact scores and null ranks, and tops by the
   * threshold algorithm, over ranges ending now and finished ones with partial days and months at
   * both edges. Compared with the model after every step; every read within 60 commands.
   */
  it("member reads by edges and tops by threshold over 400 days", async () => {
    const rnd = mulberry32(Number(process.env.REVIEW11_BOUND_SEED ?? 1111));
    const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
    const base = lib.ctx(0, "r11-bound");
    let now = Date.UTC(2027, 2, 10, 13, 30, 7);
    const ctx = (): Ctx => ({ ...base, now });
    const hours = new Map<number, Members>();
    const add = (h: number, m: string, by: number) => {
      let b = hours.get(h);
      if (!b) hours.set(h, (b = new Map()));
      b.set(m, (b.get(m) ?? 0) + by);
    };
    const TRACKED = ["a", "b", "c", "d"];
    // filler: 26 hours of 1,000 members never seen elsewhere, most in the last 60 days
    for (let i = 0; i < 26; i++) {
      const h = startOf("hour", now - (i < 20 ? int(0, 60 * 24) : int(0, 399 * 24)) * HOUR);
      const items = Array.from({ length: 1000 }, (_, j) => ({
        member: `f${i}-${j}`,
        by: 1,
        period: "hour" as const,
        at: h,
      }));
      await increment(ctx(), "e", items);
      for (const it of items) add(h, it.member, 1);
    }
    await memberOf({ ...ctx(), redis: counted }, "e", "a", { period: "hour" }).catch(() => undefined); // script loaded
    const seen = {
      unranked: 0,
      ranked: 0,
      thresholdTops: 0,
      refusedTops: 0,
      deletes: 0,
      maxCommands: 0,
      thresholdOver60: 0,
    };
    const hourIn = (days: number) => startOf("hour", now - int(0, days * 24) * HOUR);
    for (let step = 0; step < 140; step++) {
      now += int(1, 240) * 60 * SEC;
      const r = rnd();
      if (r < 0.4) {
        // tracked members, some as +k/-k pairs within a quarter, a day or across a month's edge
        const items: IncrItem[] = [];
        for (let i = int(1, 4); i > 0; i--) {
          const who = pick(TRACKED);
          const t0 = rnd() < 0.7 ? hourIn(70) : hourIn(399);
          const k = int(1, 20);
          items.push({ member: who, by: k, period: "hour", at: t0 });
          if (rnd() < 0.5) {
            const t1 = Math.min(startOf("hour", now), t0 + pick([1, 3, 5, 13, 24 * 3, 24 * 20]) * HOUR);
            items.push({ member: who, by: -k, period: "hour", at: t1 });
          }
        }
        await increment(ctx(), "e", items);
        for (const it of items) add(startOf("hour", it.at as number), it.member, it.by!);
      } else if (r < 0.55) {
        // a member delete of at most 60 days (never refused), whatever its edges cut
        const who = pick(TRACKED);
        const to = rnd() < 0.3 ? now : hourIn(70);
        const from = to - int(0, 60 * 24 - 1) * HOUR - int(0, 3599) * SEC;
        const got = await deleteMember(ctx(), "e", who, { period: "hour", from, to });
        let hit = 0;
        for (const [h, b] of hours) if (h >= startOf("hour", from) && h <= startOf("hour", to) && b.delete(who)) hit++;
        expect(got.removed, `delete ${who} ${new Date(from).toISOString()}..${new Date(to).toISOString()}`).toBe(hit);
        seen.deletes++;
      } else {
        const to = rnd() < 0.5 ? now : hourIn(60) + int(0, 3599) * SEC;
        const from =
          to - pick([int(1, 400 * 24), int(1, 60 * 24), int(300 * 24, 400 * 24)]) * HOUR + int(0, 3599) * SEC;
        const lo = startOf("hour", from);
        const hi = startOf("hour", to);
        const union: Members = new Map();
        let entries = 0;
        for (const [h, b] of hours) {
          if (h < lo || h > hi) continue;
          entries += b.size;
          for (const [m, v] of b) union.set(m, (union.get(m) ?? 0) + v);
        }
        const desc = [...union].sort((x, y) => y[1] - x[1] || bytes(y[0], x[0]));
        const opts = { period: "hour" as const, from, to };
        const what = `step ${step} ${new Date(from).toISOString()}..${new Date(to).toISOString()} now ${new Date(now).toISOString()} (${entries} entries)`;
        await resetStats(target, TAG);
        if (rnd() < 0.7) {
          const who = pick(TRACKED);
          const got = await settled(memberOf({ ...ctx(), redis: counted }, "e", who, opts));
          if (!union.has(who))
            expect(got.ok ? got.value : got.error, `${what} ${who}: absent`).toBeInstanceOf(NotFoundError);
          else {
            expect(msg(got), `${what} ${who}`).toBe("ok");
            if (got.ok) {
              const unranked = got.value.rank === null;
              if (unranked) expect(entries, `${what}: ranks null within the bound`).toBeGreaterThan(MAX_UNION_MEMBERS);
              seen[unranked ? "unranked" : "ranked"]++;
              const i = desc.findIndex(([m]) => m === who);
              expect([z(got.value.score), got.value.rank, got.value.rankFromBottom], `${what} ${who}`).toEqual([
                z(union.get(who)!),
                unranked ? null : i + 1,
                unranked ? null : union.size - i,
              ]);
            }
          }
        } else {
          const n = pick([1, 3, 5]);
          const got = await settled(ranked({ ...ctx(), redis: counted }, "e", "top", n, opts));
          if (!got.ok && entries > MAX_UNION_MEMBERS && (got.error as EdgestatsError).code === "too_many_entries")
            seen.refusedTops++;
          else {
            expect(msg(got), `${what} top ${n}`).toBe("ok");
            if (got.ok) {
              if (entries > MAX_UNION_MEMBERS) seen.thresholdTops++;
              expect(
                got.value.items.map((x) => [x.member, z(x.score)]),
                `${what} top ${n}`,
              ).toEqual(desc.slice(0, n).map(([m, v]) => [m, z(v)]));
            }
          }
        }
        const s = await statsOf(target, TAG);
        // finding 3 (its it.fails below): a top by the threshold algorithm pays commands per key; counted here
        if (s.commands > MAX_READ_COMMANDS && s.byCommand.zmscore) seen.thresholdOver60++;
        else {
          seen.maxCommands = Math.max(seen.maxCommands, s.commands);
          expect(s.commands, `${what}: ${JSON.stringify(s.byCommand)}`).toBeLessThanOrEqual(MAX_READ_COMMANDS);
        }
      }
    }
    console.log("r11 past the bound", seen);
    expect(seen.unranked).toBeGreaterThan(10);
  }, 120_000);
});

describe("review 11 findings", () => {
  /**
   * FIXED (wt-week): each week key keeps a size record in the index (`n:<key>`, an upper bound of
   * its members that writes keep: docs/counters.md "Week size records"), which the read's HMGET
   * returns, so the union bound sums them instead of a ZCARD a week; at most 60 commands.
   * Before, DOCUMENTED (not refused): a week counter's long reads kept their one ZCARD (or ZSCORE) per week.
   * The fixer first refused them past MAX_SIZE_READS, which refused even this one-member counter's
   * 52-week reads, a range users read every day; the week rollup costs every week write a command.
   * Their keys are few (≤ 59 over 400 days, O(1) each), so they are answered, up to ~70 commands
   * (docs/counters.md "The union bound"), the one documented exception to the 60.
   * FINDING 1 (low; issue 15): a `week` counter's read over a long range takes one ZCARD per
   * week (the union bound, docs/counters.md: "for week/month counters, which keep no rollups"), so
   * 400 days of weeks cost 66–70 commands, past the 60 every read must stay within. Found by the
   * model run (seed 1101: a member read over 57 weeks, 56 ZCARDs, 66 commands). The docs say
   * "400 days touch at most 59 weeks and 15 months, so their reads are already short": short in
   * keys, but the bound reads each. Smallest fix: a `week:by-year` rollup (ISO year; one ZINCRBY
   * more per week write) that bounds its weeks as month rollups bound days (2 ZCARDs for 400
   * days); or, cheaper to write, stop sizing once the remaining keys times the largest size seen
   * cannot pass the limit (no help when sizes vary), or keep each week's ZCARD in the index field
   * the write already HSETs on a key's first touch (stale after later members) — the rollup is exact.
   */
  it("a 400-day read of a week counter is answered, in at most 60 commands (size records)", async () => {
    const now = Date.UTC(2027, 5, 16, 12);
    const base = lib.ctx(now, "r11-weeks");
    // one member in every week of the 400 days (58 ISO weeks), written when each was current
    for (let t = now - 399 * DAY; t <= now; t += 7 * DAY)
      await increment({ ...base, now: t }, "w", [{ member: "a", period: "week" }]);
    const reads: [string, (c: Ctx, name: string) => Promise<unknown>][] = [
      ["member, finished", (c, w) => memberOf(c, w, "a", { period: "week", from: now - 399 * DAY, to: now - 8 * DAY })],
      [
        "top, finished",
        (c, w) => ranked(c, w, "top", 10, { period: "week", from: now - 399 * DAY, to: now - 8 * DAY }),
      ],
      ["top, ending now", (c, w) => ranked(c, w, "top", 10, { period: "week", from: now - 399 * DAY })],
      ["range, ending now", (c, w) => scoreRange(c, w, { period: "week", from: now - 399 * DAY })],
    ];
    const counts: Record<string, number> = {};
    for (const [what, call] of reads) {
      // the script loaded on an empty counter, then the first read of the range (nothing cached yet)
      await call({ ...base, redis: counted }, "empty").catch(() => undefined);
      await resetStats(target, TAG);
      const got = await settled(call({ ...base, redis: counted }, "w"));
      counts[what] = (await statsOf(target, TAG)).commands;
      // answered: the member in each of the weeks read (one increment a week)
      expect(got.ok, `${what}: ${got.ok ? "" : String(got.error)}`).toBe(true);
    }
    // member (finished, first read) 66, top ending now 68 when each week took a ZCARD; since the
    // weeks' size records (wt-week) at most 60, the one exception to issue 15's 60 gone
    for (const [what, n] of Object.entries(counts))
      expect(n, `${what}: ${JSON.stringify(counts)}`).toBeLessThanOrEqual(60);
  });

  /**
   * FIXED (refused in 47 commands: 44 ZCARDs, MAX_SIZE_READS).
   * FINDING 2 (medium; issue 15): a `min`/`max` read reads every raw bucket (docs: at most 401), and
   * when the month rollups' bound does not settle the union's size it takes one ZCARD per bucket, so
   * its commands grow with the range and the data: a `day` counter with 50 new members a day read
   * with `aggregate=min` over 400 days costs 413 ZCARDs (420 commands) before its union — and
   * a refusal (too_many_entries) pays them too (the model run: 100 ZCARDs, 103 commands, for a
   * refusal over 100 days of bulk writes). Issue 15 wants every read within 60, refusals included
   * (the member delete has MAX_DELETE_READS for exactly this). Smallest fix: give the sizing a budget
   * as the delete has — stop the per-bucket ZCARDs at ~50 and refuse with too_many_entries ("narrow
   * the range") once the buckets not yet sized, at the largest size seen or their month's rollup
   * size, could still pass the limit; or bound min/max reads by their months' rollups (a bucket holds
   * no member its month lacks) and refuse when that bound passes MAX_UNION_ENTRIES.
   */
  it("a 400-day min read of a day counter stays within 60 commands", async () => {
    const now = Date.UTC(2027, 5, 16, 12);
    const base = lib.ctx(now, "r11-minmax");
    for (let k = 0; k < 400; k++)
      await increment(
        base,
        "d",
        Array.from({ length: 50 }, (_, i) => ({
          member: `m${k}-${i}`,
          by: 1 + (i % 3),
          period: "day" as const,
          at: now - k * DAY,
        })),
      );
    const opts = { period: "day" as const, from: now - 399 * DAY, to: now - DAY, aggregate: "min" as const };
    await ranked({ ...base, redis: counted }, "empty", "top", 1, opts); // the script loaded
    await resetStats(target, TAG);
    const got = await settled(ranked({ ...base, redis: counted }, "d", "top", 3, opts));
    const s = await statsOf(target, TAG);
    // the answer itself is right (or the documented refusal); only the work is past the bound
    if (got.ok) expect(got.value.items.map((x) => x.score)).toEqual([3, 3, 3]);
    else expect((got.error as EdgestatsError).code).toBe("too_many_entries");
    // before the fix: 420 commands (413 ZCARDs: 14 months, then 399 days; then the union)
    expect(s.commands, JSON.stringify(s.byCommand)).toBeLessThanOrEqual(MAX_READ_COMMANDS);
  });

  /**
   * FIXED (refused in 25 commands: the first round's 69 commands do not fit the 34 left).
   * FINDING 3 (medium; issue 15): past the union bound a top-N sum is read by the threshold
   * algorithm "over all of [the range's keys]" (docs/counters.md; src/counters/threshold.ts), each
   * round a ZRANGE per key and a ZMSCORE per key and 1,000 members seen, after the bound's ZCARDs, so
   * its commands grow with the keys: up to 32 keys are taken (64 × keys² ≤ THRESHOLD_LOOKUPS), and 23
   * keys (a 112-day hour range, 23,000 entries) answer right in 94 commands; the model run's edge
   * test met 82 (24 keys). The docs bound its lookups and script time, not its commands; issue 15
   * asks ≤ 60 for every read. Smallest fix: a command budget, as the member read has — take the
   * threshold path only while 1 + keys × (1 + ⌈members seen / 1000⌉) rounds fit the commands left
   * (about 16 keys), else refuse (too_many_entries), or first union the edge keys (the raw hours and
   * days around whole months; each edge ≤ the bound's entries) into scratch so rounds run over ≤ 5 keys.
   */
  it("a top past the union bound over a finished range of 23 keys stays within 60 commands", async () => {
    const now = Date.UTC(2027, 2, 10, 13, 30);
    const base = lib.ctx(now, "r11-threshold");
    // a finished range of 23 keys (12 days of October, November to January as month rollups, 8 days
    // of February), each holding an hour of 1,000 members never repeated: 23,000 entries, past
    // MAX_UNION_MEMBERS, so the top is read by the threshold algorithm (which takes up to 32 keys)
    const from = Date.UTC(2026, 9, 20);
    const to = Date.UTC(2027, 1, 8, 23);
    const days = [
      ...Array.from({ length: 12 }, (_, i) => Date.UTC(2026, 9, 20 + i)),
      Date.UTC(2026, 10, 10),
      Date.UTC(2026, 11, 10),
      Date.UTC(2027, 0, 10),
      ...Array.from({ length: 8 }, (_, i) => Date.UTC(2027, 1, 1 + i)),
    ];
    for (const [i, day] of days.entries())
      await increment(
        base,
        "h",
        Array.from({ length: 1000 }, (_, j) => ({
          member: `f${i}-${j}`,
          by: 1,
          period: "hour" as const,
          at: day + 5 * HOUR,
        })),
      );
    // the leader stands out: in two hours of the range
    await increment(base, "h", [
      { member: "lead", by: 50, period: "hour", at: from + HOUR },
      { member: "lead", by: 50, period: "hour", at: to - HOUR },
    ]);
    const opts = { period: "hour" as const, from, to };
    await ranked({ ...base, redis: counted }, "empty", "top", 1, opts); // the script loaded
    await resetStats(target, TAG);
    const got = await settled(ranked({ ...base, redis: counted }, "h", "top", 1, opts));
    const s = await statsOf(target, TAG);
    // the answer itself is exact (the threshold algorithm), or the documented refusal
    if (got.ok) expect(got.value.items.map((x) => [x.member, x.score])).toEqual([["lead", 100]]);
    else expect((got.error as EdgestatsError).code).toBe("too_many_entries");
    // before the fix: the right answer in 94 commands (22 ZCARDs of the bound, 23 ZRANGEs, 46 ZMSCOREs)
    expect(s.commands, JSON.stringify(s.byCommand)).toBeLessThanOrEqual(MAX_READ_COMMANDS);
  });
});
