/**
 * Issue 12 for histograms: what each scope may do (the scope table rows), bounded
 * time for observations and reads, and a registry that forgets histograms whose
 * data has expired and lists the most recently active first, a page at a time.
 */
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi } from "../helpers/worker.ts";

const NOW = "2026-11-22T12:30:00Z";
const api = createTestApi({ label: "hist-scope", start: NOW });
afterAll(() => api.cleanup());
beforeEach(() => api.setNow(NOW));

const H = "/v1/histograms";
const admin = { key: "admin" } as const;
const DAY = 86_400_000;

async function create(name: string, settings: Record<string, unknown>, on = api) {
  const res = await on.put(`${H}/${name}`, settings, admin);
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
}

/** Everything a histogram holds, to prove a refused request changed nothing. */
async function snapshot(name: string) {
  const from = new Date(Date.parse(NOW) - 399 * DAY).toISOString().slice(0, 10);
  const read = await api.get(`${H}/${name}?from=${from}&to=2026-11-22&top=100`);
  return { keys: await api.keys(), read: read.body };
}

describe("scope: what an ingest or read key can do to a histogram", () => {
  it("attack: an ingest key cannot change a histogram's retention or width, nor delete it", async () => {
    await create("guarded", { bucketWidth: 10, retentionDays: 30 });
    await api.post(`${H}/guarded/observations`, { values: [1, 2, 3] });
    const before = await snapshot("guarded");
    for (const res of [
      await api.put(`${H}/guarded`, { bucketWidth: 10, retentionDays: 1 }),
      await api.put(`${H}/guarded`, { bucketWidth: 1 }),
      await api.del(`${H}/guarded`),
      await api.put(`${H}/guarded`, { bucketWidth: 10, retentionDays: 1 }, { key: "read" }),
      await api.del(`${H}/guarded`, { key: "read" }),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBeTypeOf("string");
    }
    expect(await snapshot("guarded")).toEqual(before);
  });

  it("attack: a read key cannot observe", async () => {
    await create("readonly", { bucketWidth: 1 });
    const before = await snapshot("readonly");
    const res = await api.post(`${H}/readonly/observations`, { value: 1 }, { key: "read" });
    expect(res.status).toBe(403);
    expect(await snapshot("readonly")).toEqual(before);
  });

  it("scope: observations only add counts and never move a day's expiry", async () => {
    await create("steady", { bucketWidth: 1, retentionDays: 3 });
    await api.post(`${H}/steady/observations`, { value: 5 });
    const pttl = (suffix: string) => command<number>(api.target, "PTTL", `${api.prefix}:hist:steady:20261122${suffix}`);
    const first = [await pttl(""), await pttl(":ext")];
    // Six hours later by the request clock, the same day again: its deadline is its date's, not the writer's.
    api.setNow(Date.parse(NOW) + 6 * 3_600_000);
    await api.post(`${H}/steady/observations`, { values: [5, 6] });
    const second = [await pttl(""), await pttl(":ext")];
    for (let i = 0; i < 2; i++) {
      expect(second[i]).toBeLessThanOrEqual(first[i] as number);
      expect(second[i]).toBeGreaterThan((first[i] as number) - 60_000);
    }
    expect((await api.get(`${H}/steady`)).body).toMatchObject({ count: 3, sum: 16, min: 5, max: 6 });
  });
});

describe("days stored by older versions", () => {
  it("gives a day's new extremes key an expiry even when the day itself existed (no key without a TTL)", async () => {
    await create("older", { bucketWidth: 1, retentionDays: 3 });
    const day = `${api.prefix}:hist:older:20261122`;
    // the layout before the extremes key: buckets only, with the day's TTL
    await command(api.target, "ZINCRBY", day, 3, "5");
    await command(api.target, "EXPIRE", day, 300_000);
    expect((await api.post(`${H}/older/observations`, { value: 5 })).status).toBe(200);
    expect(await command<number>(api.target, "TTL", `${day}:ext`)).toBeGreaterThan(300_000);
    expect(await command<number>(api.target, "TTL", day)).toBeGreaterThan(0);
    expect((await api.get(`${H}/older`)).body).toMatchObject({ count: 4, min: 5, max: 5 });
  });
});

describe("bounded time", () => {
  it("attack: a 1,000-item batch of far-past dates is a 400 naming the limit, nothing written", async () => {
    await create("dates", { bucketWidth: 1, retentionDays: 30 });
    await api.post(`${H}/dates/observations`, { value: 1 });
    const before = await snapshot("dates");
    const farPast = await api.post(`${H}/dates/observations`, {
      values: Array.from({ length: 1000 }, (_, i) => ({ value: i, at: "1000-01-01T00:00:00Z" })),
    });
    expect(farPast.status).toBe(400);
    expect(farPast.body.error.code).toBe("invalid_request");
    expect(farPast.body.error.details[0].message).toMatch(/400 days/);
    // Within 400 days but past this histogram's 30-day retention: the script refuses, naming it.
    const pastRetention = await api.post(`${H}/dates/observations`, {
      values: Array.from({ length: 1000 }, (_, i) => ({ value: i, at: Date.parse(NOW) - (31 + (i % 300)) * DAY })),
    });
    expect(pastRetention.status).toBe(400);
    expect(pastRetention.body.error.message).toMatch(/30-day retention/);
    expect(await snapshot("dates")).toEqual(before);
    // The last day still kept is accepted.
    expect(
      (await api.post(`${H}/dates/observations`, { value: 2, at: Date.parse("2026-10-23T00:00:00Z") })).status,
    ).toBe(200);
  });

  it("attack: an observation more than 5 minutes ahead is a 400 naming the limit, nothing written", async () => {
    await create("ahead", { bucketWidth: 1 });
    const before = await snapshot("ahead");
    const now = Date.parse(NOW);
    for (const at of [now + 5 * 60_000 + 1, now + 3_600_000, "2026-11-23T00:00:00Z", "9999-12-31T00:00:00Z"]) {
      const res = await api.post(`${H}/ahead/observations`, { values: [1, { value: 2, at }] });
      expect(res.status, String(at)).toBe(400);
      expect(res.body.error.details[0].message).toMatch(/5 minutes/);
    }
    expect(await snapshot("ahead")).toEqual(before);
    expect((await api.post(`${H}/ahead/observations`, { value: 2, at: now + 5 * 60_000 })).status).toBe(200);
  });

  it("attack: a read range longer than 400 days is a 400; a 400-day range of old dates costs no more than today's", async () => {
    await create("span", { bucketWidth: 1 });
    expect((await api.get(`${H}/span?from=2025-10-18&to=2026-11-22`)).status).toBe(400);
    await api.get(`${H}/span?from=1000-01-01&to=1001-02-04`);
    const old = await api.cost(() => api.get(`${H}/span?from=1000-01-01&to=1001-02-04`));
    expect(old.result.status).toBe(200);
    // Days no retention can keep are never read: settings only.
    expect(old.commands).toBe(2);
  });
});

describe("registry: forgets expired histograms, lists recent activity first, pages", () => {
  const reg = createTestApi({ label: "hist-registry", start: NOW });
  afterAll(() => reg.cleanup());
  const list = async (query = "") => (await reg.get(`${H}${query}`)).body;

  it("scope: a histogram whose data all expired leaves the list; its settings stay and its next observation lists it again", async () => {
    reg.setNow(NOW);
    await create("brief", { bucketWidth: 1, retentionDays: 1 }, reg);
    await reg.post(`${H}/brief/observations`, { value: 1 });
    expect((await list()).histograms).toContain("brief");
    // Nov 22's data lives to Nov 24 00:00; on Nov 24 it is gone, and so is the name.
    reg.setNow("2026-11-24T00:00:01Z");
    const later = await list();
    expect(later.histograms).not.toContain("brief");
    expect(later.total).toBe(later.histograms.length);
    expect((await reg.get(`${H}/brief`)).status).toBe(200);
    expect((await reg.post(`${H}/brief/observations`, { value: 1 })).status).toBe(200);
    expect((await list()).histograms).toContain("brief");
  });

  it("lists by recent activity with limit and offset, so names made in bulk cannot hide a live one", async () => {
    reg.setNow("2026-11-01T12:00:00Z");
    await create("quiet-one", { bucketWidth: 1, retentionDays: 400 }, reg);
    await reg.post(`${H}/quiet-one/observations`, { value: 1 });
    reg.setNow("2026-11-20T12:00:00Z");
    for (const name of ["bulk-a", "bulk-b", "bulk-c"]) await create(name, { bucketWidth: 1, retentionDays: 400 }, reg);
    reg.setNow("2026-11-22T12:00:00Z");
    await create("busy", { bucketWidth: 1, retentionDays: 400 }, reg);
    await reg.post(`${H}/busy/observations`, { value: 1 });
    const all = await list();
    // review 24: by the time of the write that last moved each deadline; "brief" was written on
    // Nov 24 (the test above's clock), before every write here. Review 25: a stamp is above the
    // registry's highest whatever the writer's clock, so writes from a clock behind Nov 24 (these)
    // are stamped after it, in the order they happened
    expect(all.histograms.slice(0, 6)).toEqual(["busy", "bulk-c", "bulk-b", "bulk-a", "quiet-one", "brief"]);
    const pages: string[] = [];
    let offset: number | null = 0;
    while (offset !== null) {
      const page: { histograms: string[]; next: number | null; total: number } = await list(
        `?limit=2&offset=${offset}`,
      );
      expect(page.histograms.length).toBeLessThanOrEqual(2);
      pages.push(...page.histograms);
      offset = page.next;
    }
    expect(pages).toEqual(all.histograms);
    for (const query of ["?limit=0", "?limit=1001", "?offset=-1", "?offset=x"])
      expect((await reg.get(`${H}${query}`)).status, query).toBe(400);
  });
});
