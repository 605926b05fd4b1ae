/// <reference types="vite/client" />
/**
 * The service's codes (`ServiceErrorCode`, src/error-codes.ts, the one list) against every `code`
 * the service's sources can answer with, and the client's `ErrorCode` (src/client-errors.ts:
 * `ServiceErrorCode | ClientErrorCode`) against the codes the client decides.
 *
 * tsc already refuses a code that is not listed wherever one is decided (src/errors.ts's
 * constructors, `errorBody`, the health route's envelope: see src/error-codes.ts), and the
 * type-level checks at the end pin that. What types cannot see, this reads with TypeScript's own
 * parser at every place an error envelope's code is decided (the classes of src/errors.ts, their
 * `super(code, …)` and defaults, each `new ValidationError(…, code)` / `new ConflictError(code, …)`
 * / `new RejectedError(code, …)`, each `errorBody(code, …)`, each `{ code, message }` literal and
 * each `code` variable): a code cast past the types (`"x" as ServiceErrorCode`), a Lua refusal's
 * own name passed on as a code (`new ConflictError(r.refused as …)` in a script's `refusals`: the
 * code is then the Lua's string, read here as the refusal's name), a listed code nothing produces
 * any more, and a code decided any other way (computed, read from a variable), which fails with
 * its place. The OpenAPI document types `error.code` as a plain string (no enum), so it cannot
 * serve as the list.
 */
import ts from "typescript";
import { describe, expect, expectTypeOf, it } from "vitest";
import type { ClientErrorCode, ErrorCode } from "../../src/client-errors.ts";
import type { ServiceErrorCode } from "../../src/error-codes.ts";
import { ConflictError, NotFoundError, RejectedError, ValidationError } from "../../src/errors.ts";
import { errorBody } from "../../functions/errors.ts";

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
const raw = (path: string) =>
  import.meta.glob<string>(["../../src/client-errors.ts", "../../src/error-codes.ts"], {
    eager: true,
    query: "?raw",
    import: "default",
  })[path]!;

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
/** A Lua refusal's name (`r.refused`, `String(r.refused)`): the code is then what the script returned. */
const refusalName = (e: ts.Expression): boolean =>
  (ts.isPropertyAccessExpression(e) && e.name.text === "refused") ||
  (ts.isCallExpression(e) &&
    ts.isIdentifier(e.expression) &&
    e.expression.text === "String" &&
    e.arguments.length === 1 &&
    refusalName(e.arguments[0]!));

interface Scan {
  codes: Map<string, string[]>;
  /** Places where a code is decided by an expression this scan cannot read. */
  unreadable: string[];
}

function scan(files: Record<string, string>): Scan {
  const codes = new Map<string, string[]>();
  const unreadable: string[] = [];
  for (const [file, text] of Object.entries(files)) {
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TSX);
    const where = (node: ts.Node) =>
      `${file.replace("../../", "")}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`;
    const found = (code: string, node: ts.Node) => codes.set(code, [...(codes.get(code) ?? []), where(node)]);
    /** The name of the `refusals` entry whose mapper holds `node` (`queue_full: (r) => …`). */
    const refusalOf = (node: ts.Node): string | undefined =>
      ts.isPropertyAssignment(node) &&
      (ts.isArrowFunction(node.initializer) || ts.isFunctionExpression(node.initializer))
        ? node.name.getText(source).replace(/^["']|["']$/g, "")
        : node.parent
          ? refusalOf(node.parent)
          : undefined;
    const take = (e: ts.Expression | undefined, node: ts.Node) => {
      if (e === undefined) return;
      if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) found(e.text, node);
      else if (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isSatisfiesExpression(e))
        take(e.expression, node);
      else if (refusalName(e) && refusalOf(node) !== undefined) found(refusalOf(node)!, node);
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

/** The top-level type alias `name` of `text`. */
function aliasOf(text: string, name: string): { source: ts.SourceFile; alias: ts.TypeAliasDeclaration } {
  const source = ts.createSourceFile(`${name}.ts`, text, ts.ScriptTarget.Latest, true);
  const alias = source.statements.find(
    (s): s is ts.TypeAliasDeclaration => ts.isTypeAliasDeclaration(s) && s.name.text === name,
  );
  expect(alias, `declares type ${name}`).toBeDefined();
  return { source, alias: alias! };
}

/**
 * The codes of `type ServiceErrorCode` (src/error-codes.ts), resolved by TypeScript's checker (it
 * is a union of the classes' unions and literals), each as often as it is listed.
 */
function serviceUnion(): string[] {
  const name = "/error-codes.ts";
  const source = ts.createSourceFile(name, raw("../../src/error-codes.ts"), ts.ScriptTarget.Latest, true);
  const options: ts.CompilerOptions = { noLib: true, types: [], strict: true };
  const host = ts.createCompilerHost(options);
  host.getSourceFile = (file) => (file === name ? source : undefined);
  const checker = ts.createProgram([name], options, host).getTypeChecker();
  const { alias } = aliasOf(raw("../../src/error-codes.ts"), "ServiceErrorCode");
  const inProgram = source.statements.find((s) => ts.isTypeAliasDeclaration(s) && s.name.text === alias.name.text)!;
  const type = checker.getTypeAtLocation((inProgram as ts.TypeAliasDeclaration).name);
  const members = type.isUnion() ? type.types : [type];
  const codes = members.map((t) => (t.isStringLiteral() ? t.value : `(not a literal: ${checker.typeToString(t)})`));
  // a code listed twice collapses in the union: count the literals written in the file instead
  const written: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isLiteralTypeNode(node) && ts.isStringLiteral(node.literal)) written.push(node.literal.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  expect(written.toSorted(), "each code written once in src/error-codes.ts").toEqual(codes.toSorted());
  return codes;
}

/** The string literals of `type ClientErrorCode` in src/client-errors.ts, and its template members' text. */
function clientUnion(): { literals: string[]; templates: string[] } {
  const { source, alias } = aliasOf(raw("../../src/client-errors.ts"), "ClientErrorCode");
  const members = ts.isUnionTypeNode(alias.type) ? alias.type.types : [alias.type];
  const literals: string[] = [];
  const templates: string[] = [];
  for (const m of members) {
    if (ts.isLiteralTypeNode(m) && ts.isStringLiteral(m.literal)) literals.push(m.literal.text);
    else templates.push(m.getText(source));
  }
  return { literals, templates };
}

/** Codes produced and not listed (with their places), and codes listed and produced nowhere. */
function compare(listed: string[], codes: Map<string, string[]>) {
  const found = [...codes.keys()];
  return {
    missing: found.filter((c) => !listed.includes(c)).map((c) => `${c} (${codes.get(c)!.join(", ")})`),
    unproduced: listed.filter((c) => !found.includes(c)),
  };
}

describe("ServiceErrorCode is every code the service answers with", () => {
  const { codes, unreadable } = scan(sources);

  it("every place that decides a code names it (nothing computed the scan cannot read)", () => {
    expect(unreadable).toEqual([]);
  });

  it("the scan finds the codes of each kind of place (so an empty scan cannot pass)", () => {
    // a class's fixed code, a default, a script refusal's mapper, an envelope of the app, onError's
    // mapping, the health route's literal
    for (const code of [
      "not_found",
      "invalid_request",
      "bucket_width_conflict",
      "score_rejected",
      "method_not_allowed",
      "http_error",
      "storage_unavailable",
    ])
      expect([...codes.keys()]).toContain(code);
    expect(codes.get("queue_full")?.[0], "a refusal's code is found at its mapper").toMatch(
      /^src\/webhooks\/scripts\.ts:/,
    );
  });

  it("the union's codes are exactly the codes found, each listed once", () => {
    const { missing, unproduced } = compare(serviceUnion(), codes);
    expect(missing, "produced by the service, missing from ServiceErrorCode").toEqual([]);
    expect(unproduced, "in ServiceErrorCode, produced nowhere").toEqual([]);
  });

  it("catches what tsc cannot: a Lua refusal's name passed on as the code, and a cast code", () => {
    // a script's refusals map (as src/webhooks/scripts.ts's) whose mapper passes the Lua's own
    // string on: tsc sees only the cast, the wire gets 'lock_lost'
    const fixture = {
      "fixture/scripts.ts": `
export const lockScript = defineScript({
  refusals: {
    lock_lost: (r) => new ConflictError(r.refused as ConflictErrorCode, "The lock was taken."),
    "stale_lock": (r) => new ConflictError(String(r.refused) as ConflictErrorCode, "The lock is stale."),
  },
  lua: \`if not held then return {refused = 'lock_lost'} end\`,
});
export const typo = () => errorBody("not_fuond" as ServiceErrorCode, "No such thing.");
`,
    };
    const scanned = scan(fixture);
    expect(scanned.unreadable).toEqual([]);
    expect(compare(serviceUnion(), scanned.codes).missing).toEqual([
      "lock_lost (fixture/scripts.ts:4)",
      "stale_lock (fixture/scripts.ts:5)",
      "not_fuond (fixture/scripts.ts:9)",
    ]);
    // and a refusal-derived code outside a refusals entry cannot be read: it is reported, not skipped
    expect(scan({ "fixture/loose.ts": `const f = (r) => new ConflictError(r.refused, "x");` }).unreadable).toEqual([
      "fixture/loose.ts:1: r.refused",
    ]);
  });

  it("src/error-codes.ts declares types only, so no bundle carries it", () => {
    const source = ts.createSourceFile("error-codes.ts", raw("../../src/error-codes.ts"), ts.ScriptTarget.Latest);
    expect(source.statements.length).toBeGreaterThan(0);
    for (const statement of source.statements)
      expect(ts.SyntaxKind[statement.kind], statement.getText(source).slice(0, 60)).toBe("TypeAliasDeclaration");
  });
});

describe("the client's ErrorCode is the service's codes and its own", () => {
  const { codes } = scan(sources);

  it("ErrorCode is ServiceErrorCode | ClientErrorCode, and the two do not overlap", () => {
    const { alias, source } = aliasOf(raw("../../src/client-errors.ts"), "ErrorCode");
    expect(alias.type.getText(source)).toBe("ServiceErrorCode | ClientErrorCode");
    expectTypeOf<ErrorCode>().toEqualTypeOf<ServiceErrorCode | ClientErrorCode>();
    expectTypeOf<Extract<ClientErrorCode, ServiceErrorCode>>().toBeNever();
    const { literals } = clientUnion();
    expect(literals.filter((c) => serviceUnion().includes(c))).toEqual([]);
  });

  it("the client's own codes and `http_${number}` are the client's, and it produces each", () => {
    const { literals, templates } = clientUnion();
    expect(literals.toSorted()).toEqual(["aborted", "invalid_response", "network_error", "replay_summarised"]);
    for (const code of literals) expect(codes.has(code), `${code} is the client's, not the service's`).toBe(false);
    expect(templates).toEqual(["`http_${number}`"]);
    const client = import.meta.glob<string>("../../src/client*.ts", { eager: true, query: "?raw", import: "default" });
    const text = Object.values(client).join("\n");
    for (const code of literals) expect(text, code).toContain(`"${code}"`);
    expect(text).toContain("`http_${response.status}`");
  });
});

describe("tsc refuses a code that is not the service's where one is decided", () => {
  // Never called: what is checked is that each line fails `npm run -s typecheck` (an unused
  // expect-error directive is an error itself).
  const typos = () => [
    // @ts-expect-error -- a typo
    errorBody("not_fuond", "No such thing."),
    // @ts-expect-error -- a code of another status (409) for a 400
    new ValidationError("Bad.", undefined, "queue_full"),
    // @ts-expect-error -- a 404's code for a 409
    new ConflictError("not_found", "Gone."),
    // @ts-expect-error -- a new code not in ServiceErrorCode
    new RejectedError("score_too_high", "No."),
  ];

  it("narrows a class to its own codes", () => {
    expect(typeof typos).toBe("function");
    expectTypeOf<NotFoundError["code"]>().toEqualTypeOf<"not_found">();
    expectTypeOf<ValidationError["code"]>().toEqualTypeOf<
      "invalid_request" | "malformed_json" | "too_many_entries" | "too_many_members"
    >();
    const err: unknown = new NotFoundError("x");
    if (err instanceof NotFoundError) expectTypeOf(err.code).toEqualTypeOf<"not_found">();
    expect(err).toBeInstanceOf(NotFoundError);
  });
});
