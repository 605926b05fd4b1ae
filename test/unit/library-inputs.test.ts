/**
 * The library's field lists (src/library/inputs.ts, review 14) against the service's strict request
 * bodies, read from the OpenAPI document (test/fixtures/openapi.json, which
 * test/worker/lazy-routes.test.ts keeps equal to the app's): a field the service adds and the
 * library does not list would be refused by the library alone, and a field the library lists but
 * the service refuses would be written by the library alone.
 */
import { describe, expect, it } from "vitest";
import { FIELDS } from "../../src/library/inputs.ts";
import fixture from "../fixtures/openapi.json" with { type: "json" };

type Operation = { requestBody?: { content: Record<string, { schema: Schema }> } };
type Schema = {
  $ref?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: boolean;
  anyOf?: Schema[];
  type?: string;
  items?: Schema;
};
const doc = fixture as unknown as {
  components: { schemas: Record<string, Schema> };
  paths: Record<string, Record<string, Operation>>;
};
const components = doc.components.schemas;
const deref = (s: Schema): Schema => (s.$ref ? deref(components[s.$ref.split("/").pop()!]!) : s);

/** Every strict object schema in a body, each as its sorted field list. */
function objects(s: Schema, out: string[][] = []): string[][] {
  const d = deref(s);
  if (d.properties) {
    expect(d.additionalProperties, `${Object.keys(d.properties).join(",")} is strict`).toBe(false);
    out.push(Object.keys(d.properties).sort());
    for (const v of Object.values(d.properties)) {
      const dv = deref(v);
      if (dv.type === "array" && dv.items) objects(dv.items, out);
    }
  }
  for (const x of d.anyOf ?? []) objects(x, out);
  return out;
}
function bodyObjects(method: "post" | "put", path: string): string[][] {
  const op = (
    doc as { paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: Schema }> } }>> }
  ).paths[path]?.[method];
  const schema = op?.requestBody?.content["application/json"]?.schema;
  expect(schema, `${method} ${path} has a JSON body`).toBeDefined();
  return objects(schema!);
}

/** Each library input and the body (and the object in it) whose fields it must name. */
const cases: [keyof typeof FIELDS, "post" | "put", string][] = [
  ["trendingEvent", "post", "/v1/trending/{stream}/events"],
  ["counterItem", "post", "/v1/counters/{counter}/incr"],
  ["union", "post", "/v1/counters/{counter}/union"],
  ["unionSource", "post", "/v1/counters/{counter}/union"],
  ["histogramSettings", "put", "/v1/histograms/{histogram}"],
  ["observation", "post", "/v1/histograms/{histogram}/observations"],
  ["boardSettings", "put", "/v1/leaderboards/{board}"],
  ["join", "put", "/v1/leaderboards/{board}/players/{player}"],
  ["byChange", "post", "/v1/leaderboards/{board}/players/{player}/score"],
  ["setChange", "post", "/v1/leaderboards/{board}/players/{player}/score"],
  ["playerByChange", "post", "/v1/leaderboards/{board}/scores"],
  ["playerSetChange", "post", "/v1/leaderboards/{board}/scores"],
];

describe("the library's write fields are the service's body fields", () => {
  it.each(cases)("%s: one of the strict objects of %s %s", (input, method, path) => {
    expect(bodyObjects(method, path)).toContainEqual([...FIELDS[input]].sort());
  });

  it("every library input is checked here", () => {
    expect(cases.map(([input]) => input).sort()).toEqual(Object.keys(FIELDS).sort());
  });
});
