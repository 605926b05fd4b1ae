/**
 * Idempotency-Key and a retry that re-serializes the same JSON (key order, whitespace, escapes):
 * the same request, synchronously (a replay, as Stripe compares parameters) and queued (applied
 * once), either way round. A request is known by two digests of its body, the raw bytes' (what
 * every version hashed: record's first line, message's dedupe id) and the canonical JSON's (beside
 * it); either matching is the same request, so what the previous release wrote and reads is
 * unchanged (docs/ingest.md, "Idempotency-Key"). Old formats are built here as that release wrote
 * them: a record without the `"c":"…",` field, a message without `c`.
 *
 * Real parts: the app in workerd, real Redis behind the local Upstash server, the consumer fed
 * through cloudflare:test's message batches (test/helpers/ingest.ts).
 */
import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../functions/middleware/idempotency.ts";
import { createIngestApi, type IngestApi, type Sent } from "../helpers/ingest.ts";
import { command } from "../helpers/upstash-rest.ts";
import { cleanedUpAfterAll } from "../helpers/worker.ts";

const track = cleanedUpAfterAll<IngestApi>();
const newApi = (label: string) => track(createIngestApi({ label }));

// One request written three ways: the typed client's order, another order with spaces, escapes and 5.0.
const FIRST = '{"member":"m","by":5}';
const RESERIALIZED = '{ "by": 5.0,\n  "member": "\\u006d" }';
const CANONICAL = '{"by":5,"member":"m"}';
const OTHER = '{"member":"m","by":6}';

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function send(api: IngestApi, raw: string, key: string, queued = false) {
  const headers: Record<string, string> = { "content-type": "application/json", "idempotency-key": key };
  if (queued) Object.assign(headers, api.asyncHeaders);
  return api.post("/v1/counters/c/incr", undefined, { headers, raw });
}

async function scoreOf(api: IngestApi): Promise<number> {
  const res = await api.get("/v1/counters/c/members/m");
  return res.status === 404 ? 0 : res.body.score;
}

async function recordKey(api: IngestApi): Promise<string> {
  const keys = (await api.keys()).filter((k) => k.startsWith(`${api.prefix}:idem:`));
  expect(keys).toHaveLength(1);
  return keys[0]!;
}

/** The record as the previous release wrote it: the raw digest's line and the result, no canonical field. */
async function asPreviousRecord(api: IngestApi): Promise<string> {
  const key = await recordKey(api);
  const record = await command<string>(api.target, "GET", key);
  const old = record.replace(/\n"c":"[0-9a-f]{64}",/, "\n");
  expect(old).not.toBe(record);
  await command(api.target, "SET", key, old, "KEEPTTL");
  return old;
}

/** The message as the previous release's producer sent it: `d` and `f` only. */
const asPreviousMessage = (m: Sent): Sent => {
  const body = { ...m.body };
  expect(body.c).toMatch(/^[0-9a-f]{64}$/);
  delete body.c;
  return { ...m, body };
};

/** Delivers until nothing is handed back (Queues redelivers retried messages). */
async function drain(api: IngestApi, messages: Sent[]): Promise<{ applied: number; duplicates: number }> {
  let left = messages;
  const total = { applied: 0, duplicates: 0 };
  for (let round = 0; round < 5 && left.length > 0; round++) {
    const res = await api.deliver(left, { attempts: round + 1 });
    total.applied += res.stats.applied;
    total.duplicates += res.stats.duplicates;
    const retried = new Set(res.retryMessages.map((r) => r.msgId));
    left = left.filter((m) => retried.has(m.id));
  }
  expect(left).toEqual([]);
  return total;
}

describe("canonical JSON", () => {
  it("sorts keys at every depth, drops whitespace, writes strings and numbers as JSON.stringify does", () => {
    expect(canonicalJson(JSON.parse(RESERIALIZED))).toBe(CANONICAL);
    expect(canonicalJson(JSON.parse(' { "b" : [ {"y":1e0,"x":"\\u00e9"} , null ], "a" : true } '))).toBe(
      '{"a":true,"b":[{"x":"é","y":1},null]}',
    );
  });
});

describe("Idempotency-Key, synchronous: a re-serialized retry is the same request", () => {
  it("is replayed (200, the first response, Idempotent-Replayed) and writes nothing; another body is still a 409", async () => {
    const api = newApi("idc-sync");
    const first = await send(api, FIRST, "k");
    expect(first.status).toBe(200);
    const keys = await api.keys();
    for (const raw of [RESERIALIZED, CANONICAL, FIRST]) {
      const again = await send(api, raw, "k");
      expect({ raw, status: again.status, replayed: again.headers.get("idempotent-replayed") }).toEqual({
        raw,
        status: 200,
        replayed: "true",
      });
      expect(again.body).toEqual(first.body);
    }
    const other = await send(api, OTHER, "k");
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe("idempotency_key_reused");
    expect(await scoreOf(api)).toBe(5);
    expect(await api.keys()).toEqual(keys);
  });

  it("the record keeps the raw digest as its first line, as every version reads it, and the canonical digest beside it", async () => {
    const api = newApi("idc-record");
    expect((await send(api, FIRST, "k")).status).toBe(200);
    const record = await command<string>(api.target, "GET", await recordKey(api));
    expect(record).toBe(`${await sha256(FIRST)}\n"c":"${await sha256(CANONICAL)}","value":["5"]`);
  });

  it("the previous release reads this build's record as before: the same bytes replay the first result, a re-serialized body is its 409", async () => {
    // main's REPLAY_LUA before the canonical digest (then in src/redis/run.ts), run against this build's record
    const previousReplay = `local prev = redis.call('GET', KEYS[1])
local sep = string.find(prev, '\\n', 1, true)
if string.sub(prev, 1, sep - 1) ~= ARGV[1] then return '{"conflict":true}' end
return '{"replayed":true,' .. string.sub(prev, sep + 1) .. '}'`;
    const api = newApi("idc-old-reader");
    const first = await send(api, FIRST, "k");
    const key = await recordKey(api);
    const replay = (raw: string) =>
      sha256(raw).then((fp) => command<string>(api.target, "EVAL", previousReplay, 1, key, fp));
    const same = JSON.parse(await replay(FIRST));
    expect(same).toMatchObject({ replayed: true, value: ["5"] });
    expect(first.body).toEqual({ results: [{ member: "m", score: Number(same.value[0]) }] });
    expect(JSON.parse(await replay(RESERIALIZED))).toEqual({ conflict: true });
  });

  it("a record the previous release wrote (raw digest only): the same bytes replay; other bytes of the same JSON are its 409, unless the first were canonical", async () => {
    const api = newApi("idc-old-record");
    expect((await send(api, FIRST, "k")).status).toBe(200);
    await asPreviousRecord(api);
    const same = await send(api, FIRST, "k");
    expect([same.status, same.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    // no canonical digest to compare with: answered as that release answers it (nothing applied again)
    expect((await send(api, RESERIALIZED, "k")).status).toBe(409);
    expect(await scoreOf(api)).toBe(5);

    // a first body that was canonical JSON: its raw digest is the retry's canonical one
    expect((await send(api, CANONICAL, "k2")).status).toBe(200);
    const keys = (await api.keys()).filter((k) => k.includes(":idem:"));
    for (const k of keys) {
      const record = await command<string>(api.target, "GET", k);
      await command(api.target, "SET", k, record.replace(/\n"c":"[0-9a-f]{64}",/, "\n"), "KEEPTTL");
    }
    const retry = await send(api, RESERIALIZED, "k2");
    expect([retry.status, retry.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    expect(await scoreOf(api)).toBe(10);
  });

  it("a re-serialized replay is one round trip, as any replay", async () => {
    const api = newApi("idc-cost");
    await send(api, FIRST, "k");
    const again = await api.cost(() => send(api, RESERIALIZED, "k"));
    expect([again.requests, again.result.headers.get("idempotent-replayed")]).toEqual([1, "true"]);
  });
});

describe("Idempotency-Key, queued: a re-serialized retry is applied once", () => {
  it("a queued retry, delivered after the first was applied, is a duplicate", async () => {
    const api = newApi("idc-q-later");
    expect((await send(api, FIRST, "k", true)).status).toBe(202);
    const first = api.queue.sent.splice(0);
    expect(first[0]?.body).toMatchObject({ f: await sha256(FIRST), c: await sha256(CANONICAL) });
    expect(await drain(api, first)).toEqual({ applied: 1, duplicates: 0 });
    expect((await send(api, RESERIALIZED, "k", true)).status).toBe(202);
    expect(await drain(api, api.queue.sent.splice(0))).toEqual({ applied: 0, duplicates: 1 });
    expect(await scoreOf(api)).toBe(5);
  });

  it("both in one batch, either order: one applied, the other settled with it", async () => {
    for (const order of ["first", "retry"] as const) {
      const api = newApi(`idc-q-batch-${order}`);
      await send(api, FIRST, "k", true);
      await send(api, RESERIALIZED, "k", true);
      const sent = api.queue.sent.splice(0);
      expect(sent).toHaveLength(2);
      expect(sent[0]?.body.d).not.toBe(sent[1]?.body.d);
      expect(await drain(api, order === "first" ? sent : [...sent].reverse())).toEqual({ applied: 1, duplicates: 1 });
      expect(await scoreOf(api)).toBe(5);
    }
  });

  it("a request split into 2 messages and its re-serialized retry: each part applied once", async () => {
    const api = newApi("idc-q-split");
    const long = (i: number) => `s${String(i).padStart(4, "0")}-${"x".repeat(200)}`;
    const items = Array.from({ length: 800 }, (_, i) => ({ member: long(i), by: 2 }));
    const raw = JSON.stringify({ items });
    const reordered = `{"items":[${items.map((i) => `{ "by": ${i.by}, "member": "${i.member}" }`).join(",\n")}]}`;
    const post = (body: string) =>
      api.post("/v1/counters/c/incr", undefined, {
        headers: { "content-type": "application/json", "idempotency-key": "k", ...api.asyncHeaders },
        raw: body,
      });
    expect((await post(raw)).status).toBe(202);
    const first = api.queue.sent.splice(0);
    expect(first).toHaveLength(2);
    expect((await post(reordered)).status).toBe(202);
    const retry = api.queue.sent.splice(0);
    expect(retry).toHaveLength(2);
    // interleaved: part 1 of the first, part 2 of the retry (a duplicate: the record the first part
    // left is another request's), then the retry's part 1 (found under its canonical id) and the
    // first's part 2 (its own request: applied)
    expect(await drain(api, [first[0]!])).toEqual({ applied: 1, duplicates: 0 });
    expect(await drain(api, [retry[1]!])).toEqual({ applied: 0, duplicates: 1 });
    expect(await drain(api, [retry[0]!, first[1]!])).toEqual({ applied: 1, duplicates: 1 });
    const score = async (m: string) => (await api.get(`/v1/counters/c/members/${m}`)).body.score;
    expect([await score(long(0)), await score(long(799))]).toEqual([2, 2]);
  });

  it("another body under the same key is applied as its own request", async () => {
    const api = newApi("idc-q-other");
    await send(api, FIRST, "k", true);
    await drain(api, api.queue.sent.splice(0));
    await send(api, OTHER, "k", true);
    expect(await drain(api, api.queue.sent.splice(0))).toEqual({ applied: 1, duplicates: 0 });
    expect(await scoreOf(api)).toBe(11);
  });
});

describe("Idempotency-Key: one ledger for both ways, re-serialized", () => {
  it("synchronous first, queued re-serialized retry: not applied again", async () => {
    const api = newApi("idc-sync-q");
    expect((await send(api, FIRST, "k")).status).toBe(200);
    await send(api, RESERIALIZED, "k", true);
    expect(await drain(api, api.queue.sent.splice(0))).toEqual({ applied: 0, duplicates: 1 });
    expect(await scoreOf(api)).toBe(5);
    // and a queued request with another body under the key is its own (queued, nothing refuses it)
    await send(api, OTHER, "k", true);
    expect(await drain(api, api.queue.sent.splice(0))).toEqual({ applied: 1, duplicates: 0 });
    expect(await scoreOf(api)).toBe(11);
  });

  it("queued first, synchronous re-serialized retry: a replay of the 202 it got; another body a 409", async () => {
    const api = newApi("idc-q-sync");
    const first = await send(api, FIRST, "k", true);
    await drain(api, api.queue.sent.splice(0));
    const retry = await send(api, RESERIALIZED, "k");
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.body.summary).toMatchObject({ queued: true, requestId: first.body.requestId });
    const record = await command<string>(api.target, "GET", await recordKey(api));
    expect(record.startsWith(`${await sha256(FIRST)}\n"c":"${await sha256(CANONICAL)}","summary":`)).toBe(true);
    expect((await send(api, OTHER, "k")).status).toBe(409);
    expect(await scoreOf(api)).toBe(5);
  });

  it("queued first, its synchronous re-serialized retry applied before the queue runs: the queued one is the duplicate", async () => {
    const api = newApi("idc-q-pending-sync");
    await send(api, FIRST, "k", true);
    const queued = api.queue.sent.splice(0);
    // the client gave up on the 202 (say) and retried synchronously, re-serialized, before the queue ran
    expect((await send(api, RESERIALIZED, "k")).status).toBe(200);
    expect(await drain(api, queued)).toEqual({ applied: 0, duplicates: 1 });
    expect(await scoreOf(api)).toBe(5);
  });
});

describe("Idempotency-Key: what the previous release wrote still matches", () => {
  it("a message without `c` and its same-bytes retry from this build (either first): applied once", async () => {
    for (const oldFirst of [true, false]) {
      const api = newApi(`idc-old-msg-${oldFirst}`);
      await send(api, FIRST, "k", true);
      await send(api, FIRST, "k", true);
      const [a, b] = api.queue.sent.splice(0);
      const old = asPreviousMessage(oldFirst ? a! : b!);
      const fresh = oldFirst ? b! : a!;
      expect(await drain(api, [old])).toMatchObject({ applied: 1 });
      expect(await drain(api, [fresh])).toEqual({ applied: 0, duplicates: 1 });
      // and a synchronous retry finds the record whichever consumer path left it
      const sync = await send(api, FIRST, "k");
      expect([sync.status, sync.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
      expect(await scoreOf(api)).toBe(5);
    }
  });

  it("a record the previous release wrote, then a queued same-bytes retry from this build: not applied again", async () => {
    const api = newApi("idc-old-record-q");
    expect((await send(api, FIRST, "k")).status).toBe(200);
    await asPreviousRecord(api);
    await send(api, FIRST, "k", true);
    expect(await drain(api, api.queue.sent.splice(0))).toEqual({ applied: 0, duplicates: 1 });
    expect(await scoreOf(api)).toBe(5);
  });

  it("a message without `c` re-serialized by its retry: no canonical digest to compare, applied again (the previous release's answer; docs/ingest.md)", async () => {
    const api = newApi("idc-old-msg-reser");
    await send(api, FIRST, "k", true);
    const old = asPreviousMessage(api.queue.sent.splice(0)[0]!);
    await drain(api, [old]);
    await send(api, RESERIALIZED, "k", true);
    expect(await drain(api, api.queue.sent.splice(0))).toEqual({ applied: 1, duplicates: 0 });
    expect(await scoreOf(api)).toBe(10);
  });
});
