/**
 * What the abuse run (../abuse.ts) writes and sends: the legit data every check protects, the
 * ingest and read keys' worst requests (each attack one step a client repeats until its phase
 * ends), and the check that every acknowledged write is still there, once.
 */
import type { AbuseKeys } from "../abuse.ts";
import type { Caller } from "./caller.ts";

export const DAY = 86_400_000;
export const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** A small deterministic generator, so a failing run can be replayed. */
export function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

/** What was acknowledged, by where it lives: it must all survive the attacks. */
export interface Legit {
  counter: Map<string, number>;
  days: Map<string, number>;
  trending: Map<string, number>;
}

/** A write that must be acknowledged (200). */
export async function legitWrite(c: Caller, path: string, body: unknown, key: string): Promise<boolean> {
  const res = await c.call("POST", path, key, body);
  c.expectStatus(`legit ${path}`, res, 200);
  return res.status === 200;
}

/** Writes the legit data, by the ingest key (the histogram's settings by the admin's). */
export async function writeLegit(c: Caller, keys: AbuseKeys): Promise<Legit> {
  const write = (path: string, body: unknown) => legitWrite(c, path, body, keys.ingest);
  const now = Date.now();
  const legit = {
    counter: new Map<string, number>(),
    days: new Map<string, number>(),
    trending: new Map<string, number>(),
  };
  for (let m = 0; m < 50; m++) {
    if (await write("/v1/counters/legit/incr", { member: `m${m}`, by: m + 1 })) legit.counter.set(`m${m}`, m + 1);
  }
  // A day counter over 60 days, 200 members a day: the ground the read phase digs in.
  for (let d = 0; d < 60; d++) {
    const items = Array.from({ length: 200 }, (_, i) => ({ member: `p${i}`, by: 1, period: "day", at: now - d * DAY }));
    if (await write("/v1/counters/daily/incr", { items })) legit.days.set(isoDay(now - d * DAY), 200);
  }
  for (let m = 0; m < 300; m++) {
    if (await write("/v1/trending/legit/events", { member: `t${m}`, count: 1 + (m % 7) }))
      legit.trending.set(`t${m}`, 1 + (m % 7));
  }
  c.expectStatus(
    "histogram settings",
    await c.call("PUT", "/v1/histograms/legit", keys.admin, { bucketWidth: 10 }),
    200,
    201,
  );
  await write("/v1/histograms/legit/observations", { values: Array.from({ length: 100 }, (_, i) => ({ value: i })) });
  return legit;
}

/** The ingest keys' worst: short ttls, far dates, floods, Idempotency-Key collisions, scope. */
export function writeAttacks(c: Caller, keys: AbuseKeys, legit: Legit, rand: () => number): (() => Promise<void>)[] {
  let floods = 0;
  let idem = 0;
  return [
    async () => {
      // A 1-second ttl on a counter that has data, and on today's bucket of another.
      const res = await c.call("POST", "/v1/counters/legit/incr", keys.ingest, { member: "attacker", by: 1, ttl: 1 });
      c.expectStatus("ttl:1 on legit", res, 200, 400);
      if (res.status === 200) legit.counter.set("attacker", (legit.counter.get("attacker") ?? 0) + 1);
      const day = await c.call("POST", "/v1/counters/daily/incr", keys.ingest, {
        member: "attacker",
        by: 1,
        ttl: 1,
        period: "day",
      });
      c.expectStatus("ttl:1 on a day bucket", day, 200, 400);
      if (day.status === 200) legit.days.set(isoDay(Date.now()), (legit.days.get(isoDay(Date.now())) ?? 0) + 1);
    },
    async () => {
      // Far-past and far-future dates: each would be a bucket that never expires.
      const at = rand() < 0.5 ? "1000-01-01T00:00:00Z" : Date.now() + 3_600_000;
      const items = Array.from({ length: 1000 }, (_, i) => ({ member: `x${i}`, period: "day", at }));
      c.expectStatus(
        "far dates, counters",
        await c.call("POST", `/v1/counters/dates/incr`, keys.ingest, { items }),
        400,
      );
      c.expectStatus(
        "far dates, trending",
        await c.call("POST", "/v1/trending/dates/events", keys.ingest, { member: "x", at }),
        400,
      );
      c.expectStatus(
        "far dates, histograms",
        await c.call("POST", "/v1/histograms/legit/observations", keys.ingest, { value: 1, at }),
        400,
      );
    },
    async () => {
      // 1,000-item batches of new names: their own increments, stored (and bounded by retention).
      const n = floods++;
      const items = Array.from({ length: 1000 }, (_, i) => ({ member: `f${n}-${i}`, ttl: 3600 }));
      c.expectStatus(
        "flood counter",
        await c.call("POST", `/v1/counters/flood-${n}/incr`, keys.ingest, { items }),
        200,
      );
      const ids = Array.from({ length: 1000 }, (_, i) => `u${n}-${i}`);
      c.expectStatus(
        "flood presence",
        await c.call("POST", `/v1/presence/flood-${n % 5}/heartbeats`, keys.ingest, { ids }),
        200,
      );
    },
    async () => {
      // Idempotency collisions: another body under a used key is a 409 for the same caller,
      // and the same key from another ingest key is another request (applied).
      const key = `collide-${idem++}`;
      const incr = (by: number, caller = keys.ingest) =>
        c.call("POST", "/v1/counters/legit/incr", caller, { member: "idem", by }, { "idempotency-key": key });
      const first = await incr(1);
      c.expectStatus("idempotent first", first, 200);
      if (first.status === 200) legit.counter.set("idem", (legit.counter.get("idem") ?? 0) + 1);
      c.expectStatus("idempotent replay", await incr(1), 200);
      c.expectStatus("idempotent conflict", await incr(2), 409);
      const other = await incr(2, keys.ingest2);
      c.expectStatus("same key, other caller", other, 200);
      if (other.status === 200) legit.counter.set("idem", (legit.counter.get("idem") ?? 0) + 2);
    },
    async () => {
      // Member deletes over the longest range, 400 days (9,600 hour keys): they read only the keys
      // that may hold the member, so one absent from the counter costs a few commands (issue 15)
      const from = isoDay(Date.now() - 399 * DAY);
      for (const period of ["hour", "day"])
        c.expectStatus(
          `400-day member delete, ${period}`,
          await c.call(
            "DELETE",
            `/v1/counters/daily/members/absent-${floods}?period=${period}&from=${from}`,
            keys.ingest,
          ),
          204,
        );
    },
    async () => {
      // Scope: an ingest key cannot delete counters, streams, boards, or run jobs.
      c.expectStatus("ingest deletes a counter", await c.call("DELETE", "/v1/counters/legit", keys.ingest), 403);
      c.expectStatus("ingest deletes a stream", await c.call("DELETE", "/v1/trending/legit", keys.ingest), 403);
      c.expectStatus("ingest runs a job", await c.call("POST", "/internal/jobs/compact", keys.ingest), 401, 403);
    },
  ];
}

/** The read keys' worst: distinct ranges and windows (each a cached union), the longest legal ranges, refusals. */
export function readAttacks(c: Caller, keys: AbuseKeys, rand: () => number): (() => Promise<void>)[] {
  const today = Date.now();
  return [
    async () => {
      // Many distinct finished ranges of a 60-day counter: each would be a cached union.
      const from = today - (2 + Math.floor(rand() * 57)) * DAY;
      const to = Math.min(today - DAY, from + Math.floor(rand() * 30) * DAY);
      const aggregate = ["sum", "min", "max"][Math.floor(rand() * 3)];
      const res = await c.call(
        "GET",
        `/v1/counters/daily/top?n=10&period=day&from=${isoDay(from)}&to=${isoDay(to)}&aggregate=${aggregate}`,
        keys.read,
      );
      c.expectStatus("distinct ranges", res, 200);
    },
    async () => {
      // Every window width of a stream: each would be a cached union per hour.
      const hours = 1 + Math.floor(rand() * 48);
      c.expectStatus(
        "distinct windows",
        await c.call("GET", `/v1/trending/legit/top?n=100&window=${hours}h`, keys.read),
        200,
      );
      c.expectStatus(
        "member lookup",
        await c.call("GET", `/v1/trending/legit/members/t${Math.floor(rand() * 300)}?window=${hours}h`, keys.read),
        200,
        404,
      );
    },
    async () => {
      // The longest legal ranges.
      c.expectStatus(
        "400-day day range",
        await c.call(
          "GET",
          `/v1/counters/daily/top?n=100&period=day&from=${isoDay(today - 399 * DAY)}&to=${isoDay(today)}`,
          keys.read,
        ),
        200,
      );
      c.expectStatus(
        "400-day histogram",
        await c.call("GET", `/v1/histograms/legit?from=${isoDay(today - 399 * DAY)}&to=${isoDay(today)}`, keys.read),
        200,
      );
      c.expectStatus("lists", await c.call("GET", "/v1/counters", keys.read), 200);
    },
    async () => {
      // Beyond the limits, and outside the scope: refused cleanly.
      c.expectStatus(
        "401-day range",
        await c.call(
          "GET",
          `/v1/counters/daily/top?period=day&from=${isoDay(today - 500 * DAY)}&to=${isoDay(today)}`,
          keys.read,
        ),
        400,
      );
      c.expectStatus(
        "read key writes",
        await c.call("POST", "/v1/counters/legit/incr", keys.read, { member: "r" }),
        403,
      );
      c.expectStatus("unknown key", await c.call("GET", "/v1/counters/legit/top", "not-a-key-of-ours-at-all"), 401);
    },
  ];
}

/** Nothing acknowledged was lost, nothing counted twice (a problem for each difference). */
export async function checkLegit(c: Caller, keys: AbuseKeys, legit: Legit): Promise<void> {
  await new Promise((r) => setTimeout(r, 1500)); // past every ttl:1 the attackers sent
  for (const [member, expected] of legit.counter) {
    const res = await c.call("GET", `/v1/counters/legit/members/${member}`, keys.read);
    if (res.body?.score !== expected)
      c.problem(`legit counter ${member}: acknowledged ${expected}, stored ${res.body?.score ?? res.status}`);
  }
  for (const [day, expected] of legit.days) {
    // Every legit write adds 1 to each of 200 members of its day (and the attacker's own +1s): the day's total.
    const res = await c.call("GET", `/v1/counters/daily/top?n=1000&period=day&from=${day}&to=${day}`, keys.read);
    const total = (res.body?.items ?? []).reduce((s: number, i: any) => s + i.score, 0);
    if (total !== expected) c.problem(`legit day ${day}: acknowledged ${expected}, stored ${total}`);
  }
  for (const [member, expected] of legit.trending) {
    const res = await c.call("GET", `/v1/trending/legit/members/${member}?window=1h`, keys.read);
    if (res.body?.count !== expected)
      c.problem(`legit trending ${member}: acknowledged ${expected}, stored ${res.body?.count ?? res.status}`);
  }
}
