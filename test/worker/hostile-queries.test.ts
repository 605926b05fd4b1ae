/**
 * Hostile query strings and member path segments on every read and delete,
 * discovered from /openapi.json: each is a 400 envelope decided before any
 * Redis call (zero round trips), so nothing is read, cached or written.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApi } from "../helpers/worker.ts";

const NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$";

interface Param {
  name: string;
  in: string;
  schema?: { type?: string; pattern?: string; minimum?: number; maximum?: number; enum?: string[] };
}
interface Op {
  method: string;
  template: string;
  params: Param[];
}

const api = createTestApi({ label: "hostile-q" });
const ops: Op[] = [];
beforeAll(async () => {
  const doc = (await api.get("/openapi.json", { key: "none" })).body as {
    paths: Record<string, Record<string, { parameters?: Param[] }>>;
  };
  for (const [template, methods] of Object.entries(doc.paths)) {
    if (!template.startsWith("/v1/")) continue;
    for (const [method, op] of Object.entries(methods))
      ops.push({ method: method.toUpperCase(), template, params: op.parameters ?? [] });
  }
});
afterAll(() => api.cleanup());

function pathOf(op: Op, overrides: Record<string, string> = {}): string {
  return op.template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(overrides[name] ?? "v1"));
}

async function expectRefusedWithoutRedis(method: string, path: string, label: string): Promise<void> {
  const { result, requests } = await api.cost(() => api.call(method, path, undefined, { key: "admin" }));
  expect({ label, status: result.status, requests }).toEqual({ label, status: 400, requests: 0 });
  expect(result.body.error.code, label).toBe("invalid_request");
  expect(Array.isArray(result.body.error.details), label).toBe(true);
}

// Values no integer query parameter of this API accepts (every minimum is ≥ 0, every maximum < 1e10).
const BAD_INTEGERS = ["-1", "0.5", "1e308", "NaN", "Infinity", "-Infinity", "abc", "99999999999", "1,2", "[]", "%00"];
const BAD_WINDOWS = ["0h", "169h", "8d", "24", "h", "-1h", "1.5h", "24H", "1w", "24h ", "２４h", "1e2h"];
const BAD_MEMBERS = ["é".repeat(129), "x".repeat(257), "a\u0000b", "a\u007fb", "\u0085", "a\nb"];

describe("query strings and member segments of every read and delete", () => {
  it("finds reads with integer parameters to attack", () => {
    expect(
      ops.filter((o) => o.params.some((p) => p.in === "query" && p.schema?.type === "integer")).length,
    ).toBeGreaterThan(3);
  });

  it("refuses out-of-range and non-integer values in every integer query parameter", async () => {
    for (const op of ops) {
      for (const param of op.params.filter((p) => p.in === "query" && p.schema?.type === "integer")) {
        for (const bad of BAD_INTEGERS) {
          await expectRefusedWithoutRedis(
            op.method,
            `${pathOf(op)}?${param.name}=${bad}`,
            `${op.method} ${op.template}?${param.name}=${bad}`,
          );
        }
        if (param.schema?.maximum !== undefined) {
          const over = String(param.schema.maximum + 1);
          await expectRefusedWithoutRedis(
            op.method,
            `${pathOf(op)}?${param.name}=${over}`,
            `${op.template}?${param.name}=${over}`,
          );
        }
      }
    }
  });

  it("refuses every malformed window", async () => {
    const withWindow = ops.filter((op) => op.params.some((p) => p.in === "query" && p.name === "window"));
    expect(withWindow.length).toBeGreaterThan(0);
    for (const op of withWindow) {
      for (const bad of BAD_WINDOWS)
        await expectRefusedWithoutRedis(
          op.method,
          `${pathOf(op)}?window=${encodeURIComponent(bad)}`,
          `${op.template}?window=${bad}`,
        );
    }
  });

  it("refuses bad values of every enumerated query parameter", async () => {
    for (const op of ops) {
      for (const param of op.params.filter((p) => p.in === "query" && p.schema?.enum)) {
        for (const bad of ["", "x", `${param.schema?.enum?.[0]}x`, (param.schema?.enum?.[0] ?? "").toUpperCase()]) {
          if (param.schema?.enum?.includes(bad)) continue;
          await expectRefusedWithoutRedis(
            op.method,
            `${pathOf(op)}?${param.name}=${encodeURIComponent(bad)}`,
            `${op.template}?${param.name}=${bad}`,
          );
        }
      }
    }
  });

  it("refuses members over 256 bytes or with control characters in member and id segments", async () => {
    const memberOps = ops.filter((op) => op.params.some((p) => p.in === "path" && p.schema?.pattern !== NAME_PATTERN));
    expect(memberOps.length).toBeGreaterThan(0);
    for (const op of memberOps) {
      for (const param of op.params.filter((p) => p.in === "path" && p.schema?.pattern !== NAME_PATTERN)) {
        for (const bad of BAD_MEMBERS) {
          await expectRefusedWithoutRedis(
            op.method,
            pathOf(op, { [param.name]: bad }),
            `${op.method} ${op.template} ${param.name}=${JSON.stringify(bad).slice(0, 20)}`,
          );
        }
      }
    }
  });

  it("property: arbitrary junk in integer parameters is a 400 or a valid read, never a 5xx", async () => {
    const targets = ops.flatMap((op) =>
      op.params.filter((p) => p.in === "query" && p.schema?.type === "integer").map((p) => ({ op, p })),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...targets), fc.string({ maxLength: 12 }), async ({ op, p }, junk) => {
        const res = await api.call(op.method, `${pathOf(op)}?${p.name}=${encodeURIComponent(junk)}`, undefined, {
          key: "admin",
        });
        expect([200, 204, 400, 404]).toContain(res.status);
        if (res.status === 400) expect(res.body.error.code).toBe("invalid_request");
      }),
      { numRuns: 120, seed: 5 },
    );
  });

  it("wrote nothing at all", async () => {
    const keys = await api.keys();
    // Reads of missing things may leave nothing behind either.
    expect(keys).toEqual([]);
  });
});
