/**
 * Who may do what: every /v1 endpoint of the contract refuses a missing or
 * unknown key (401) and a key of the wrong scope (403) before touching Redis,
 * and /internal/jobs/* takes only a valid QStash signature or an admin key.
 */
import { afterAll, describe, expect, it, vi } from "vitest";
import { TEST_SIGNING_KEYS } from "../helpers/keys.ts";
import { command } from "../helpers/upstash-rest.ts";
import { type QstashClaims, signQstash } from "../helpers/qstash-sign.ts";
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
  it.each(ENDPOINTS)(
    "$method $path: 401 without a key or with an unknown one, 403 with the wrong scope, no Redis call",
    async (e) => {
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
    },
  );

  it("reads the header strictly: no key in the query string, no other scheme, no key in the body", async () => {
    const cases: Record<string, string>[] = [
      { authorization: `Basic ${btoa(`${TEST_KEYS.admin}:`)}` },
      { authorization: TEST_KEYS.admin },
      { authorization: `Bearer ${TEST_KEYS.admin} ${TEST_KEYS.admin}` },
      { authorization: `Bearer ${"x".repeat(600)}` },
      { "x-api-key": TEST_KEYS.admin },
    ];
    for (const headers of cases) {
      const res = await api.call("GET", `/v1/counters/c1/top?key=${TEST_KEYS.admin}`, undefined, {
        key: "none",
        headers,
      });
      expect(res.status).toBe(401);
    }
    expect(
      (await api.get("/v1/anything", { headers: { authorization: `bearer   ${TEST_KEYS.read}` }, key: "none" })).status,
    ).toBe(404);
  });

  it("checks the key before the body: an unauthenticated 2 MiB body is a 401, not a 413", async () => {
    const res = await api.post("/v1/counters/c1/incr", undefined, {
      key: "none",
      raw: "x".repeat(2 * 1024 * 1024),
      headers: { "content-type": "application/json" },
    });
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

  function sign(key: string, claims: Partial<QstashClaims> = {}) {
    return signQstash(key, { ...claims, url: claims.url ?? `${base}/compact` });
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
      [
        "wrong URL (other host)",
        await sign(TEST_SIGNING_KEYS.current, { body, url: "https://evil.example/internal/jobs/compact" }),
      ],
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

  /** A body stream that records whether anyone read it (highWaterMark 0: nothing is pulled ahead). */
  function watchedBody(text: string) {
    const state = { pulled: false };
    const stream = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          state.pulled = true;
          controller.enqueue(new TextEncoder().encode(text));
          controller.close();
        },
      },
      { highWaterMark: 0 },
    );
    return { stream, state };
  }

  it("attack: an unauthenticated or badly signed /internal request is refused before its body is read", async () => {
    const now = Math.floor(Date.now() / 1000);
    const cases: [string, Record<string, string>][] = [
      ["no credentials", {}],
      ["ingest key", { authorization: `Bearer ${TEST_KEYS.ingest}` }],
      ["garbage signature", { "upstash-signature": "not-a-jwt" }],
      ["alg none", { "upstash-signature": unsignedJwt() }],
      ["foreign signing key", { "upstash-signature": await sign("sig_someone_else", { body: "{}" }) }],
      ["expired", { "upstash-signature": await sign(TEST_SIGNING_KEYS.current, { body: "{}", exp: now - 600 }) }],
      [
        "other job",
        { "upstash-signature": await sign(TEST_SIGNING_KEYS.current, { body: "{}", url: `${base}/trim` }) },
      ],
    ];
    for (const [label, headers] of cases) {
      const { stream, state } = watchedBody("{}");
      const res = await api.app.request(
        "/internal/jobs/compact",
        {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: stream,
          duplex: "half",
        } as RequestInit,
        api.env,
      );
      expect({ label, status: res.status }).toEqual({ label, status: label === "ingest key" ? 403 : 401 });
      expect({ label, pulled: state.pulled }).toEqual({ label, pulled: false });
    }
    // A valid signature is checked against the body, so that one is read (and runs the job).
    const { stream, state } = watchedBody("{}");
    const signature = await sign(TEST_SIGNING_KEYS.current, { body: "{}" });
    const ok = await api.app.request(
      "/internal/jobs/compact",
      {
        method: "POST",
        headers: { "content-type": "application/json", "upstash-signature": signature },
        body: stream,
        duplex: "half",
      } as RequestInit,
      api.env,
    );
    expect(ok.status).toBe(200);
    expect(state.pulled).toBe(true);
  });

  it("attack: a signed request with a 2 MiB body is refused (413) by a bounded read", async () => {
    const body = "x".repeat(2 * 1024 * 1024);
    const res = await api.post("/internal/jobs/compact", undefined, {
      key: "none",
      raw: body,
      headers: {
        "content-type": "application/json",
        "upstash-signature": await sign(TEST_SIGNING_KEYS.current, { body }),
      },
    });
    expect(res.status).toBe(413);
  });

  it("attack: QStash's clock 25 s off is tolerated (nbf/exp ± 30 s); 60 s off is not", async () => {
    const now = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({ reason: "schedule" });
    const cases: [string, { nbf?: number; exp?: number }, number][] = [
      ["nbf 25 s ahead", { nbf: now + 25 }, 200],
      ["exp 25 s ago", { exp: now - 25, nbf: now - 300 }, 200],
      ["nbf 60 s ahead", { nbf: now + 60 }, 401],
      ["exp 60 s ago", { exp: now - 60, nbf: now - 300 }, 401],
    ];
    for (const [label, claims, status] of cases) {
      const res = await api.post("/internal/jobs/trim", undefined, {
        key: "none",
        raw: body,
        headers: {
          "content-type": "application/json",
          "upstash-signature": await sign(TEST_SIGNING_KEYS.current, { body, url: `${base}/trim`, ...claims }),
        },
      });
      expect({ label, status: res.status }).toEqual({ label, status });
    }
  });

  it("says so when signing keys are not configured, instead of accepting anything", async () => {
    const env = { ...api.env, QSTASH_CURRENT_SIGNING_KEY: "", QSTASH_NEXT_SIGNING_KEY: "" } as Env;
    const res = await api.app.request(
      "/internal/jobs/compact",
      { method: "POST", headers: { "upstash-signature": await sign("any-key-at-all") } },
      env,
    );
    expect(((await res.clone().json()) as any).error.message).toMatch(/not configured/);
    expect(res.status).toBe(401);
  });
});

describe("configuration and logs", () => {
  it("attack: a configured API key shorter than 16 characters stops every request with a clear 500 and a log line", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      for (const vars of [
        { READ_KEYS: `${TEST_KEYS.read},short-key` },
        { ADMIN_KEYS: "admin" },
        { INGEST_KEYS: ` ${"x".repeat(15)} ` },
      ]) {
        const env = { ...api.env, ...vars } as Env;
        for (const [path, headers] of [
          ["/healthz", {}],
          ["/v1/counters/c1/top", { authorization: `Bearer ${TEST_KEYS.read}` }],
        ] as const) {
          const { result: res, requests } = await api.cost(async () => api.app.request(path, { headers }, env));
          expect(res.status).toBe(500);
          const body = (await res.json()) as any;
          expect(body.error.code).toBe("config_error");
          expect(body.error.message).toMatch(/_KEYS: key #\d is shorter than 16 characters/);
          expect(JSON.stringify(body)).not.toContain("short-key");
          expect(requests).toBe(0);
        }
      }
      expect(errors.mock.calls.map((c) => String(c[0])).join("\n")).toMatch(
        /ConfigError: READ_KEYS: key #2 is shorter than 16/,
      );
    } finally {
      errors.mockRestore();
    }
    // Keys of 16 characters or more are fine.
    const ok = await api.app.request("/healthz", {}, { ...api.env, READ_KEYS: "x".repeat(16) } as Env);
    expect(ok.status).toBe(200);
  });

  it("a configured key no request could present (over 512 characters, or with whitespace) is a clear 500, not a 401 for ever", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      for (const [vars, why] of [
        [{ READ_KEYS: `${TEST_KEYS.read},${"k".repeat(513)}` }, /READ_KEYS: key #2 is longer than 512 characters/],
        [{ INGEST_KEYS: `${"a".repeat(10)} ${"b".repeat(10)}` }, /INGEST_KEYS: key #1 contains whitespace/],
      ] as const) {
        const env = { ...api.env, ...vars } as Env;
        const { result: res, requests } = await api.cost(async () =>
          api.app.request("/v1/counters/c1/top", { headers: { authorization: `Bearer ${TEST_KEYS.read}` } }, env),
        );
        expect(res.status).toBe(500);
        const body = (await res.json()) as any;
        expect(body.error.code).toBe("config_error");
        expect(body.error.message).toMatch(why);
        expect(JSON.stringify(body)).not.toContain("kkkk");
        expect(requests).toBe(0);
      }
    } finally {
      errors.mockRestore();
    }
    // 512 characters is the longest a request presents, so it is still a key that works.
    const long = "L".repeat(512);
    const res = await api.app.request("/v1/counters/c1/top", { headers: { authorization: `Bearer ${long}` } }, {
      ...api.env,
      READ_KEYS: long,
    } as Env);
    expect(res.status).toBe(200);
  });

  it("attack: an Upstash error that echoes the command's arguments (member ids) is redacted before it is logged", async () => {
    const secret = "secret-member-id-4711";
    // A counter key of the wrong type makes the increment script fail with WRONGTYPE, an error
    // @upstash/redis reports with ", command was: [...]" and every argument in it.
    await command(api.target, "SET", `${api.prefix}:counters:wrongtype`, "not-a-sorted-set");
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const res = await api.post("/v1/counters/wrongtype/incr", { member: secret, by: 1 });
      expect(res.status).toBe(500);
      expect(JSON.stringify(res.body)).not.toContain(secret);
      const logged = errors.mock.calls
        .flat()
        .map((a) => (a instanceof Error ? `${a.message}\n${a.stack}` : String(a)))
        .join("\n");
      expect(logged).toMatch(/WRONGTYPE/);
      expect(logged).toContain("command was: [redacted]");
      expect(logged).not.toContain(secret);
    } finally {
      errors.mockRestore();
    }
  });
});
