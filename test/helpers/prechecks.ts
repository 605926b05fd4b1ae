import { expect } from "vitest";
import type { Verdict } from "../../functions/lazy-route.ts";

/**
 * A precheck (functions/lazy-route.ts `prechecked`) must answer exactly as the zod schema it
 * stands in for, whenever it answers: the same data, keys in the same order, or the same issues
 * (path and message, what the 400 envelope shows), in the same order.
 */
export function agrees(
  schema: { safeParse(value: unknown): unknown },
  precheck: (value: unknown) => Verdict,
  inputs: unknown[],
) {
  let decided = 0;
  for (const input of inputs) {
    const verdict = precheck(input);
    if (verdict === undefined) continue;
    decided++;
    const zod = schema.safeParse(input) as Exclude<Verdict, undefined>;
    const shape = (v: Exclude<Verdict, undefined>) =>
      JSON.stringify(
        v.success ? { data: v.data } : { issues: v.error.issues.map((i) => ({ path: i.path, message: i.message })) },
      );
    expect(shape(verdict), JSON.stringify(input)).toBe(shape(zod));
  }
  return decided;
}

/** Members and ids: the two valid ("a" and 128 × "é", 256 bytes) and every kind of invalid. */
export const members: unknown[] = [
  "a",
  "",
  "a\nb",
  "\ud800",
  "é".repeat(128),
  "é".repeat(129),
  "x".repeat(257),
  1,
  null,
];

/** A query lists only what was sent: drops the absent (`undefined`) fields. */
export const clean = (q: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(q).filter(([, v]) => v !== undefined));
/** Every combination of the values listed for each field (a field's `undefined`: absent). */
export const combinations = (values: Record<string, unknown[]>) =>
  Object.entries(values).reduce<Record<string, unknown>[]>(
    (all, [key, list]) => all.flatMap((q) => list.map((v) => ({ ...q, [key]: v }))),
    [{}],
  );
/** `undefined` (absent), the `good` values, and values an integer query must leave to zod (or refuse). */
export const counts = (...good: string[]): unknown[] => [
  undefined,
  ...good,
  "0",
  "",
  "07",
  "1e1",
  " 5",
  "2.5",
  "-1",
  "x",
  ["1", "2"],
  "99999999999",
];

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
