/**
 * Hostile input over every endpoint: each bad request gets the right 4xx with
 * the error envelope, and afterwards the keyspace holds nothing but what valid
 * requests wrote.
 *
 * Part one walks /openapi.json, so every route a feature adds is covered as it
 * lands: bad names in each path parameter, and bad bodies on each write. Part
 * two knows the contract's fields and throws fast-check values at them.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApi, type TestApi, type TestResponse } from "../helpers/worker.ts";

const NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$";
const MIB = 1024 * 1024;

interface Operation {
  method: string;
  template: string;
  nameParams: string[];
  otherParams: string[];
  hasBody: boolean;
}

async function operationsOf(api: TestApi): Promise<Operation[]> {
  const doc = (await api.get("/openapi.json", { key: "none" })).body as {
    paths: Record<
      string,
      Record<
        string,
        { parameters?: { name: string; in: string; schema?: { pattern?: string } }[]; requestBody?: unknown }
      >
    >;
  };
  const ops: Operation[] = [];
  for (const [template, methods] of Object.entries(doc.paths)) {
    if (!template.startsWith("/v1/")) continue;
    for (const [method, op] of Object.entries(methods)) {
      const path = (op.parameters ?? []).filter((p) => p.in === "path");
      ops.push({
        method: method.toUpperCase(),
        template,
        nameParams: path.filter((p) => p.schema?.pattern === NAME_PATTERN).map((p) => p.name),
        otherParams: path.filter((p) => p.schema?.pattern !== NAME_PATTERN).map((p) => p.name),
        hasBody: op.requestBody !== undefined,
      });
    }
  }
  return ops;
}

function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(values[name] ?? "v1"));
}

function expectEnvelope(res: TestResponse, status: number | number[], label: string): void {
  const statuses = Array.isArray(status) ? status : [status];
  expect({ label, status: res.status }).toEqual({
    label,
    status: statuses.includes(res.status) ? res.status : statuses[0],
  });
  expect(res.body?.error?.code, label).toMatch(/^[a-z_]+$/);
  expect(typeof res.body.error.message, label).toBe("string");
  expect(JSON.stringify(res.body), label).not.toMatch(/\bat .+\.(ts|js):\d+|Error:/);
}

const BAD_NAMES = [
  "a:b",
  "a*",
  "*",
  "{a}",
  "a}",
  "a b",
  " a",
  "a ",
  "é",
  "名前",
  "😀",
  "-a",
  "_a",
  ".a",
  "a/b",
  "a%b",
  "a\u0000b",
  "a\nb",
  "a;b",
  "a,b",
  "a\\b",
  "x".repeat(65),
  "\u200b",
  "a\u202eb",
];

describe("every /v1 route from the OpenAPI document", () => {
  const api = createTestApi({ label: "hostile-oa" });
  let ops: Operation[] = [];
  beforeAll(async () => {
    ops = await operationsOf(api);
  });
  afterAll(() => api.cleanup());

  it("finds the feature routes to attack", () => {
    expect(ops.length).toBeGreaterThan(0);
  });

  it("refuses names with ':' '*' '{' spaces, unicode, control characters or 65 characters in every name parameter", async () => {
    for (const op of ops) {
      for (const param of op.nameParams) {
        for (const bad of BAD_NAMES) {
          const path = fill(op.template, { [param]: bad });
          const res = await api.call(op.method, path, op.hasBody ? {} : undefined, { key: "admin" });
          // "a/b" no longer matches the route's shape; every other bad name reaches validation.
          expectEnvelope(
            res,
            bad === "a/b" ? [400, 404] : 400,
            `${op.method} ${op.template} ${param}=${JSON.stringify(bad)}`,
          );
        }
      }
    }
    expect(await api.keys()).toEqual([]);
  });

  it("refuses malformed, non-JSON, oversized, deeply nested and non-object bodies on every write", async () => {
    const json = { "content-type": "application/json" };
    const cases: { label: string; raw: string; headers: Record<string, string>; status: number }[] = [
      { label: "truncated", raw: '{"member":', headers: json, status: 400 },
      { label: "trailing comma", raw: '{"member":"a",}', headers: json, status: 400 },
      { label: "single quotes", raw: "{'member':'a'}", headers: json, status: 400 },
      { label: "NaN", raw: '{"value":NaN,"by":NaN,"count":NaN}', headers: json, status: 400 },
      { label: "Infinity", raw: '{"value":Infinity,"by":Infinity}', headers: json, status: 400 },
      { label: "-Infinity", raw: '{"value":-Infinity,"by":-Infinity}', headers: json, status: 400 },
      { label: "two documents", raw: '{"a":1}{"b":2}', headers: json, status: 400 },
      { label: "bad UTF-8", raw: '{"member":"\udc00"}', headers: json, status: 400 },
      { label: "deep nesting", raw: `{"member":${"[".repeat(5000)}${"]".repeat(5000)}}`, headers: json, status: 400 },
      { label: "array", raw: "[]", headers: json, status: 400 },
      { label: "null", raw: "null", headers: json, status: 400 },
      { label: "string", raw: '"member"', headers: json, status: 400 },
      { label: "number", raw: "1e308", headers: json, status: 400 },
      { label: "form", raw: "member=a", headers: { "content-type": "application/x-www-form-urlencoded" }, status: 415 },
      { label: "text", raw: '{"member":"a"}', headers: { "content-type": "text/plain" }, status: 415 },
      { label: "no type", raw: '{"member":"a"}', headers: {}, status: 415 },
      {
        label: "json lookalike type",
        raw: '{"member":"a"}',
        headers: { "content-type": "application/jsonp" },
        status: 415,
      },
      { label: "over 1 MiB", raw: `{"member":"${"x".repeat(MIB)}"}`, headers: json, status: 413 },
      {
        label: "over 1 MiB, lying length",
        raw: `{"member":"${"x".repeat(MIB)}"}`,
        headers: { ...json, "content-length": "20" },
        status: 413,
      },
    ];
    for (const op of ops.filter((o) => o.hasBody)) {
      for (const c of cases) {
        const res = await api.call(op.method, fill(op.template, {}), undefined, {
          key: "admin",
          raw: c.raw,
          headers: c.headers,
        });
        expectEnvelope(res, c.status, `${op.method} ${op.template} ${c.label}`);
      }
    }
    expect(await api.keys()).toEqual([]);
  });

  it("property: any JSON value that is not an object is a 400 on every write", async () => {
    const writes = ops.filter((o) => o.hasBody);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...writes),
        fc.jsonValue({ maxDepth: 3 }).filter((v) => v === null || typeof v !== "object" || Array.isArray(v)),
        async (op, value) => {
          const res = await api.call(op.method, fill(op.template, {}), undefined, {
            key: "admin",
            raw: JSON.stringify(value),
            headers: { "content-type": "application/json" },
          });
          expectEnvelope(res, 400, `${op.method} ${op.template} ${JSON.stringify(value).slice(0, 60)}`);
        },
      ),
      { numRuns: 150, seed: 42 },
    );
    expect(await api.keys()).toEqual([]);
  });
});

/** The contract's write endpoints, each with a valid body and its fields by kind. */
interface WriteEndpoint {
  method: "POST" | "PUT";
  path: string;
  /** OpenAPI template, to find out whether the feature has landed. */
  template: string;
  valid: Record<string, unknown>;
  /** Fields holding a member/id/name string (1..256 UTF-8 bytes, no control characters). */
  strings: string[];
  /** Numeric fields and whether they must be > 0. */
  numbers: { field: string; positive: boolean }[];
  /** Batch form: list key and a valid item. */
  batch?: { key: string; item: unknown };
  /** What must exist before a valid write to `path` succeeds (a histogram, a joined player). */
  prepare?: (path: string) => { method: "PUT"; path: string; body: unknown };
}

const WRITES: WriteEndpoint[] = [
  {
    method: "POST",
    path: "/v1/trending/tr/events",
    template: "/v1/trending/{stream}/events",
    valid: { member: "a", count: 1 },
    strings: ["member"],
    numbers: [{ field: "count", positive: true }],
    batch: { key: "events", item: { member: "a" } },
  },
  {
    method: "POST",
    path: "/v1/counters/ct/incr",
    template: "/v1/counters/{counter}/incr",
    valid: { member: "a", by: 1 },
    strings: ["member"],
    numbers: [{ field: "by", positive: false }],
    batch: { key: "items", item: { member: "a" } },
  },
  {
    method: "POST",
    path: "/v1/histograms/hi/observations",
    template: "/v1/histograms/{histogram}/observations",
    valid: { value: 1 },
    strings: [],
    numbers: [{ field: "value", positive: false }],
    batch: { key: "values", item: 1 },
    prepare: (path) => ({ method: "PUT", path: path.replace(/\/observations$/, ""), body: { bucketWidth: 10 } }),
  },
  {
    method: "PUT",
    path: "/v1/histograms/hi",
    template: "/v1/histograms/{histogram}",
    valid: { bucketWidth: 10 },
    strings: [],
    numbers: [{ field: "bucketWidth", positive: true }],
  },
  {
    method: "POST",
    path: "/v1/presence/ro/heartbeats",
    template: "/v1/presence/{room}/heartbeats",
    valid: { id: "a" },
    strings: ["id"],
    numbers: [],
    batch: { key: "ids", item: "a" },
  },
  {
    method: "PUT",
    path: "/v1/leaderboards/lb/players/p1",
    template: "/v1/leaderboards/{board}/players/{player}",
    valid: { name: "a" },
    strings: ["name"],
    numbers: [{ field: "score", positive: false }],
  },
  {
    method: "POST",
    path: "/v1/leaderboards/lb/players/p1/score",
    template: "/v1/leaderboards/{board}/players/{player}/score",
    valid: { by: 1 },
    strings: [],
    numbers: [{ field: "by", positive: false }],
    prepare: (path) => ({ method: "PUT", path: path.replace(/\/score$/, ""), body: { name: "p" } }),
  },
];

const RAW = "__raw_number__";

/** Paths of every -0 in a parsed JSON value (JSON.parse keeps "-0" as -0). */
function negativeZeros(value: unknown, path = "$"): string[] {
  if (Object.is(value, -0)) return [path];
  if (value && typeof value === "object")
    return Object.entries(value).flatMap(([k, v]) => negativeZeros(v, `${path}.${k}`));
  return [];
}

/** Strings no member may be: empty, over 256 bytes, control characters, lone surrogates, non-strings. */
const badString = fc.oneof(
  fc.constant(""),
  fc.string({ minLength: 257, maxLength: 400 }),
  fc.constant("é".repeat(128) + "a"), // 257 bytes in 129 characters
  fc.constant("😀".repeat(64) + "a"), // 257 bytes in 65 code points
  fc
    .tuple(fc.string({ maxLength: 10 }), fc.integer({ min: 0, max: 0x1f }), fc.string({ maxLength: 10 }))
    .map(([a, c, b]) => `${a}${String.fromCharCode(c)}${b}`),
  fc.constantFrom("a\u007fb", "\u0085", "a\u009f", "\ud800", "a\udfffb", "\udc00\ud800"),
  fc.constantFrom<unknown>(null, 0, 1, true, [], {}, ["a"], { member: "a" }),
);

/** Values no number field may hold; `positive` fields also refuse 0, -0 and negatives. */
function badNumber(positive: boolean) {
  return fc.oneof(
    fc.constantFrom<unknown>(1e308, -1e308, 1.7976931348623157e308, 1e16, -1e16, "1", "1e3", null, true, [], {}, [1]),
    fc.constantFrom(
      `${RAW}NaN`,
      `${RAW}Infinity`,
      `${RAW}-Infinity`,
      `${RAW}1e999`,
      `${RAW}-1e999`,
      `${RAW}0x10`,
      `${RAW}+1`,
      `${RAW}.5`,
    ),
    positive ? fc.constantFrom<unknown>(0, -0, -1, -1e-9) : fc.constant<unknown>(1e308),
  );
}

/** JSON text of `body`, with `${RAW}...` strings written as bare tokens (NaN, Infinity, ...). */
function rawJson(body: unknown): string {
  return JSON.stringify(body).replace(new RegExp(`"${RAW}([^"]*)"`, "g"), "$1");
}

describe("the contract's fields under fast-check", () => {
  const api = createTestApi({ label: "hostile-fields" });
  let landed: WriteEndpoint[] = [];
  beforeAll(async () => {
    const templates = new Set((await operationsOf(api)).map((o) => `${o.method} ${o.template}`));
    landed = WRITES.filter((w) => templates.has(`${w.method} ${w.template}`));
  });
  afterAll(() => api.cleanup());

  it("every write endpoint of the contract is served", () => {
    expect(WRITES.filter((w) => !landed.includes(w)).map((w) => `${w.method} ${w.template}`)).toEqual([]);
  });

  async function send(w: WriteEndpoint, body: unknown): Promise<TestResponse> {
    return api.call(w.method, w.path, undefined, {
      key: "admin",
      raw: rawJson(body),
      headers: { "content-type": "application/json" },
    });
  }

  it("property: a bad member, id or name in any string field (single or batched) is a 400 and writes nothing", async () => {
    const targets = landed.flatMap((w) => w.strings.map((field) => ({ w, field })));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...targets), badString, fc.boolean(), async ({ w, field }, bad, batched) => {
        let body: unknown = { ...w.valid, [field]: bad };
        if (batched && w.batch) {
          const item = typeof w.batch.item === "object" ? { ...(w.batch.item as object), [field]: bad } : bad;
          body = { [w.batch.key]: [w.batch.item, w.batch.item, item] };
        }
        expectEnvelope(await send(w, body), 400, `${w.method} ${w.path} ${field}=${JSON.stringify(bad)?.slice(0, 40)}`);
      }),
      { numRuns: 200, seed: 7 },
    );
    expect(await api.keys()).toEqual([]);
  });

  it("property: NaN, ±Infinity, 1e308, numeric strings and the wrong types in any number field are a 400", async () => {
    const targets = landed.flatMap((w) => w.numbers.map((n) => ({ w, ...n })));
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...targets).chain((t) => fc.tuple(fc.constant(t), badNumber(t.positive))),
        async ([{ w, field }, bad]) => {
          expectEnvelope(
            await send(w, { ...w.valid, [field]: bad }),
            400,
            `${w.method} ${w.path} ${field}=${String(bad)}`,
          );
        },
      ),
      { numRuns: 200, seed: 11 },
    );
    expect(await api.keys()).toEqual([]);
  });

  it("a batch of 1,001 items, an empty batch, or one bad item among 999 good ones is a 400 and writes nothing", async () => {
    for (const w of landed.filter((x) => x.batch)) {
      const batch = w.batch!;
      const label = `${w.method} ${w.path}`;
      expectEnvelope(
        await send(w, { [batch.key]: Array.from({ length: 1001 }, () => batch.item) }),
        400,
        `${label} 1001`,
      );
      expectEnvelope(await send(w, { [batch.key]: [] }), 400, `${label} empty`);
      const field = w.strings[0];
      const bad =
        typeof batch.item === "object" && field ? { ...(batch.item as object), [field]: "" } : { not: "a value" };
      expectEnvelope(
        await send(w, { [batch.key]: [...Array.from({ length: 999 }, () => batch.item), bad] }),
        400,
        `${label} last bad`,
      );
      expectEnvelope(await send(w, { ...w.valid, [batch.key]: [batch.item] }), 400, `${label} both forms`);
    }
    expect(await api.keys()).toEqual([]);
  });
});

describe("unknown fields", () => {
  // Its own prefix: if a typo is accepted, the write must not spoil the other suites' empty keyspace.
  const api = createTestApi({ label: "hostile-typo" });
  afterAll(() => api.cleanup());

  it("an unknown field (a typo such as 'cuont') is refused in a batched item as it is in a single one", async () => {
    const templates = new Set((await operationsOf(api)).map((o) => `${o.method} ${o.template}`));
    const send = (w: WriteEndpoint, body: unknown) => api.call(w.method, w.path, body, { key: "admin" });
    for (const w of WRITES.filter(
      (x) => x.batch && typeof x.batch.item === "object" && templates.has(`${x.method} ${x.template}`),
    )) {
      const batch = w.batch!;
      const typo = { ...(batch.item as object), cuont: 5 };
      expectEnvelope(await send(w, typo), 400, `${w.method} ${w.path} single`);
      expectEnvelope(await send(w, { [batch.key]: [batch.item, typo] }), 400, `${w.method} ${w.path} batched`);
    }
    expect(await api.keys()).toEqual([]);
  });
});

describe("bodies of several shapes (zod unions)", () => {
  const api = createTestApi({ label: "hostile-union" });
  afterAll(() => api.cleanup());

  it("say what is wrong in the shape the body is closest to, not only 'Invalid input'", async () => {
    const cases: [string, unknown, { path: string; message: string }[]][] = [
      [
        "/v1/leaderboards/b1/players/p1/score",
        { by: "x" },
        [{ path: "by", message: "Invalid input: expected number, received string" }],
      ],
      [
        "/v1/leaderboards/b1/players/p1/score",
        { set: 5, mode: "worst" },
        [{ path: "mode", message: 'Invalid option: expected one of "replace"|"best"' }],
      ],
      ["/v1/leaderboards/b1/players/p1/score", { by: 1, set: 2 }, [{ path: "", message: 'Unrecognized key: "set"' }]],
      [
        "/v1/leaderboards/b1/scores",
        {
          items: [
            { player: "p1", by: 1 },
            { player: "p2", by: "x" },
          ],
        },
        [{ path: "items.1.by", message: "Invalid input: expected number, received string" }],
      ],
      [
        "/v1/histograms/h1/observations",
        { values: [1, "a"] },
        [{ path: "values.1", message: "Invalid input: expected number, received string" }],
      ],
    ];
    for (const [path, body, details] of cases) {
      const res = await api.call("POST", path, body);
      expect(res.status, path).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
      expect(res.body.error.details, `${path} ${JSON.stringify(body)}`).toEqual(
        details.map((d) => ({ in: "json", ...d })),
      );
    }
    expect(await api.keys()).toEqual([]);
  });
});

describe("edge values that are valid", () => {
  const api = createTestApi({ label: "hostile-valid" });
  let landed: WriteEndpoint[] = [];
  beforeAll(async () => {
    const templates = new Set((await operationsOf(api)).map((o) => `${o.method} ${o.template}`));
    landed = WRITES.filter((w) => templates.has(`${w.method} ${w.template}`));
    for (const w of landed) await prepare(w, w.path);
  });

  async function prepare(w: WriteEndpoint, path: string): Promise<void> {
    if (!w.prepare) return;
    const step = w.prepare(path);
    const res = await api.call(step.method, step.path, step.body, { key: "admin" });
    expect([200, 201]).toContain(res.status);
  }
  afterAll(() => api.cleanup());

  const EDGE_STRINGS = [
    "é".repeat(128), // exactly 256 bytes
    "😀".repeat(64), // 256 bytes of 4-byte code points
    "x".repeat(256),
    "a:b*{c} d", // characters that would spell keys or patterns elsewhere
    "e\u0301", // NFD é, distinct from NFC
    "\u202eevil", // right-to-left override
    "👩‍👩‍👧", // ZWJ sequence
    "\uffff",
  ];

  it("accepts members of exactly 256 bytes and unicode edge cases, and stores them verbatim", async () => {
    for (const w of landed.filter((x) => x.strings.length > 0)) {
      for (const value of EDGE_STRINGS) {
        const field = w.strings[0] ?? "member";
        const res = await api.call(w.method, w.path, { ...w.valid, [field]: value }, { key: "admin" });
        expect({ where: `${w.method} ${w.path} ${JSON.stringify(value)}`, status: res.status }).toEqual({
          where: `${w.method} ${w.path} ${JSON.stringify(value)}`,
          status: res.status === 201 ? 201 : 200,
        });
      }
    }
    if (landed.some((w) => w.template === "/v1/presence/{room}/heartbeats")) {
      const page = await api.get("/v1/presence/ro/members?limit=100");
      const ids = new Set((page.body.members as { id: string }[]).map((m) => m.id));
      for (const value of EDGE_STRINGS) expect(ids.has(value), JSON.stringify(value)).toBe(true);
    }
  });

  it("accepts a batch of exactly 1,000 and a 64-character name", async () => {
    for (const w of landed.filter((x) => x.batch)) {
      const batch = w.batch!;
      const res = await api.call(
        w.method,
        w.path,
        { [batch.key]: Array.from({ length: 1000 }, () => batch.item) },
        { key: "admin" },
      );
      expect({ where: w.path, status: res.status }).toEqual({ where: w.path, status: 200 });
      const long = w.path.replace(/^(\/v1\/[a-z]+\/)[^/]+/, `$1${"n".repeat(64)}`);
      await prepare(w, long);
      expect((await api.call(w.method, long, w.valid, { key: "admin" })).status).toBe(200);
    }
  });

  it("treats -0 as zero: accepted where zero is, never stored or returned as a negative zero", async () => {
    for (const w of landed) {
      for (const { field, positive } of w.numbers) {
        if (positive) continue;
        const res = await api.call(w.method, w.path, undefined, {
          key: "admin",
          raw: JSON.stringify({ ...w.valid, [field]: 1 }).replace(/:1([,}])/, ":-0$1"),
          headers: { "content-type": "application/json" },
        });
        expect([200, 201]).toContain(res.status);
        expect(negativeZeros(res.body), `${w.path} ${field}`).toEqual([]);
      }
    }
  });
});
