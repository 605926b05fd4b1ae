/**
 * Review 20: who may do what, and what reaches Redis (API.md common rules, docs/guarantees.md ›
 * Only the right keys get in). Review 17 held every route of the router to its scope; this file
 * adds:
 * - key-space names: every write route's name (stream, counter, histogram, room, board) holding a
 *   key-space character (':' '{' '}' '*' '?' '[' ']'), a Unicode look-alike of one, an internal
 *   key's name (`_names`) or a look-alike letter is a 400 before any Redis call, and writes nothing;
 * - QStash signatures on /internal/jobs/*: wrong key, expired, tampered body, another job's URL,
 *   `alg: none`, a signature beside an admin key: 401 before any Redis call; replay (fixed: runs
 *   nothing);
 * - Idempotency-Key on the read-only POST (the subset ranking): a read key makes no record;
 * - the headers of answers outside /v1 (fixed).
 *
 * Findings were `it.fails`, asserting the right behaviour, with severity and the suggested fix above;
 * both found (low) are fixed and flipped, their comments say how.
 */
import { afterAll, describe, expect, it } from "vitest";
import { TEST_SIGNING_KEYS } from "../helpers/keys.ts";
import { bodyHash, signQstash } from "../helpers/qstash-sign.ts";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "review20-security" });
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
afterAll(async () => {
  await api.cleanup();
});

/** A write route per feature (and the read-only POST), with the body it takes, the name put where `N` is. */
const WRITES: { path: string; body: unknown; key?: string }[] = [
  { path: "/v1/trending/N/events", body: { events: [{ member: "m" }] } },
  { path: "/v1/counters/N/incr", body: { items: [{ member: "m", by: 1 }] } },
  { path: "/v1/histograms/N/observations", body: { values: [1] } },
  { path: "/v1/presence/N/heartbeats", body: { ids: ["u1"] } },
  { path: "/v1/leaderboards/N/players/p1/score", body: { by: 1 } },
  { path: "/v1/leaderboards/N/rank", body: { players: ["p1"] }, key: "read" },
];

/**
 * Names that could spell another key, a cluster hash tag or a SCAN pattern, an internal key's
 * name, or look like an allowed name: ':' and its look-alikes (U+FF1A full-width, U+2236 ratio,
 * U+02D0 modifier), braces, glob characters, `_names` (the registries), a leading dot, Cyrillic `а`,
 * full-width `ａ`, dotless ı, a zero-width space, and one character too long.
 */
const BAD_NAMES = [
  "a:b",
  "a{b}",
  "{a}",
  "a*",
  "a?",
  "a[b]",
  "a\uff1ab",
  "a\u2236b",
  "a\u02d0b",
  "_names",
  ".a",
  "\u0430",
  "\uff41",
  "a\u0131",
  "a\u200bb",
  "a".repeat(65),
];

describe("review20: key-space names", () => {
  it("a name with a key-space character, a look-alike or an internal key's name is a 400 before any Redis call, on every write route", async () => {
    const seen: string[] = [];
    for (const { path, body, key } of WRITES) {
      for (const name of BAD_NAMES) {
        const target = path.replace("N", encodeURIComponent(name));
        const { result, requests } = await api.cost(() => api.post(target, body, { key: key ?? "admin" }));
        seen.push(`${target} ${result.status} ${result.body?.error?.code} ${requests}`);
        expect({ target, status: result.status, code: result.body?.error?.code, requests }).toEqual({
          target,
          status: 400,
          code: "invalid_request",
          requests: 0,
        });
      }
    }
    expect(seen).toHaveLength(WRITES.length * BAD_NAMES.length);
    expect(await api.keys()).toEqual([]);
  });

  it("names inside bodies (a union's sources, a webhook's filter) are held to the same rule, before any Redis call", async () => {
    for (const name of ["a:b", "a*", "{a}", "_names", "a\uff1ab"]) {
      const union = await api.cost(() =>
        api.post("/v1/counters/r20u/union", { sources: ["r20s", name] }, { key: "admin" }),
      );
      const hook = await api.cost(() =>
        api.put(
          "/v1/webhooks/r20h",
          {
            url: "https://hooks.example.com/r20",
            events: ["trending.entered"],
            filter: { stream: name },
            secret: "r20-secret-0123456789",
          },
          { key: "admin" },
        ),
      );
      for (const [what, { result, requests }] of [
        ["union", union],
        ["webhook", hook],
      ] as const)
        expect({ what, name, status: result.status, code: result.body?.error?.code, requests }).toEqual({
          what,
          name,
          status: 400,
          code: "invalid_request",
          requests: 0,
        });
    }
    expect(await api.keys()).toEqual([]);
  });

  it("names that differ only by '.', '-', '_' or case are different names with different keys (no folding)", async () => {
    const names = ["ks.a", "ks-a", "ks_a", "KS.a"];
    for (const name of names) {
      const res = await api.post(`/v1/counters/${name}/incr`, { items: [{ member: "m", by: 1 }] });
      expect(res.status, name).toBe(200);
    }
    for (const name of names) {
      const res = await api.get(`/v1/counters/${name}/members/m`);
      expect({ name, status: res.status, score: res.body?.score }).toEqual({ name, status: 200, score: 1 });
    }
    // every key of the four lies under `<prefix>:counters:<name>`, or in the counters' own registries
    const keys = (await api.keys()).map((k) => k.slice(api.prefix.length + 1));
    for (const key of keys) expect(key).toMatch(/^counters:(_[a-z]+|(ks\.a|ks-a|ks_a|KS\.a)(:.*)?)$/);
    for (const name of names) expect(keys.some((k) => k.startsWith(`counters:${name}`))).toBe(true);
  });
});

describe("review20: QStash signatures on /internal/jobs/*", () => {
  const origin = "http://localhost";
  /** A job that does not exist: past authentication it is a 404, with no Redis call. */
  const path = "/internal/jobs/r20-no-such-job";

  async function signed(signature: string, body?: string, key: "none" | "admin" = "none") {
    return api.cost(() =>
      api.call("POST", path, undefined, {
        key,
        headers: {
          "upstash-signature": signature,
          ...(body !== undefined ? { "content-type": "application/json" } : {}),
        },
        ...(body !== undefined ? { raw: body } : {}),
      }),
    );
  }

  it("a valid signature gets past authentication (404 for the unknown job; one Redis call, its claim)", async () => {
    // (the first loads the claim's script: measured on the second)
    expect((await signed(await signQstash(TEST_SIGNING_KEYS.current, { url: origin + path }))).result.status).toBe(404);
    const signature = await signQstash(TEST_SIGNING_KEYS.current, { url: origin + path });
    const { result, requests } = await signed(signature);
    expect({ status: result.status, code: result.body?.error?.code, requests }).toEqual({
      status: 404,
      code: "not_found",
      requests: 1,
    });
    // the next signing key is accepted too (key rotation)
    const next = await signQstash(TEST_SIGNING_KEYS.next, { url: origin + path });
    expect((await signed(next)).result.status).toBe(404);
  });

  it("wrong key, expired, not yet valid, another job's URL, another body, alg none, a missing body claim: 401 before any Redis call, even beside an admin key", async () => {
    const now = Math.floor(Date.now() / 1000);
    const url = origin + path;
    const unsigned = (claims: Record<string, unknown>, header: Record<string, unknown>) =>
      [header, claims].map((p) => Buffer.from(JSON.stringify(p)).toString("base64url")).join(".") + ".";
    const cases: [string, string, string | undefined][] = [
      ["wrong key", await signQstash("sig_wrong_key_00000", { url }), undefined],
      ["expired", await signQstash(TEST_SIGNING_KEYS.current, { url, exp: now - 120, nbf: now - 600 }), undefined],
      ["not yet valid", await signQstash(TEST_SIGNING_KEYS.current, { url, nbf: now + 600 }), undefined],
      ["wrong issuer", await signQstash(TEST_SIGNING_KEYS.current, { url, iss: "Someone" }), undefined],
      [
        "another job",
        await signQstash(TEST_SIGNING_KEYS.current, { url: `${origin}/internal/jobs/compact` }),
        undefined,
      ],
      ["another body", await signQstash(TEST_SIGNING_KEYS.current, { url, body: '{"a":1}' }), '{"a":2}'],
      [
        "alg none",
        unsigned(
          { iss: "Upstash", sub: url, exp: now + 300, nbf: now - 1, body: await bodyHash("") },
          { alg: "none", typ: "JWT" },
        ),
        undefined,
      ],
      ["empty", "", undefined],
      ["garbage", "a.b.c", undefined],
    ];
    for (const [what, signature, body] of cases) {
      for (const key of ["none", "admin"] as const) {
        const { result, requests } = await signed(signature, body, key);
        expect({ what, key, status: result.status, code: result.body?.error?.code, requests }).toEqual({
          what,
          key,
          status: 401,
          code: "unauthorized",
          requests: 0,
        });
        // the refusal says why, never echoing the signature or a signing key
        const text = JSON.stringify(result.body);
        for (const secret of Object.values(TEST_SIGNING_KEYS)) expect(text).not.toContain(secret);
        if (signature.length > 8) expect(text).not.toContain(signature);
      }
    }
  });

  // Fixed: functions/middleware/qstash.ts claims each valid signature (src/signed-calls.ts,
  // `qstash.claim`: SET NX PX until the signature expires, one Redis call per signed call, none
  // for an admin key's); a replay is answered 200 `{result: {replayed: true}}` with
  // `Idempotent-Replayed: true` and runs nothing (a 2xx: QStash's own duplicate delivery, if it
  // reused a signature, must not be retried until it fails); a run answered 5xx gives its claim back.
  // Finding (low): a signed call could be replayed, as often as wanted, until its `exp` (QStash signs
  // for 5 minutes, and the check allows 30 s more): whoever saw one signed request (a proxy's or a
  // log's copy) ran that job again and again, never rate-limited (signed calls carry no key). The
  // jobs are idempotent, so nothing was counted twice, but each run is Redis work (webhooks.* also
  // send the deliveries due). QStash's own Receiver does not check this either.
  it("a signed call replayed with the same signature and body runs nothing (runs once), however its MAC is spelt", async () => {
    // a job that runs in one Redis call when there is nothing to sweep
    const job = "/internal/jobs/sweep-counters";
    const signature = await signQstash(TEST_SIGNING_KEYS.current, { url: origin + job });
    const before = (await api.keys()).filter((k) => k.startsWith(`${api.prefix}:qstash:`));
    const send = (sig: string) =>
      api.cost(() => api.call("POST", job, undefined, { key: "none", headers: { "upstash-signature": sig } }));
    const first = await send(signature);
    expect({ status: first.result.status, replayed: first.result.headers.get("idempotent-replayed") }).toEqual({
      status: 200,
      replayed: null,
    });
    expect(first.result.body.result).toMatchObject({ checked: 0, deleted: 0, more: false });
    // the same signed request again: answered, marked, and only the claim's one Redis call
    for (const [what, sig] of [
      ["again", signature],
      // the MAC's last base64url character carries 2 bits no byte holds: flipping one spells the same
      // bytes, which the HMAC check accepts; the claim is of the bytes, so this is the same signature
      ["respelt", signature.slice(0, -1) + ALPHABET[ALPHABET.indexOf(signature.slice(-1)) ^ 1]],
    ] as const) {
      const again = await send(sig);
      expect({
        what,
        status: again.result.status,
        body: again.result.body,
        replayed: again.result.headers.get("idempotent-replayed"),
        requests: again.requests,
      }).toEqual({
        what,
        status: 200,
        body: { job: "sweep-counters", startedAt: api.now, result: { replayed: true } },
        replayed: "true",
        requests: 1,
      });
    }
    // the claim lives as long as the signature can be presented, no longer
    const claims = (await api.keys()).filter((k) => k.startsWith(`${api.prefix}:qstash:`) && !before.includes(k));
    expect(claims).toHaveLength(1);
    const ttl = Number(await command(api.target, "PTTL", claims[0] ?? ""));
    expect(ttl).toBeGreaterThan(300_000);
    expect(ttl).toBeLessThanOrEqual(330_000);
  });
});

describe("review20: Idempotency-Key on the read-only POST", () => {
  it("a read key's subset ranking with an Idempotency-Key writes no record (a read key writes nothing)", async () => {
    expect((await api.put("/v1/leaderboards/r20b/players/p1", { name: "P", score: 3 })).status).toBe(201);
    // (the first call loads the script: measured on the second)
    expect((await api.post("/v1/leaderboards/r20b/rank", { players: ["p1"] }, { key: "read" })).status).toBe(200);
    const before = await api.keys();
    const { result, requests } = await api.cost(() =>
      api.post(
        "/v1/leaderboards/r20b/rank",
        { players: ["p1"] },
        { key: "read", headers: { "idempotency-key": "r20-k" } },
      ),
    );
    expect(result.status).toBe(200);
    expect(requests).toBe(1);
    expect((await api.keys()).filter((k) => !before.includes(k))).toEqual([]);
  });
});

describe("review20: headers of answers outside /v1", () => {
  // Fixed: functions/app.ts runs apiHeaders on /internal/* and /healthz, and its notFound sets both.
  // Finding (low): every /v1 answer carries `X-Content-Type-Options: nosniff` and (unless the route
  // set one) `Cache-Control: private, no-store` (functions/middleware/request.ts apiHeaders), but the
  // answers outside /v1 that carry request data or per-key data do not: the 404/405 of any other
  // path (its message quotes the path), every /internal/* answer (a 401, a job's 404, an admin
  // key's job result) and /healthz with a key (Redis reachability and latency). They are served on
  // the dashboard's origin, where the read key sits in localStorage; nosniff is what keeps text a
  // caller chose from being taken for anything but JSON, and no-store keeps an answer given to a
  // key out of caches.
  // Suggested fix: run apiHeaders on /internal/* and /healthz as on /v1/*, and give the notFound
  // handler's 404/405 the same two headers (the dashboard's, /docs' and /openapi.json's own answers
  // keep theirs).
  it("a 404 of another path, /internal/* answers and /healthz carry nosniff and private, no-store", async () => {
    const answers = [
      ["GET", "/r20-no-such-path", "none"],
      ["DELETE", "/docs", "none"],
      ["POST", "/internal/jobs/r20-no-such-job", "none"],
      ["POST", "/internal/jobs/r20-no-such-job", "admin"],
      ["GET", "/healthz", "read"],
    ] as const;
    for (const [method, path, key] of answers) {
      const res = await api.call(method, path, undefined, { key });
      expect({
        method,
        path,
        key,
        nosniff: res.headers.get("x-content-type-options"),
        cache: res.headers.get("cache-control"),
      }).toEqual({ method, path, key, nosniff: "nosniff", cache: "private, no-store" });
    }
  });
});
