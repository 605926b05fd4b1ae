/**
 * Review 18: webhook events fire exactly at their transitions, through the HTTP API inside workerd
 * (the receiver is the local Upstash server, which answers every delivery 401, so each event stays
 * in the delivery log, which says which events were queued): `leaderboard.leader` only when the #1
 * changes (a tie does not take the lead under `joined`), `presence.peak` only above the peak told,
 * and GET /v1/webhooks never answering the secret. The delivery half (signature, retries, QStash)
 * needs Node's HTTP servers: test/redis/review18-webhooks.test.ts.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createTestApi } from "../helpers/worker.ts";

const api = createTestApi({
  label: "rv18-wh",
  start: Date.UTC(2026, 10, 28, 9, 10, 20),
  vars: { WEBHOOKS_ALLOW_LOCAL_HTTP: "true" },
});
afterAll(() => api.cleanup());
const admin = { key: "admin" };
const SECRET = "review18-worker-secret-NOT-ECHOED";
const URL_ = `${api.env.UPSTASH_REDIS_REST_URL}/rv18-hook`;

/** The distinct events of a webhook's delivery log (each attempt is an entry), oldest first. */
const eventsOf = async (name: string) => {
  const log = (await api.get(`/v1/webhooks/${name}/deliveries`, admin)).body.deliveries as {
    type: string;
    event: string;
  }[];
  const seen = new Map<string, { type: string; event: string }>();
  for (const d of [...log].reverse()) if (!seen.has(d.event)) seen.set(d.event, d);
  return [...seen.values()];
};

describe("review 18: events at their transitions", () => {
  it("leaderboard.leader: the first #1, a takeover, a tie that does not take the lead, a self-demotion", async () => {
    const put = await api.put(
      "/v1/webhooks/lead",
      { url: URL_, events: ["leaderboard.leader"], filter: { board: "b" }, secret: SECRET },
      admin,
    );
    expect(put.status).toBe(201);
    const listed = await api.get("/v1/webhooks", admin);
    expect(JSON.stringify(listed.body)).not.toContain(SECRET);
    expect(listed.body.webhooks[0]).not.toHaveProperty("secret");

    await api.put("/v1/leaderboards/b/players/p1", { name: "one" });
    await api.put("/v1/leaderboards/b/players/p2", { name: "two" });
    const score = (p: string, body: unknown) => api.post(`/v1/leaderboards/b/players/${p}/score`, body);
    // each step and whether it changes the #1 (ties ranked by `joined`: the earlier joiner first)
    const steps: [string, unknown, string | null][] = [
      ["p1", { by: 10 }, "p1"], // first #1
      ["p2", { by: 5 }, null], // behind
      ["p2", { by: 5 }, null], // equals p1: p1 joined first and stays #1
      ["p2", { by: 1 }, "p2"], // takes the lead
      ["p1", { by: 1 }, "p1"], // equals p2: p1 joined first, so ranks #1 again
      ["p2", { by: -1 }, null], // the runner-up lowers itself
    ];
    for (const [player, body] of steps) expect((await score(player, body)).status).toBe(200);
    expect((await api.post("/internal/jobs/webhooks", undefined, admin)).status).toBe(200);
    const events = await eventsOf("lead");
    expect(events.map((e) => e.type)).toEqual(["leaderboard.leader", "leaderboard.leader", "leaderboard.leader"]);
  });

  it("presence.peak: only a new high of the day fires; the same peak again does not", async () => {
    await api.put(
      "/v1/webhooks/peak",
      { url: URL_, events: ["presence.peak"], filter: { room: "r" }, secret: SECRET },
      admin,
    );
    const job = () => api.post("/internal/jobs/webhooks", undefined, admin);
    await api.post("/v1/presence/r/heartbeats", { ids: ["a", "b"] });
    expect((await job()).body.result).toMatchObject({ events: 1 });
    api.advance(60_000);
    await api.post("/v1/presence/r/heartbeats", { ids: ["a", "b"] });
    expect((await job()).body.result).toMatchObject({ events: 0 });
    api.advance(60_000);
    await api.post("/v1/presence/r/heartbeats", { ids: ["a", "b", "c"] });
    expect((await job()).body.result).toMatchObject({ events: 1 });
    expect((await eventsOf("peak")).map((d) => d.type)).toEqual(["presence.peak", "presence.peak"]);
  });
});
