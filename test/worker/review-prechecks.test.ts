/**
 * Review of the prechecked routes (functions/prechecks.ts, issue 14) through the Worker: what odd
 * but well-formed requests actually do, and whether anything was written. The prechecks answer
 * as zod does (test/unit/review-prechecks.test.ts); these tests look past them, at the HTTP layer
 * and at what the feature then stores.
 *
 * A test kept as `it.fails` is a confirmed bug: its body asserts the right behaviour, which
 * today fails; the comment above it says what is wrong.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApi, type TestResponse } from "../helpers/worker.ts";

const api = createTestApi({ label: "rv-prechecks" });
afterAll(() => api.cleanup());

const json = (text: string, contentType = "application/json") => ({
  raw: text,
  headers: { "content-type": contentType },
});
/** The keys whose name mentions `name` (every feature's keys carry the path name). */
const keysOf = async (name: string) => (await api.keys()).filter((k) => k.includes(name));

function expectEnvelope(res: TestResponse, status: number, code?: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.error.code).toMatch(code ?? /^[a-z_]+$/);
  expect(typeof res.body.error.message).toBe("string");
}

describe("bad write bodies: a 4xx with the envelope, nothing written", () => {
  // Each route, a fresh name, and bodies that must all be refused.
  const routes: [string, (name: string) => string, string[]][] = [
    [
      "counter increments",
      (n) => `/v1/counters/${n}/incr`,
      [
        '{"member":"a","by":1e400}',
        '{"member":"a","by":-1e400}',
        '{"member":"a","by":"1"}',
        '{"member":"a","by":1,"by":"x"}', // duplicated key: JSON.parse keeps the last
        '{"member":"a\\ud800"}',
        '{"member":"a\\u0000"}',
        '{"items":[]}',
        '[{"member":"a"}]',
        `{"items":[${Array.from({ length: 1001 }, () => '{"member":"a"}').join(",")}]}`,
        `{"items":[${Array.from({ length: 999 }, () => '{"member":"a"}').join(",")},{"member":""}]}`,
        '{"member":"a","__proto__":{"by":5}}',
        '{"member":"a","period":"day","at":"2026-02-30"}',
        '{"member":"a","ttl":1.5}',
      ],
    ],
    [
      "trending events",
      (n) => `/v1/trending/${n}/events`,
      [
        '{"member":"a","count":1e400}',
        '{"member":"a","count":-0}',
        '{"member":"a","count":"1"}',
        '{"member":"a","at":9007199254740991}',
        '{"member":"a","at":"2026-11-22T12:30:00.9999999999Z"}',
        '{"events":[{"member":"a"}],"events":[]}',
        `{"events":[${Array.from({ length: 1001 }, () => '{"member":"a"}').join(",")}]}`,
        '{"member":"\\udc00"}',
      ],
    ],
    [
      "presence heartbeats",
      (n) => `/v1/presence/${n}/heartbeats`,
      [
        '{"ids":[]}',
        '{"id":"a","ids":["a"]}',
        `{"ids":[${Array.from({ length: 1001 }, (_, i) => `"u${i}"`).join(",")}]}`,
        '{"ids":["a",1]}',
        '{"id":"a\\u007f"}',
        '{"__proto__":{"id":"a"}}',
      ],
    ],
    [
      "leaderboard score changes",
      (n) => `/v1/leaderboards/${n}/players/p1/score`,
      ['{"by":1e400}', '{"set":1e16}', '{"by":1,"set":2}', '{"set":1,"mode":"worst"}', '{"by":"1"}', "[]"],
    ],
  ];
  for (const [label, path, bodies] of routes)
    it(`${label}: every bad body is a 400 and writes nothing`, async () => {
      const name = `bad-${label.split(" ")[0]}`;
      const before = (await api.keys()).length;
      for (const body of bodies) {
        const res = await api.post(path(name), undefined, json(body));
        expectEnvelope(res, 400);
      }
      expect(await keysOf(name)).toEqual([]);
      expect((await api.keys()).length).toBe(before);
    });

  it("a body that is not UTF-8, or not JSON, or empty: 400 (415 without a JSON type), nothing written", async () => {
    const before = (await api.keys()).length;
    // {"member":"<0xff>"}
    const latin = new Uint8Array([...new TextEncoder().encode('{"member":"'), 0xff, ...new TextEncoder().encode('"}')]);
    expectEnvelope(await api.post("/v1/counters/enc/incr", undefined, json(latin as never)), 400, "malformed_json");
    expectEnvelope(await api.post("/v1/counters/enc/incr", undefined, json('{"member":"a"')), 400, "malformed_json");
    expectEnvelope(await api.post("/v1/counters/enc/incr", undefined, json("   ")), 400, "malformed_json");
    expectEnvelope(await api.post("/v1/counters/enc/incr", undefined, json("")), 400);
    expectEnvelope(await api.post("/v1/counters/enc/incr", undefined, json('{"member":"a"}', "text/plain")), 415);
    expect((await api.keys()).length).toBe(before);
  });

  it("a body over 1 MiB is a 413 and writes nothing, even with a batch of valid items", async () => {
    const member = "m".repeat(250);
    const items = Array.from({ length: 1000 }, (_, i) => ({ member: `${member}${i}`, by: 1 }));
    const text = JSON.stringify({ items }).replace("{", `{${" ".repeat(1024 * 1024)}`);
    const res = await api.post("/v1/counters/big/incr", undefined, json(text));
    expectEnvelope(res, 413);
    expect(await keysOf("big")).toEqual([]);
  });
});

describe("odd but good input is taken as it is", () => {
  it("1,000 items (the limit) are written; -0 is stored and answered as 0; __proto__ and constructor are plain members", async () => {
    const items = Array.from({ length: 1000 }, (_, i) => ({
      member: i < 2 ? ["__proto__", "constructor"][i] : `m${i}`,
    }));
    expect((await api.post("/v1/counters/lim/incr", { items })).status).toBe(200);
    const zero = await api.post("/v1/counters/lim/incr", undefined, json('{"member":"z","by":-0}'));
    expect(zero.status).toBe(200);
    expect(JSON.stringify(zero.body)).toBe('{"results":[{"member":"z","score":0}]}');
    const proto = await api.get("/v1/counters/lim/members/__proto__");
    expect(proto.status).toBe(200);
    expect(proto.body).toMatchObject({ member: "__proto__", score: 1 });
    const ctor = await api.get("/v1/counters/lim/members/constructor");
    expect(ctor.body).toMatchObject({ member: "constructor", score: 1 });
  });

  it("a body with a byte-order mark, and JSON media types with parameters or a +json suffix, are accepted", async () => {
    for (const [body, type] of [
      ['\ufeff{"member":"bom"}', "application/json"],
      ['{"member":"a"}', "application/json; charset=utf-8"],
      ['{"member":"a"}', 'application/json; charset="UTF-8"'],
      ['{"member":"a"}', "APPLICATION/JSON"],
      ['{"member":"a"}', "application/problem+json"],
    ] as const) {
      const res = await api.post("/v1/counters/ct/incr", undefined, json(body, type));
      expect(res.status, type).toBe(200);
    }
    expect((await api.get("/v1/counters/ct/members/a")).body.score).toBe(4);
  });

  it("queries: a repeated name is a 400; __proto__ and constructor names are ignored; percent-encoded digits decode", async () => {
    await api.post("/v1/trending/q1/events", { member: "m" });
    expectEnvelope(await api.get("/v1/trending/q1/top?n=5&n=5"), 400, "invalid_request");
    const odd = await api.get("/v1/trending/q1/top?n=%35&window=%32%34h&__proto__=1&constructor=x");
    expect(odd.status).toBe(200);
    expect(odd.body.window.hours).toBe(24);
    expect(odd.body.items).toEqual([{ rank: 1, member: "m", count: 1 }]);
  });
});

describe("text query fields the prechecks pass on as they are (the library parses them)", () => {
  // The prechecks take any text for these (functions/prechecks.ts `textField`): whatever reaches
  // the library must be a 400 envelope or an answer, never a 5xx, and a read writes nothing.
  const reads: [string, (v: string) => string][] = [
    ["counter top from", (v) => `/v1/counters/tq/top?period=day&from=${v}`],
    ["counter bottom to", (v) => `/v1/counters/tq/bottom?period=hour&to=${v}`],
    ["counter member from", (v) => `/v1/counters/tq/members/a?period=week&from=${v}&aggregate=max`],
    ["counter range min", (v) => `/v1/counters/tq/range?min=${v}`],
    ["counter range max", (v) => `/v1/counters/tq/range?max=${v}&period=day`],
    ["counter sorted to", (v) => `/v1/counters/tq/sorted?period=month&to=${v}`],
    ["presence day", (v) => `/v1/presence/tq?day=${v}`],
    ["presence members cursor", (v) => `/v1/presence/tq/members?cursor=${v}`],
    ["presence rooms cursor", (v) => `/v1/presence?cursor=${v}`],
    ["histogram from", (v) => `/v1/histograms/tq?from=${v}`],
    ["board season", (v) => `/v1/leaderboards/tq?season=${v}`],
    ["board player season", (v) => `/v1/leaderboards/tq/players/p1/around?season=${v}`],
  ];
  const text = fc.oneof(
    fc.constantFrom(
      "",
      "-0",
      "0",
      "1e400",
      "-1e400",
      "9007199254740993",
      "-9007199254740993",
      "1700000000000.5",
      "2026-11-22T24:00Z",
      "2026-02-29",
      "1000-01-01",
      "0999-12-31",
      "9999-12-31T23:59:59.999Z",
      "2026-W53",
      "2026-W00",
      "2026-00",
      "2026-11-22T12:00:00+99:00",
      "(",
      "((1",
      "(-inf",
      "+inf",
      "inf",
      "-INF",
      "nan",
      "1e-400",
      "0x1F",
      "1_000",
      " 1",
      "current ",
      "previous",
      "ZZZZ",
      "-1",
      "99999999999999999999999999",
      "x".repeat(91),
    ),
    fc.string({ maxLength: 30 }),
    fc.string({ unit: "binary", maxLength: 10 }),
  );
  beforeAll(async () => {
    await api.post("/v1/counters/tq/incr", { items: [{ member: "a" }, { member: "a", period: "day" }] });
    await api.post("/v1/presence/tq/heartbeats", { id: "u" });
    await api.put("/v1/histograms/tq", { bucketWidth: 1 }, { key: "admin" });
    await api.put("/v1/leaderboards/tq/players/p1", { name: "P" });
  });

  it("property: any text is a 400 envelope or an answer, never a 5xx, and writes nothing", async () => {
    const before = (await api.keys()).sort();
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...reads), text, async ([label, url], value) => {
        const res = await api.get(url(encodeURIComponent(value)));
        expect([200, 400, 404], `${label} ${JSON.stringify(value)}: ${JSON.stringify(res.body)}`).toContain(res.status);
        if (res.status !== 200) expect(res.body.error.code).toMatch(/^[a-z_]+$/);
      }),
      { numRuns: 400 },
    );
    expect((await api.keys()).sort()).toEqual(before);
  });
});

describe("findings", () => {
  // FIXED (was low; the route gate reads the media type as the JSON validator does): valid JSON media types by RFC 9110 (`parameters = *( OWS ";" OWS [ parameter ] )`,
  // a subtype may hold digits) pass the body guard (functions/middleware/body.ts JSON_TYPE) and
  // are then refused with 415 by the route's media-type gate (functions/lazy-route.ts
  // JSON_REQUEST, copied from @hono/zod-openapi), with code `http_error` and message "Unsupported
  // Media Type" instead of the guard's `unsupported_media_type` and its actionable sentence.
  // Right: accepted (200), as `application/json; charset=utf-8` is; at the least one 415 shape.
  it("JSON media types with a trailing ';', a space before ';' or a digit in a +json subtype are accepted", async () => {
    for (const type of [
      "application/json;",
      "application/json;charset=utf-8;",
      "application/json ;charset=utf-8",
      "application/vnd.api.v2+json",
    ]) {
      const res = await api.post("/v1/counters/ct2/incr", undefined, json('{"member":"a"}', type));
      expect(res.status, `${type}: ${JSON.stringify(res.body)}`).toBe(200);
    }
  });

  // FIXED (was low; the route gate throws the guard's error): two 415 shapes for the same refusal. A non-JSON type on a non-empty body gets the
  // body guard's `unsupported_media_type` ("Send the body as JSON with 'Content-Type:
  // application/json'."); the same type on an empty body (which the guard lets through) gets the
  // route gate's `http_error` ("Unsupported Media Type"). Right: one code for one refusal.
  it("every 415 of a JSON write has the code unsupported_media_type", async () => {
    const withBody = await api.post("/v1/counters/ct3/incr", undefined, json('{"member":"a"}', "text/plain"));
    const empty = await api.post("/v1/counters/ct3/incr", undefined, json("", "text/plain"));
    expect(withBody.status).toBe(415);
    expect(empty.status).toBe(415);
    expect(empty.body.error.code).toBe(withBody.body.error.code);
  });

  // FIXED (was low; Meta checks the meta as sent, before z.record's copy, and metaProblem refuses a __proto__ key at any depth): a join's `meta` with a `__proto__` key was answered 201 with that key silently gone.
  // joinPrecheck leaves such a meta to zod, and zod's `z.record` copies it by assignment, so
  // `copy["__proto__"] = v` sets the copy's prototype (or is ignored for a non-object) instead of
  // a key: the library then measures and stores the copy. So a meta of 5,000 bytes gets past the
  // 4,096-byte limit (stored as {}), and {"__proto__":{...},"y":2} is stored as {"y":2}.
  // Right: a 400 for such a meta (or the key kept as sent), never a 201 that drops what was sent.
  it("a join whose meta has a __proto__ key is refused (400) or stored as sent", async () => {
    const big = await api.put(
      "/v1/leaderboards/meta1/players/p1",
      undefined,
      json(`{"name":"A","meta":{"__proto__":"${"x".repeat(5000)}"}}`),
    );
    // what an ordinary key of that size gets
    const plain = await api.put(
      "/v1/leaderboards/meta1/players/p2",
      undefined,
      json(`{"name":"B","meta":{"big":"${"x".repeat(5000)}"}}`),
    );
    expect(plain.status).toBe(400);
    expect(big.status, JSON.stringify(big.body)).toBe(400);
  });

  // FIXED (was low; metaProblem refuses a non-finite number at any depth of meta): JSON numbers past the double range (1e400) parse to Infinity; in a join's `meta`
  // (z.any()) they are accepted and stored as null: a 201 that changed what was sent. Every
  // other number of the API refuses them ("finite numbers", API.md). Right: 400 naming the field.
  it("a join whose meta holds 1e400 is refused, not stored as null", async () => {
    const res = await api.put("/v1/leaderboards/meta2/players/p1", undefined, json('{"name":"A","meta":{"n":1e400}}'));
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(await keysOf("meta2")).toEqual([]);
  });

  // FIXED (was low; functions/middleware/request.ts pathGuard refuses it): a path member whose percent-encoding is not UTF-8 (`%FF`, or `%ED%A0%80`, a lone
  // surrogate) is not refused: Hono keeps the undecodable text as it is, so the member becomes
  // the literal "%FF" (which a client would encode as %25FF). A DELETE then removes member "%FF"
  // (the same holds for a presence leave and for the reads). Right: 400 (the member is not valid
  // UTF-8), nothing deleted.
  it("DELETE of a member with a non-UTF-8 percent-encoding is a 400 and deletes nothing", async () => {
    await api.post("/v1/counters/pct/incr", { member: "%FF" });
    const res = await api.del("/v1/counters/pct/members/%FF");
    const after = await api.get("/v1/counters/pct/members/%25FF");
    expect({ status: res.status, member: after.status }).toEqual({ status: 400, member: 200 });
  });

  // What an HTTP client sends for DELETE …/members/.. (URL parsing resolves the dot segment, review2):
  // the router took it for the counter's, board's or room's own DELETE. Refused, nothing deleted.
  it("a DELETE path ending in '/' is a 400 and deletes nothing, even with an admin key", async () => {
    await api.post("/v1/counters/dots/incr", { member: "keep" });
    await api.put("/v1/leaderboards/dots/players/ada", { name: "Ada" });
    await api.post("/v1/presence/dots/heartbeats", { id: "u1" });
    for (const path of ["/v1/counters/dots/", "/v1/leaderboards/dots/", "/v1/presence/dots/"]) {
      const res = await api.del(path, { key: "admin" });
      expect({ path, status: res.status, code: res.body.error?.code }).toEqual({
        path,
        status: 400,
        code: "invalid_request",
      });
    }
    expect((await api.get("/v1/counters/dots/members/keep")).body.score).toBe(1);
    expect((await api.get("/v1/leaderboards/dots/players/ada")).status).toBe(200);
    expect((await api.get("/v1/presence/dots")).body.online).toBe(1);
  });

  // FIXED (was lowest; the ratio is capped at Number.MAX_VALUE, and a positive baseline sum never
  // scales to 0): a trending `count` is "finite, 0 < count ≤ 1e12", so the prechecks (and zod)
  // take subnormal counts such as 1e-320. In the rising baseline (a 24-hour average) it stays a
  // positive 2.08e-322, yet `count / baseline` overflowed to Infinity, which JSON answers as
  // `ratio: null` — documented as "null when the baseline is 0" (functions/routes/trending.ts).
  it("rising: ratio is null only when the baseline is 0, even after a subnormal count", async () => {
    const start = api.now;
    api.setNow(start - 3 * 3600_000);
    expect((await api.post("/v1/trending/sub/events", undefined, json('{"member":"x","count":1e-320}'))).status).toBe(
      200,
    );
    api.setNow(start);
    expect((await api.post("/v1/trending/sub/events", { member: "x" })).status).toBe(200);
    const rising = await api.get("/v1/trending/sub/rising?baseline=24h");
    expect(rising.status).toBe(200);
    const [item] = rising.body.items as { baseline: number; ratio: number | null }[];
    expect(item?.baseline).toBeGreaterThan(0);
    expect(item?.ratio).not.toBeNull();
  });
});
