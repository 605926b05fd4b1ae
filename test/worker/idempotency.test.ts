/**
 * Idempotency-Key on every write of the contract: a repeat within 24 h
 * returns the first response (status and body) and writes nothing again, in
 * one Redis round trip; the same key with another body is a 409; a rejected
 * request records nothing; racing copies apply once.
 */
import { afterAll, describe, expect, it } from "vitest";
import { RECORD_MAX_RESULT_BYTES } from "../../src/redis/script.ts";
import { TEST_INGEST_KEY_2 } from "../helpers/keys.ts";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi, type TestApi } from "../helpers/worker.ts";

interface Case {
  name: string;
  method: "POST" | "PUT";
  path: string;
  body: unknown;
  other: unknown;
  /** Requests that must succeed first (a histogram, a joined player). */
  setup?: { method: "PUT"; path: string; body: unknown }[];
  /** Reads the state the write changes, as one number. */
  state: (api: TestApi) => Promise<number>;
  /**
   * Repeating the write changes nothing anyway (a heartbeat of the same ids);
   * the replayed body (`new` ids) still tells a replay from a second write.
   */
  repeatable?: boolean;
}

const CASES: Case[] = [
  {
    name: "trending events",
    method: "POST",
    path: "/v1/trending/idem/events",
    body: { events: [{ member: "a", count: 2 }, { member: "a" }] },
    other: { member: "a", count: 5 },
    state: async (api) => (await api.get("/v1/trending/idem/members/a?window=24h")).body.count,
  },
  {
    name: "counter increments",
    method: "POST",
    path: "/v1/counters/idem/incr",
    body: {
      items: [
        { member: "a", by: 3 },
        { member: "a", by: -1 },
      ],
    },
    other: { member: "a", by: 10 },
    state: async (api) => (await api.get("/v1/counters/idem/members/a")).body.score ?? 0,
  },
  {
    name: "histogram observations",
    method: "POST",
    path: "/v1/histograms/idem/observations",
    body: { values: [1, 2, 3] },
    other: { value: 4 },
    setup: [{ method: "PUT", path: "/v1/histograms/idem", body: { bucketWidth: 1 } }],
    state: async (api) => (await api.get("/v1/histograms/idem")).body.count,
  },
  {
    name: "presence heartbeats",
    method: "POST",
    path: "/v1/presence/idem/heartbeats",
    body: { ids: ["a", "b"] },
    other: { id: "c" },
    repeatable: true,
    state: async (api) => (await api.get("/v1/presence/idem")).body.online,
  },
  {
    name: "leaderboard score",
    method: "POST",
    path: "/v1/leaderboards/idem/players/p1/score",
    body: { by: 7 },
    other: { by: 100 },
    setup: [{ method: "PUT", path: "/v1/leaderboards/idem/players/p1", body: { name: "P1" } }],
    state: async (api) => (await api.get("/v1/leaderboards/idem/players/p1")).body.score,
  },
  {
    name: "leaderboard join (201 replayed as 201)",
    method: "PUT",
    path: "/v1/leaderboards/idem2/players/p1",
    body: { name: "P1", score: 5 },
    other: { name: "Other" },
    state: async (api) => (await api.get("/v1/leaderboards/idem2?limit=100")).body.total ?? 0,
  },
];

let serial = 0;
function freshKey(label: string): string {
  return `${label}-${Date.now()}-${++serial}`;
}

describe.each(CASES)("Idempotency-Key on $name", (c) => {
  const api = createTestApi({ label: `idem-${c.name.slice(0, 8)}` });
  afterAll(() => api.cleanup());

  async function setup(): Promise<void> {
    for (const step of c.setup ?? [])
      expect([200, 201]).toContain((await api.call(step.method, step.path, step.body, { key: "admin" })).status);
  }

  async function send(key: string | undefined, body: unknown = c.body) {
    return api.call(c.method, c.path, body, key === undefined ? {} : { headers: { "idempotency-key": key } });
  }

  it("replays the first response (status, body) on a repeat and writes nothing again, in one round trip", async () => {
    await setup();
    const key = freshKey("replay");
    const before = await c.state(api);
    const first = await send(key);
    expect([200, 201]).toContain(first.status);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const afterFirst = await c.state(api);
    expect(afterFirst).not.toBe(before);
    const keysAfterFirst = await api.keys();
    for (let i = 0; i < 3; i++) {
      const { result: again, requests } = await api.cost(() => send(key));
      expect(again.status).toBe(first.status);
      expect(again.body).toEqual(first.body);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(requests).toBe(1);
    }
    expect(await c.state(api)).toBe(afterFirst);
    expect(await api.keys()).toEqual(keysAfterFirst);
    // Without a key the same request is a new write.
    expect([200, 201]).toContain((await send(undefined)).status);
    if (c.method === "POST" && !c.repeatable) expect(await c.state(api)).not.toBe(afterFirst);
  });

  it("answers 409 for the same key with a different body, writing nothing", async () => {
    await setup();
    const key = freshKey("conflict");
    expect([200, 201]).toContain((await send(key)).status);
    const state = await c.state(api);
    const keys = await api.keys();
    const conflict = await send(key, c.other);
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.code).toBe("idempotency_key_reused");
    expect(await c.state(api)).toBe(state);
    expect(await api.keys()).toEqual(keys);
  });

  it("records nothing for a rejected request, so the corrected retry with the same key applies", async () => {
    await setup();
    const key = freshKey("rejected");
    const idemBefore = (await api.keys()).filter((k) => k.includes(":idem:"));
    const bad = await send(key, { nonsense: true });
    expect(bad.status).toBe(400);
    expect((await api.keys()).filter((k) => k.includes(":idem:"))).toEqual(idemBefore);
    const state = await c.state(api);
    const good = await send(key);
    expect([200, 201]).toContain(good.status);
    expect(good.headers.get("idempotent-replayed")).toBeNull();
    if (c.method === "POST" && !c.repeatable) expect(await c.state(api)).not.toBe(state);
  });

  it("keeps the record 24 h under the key prefix", async () => {
    await setup();
    const before = new Set(await api.keys());
    await send(freshKey("ttl"));
    const created = (await api.keys()).filter((k) => !before.has(k) && k.startsWith(`${api.prefix}:idem:`));
    expect(created).toHaveLength(1);
    const ttl = await command<number>(api.target, "TTL", created[0] ?? "");
    expect(ttl).toBeGreaterThan(86_400 - 120);
    expect(ttl).toBeLessThanOrEqual(86_400);
  });

  it("applies 20 racing copies of one key exactly once", async () => {
    await setup();
    const key = freshKey("race");
    const before = await c.state(api);
    const results = await Promise.all(Array.from({ length: 20 }, () => send(key)));
    const fresh = results.filter((r) => r.headers.get("idempotent-replayed") !== "true");
    expect(fresh).toHaveLength(1);
    for (const r of results) expect(r.body).toEqual(fresh[0]?.body);
    const once = await c.state(api);
    // One more plain write moves the state by exactly what the raced one did.
    await send(undefined);
    if (c.method === "POST" && !c.repeatable) expect((await c.state(api)) - once).toBe(once - before);
  });
});

describe("Idempotency-Key scope", () => {
  const api = createTestApi({ label: "idem-scope" });
  afterAll(() => api.cleanup());

  it("is per path: the same key on two counters is two writes", async () => {
    const key = freshKey("scope");
    const a = await api.post("/v1/counters/one/incr", { member: "m" }, { headers: { "idempotency-key": key } });
    const b = await api.post("/v1/counters/two/incr", { member: "m" }, { headers: { "idempotency-key": key } });
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(b.headers.get("idempotent-replayed")).toBeNull();
    expect((await api.get("/v1/counters/one/members/m")).body.score).toBe(1);
    expect((await api.get("/v1/counters/two/members/m")).body.score).toBe(1);
  });

  it("compares the body as JSON: the same JSON written another way is a replay; another body a 409, writing nothing", async () => {
    // (a request matches a record by its raw bytes' digest or its canonical JSON's: a retry that
    // re-serializes is the same request, as Stripe compares parameters; docs/ingest.md. More in
    // test/worker/idempotency-canonical.test.ts)
    const key = freshKey("bytes");
    const headers = { "idempotency-key": key, "content-type": "application/json" };
    const first = await api.post("/v1/counters/bytes/incr", undefined, { headers, raw: '{"member":"m","by":5}' });
    expect(first.status).toBe(200);
    const same = await api.post("/v1/counters/bytes/incr", undefined, { headers, raw: '{"member":"m","by":5}' });
    expect([same.status, same.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    const reordered = await api.post("/v1/counters/bytes/incr", undefined, {
      headers,
      raw: '{ "by": 5, "member": "m" }',
    });
    expect([reordered.status, reordered.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    expect(reordered.body).toEqual(first.body);
    const other = await api.post("/v1/counters/bytes/incr", undefined, { headers, raw: '{ "by": 6, "member": "m" }' });
    expect(other.status).toBe(409);
    expect((await api.get("/v1/counters/bytes/members/m")).body.score).toBe(5);
  });

  it("refuses malformed keys before writing anything", async () => {
    for (const key of ["", "has space", "é", "x".repeat(256), "tab\there"]) {
      const res = await api.post("/v1/counters/bad/incr", { member: "m" }, { headers: { "idempotency-key": key } });
      expect({ key, status: res.status }).toEqual({ key, status: 400 });
    }
    expect((await api.keys()).filter((k) => k.includes(":bad"))).toEqual([]);
  });
});

describe("Idempotency-Key belongs to its caller", () => {
  const api = createTestApi({ label: "idem-caller" });
  afterAll(() => api.cleanup());
  const idemKeys = async () => (await api.keys()).filter((k) => k.startsWith(`${api.prefix}:idem:`));
  const score = async (member: string) => (await api.get(`/v1/counters/shared/members/${member}`)).body.score ?? 0;

  it("attack: a second API key sending another caller's Idempotency-Key is neither blocked (409) nor served the first caller's response", async () => {
    const key = freshKey("shared");
    const mine = await api.post(
      "/v1/counters/shared/incr",
      { member: "a", by: 2 },
      { headers: { "idempotency-key": key } },
    );
    expect(mine.status).toBe(200);
    // Same key, same body, other API key: a write of its own, not a replay.
    const same = await api.post(
      "/v1/counters/shared/incr",
      { member: "a", by: 2 },
      { key: TEST_INGEST_KEY_2, headers: { "idempotency-key": key } },
    );
    expect(same.status).toBe(200);
    expect(same.headers.get("idempotent-replayed")).toBeNull();
    expect(await score("a")).toBe(4);
    // Same key, other body, a third API key: applied, not a 409.
    const other = await api.post(
      "/v1/counters/shared/incr",
      { member: "b", by: 5 },
      { key: "admin", headers: { "idempotency-key": key } },
    );
    expect(other.status).toBe(200);
    expect(await score("b")).toBe(5);
    expect(await idemKeys()).toHaveLength(3);
    // Each caller's own retry is still a replay.
    for (const k of ["ingest", TEST_INGEST_KEY_2]) {
      const again = await api.post(
        "/v1/counters/shared/incr",
        { member: "a", by: 2 },
        { key: k, headers: { "idempotency-key": key } },
      );
      expect(again.headers.get("idempotent-replayed")).toBe("true");
    }
    expect(await score("a")).toBe(4);
  });

  it("the record key holds no API key: it is a SHA-256 of a digest of the key, the method, the path and the header", async () => {
    await api.post("/v1/counters/shared/incr", { member: "c" }, { headers: { "idempotency-key": freshKey("opaque") } });
    for (const k of await idemKeys()) {
      expect(k).toMatch(new RegExp(`^${api.prefix.replace(/\./g, "\\.")}:idem:[0-9a-f]{64}$`));
      const value = await command<string>(api.target, "GET", k);
      expect(value).not.toContain("test-ingest");
    }
  });
});

describe("Idempotency record cap", () => {
  const api = createTestApi({ label: "idem-cap" });
  afterAll(() => api.cleanup());
  const idemKeys = async () => (await api.keys()).filter((k) => k.startsWith(`${api.prefix}:idem:`));

  it("attack: a 1,000-item batch cannot make its 24 h idempotency record larger than the cap; the replay is a marked summary", async () => {
    const key = freshKey("big");
    const items = Array.from({ length: 1000 }, (_, i) => ({
      member: `member-with-a-longish-name-${i}`,
      by: 123_456_789 + i,
    }));
    const first = await api.post("/v1/counters/big/incr", { items }, { headers: { "idempotency-key": key } });
    expect(first.status).toBe(200);
    expect(first.body.results).toHaveLength(1000);
    expect(JSON.stringify(first.body).length).toBeGreaterThan(20_000);
    const [record] = await idemKeys();
    const bytes = await command<number>(api.target, "STRLEN", record ?? "");
    // fingerprint (64) + newline + '"summary":{...}' (about 100 bytes)
    expect(bytes).toBeLessThanOrEqual(RECORD_MAX_RESULT_BYTES);
    expect(bytes).toBeLessThan(256);
    const keysBefore = await api.keys();
    const { result: replay, requests } = await api.cost(() =>
      api.post("/v1/counters/big/incr", { items }, { headers: { "idempotency-key": key } }),
    );
    expect(requests).toBe(1);
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.headers.get("idempotent-summarised")).toBe("true");
    expect(replay.body.replayed).toBe(true);
    expect(replay.body.summarised).toBe(true);
    expect(replay.body.summary.items).toBe(1000);
    expect(replay.body.summary.bytes).toBeGreaterThan(RECORD_MAX_RESULT_BYTES);
    expect(replay.body.summary.sha1).toMatch(/^[0-9a-f]{40}$/);
    // Applied once: the replay wrote nothing.
    expect(await api.keys()).toEqual(keysBefore);
    expect((await api.get("/v1/counters/big/members/member-with-a-longish-name-7")).body.score).toBe(123_456_796);
    // Another body under the same key is still a 409.
    const conflict = await api.post(
      "/v1/counters/big/incr",
      { items: items.slice(1) },
      { headers: { "idempotency-key": key } },
    );
    expect(conflict.status).toBe(409);
  });

  it("a response up to the cap is stored and replayed byte for byte", async () => {
    const key = freshKey("small");
    const items = Array.from({ length: 20 }, (_, i) => ({ member: `m${i}` }));
    const first = await api.post("/v1/counters/small/incr", { items }, { headers: { "idempotency-key": key } });
    const again = await api.post("/v1/counters/small/incr", { items }, { headers: { "idempotency-key": key } });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("idempotent-summarised")).toBeNull();
    expect(again.body).toEqual(first.body);
  });
});

describe("refusals decided inside the write script record nothing", () => {
  const api = createTestApi({ label: "idem-refused" });
  afterAll(() => api.cleanup());

  const idemKeys = async () => (await api.keys()).filter((k) => k.startsWith(`${api.prefix}:idem:`));

  it("a score change for a player who has not joined (404) can be retried with its key once the player joins", async () => {
    const key = freshKey("refused-404");
    const refused = await api.post(
      "/v1/leaderboards/refused/players/late/score",
      { by: 3 },
      { headers: { "idempotency-key": key } },
    );
    expect(refused.status).toBe(404);
    expect(await idemKeys()).toEqual([]);
    expect((await api.put("/v1/leaderboards/refused/players/late", { name: "Late" })).status).toBe(201);
    const retried = await api.post(
      "/v1/leaderboards/refused/players/late/score",
      { by: 3 },
      { headers: { "idempotency-key": key } },
    );
    expect(retried.status).toBe(200);
    expect(retried.headers.get("idempotent-replayed")).toBeNull();
    expect(retried.body.score).toBe(3);
  });

  it("a batch refused for one unknown player can be retried with its key", async () => {
    await api.put("/v1/leaderboards/refused2/players/a", { name: "A" });
    const key = freshKey("refused-batch");
    const body = {
      items: [
        { player: "a", by: 1 },
        { player: "b", by: 1 },
      ],
    };
    expect(
      (await api.post("/v1/leaderboards/refused2/scores", body, { headers: { "idempotency-key": key } })).status,
    ).toBe(404);
    expect((await api.get("/v1/leaderboards/refused2/players/a")).body.score).toBe(0);
    await api.put("/v1/leaderboards/refused2/players/b", { name: "B" });
    const retried = await api.post("/v1/leaderboards/refused2/scores", body, { headers: { "idempotency-key": key } });
    expect(retried.status).toBe(200);
    expect((await api.get("/v1/leaderboards/refused2/players/a")).body.score).toBe(1);
  });

  it("observations for a histogram not defined yet (404) can be retried with their key once it is", async () => {
    const key = freshKey("refused-hist");
    const before = await idemKeys();
    const refused = await api.post(
      "/v1/histograms/refused/observations",
      { value: 1 },
      { headers: { "idempotency-key": key } },
    );
    expect(refused.status).toBe(404);
    // observe records its result before it runs (resultUpFront): the refusal took the record back
    expect(await idemKeys()).toEqual(before);
    await api.put("/v1/histograms/refused", { bucketWidth: 1 }, { key: "admin" });
    const retried = await api.post(
      "/v1/histograms/refused/observations",
      { value: 1 },
      { headers: { "idempotency-key": key } },
    );
    expect(retried.status).toBe(200);
    expect((await api.get("/v1/histograms/refused")).body.count).toBe(1);
  });

  it("observations refused inside the script (a value too far from zero) can be retried with their key", async () => {
    await api.put("/v1/histograms/refused-range", { bucketWidth: 0.001 }, { key: "admin" });
    const key = freshKey("refused-range");
    const headers = { "idempotency-key": key };
    const before = await idemKeys();
    const refused = await api.post("/v1/histograms/refused-range/observations", { values: [1, 1e15] }, { headers });
    expect(refused.status).toBe(400);
    expect(await idemKeys()).toEqual(before);
    const retried = await api.post("/v1/histograms/refused-range/observations", { values: [1, 2] }, { headers });
    expect(retried.status).toBe(200);
    expect(retried.headers.get("idempotent-replayed")).toBeNull();
    expect((await api.get("/v1/histograms/refused-range")).body.count).toBe(2);
  });
});
