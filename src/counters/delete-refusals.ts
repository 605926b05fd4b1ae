import { ValidationError } from "../errors.ts";
import type { Refusal } from "../redis/script.ts";
import { MAX_DELETE_KEYS, MAX_DELETE_READS } from "./limits.ts";

// The member delete's refusals and its split signal, apart from delete-script.ts so the script's
// module holds its Lua and its plan (it passed ~400 lines when deletes began to run in parts).

/** A delete shown to fit MAX_DELETE_KEYS whose member may be in more keys than one script may reach. */
export class DeleteSplit extends Error {
  readonly keys: number;
  constructor(keys: number) {
    super(`counters.deleteMember: ${keys} keys may hold the member; run the range in parts`);
    this.keys = keys;
  }
}

/** How counters.deleteMember's script refuses (`refusals` of defineScript), and its `split`. */
export const deleteRefusals: Record<string, (r: Refusal) => Error> = {
  not_shown_to_fit: (r) =>
    new ValidationError(
      `A member delete may change at most ${MAX_DELETE_KEYS} keys, and ${MAX_DELETE_READS} commands did not show this one fits; split the range into ranges of at most 60 days.`,
      [
        {
          path: "from",
          message: `the member may be in more than ${MAX_DELETE_KEYS} of the range's buckets and rollups (up to ${String(r.keys)} after ${String(r.reads)} reads, at most ${MAX_DELETE_READS}); split the range into ranges of at most 60 days, which always fit`,
        },
      ],
    ),
  // not a refusal of the request: the call runs the range as several scripts (counters.ts)
  split: (r) => new DeleteSplit(Number(r.keys)),
  too_many_keys: (r) =>
    new ValidationError(`A member delete may change at most ${MAX_DELETE_KEYS} keys; split the range.`, [
      {
        path: "from",
        message: `the member may be in at least ${String(r.keys)} of the range's buckets and rollups, more than ${MAX_DELETE_KEYS} (every key of 60 days of hours); split the range`,
      },
    ]),
};
