/**
 * Adversarial review of the trending top-N edge cache (functions/edge-cache.ts): a cached answer
 * must never reach a request the API refuses, nor a different query, deployment or hour; errors
 * are never cached; the headers tell the client what it got. Uses the harness of
 * trending-edge-cache.test.ts: a custom-domain host (the Cache API does nothing on *.workers.dev).
 */
import { describe, expect, it } from "vitest";
import { cleanedUpAfterAll, createTestApi, TEST_KEYS, type TestApi } from "../helpers/worker.ts";

const HOST = "https://stats.example.com";
const track = cleanedUpAfterAll<TestApi>();
const api = track(createTestApi({ label: "review-edge", vars: { TRENDING_CACHE_SECONDS: "30" } }));

/** Writes `members` (a: 5, b: 4, …) to `stream`. */
async function seed(on: TestApi, stream: string, members = ["a", "b", "c", "d", "e"]) {
  const events = members.flatMap((member, i) => Array.from({ length: members.length - i }, () => ({ member })));
  expect((await on.post(`/v1/trending/${stream}/events`, { events })).status).toBe(200);
}

const cacheOf = (res: { headers: Headers }) => res.headers.get("x-edgestats-cache");

describe("review: the edge cache never serves a refused request", () => {
  it("after a cached answer, no key / unknown key / near-miss key is 401, ingest is 403, admin from the dashboard is 403, without Redis and without the data", async () => {
    await seed(api, "ec1");
    const url = `${HOST}/v1/trending/ec1/top?n=5&window=24h`;
    expect(cacheOf(await api.get(url))).toBe("miss");
    expect(cacheOf(await api.get(url))).toBe("hit");
    const attempts: { key: string; status: number; headers?: Record<string, string> }[] = [
      { key: "none", status: 401 },
      { key: "not-a-key-at-all-000", status: 401 },
      { key: TEST_KEYS.read.slice(0, -1), status: 401 },
      { key: "ingest", status: 403 },
      { key: "admin", status: 403, headers: { "x-edgestats-client": "dashboard" } },
    ];
    for (const a of attempts) {
      const { result, requests } = await api.cost(() =>
        api.get(url, { key: a.key, ...(a.headers ? { headers: a.headers } : {}) }),
      );
      expect({ key: a.key, status: result.status, requests }).toEqual({ key: a.key, status: a.status, requests: 0 });
      expect(cacheOf(result)).toBeNull();
      // every /v1 answer without a cache policy of its own says no-store (functions/middleware/request.ts)
      expect(result.headers.get("cache-control")).toBe("private, no-store");
      expect(JSON.stringify(result.body)).not.toContain('"member"');
    }
    // the same refusals with the cache's own headers: a client cannot ask its way past auth
    for (const headers of [{ "cache-control": "max-age=3600" }, { "cache-control": "only-if-cached" }]) {
      const res = await api.get(url, { key: "none", headers });
      expect(res.status).toBe(401);
    }
    // and the admin key (any scope that holds read) gets the cached answer
    expect(cacheOf(await api.get(url, { key: "admin" }))).toBe("hit");
  });
});

describe("review: a cached answer only answers its own query", () => {
  it("spellings of the same query share an entry; other n, window, stream or case do not", async () => {
    await seed(api, "ec2");
    const base = `${HOST}/v1/trending/ec2/top`;
    const first = await api.get(`${base}?n=3&window=24h`);
    expect(cacheOf(first)).toBe("miss");
    expect(first.body.items).toHaveLength(3);
    for (const q of ["?window=24h&n=3", "?n=3&window=1d", "?n=3&window=24h&unknown=1", "?n=3&window=24h&"]) {
      const res = await api.get(`${base}${q}`);
      expect({ q, status: res.status, cache: cacheOf(res) }).toEqual({ q, status: 200, cache: "hit" });
      expect(res.body).toEqual(first.body);
    }
    for (const q of ["?n=4&window=24h", "?n=3&window=48h", "?n=3"]) {
      const res = await api.get(`${base}${q}`);
      // ?n=3 alone is window=24h by default: it may share the entry; the others may not
      if (q === "?n=3") {
        expect(res.body.items).toEqual(first.body.items);
        continue;
      }
      expect({ q, cache: cacheOf(res) }).toEqual({ q, cache: "miss" });
    }
    expect((await api.get(`${base}?n=4&window=24h`)).body.items).toHaveLength(4);
    // another stream, or the same name in another case, is another entry with its own data
    await seed(api, "EC2", ["z"]);
    const other = await api.get(`${HOST}/v1/trending/EC2/top?n=3&window=24h`);
    expect(cacheOf(other)).toBe("miss");
    expect(other.body.items).toEqual([{ rank: 1, member: "z", count: 1 }]);
  });

  it("a repeated parameter is a 400 (never a cached answer of one of its values), also after both values were cached", async () => {
    await seed(api, "ec3");
    for (const q of ["?n=2&window=24h", "?n=4&window=24h", "?n=2&window=48h"])
      expect((await api.get(`${HOST}/v1/trending/ec3/top${q}`)).status).toBe(200);
    for (const q of [
      "?n=2&n=4&window=24h",
      "?n=4&n=2&window=24h",
      "?n=2&window=24h&window=48h",
      "?n=2&n=2&window=24h",
    ]) {
      const res = await api.get(`${HOST}/v1/trending/ec3/top${q}`);
      expect({ q, status: res.status, cache: cacheOf(res) }).toEqual({ q, status: 400, cache: null });
      expect(res.body.error.code).toBe("invalid_request");
    }
  });

  it("deployments (key prefixes) never share an entry, even for the same host, stream and query", async () => {
    const other = track(createTestApi({ label: "review-edge-2", vars: { TRENDING_CACHE_SECONDS: "30" } }));
    await seed(api, "ec4", ["mine"]);
    await seed(other, "ec4", ["theirs"]);
    const url = `${HOST}/v1/trending/ec4/top?n=5&window=24h`;
    expect((await api.get(url)).body.items[0].member).toBe("mine");
    const theirs = await other.get(url);
    expect(cacheOf(theirs)).toBe("miss");
    expect(theirs.body.items).toEqual([{ rank: 1, member: "theirs", count: 1 }]);
  });

  it("a new hour is a new entry, and an entry older than TRENDING_CACHE_SECONDS by the Worker's clock is not served", async () => {
    const clocked = track(createTestApi({ label: "review-edge-3", vars: { TRENDING_CACHE_SECONDS: "30" } }));
    clocked.setNow("2026-11-22T12:59:50Z");
    await seed(clocked, "ec5", ["old"]);
    const url = `${HOST}/v1/trending/ec5/top?n=5&window=24h`;
    expect(cacheOf(await clocked.get(url))).toBe("miss");
    clocked.advance(5_000);
    const hit = await clocked.get(url);
    expect(cacheOf(hit)).toBe("hit");
    expect(hit.headers.get("age")).toBe("5");
    expect(hit.headers.get("cache-control")).toBe("private, max-age=25");
    clocked.advance(31_000); // 13:00:26: the next hour
    await seed(clocked, "ec5", ["new"]);
    const next = await clocked.get(url);
    expect(cacheOf(next)).toBe("miss");
    expect(next.body.items.map((i: { member: string }) => i.member).sort()).toEqual(["new", "old"]);
    // same hour, 31 s later by the Worker's clock: too old, recomputed
    clocked.advance(31_000);
    expect(cacheOf(await clocked.get(url))).toBe("miss");
    // a client's max-age shorter than the entry's age is honoured
    clocked.advance(3_000);
    expect(cacheOf(await clocked.get(url, { headers: { "cache-control": "max-age=2" } }))).toBe("miss");
    clocked.advance(3_000);
    expect(cacheOf(await clocked.get(url, { headers: { "cache-control": "max-age=5" } }))).toBe("hit");
  });
});

describe("review: what the cache stores and says", () => {
  it("a refused or invalid request stores nothing and says nothing about the cache", async () => {
    for (const q of ["?n=0", "?n=1001", "?window=0h", "?window=999h", "?n=abc"]) {
      const res = await api.get(`${HOST}/v1/trending/ec6/top${q}`);
      expect({ q, status: res.status }).toEqual({ q, status: 400 });
      expect(cacheOf(res)).toBeNull();
      expect(res.headers.get("cache-control")).toBe("private, no-store");
    }
    const bad = await api.get(`${HOST}/v1/trending/e:c/top?n=5`);
    expect(bad.status).toBe(400);
    expect(cacheOf(bad)).toBeNull();
  });

  it("a storage error is not cached: the same deployment's next read computes (miss) and answers with data", async () => {
    await seed(api, "ec7", ["kept"]);
    // the same deployment (Redis URL + prefix), its Redis refusing the token: compute fails
    const broken = createTestApi({
      label: "review-edge-broken",
      vars: { TRENDING_CACHE_SECONDS: "30", KEY_PREFIX: api.prefix, UPSTASH_REDIS_REST_TOKEN: "wrong-token" },
    });
    const url = `${HOST}/v1/trending/ec7/top?n=5&window=24h`;
    const failed = await broken.get(url);
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(cacheOf(failed)).toBeNull();
    const good = await api.get(url);
    expect(cacheOf(good)).toBe("miss");
    expect(good.body.items).toEqual([{ rank: 1, member: "kept", count: 1 }]);
  });

  it("authenticated answers are private (never public), and JSON and CSV of one URL stay apart", async () => {
    await seed(api, "ec8", ["x", "y"]);
    const url = `${HOST}/v1/trending/ec8/top?n=5&window=24h`;
    const csvFirst = await api.get(url, { headers: { accept: "text/csv" } });
    expect(cacheOf(csvFirst)).toBe("miss");
    expect(csvFirst.headers.get("content-type")).toMatch(/^text\/csv/);
    expect(csvFirst.headers.get("cache-control")).toBe("private, max-age=30");
    expect(csvFirst.headers.get("vary")).toMatch(/accept/i);
    const json = await api.get(url);
    expect(cacheOf(json)).toBe("hit");
    expect(json.headers.get("content-type")).toMatch(/^application\/json/);
    expect(json.body.items).toHaveLength(2);
    expect(json.headers.get("cache-control")).toMatch(/^private, max-age=\d+$/);
    expect(json.headers.get("vary")).toMatch(/accept/i);
    const csv = await api.get(url, { headers: { accept: "text/csv" } });
    expect(cacheOf(csv)).toBe("hit");
    expect(String(csv.body)).toBe(String(csvFirst.body));
  });

  it("a HEAD is authorised as its GET and answers no body", async () => {
    const url = `${HOST}/v1/trending/ec8/top?n=5&window=24h`;
    const res = await api.app.request(
      url,
      { method: "HEAD", headers: { authorization: `Bearer ${TEST_KEYS.read}` } },
      api.env,
    );
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("");
    const refused = await api.app.request(
      url,
      { method: "HEAD", headers: { authorization: `Bearer ${TEST_KEYS.ingest}` } },
      api.env,
    );
    expect(refused.status).toBe(403);
  });

  // Not a bug by the contract (README › Edge cache: answers may be TRENDING_CACHE_SECONDS old), but
  // worth knowing: an admin DELETE of a stream, or a new write, does not purge the edge cache, so a
  // deleted stream's top keeps being served from the cache of that location until the entry
  // expires; `Cache-Control: no-cache` gets the truth at once. Pinned so a change is deliberate.
  it("pins: a DELETE does not purge the edge cache; a no-cache read sees the deletion at once", async () => {
    await seed(api, "ec9", ["gone"]);
    const url = `${HOST}/v1/trending/ec9/top?n=5&window=24h`;
    expect(cacheOf(await api.get(url))).toBe("miss");
    expect((await api.del("/v1/trending/ec9", { key: "admin" })).status).toBe(204);
    const stale = await api.get(url);
    expect(cacheOf(stale)).toBe("hit");
    expect(stale.body.items).toEqual([{ rank: 1, member: "gone", count: 1 }]);
    const fresh = await api.get(url, { headers: { "cache-control": "no-cache" } });
    expect(cacheOf(fresh)).toBe("bypass");
    expect(fresh.body.items).toEqual([]);
    // the bypass refreshed the entry: later cached reads see the deletion too
    expect((await api.get(url)).body.items).toEqual([]);
  });
});
