import { afterAll, describe, expect, it } from "vitest";
import { MODULES, SCRIPT, STYLES, contentHash } from "../../functions/dashboard/assets.ts";
import { PANELS } from "../../functions/dashboard/panels.ts";
import { TEST_INGEST_KEY_2 } from "../helpers/keys.ts";
import { TEST_KEYS, createTestApi } from "../helpers/worker.ts";

const api = createTestApi({ label: "dashboard" });
/** Every browser module as served, the entry first. */
const CLIENT = [SCRIPT, ...MODULES];
const clientJs = () => CLIENT.map((m) => m.body).join("\n");
afterAll(() => api.cleanup());

describe("dashboard page", () => {
  it("renders the shell at / without a key and without touching Redis", async () => {
    const { result, requests, commands } = await api.cost(() => api.get("/", { key: "none" }));
    expect(result.status).toBe(200);
    expect(result.headers.get("content-type")).toMatch(/^text\/html/);
    expect(requests).toBe(0);
    expect(commands).toBe(0);
    const html = String(result.body);
    expect(html.startsWith("<!doctype html>")).toBe(true);
    for (const panel of PANELS) {
      expect(html).toContain(`data-panel="${panel.id}"`);
      expect(html).toContain(`data-list="${panel.list}"`);
      // Every picker has a visible label bound to it.
      expect(html).toMatch(new RegExp(`<label class="picker" for="pick-${panel.id}">`));
      expect(html).toContain(`id="pick-${panel.id}"`);
    }
    // The trending panel's Top / Rising toggle: a labelled group, Top pressed until the page says otherwise.
    expect(html).toContain('<div class="views" role="group" aria-label="Trending view">');
    expect(html).toMatch(/<button type="button" data-view="top" aria-pressed="true"[^>]*>Top<\/button>/);
    expect(html).toMatch(/<button type="button" data-view="rising" aria-pressed="false"[^>]*>Rising<\/button>/);
    expect(html.match(/data-view=/g)).toHaveLength(2);
    expect(html).toContain('<label for="key-input">Read API key</label>');
    expect(html).toContain('name="viewport"');
    expect(await api.keys()).toEqual([]);
  });

  it("never embeds an API key, even when the request carries one", async () => {
    for (const key of ["none", "read", "admin"] as const) {
      const html = String((await api.get("/", { key })).body);
      for (const secret of [...Object.values(TEST_KEYS), TEST_INGEST_KEY_2, api.env.UPSTASH_REDIS_REST_TOKEN]) {
        expect(html).not.toContain(secret);
      }
      expect(html).not.toMatch(/Bearer\s+\S/);
    }
  });

  it("links only its own script and stylesheet, versioned by content, under a strict CSP", async () => {
    const res = await api.get("/", { key: "none" });
    const html = String(res.body);
    const urls = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(urls).toContain(`/dashboard.js?v=${SCRIPT.hash}`);
    // The entry is a module script; its imports are preloaded, versioned by content too.
    expect(html).toContain(`<script type="module" src="/dashboard.js?v=${SCRIPT.hash}">`);
    for (const m of MODULES) expect(html).toContain(`<link rel="modulepreload" href="${m.path}?v=${m.hash}"/>`);
    expect(urls).toContain(`/dashboard.css?v=${STYLES.hash}`);
    // No third-party CDN: every URL is same-origin.
    for (const url of urls) expect(url).toMatch(/^\//);
    expect(html).not.toMatch(/<script>(?!<\/script>)/);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("answers 304 to a revalidation of the page", async () => {
    const first = await api.get("/", { key: "none" });
    const etag = first.headers.get("etag");
    expect(etag).toMatch(/^"[0-9a-f]{8}"$/);
    const again = await api.get("/", { key: "none", headers: { "if-none-match": etag! } });
    expect(again.status).toBe(304);
    expect(again.body).toBeUndefined();
  });
});

describe("dashboard assets", () => {
  for (const [asset, type] of [
    ...CLIENT.map((m) => [m, /^text\/javascript/] as const),
    [STYLES, /^text\/css/],
  ] as const) {
    it(`serves ${asset.path} with cache headers and ETag revalidation`, async () => {
      const { result, requests } = await api.cost(() => api.get(`${asset.path}?v=${asset.hash}`, { key: "none" }));
      expect(requests).toBe(0);
      expect(result.status).toBe(200);
      expect(result.headers.get("content-type")).toMatch(type);
      expect(result.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(String(result.body)).toBe(asset.body);

      // An unversioned (or stale) URL must revalidate, or a deploy would never reach browsers.
      const plain = await api.get(asset.path, { key: "none" });
      expect(plain.status).toBe(200);
      expect(plain.headers.get("cache-control")).toBe("public, max-age=0, must-revalidate");
      const etag = plain.headers.get("etag")!;
      expect(etag).toBe(`"${asset.hash}"`);
      const revalidated = await api.get(asset.path, { key: "none", headers: { "if-none-match": `W/${etag}` } });
      expect(revalidated.status).toBe(304);
    });
  }

  it("links the browser modules by versioned URLs: a module's hash changes with anything it imports", async () => {
    const imports = (js: string) => [...js.matchAll(/^import\b[^;]*?\bfrom\s*"([^"]+)"/gm)].map((m) => m[1]!);
    const byUrl = new Map(MODULES.map((m) => [`${m.path}?v=${m.hash}`, m]));
    const reached = new Set<string>();
    const walk = (js: string) => {
      for (const url of imports(js)) {
        const dep = byUrl.get(url);
        expect(dep, `import of ${url}`).toBeDefined();
        if (!reached.has(url)) {
          reached.add(url);
          walk(dep!.body);
        }
      }
    };
    walk(SCRIPT.body);
    // Every module served is reached from the entry, and nothing imports a source path.
    expect(reached.size).toBe(MODULES.length);
    expect(clientJs()).not.toContain(".browser.js");
    for (const m of CLIENT) expect(m.hash).toBe(contentHash(m.body));
    const unknown = await api.get("/dashboard/nope.js", { key: "none" });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe("not_found");
  });

  it("serves a script that reads the key from localStorage and sends it only as a Bearer header", () => {
    const js = clientJs();
    expect(js).toContain("localStorage");
    expect(js).toContain('authorization: "Bearer " + state.key');
    // Data reaches the DOM as text only.
    expect(js).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(/);
  });

  it("finds each panel's list endpoint, with the field the page reads, in the OpenAPI document", async () => {
    const doc = (await api.get("/openapi.json", { key: "none" })).body;
    for (const panel of PANELS) {
      const op = doc.paths[panel.list]?.get;
      expect(op, `GET ${panel.list}`).toBeDefined();
      const schema = op.responses["200"].content["application/json"].schema;
      const resolved = schema.$ref ? doc.components.schemas[schema.$ref.split("/").pop()] : schema;
      expect(resolved.properties[panel.field].type, `${panel.list} → ${panel.field}`).toBe("array");
    }
  });

  it("finds the trending panel's Rising view in the OpenAPI document, with the fields its table reads", async () => {
    const doc = (await api.get("/openapi.json", { key: "none" })).body;
    const resolve = (schema: any) => (schema.$ref ? doc.components.schemas[schema.$ref.split("/").pop()] : schema);
    const op = doc.paths["/v1/trending/{stream}/rising"]?.get;
    expect(op).toBeDefined();
    expect(op.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(["n", "baseline"]));
    const body = resolve(op.responses["200"].content["application/json"].schema);
    for (const field of ["baselineHours", "elapsed", "exact", "maxError", "generatedAt"])
      expect(body.properties[field], field).toBeDefined();
    const item = resolve(resolve(body.properties.items).items);
    expect(Object.keys(item.properties)).toEqual(
      expect.arrayContaining(["member", "count", "baseline", "ratio", "score"]),
    );
  });

  it("describes the page and its assets in the OpenAPI document as needing no key", async () => {
    const doc = (await api.get("/openapi.json", { key: "none" })).body;
    for (const path of ["/", "/dashboard.js", "/dashboard/{module}", "/dashboard.css"]) {
      expect(doc.paths[path].get.tags).toEqual(["Dashboard"]);
      expect(doc.paths[path].get.security).toEqual([]);
    }
  });
});

describe("dashboard keys", () => {
  const asDashboard = { "x-edgestats-client": "dashboard" };

  it("attack: an admin key on the dashboard's requests is refused (403, saying why) before any Redis call", async () => {
    for (const path of ["/v1/counters/c1/top", "/v1/trending/s1/top?window=1h", "/v1/presence", "/v1/leaderboards"]) {
      const { result, requests } = await api.cost(() => api.get(path, { key: "admin", headers: asDashboard }));
      expect(result.status).toBe(403);
      expect(result.body.error.code).toBe("forbidden");
      expect(result.body.error.message).toMatch(/read keys only/);
      expect(result.body.error.message).toMatch(/localStorage/);
      expect(requests).toBe(0);
    }
    // A read key on the same requests is served; the admin key still works outside the dashboard.
    expect((await api.get("/v1/counters/c1/top", { key: "read", headers: asDashboard })).status).not.toBe(403);
    expect((await api.get("/v1/counters/c1/top", { key: "admin" })).status).not.toBe(403);
  });

  it("attack: an ingest key on the dashboard's requests is refused too (it can write and delete), before any Redis call", async () => {
    // A key in both INGEST_KEYS and READ_KEYS has the ingest scope as well; the check is on the scope.
    for (const path of ["/v1/counters/c1/top", "/v1/presence"]) {
      const { result, requests } = await api.cost(() => api.get(path, { key: "ingest", headers: asDashboard }));
      expect(result.status).toBe(403);
      expect(result.body.error.message).toMatch(/read keys only/);
      expect(result.body.error.message).toMatch(/READ_KEYS/);
      expect(requests).toBe(0);
    }
  });

  it("the page's script marks every API request as the dashboard's and stores a key only once the API accepted it", () => {
    expect(clientJs()).toContain('"x-edgestats-client": "dashboard"');
    // useKey does not write localStorage; report() does, after a refresh without an auth refusal.
    const js = SCRIPT.body;
    const useKey = js.slice(js.indexOf("function useKey("), js.indexOf("function resetPanels("));
    expect(useKey).not.toContain("store.set(KEY_STORAGE");
    expect(js).toMatch(
      /if \(auth\) return refused\(auth\);\s+if \(!state\.keySaved && state\.key !== null\) \{\s+store\.set\(KEY_STORAGE, state\.key\);/,
    );
  });
});
