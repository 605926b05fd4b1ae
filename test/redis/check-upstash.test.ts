/**
 * `npm run check-upstash` (dev/check-upstash.ts) against the test stack: every feature it checks
 * passes on redis-server 7.0.15 behind the local Upstash server, and a check that fails is
 * reported as a failure, not as a pass.
 */
import { describe, expect, it } from "vitest";
import { CHECKS, checkUpstash, PIPELINE_CHECK, type Evaluator } from "../../dev/check-upstash.ts";
import { libraryTest } from "../helpers/library.ts";
import { keysUnder } from "../helpers/upstash-rest.ts";

const lib = libraryTest("check-upstash");

describe("check-upstash", () => {
  it("passes every check on the test stack and leaves no key behind", async () => {
    const prefix = `${lib.prefix}:check`;
    const results = await checkUpstash(lib.redis, prefix);
    // the library's client has a pipeline: the last check sends a script and a ZPOPMIN in one
    expect(results).toEqual([...CHECKS.map((c) => ({ name: c.name })), { name: PIPELINE_CHECK }]);
    expect(await keysUnder(lib.target, prefix)).toEqual([]);
  });

  it("reports a database that refuses a command, and one that answers wrongly", async () => {
    // the stack's server, but ZINTERCARD refused as a database without it would, and SET NX always "setting"
    const strict: Evaluator = {
      eval: (script, keys, args) =>
        lib.redis.eval(
          script
            .replace("redis.call('ZINTERCARD'", "redis.call('ZINTERCARDX'")
            .replace("if redis.call('SET', KEYS[1], 'b', 'NX', 'EX', 60) then", "if true then"),
          keys,
          args,
        ),
    };
    const results = await checkUpstash(strict, `${lib.prefix}:strict`);
    // no pipeline on this evaluator: only the script checks
    expect(results).toHaveLength(CHECKS.length);
    const failed = results.filter((r) => r.problem !== undefined);
    expect(failed.map((r) => r.name)).toEqual([CHECKS[0]!.name, CHECKS[3]!.name]);
    expect(failed[0]!.problem).toBe("second SET NX set");
    expect(failed[1]!.problem).toMatch(/unknown command|ZINTERCARDX/i);
  });
});
