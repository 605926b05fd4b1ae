import * as z from "../zod.ts";
import { MAX_LISTED, MAX_TOP_N } from "../../src/trending/validate.ts";
import { once } from "../lazy-route.ts";
import { fieldsPrecheck, intField, memberField, nameField, OMIT, windowField } from "../prechecks.ts";
import { intQuery, Member, Name, Window } from "../schemas.ts";

/**
 * The query and path-parameter schemas of the trending reads (./trending.ts), each with its
 * precheck (../lazy-route.ts `prechecked`, ../prechecks.ts): the usual requests (`n` in digits, a
 * window `parseWindow` takes, a valid name and member) and their usual refusals are answered
 * without zod, so a cold isolate's first top, rising or member lookup loads none; anything else,
 * zod decides.
 */

export const TopQuery = once(() => z.object({ n: intQuery(1, MAX_TOP_N, 10), window: Window() }));
/** TopQuery's precheck. */
export const topQueryPrecheck = fieldsPrecheck({ n: intField(1, MAX_TOP_N, 10), window: windowField });
export const WindowQuery = once(() => z.object({ window: Window() }));
/** WindowQuery's precheck, as TopQuery's. */
export const windowQueryPrecheck = fieldsPrecheck({ window: windowField });
export const MemberLookupParams = once(() =>
  z.object({
    stream: Name().openapi({ param: { name: "stream", in: "path" } }),
    member: Member().openapi({ param: { name: "member", in: "path" } }),
  }),
);
/** MemberLookupParams' precheck: a stream name and a member, or their refusals. */
export const memberLookupParamsPrecheck = fieldsPrecheck({ stream: nameField, member: memberField });
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
export const risingQueryPrecheck = fieldsPrecheck({ n: intField(1, MAX_TOP_N, 10), baseline: windowField });

/** The query of the streams' list: a page of `limit` names after `cursor` (the previous page's last name). */
export const StreamsQuery = once(() =>
  z.object({
    limit: intQuery(1, MAX_LISTED, MAX_LISTED),
    // `cursor=` (empty) is the first page, as on the presence and leaderboard lists, so a client
    // pages all three with `?cursor=${nextCursor ?? ""}` (review 20).
    cursor: z
      .union([Name(), z.enum([""])])
      .optional()
      .openapi({ description: "nextCursor of the previous page; empty or absent for the first page" }),
  }),
);
/** StreamsQuery's precheck: `limit` in plain digits, a cursor that is a stream name or empty. */
export const streamsQueryPrecheck = fieldsPrecheck({
  limit: intField(1, MAX_LISTED, MAX_LISTED),
  cursor: (value) => (value === undefined ? OMIT : value === "" ? "" : nameField(value)),
});
