import { afterAll, describe, expect, it } from "vitest";
import { createTestApi } from "../helpers/worker.ts";

const base = "/v1/counters";

describe("bad input: 400 and nothing written", () => {
  const api = createTestApi({ label: "counters-bad" });
  afterAll(() => api.cleanup());

  const bodies: [string, unknown][] = [
    ["NaN as a string", { member: "a", by: "NaN" }],
    ["1e13", { member: "a", by: 1e13 }],
    ["-1e13", { member: "a", by: -1e13 }],
    ["empty member", { member: "" }],
    ["control character", { member: "a\u0001" }],
    ["unknown period", { member: "a", period: "year" }],
    ["at without period", { member: "a", at: "2026-11-22" }],
    ["bad at", { member: "a", period: "day", at: "yesterday" }],
    ["a date that does not exist", { member: "a", period: "day", at: "2026-02-30T10:00:00Z" }],
    ["a time with no calendar label", { member: "a", period: "month", at: -8.64e15 }],
    ["a five-digit year", { member: "a", period: "day", at: Date.UTC(10000, 0, 1) }],
    ["ttl 0", { member: "a", ttl: 0 }],
    ["fractional ttl", { member: "a", ttl: 1.5 }],
    ["one bad item in a batch", { items: [{ member: "a" }, { member: "b", by: 1e13 }] }],
    ["1001 items", { items: Array.from({ length: 1001 }, (_, i) => ({ member: `m${i}` })) }],
    ["unknown field", { member: "a", extra: 1 }],
  ];
  for (const [what, body] of bodies) {
    it(`refuses ${what}`, async () => {
      const res = await api.post(`${base}/c/incr`, body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
      expect(res.body.error.details.length).toBeGreaterThan(0);
      expect(await api.keys()).toEqual([]);
    });
  }

  it("refuses NaN and ±Infinity written as raw JSON", async () => {
    for (const raw of ['{"member":"a","by":NaN}', '{"member":"a","by":1e999}', '{"member":"a","by":-1e999}']) {
      const res = await api.post(`${base}/c/incr`, undefined, { raw, headers: { "content-type": "application/json" } });
      expect(res.status).toBe(400);
    }
    expect(await api.keys()).toEqual([]);
  });

  const reads = [
    "/c/range?min=abc",
    "/c/range?max=1e999",
    "/c/range?min=5&max=1",
    "/c/range?min=((1",
    "/c/top?n=0",
    "/c/top?n=1001",
    "/c/top?period=day&from=2026-11-10&to=2026-11-01",
    "/c/top?period=day&from=2025-01-01&to=2026-11-01",
    "/c/top?period=hour&from=2025-01-01T00:00:00Z&to=2026-02-05T00:00:01Z",
    "/c/top?from=2026-11-01",
    "/c/top?aggregate=max",
    "/c/top?period=day&aggregate=avg",
    "/c/top?period=day&from=notadate",
    "/c/top?period=day&from=2026-02-30",
    "/c/members/a?period=month&to=2026-04-31",
    "/c/sorted?by=length",
    "/bad:name/top",
  ];
  for (const path of reads) {
    it(`refuses GET ${path}`, async () => {
      const res = await api.get(`${base}${path}`);
      expect(res.status).toBe(400);
      expect(await api.keys()).toEqual([]);
    });
  }

  it("attack: an hourly max over 400 days (9,600 buckets, no rollup can answer it) is a 400 naming the 401-bucket limit", async () => {
    const res = await api.get(
      `${base}/c/top?period=hour&from=2025-11-01T00:00:00Z&to=2026-11-01T00:00:00Z&aggregate=max`,
    );
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("invalid_request");
    expect(res.body.error.message).toContain("at most 401 buckets");
    expect(await api.keys()).toEqual([]);
    // a sum over the same range is answered from rollups, and a daily max over 400 days still works
    expect((await api.get(`${base}/c/top?period=hour&from=2025-11-01T00:00:00Z&to=2026-11-01T00:00:00Z`)).status).toBe(
      200,
    );
    expect((await api.get(`${base}/c/top?period=day&from=2025-11-01&to=2026-11-01&aggregate=max`)).status).toBe(200);
  });

  it("attack: an ingest key's member delete over 400 days of hours reads only the keys that may hold the member", async () => {
    // nothing to delete: one HMGET and an EXISTS (was 9,600 ZREMs; then a 400 before Redis). Sent
    // once before it is measured: run alone, this file's Redis has not cached the script yet
    // (NOSCRIPT, then EVAL: one more command), which the whole suite's earlier files had.
    const path = `${base}/c/members/a?period=hour&from=2025-11-01T00:00:00Z&to=2026-11-01T00:00:00Z`;
    expect((await api.del(path)).status).toBe(204);
    const empty = await api.cost(() => api.del(path));
    expect(empty.result.status).toBe(204);
    expect(empty.commands).toBe(3);
    expect(await api.keys()).toEqual([]);
    // where the member is in more than 1,750 keys it is a 400 before anything is written
    // (test/redis/counters-delete.test.ts); 60 days of hours, or 400 days of days, always pass
    expect(
      (await api.del(`${base}/c/members/a?period=hour&from=2026-09-02T00:00:00Z&to=2026-10-31T23:00:00Z`)).status,
    ).toBe(204);
    expect((await api.del(`${base}/c/members/a?period=day&from=2025-11-01&to=2026-11-01`)).status).toBe(204);
  });

  it("refuses bad rollups", async () => {
    const cases = [
      { sources: [] },
      { sources: ["a", "b"], weights: [1] },
      { sources: ["a"], weights: [Number.POSITIVE_INFINITY] },
      { sources: ["a:b"] },
      { sources: [{ counter: "a", period: "day", from: "2024-01-01", to: "2026-01-01" }] },
      { sources: ["a"], aggregate: "avg" },
      { sources: [{ counter: "a", period: "day", from: "2026-02-30" }] },
      { sources: [{ counter: "a", period: "month", from: -8.64e15, to: -8.64e15 }] },
      {
        sources: Array.from({ length: 3 }, () => ({
          counter: "a",
          period: "hour",
          from: "2026-01-01",
          to: "2026-01-30",
        })),
      },
    ];
    for (const body of cases) {
      const res = await api.post(`${base}/c/union`, body, { key: "admin" });
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
    }
    expect(await api.keys()).toEqual([]);
  });
});

describe("one Redis round trip per API call", () => {
  const api = createTestApi({ label: "counters-cost", start: "2026-11-22T12:00:00Z" });
  afterAll(() => api.cleanup());

  it("costs exactly one HTTP request for every endpoint, batches and period unions included", async () => {
    const batch = {
      items: Array.from({ length: 1000 }, (_, i) => ({
        member: `m${i % 50}`,
        by: i,
        period: i % 2 ? "day" : undefined,
        ttl: 600,
      })),
    };
    const calls: [string, () => Promise<{ status: number }>][] = [
      ["incr batch", () => api.post(`${base}/cost/incr`, batch)],
      [
        "incr backdated",
        () => api.post(`${base}/cost/incr`, { member: "m1", period: "day", at: "2026-11-01T00:00:00Z" }),
      ],
      ["list", () => api.get(base)],
      ["top", () => api.get(`${base}/cost/top?n=5`)],
      ["bottom", () => api.get(`${base}/cost/bottom?n=5`)],
      ["member", () => api.get(`${base}/cost/members/m0`)],
      ["range", () => api.get(`${base}/cost/range?min=(10&max=%2Binf`)],
      ["sorted", () => api.get(`${base}/cost/sorted`)],
      ["top over 30 days", () => api.get(`${base}/cost/top?period=day&from=2026-10-24&to=2026-11-22`)],
      ["finished month range", () => api.get(`${base}/cost/top?period=day&from=2026-11-01&to=2026-11-21`)],
      [
        "hours over 400 days",
        () => api.get(`${base}/cost/top?period=hour&from=2025-10-19T00:00:00Z&to=2026-11-22T00:00:00Z`),
      ],
      [
        "union",
        () =>
          api.post(
            `${base}/cost-week/union`,
            { sources: ["cost", { counter: "cost", period: "day", from: "2026-11-16", to: "2026-11-22" }] },
            { key: "admin" },
          ),
      ],
      ["delete member", () => api.del(`${base}/cost/members/m2`)],
      ["delete counter", () => api.del(`${base}/cost-week`, { key: "admin" })],
    ];
    for (const [what, call] of calls) {
      expect((await call()).status, what).toBeLessThan(300); // first call caches the script (EVAL after NOSCRIPT)
      const { result, requests } = await api.cost(call);
      expect(result.status, what).toBeLessThan(300);
      expect(requests, what).toBe(1);
    }
  });

  it("bad input costs no request at all", async () => {
    const { requests } = await api.cost(() => api.post(`${base}/cost/incr`, { member: "a", by: 1e13 }));
    expect(requests).toBe(0);
  });
});

describe("registry, idempotency and the OpenAPI document", () => {
  const api = createTestApi({ label: "counters-misc" });
  afterAll(() => api.cleanup());

  it("lists counter names most recently written first and forgets deleted ones", async () => {
    for (const name of ["zeta", "Alpha", "beta", "10"]) {
      await api.post(`${base}/${name}/incr`, { member: "m" });
      api.advance(1000);
    }
    await api.post(`${base}/gamma/incr`, { member: "m", period: "week" });
    api.advance(1000);
    const listed = await api.get(base);
    expect(listed.body.counters).toEqual(["gamma", "10", "beta", "Alpha", "zeta"]);
    expect(listed.body.items[0]).toEqual({ counter: "gamma", lastWriteAt: api.now - 1000 });
    expect(listed.body.nextOffset).toBeNull();
    // a write moves a name to the front; a plain counter's too, once a minute (review 26)
    await api.post(`${base}/zeta/incr`, { member: "m" });
    expect((await api.get(base)).body.counters).toEqual(["gamma", "10", "beta", "Alpha", "zeta"]);
    api.advance(60_000);
    await api.post(`${base}/zeta/incr`, { member: "m" });
    expect((await api.get(base)).body.counters).toEqual(["zeta", "gamma", "10", "beta", "Alpha"]);
    await api.del(`${base}/beta`, { key: "admin" });
    await api.del(`${base}/gamma`, { key: "admin" });
    expect((await api.get(base)).body.counters).toEqual(["zeta", "10", "Alpha"]);
    expect((await api.get(base, { key: "ingest" })).status).toBe(403);
  });

  it("orders period counters by their last write to the minute, and re-lists one re-created within the minute", async () => {
    const names = async () =>
      ((await api.get(`${base}?limit=100`)).body.counters as string[]).filter((n) => n.startsWith("p-"));
    await api.post(`${base}/p-one/incr`, { member: "m", period: "hour" });
    api.advance(1000);
    await api.post(`${base}/p-two/incr`, { member: "m", period: "day" });
    api.advance(1000);
    // within the minute of p-one's last refresh: its counts change, its place does not
    await api.post(`${base}/p-one/incr`, { member: "m", period: "hour" });
    expect(await names()).toEqual(["p-two", "p-one"]);
    expect((await api.get(`${base}/p-one/members/m?period=hour`)).body.score).toBe(2);
    // a minute later the next write moves it to the front, with that write's time
    api.advance(60_000);
    await api.post(`${base}/p-one/incr`, { member: "m", period: "hour" });
    const listed = await api.get(`${base}?limit=100`);
    expect((listed.body.counters as string[]).filter((n) => n.startsWith("p-"))).toEqual(["p-one", "p-two"]);
    expect(listed.body.items[0]).toEqual({ counter: "p-one", lastWriteAt: api.now });
    // a deleted counter's stamp goes with its index: writing it again lists it at once
    await api.del(`${base}/p-two`, { key: "admin" });
    expect(await names()).toEqual(["p-one"]);
    await api.post(`${base}/p-two/incr`, { member: "m", period: "day" });
    expect(await names()).toEqual(["p-two", "p-one"]);
  });

  it("replays a repeated Idempotency-Key without counting twice", async () => {
    const headers = { "idempotency-key": "incr-1" };
    const first = await api.post(`${base}/idem/incr`, { member: "m", by: 2 }, { headers });
    const again = await api.post(`${base}/idem/incr`, { member: "m", by: 2 }, { headers });
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect((await api.get(`${base}/idem/members/m`)).body.score).toBe(2);
    expect((await api.post(`${base}/idem/incr`, { member: "m", by: 3 }, { headers })).status).toBe(409);
  });

  it("describes every counters endpoint in /openapi.json", async () => {
    const doc = (await api.get("/openapi.json", { key: "none" })).body;
    for (const [path, method] of [
      ["/v1/counters", "get"],
      ["/v1/counters/{counter}/incr", "post"],
      ["/v1/counters/{counter}/top", "get"],
      ["/v1/counters/{counter}/bottom", "get"],
      ["/v1/counters/{counter}/members/{member}", "get"],
      ["/v1/counters/{counter}/members/{member}", "delete"],
      ["/v1/counters/{counter}/range", "get"],
      ["/v1/counters/{counter}/sorted", "get"],
      ["/v1/counters/{counter}/union", "post"],
      ["/v1/counters/{counter}", "delete"],
    ] as const) {
      expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
    }
  });
});
