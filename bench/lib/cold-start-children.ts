/**
 * The child processes of bench/cold-start.ts, as the JavaScript text each runs (`node --input-type=module -e`):
 * CHILD imports the bundle and times its requests, COMPILE_CHILD only compiles the entry and its static imports.
 */

// Runs in the child: imports the bundle, then sends the requests, timing each.
export const CHILD = `
const url = process.argv[1];
// Set for a fresh process whose first request is an accepted write ({ kind, upstash, token }) or
// a read ({ kind: "first read" }, no Redis).
const arg = process.argv[2] ? JSON.parse(process.argv[2]) : null;
const write = arg && arg.upstash ? arg : null;
const ms = (u) => (u.user + u.system) / 1000;
// Node's fetch of one Upstash pipeline call and its answer, nothing else (bench/cpu's floor).
function floorCall() {
  return fetch(write.upstash + "/pipeline", {
    method: "POST",
    headers: { authorization: "Bearer " + write.token, "content-type": "application/json" },
    body: JSON.stringify([["PING"]]),
  }).then((r) => r.text());
}
// Node loads fetch, Request, Response, streams and WebCrypto lazily (undici, about 40 ms on the
// first use); workerd has them built in. Warm them first so the figures are the Worker's own.
{
  const req = new Request("http://warm.test/", { method: "POST", body: JSON.stringify({ a: 1 }), headers: { "content-type": "application/json" } });
  await req.clone().text();
  await new Response(new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode("x")); c.close(); } })).arrayBuffer();
  new Headers({ a: "b" }); new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array([120])); new URL("http://warm.test/?a=1");
  await crypto.subtle.digest("SHA-256", new Uint8Array(1)); AbortSignal.timeout(1000); structuredClone({});
  // Node loads randomUUID() and fills its pool of random bytes on the first call (~0.5 ms), and
  // builds its navigator global on the first read (~0.4 ms; zod reads it); workerd has both built in.
  crypto.randomUUID(); typeof navigator;
  // What a Worker reads of a request and sets on a response, whose getters and setters Node runs
  // as JavaScript (compiled on first use) and workerd natively: the method, URL, headers and body
  // of a request, a response's headers set and listed.
  {
    const r = new Request("http://warm.test/a?b=1", { method: "POST", body: "{}", headers: { "content-type": "application/json", authorization: "x" } });
    r.method; r.url; r.headers.get("content-type"); r.headers.get("x-missing"); r.bodyUsed; r.body; await r.text();
    const res = new Response("{}", { status: 400, headers: { "content-type": "application/json" } });
    res.headers.set("x-request-id", "1"); res.headers.get("content-type"); [...res.headers]; res.status; await res.arrayBuffer();
  }
  await fetch("http://127.0.0.1:9/").catch(() => {});
  // With a Redis, calls that succeed too (Node's fetch runs more of its own code on its first
  // answers and reused connections): the Worker's first write then pays Node's fetch about as a
  // warm one, measured apart at the end (workerd's fetch is native).
  if (write) for (let i = 0; i < 20; i++) await floorCall();
  // Node builds DecompressionStream from its zlib and stream modules on first use (~12 ms); workerd's is native.
  const gzip = new Uint8Array([31, 139, 8, 0, 0, 0, 0, 0, 0, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
  await new Response(new Blob([gzip]).stream().pipeThrough(new DecompressionStream("gzip"))).text();
}
// workerd has a Worker's modules in memory; Node would read each from disk and look up its package.json
// (~0.3 ms a module, more on the first). So every module of the bundle is read first and served from
// memory through a module hook, warmed with a module of its own.
const { readdirSync, readFileSync } = await import("node:fs");
const { registerHooks } = await import("node:module");
const dir = new URL(".", url);
const sources = new Map(readdirSync(dir).filter((f) => f.endsWith(".js")).map((f) => [new URL(f, dir).href, readFileSync(new URL(f, dir), "utf8")]));
sources.set(new URL("warm-hooks.js", dir).href, "export default 1;");
// The chunk of zod and @hono/zod-openapi: what functions/zod.ts \`loadZod\` imports (a split bundle
// only), to tell whether a request loaded zod.
const zodLoader = [...sources].find(([, source]) => source.includes("used before it is loaded"));
const zodImport = zodLoader && /import\\("(\\.\\/[^"]+)"\\)/.exec(zodLoader[1]);
const zodHref = zodImport ? new URL(zodImport[1], zodLoader[0]).href : null;
const loaded = new Set();
registerHooks({
  resolve(specifier, context, next) {
    const href = context.parentURL ? new URL(specifier, context.parentURL).href : specifier;
    return sources.has(href) ? { url: href, shortCircuit: true } : next(specifier, context);
  },
  load(href, context, next) {
    loaded.add(href);
    const source = sources.get(href);
    return source === undefined ? next(href, context) : { format: "module", source, shortCircuit: true };
  },
});
await import(new URL("warm-hooks.js", dir).href);
// The young generation as a fresh isolate has it: empty (the warm-ups' garbage collected now, not
// by a scavenge that would fall in the import or the first request depending on how much Node
// allocated before) and at V8's initial size (the child's --max-semi-space-size), so the
// scavenges timed are those the Worker's own allocations cause.
gc();
let t = process.cpuUsage();
const mod = await import(url);
const out = { module: ms(process.cpuUsage(t)) };
const key = "cold-start-ingest-key-0001";
const env = {
  UPSTASH_REDIS_REST_URL: write ? write.upstash : "http://127.0.0.1:9", UPSTASH_REDIS_REST_TOKEN: write ? write.token : "unused",
  INGEST_KEYS: key, READ_KEYS: "cold-start-read-key-0001", ADMIN_KEYS: "cold-start-admin-key-0001",
  KEY_PREFIX: "coldstart", TRENDING_CACHE_SECONDS: "0",
};
console.error = () => {};
const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} };
async function step(name, path, init, ...statuses) {
  // Built before timing, as bench/cpu does: in workerd the runtime builds the Request, not the Worker.
  const request = new Request("http://cold.test" + path, init);
  t = process.cpuUsage();
  const res = await mod.default.fetch(request, env, ctx);
  await res.arrayBuffer();
  out[name] = ms(process.cpuUsage(t));
  if (!statuses.includes(res.status)) throw new Error(name + ": status " + res.status + ", expected " + statuses.join(" or "));
}
const post = (body) => ({ method: "POST", headers: { authorization: "Bearer " + key, "content-type": "application/json" }, body: JSON.stringify(body) });
if (arg && arg.kind === "probe") {
  // One request as the first of a fresh process (\`--zod\`): its status, CPU, and whether it loaded zod.
  const { method = "GET", path, body, key: scope = "read" } = arg.probe;
  const keys = { read: "cold-start-read-key-0001", ingest: key, admin: "cold-start-admin-key-0001" };
  const headers = { authorization: "Bearer " + keys[scope] };
  if (body !== undefined) headers["content-type"] = "application/json";
  const request = new Request("http://cold.test" + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  t = process.cpuUsage();
  const res = await mod.default.fetch(request, env, ctx);
  await res.arrayBuffer();
  out.cpu = ms(process.cpuUsage(t));
  out.status = res.status;
  out.zod = zodHref === null ? null : loaded.has(zodHref);
} else if (arg && arg.kind === "first read") {
  // A read refused by its query schema, decided by its precheck without zod (until the usual
  // refusals were prechecked, it loaded zod and built its first schemas).
  const read = { headers: { authorization: "Bearer cold-start-read-key-0001" } };
  await step("first read", "/v1/trending/s1/top?window=99x", read, 400);
} else if (write && write.kind === "setup") {
  // Once before the runs: the histogram and the leaderboard player the writes below write to.
  const put = (key, body) => ({ method: "PUT", headers: { authorization: "Bearer " + key, "content-type": "application/json" }, body: JSON.stringify(body) });
  await step("setup", "/v1/histograms/cold", put("cold-start-admin-key-0001", { bucketWidth: 10 }), 200, 201);
  await step("setup", "/v1/leaderboards/cold/players/p1", put(key, { name: "P1" }), 200, 201);
} else if (write) {
  // An accepted single-item write as the first request, then a second one, then Node's fetch alone.
  const writes = {
    "first counter incr": ["/v1/counters/cold/incr", { member: "m1" }],
    "first trending event": ["/v1/trending/cold/events", { member: "m1" }],
    "first presence heartbeat": ["/v1/presence/cold/heartbeats", { id: "u1" }],
    "first histogram observation": ["/v1/histograms/cold/observations", { values: [12.5, 3] }],
    "first leaderboard score": ["/v1/leaderboards/cold/players/p1/score", { by: 5 }],
  };
  const read = { headers: { authorization: "Bearer cold-start-read-key-0001" } };
  if (write.kind.startsWith("counter incr after")) {
    // The request before, untimed, then the young generation emptied again.
    const [path, body, status] = {
      "counter incr after a refused write": ["/v1/trending/cold/events", { member: "" }, 400],
      "counter incr after a refused incr": ["/v1/counters/cold/incr", { member: "" }, 400],
      "counter incr after an accepted incr": ["/v1/counters/cold2/incr", { member: "m1" }, 200],
    }[write.kind];
    const before = await mod.default.fetch(new Request("http://cold.test" + path, post(body)), env, ctx);
    await before.arrayBuffer();
    if (before.status !== status) throw new Error(write.kind + ": the request before answered " + before.status);
    gc();
    const [incrPath, incrBody] = writes["first counter incr"];
    await step(write.kind, incrPath, post(incrBody), 200);
  } else if (write.kind === "first trending top") await step(write.kind, "/v1/trending/cold/top?n=10", read, 200);
  else if (write.kind === "first leaderboard page") await step(write.kind, "/v1/leaderboards/cold?limit=10", read, 200);
  else {
    const [path, body] = writes[write.kind];
    await step(write.kind, path, post(body), 200);
  }
  if (write.kind === "first presence heartbeat")
    await step("second write (presence)", writes[write.kind][0], post({ id: "u2" }), 200);
  t = process.cpuUsage();
  await floorCall();
  out["Node fetch, one Upstash call"] = ms(process.cpuUsage(t));
} else {
  // A write with an empty member: auth, body guard, JSON parse, validation, the 400 envelope; no Redis.
  const refused = () => post({ items: [{ member: "a" }, { member: "" }] });
  await step("first request", "/v1/counters/c1/incr", refused(), 400);
  await step("second request", "/v1/counters/c1/incr", refused(), 400);
  // 503 from a build whose /healthz still pings Redis (there is none here); its CPU is then a failed fetch.
  await step("first /healthz", "/healthz", {}, 200, 503);
  await step("first /openapi.json", "/openapi.json", {}, 200);
  await step("first /docs", "/docs", {}, 200);
}
console.log(JSON.stringify(out));
`;

// Runs in another child: only compiles the entry module and the modules it imports statically, as
// the import does before evaluating them (a second compile in one process would hit V8's cache).
export const COMPILE_CHILD = `
const { readFileSync } = await import("node:fs");
const { SourceTextModule } = await import("node:vm");
const modules = new Map();
const load = (url) => {
  if (modules.has(url.href)) return;
  const code = readFileSync(url, "utf8");
  modules.set(url.href, code);
  // esbuild puts a module's static imports first: import{a as b}from"./chunk-X.js";import"./chunk-Y.js";
  const statement = /\\s*import\\s*(?:[^;"'()]*?from\\s*)?["']([^"']+)["']\\s*;?/y;
  for (let m; (m = statement.exec(code)); ) load(new URL(m[1], url));
};
load(new URL(process.argv[1]));
const t = process.cpuUsage();
for (const [identifier, code] of modules) new SourceTextModule(code, { identifier });
const u = process.cpuUsage(t);
console.log(JSON.stringify({ "module compile": (u.user + u.system) / 1000 }));
`;
