/**
 * Review 22: webhook and histogram writes over HTTP (the real app in workerd on the local Upstash
 * server): `Idempotency-Key` on `POST /v1/webhooks/{name}/test` (a repeat answers the first id and
 * queues nothing again), on webhook PUTs and on histogram observations (a refusal records nothing,
 * so the retry after the fix is applied; a repeat is counted once; the key with another body is a
 * 409, nothing written); a test of an unknown webhook writing nothing.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createTestApi } from "../helpers/worker.ts";
import { command } from "../helpers/upstash-rest.ts";

const NOW = Date.UTC(2026, 10, 28, 15, 0);
// a local URL nobody listens on: the delivery after the response fails at once and is retried later
const api = createTestApi({ label: "rv22-wh", start: NOW, vars: { WEBHOOKS_ALLOW_LOCAL_HTTP: "true" } });
afterAll(() => api.cleanup());
const SECRET = "review22-secret-abcdefghij";
const hook = { url: "http://127.0.0.1:9/hook", events: ["leaderboard.leader"], secret: SECRET };
const idem = (k: string) => ({ key: "admin", headers: { "idempotency-key": k } });

describe("review 22: Idempotency-Key on webhook writes", () => {
  it("POST …/test twice with one key: the first id answered again, one delivery queued", async () => {
    expect((await api.put("/v1/webhooks/t", hook, { key: "admin" })).status).toBe(201);
    const first = await api.post("/v1/webhooks/t/test", undefined, idem("rv22-test-1"));
    expect(first.status).toBe(202);
    const again = await api.post("/v1/webhooks/t/test", undefined, idem("rv22-test-1"));
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    const deliveries = await command<number>(api.target, "HLEN", `${api.prefix}:webhooks:_deliveries`);
    expect(deliveries).toBe(1);
    const other = await api.post("/v1/webhooks/t/test", undefined, idem("rv22-test-2"));
    expect(other.body.id).not.toBe(first.body.id);
  });

  it("a test of an unknown webhook: 404, nothing written", async () => {
    const before = (await api.keys()).sort();
    const res = await api.post("/v1/webhooks/nobody/test", undefined, { key: "admin" });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("not_found");
    expect((await api.keys()).sort()).toEqual(before);
  });

  it("a PUT repeated with its key and another body: 409, the settings unchanged", async () => {
    expect((await api.put("/v1/webhooks/p", hook, idem("rv22-put-1"))).status).toBe(201);
    const other = await api.put("/v1/webhooks/p", { ...hook, url: "http://127.0.0.1:9/other" }, idem("rv22-put-1"));
    expect(other.status).toBe(409);
    const list = await api.get("/v1/webhooks", { key: "admin" });
    expect(list.body.webhooks.find((w: { name: string }) => w.name === "p").url).toBe(hook.url);
  });
});

describe("review 22: a deleted webhook", () => {
  it("its log is a 404, a second DELETE says deleted: false, and its keys are gone", async () => {
    expect((await api.put("/v1/webhooks/gone", hook, { key: "admin" })).status).toBe(201);
    expect((await api.post("/v1/webhooks/gone/test", undefined, { key: "admin" })).status).toBe(202);
    expect((await api.get("/v1/webhooks/gone/deliveries", { key: "admin" })).body.deliveries).toHaveLength(1);
    expect((await api.del("/v1/webhooks/gone", { key: "admin" })).body).toEqual({ deleted: true });
    expect((await api.get("/v1/webhooks/gone/deliveries", { key: "admin" })).status).toBe(404);
    expect((await api.del("/v1/webhooks/gone", { key: "admin" })).body).toEqual({ deleted: false });
    expect((await api.keys()).filter((k) => k.includes(":webhooks:gone"))).toEqual([]);
    const pending = await command<string[]>(api.target, "ZRANGE", `${api.prefix}:webhooks:_pending`, 0, -1);
    expect(pending.filter((id) => id.endsWith(":gone"))).toEqual([]);
  });
});

describe("review 22: Idempotency-Key on histogram observations", () => {
  it("a 404 records nothing: after the PUT the same key is applied; a repeat is counted once", async () => {
    const body = { values: [1, 2, { value: 3 }] };
    const refused = await api.post("/v1/histograms/late/observations", body, idem("rv22-obs-1"));
    expect(refused.status).toBe(404);
    expect((await api.put("/v1/histograms/late", { bucketWidth: 1 }, { key: "admin" })).status).toBe(201);
    const applied = await api.post("/v1/histograms/late/observations", body, idem("rv22-obs-1"));
    expect(applied.status).toBe(200);
    expect(applied.body).toEqual({ accepted: 3 });
    const again = await api.post("/v1/histograms/late/observations", body, idem("rv22-obs-1"));
    expect(again.body).toEqual({ accepted: 3 });
    const read = await api.get("/v1/histograms/late");
    expect([read.body.count, read.body.sum]).toEqual([3, 6]);
  });

  // The record is keyed by the API key, method, path and header (functions/middleware/idempotency.ts),
  // so the same header on another histogram's path is another request: applied, not a 409.
  it("a refusal by the script (the histogram's own retention) keeps no record: the retry after a longer retention applies", async () => {
    await api.put("/v1/histograms/ret", { bucketWidth: 1, retentionDays: 30 }, { key: "admin" });
    const body = { values: [{ value: 1 }, { value: 2, at: NOW - 60 * 86_400_000 }] };
    const keys = (await api.keys()).sort();
    const refused = await api.post("/v1/histograms/ret/observations", body, idem("rv22-obs-3"));
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toMatch(/30-day retention/);
    expect((await api.keys()).sort()).toEqual(keys);
    await api.put("/v1/histograms/ret", { bucketWidth: 1, retentionDays: 90 }, { key: "admin" });
    const applied = await api.post("/v1/histograms/ret/observations", body, idem("rv22-obs-3"));
    expect([applied.status, applied.body]).toEqual([200, { accepted: 2 }]);
    const read = await api.get(`/v1/histograms/ret?from=${new Date(NOW - 89 * 86_400_000).toISOString().slice(0, 10)}`);
    expect([read.body.count, read.body.sum]).toEqual([2, 3]);
  });

  it("the key again with another body: 409, nothing written; on another histogram: its own request", async () => {
    await api.put("/v1/histograms/h1", { bucketWidth: 1 }, { key: "admin" });
    await api.put("/v1/histograms/h2", { bucketWidth: 1 }, { key: "admin" });
    expect((await api.post("/v1/histograms/h1/observations", { value: 5 }, idem("rv22-obs-2"))).status).toBe(200);
    const keys = (await api.keys()).sort();
    const otherBody = await api.post("/v1/histograms/h1/observations", { value: 6 }, idem("rv22-obs-2"));
    expect(otherBody.status).toBe(409);
    expect((await api.keys()).sort()).toEqual(keys);
    const otherHist = await api.post("/v1/histograms/h2/observations", { value: 5 }, idem("rv22-obs-2"));
    expect(otherHist.status).toBe(200);
    expect((await api.get("/v1/histograms/h1")).body.count).toBe(1);
    expect((await api.get("/v1/histograms/h2")).body.count).toBe(1);
  });

  // Fixed in review 22 (was it.fails). Severity low (medium for clients that show `details`). What was wrong:
  // a batch with three or more bad items is answered as if it were ONE observation: details `value`
  // ("expected number, received undefined") and `` ('Unrecognized key: "values"'), naming none of the bad
  // items. The body is a union (one observation | {values}); functions/router.ts `closestOption` keeps the
  // option with the fewest issues, and the single-observation option always has two (no `value`, an unknown
  // `values`), so from 3 bad items on it wins. With 1 or 2 bad items the items are named (review 21). The
  // same holds of every batch route shaped alike (counters, trending: tested below). Suggested fix: in
  // closestOption, weigh an option that does not know one of the value's own keys (unrecognized_keys at the
  // union's path) as a wrong shape, far above any count of issues, below a wrong type (an option for a number
  // given an object): done (functions/router.ts).
  it("a batch with several bad items names each of them: 400, nothing written", async () => {
    await api.put("/v1/histograms/b", { bucketWidth: 1 }, { key: "admin" });
    const keys = (await api.keys()).sort();
    const res = await api.post("/v1/histograms/b/observations", {
      values: [1, "x", { value: 2, at: "yesterday" }, { value: 1e16 }, 4],
    });
    expect(res.status).toBe(400);
    const paths = (res.body.error.details as { path: string }[]).map((d) => d.path);
    expect(paths).toEqual(["values.1", "values.2.at", "values.3.value"]);
    expect((await api.keys()).sort()).toEqual(keys);
  });

  it("counters and trending batches with three bad items name them too", async () => {
    const c = await api.post("/v1/counters/c/incr", {
      items: [
        { member: "a", by: "x" },
        { member: "b", by: "y" },
        { member: "c", by: "z" },
      ],
    });
    expect(c.status).toBe(400);
    expect((c.body.error.details as { path: string }[]).map((d) => d.path)).toEqual([
      "items.0.by",
      "items.1.by",
      "items.2.by",
    ]);
    const t = await api.post("/v1/trending/t/events", {
      events: [
        { member: "a", count: "x" },
        { member: "b", count: "y" },
        { member: "c", count: "z" },
      ],
    });
    expect(t.status).toBe(400);
    expect((t.body.error.details as { path: string }[]).map((d) => d.path)).toEqual([
      "events.0.count",
      "events.1.count",
      "events.2.count",
    ]);
  });

  it("two bad items are named (the union's option of a batch still wins)", async () => {
    await api.put("/v1/histograms/b2", { bucketWidth: 1 }, { key: "admin" });
    const res = await api.post("/v1/histograms/b2/observations", { values: [1, "x", { value: 1e16 }] });
    expect(res.status).toBe(400);
    expect((res.body.error.details as { path: string }[]).map((d) => d.path)).toEqual(["values.1", "values.2.value"]);
  });
});
