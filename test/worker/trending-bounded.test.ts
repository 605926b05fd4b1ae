/**
 * Issue 12, bounded caching: whatever windows a read key asks for, a stream
 * caches at most three unions an hour (24 h, 48 h and one shared slot for every
 * other width), answers stay exact, and streams that do not exist cost nothing.
 */
import { afterAll, describe, expect, it } from "vitest";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi } from "../helpers/worker.ts";
import { bruteTop, HOUR, type TrendingEvent } from "../helpers/trending.ts";

const T0 = Date.UTC(2026, 10, 22, 12, 30);

type Event = TrendingEvent;

describe("bounded caching", () => {
  const api = createTestApi({ label: "trend-bound-cache", start: T0 });
  afterAll(() => api.cleanup());
  const unions = async () => (await api.keys()).filter((k) => k.includes(":trending:busy:u:")).sort();

  it("attack: a read key cannot make a stream cache one union per window width", async () => {
    // 50 finished hours (the whole horizon), each with members of its own, and the current hour
    const log: Event[] = [];
    for (let back = 50; back >= 0; back -= 10) {
      const events = Array.from({ length: 10 }, (_, b) => back - b)
        .filter((h) => h >= 0)
        .flatMap((h) =>
          Array.from({ length: 20 }, (_, i) => ({
            member: `h${h}-${i}`,
            count: 1 + ((i * 7 + h) % 13),
            at: T0 - h * HOUR,
          })),
        );
      expect((await api.post("/v1/trending/busy/events", { events })).status).toBe(200);
      log.push(...events);
    }
    // every width, twice over and in two orders, top N and member lookups alike
    const widths = Array.from({ length: 50 }, (_, i) => i + 1);
    for (const w of [...widths, ...widths.reverse()]) {
      const top = await api.get(`/v1/trending/busy/top?n=5&window=${w}h`);
      expect(top.body.items, `${w} h`).toEqual(bruteTop(log, api.now, w, 5));
      expect((await api.get(`/v1/trending/busy/members/h1-3?window=${w}h`)).status).toBe(200);
      expect((await unions()).length).toBeLessThanOrEqual(3);
    }
    const hour = "2026112212";
    expect(await unions()).toEqual([
      `${api.prefix}:trending:busy:u:24:${hour}`,
      `${api.prefix}:trending:busy:u:48:${hour}`,
      `${api.prefix}:trending:busy:u:x:${hour}`,
    ]);
    // the next hour has its own three, and those of this hour expire with it
    api.advance(HOUR);
    for (const w of [3, 24, 48, 7]) await api.get(`/v1/trending/busy/top?window=${w}h`);
    expect((await unions()).filter((k) => k.endsWith(":2026112213"))).toHaveLength(3);
    api.setNow(T0);
  });

  it("attack: reading streams that were never written stores nothing", async () => {
    const before = await api.keys();
    for (let i = 0; i < 40; i++) {
      expect((await api.get(`/v1/trending/ghost${i}/top?window=${1 + i}h`)).body.items).toEqual([]);
      expect((await api.get(`/v1/trending/ghost${i}/members/x?window=24h`)).body).toMatchObject({
        count: 0,
        rank: null,
      });
    }
    expect(await api.keys()).toEqual(before);
  });
});

describe("bookkeeping once per bucket", () => {
  const api = createTestApi({ label: "trend-bucket-once", start: T0 });
  afterAll(() => api.cleanup());
  const bucket = (hour: string) => `${api.prefix}:trending:b:h:${hour}`;
  const ttl = (key: string) => command<number>(api.target, "TTL", key);

  it("gives every bucket its expiry, even when a writer whose clock is ahead registered a later hour first", async () => {
    // a writer at 12:57 sends an event 4 minutes ahead: hour 13 is registered before hour 12 has a bucket
    api.setNow(Date.UTC(2026, 10, 22, 12, 57));
    expect((await api.post("/v1/trending/b/events", { member: "x", at: Date.UTC(2026, 10, 22, 13, 1) })).status).toBe(
      200,
    );
    // a writer whose clock says 12:10 writes into hour 12: its bucket is new, so it gets its expiry
    api.setNow(Date.UTC(2026, 10, 22, 12, 10));
    const first = await api.cost(() => api.post("/v1/trending/b/events", { member: "y" }));
    expect(first.commands).toBe(6); // EVALSHA, ZMSCORE, ZADD (sentinel + member), EXPIRE, ZADD _seen, ZADD _dirty
    expect(await ttl(bucket("2026112212"))).toBeGreaterThan(0);
    expect(await ttl(bucket("2026112213"))).toBeGreaterThan(0);
    // the next write into hour 12 touches neither the expiry nor a registry
    await api.resetStats();
    await api.post("/v1/trending/b/events", { member: "y" });
    // (ZMSCORE, the hour bound's check, answers "is the bucket new?" since review 10: it was ZADD NX)
    expect((await api.stats()).byCommand).toEqual({ evalsha: 1, zincrby: 1, zmscore: 1 });
    expect((await api.get("/v1/trending")).body.streams).toEqual(["b"]);
    api.setNow(T0);
  });

  it("a stream deleted and written again is registered again", async () => {
    expect((await api.del("/v1/trending/b", { key: "admin" })).status).toBe(204);
    expect((await api.get("/v1/trending")).body.streams).toEqual([]);
    await api.post("/v1/trending/b/events", { member: "z" });
    expect((await api.get("/v1/trending")).body.streams).toEqual(["b"]);
    expect(await ttl(bucket("2026112212"))).toBeGreaterThan(0);
  });
});
