import { html, raw } from "hono/html";

export const OPENAPI_INFO = {
  title: "edgestats",
  version: "1.0.0",
  description:
    "Real-time statistics on the edge: trending top-N over sliding windows, counters and histograms, presence, leaderboards. " +
    "Every call is one Redis round trip (but a trending stream delete past 168 h of retention and a webhook test, and a counter member delete whose member may be in more than 600 keys, run in parts: docs/costs.md). Send `Authorization: Bearer <key>`; errors are `{error:{code,message,details?}}`.",
};

type Doc = { paths?: Record<string, Record<string, { summary?: string; description?: string; tags?: string[] }>> };

/**
 * A self-contained reference page rendered from the OpenAPI document: no CDN,
 * so it works offline under `npm run dev`. The full schemas are in /openapi.json.
 */
export function docsPage(document: unknown) {
  const doc = document as Doc;
  const rows = Object.entries(doc.paths ?? {}).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({
      path,
      method: method.toUpperCase(),
      tag: op.tags?.[0] ?? "Other",
      op,
    })),
  );
  const tags = [...new Set(rows.map((r) => r.tag))];
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>edgestats API</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:960px;margin:2rem auto;padding:0 1rem;color:#1d232a}
h2{margin-top:2rem;border-bottom:1px solid #ddd}
.op{margin:.6rem 0;padding:.5rem .7rem;border:1px solid #e3e6ea;border-radius:6px}
.m{display:inline-block;min-width:4.5rem;font-weight:600;font-family:ui-monospace,monospace}
code{font-family:ui-monospace,monospace}
.d{color:#555;margin:.2rem 0 0}
</style>
</head>
<body>
<h1>edgestats API</h1>
<p>${OPENAPI_INFO.description}</p>
<p>The machine-readable OpenAPI 3.1 document: <a href="/openapi.json">/openapi.json</a>.</p>
${tags.map(
  (tag) => html`<h2>${tag}</h2>
${rows
  .filter((r) => r.tag === tag)
  .map(
    (r) => html`<div class="op"><span class="m">${r.method}</span> <code>${r.path}</code> — ${r.op.summary ?? ""}
${r.op.description ? html`<p class="d">${r.op.description}</p>` : raw("")}</div>`,
  )}`,
)}
</body>
</html>`;
}
