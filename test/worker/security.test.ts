/**
 * Who may do what: every /v1 endpoint of the contract refuses a missing or
 * unknown key (401) and a key of the wrong scope (403) before touching Redis,
 * and /internal/jobs/* takes only a valid QStash signature or an admin key.
 */
import { SignJWT } from "jose";
import { afterAll, describe, expect, it } from "vitest";
import { TEST_SIGNING_KEYS } from "../helpers/keys.ts";
import { createTestApi, TEST_KEYS } from "../helpers/worker.ts";

const api = createTestApi({ label: "security" });
afterAll(() => api.cleanup());

type Scope = "read" | "ingest" | "admin";
interface Endpoint {
  method: "GET" | "POST" | "PUT" | "DELETE";
  path: string;
  needs: Scope;
  body?: unknown;
}

// The contract (shared/API.md): each write with a valid body, so a 403 can only come from the scope.
const ENDPOINTS: Endpoint[] = [
  { method: "POST", path: "/v1/trending/s1/events", needs: "ingest", body: { member: "a" } },
  { method: "GET", path: "/v1/trending/s1/top", needs: "read" },
  { method: "GET", path: "/v1/trending/s1/members/a", needs: "read" },
  { method: "DELETE", path: "/v1/trending/s1", needs: "admin" },
  { method: "POST", path: "/v1/counters/c1/incr", needs: "ingest", body: { member: "a" } },
  { method: "GET", path: "/v1/counters/c1/top", needs: "read" },
  { method: "GET", path: "/v1/counters/c1/members/a", needs: "read" },
  { method: "POST", path: "/v1/counters/c1/union", needs: "admin", body: { sources: ["c2"] } },
  { method: "DELETE", path: "/v1/counters/c1/members/a", needs: "ingest" },
  { method: "DELETE", path: "/v1/counters/c1", needs: "admin" },
  { method: "PUT", path: "/v1/histograms/h1", needs: "admin", body: { bucketWidth: 10 } },
  { method: "POST", path: "/v1/histograms/h1/observations", needs: "ingest", body: { value: 1 } },
  { method: "GET", path: "/v1/histograms/h1", needs: "read" },
  { method: "POST", path: "/v1/presence/r1/heartbeats", needs: "ingest", body: { id: "u1" } },
  { method: "DELETE", path: "/v1/presence/r1/members/u1", needs: "ingest" },
  { method: "GET", path: "/v1/presence/r1", needs: "read" },
  { method: "GET", path: "/v1/presence/r1/members", needs: "read" },
  { method: "PUT", path: "/v1/leaderboards/b1", needs: "admin", body: { ties: "joined" } },
  { method: "PUT", path: "/v1/leaderboards/b1/players/p1", needs: "ingest", body: { name: "P" } },
  { method: "POST", path: "/v1/leaderboards/b1/players/p1/score", needs: "ingest", body: { by: 1 } },
  { method: "GET", path: "/v1/leaderboards/b1", needs: "read" },
  { method: "DELETE", path: "/v1/leaderboards/b1/players/p1", needs: "ingest" },
  { method: "DELETE", path: "/v1/leaderboards/b1", needs: "admin" },
];

const WRONG: Record<Scope, ("read" | "ingest")[]> = { read: ["ingest"], ingest: ["read"], admin: ["read", "ingest"] };

describe("API keys", () => {
  it.each(ENDPOINTS)("$method $path: 401 without a key or with an unknown one, 403 with the wrong scope, no Redis call", async (e) => {
    const attempts: { key: string; status: number }[] = [
      { key: "none", status: 401 },
      { key: "not-a-key", status: 401 },
      { key: `${TEST_KEYS.ingest}x`, status: 401 }, // a known key plus one character
      { key: TEST_KEYS.admin.slice(0, -1), status: 401 }, // a known key minus one
      { key: TEST_KEYS.read.toUpperCase(), status: 401 },
      ...WRONG[e.needs].map((key) => ({ key, status: 403 })),
    ];
    for (const attempt of attempts) {
      const { result, requests } = await api.cost(() => api.call(e.method, e.path, e.body, { key: attempt.key }));
      expect({ key: attempt.key, status: result.status }).toEqual({ key: attempt.key, status: attempt.status });
      expect(result.body.error.code).toBe(attempt.status === 401 ? "unauthorized" : "forbidden");
      expect(result.body.error.message.length).toBeGreaterThan(10);
      expect(requests).toBe(0);
    }
    expect(await api.keys()).toEqual([]);
  });

  it("reads the header strictly: no key in the query string, no other scheme, no key in the body", async () => {
    const cases: Record<string, string>[] = [
      { authorization: `Basic ${btoa(`${TEST_KEYS.admin}:`)}` },
      { authorization: TEST_KEYS.admin },
      { authorization: `Bearer ${TEST_KEYS.admin} ${TEST_KEYS.admin}` },
      { authorization: `Bearer ${"x".repeat(600)}` },
      { "x-api-key": TEST_KEYS.admin },
    ];
    for (const headers of cases) {
      const res = await api.call("GET", `/v1/counters/c1/top?key=${TEST_KEYS.admin}`, undefined, { key: "none", headers });
      expect(res.status).toBe(401);
    }
    expect((await api.get("/v1/anything", { headers: { authorization: `bearer   ${TEST_KEYS.read}` }, key: "none" })).status).toBe(404);
  });

  it("checks the key before the body: an unauthenticated 2 MiB body is a 401, not a 413", async () => {
    const res = await api.post("/v1/counters/c1/incr", undefined, { key: "none", raw: "x".repeat(2 * 1024 * 1024), headers: { "content-type": "application/json" } });
    expect(res.status).toBe(401);
  });

  it("never echoes the presented key back", async () => {
    const secret = "sk-live-do-not-echo-0123456789";
    const res = await api.get("/v1/counters/c1/top", { key: secret });
    expect(res.status).toBe(401);
    expect(JSON.stringify(res.body)).not.toContain(secret);
  });
});

describe("internal jobs: QStash signature or admin key", () => {
  const base = "http://localhost/internal/jobs";

  async function sign(key: string, claims: { url?: string; body?: string; iss?: string; exp?: number; nbf?: number } = {}) {
    const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(claims.body ?? ""));
    const b64 = btoa(String.fromCharCode(...new Uint8Array(hash))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ body: b64 })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setIssuer(claims.iss ?? "Upstash")
      .setSubject(claims.url ?? `${base}/compact`)
      .setIssuedAt(now)
      .setNotBefore(claims.nbf ?? now - 1)
      .setExpirationTime(claims.exp ?? now + 300)
      .setJti(crypto.randomUUID())
      .sign(new TextEncoder().encode(key));
  }

  function unsignedJwt(): string {
    const enc = (v: unknown) => btoa(JSON.stringify(v)).replace(/=+$/, "");
    const now = Math.floor(Date.now() / 1000);
    return `${enc({ alg: "none", typ: "JWT" })}.${enc({ iss: "Upstash", sub: `${base}/compact`, exp: now + 300, nbf: now - 1, body: "" })}.`;
  }

  it("runs the job with a signature by the current or the next signing key, body hashed", async () => {
    const body = JSON.stringify({ reason: "schedule" });
    for (const key of [TEST_SIGNING_KEYS.current, TEST_SIGNING_KEYS.next]) {
      const res = await api.post("/internal/jobs/compact", undefined, {
        key: "none",
        raw: body,
        headers: { "content-type": "application/json", "upstash-signature": await sign(key, { body }) },
      });
      expect(res.status).toBe(200);
      expect(res.body.job).toBe("compact");
    }
  });

  it("runs the job with an admin key and refuses ingest and read keys", async () => {
    expect((await api.post("/internal/jobs/trim", undefined, { key: "admin" })).status).toBe(200);
    expect((await api.post("/internal/jobs/trim", undefined, { key: "ingest" })).status).toBe(403);
    expect((await api.post("/internal/jobs/trim", undefined, { key: "read" })).status).toBe(403);
    expect((await api.post("/internal/jobs/trim", undefined, { key: "none" })).status).toBe(401);
  });

  it("refuses an expired, premature, foreign, re-targeted or tampered signature, even next to an admin key", async () => {
    const now = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({ reason: "schedule" });
    const bad: [string, string][] = [
      ["expired", await sign(TEST_SIGNING_KEYS.current, { body, exp: now - 60 })],
      ["not yet valid", await sign(TEST_SIGNING_KEYS.current, { body, nbf: now + 600 })],
      ["wrong signing key", await sign("sig_someone_else", { body })],
      ["wrong URL (other job)", await sign(TEST_SIGNING_KEYS.current, { body, url: `${base}/trim` })],
      ["wrong URL (other host)", await sign(TEST_SIGNING_KEYS.current, { body, url: "https://evil.example/internal/jobs/compact" })],
      ["wrong body hash", await sign(TEST_SIGNING_KEYS.current, { body: JSON.stringify({ reason: "other" }) })],
      ["wrong issuer", await sign(TEST_SIGNING_KEYS.current, { body, iss: "Someone" })],
      ["alg none", unsignedJwt()],
      ["garbage", "not-a-jwt"],
      ["empty", ""],
    ];
    for (const [label, signature] of bad) {
      for (const key of ["none", "admin"]) {
        const res = await api.post("/internal/jobs/compact", undefined, {
          key,
          raw: body,
          headers: { "content-type": "application/json", "upstash-signature": signature },
        });
        expect({ label, key, status: res.status }).toEqual({ label, key, status: 401 });
        expect(res.body.error.code).toBe("unauthorized");
      }
    }
  });

  it("a signature made for one body does not cover another body", async () => {
    const signature = await sign(TEST_SIGNING_KEYS.current, { body: "" });
    const res = await api.post("/internal/jobs/compact", undefined, {
      key: "none",
      raw: JSON.stringify({ injected: true }),
      headers: { "content-type": "application/json", "upstash-signature": signature },
    });
    expect(res.status).toBe(401);
  });

  it("says so when signing keys are not configured, instead of accepting anything", async () => {
    const env = { ...api.env, QSTASH_CURRENT_SIGNING_KEY: "", QSTASH_NEXT_SIGNING_KEY: "" } as Env;
    const res = await api.app.request("/internal/jobs/compact", { method: "POST", headers: { "upstash-signature": await sign("any-key-at-all") } }, env);
    expect(((await res.clone().json()) as any).error.message).toMatch(/not configured/);
    expect(res.status).toBe(401);
  });
});
