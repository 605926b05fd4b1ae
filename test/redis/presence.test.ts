/**
 * The presence library and its trim job on Node, through @upstash/redis and
 * the local Upstash server: bounded job runs, concurrent first sightings, and
 * a model check of the online count and member list under random operations.
 */
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { readConfig } from "../../src/config.ts";
import type { Ctx } from "../../src/context.ts";
import { createTrimJob } from "../../src/presence/jobs.ts";
import { heartbeat, leave, listMembers, roomStats } from "../../src/presence/presence.ts";
import { createRedis } from "../../src/redis/client.ts";
import { command, deleteUnder, requireTarget, uniquePrefix } from "../helpers/upstash-rest.ts";

const target = requireTarget(process.env.EDGESTATS_UPSTASH_URL, process.env.EDGESTATS_UPSTASH_TOKEN);
const redis = createRedis({ url: target.url, token: target.token });
const prefixes: string[] = [];
afterAll(async () => {
  for (const p of prefixes) await deleteUnder(target, p);
});
const config = readConfig({});
const T0 = Date.UTC(2026, 10, 22, 12, 0);

function ctxAt(label: string, now = T0): Ctx {
  const prefix = uniquePrefix(label);
  prefixes.push(prefix);
  return { redis, prefix, now };
}
const zcard = (ctx: Ctx, room: string) => command<number>(target, "ZCARD", `${ctx.prefix}:presence:${room}:online`);
const ids = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}`);

describe("trim job, called directly", () => {
  it("is bounded: leftover idle members and rooms wait for later runs", async () => {
    const ctx = ctxAt("ptrim-bound");
    for (const [i, room] of ["r1", "r2", "r3"].entries()) {
      await heartbeat({ ...ctx, now: T0 + i * 1000 }, room, ids(10, room));
    }
    const job = createTrimJob({ maxRooms: 2, chunkRooms: 1, removeBudget: 15 });
    const later = { ...ctx, now: T0 + 6 * 60_000 };
    const first = await job(later, config);
    // The two most recently active rooms (r3, r2), one script call each, 15 removals per call at most.
    expect(first).toMatchObject({ rooms: 2, capped: true, calls: 3, removed: 20 });
    expect([await zcard(ctx, "r1"), await zcard(ctx, "r2"), await zcard(ctx, "r3")]).toEqual([10, 0, 0]);
    const small = createTrimJob({ chunkRooms: 3, removeBudget: 15 });
    const second = await small(later, config);
    expect(second).toMatchObject({ rooms: 3, removed: 10, calls: 2, capped: false });
    expect(await zcard(ctx, "r1")).toBe(0);
  });

  it("spends one call's budget across its rooms", async () => {
    const ctx = ctxAt("ptrim-budget");
    await heartbeat(ctx, "a", ids(12, "a"));
    await heartbeat(ctx, "b", ids(12, "b"));
    const job = createTrimJob({ chunkRooms: 2, removeBudget: 15 });
    const later = { ...ctx, now: T0 + 6 * 60_000 };
    expect(await job(later, config)).toMatchObject({ rooms: 2, removed: 15, online: 0 });
    expect(await job(later, config)).toMatchObject({ rooms: 2, removed: 9, online: 0 });
    expect(await job(later, config)).toMatchObject({ rooms: 2, removed: 0, online: 0 });
  });
});

describe("concurrent first heartbeats", () => {
  it("gives each id one compact id and counts it new once", async () => {
    const ctx = ctxAt("pconc");
    const pool = ids(40, "u");
    // 20 requests at once, overlapping: each id arrives in several of them.
    await Promise.all(Array.from({ length: 20 }, (_, r) => heartbeat(ctx, "room", pool.filter((_, i) => (i + r) % 3 !== 0))));
    const stats = await roomStats(ctx, "room");
    expect(stats).toMatchObject({ online: 40, newToday: 40, activeToday: 40, peakToday: 40 });
    const base = `${ctx.prefix}:presence:room`;
    expect(await command<number>(target, "HLEN", `${base}:ids`)).toBe(40);
    expect(await command<number>(target, "HLEN", `${base}:names`)).toBe(40);
    expect(Number(await command<string>(target, "GET", `${base}:seq`))).toBe(40);
  });
});

describe("model check", () => {
  type Op = { kind: "beat"; ids: number[] } | { kind: "leave"; id: number } | { kind: "wait"; ms: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant("beat" as const), ids: fc.array(fc.integer({ min: 0, max: 11 }), { minLength: 1, maxLength: 5 }) }),
    fc.record({ kind: fc.constant("leave" as const), id: fc.integer({ min: 0, max: 11 }) }),
    fc.record({ kind: fc.constant("wait" as const), ms: fc.integer({ min: 0, max: 200_000 }) }),
  );

  it("online count, member pages and new/active figures match a plain model", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), fc.integer({ min: 1, max: 5 }), async (ops, pageSize) => {
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
            const { value } = await heartbeat(ctx, "m", batch);
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
          const page: Awaited<ReturnType<typeof listMembers>> = await listMembers(ctx, "m", { limit: pageSize, ...(cursor ? { cursor } : {}) });
          expect(page.members.length).toBeLessThanOrEqual(pageSize);
          listed.push(...page.members);
          cursor = page.nextCursor;
        } while (cursor);
        const expected = online().sort(([a, x], [b, y]) => x - y || (a < b ? -1 : 1));
        expect(new Set(listed.map((m) => m.id))).toEqual(new Set(expected.map(([id]) => id)));
        expect(listed).toHaveLength(expected.length);
        expect(listed.map((m) => m.lastSeen)).toEqual(expected.map(([, t]) => t));
      }),
      { numRuns: 25 },
    );
  });
});
