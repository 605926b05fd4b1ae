/**
 * The Worker's Upstash client (src/redis/http.ts) at its size limits inside workerd, against the
 * local Upstash server (real redis-server behind it): workerd's fetch and streams, where the
 * Worker runs (test/redis/fixclient-limits.test.ts has these on Node, with Upstash's own answer to
 * a request over its limit and the deadline of EVALSHA + EVAL).
 */
import { describe, expect, it } from "vitest";
import { PayloadTooLargeError, StorageUnavailableError } from "../../src/errors.ts";
import { createRedis } from "../../src/redis/client.ts";
import { MAX_REPLY_BYTES, MAX_REQUEST_BYTES } from "../../src/redis/http.ts";
import { defineScript } from "../../src/redis/script.ts";
import { statsOf } from "../helpers/upstash-rest.ts";
import { createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "fixclientw" });
const tag = api.prefix.replace(/\./g, "_");
const redis = () => createRedis({ url: api.target.url, token: `${api.target.token}.${tag}`, timeoutMs: 30_000 });

const echoLength = defineScript({
  name: "fixclient.echoLength",
  write: false,
  keys: [],
  args: ["blob"],
  lua: "return #blob",
});

const repeat = defineScript({
  name: "fixclient.repeat",
  write: false,
  keys: [],
  args: ["unit", "times"],
  lua: "return string.rep(unit, tonumber(times))",
});

describe("the client's size limits in workerd", () => {
  it("a script whose arguments alone pass Upstash's 10 MB is refused unsent (PayloadTooLargeError); one of 7 MB runs", async () => {
    const before = (await statsOf(api.target, tag)).requests;
    const error = await echoLength
      .run(redis(), {}, { blob: "y".repeat(MAX_REQUEST_BYTES + 1) })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PayloadTooLargeError);
    expect((await statsOf(api.target, tag)).requests).toBe(before);
    expect(await echoLength.run(redis(), {}, { blob: "é".repeat(3_500_000) })).toBe(7_000_000);
    expect((await statsOf(api.target, tag)).requests).toBeGreaterThan(before);
  });

  it("a reply over MAX_REPLY_BYTES is not read whole: StorageUnavailableError; an 8 MB one is read whole", async () => {
    const under = (await repeat.run(redis(), {}, { unit: "wxyz", times: 2_000_000 })) as unknown as string;
    expect(under.length).toBe(8_000_000);
    const error = (await repeat
      .run(redis(), {}, { unit: "wxyz", times: MAX_REPLY_BYTES / 4 + 1 })
      .catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(StorageUnavailableError);
    expect(error.message).toContain(`reply passed ${MAX_REPLY_BYTES} bytes`);
    expect((error.cause as Error).name).toBe("UpstashReplyTooLarge");
  });
});
