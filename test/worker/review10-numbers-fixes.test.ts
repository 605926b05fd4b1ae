/**
 * The fixes of review 10 (numbers) in leaderboards, webhooks and integer query parameters, past
 * what test/worker/review10-numbers.test.ts asserts: settings written by older versions (guards
 * rounded to 14 significant digits, webhook JSON re-encoded by cjson) still read and enforce as
 * they say; refusals name the exact bound; a replaced webhook keeps its createdAt; integer query
 * values other than plain decimal digits are a 400 on prechecked and zod-only routes alike.
 */
import { afterAll, describe, expect, it } from "vitest";
import { boardKeys } from "../../src/leaderboards/keys.ts";
import { registryKeys } from "../../src/webhooks/keys.ts";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "r10fix-w", start: "2026-11-22T12:30:00Z" });
afterAll(() => api.cleanup());
const admin = { key: "admin" };

describe("leaderboard guards", () => {
  it("settings an older version stored (14 significant digits, '1e+15') read and enforce as they say", async () => {
    expect((await api.put("/v1/leaderboards/old", { maxScore: 5 }, admin)).status).toBe(200);
    await api.put("/v1/leaderboards/old/players/p", { name: "P" });
    // what Lua's number-to-text made of -1e15 and 123456789012.34567
    const legacy = "n|12|-1e+15|123456789012.35|";
    const k = boardKeys(api.prefix, "old");
    await command(api.target, "HSET", k.settings, "cfg", legacy);
    await command(api.target, "HSET", k.players, "_cfg", legacy);
    const got = (await api.get("/v1/leaderboards/old/count")).body;
    expect([got.minScore, got.maxScore, got.maxIncrement]).toEqual([-1e15, 123456789012.35, null]);
    const over = await api.post("/v1/leaderboards/old/players/p/score", { set: 123456789012.36 });
    expect(over.status).toBe(422);
    expect(over.body.error.message).toContain("maxScore 123456789012.35");
    expect((await api.post("/v1/leaderboards/old/players/p/score", { set: 123456789012.35 })).status).toBe(200);
    // changing another guard keeps the stored texts as they were
    const put = await api.put("/v1/leaderboards/old", { maxIncrement: 0.1 + 0.2 }, admin);
    expect([put.body.minScore, put.body.maxScore, put.body.maxIncrement]).toEqual([
      -1e15, 123456789012.35, 0.30000000000000004,
    ]);
    expect(await command(api.target, "HGET", k.settings, "cfg")).toBe(
      "n|12|-1e+15|123456789012.35|0.30000000000000004",
    );
    expect(await command(api.target, "HGET", k.players, "_cfg")).toBe(
      "n|12|-1e+15|123456789012.35|0.30000000000000004",
    );
  });

  it("a refusal names the guard as sent; null clears one", async () => {
    const put = await api.put("/v1/leaderboards/exact", { minScore: -1e-7, maxIncrement: 0.1 + 0.2 }, admin);
    expect([put.body.minScore, put.body.maxIncrement]).toEqual([-1e-7, 0.30000000000000004]);
    await api.put("/v1/leaderboards/exact/players/p", { name: "P" });
    const tooMuch = await api.post("/v1/leaderboards/exact/players/p/score", { by: 0.3000000000000001 });
    expect(tooMuch.status).toBe(422);
    expect(tooMuch.body.error.message).toContain("maxIncrement 0.30000000000000004");
    const below = await api.post("/v1/leaderboards/exact/players/p/score", { set: -1.0000000000000001e-7 });
    expect(below.status).toBe(422);
    expect(below.body.error.message).toContain("minScore -1e-7");
    expect((await api.post("/v1/leaderboards/exact/players/p/score", { set: -1e-7 })).status).toBe(200);
    const read = (await api.get("/v1/leaderboards/exact/count")).body;
    expect([read.minScore, read.maxIncrement]).toEqual([-1e-7, 0.30000000000000004]);
    const cleared = await api.put("/v1/leaderboards/exact", { minScore: null }, admin);
    expect([cleared.body.minScore, cleared.body.maxIncrement]).toEqual([null, 0.30000000000000004]);
  });
});

describe("webhook settings", () => {
  const hook = {
    url: "https://example.com/hook",
    secret: "s".repeat(16),
    filter: { stream: "s" },
    events: ["trending.rising"],
  };

  it("a replace keeps createdAt and stores the threshold as sent; an older cjson record is replaced too", async () => {
    const first = await api.put("/v1/webhooks/keep", { ...hook, threshold: 0.1 + 0.2 }, admin);
    expect(first.status).toBe(201);
    api.advance(60_000);
    const again = await api.put("/v1/webhooks/keep", { ...hook, threshold: 1.2345678901234567 }, admin);
    expect(again.status).toBe(200);
    expect(again.body.webhook.createdAt).toBe(first.body.webhook.createdAt);
    expect(again.body.webhook.updatedAt).toBe(first.body.webhook.updatedAt + 60_000);
    const hooks = registryKeys(api.prefix).hooks;
    const stored = JSON.parse(await command<string>(api.target, "HGET", hooks, "keep")) as Record<string, unknown>;
    expect([stored.threshold, stored.createdAt, stored.updatedAt]).toEqual([
      1.2345678901234567,
      first.body.webhook.createdAt,
      first.body.webhook.updatedAt + 60_000,
    ]);
    // as an older version wrote it: cjson's 14 significant digits
    const legacy = JSON.stringify({ ...stored, threshold: 1.2345678901235 });
    await command(api.target, "HSET", hooks, "keep", legacy);
    const listed = (await api.get("/v1/webhooks", admin)).body.webhooks as { name: string; threshold: number }[];
    expect(listed.find((w) => w.name === "keep")?.threshold).toBe(1.2345678901235);
    const replaced = await api.put("/v1/webhooks/keep", { ...hook, threshold: 2 }, admin);
    expect([replaced.status, replaced.body.webhook.createdAt]).toEqual([200, first.body.webhook.createdAt]);
  });
});

describe("integer query parameters", () => {
  it("only decimal digits: a sign, a fraction, an exponent or padding is a 400 on every kind of route", async () => {
    await api.put("/v1/leaderboards/q/players/p", { name: "P" });
    await api.post("/v1/trending/q/events", { member: "m" });
    // page (prechecked), k (zod only), hours (its own schema, prechecked)
    const paths = [
      "/v1/leaderboards/q?page=",
      "/v1/leaderboards/q/players/p/around?k=",
      "/v1/trending/q/history?member=m&hours=",
    ];
    const got: Record<string, number> = {};
    for (const path of paths)
      for (const v of ["-0", "+1", "1e0", "1.0", "0x1", "%201", "1%20"])
        got[path + v] = (await api.get(path + v)).status;
    expect(Object.entries(got).filter(([, s]) => s !== 400)).toEqual([]);
    // leading zeros are still decimal digits
    for (const path of paths) expect((await api.get(path + "01")).status, path).toBe(200);
  });
});
