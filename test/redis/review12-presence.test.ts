/**
 * Review 12 (adversarial) of presence's leave in a room that maps no id (an `ids` hash made by the
 * leave, with an expiry and field `\x03`; the first mapping heartbeat PERSISTs it), of
 * presence.dropMarks deleting `seq` when dropping a mark empties `ids`, and of their cost rows.
 * Real TTLs are read with PTTL (test/helpers/virtual-expiry.ts cannot see PERSIST). Redis's clock
 * does not move with the injected times, so the random sequences stay within a day (a hash made by
 * a leave would not have expired yet in real time either) and only then jump ahead for the trim runs.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readConfig } from "../../src/config.ts";
import type { Ctx } from "../../src/context.ts";
import * as presence from "../../src/presence/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { BOOKKEEPING, Monitor } from "../helpers/monitor.ts";
import { command } from "../helpers/upstash-rest.ts";
import { mulberry32 } from "../../dev/prng.ts";

const { createTrimJob, deleteRoom, heartbeat, leave, members, stats } = presence;
const lib = libraryTest("review12-presence");
const target = lib.target;
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const TIMEOUT = 300 * SECOND;
const T0 = Date.UTC(2026, 10, 22, 6, 0);
/** The shortest horizon: rooms are forgotten soon after the marks. */
const config = readConfig({ PRESENCE_ID_HORIZON_DAYS: "2" });
const job = createTrimJob();

const key = (ctx: Ctx, room: string, part: string) => `${ctx.prefix}:presence:${room}:${part}`;
const reg = (ctx: Ctx, part: string) => `${ctx.prefix}:presence:${part}`;
const pttl = (ctx: Ctx, room: string, part: string) => command<number>(target, "PTTL", key(ctx, room, part));
const at = (ctx: Ctx, now: number): Ctx => ({ ...ctx, now });

/** The room's keys with no TTL (PTTL -1). */
async function lasting(ctx: Ctx, room: string): Promise<string[]> {
  const keys = await command<string[]>(target, "KEYS", `${ctx.prefix}:presence:${room}:*`);
  const out: string[] = [];
  for (const k of keys) if ((await command<number>(target, "PTTL", k)) === -1) out.push(k);
  return out.map((k) => k.slice(`${ctx.prefix}:presence:${room}:`.length)).sort();
}

/** The `ids` hash split by field kind. */
async function idsOf(ctx: Ctx, room: string) {
  const flat = await command<string[]>(target, "HGETALL", key(ctx, room, "ids"));
  const map = new Map<string, number>();
  const reverse = new Map<number, string>();
  const marks = new Map<string, number>();
  let made: number | undefined;
  for (let i = 0; i < flat.length; i += 2) {
    const f = flat[i] as string;
    const v = flat[i + 1] as string;
    if (f.startsWith("\u0001")) reverse.set(Number(f.slice(1)), v);
    else if (f.startsWith("\u0002")) marks.set(f.slice(1), Number(v));
    else if (f === "\u0003") made = Number(v);
    else map.set(f, Number(v));
  }
  return { map, reverse, marks, made };
}

/** Every structural promise of a room's keys at any moment. */
async function checkRoom(ctx: Ctx, room: string, ids: readonly string[], where: string) {
  const { map, reverse, marks, made } = await idsOf(ctx, room);
  const ttl = await pttl(ctx, room, "ids");
  // a hash with an expiry is one a leave made: it maps nothing; one that maps an id has none
  if (made !== undefined) {
    expect(ttl, `${where}: made hash has an expiry`).toBeGreaterThan(0);
    expect([...map.keys(), ...reverse.keys()], `${where}: made hash maps nothing`).toEqual([]);
  }
  if (ttl > 0) expect(made, `${where}: a hash with an expiry says so`).toBeDefined();
  if (map.size > 0) expect(ttl, `${where}: a mapping hash is kept`).toBe(-1);
  // compact ids are distinct, mapped both ways, and below the counter (never handed out again)
  const values = [...map.values()];
  expect(new Set(values).size, `${where}: distinct compact ids`).toBe(values.length);
  for (const [id, n] of map) expect(reverse.get(n), `${where}: reverse of ${id}`).toBe(id);
  const seqRaw = await command<string | null>(target, "GET", key(ctx, room, "seq"));
  if (values.length > 0) {
    expect(seqRaw, `${where}: seq kept while ids are mapped`).not.toBeNull();
    expect(Number(seqRaw), `${where}: seq ≥ every mapped compact id`).toBeGreaterThanOrEqual(Math.max(...values));
  }
  // no live daily bitmap holds a bit of a compact id the counter could hand out again (AU exact)
  const dailies = await command<string[]>(target, "KEYS", `${ctx.prefix}:presence:${room}:daily:*`);
  for (const k of dailies) {
    const bits = await command<number>(target, "BITCOUNT", k, "16", "-1");
    if (seqRaw === null) expect(bits, `${where}: ${k} has AU bits while seq is gone`).toBe(0);
    else {
      const next = await command<number[]>(target, "BITFIELD", k, "GET", "u8", String(128 + Number(seqRaw) + 1));
      expect(next[0], `${where}: ${k} has bits past seq ${seqRaw}`).toBe(0);
    }
  }
  const seen = await command<string[]>(target, "ZRANGE", key(ctx, room, "seen"), "0", "-1");
  for (const n of seen) expect(values, `${where}: seen ${n} is mapped`).toContain(Number(n));
  // marks are of ids (no control byte), and the reads show ids only
  for (const id of marks.keys()) expect(ids, `${where}: mark of an id`).toContain(id);
  const page = await members(ctx, room, { limit: 1 });
  for (const m of page.members) expect(ids).toContain(m.id);
  const all = await members(ctx, room, { limit: 1000 });
  for (const m of all.members) expect(ids).toContain(m.id);
  const s = await stats(ctx, room);
  expect(s.online).toBe(all.members.length);
  expect(s.activeToday).toBeLessThanOrEqual(ids.length);
}

/** dev/prng.ts's mulberry32 with the draws these runs use. */
function rng(seed: number) {
  const next = mulberry32(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = <T>(list: readonly T[]): T => list[int(0, list.length - 1)] as T;
  return { next, int, pick };
}

describe("review12: every key of a room expires or is deleted, in any order of writes and runs", () => {
  const IDS = ["a", "b", "c", "ghost"] as const;
  const ROOMS = ["r", "s"] as const;
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]) {
    it(`random sequence, seed ${seed}`, async () => {
      const ctx = lib.ctx(T0, `rv12p-seq${seed}`);
      const g = rng(seed);
      let t = T0;
      const log: string[] = [];
      for (let step = 0; step < 30; step++) {
        t += g.pick([1, 7, 60, 300, 900, 3600]) * SECOND;
        const room = g.pick(ROOMS);
        const roll = g.next();
        if (roll < 0.3) {
          const ids = IDS.filter(() => g.next() < 0.5);
          const batch = ids.length > 0 ? ids : [g.pick(IDS)];
          // sometimes a queued heartbeat, sent up to 10 min before it is applied
          const sent = g.next() < 0.4 ? t - g.int(1, 600) * SECOND : t;
          log.push(`hb ${room} ${batch.join(",")} @${sent - T0}`);
          await heartbeat(at(ctx, sent), room, batch);
        } else if (roll < 0.6) {
          const id = g.pick(IDS);
          log.push(`leave ${room} ${id} @${t - T0}`);
          await leave(at(ctx, t), room, id);
        } else if (roll < 0.85) {
          log.push(`trim @${t - T0}`);
          await job(at(ctx, t), config);
        } else if (roll < 0.92) {
          log.push(`delete ${room} @${t - T0}`);
          await deleteRoom(at(ctx, t), room);
        } else {
          // idle: a long gap (still within the first day)
          t += 2 * HOUR;
          log.push(`idle → @${t - T0}`);
          await job(at(ctx, t), config);
        }
        for (const r of ROOMS) await checkRoom(at(ctx, t), r, IDS, `seed ${seed} after ${log.join(" | ")}`);
      }
      // the marks' time, the rooms' idle end and the horizon pass: the trim job runs now and then
      for (const later of [10 * MINUTE, 2 * DAY + 10 * MINUTE, 3 * DAY, 4 * DAY + 10 * MINUTE, 6 * DAY, 9 * DAY]) {
        await job(at(ctx, t + later), config);
      }
      for (const r of ROOMS) expect(await lasting(ctx, r), `seed ${seed}: ${log.join(" | ")}`).toEqual([]);
      expect(await command<number>(target, "ZCARD", reg(ctx, "_due")), log.join(" | ")).toBe(0);
      expect(await command<number>(target, "ZCARD", reg(ctx, "_rooms")), log.join(" | ")).toBe(0);
    });
  }
});

/**
 * Real time does not pass in Redis: what would have expired by `now` is deleted here, as Redis
 * would have (an `ids` hash a leave made, at the time its `\x03` field names; daily bitmaps past the
 * end of the day after theirs), so sequences can span days and interleave the marks' drops.
 */
async function expireUpTo(ctx: Ctx, room: string, now: number) {
  const { made } = await idsOf(ctx, room);
  if (made !== undefined && made <= now) await command(target, "DEL", key(ctx, room, "ids"));
  const dailies = await command<string[]>(target, "KEYS", `${ctx.prefix}:presence:${room}:daily:*`);
  for (const k of dailies) {
    const label = k.slice(k.lastIndexOf(":") + 1);
    const end = Date.UTC(Number(label.slice(0, 4)), Number(label.slice(4, 6)) - 1, Number(label.slice(6, 8))) + 2 * DAY;
    if (end <= now) await command(target, "DEL", k);
  }
}

describe("review12: the same over days, marks dropped between the writes (expiries played by hand)", () => {
  const IDS = ["a", "b", "ghost", "g2"] as const;
  const ROOMS = ["r", "s"] as const;
  for (const seed of [101, 102, 103, 104, 105, 106, 107, 108, 109, 110]) {
    it(`random sequence over days, seed ${seed}`, async () => {
      const ctx = lib.ctx(T0, `rv12p-days${seed}`);
      const g = rng(seed);
      let t = T0;
      const log: string[] = [];
      for (let step = 0; step < 40; step++) {
        t += g.pick([1, 60, 300, 3600, 6 * 3600, 20 * 3600, 26 * 3600]) * SECOND;
        for (const r of ROOMS) await expireUpTo(ctx, r, t);
        const room = g.pick(ROOMS);
        const roll = g.next();
        if (roll < 0.3) {
          const batch = [g.pick(IDS)];
          const sent = g.next() < 0.4 ? Math.max(T0, t - g.int(1, 600) * SECOND) : t;
          log.push(`hb ${room} ${batch.join(",")} @${sent - T0}`);
          await heartbeat(at(ctx, sent), room, batch);
        } else if (roll < 0.6) {
          const id = g.pick(IDS);
          log.push(`leave ${room} ${id} @${t - T0}`);
          await leave(at(ctx, t), room, id);
        } else if (roll < 0.95) {
          log.push(`trim @${t - T0}`);
          await job(at(ctx, t), config);
        } else {
          log.push(`delete ${room} @${t - T0}`);
          await deleteRoom(at(ctx, t), room);
        }
        for (const r of ROOMS) await checkRoom(at(ctx, t), r, IDS, `seed ${seed} after ${log.join(" | ")}`);
      }
      for (const later of [10 * MINUTE, 2 * DAY + 10 * MINUTE, 3 * DAY, 4 * DAY + 10 * MINUTE, 6 * DAY, 9 * DAY]) {
        await job(at(ctx, t + later), config);
      }
      for (const r of ROOMS) expect(await lasting(ctx, r), `seed ${seed}: ${log.join(" | ")}`).toEqual([]);
      expect(await command<number>(target, "ZCARD", reg(ctx, "_due")), log.join(" | ")).toBe(0);
    });
  }
});

describe("review12: leave, then a heartbeat, in a room that maps no id", () => {
  it("the SAME id heartbeating after its leave is online; the hash is kept and says nothing of the leave", async () => {
    const ctx = lib.ctx(T0, "rv12p-same");
    await leave(ctx, "r", "u1");
    expect((await idsOf(ctx, "r")).made).toBe(T0 + TIMEOUT + 2 * DAY);
    const after = at(ctx, T0 + SECOND);
    expect(await heartbeat(after, "r", ["u1"])).toEqual({ online: 1, new: 1, replayed: false });
    expect(await pttl(ctx, "r", "ids")).toBe(-1);
    const ids = await idsOf(ctx, "r");
    expect(ids.made).toBeUndefined();
    expect([...ids.map]).toEqual([["u1", 1]]);
    expect((await members(after, "r")).members.map((m) => m.id)).toEqual(["u1"]);
    expect(await stats(after, "r")).toMatchObject({ online: 1, activeToday: 1, newToday: 1 });
    // its mark stays when its schedule entry comes due (it is the mapped id's now) and goes with it
    // past the horizon
    await heartbeat(at(ctx, T0 + DAY), "r", ["u1"]);
    await job(at(ctx, T0 + 2 * DAY + 10 * MINUTE), config);
    expect((await idsOf(ctx, "r")).marks.get("u1")).toBe(T0);
    expect(await command<number>(target, "ZCARD", reg(ctx, "_due"))).toBe(1); // the room's own entry
    await job(at(ctx, T0 + 4 * DAY), config);
    expect(await lasting(ctx, "r")).toEqual([]);
    expect(await command<number>(target, "ZCARD", reg(ctx, "_due"))).toBe(0);
  });

  it("a heartbeat of the same ms as the leave, applied after it, counts as sent after it", async () => {
    const ctx = lib.ctx(T0, "rv12p-samems");
    await leave(ctx, "r", "u1");
    expect(await heartbeat(ctx, "r", ["u1"])).toMatchObject({ online: 1, new: 1 });
    expect((await stats(ctx, "r")).online).toBe(1);
  });

  it("the first id's queued heartbeat and another id's, in one batch (either order), map both; only the left one is offline", async () => {
    for (const order of [
      ["u1", "u2"],
      ["u2", "u1"],
    ]) {
      const ctx = lib.ctx(T0, `rv12p-batch-${order.join("")}`);
      await leave(at(ctx, T0 + SECOND), "r", "u1");
      // one heartbeat call (the consumer's window merges a batch's ids into one): sent before the leave
      expect(await heartbeat(ctx, "r", order)).toMatchObject({ new: 2 });
      const after = at(ctx, T0 + 2 * SECOND);
      expect((await members(after, "r")).members.map((m) => m.id)).toEqual(["u2"]);
      expect(await stats(after, "r")).toMatchObject({ online: 1, activeToday: 2, newToday: 2 });
      expect(await pttl(ctx, "r", "ids")).toBe(-1);
      expect((await idsOf(ctx, "r")).made).toBeUndefined();
    }
  });

  it("the expiry: a later leave (same id or another) pushes it back, an equal one too (Redis's clock, GT), an older one does not", async () => {
    const ctx = lib.ctx(T0, "rv12p-push");
    const ids = key(ctx, "r", "ids");
    await leave(ctx, "r", "u1");
    await command(target, "PEXPIRE", ids, String(DAY));
    // the same id, later: pushed back to a timeout and 2 days (relative), `\x03` moves with it
    await leave(at(ctx, T0 + 10 * SECOND), "r", "u1");
    expect(await pttl(ctx, "r", "ids")).toBeGreaterThan(2 * DAY);
    expect((await idsOf(ctx, "r")).made).toBe(T0 + 10 * SECOND + TIMEOUT + 2 * DAY);
    // the same ms again, another id: its mark is new, so the expiry is pushed to a keep on Redis's
    // clock (PEXPIRE GT: the Workers' clocks do not decide it; review 12); `\x03` stays
    await command(target, "PEXPIRE", ids, String(DAY));
    await leave(at(ctx, T0 + 10 * SECOND), "r", "u2");
    expect(await pttl(ctx, "r", "ids")).toBeGreaterThan(2 * DAY);
    expect((await idsOf(ctx, "r")).marks.get("u2")).toBe(T0 + 10 * SECOND);
    expect((await idsOf(ctx, "r")).made).toBe(T0 + 10 * SECOND + TIMEOUT + 2 * DAY);
    await command(target, "PEXPIRE", ids, String(DAY));
    // an older leave of u1 (a Worker's clock behind): nothing moves, the later mark stays
    await leave(at(ctx, T0 + 5 * SECOND), "r", "u1");
    expect(await pttl(ctx, "r", "ids")).toBeLessThanOrEqual(DAY);
    expect((await idsOf(ctx, "r")).marks.get("u1")).toBe(T0 + 10 * SECOND);
    // a later leave with a shorter timeout than the hash's time: the hash keeps the longer time
    await command(target, "PEXPIRE", ids, String(3 * DAY));
    await leave(at(ctx, T0 + 20 * SECOND), "r", "u3", { timeoutSeconds: 5 });
    expect(await pttl(ctx, "r", "ids")).toBeGreaterThan(2 * DAY + TIMEOUT);
    expect((await idsOf(ctx, "r")).made).toBe(T0 + 10 * SECOND + TIMEOUT + 2 * DAY);
  });

  it("dropMarks empties a made hash of its marks: `\\x03` alone keeps its expiry; a leave there later pushes it, a heartbeat persists it", async () => {
    const ctx = lib.ctx(T0, "rv12p-drop-made");
    await leave(ctx, "r", "u1");
    await job(at(ctx, T0 + TIMEOUT + 2 * DAY + MINUTE), config);
    const left = await idsOf(ctx, "r");
    expect(left.marks.size).toBe(0);
    expect(left.made).toBe(T0 + TIMEOUT + 2 * DAY);
    expect(await pttl(ctx, "r", "ids")).toBeGreaterThan(0);
    expect(await command<number>(target, "EXISTS", key(ctx, "r", "seq"))).toBe(0);
    const later = T0 + TIMEOUT + 2 * DAY + 2 * MINUTE;
    await leave(at(ctx, later), "r", "u2");
    expect((await idsOf(ctx, "r")).made).toBe(later + TIMEOUT + 2 * DAY);
    await heartbeat(at(ctx, later + SECOND), "r", ["u3"]);
    expect(await pttl(ctx, "r", "ids")).toBe(-1);
    expect((await idsOf(ctx, "r")).made).toBeUndefined();
    expect(await command<string>(target, "GET", key(ctx, "r", "seq"))).toBe("1");
  });

  it("a room deleted after a leave made its hash: the mark's schedule entry goes on time, nothing is left", async () => {
    const ctx = lib.ctx(T0, "rv12p-del");
    await leave(ctx, "r", "u1");
    await deleteRoom(at(ctx, T0 + SECOND), "r");
    expect(await command<number>(target, "EXISTS", key(ctx, "r", "ids"))).toBe(0);
    // a new leave after the delete makes a new hash with its own expiry
    await leave(at(ctx, T0 + 2 * SECOND), "r", "u2");
    expect(await lasting(ctx, "r")).toEqual([]);
    await job(at(ctx, T0 + 2 * DAY + 10 * MINUTE), config);
    expect(await command<number>(target, "ZCARD", reg(ctx, "_due"))).toBe(0);
    expect(await lasting(ctx, "r")).toEqual([]);
  });
});

describe("review12: compact ids are never handed out twice while mapped", () => {
  it("seq goes only with the last mapping: a mark dropped beside mapped ids keeps it; a heartbeat after seq went starts at 1 in an empty room", async () => {
    const ctx = lib.ctx(T0, "rv12p-seq");
    await heartbeat(ctx, "r", ["a", "b"]);
    await leave(at(ctx, T0 + MINUTE), "r", "ghost");
    await leave(at(ctx, T0 + 2 * MINUTE), "r", "a");
    // b stays seen; the ghost's mark goes
    for (const d of [1, 2]) await heartbeat(at(ctx, T0 + d * DAY), "r", ["b"]);
    await job(at(ctx, T0 + 2 * DAY + 10 * MINUTE), config);
    expect((await idsOf(ctx, "r")).marks.has("ghost")).toBe(false);
    expect(await command<string>(target, "GET", key(ctx, "r", "seq"))).toBe("2");
    await heartbeat(at(ctx, T0 + 2 * DAY + 20 * MINUTE), "r", ["c"]);
    expect((await idsOf(ctx, "r")).map.get("c")).toBe(3);
    await checkRoom(at(ctx, T0 + 2 * DAY + 20 * MINUTE), "r", ["a", "b", "c", "ghost"], "after c");
  });

  it("a room dropped while marks of two unmapped ids are in `ids`: seq stays until the last of them goes", async () => {
    const ctx = lib.ctx(T0, "rv12p-two-marks");
    await heartbeat(ctx, "r", ["a"]);
    await leave(at(ctx, T0 + HOUR), "r", "g1");
    await leave(at(ctx, T0 + 3 * HOUR), "r", "g2");
    await job(at(ctx, T0 + 2 * DAY + MINUTE), config); // a forgotten, room dropped, marks still there
    expect(await command<string>(target, "GET", key(ctx, "r", "seq"))).toBe("1");
    await job(at(ctx, T0 + 2 * DAY + HOUR + 10 * MINUTE), config); // g1's mark goes, g2's stays
    expect(await command<string>(target, "GET", key(ctx, "r", "seq"))).toBe("1");
    // g2 heartbeats now: a new compact id, never 1 (a's, whose bits yesterday's bitmap may hold)
    await heartbeat(at(ctx, T0 + 2 * DAY + 2 * HOUR), "r", ["g2"]);
    expect((await idsOf(ctx, "r")).map.get("g2")).toBe(2);
    await job(at(ctx, T0 + 2 * DAY + 4 * HOUR), config);
    await job(at(ctx, T0 + 6 * DAY), config);
    expect(await lasting(ctx, "r")).toEqual([]);
    expect(await command<number>(target, "ZCARD", reg(ctx, "_due"))).toBe(0);
  });
});

describe("review12: cost rows of these paths (docs/costs.md rows 17, 18, 21, and 8)", () => {
  let mon: Monitor;
  beforeAll(async () => {
    mon = await Monitor.open(process.env.EDGESTATS_REDIS_URL ?? "", target, "rv12p-ready");
  });
  afterAll(() => mon?.close());
  let n = 0;
  async function commands(fn: () => Promise<unknown>): Promise<string[]> {
    const from = await mon.mark(`rv12p-from-${++n}`);
    await fn();
    const to = await mon.mark(`rv12p-to-${n}`);
    return mon.lines
      .slice(from + 1, to)
      .filter((l) => l.lua || !BOOKKEEPING.has(l.args[0]!.toUpperCase()))
      .map((l) => l.args[0]!.toUpperCase());
  }

  it("leave in a room that maps no id: 6; a later leave of another id there: 5; an id's older leave: 2", async () => {
    const ctx = lib.ctx(T0, "rv12p-cost-leave");
    expect(await commands(() => leave(ctx, "r", "u1"))).toEqual([
      "EVALSHA",
      "HMGET",
      "EXISTS",
      "HSET",
      "PEXPIRE",
      "ZADD",
    ]);
    expect(await commands(() => leave(at(ctx, T0 + SECOND), "r", "u2"))).toEqual([
      "EVALSHA",
      "HMGET",
      "HSET",
      "PEXPIRE",
      "ZADD",
    ]);
    expect(await commands(() => leave(at(ctx, T0 - SECOND), "r", "u2"))).toEqual(["EVALSHA", "HMGET"]);
    // a new id's leave of an earlier time (a Worker's clock behind): still pushed, on Redis's clock
    expect(await commands(() => leave(at(ctx, T0 - 2 * SECOND), "r", "u3"))).toEqual([
      "EVALSHA",
      "HMGET",
      "HSET",
      "PEXPIRE",
      "ZADD",
    ]);
  });

  it("trim run with one due mark: 7 in a made hash; 8 when the mark was the last field of a kept hash", async () => {
    const ctx = lib.ctx(T0, "rv12p-cost-drop");
    await leave(ctx, "r", "u1");
    const due = T0 + TIMEOUT + 2 * DAY + MINUTE;
    const made = await commands(() => job(at(ctx, due), config));
    expect(made.length).toBe(7);
    const other = lib.ctx(T0, "rv12p-cost-drop2");
    await heartbeat(other, "r", ["a"]);
    await leave(at(other, T0 + HOUR), "r", "g");
    await job(at(other, T0 + 2 * DAY + MINUTE), config);
    expect(await command<string>(target, "HLEN", key(other, "r", "ids"))).toBe(1);
    const last = await commands(() => job(at(other, T0 + 2 * DAY + HOUR + 10 * MINUTE), config));
    expect(last.length).toBe(8);
    expect(last).toContain("UNLINK");
    expect(await lasting(other, "r")).toEqual([]);
  });
});

describe("review12: odd ids and Workers' clocks", () => {
  it("ids with quotes, backslashes and non-ASCII: marks made, read, dropped on time; nothing left", async () => {
    const ctx = lib.ctx(T0, "rv12p-odd");
    const odd = ['a"b', "c\\d", "é😀", "[1,2]", "\u2028x"];
    for (const id of odd) await leave(ctx, "r", id);
    expect([...(await idsOf(ctx, "r")).marks.keys()].sort()).toEqual([...odd].sort());
    // the first one's heartbeat, sent before its leave, applied after: offline
    await heartbeat(at(ctx, T0 - SECOND), "r", [odd[0] as string]);
    expect((await members(at(ctx, T0 + SECOND), "r")).members).toEqual([]);
    expect((await idsOf(ctx, "r")).map.has(odd[0] as string)).toBe(true);
    // its last-seen (the leave's, a timeout back) passes the 2-day horizon, the others' marks come due
    await job(at(ctx, T0 + TIMEOUT + 2 * DAY + MINUTE), config);
    const left = await idsOf(ctx, "r");
    expect([...left.marks.keys(), ...left.map.keys()]).toEqual([]);
    await job(at(ctx, T0 + 4 * DAY), config);
    expect(await lasting(ctx, "r")).toEqual([]);
    expect(await command<number>(target, "ZCARD", reg(ctx, "_due"))).toBe(0);
  });

  // FIXED (was BUG, low): whether a later leave pushes the made hash's expiry back is decided on the Workers'
  // clocks (`dropAt > \x03`), the expiry itself is set on Redis's (PEXPIRE, relative). A leave from
  // a Worker whose clock is ahead writes a `\x03` time a correct Worker's later leaves do not pass
  // for as long as the skew, so their PEXPIRE is skipped: the hash (and their marks) expires up to
  // the skew before their own keep (a timeout and 2 days) has run on Redis's clock. A queued
  // heartbeat could then bring such an id back only with a skew over the timeout and a UTC day
  // boundary between the two leaves (the 2 days are counted from the heartbeat's day start), hence low.
  // Smallest fix: on every newer leave in a made hash, `PEXPIRE ids keep GT` (Redis's own clock
  // decides; the HSET of `\x03` can stay as it is): same 5 commands for a later leave, +1 (4 → 5)
  // only where the push is skipped today. Fixed so (docs/costs.md).
  it("a later leave (on Redis's clock) keeps the hash a whole keep, whatever the Workers' clocks say", async () => {
    const ctx = lib.ctx(T0, "rv12p-skew");
    const keep = TIMEOUT + 2 * DAY;
    // a Worker 10 min ahead leaves first
    await leave(at(ctx, T0 + 10 * MINUTE), "r", "u1");
    // 5 min pass on Redis's clock (the relative expiry says so)
    await command(target, "PEXPIRE", key(ctx, "r", "ids"), String(keep - 5 * MINUTE));
    // a correct Worker's leave, 5 min after the first in real time: its mark must live a keep from now
    await leave(at(ctx, T0 + 5 * MINUTE), "r", "u2");
    expect(await pttl(ctx, "r", "ids")).toBeGreaterThan(keep - MINUTE);
  });
});
