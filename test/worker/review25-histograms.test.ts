/**
 * Review 25: histograms over HTTP around the two-set registry of review 24: the list's cursor and
 * offset refusals and their field names, the read's bad dates and ranges (the field each names),
 * the width change refused with data and allowed without, as documented, and the same refusals
 * from the library (one error, one field) as from the route.
 */
import { afterAll, describe, expect, it } from "vitest";
import { Edgestats, ValidationError } from "../../src/index.ts";
import { createRedis } from "../../src/redis/client.ts";
import { createTestApi } from "../helpers/worker.ts";

const NOW = Date.UTC(2028, 1, 29, 15, 0); // a leap day
const api = createTestApi({ label: "rv25-hist", start: NOW });
afterAll(() => api.cleanup());
const put = (name: string, body: unknown) => api.put(`/v1/histograms/${name}`, body, { key: "admin" });
const observe = (name: string, values: unknown[]) => api.post(`/v1/histograms/${name}/observations`, { values });
const paths = (body: { error?: { details?: { path: string }[] } }) => (body.error?.details ?? []).map((d) => d.path);

/** The library on the API's own prefix and clock. */
function library(): Edgestats {
  const env = api.env as unknown as Record<string, string>;
  const redis = createRedis({
    url: env.UPSTASH_REDIS_REST_URL as string,
    token: env.UPSTASH_REDIS_REST_TOKEN as string,
  });
  return new Edgestats({ redis, prefix: api.prefix, clock: () => api.now });
}

async function refusal(p: Promise<unknown>): Promise<ValidationError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return e as ValidationError;
  }
  throw new Error("expected a refusal");
}

describe("review 25: the histograms' list over HTTP", () => {
  it("pages by cursor; a cursor with an offset, a foreign cursor, one too long: 400 naming the field", async () => {
    for (const name of ["a", "b", "c"]) {
      expect((await put(name, { bucketWidth: 1 })).status).toBe(201);
      api.advance(1000);
    }
    const first = await api.get("/v1/histograms?limit=2");
    expect(first.body).toMatchObject({ histograms: ["c", "b"], total: 3, next: 2 });
    const cursor = first.body.nextCursor as string;
    const second = await api.get(`/v1/histograms?limit=2&cursor=${encodeURIComponent(cursor)}`);
    expect(second.body).toMatchObject({ histograms: ["a"], next: null, nextCursor: null });
    for (const [query, field] of [
      [`cursor=${encodeURIComponent(cursor)}&offset=1`, "offset"],
      ["cursor=nope", "cursor"],
      [`cursor=${"1".repeat(116)}`, "cursor"],
      ["limit=0", "limit"],
      ["offset=1000001", "offset"],
    ] as const) {
      const res = await api.get(`/v1/histograms?${query}`);
      expect({ query, status: res.status, code: res.body.error?.code }).toEqual({
        query,
        status: 400,
        code: "invalid_request",
      });
      expect(paths(res.body), query).toContain(field);
    }
    // the library refuses the same, naming the same field
    const stats = library();
    expect((await refusal(stats.histograms({ cursor, offset: 1 }))).details?.map((d) => d.path)).toContain("offset");
    expect((await refusal(stats.histograms({ cursor: "nope" }))).details?.map((d) => d.path)).toContain("cursor");
  });
});

describe("review 25: reads and settings over HTTP", () => {
  it("bad dates and ranges are 400s naming from or to; a leap day reads", async () => {
    expect((await put("r", { bucketWidth: 1 })).status).toBe(201);
    expect((await observe("r", [1, { value: 2, at: "2028-02-28T23:59:59.999Z" }])).status).toBe(200);
    const leap = await api.get("/v1/histograms/r?from=2028-02-28&to=2028-02-29");
    expect(leap.body).toMatchObject({ count: 2, sum: 3, from: "2028-02-28", to: "2028-02-29" });
    for (const [query, field] of [
      ["from=2027-02-29", "from"],
      ["to=2028-02-30", "to"],
      ["from=2028-3-1", "from"],
      ["top=101", "top"],
    ] as const) {
      const res = await api.get(`/v1/histograms/r?${query}`);
      expect({ query, status: res.status }).toEqual({ query, status: 400 });
      expect(paths(res.body), query).toContain(field);
    }
    const backwards = await api.get("/v1/histograms/r?from=2028-02-29&to=2028-02-28");
    expect(backwards.status).toBe(400);
    const long = await api.get("/v1/histograms/r?from=2027-01-01&to=2028-02-29");
    expect(long.status).toBe(400);
    const stats = library();
    expect((await refusal(stats.histogram("r").read({ from: "2027-02-29" }))).details?.map((d) => d.path)).toContain(
      "from",
    );
    expect((await refusal(stats.histogram("r").read({ top: 101 }))).details?.map((d) => d.path)).toContain("top");
  });

  it("a new width: 409 bucket_width_conflict while a day holds data, allowed once none does", async () => {
    expect((await put("w", { bucketWidth: 1, retentionDays: 1 })).status).toBe(201);
    expect((await observe("w", [5])).status).toBe(200);
    const refused = await put("w", { bucketWidth: 2, retentionDays: 1 });
    expect([refused.status, refused.body.error?.code]).toEqual([409, "bucket_width_conflict"]);
    expect((await api.get("/v1/histograms/w")).body).toMatchObject({ bucketWidth: 1, count: 1 });
    // without data the new width is allowed: a histogram never observed, and one deleted
    expect((await put("w2", { bucketWidth: 1 })).status).toBe(201);
    expect((await put("w2", { bucketWidth: 2 })).body).toMatchObject({ bucketWidth: 2, created: false });
    expect((await api.del("/v1/histograms/w", { key: "admin" })).status).toBe(204);
    const allowed = await put("w", { bucketWidth: 2, retentionDays: 1 });
    expect([allowed.status, allowed.body.bucketWidth]).toEqual([201, 2]);
    expect((await observe("w", [5])).status).toBe(200);
    expect((await api.get("/v1/histograms/w")).body.buckets).toEqual([{ lower: 4, upper: 6, count: 1 }]);
  });
});
