/// <reference types="vite/client" />
/**
 * The client's `ErrorCode` union (src/client-errors.ts, kept by hand so that the client's bundle
 * and the Worker's carry no list) against every `code` the service can answer with. The OpenAPI
 * document types `error.code` as a plain string (no enum), so the codes are read from the
 * service's sources with TypeScript's own parser, at every place an error envelope's code is
 * decided: the classes of src/errors.ts (their `super(code, …)` and defaults), each
 * `new ValidationError(…, code)` / `new ConflictError(code, …)` / `new RejectedError(code, …)`,
 * each `errorBody(code, …)` (functions/errors.ts, the envelope), each `{ code, message }` literal
 * (functions/routes/health.ts) and each `code` variable (onError's HTTPException mapping). A code
 * decided any other way (computed, read from a variable) fails here with its place, so a new code
 * cannot reach the wire without joining the union; a code the union keeps that nothing produces
 * fails too.
 */
import ts from "typescript";
import { describe, expect, it } from "vitest";

const sources = import.meta.glob<string>(
  [
    "../../src/**/*.ts",
    "../../functions/**/*.ts",
    "../../functions/**/*.tsx",
    // the client's own codes are its own; the dashboard's browser code only reads codes
    "!../../src/client.ts",
    "!../../src/client-errors.ts",
    "!../../functions/dashboard/client/**",
  ],
  { eager: true, query: "?raw", import: "default" },
);
const clientErrors = import.meta.glob<string>("../../src/client-errors.ts", {
  eager: true,
  query: "?raw",
  import: "default",
})["../../src/client-errors.ts"]!;

/** Which argument of each error class's constructor is the code (the other classes fix theirs in src/errors.ts). */
const CODE_ARGUMENT: Record<string, number> = {
  EdgestatsError: 0,
  ValidationError: 2,
  ConflictError: 0,
  RejectedError: 0,
};
/** A code passed on as it came: a constructor's own `code` parameter, or an error's `.code` (onError). */
const passedOn = (e: ts.Expression) =>
  (ts.isIdentifier(e) && e.text === "code") || (ts.isPropertyAccessExpression(e) && e.name.text === "code");

interface Scan {
  codes: Map<string, string[]>;
  /** Places where a code is decided by an expression this scan cannot read. */
  unreadable: string[];
}

function scan(): Scan {
  const codes = new Map<string, string[]>();
  const unreadable: string[] = [];
  for (const [file, text] of Object.entries(sources)) {
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TSX);
    const where = (node: ts.Node) =>
      `${file.replace("../../", "")}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`;
    const take = (e: ts.Expression | undefined, node: ts.Node) => {
      if (e === undefined) return;
      if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) {
        codes.set(e.text, [...(codes.get(e.text) ?? []), where(node)]);
      } else if (ts.isParenthesizedExpression(e) || ts.isAsExpression(e)) take(e.expression, node);
      else if (ts.isConditionalExpression(e)) {
        take(e.whenTrue, node);
        take(e.whenFalse, node);
      } else if (!passedOn(e)) unreadable.push(`${where(node)}: ${e.getText(source)}`);
    };
    const classOf = (node: ts.Node): ts.ClassLikeDeclaration | undefined =>
      ts.isClassLike(node) ? node : node.parent ? classOf(node.parent) : undefined;
    const parentName = (cls: ts.ClassLikeDeclaration | undefined) =>
      cls?.heritageClauses?.[0]?.types[0]?.expression.getText(source);
    const visit = (node: ts.Node) => {
      if (ts.isNewExpression(node) && ts.isIdentifier(node.expression)) {
        const at = CODE_ARGUMENT[node.expression.text];
        // ValidationError without a code: its default, read below with the class
        if (at !== undefined) take(node.arguments?.[at], node);
      } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.SuperKeyword) {
        const parent = parentName(classOf(node));
        const at = parent === undefined ? undefined : CODE_ARGUMENT[parent];
        if (at !== undefined) take(node.arguments[at], node);
      } else if (
        ts.isCallExpression(node) &&
        ts.isIdentifier(node.expression) &&
        node.expression.text === "errorBody"
      ) {
        take(node.arguments[0], node);
      } else if (ts.isParameter(node) && node.name.getText(source) === "code" && node.initializer) {
        if (parentName(classOf(node)) !== undefined) take(node.initializer, node);
      } else if (ts.isVariableDeclaration(node) && node.name.getText(source) === "code" && node.initializer) {
        take(node.initializer, node);
      } else if (
        ts.isObjectLiteralExpression(node) &&
        node.properties.some((p) => p.name?.getText(source) === "message") &&
        // zod's issues (`ctx.addIssue({ code: "custom", message })`) are not envelopes
        !(ts.isCallExpression(node.parent) && node.parent.expression.getText(source).endsWith("addIssue"))
      ) {
        for (const p of node.properties)
          if (ts.isPropertyAssignment(p) && p.name.getText(source) === "code")
            // a schema of the envelope (`code: z.string()`, the OpenAPI document's) decides no code
            if (!/^z\./.test(p.initializer.getText(source))) take(p.initializer, p);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { codes, unreadable };
}

/** The string literals of `type ErrorCode = …` in src/client-errors.ts, and its template members' text. */
function clientUnion(): { literals: string[]; templates: string[] } {
  const source = ts.createSourceFile("client-errors.ts", clientErrors, ts.ScriptTarget.Latest, true);
  const alias = source.statements.find(
    (s): s is ts.TypeAliasDeclaration => ts.isTypeAliasDeclaration(s) && s.name.text === "ErrorCode",
  );
  expect(alias, "src/client-errors.ts declares type ErrorCode").toBeDefined();
  const members = ts.isUnionTypeNode(alias!.type) ? alias!.type.types : [alias!.type];
  const literals: string[] = [];
  const templates: string[] = [];
  for (const m of members) {
    if (ts.isLiteralTypeNode(m) && ts.isStringLiteral(m.literal)) literals.push(m.literal.text);
    else templates.push(m.getText(source));
  }
  return { literals, templates };
}

/** The client's own codes (src/client-errors.ts's comment): answers the service never gives. */
const CLIENT_ONLY = ["network_error", "invalid_response", "replay_summarised"];

describe("the client's ErrorCode is every code the service answers with", () => {
  const { codes, unreadable } = scan();

  it("every place that decides a code names it (nothing computed the scan cannot read)", () => {
    expect(unreadable).toEqual([]);
  });

  it("the scan finds the codes of each kind of place (so an empty scan cannot pass)", () => {
    // a class's fixed code, a default, a script refusal, an envelope of the app, onError's mapping
    for (const code of ["not_found", "invalid_request", "score_rejected", "method_not_allowed", "http_error"])
      expect([...codes.keys()]).toContain(code);
  });

  it("the union's service codes are exactly the codes found", () => {
    const { literals } = clientUnion();
    const service = literals.filter((c) => !CLIENT_ONLY.includes(c));
    const found = [...codes.keys()];
    const missing = found.filter((c) => !service.includes(c)).map((c) => `${c} (${codes.get(c)!.join(", ")})`);
    expect(missing, "produced by the service, missing from ErrorCode").toEqual([]);
    expect(
      service.filter((c) => !found.includes(c)),
      "in ErrorCode, produced nowhere",
    ).toEqual([]);
    expect(new Set(literals).size, "no code listed twice").toBe(literals.length);
  });

  it("the client's own codes and `http_${number}` are the client's, and it produces each", () => {
    const { literals, templates } = clientUnion();
    for (const code of CLIENT_ONLY) {
      expect(literals).toContain(code);
      expect(codes.has(code), `${code} is the client's, not the service's`).toBe(false);
    }
    expect(templates).toEqual(["`http_${number}`"]);
    const client = import.meta.glob<string>("../../src/client*.ts", { eager: true, query: "?raw", import: "default" });
    const text = Object.values(client).join("\n");
    for (const code of CLIENT_ONLY) expect(text, code).toContain(`"${code}"`);
    expect(text).toContain("`http_${response.status}`");
  });
});
