import { parseAt, parseWindow } from "../src/time.ts";
import { memberProblem, NAME_PATTERN, NAME_RULE, textProblem } from "../src/validation.ts";
import type { Verdict } from "./lazy-route.ts";
import { intRule, isPlainObject, WINDOW_RULE } from "./schemas.ts";

/**
 * Prechecks (./lazy-route.ts `prechecked`) of query and path-parameter objects, field by field.
 *
 * Why: a read whose query or parameters only zod can validate loads zod on its first request
 * (~8 ms of CPU in a cold isolate: functions/zod.ts). The usual inputs of a read are simple (a
 * number in plain digits, a name, a value of a list), so a field that knows what zod makes of them
 * answers without zod, and leaves anything else to zod, which then answers exactly as before.
 * Each precheck built here is compared with its zod schema in test/unit/prechecks.test.ts (writes) or
 * test/unit/prechecks-reads.test.ts (reads).
 *
 * The usual refusals of a query or path (a number out of range or not in digits, a value not in
 * the list, a bad name or member) are decided too: a field whose one zod issue is known gives it
 * (`Refusal`), so a cold isolate's first refused read answers its 400 without loading zod either
 * (issue 14, point 6: it cost ~20 ms of CPU). A body's fields only accept (`strictObject`): its
 * refusals stay zod's, whose unions and unknown keys word them.
 */

/**
 * What a field gives when zod refuses its value with one issue of this message, at the field's
 * key: the issues of an object are its fields' issues, in the schema's key order.
 */
export class Refusal {
  readonly message: string;
  constructor(message: string) {
    this.message = message;
  }
}

/** zod's issue for a repeated query name (Hono hands its values over as an array) where a string is expected. */
export const EXPECTED_STRING = "Invalid input: expected string, received array";

/** What a field returns when zod leaves its key out of the data (an optional field, absent). */
export const OMIT: unique symbol = Symbol("omit");

/**
 * A field's precheck: the value zod's schema makes of the input, `OMIT` when zod leaves the key
 * out, a `Refusal` when zod's one issue is known, or `undefined` when only zod can say.
 */
export type Field = (value: unknown) => unknown;

/**
 * The precheck of `z.object(...)` whose fields are `fields`, in the schema's key order (zod's data
 * lists the keys in that order). Keys that are not fields are ignored, as a `z.object` strips them.
 */
export function fieldsPrecheck(fields: Record<string, Field>): (value: unknown) => Verdict {
  const object = objectOf(fields, false);
  return (value) => {
    const v = object(value);
    if (v === undefined) return undefined;
    return v instanceof Refused ? { success: false, error: { issues: v.issues } } : { success: true, data: v };
  };
}

/** The issues of an object some of whose fields are refused. */
class Refused {
  readonly issues: { path: string[]; message: string }[] = [];
}

/** A precheck from a function that gives the data zod would, or `undefined` to leave the input to zod. */
export function precheckOf(data: (value: unknown) => unknown): (value: unknown) => Verdict {
  return (value) => {
    const v = data(value);
    return v === undefined ? undefined : { success: true, data: v };
  };
}

/**
 * The data of a plain object whose fields all pass, in the fields' order, or its fields' refusals
 * when all the others pass; with `strict` (`.strict()`, a body), `undefined` for an object with a
 * key that is not a field, which zod refuses, or a refused field.
 */
function objectOf(fields: Record<string, Field>, strict: true): (value: unknown) => Record<string, unknown> | undefined;
function objectOf(
  fields: Record<string, Field>,
  strict: false,
): (value: unknown) => Record<string, unknown> | Refused | undefined;
function objectOf(fields: Record<string, Field>, strict: boolean) {
  const entries = Object.entries(fields);
  return (value: unknown): Record<string, unknown> | Refused | undefined => {
    // Hono hands a query or path parameters over as a plain object; anything else is zod's to refuse.
    if (!isPlainObject(value)) return undefined;
    if (strict) for (const key of Object.keys(value)) if (!Object.hasOwn(fields, key)) return undefined;
    const data: Record<string, unknown> = {};
    let refused: Refused | undefined;
    for (const [key, field] of entries) {
      const v = field(Object.hasOwn(value, key) ? value[key] : undefined);
      if (v === undefined) return undefined;
      if (v instanceof Refusal) {
        if (strict) return undefined;
        (refused ??= new Refused()).issues.push({ path: [key], message: v.message });
      } else if (v !== OMIT) data[key] = v;
    }
    return refused ?? data;
  };
}

/** `intQuery(min, max, fallback)` (./schemas.ts): `fallback` when absent, else as `intTextField`. */
export const intField =
  (min: number, max: number, fallback: number): Field =>
  (value) =>
    value === undefined ? fallback : intTextValue(value, min, max);

/** `intText(min, max).optional()` (./schemas.ts): absent is left out; else as `intTextValue`. */
export const intTextField =
  (min: number, max: number): Field =>
  (value) =>
    value === undefined ? OMIT : intTextValue(value, min, max);

/**
 * What `intText(min, max)` makes of a value: the number of decimal digits within the range, or
 * zod's one issue: its pattern's (not digits), then its pipe's `.min()` or `.max()`. More than 15
 * digits (where `.int()` also refuses a number past 2^53) and any other value, zod decides.
 */
function intTextValue(value: unknown, min: number, max: number): unknown {
  if (Array.isArray(value)) return new Refusal(EXPECTED_STRING);
  if (typeof value !== "string") return undefined;
  if (!(min < 0 ? /^-?[0-9]+$/ : /^[0-9]+$/).test(value)) return new Refusal(intRule(min, max));
  if (value.replace("-", "").length > 15) return undefined;
  const n = Number(value);
  if (n < min) return new Refusal(`Too small: expected number to be >=${min}`);
  if (n > max) return new Refusal(`Too big: expected number to be <=${max}`);
  return n;
}

/**
 * An optional string that passes `test` (any string without one); one that fails it is refused
 * with `message` when given (the schema's one issue), else zod's to word; a repeated query name
 * (an array) is refused as zod does.
 */
export const textField =
  (test?: (text: string) => boolean, message?: string): Field =>
  (value) => {
    if (value === undefined) return OMIT;
    if (Array.isArray(value)) return new Refusal(EXPECTED_STRING);
    if (typeof value !== "string") return undefined;
    if (!test || test(value)) return value;
    return message === undefined ? undefined : new Refusal(message);
  };

/**
 * `z.string().max(max).optional()` (a page cursor): zod counts code points (a surrogate pair is
 * one; test/unit/review-prechecks.test.ts caught a precheck that counted UTF-16 units).
 */
export const maxTextField = (max: number): Field =>
  textField((text) => codePoints(text) <= max, `Too big: expected string to have <=${max} characters`);

/** Code points, as zod counts them: UTF-16 units less each high and low surrogate pair. */
const codePoints = (text: string) => text.length - (text.match(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g)?.length ?? 0);

/**
 * An optional string refined with `problem` (`z.string().optional().superRefine(...)`, a season
 * selector): the text, or the problem's refusal.
 */
export const checkedTextField =
  (problem: (text: string) => string | null | undefined): Field =>
  (value) => {
    if (value === undefined) return OMIT;
    if (Array.isArray(value)) return new Refusal(EXPECTED_STRING);
    if (typeof value !== "string") return undefined;
    const wrong = problem(value);
    return wrong ? new Refusal(wrong) : value;
  };

/** `Window()` (./schemas.ts): absent is 24 h; a window `parseWindow` takes, its hours; any other text, refused. */
export const windowField: Field = (value) => {
  if (Array.isArray(value)) return new Refusal(EXPECTED_STRING);
  if (value !== undefined && typeof value !== "string") return undefined;
  return parseWindow(value ?? "24h") ?? new Refusal(WINDOW_RULE);
};

/** `schema.default(fallback)`: absent is `fallback`, anything else is the field's. */
export const defaulted =
  (field: Field, fallback: unknown): Field =>
  (value) =>
    value === undefined ? fallback : field(value);

/** An optional value of `list` (`z.enum(list).optional()`). */
export const oneOfField = (list: readonly string[]): Field => optional(oneOf(list));

/** A path name (`Name`, ./schemas.ts): the name, or refused (`NAME_RULE`). */
export const nameField: Field = (value) => {
  if (Array.isArray(value)) return new Refusal(EXPECTED_STRING);
  if (typeof value !== "string") return undefined;
  return NAME_PATTERN.test(value) ? value : new Refusal(NAME_RULE);
};

/** A member or id in a path (`Member`, ./schemas.ts): 1..256 UTF-8 bytes, no control characters; else refused with its problem. */
export const memberField: Field = (value) => {
  if (Array.isArray(value)) return new Refusal(EXPECTED_STRING);
  if (typeof value !== "string") return undefined;
  const problem = memberProblem(value);
  return problem ? new Refusal(problem) : value;
};
/** Free text (`DisplayText`, ./schemas.ts): as a member, "." and ".." allowed. */
export const displayTextField: Field = (value) =>
  typeof value === "string" && !textProblem(value) ? value : undefined;

/*
 * Values of JSON bodies, for prechecks of write bodies that decide only what zod accepts (any
 * problem is zod's to word): `undefined` when the value is not one zod takes as it is.
 */

/** A required field: absent is zod's (a missing key). */
export const required =
  (field: Field): Field =>
  (value) =>
    value === undefined ? undefined : field(value);

/** An optional field: absent leaves the key out, as zod does. */
export const optional =
  (field: Field): Field =>
  (value) =>
    value === undefined ? OMIT : field(value);

/** `z.number().finite().min(-limit).max(limit)`: `Score()` (1e15), `Increment()` (1e12). */
export const boundedNumber =
  (limit: number): Field =>
  (value) =>
    typeof value === "number" && Number.isFinite(value) && value >= -limit && value <= limit ? value : undefined;

/** `Score()` (./schemas.ts): a finite number within ±1e15 (histogram values, leaderboard scores). */
export const scoreField: Field = boundedNumber(1e15);

/** `At()` (./schemas.ts): epoch ms of an integer or of a time string `parseAt` takes. */
export const atField: Field = (value) =>
  (Number.isSafeInteger(value) || typeof value === "string" ? parseAt(value as number | string) : null) ?? undefined;

/** One of `list` (`z.enum(list)`); any other string or a list of them, refused as zod does. */
export const oneOf = (list: readonly string[]): Field => {
  const message = `Invalid option: expected one of ${list.map((v) => `"${v}"`).join("|")}`;
  return (value) =>
    list.includes(value as string)
      ? value
      : typeof value === "string" || Array.isArray(value)
        ? new Refusal(message)
        : undefined;
};

/**
 * `z.object(...).strict()` of `fields`, for a body: the data in the schema's key order, or
 * `undefined` for anything but a plain object whose keys are all fields and whose fields all pass.
 */
export function strictObject(fields: Record<string, Field>): (value: unknown) => Record<string, unknown> | undefined {
  return objectOf(fields, true);
}
