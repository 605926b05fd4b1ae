/**
 * Review 9: every documented limit of the HTTP API, exactly at it and one past it. At the limit
 * the call is accepted with the right result; one past it is the documented status with the error
 * envelope naming the limit (so a user can tell what to change), and nothing is written (every key
 * of the file's prefix, with its value and expiry, is the same before and after). The limits are
 * those of /work/shared/API.md, README.md, docs/*.md and src/*\/validate.ts, limits.ts.
 */
import { afterAll, describe, expect, it } from "vitest";
import { keyValues } from "../helpers/key-snapshot.ts";
import { createTestApi, type TestApi, type TestResponse } from "../helpers/worker.ts";

const DAY = 86_400_000;
const MIN = 60_000;
const T0 = Date.UTC(2026, 10, 22, 12, 30);
const api = createTestApi({ label: "r9-limits", start: T0 });
afterAll(() => api.cleanup());

/** Every key of the prefix with its value and absolute expiry (test/helpers/key-snapshot.ts). */
const snapshot = (a: TestApi = api) => keyValues(a.target, a.prefix);

/** Runs a refused call: the status, the envelope naming `limit` (its text or field), nothing written. */
async function refusedWritingNothing(
  call: () => Promise<TestResponse>,
  status: number,
  limit: string | RegExp,
  a: TestApi = api,
): Promise<TestResponse> {
  const before = await snapshot(a);
  const res = await call();
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body?.error?.code, JSON.stringify(res.body)).toMatch(/^[a-z_]+$/);
  expect(typeof res.body.error.message).toBe("string");
  expect(JSON.stringify(res.body.error)).toMatch(limit);
  expect(await snapshot(a)).toEqual(before);
  return res;
}

const n = (count: number, f: (i: number) => unknown) => Array.from({ length: count }, (_, i) => f(i));
const name64 = "N" + "a".repeat(63);
const name65 = name64 + "a";
// 256 UTF-8 bytes: 85 three-byte characters and one ASCII; 257: one more ASCII byte
const member256 = "€".repeat(85) + "x";
const member257 = member256 + "y";

describe("batches: 1,000 items accepted, 1,001 refused whole (400, '1000' named, nothing written)", () => {
  const batches: [string, () => Promise<void>, (size: number) => [string, unknown], (r: TestResponse) => void][] = [
    [
      "trending events",
      async () => {},
      (size) => ["/v1/trending/b-trend/events", { events: n(size, (i) => ({ member: `m${i}` })) }],
      (r) => expect(r.body).toEqual({ accepted: 1000 }),
    ],
    [
      "counter increments",
      async () => {},
      (size) => ["/v1/counters/b-count/incr", { items: n(size, (i) => ({ member: `m${i % 10}` })) }],
      (r) => expect(r.body.results).toHaveLength(1000),
    ],
    [
      "histogram observations",
      async () =>
        void expect((await api.put("/v1/histograms/b-hist", { bucketWidth: 1 }, { key: "admin" })).status).toBeLessThan(
          300,
        ),
      (size) => ["/v1/histograms/b-hist/observations", { values: n(size, (i) => ({ value: i % 7 })) }],
      (r) => expect(r.body).toEqual({ accepted: 1000 }),
    ],
    [
      "presence heartbeats",
      async () => {},
      (size) => ["/v1/presence/b-room/heartbeats", { ids: n(size, (i) => `id${i}`) }],
      (r) => expect(r.body).toMatchObject({ online: 1000 }),
    ],
    [
      "leaderboard score changes",
      async () => void expect((await api.put("/v1/leaderboards/b-board/players/p", { name: "P" })).status).toBe(201),
      (size) => ["/v1/leaderboards/b-board/scores", { items: n(size, () => ({ player: "p", by: 1 })) }],
      () => undefined,
    ],
  ];
  for (const [what, setup, body, check] of batches) {
    it(`${what}: 1,000 pass, 1,001 are refused`, async () => {
      await setup();
      const [path, over] = body(1001);
      await refusedWritingNothing(() => api.post(path, over), 400, /1000|1,000/);
      const [, at] = body(1000);
      const ok = await api.post(path, at);
      expect(ok.status, JSON.stringify(ok.body)).toBe(200);
      check(ok);
    });
  }

  it("leaderboard: the 1,000 changes of one player all count (score 1,000)", async () => {
    const res = await api.get("/v1/leaderboards/b-board/players/p");
    expect(res.body).toMatchObject({ score: 1000, rank: 1 });
  });

  it("friends' ranks: 1,000 players answered, 1,001 refused", async () => {
    const ok = await api.post("/v1/leaderboards/b-board/rank", { players: n(1000, (i) => `q${i}`) }, { key: "read" });
    expect(ok.status).toBe(200);
    expect(ok.body.unknown).toHaveLength(1000);
    await refusedWritingNothing(
      () => api.post("/v1/leaderboards/b-board/rank", { players: n(1001, (i) => `q${i}`) }, { key: "read" }),
      400,
      /1000|1,000/,
    );
  });
});

describe("names (64 characters) and members (256 UTF-8 bytes)", () => {
  const writes: [string, (name: string) => [string, unknown], (member: string) => [string, unknown]][] = [
    [
      "trending",
      (s) => [`/v1/trending/${s}/events`, { member: "m" }],
      (m) => ["/v1/trending/t-mem/events", { member: m }],
    ],
    ["counters", (s) => [`/v1/counters/${s}/incr`, { member: "m" }], (m) => ["/v1/counters/c-mem/incr", { member: m }]],
    [
      "presence",
      (s) => [`/v1/presence/${s}/heartbeats`, { id: "i" }],
      (m) => ["/v1/presence/p-mem/heartbeats", { id: m }],
    ],
  ];
  for (const [what, byName, byMember] of writes) {
    it(`${what}: a 64-character name and a 256-byte member are taken; 65 and 257 are 400`, async () => {
      const [p65, b65] = byName(name65);
      await refusedWritingNothing(() => api.post(p65, b65), 400, /\{0,63\}/);
      const [p64, b64] = byName(name64);
      expect((await api.post(p64, b64)).status).toBe(200);
      const [pm, bm] = byMember(member257);
      await refusedWritingNothing(() => api.post(pm, bm), 400, /256 UTF-8 bytes/);
      const [pm2, bm2] = byMember(member256);
      expect((await api.post(pm2, bm2)).status).toBe(200);
    });
  }

  it("the 256-byte member reads back exactly", async () => {
    const res = await api.get(`/v1/counters/c-mem/members/${encodeURIComponent(member256)}`);
    expect(res.body).toMatchObject({ member: member256, score: 1 });
  });

  it("leaderboards: a 64-character player and a 256-byte display name join; 65 and 257 are 400", async () => {
    await refusedWritingNothing(
      () => api.put(`/v1/leaderboards/lb-name/players/${name65}`, { name: "x" }),
      400,
      /\{0,63\}/,
    );
    await refusedWritingNothing(() => api.put(`/v1/leaderboards/lb-name/players/p`, { name: member257 }), 400, /256/);
    expect((await api.put(`/v1/leaderboards/lb-name/players/${name64}`, { name: member256 })).status).toBe(201);
    expect((await api.get(`/v1/leaderboards/lb-name/players/${name64}`)).body.name).toBe(member256);
  });
});

describe("numeric bounds of writes", () => {
  const cases: [string, string, unknown, unknown, RegExp, string?][] = [
    // [what, path, at the limit, one past it, the limit as the error names it, key]
    [
      "counter by +1e12",
      "/v1/counters/num/incr",
      { member: "a", by: 1e12 },
      { member: "a", by: 1e12 + 1 },
      /1e12|1000000000000/,
    ],
    [
      "counter by −1e12",
      "/v1/counters/num/incr",
      { member: "b", by: -1e12 },
      { member: "b", by: -1e12 - 1 },
      /1e12|1000000000000/,
    ],
    [
      "counter ttl 10 years",
      "/v1/counters/num/incr",
      { member: "c", ttl: 316_224_000 },
      { member: "c", ttl: 316_224_001 },
      /316224000/,
    ],
    // (ttl 1 s, the lower end: test/redis/review9-limits.test.ts, under a prefix of its own)
    [
      "trending count 1e12",
      "/v1/trending/num/events",
      { member: "a", count: 1e12 },
      { member: "a", count: 1e12 + 1 },
      /1e12|1000000000000/,
    ],
    [
      "leaderboard by ±1e12",
      "/v1/leaderboards/num/players/p/score",
      { by: -1e12 },
      { by: -1e12 - 1 },
      /1e12|1000000000000/,
    ],
    [
      "leaderboard set 1e15",
      "/v1/leaderboards/num/players/p/score",
      { set: 1e15 },
      { set: 1e15 + 1 },
      /1e15|1000000000000000/,
    ],
  ];
  it.each(cases)("%s: at the limit 200, one past it 400 naming it", async (_what, path, at, past, limit) => {
    if (path.includes("leaderboards")) await api.put("/v1/leaderboards/num/players/p", { name: "p" });
    await refusedWritingNothing(() => api.post(path, past), 400, limit);
    const ok = await api.post(path, at);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
  });

  it("histogram settings: bucketWidth 1e15, unit 32, retentionDays 400 taken; one past each refused", async () => {
    const put = (body: unknown) => api.put("/v1/histograms/num-h", body, { key: "admin" });
    await refusedWritingNothing(() => put({ bucketWidth: 1e15 + 1 }), 400, /1e\+?15|1000000000000000/);
    await refusedWritingNothing(() => put({ bucketWidth: 1, unit: "u".repeat(33) }), 400, /32/);
    await refusedWritingNothing(() => put({ bucketWidth: 1, retentionDays: 401 }), 400, /400/);
    const ok = await put({ bucketWidth: 1e15, unit: "u".repeat(32), retentionDays: 400 });
    expect(ok.status, JSON.stringify(ok.body)).toBeLessThan(300);
  });

  it("histogram values ±1e15 are observed; 1e15 + 1 is refused", async () => {
    await refusedWritingNothing(
      () => api.post("/v1/histograms/num-h/observations", { value: 1e15 + 1 }),
      400,
      /1e\+?15|1000000000000000/,
    );
    const ok = await api.post("/v1/histograms/num-h/observations", { values: [{ value: 1e15 }, { value: -1e15 }] });
    expect(ok.body).toEqual({ accepted: 2 });
    const read = await api.get("/v1/histograms/num-h");
    expect(read.body).toMatchObject({ count: 2, min: -1e15, max: 1e15 });
  });

  it("leaderboard meta: 4,096 bytes as JSON joins, 4,097 is refused", async () => {
    const meta = (bytes: number) => ({ s: "x".repeat(bytes - '{"s":""}'.length) });
    expect(JSON.stringify(meta(4096))).toHaveLength(4096);
    await refusedWritingNothing(
      () => api.put("/v1/leaderboards/meta/players/p", { name: "p", meta: meta(4097) }),
      400,
      /4096/,
    );
    expect((await api.put("/v1/leaderboards/meta/players/p", { name: "p", meta: meta(4096) })).status).toBe(201);
    expect((await api.get("/v1/leaderboards/meta/players/p")).body.meta).toEqual(meta(4096));
  });
});

describe("query limits of reads: at the limit 200, one past it 400 naming it", () => {
  // [path at the limit, path one past it, the limit as the error names it]
  const reads: [string, string, RegExp][] = [
    ["/v1/trending/q/top?n=100", "/v1/trending/q/top?n=101", /100/],
    ["/v1/trending/q/top?window=50h", "/v1/trending/q/top?window=51h", /50h/],
    ["/v1/trending/q/rising?n=100", "/v1/trending/q/rising?n=101", /100/],
    ["/v1/trending/q/rising?baseline=50h", "/v1/trending/q/rising?baseline=51h", /50/],
    ["/v1/trending/q/history?member=m&hours=50", "/v1/trending/q/history?member=m&hours=51", /50/],
    ["/v1/counters/q/top?n=1000", "/v1/counters/q/top?n=1001", /1000/],
    ["/v1/counters/q/bottom?n=1000", "/v1/counters/q/bottom?n=1001", /1000/],
    ["/v1/counters/q/range?limit=1000", "/v1/counters/q/range?limit=1001", /1000/],
    ["/v1/counters?limit=1000", "/v1/counters?limit=1001", /1000/],
    ["/v1/counters?offset=1000000", "/v1/counters?offset=1000001", /1000000/],
    ["/v1/histograms?limit=1000", "/v1/histograms?limit=1001", /1000/],
    ["/v1/histograms?offset=1000000", "/v1/histograms?offset=1000001", /1000000/],
    ["/v1/presence/q/members?limit=1000", "/v1/presence/q/members?limit=1001", /1000/],
    ["/v1/presence?limit=1000", "/v1/presence?limit=1001", /1000/],
    ["/v1/presence/q/history?hours=24", "/v1/presence/q/history?hours=25", /24/],
    ["/v1/leaderboards/b-board?limit=100", "/v1/leaderboards/b-board?limit=101", /100/],
    ["/v1/leaderboards/b-board?page=1000000", "/v1/leaderboards/b-board?page=1000001", /1000000/],
    ["/v1/leaderboards/b-board/players/p/around?k=50", "/v1/leaderboards/b-board/players/p/around?k=51", /50/],
    ["/v1/leaderboards?limit=1000", "/v1/leaderboards?limit=1001", /1000/],
    ["/v1/leaderboards?offset=1000000", "/v1/leaderboards?offset=1000001", /1000000/],
  ];
  it.each(reads)("%s", async (at, past, limit) => {
    await api.post("/v1/counters/q/incr", { member: "m" });
    await api.put("/v1/leaderboards/b-board/players/p", { name: "P" });
    const ok = await api.get(at);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    await refusedWritingNothing(() => api.get(past), 400, limit);
  });

  it("histogram top 0..100 (0 omits them), 101 refused", async () => {
    await api.put("/v1/histograms/q-h", { bucketWidth: 1 }, { key: "admin" });
    await api.post("/v1/histograms/q-h/observations", { values: n(150, (i) => ({ value: i })) });
    const at = await api.get("/v1/histograms/q-h?top=100");
    expect(at.status).toBe(200);
    expect(at.body.top).toHaveLength(100);
    await refusedWritingNothing(() => api.get("/v1/histograms/q-h?top=101"), 400, /100/);
  });

  it("a trending deployment of 168 h retention takes 168h and 7d, refuses 169h and 8d", async () => {
    const wide = createTestApi({ label: "r9-wide", start: T0, vars: { TRENDING_RETENTION_HOURS: "168" } });
    try {
      for (const w of ["168h", "7d"])
        expect((await wide.get(`/v1/trending/w/top?window=${w}`)).body.window.hours).toBe(168);
      for (const w of ["169h", "8d"])
        await refusedWritingNothing(() => wide.get(`/v1/trending/w/top?window=${w}`), 400, /168/, wide);
    } finally {
      await wide.cleanup();
    }
  });
});

describe("time limits: bucket times and ranges", () => {
  const iso = (ms: number) => new Date(ms).toISOString();
  it("counter `at`: exactly 400 days back and exactly 5 minutes ahead are taken; 1 ms past either is 400", async () => {
    const item = (at: number) => ({ member: "m", period: "day", at });
    await refusedWritingNothing(() => api.post("/v1/counters/t-at/incr", item(T0 - 400 * DAY - 1)), 400, /400 days/);
    await refusedWritingNothing(() => api.post("/v1/counters/t-at/incr", item(T0 + 5 * MIN + 1)), 400, /5 minutes/);
    expect(
      (await api.post("/v1/counters/t-at/incr", { items: [item(T0 - 400 * DAY), item(T0 + 5 * MIN)] })).status,
    ).toBe(200);
    const old = await api.get(`/v1/counters/t-at/members/m?period=day&from=2025-10-18&to=2025-10-18`);
    expect(old.body).toMatchObject({ score: 1 });
  });

  it("trending `at`: the oldest hour of the retention and 5 minutes ahead are taken; 1 ms past either is 400", async () => {
    const oldestHour = (Math.floor(T0 / 3_600_000) - 50) * 3_600_000;
    const ev = (at: number) => ({ member: "m", at });
    await refusedWritingNothing(() => api.post("/v1/trending/t-at/events", ev(oldestHour - 1)), 400, /50 h/);
    await refusedWritingNothing(() => api.post("/v1/trending/t-at/events", ev(T0 + 5 * MIN + 1)), 400, /5 minutes/);
    expect((await api.post("/v1/trending/t-at/events", { events: [ev(oldestHour), ev(T0 + 5 * MIN)] })).body).toEqual({
      accepted: 2,
    });
    expect((await api.get("/v1/trending/t-at/members/m?window=50h")).body).toMatchObject({ count: 2 });
  });

  it("histogram `at`: the first moment of the day 400 days back is taken; 1 ms before it is 400", async () => {
    await api.put("/v1/histograms/t-at", { bucketWidth: 1 }, { key: "admin" });
    const oldest = Date.UTC(2025, 9, 18);
    await refusedWritingNothing(
      () => api.post("/v1/histograms/t-at/observations", { value: 1, at: oldest - 1 }),
      400,
      /400 days/,
    );
    await refusedWritingNothing(
      () => api.post("/v1/histograms/t-at/observations", { value: 1, at: T0 + 5 * MIN + 1 }),
      400,
      /5 minutes/,
    );
    const ok = await api.post("/v1/histograms/t-at/observations", {
      values: [
        { value: 1, at: oldest },
        { value: 2, at: T0 + 5 * MIN },
      ],
    });
    expect(ok.body).toEqual({ accepted: 2 });
    expect((await api.get("/v1/histograms/t-at?from=2025-10-18&to=2025-10-18")).body).toMatchObject({ count: 1 });
  });

  it("counter ranges: `to` − `from` of exactly 400 days (401 day buckets, min reads all 401) is taken; 401 days is 400", async () => {
    const ok = await api.get("/v1/counters/t-at/top?period=day&from=2025-10-18&to=2026-11-22&aggregate=min");
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.items).toEqual([{ rank: 1, member: "m", score: 1 }]);
    await refusedWritingNothing(
      () => api.get("/v1/counters/t-at/top?period=day&from=2025-10-17&to=2026-11-22"),
      400,
      /400 days/,
    );
  });

  it("counter min/max: 401 hour buckets are read, 402 are refused naming 401 (a sum of the same range is fine)", async () => {
    const hour = Math.floor(T0 / 3_600_000) * 3_600_000;
    const at = `/v1/counters/t-at/top?period=hour&to=${iso(hour)}&from=${iso(hour - 400 * 3_600_000)}`;
    const past = `/v1/counters/t-at/top?period=hour&to=${iso(hour)}&from=${iso(hour - 401 * 3_600_000)}`;
    expect((await api.get(`${at}&aggregate=max`)).status).toBe(200);
    await refusedWritingNothing(() => api.get(`${past}&aggregate=max`), 400, /401/);
    expect((await api.get(`${past}&aggregate=sum`)).status).toBe(200);
  });

  it("histogram ranges: 400 days inclusive (`from` 399 days before `to`) is taken; 401 days is 400", async () => {
    expect((await api.get("/v1/histograms/t-at?from=2025-10-19&to=2026-11-22")).status).toBe(200);
    await refusedWritingNothing(() => api.get("/v1/histograms/t-at?from=2025-10-18&to=2026-11-22"), 400, /400 days/);
  });

  it("presence `day`: exactly 400 days back is answered; 401 is 400", async () => {
    await api.post("/v1/presence/t-day/heartbeats", { id: "a" });
    const ok = await api.get("/v1/presence/t-day?day=2025-10-18");
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toMatchObject({ day: "2025-10-18", peak: 0, active: 0 });
    await refusedWritingNothing(() => api.get("/v1/presence/t-day?day=2025-10-17"), 400, /400 days/);
  });
});

describe("the request itself: body size, nesting, Idempotency-Key", () => {
  const MiB = 1024 * 1024;
  /** A valid one-event body of exactly `bytes` bytes (JSON whitespace pads it). */
  const padded = (bytes: number) => {
    const head = '{"member":"big"';
    return head + " ".repeat(bytes - head.length - 1) + "}";
  };

  it("a body of exactly 1 MiB is taken; 1 MiB + 1 byte is 413 naming 1048576, declared or streamed", async () => {
    expect(padded(MiB)).toHaveLength(MiB);
    const json = { "content-type": "application/json" };
    await refusedWritingNothing(
      () => api.post("/v1/trending/body/events", undefined, { raw: padded(MiB + 1), headers: json }),
      413,
      /1048576/,
    );
    const stream = (text: string) =>
      new ReadableStream<Uint8Array>({
        start(c) {
          const bytes = new TextEncoder().encode(text);
          for (let i = 0; i < bytes.length; i += 65_536) c.enqueue(bytes.slice(i, i + 65_536));
          c.close();
        },
      });
    await refusedWritingNothing(
      () => api.post("/v1/trending/body/events", undefined, { raw: stream(padded(MiB + 1)), headers: json }),
      413,
      /1048576/,
    );
    const ok = await api.post("/v1/trending/body/events", undefined, { raw: padded(MiB), headers: json });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toEqual({ accepted: 1 });
  });

  it("JSON nesting: 16 levels are taken, 17 are 400 naming 16", async () => {
    const nested = (levels: number): unknown => (levels === 0 ? 1 : { a: nested(levels - 1) });
    // the body is 1 level, meta 2, ...: meta nested 15 objects deep makes 16 in all
    await refusedWritingNothing(
      () => api.put("/v1/leaderboards/deep/players/p", { name: "p", meta: nested(16) }),
      400,
      /16/,
    );
    expect((await api.put("/v1/leaderboards/deep/players/p", { name: "p", meta: nested(15) })).status).toBe(201);
  });

  it("Idempotency-Key: 255 visible ASCII characters are taken (and replay), 256 are 400 naming 255", async () => {
    const post = (key: string) =>
      api.post("/v1/counters/idem/incr", { member: "m" }, { headers: { "idempotency-key": key } });
    await refusedWritingNothing(() => post("k".repeat(256)), 400, /255/);
    expect((await post("k".repeat(255))).body.results).toEqual([{ member: "m", score: 1 }]);
    expect((await post("k".repeat(255))).body.results).toEqual([{ member: "m", score: 1 }]);
    expect((await api.get("/v1/counters/idem/members/m")).body.score).toBe(1);
  });
});

describe("rate limit and the OpenAPI document", () => {
  it("RATE_LIMIT_PER_10S=3: three calls in a window pass, the fourth is 429 naming when to retry, writing nothing else", async () => {
    const limited = createTestApi({ label: "r9-rate", start: T0, vars: { RATE_LIMIT_PER_10S: "3" } });
    try {
      // the limiter's windows are wall-clock 10 s: start early in one so all four calls share it
      if (Date.now() % 10_000 > 6_000) await new Promise((r) => setTimeout(r, 10_100 - (Date.now() % 10_000)));
      for (let i = 0; i < 3; i++) {
        const ok = await limited.post("/v1/counters/rl/incr", { member: "m" });
        expect(ok.status).toBe(200);
        expect(ok.headers.get("ratelimit-remaining")).toBe(String(2 - i));
      }
      const data = async () =>
        Object.fromEntries(Object.entries(await snapshot(limited)).filter(([k]) => !k.includes(":ratelimit:")));
      const before = await data();
      const res = await limited.post("/v1/counters/rl/incr", { member: "m" });
      expect(res.status).toBe(429);
      expect(res.body.error.code).toBe("rate_limited");
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(await data()).toEqual(before);
    } finally {
      await limited.cleanup();
    }
  });

  it("API keys of 16 and 512 characters serve; 15 and 513 make every request a 500 config_error naming the bound", async () => {
    const withKey = (key: string) =>
      createTestApi({ label: "r9-keys", start: T0, vars: { READ_KEYS: `${"r".repeat(20)},${key}` } });
    for (const key of ["k".repeat(16), "k".repeat(512)]) {
      const res = await withKey(key).get("/v1/counters/q/top", { key });
      expect(res.status, `${key.length}`).toBe(200);
    }
    for (const [key, bound] of [
      ["k".repeat(15), /16 characters/],
      ["k".repeat(513), /512 characters/],
    ] as const) {
      const res = await withKey(key).get("/v1/counters/q/top", { key: "r".repeat(20) });
      expect(res.status).toBe(500);
      expect(res.body.error.code).toBe("config_error");
      expect(res.body.error.message).toMatch(bound);
    }
  });

  // FIXED (review 9: functions/schemas.ts intQuery states them). Finding (medium): the served OpenAPI document states no bounds for any integer query parameter
  // (`n`, `limit`, `offset`, `page`, `k`, `hours`, `top`: 20 of them, none with minimum, maximum or
  // default), though the routes enforce them (the table above) and request bodies do carry theirs
  // (`by`: ±1e12). A client generated from /openapi.json, which API.md calls the contract, cannot
  // know that `limit=101` is a 400. Once emitted, GET /v1/counters would also state `offset` ≤
  // 1,000,000,000 (functions/routes/counters-schemas.ts ListQuery) while the library refuses past
  // MAX_OFFSET = 1,000,000 (offset=1000001 above is a 400 "from 0 to 1000000").
  // Fix: in functions/schemas.ts intQuery, pass `minimum: min, maximum: max, default: fallback` to
  // `.openapi({...})` (the `type: "integer"` override drops them), and use MAX_OFFSET in ListQuery.
  it("the OpenAPI document states each integer query bound the routes enforce", async () => {
    const doc = (await api.get("/openapi.json", { key: "none" })).body;
    const unbounded: string[] = [];
    for (const [path, ops] of Object.entries<Record<string, { parameters?: any[] }>>(doc.paths))
      for (const op of Object.values(ops))
        for (const p of op.parameters ?? [])
          if (p.in === "query" && p.schema?.type === "integer" && p.schema.maximum === undefined)
            unbounded.push(`${path} ${p.name}`);
    expect(unbounded).toEqual([]);
    const offset = doc.paths["/v1/counters"].get.parameters.find((p: { name: string }) => p.name === "offset");
    expect(offset.schema.maximum).toBe(1_000_000);
  });
});

describe("more edges: idempotency records, delete ranges", () => {
  it("an idempotency record keeps a result of exactly 2,048 bytes whole; at 2,049 its replay is the summary", async () => {
    // the record keeps the script's result: one score per item ("1" → 4 bytes with its comma), so a
    // batch of k items of `by: 1` is 4k + c bytes, and a first item of `by: 10 ** e` adds e bytes
    const batch = (k: number, e = 0) => ({ items: n(k, (i) => ({ member: `m${i}`, by: i === 0 ? 10 ** e : 1 })) });
    const post = (counter: string, body: unknown) =>
      api.post(`/v1/counters/${counter}/incr`, body, { headers: { "idempotency-key": "edge" } });
    const bytesOf = (res: TestResponse) => Number(/"bytes":(\d+)/.exec(JSON.stringify(res.body))?.[1]);
    await post("idem-600", batch(600));
    const c = bytesOf(await post("idem-600", batch(600))) - 4 * 600;
    expect(c).toBeGreaterThan(0);
    for (const size of [2048, 2049]) {
      const k = Math.floor((size - c) / 4);
      const body = batch(k, size - c - 4 * k);
      const first = await post(`idem-${size}`, body);
      const again = await post(`idem-${size}`, body);
      expect(again.status).toBe(200);
      if (size === 2048) {
        expect(again.headers.get("idempotent-summarised")).toBeNull();
        expect(again.body).toEqual(first.body);
      } else {
        expect(again.headers.get("idempotent-summarised")).toBe("true");
        expect(bytesOf(again)).toBe(2049);
      }
    }
  });

  it("a member delete over a range: `to` − `from` of 400 days is taken, 401 is 400 naming it", async () => {
    const del = (from: string) => api.del(`/v1/counters/t-at/members/m?period=day&from=${from}&to=2026-11-22`);
    await refusedWritingNothing(() => del("2025-10-17"), 400, /400 days/);
    expect((await del("2025-10-18")).status).toBe(204);
    expect((await api.get("/v1/counters/t-at/top?period=day&from=2025-10-18&to=2026-11-22")).body.items).toEqual([]);
  });
});

describe("lower ends and path members", () => {
  // [path at the lower end (200), path one below it (400), the bound as named]
  const lows: [string, string, RegExp][] = [
    ["/v1/trending/q/top?n=1&window=1h", "/v1/trending/q/top?window=0h", /1h/],
    ["/v1/trending/q/top?n=1", "/v1/trending/q/top?n=0", /1/],
    ["/v1/counters/q/top?n=1", "/v1/counters/q/top?n=0", /1/],
    ["/v1/counters?offset=0&limit=1", "/v1/counters?offset=-1", /0/],
    ["/v1/histograms/q-h?top=0", "/v1/histograms/q-h?top=-1", /0/],
    ["/v1/presence/q/history?hours=1", "/v1/presence/q/history?hours=0", /1/],
    ["/v1/leaderboards/b-board?page=1&limit=1", "/v1/leaderboards/b-board?page=0", /1/],
    ["/v1/leaderboards/b-board/players/p/around?k=0", "/v1/leaderboards/b-board/players/p/around?k=-1", /0/],
  ];
  it.each(lows)("%s", async (at, below, bound) => {
    const ok = await api.get(at);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    await refusedWritingNothing(() => api.get(below), 400, bound);
  });

  it("a list read as CSV past its limit is the same 400 with the JSON error envelope", async () => {
    const csv = { headers: { accept: "text/csv" } };
    expect((await api.get("/v1/counters/q/top?n=1000", csv)).headers.get("content-type")).toMatch(/text\/csv/);
    await refusedWritingNothing(() => api.get("/v1/counters/q/top?n=1001", csv), 400, /1000/);
  });

  it("a member or id of 257 bytes in a path is 400 naming 256 bytes, on reads and deletes alike", async () => {
    const m = encodeURIComponent(member257);
    const calls: [string, () => Promise<TestResponse>][] = [
      ["counter member read", () => api.get(`/v1/counters/c-mem/members/${m}`)],
      ["counter member delete", () => api.del(`/v1/counters/c-mem/members/${m}`)],
      ["trending member read", () => api.get(`/v1/trending/t-mem/members/${m}`)],
      ["presence leave", () => api.del(`/v1/presence/p-mem/members/${m}`)],
    ];
    for (const [, call] of calls) await refusedWritingNothing(call, 400, /256/);
  });
});

describe("pages exactly as long as `limit`", () => {
  // [list path, the rows' field, how the next page is named, how to ask for it]
  const lists: [string, string, string, string][] = [
    ["/v1/counters", "counters", "nextOffset", "offset"],
    ["/v1/counters", "counters", "nextCursor", "cursor"],
    ["/v1/histograms", "histograms", "next", "offset"],
    ["/v1/histograms", "histograms", "nextCursor", "cursor"],
    ["/v1/leaderboards", "boards", "next", "offset"],
    ["/v1/leaderboards", "boards", "nextCursor", "cursor"],
    ["/v1/presence", "rooms", "nextCursor", "cursor"],
    ["/v1/presence/b-room/members", "members", "nextCursor", "cursor"],
  ];
  it.each(lists)(
    "%s (%s by %s): a page of all N rows has no next; of N − 1, the next page holds the last one",
    async (path, field, next, param) => {
      const all = await api.get(`${path}?limit=1000`);
      expect(all.status, JSON.stringify(all.body)).toBe(200);
      const rows = all.body[field] as unknown[];
      expect(rows.length).toBeGreaterThan(1);
      expect(all.body[next] ?? null).toBeNull();
      const exact = await api.get(`${path}?limit=${rows.length}`);
      expect({ rows: exact.body[field].length, next: exact.body[next] ?? null }).toEqual({
        rows: rows.length,
        next: null,
      });
      const first = await api.get(`${path}?limit=${rows.length - 1}`);
      expect(first.body[field]).toEqual(rows.slice(0, -1));
      const token = first.body[next];
      expect(token).not.toBeNull();
      const rest = await api.get(`${path}?limit=${rows.length - 1}&${param}=${encodeURIComponent(String(token))}`);
      expect({ rows: rest.body[field], next: rest.body[next] ?? null }).toEqual({ rows: rows.slice(-1), next: null });
    },
  );
});
