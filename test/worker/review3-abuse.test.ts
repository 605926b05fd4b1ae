/**
 * Review 3: abuse limits inside workerd against the real local Upstash server and redis-server —
 * webhook URL refusals (scheme, credentials, length, hosts naming this machine), secrets never
 * answered, body-size refusals of streamed bodies, member limits in UTF-8 bytes, the rate limiter
 * keyed by the API key whatever the header spelling, Idempotency-Key limits; every refusal writes
 * nothing.
 */
import { afterAll, describe, expect, it } from "vitest";
import { inOneWindow } from "../helpers/rate-window.ts";
import { TEST_KEYS, createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "review3-abuse" });
const limited = createTestApi({ label: "review3-abuse-rl", vars: { RATE_LIMIT_PER_10S: "3" } });
afterAll(async () => {
  await api.cleanup();
  await limited.cleanup();
});

const admin = { key: "admin" };
const SECRET = "review3-secret-0123456789-abcdef";
const hook = (url: string) => ({ url, events: ["presence.peak"], filter: { room: "lobby" }, secret: SECRET });
const webhookKeys = async () => (await api.keys()).filter((k) => k.startsWith(`${api.prefix}:webhooks:`));

describe("webhook URL refusals write nothing (review 3)", () => {
  it.each([
    ["ftp scheme", "ftp://example.com/hook"],
    ["javascript scheme", "javascript:alert(1)"],
    ["data scheme", "data:text/plain,hi"],
    ["file scheme", "file:///etc/passwd"],
    ["plain http (no local http allowed)", "http://example.com/hook"],
    ["credentials", "https://user:pw@example.com/hook"],
    ["username only", "https://user@example.com/hook"],
    ["too long", `https://example.com/${"a".repeat(2048)}`],
    ["relative", "/hook"],
    ["loopback v4", "https://127.0.0.1/hook"],
    ["loopback v4 in hex", "https://0x7f000001/hook"],
    ["loopback v4 short form", "https://127.1/hook"],
    ["loopback v6 long form", "https://[0:0:0:0:0:0:0:1]/hook"],
    ["v4-mapped v6", "https://[::ffff:127.0.0.1]/hook"],
    ["metadata address", "https://169.254.169.254/latest/meta-data"],
    ["private 10/8", "https://10.0.0.1/hook"],
    ["localhost", "https://localhost/hook"],
    ["sub.localhost", "https://a.localhost/hook"],
  ])("%s is 400 naming url", async (_label, url) => {
    const res = await api.put("/v1/webhooks/bad", hook(url), admin);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("invalid_request");
    expect(JSON.stringify(res.body.error)).toContain("url");
    expect(await webhookKeys()).toEqual([]);
  });

  it(
    // FIXED (was low): `localhost.` (the fully-qualified spelling, trailing dot) resolves to the
    // loopback like `localhost`, but WHATWG URL keeps the dot in `hostname`, so src/webhooks/validate.ts
    // internalHost let it through and deliveries would have been POSTed at the deployment's own
    // host. internalHost now strips one trailing "." first.
    "the FQDN spelling localhost. (trailing dot) is refused like localhost",
    async () => {
      for (const url of ["https://localhost./hook", "https://a.localhost./hook"]) {
        const res = await api.put("/v1/webhooks/dot", hook(url), admin);
        expect(res.status, url).toBe(400);
      }
      expect(await webhookKeys()).toEqual([]);
    },
  );
});

describe("webhook secrets are never answered (review 3)", () => {
  it("no GET (list, one, deliveries) nor the PUT answer carries the secret", async () => {
    const put = await api.put("/v1/webhooks/keeper", hook("https://example.com/hook"), admin);
    expect(put.status).toBe(201);
    expect(JSON.stringify(put.body)).not.toContain(SECRET);
    for (const path of ["/v1/webhooks", "/v1/webhooks/keeper/deliveries"]) {
      const res = await api.get(path, admin);
      expect(res.status, path).toBe(200);
      expect(JSON.stringify(res.body), path).not.toContain(SECRET);
      expect(JSON.stringify(res.body), path).not.toContain("secret");
    }
    expect((await api.del("/v1/webhooks/keeper", admin)).status).toBe(200);
  });
});

/** A stream of `total` bytes of JSON-ish text in 64 KiB chunks, with no declared length. */
function bigStream(total: number): ReadableStream<Uint8Array> {
  let sent = 0;
  const chunk = new TextEncoder().encode("x".repeat(65536));
  return new ReadableStream({
    pull(controller) {
      if (sent >= total) return controller.close();
      controller.enqueue(chunk);
      sent += chunk.byteLength;
    },
  });
}

describe("body limits on streamed bodies (review 3)", () => {
  it("a 2 MiB chunked body without Content-Length is 413 and writes nothing", async () => {
    const before = (await api.keys()).sort();
    const res = await api.post("/v1/counters/big/incr", undefined, {
      raw: bigStream(2 * 1024 * 1024),
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe("payload_too_large");
    expect((await api.keys()).sort()).toEqual(before);
  });

  it("a 2 MiB stream under a declared Content-Length of 10 is never accepted and writes nothing", async () => {
    const before = (await api.keys()).sort();
    let status: number;
    try {
      status = (
        await api.post("/v1/counters/big/incr", undefined, {
          raw: bigStream(2 * 1024 * 1024),
          headers: { "content-type": "application/json", "content-length": "10" },
        })
      ).status;
    } catch {
      // the runtime itself refusing the mismatched length is a refusal too
      status = 413;
    }
    expect([400, 413]).toContain(status);
    expect((await api.keys()).sort()).toEqual(before);
  });

  it("a declared Content-Length over 1 MiB is 413 before reading, costing 0 commands", async () => {
    const { result, commands } = await api.cost(() =>
      api.post("/v1/counters/big/incr", undefined, {
        raw: "{}",
        headers: { "content-type": "application/json", "content-length": String(2 * 1024 * 1024) },
      }),
    );
    expect(result.status).toBe(413);
    expect(commands).toBe(0);
  });
});

describe("member limits are UTF-8 bytes (review 3)", () => {
  it("64 astral chars (256 bytes) pass, 65 (260 bytes) are 400 and write nothing", async () => {
    const ok = await api.post("/v1/counters/astral/incr", { member: "😀".repeat(64) });
    expect(ok.status).toBe(200);
    const before = (await api.keys()).sort();
    const { result, commands } = await api.cost(() =>
      api.post("/v1/counters/astral/incr", { member: "😀".repeat(65) }),
    );
    expect(result.status).toBe(400);
    expect(commands).toBe(0);
    expect((await api.keys()).sort()).toEqual(before);
  });

  it("a lone surrogate member is 400 (it has no UTF-8 encoding) and writes nothing", async () => {
    const before = (await api.keys()).sort();
    const res = await api.post("/v1/counters/astral/incr", undefined, {
      raw: '{"member":"\\ud800x"}',
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(400);
    expect((await api.keys()).sort()).toEqual(before);
  });
});

describe("rate limit is per API key, whatever the header spelling (review 3)", () => {
  it("bearer in any case and extra spaces count against the same key; refusals then cost 0 commands", () =>
    inOneWindow(limited, async () => {
      const key = TEST_KEYS.read;
      // warm the limiter's script so every counted request is one EVALSHA
      await limited.get("/v1/not-a-route", { key: "ingest" });
      const spellings = [`Bearer ${key}`, `bearer ${key}`, `BEARER   ${key}`, `BeArEr\t${key}`];
      const statuses: number[] = [];
      for (const authorization of spellings) {
        const res = await limited.get("/v1/not-a-route", { key: "none", headers: { authorization } });
        statuses.push(res.status);
      }
      // 3 per window: the fourth spelling is the fourth request of the same key
      expect(statuses).toEqual([404, 404, 404, 429]);
      const again = await limited.cost(() =>
        limited.post("/v1/counters/c/incr", undefined, {
          key: "none",
          headers: { authorization: `bEaReR ${key}`, "content-type": "application/json" },
          raw: JSON.stringify({ member: "m" }),
        }),
      );
      // read key: 403 for the write scope, or 429 first; never a write, never a Redis call
      expect([403, 429]).toContain(again.result.status);
      expect(again.commands).toBe(0);
      expect((await limited.keys()).every((k) => k.includes(":ratelimit:"))).toBe(true);
    }));
});

describe("refusals before work (review 3)", () => {
  it("401 for a 2 MiB streamed body without a key costs 0 commands and writes nothing", async () => {
    const { result, commands } = await api.cost(() =>
      api.post("/v1/counters/big/incr", undefined, {
        key: "none",
        raw: bigStream(2 * 1024 * 1024),
        headers: { "content-type": "application/json" },
      }),
    );
    expect(result.status).toBe(401);
    expect(commands).toBe(0);
  });

  it("repeated and very many query parameters never widen a limit nor 5xx", async () => {
    await api.put("/v1/webhooks/q", hook("https://example.com/hook"), admin);
    const repeated = await api.get("/v1/webhooks/q/deliveries?limit=1&limit=100000", admin);
    expect([200, 400]).toContain(repeated.status);
    if (repeated.status === 400) expect(repeated.body.error.code).toBe("invalid_request");
    const flipped = await api.get("/v1/webhooks/q/deliveries?limit=100000&limit=1", admin);
    expect([200, 400]).toContain(flipped.status);
    const many = await api.get(`/v1/webhooks/q/deliveries?${"x=1&".repeat(5000)}limit=2`, admin);
    expect(many.status).toBeLessThan(500);
    const long = await api.get(`/v1/webhooks/q/deliveries?limit=${"9".repeat(50_000)}`, admin);
    expect(long.status).toBe(400);
    expect((await api.del("/v1/webhooks/q", admin)).status).toBe(200);
  });

  it("the 21st webhook is 400 naming the limit and writes nothing", async () => {
    // start from none (the localhost. probe above may have created one)
    for (const w of (await api.get("/v1/webhooks", admin)).body.webhooks)
      await api.del(`/v1/webhooks/${w.name}`, admin);
    for (let i = 0; i < 20; i++) {
      const res = await api.put(`/v1/webhooks/h${i}`, hook("https://example.com/hook"), admin);
      expect(res.status, `h${i}`).toBe(201);
    }
    const before = (await api.keys()).sort();
    const hooksBefore = (await api.get("/v1/webhooks", admin)).body;
    const res = await api.put("/v1/webhooks/h20", hook("https://example.com/hook"), admin);
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.error)).toContain("20");
    expect((await api.keys()).sort()).toEqual(before);
    expect((await api.get("/v1/webhooks", admin)).body).toEqual(hooksBefore);
    // replacing an existing one at the limit still works
    expect((await api.put("/v1/webhooks/h0", hook("https://example.org/hook"), admin)).status).toBe(200);
    for (let i = 0; i < 20; i++) await api.del(`/v1/webhooks/h${i}`, admin);
  });
});

describe("Idempotency-Key limits (review 3)", () => {
  it.each([
    ["256 characters", "k".repeat(256)],
    ["a space inside", "a b"],
    ["non-ASCII", "clé"],
  ])("%s is 400 and writes nothing", async (_label, idem) => {
    const before = (await api.keys()).sort();
    const res = await api.post("/v1/counters/idem/incr", { member: "m" }, { headers: { "idempotency-key": idem } });
    expect(res.status).toBe(400);
    expect((await api.keys()).sort()).toEqual(before);
  });

  it("255 visible ASCII characters are accepted", async () => {
    const res = await api.post(
      "/v1/counters/idem/incr",
      { member: "m" },
      { headers: { "idempotency-key": "~".repeat(255) } },
    );
    expect(res.status).toBe(200);
  });
});
