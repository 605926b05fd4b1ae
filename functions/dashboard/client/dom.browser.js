// @ts-check
// DOM builders and formatting. API data reaches the page only through textContent and setAttribute.

const SVG_NS = "http://www.w3.org/2000/svg";

/** @typedef {import("./types").Attrs} Attrs */
/** @typedef {import("./types").Child} Child */

/**
 * @template {Element} E
 * @param {E} node
 * @param {Attrs} [attrs]
 * @param {Child | Child[]} [children]
 * @returns {E}
 */
function fill(node, attrs, children) {
  const given = attrs || {};
  for (const name of Object.keys(given)) {
    const value = given[name];
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") node.textContent = String(value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  const list = children === undefined ? [] : Array.isArray(children) ? children : [children];
  for (const child of list) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === "object" ? child : String(child));
  }
  return node;
}

/**
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs} [attrs]
 * @param {Child | Child[]} [children]
 * @returns {HTMLElementTagNameMap[K]}
 */
export function el(tag, attrs, children) {
  return fill(document.createElement(tag), attrs, children);
}

/**
 * @template {keyof SVGElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs} [attrs]
 * @param {Child | Child[]} [children]
 * @returns {SVGElementTagNameMap[K]}
 */
export function svg(tag, attrs, children) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

const numberFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });
// Below 1, two fraction digits would turn 0.0012 s into "0": keep 3 significant digits there.
const smallFormat = new Intl.NumberFormat(undefined, { maximumSignificantDigits: 3 });

/** A number for people ("–" when the API sent none). @param {unknown} value */
export function fmt(value) {
  const n = typeof value === "string" ? Number(value) : value;
  if (typeof n !== "number" || !Number.isFinite(n)) return "–";
  return (Math.abs(n) < 1 ? smallFormat : numberFormat).format(n);
}

/** @param {number} ms */
export function fmtTime(ms) {
  return new Date(ms).toLocaleTimeString(undefined, {
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    hour12: false,
  });
}

/**
 * @param {number} ms
 * @param {string} [prefix]
 */
export function timeEl(ms, prefix) {
  return el("time", { datetime: new Date(ms).toISOString(), text: (prefix || "") + fmtTime(ms) });
}

/**
 * The number in an API field, or null when it holds none.
 * @param {unknown} value
 * @returns {number | null}
 */
export function finite(value) {
  const n = typeof value === "string" ? Number(value) : value;
  return typeof n === "number" && Number.isFinite(n) ? n : null;
}

// The API encodes an empty list as [] but a Lua-side empty table may come out as {}.
/**
 * @param {unknown} value
 * @returns {any[]}
 */
export function asArray(value) {
  return Array.isArray(value) ? value : [];
}

/** @param {string} name */
export function enc(name) {
  return encodeURIComponent(name);
}

/** @param {string} message */
export function empty(message) {
  return el("p", { class: "empty", text: message });
}

/**
 * A list endpoint may answer names or objects carrying the name.
 * @param {unknown} list
 * @returns {string[]}
 */
export function namesOf(list) {
  /** @type {string[]} */
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
