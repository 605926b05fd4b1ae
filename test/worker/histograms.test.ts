import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { exactQuantile } from "../../src/histograms/buckets.ts";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "histograms", start: "2026-11-22T12:30:00Z" });
afterAll(() => api.cleanup());
beforeEach(() => api.setNow("2026-11-22T12:30:00Z"));

const H = "/v1/histograms";
const admin = { key: "admin" } as const;

async function create(name: string, settings: Record<string, unknown>) {
  const res = await api.put(`${H}/${name}`, settings, admin);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res;
}

// Source post 001 (docs/background.md): boot-time intervals (seconds) and how many instances took each.
const POST_001: [number, number][] = [
  [20, 3],
  [40, 5],
  [60, 21],
  [90, 10],
  [120, 10],
  [160, 22],
];

describe("source post 001: boot-time intervals", () => {
  it("answers post 001's real question, the average, plus its top five", async () => {
    await create("boot", { bucketWidth: 10, unit: "s" });
    const values = POST_001.flatMap(([v, n]) => Array<number>(n).fill(v));
    const posted = await api.post(`${H}/boot/observations`, { values });
    expect(posted.status).toBe(200);
    expect(posted.body).toEqual({ accepted: 71 });

    const res = await api.get(`${H}/boot`);
    expect(res.status).toBe(200);
    const b = res.body;
    expect(b.count).toBe(71);
    expect(b.unit).toBe("s");
    expect(b.min).toBe(20);
    expect(b.max).toBe(160);
    expect(b.mean).toBeCloseTo(values.reduce((s, v) => s + v, 0) / values.length, 9);
    // post 001's ZREVRANGE 0 4 WITHSCORES: 160:22, 60:21, 90:10, 120:10, 40:5.
    expect(b.top.map((t: any) => [t.lower, t.count])).toEqual([
      [160, 22],
      [60, 21],
      [90, 10],
      [120, 10],
      [40, 5],
    ]);
    // Post 001 needed SORT plus a MULTI of ZSCOREs for "sorted by interval"; the buckets come so.
    expect(b.buckets).toEqual(POST_001.map(([v, n]) => ({ lower: v, upper: v + 10, count: n })));
    for (const q of [0.5, 0.9, 0.99] as const) {
      const key = q === 0.5 ? "p50" : q === 0.9 ? "p90" : "p99";
      expect(Math.abs(b[key] - exactQuantile(values, q)!)).toBeLessThan(10);
    }
  });

  it("rolls days up into a week like post 001's ZUNIONSTORE week49, by reading the range", async () => {
    await create("weekly", { bucketWidth: 10 });
    api.setNow("2026-11-16T08:00:00Z");
    await api.post(`${H}/weekly/observations`, { values: Array<number>(12).fill(60) });
    api.setNow("2026-11-17T08:00:00Z");
    await api.post(`${H}/weekly/observations`, { values: [...Array<number>(15).fill(60), 120] });
    const week = await api.get(`${H}/weekly?from=2026-11-16&to=2026-11-22`);
    expect(week.status).toBe(200);
    expect(week.body.count).toBe(28);
    expect(week.body.buckets).toEqual([
      { lower: 60, upper: 70, count: 27 },
      { lower: 120, upper: 130, count: 1 },
    ]);
    const day = await api.get(`${H}/weekly?from=2026-11-16&to=2026-11-16`);
    expect(day.body.count).toBe(12);
    const today = await api.get(`${H}/weekly?from=&to=`);
    expect(today.body.from).toBe("2026-11-17");
    expect(today.body.count).toBe(16);
  });
});

describe("percentiles against the raw observations", () => {
  // A small deterministic generator, so a failure is reproducible.
  function lcg(seed: number) {
    let s = seed >>> 0;
    return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  }

  const cases: { name: string; width: number; gen: (r: () => number) => number }[] = [
    { name: "pint", width: 5, gen: (r) => Math.round(r() * 300) },
    { name: "pneg", width: 2.5, gen: (r) => (r() - 0.7) * 200 },
    { name: "pfrac", width: 0.1, gen: (r) => Math.round(r() * 50) / 10 - 1 },
    { name: "pskew", width: 0.25, gen: (r) => -Math.log(1 - r()) * 3 - 2 },
  ];

  for (const { name, width, gen } of cases) {
    it(`stays within one bucket width (${name}, width ${width})`, async () => {
      await create(name, { bucketWidth: width });
      const r = lcg(name.length * 7919);
      const values = Array.from({ length: 700 }, () => gen(r));
      // Spread over two days with explicit `at`, to read a union as well.
      const items = values.map((value, i) => ({
        value,
        at: i % 2 ? "2026-11-21T23:59:59Z" : Date.UTC(2026, 10, 22, 1),
      }));
      expect((await api.post(`${H}/${name}/observations`, { values: items })).body).toEqual({ accepted: 700 });
      const res = await api.get(`${H}/${name}?from=2026-11-21&to=2026-11-22`);
      expect(res.status).toBe(200);
      const b = res.body;
      expect(b.count).toBe(values.length);
      expect(b.min).toBe(Math.min(...values));
      expect(b.max).toBe(Math.max(...values));
      expect(b.mean).toBeCloseTo(values.reduce((s, v) => s + v, 0) / values.length, 6);
      for (const [key, q] of [
        ["p50", 0.5],
        ["p90", 0.9],
        ["p99", 0.99],
      ] as const) {
        const exact = exactQuantile(values, q)!;
        expect(Math.abs(b[key] - exact), `${key}: ${b[key]} vs ${exact}`).toBeLessThanOrEqual(width);
      }
      // Every value lies in a reported bucket, and the counts add up bucket by bucket.
      let total = 0;
      for (const bucket of b.buckets) {
        const inside = values.filter((v) => v >= bucket.lower && v < bucket.upper).length;
        expect(inside, `bucket [${bucket.lower}, ${bucket.upper})`).toBe(bucket.count);
        total += inside;
        expect(bucket.upper - bucket.lower).toBeCloseTo(width, 9);
      }
      expect(total).toBe(values.length);
    });
  }

  it("puts a value on a fractional bound in the bucket that starts there", async () => {
    await create("bounds", { bucketWidth: 0.1 });
    await api.post(`${H}/bounds/observations`, { values: [0.3, 0.7, -0.1, -0.30000000000000004] });
    const b = (await api.get(`${H}/bounds`)).body;
    expect(b.buckets).toEqual([
      { lower: -0.4, upper: -0.3, count: 1 },
      { lower: -0.1, upper: 0, count: 1 },
      { lower: 0.3, upper: 0.4, count: 1 },
      { lower: 0.7, upper: 0.8, count: 1 },
    ]);
  });
});

describe("settings", () => {
  it("PUT creates (201), replaces (200), needs admin, and refuses a new width once data exists (409)", async () => {
    expect((await api.put(`${H}/cfg`, { bucketWidth: 5 })).status).toBe(403);
    const first = await create("cfg", { bucketWidth: 5, unit: "ms", retentionDays: 30 });
    expect(first.body).toMatchObject({
      histogram: "cfg",
      bucketWidth: 5,
      unit: "ms",
      retentionDays: 30,
      created: true,
    });
    const again = await api.put(`${H}/cfg`, { bucketWidth: 2 }, admin);
    expect(again.status).toBe(200); // no data yet: the width may still change
    expect(again.body).toMatchObject({
      bucketWidth: 2,
      unit: null,
      retentionDays: 400,
      created: false,
      createdAt: first.body.createdAt,
    });
    await api.post(`${H}/cfg/observations`, { value: 3 });
    const conflict = await api.put(`${H}/cfg`, { bucketWidth: 5 }, admin);
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.code).toBe("bucket_width_conflict");
    expect(conflict.body.error.message).toMatch(/bucketWidth 2/);
    expect((await api.get(`${H}/cfg`)).body.bucketWidth).toBe(2);
  });

  it("404s observations and reads of a histogram that was never created, writing nothing", async () => {
    const before = await api.keys();
    const obs = await api.post(`${H}/never/observations`, { value: 1 }, { headers: { "idempotency-key": "never-1" } });
    expect(obs.status).toBe(404);
    expect(obs.body.error.message).toMatch(/PUT \/v1\/histograms\/never/);
    expect((await api.get(`${H}/never`)).status).toBe(404);
    expect(await api.keys()).toEqual(before);
    // The refusal was not recorded under the Idempotency-Key: once created, the same key writes.
    await create("never", { bucketWidth: 1 });
    const retry = await api.post(
      `${H}/never/observations`,
      { value: 1 },
      { headers: { "idempotency-key": "never-1" } },
    );
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBeNull();
  });
});

describe("bad input: 400, nothing written", () => {
  it("refuses bad observations, whole batches included", async () => {
    await create("strict", { bucketWidth: 1 });
    const before = await api.keys();
    const raw = (text: string) =>
      api.post(`${H}/strict/observations`, undefined, { raw: text, headers: { "content-type": "application/json" } });
    const bodies: unknown[] = [
      { value: "12" },
      { value: "abc" },
      { value: null },
      { value: 1e16 },
      { value: -1e16 },
      {},
      { value: 1, extra: true },
      { value: 1, at: "yesterday" },
      { value: 1, at: "2026-11-24T12:31:00Z" },
      { value: 1, at: "2025-01-01T00:00:00Z" },
      { values: [] },
      { values: Array<number>(1001).fill(1) },
      { values: [1, 2, "3"] },
      { values: [1, 2, { value: 3, at: "nope" }] },
      { values: [...Array<number>(999).fill(1), { value: Number.MAX_VALUE }] },
    ];
    for (const body of bodies) {
      const res = await api.post(`${H}/strict/observations`, body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
      expect(res.body.error.details.length).toBeGreaterThan(0);
    }
    // NaN is not JSON; 1e999 parses to Infinity.
    for (const text of ['{"value": NaN}', '{"value": 1e999}', '{"value": -1e999}', '{"values": [1, 1e999]}']) {
      const res = await raw(text);
      expect(res.status, text).toBe(400);
    }
    expect(await api.keys()).toEqual(before);
  });

  it("refuses bad settings and bad names", async () => {
    const before = await api.keys();
    for (const body of [
      { bucketWidth: 0 },
      { bucketWidth: -1 },
      { bucketWidth: "10" },
      { bucketWidth: 1e16 },
      {},
      { bucketWidth: 1, retentionDays: 0 },
      { bucketWidth: 1, retentionDays: 401 },
      { bucketWidth: 1, retentionDays: 1.5 },
      { bucketWidth: 1, unit: "" },
      { bucketWidth: 1, unit: "x".repeat(33) },
      { bucketWidth: 1, colour: "red" },
    ]) {
      const res = await api.put(`${H}/settings-bad`, body, admin);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    const raw = await api.call("PUT", `${H}/settings-bad`, undefined, {
      ...admin,
      raw: '{"bucketWidth": 1e999}',
      headers: { "content-type": "application/json" },
    });
    expect(raw.status).toBe(400);
    expect((await api.put(`${H}/bad:name`, { bucketWidth: 1 }, admin)).status).toBe(400);
    expect((await api.post(`${H}/_hidden/observations`, { value: 1 })).status).toBe(400);
    expect(await api.keys()).toEqual(before);
  });

  it("refuses bad ranges: from after to, over 400 days, not dates, bad top", async () => {
    await create("ranges", { bucketWidth: 1 });
    const before = await api.keys();
    for (const query of [
      "from=2026-11-22&to=2026-11-21",
      "from=2025-10-18&to=2026-11-22",
      "from=2026-02-30",
      "to=2026-13-01",
      "from=abc",
      "to=20261122",
      "top=abc",
      "top=101",
      "top=-1",
    ]) {
      const res = await api.get(`${H}/ranges?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error.details.length).toBeGreaterThan(0);
    }
    // Exactly 400 days is allowed.
    expect((await api.get(`${H}/ranges?from=2025-10-19&to=2026-11-22`)).status).toBe(200);
    expect(await api.keys()).toEqual(before);
  });

  it("refuses values too far from zero for the width, and days past retention, writing nothing", async () => {
    await create("narrow", { bucketWidth: 0.001, retentionDays: 2 });
    const before = await api.keys();
    const far = await api.post(`${H}/narrow/observations`, { values: [1, 1e10] });
    expect(far.status).toBe(400);
    expect(far.body.error.message).toMatch(/wider bucketWidth/);
    const old = await api.post(`${H}/narrow/observations`, {
      values: [{ value: 1 }, { value: 2, at: "2026-11-19T12:00:00Z" }],
    });
    expect(old.status).toBe(400);
    expect(old.body.error.message).toMatch(/2026-11-19.*2-day retention/);
    expect(await api.keys()).toEqual(before);
  });

  it("caps the distinct buckets of one day, refusing the whole batch past the cap", async () => {
    await create("sprawl", { bucketWidth: 1 });
    for (let i = 0; i < 5; i++) {
      const values = Array.from({ length: 1000 }, (_, j) => i * 1000 + j);
      expect((await api.post(`${H}/sprawl/observations`, { values })).status).toBe(200);
    }
    const before = (await api.get(`${H}/sprawl`)).body;
    expect(before.buckets.length).toBe(5000);
    const over = await api.post(`${H}/sprawl/observations`, { values: [1, 2, 5000] });
    expect(over.status).toBe(400);
    expect(over.body.error.message).toMatch(/more than 5000 distinct buckets/);
    expect((await api.get(`${H}/sprawl`)).body.count).toBe(before.count);
    // Existing buckets still take observations.
    expect((await api.post(`${H}/sprawl/observations`, { values: [1, 2] })).status).toBe(200);
  });
});

describe("retention, deletion, registry", () => {
  const ttlOf = (key: string) => command<number>(api.target, "TTL", `${api.prefix}:hist:${key}`);

  it("sets each day's TTL to retention after the day ends, and re-times stored days on a new retention", async () => {
    await create("ret", { bucketWidth: 1, retentionDays: 3 });
    await api.post(`${H}/ret/observations`, { values: [{ value: 1 }, { value: 2, at: "2026-11-20T06:00:00Z" }] });
    // now = Nov 22 12:30: Nov 22 lives to Nov 26 00:00 (300,600 s), Nov 20 to Nov 24 00:00 (127,800 s).
    for (const [day, seconds] of [
      ["20261122", 300_600],
      ["20261120", 127_800],
    ] as const) {
      for (const key of [`ret:${day}`, `ret:${day}:ext`]) {
        const ttl = await ttlOf(key);
        expect(ttl, key).toBeLessThanOrEqual(seconds);
        expect(ttl, key).toBeGreaterThan(seconds - 60);
      }
    }
    expect((await api.get(`${H}/ret?from=2026-11-20&to=2026-11-22`)).body.count).toBe(2);

    // Retention 1 day: Nov 20 ended more than a day ago and goes at once; Nov 22 now lives to Nov 24.
    expect((await api.put(`${H}/ret`, { bucketWidth: 1, retentionDays: 1 }, admin)).status).toBe(200);
    expect(await ttlOf("ret:20261120")).toBe(-2);
    expect(await ttlOf("ret:20261122")).toBeLessThanOrEqual(127_800);
    expect(await ttlOf("ret:20261122")).toBeGreaterThan(127_800 - 60);
    const after = (await api.get(`${H}/ret?from=2026-11-20&to=2026-11-22`)).body;
    expect(after.count).toBe(1);
    expect(after.min).toBe(1);

    // Two days on, Nov 22 is past its retention: observations dated then are refused.
    api.setNow("2026-11-24T12:30:00Z");
    const late = await api.post(`${H}/ret/observations`, { value: 5, at: "2026-11-22T20:00:00Z" });
    expect(late.status).toBe(400);
    expect((await api.post(`${H}/ret/observations`, { value: 5, at: "2026-11-23T20:00:00Z" })).status).toBe(200);
  });

  it("answers an empty range with count 0 and nulls", async () => {
    await create("quiet", { bucketWidth: 1 });
    const res = await api.get(`${H}/quiet?from=2026-11-01&to=2026-11-22`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      count: 0,
      sum: 0,
      min: null,
      max: null,
      mean: null,
      p50: null,
      p90: null,
      p99: null,
      buckets: [],
      top: [],
    });
  });

  it("DELETE (admin) removes settings, every day and the registry entry; GET /v1/histograms lists the most recently active first", async () => {
    await create("zz-gone", { bucketWidth: 1 });
    await create("aa-kept", { bucketWidth: 1 });
    await api.post(`${H}/zz-gone/observations`, {
      values: [{ value: 1 }, { value: 2, at: "2026-11-01T00:00:00Z" }, { value: 3, at: "2026-11-22T12:34:00Z" }],
    });
    const list = await api.get(`${H}`);
    expect(list.status).toBe(200);
    expect(list.body.histograms).toContain("zz-gone");
    expect(list.body.total).toBe(list.body.histograms.length);
    expect(list.body.next).toBeNull();

    expect((await api.del(`${H}/zz-gone`)).status).toBe(403);
    expect((await api.del(`${H}/zz-gone`, admin)).status).toBe(204);
    expect((await api.keys()).filter((k) => k.includes(":hist:zz-gone"))).toEqual([]);
    expect((await api.get(`${H}/zz-gone`)).status).toBe(404);
    const after = (await api.get(`${H}`)).body.histograms;
    expect(after).not.toContain("zz-gone");
    expect(after).toContain("aa-kept");
    expect((await api.del(`${H}/zz-gone`, admin)).status).toBe(204);
  });

  it("replays a POST with the same Idempotency-Key instead of counting it twice", async () => {
    await create("idem", { bucketWidth: 1 });
    const headers = { "idempotency-key": "obs-1" };
    const first = await api.post(`${H}/idem/observations`, { values: [1, 2, 3] }, { headers });
    const second = await api.post(`${H}/idem/observations`, { values: [1, 2, 3] }, { headers });
    expect(second.body).toEqual(first.body);
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    expect((await api.get(`${H}/idem`)).body.count).toBe(3);
    expect((await api.post(`${H}/idem/observations`, { values: [9] }, { headers })).status).toBe(409);
  });
});

describe("one Redis round trip per call", () => {
  it("PUT, POST (1,000 values over five days), GET (400 days), list and DELETE each cost one request", async () => {
    const batch = {
      values: Array.from({ length: 1000 }, (_, i) => ({ value: i / 7, at: Date.UTC(2026, 10, 18 + (i % 5), 3) })),
    };
    const calls: [string, () => Promise<{ status: number }>][] = [
      ["put", () => api.put(`${H}/cost`, { bucketWidth: 0.5, unit: "s" }, admin)],
      ["post one", () => api.post(`${H}/cost/observations`, { value: 42 })],
      ["post batch", () => api.post(`${H}/cost/observations`, batch)],
      ["get 400 days", () => api.get(`${H}/cost?from=2025-10-19&to=2026-11-22`)],
      ["get today", () => api.get(`${H}/cost`)],
      ["list", () => api.get(`${H}`)],
      ["delete", () => api.del(`${H}/cost`, admin)],
    ];
    // Warm every script once so the measured calls are EVALSHA hits.
    for (const [, call] of calls) await call();
    const seen: Record<string, number> = {};
    for (const [label, call] of calls) {
      const { result, requests, commands } = await api.cost(call);
      expect(result.status, label).toBeLessThan(300);
      expect(requests, label).toBe(1);
      seen[label] = commands;
    }
    console.log("histogram commands per call (script-inner included):", JSON.stringify(seen));
    // Inner commands grow with days and distinct buckets touched, never with the values themselves.
    // the first observation of a day also writes its month rollup (issue 15): 3 increments and 2 EXPIREs more
    expect(seen["post one"]).toBeLessThanOrEqual(14);
    // settings, the day's buckets and extremes, and its sum (a member of its month rollup)
    expect(seen["get today"]).toBeLessThanOrEqual(5);
  });

  it("describes every histogram endpoint in /openapi.json", async () => {
    const doc = (await api.get("/openapi.json", { key: "none" })).body;
    expect(doc.paths["/v1/histograms"].get).toBeDefined();
    expect(doc.paths["/v1/histograms/{histogram}"].put).toBeDefined();
    expect(doc.paths["/v1/histograms/{histogram}"].get.parameters.map((p: any) => p.name)).toEqual(
      expect.arrayContaining(["from", "to", "top"]),
    );
    expect(doc.paths["/v1/histograms/{histogram}"].delete).toBeDefined();
    expect(doc.paths["/v1/histograms/{histogram}/observations"].post).toBeDefined();
    expect(doc.components.schemas.HistogramSummary.properties.p99).toBeDefined();
  });
});
