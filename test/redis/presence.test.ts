/**
 * The presence library and its trim job on Node, through @upstash/redis and
 * the local Upstash server: bounded job runs, concurrent first sightings, and
 * a model check of the online count and member list under random operations.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/config.ts";
import type { Ctx } from "../../src/context.ts";
import * as presence from "../../src/presence/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { command } from "../helpers/upstash-rest.ts";

const { createTrimJob, heartbeat, history, leave, members: listMembers, stats: roomStats } = presence;
const lib = libraryTest("presence");
const target = lib.target;
const config = lib.config;
const T0 = Date.UTC(2026, 10, 22, 12, 0);

function ctxAt(label: string, now = T0): Ctx {
  return lib.ctx(now, label);
}
const zcard = (ctx: Ctx, room: string) => command<number>(target, "ZCARD", `${ctx.prefix}:presence:${room}:seen`);
const ids = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}`);

describe("trim job, called directly", () => {
  const DAY = 86_400_000;

  it("is bounded: rooms beyond maxRooms wait, and a capped run rotates them", async () => {
    const ctx = ctxAt("ptrim-bound");
    for (const [i, room] of ["r1", "r2", "r3"].entries()) {
      await heartbeat({ ...ctx, now: T0 + i * 1000 }, room, ids(10, room));
    }
    const job = createTrimJob({ maxRooms: 2, chunkRooms: 1 });
    const first = await job({ ...ctx, now: T0 + 60_000 }, config);
    // The two longest waiting rooms (r1, r2), one script call each.
    expect(first).toMatchObject({ rooms: 2, capped: true, calls: 3, online: 20 });
    const points = async (room: string) => (await history({ ...ctx, now: T0 + 3 * 60_000 }, room)).points.length;
    expect([await points("r1"), await points("r2"), await points("r3")]).toEqual([1, 1, 0]);
    // The capped run moved r1 and r2 to the back: r3 goes first now.
    const second = await job({ ...ctx, now: T0 + 2 * 60_000 }, config);
    expect(second).toMatchObject({ rooms: 2, capped: true, online: 20 });
    expect(await points("r3")).toBe(1);
    const all = await createTrimJob({ chunkRooms: 3 })({ ...ctx, now: T0 + 3 * 60_000 }, config);
    expect(all).toMatchObject({ rooms: 3, calls: 2, capped: false, online: 30 });
  });

  it("forgets at most the budget per script call; the rest waits for the next run", async () => {
    const ctx = ctxAt("ptrim-budget");
    await heartbeat(ctx, "a", ids(12, "a"));
    await heartbeat(ctx, "b", ids(12, "b"));
    const job = createTrimJob({ chunkRooms: 2, forgetBudget: 15 });
    expect(await job({ ...ctx, now: T0 + 60_000 }, config)).toMatchObject({ rooms: 2, forgotten: 0, online: 24 });
    const later = { ...ctx, now: T0 + 91 * DAY };
    expect(await job(later, config)).toMatchObject({ rooms: 2, forgotten: 15, idle: 2, dropped: 1 });
    expect(await job(later, config)).toMatchObject({ rooms: 1, forgotten: 9, idle: 1, dropped: 1 });
    expect(await job(later, config)).toMatchObject({ rooms: 0, forgotten: 0 });
    expect(await zcard(ctx, "a")).toBe(0);
    expect(await zcard(ctx, "b")).toBe(0);
    const { replayed, ...value } = await heartbeat(later, "a", ids(3, "a"));
    expect(value).toEqual({ online: 3, new: 3 });
    expect(replayed).toBe(false);
  });
});

describe("concurrent first heartbeats", () => {
  it("gives each id one compact id and counts it new once", async () => {
    const ctx = ctxAt("pconc");
    const pool = ids(40, "u");
    // 20 requests at once, overlapping: each id arrives in several of them.
    await Promise.all(
      Array.from({ length: 20 }, (_, r) =>
        heartbeat(
          ctx,
          "room",
          pool.filter((_, i) => (i + r) % 3 !== 0),
        ),
      ),
    );
    const stats = await roomStats(ctx, "room");
    expect(stats).toMatchObject({ online: 40, newToday: 40, activeToday: 40, peakToday: 40 });
    const base = `${ctx.prefix}:presence:room`;
    // each id mapped both ways in one hash
    expect(await command<number>(target, "HLEN", `${base}:ids`)).toBe(80);
    expect(Number(await command<string>(target, "GET", `${base}:seq`))).toBe(40);
  });
});

describe("model check", () => {
  type Op = { kind: "beat"; ids: number[] } | { kind: "leave"; id: number } | { kind: "wait"; ms: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({
      kind: fc.constant("beat" as const),
      ids: fc.array(fc.integer({ min: 0, max: 11 }), { minLength: 1, maxLength: 5 }),
    }),
    fc.record({ kind: fc.constant("leave" as const), id: fc.integer({ min: 0, max: 11 }) }),
    fc.record({ kind: fc.constant("wait" as const), ms: fc.integer({ min: 0, max: 200_000 }) }),
  );

  it("online count, member pages and new/active figures match a plain model", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 1, max: 5 }),
        async (ops, pageSize) => {
          const base = ctxAt("pmodel");
          let now = T0;
          const lastSeen = new Map<string, number>();
          const seen = new Set<string>();
          let peak = 0;
          const online = () => [...lastSeen].filter(([, t]) => t >= now - 300_000);
          for (const o of ops) {
            const ctx = { ...base, now };
            if (o.kind === "wait") now += o.ms;
            else if (o.kind === "leave") {
              await leave(ctx, "m", `id${o.id}`);
              lastSeen.delete(`id${o.id}`);
            } else {
              const batch = o.ids.map((i) => `id${i}`);
              const fresh = new Set(batch.filter((id) => !seen.has(id))).size;
              const { replayed: _, ...value } = await heartbeat(ctx, "m", batch);
              for (const id of batch) {
                lastSeen.set(id, now);
                seen.add(id);
              }
              peak = Math.max(peak, online().length);
              expect(value).toEqual({ online: online().length, new: fresh });
            }
          }
          const ctx = { ...base, now };
          const stats = await roomStats(ctx, "m");
          expect(stats.online).toBe(online().length);
          expect(stats.newToday).toBe(seen.size);
          expect(stats.activeToday).toBe(seen.size);
          expect(stats.peakToday).toBe(Math.max(peak, online().length));
          const listed: { id: string; lastSeen: number }[] = [];
          let cursor: string | null = null;
          do {
            const page: Awaited<ReturnType<typeof listMembers>> = await listMembers(ctx, "m", {
              limit: pageSize,
              ...(cursor ? { cursor } : {}),
            });
            expect(page.members.length).toBeLessThanOrEqual(pageSize);
            listed.push(...page.members);
            cursor = page.nextCursor;
          } while (cursor);
          const expected = online().sort(([a, x], [b, y]) => x - y || (a < b ? -1 : 1));
          expect(new Set(listed.map((m) => m.id))).toEqual(new Set(expected.map(([id]) => id)));
          expect(listed).toHaveLength(expected.length);
          expect(listed.map((m) => m.lastSeen)).toEqual(expected.map(([, t]) => t));
        },
      ),
      { numRuns: 25 },
    );
  });
});

describe("model check with the id horizon", () => {
  const DAY = 86_400_000;
  const horizonConfig = readConfig({ PRESENCE_ID_HORIZON_DAYS: "2" });
  type Op =
    { kind: "beat"; ids: number[] } | { kind: "leave"; id: number } | { kind: "wait"; ms: number } | { kind: "trim" };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({
      kind: fc.constant("beat" as const),
      ids: fc.array(fc.integer({ min: 0, max: 7 }), { minLength: 1, maxLength: 4 }),
    }),
    fc.record({ kind: fc.constant("leave" as const), id: fc.integer({ min: 0, max: 7 }) }),
    fc.record({
      kind: fc.constant("wait" as const),
      ms: fc.constantFrom(0, 1000, 299_000, 301_000, 3_600_000, DAY, 2 * DAY - 1, 2 * DAY + 1),
    }),
    fc.record({ kind: fc.constant("trim" as const) }),
  );

  it("new ids, AU and NU per day match a model that forgets ids idle past the horizon at each trim run", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 16 }), async (ops) => {
        const base = ctxAt("phmodel");
        const job = createTrimJob();
        let now = T0;
        // id → last-seen score as Redis keeps it (a leave lowers it to just past the timeout).
        const score = new Map<string, number>();
        // ids with a leave mark in `ids` (a leave of a mapped id), until forgotten
        const left = new Set<string>();
        // ids not mapped at their leave, with a mark (review 11) → when the trim job drops it
        const unmapped = new Map<string, number>();
        // `ids` is a hash a leave made in a room that mapped no id (field \x03, an expiry), until a heartbeat
        let made = false;
        const active = new Map<number, Set<string>>();
        const fresh = new Map<number, number>();
        const dayOf = (ms: number) => Math.floor(ms / DAY);
        for (const o of ops) {
          const ctx = { ...base, now };
          if (o.kind === "wait") now += o.ms;
          else if (o.kind === "trim") {
            await job(ctx, horizonConfig);
            for (const [id, s] of score) {
              if (s >= now - 2 * DAY) continue;
              score.delete(id);
              left.delete(id);
            }
            for (const [id, dropAt] of unmapped) if (dropAt <= now) unmapped.delete(id);
          } else if (o.kind === "leave") {
            // a room that maps no id (no `ids` hash) gets one made by the leave, with an expiry
            if (score.size + left.size + unmapped.size === 0) made = true;
            await leave(ctx, "m", `id${o.id}`);
            const s = score.get(`id${o.id}`);
            if (s !== undefined) score.set(`id${o.id}`, Math.min(s, now - 300_001));
            if (s !== undefined) left.add(`id${o.id}`);
            // an id not mapped yet gets its mark too, dropped a timeout and 2 days later
            else if (!unmapped.has(`id${o.id}`) || unmapped.get(`id${o.id}`)! < now + 300_000 + 2 * DAY)
              unmapped.set(`id${o.id}`, now + 300_000 + 2 * DAY);
          } else {
            const batch = [...new Set(o.ids.map((i) => `id${i}`))];
            const added = batch.filter((id) => !score.has(id)).length;
            const value = await heartbeat(ctx, "m", batch);
            expect(value.new).toBe(added);
            // it maps an id into a hash a leave made: no expiry, no \x03 field any more
            made = false;
            for (const id of batch) score.set(id, Math.max(score.get(id) ?? 0, now));
            // a mapped id's mark is its own now: it goes when the id is forgotten
            for (const id of batch) if (unmapped.delete(id)) left.add(id);
            const day = dayOf(now);
            active.set(day, new Set([...(active.get(day) ?? []), ...batch]));
            fresh.set(day, (fresh.get(day) ?? 0) + added);
          }
        }
        const stats = await roomStats({ ...base, now }, "m");
        expect(stats.activeToday).toBe(active.get(dayOf(now))?.size ?? 0);
        expect(stats.newToday).toBe(fresh.get(dayOf(now)) ?? 0);
        const mapped = await command<number>(target, "HLEN", `${base.prefix}:presence:m:ids`);
        expect(mapped).toBe(2 * score.size + left.size + unmapped.size + (made ? 1 : 0));
        if (mapped > 0) expect((await command<number>(target, "PTTL", `${base.prefix}:presence:m:ids`)) > 0).toBe(made);
      }),
      { numRuns: 30 },
    );
  });
});

describe("ids mapped before the reverse map moved into `ids` (a second hash, `names`)", () => {
  const DAY = 86_400_000;
  const horizonConfig = readConfig({ PRESENCE_ID_HORIZON_DAYS: "2" });

  it("are listed, known, and forgotten with their old entry", async () => {
    const ctx = ctxAt("pnames");
    await heartbeat(ctx, "r", ["fresh"]);
    // as the earlier layout left them: id → compact id in ids, compact id → id in names
    const key = (part: string) => `${ctx.prefix}:presence:r:${part}`;
    await command(target, "HSET", key("ids"), "old", "1000", "older", "1001");
    await command(target, "HSET", key("names"), "1000", "old", "1001", "older");
    await command(target, "ZADD", key("seen"), String(T0), "1000", String(T0), "1001");
    const page = await listMembers(ctx, "r");
    expect(page.members.map((m) => m.id).sort()).toEqual(["fresh", "old", "older"]);
    // known: not new, and no second mapping
    expect(await heartbeat(ctx, "r", ["old"])).toMatchObject({ new: 0 });
    expect(await command<number>(target, "HLEN", key("ids"))).toBe(4);
    // past the horizon every mapping goes, from both hashes
    const later = { ...ctx, now: T0 + 3 * DAY };
    await heartbeat(later, "r", ["next"]);
    await createTrimJob()(later, horizonConfig);
    expect(await command<number>(target, "EXISTS", key("names"))).toBe(0);
    // the compact id after "fresh"'s: the seq only grows
    expect((await command<string[]>(target, "HKEYS", key("ids"))).sort()).toEqual(["\u00012", "next"]);
    expect((await listMembers(later, "r")).members.map((m) => m.id)).toEqual(["next"]);
  });
});
