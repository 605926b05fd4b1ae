/**
 * Review 18: webhook delivery on real Redis with real HTTP receivers (node:http; workerd cannot
 * listen, so this half lives in the redis project): the `Edgestats-Signature` verified here with
 * node:crypto, independently of src/webhooks/sign.ts; filter semantics of `emit`; one stable `id`
 * across retries of a 5xx; a DELETE dropping deliveries already scheduled; the secret never in
 * `list`; URL validation without the local-HTTP switch; the QStash path against the stand-in that
 * checks each publish (test/helpers/webhook-receiver.ts).
 */
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { Ctx } from "../../src/context.ts";
import { RETRY_BASE_MS } from "../../src/webhooks/deliver.ts";
import * as webhooks from "../../src/webhooks/index.ts";
import { libraryTest } from "../helpers/library.ts";
import { eventually, qstashForTests, receiverForTests } from "../helpers/webhook-receiver.ts";

const lib = libraryTest("review18-wh");
const T0 = Date.UTC(2026, 10, 28, 9, 0, 30);
const SECRET = "review18-secret-0123456789";
const direct: webhooks.DeliverySettings = { allowLocalHttp: true, timeoutMs: 2_000 };
const receiver = receiverForTests();
const qstash = qstashForTests();
const at = (ctx: Ctx, now: number): Ctx => ({ ...ctx, now });
const gotAt = (path: string) => receiver.received.filter((r) => r.path === path);

/** The receiver's check, written from API.md alone: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>. */
function verify(header: string | undefined, body: string, nowMs: number): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header ?? "");
  if (!m) return false;
  if (Math.abs(Number(m[1]) - nowMs / 1000) > 300) return false;
  return createHmac("sha256", SECRET).update(`${m[1]}.${body}`).digest("hex") === m[2];
}

const leader = (board: string, player: string): webhooks.EventInput => ({
  type: "leaderboard.leader",
  subject: { kind: "board", name: board },
  data: { board, player, score: 1, previous: null, season: null },
  key: `${player}:1`,
});

describe("review 18: webhook delivery", () => {
  it("direct: signed as API.md says, filter respected, the secret never listed", async () => {
    const ctx = lib.ctx(T0, "direct");
    const base = { events: ["leaderboard.leader"] as webhooks.EventType[], secret: SECRET };
    await webhooks.put(ctx, "only-b", { ...base, url: `${receiver.url}/only-b`, filter: { board: "b" } }, direct);
    await webhooks.put(ctx, "all", { ...base, url: `${receiver.url}/all` }, direct);
    expect(JSON.stringify(await webhooks.list(ctx))).not.toContain(SECRET);
    await webhooks.emit(ctx, leader("b", "p1"));
    await webhooks.emit(ctx, leader("other", "p2"));
    expect(await webhooks.deliverDue(ctx, direct)).toMatchObject({ claimed: 3, delivered: 3 });
    expect(gotAt("/only-b").map((r) => JSON.parse(r.body).data.board)).toEqual(["b"]);
    expect(
      gotAt("/all")
        .map((r) => JSON.parse(r.body).data.board)
        .sort(),
    ).toEqual(["b", "other"]);
    for (const r of [...gotAt("/only-b"), ...gotAt("/all")]) {
      expect(verify(r.headers["edgestats-signature"], r.body, T0)).toBe(true);
      expect(verify(r.headers["edgestats-signature"], r.body + " ", T0)).toBe(false);
      const event = JSON.parse(r.body);
      expect(Object.keys(event).sort()).toEqual(["at", "data", "id", "type"]);
      expect(event.type).toBe("leaderboard.leader");
      expect(typeof event.at).toBe("number");
    }
  });

  it("a 5xx is retried with backoff; every attempt carries the same id; a repeat emit is not queued again", async () => {
    const ctx = lib.ctx(T0, "retry");
    await webhooks.put(
      ctx,
      "r",
      { url: `${receiver.url}/retry`, events: ["leaderboard.leader"], secret: SECRET },
      direct,
    );
    const first = await webhooks.emit(ctx, leader("b", "p1"));
    expect((await webhooks.emit(ctx, leader("b", "p1"))).repeated).toBe(true);
    receiver.respondWith(503, 500);
    expect(await webhooks.deliverDue(ctx, direct)).toMatchObject({ claimed: 1, retrying: 1 });
    expect(await webhooks.deliverDue(at(ctx, T0 + RETRY_BASE_MS - 1), direct)).toMatchObject({ claimed: 0 });
    expect(await webhooks.deliverDue(at(ctx, T0 + RETRY_BASE_MS), direct)).toMatchObject({ claimed: 1, retrying: 1 });
    const t2 = T0 + 3 * RETRY_BASE_MS;
    expect(await webhooks.deliverDue(at(ctx, t2 - 1), direct)).toMatchObject({ claimed: 0 });
    expect(await webhooks.deliverDue(at(ctx, t2), direct)).toMatchObject({ claimed: 1, delivered: 1 });
    const got = gotAt("/retry");
    expect(got.map((g) => JSON.parse(g.body).id)).toEqual([first.id, first.id, first.id]);
    expect(
      got.every((g, i) => verify(g.headers["edgestats-signature"], g.body, [T0, T0 + RETRY_BASE_MS, t2][i]!)),
    ).toBe(true);
  });

  it("DELETE drops the deliveries already scheduled (and a retry waiting)", async () => {
    const ctx = lib.ctx(T0, "delete");
    await webhooks.put(
      ctx,
      "d",
      { url: `${receiver.url}/delete`, events: ["leaderboard.leader"], secret: SECRET },
      direct,
    );
    receiver.respondWith(500);
    await webhooks.emit(ctx, leader("b", "p1"));
    expect(await webhooks.deliverDue(ctx, direct)).toMatchObject({ claimed: 1, retrying: 1 });
    await webhooks.emit(ctx, leader("b", "p2"));
    await webhooks.remove(ctx, "d");
    expect(await webhooks.deliverDue(at(ctx, T0 + 10 * RETRY_BASE_MS), direct)).toMatchObject({ claimed: 0 });
    expect(gotAt("/delete")).toHaveLength(1);
  });

  it("URLs: private and loopback targets refused unless local HTTP is allowed; nothing written", async () => {
    const ctx = lib.ctx(T0, "urls");
    const prod = { allowLocalHttp: false };
    for (const url of [
      "http://example.com/x",
      "https://127.0.0.1/x",
      "https://10.1.2.3/x",
      "https://[::1]/x",
      "https://169.254.169.254/latest",
      "https://localhost/x",
      "https://user:pw@example.com/x",
      `${receiver.url}/x`,
    ]) {
      await expect(
        webhooks.put(ctx, "u", { url, events: ["leaderboard.leader"], secret: SECRET }, prod),
        url,
      ).rejects.toThrow();
    }
    expect((await webhooks.list(ctx)).webhooks).toEqual([]);
  });

  // Severity: low (docs/webhooks.md promises 6to4 judged "by the IPv4 address inside it", and
  // Teredo refused). `internalHost` matches the 6to4 address with a regex over the text WHATWG URL
  // serialises, which compresses a run of zero hextets to `::`: the IPv4 address of 2002:c0a8:0::1
  // (192.168.0.0) is written `[2002:c0a8::1]`, and the regex, wanting two hextets before the next
  // `:`, misses it, so every 6to4 address of an IPv4 x.y.0.0 (10.0.0.0, 127.0.0.0, 192.168.0.0)
  // is accepted; Teredo `2001:0::/32` written `[2001::1]` too. Fix: expand the IPv6 address to its
  // eight hextets before judging the prefixes (no text matching on the compressed form).
  it("6to4 and Teredo addresses written compressed are refused as the docs say", async () => {
    const ctx = lib.ctx(T0, "urls-6to4");
    const accepted: string[] = [];
    for (const url of [
      "https://[2002:c0a8::1]/x", // 6to4 of 192.168.0.0
      "https://[2002:a00::1]/x", // 10.0.0.0
      "https://[2002:7f00::]/x", // 127.0.0.0
      "https://[2002::1]/x", // 0.0.0.0
      "https://[2001::1]/x", // Teredo 2001:0::/32
    ]) {
      const ok = await webhooks
        .put(ctx, "u", { url, events: ["leaderboard.leader"], secret: SECRET }, { allowLocalHttp: false })
        .then(
          () => true,
          () => false,
        );
      if (ok) accepted.push(url);
    }
    expect(accepted).toEqual([]);
  });

  // the public neighbours stay accepted (a fix must not refuse them)
  it("public IPv6 and a 6to4 of a public IPv4 are accepted", async () => {
    const ctx = lib.ctx(T0, "urls-public");
    for (const url of ["https://[2002:808:808::1]/x", "https://[2606:4700::1111]/x", "https://[2001:4860::8888]/x"]) {
      await webhooks.put(ctx, "u", { url, events: ["leaderboard.leader"], secret: SECRET }, { allowLocalHttp: false });
    }
    expect((await webhooks.list(ctx)).webhooks).toHaveLength(1);
  });

  it("filters: of the kind the events are about; stream/room required where the docs say; PUT answers no secret", async () => {
    const ctx = lib.ctx(T0, "filters");
    const url = "https://example.com/hook";
    const bad: webhooks.WebhookInput[] = [
      { url, events: ["presence.peak"], secret: SECRET },
      { url, events: ["trending.entered"], secret: SECRET },
      { url, events: ["presence.peak"], filter: { board: "b" }, secret: SECRET },
      { url, events: ["presence.peak", "leaderboard.leader"], filter: { room: "r" }, secret: SECRET },
      { url, events: ["leaderboard.leader"], filter: { board: "b", stream: "s" } as never, secret: SECRET },
      { url, events: ["leaderboard.leader"], threshold: 5, secret: SECRET },
      { url, events: ["leaderboard.leader", "leaderboard.leader"], secret: SECRET },
      { url, events: ["leaderboard.leader"], secret: "short" },
    ];
    for (const input of bad)
      await expect(webhooks.put(ctx, "f", input, { allowLocalHttp: false }), JSON.stringify(input)).rejects.toThrow();
    expect((await webhooks.list(ctx)).webhooks).toEqual([]);
    for (const input of [
      { url, events: ["trending.rising"], secret: SECRET },
      { url, events: ["leaderboard.leader"], secret: SECRET },
      {
        url,
        events: ["trending.entered", "trending.left", "trending.rising"],
        filter: { stream: "s" },
        secret: SECRET,
      },
    ] as webhooks.WebhookInput[]) {
      const put = await webhooks.put(ctx, "f", input, { allowLocalHttp: false });
      expect(JSON.stringify(put)).not.toContain(SECRET);
    }
  });

  it("QStash: one publish per delivery as QStash documents it; the forwarded signature verifies; no secret leaves", async () => {
    const ctx = lib.ctx(T0, "qstash");
    const settings: webhooks.DeliverySettings = { ...direct, qstash: { url: qstash.url, token: qstash.token } };
    await webhooks.put(
      ctx,
      "q",
      { url: `${receiver.url}/via-qstash`, events: ["leaderboard.leader"], secret: SECRET },
      settings,
    );
    const ev = await webhooks.emit(ctx, leader("b", "p1"));
    expect(await webhooks.deliverDue(ctx, settings)).toMatchObject({ claimed: 1, delivered: 1 });
    await eventually(() => gotAt("/via-qstash").length === 1);
    expect(qstash.problems).toEqual([]);
    const pub = qstash.published.filter((p) => p.path.endsWith("/via-qstash"));
    expect(pub).toHaveLength(1);
    expect(JSON.stringify(pub[0])).not.toContain(SECRET);
    const got = gotAt("/via-qstash")[0]!;
    expect(JSON.parse(got.body).id).toBe(ev.id);
    expect(verify(got.headers["edgestats-signature"], got.body, T0)).toBe(true);
  });
});
