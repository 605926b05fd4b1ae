import { afterAll, describe, expect, it } from "vitest";
import { CSV_LISTS } from "../../functions/csv.ts";
import { createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "review-csv" });
afterAll(() => api.cleanup());

type Schema = {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  anyOf?: Schema[];
};

describe("CSV table (review)", () => {
  it("every GET whose 200 JSON answer holds a top-level array is in CSV_LISTS, with that field", async () => {
    const doc = (await api.get("/openapi.json", { key: "none" })).body as {
      paths: Record<string, { get?: { responses: Record<string, { content?: Record<string, { schema: Schema }> }> } }>;
      components?: { schemas?: Record<string, Schema> };
    };
    const resolve = (s: Schema): Schema =>
      s.$ref ? resolve(doc.components!.schemas![s.$ref.replace("#/components/schemas/", "")]!) : s;
    const missing: string[] = [];
    const found: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      const schema = item.get?.responses["200"]?.content?.["application/json"]?.schema;
      if (!schema) continue;
      const props = resolve(schema).properties ?? {};
      const arrays = Object.entries(props)
        .filter(([, p]) => {
          const t = resolve(p).type;
          return t === "array" || (Array.isArray(t) && t.includes("array"));
        })
        .map(([k]) => k);
      if (arrays.length === 0) continue;
      found.push(path);
      const entry = CSV_LISTS.find((e) => e.path === path);
      if (!entry || !arrays.includes(entry.list)) {
        missing.push(`${path} (${arrays.join(",")})`);
        continue;
      }
      // every named column is a field of the list's items (a list of plain strings has only derived columns)
      const items = resolve(resolve(props[entry.list]!).items ?? {});
      const fields = Object.keys(items.properties ?? {});
      for (const column of entry.columns)
        if (typeof column === "string" && !fields.includes(column.split(".")[0]!))
          missing.push(`${path}: column ${column} not in ${fields.join(",")}`);
    }
    expect(missing).toEqual([]);
    // and no entry names a route that is not there (or answers no list in that field)
    expect(CSV_LISTS.map((e) => e.path).filter((p) => !found.includes(p))).toEqual([]);
    // not vacuous: the registries, pages and histories were all found
    expect(found.length).toBeGreaterThanOrEqual(15);
  });
});
