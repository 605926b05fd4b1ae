/** What the histogram read tests share (test/redis/histograms-bounds and histograms-edges). */
import type { Ctx } from "../../src/context.ts";
import { DAY } from "../../src/time.ts";

/** Day starts from `from` to `to`, inclusive. */
export const range = (from: number, to: number) =>
  Array.from({ length: (to - from) / DAY + 1 }, (_, i) => from + i * DAY);

/** `n` consecutive integers from `start`. */
export const upTo = (n: number, start = 0) => Array.from({ length: n }, (_, i) => start + i);

/**
 * `client` without its pipeline, as the library adapts a user's own client: a histogram read then
 * runs the one script that loads its union itself, where `client` would send a ZPOPMIN after it.
 */
export function withoutPipeline(client: Pick<Ctx["redis"], "evalsha" | "eval" | "ping">): Ctx["redis"] {
  return {
    evalsha: client.evalsha.bind(client),
    eval: client.eval.bind(client),
    ping: client.ping.bind(client),
  } as unknown as Ctx["redis"];
}
