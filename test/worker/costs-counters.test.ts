/**
 * Measures every row of test/costs/counters.ts in the state it names and
 * asserts the figure exactly (commands counted by the local Upstash server).
 */
import { afterAll, describe, expect, it } from "vitest";
import { cacheSlot } from "../../src/counters/reads.ts";
import { area } from "../costs/counters.ts";
import { checkCursorPass, costOf, expected } from "../costs/types.ts";
import { createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "costs-counters", start: "2026-11-22T12:30:00Z" });
afterAll(() => api.cleanup());

const base = "/v1/counters";
const rows = area.rows;
type RowId = keyof typeof rows;

async function check(id: RowId, fn: () => Promise<{ status: number }>) {
  const m = await api.cost(fn);
  expect(m.result.status, id).toBeLessThan(300);
  expect.soft(costOf(m), id).toEqual(expected(rows[id]!));
}

const incr = (counter: string, body: unknown, headers?: Record<string, string>) => () =>
  api.post(`${base}/${counter}/incr`, body, headers ? { headers } : undefined);
const batch = (n: number, extra: Record<string, unknown> = {}) => ({
  items: Array.from({ length: n }, (_, i) => ({ member: `m${i % 50}`, ...extra })),
});

describe("counters: commands per call", () => {
  it("warms every script", async () => {
    await incr("warm", { member: "a" })();
    await incr("warm", { member: "a", period: "day" })();
    await api.get(`${base}/warm/top`);
    await api.get(`${base}/warm/members/a`);
    await api.get(`${base}/warm/range`);
    await api.get(`${base}/warm/sorted`);
    await api.get(base);
    await api.post(`${base}/warm2/union`, { sources: ["warm"] }, { key: "admin" });
    await api.del(`${base}/warm/members/zz`);
    await api.del(`${base}/warm2`, { key: "admin" });
  });

  it("plain incr", async () => {
    await check("incrPlainNew", incr("plain", { member: "a" }));
    await check("incrPlain", incr("plain", { member: "a" }));
    await check("incrPlainNewMember", incr("plain", { member: "b" }));
  });

  it("period=day incr", async () => {
    await incr("daily", { member: "a", period: "day", at: "2026-11-21T10:00:00Z" })();
    // a minute later, so first touches pay the registry refresh too (their worst case)
    api.advance(60_000);
    await check("incrDayNewBucket", incr("daily", { member: "a", period: "day" }));
    await check("incrDay", incr("daily", { member: "a", period: "day" }));
    api.advance(60_000);
    await check("incrDayMinute", incr("daily", { member: "a", period: "day" }));
    api.advance(60_000);
    await check("incrDayLate", incr("daily", { member: "a", period: "day", at: "2026-11-20T10:00:00Z" }));
  });

  it("incr with ttl", async () => {
    await check("incrTtlNew", incr("ttl", { member: "a", ttl: 86400 }));
    api.advance(1000);
    await check("incrTtlExtend", incr("ttl", { member: "a", ttl: 86400 }));
    api.advance(1000);
    await check("incrTtl", incr("ttl", { member: "a", ttl: 86400 }));
    await incr("dttl", { member: "a", period: "day", ttl: 86400 })();
    api.advance(1000);
    await incr("dttl", { member: "a", period: "day", ttl: 86400 })();
    api.advance(1000);
    await check("incrDayTtl", incr("dttl", { member: "a", period: "day", ttl: 86400 }));
  });

  it("batches and idempotency", async () => {
    await incr("batch", batch(1000))();
    await check("incrBatch", incr("batch", batch(1000)));
    await incr("batchd", batch(1000, { period: "day" }))();
    await check("incrBatchDay", incr("batchd", batch(1000, { period: "day" })));
    // a steady write (within the minute of the counter's registry stamp; review 26), as the row's
    // other measurement (test/redis/review3-costs-2.test.ts)
    await incr("plain", { member: "a" })();
    await check("incrIdem", incr("plain", { member: "a" }, { "idempotency-key": "k1" }));
    await check("incrIdemReplay", incr("plain", { member: "a" }, { "idempotency-key": "k1" }));
  });

  it("reads", async () => {
    await api.post(`${base}/r/incr`, {
      items: [
        ...["a", "b", "c"].map((member) => ({ member })),
        ...["2026-11-18", "2026-11-19", "2026-11-20", "2026-11-21", "2026-11-22"].flatMap((at) =>
          ["a", "b", "c"].map((member) => ({ member, period: "day", at: `${at}T01:00:00Z` })),
        ),
      ],
    });
    await check("top", () => api.get(`${base}/r/top?n=10`));
    await check("member", () => api.get(`${base}/r/members/a`));
    await check("range", () => api.get(`${base}/r/range?min=0&max=%2Binf`));
    await check("sorted", () => api.get(`${base}/r/sorted`));
    await check("topToday", () => api.get(`${base}/r/top?period=day`));
    await check("topOpenWeek", () => api.get(`${base}/r/top?period=day&from=2026-11-18&to=2026-11-22`));
    await check("topOpenWeekWarm", () => api.get(`${base}/r/top?period=day&from=2026-11-18&to=2026-11-22`));
    await check("memberOpenWeekWarm", () => api.get(`${base}/r/members/a?period=day&from=2026-11-18&to=2026-11-22`));
    await check("topFinishedUncached", () => api.get(`${base}/r/top?period=day&from=2026-11-18&to=2026-11-21`));
    await check("topFinishedCached", () => api.get(`${base}/r/top?period=day&from=2026-11-18&to=2026-11-21`));
    // another finished range whose cache slot holds the union just built: it replaces it
    const id = (from: number, to: number, aggregate: string) =>
      `day:${Date.UTC(2026, 10, from)}:${Date.UTC(2026, 10, to)}:${aggregate}`;
    const other = [18, 19, 20]
      .flatMap((from) => [19, 20, 21].filter((to) => to > from).map((to) => [from, to] as const))
      .flatMap(([from, to]) => ["sum", "min", "max"].map((aggregate) => ({ from, to, aggregate })))
      .filter((r) => r.from !== 18 || r.to !== 21 || r.aggregate !== "sum")
      .find((r) => cacheSlot(id(r.from, r.to, r.aggregate)) === cacheSlot(id(18, 21, "sum")));
    expect(other, "a finished range sharing the slot").toBeDefined();
    const { from, to, aggregate } = other!;
    await check("topFinishedReplacing", () =>
      api.get(`${base}/r/top?period=day&from=2026-11-${from}&to=2026-11-${to}&aggregate=${aggregate}`),
    );
    await check("list", () => api.get(base));
    // By cursor: every page but the pass's last costs listNext, the last listLast.
    const costs = await checkCursorPass(api.get, check, { base, limit: 2, next: "listNext", last: "listLast" });
    expect(costs.at(-1)).toBe("listLast");
    expect(costs).toContain("listNext");
  });

  it("period=hour incr with ttl: the index drops a day's fields once its day rollup has expired", async () => {
    // 2026-11-22 22:00 and 23:00, then 2026-11-23 00:00 (learns the 22nd's expiry), 01:00, 02:00
    // (drops its hours and quarters: the day rollup expired 00:12 + the hour's margin), 03:00
    const write = incr("trim", { member: "a", period: "hour", ttl: 3600 });
    const hour = 3_600_000;
    api.advance(9.5 * hour);
    for (let i = 0; i < 4; i++) {
      await write();
      api.advance(hour);
    }
    await check("incrHourTtlTrim", write);
    api.advance(hour);
    await check("incrHourTtlNewBucket", write);
    api.advance(-14.5 * hour);
  });

  it("period=hour incr and 400-day ranges (issue 15: calendar rollups)", async () => {
    // 400 days of hourly data, one member an hour (written directly in batches)
    const from = Date.UTC(2025, 9, 18);
    const hours = Array.from({ length: (Date.UTC(2026, 10, 22) - from) / 3_600_000 }, (_, i) => from + i * 3_600_000);
    for (let i = 0; i < hours.length; i += 1000) {
      await incr("long", {
        items: hours.slice(i, i + 1000).map((at, j) => ({ member: `m${(i + j) % 7}`, period: "hour", at })),
      })();
    }
    await incr("long", { member: "a", period: "hour" })();
    await check("incrHour", incr("long", { member: "a", period: "hour" }));
    api.advance(3_600_000);
    await check("incrHourNewBucket", incr("long", { member: "a", period: "hour" }));
    api.advance(-3_600_000);
    const range = "period=hour&from=2025-10-18T05:00:00Z&to=2026-11-21T17:00:00Z";
    await check("topHours400Uncached", () => api.get(`${base}/long/top?${range}`));
    await check("topHours400Cached", () => api.get(`${base}/long/top?${range}`));
    await check("topHours400Open", () => api.get(`${base}/long/top?period=hour&from=2025-10-19T05:00:00Z`));
    await check("topHours400OpenWarm", () => api.get(`${base}/long/top?period=hour&from=2025-10-19T05:00:00Z`));
    await check("deleteMemberHours60", () =>
      api.del(`${base}/long/members/m3?period=hour&from=2026-09-21T17:00:00Z&to=2026-11-20T16:00:00Z`),
    );
    // a member in every hour of the same 60 days: every key of the range holds it
    const sixty = Array.from({ length: 1440 }, (_, i) => Date.UTC(2026, 8, 21, 17) + i * 3_600_000);
    for (let i = 0; i < sixty.length; i += 1000)
      await incr("long", { items: sixty.slice(i, i + 1000).map((at) => ({ member: "d", period: "hour", at })) })();
    await check("deleteMemberHours60Dense", () =>
      api.del(`${base}/long/members/d?period=hour&from=2026-09-21T17:00:00Z&to=2026-11-20T16:00:00Z`),
    );
    const refused = await api.cost(() => api.del(`${base}/long/members/m3?${range}`));
    expect(refused.result.status).toBe(400);
    expect(refused.result.body.error.details[0].message).toContain("more than 1750");
    expect(refused.result.body.error.message).toContain("ranges of at most 60 days");
    expect.soft(costOf(refused), "deleteMemberHours400Dense").toEqual(expected(rows.deleteMemberHours400Dense!));
    await check("deleteMemberHours400Absent", () => api.del(`${base}/long/members/zz?${range}`));
    // a member in two hours of one day (two quarters)
    await incr("long", {
      items: ["2026-11-20T03:10:00Z", "2026-11-20T15:10:00Z"].map((at) => ({ member: "s", period: "hour", at })),
    })();
    await check("deleteMemberHours400", () => api.del(`${base}/long/members/s?${range}`));
  });

  it("period=week incr and 400-day ranges (size records)", async () => {
    const day = 86_400_000;
    // 58 finished weeks written late in one batch (each records its own size), then this week
    const now = Date.UTC(2026, 10, 22, 12, 30);
    await incr("weeks", {
      items: Array.from({ length: 58 }, (_, i) => ({
        member: `m${i % 5}`,
        period: "week",
        at: Math.max(now - (i + 1) * 7 * day, now - 399 * day),
      })),
    })();
    await incr("weeks", { member: "a", period: "week" })();
    await check("incrWeek", incr("weeks", { member: "a", period: "week" }));
    await check("incrWeekLate", incr("weeks", { member: "new", period: "week", at: now - 14 * day }));
    // Monday: 400 days back is a Sunday, so the range touches 59 weeks
    api.advance(day);
    // the first touch of this week records the last (written when current, so without a record)
    await check("incrWeekNewBucket", incr("weeks", { member: "a", period: "week" }));
    await check("topWeeks59Uncached", () =>
      api.get(`${base}/weeks/top?period=week&from=2025-10-12T12:30:00Z&to=2026-11-16T12:30:00Z`),
    );
    await check("topWeeks59Open", () => api.get(`${base}/weeks/top?period=week&from=2025-10-19T13:00:00Z`));
    await check("memberWeeks59", () => api.get(`${base}/weeks/members/a?period=week&from=2025-10-19T13:00:00Z`));
    api.advance(-day);
  });

  it("period=day delete of a member in every day of 400 days", async () => {
    // 2025-10-19 .. 2026-11-21 (399 finished days) and today
    const days = Array.from({ length: 400 }, (_, i) => Date.UTC(2025, 9, 19, 10) + i * 86_400_000);
    // and another member in each day, so no day is emptied (as the audit's, test/worker/audit-targets.test.ts)
    await incr("daily400", {
      items: days.flatMap((at, i) => [
        { member: "a", period: "day", at },
        { member: `m${i % 7}`, period: "day", at },
      ]),
    })();
    await check("deleteMemberDays400Dense", () =>
      api.del(`${base}/daily400/members/a?period=day&from=2025-10-19T00:00:00Z&to=2026-11-21T00:00:00Z`),
    );
  });

  it("rollups and deletes", async () => {
    await check("union", () =>
      api.post(
        `${base}/rw/union`,
        { sources: ["r", { counter: "r", period: "day", from: "2026-11-18", to: "2026-11-22" }] },
        { key: "admin" },
      ),
    );
    await check("deleteMember", () => api.del(`${base}/r/members/a`));
    await check("deleteMemberDays", () => api.del(`${base}/r/members/b?period=day&from=2026-11-18&to=2026-11-22`));
    await check("deleteCounter", () => api.del(`${base}/r`, { key: "admin" }));
  });
});
