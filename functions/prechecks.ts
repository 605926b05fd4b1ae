import { parseAt } from "../src/time.ts";
import { memberProblem, NAME_PATTERN, textProblem } from "../src/validation.ts";
import type { Verdict } from "./lazy-route.ts";
import { intQueryValue, isPlainObject } from "./schemas.ts";

/**
 * Prechecks (./lazy-route.ts `prechecked`) of query and path-parameter objects, field by field.
 *
 * Why: a read whose query or parameters only zod can validate loads zod on its first request
 * (~8 ms of CPU in a cold isolate: functions/zod.ts). The usual inputs of a read are simple (a
 * number in plain digits, a name, a value of a list), so a field that knows what zod makes of them
 * answers without zod, and leaves anything else to zod, which then answers exactly as before.
 * Each precheck built here is compared with its zod schema in test/unit/prechecks.test.ts (writes) or
 * test/unit/prechecks-reads.test.ts (reads).
 */

/** What a field returns when zod leaves its key out of the data (an optional field, absent). */
export const OMIT: unique symbol = Symbol("omit");

/**
 * A field's precheck: the value zod's schema makes of the input, `OMIT` when zod leaves the key
 * out, or `undefined` when only zod can say (a wrong value: its issues are zod's to word).
 */
export type Field = (value: unknown) => unknown;

/**
 * The precheck of `z.object(...)` whose fields are `fields`, in the schema's key order (zod's data
 * lists the keys in that order). Keys that are not fields are ignored, as a `z.object` strips them.
 */
export function fieldsPrecheck(fields: Record<string, Field>): (value: unknown) => Verdict {
  return precheckOf(objectOf(fields, false));
}

/** A precheck from a function that gives the data zod would, or `undefined` to leave the input to zod. */
export function precheckOf(data: (value: unknown) => unknown): (value: unknown) => Verdict {
  return (value) => {
    const v = data(value);
    return v === undefined ? undefined : { success: true, data: v };
  };
}

/**
 * The data of a plain object whose fields all pass, in the fields' order; with `strict`
 * (`.strict()`), `undefined` for an object with a key that is not a field, which zod refuses.
 */
function objectOf(fields: Record<string, Field>, strict: boolean) {
  const entries = Object.entries(fields);
  return (value: unknown): Record<string, unknown> | undefined => {
    // Hono hands a query or path parameters over as a plain object; anything else is zod's to refuse.
    if (!isPlainObject(value)) return undefined;
    if (strict) for (const key of Object.keys(value)) if (!Object.hasOwn(fields, key)) return undefined;
    const data: Record<string, unknown> = {};
    for (const [key, field] of entries) {
      const v = field(Object.hasOwn(value, key) ? value[key] : undefined);
      if (v === undefined) return undefined;
      if (v !== OMIT) data[key] = v;
    }
    return data;
  };
}

/** `intQuery(min, max, fallback)` (./schemas.ts): plain decimal digits within the range, or absent. */
export const intField =
  (min: number, max: number, fallback: number): Field =>
  (value) =>
    intQueryValue(value, min, max, fallback);

/** An optional string that passes `test` (any string without one); a repeated query name is an array: zod's. */
export const textField =
  (test?: (text: string) => boolean): Field =>
  (value) =>
    value === undefined ? OMIT : typeof value === "string" && (!test || test(value)) ? value : undefined;

/** `schema.default(fallback)`: absent is `fallback`, anything else is the field's. */
export const defaulted =
  (field: Field, fallback: unknown): Field =>
  (value) =>
    value === undefined ? fallback : field(value);

/** An optional value of `list` (`z.enum(list).optional()`). */
export const oneOfField = (list: readonly string[]): Field => optional(oneOf(list));

/** A path name (`Name`, ./schemas.ts). */
export const nameField: Field = (value) => (typeof value === "string" && NAME_PATTERN.test(value) ? value : undefined);

/** A member or id in a path (`Member`, ./schemas.ts): 1..256 UTF-8 bytes, no control characters. */
export const memberField: Field = (value) => (typeof value === "string" && !memberProblem(value) ? value : undefined);
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

/** One of `list`. */
export const oneOf =
  (list: readonly string[]): Field =>
  (value) =>
    list.includes(value as string) ? value : undefined;

/**
 * `z.object(...).strict()` of `fields`, for a body: the data in the schema's key order, or
 * `undefined` for anything but a plain object whose keys are all fields and whose fields all pass.
 */
export function strictObject(fields: Record<string, Field>): (value: unknown) => Record<string, unknown> | undefined {
  return objectOf(fields, true);
}
