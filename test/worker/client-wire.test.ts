/**
 * `edgestats/client` on the wire, against the Worker in workerd (its bindings, the real local
 * queue): every list GET's CSV form through `{ format: "csv" }`, the paging its headers carry
 * through `{ format: "csv", paging: true }`, `Prefer: respond-async` through `{ respondAsync: true }`
 * with and without a queue binding, and the types each option gives (checked by tsc).
 */
import { afterAll, describe, expect, expectTypeOf, it } from "vitest";
import { CSV_LISTS } from "../../functions/csv.ts";
import type { QueuedBody } from "../../functions/schemas.ts";
import {
  EdgestatsError,
  type EdgestatsClient,
  OPERATIONS,
  type CsvPage,
  type ErrorCode,
  type Queued,
} from "../../src/client.ts";
import type { IncrResult } from "../../src/counters/index.ts";
import type { HeartbeatResult } from "../../src/presence/index.ts";
import type { TopResult } from "../../src/trending/index.ts";
import { workerClient, type Sent } from "../helpers/recording-fetch.ts";
import { cleanedUpAfterAll, createTestApi, TEST_KEYS, type TestApi } from "../helpers/worker.ts";

const track = cleanedUpAfterAll<TestApi>();
const start = Date.UTC(2026, 10, 25, 12, 30);

/** The client on `api`'s Worker with `key`, recording each request. */
const clientOf = (api: TestApi, key: string = TEST_KEYS.admin, seen: Sent[] = []) => workerClient(api, seen, { key });

/** The OPERATIONS path template a request path matches (presence's `_total` before `{room}`, as listed). */
function templateOf(pathname: string): string | undefined {
  return Object.values(OPERATIONS)
    .map(([, path]) => path)
    .find((path) => new RegExp(`^${path.replace(/\{\w+\}/g, "[^/]+")}$`).test(pathname));
}

const rows = (csv: string) => csv.split("\r\n").filter(Boolean);

describe("CSV through the client", () => {
  it("every list GET of CSV_LISTS answers its CSV text through its method's { format: 'csv' }", async () => {
    const api = track(createTestApi({ label: "cw-csv", start }));
    const seen: Sent[] = [];
    const client = clientOf(api, TEST_KEYS.admin, seen);
    await client.trending.record("s", [{ member: "a", count: 2 }]);
    await client.counters.incr("c", [{ member: "a", by: 3 }]);
    await client.histograms.configure("h", { bucketWidth: 10 });
    await client.histograms.observe("h", [1, 2]);
    await client.presence.heartbeat("r", ["u1"]);
    await client.leaderboards.join("b", "ada", { name: "Ada", score: 5 });
    await client.webhooks.put("w", {
      url: "https://example.invalid/hook",
      events: ["leaderboard.leader"],
      secret: "client-wire-secret-0001",
    });
    seen.length = 0;

    const csv = { format: "csv" } as const;
    const answers: [string, string][] = [];
    const read = async (label: string, run: Promise<string>) => answers.push([label, await run]);
    await read("trending.list", client.trending.list(csv));
    await read("trending.top", client.trending.top("s", {}, csv));
    await read("trending.rising", client.trending.rising("s", {}, csv));
    await read("trending.history", client.trending.history("s", "a", {}, csv));
    await read("counters.list", client.counters.list({}, csv));
    await read("counters.top", client.counters.top("c", {}, csv));
    await read("counters.bottom", client.counters.bottom("c", {}, csv));
    await read("counters.range", client.counters.range("c", {}, csv));
    await read("counters.sorted", client.counters.sorted("c", {}, csv));
    await read("histograms.list", client.histograms.list({}, csv));
    await read("histograms.read", client.histograms.read("h", {}, csv));
    await read("presence.list", client.presence.list({}, csv));
    await read("presence.members", client.presence.members("r", {}, csv));
    await read("presence.history", client.presence.history("r", {}, csv));
    await read("leaderboards.list", client.leaderboards.list({}, csv));
    await read("leaderboards.page", client.leaderboards.page("b", {}, csv));
    await read("leaderboards.around", client.leaderboards.around("b", "ada", {}, csv));
    await read("leaderboards.seasons", client.leaderboards.seasons("b", csv));
    await read("webhooks.list", client.webhooks.list(csv));
    await read("webhooks.deliveries", client.webhooks.deliveries("w", {}, csv));

    // every CSV list of the service reached, each asked for as text/csv and answered with its header row
    const paths = seen.map((request) => templateOf(new URL(request.url).pathname));
    expect([...new Set(paths)].sort()).toEqual(CSV_LISTS.map((entry) => entry.path).sort());
    expect(seen.every((request) => request.headers.get("accept") === "text/csv")).toBe(true);
    answers.forEach(([label, text], i) => {
      const entry = CSV_LISTS.find((e) => e.path === paths[i]);
      const header = entry?.columns.map((c) => (typeof c === "string" ? c : c.header)).join(",");
      expect(rows(text)[0], label).toBe(header);
    });
    expect(rows(answers.find(([label]) => label === "counters.top")?.[1] ?? "")).toEqual([
      "rank,member,score",
      "1,a,3",
    ]);
    expect(rows(answers.find(([label]) => label === "leaderboards.list")?.[1] ?? "")).toEqual(["board", "b"]);
  });

  it("{ paging: true } gives the Link rel=next as the next page's query and X-Total-Count as total", async () => {
    const api = track(createTestApi({ label: "cw-paging", start }));
    const client = clientOf(api, TEST_KEYS.read);
    const writer = clientOf(api, TEST_KEYS.admin);
    await writer.counters.incr("c1", { member: "a" });
    await writer.counters.incr("c2", [
      { member: "a", by: 1 },
      { member: "b", by: 2 },
      { member: "c", by: 3 },
    ]);
    await writer.leaderboards.join("b", "ada", { name: "Ada", score: 5 });
    await writer.leaderboards.join("b", "bob", { name: "Bob", score: 9 });
    const paging = { format: "csv", paging: true } as const;

    // a cursor list (review 23: the counters' list pages by cursor, offset still by position): the
    // next page's query, followed, reaches the last page (next null)
    const first = await client.counters.list({ limit: 1 }, paging);
    expect(Object.keys(first.next ?? {}).sort()).toEqual(["cursor", "limit"]);
    expect(rows(first.csv)).toHaveLength(2);
    const second = await client.counters.list({ limit: 1, cursor: String(first.next?.cursor) }, paging);
    expect(second.next).toBeNull();
    expect((await client.counters.list({ limit: 1, offset: 1 }, paging)).next).toBeNull();
    expect([rows(first.csv)[1], rows(second.csv)[1]].map((row) => row?.split(",")[0]).sort()).toEqual(["c1", "c2"]);

    // a limit cut: total counts the whole range
    const cut = await client.counters.range("c2", { limit: 2, order: "desc" }, paging);
    expect(cut.total).toBe(3);
    expect(rows(cut.csv)).toEqual(["member,score", "c,3", "b,2"]);

    // a numbered page: total and the next page number
    const page = await client.leaderboards.page("b", { page: 1, limit: 1 }, paging);
    expect(page).toMatchObject({ total: 2, next: { page: "2", limit: "1" } });
    expect(rows(page.csv)[1]?.split(",").slice(0, 2)).toEqual(["1", "bob"]);
    expect((await client.leaderboards.page("b", { page: 2, limit: 1 }, paging)).next).toBeNull();

    // JSON stays the default, and `paging` alone asks for nothing else
    expect((await client.counters.range("c2", { limit: 2 })).count).toBe(3);
    expect((await client.counters.range("c2", { limit: 2 }, { paging: true })).count).toBe(3);
  });

  it("an error answer to a CSV read is still an EdgestatsError (JSON envelope): 404 by status and code", async () => {
    const api = track(createTestApi({ label: "cw-csv-err", start }));
    const err = await clientOf(api, TEST_KEYS.read)
      .leaderboards.around("nope", "ada", {}, { format: "csv" })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EdgestatsError);
    expect({ status: (err as EdgestatsError).status, code: (err as EdgestatsError).code }).toEqual({
      status: 404,
      code: "not_found",
    });
    const forbidden = await clientOf(api, TEST_KEYS.read)
      .webhooks.list({ format: "csv" })
      .catch((e: unknown) => e);
    expect({ status: (forbidden as EdgestatsError).status, code: (forbidden as EdgestatsError).code }).toEqual({
      status: 403,
      code: "forbidden",
    });
  });
});

describe("Prefer: respond-async through the client", () => {
  const suffix = Math.random().toString(36).slice(2, 8);
  const counter = `cw-async-${suffix}`;
  const room = `cw-async-${suffix}`;
  // the queue consumer applies messages under the deployment's KEY_PREFIX ("es", wrangler.toml)
  const deployment = createTestApi({ label: "cw-async-es", start: Date.now(), vars: { KEY_PREFIX: "es" } });
  afterAll(async () => {
    await new Promise((r) => setTimeout(r, 1500));
    await deployment.del(`/v1/counters/${counter}`, { key: "admin" });
    await deployment.del(`/v1/presence/${room}`, { key: "admin" });
  });

  it("counters.incr and presence.heartbeat with { respondAsync: true } send the header and resolve to the 202", async () => {
    const api = track(createTestApi({ label: "cw-async", start: Date.now() }));
    const seen: Sent[] = [];
    const client = clientOf(api, TEST_KEYS.ingest, seen);
    const incr = await client.counters.incr(counter, [{ member: "a" }, { member: "b", by: 2 }], { respondAsync: true });
    expect(incr).toEqual({ queued: 2, requestId: expect.any(String) });
    const beat = await client.presence.heartbeat(room, ["u1", "u2", "u3"], { respondAsync: true });
    expect(beat).toEqual({ queued: 3, requestId: expect.any(String) });
    expect(seen.map((r) => r.headers.get("prefer"))).toEqual(["respond-async", "respond-async"]);
    // without the option, no preference is sent and the answer is the synchronous one
    const sync = await client.presence.heartbeat(`${room}-sync`, "u1");
    expect(seen[2]?.headers.get("prefer")).toBeNull();
    expect(sync).toMatchObject({ online: 1 });
  });

  it("without a queue binding the service answers synchronously, and the client returns that answer", async () => {
    const api = track(createTestApi({ label: "cw-noqueue", start }));
    delete (api.env as unknown as Record<string, unknown>).INGEST_QUEUE;
    const client = clientOf(api, TEST_KEYS.admin);
    const incr = await client.counters.incr("c", { member: "a", by: 4 }, { respondAsync: true });
    expect("queued" in incr).toBe(false);
    expect(incr).toMatchObject({ results: [{ member: "a", score: 4 }] });
    expect(await client.trending.record("s", { member: "x" }, { respondAsync: true })).toEqual({ accepted: 1 });
    expect((await client.counters.member("c", "a")).score).toBe(4);
  });

  // tsc checks these; the function is never called (its calls would send requests)
  it("types: each option gives the result it can have", () => {
    const types = (client: EdgestatsClient) => {
      expectTypeOf<Queued>().toEqualTypeOf<QueuedBody>();
      expectTypeOf(client.counters.incr("c", { member: "a" })).resolves.toEqualTypeOf<IncrResult>();
      expectTypeOf(
        client.counters.incr("c", { member: "a" }, { idempotencyKey: "k" }),
      ).resolves.toEqualTypeOf<IncrResult>();
      expectTypeOf(client.counters.incr("c", { member: "a" }, { respondAsync: true })).resolves.toEqualTypeOf<
        Queued | IncrResult
      >();
      const maybe = { respondAsync: Math.random() > 0.5 };
      expectTypeOf(client.presence.heartbeat("r", "u", maybe)).resolves.toEqualTypeOf<Queued | HeartbeatResult>();
      expectTypeOf(
        client.presence.heartbeat("r", "u", { respondAsync: false }),
      ).resolves.toEqualTypeOf<HeartbeatResult>();
      expectTypeOf(client.trending.record("s", { member: "a" }, { respondAsync: true })).resolves.toEqualTypeOf<
        Queued | { accepted: number }
      >();

      expectTypeOf(client.trending.top("s")).resolves.toEqualTypeOf<TopResult>();
      expectTypeOf(client.trending.top("s", {}, { format: "json" })).resolves.toEqualTypeOf<TopResult>();
      expectTypeOf(client.trending.top("s", {}, { format: "csv" })).resolves.toEqualTypeOf<string>();
      expectTypeOf(client.trending.top("s", {}, { format: "csv", paging: true })).resolves.toEqualTypeOf<CsvPage>();
      const format: "json" | "csv" = Math.random() > 0.5 ? "csv" : "json";
      expectTypeOf(client.trending.top("s", {}, { format })).resolves.toEqualTypeOf<TopResult | string | CsvPage>();

      expectTypeOf<"score_rejected">().toMatchTypeOf<ErrorCode>();
      expectTypeOf<"http_502">().toMatchTypeOf<ErrorCode>();
      expectTypeOf<EdgestatsError["code"]>().toEqualTypeOf<ErrorCode>();
    };
    expectTypeOf(types).toBeFunction();
  });
});
