/**
 * wrangler.toml `[build]` command, run by `wrangler deploy` (and `--dry-run`, so by
 * `npm run bundle-size` and the benchmarks) and by `wrangler dev` (again whenever a file under its
 * `watch_dir` changes): bundles the Worker into `.wrangler/worker/`, which wrangler uploads as
 * it is (`no_bundle = true`): the entry `index.js` and the chunks it imports (`find_additional_modules`
 * with the ESModule rule in wrangler.toml).
 *
 * Why our own esbuild step: wrangler's bundles the Worker into one module, which V8 must parse
 * whole in every cold isolate (issue 14, point 6). Built with code splitting, every dynamic
 * `import()` of the app (each router: functions/routes/index.ts, the OpenAPI document, the docs
 * page, the jobs, queued ingest) is a chunk of its own, with the modules it
 * shares with other chunks in shared chunks, and Workers load a chunk on its first `import()`.
 * The options are wrangler's own for `wrangler deploy` (target, conditions, loaders, the
 * NODE_ENV define; minified without keepNames, as wrangler.toml had them), with the aliases below
 * resolved as wrangler's `[alias]` did (an import path matched exactly as written).
 *
 * First writes the OpenAPI document the bundle serves (dev/openapi-prebuilt.ts).
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, resolve } from "node:path";
import { build, transformSync, type Plugin } from "esbuild";
import ts from "typescript";
import { stripLuaComments } from "./lua-comments.ts";
import { writePrebuiltDocument } from "./openapi-prebuilt.ts";

const ROOT = resolve(import.meta.dirname, "..");
/** Where the Worker's modules are written (wrangler.toml `main` is its index.js). Not in git. */
export const OUTDIR = resolve(ROOT, ".wrangler/worker");

/**
 * Import paths replaced in the bundle (what wrangler.toml's `[alias]` was), by the module put in
 * their place. `npm run bundle-size` fails if another bundled module imports one of them.
 *
 * Parts of zod the Worker never uses but cannot shake off (the whole `z` namespace is kept by
 * @hono/zod-openapi): every locale but English, z.compile(), z.fromJSONSchema(). The OpenAPI
 * document is prebuilt (functions/build/openapi-prebuilt.ts), so the bundle needs neither the
 * generator (app.ts imports "./openapi-document.ts"), nor zod-to-openapi (imported by
 * @hono/zod-openapi), nor zod's JSON Schema output, which no bundler can shake off either (every
 * zod schema type refers to its JSON Schema processor). And @hono/zod-openapi's `z` (all of zod in
 * one object, imported from "zod") is only what it uses of it (functions/build/zod-namespace.ts):
 * the app imports zod's parts by name (functions/zod.ts), so esbuild leaves out the rest. Its
 * `Hono` is `HonoBase` (functions/build/hono.ts): every `OpenAPIHono` of the bundle is given its
 * router, so Hono's default routers were code no request ran.
 */
export const ALIASES: Record<string, string> = {
  "../locales/index.js": "./functions/build/zod-locales.ts",
  "./compile.js": "./functions/build/zod-compile.ts",
  "./from-json-schema.js": "./functions/build/zod-compile.ts",
  "./openapi-document.ts": "./functions/build/openapi-prebuilt.ts",
  "@asteasolutions/zod-to-openapi": "./functions/build/zod-to-openapi.ts",
  hono: "./functions/build/hono.ts",
  zod: "./functions/build/zod-namespace.ts",
  "./to-json-schema.js": "./functions/build/zod-json-schema.ts",
  "../core/to-json-schema.js": "./functions/build/zod-json-schema.ts",
  "./json-schema-processors.js": "./functions/build/zod-json-schema-processors.ts",
  "../core/json-schema-processors.js": "./functions/build/zod-json-schema-processors.ts",
};

/** wrangler's alias plugin: an import path listed in ALIASES, as written, resolves to its stand-in. */
const aliases: Plugin = {
  name: "alias",
  setup(b) {
    const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const filter = new RegExp(`^(${Object.keys(ALIASES).map(escape).join("|")})$`);
    const require = createRequire(resolve(ROOT, "package.json"));
    b.onResolve({ filter }, (args) => {
      const target = ALIASES[args.path];
      return target ? { path: require.resolve(target, { paths: [ROOT] }) } : undefined;
    });
  },
};

/** The library's Lua without whole-line comments (./lua-comments.ts says why that is safe). */
const luaComments: Plugin = {
  name: "lua-comments",
  setup(b) {
    const src = resolve(ROOT, "src").replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    b.onLoad({ filter: new RegExp(`^${src}[\\\\/].*\\.ts$`) }, (args) => ({
      contents: stripLuaComments(readFileSync(args.path, "utf8")),
      loader: "ts",
    }));
  },
};

/**
 * The routes (functions/routes/*.ts) with each route's `responses` thunk (functions/lazy-route.ts
 * `lazyRoute`) emptied: only the OpenAPI document calls it, and the bundle serves the document
 * prebuilt (`ALIASES`), so its response schemas were code no request runs (~10 KB of source).
 * Taking it out pays for the modules a first write no longer loads (functions/routes/index.ts
 * `Mount.alone`: more, smaller chunks, whose imports and exports gzip less well). Found with
 * TypeScript's parser, so a parenthesis in a description cannot end a thunk early; `npm run
 * bundle-size` checks that the bundle still serves the fixture's document and validates as the app.
 */
const documentOnly: Plugin = {
  name: "document-only",
  setup(b) {
    b.onLoad({ filter: /[\\/]functions[\\/]routes[\\/][\w-]+\.ts$/ }, (args) => {
      const text = readFileSync(args.path, "utf8");
      const file = ts.createSourceFile(args.path, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
      const cuts: { start: number; end: number; by: string }[] = [];
      const cut = (node: ts.Node, by: string) => cuts.push({ start: node.getStart(file), end: node.getEnd(), by });
      const visit = (node: ts.Node): void => {
        if (ts.isPropertyAssignment(node) && ts.isArrowFunction(node.initializer)) {
          if (node.name.getText(file) === "responses") return void cut(node.initializer.body, "({})");
        }
        // A route's spec: its summary and description are the document's too.
        if (ts.isCallExpression(node) && node.expression.getText(file) === "lazyRoute") {
          const spec = node.arguments[3];
          const body =
            spec && ts.isArrowFunction(spec) && ts.isParenthesizedExpression(spec.body) && spec.body.expression;
          if (body && ts.isObjectLiteralExpression(body))
            for (const p of body.properties)
              if (ts.isPropertyAssignment(p) && ["summary", "description"].includes(p.name.getText(file)))
                cut(p.initializer, '""');
        }
        ts.forEachChild(node, visit);
      };
      visit(file);
      let contents = text;
      for (const { start, end, by } of cuts.sort((a, b) => b.start - a.start))
        contents = `${contents.slice(0, start)}${by}${contents.slice(end)}`;
      return { contents, loader: "ts" };
    });
  },
};

/**
 * The dashboard's browser modules, which the Worker serves as text (functions/dashboard/assets.ts),
 * minified by esbuild, each import statement then put back on a line of its own (assets.ts
 * rewrites them line by line): well under half their source's gzip size (minifying their
 * whitespace too saved 2.0 KiB of the bundle's); the Chromium tests load the bundle's build
 * (test/browser).
 */
const browserText: Plugin = {
  name: "browser-text",
  setup(b) {
    b.onLoad({ filter: /[\\/]functions[\\/]dashboard[\\/]client[\\/][\w-]+\.browser\.js$/ }, (args) => {
      if (args.with.type !== "text") return undefined;
      const { code } = transformSync(readFileSync(args.path, "utf8"), {
        format: "esm",
        target: "es2022",
        minifySyntax: true,
        minifyIdentifiers: true,
        minifyWhitespace: true,
        legalComments: "none",
      });
      // esbuild writes a module's imports first, as the source has them (at the top).
      const imports: string[] = [];
      const statement = /import\s*(?:[^;"'()]*?from\s*)?"([^"]+)";?/y;
      let end = 0;
      for (let m; (m = statement.exec(code)); end = statement.lastIndex) imports.push(m[0]);
      const rest = code.slice(end);
      if (/\bfrom\s*["']\.|\bimport\s*["']/.test(rest)) throw new Error(`${args.path}: an import after other code`);
      return { contents: [...imports, rest].join("\n"), loader: "text" };
    });
  },
};

/**
 * The chunks' names, `chunk-<hash>` as esbuild writes them, made short: `chunk-0`, `chunk-1`...,
 * the most imported first. Every module names the chunks it imports (~550 `"./chunk-X.js"` in
 * all), and gzip cannot shrink the 8 random characters of a hash (~6 bytes each time): -1.3 KiB of
 * the upload's gzip. Workers load modules by name from one version's upload, so the names need
 * not change with the content (nothing caches a chunk across versions). Returns old name → new.
 */
function shortChunkNames(texts: string[]): Map<string, string> {
  const counts = new Map<string, number>();
  for (const text of texts)
    for (const [, name = ""] of text.matchAll(/"\.\/(chunk-[A-Z2-7]{8})\.js"/g))
      counts.set(name, (counts.get(name) ?? 0) + 1);
  const names = [...counts.keys()].sort((a, b) => (counts.get(b) ?? 0) - (counts.get(a) ?? 0) || (a < b ? -1 : 1));
  return new Map(names.map((name, i) => [name, `chunk-${i.toString(36)}`]));
}

/** Builds the Worker into OUTDIR and returns the entry's path. */
export async function buildWorker(outdir = OUTDIR): Promise<string> {
  writePrebuiltDocument();
  rmSync(outdir, { recursive: true, force: true });
  const production = JSON.stringify(process.env.NODE_ENV || "production");
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: { index: "functions/index.ts" },
    outdir,
    write: false,
    bundle: true,
    splitting: true,
    format: "esm",
    chunkNames: "chunk-[hash]",
    target: "es2024",
    supported: { "import-source": true, using: true },
    conditions: ["workerd", "worker", "browser"],
    loader: { ".js": "jsx", ".mjs": "jsx", ".cjs": "jsx" },
    define: {
      "navigator.userAgent": '"Cloudflare-Workers"',
      "process.env.NODE_ENV": production,
      "global.process.env.NODE_ENV": production,
      "globalThis.process.env.NODE_ENV": production,
    },
    external: ["cloudflare:*", "node:*"],
    minify: true,
    keepNames: false,
    sourcemap: "external",
    sourcesContent: true,
    metafile: true,
    plugins: [aliases, luaComments, browserText, documentOnly],
    logLevel: "warning",
  });
  const short = shortChunkNames(result.outputFiles.filter((f) => f.path.endsWith(".js")).map((f) => f.text));
  const rename = (text: string) => text.replace(/chunk-[A-Z2-7]{8}(?=\.js)/g, (name) => short.get(name) ?? name);
  mkdirSync(outdir, { recursive: true });
  for (const file of result.outputFiles) {
    const name = rename(basename(file.path));
    if (/^chunk-[A-Z2-7]{8}\.js/.test(name)) throw new Error(`build-worker: no module imports ${name}`);
    writeFileSync(resolve(dirname(file.path), name), rename(file.text));
  }
  // esbuild's account of what went where (bytes of each source module in each chunk), for whoever
  // wants to see what a chunk holds; not uploaded (no rule matches it).
  writeFileSync(resolve(outdir, "meta.json"), rename(JSON.stringify(result.metafile)));
  return resolve(outdir, "index.js");
}

if (import.meta.main) await buildWorker();
