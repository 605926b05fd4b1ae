/**
 * Review 17: counter writes, ttl and deletes against a simple in-test model, through the library on
 * real Redis (the local Upstash server) with the injected clock (`ctx.now`). Seeded runs mix
 * increments of both signs (sums reaching exactly 0, `by` 0, unicode members) into the plain key
 * and into hour/day/month buckets (`at` up to 12 days back), with and without `ttl` (ttls longer
 * than the run's virtual span, so none runs out in it: real expiry is tested apart, with a clock
 * that follows Redis'), member deletes over random ranges, whole-counter deletes followed by a new
 * life, the sweep job at random times (until `more` is false), and Idempotency-Key retries. Every
 * read (top/bottom, member, score range; plain and over bucket ranges) is compared with the model.
 * Bad input through the real app: a 400 envelope and not one command sent to Redis (the local
 * server's per-token counters).
 */
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../dev/prng.ts";
import { createApp } from "../../functions/app.ts";
import type { Ctx } from "../../src/context.ts";
import {
  deleteCounter,
  deleteMember,
  increment,
  memberOf,
  ranked,
  scoreRange,
  sweepCountersJob,
  type IncrItem,
} from "../../src/counters/index.ts";
import { ConflictError, NotFoundError } from "../../src/errors.ts";
import { keyOf } from "../../src/keys.ts";
import type { Period } from "../../src/time.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, keysUnder, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const lib = libraryTest("r17cnt", { timeoutMs: 30_000 });
const { target, config } = lib;

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const T0 = Date.UTC(2026, 10, 20, 9, 17);

// ---- the calendar, written out again (UTC)
function startOf(period: Period, t: number): number {
  if (period === "hour") return Math.floor(t / HOUR) * HOUR;
  const day = Math.floor(t / DAY) * DAY;
  if (period === "day") return day;
  if (period === "week") return day - ((new Date(day).getUTCDay() + 6) % 7) * DAY;
  const d = new Date(t);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}
/** Redis orders equal scores by member bytes (UTF-8). */
const bytes = (a: string, b: string) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
/** -0 and 0 read the same. */
const z = (n: number) => n + 0;

/** One counter: its plain key and buckets (`${period}|${start}`), member -> score. */
class Model {
  plain = new Map<string, number>();
  buckets = new Map<string, Map<string, number>>();
  key(period: Period | undefined, at: number): Map<string, number> {
    if (!period) return this.plain;
    const id = `${period}|${startOf(period, at)}`;
    let b = this.buckets.get(id);
    if (!b) this.buckets.set(id, (b = new Map()));
    return b;
  }
  inRange(period: Period, from: number, to: number): Map<string, number>[] {
    const lo = startOf(period, from);
    const hi = startOf(period, to);
    const out: Map<string, number>[] = [];
    for (const [id, b] of this.buckets) {
      const [p, s] = id.split("|");
      if (p === period && +s! >= lo && +s! <= hi) out.push(b);
    }
    return out;
  }
  /** The members of a read: the plain key, or the sum over a range's buckets (absent where no bucket holds it). */
  view(range?: { period: Period; from: number; to: number }): [string, number][] {
    if (!range) return [...this.plain.entries()];
    const sum = new Map<string, number>();
    for (const b of this.inRange(range.period, range.from, range.to))
      for (const [m, s] of b) sum.set(m, (sum.get(m) ?? 0) + s);
    return [...sum.entries()];
  }
}

const MEMBERS = ["a", "b", "c", "é", "日本", "🙂", "10", "9", "z z", "x".repeat(256)];
const PERIODS: (Period | undefined)[] = [undefined, undefined, "hour", "day", "month"];

async function fails<T>(p: Promise<T>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("expected a refusal");
}

/** Every read of `range` (or the plain key) against the model. */
async function compareReads(
  ctx: Ctx,
  name: string,
  model: Model,
  range: { period: Period; from: number; to: number } | undefined,
  what: string,
  rand: () => number,
) {
  const opts = range ? { period: range.period, from: range.from, to: range.to } : {};
  const data = model.view(range);
  const desc = [...data].sort((a, b) => b[1] - a[1] || bytes(b[0], a[0]));
  const asc = [...data].sort((a, b) => a[1] - b[1] || bytes(a[0], b[0]));
  const n = 1 + Math.floor(rand() * 12);
  const top = await ranked(ctx, name, "top", n, opts);
  expect(
    top.items.map((i) => [i.member, z(i.score)]),
    `${what}: top ${n}`,
  ).toEqual(desc.slice(0, n).map(([m, s]) => [m, z(s)]));
  const bottom = await ranked(ctx, name, "bottom", n, opts);
  expect(
    bottom.items.map((i) => [i.member, z(i.score)]),
    `${what}: bottom ${n}`,
  ).toEqual(asc.slice(0, n).map(([m, s]) => [m, z(s)]));
  // one member read, present or not
  const who = MEMBERS[Math.floor(rand() * MEMBERS.length)]!;
  const held = data.find(([m]) => m === who);
  if (held) {
    const got = await memberOf(ctx, name, who, opts);
    expect(z(got.score), `${what}: member ${who}`).toBe(z(held[1]));
    expect(got.rank, `${what}: rank of ${who}`).toBe(desc.findIndex(([m]) => m === who) + 1);
    expect(got.rankFromBottom, `${what}: rank from bottom of ${who}`).toBe(asc.findIndex(([m]) => m === who) + 1);
  } else {
    expect(await fails(memberOf(ctx, name, who, opts)), `${what}: member ${who} absent`).toBeInstanceOf(NotFoundError);
  }
  // a score range with random (in/ex)clusive bounds
  const lo = Math.floor(rand() * 9) - 4;
  const hi = lo + Math.floor(rand() * 6);
  const loEx = rand() < 0.5;
  const hiEx = rand() < 0.5;
  const inside = asc.filter(([, s]) => (loEx ? s > lo : s >= lo) && (hiEx ? s < hi : s <= hi));
  const got = await scoreRange(ctx, name, {
    ...opts,
    min: `${loEx ? "(" : ""}${lo}`,
    max: `${hiEx ? "(" : ""}${hi}`,
    limit: 5,
  });
  expect(got.count, `${what}: range count ${lo}..${hi}`).toBe(inside.length);
  expect(
    got.items.map((i) => [i.member, z(i.score)]),
    `${what}: range ${lo}..${hi}`,
  ).toEqual(inside.slice(0, 5).map(([m, s]) => [m, z(s)]));
}

async function run(seed: number, steps: number) {
  const rand = mulberry32(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
  const base = lib.ctx(T0, `r17s${seed}`);
  const name = "c";
  let now = T0;
  let model = new Model();
  const ctx = () => ({ ...base, now });
  let idemN = 0;
  /** Earlier keyed calls: key -> the items and the answer. */
  const keyed: { idem: { key: string; fingerprint: string }; items: IncrItem[]; scores: number[] }[] = [];
  for (let step = 0; step < steps; step++) {
    const what = `seed ${seed} step ${step}`;
    now += Math.floor(rand() * 5 * HOUR);
    const r = rand();
    if (r < 0.5) {
      const items: IncrItem[] = [];
      const count = 1 + Math.floor(rand() * 4);
      for (let i = 0; i < count; i++) {
        const period = pick(PERIODS);
        const item: IncrItem = { member: pick(MEMBERS), by: Math.floor(rand() * 11) - 5 };
        if (period) {
          item.period = period;
          if (rand() < 0.6) item.at = now - Math.floor(rand() * 12 * DAY);
        }
        // ttls past the run's span: none runs out in it (real expiry is the next test's)
        if (rand() < 0.3) item.ttl = 60 * 86400 + Math.floor(rand() * 1000);
        if (rand() < 0.1) item.by = -0;
        items.push(item);
      }
      const idem =
        rand() < 0.2 ? { key: keyOf(base.prefix, "idem", `k${idemN}`), fingerprint: `fp${idemN++}` } : undefined;
      const got = await increment(ctx(), name, items, idem);
      const want = items.map((item) => {
        const k = model.key(item.period, typeof item.at === "number" ? item.at : now);
        const s = (k.get(item.member) ?? 0) + (item.by ?? 1);
        k.set(item.member, s);
        return z(s);
      });
      expect(got.replayed, what).toBe(false);
      expect(
        got.results.map((x) => z(x.score)),
        `${what}: incr ${JSON.stringify(items)}`,
      ).toEqual(want);
      if (idem) keyed.push({ idem, items, scores: want });
    } else if (r < 0.6 && keyed.length > 0) {
      // a retry: replayed, counted once; the same key with another body is a 409
      const old = pick(keyed);
      const again = await increment(ctx(), name, old.items, old.idem);
      expect(again.replayed, `${what}: replay`).toBe(true);
      expect(
        again.results.map((x) => z(x.score)),
        `${what}: replayed answer`,
      ).toEqual(old.scores);
      const other = await fails(
        increment(ctx(), name, [{ member: "a", by: 1 }], { ...old.idem, fingerprint: "other" }),
      );
      expect(other, `${what}: other body`).toBeInstanceOf(ConflictError);
    } else if (r < 0.75) {
      const member = pick(MEMBERS);
      const period = pick(PERIODS);
      if (!period) {
        const got = await deleteMember(ctx(), name, member);
        expect(got.removed, `${what}: delete ${member}`).toBe(model.plain.delete(member) ? 1 : 0);
      } else {
        const to = now - Math.floor(rand() * 6 * DAY);
        const from = to - Math.floor(rand() * 8 * DAY);
        const hit = model.inRange(period, from, to).filter((b) => b.delete(member)).length;
        const got = await deleteMember(ctx(), name, member, { period, from, to });
        expect(got.removed, `${what}: delete ${member} ${period} ${from}..${to}`).toBe(hit);
      }
    } else if (r < 0.8) {
      const got = await deleteCounter(ctx(), name);
      const had = model.plain.size > 0 || [...model.buckets.values()].some((b) => b.size > 0);
      if (had) expect(got.existed, `${what}: counter delete`).toBe(true);
      model = new Model();
    } else if (r < 0.87) {
      for (let i = 0; i < 10; i++) if (!(await sweepCountersJob(ctx(), config)).more) break;
    }
    // reads after every step: the plain key and a random range of a random period
    await compareReads(ctx(), name, model, undefined, `${what} plain`, rand);
    const period = pick(["hour", "day", "month"] as const);
    const to = now - Math.floor(rand() * 4 * DAY);
    const from = to - Math.floor(rand() * 10 * DAY);
    await compareReads(ctx(), name, model, { period, from, to }, `${what} ${period} ${from}..${to}`, rand);
  }
}

describe("review 17: counter writes and deletes against a model", () => {
  for (const seed of [1701, 1702, 1703])
    it(`seed ${seed}: 120 random steps, every read as the model says`, async () => {
      await run(seed, 120);
    }, 240_000);

  it("a new life does not see the old life's buckets, before or after the sweep", async () => {
    const ctx = lib.ctx(T0, "r17life");
    await increment(ctx, "c", [
      { member: "a", by: 5, period: "day", at: T0 - DAY },
      { member: "a", by: 7, period: "hour", at: T0 - 2 * HOUR },
      { member: "b", by: 2 },
    ]);
    await deleteCounter(ctx, "c");
    // the new life writes the same buckets again
    await increment(ctx, "c", [
      { member: "a", by: 1, period: "day", at: T0 - DAY },
      { member: "a", by: 1, period: "hour", at: T0 - 2 * HOUR },
    ]);
    const day = { period: "day" as const, from: T0 - 3 * DAY, to: T0 };
    expect((await memberOf(ctx, "c", "a", day)).score).toBe(1);
    expect((await memberOf(ctx, "c", "a", { period: "hour", from: T0 - 5 * HOUR, to: T0 })).score).toBe(1);
    expect(
      await memberOf(ctx, "c", "a", { period: "month", from: T0, to: T0 }).catch((e: unknown) => e),
    ).toBeInstanceOf(NotFoundError);
    expect(await fails(memberOf(ctx, "c", "b"))).toBeInstanceOf(NotFoundError);
    expect((await sweepCountersJob(ctx, config)).more).toBe(false);
    expect((await memberOf(ctx, "c", "a", day)).score).toBe(1);
    expect((await ranked(ctx, "c", "top", 10, { period: "hour", from: T0 - DAY, to: T0 })).items).toEqual([
      { rank: 1, member: "a", score: 1 },
    ]);
  });
});

describe("review 17: real expiry (a clock that follows Redis')", () => {
  it("a 1 s ttl: the plain key and the day bucket expire, and a later write starts from zero", async () => {
    const base = lib.ctx(Date.now(), "r17ttl");
    const at = () => ({ ...base, now: Date.now() });
    await increment(at(), "t", [
      { member: "a", by: 3, ttl: 1 },
      { member: "a", by: 4, period: "day", ttl: 1 },
    ]);
    const plainKey = keyOf(base.prefix, "counters", "t");
    const pttl = Number(await command(target, "PTTL", plainKey));
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(1000);
    // a second write with a ttl once less than the ttl is left: extended to ttl + a tenth (docs "TTL")
    await increment(at(), "t", [{ member: "b", by: 1, ttl: 1 }]);
    expect(Number(await command(target, "PTTL", plainKey))).toBeLessThanOrEqual(1100);
    await new Promise((r) => setTimeout(r, 2300));
    expect(await fails(memberOf(at(), "t", "a"))).toBeInstanceOf(NotFoundError);
    const today = { period: "day" as const, from: Date.now(), to: Date.now() };
    expect(await fails(memberOf(at(), "t", "a", today))).toBeInstanceOf(NotFoundError);
    const again = await increment(at(), "t", [
      { member: "a", by: 1 },
      { member: "a", by: 1, period: "day" },
    ]);
    expect(again.results.map((r) => r.score)).toEqual([1, 1]);
    // created without a ttl: kept for ever
    expect(Number(await command(target, "PTTL", plainKey))).toBe(-1);
    expect((await memberOf(at(), "t", "a", today)).score).toBe(1);
  });

  it("an existing key without expiry keeps none when a write names a ttl", async () => {
    const base = lib.ctx(Date.now(), "r17keep");
    const at = () => ({ ...base, now: Date.now() });
    await increment(at(), "k", [{ member: "a" }, { member: "a", period: "day" }]);
    await increment(at(), "k", [
      { member: "b", ttl: 1 },
      { member: "b", period: "day", ttl: 1 },
    ]);
    const keys = await keysUnder(target, keyOf(base.prefix, "counters", "k"));
    for (const k of keys)
      if ((await command(target, "TYPE", k)) === "zset") expect(Number(await command(target, "PTTL", k)), k).toBe(-1);
  });
});

// ---- bad input through the real app: 400 envelope, not one command sent to Redis
const TAG = `r17bad${Math.random().toString(36).slice(2, 8)}`;
const KEYS = {
  ingest: "ingest-r17-0123456789abcdef",
  read: "read-r17-0123456789abcdef",
  admin: "admin-r17-0123456789abcdef",
};
const app = createApp();
function env() {
  return { ...lib.appEnv(KEYS), UPSTASH_REDIS_REST_TOKEN: `${target.token}.${TAG}` };
}
async function api(method: string, path: string, raw?: string, key = KEYS.ingest) {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (raw !== undefined) headers["content-type"] = "application/json";
  const res = await app.request(path, { method, headers, ...(raw !== undefined ? { body: raw } : {}) }, env());
  const text = await res.text();
  return {
    status: res.status,
    body: text ? (JSON.parse(text) as { error?: { code: string; message: string } }) : undefined,
  };
}

describe("review 17: bad increments and deletes are 400s that send nothing to Redis", () => {
  const big = "🙂".repeat(65); // 260 bytes
  const cases: [string, string, string | undefined][] = [
    ["NaN", "POST", '{"member":"a","by":NaN}'],
    ["Infinity", "POST", '{"member":"a","by":Infinity}'],
    ["1e309 (Infinity once parsed)", "POST", '{"member":"a","by":1e309}'],
    ["by past 1e12", "POST", '{"member":"a","by":1000000000001}'],
    ["1e308", "POST", '{"member":"a","by":1e308}'],
    ["by as a string", "POST", '{"member":"a","by":"1"}'],
    ["a member of 257 bytes", "POST", JSON.stringify({ member: "é" + "x".repeat(255) })],
    ["a member of 65 emoji", "POST", JSON.stringify({ member: big })],
    ["an empty member", "POST", '{"member":""}'],
    ["a control character", "POST", JSON.stringify({ member: "a\u0007b" })],
    ["a lone surrogate", "POST", '{"member":"a\\ud800"}'],
    ["ttl 0", "POST", '{"member":"a","ttl":0}'],
    ["ttl 1.5", "POST", '{"member":"a","ttl":1.5}'],
    ["at without period", "POST", `{"member":"a","at":${T0}}`],
    ["at 401 days back", "POST", `{"member":"a","period":"day","at":${Date.now() - 401 * DAY}}`],
    ["at an hour ahead", "POST", `{"member":"a","period":"day","at":${Date.now() + HOUR}}`],
    ["a bad period", "POST", '{"member":"a","period":"year"}'],
    ["one bad item of a batch", "POST", '{"items":[{"member":"a"},{"member":"b","by":1e13}]}'],
    ["1,001 items", "POST", JSON.stringify({ items: Array.from({ length: 1001 }, () => ({ member: "a" })) })],
  ];
  for (const [label, method, raw] of cases)
    it(`incr: ${label}`, async () => {
      await resetStats(target, TAG);
      const res = await api(method, "/v1/counters/bad/incr", raw);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body?.error?.code).toMatch(/^[a-z_]+$/);
      expect(typeof res.body?.error?.message).toBe("string");
      expect((await statsOf(target, TAG)).commands).toBe(0);
      expect(await keysUnder(target, keyOf(lib.prefix, "counters", "bad"))).toEqual([]);
    });

  it("delete of a member of 257 bytes: 400, nothing sent", async () => {
    await resetStats(target, TAG);
    const res = await api("DELETE", `/v1/counters/bad/members/${encodeURIComponent("é" + "x".repeat(255))}`);
    expect(res.status).toBe(400);
    expect((await statsOf(target, TAG)).commands).toBe(0);
  });

  it("valid edge values are accepted: -0, by 0, 256 bytes of emoji, ±1e12", async () => {
    const ok = await api(
      "POST",
      "/v1/counters/edge/incr",
      JSON.stringify({
        items: [
          { member: "🙂".repeat(64), by: -0 },
          { member: "zero", by: 0 },
          { member: "big", by: 1e12 },
          { member: "big", by: -1e12 },
        ],
      }),
    );
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect((ok.body as unknown as { results: { score: number }[] }).results.map((r) => r.score)).toEqual([
      0, 0, 1e12, 0,
    ]);
  });
});
