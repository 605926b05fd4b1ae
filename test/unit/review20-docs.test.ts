/**
 * Review 20 (a new user's journey through README and docs), without repeating review 6 (paths,
 * npm scripts), 11 (figures), 17 (examples run in the Worker, answers have the shown fields),
 * 19 (the contract's routes and queries): what a reader copies must work as written.
 * - the README's and docs' example queries use parameters the served document has (review 19
 *   checked only the contract's);
 * - each answer shape the endpoint tables show has its top-level fields in that operation's
 *   success schema of test/fixtures/openapi.json (the served document: lazy-routes proves it);
 * - shell examples define what they use and print what their comments show;
 * - Quick start: the dev keys and the port are dev/dev.ts'.
 * Found by running every example against `PORT=8791 npm run dev` in a fresh clone (npm ci).
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");
const text = (f: string) => readFileSync(join(ROOT, f), "utf8");
const FILES = ["README.md", ...readdirSync(join(ROOT, "docs")).map((f) => `docs/${f}`)].filter((f) =>
  f.endsWith(".md"),
);
const MARKDOWN = Object.fromEntries(FILES.map((f) => [f, text(f)]));

type Schema = {
  $ref?: string;
  properties?: Record<string, Schema>;
  allOf?: Schema[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  description?: string;
};
type Operation = {
  parameters?: { name: string; in: string }[];
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
};
const doc = JSON.parse(text("test/fixtures/openapi.json")) as {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};

/** The document's operation for `METHOD /path` as a doc writes it ({c}, {b}, a concrete `_total`). */
function operation(method: string, path: string) {
  const segments = path.split("/");
  let best: { template: string; op: Operation; literal: number } | undefined;
  for (const [template, ops] of Object.entries(doc.paths)) {
    const parts = template.split("/");
    if (parts.length !== segments.length || !ops[method.toLowerCase()]) continue;
    let literal = 0;
    const same = parts.every((p, i) => {
      const s = segments[i]!;
      if (p === s) return ++literal > 0;
      return /^\{\w+\}$/.test(p) && (/^\{\w+\}$/.test(s) || (s !== "" && !s.startsWith("_")));
    });
    // the most literal template wins (`/v1/presence/_total` over `/v1/presence/{room}`)
    if (same && (!best || literal > best.literal)) best = { template, op: ops[method.toLowerCase()]!, literal };
  }
  return best;
}

/** Every `METHOD /path` the README and docs name, the counters table's relative paths made absolute. */
const named = FILES.flatMap((file) =>
  [...MARKDOWN[file]!.matchAll(/`(GET|POST|PUT|DELETE) (\/[^`\s]*)`/g)].flatMap((m) => {
    let path = m[2]!.split("?")[0]!.replace(/\/$/, "") || "/";
    if (file === "docs/counters.md" && !path.startsWith("/v1")) path = `/v1/counters${path === "/" ? "" : path}`;
    if (!/^\/(v1|internal)\b/.test(path) || /[*<>…]/.test(path)) return [];
    const query = [...(m[2]!.split("?")[1] ?? "").matchAll(/(?:^|&)(\w+)(?==|&|$)/g)].map((q) => q[1]!);
    const empty = [...(m[2]!.split("?")[1] ?? "").matchAll(/(?:^|&)(\w+)(?:=(?=&|$)|(?=&|$))/g)].map((q) => q[1]!);
    return [{ file, method: m[1]!, path, query, empty, line: m[0] }];
  }),
);

describe("review 20: the example queries of README and docs are the document's parameters", () => {
  it("finds the examples (setup)", () => {
    expect(named.length).toBeGreaterThan(100);
    expect(named.filter((n) => n.query.length > 0).length).toBeGreaterThan(20);
  });

  it("every query parameter an example uses is a documented query parameter of its operation", () => {
    const problems: string[] = [];
    for (const n of named) {
      const found = operation(n.method, n.path);
      if (!found) continue; // review 17 (test/worker) checks that every named route is served
      const params = new Set((found.op.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name));
      // docs/architecture.md's `?extra=1` is the example of an unknown name being ignored
      for (const q of n.query) if (!params.has(q) && q !== "extra") problems.push(`${n.file}: ${n.line} (?${q})`);
    }
    expect(problems).toEqual([]);
  });

  it("an example's query runs as pasted: no empty value but a first page's `cursor=` where the list takes it", () => {
    // `?limit&cursor`, `member=`, `min=&max=` were 400s as written; every list takes `cursor=`
    // (test/worker/review20-docs.test.ts); costs.md's `?day=` names a row of the table, not a request
    const problems = named
      .filter((n) => n.file !== "docs/costs.md")
      .flatMap((n) => n.empty.filter((q) => q !== "cursor").map((q) => `${n.file}: ${n.line} (${q})`));
    expect(problems).toEqual([]);
  });
});

/** Top-level keys of the docs' shape notation `{"a","b"?,"c":[{"d"}],"e"|null}`. */
function topFields(shape: string): string[] {
  const out: string[] = [];
  let depth = 0;
  for (let i = 0; i < shape.length; i++) {
    const ch = shape[i]!;
    if (ch === "{" || ch === "[") depth++;
    else if (ch === "}" || ch === "]") depth--;
    else if (ch === '"' && depth === 1) {
      const end = shape.indexOf('"', i + 1);
      if ([",", "}", ":", "?", "|", "="].includes(shape[end + 1] ?? "")) out.push(shape.slice(i + 1, end));
      i = end;
    }
  }
  return out;
}

function resolve(s: Schema): Schema {
  return s.$ref ? resolve(doc.components.schemas[s.$ref.split("/").pop()!]!) : s;
}

/** Every property name at the top of a schema, through $ref and allOf / anyOf / oneOf. */
function properties(s: Schema): Set<string> {
  const r = resolve(s);
  const out = new Set(Object.keys(r.properties ?? {}));
  for (const part of [...(r.allOf ?? []), ...(r.anyOf ?? []), ...(r.oneOf ?? [])])
    for (const p of properties(part)) out.add(p);
  return out;
}

/**
 * The endpoint tables' rows: `| \`METHOD /path\` … | scope | answer |`, the answer being the last
 * `{…}` shape of the row (the body, when shown, comes first).
 */
const rows = FILES.flatMap((file) =>
  MARKDOWN[file]!.split("\n")
    .filter((l) => l.startsWith("| `") && /^\| `(GET|POST|PUT|DELETE) /.test(l))
    .flatMap((l) => {
      const m = /^\| `(GET|POST|PUT|DELETE) (\/[^`\s]*)`/.exec(l)!;
      const cells = l.split("|").slice(1, -1);
      const answer = [...cells.at(-1)!.matchAll(/`(\{"[^`]*\})`/g)].at(-1)?.[1];
      let path = m[2]!.split("?")[0]!.replace(/\/$/, "") || "/";
      if (file === "docs/counters.md" && !path.startsWith("/v1")) path = `/v1/counters${path === "/" ? "" : path}`;
      return answer ? [{ file, method: m[1]!, path, answer }] : [];
    }),
);

describe("review 20: the answer shapes of the endpoint tables are in the document", () => {
  it("finds the tables' answers (setup)", () => {
    expect(rows.length).toBeGreaterThan(30);
  });

  it("each field a table's answer shows is a property of that operation's success schema", () => {
    const problems: string[] = [];
    for (const r of rows) {
      const found = operation(r.method, r.path);
      if (!found) {
        problems.push(`${r.file}: ${r.method} ${r.path} not in the document`);
        continue;
      }
      const ok = Object.entries(found.op.responses).filter(([status]) => /^2/.test(status));
      const props = new Set(
        ok.flatMap(([, res]) => Object.values(res.content ?? {}).flatMap((c) => [...properties(c.schema)])),
      );
      for (const f of topFields(r.answer)) if (!props.has(f)) problems.push(`${r.file}: ${r.method} ${r.path} "${f}"`);
    }
    expect(problems).toEqual([]);
  });

  it("the heartbeat's `new` is described as the contract says: not seen within the id horizon", () => {
    const schema = resolve(doc.components.schemas.PresenceHeartbeatResult!);
    expect(schema.properties!.new!.description).toContain("not seen in the room within the id horizon");
    expect(JSON.stringify(doc)).not.toContain("never seen");
  });
});

describe("review 20: shell examples run as pasted", () => {
  const blocks = FILES.flatMap((file) =>
    [...MARKDOWN[file]!.matchAll(/```sh\n([\s\S]*?)```/g)].map((b) => ({ file, body: b[1]! })),
  );

  it("every $VARIABLE a block uses is set in that block (docs/ingest.md used $BASE and $INGEST_KEY unset)", () => {
    const problems: string[] = [];
    for (const b of blocks) {
      const set = new Set([...b.body.matchAll(/(?:^|\s)([A-Z_][A-Z0-9_]*)=/gm)].map((m) => m[1]!));
      const code = b.body.replace(/#.*$/gm, "");
      for (const m of code.matchAll(/\$\{?([A-Z_][A-Z0-9_]*)/g))
        if (!set.has(m[1]!)) problems.push(`${b.file}: $${m[1]}`);
    }
    expect(problems).toEqual([]);
  });

  it("a curl whose comment shows a status or header line prints them (-i)", () => {
    const problems: string[] = [];
    for (const b of blocks) {
      const lines = b.body.replace(/\\\n\s*/g, " ").split("\n");
      lines.forEach((line, i) => {
        if (!line.startsWith("curl ")) return;
        const shown = /^# \d{3}\b/.test(lines[i + 1] ?? "");
        if (shown && !/\s-\w*i\w*\s/.test(line)) problems.push(`${b.file}: ${line.slice(0, 60)}`);
      });
    }
    expect(problems).toEqual([]);
  });
});

describe("review 20: Quick start is dev/dev.ts", () => {
  const dev = text("dev/dev.ts");
  const quick = MARKDOWN["README.md"]!.split("## Quick start")[1]!.split("\n## ")[0]!;

  it("the three local keys README gives are the keys `npm run dev` configures", () => {
    const keys = /const KEYS = \{ ingest: "([^"]+)", read: "([^"]+)", admin: "([^"]+)" \}/.exec(dev);
    expect(keys).not.toBeNull();
    for (const k of keys!.slice(1)) expect(quick).toContain(`\`${k}\``);
  });

  it("the default port README shows is dev.ts', and README says how to pick another (PORT)", () => {
    expect(dev).toContain("const PORT = Number(process.env.PORT ?? 8787);");
    expect(quick).toContain("http://127.0.0.1:8787");
    expect(quick).toMatch(/`PORT=\d+ npm run dev`/);
  });
});
