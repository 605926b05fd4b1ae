/**
 * Stands in for zod's `v4/core/json-schema-processors.js` in the Worker bundle (see
 * ./zod-json-schema.ts): the JSON Schema processor of each schema type, never called in the
 * Worker. `aggregateChecks` is zod's own: it answers a schema's `minLength`, `format`, `isInt`…
 * members (zod-to-openapi reads them for the document), which stay right in the bundle. Imported
 * by its file path, which the alias does not match, so only it (and what it uses) is bundled.
 */
export { aggregateChecks } from "../../node_modules/zod/v4/core/json-schema-processors.js";

const absent = (): never => {
  throw new Error("zod's toJSONSchema() is left out of the Worker bundle (functions/build/zod-json-schema.ts)");
};
export const toJSONSchema = absent;
export const allProcessors = {};
export const stringProcessor = absent;
export const numberProcessor = absent;
export const booleanProcessor = absent;
export const bigintProcessor = absent;
export const symbolProcessor = absent;
export const nullProcessor = absent;
export const undefinedProcessor = absent;
export const voidProcessor = absent;
export const neverProcessor = absent;
export const anyProcessor = absent;
export const unknownProcessor = absent;
export const dateProcessor = absent;
export const enumProcessor = absent;
export const literalProcessor = absent;
export const nanProcessor = absent;
export const templateLiteralProcessor = absent;
export const fileProcessor = absent;
export const successProcessor = absent;
export const customProcessor = absent;
export const functionProcessor = absent;
export const transformProcessor = absent;
export const mapProcessor = absent;
export const setProcessor = absent;
export const arrayProcessor = absent;
export const objectProcessor = absent;
export const unionProcessor = absent;
export const intersectionProcessor = absent;
export const tupleProcessor = absent;
export const recordProcessor = absent;
export const nullableProcessor = absent;
export const nonoptionalProcessor = absent;
export const defaultProcessor = absent;
export const prefaultProcessor = absent;
export const catchProcessor = absent;
export const pipeProcessor = absent;
export const readonlyProcessor = absent;
export const promiseProcessor = absent;
export const optionalProcessor = absent;
export const lazyProcessor = absent;
