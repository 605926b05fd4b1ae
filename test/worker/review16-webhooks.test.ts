/**
 * Review 16, webhooks inside workerd: the QStash-signed job calls (HS256 JWTs signed with `jose`,
 * test/helpers/qstash-sign.ts) at the edges security.test.ts leaves (the 30 s clock tolerance on both
 * sides, a body claim with base64 padding, a URL that differs only in its query, a signature made for
 * the webhooks job on the trending one), a replay of one signed message (QStash redelivers the very
 * same request, same `Upstash-Message-Id`) that must not deliver twice, who may create webhooks
 * (admin only, whatever the method or the key), and the secret in every answer: never echoed, also
 * not in errors, Idempotency-Key replays or the delivery log. The receiver is the local Upstash
 * server, which answers every delivery 401 (a failing receiver, so attempts stay in the log).
 */
import { afterAll, describe, expect, it } from "vitest";
import { TEST_INGEST_KEY_2, TEST_SIGNING_KEYS } from "../helpers/keys.ts";
import { bodyHash, signQstash } from "../helpers/qstash-sign.ts";
import { createTestApi } from "../helpers/worker.ts";
import { SignJWT } from "jose";

const SECRET = "review16-worker-secret-DO-NOT-ECHO";
const admin = { key: "admin" };
const JOB = "http://localhost/internal/jobs/webhooks";

const api = createTestApi({
  label: "rv16-wh",
  start: Date.UTC(2026, 10, 28, 3, 0, 20),
  vars: { WEBHOOKS_ALLOW_LOCAL_HTTP: "true" },
});
afterAll(() => api.cleanup());
const NOWHERE = `${api.env.UPSTASH_REDIS_REST_URL}/rv16-hook`;

const signedCall = (signature: string, path = "/internal/jobs/webhooks", messageId = "msg_rv16_1") =>
  api.post(path, undefined, {
    key: "none",
    headers: { "upstash-signature": signature, "upstash-message-id": messageId, "upstash-retried": "0" },
  });

describe("Upstash-Signature at its edges", () => {
  it("the 30 s tolerance holds on both sides: exp 20 s ago and nbf 20 s ahead pass, 40 s refuse", async () => {
    const now = Math.floor(Date.now() / 1000);
    const cases: [string, { exp?: number; nbf?: number }, number][] = [
      ["exp 20 s ago", { exp: now - 20 }, 200],
      ["exp 40 s ago", { exp: now - 40 }, 401],
      ["nbf 20 s ahead", { nbf: now + 20 }, 200],
      ["nbf 40 s ahead", { nbf: now + 40 }, 401],
    ];
    for (const [label, claims, status] of cases) {
      const res = await signedCall(await signQstash(TEST_SIGNING_KEYS.current, { url: JOB, ...claims }));
      expect({ label, status: res.status }).toEqual({ label, status });
      if (status === 401) expect(res.body.error.code).toBe("unauthorized");
    }
  });

  it("a body claim with base64 padding is the same hash; a signature by the next key passes; a third key does not", async () => {
    const now = Math.floor(Date.now() / 1000);
    const padded = `${await bodyHash("")}=`;
    const sign = (key: string, body: string) =>
      new SignJWT({ body })
        .setProtectedHeader({ alg: "HS256", typ: "JWT" })
        .setIssuer("Upstash")
        .setSubject(JOB)
        .setIssuedAt(now)
        .setNotBefore(now - 1)
        .setExpirationTime(now + 300)
        .setJti(crypto.randomUUID())
        .sign(new TextEncoder().encode(key));
    expect((await signedCall(await sign(TEST_SIGNING_KEYS.current, padded))).status).toBe(200);
    expect((await signedCall(await sign(TEST_SIGNING_KEYS.next, padded))).status).toBe(200);
    expect((await signedCall(await sign("sig_not_ours_test_key", padded))).status).toBe(401);
    // the hash of another body (one byte more) is refused, padded or not
    const other = await bodyHash(" ");
    expect((await signedCall(await sign(TEST_SIGNING_KEYS.current, other))).status).toBe(401);
    expect((await signedCall(await sign(TEST_SIGNING_KEYS.current, `${other}=`))).status).toBe(401);
  });

  it("a signature is for its URL exactly: another query, another job, another scheme are refused", async () => {
    for (const url of [
      `${JOB}?force=1`,
      "http://localhost/internal/jobs/webhooks.trending",
      JOB.replace("http:", "https:"),
    ]) {
      const res = await signedCall(await signQstash(TEST_SIGNING_KEYS.current, { url }));
      expect({ url, status: res.status }).toEqual({ url, status: 401 });
    }
    // and the right URL signed for the trending job is refused on the webhooks job
    const trending = await signQstash(TEST_SIGNING_KEYS.current, {
      url: "http://localhost/internal/jobs/webhooks.trending",
    });
    expect((await signedCall(trending)).status).toBe(401);
    expect((await signedCall(trending, "/internal/jobs/webhooks.trending")).status).toBe(200);
  });
});

describe("replay of one signed message", () => {
  it("the same signed request (same message id) sent again sends no delivery twice; only a due retry goes out", async () => {
    api.setNow(Date.UTC(2026, 10, 28, 3, 10, 20));
    const start = api.now;
    expect(
      (await api.put("/v1/webhooks/replayed", { url: NOWHERE, events: ["leaderboard.leader"], secret: SECRET }, admin))
        .status,
    ).toBe(201);
    // a test event whose first attempt fails (401) is due again a minute later
    expect((await api.post("/v1/webhooks/replayed/test", undefined, admin)).status).toBe(202);
    let signature = "";
    const claimed: number[] = [];
    // fresh: QStash's next delivery, signed anew; else the same signed request again, which since
    // review 20 runs nothing at all (`{replayed: true}`)
    for (const [step, fresh] of [
      [0, true],
      [0, false],
      [30_000, false],
      [60_000, true],
      [60_000, false],
      [61_000, false],
    ] as const) {
      api.setNow(start + step);
      if (fresh) signature = await signQstash(TEST_SIGNING_KEYS.current, { url: JOB });
      const res = await signedCall(signature);
      expect(res.status).toBe(200);
      expect(res.body.result.replayed ?? false).toBe(!fresh);
      claimed.push(Number(res.body.result.claimed ?? 0));
    }
    // the first retry falls due at +60 s: claimed there once, however often the message is replayed
    expect(claimed).toEqual([0, 0, 0, 1, 0, 0]);
    const log = (await api.get("/v1/webhooks/replayed/deliveries", admin)).body.deliveries as { attempt: number }[];
    expect(log.map((e) => e.attempt)).toEqual([2, 1]);
    expect(JSON.stringify(log)).not.toContain(SECRET);
  });
});

describe("who may create webhooks", () => {
  const body = { url: NOWHERE, events: ["leaderboard.leader"], secret: SECRET };

  it("only an admin key: ingest (both), read, unknown and missing keys are refused and write nothing", async () => {
    const keysBefore = await api.keys();
    for (const key of ["ingest", TEST_INGEST_KEY_2, "read", "not-a-key-of-this-deployment", "none"]) {
      for (const res of [
        await api.put("/v1/webhooks/sneaky", body, { key }),
        // a method override is no way around it
        await api.post("/v1/webhooks/sneaky", body, { key, headers: { "x-http-method-override": "PUT" } }),
        await api.call("PATCH", "/v1/webhooks/sneaky", body, { key }),
      ]) {
        expect([401, 403, 404, 405]).toContain(res.status);
        expect(JSON.stringify(res.body ?? "")).not.toContain(SECRET);
      }
    }
    expect(await api.keys()).toEqual(keysBefore);
    expect((await api.get("/v1/webhooks", admin)).body.webhooks.map((w: { name: string }) => w.name)).not.toContain(
      "sneaky",
    );
  });
});

describe("the secret is never echoed", () => {
  it("not by PUT (created, replaced, replayed with its Idempotency-Key), GET, test, deliveries, nor any refusal", async () => {
    const headers = { "idempotency-key": "rv16-put-1" };
    const answers = [
      await api.put(
        "/v1/webhooks/quiet",
        { url: NOWHERE, events: ["leaderboard.leader"], secret: SECRET },
        { ...admin, headers },
      ),
      await api.put(
        "/v1/webhooks/quiet",
        { url: NOWHERE, events: ["leaderboard.leader"], secret: SECRET },
        { ...admin, headers },
      ),
      await api.put(
        "/v1/webhooks/quiet",
        { url: NOWHERE, events: ["leaderboard.leader"], secret: `${SECRET}-2` },
        admin,
      ),
      // the same Idempotency-Key with another body (another secret): a 409 naming neither
      await api.put(
        "/v1/webhooks/quiet",
        { url: NOWHERE, events: ["leaderboard.leader"], secret: `${SECRET}-3` },
        { ...admin, headers },
      ),
      await api.get("/v1/webhooks", admin),
      await api.get("/v1/webhooks", { ...admin, headers: { accept: "text/csv" } }),
      await api.post("/v1/webhooks/quiet/test", undefined, admin),
      await api.get("/v1/webhooks/quiet/deliveries", admin),
      // refusals: bad url beside a good secret, a secret that is too long, unknown fields
      await api.put("/v1/webhooks/quiet", { url: "ftp://x", events: ["leaderboard.leader"], secret: SECRET }, admin),
      await api.put(
        "/v1/webhooks/quiet",
        { url: NOWHERE, events: ["nope"], secret: `${SECRET}${"x".repeat(300)}` },
        admin,
      ),
      await api.put(
        "/v1/webhooks/quiet",
        { url: NOWHERE, events: ["leaderboard.leader"], secret: SECRET, extra: SECRET },
        admin,
      ),
      await api.put("/v1/webhooks/quiet", { url: NOWHERE, events: ["leaderboard.leader"], secret: [SECRET] }, admin),
    ];
    expect(answers.map((a) => a.status)).toEqual([201, 201, 200, 409, 200, 200, 202, 200, 400, 400, 400, 400]);
    for (const a of answers) {
      expect(JSON.stringify(a.body ?? "")).not.toContain("review16-worker-secret");
      for (const [, value] of a.headers) expect(value).not.toContain("review16-worker-secret");
    }
  });
});
