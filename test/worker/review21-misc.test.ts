/**
 * Review 21 leftovers over HTTP (the Worker in workerd, real Redis behind the local Upstash server).
 * 1. A batch of observations whose item is an object with a bad field names that field by its index
 *    path (`values.1.value`), as counter and trending batches name theirs (`items.1.by`,
 *    `events.1.count`): zod's union of a bare number and an observation object used to pick the
 *    number's "expected number, received object" at `values.1` (functions/router.ts `closestOption`).
 * 3. A QStash-signed job call whose run answers 5xx gives its claim back (src/signed-calls.ts,
 *    `qstash.release`), so QStash's retry with the same signature runs the job; a 2xx keeps the
 *    claim, so the same signature again is answered `{replayed: true}` and runs nothing.
 */
import { afterAll, describe, expect, it } from "vitest";
import { counterKeys } from "../../src/counters/keys.ts";
import { TEST_SIGNING_KEYS } from "../helpers/keys.ts";
import { signQstash } from "../helpers/qstash-sign.ts";
import { command } from "../helpers/upstash-rest.ts";
import { createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "rv21-misc", start: Date.UTC(2026, 10, 28, 9, 40) });
afterAll(() => api.cleanup());

/** The 400's details of a POST, after checking it is a 400 invalid_request. */
async function details(path: string, body: unknown) {
  const res = await api.post(path, body);
  expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 400, code: "invalid_request" });
  return res.body.error.details;
}

describe("review 21: batch item errors name the item's field", () => {
  it("a histogram batch names values.<i>.<field>, as counters and trending batches do; nothing written", async () => {
    expect((await api.put("/v1/histograms/h", { bucketWidth: 1 }, { key: "admin" })).status).toBe(201);
    const keys = (await api.keys()).sort();
    const obs = "/v1/histograms/h/observations";
    expect(await details(obs, { values: [1, { value: "x" }] })).toEqual([
      { in: "json", path: "values.1.value", message: "Invalid input: expected number, received string" },
    ]);
    expect(await details(obs, { values: [{ value: 1 }, { value: 2, at: true }] })).toEqual([
      { in: "json", path: "values.1.at", message: "Invalid input: expected number, received boolean" },
    ]);
    expect(await details(obs, { values: [1, { value: 1, extra: 2 }] })).toEqual([
      { in: "json", path: "values.1", message: 'Unrecognized key: "extra"' },
    ]);
    // A bare item of neither type keeps the first option's words (test/worker/hostile.test.ts).
    expect(await details(obs, { values: [1, "a"] })).toEqual([
      { in: "json", path: "values.1", message: "Invalid input: expected number, received string" },
    ]);
    expect(await details(obs, { values: [1, { value: 1e16 }] })).toEqual([
      { in: "json", path: "values.1.value", message: "Too big: expected number to be <=1000000000000000" },
    ]);
    // The same shape of path as the other batches.
    expect(await details("/v1/counters/c/incr", { items: [{ member: "a" }, { member: "b", by: "x" }] })).toEqual([
      { in: "json", path: "items.1.by", message: "Invalid input: expected number, received string" },
    ]);
    expect(await details("/v1/trending/t/events", { events: [{ member: "a" }, { member: "b", count: "x" }] })).toEqual([
      { in: "json", path: "events.1.count", message: "Invalid input: expected number, received string" },
    ]);
    expect((await api.keys()).sort()).toEqual(keys);
  });
});

describe("review 21: a signed job call answered 5xx gives its claim back", () => {
  const job = "/internal/jobs/sweep-counters";
  const claims = async () => (await api.keys()).filter((k) => k.startsWith(`${api.prefix}:qstash:`));
  const send = (signature: string) =>
    api.cost(() => api.call("POST", job, undefined, { key: "none", headers: { "upstash-signature": signature } }));

  it("5xx: the claim goes and the same signature runs the job; 2xx: the claim stays and it is a replay", async () => {
    const signature = await signQstash(TEST_SIGNING_KEYS.current, { url: `http://localhost${job}` });
    // the sweep's first command (HRANDFIELD of the purge hash) fails on a string there: WRONGTYPE
    const purge = counterKeys.purge(api.prefix);
    await command(api.target, "SET", purge, "not a hash");
    const failed = await send(signature);
    expect({ status: failed.result.status, code: failed.result.body.error?.code }).toEqual({
      status: 500,
      code: "internal_error",
    });
    expect(failed.result.headers.get("idempotent-replayed")).toBeNull();
    expect(await claims()).toEqual([]);
    // QStash's retry of that delivery, with the same signature, once Redis holds the hash again
    await command(api.target, "DEL", purge);
    const retried = await send(signature);
    expect({
      status: retried.result.status,
      replayed: retried.result.headers.get("idempotent-replayed"),
      body: retried.result.body,
    }).toEqual({
      status: 200,
      replayed: null,
      body: { job: "sweep-counters", startedAt: api.now, result: { checked: 0, deleted: 0, more: false } },
    });
    expect(await claims()).toHaveLength(1);
    // the run answered 200: its claim stays, the same signature is a replay that runs nothing
    const again = await send(signature);
    expect({
      status: again.result.status,
      replayed: again.result.headers.get("idempotent-replayed"),
      body: again.result.body,
      requests: again.requests,
    }).toEqual({
      status: 200,
      replayed: "true",
      body: { job: "sweep-counters", startedAt: api.now, result: { replayed: true } },
      requests: 1,
    });
    expect(await claims()).toHaveLength(1);
  });
});
