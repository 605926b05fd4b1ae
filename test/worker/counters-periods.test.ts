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
    // within a minute of the range's end nothing is cached (a write from a lagging clock may still land in it)
    expect((await api.get(url)).body.range.finished).toBe(true);
    expect((await api.keys()).filter((k) => k.startsWith(keyOf("views", "union", "")))).toEqual([]);
    api.advance(60_000);
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

describe("a range ending now (issue 15): the finished part's union is cached, the current bucket read fresh", () => {
  const live = createTestApi({ label: "counters-head", start: "2026-11-20T12:00:00Z" });
  afterAll(() => live.cleanup());
  const slots = async () => (await live.keys()).filter((k) => k.includes(":counters:h:union:") && !k.endsWith(":tmp"));
  const top = async (query: string) =>
    (
      (await live.get(`${base}/h/top?period=day&from=2026-11-15&${query}`)).body.items as {
        member: string;
        score: number;
      }[]
    ).map((i) => `${i.member}=${i.score}`);

  it("follows writes to today, late writes into the cached days, member deletes and every aggregate", async () => {
    const days = ["2026-11-15", "2026-11-16", "2026-11-17", "2026-11-18", "2026-11-19"];
    await live.post(`${base}/h/incr`, {
      items: days.flatMap((d, i) => [
        { member: "a", by: i + 1, period: "day", at: `${d}T10:00:00Z` },
        { member: "b", by: 10 - i, period: "day", at: `${d}T10:00:00Z` },
      ]),
    });
    await live.post(`${base}/h/incr`, { member: "c", by: 5, period: "day" });
    expect(await top("n=3")).toEqual(["b=40", "a=15", "c=5"]);
    expect(await slots()).toHaveLength(1);
    // a write to today (not late): the cached days stay, today is read afresh
    await live.post(`${base}/h/incr`, { member: "c", by: 50, period: "day" });
    const write = await live.cost(() => live.get(`${base}/h/top?period=day&from=2026-11-15&n=3`));
    expect(write.result.body.items.map((i: { member: string }) => i.member)).toEqual(["c", "b", "a"]);
    // marks, EXISTS of the cached part, then one round of the threshold read: 2 ZRANGEs, 2 ZMSCOREs
    expect(write.commands).toBe(7);
    // a late write into a cached day shows at once
    await live.post(`${base}/h/incr`, { member: "a", by: 100, period: "day", at: "2026-11-16T08:00:00Z" });
    expect(await top("n=3")).toEqual(["a=115", "c=55", "b=40"]);
    // member reads, score bounds and the other aggregates over the same range
    expect((await live.get(`${base}/h/members/a?period=day&from=2026-11-15`)).body.score).toBe(115);
    expect((await live.get(`${base}/h/range?period=day&from=2026-11-15&min=50&max=60`)).body.items).toEqual([
      expect.objectContaining({ member: "c", score: 55 }),
    ]);
    expect(await top("n=3&aggregate=max")).toEqual(["a=102", "c=55", "b=10"]);
    expect(await top("n=3&aggregate=min")).toEqual(["c=55", "b=6", "a=1"]);
    // a member deleted over the range is gone from the cached part and from today
    await live.del(`${base}/h/members/c?period=day&from=2026-11-15`);
    expect(await top("n=3")).toEqual(["a=115", "b=40"]);
    // the next day: yesterday joins a cached part only a minute after midnight, so a Worker whose
    // clock lags (here by 40 s, its write into yesterday not late by its clock) is never missed
    live.setNow("2026-11-21T00:00:30Z");
    expect(await top("n=1")).toEqual(["a=115"]);
    live.setNow("2026-11-20T23:59:50Z");
    await live.post(`${base}/h/incr`, { member: "b", by: 1000, period: "day" });
    live.setNow("2026-11-21T00:00:40Z");
    expect(await top("n=1")).toEqual(["b=1040"]);
    live.setNow("2026-11-21T00:02:00Z");
    expect(await top("n=1")).toEqual(["b=1040"]);
  });
});
