import type { Context } from "hono";
import { errorBody } from "./errors.ts";
import type { AppEnv } from "./types.ts";

/**
 * CSV export (API.md v2: "Every GET that returns a list accepts `Accept: text/csv`").
 *
 * One middleware for every route: the route answers JSON as always, then, when
 * the client prefers text/csv and the answer is a 2xx JSON object, the list
 * named in CSV_LISTS for the route's path becomes RFC 4180 CSV. Routes know
 * nothing about CSV, so the CSV and the JSON of a request are the same read at
 * the same cost. A GET with no list there → 406; errors stay JSON.
 *
 * Format: a header row, CRLF line ends, UTF-8 without a byte order mark
 * (`Content-Type: text/csv; charset=utf-8` says so). A field holding a comma, a
 * quote, CR or LF is quoted, quotes doubled. null/absent → empty field; numbers
 * and booleans as JSON writes them; a nested object or array → its JSON text
 * (one cell, quoted as needed), so a column never splits into a variable set of
 * columns. Paging the rows cannot carry (`nextCursor`, a page's `total`) rides in headers:
 * `Link: <…>; rel="next"` and `X-Total-Count` (pagingHeaders).
 *
 * CSV injection: member names, player names and ids are caller-supplied text,
 * and a spreadsheet runs a cell that starts with `=`, `+`, `-` or `@` (or TAB or
 * CR) as a formula. Such a *string* field gets a leading `'` (the OWASP advice),
 * which spreadsheets show as text; numbers are never changed, so a negative
 * score stays a number. The JSON answer of the same request holds the exact
 * strings, for programs that need them.
 */

/** A column: a field of the item (dotted for a nested field, e.g. `window.hours`), or a value derived from the item. */
export type CsvColumn = string | { header: string; value: (item: unknown) => unknown };

export interface CsvList {
  /** The route as the OpenAPI document writes it: `/v1/counters/{counter}/top`. */
  path: string;
  /** The field of the JSON answer that holds the list. */
  list: string;
  columns: readonly CsvColumn[];
  /** The field of the JSON answer that counts the whole list when `limit` cuts its rows (else `total`). */
  total?: string;
}

/** A list of plain names (the registries): one column holding the item itself. */
const itself = (header: string): CsvColumn => ({ header, value: (item) => item });

const RANKED = ["rank", "member", "score"];
const BOARD_ROW = ["rank", "player", "name", "score", "previousRank", "bestRank"];

/**
 * Every GET that answers a list, with the field that holds it and its columns.
 * Routes added by other work of issue 19 (trending rising and history, webhooks)
 * are listed from API.md even where this branch lacks them. Not here, so 406:
 * single objects (a room's figures, also with ?day=; `_total`; a member; a
 * histogram's settings; ingest status) and the counters' `count`.
 */
export const CSV_LISTS: readonly CsvList[] = [
  { path: "/v1/trending", list: "streams", columns: [itself("stream")] },
  { path: "/v1/trending/{stream}/top", list: "items", columns: ["rank", "member", "count"] },
  { path: "/v1/trending/{stream}/rising", list: "items", columns: ["member", "count", "baseline", "ratio", "score"] },
  { path: "/v1/trending/{stream}/history", list: "points", columns: ["hour", "count", "maxError"] },

  { path: "/v1/counters", list: "items", columns: ["counter", "lastWriteAt"] },
  { path: "/v1/counters/{counter}/top", list: "items", columns: RANKED },
  { path: "/v1/counters/{counter}/bottom", list: "items", columns: RANKED },
  // `count`: every member in the score range (review 7: a CSV cut by `limit` did not say so)
  { path: "/v1/counters/{counter}/range", list: "items", columns: ["member", "score"], total: "count" },
  { path: "/v1/counters/{counter}/sorted", list: "items", columns: ["member", "score"], total: "count" },

  { path: "/v1/histograms", list: "histograms", columns: [itself("histogram")] },
  { path: "/v1/histograms/{histogram}", list: "buckets", columns: ["lower", "upper", "count"] },

  { path: "/v1/presence", list: "rooms", columns: [itself("room")] },
  { path: "/v1/presence/{room}/members", list: "members", columns: ["id", "lastSeen"] },
  { path: "/v1/presence/{room}/history", list: "points", columns: ["at", "online"] },

  { path: "/v1/leaderboards", list: "boards", columns: [itself("board")] },
  { path: "/v1/leaderboards/{board}", list: "items", columns: BOARD_ROW },
  { path: "/v1/leaderboards/{board}/players/{player}/around", list: "items", columns: BOARD_ROW },
  { path: "/v1/leaderboards/{board}/seasons", list: "seasons", columns: ["id", "from", "to", "players", "top"] },

  {
    path: "/v1/webhooks",
    list: "webhooks",
    columns: ["name", "url", "events", "filter", "n", "threshold", "createdAt", "updatedAt"],
  },
  {
    path: "/v1/webhooks/{name}/deliveries",
    list: "deliveries",
    columns: [
      "delivery",
      "event",
      "type",
      "attempt",
      "at",
      "via",
      "outcome",
      "status",
      "error",
      "messageId",
      "retryAt",
    ],
  },
];

const MATCHERS = CSV_LISTS.map((entry) => ({
  entry,
  // A {param} is one path segment (names never hold a slash; an encoded one stays %2F).
  pattern: new RegExp(`^${entry.path.replace(/[.]/g, "\\.").replace(/\{[^}]+\}/g, "[^/]+")}/?$`),
}));

/** The table entry for a request path, if that path answers a list. */
export function csvListFor(pathname: string): CsvList | undefined {
  return MATCHERS.find((m) => m.pattern.test(pathname))?.entry;
}

// ---- the format ----

const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/** One field, RFC 4180 escaped, with spreadsheet formulas neutralised (see the module comment). */
export function csvField(value: unknown): string {
  let text: string;
  if (value === null || value === undefined) return "";
  if (typeof value === "string") text = FORMULA_START.test(value) ? `'${value}` : value;
  else if (typeof value === "number" || typeof value === "boolean") text = String(value);
  else text = JSON.stringify(value);
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function headerOf(column: CsvColumn): string {
  return typeof column === "string" ? column : column.header;
}

function valueOf(column: CsvColumn, item: unknown): unknown {
  if (typeof column !== "string") return column.value(item);
  let value: unknown = item;
  for (const part of column.split("."))
    value = value !== null && typeof value === "object" ? (value as Record<string, unknown>)[part] : undefined;
  return value;
}

/** The whole document: a header row, then a row per item, each line ended by CRLF. */
export function toCsv(columns: readonly CsvColumn[], items: readonly unknown[]): string {
  const rows = [columns.map((c) => csvField(headerOf(c))).join(",")];
  for (const item of items) rows.push(columns.map((c) => csvField(valueOf(c, item))).join(","));
  return rows.map((row) => `${row}\r\n`).join("");
}

/** `/v1/trending/searches/top` → `trending-searches-top.csv` (only filename-safe characters). */
export function csvFilename(pathname: string): string {
  const parts = pathname
    .split("/")
    .filter((part) => part !== "" && part !== "v1")
    .map((part) => {
      let decoded = part;
      try {
        decoded = decodeURIComponent(part);
      } catch {
        // a malformed escape stays as sent
      }
      return decoded.replace(/[^A-Za-z0-9._-]+/g, "_");
    });
  return `${parts.join("-") || "export"}.csv`;
}

// ---- content negotiation ----

/** The q of the best Accept range matching `type` (exact beats `text/*` beats `*\/*`); 0 when none matches. */
function quality(ranges: { type: string; q: number }[], type: string): { q: number; exact: boolean; index: number } {
  const [major] = type.split("/");
  let best = { q: 0, exact: false, index: Infinity, specificity: -1 };
  ranges.forEach((range, index) => {
    const specificity = range.type === type ? 2 : range.type === `${major}/*` ? 1 : range.type === "*/*" ? 0 : -1;
    if (specificity > best.specificity) best = { q: range.q, exact: specificity === 2, index, specificity };
  });
  return best;
}

/**
 * Whether the client prefers CSV: text/csv is named explicitly, with a q above
 * 0 and at least that of application/json. On a tie an explicit text/csv beats
 * a wildcard; of two explicit types, the one named first wins. `Accept: *\/*`,
 * `text/*` or no Accept stays JSON.
 */
export function prefersCsv(accept: string | undefined): boolean {
  if (!accept) return false;
  const ranges = accept.split(",").map((part) => {
    const [type = "", ...params] = part.split(";").map((s) => s.trim().toLowerCase());
    const qParam = params.find((p) => p.startsWith("q="));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    return { type, q: Number.isFinite(q) ? q : 0 };
  });
  const csv = quality(ranges, "text/csv");
  if (!csv.exact || csv.q <= 0) return false;
  const json = quality(ranges, "application/json");
  // on a tie, an explicit text/csv beats a wildcard; two explicit types go by their order
  return csv.q > json.q || (csv.q === json.q && (!json.exact || csv.index <= json.index));
}

// ---- the middleware ----

/** Adds `Vary: Accept` (JSON and CSV share a URL: caches must keep them apart), copying a response whose headers are immutable. */
function varyOnAccept(res: Response): Response {
  try {
    res.headers.append("Vary", "Accept");
    return res;
  } catch {
    const copy = new Response(res.body, res);
    copy.headers.append("Vary", "Accept");
    return copy;
  }
}

/**
 * Run for /v1/* once the route answered (./app.ts loads this module on a GET's first 2xx answer):
 * turns its JSON list into CSV when the client prefers text/csv (see the module comment). Other
 * methods and non-2xx answers pass through untouched.
 */
export async function csvAnswer(c: Context<AppEnv>): Promise<void> {
  const res = c.res;
  // HEAD: Hono runs the GET for it and drops the body; its headers are the GET's
  if ((c.req.method !== "GET" && c.req.method !== "HEAD") || res.status < 200 || res.status >= 300) return;
  const pathname = new URL(c.req.url).pathname;
  const entry = csvListFor(pathname);
  if (!prefersCsv(c.req.header("accept"))) {
    if (entry) {
      const varied = varyOnAccept(res);
      if (varied !== res) {
        c.res = undefined;
        c.res = varied;
      }
    }
    return;
  }
  const json = (res.headers.get("content-type") ?? "").startsWith("application/json");
  // the JSON answer is replaced either way: its body may be consumed
  const body = entry && json ? ((await res.json()) as Record<string, unknown>) : undefined;
  const list = entry ? body?.[entry.list] : undefined;
  c.res = undefined;
  if (!entry || !Array.isArray(list)) {
    c.res = c.json(
      errorBody("not_acceptable", `GET ${pathname} answers no list, so it has no CSV form; ask for application/json.`),
      406,
    );
    return;
  }
  const headers = new Headers(res.headers);
  headers.set("Content-Type", "text/csv; charset=utf-8");
  headers.set("Content-Disposition", `attachment; filename="${csvFilename(pathname)}"`);
  headers.append("Vary", "Accept");
  headers.delete("Content-Length");
  if (body) pagingHeaders(c.req.url, entry.total ? { ...body, total: body[entry.total] } : body, headers);
  c.res = new Response(toCsv(entry.columns, list), { status: res.status, headers });
}

/**
 * What the JSON answer says of paging, which CSV rows cannot hold: the next page as a
 * `Link: <…>; rel="next"` (RFC 8288; a cursor list's `nextCursor`, an offset list's next offset,
 * `nextOffset` or `next` (the counters', histograms' and boards' lists: review 6 found their CSV
 * stuck on page 1), or a numbered list's next `page` while `page × limit` < `total`), and `total`
 * as `X-Total-Count`.
 */
function pagingHeaders(url: string, body: Record<string, unknown>, headers: Headers): void {
  const next = new URL(url);
  const { nextCursor, nextOffset, next: nextAt, total, page, limit } = body;
  const offset = typeof nextOffset === "number" ? nextOffset : nextAt;
  if (typeof total === "number") headers.set("X-Total-Count", String(total));
  if (typeof nextCursor === "string" && nextCursor !== "") next.searchParams.set("cursor", nextCursor);
  else if (typeof offset === "number") next.searchParams.set("offset", String(offset));
  else if (typeof total === "number" && typeof page === "number" && typeof limit === "number" && page * limit < total)
    next.searchParams.set("page", String(page + 1));
  else return;
  headers.set("Link", `<${next.pathname}${next.search}>; rel="next"`);
}

// ---- the OpenAPI document ----

interface OpenApiLike {
  info: { description?: string };
  paths?: Record<
    string,
    { get?: { responses?: Record<string, { content?: Record<string, unknown> } | unknown> } } | undefined
  >;
}

/**
 * The service's OpenAPI document with the CSV form of each list GET in it
 * (text/csv next to application/json) and the rules in its description.
 * Writes only objects the generator made for this document (never the shared
 * `info` constant it was given).
 */
export function describeCsv<T extends OpenApiLike>(doc: T): T {
  for (const entry of CSV_LISTS) {
    const responses = doc.paths?.[entry.path]?.get?.responses;
    const ok = responses?.["200"] as { content?: Record<string, unknown> } | undefined;
    if (!responses || !ok) continue;
    const csv = {
      schema: {
        type: "string",
        description: `\`${entry.list}\` as RFC 4180 CSV with a header row`,
        example: toCsv(entry.columns, []),
      },
    };
    responses["200"] = { ...ok, content: { ...ok.content, "text/csv": csv } };
  }
  const note =
    "**CSV.** A GET that answers a list also answers `Accept: text/csv`: RFC 4180, UTF-8, a header row, nested values as JSON; text starting with `=` `+` `-` `@` TAB or CR gets a leading `'` (no spreadsheet formulas). Other GETs: 406.";
  doc.info = { ...doc.info, description: doc.info.description ? `${doc.info.description}\n\n${note}` : note };
  return doc;
}
