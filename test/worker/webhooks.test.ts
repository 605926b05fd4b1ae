/**
 * The webhook routes inside workerd: admin scope, the 400 envelope (nothing written), secrets
 * never answered, the test event's 202 and its delivery log, the jobs through /internal/jobs.
 * Deliveries that succeed, signatures, retries and QStash are tested on Node against real
 * receivers (test/redis/webhooks.test.ts). Here the receiver is the local Upstash server, which
 * answers 401 to a request without its token: a failing receiver, which is what the log must say.
 */
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { afterAll, describe, expect, it } from "vitest";
import worker from "../../functions/index.ts";
import { createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "webhooks", vars: { WEBHOOKS_ALLOW_LOCAL_HTTP: "true" } });
afterAll(() => api.cleanup());

const SECRET = "0123456789abcdef-secret";
/** A receiver that refuses every delivery (401): the local Upstash server. */
const NOWHERE = `${api.env.UPSTASH_REDIS_REST_URL}/hook`;
const settings = (over: Record<string, unknown> = {}) => ({
  url: NOWHERE,
  events: ["presence.peak"],
  filter: { room: "lobby" },
  secret: SECRET,
  ...over,
});
const admin = { key: "admin" };
/** Redis keys of the webhooks feature (idempotency records of earlier tests aside). */
const webhookKeys = async () => (await api.keys()).filter((k) => k.startsWith(`${api.prefix}:webhooks:`));

describe("webhook routes", () => {
  it("create (201), replace (200), list without secrets, delete", async () => {
    const created = await api.put("/v1/webhooks/ops", settings(), admin);
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      created: true,
      webhook: {
        name: "ops",
        url: NOWHERE,
        events: ["presence.peak"],
        filter: { room: "lobby" },
        n: 10,
        threshold: null,
        createdAt: api.now,
        updatedAt: api.now,
      },
    });
    const replaced = await api.put("/v1/webhooks/ops", settings({ events: ["presence.peak"], n: 5 }), admin);
    expect(replaced.status).toBe(200);
    expect(replaced.body.webhook.n).toBe(5);
    const listed = await api.get("/v1/webhooks", admin);
    expect(listed.status).toBe(200);
    expect(listed.body.webhooks).toEqual([replaced.body.webhook]);
    expect(JSON.stringify(listed.body)).not.toContain(SECRET);
    expect((await api.del("/v1/webhooks/ops", admin)).body).toEqual({ deleted: true });
    expect((await api.del("/v1/webhooks/ops", admin)).body).toEqual({ deleted: false });
    expect((await api.get("/v1/webhooks", admin)).body).toEqual({ webhooks: [] });
  });

  it("a PUT with an Idempotency-Key is replayed, not applied again", async () => {
    const headers = { "idempotency-key": "wh-put-1" };
    const first = await api.put("/v1/webhooks/idem", settings({ events: ["trending.rising"], filter: undefined }), {
      ...admin,
      headers,
    });
    expect(first.status).toBe(201);
    expect(first.body.webhook.threshold).toBe(3);
    api.advance(1000);
    const again = await api.put("/v1/webhooks/idem", settings({ events: ["trending.rising"], filter: undefined }), {
      ...admin,
      headers,
    });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.webhook.updatedAt).toBe(first.body.webhook.updatedAt);
    const other = await api.put(
      "/v1/webhooks/idem",
      settings({ events: ["trending.rising"], filter: undefined, threshold: 5 }),
      { ...admin, headers },
    );
    expect(other.status).toBe(409);
    await api.del("/v1/webhooks/idem", admin);
  });

  it("needs the admin key: read and ingest keys get 403, no key 401", async () => {
    const calls: [string, string, unknown?][] = [
      ["GET", "/v1/webhooks"],
      ["PUT", "/v1/webhooks/x", settings()],
      ["DELETE", "/v1/webhooks/x"],
      ["POST", "/v1/webhooks/x/test"],
      ["GET", "/v1/webhooks/x/deliveries"],
    ];
    for (const [method, path, body] of calls) {
      for (const key of ["read", "ingest"])
        expect((await api.call(method, path, body, { key })).status, `${method} ${path} ${key}`).toBe(403);
      expect((await api.call(method, path, body, { key: "none" })).status).toBe(401);
    }
    expect(await webhookKeys()).toEqual([]);
  });

  it("bad settings are a 400 listing each field, and write nothing", async () => {
    const cases: [unknown, string[]][] = [
      [settings({ url: "http://example.com/hook" }), ["url"]],
      [settings({ events: ["presence.peak", "nope"] }), ["events.1"]],
      [settings({ events: ["trending.entered"], filter: undefined }), ["filter"]],
      [settings({ secret: "short" }), ["secret"]],
      [settings({ n: 1000, secret: "short" }), ["n", "secret"]],
      [settings({ filter: { room: "a", board: "b" } }), ["filter"]],
      [settings({ extra: 1 }), [""]],
      [settings({ url: 5 }), ["url"]],
      [settings({ threshold: 2 }), ["threshold"]],
      [settings({ events: ["trending.rising"], filter: undefined, threshold: -1 }), ["threshold"]],
    ];
    for (const [body, paths] of cases) {
      const res = await api.put("/v1/webhooks/bad", body, admin);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
      expect(res.body.error.details.map((d: { path: string }) => d.path)).toEqual(paths);
    }
    expect((await api.put("/v1/webhooks/bad%20name", settings(), admin)).status).toBe(400);
    expect(await webhookKeys()).toEqual([]);
  });

  it("http:// URLs need WEBHOOKS_ALLOW_LOCAL_HTTP", async () => {
    const strict = createTestApi({ label: "webhooks-strict" });
    try {
      const res = await strict.put("/v1/webhooks/ops", settings(), admin);
      expect(res.status).toBe(400);
      expect(res.body.error.details).toEqual([{ in: "json", path: "url", message: "must be https://" }]);
      expect((await strict.put("/v1/webhooks/ops", settings({ url: "https://example.com/hook" }), admin)).status).toBe(
        201,
      );
    } finally {
      await strict.cleanup();
    }
  });

  it("POST /test answers 202; the failed delivery is logged and retried by the minute job", async () => {
    await api.put("/v1/webhooks/t", settings(), admin);
    const res = await api.post("/v1/webhooks/t/test", undefined, admin);
    expect(res.status).toBe(202);
    expect(res.body.id).toMatch(/^evt_test_[0-9a-f]{32}$/);
    const log = await api.get("/v1/webhooks/t/deliveries", admin);
    expect(log.status).toBe(200);
    expect(log.body.deliveries).toEqual([
      expect.objectContaining({
        event: res.body.id,
        type: "webhook.test",
        attempt: 1,
        via: "direct",
        outcome: "retrying",
        status: 401,
        error: "HTTP 401",
        retryAt: api.now + 60_000,
      }),
    ]);
    api.advance(60_000);
    const job = await api.post("/internal/jobs/webhooks", undefined, admin);
    expect(job.status).toBe(200);
    expect(job.body.result).toMatchObject({ webhooks: 1, claimed: 1, retrying: 1 });
    const after = await api.get("/v1/webhooks/t/deliveries?limit=1", admin);
    expect(after.body.deliveries).toEqual([
      expect.objectContaining({ attempt: 2, outcome: "retrying", retryAt: api.now + 120_000 }),
    ]);
    expect((await api.get("/v1/webhooks/t/deliveries?limit=51", admin)).status).toBe(400);
  });

  it("unknown webhooks are 404 for test and deliveries", async () => {
    expect((await api.post("/v1/webhooks/missing/test", undefined, admin)).status).toBe(404);
    expect((await api.get("/v1/webhooks/missing/deliveries", admin)).status).toBe(404);
  });

  it("presence.peak through the heartbeat API and the minute job", async () => {
    await api.put("/v1/webhooks/peaks", settings({ filter: { room: "hall" } }), admin);
    await api.post("/v1/presence/hall/heartbeats", { ids: ["a", "b", "c"] });
    const job = await api.post("/internal/jobs/webhooks", undefined, admin);
    expect(job.body.result).toMatchObject({ events: 1, queued: 1 });
    const [entry] = (await api.get("/v1/webhooks/peaks/deliveries", admin)).body.deliveries;
    expect(entry).toMatchObject({ type: "presence.peak", attempt: 1, outcome: "retrying" });
    expect((await api.post("/internal/jobs/webhooks", undefined, admin)).body.result).toMatchObject({ events: 0 });
  });

  it("trending.entered/left from real writes, after compaction, on the hourly cron", async () => {
    const stream = createTestApi({
      label: "webhooks-cron",
      start: Date.UTC(2026, 10, 22, 10, 30),
      vars: { WEBHOOKS_ALLOW_LOCAL_HTTP: "true" },
    });
    try {
      await stream.put(
        "/v1/webhooks/top2",
        settings({ events: ["trending.entered", "trending.left"], filter: { stream: "q" }, n: 2 }),
        admin,
      );
      await stream.post("/v1/trending/q/events", {
        events: [
          { member: "old", count: 5 },
          { member: "stays", count: 4 },
          { member: "new", count: 1 },
        ],
      });
      stream.setNow(Date.UTC(2026, 10, 22, 11, 30));
      await stream.post("/v1/trending/q/events", {
        events: [
          { member: "new", count: 9 },
          { member: "stays", count: 4 },
          { member: "old", count: 1 },
        ],
      });
      const at = Date.UTC(2026, 10, 22, 12, 5);
      const ctx = createExecutionContext();
      worker.scheduled(createScheduledController({ cron: "5 * * * *", scheduledTime: at }), stream.env, ctx);
      await waitOnExecutionContext(ctx);
      const log = (await stream.get("/v1/webhooks/top2/deliveries", admin)).body.deliveries as {
        type: string;
        outcome: string;
      }[];
      expect(log.map((d) => d.type).sort()).toEqual(["trending.entered", "trending.left"]);
      expect(log.every((d) => d.outcome === "retrying")).toBe(true);
    } finally {
      await stream.cleanup();
    }
  });

  it("documents the routes in /openapi.json", async () => {
    const doc = await api.get("/openapi.json", { key: "none" });
    expect(
      Object.keys(doc.body.paths)
        .filter((p) => p.startsWith("/v1/webhooks"))
        .sort(),
    ).toEqual(["/v1/webhooks", "/v1/webhooks/{name}", "/v1/webhooks/{name}/deliveries", "/v1/webhooks/{name}/test"]);
  });
});
