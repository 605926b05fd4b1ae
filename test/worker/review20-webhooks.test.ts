/**
 * Review 20: webhook settings over HTTP: scopes (only admin may read or change them), the secret
 * never echoed (PUT's answer, its Idempotency-Key replay, the list, the delivery log, a refusal's
 * envelope), URL validation as docs/webhooks.md promises it (credentials, every reserved range
 * however written, *.localhost), refusals writing nothing, the list's CSV and the deliveries' limit.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createTestApi } from "../helpers/worker.ts";
import { parseCsv } from "../helpers/csv.ts";

const NOW = Date.UTC(2026, 10, 28, 15, 0);
const api = createTestApi({ label: "rv20-wh", start: NOW });
afterAll(() => api.cleanup());
const SECRET = "review20-secret-abcdefghij";
const body = (over: Record<string, unknown> = {}) => ({
  url: "https://example.com/hook",
  events: ["leaderboard.leader"],
  secret: SECRET,
  ...over,
});
const put = (name: string, b: unknown, key = "admin", headers: Record<string, string> = {}) =>
  api.put(`/v1/webhooks/${name}`, b, { key, headers });

describe("review 20: webhook scopes and the secret", () => {
  it("read and ingest keys get 403 on every webhook route; nothing written", async () => {
    const keys = (await api.keys()).sort();
    for (const key of ["read", "ingest"]) {
      expect((await put("w", body(), key)).status).toBe(403);
      expect((await api.get("/v1/webhooks", { key })).status).toBe(403);
      expect((await api.del("/v1/webhooks/w", { key })).status).toBe(403);
      expect((await api.post("/v1/webhooks/w/test", undefined, { key })).status).toBe(403);
      expect((await api.get("/v1/webhooks/w/deliveries", { key })).status).toBe(403);
    }
    expect((await api.keys()).sort()).toEqual(keys);
  });

  it("the secret is never answered: PUT, its replay, the list, the log, a refusal", async () => {
    const first = await put("s", body(), "admin", { "idempotency-key": "rv20-wh-1" });
    expect(first.status).toBe(201);
    const replay = await put("s", body(), "admin", { "idempotency-key": "rv20-wh-1" });
    expect(replay.status).toBe(201);
    expect(replay.body).toEqual(first.body);
    const list = await api.get("/v1/webhooks", { key: "admin" });
    expect((await api.post("/v1/webhooks/s/test", undefined, { key: "admin" })).status).toBe(202);
    const log = await api.get("/v1/webhooks/s/deliveries", { key: "admin" });
    const refused = await put("s", body({ url: "http://example.com/x" }));
    expect(refused.status).toBe(400);
    for (const res of [first, replay, list, log, refused]) expect(JSON.stringify(res.body)).not.toContain(SECRET);
    expect(Object.keys(first.body.webhook).sort()).toEqual(
      ["name", "url", "events", "filter", "n", "threshold", "createdAt", "updatedAt"].sort(),
    );
  });
});

describe("review 20: webhook URLs", () => {
  it("refused as docs/webhooks.md says, 400 naming url, nothing written", async () => {
    const keys = (await api.keys()).sort();
    for (const url of [
      "http://example.com/x",
      "ftp://example.com/x",
      "example.com/x",
      "https://user@example.com/x",
      "https://:pw@example.com/x",
      "https://localhost/x",
      "https://LOCALHOST./x",
      "https://api.localhost/x",
      "https://0.0.0.0/x",
      "https://0/x",
      "https://2130706433/x",
      "https://0x7f.1/x",
      "https://127.1/x",
      "https://10.0.0.1/x",
      "https://172.16.0.1/x",
      "https://192.168.1.1/x",
      "https://100.64.0.1/x",
      "https://169.254.169.254/x",
      "https://192.0.2.1/x",
      "https://198.18.0.1/x",
      "https://224.0.0.1/x",
      "https://255.255.255.255/x",
      "https://[::]/x",
      "https://[::1]/x",
      "https://[::ffff:127.0.0.1]/x",
      "https://[::ffff:7f00:1]/x",
      "https://[64:ff9b::a00:1]/x",
      "https://[fe80::1]/x",
      "https://[fc00::1]/x",
      "https://[fd12:3456::1]/x",
      "https://[ff02::1]/x",
      "https://[2001:db8::1]/x",
      "https://[2002:a9fe:a9fe::]/x",
      `https://example.com/${"x".repeat(2048)}`,
    ]) {
      const res = await put("u", body({ url }));
      expect({ url: url.slice(0, 60), status: res.status }).toEqual({ url: url.slice(0, 60), status: 400 });
      expect(res.body.error.code).toBe("invalid_request");
      expect(JSON.stringify(res.body.error)).toContain("url");
    }
    expect((await api.keys()).sort()).toEqual(keys);
  });

  it("public names and addresses are accepted", async () => {
    for (const url of [
      "https://example.com:8443/hooks?token=abc",
      "https://93.184.216.34/x",
      "https://[2606:4700:4700::1111]/x",
      "https://xn--bcher-kva.example/x",
    ]) {
      const res = await put("pub", body({ url }));
      expect({ url, ok: [200, 201].includes(res.status) }).toEqual({ url, ok: true });
    }
  });

  it("the other fields: every bad one listed in one 400, nothing written", async () => {
    const keys = (await api.keys()).sort();
    const res = await put(
      "many",
      body({ url: "http://x", events: ["nope"], secret: "short", n: 0, threshold: -1, filter: { room: "r" } }),
    );
    expect(res.status).toBe(400);
    const text = JSON.stringify(res.body.error);
    for (const field of ["url", "events", "secret", "n", "threshold"]) expect(text).toContain(field);
    for (const bad of [
      body({ filter: "board" }),
      body({ filter: { board: "b", room: "r" } }),
      body({ filter: {} }),
      body({ events: [] }),
      body({ events: "leaderboard.leader" }),
      body({ secret: "x".repeat(257) }),
      body({ secret: 12345678901234560 }),
      body({ n: 101 }),
      body({ n: 1.5 }),
    ]) {
      const r = await put("many", bad);
      expect({ bad, status: r.status }).toEqual({ bad, status: 400 });
      expect(r.body.error.code).toBe("invalid_request");
    }
    expect((await api.keys()).sort()).toEqual(keys);
  });

  it("the list as CSV: a URL with a comma is one quoted field; events and filter are JSON cells", async () => {
    expect((await put("csv", body({ url: "https://example.com/h?a=1,2", filter: { board: "b" } }))).status).toBe(201);
    const res = await api.get("/v1/webhooks", { key: "admin", headers: { accept: "text/csv" } });
    expect(res.status).toBe(200);
    const lines = String(res.body).split("\r\n");
    expect(lines[0]).toBe("name,url,events,filter,n,threshold,createdAt,updatedAt");
    const row = lines.find((l) => l.startsWith("csv,"));
    expect(row).toBe(
      `csv,"https://example.com/h?a=1,2","[""leaderboard.leader""]","{""board"":""b""}",10,,${NOW},${NOW}`,
    );
    expect(String(res.body)).not.toContain(SECRET);
  });

  it("the delivery log as CSV parses back (RFC 4180) to the JSON answer's rows", async () => {
    const json = (await api.get("/v1/webhooks/s/deliveries", { key: "admin" })).body.deliveries;
    expect(json.length).toBeGreaterThan(0);
    const res = await api.get("/v1/webhooks/s/deliveries", { key: "admin", headers: { accept: "text/csv" } });
    expect(res.status).toBe(200);
    const rows = parseCsv(String(res.body));
    const header = rows[0]!;
    expect(rows.slice(1)).toHaveLength(json.length);
    rows.slice(1).forEach((row, i) => {
      expect(row).toHaveLength(header.length);
      const record = json[i] as Record<string, unknown>;
      header.forEach((column, j) => {
        const v = record[column];
        expect(row[j], column).toBe(v === null || v === undefined ? "" : String(v));
      });
    });
  });

  it("deliveries ?limit: 1 and 50 allowed, 0 and 51 refused; an unknown webhook is a 404", async () => {
    expect((await api.get("/v1/webhooks/s/deliveries?limit=1", { key: "admin" })).status).toBe(200);
    expect((await api.get("/v1/webhooks/s/deliveries?limit=50", { key: "admin" })).status).toBe(200);
    for (const limit of ["0", "51", "x"])
      expect((await api.get(`/v1/webhooks/s/deliveries?limit=${limit}`, { key: "admin" })).status).toBe(400);
    expect((await api.post("/v1/webhooks/nobody/test", undefined, { key: "admin" })).status).toBe(404);
    expect((await api.del("/v1/webhooks/nobody", { key: "admin" })).body).toEqual({ deleted: false });
  });
});
