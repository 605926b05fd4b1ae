/**
 * A small JSON Schema check (the OpenAPI 3.1 subset /openapi.json uses), for tests that hold real
 * answers against the document: `$ref` into components, `type` (one or a list, `null` too),
 * `properties`, `required`, `additionalProperties`, `items`, `minItems`/`maxItems`, `enum`,
 * `const`, `anyOf`/`oneOf`/`allOf`, `minimum`/`maximum`/`exclusiveMinimum`/`exclusiveMaximum`,
 * `minLength`/`maxLength`, `pattern`. No dependency: ajv compiles with `new Function`, which
 * workerd refuses.
 */
export type Schema = Record<string, any>;

/** The problems of `value` against `schema` (empty when it conforms), each as `path: what`. */
export function schemaProblems(value: unknown, schema: Schema, root: Schema, path = "$"): string[] {
  if (schema.$ref) {
    const name = String(schema.$ref).replace("#/components/schemas/", "");
    const target = root.components?.schemas?.[name];
    if (!target) return [`${path}: unresolved ${schema.$ref}`];
    return schemaProblems(value, target, root, path);
  }
  const out: string[] = [];
  if (schema.allOf) for (const s of schema.allOf) out.push(...schemaProblems(value, s, root, path));
  for (const key of ["anyOf", "oneOf"] as const) {
    if (!schema[key]) continue;
    const each = (schema[key] as Schema[]).map((s) => schemaProblems(value, s, root, path));
    const passing = each.filter((p) => p.length === 0).length;
    if (passing === 0) out.push(`${path}: matches no ${key} option (${each.map((p) => p[0]).join(" | ")})`);
    else if (key === "oneOf" && passing > 1) out.push(`${path}: matches ${passing} oneOf options`);
  }
  if (schema.type !== undefined) {
    const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (schema.nullable) types.push("null");
    if (!types.some((t) => typeMatches(value, t)))
      return [...out, `${path}: expected ${types.join("|")}, got ${JSON.stringify(value)?.slice(0, 80)}`];
  }
  if (schema.enum && !schema.enum.some((e: unknown) => e === value))
    out.push(`${path}: ${JSON.stringify(value)} not in enum ${JSON.stringify(schema.enum)}`);
  if ("const" in schema && schema.const !== value) out.push(`${path}: not ${JSON.stringify(schema.const)}`);
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum)
      out.push(`${path}: ${value} < minimum ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum)
      out.push(`${path}: ${value} > maximum ${schema.maximum}`);
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum)
      out.push(`${path}: ${value} <= exclusiveMinimum ${schema.exclusiveMinimum}`);
    if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum)
      out.push(`${path}: ${value} >= exclusiveMaximum ${schema.exclusiveMaximum}`);
  }
  if (typeof value === "string") {
    if (schema.minLength !== undefined && value.length < schema.minLength)
      out.push(`${path}: shorter than ${schema.minLength}`);
    if (schema.maxLength !== undefined && value.length > schema.maxLength)
      out.push(`${path}: longer than ${schema.maxLength}`);
    if (schema.pattern && !new RegExp(schema.pattern, "u").test(value))
      out.push(`${path}: does not match ${schema.pattern}`);
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems)
      out.push(`${path}: fewer than ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems)
      out.push(`${path}: more than ${schema.maxItems} items`);
    if (schema.items) value.forEach((v, i) => out.push(...schemaProblems(v, schema.items, root, `${path}[${i}]`)));
  }
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const obj = value as Record<string, unknown>;
    for (const key of schema.required ?? []) if (!(key in obj)) out.push(`${path}: missing required '${key}'`);
    const props: Record<string, Schema> = schema.properties ?? {};
    for (const [key, v] of Object.entries(obj)) {
      if (props[key]) out.push(...schemaProblems(v, props[key], root, `${path}.${key}`));
      else if (schema.additionalProperties === false) out.push(`${path}: undocumented field '${key}'`);
      else if (typeof schema.additionalProperties === "object")
        out.push(...schemaProblems(v, schema.additionalProperties, root, `${path}.${key}`));
    }
  }
  return out;
}

function typeMatches(value: unknown, type: string): boolean {
  switch (type) {
    case "null":
      return value === null;
    case "integer":
      return Number.isInteger(value);
    case "number":
      return typeof value === "number" && Number.isFinite(value);
    case "array":
      return Array.isArray(value);
    case "object":
      return value !== null && typeof value === "object" && !Array.isArray(value);
    default:
      return typeof value === type;
  }
}

/** The document's path template of a concrete path (`/v1/counters/c/top` → `/v1/counters/{counter}/top`). */
export function templateOf(doc: Schema, method: string, path: string): string | undefined {
  const parts = path.split("?")[0]!.split("/");
  let best: { t: string; literal: number } | undefined;
  for (const t of Object.keys(doc.paths)) {
    if (!doc.paths[t][method.toLowerCase()]) continue;
    const tp = t.split("/");
    if (tp.length !== parts.length) continue;
    let literal = 0;
    const ok = tp.every((seg, i) => {
      if (/^\{.+\}$/.test(seg)) return parts[i] !== "";
      if (seg === parts[i]) return ++literal > 0;
      return false;
    });
    if (ok && (!best || literal > best.literal)) best = { t, literal };
  }
  return best?.t;
}
