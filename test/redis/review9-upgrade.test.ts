/**
 * Review 9 (adversarial): deploying this build over a live database the previous release wrote.
 * The previous release is commit ce4867d; since then the counters' index got per-kind cursors and
 * the trimming of expired fields (src/counters/trim.ts). The Idempotency-Key fingerprint was for a
 * while the SHA-256 of the body as canonical JSON (ce4867d hashed the raw body bytes, which also
 * name queued messages' dedupe ids); the findings below put it back to the raw bytes, and the
 * idempotency tests here now pin that a retry across the deploy is still the same request.
 *
 * CI clones without the old tree, so every old-format state here is built in the test, exactly as
 * ce4867d wrote it (checked byte for byte against ce4867d's own code in a worktree of it, see each
 * builder's comment). Real Redis behind the local Upstash server; time is injected.
 */
import { createHash } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../functions/app.ts";
import type { Ctx } from "../../src/context.ts";
import * as counters from "../../src/counters/index.ts";
import * as presence from "../../src/presence/index.ts";
import { TRIM_MARGIN } from "../../src/counters/trim.ts";
import { NotFoundError } from "../../src/errors.ts";
import { acceptItems, consumeBatch, toMessages, type QueuedMessage } from "../../src/ingest/index.ts";
import { createRedis } from "../../src/redis/client.ts";
import { libraryTest } from "../helpers/library.ts";
import { command, keysUnder, resetStats, statsOf } from "../helpers/upstash-rest.ts";

const lib = libraryTest("review9-upgrade", { timeoutMs: 30_000 });
const { target } = lib;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const CURSORS = ["c:hd", "c:hm", "c:dm", "c:w", "c:m"];

const indexKey = (ctx: Ctx, name: string) => `${ctx.prefix}:counters:${name}:index`;

async function indexOf(ctx: Ctx, name: string): Promise<Map<string, string>> {
  const all = await command<string[]>(target, "HGETALL", indexKey(ctx, name));
  const out = new Map<string, string>();
  for (let i = 0; i < all.length; i += 2) out.set(all[i]!, all[i + 1]!);
  return out;
}

/**
 * A write as ce4867d made it. ce4867d's increment script is this build's without the cursors
 * (git diff ce4867d -- src/counters/scripts.ts: trimNote/trimStep/trimFlush and the `c:*` fields
 * only). With no cursor in the index, this build's script takes no drop step (a missing cursor
 * first learns: one HMGET, nothing written but the cursor), so deleting the cursors after each
 * write leaves exactly ce4867d's index. Checked: 1,543 writes over 450 days (hour, day, week and
 * month items with ttls, late hour writes) by ce4867d's own library and by this builder gave the
 * same 4,268 index fields and values.
 */
async function writeAsCe4867d(ctx: Ctx, name: string, items: counters.IncrItem[]) {
  const out = await counters.increment(ctx, name, items);
  await command(target, "HDEL", indexKey(ctx, name), ...CURSORS);
  return out;
}

/** One write of the workload at hour `h` after `t0` (every 7 hours: all four periods, a late hour now and then). */
function itemsAt(h: number, now: number): counters.IncrItem[] {
  const items: counters.IncrItem[] = [
    { member: `m${h % 3}`, period: "hour", ttl: 2 * 86400 },
    { member: "d", period: "day", ttl: 3 * 86400 },
    { member: "w", period: "week", ttl: 20 * 86400 },
    { member: "mo", period: "month", ttl: 40 * 86400 },
  ];
  if (h % 11 === 0) items.push({ member: "late", period: "hour", at: now - 30 * HOUR, ttl: 3 * 86400 });
  return items;
}

async function scoreOr0(ctx: Ctx, name: string, member: string, options: counters.ReadOptions) {
  try {
    return (await counters.memberOf(ctx, name, member, options)).score;
  } catch (error) {
    if (error instanceof NotFoundError) return 0;
    throw error;
  }
}

describe("counters: an index ce4867d wrote (no cursors), then this build's writes", () => {
  // 450 days of history before the deploy: older than the hour cursor's start (401 days back)
  const T0 = Date.UTC(2025, 6, 1, 5);
  const HISTORY_HOURS = 450 * 24;
  const DEPLOY = T0 + HISTORY_HOURS * HOUR;
  const AFTER_HOURS = 40 * 24;
  const old = lib.ctx(T0, "old-index");
  const native = lib.ctx(T0, "native-index");
  const at = (ctx: Ctx, now: number): Ctx => ({ ...ctx, now });
  let before: Map<string, string>;
  const results: { upgraded: unknown; native: unknown }[] = [];
  const firstCost = { upgraded: 0, native: 0 };

  beforeAll(async () => {
    for (let h = 0; h < HISTORY_HOURS; h += 7) {
      const now = T0 + h * HOUR + 60_000;
      await writeAsCe4867d(at(old, now), "c", itemsAt(h, now));
      await counters.increment(at(native, now), "c", itemsAt(h, now));
    }
    before = await indexOf(old, "c");
    // the deploy: from here on this build writes both (hourly, an hour and its rollups created each time)
    const tag = `r9up${Math.random().toString(36).slice(2, 8)}`;
    const counted = createRedis({ url: target.url, token: `${target.token}.${tag}` });
    for (let h = 0; h < AFTER_HOURS; h++) {
      const now = DEPLOY + h * HOUR + 60_000;
      const items: counters.IncrItem[] = [{ member: `m${h % 3}`, period: "hour", ttl: 2 * 86400 }];
      if (h % 24 === 0) items.push({ member: "d", period: "day", ttl: 3 * 86400 });
      if (h === 0) await resetStats(target, tag);
      const upgraded = await counters.increment({ ...old, redis: h === 0 ? counted : old.redis, now }, "c", items);
      if (h === 0) {
        firstCost.upgraded = (await statsOf(target, tag)).commands;
        await resetStats(target, tag);
      }
      const nat = await counters.increment({ ...native, redis: h === 0 ? counted : native.redis, now }, "c", items);
      if (h === 0) firstCost.native = (await statsOf(target, tag)).commands;
      results.push({ upgraded: upgraded.results, native: nat.results });
    }
  }, 600_000);

  it("the old index has q (its life began with quarter rollups: trimming applies) and no cursor", () => {
    expect(before.get("q")).toBe("1");
    for (const c of CURSORS) expect(before.has(c)).toBe(false);
    expect(before.size).toBeGreaterThan(4000);
  });

  it("every write after the deploy returns the score the same write returns on an index this build wrote all along", () => {
    expect(results.length).toBe(AFTER_HOURS);
    for (const r of results) expect(r.upgraded).toEqual(r.native);
  });

  it("the first write after the deploy initialises the cursors with at most one more command than on a native index (one HMGET, bounded)", async () => {
    expect(firstCost.upgraded).toBeLessThanOrEqual(firstCost.native + 1);
    const index = await indexOf(old, "c");
    for (const c of ["c:hd", "c:hm", "c:dm"]) expect(index.get(c)).toMatch(/^\d+\|\d*$/);
  });

  it("the upgraded index never lost a field a rollup above it still needs (each dropped field's day or month rollup had expired by the margin)", async () => {
    const after = await indexOf(old, "c");
    const end = DEPLOY + AFTER_HOURS * HOUR;
    for (const [field, value] of before) {
      if (after.has(field) || !field.startsWith("b:")) continue;
      // the field went: its own recorded expiry, and its day rollup's (hours, quarters), had passed
      expect(Number(value) + TRIM_MARGIN).toBeLessThan(end);
      const m = /^(b:.*):hour:(?:by-quarter:)?(\d{8})(?:\d{2}|T\d{2})$/.exec(field);
      if (m) expect(Number(before.get(`${m[1]}:hour:by-day:${m[2]}`) ?? 0) + TRIM_MARGIN).toBeLessThan(end);
    }
  });

  // RESOLVED: a missing cursor on an existing index starts at TRIM_ORIGIN (2024-01-01; trim.ts).
  // Found before the fix:
  // FINDING (low): the cursors of an index that predates them start at the first write's groups
  // minus how far writes reach back (trim.ts KINDS.back: 401 days for hd, 14 months for hm/dm/m,
  // 58 weeks for w), so an old index's fields older than that are never visited: they stay for
  // ever (here the 49 days of hours before that start: 356 hour and quarter fields, 40 days of
  // hourly writes after the deploy; a 3-year-old counter keeps ~2 years of such fields). Bounded
  // (nothing is added), but it is the growth issue 15 / review 8 removed, frozen at the deploy;
  // DELETE's HGETALL still reads them. Fix: start a missing cursor on an existing index (not
  // `fresh`) at a fixed group instead of `minOf - back`: the first release's date minus 401 days
  // (no index can list an earlier key); the learn's look-ahead (31/12/26 groups per HMGET when
  // nothing is listed) crosses the empty stretch in a few dozen steps, once per index.
  /** Hour and quarter fields of days more than 60 days before the run's end: all long expired (2-day ttls). */
  const staleHours = (index: Map<string, string>) => {
    const cutoff = new Date(DEPLOY + AFTER_HOURS * HOUR - 60 * DAY).toISOString().slice(0, 10).replaceAll("-", "");
    return [...index.keys()].filter((f) => {
      const m = /:hour:(?:by-quarter:)?(\d{8})(?:\d{2}|T\d{2})$/.exec(f);
      return m !== null && m[1]! < cutoff;
    });
  };

  it("an index this build wrote all along keeps no hour field of a day long expired", async () => {
    expect(staleHours(await indexOf(native, "c"))).toEqual([]);
  });

  it("after the deploy the old index's long expired hour fields go, also those older than 401 days before the deploy", async () => {
    const after = await indexOf(old, "c");
    // the history's first day: its rollup expired ~490 days before the end of the run
    expect(Number(before.get(`b:${old.prefix}:counters:c:hour:by-day:20250701`))).toBeLessThan(DEPLOY - 400 * DAY);
    expect(staleHours(before).length).toBeGreaterThan(1000);
    expect(staleHours(after)).toEqual([]);
  });
});

describe("counters: the cursors keep up with a week or month counter (one key created per period)", () => {
  // RESOLVED: a w/m learn drops the run of expired anchors it read in the same step (trim.ts):
  // 2 fields kept (was 101; 50 months: 2, was 24). Found before the fix:
  // FINDING (medium, issue 15, not specific to the upgrade): a write takes at most one cursor step
  // and only when it creates a key; a listed group needs two steps (learn, then drop). A week (or
  // month) counter creates one key per period, so its cursor advances one group every two periods
  // while one group is added per period: the index still grows with the counter's age, at half the
  // rate (200 weeks of 8-day buckets: 101 `b:` fields kept, 2 needed; 50 months: 24 kept).
  // Fix: for `w`/`m` (one field per group) let the learn cover the run of consecutive anchors its
  // HMGET already reads (up to 26/12) and store their bound and count in the cursor, so the next
  // step's one HDEL drops the whole run; or drop in the learn step when its bound has passed.
  it("200 weeks of a week counter with 8-day buckets: the index keeps only the live weeks' fields (and the cursor)", async () => {
    const ctx = lib.ctx(Date.UTC(2024, 0, 3, 5), "weekly");
    for (let w = 0; w < 200; w++) {
      const now = ctx.now + w * 7 * DAY;
      await counters.increment({ ...ctx, now }, "w", [{ member: "x", period: "week", ttl: 8 * 86400 }]);
    }
    const fields = [...(await indexOf(ctx, "w")).keys()].filter((f) => f.startsWith("b:"));
    expect(fields.length).toBeLessThanOrEqual(4);
  });
});

describe("counters: reads and writes across the deploy, keys expiring on the injected clock", () => {
  // Three copies of one counter: `ref` written as ce4867d wrote it all along (the previous
  // release's answers), `up` as ce4867d until the deploy and by this build after, `native` by this
  // build all along. Redis' own expiry runs on the wall clock, so after every write each key whose
  // recorded expiry (ref's index keeps them all) has passed on the injected clock is deleted in
  // all three, as Redis would have by then.
  const R0 = Date.UTC(2026, 8, 1, 0, 30);
  const DEPLOY = R0 + 30 * DAY;
  const END = DEPLOY + 20 * DAY;
  const ref = lib.ctx(R0, "ref");
  const up = lib.ctx(R0, "up");
  const native = lib.ctx(R0, "nat");
  const swept = new Map<string, string>();
  const mismatches: unknown[] = [];
  const reads: { at: number; ref: unknown; up: unknown; native: unknown }[] = [];

  async function sweep(now: number) {
    for (const [field, value] of await indexOf(ref, "c")) {
      if (!field.startsWith("b:")) continue;
      const e = Number(value);
      if (e < 1e12 || e > now || swept.get(field) === value) continue;
      swept.set(field, value);
      const rest = field.slice(2 + ref.prefix.length);
      await command(target, "DEL", ref.prefix + rest, up.prefix + rest, native.prefix + rest);
    }
  }

  function items(h: number, now: number): counters.IncrItem[] {
    const list: counters.IncrItem[] = [
      { member: `m${h % 3}`, period: "hour", ttl: 2 * 86400, by: 1 + (h % 5) },
      { member: `d${h % 2}`, period: "day", ttl: 3 * 86400 },
      { member: "w", period: "week", ttl: 10 * 86400 },
      { member: "mo", period: "month", ttl: 35 * 86400 },
    ];
    if (h % 11 === 0) list.push({ member: "late", period: "hour", at: now - 30 * HOUR, ttl: 3 * 86400 });
    return list;
  }

  async function readAll(now: number, ctx: Ctx) {
    const out: unknown[] = [];
    const ranges: counters.ReadOptions[] = [
      { period: "hour", from: now - 30 * HOUR, to: now },
      { period: "hour", from: now - 10 * DAY, to: now },
      { period: "day", from: now - 40 * DAY, to: now },
      { period: "week", from: now - 40 * DAY, to: now },
      { period: "month", from: now - 60 * DAY, to: now },
    ];
    for (const range of ranges) {
      for (const member of ["m0", "m1", "m2", "d0", "d1", "w", "mo", "late"])
        out.push([member, await scoreOr0({ ...ctx, now }, "c", member, range)]);
      out.push(await counters.ranked({ ...ctx, now }, "c", "top", 10, range));
    }
    return out;
  }

  beforeAll(async () => {
    for (let now = R0; now < END; now += HOUR) {
      const h = Math.round((now - R0) / HOUR);
      const list = items(h, now);
      const a = await writeAsCe4867d({ ...ref, now }, "c", list);
      const b =
        now < DEPLOY
          ? await writeAsCe4867d({ ...up, now }, "c", list)
          : await counters.increment({ ...up, now }, "c", list);
      const c = await counters.increment({ ...native, now }, "c", list);
      if (
        JSON.stringify(a.results) !== JSON.stringify(b.results) ||
        JSON.stringify(a.results) !== JSON.stringify(c.results)
      )
        mismatches.push({ now: new Date(now).toISOString(), ref: a.results, up: b.results, native: c.results });
      await sweep(now);
      if (now >= DEPLOY && (now - DEPLOY) % (5 * DAY) === 0) {
        const t = now + 30 * 60_000;
        reads.push({ at: t, ref: await readAll(t, ref), up: await readAll(t, up), native: await readAll(t, native) });
      }
    }
  }, 600_000);

  it("every write returns the same scores on all three copies (nothing counted twice or lost at the deploy)", () => {
    expect(mismatches).toEqual([]);
  });

  it("reads on the upgraded index give the previous release's answers (members and top lists over hours, days, weeks, months)", () => {
    expect(reads.length).toBe(4);
    for (const r of reads) {
      // not vacuous: most member reads find a score
      const found = (r.ref as unknown[]).filter((x) => Array.isArray(x) && typeof x[1] === "number" && x[1] > 0);
      expect(found.length).toBeGreaterThan(5);
      expect({ at: r.at, read: r.up }).toEqual({ at: r.at, read: r.ref });
    }
  });

  it("and so do reads on an index this build wrote all along", () => {
    for (const r of reads) expect({ at: r.at, read: r.native }).toEqual({ at: r.at, read: r.ref });
  });

  it("a member delete over 400 days of hours decides on the upgraded index as on a native one (the same keys, about the same commands)", async () => {
    const tag = `r9del${Math.random().toString(36).slice(2, 8)}`;
    const counted = createRedis({ url: target.url, token: `${target.token}.${tag}` });
    const outcome = async (ctx: Ctx, member: string) => {
      await resetStats(target, tag);
      const range = { period: "hour" as const, from: END - 400 * DAY, to: END };
      let result: unknown;
      try {
        result = (await counters.deleteMember({ ...ctx, redis: counted, now: END }, "c", member, range)).removed;
      } catch (error) {
        result = error instanceof Error ? error.constructor.name : String(error);
      }
      const commands = (await statsOf(target, tag)).commands;
      const left = await scoreOr0({ ...ctx, now: END }, "c", member, range);
      return { result, commands, left };
    };
    for (const member of ["late", "m1"]) {
      const u = await outcome(up, member);
      const n = await outcome(native, member);
      // the same keys lose it; the commands (reads and ZREMs: 138 for "late" natively) differ by
      // the index fields the upgraded one has not dropped yet, at most a command or two
      expect({ member, result: u.result, left: u.left }).toEqual({ member, result: n.result, left: n.left });
      expect(Math.abs(u.commands - n.commands)).toBeLessThanOrEqual(2);
    }
  });

  it("the upgraded index drops the expired fields (it ends no larger than the previous release's)", async () => {
    const u = [...(await indexOf(up, "c")).keys()].filter((f) => f.startsWith("b:")).length;
    const r = [...(await indexOf(ref, "c")).keys()].filter((f) => f.startsWith("b:")).length;
    expect(u).toBeLessThan(r);
  });
});

describe("Idempotency-Key: a first attempt the previous release recorded, a retry this build serves", () => {
  const KEYS = { ingest: "review9-ingest-key-01", read: "review9-read-key-0001", admin: "review9-admin-key-001" };
  const settings = { trendingRetentionHours: 50, presenceTimeoutSeconds: 300 };
  const NOW = Date.UTC(2026, 10, 27, 5);
  let now = NOW;
  const app = createApp({ now: () => now });
  // What the typed client sends for `counter("c").incr([{ member: "a", by: 3 }])`: JSON.stringify
  // of its own object, keys in the caller's order (src/client.ts) — not canonical JSON.
  const RAW = '{"items":[{"member":"a","by":3}]}';
  const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
  let serial = 0;

  function post(prefix: string, key: string, body = RAW) {
    return app.request(
      "/v1/counters/c/incr",
      {
        method: "POST",
        body,
        headers: {
          authorization: `Bearer ${KEYS.ingest}`,
          "content-type": "application/json",
          "idempotency-key": key,
        },
      },
      lib.appEnv(KEYS, { KEY_PREFIX: prefix }),
    );
  }

  async function recordKeyOf(prefix: string): Promise<string> {
    const keys = (await keysUnder(target, prefix)).filter((k) => k.startsWith(`${prefix}:idem:`));
    expect(keys.length).toBe(1);
    return keys[0]!;
  }

  /**
   * Turns this build's record of a synchronous keyed write into ce4867d's record of it: ce4867d's
   * fingerprint was SHA-256 of the raw body (functions/middleware/idempotency.ts at ce4867d), the
   * rest is unchanged. Checked against ce4867d's own app: same record key, same TTL (86400 s),
   * `<sha256(raw)>\n"value":["3"]` where this build writes `<sha256(canonical)>\n"value":["3"]`.
   */
  async function asCe4867dRecord(key: string, raw: string) {
    const record = await command<string>(target, "GET", key);
    await command(target, "SET", key, sha256(raw) + record.slice(64), "KEEPTTL");
  }

  /** This build's fingerprint of `raw` and the record digest of `key`, from its own record (a scratch prefix). */
  async function thisBuildsIds(key: string, raw = RAW) {
    const scratch = lib.ctx(NOW, `r9fp${++serial}`).prefix;
    expect((await post(scratch, key, raw)).status).toBe(200);
    const recordKey = await recordKeyOf(scratch);
    const fingerprint = (await command<string>(target, "GET", recordKey)).slice(0, 64);
    return { digest: recordKey.split(":").pop()!, fingerprint };
  }

  /**
   * The message a producer sends for a queued keyed write (functions/middleware/respond-async.ts,
   * unchanged since ce4867d but for the fingerprint it is handed): checked against ce4867d's
   * producer, whose message is this with `f` = SHA-256 of the raw body and `d`'s 16 hex of it.
   */
  async function queuedMessage(
    prefix: string,
    at: number,
    requestId: string,
    ids: { digest: string; fingerprint: string },
  ) {
    const items = [{ member: "a", by: 3 }];
    const accepted = await acceptItems("counters", "c", items, prefix, at, settings);
    const [message] = toMessages(
      {
        kind: "counters",
        name: "c",
        t: at,
        r: requestId,
        idempotencyId: `${ids.digest}:${ids.fingerprint.slice(0, 16)}`,
        fingerprint: ids.fingerprint,
      },
      accepted,
    );
    return message!;
  }

  /** Hands `bodies` to this build's consumer as one batch; returns how many were acked. */
  async function deliver(prefix: string, at: number, bodies: unknown[]) {
    let acked = 0;
    const messages: QueuedMessage[] = bodies.map((body, i) => ({
      id: `msg-${++serial}-${i}`,
      timestamp: new Date(at),
      attempts: 1,
      body,
      ack: () => {
        acked++;
      },
      retry: () => undefined,
    }));
    await consumeBatch({ redis: lib.redis, prefix, now: at }, messages, settings, { onStatsError: () => undefined });
    return acked;
  }

  const scoreOf = async (prefix: string) => scoreOr0({ redis: lib.redis, prefix, now }, "c", "a", {});

  // The effect, quantified: only keyed writes whose first attempt ce4867d served and whose retry
  // (same Idempotency-Key) this build serves, within the record's 24 h; only bodies that are not
  // already canonical JSON (every typed-client body with more than one key per object is not: it
  // writes `member` before `by`). The typed client retries within seconds (502/503/504, timeouts),
  // so it is the requests in flight at the deploy (during a gradual deployment, the whole time both
  // versions serve, both ways: a record this build wrote, retried on ce4867d, fails the same way).

  // RESOLVED: this build keeps ce4867d's fingerprint (the raw body's SHA-256; canonical JSON was
  // left out for the three findings here), so these hold. Found against the canonical fingerprint:
  // FINDING (low): the synchronous retry of a write ce4867d applied and recorded is refused with
  // 409 (the client sees a failure for a write that was applied once; nothing is double-counted).
  // Fix (worth it, ~6 lines, no extra command): for 25 h after the deploy the middleware also keeps
  // `legacy = sha256(body)` when the body is not canonical, and run.ts' replay check accepts a
  // record whose fingerprint is either (ARGV gets the second one).
  it("a synchronous retry of a write ce4867d recorded is replayed (200, the first response), not refused", async () => {
    const prefix = lib.ctx(NOW, "idem-sync").prefix;
    now = NOW;
    expect((await post(prefix, "k-sync")).status).toBe(200);
    await asCe4867dRecord(await recordKeyOf(prefix), RAW);
    now = NOW + 2_000;
    const retry = await post(prefix, "k-sync");
    expect(await scoreOf(prefix)).toBe(3);
    expect(retry.status).toBe(200);
    expect(await retry.json()).toEqual({ results: [{ member: "a", score: 3 }] });
  });

  it("a retry whose body ce4867d already fingerprinted as this build does (canonical JSON sent) is replayed", async () => {
    const canonical = '{"items":[{"by":3,"member":"a"}]}';
    const prefix = lib.ctx(NOW, "idem-canon").prefix;
    now = NOW;
    expect((await post(prefix, "k-canon", canonical)).status).toBe(200);
    await asCe4867dRecord(await recordKeyOf(prefix), canonical);
    now = NOW + 2_000;
    const retry = await post(prefix, "k-canon", canonical);
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed") ?? "true").toBe("true");
    expect(await scoreOf(prefix)).toBe(3);
  });

  // RESOLVED as above. Found against the canonical fingerprint:
  // FINDING (medium: counted twice, "nothing counted twice"): a keyed write ce4867d applied
  // synchronously, retried queued (Prefer: respond-async) on this build: the consumer compares the
  // record's fingerprint (raw) with the message's (canonical), finds no match, and applies it again.
  // Fix: the compatibility path above, carried into the message (`f2` = the raw fingerprint while
  // it differs) and compared by the apply script with either; or accept it as a one-time effect of
  // this deploy and say so in the release notes (only requests in flight at the deploy).
  it("a queued retry of a write ce4867d applied synchronously is not applied again", async () => {
    const prefix = lib.ctx(NOW, "idem-sync-queued").prefix;
    now = NOW;
    expect((await post(prefix, "k-sq")).status).toBe(200);
    await asCe4867dRecord(await recordKeyOf(prefix), RAW);
    const retry = await queuedMessage(prefix, NOW + 2_000, "rid-retry", await thisBuildsIds("k-sq"));
    expect(await deliver(prefix, NOW + 5_000, [retry])).toBe(1);
    expect(await scoreOf(prefix)).toBe(3);
  });

  // RESOLVED as above. Found against the canonical fingerprint:
  // FINDING (medium, same cause): a keyed write ce4867d queued (its message still in the queue at
  // the deploy), retried queued on this build: the two messages' dedupe ids differ in their
  // fingerprint part (raw vs canonical), so this build's consumer applies both.
  it("a queued write ce4867d sent and its queued retry sent by this build are applied once", async () => {
    const prefix = lib.ctx(NOW, "idem-queued-twice").prefix;
    const first = await queuedMessage(prefix, NOW, "rid-first", {
      digest: (await thisBuildsIds("k-qq")).digest,
      fingerprint: sha256(RAW),
    });
    const retry = await queuedMessage(prefix, NOW + 2_000, "rid-retry", await thisBuildsIds("k-qq"));
    expect(await deliver(prefix, NOW + 5_000, [first])).toBe(1);
    expect(await deliver(prefix, NOW + 6_000, [retry])).toBe(1);
    expect(await scoreOf(prefix)).toBe(3);
  });

  it("a message ce4867d's producer sent is applied once by this build's consumer: alone, redelivered, or twice in one batch", async () => {
    const prefix = lib.ctx(NOW, "idem-old-message").prefix;
    const ids = { digest: (await thisBuildsIds("k-old")).digest, fingerprint: sha256(RAW) };
    const message = await queuedMessage(prefix, NOW, "rid-old", ids);
    expect(await deliver(prefix, NOW + 1_000, [message, message])).toBe(2);
    expect(await deliver(prefix, NOW + 60_000, [message])).toBe(1);
    expect(await scoreOf(prefix)).toBe(3);
    // and a message with no Idempotency-Key (no d, no f): as before, applied once per message id
    const plain = toMessages({ kind: "counters", name: "c", t: NOW, r: "rid-plain" }, [{ member: "a", by: 1 }]);
    expect(await deliver(prefix, NOW + 61_000, plain)).toBe(1);
    expect(await scoreOf(prefix)).toBe(4);
  });
});

describe("presence: a day ce4867d wrote, heartbeats and trim runs after the deploy", () => {
  const D0 = Date.UTC(2026, 10, 20);
  const MINUTE = 60_000;
  const job = presence.createTrimJob();
  const dailyKey = (ctx: Ctx) => `${ctx.prefix}:presence:r:daily:20261120`;

  /**
   * ce4867d's heartbeat and trim scripts write the same keys as this build's for heartbeats in
   * time order; the one difference is IDLED_FLAG (bit 96 of the day's bitmap), which ce4867d's
   * trim never set when it took a room for idle. Checked against ce4867d's own library (two
   * heartbeats, a run, a leave, the idle run): every key equal but that bit. So a room ce4867d took
   * for idle is this build's with the bit cleared.
   */
  async function idledByCe4867d(ctx: Ctx, now: number) {
    await job({ ...ctx, now }, lib.config);
    const [last] = await command<number[]>(target, "BITFIELD", dailyKey(ctx), "GET", "u32", 96);
    expect(last).toBeGreaterThanOrEqual(2 ** 31); // this build marked it
    await command(target, "BITFIELD", dailyKey(ctx), "SET", "u1", 96, 0);
  }

  it("a room ce4867d took for idle is active again at this build's next heartbeat; the day's figures go on", async () => {
    const ctx = lib.ctx(D0, "presence-ontime");
    const t = D0 + 9 * HOUR;
    await presence.heartbeat({ ...ctx, now: t }, "r", ["a", "c"]);
    await presence.heartbeat({ ...ctx, now: t + 30_000 }, "r", ["d"]);
    await job({ ...ctx, now: t + MINUTE }, lib.config);
    await idledByCe4867d(ctx, t + 500_000);
    // the deploy; 20 minutes later b comes
    const back = t + 20 * MINUTE;
    await presence.heartbeat({ ...ctx, now: back }, "r", ["b"]);
    expect(await command<string>(target, "ZSCORE", `${ctx.prefix}:presence:_due`, "r")).toBe(String(back));
    await job({ ...ctx, now: back + MINUTE }, lib.config);
    const points = (await presence.history({ ...ctx, now: back + 2 * MINUTE }, "r", 1)).points;
    expect(points).toContainEqual({ at: back + MINUTE, online: 1 });
    const stats = await presence.stats({ ...ctx, now: back + 2 * MINUTE }, "r");
    expect(stats).toMatchObject({ online: 1, activeToday: 4, newToday: 4 });
    const day = await presence.day({ ...ctx, now: back + 2 * MINUTE }, "r", "2026-11-20");
    expect(day).toMatchObject({ peak: 3, active: 4, new: 4 });
  });

  // FINDING (low, one-time): review 4's late-heartbeat fix needs the trim job's IDLED_FLAG, which
  // ce4867d's runs did not set. A room ce4867d took for idle in the last minutes before the deploy,
  // whose queued (late) heartbeat within a timeout of its last one is applied after the deploy, is
  // not made active again: no run visits it while that id is online (no history point, `_total`
  // misses it), as before the fix. Only rooms idled within about a timeout (+ the queue's retry
  // span, ~5 min) before the deploy. Fix: not worth one (a few minutes of history points for a
  // handful of rooms, once); say so in the release notes.
  // RE-EXAMINED 2026-11-27 (wt-presence), not fixed: not cheap. Nothing this build's heartbeat reads
  // tells such a room: ce4867d's idle visit left the daily key as it was (no IDLED_FLAG), and b's
  // heartbeat, 240 s after the room's last, looks like any heartbeat within a timeout of it. Only
  // `_due` (rescheduled days ahead) and history's shortened lifetime show the idle visit, and reading
  // either on every such heartbeat costs every steady heartbeat a command (5 → 6). A one-time
  // migration (the trim job finding, once, the rooms ce4867d idled in the minutes before the deploy
  // by a `_due` range read and marking them) would need a version marker and a bounded scan for a
  // few minutes of history points in a handful of rooms, once. The README's release note stands.
  // RE-EXAMINED 2026-11-28 (wt-fixpres), stays: the site entry in `_due` (fixpres) does not help
  // here: b's heartbeat is no reactivation in this build's eyes, so it writes neither the room nor
  // the site entry, and the id was never counted. Still one command per steady heartbeat to tell.
  // RE-EXAMINED 2026-11-28 (wt-r18pres), stays: the read (a ZSCORE of the room in `_due`) would fit a
  // known id's heartbeat (5 → 6 ≤ issue 14's 6) but b may be a new id, and a new id's heartbeat would
  // go 9 → 10, over issue 14's 9; b is told apart from a steady heartbeat by nothing it reads now.
  // The one-time migration is bounded (a `_due` range of the few minutes before the deploy, once)
  // but needs a deploy marker for a one-off of a few minutes of history points: not done.
  it.fails("a late heartbeat after the deploy reactivates a room ce4867d took for idle just before", async () => {
    const ctx = lib.ctx(D0, "presence-late");
    const t = D0 + 9 * HOUR;
    await presence.heartbeat({ ...ctx, now: t }, "r", ["a"]);
    await job({ ...ctx, now: t + MINUTE }, lib.config);
    await idledByCe4867d(ctx, t + 430_000);
    // the deploy; b's heartbeat sent at 240 s, retried by the queue, is applied now at its own time
    await presence.heartbeat({ ...ctx, now: t + 240_000 }, "r", ["b"]);
    expect((await presence.stats({ ...ctx, now: t + 450_000 }, "r")).online).toBe(1);
    await job({ ...ctx, now: t + 480_000 }, lib.config);
    const points = (await presence.history({ ...ctx, now: t + 490_000 }, "r", 1)).points;
    expect(points).toContainEqual({ at: t + 480_000, online: 1 });
  });
});
