/**
 * Review 17 (docs truth): the examples, response shapes, routes, limits and contract differences
 * that README.md, docs/*.md and the served /openapi.json state, run against the Worker in workerd
 * (real Redis behind the local Upstash server). The examples and shapes are taken from the
 * markdown programmatically (curl lines; every table row or bullet naming `METHOD /path` with a
 * `{"field",...}` answer), so a new one is checked without a new test. A statement that does not
 * hold is an `it.fails` asserting the right behaviour, with severity and fix above it.
 */
import { beforeAll, describe, expect, it } from "vitest";
import readme from "../../README.md?raw";
import { mounts } from "../../functions/routes/index.ts";
import { MAX_BODY_BYTES } from "../../functions/middleware/body.ts";
import { MAX_BATCH, MAX_MEMBER_BYTES } from "../../src/validation.ts";
import { MAX_TOP_N, MAX_WINDOW_HOURS } from "../../src/trending/validate.ts";
import { MAX_RANGE_DAYS, MAX_LISTED } from "../../src/counters/limits.ts";
import { MAX_PAGE_LIMIT, MAX_AROUND } from "../../src/leaderboards/validate.ts";
import { MAX_MEMBERS_PAGE, MAX_ROOMS_LISTED } from "../../src/presence/validate.ts";
import { MAX_RETENTION_DAYS } from "../../src/histograms/keys.ts";
import { MAX_UNIT_LENGTH } from "../../src/histograms/validate.ts";
import { MIN_SECRET_LENGTH, MAX_SECRET_LENGTH } from "../../src/webhooks/validate.ts";
import { schemaProblems, templateOf, type Schema } from "../helpers/openapi-check.ts";
import { cleanedUpAfterAll, createTestApi, type TestApi, type TestResponse } from "../helpers/worker.ts";

const DOCS = import.meta.glob("../../docs/*.md", { query: "?raw", import: "default", eager: true }) as Record<
  string,
  string
>;
const MARKDOWN: Record<string, string> = { "README.md": readme as unknown as string };
for (const [path, text] of Object.entries(DOCS))
  if (!path.endsWith("costs.md")) MARKDOWN[path.replace("../../", "")] = text;

const track = cleanedUpAfterAll<TestApi>();
const newApi = (label: string) => track(createTestApi({ label, vars: { WEBHOOKS_ALLOW_LOCAL_HTTP: "true" } }));

/** Every route the app serves, as `METHOD /openapi/{template}`. */
function appRoutes(): string[] {
  const out: string[] = [];
  for (const m of mounts)
    for (const [method, path] of m.table) {
      const full = (m.base.replace(/\/$/, "") + (path === "/" && m.base !== "/" ? "" : path)).replace(
        /:(\w+)/g,
        "{$1}",
      );
      out.push(`${method} ${full || "/"}`);
    }
  return [...out, "GET /openapi.json", "GET /docs"];
}

// ---------------------------------------------------------------------------------------------
// The markdown's statements: blocks (a table row, or a bullet / paragraph with its continuation).
// ---------------------------------------------------------------------------------------------

interface DocShape {
  file: string;
  method: string;
  /** The path as written, made absolute (docs/counters.md's table is relative to /v1/counters). */
  path: string;
  /** Top-level fields of the documented answer; `optional` when written `"x"?`. */
  fields: { name: string; optional: boolean }[];
  text: string;
}

function blocks(md: string): string[] {
  const out: string[] = [];
  let cur: string[] = [];
  let fence = false;
  for (const line of md.split("\n")) {
    if (line.startsWith("```")) fence = !fence;
    if (fence) continue;
    const starts = /^\s*$/.test(line) || line.startsWith("|") || /^- /.test(line) || /^#/.test(line);
    if (starts && cur.length) {
      out.push(cur.join(" "));
      cur = [];
    }
    if (!/^\s*$/.test(line)) cur.push(line.trim());
    if (line.startsWith("|")) {
      out.push(cur.join(" "));
      cur = [];
    }
  }
  if (cur.length) out.push(cur.join(" "));
  return out;
}

/** Top-level field names of `{"a","b"?,"c":[{"d"}],"e"|null}` (the docs' shape notation). */
function topFields(shape: string): { name: string; optional: boolean }[] {
  const out: { name: string; optional: boolean }[] = [];
  let depth = 0;
  for (let i = 0; i < shape.length; i++) {
    const ch = shape[i]!;
    if (ch === "{" || ch === "[") depth++;
    else if (ch === "}" || ch === "]") depth--;
    else if (ch === '"' && depth === 1 && shape[i - 1] !== ":") {
      const end = shape.indexOf('"', i + 1);
      const name = shape.slice(i + 1, end);
      i = end;
      const next = shape[end + 1];
      // a key is followed by , } : ? | (a value string in a list would be inside [ ])
      if ([",", "}", ":", "?", "|", "="].includes(next ?? "")) out.push({ name, optional: next === "?" });
    }
  }
  return out;
}

function docShapes(): DocShape[] {
  const out: DocShape[] = [];
  for (const [file, md] of Object.entries(MARKDOWN)) {
    const base = file.endsWith("counters.md") ? "/v1/counters" : "";
    for (const b of blocks(md)) {
      // a statement about a route starts with it (a table row's first cell, a bullet, a line)
      const route = /^(?:\| |- )?`(GET|POST|PUT|DELETE) (\/[^` ]*)/.exec(b);
      if (!route) continue;
      let path = route[2]!;
      if (base && !path.startsWith("/v1") && !path.startsWith("/internal")) path = base + (path === "/" ? "" : path);
      path = path.replace(/\?.*$/, "").replace(/\/$/, "") || "/";
      if (!path.startsWith("/v1")) continue;
      // the answer: after the last →, else the last table column holding a shape
      let tail: string;
      if (b.startsWith("|")) {
        const cols = b.split(/(?<!\\)\|/).slice(1, -1);
        const withShape = cols.filter((c) => c.includes('`{"'));
        if (withShape.length === 0 || cols.indexOf(withShape.at(-1)!) === 0) continue;
        tail = withShape.at(-1)!;
      } else {
        // prose or a bullet: the answer follows "→", "answers" or "returns"; a bare shape is a body
        const at = Math.max(b.lastIndexOf("→"), b.lastIndexOf(" answers "), b.lastIndexOf(" returns "));
        if (at < 0) continue;
        tail = b.slice(at);
      }
      if (tail.includes("→")) tail = tail.slice(tail.lastIndexOf("→"));
      const shape = /`(\{"[^`]*\})`/.exec(tail);
      if (!shape) continue;
      out.push({ file, method: route[1]!, path, fields: topFields(shape[1]!), text: b.slice(0, 160) });
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// One request per route: what the checks below send (setup first, in order).
// ---------------------------------------------------------------------------------------------

interface Call {
  method: string;
  path: string;
  key: "ingest" | "read" | "admin" | "none";
  body?: unknown;
}

const SECRET = "s".repeat(MIN_SECRET_LENGTH);
const CORPUS: Call[] = [
  {
    method: "POST",
    path: "/v1/trending/st/events",
    key: "ingest",
    body: { events: [{ member: "a" }, { member: "b", count: 3 }] },
  },
  { method: "GET", path: "/v1/trending", key: "read" },
  { method: "GET", path: "/v1/trending/st/top?n=10&window=24h", key: "read" },
  { method: "GET", path: "/v1/trending/st/rising?n=10&baseline=24h", key: "read" },
  { method: "GET", path: "/v1/trending/st/history?member=a&hours=48", key: "read" },
  { method: "GET", path: "/v1/trending/st/members/a?window=24h", key: "read" },
  { method: "DELETE", path: "/v1/trending/st2", key: "admin" },
  {
    method: "POST",
    path: "/v1/counters/c/incr",
    key: "ingest",
    body: { items: [{ member: "a", by: 2 }, { member: "b" }] },
  },
  { method: "GET", path: "/v1/counters", key: "read" },
  { method: "GET", path: "/v1/counters/c/top?n=10", key: "read" },
  { method: "GET", path: "/v1/counters/c/bottom?n=10", key: "read" },
  { method: "GET", path: "/v1/counters/c/members/a", key: "read" },
  { method: "GET", path: "/v1/counters/c/range?min=0&max=%2Binf&limit=100", key: "read" },
  { method: "GET", path: "/v1/counters/c/sorted?by=member&order=asc", key: "read" },
  { method: "POST", path: "/v1/counters/roll/union", key: "admin", body: { sources: ["c"] } },
  { method: "DELETE", path: "/v1/counters/c/members/b", key: "ingest" },
  { method: "DELETE", path: "/v1/counters/c2", key: "admin" },
  { method: "PUT", path: "/v1/histograms/h", key: "admin", body: { bucketWidth: 10, unit: "ms" } },
  { method: "POST", path: "/v1/histograms/h/observations", key: "ingest", body: { values: [1, 12, 30] } },
  { method: "GET", path: "/v1/histograms", key: "read" },
  { method: "GET", path: "/v1/histograms/h", key: "read" },
  { method: "DELETE", path: "/v1/histograms/h2", key: "admin" },
  { method: "POST", path: "/v1/presence/r/heartbeats", key: "ingest", body: { ids: ["u1", "u2"] } },
  { method: "GET", path: "/v1/presence", key: "read" },
  { method: "GET", path: "/v1/presence/_total", key: "read" },
  { method: "GET", path: "/v1/presence/r", key: "read" },
  { method: "GET", path: "/v1/presence/r?day=2026-11-21", key: "read" },
  { method: "GET", path: "/v1/presence/r/members?limit=100", key: "read" },
  { method: "GET", path: "/v1/presence/r/history?hours=24", key: "read" },
  { method: "DELETE", path: "/v1/presence/r/members/u2", key: "ingest" },
  { method: "DELETE", path: "/v1/presence/r2", key: "admin" },
  { method: "PUT", path: "/v1/leaderboards/b", key: "admin", body: { ties: "joined" } },
  { method: "PUT", path: "/v1/leaderboards/b/players/p1", key: "ingest", body: { name: "P1", meta: { c: "x" } } },
  { method: "PUT", path: "/v1/leaderboards/b/players/p2", key: "ingest", body: { name: "P2" } },
  { method: "POST", path: "/v1/leaderboards/b/players/p1/score", key: "ingest", body: { by: 5 } },
  { method: "POST", path: "/v1/leaderboards/b/scores", key: "ingest", body: { items: [{ player: "p2", set: 3 }] } },
  { method: "GET", path: "/v1/leaderboards", key: "read" },
  { method: "GET", path: "/v1/leaderboards/b?page=1&limit=10", key: "read" },
  { method: "GET", path: "/v1/leaderboards/b/count", key: "read" },
  { method: "GET", path: "/v1/leaderboards/b/seasons", key: "read" },
  { method: "GET", path: "/v1/leaderboards/b/players/p1", key: "read" },
  { method: "GET", path: "/v1/leaderboards/b/players/p1/around?k=5", key: "read" },
  { method: "POST", path: "/v1/leaderboards/b/rank", key: "read", body: { players: ["p1", "p2", "zz"] } },
  { method: "DELETE", path: "/v1/leaderboards/b/players/p2", key: "ingest" },
  { method: "DELETE", path: "/v1/leaderboards/b2", key: "admin" },
  { method: "GET", path: "/v1/ingest/status", key: "admin" },
  { method: "GET", path: "/v1/ingest/lag", key: "read" },
  {
    method: "PUT",
    path: "/v1/webhooks/w",
    key: "admin",
    body: { url: "http://127.0.0.1:9/hook", events: ["trending.entered"], filter: { stream: "st" }, secret: SECRET },
  },
  { method: "GET", path: "/v1/webhooks", key: "admin" },
  { method: "GET", path: "/v1/webhooks/w/deliveries?limit=50", key: "admin" },
  { method: "POST", path: "/v1/webhooks/w/test", key: "admin" },
  { method: "DELETE", path: "/v1/webhooks/w", key: "admin" },
  { method: "POST", path: "/internal/jobs/trim", key: "admin" },
  { method: "GET", path: "/healthz", key: "read" },
  { method: "GET", path: "/healthz", key: "none" },
];

interface Seen {
  call: Call;
  res: TestResponse;
}

let api: TestApi;
let doc: Schema;
const seen: Seen[] = [];

beforeAll(async () => {
  api = newApi("r17-docs");
  doc = (await api.get("/openapi.json", { key: "none" })).body;
  for (const call of CORPUS) {
    const res = await api.call(call.method, call.path, call.body, { key: call.key });
    seen.push({ call, res });
  }
});

/** What the document says of one real answer: problems, empty when it conforms. */
function conformance(method: string, path: string, res: TestResponse): string[] {
  const t = templateOf(doc, method, path);
  if (!t) return [`${method} ${path}: no such path in /openapi.json`];
  const op = doc.paths[t][method.toLowerCase()];
  const r = op.responses[String(res.status)];
  if (!r) return [`${method} ${t}: status ${res.status} not documented (${Object.keys(op.responses).join(",")})`];
  const schema = r.content?.["application/json"]?.schema;
  if (!schema)
    return res.body === undefined || typeof res.body === "string"
      ? []
      : [`${method} ${t}: ${res.status} has no JSON schema`];
  return schemaProblems(res.body, schema, doc).map((p) => `${method} ${t} ${res.status}: ${p}`);
}

describe("review 17: every example request of the README and docs runs as written", () => {
  it("the corpus itself succeeds (setup for the checks below)", () => {
    const bad = seen
      .filter((s) => s.res.status >= 300)
      .map((s) => `${s.call.method} ${s.call.path} → ${s.res.status} ${JSON.stringify(s.res.body)}`);
    expect(bad).toEqual([]);
  });

  it("each curl example (README Quick start, docs/ingest.md) answers the status its comment states, with the fields shown", async () => {
    const local = newApi("r17-curl");
    const keyOf: Record<string, string> = {
      "dev-ingest-key-0001": "ingest",
      "dev-read-key-00001": "read",
      "dev-admin-key-0001": "admin",
      $INGEST_KEY: "ingest",
      $READ_KEY: "read",
      $ADMIN_KEY: "admin",
    };
    let ran = 0;
    for (const [file, md] of Object.entries(MARKDOWN)) {
      for (const block of md.matchAll(/```sh\n([\s\S]*?)```/g)) {
        // each curl command with its continuation lines and the `# …` comments after it
        const text = block[1]!.replace(/\\\n\s*/g, " ");
        const lines = text.split("\n");
        for (let i = 0; i < lines.length; i++) {
          const line = lines[i]!;
          if (!line.startsWith("curl ")) continue;
          const method = /-X (\w+)/.exec(line)?.[1] ?? "GET";
          const url =
            /['"]((?:http:\/\/127\.0\.0\.1:8787|\$BASE)[^'"]*)['"]|\s((?:http:\/\/127\.0\.0\.1:8787|\$BASE)\S*)/.exec(
              line,
            );
          const path = (url?.[1] ?? url?.[2])!.replace(/^(http:\/\/127\.0\.0\.1:8787|\$BASE)/, "");
          const headers: Record<string, string> = {};
          for (const h of line.matchAll(/-H ['"]([^:]+):\s*([^'"]+)['"]/g)) headers[h[1]!.toLowerCase()] = h[2]!;
          const bearer = headers.authorization?.replace(/^Bearer /, "") ?? "";
          delete headers.authorization;
          const body = /-d '([^']*)'/.exec(line)?.[1];
          const comments = [];
          while (lines[i + 1]?.startsWith("#")) comments.push(lines[++i]!);
          const expected = Number(/^# (\d{3})\b/.exec(comments[0] ?? "")?.[1] ?? 200);
          const res = await local.call(method, path, undefined, {
            key: keyOf[bearer] ?? "none",
            headers,
            ...(body !== undefined ? { raw: body } : {}),
          });
          expect(res.status, `${file}: ${line}`).toBe(expected);
          const shown = comments.map((c) => /\{.*\}/.exec(c)?.[0]).find(Boolean);
          if (shown) for (const f of topFields(shown)) expect(res.body, `${file}: ${f.name}`).toHaveProperty(f.name);
          expect(conformance(method, path, res)).toEqual([]);
          ran++;
        }
      }
    }
    expect(ran).toBeGreaterThanOrEqual(3);
  });

  it("every `METHOD /path` the README and docs name is a route the Worker serves", () => {
    const routes = new Set(appRoutes());
    const missing: string[] = [];
    for (const [file, md] of Object.entries(MARKDOWN))
      for (const m of md.matchAll(
        /`(GET|POST|PUT|DELETE) (\/(?:v1|internal|healthz|dashboard|openapi|docs)[^`\s]*)`/g,
      )) {
        const path = m[2]!.replace(/[?#].*$/, "").replace(/\/$/, "");
        // a family named in prose (`POST /internal/jobs`, `/internal/jobs/*`)
        if (/[*<>]|…/.test(path) || path === "/internal/jobs") continue;
        // a doc names a parameter as it likes ({c}, {b}): match any {…} segment to a route's
        const shape = `${m[1]} ${path.replace(/\{[^}]+\}/g, "{}")}`;
        const known = [...routes].some(
          (r) =>
            r.replace(/\{[^}]+\}/g, "{}") === shape ||
            (r.includes("{job}") && shape.startsWith("POST /internal/jobs/")),
        );
        if (!known) missing.push(`${file}: ${m[0]}`);
      }
    expect(missing).toEqual([]);
  });

  it('every documented answer shape (table rows and → bullets naming {"field",…}) has its fields in the real answer', () => {
    const shapes = docShapes();
    expect(shapes.length).toBeGreaterThan(30);
    const problems: string[] = [];
    const extra: string[] = [];
    let checked = 0;
    for (const s of shapes) {
      const t = `${s.method} ${s.path.replace(/\{[^}]+\}/g, "{}")}`;
      const hit = seen.find(
        (x) =>
          x.res.status < 300 &&
          x.call.method === s.method &&
          (templateOf(doc, x.call.method, x.call.path) ?? "").replace(/\{[^}]+\}/g, "{}") ===
            t.slice(s.method.length + 1) &&
          // a `?day=` row is the day answer, the other the live one
          s.text.includes("?day=") === x.call.path.includes("?day="),
      );
      if (!hit || typeof hit.res.body !== "object") continue;
      checked++;
      for (const f of s.fields)
        if (!f.optional && !(f.name in hit.res.body))
          problems.push(`${s.file} ${s.method} ${s.path}: documented '${f.name}' missing`);
      for (const k of Object.keys(hit.res.body))
        if (!s.fields.some((f) => f.name === k))
          extra.push(`${s.file} ${s.method} ${s.path}: answers '${k}', not in the shape`);
    }
    expect(checked).toBeGreaterThan(25);
    expect(problems).toEqual([]);
    expect(extra).toEqual([]);
  });
});

describe("review 17: /openapi.json describes every route, and every real answer matches it", () => {
  it("every route the Worker serves is in the document, and every documented path is served", () => {
    const documented = new Set<string>();
    for (const [p, ops] of Object.entries(doc.paths as Record<string, object>))
      for (const m of Object.keys(ops)) documented.add(`${m.toUpperCase()} ${p}`);
    const served = new Set(appRoutes());
    expect([...served].filter((r) => !documented.has(r))).toEqual([]);
    expect([...documented].filter((r) => !served.has(r))).toEqual([]);
  });

  // FIXED (review 17). Was BUG (low): the contract says "the OpenAPI document the service serves must describe all of
  // it", and README points at /openapi.json and /docs as the reference, but neither of those two
  // routes is in the document's `paths`. Fix: describe them (functions/openapi-document.ts:
  // `registry.registerPath` for GET /openapi.json → application/json and GET /docs → text/html,
  // `security: []`), then regenerate test/fixtures/openapi.json.
  it("GET /openapi.json and GET /docs are in the document too", () => {
    expect(doc.paths["/openapi.json"]?.get).toBeDefined();
    expect(doc.paths["/docs"]?.get).toBeDefined();
  });

  it("every success answer of the corpus has a documented status and matches its schema", () => {
    const problems = seen.flatMap((s) => conformance(s.call.method, s.call.path, s.res));
    expect(problems).toEqual([]);
  });

  it("each route's refusals (401 without a key, 403 with a too-small key, 400 for a bad name) are documented and match the Error schema", async () => {
    const problems: string[] = [];
    const refused = newApi("r17-refusals");
    for (const call of CORPUS) {
      if (call.path.startsWith("/healthz") || call.key === "none") continue;
      const noKey = await refused.call(call.method, call.path, call.body, { key: "none" });
      expect(noKey.status, `${call.method} ${call.path}`).toBe(401);
      problems.push(...conformance(call.method, call.path, noKey));
      if (call.key !== "read") {
        const small = await refused.call(call.method, call.path, call.body, {
          key: call.key === "admin" ? "ingest" : "read",
        });
        expect(small.status, `${call.method} ${call.path} small key`).toBe(403);
        problems.push(...conformance(call.method, call.path, small));
      }
      // a name segment the rules refuse: the first segment after the feature
      const parts = call.path.split("?")[0]!.split("/");
      if (parts[1] === "v1" && parts.length > 3 && !["_total", "status", "lag"].includes(parts[3]!)) {
        parts[3] = "-bad";
        const bad = await refused.call(call.method, parts.join("/"), call.body, { key: "admin" });
        expect(bad.status, `${call.method} ${parts.join("/")}`).toBe(400);
        problems.push(...conformance(call.method, parts.join("/"), bad));
      }
    }
    expect(await refused.keys()).toEqual([]);
    expect(problems).toEqual([]);
  });

  // FIXED (review 17). Was BUG (low): README "API in brief" lists 429 among the statuses, and with RATE_LIMIT_PER_10S on
  // every /v1 route answers it, but no route of /openapi.json documents a 429, so a generated
  // client cannot type it. Fix: add a 429 (Error schema, `Retry-After`) to the shared error
  // responses of every /v1 route (functions/lazy-route.ts, where 401/403/503 are added), then
  // regenerate test/fixtures/openapi.json.
  it("a 429 from the rate limiter is a documented answer of the route", async () => {
    const limited = track(createTestApi({ label: "r17-429", vars: { RATE_LIMIT_PER_10S: "1" } }));
    await limited.get("/v1/counters");
    const res = await limited.get("/v1/counters");
    expect(res.status).toBe(429);
    expect(conformance("GET", "/v1/counters", res)).toEqual([]);
  });
});

describe("review 17: each limit the docs state is the constant in src, enforced with the stated code", () => {
  const flat = (s: string) => s.replace(/\s+/g, " ");
  const README = flat(readme as unknown as string);
  const doc = (f: string) => flat(MARKDOWN[f]!);
  const fmt = (n: number) => n.toLocaleString("en-US");

  it("the quoted numbers are the constants", () => {
    expect(MAX_BODY_BYTES).toBe(1024 * 1024);
    expect(README).toContain("A body is at most 1 MiB (413 past it;");
    expect(README).toContain(`one item or a batch of up to ${fmt(MAX_BATCH)}`);
    expect(doc("docs/trending.md")).toContain(
      `(\`n\` 1..${MAX_TOP_N}, \`window\` 1h..min(retention,${MAX_WINDOW_HOURS})h`,
    );
    expect(doc("docs/counters.md")).toContain(`\`limit\` 1..${fmt(MAX_LISTED)}`);
    expect(doc("docs/histograms.md")).toContain(`≤ ${MAX_RETENTION_DAYS} days`);
    expect(doc("docs/leaderboards.md")).toContain(`(\`k\` 0..${MAX_AROUND})`);
    expect(README).toContain(`page (limit ≤ ${MAX_PAGE_LIMIT}), around-me (\`k\` ≤ ${MAX_AROUND})`);
    expect(doc("docs/presence.md")).toContain(`(limit 1..${fmt(MAX_MEMBERS_PAGE)})`);
    expect(doc("docs/presence.md")).toContain(`limit 1..${fmt(MAX_ROOMS_LISTED)}`);
    expect(doc("docs/counters.md")).toContain(`up to ${MAX_RANGE_DAYS} days`);
  });

  it("one past each limit is refused with the stated status and code, writing nothing", async () => {
    const lim = newApi("r17-limits");
    const cases: [string, () => Promise<TestResponse>, number, string][] = [
      [
        "batch",
        () =>
          lim.post("/v1/counters/c/incr", { items: Array.from({ length: MAX_BATCH + 1 }, () => ({ member: "a" })) }),
        400,
        "invalid_request",
      ],
      [
        "body",
        () =>
          lim.post("/v1/counters/c/incr", undefined, {
            raw: JSON.stringify({ member: "a", pad: "x".repeat(MAX_BODY_BYTES) }),
            headers: { "content-type": "application/json" },
          }),
        413,
        "payload_too_large",
      ],
      ["n", () => lim.get(`/v1/trending/s/top?n=${MAX_TOP_N + 1}`), 400, "invalid_request"],
      ["window", () => lim.get(`/v1/trending/s/top?window=${MAX_WINDOW_HOURS + 1}h`), 400, "invalid_request"],
      ["name", () => lim.post(`/v1/counters/${"a".repeat(65)}/incr`, { member: "a" }), 400, "invalid_request"],
      [
        "member",
        () => lim.post("/v1/counters/c/incr", { member: "é".repeat(MAX_MEMBER_BYTES / 2) + "a" }),
        400,
        "invalid_request",
      ],
      ["page limit", () => lim.get(`/v1/leaderboards/b?limit=${MAX_PAGE_LIMIT + 1}`), 400, "invalid_request"],
      ["around k", () => lim.get(`/v1/leaderboards/b/players/p/around?k=${MAX_AROUND + 1}`), 400, "invalid_request"],
      ["members page", () => lim.get(`/v1/presence/r/members?limit=${MAX_MEMBERS_PAGE + 1}`), 400, "invalid_request"],
      [
        "retention",
        () => lim.put("/v1/histograms/h", { bucketWidth: 1, retentionDays: MAX_RETENTION_DAYS + 1 }, { key: "admin" }),
        400,
        "invalid_request",
      ],
      [
        "unit",
        () => lim.put("/v1/histograms/h", { bucketWidth: 1, unit: "u".repeat(MAX_UNIT_LENGTH + 1) }, { key: "admin" }),
        400,
        "invalid_request",
      ],
      [
        "secret",
        () =>
          lim.put(
            "/v1/webhooks/w",
            { url: "https://example.com/h", events: ["trending.entered"], secret: "s".repeat(MAX_SECRET_LENGTH + 1) },
            { key: "admin" },
          ),
        400,
        "invalid_request",
      ],
      // docs/counters.md: `period`/`from`/`to` reach "up to 400 days" (`to` at most 400 days after `from`)
      [
        "range days",
        () =>
          lim.get(
            `/v1/counters/c/top?period=day&from=2025-06-01&to=${new Date(Date.UTC(2025, 5, 1) + (MAX_RANGE_DAYS + 1) * 86_400_000).toISOString().slice(0, 10)}`,
          ),
        400,
        "invalid_request",
      ],
      [
        "depth",
        () =>
          lim.put("/v1/leaderboards/b/players/p", {
            name: "x",
            meta: JSON.parse('{"a":'.repeat(16) + "1" + "}".repeat(16)),
          }),
        400,
        "malformed_json",
      ],
    ];
    const wrong: string[] = [];
    for (const [name, run, status, code] of cases) {
      const res = await run();
      if (res.status !== status || res.body?.error?.code !== code)
        wrong.push(`${name}: ${res.status} ${res.body?.error?.code}`);
    }
    expect(wrong).toEqual([]);
    expect(await lim.keys()).toEqual([]);
  });
});

describe("review 17: /work/shared/API.md vs README's 'Where we differ from the contract'", () => {
  // Each behaviour that differs from the contract, checked on the Worker; the unit test
  // (test/unit/review17-docs.test.ts) checks README lists each one.
  it("a ttl from an ingest key does not set an expiry on an existing counter (listed)", async () => {
    const d = newApi("r17-ttl");
    await d.post("/v1/counters/c/incr", { member: "a" });
    await d.post("/v1/counters/c/incr", { member: "a", ttl: 1 });
    d.advance(5_000);
    expect((await d.get("/v1/counters/c/members/a")).status).toBe(200);
  });

  it("a wrong verb is 405 method_not_allowed with Allow; /healthz?deep=1 checks Redis with any key (listed)", async () => {
    const d = newApi("r17-405");
    const res = await d.call("PUT", "/v1/counters/c/incr", { member: "a" });
    expect(res.status).toBe(405);
    expect(res.body.error.code).toBe("method_not_allowed");
    const deep = await d.get("/healthz?deep=1", { key: "ingest" });
    expect(deep.body.redis?.ok).toBe(true);
  });

  it("a member of '.' is refused (listed: the contract allows any 1..256 bytes)", async () => {
    const d = newApi("r17-dot");
    expect((await d.post("/v1/counters/c/incr", { member: "." })).status).toBe(400);
  });

  it("a score outside a board's guards is 422 score_rejected (contract v2, not a difference)", async () => {
    const d = newApi("r17-422");
    await d.put("/v1/leaderboards/g", { maxScore: 10 }, { key: "admin" });
    await d.put("/v1/leaderboards/g/players/p", { name: "P" });
    const res = await d.post("/v1/leaderboards/g/players/p/score", { set: 11 });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe("score_rejected");
  });

  it("the contract's `range?min=10&max=+inf` as written (a raw `+`, a space once decoded) is read as +inf", async () => {
    const d = newApi("r17-plus");
    await d.post("/v1/counters/c/incr", {
      items: [
        { member: "a", by: 20 },
        { member: "b", by: 5 },
      ],
    });
    const res = await d.get("/v1/counters/c/range?min=10&max=+inf&limit=100");
    expect(res.status).toBe(200);
    expect(res.body.items.map((i: { member: string }) => i.member)).toEqual(["a"]);
  });
});

describe("review 17: contract rules with no line in 'Where we differ'", () => {
  it("windows may be written in days (`2d`), `at` as ISO-8601, and an `at` past 5 minutes ahead is a 400", async () => {
    const d = newApi("r17-window");
    expect((await d.get("/v1/trending/s/top?window=2d")).status).toBe(200);
    expect((await d.get("/v1/trending/s/top?window=8d")).status).toBe(400);
    const iso = new Date(d.now).toISOString();
    expect((await d.post("/v1/trending/s/events", { member: "a", at: iso })).status).toBe(200);
    expect(
      (await d.post("/v1/counters/c/incr", { member: "a", period: "hour", at: d.now + MAX_AHEAD + 1_000 })).status,
    ).toBe(400);
    expect(
      (await d.post("/v1/counters/c/incr", { member: "a", period: "hour", at: d.now + MAX_AHEAD - 1_000 })).status,
    ).toBe(200);
  });

  // FIXED (review 17: README lists it). Was BUG (medium, docs): the contract fixes windows at "`1h`..`168h` or `1d`..`7d`", but a window
  // reaches only min(TRENDING_RETENTION_HOURS, 168) hours, and the default retention is 50: on a
  // default deployment `window=7d` (or 72h, or a `baseline`/`hours` past 50) is a 400. README
  // states the bound under Trending, not in "Where we differ". Fix: list it there (raise
  // TRENDING_RETENTION_HOURS to 170 for the contract's full range, at its memory cost).
  it("the contract's `window=7d` is refused under the default retention, and README lists that difference", async () => {
    const d = newApi("r17-7d");
    expect((await d.get("/v1/trending/s/top?window=7d")).status).toBe(400);
    expect(README_DIFFER()).toMatch(/TRENDING_RETENTION_HOURS|retention/);
  });

  it("a POST /v1 honours Idempotency-Key (contract: 'on any POST')", async () => {
    const d = newApi("r17-idem-v1");
    const h = { "idempotency-key": "k-1" };
    await d.post("/v1/counters/c/incr", { member: "a" }, { headers: h });
    const again = await d.post("/v1/counters/c/incr", { member: "a" }, { headers: h });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
  });

  // FIXED (review 17: README lists it). Was BUG (low, docs): the contract says "`Idempotency-Key` header on any POST", and
  // `POST /internal/jobs/{job}` is a POST, but the middleware runs on /v1/* only: a repeated job
  // call with the same key runs the job again (harmless, as jobs are repeatable, but unlisted).
  // Fix: README "Where we differ" says the jobs route ignores Idempotency-Key (every job is safe to
  // run twice), and "API in brief" says "a /v1 POST or PUT".
  it("POST /internal/jobs/{job} ignores Idempotency-Key, and README lists it among the differences", async () => {
    const d = newApi("r17-idem-jobs");
    const h = { "idempotency-key": "job-1" };
    const first = await d.post("/internal/jobs/trim", undefined, { key: "admin", headers: h });
    const again = await d.post("/internal/jobs/trim", undefined, { key: "admin", headers: h });
    expect(first.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBeNull();
    const differ = README_DIFFER();
    expect(differ).toMatch(/\/internal\/jobs[^.]*Idempotency-Key|Idempotency-Key[^.]*\/internal\/jobs/);
  });

  // FIXED (review 17). Was BUG (low, docs): README "API in brief" lists the error statuses "400, 401, 403, 404, 409, 413,
  // 415, 429, 503" but a leaderboard write outside the board's guards is a 422 `score_rejected`
  // (contract v2; documented in docs/leaderboards.md and /openapi.json). Fix: add "422
  // (`score_rejected`, a leaderboard guard)" to that list.
  it("README's list of error statuses includes the 422 a guard answers", () => {
    const brief = (readme as unknown as string).replace(/\s+/g, " ");
    const list = /409, 413, [^.]*?503/.exec(brief)?.[0] ?? "";
    expect(list).toContain("422");
  });
});

const MAX_AHEAD = 5 * 60_000;
/** README's "Where we differ from the contract" bullet, whitespace folded. */
function README_DIFFER(): string {
  const text = (readme as unknown as string).replace(/\s+/g, " ");
  const at = text.indexOf("**Where we differ from the contract**");
  return text.slice(at, text.indexOf("- **", at + 10));
}
