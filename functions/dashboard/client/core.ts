/**
 * Client script, part 1: DOM builders, formatting and the API fetch.
 * Plain browser JavaScript kept as a string (the Worker serves it as is; there
 * is no front-end build). No template literals inside, so String.raw is safe.
 * Data from the API only ever reaches the page through textContent and
 * setAttribute: member names cannot inject markup.
 */
export const CORE_JS = String.raw`
const SVG_NS = "http://www.w3.org/2000/svg";
const REQUEST_TIMEOUT_MS = 10000;

function fill(node, attrs, children) {
  for (const name of Object.keys(attrs || {})) {
    const value = attrs[name];
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") node.textContent = String(value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of [].concat(children === undefined ? [] : children)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === "object" ? child : String(child));
  }
  return node;
}
function el(tag, attrs, children) {
  return fill(document.createElement(tag), attrs, children);
}
function svg(tag, attrs, children) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

const numberFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });
function fmt(value) {
  const n = typeof value === "string" ? Number(value) : value;
  return typeof n === "number" && Number.isFinite(n) ? numberFormat.format(n) : "–";
}
function fmtTime(ms) {
  return new Date(ms).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}
function timeEl(ms, prefix) {
  return el("time", { datetime: new Date(ms).toISOString(), text: (prefix || "") + fmtTime(ms) });
}
function finite(value) {
  const n = typeof value === "string" ? Number(value) : value;
  return typeof n === "number" && Number.isFinite(n) ? n : null;
}
function asArray(value) {
  // The API encodes an empty list as [] but a Lua-side empty table may come out as {}.
  return Array.isArray(value) ? value : [];
}
function enc(name) {
  return encodeURIComponent(name);
}
function empty(message) {
  return el("p", { class: "empty", text: message });
}

// A list endpoint may answer names or objects carrying the name.
function namesOf(list) {
  const names = [];
  for (const item of asArray(list)) {
    if (typeof item === "string") names.push(item);
    else if (item && typeof item === "object") {
      const name = item.name ?? item.stream ?? item.room ?? item.board ?? item.histogram ?? item.counter ?? item.id;
      if (typeof name === "string") names.push(name);
    }
  }
  return names;
}

class ApiError extends Error {
  constructor(kind, status, message, path) {
    super(message);
    this.kind = kind;
    this.status = status;
    this.path = path;
  }
}

function kindOf(status) {
  if (status === 401 || status === 403) return "auth";
  if (status === 404) return "missing";
  if (status === 503) return "storage";
  if (status === 429) return "busy";
  if (status >= 500) return "server";
  return "bad";
}

// One GET of the JSON API with the stored read key. The Date header stands in
// for generatedAt where an endpoint has none: it is the server's clock.
async function getJson(path) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), REQUEST_TIMEOUT_MS);
  try {
    let res;
    try {
      res = await fetch(path, {
        // no-store keeps answers out of the browser's cache; the explicit max-age
        // still lets the Worker's edge cache (trending) answer, as long as the answer
        // is no older than one refresh. Without it the browser would send no-cache.
        // x-edgestats-client: the API refuses admin keys on the dashboard's requests (403).
        headers: {
          authorization: "Bearer " + state.key,
          accept: "application/json",
          "cache-control": "max-age=" + Math.round(refreshMs / 1000),
          "x-edgestats-client": "dashboard",
        },
        cache: "no-store",
        signal: controller.signal,
      });
    } catch (error) {
      const why = controller.signal.aborted ? "no answer within " + REQUEST_TIMEOUT_MS / 1000 + " s" : "the network request failed";
      throw new ApiError("unreachable", 0, why, path);
    }
    let body = null;
    try {
      body = await res.json();
    } catch (error) {
      body = null;
    }
    if (!res.ok) {
      const message = body && body.error && body.error.message ? body.error.message : "HTTP " + res.status;
      throw new ApiError(kindOf(res.status), res.status, message, path);
    }
    if (!body || typeof body !== "object") throw new ApiError("server", res.status, "the answer was not JSON", path);
    const date = Date.parse(res.headers.get("date") || "");
    return { body, receivedAt: Number.isFinite(date) ? date : Date.now() };
  } finally {
    clearTimeout(timer);
  }
}

// localStorage throws in some private modes; the page then keeps the key for this visit only.
const memoryStore = {};
const store = {
  get(name) {
    try {
      return window.localStorage.getItem(name);
    } catch (error) {
      return memoryStore[name] ?? null;
    }
  },
  set(name, value) {
    try {
      window.localStorage.setItem(name, value);
    } catch (error) {
      memoryStore[name] = value;
    }
  },
  remove(name) {
    try {
      window.localStorage.removeItem(name);
    } catch (error) {
      delete memoryStore[name];
    }
  },
};
`;
