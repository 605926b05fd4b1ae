/**
 * The library's shape checks of its write inputs, run by the handles before the feature's own
 * checks (and before any Redis call): each item is an object (or a string / number where the
 * handle takes one) and names only its input's fields. The service's bodies are strict (zod:
 * `Unrecognized key` → 400) and the library's inputs were not (review 14): a misspelt option
 * (`retention` for `retentionDays`) was ignored and the rest written with the defaults, and a
 * `null` item was a TypeError from deep inside. Only the library runs these (a route's body has
 * passed its strict schema already), so the service's answers and its CPU per request are unchanged.
 * Each set is the field list of the route's schema (test/unit/library-inputs.test.ts compares them with the OpenAPI document's bodies).
 * Every options object is checked the same way (QUERY_OPTIONS, WRITE_OPTIONS, SETTINGS below).
 */
import type { FieldIssue } from "../errors.ts";
import { invalid } from "../validation.ts";
import { AGGREGATES, ORDERS, SORT_KEYS } from "../counters/limits.ts";

const fields = (...names: string[]): ReadonlySet<string> => new Set(names);

/** The fields each write input may have, as the service's body schema names them. */
export const FIELDS = {
  trendingEvent: fields("member", "count", "at"),
  counterItem: fields("member", "by", "period", "at", "ttl"),
  union: fields("sources", "aggregate", "weights", "ttl"),
  unionSource: fields("counter", "period", "from", "to"),
  histogramSettings: fields("bucketWidth", "unit", "retentionDays"),
  observation: fields("value", "at"),
  boardSettings: fields("ties", "reset", "keepSeasons", "minScore", "maxScore", "maxIncrement"),
  join: fields("name", "meta", "score"),
  byChange: fields("by"),
  setChange: fields("set", "mode"),
  playerByChange: fields("player", "by"),
  playerSetChange: fields("player", "set", "mode"),
} as const;

/**
 * The options of each method whose route takes them as its query (the reads, the lists and a
 * counter member's delete), keyed `<handle>.<method>` (`stats.` for Edgestats' own): the route's
 * query parameters, less those the method takes as an argument of its own (history's `member`). The service ignores a query parameter it does not know (a URL's habit); the library
 * refuses an option it does not know as it refuses a body field (review 14), because a misspelt
 * option (`windw`, `limt`) read with the defaults looks like an answer. test/unit/library-options.test.ts
 * compares each set with the OpenAPI document's query parameters of the route named there.
 */
export const QUERY_OPTIONS = {
  "trending.top": fields("n", "window"),
  "trending.member": fields("window"),
  "trending.rising": fields("n", "baseline"),
  "trending.history": fields("hours"),
  "counter.top": fields("n", "period", "from", "to", "aggregate"),
  "counter.bottom": fields("n", "period", "from", "to", "aggregate"),
  "counter.member": fields("period", "from", "to", "aggregate"),
  "counter.range": fields("min", "max", "limit", "order", "period", "from", "to", "aggregate"),
  "counter.sorted": fields("by", "order", "period", "from", "to", "aggregate"),
  "counter.remove": fields("period", "from", "to"),
  "histogram.read": fields("from", "to", "top"),
  "presence.members": fields("limit", "cursor"),
  "presence.history": fields("hours"),
  "leaderboard.get": fields("season"),
  "leaderboard.rank": fields("season"),
  "leaderboard.page": fields("page", "limit", "season"),
  "leaderboard.around": fields("k", "season"),
  "stats.counters": fields("limit", "offset", "cursor"),
  "stats.histograms": fields("offset", "limit", "cursor"),
  "stats.rooms": fields("limit", "cursor"),
  "stats.boards": fields("offset", "limit", "cursor"),
  "stats.streamPage": fields("limit", "cursor"),
} as const;

/**
 * The counters' options that take one of a few values, as the routes' schemas' enums
 * (functions/routes/counters-schemas.ts). Typed, but from JS (or passed on from user input) a value
 * outside them was read as another one (`order: "up"` echoed back, `aggregate: "avg"` read as
 * another aggregate, or a Redis error half way): refused as the route's 400 instead (review 17).
 */
export const CHOICES = {
  order: ORDERS,
  by: SORT_KEYS,
  aggregate: AGGREGATES,
} as const satisfies Record<string, readonly string[]>;

/** Refuses a counter option of CHOICES (when given) outside its values, as zod's enum says it. */
export function checkChoices(options: object): void {
  const issues: FieldIssue[] = [];
  for (const [name, values] of Object.entries(CHOICES) as [string, readonly string[]][]) {
    const value: unknown = (options as Record<string, unknown>)[name];
    if (value !== undefined && !values.includes(value as string))
      issues.push({ path: name, message: `Invalid option: expected one of ${values.map((v) => `"${v}"`).join("|")}` });
  }
  if (issues.length > 0) invalid(issues);
}

/** A write's options: library-only (the service takes the key as the `Idempotency-Key` header). */
export const WRITE_OPTIONS = fields("idempotencyKey");

/** `new Edgestats(options)`'s settings (library-only: the service reads vars): a misspelt `prefx` wrote under "es". */
export const SETTINGS = {
  edgestats: fields("redis", "prefix", "clock", "subrequestLimit", "trending", "presence"),
  trending: fields("retentionHours", "keep", "compactBatches"),
  presence: fields("timeoutSeconds"),
} as const;

const isObject = (value: unknown): value is object =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * Why `value` is not an object of `allowed` fields, as zod's strict object says it (`expected
 * object`, `Unrecognized key: "x"`), or null. One Object.keys and a Set lookup per field: about
 * 0.2 ms for a 1,000-item batch (Node 24, this repo's shared dev machine), against a round trip of ms.
 */
export function shapeIssue(value: unknown, allowed: ReadonlySet<string>, path: string): FieldIssue | null {
  if (!isObject(value)) return { path, message: `must be an object, not ${value === null ? "null" : typeof value}` };
  let extra: string[] | undefined;
  for (const key of Object.keys(value)) if (!allowed.has(key)) (extra ??= []).push(key);
  if (extra === undefined) return null;
  const quoted = extra.map((key) => JSON.stringify(key)).join(", ");
  return { path, message: `Unrecognized key${extra.length > 1 ? "s" : ""}: ${quoted}` };
}

/** Refuses `value` unless it is an object of `allowed` fields (`path` "" for the whole argument). */
export function checkShape(value: unknown, allowed: ReadonlySet<string>, path = ""): void {
  const issue = shapeIssue(value, allowed, path);
  if (issue) invalid([issue]);
}

/**
 * Refuses a batch unless each item is an object of `allowed` fields (or, with `scalar`, a value of
 * that type, e.g. a histogram's plain number). An item's path is `<listKey>.<i>` when the caller
 * passed a list, "" when it passed one item, as the service names them.
 */
export function checkItems(
  items: readonly unknown[],
  allowed: ReadonlySet<string> | ((item: unknown) => ReadonlySet<string>),
  listKey: string,
  passedList: boolean,
  scalar?: "number" | "string",
): void {
  const issues: FieldIssue[] = [];
  items.forEach((item, i) => {
    if (scalar !== undefined && typeof item === scalar) return;
    const issue = shapeIssue(
      item,
      typeof allowed === "function" ? allowed(item) : allowed,
      passedList ? `${listKey}.${i}` : "",
    );
    if (issue) issues.push(issue);
  });
  if (issues.length > 0) invalid(issues);
}

/** The fields of a score change: `{ by }` or `{ set, mode }` (with `player` in a batch), as the service's union of two. */
export function changeFields(change: unknown, withPlayer: boolean): ReadonlySet<string> {
  const byChange = isObject(change) && "by" in change;
  if (withPlayer) return byChange ? FIELDS.playerByChange : FIELDS.playerSetChange;
  return byChange ? FIELDS.byChange : FIELDS.setChange;
}
