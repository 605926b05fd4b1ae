import { afterAll, describe, expect, it } from "vitest";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "counters-periods", start: "2026-11-29T23:59:59Z" });
afterAll(() => api.cleanup());

const base = "/v1/counters";
const keyOf = (...parts: string[]) => [api.prefix, "counters", ...parts].join(":");

describe("calendar buckets follow the (fake) clock across day, ISO week and month boundaries", () => {
  it("puts each increment in the bucket of its UTC period", async () => {
    // Sunday 2026-11-29 23:59:59 is the last second of ISO week 48 and of that day
    for (const period of ["hour", "day", "week", "month"])
      await api.post(`${base}/views/incr`, { member: "home", period });
    api.setNow("2026-11-30T00:00:01Z"); // Monday: new day, new ISO week, same month
    for (const period of ["hour", "day", "week", "month"])
      await api.post(`${base}/views/incr`, { member: "home", by: 2, period });
    api.setNow("2026-12-01T00:00:00Z"); // new month
    for (const period of ["day", "week", "month"])
      await api.post(`${base}/views/incr`, { member: "home", by: 4, period });

    const keys = await api.keys();
    for (const k of [
      "day:20261129",
      "day:20261130",
      "day:20261201",
      "week:2026-W48",
      "week:2026-W49",
      "month:202611",
      "month:202612",
      "hour:2026112923",
      "hour:2026113000",
    ]) {
      expect(keys).toContain(keyOf("views", ...k.split(":")));
    }
    const score = (k: string) =>
      command<string>(api.target, "ZSCORE", keyOf("views", ...k.split(":")), "home").then(Number);
    expect(await score("week:2026-W48")).toBe(1);
    expect(await score("week:2026-W49")).toBe(6);
    expect(await score("month:202611")).toBe(3);
    expect(await score("month:202612")).toBe(4);
    expect(await score("day:20261129")).toBe(1);
  });

  it("reads the current period by default and a from..to union with sum, min and max", async () => {
    const current = await api.get(`${base}/views/members/home?period=day`);
    expect(current.body).toMatchObject({ score: 4, range: { period: "day", buckets: 1, finished: false } });
    const sum = await api.get(`${base}/views/members/home?period=day&from=2026-11-29&to=2026-12-01`);
    expect(sum.body.score).toBe(7);
    const min = await api.get(`${base}/views/members/home?period=day&from=2026-11-29&to=2026-12-01&aggregate=min`);
    expect(min.body.score).toBe(1);
    const max = await api.get(`${base}/views/members/home?period=week&from=2026-11-23&to=2026-12-01&aggregate=max`);
    expect(max.body.score).toBe(6);
    // unfinished range: the union was scratch and is gone
    expect((await api.keys()).filter((k) => k.includes(":union:"))).toEqual([]);
  });

  it("caches a finished range's union with an expiry and drops it when a late write lands in range", async () => {
    const url = `${base}/views/top?period=day&from=2026-11-29&to=2026-11-30`;
    const first = await api.get(url);
    expect(first.body.items).toEqual([{ rank: 1, member: "home", score: 3 }]);
    expect(first.body.range.finished).toBe(true);
    // the union sits in one of the counter's cache slots
    const unions = (await api.keys()).filter((k) => k.startsWith(keyOf("views", "union", "")));
    expect(unions).toHaveLength(1);
    const union = unions[0]!;
    const ttl = await command<number>(api.target, "TTL", union);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(3600);
    // the cached answer is served without unioning again
    const cached = await api.cost(() => api.get(url));
    expect(cached.result.body.items).toEqual(first.body.items);
    expect(cached.commands).toBeLessThan(
      (await api.cost(() => api.get(`${base}/views/top?period=day&from=2026-11-29&to=2026-12-01`))).commands,
    );
    // a late (backdated) write into a finished day must show at once
    await api.post(`${base}/views/incr`, { member: "home", by: 10, period: "day", at: "2026-11-29T08:00:00Z" });
    const after = await api.get(url);
    expect(after.body.items).toEqual([{ rank: 1, member: "home", score: 13 }]);
  });

  it("expires period buckets by their TTL and keeps the index alive as long as the longest bucket", async () => {
    await api.post(`${base}/ttl-buckets/incr`, {
      items: [
        { member: "a", period: "day", ttl: 100 },
        { member: "a", period: "month", ttl: 5000 },
      ],
    });
    const day = await command<number>(api.target, "TTL", keyOf("ttl-buckets", "day", "20261201"));
    const index = await command<number>(api.target, "TTL", keyOf("ttl-buckets", "index"));
    expect(day).toBeGreaterThan(0);
    expect(day).toBeLessThanOrEqual(100);
    expect(index).toBeGreaterThan(4900);
  });

  it("deletes a counter with its buckets in one round trip; old data never comes back", async () => {
    await api.post(`${base}/gone/incr`, {
      items: [
        { member: "x", by: 5, period: "day" },
        { member: "x", by: 1 },
      ],
    });
    expect((await api.get(base)).body.counters).toContain("gone");
    await api.del(`${base}/gone`, { key: "admin" }); // warm the script
    await api.post(`${base}/gone/incr`, {
      items: [
        { member: "x", by: 5, period: "day" },
        { member: "x", by: 1 },
      ],
    });
    const { result, requests } = await api.cost(() => api.del(`${base}/gone`, { key: "admin" }));
    expect(result.status).toBe(204);
    expect(requests).toBe(1);
    expect((await api.get(base)).body.counters).not.toContain("gone");
    expect((await api.get(`${base}/gone/top?period=day`)).body.items).toEqual([]);
    expect((await api.get(`${base}/gone/top`)).body.items).toEqual([]);
    // the orphaned bucket is listed for the sweep job, and a new life starts from zero
    expect(
      await command<string | null>(api.target, "HGET", keyOf("_purge"), keyOf("gone", "day", "20261201")),
    ).not.toBeNull();
    const again = await api.post(`${base}/gone/incr`, { member: "x", period: "day" });
    expect(again.body.results).toEqual([{ member: "x", score: 1 }]);
    expect((await api.del(`${base}/gone`, { key: "ingest" })).status).toBe(403);
  });

  it("removes a member from the buckets of a range", async () => {
    await api.post(`${base}/dm/incr`, {
      items: [
        { member: "x", period: "day" },
        { member: "y", period: "day" },
      ],
    });
    expect((await api.del(`${base}/dm/members/x?period=day`)).status).toBe(204);
    expect((await api.get(`${base}/dm/top?period=day`)).body.items.map((i: any) => i.member)).toEqual(["y"]);
  });
});
