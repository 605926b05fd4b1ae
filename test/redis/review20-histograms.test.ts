/**
 * Review 20: histograms through the library handle (`Edgestats.histogram`) next to the real Hono
 * app on the same prefix: small samples (1..15 values, ties, negatives, values on bounds) whose
 * p50/p90/p99 must lie in the bucket of the exact nearest-rank value and within [min, max]; the
 * handle's read equal to `GET /v1/histograms/{h}`'s; the documented "at most 1e12 buckets from
 * zero" at its edge and one past (refused, nothing written); refusals of the handle and the route
 * naming the same field.
 */
import { describe, expect, it } from "vitest";
import { createApp } from "../../functions/app.ts";
import { mulberry32 } from "../../dev/prng.ts";
import { ValidationError } from "../../src/errors.ts";
import { exactQuantile } from "../../src/histograms/buckets.ts";
import { Edgestats } from "../../src/index.ts";
import { modelBucket, r15 } from "../helpers/histograms.ts";
import { appHttp, libraryTest } from "../helpers/library.ts";
import { keysUnder } from "../helpers/upstash-rest.ts";

const lib = libraryTest("review20hist");
const KEYS = { ingest: "review20-ingest-key-01", read: "review20-read-key-0001", admin: "review20-admin-key-001" };
const now = Date.UTC(2026, 10, 28, 15, 30);
const app = createApp({ now: () => now });
const env = lib.appEnv(KEYS);
const stats = new Edgestats({ redis: lib.redis, prefix: lib.prefix, clock: () => now });
const read = appHttp(app, env, KEYS.read);
const ingest = appHttp(app, env, KEYS.ingest);

describe("review 20: percentiles of small samples against the nearest rank", () => {
  for (const width of [1, 0.5, 3]) {
    it(`width ${width}: 40 samples of 1..15 values; the estimate is in the exact value's bucket`, async () => {
      const rand = mulberry32(2000 + width * 10);
      for (let s = 0; s < 40; s++) {
        const name = `p-${String(width).replace(".", "_")}-${s}`;
        const h = stats.histogram(name);
        await h.configure({ bucketWidth: width });
        const n = 1 + Math.floor(rand() * 15);
        const values: number[] = [];
        for (let k = 0; k < n; k++) {
          const pick = rand();
          values.push(
            pick < 0.3 && values.length > 0
              ? values[Math.floor(rand() * values.length)]! // a tie
              : pick < 0.5
                ? r15(Math.floor(rand() * 20 - 10) * width) // on a bound
                : Math.round((rand() * 40 - 20) * 100) / 100,
          );
        }
        await h.observe(values);
        const got = await h.read({ top: 3 });
        expect(got.count).toBe(n);
        expect([got.min, got.max]).toEqual([Math.min(...values), Math.max(...values)]);
        for (const [q, p] of [
          [0.5, got.p50],
          [0.9, got.p90],
          [0.99, got.p99],
        ] as const) {
          const exact = exactQuantile(values, q)!;
          const where = `${name} ${JSON.stringify(values)} p${q * 100}=${String(p)} exact ${exact}`;
          expect(modelBucket(p!, width), where).toBe(modelBucket(exact, width));
          expect(p! >= got.min! && p! <= got.max!, where).toBe(true);
        }
        // the route answers the same read
        const http = await read("GET", `/v1/histograms/${name}?top=3`);
        expect(http.status).toBe(200);
        expect(http.body).toEqual(JSON.parse(JSON.stringify(got)));
      }
    });
  }
});

describe("review 20: the bucket-index limit", () => {
  it("a value exactly 1e12 buckets from zero is kept; one past is refused, nothing written", async () => {
    const h = stats.histogram("index-edge");
    await h.configure({ bucketWidth: 1 });
    await h.observe([1e12, -1e12]);
    const got = await h.read();
    expect(got.buckets).toEqual([
      { lower: -1e12, upper: -1e12 + 1, count: 1 },
      { lower: 1e12, upper: 1e12 + 1, count: 1 },
    ]);
    const before = (await keysUnder(lib.target, lib.prefix)).sort();
    await expect(h.observe([5, 1e12 + 1])).rejects.toBeInstanceOf(ValidationError);
    const res = await ingest("POST", "/v1/histograms/index-edge/observations", { values: [5, -1e12 - 1] });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("invalid_request");
    expect(res.body.error.message).toContain("bucketWidth");
    expect((await keysUnder(lib.target, lib.prefix)).sort()).toEqual(before);
    expect((await h.read()).count).toBe(2);
  });

  it("the handle and the route refuse a non-finite value naming the same item", async () => {
    const h = stats.histogram("index-edge");
    const err = await h.observe([1, Number.POSITIVE_INFINITY]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    const res = await ingest("POST", "/v1/histograms/index-edge/observations", {
      values: [1, { value: "Infinity" }],
    });
    expect(res.status).toBe(400);
    const paths = (x: { path: string }[] | undefined) => (x ?? []).map((d) => d.path);
    expect(paths((err as ValidationError).details)).toEqual(["values.1.value"]);
    // the route names the object item's field as the handle does (review 21: its schema's union of
    // a number and an object named the item, "expected number, received object")
    expect(paths(res.body.error.details)).toEqual(["values.1.value"]);
  });
});
