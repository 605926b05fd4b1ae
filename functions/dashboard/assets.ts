// The browser modules' source text. The Worker's esbuild (dev/build-worker.ts) honours the import
// attribute and inlines each file as a string (in the dashboard's chunk); the
// vitest plugin ignores attributes and uses the `[[rules]] type = "Text"` block
// of wrangler.toml instead. browser-modules.d.ts types them as strings.
import api from "./client/api.browser.js" with { type: "text" };
import charts from "./client/charts.browser.js" with { type: "text" };
import dom from "./client/dom.browser.js" with { type: "text" };
import loaders from "./client/loaders.browser.js" with { type: "text" };
import main from "./client/main.browser.js" with { type: "text" };
import state from "./client/state.browser.js" with { type: "text" };
import { DASHBOARD_CSS } from "./styles.ts";

/**
 * FNV-1a, 32 bit: a synchronous content hash for ETags and cache-busting
 * query strings (crypto.subtle is async, and this is not about security).
 */
export function contentHash(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, "0");
}

export interface Asset {
  path: string;
  contentType: string;
  /** What is served. */
  readonly body: string;
  /** Content hash: the `v` query of the page's links and the ETag. */
  readonly hash: string;
}

// Prepared on first use, not while the module loads (cold start).
function asset(path: string, contentType: string, render: () => string): Asset {
  let body: string | undefined;
  let hash: string | undefined;
  return {
    path,
    contentType,
    get body() {
      return (body ??= render());
    },
    get hash() {
      return (hash ??= contentHash(this.body));
    },
  };
}

const JS = "text/javascript; charset=utf-8";

/** The browser modules by file name; main.browser.js is the page's entry. */
const SOURCES: Record<string, string> = {
  "api.browser.js": api,
  "charts.browser.js": charts,
  "dom.browser.js": dom,
  "loaders.browser.js": loaders,
  "main.browser.js": main,
  "state.browser.js": state,
};
const ENTRY = "main.browser.js";

/** A static import statement of a sibling module (the only kind the browser modules use). */
const IMPORT = /^(import\b[^;]*?\bfrom\s*)"\.\/([\w-]+\.browser\.js)"/gm;

/** Modules being linked right now: meeting one again means an import cycle. */
const linking = new Set<string>();

/**
 * The source as served: each `from "./x.browser.js"` becomes the versioned URL
 * of that module, so a module's hash covers everything it imports and the
 * immutable caching of `?v=` URLs holds for the whole module graph.
 */
function linked(file: string): string {
  const source = SOURCES[file];
  if (source === undefined) throw new Error(`dashboard: ./${file} is imported but not in SOURCES`);
  if (linking.has(file)) throw new Error(`dashboard: import cycle through ${file}`);
  linking.add(file);
  try {
    const out = source.replace(IMPORT, (_, from: string, dep: string) => `${from}"${versionedUrl(moduleAsset(dep))}"`);
    // Only the modules above are served: any other relative import would 404 in the browser.
    if (/^import\b[^;]*?\bfrom\s*["']\.{1,2}\//m.test(out))
      throw new Error(`dashboard: ${file} imports a file the Worker does not serve`);
    return out;
  } finally {
    linking.delete(file);
  }
}

const modules = new Map<string, Asset>();
function moduleAsset(file: string): Asset {
  if (file === ENTRY) throw new Error("dashboard: a module imports the entry module");
  let found = modules.get(file);
  if (!found) {
    found = asset(`/dashboard/${file.replace(/\.browser\.js$/, ".js")}`, JS, () => linked(file));
    modules.set(file, found);
  }
  return found;
}

/** The entry module the page loads; it imports the others from /dashboard/{module}. */
export const SCRIPT = asset("/dashboard.js", JS, () => linked(ENTRY));
/** The modules the entry imports (directly or not), each at /dashboard/<name>.js. */
export const MODULES: readonly Asset[] = Object.keys(SOURCES)
  .filter((file) => file !== ENTRY)
  .map((file) => moduleAsset(file));
export const STYLES = asset("/dashboard.css", "text/css; charset=utf-8", () => DASHBOARD_CSS);

/** The URL the page links: versioned, so the asset itself may be cached for a year. */
export function versionedUrl(a: Asset): string {
  return `${a.path}?v=${a.hash}`;
}
