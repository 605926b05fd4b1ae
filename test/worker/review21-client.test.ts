/**
 * Review 21: `edgestats/client` against the Worker in workerd (the Hono app with the test bindings,
 * on the local Upstash server, through test/helpers/recording-fetch.ts): what every client method
 * resolves to, held against the response schema test/fixtures/openapi.json gives its route, field
 * by field: every required field there with its JSON type, and no field the schema lacks (an
 * object schema is closed unless it says `additionalProperties`). The calls run on data written
 * first, so each list has rows and their fields are checked too. test/unit/review21-client.test.ts
 * holds what client-types.ts declares against the same schemas. Then the retry rules, against the
 * Worker: which calls are retried, how long the client waits, the caller's signal, a `fetch` that
 * throws. `it.fails` marks a confirmed bug (comment: severity, the fix).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { createClient, EdgestatsError, OPERATIONS, type Operation } from "../../src/client.ts";
import doc from "../fixtures/openapi.json";
import { schemaProblems, type Schema } from "../helpers/openapi-check.ts";
import { recordingFetch, workerClient, type Sent } from "../helpers/recording-fetch.ts";
import { failure, within } from "../helpers/settled.ts";
import { cleanedUpAfterAll, createTestApi, TEST_KEYS, type TestApi } from "../helpers/worker.ts";

const track = cleanedUpAfterAll<TestApi>();
const start = Date.UTC(2026, 10, 28, 12, 30);
const DAY = "2026-11-28";

/** The document with every object schema that lists its properties closed (additionalProperties: false, unless it says). */
function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed);
  if (schema === null || typeof schema !== "object") return schema;
  const out: Schema = Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, closed(v)]));
  if (out.properties && !("additionalProperties" in out)) out.additionalProperties = false;
  return out;
}
const strict = { ...doc, components: { ...doc.components, schemas: closed(doc.components.schemas) } } as Schema;

/** The schema of `op`'s answer of `status` (JSON), or `named` where the route answers one of several. */
function schemaOf(op: Operation, status: number, named?: string): Schema {
  if (named) return { $ref: `#/components/schemas/${named}` };
  const [method, path] = OPERATIONS[op];
  const schema = (strict.paths as Schema)[path][method.toLowerCase()].responses[status]?.content?.["application/json"]
    ?.schema;
  expect(schema, `${method} ${path} ${status} has a JSON schema`).toBeDefined();
  return closed(schema) as Schema;
}

describe("review 21: every client method's answer is its route's schema, field by field", () => {
  let api: TestApi;
  let sent: Sent[];
  let client: ReturnType<typeof workerClient>;
  /** Each call's answer, by method, with the status the Worker sent it with. */
  const answers = new Map<string, { op: Operation; value: unknown; status: number; named?: string }>();

  /** Calls `method` (`op`'s), keeping its answer and the Worker's status. */
  async function call(name: string, op: Operation, pending: Promise<unknown>, named?: string) {
    const before = sent.length;
    const value = await pending;
    expect(sent.length, `${name}: one request`).toBe(before + 1);
    const request = sent.at(-1)!;
    expect(`${request.method} ${request.path}`).toMatch(new RegExp(`^${OPERATIONS[op][0]} `));
    answers.set(name, { op, value, status: request.status, ...(named ? { named } : {}) });
    return value;
  }

  beforeAll(async () => {
    api = track(createTestApi({ label: "r21-client-shapes", start }));
    sent = [];
    client = workerClient(api, sent);
    const c = client;
    await call("health", "health", c.health());
    await call("jobs.run", "runJob", c.jobs.run("trim"));

    await call("trending.record", "recordEvents", c.trending.record("s", [{ member: "a", count: 3 }, { member: "b" }]));
    await call("trending.list", "listStreams", c.trending.list());
    await call("trending.page", "listStreams", c.trending.page({ limit: 1 }));
    await call("trending.top", "trendingTop", c.trending.top("s", { n: 5 }));
    await call("trending.member", "trendingMember", c.trending.member("s", "a"));
    await call("trending.rising", "trendingRising", c.trending.rising("s"));
    await call("trending.history", "trendingHistory", c.trending.history("s", "a"));

    await call("counters.incr", "incr", c.counters.incr("c", [{ member: "a", by: 2 }, { member: "b" }]));
    await c.counters.incr("d", { member: "a", by: 4, period: "day" });
    await call("counters.list", "listCounters", c.counters.list());
    await call("counters.top", "counterTop", c.counters.top("c"));
    await call("counters.bottom", "counterBottom", c.counters.bottom("c", { n: 1 }));
    await call("counters.member", "counterMember", c.counters.member("c", "a"));
    await call("counters.range", "counterRange", c.counters.range("c"));
    await call("counters.sorted", "counterSorted", c.counters.sorted("c"));
    // over a period range the answers carry `range`
    const range = { period: "day", from: DAY, to: DAY } as const;
    await call("counters.top (range)", "counterTop", c.counters.top("d", range));
    await call("counters.member (range)", "counterMember", c.counters.member("d", "a", range));
    await call("counters.range (range)", "counterRange", c.counters.range("d", range));
    await call("counters.sorted (range)", "counterSorted", c.counters.sorted("d", range));
    await call("counters.union", "counterUnion", c.counters.union("u", { sources: ["c"] }));

    await call("histograms.configure", "putHistogram", c.histograms.configure("h", { bucketWidth: 10, unit: "ms" }));
    await call("histograms.observe", "observe", c.histograms.observe("h", [5, 15, { value: 25 }]));
    await call("histograms.list", "listHistograms", c.histograms.list());
    await call("histograms.read", "readHistogram", c.histograms.read("h", { top: 2 }));

    await call("presence.heartbeat", "heartbeat", c.presence.heartbeat("r", ["u1", "u2"]));
    await call("presence.list", "listRooms", c.presence.list());
    await call("presence.room", "roomStats", c.presence.room("r"), "PresenceRoom");
    await call("presence.day", "roomStats", c.presence.day("r", DAY), "PresenceRoomDay");
    await call("presence.total", "presenceTotal", c.presence.total());
    await call("presence.members", "roomMembers", c.presence.members("r"));
    await call("presence.history", "roomHistory", c.presence.history("r"));

    await call("leaderboards.configure", "configureBoard", c.leaderboards.configure("b", { ties: "reached" }));
    await call("leaderboards.join", "joinBoard", c.leaderboards.join("b", "p1", { name: "One", score: 5 }));
    await c.leaderboards.join("b", "p2", { name: "Two", meta: { team: "x" }, score: 9 });
    await call("leaderboards.list", "listBoards", c.leaderboards.list());
    await call("leaderboards.page", "boardPage", c.leaderboards.page("b"));
    await call("leaderboards.count", "boardCount", c.leaderboards.count("b"));
    await call("leaderboards.player", "getPlayer", c.leaderboards.player("b", "p2"));
    await call("leaderboards.rank", "rankPlayers", c.leaderboards.rank("b", ["p1", "p2"]));
    await call("leaderboards.seasons", "boardSeasons", c.leaderboards.seasons("b"));
    await call("leaderboards.around", "around", c.leaderboards.around("b", "p1", { k: 1 }));
    await call("leaderboards.score", "changeScore", c.leaderboards.score("b", "p1", { by: 10 }));
    await call("leaderboards.scores", "changeScores", c.leaderboards.scores("b", [{ player: "p2", set: 1 }]));

    await call("ingest.status", "ingestStatus", c.ingest.status());
    await call("ingest.lag", "ingestLag", c.ingest.lag());

    const hook = {
      url: "https://hooks.example.invalid/in",
      events: ["leaderboard.leader" as const],
      secret: "s".repeat(24),
    };
    await call("webhooks.put", "putWebhook", c.webhooks.put("w", hook));
    await call("webhooks.list", "listWebhooks", c.webhooks.list());
    await call("webhooks.test", "testWebhook", c.webhooks.test("w"));
    await call("webhooks.deliveries", "webhookDeliveries", c.webhooks.deliveries("w"));
    await call("webhooks.delete", "deleteWebhook", c.webhooks.delete("w"));

    // the deletes answer 204: the call resolves to undefined
    await call("trending.delete", "deleteStream", c.trending.delete("s"));
    await call("counters.removeMember", "deleteCounterMember", c.counters.removeMember("c", "b"));
    await call("counters.delete", "deleteCounter", c.counters.delete("c"));
    await call("histograms.delete", "deleteHistogram", c.histograms.delete("h"));
    await call("presence.leave", "leave", c.presence.leave("r", "u1"));
    await call("presence.delete", "deleteRoom", c.presence.delete("r"));
    await call("leaderboards.removePlayer", "removePlayer", c.leaderboards.removePlayer("b", "p1"));
    await call("leaderboards.delete", "deleteBoard", c.leaderboards.delete("b"));
  }, 60_000);

  it("every method of the client was called, and every operation", () => {
    const methods = Object.entries(client).flatMap(([group, v]) =>
      typeof v === "function" ? [group] : Object.keys(v).map((m) => `${group}.${m}`),
    );
    const called = new Set([...answers.keys()].map((k) => k.replace(/ \(range\)$/, "")));
    expect(methods.filter((m) => !called.has(m))).toEqual([]);
    const ops = new Set([...answers.values()].map((a) => a.op));
    expect((Object.keys(OPERATIONS) as Operation[]).filter((op) => !ops.has(op))).toEqual([]);
  });

  it("the lists the calls read have rows (so their rows' fields are checked)", () => {
    const value = (name: string) => answers.get(name)!.value as Record<string, unknown[]>;
    expect(value("trending.top").items!.length).toBe(2);
    expect(value("counters.top").items!.length).toBe(2);
    expect(value("counters.top (range)").items!.length).toBe(1);
    expect(value("presence.members").members!.length).toBe(2);
    expect(value("leaderboards.page").items).toHaveLength(2);
    expect(value("webhooks.list").webhooks!.length).toBe(1);
    expect(value("counters.top (range)")).toHaveProperty("range");
  });

  it("each answer has the schema's fields, each of its JSON type, and no other", () => {
    const problems: string[] = [];
    for (const [name, { op, value, status, named }] of answers) {
      if (status === 204) {
        if (value !== undefined) problems.push(`${name}: a 204 resolved to ${JSON.stringify(value)}`);
        continue;
      }
      for (const p of schemaProblems(value, schemaOf(op, status, named), strict)) problems.push(`${name}: ${p}`);
    }
    expect(problems).toEqual([]);
  });

  // Passing: a check that accepted anything would pass every answer: the Worker's own answer with
  // a field added, a required field taken away or a field of another JSON type is refused.
  it("the check refuses an extra field, a missing field and a wrong type", () => {
    const top = answers.get("trending.top")!.value as { items: Record<string, unknown>[] };
    const schema = schemaOf("trendingTop", 200);
    const problems = (value: unknown) => schemaProblems(value, schema, strict).join("\n");
    expect(problems(top)).toBe("");
    expect(problems({ ...top, extra: 1 })).toMatch(/undocumented field 'extra'/);
    expect(problems({ ...top, items: [{ ...top.items[0], more: true }] })).toMatch(/undocumented field 'more'/);
    expect(problems({ ...top, items: [{ ...top.items[0], rank: "1" }] })).toMatch(/rank: expected/);
    const { items: _, ...without } = top;
    expect(problems(without)).toMatch(/missing required 'items'/);
  });
});

describe("review 21: retries against the Worker", () => {
  /** A 503 with `retryAfter` from a proxy in front of the Worker (its answer dropped unread) for the first `times` requests. */
  const unavailable =
    (times: number, retryAfter?: string) =>
    (response: Response, so: Sent[]): Response => {
      if (so.length > times) return response;
      void response.body?.cancel();
      return Response.json(
        { error: { code: "storage_unavailable", message: "down" } },
        { status: 503, headers: retryAfter === undefined ? {} : { "retry-after": retryAfter } },
      );
    };

  // Passing: a 4xx other than 429 is the caller's to mend: one request (404, 400, 403, 409).
  it("a 400, 403, 404 or 409 is sent once", async () => {
    const api = track(createTestApi({ label: "r21-4xx", start }));
    const sent: Sent[] = [];
    const c = workerClient(api, sent);
    await c.leaderboards.join("b", "p", { name: "P" });
    sent.length = 0;
    expect(await failure(c.leaderboards.player("b", "nobody"))).toMatchObject({ status: 404 });
    expect(await failure(c.counters.incr("c", { member: "m", by: Number.NaN }))).toMatchObject({ status: 400 });
    const reader = workerClient(api, sent, { key: TEST_KEYS.read });
    expect(await failure(reader.counters.incr("c", { member: "m" }))).toMatchObject({ status: 403 });
    // the same key with another body: 409
    await c.counters.incr("c", { member: "m" }, { idempotencyKey: "r21-k" });
    expect(await failure(c.counters.incr("c", { member: "n" }, { idempotencyKey: "r21-k" }))).toMatchObject({
      status: 409,
    });
    expect(sent.map((s) => s.status)).toEqual([404, 400, 403, 200, 409]);
  });

  // Passing: a write whose `fetch` threw after the Worker applied it (the answer lost) is sent again
  // with its Idempotency-Key, replayed, and counted once.
  it("a fetch that throws after the write: retried with the same key, applied once", async () => {
    const api = track(createTestApi({ label: "r21-throws", start }));
    const sent: Sent[] = [];
    const lossy = recordingFetch(api, sent, (response, so) => {
      if (so.length > 1) return response;
      void response.body?.cancel();
      throw new TypeError("fetch failed: connection reset");
    });
    const c = workerClient(api, [], { fetch: lossy });
    expect(await c.counters.incr("c", { member: "a", by: 3 })).toEqual({ results: [{ member: "a", score: 3 }] });
    expect(sent.map((s) => s.status)).toEqual([200, 200]);
    expect(sent[1]!.key).toBe(sent[0]!.key);
    expect((await c.counters.member("c", "a")).score).toBe(3);
  });

  // Passing: a `fetch` that throws synchronously (not a rejected promise) is a network error like
  // any other: retried where safe, then thrown as EdgestatsError network_error.
  it("a fetch that throws synchronously: network_error, after its retries", async () => {
    let calls = 0;
    const c = createClient({
      baseUrl: "http://edgestats.test",
      key: TEST_KEYS.admin,
      backoffMs: () => 0,
      retries: 2,
      fetch: () => {
        calls++;
        throw new Error("no socket");
      },
    });
    expect(await failure(c.trending.list())).toMatchObject({ status: 0, code: "network_error" });
    expect(calls).toBe(3);
  });

  // Passing: the caller's signal ends the wait for a Retry-After at once (one request, `aborted`).
  it("an abort during a Retry-After wait ends the call at once", async () => {
    const api = track(createTestApi({ label: "r21-abort-wait", start }));
    const sent: Sent[] = [];
    const c = workerClient(api, [], { fetch: recordingFetch(api, sent, unavailable(5, "20")) });
    const controller = new AbortController();
    const pending = failure(c.trending.list({ signal: controller.signal }));
    await new Promise((r) => setTimeout(r, 100));
    const began = performance.now();
    controller.abort();
    expect(await within(2000, pending)).toMatchObject({ status: 0, code: "aborted" });
    expect(performance.now() - began).toBeLessThan(500);
    expect(sent.map((s) => s.status)).toEqual([200]);
  });

  // Passing: a 503's Retry-After is waited (at least), then the call is sent again and resolves.
  it("a 503 with Retry-After: 1 is retried after a second", async () => {
    const api = track(createTestApi({ label: "r21-503", start }));
    const sent: Sent[] = [];
    const c = workerClient(api, [], { fetch: recordingFetch(api, sent, unavailable(1, "1")) });
    expect(await within(5000, c.trending.list())).toEqual({ streams: [], nextCursor: null });
    expect(sent).toHaveLength(2);
    expect(sent[1]!.at - sent[0]!.at).toBeGreaterThanOrEqual(950);
  });

  // FIXED (was low): a baseUrl that is no absolute URL ("stats.example.com", a missing scheme) made `new
  // Request` throw inside the attempt, which was taken for a network error: status 0, retried
  // `retries` times with backoff (the default: 100 + 200 + 400 ms), its message saying the request
  // "got no response" although nothing was sent. Fix: createClient refuses it at once
  // (invalid_request, details path baseUrl), as it refuses a number option out of range. Now it
  // does (src/client-errors.ts checkBaseUrl).
  it("a baseUrl that is not an absolute http(s) URL is refused by createClient", () => {
    let error: unknown;
    try {
      createClient({ baseUrl: "stats.example.com", key: TEST_KEYS.admin, fetch: async () => new Response() });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(EdgestatsError);
    expect(error).toMatchObject({ status: 400, code: "invalid_request", details: [{ path: "baseUrl" }] });
  });

  // FIXED (was low): a `fetch` that resolves to something other than a Response (a wrapper that forgot to
  // return it: `async (r) => { await fetch(r) }`) made the call reject with a bare TypeError
  // ("Cannot destructure property 'status' of undefined") rather than an EdgestatsError, against
  // what the client promises (every failure an EdgestatsError). Fix: in client-http.ts's exchange,
  // an answer that is not a Response is `network_error` (status 0) with a message naming the
  // user's fetch; not retried would do as well, but one check in the existing catch is the least.
  // Now it is (src/client-http.ts exchange).
  it("a fetch resolving to no Response: an EdgestatsError, not a TypeError", async () => {
    const c = createClient({
      baseUrl: "http://edgestats.test",
      key: TEST_KEYS.admin,
      retries: 0,
      fetch: (async () => undefined) as never,
    });
    const error = await failure(c.trending.list());
    expect(error).toBeInstanceOf(EdgestatsError);
    expect(error).toMatchObject({ status: 0, code: "network_error" });
  });
});
