/**
 * Review 19 (docs truth), extending review 6 (commands and paths), review 11 (figures) and
 * review 17 (contract differences) without repeating them: every route the contract
 * (/work/shared/API.md, skipped where absent) names is in the served OpenAPI document with the
 * query parameters its examples use; README's bundle figures are dev/bundle-size.ts' budgets;
 * docs/dashboard.md's names (storage keys, screenshots, files, list endpoints) are the code's.
 * test/fixtures/openapi.json is the served document (test/worker/lazy-routes.test.ts proves it).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BUDGET_KIB, ENTRY_BUDGET_KIB } from "../../dev/bundle-size.ts";
import { PANELS, REFRESH_MS } from "../../functions/dashboard/panels.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const text = (f: string) => readFileSync(join(ROOT, f), "utf8");
const flat = (s: string) => s.replace(/\s+/g, " ");
const README = flat(text("README.md"));
const DASHBOARD_MD = flat(text("docs/dashboard.md"));
const CONTRACT = "/work/shared/API.md";

type Param = { name: string; in: string };
const doc = JSON.parse(text("test/fixtures/openapi.json")) as {
  paths: Record<string, Record<string, { parameters?: Param[] }>>;
};

/** The document's operation for `METHOD /path` as the contract writes it (its own param names). */
function operation(method: string, path: string) {
  const segments = path.split("/");
  for (const [template, ops] of Object.entries(doc.paths)) {
    const parts = template.split("/");
    if (parts.length !== segments.length) continue;
    const same = parts.every((p, i) => {
      const s = segments[i]!;
      const pIsParam = /^\{\w+\}$/.test(p);
      const sIsParam = /^\{\w+\}$/.test(s);
      return pIsParam ? sIsParam || (s !== "" && !/^_/.test(s)) : p === s;
    });
    const op = same ? ops[method.toLowerCase()] : undefined;
    if (op) return { template, op };
  }
  return undefined;
}

describe.skipIf(!existsSync(CONTRACT))("review 19: the contract's routes are in /openapi.json", () => {
  const contract = existsSync(CONTRACT) ? readFileSync(CONTRACT, "utf8") : "";
  // `GET /v1/trending/{stream}/top?n=10&window=24h`, in backticks; relative `/top?n=10` after one is skipped.
  const named = [...contract.matchAll(/`(GET|POST|PUT|DELETE|HEAD) (\/[^`\s]*)`/g)].map((m) => ({
    method: m[1]!,
    path: m[2]!.split("?")[0]!.replace(/\/$/, "") || "/",
    query: [...(m[2]!.split("?")[1] ?? "").matchAll(/(?:^|&)([\w]+)=/g)].map((q) => q[1]!),
  }));

  it("finds the contract's routes (setup)", () => {
    expect(named.length).toBeGreaterThan(25);
  });

  it("every `METHOD /path` the contract names is an operation of the document", () => {
    const missing = named.filter((n) => !operation(n.method, n.path)).map((n) => `${n.method} ${n.path}`);
    expect(missing).toEqual([]);
  });

  it("every query parameter the contract's examples use is a documented parameter of that operation", () => {
    const problems: string[] = [];
    for (const n of named) {
      const found = operation(n.method, n.path);
      if (!found) continue;
      const params = new Set((found.op.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name));
      for (const q of n.query) if (!params.has(q)) problems.push(`${n.method} ${found.template}: ?${q}`);
    }
    expect(problems).toEqual([]);
  });
  it("the contract's stated bounds are the document's: a board page's `limit ≤ 100`", () => {
    expect(contract).toContain("`GET /v1/leaderboards/{board}?page=1&limit=10` (limit ≤ 100)");
    const limit = doc.paths["/v1/leaderboards/{board}"]!.get!.parameters!.find((p) => p.name === "limit") as
      (Param & { schema: { maximum?: number; default?: number } }) | undefined;
    expect(limit?.schema.maximum).toBe(100);
    expect(limit?.schema.default).toBe(10);
  });

  it("'the same GETs take period, from, to, aggregate': each counter read documents all four", () => {
    expect(contract).toContain(
      "Period counters: the same GETs take `period=day&from=2026-11-01&to=2026-11-07&aggregate=",
    );
    const problems: string[] = [];
    for (const read of ["top", "bottom", "members/{member}", "range"]) {
      const op = doc.paths[`/v1/counters/{counter}/${read}`]?.get;
      const names = new Set((op?.parameters ?? []).map((p) => p.name));
      for (const q of ["period", "from", "to", "aggregate"]) if (!names.has(q)) problems.push(`${read}: ${q}`);
    }
    expect(problems).toEqual([]);
  });
});

describe("review 19: README's figures and names that review 6 / 11 do not check", () => {
  it("the bundle budgets README quotes are dev/bundle-size.ts', and the 'now' figures are within them", () => {
    const all = README.match(/must stay under (\d+(?:\.\d+)?) KiB gzip in all, (\d+(?:\.\d+)?) KiB now/);
    const entry = README.match(/under (\d+(?:\.\d+)?) KiB, (\d+(?:\.\d+)?) KiB now\)/);
    expect(all, "README: 'must stay under N KiB gzip in all, M KiB now'").not.toBeNull();
    expect(entry, "README: 'under N KiB, M KiB now)' for the entry").not.toBeNull();
    expect(Number(all![1])).toBe(BUDGET_KIB);
    expect(Number(entry![1])).toBe(ENTRY_BUDGET_KIB);
    expect(Number(all![2])).toBeLessThanOrEqual(BUDGET_KIB);
    expect(Number(entry![2])).toBeLessThanOrEqual(ENTRY_BUDGET_KIB);
  });

  it("the dashboard key README tells a user to enter is the read key `npm run dev` configures", () => {
    const said = README.match(/read key: `([^`]+)`/);
    expect(said).not.toBeNull();
    const dev = text("dev/dev.ts").match(/read: "([^"]+)"/);
    expect(dev?.[1]).toBe(said![1]);
  });

  it("README's list endpoints of the dashboard's pickers are the panels' (functions/dashboard/panels.ts)", () => {
    for (const panel of PANELS)
      expect(README).toContain(`\`${panel.list === "/v1/trending" ? "GET " : ""}${panel.list}\``);
    expect(README).toContain(`refreshed every ${REFRESH_MS / 1000} s`);
  });
});

describe("review 19: docs/dashboard.md names what the code has", () => {
  const client = (f: string) => text(`functions/dashboard/client/${f}`);

  it("the storage keys it names are state.browser.js'", () => {
    const state = client("state.browser.js");
    for (const [constant, name] of [...state.matchAll(/export const (\w+_STORAGE) = "([^"]+)"/g)].map((m) => [
      m[1]!,
      m[2]!,
    ])) {
      if (constant === "SELECTION_STORAGE") continue; // the docs say "choices are remembered" without the name
      expect(DASHBOARD_MD, constant).toContain(`\`${name}\``);
    }
    expect(DASHBOARD_MD).toContain("`edgestats.dashboard.readKey`");
  });

  it("each panel's list endpoint and field it names is the panel table's", () => {
    for (const panel of PANELS)
      expect(DASHBOARD_MD).toContain(
        `\`${panel.list}\` → \`${panel.field}\``.replace("`/v1/trending`", "`GET /v1/trending`"),
      );
  });

  it("every file its Pieces table names exists, and every browser module is in it", () => {
    const table = text("docs/dashboard.md").split("## Pieces")[1]!.split("##")[0]!;
    for (const m of table.matchAll(/`((?:functions|dev|test)\/[^`*]+)`/g))
      expect(existsSync(join(ROOT, m[1]!)), m[1]).toBe(true);
    for (const m of text("functions/dashboard/assets.ts").matchAll(/\.\/client\/(\w+)\.browser\.js/g))
      expect(table, m[1]).toMatch(new RegExp(`\`${m[1]}\``));
  });

  it("the screenshots it lists are the ones the browser tests save", () => {
    const listed = new Set([...DASHBOARD_MD.matchAll(/`(dashboard-[\w-]+\.png)`/g)].map((m) => m[1]!));
    const saved = new Set<string>();
    for (const f of ["dashboard.test.ts", "review3-dashboard.test.ts", "review15-dashboard.test.ts"])
      for (const m of text(`test/browser/${f}`).matchAll(/(dashboard-[\w-]+\.png)/g)) saved.add(m[1]!);
    expect([...listed].sort()).toEqual([...saved].sort());
  });

  it("the request timeout and refresh it states are the client's", () => {
    expect(client("api.browser.js")).toContain("const REQUEST_TIMEOUT_MS = 10000;");
    expect(DASHBOARD_MD).toContain("timeout after 10 s");
    expect(DASHBOARD_MD).toContain(`refreshed every ${REFRESH_MS / 1000} s`);
    expect(client("main.browser.js")).toContain("const LIST_EVERY = 6;");
    expect(DASHBOARD_MD).toContain("every 6th refresh (30 s)");
  });
});
