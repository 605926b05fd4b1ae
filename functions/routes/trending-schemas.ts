import * as z from "../zod.ts";
import { MAX_TOP_N } from "../../src/trending/validate.ts";
import { memberProblem, NAME_PATTERN } from "../../src/validation.ts";
import { once, type Verdict } from "../lazy-route.ts";
import { intQuery, intQueryValue, Member, Name, Window, windowValue } from "../schemas.ts";

/**
 * The query and path-parameter schemas of the trending reads (./trending.ts), each with its
 * precheck (../lazy-route.ts `prechecked`): the usual requests (`n` in plain digits, a window
 * `parseWindow` takes, a valid name and member) are answered without zod, so a cold isolate's
 * first top, rising or member lookup loads none; anything else, zod decides.
 */

export const TopQuery = once(() => z.object({ n: intQuery(1, MAX_TOP_N, 10), window: Window() }));
/** TopQuery's precheck. */
export function topQueryPrecheck(value: unknown): Verdict {
  const query = value as Record<string, unknown>;
  const n = intQueryValue(query.n, 1, MAX_TOP_N, 10);
  const window = windowValue(query.window);
  return n === undefined || window === undefined ? undefined : { success: true, data: { n, window } };
}
export const WindowQuery = once(() => z.object({ window: Window() }));
/** WindowQuery's precheck, as TopQuery's. */
export function windowQueryPrecheck(value: unknown): Verdict {
  const window = windowValue((value as Record<string, unknown>).window);
  return window === undefined ? undefined : { success: true, data: { window } };
}
export const MemberLookupParams = once(() =>
  z.object({
    stream: Name().openapi({ param: { name: "stream", in: "path" } }),
    member: Member().openapi({ param: { name: "member", in: "path" } }),
  }),
);
/** MemberLookupParams' precheck: a valid stream name and member, else zod decides. */
export function memberLookupParamsPrecheck(value: unknown): Verdict {
  const { stream, member } = value as Record<string, unknown>;
  if (typeof stream !== "string" || !NAME_PATTERN.test(stream)) return undefined;
  if (typeof member !== "string" || memberProblem(member)) return undefined;
  return { success: true, data: { stream, member } };
}
export const RisingQuery = once(() =>
  z.object({
    n: intQuery(1, MAX_TOP_N, 10),
    baseline: Window().openapi({
      type: "string",
      example: "24h",
      description: "finished hours the baseline averages over (at most the retention)",
    }),
  }),
);
/** RisingQuery's precheck, as TopQuery's. */
export function risingQueryPrecheck(value: unknown): Verdict {
  const query = value as Record<string, unknown>;
  const n = intQueryValue(query.n, 1, MAX_TOP_N, 10);
  const baseline = windowValue(query.baseline);
  return n === undefined || baseline === undefined ? undefined : { success: true, data: { n, baseline } };
}
