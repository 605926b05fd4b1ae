/**
 * Measures every row of test/costs/webhooks.ts in the state it names and asserts the exact round
 * trips and commands. Scripts are warmed first, so no row pays the one-off NOSCRIPT fallback. The
 * receiver is the local Upstash server, which refuses deliveries (401): a failing receiver.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { dayKeys } from "../../src/presence/keys.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import { area } from "../costs/webhooks.ts";
import { costOf, expected } from "../costs/types.ts";
import { ctxOf } from "../helpers/job-budget.ts";
import { command } from "../helpers/upstash-rest.ts";
import { cleanedUpAfterAll, createTestApi, type TestApi } from "../helpers/worker.ts";

const rows = area.rows;
const MIN = 60_000;
const HOUR = 3_600_000;
const START = Date.UTC(2026, 10, 22, 12, 30, 10);
const track = cleanedUpAfterAll<TestApi>();
const newApi = (label: string) =>
  track(createTestApi({ label, start: START, vars: { WEBHOOKS_ALLOW_LOCAL_HTTP: "true" } }));
const admin = { key: "admin" };
const settings = (api: TestApi, over: Record<string, unknown> = {}) => ({
  url: `${api.env.UPSTASH_REDIS_REST_URL}/hook`,
  events: ["leaderboard.leader"],
  secret: "0123456789abcdef-secret",
  ...over,
});
const job = (api: TestApi, name: string) => api.post(`/internal/jobs/${name}`, undefined, admin);
const leader = {
  type: "leaderboard.leader" as const,
  subject: { kind: "board" as const, name: "b" },
  data: { board: "b", player: "p" },
  key: "p",
};

async function measure(api: TestApi, fn: () => Promise<{ status: number }>) {
  const m = await api.cost(fn);
  expect(m.result.status).toBeLessThan(300);
  return costOf(m);
}

/** Runs every webhook script once on a throwaway prefix. */
beforeAll(async () => {
  const api = newApi("whcost-warm");
  await api.put(
    "/v1/webhooks/w",
    settings(api, { events: ["presence.peak", "trending.entered"], filter: undefined }),
    admin,
  );
  await api.put("/v1/webhooks/p", settings(api, { events: ["presence.peak"], filter: { room: "r" } }), admin);
  await api.put("/v1/webhooks/t", settings(api, { events: ["trending.entered"], filter: { stream: "s" } }), admin);
  await api.get("/v1/webhooks", admin);
  await api.post("/v1/webhooks/p/test", undefined, admin);
  await api.get("/v1/webhooks/p/deliveries", admin);
  await webhooks.emit(ctxOf(api), leader);
  await webhooks.emitMany(ctxOf(api), [leader]);
  await job(api, "webhooks");
  await job(api, "webhooks.trending");
  await api.del("/v1/webhooks/p", admin);
});

describe("webhook management", () => {
  const api = newApi("whcost-manage");

  it("create, replace, list, log, delete", async () => {
    expect(await measure(api, () => api.put("/v1/webhooks/h", settings(api), admin))).toEqual(expected(rows.putNew));
    expect(
      await measure(api, () => api.put("/v1/webhooks/h", settings(api, { secret: "another-secret-0123" }), admin)),
    ).toEqual(expected(rows.putReplace));
    expect(await measure(api, () => api.put("/v1/webhooks/h", settings(api, { n: 5 }), admin))).toEqual(
      expected(rows.putRefilter),
    );
    expect(await measure(api, () => api.get("/v1/webhooks", admin))).toEqual(expected(rows.list));
    expect(await measure(api, () => api.get("/v1/webhooks/h/deliveries", admin))).toEqual(expected(rows.deliveries));
    expect(await measure(api, () => api.post("/v1/webhooks/h/test", undefined, admin))).toEqual(expected(rows.test));
    expect(await measure(api, () => api.del("/v1/webhooks/h", admin))).toEqual(expected(rows.remove));
  });
});

describe("emit", () => {
  const api = newApi("whcost-emit");

  it("no subscriber, then one", async () => {
    const ok = (p: Promise<unknown>) => p.then(() => ({ status: 200 }));
    expect(await measure(api, () => ok(webhooks.emit(ctxOf(api), leader)))).toEqual(expected(rows.emitNone));
    await api.put("/v1/webhooks/h", settings(api), admin);
    expect(await measure(api, () => ok(webhooks.emit(ctxOf(api), leader)))).toEqual(expected(rows.emitOne));
    expect(await measure(api, () => ok(webhooks.emit(ctxOf(api), leader)))).toEqual(expected(rows.emitRepeat));
  });
});

describe("jobs", () => {
  it("the minute job: idle, nothing due, a steady peak, a retry", async () => {
    const api = newApi("whcost-minute");
    expect(await measure(api, () => job(api, "webhooks"))).toEqual(expected(rows.minuteIdle));
    await api.put("/v1/webhooks/h", settings(api), admin);
    expect(await measure(api, () => job(api, "webhooks"))).toEqual(expected(rows.minuteNothingDue));
    await api.put("/v1/webhooks/p", settings(api, { events: ["presence.peak"], filter: { room: "r" } }), admin);
    await command(api.target, "BITFIELD", dayKeys(api.prefix, "r", api.now).daily, "SET", "u32", 32, 3);
    await job(api, "webhooks"); // tells the peak (and fails to deliver it: due in a minute)
    expect(await measure(api, () => job(api, "webhooks"))).toEqual(expected(rows.minutePeakSteady));
    await api.del("/v1/webhooks/p", admin);
    await api.post("/v1/webhooks/h/test", undefined, admin);
    api.advance(MIN);
    await job(api, "webhooks"); // drops the deleted webhook's delivery
    api.advance(2 * MIN);
    expect(await measure(api, () => job(api, "webhooks"))).toEqual(expected(rows.minuteRetry));
  });

  it("the minute job with trending.rising: nothing rising, then a member rising", async () => {
    const api = newApi("whcost-rising");
    await api.put("/v1/webhooks/r", settings(api, { events: ["trending.rising"], filter: { stream: "s" } }), admin);
    // score 1 (1 against a baseline of 0): under the default threshold 3
    await api.post("/v1/trending/s/events", { events: [{ member: "a" }] });
    await job(api, "webhooks");
    expect(await measure(api, () => job(api, "webhooks"))).toEqual(expected(rows.minuteRisingQuiet));
    await api.post("/v1/trending/s/events", { events: [{ member: "b", count: 50 }] });
    expect(await measure(api, () => job(api, "webhooks"))).toEqual(expected(rows.minuteRisingEvent));
  });

  it("the hourly job: a steady top N, then the same hour again", async () => {
    const api = newApi("whcost-hourly");
    await api.put(
      "/v1/webhooks/t",
      settings(api, { events: ["trending.entered", "trending.left"], filter: { stream: "s" } }),
      admin,
    );
    await api.post("/v1/trending/s/events", { events: [{ member: "a", count: 2 }, { member: "b" }] });
    api.advance(HOUR);
    await api.post("/v1/trending/s/events", { events: [{ member: "a", count: 2 }, { member: "b" }] });
    api.advance(HOUR - 25 * MIN); // 14:05:10: the last two finished hours are 12:00 and 13:00
    await job(api, "compact");
    expect(await measure(api, () => job(api, "webhooks.trending"))).toEqual(expected(rows.hourlySteady));
    expect(await measure(api, () => job(api, "webhooks.trending"))).toEqual(expected(rows.hourlyAgain));
  });
});
