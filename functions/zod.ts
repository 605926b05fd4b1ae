import type * as Zod from "zod/v4";
import type * as Parts from "./zod-parts.ts";

/**
 * The parts of zod the app's schemas are built with, imported by name: `import * as z from
 * "../zod.ts"` reads as zod's `z`, but a bundler can leave out what no one uses (zod's own `z`
 * is one object holding all of zod, so @hono/zod-openapi's `z` kept all of it in the Worker:
 * 129 KB of minified code, 82 KB by name; issue 14, point 6). In the Worker bundle,
 * @hono/zod-openapi's `z` is then only what it needs (functions/build/zod-namespace.ts).
 *
 * Loaded on first use (issue 14, point 6): zod and @hono/zod-openapi are ~80 KB of the Worker's
 * code, and evaluating them builds ~100 classes (~0.3 MB of objects, which the first scavenge
 * then copies), yet the requests a precheck decides (./lazy-route.ts `prechecked`: the commonest
 * writes, valid or refused, and /healthz) never build a zod schema. So this module holds each part
 * as a binding that `loadZod()` fills from ./zod-parts.ts, a chunk of its own; before that, using
 * one throws `ZodNotLoaded`, which ./lazy-route.ts answers by loading zod and building again.
 * Every schema of the app is built in a function (a route's spec, `once`), never when a module
 * loads, so nothing reads these before a request or the OpenAPI document needs them.
 *
 * Needs another part of zod? Add it here and to ./zod-parts.ts.
 */
export type { infer, ZodArray, ZodObject, ZodType } from "zod/v4";

/** A part of zod used before `loadZod()` resolved. */
export class ZodNotLoaded extends Error {
  constructor() {
    super("zod is used before it is loaded (loadZod in functions/zod.ts)");
  }
}

const notLoaded = (): never => {
  throw new ZodNotLoaded();
};

export let any: typeof Zod.any = notLoaded;
export let array: typeof Zod.array = notLoaded;
export let boolean: typeof Zod.boolean = notLoaded;
export let coerce: typeof Zod.coerce = new Proxy({} as typeof Zod.coerce, { get: () => notLoaded });
let enumPart: typeof Zod.enum = notLoaded;
export { enumPart as enum };
/** Only returned from inside a schema's own callbacks, so only read once zod is loaded. */
export let NEVER: typeof Zod.NEVER;
export let number: typeof Zod.number = notLoaded;
export let object: typeof Zod.object = notLoaded;
export let preprocess: typeof Zod.preprocess = notLoaded;
export let record: typeof Zod.record = notLoaded;
export let string: typeof Zod.string = notLoaded;
export let union: typeof Zod.union = notLoaded;

let parts: typeof Parts | undefined;

/**
 * Loads zod and @hono/zod-openapi. Each call that finds them not loaded yet imports them itself
 * (V8 evaluates the chunk once) rather than awaiting another request's import, which hangs if
 * that request is cancelled first (./first-use.ts).
 */
export async function loadZod(): Promise<typeof Parts> {
  if (parts) return parts;
  const loaded = await import("./zod-parts.ts");
  ({ any, array, boolean, coerce, NEVER, number, object, preprocess, record, string, union } = loaded);
  enumPart = loaded.enum;
  parts = loaded;
  return loaded;
}

/** The loaded parts (`createRoute`, `OpenAPIHono`, `ZodType`...); `ZodNotLoaded` before `loadZod()` resolved. */
export function zodParts(): typeof Parts {
  return parts ?? notLoaded();
}
