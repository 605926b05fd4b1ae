/**
 * The contract's name rule (API.md: `{stream}`, `{counter}`, `{histogram}`, `{room}`, `{board}`,
 * `{player}`, a webhook's `{name}`), apart from ./validation.ts so that `edgestats/client`
 * (./client-http.ts) checks a name in a path with the same pattern and words as the service without
 * loading the library's checks.
 */

/** Names of streams, counters, histograms, rooms, boards and players. */
export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** What a bad name is told, in every feature and in the OpenAPI schemas. */
export const NAME_RULE = "must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$";
