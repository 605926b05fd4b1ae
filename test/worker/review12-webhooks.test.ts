/**
 * Review 12, webhooks inside workerd: the minute cron, a QStash-signed schedule call and QStash's
 * redelivery of that same signed request (duplicate callbacks), all at one instant, minute after
 * minute, must make each due delivery one attempt per run; a replayed test event (Idempotency-Key)
 * is one attempt; a read or ingest key can neither change nor run anything of the webhooks. The
 * receiver is the local Upstash server, which refuses every delivery (401): a failing receiver
 * whose retries the log must show exactly (docs/webhooks.md "Delivery").
 */
import { afterAll, describe, expect, it } from "vitest";
import { runScheduled } from "../../functions/scheduled.ts";
import { TEST_SIGNING_KEYS } from "../helpers/keys.ts";
import { signQstash } from "../helpers/qstash-sign.ts";
import { createTestApi } from "../helpers/worker.ts";

const SECRET = "review12-worker-secret-0123";
const admin = { key: "admin" };

describe("duplicate job calls at one instant: cron, QStash schedule, QStash redelivery", () => {
  const api = createTestApi({
    label: "rv12-dup",
    start: Date.UTC(2026, 10, 24, 9, 0, 20),
    vars: { WEBHOOKS_ALLOW_LOCAL_HTTP: "true" },
  });
  afterAll(() => api.cleanup());
  const NOWHERE = `${api.env.UPSTASH_REDIS_REST_URL}/rv12-hook`;

  it("each due delivery is attempted once per minute, retried after 1, 2, 4 minutes, one log entry per attempt", async () => {
    expect(
      (
        await api.put(
          "/v1/webhooks/peaks",
          { url: NOWHERE, events: ["presence.peak"], filter: { room: "hall" }, secret: SECRET },
          admin,
        )
      ).status,
    ).toBe(201);
    expect((await api.post("/v1/presence/hall/heartbeats", { ids: ["a", "b"] })).status).toBeLessThan(300);
    const start = api.now;
    // QStash signs the schedule's request once and redelivers the very same request on a retry
    const signature = await signQstash(TEST_SIGNING_KEYS.current, { url: "http://localhost/internal/jobs/webhooks" });
    const signed = () =>
      api.post("/internal/jobs/webhooks", undefined, { key: "none", headers: { "upstash-signature": signature } });
    const attemptsAt: number[] = [];
    for (const minute of [0, 1, 2, 3, 4, 5, 6, 7]) {
      api.setNow(start + minute * 60_000 + 10_000);
      const now = api.now;
      const [cron, first, again] = await Promise.all([runScheduled("* * * * *", now, api.env), signed(), signed()]);
      expect(first.status).toBe(200);
      expect(again.status).toBe(200);
      const results = [(cron as { webhooks: Record<string, number> }).webhooks, first.body.result, again.body.result];
      const claimed = results.reduce((s, r) => s + Number(r.claimed ?? 0), 0);
      const events = results.reduce((s, r) => s + Number(r.events ?? 0), 0);
      expect(events, `minute ${minute}: the peak found once`).toBe(minute === 0 ? 1 : 0);
      if (claimed > 0) attemptsAt.push(minute);
      expect(claimed, `minute ${minute}`).toBeLessThanOrEqual(1);
    }
    // due at 0, then 1, 2 and 4 minutes after each attempt: minutes 0, 1, 3, 7
    expect(attemptsAt).toEqual([0, 1, 3, 7]);
    const log = (await api.get("/v1/webhooks/peaks/deliveries", admin)).body.deliveries as Record<string, unknown>[];
    expect(log.map((e) => [e.attempt, e.outcome, e.status])).toEqual([
      [4, "retrying", 401],
      [3, "retrying", 401],
      [2, "retrying", 401],
      [1, "retrying", 401],
    ]);
    expect(log.map((e) => e.retryAt)).toEqual(
      [7, 3, 1, 0].map((m, i) => start + m * 60_000 + 10_000 + 60_000 * 2 ** (3 - i)),
    );
    expect(JSON.stringify(log)).not.toContain(SECRET);
  });

  it("a test event replayed with its Idempotency-Key is one attempt, and the job beside it does not send it again", async () => {
    await api.put("/v1/webhooks/probe", { url: NOWHERE, events: ["leaderboard.leader"], secret: SECRET }, admin);
    const headers = { "idempotency-key": "rv12-test-1" };
    const [a, b, job] = await Promise.all([
      api.post("/v1/webhooks/probe/test", undefined, { ...admin, headers }),
      api.post("/v1/webhooks/probe/test", undefined, { ...admin, headers }),
      api.post("/internal/jobs/webhooks", undefined, admin),
    ]);
    expect([a.status, b.status, job.status]).toEqual([202, 202, 200]);
    expect(b.body.id).toBe(a.body.id);
    const log = (await api.get("/v1/webhooks/probe/deliveries", admin)).body.deliveries as Record<string, unknown>[];
    expect(log.map((e) => [e.event, e.attempt, e.outcome])).toEqual([[a.body.id, 1, "retrying"]]);
  });
});

describe("scopes: read and ingest keys", () => {
  const api = createTestApi({ label: "rv12-scope", vars: { WEBHOOKS_ALLOW_LOCAL_HTTP: "true" } });
  afterAll(() => api.cleanup());
  const NOWHERE = `${api.env.UPSTASH_REDIS_REST_URL}/rv12-scope`;

  it("cannot replace, delete, test, read or run an admin's webhook, and leave it and its log as they were", async () => {
    const settings = { url: NOWHERE, events: ["leaderboard.leader"], secret: SECRET };
    await api.put("/v1/webhooks/owned", settings, admin);
    await api.post("/v1/webhooks/owned/test", undefined, admin);
    const before = {
      list: (await api.get("/v1/webhooks", admin)).body,
      log: (await api.get("/v1/webhooks/owned/deliveries", admin)).body,
    };
    const keysBefore = await api.keys();
    const other = { ...settings, url: `${NOWHERE}/stolen`, secret: "another-secret-0123456789" };
    for (const key of ["read", "ingest"]) {
      const calls = [
        api.put("/v1/webhooks/owned", other, { key }),
        api.put("/v1/webhooks/mine", other, { key }),
        api.del("/v1/webhooks/owned", { key }),
        api.post("/v1/webhooks/owned/test", undefined, { key }),
        api.get("/v1/webhooks", { key }),
        api.get("/v1/webhooks/owned/deliveries", { key }),
        api.post("/internal/jobs/webhooks", undefined, { key }),
        api.post("/internal/jobs/webhooks.trending", undefined, { key }),
      ];
      for (const res of await Promise.all(calls)) {
        expect([401, 403]).toContain(res.status);
        expect(JSON.stringify(res.body)).not.toContain(NOWHERE);
      }
    }
    expect(await api.keys()).toEqual(keysBefore);
    expect((await api.get("/v1/webhooks", admin)).body).toEqual(before.list);
    expect((await api.get("/v1/webhooks/owned/deliveries", admin)).body).toEqual(before.log);
  });
});
