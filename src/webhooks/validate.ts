import type { FieldIssue } from "../errors.ts";
import { NAME_RULE, assertName, invalid, isName } from "../validation.ts";

/** The events a webhook may subscribe to. */
export const EVENT_TYPES = [
  "trending.entered",
  "trending.left",
  "trending.rising",
  "presence.peak",
  "leaderboard.leader",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** What a filter names: a stream (trending events), a room (presence) or a board (leaderboards). */
export type FilterKind = "stream" | "room" | "board";
export type Filter = { stream: string } | { room: string } | { board: string };

/** The filter each event is matched by; detection of `required` ones is bounded by the subscribed names. */
export const EVENT_FILTERS: Record<EventType, { kind: FilterKind; required: boolean }> = {
  "trending.entered": { kind: "stream", required: true },
  "trending.left": { kind: "stream", required: true },
  "trending.rising": { kind: "stream", required: false },
  "presence.peak": { kind: "room", required: true },
  "leaderboard.leader": { kind: "board", required: false },
};

/** Most webhooks per deployment: every detection step reads all of them. */
export const MAX_WEBHOOKS = 20;
export const MIN_SECRET_LENGTH = 16;
export const MAX_SECRET_LENGTH = 256;
export const MAX_URL_LENGTH = 2048;
/** Top-N size compared by `trending.entered` / `trending.left`. */
export const DEFAULT_TOP_N = 10;
export const MAX_TOP_N = 100;
/** Least trending.rising score sent by default: (c − b) / √(b + 1) ≥ 3, about three standard deviations of a Poisson count. */
export const DEFAULT_RISING_THRESHOLD = 3;
export const MAX_RISING_THRESHOLD = 1e6;

/** A webhook as `PUT /v1/webhooks/{name}` takes it. */
export interface WebhookInput {
  url: string;
  events: EventType[];
  /**
   * The one stream, room or board the events are about; trending.entered, trending.left and
   * presence.peak need it (EVENT_FILTERS). @default undefined: trending.rising of every stream,
   * leaderboard.leader of every board
   */
  filter?: Filter | undefined;
  /** Top-N compared by trending.entered/left. @default 10 */
  n?: number | undefined;
  /** Least score of the trending.rising events sent (only with that event). @default 3 */
  threshold?: number | undefined;
  secret: string;
}

const LOCAL_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** Why `url` cannot receive webhooks, or null. http:// only on this machine, and only when allowed. */
export function urlProblem(url: string, allowLocalHttp: boolean): string | null {
  if (url.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "must be an absolute URL";
  }
  if (parsed.username || parsed.password) return "must not contain credentials";
  const local = LOCAL_HOSTS.has(parsed.hostname);
  if (parsed.protocol === "http:" && allowLocalHttp && local) return null;
  if (parsed.protocol !== "https:")
    return allowLocalHttp ? "must be https:// (http:// only on localhost or 127.0.0.1)" : "must be https://";
  // events go out from the deployment (or the library's host): never to its own or a private network
  if (!(allowLocalHttp && local) && internalHost(parsed.hostname))
    return "must not name this machine or a private, link-local or reserved address";
  return null;
}

/**
 * Whether a URL's host (as WHATWG URL normalises it: IPv4 in dotted decimal whatever way it was
 * written, IPv6 in brackets, lowercase) is `localhost` or an IP literal of a loopback, private,
 * link-local, CGNAT, documentation, benchmarking, unspecified, multicast or other reserved range
 * (6to4 by the IPv4 address inside it). Names are not resolved: a public name
 * pointing inside stays the receiver's DNS problem.
 */
function internalHost(written: string): boolean {
  // `localhost.` is the same name written fully qualified, and URL keeps the dot (it drops it only
  // from an IPv4 address): it got past this check (found in review 3).
  const host = written.endsWith(".") ? written.slice(0, -1) : written;
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  const v4 = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(host);
  if (v4) return internalV4(Number(v4[1]), Number(v4[2]), Number(v4[3]));
  if (!host.startsWith("[")) return false;
  const h = hextets(host.slice(1, -1));
  if (!h) return true;
  const [h0, h1, h2] = h as [number, number, number];
  // 6to4 (2002::/16) carries an IPv4 address in its next 32 bits: that address decides (review 7:
  // [2002:7f00:1::] is 127.0.0.1). Judged on the eight hextets, not the text: URL writes zero runs
  // as `::`, and a regex over the text let 6to4 of any x.y.0.0 through (review 18: [2002:c0a8::1])
  if (h0 === 0x2002) return internalV4(h1 >> 8, h1 & 255, h2 >> 8);
  return (
    // ::/8, reserved by the IETF: ::, ::1, IPv4-compatible (deprecated, e.g. [::127.0.0.1]),
    // IPv4-mapped and -translated (the IPv4 address inside decides, so refuse them all) and NAT64
    // 64:ff9b::/96 and 64:ff9b:1::/48 (of an IPv4 address)
    h0 < 0x100 ||
    (h0 === 0x2001 && h1 === 0) || // Teredo: an obfuscated IPv4 address inside, no receiver uses one
    (h0 === 0x2001 && h1 === 0xdb8) || // documentation
    (h0 === 0x100 && h1 === 0 && h2 === 0 && h[3] === 0) || // discard-only 100::/64
    (h0 & 0xfe00) === 0xfc00 || // unique local fc00::/7
    (h0 & 0xffc0) >= 0xfe80 || // link-local fe80::/10 and the deprecated site-local fec0::/10
    h0 >= 0xff00 // multicast
  );
}

/** The eight 16-bit groups of an IPv6 address as URL writes it (hex, `::` for a zero run); null if it is not one. */
function hextets(v6: string): number[] | null {
  const [head = "", tail, extra] = v6.split("::");
  if (extra !== undefined) return null;
  const part = (text: string) =>
    text === "" ? [] : text.split(":").map((x) => (/^[0-9a-f]{1,4}$/.test(x) ? parseInt(x, 16) : NaN));
  const left = part(head);
  const right = tail === undefined ? [] : part(tail);
  const fill = 8 - left.length - right.length;
  if ((tail === undefined ? fill !== 0 : fill < 1) || [...left, ...right].some(Number.isNaN)) return null;
  return [...left, ...Array<number>(fill).fill(0), ...right];
}

/**
 * An IPv4 address (its first three bytes) in a range no public receiver has: this host, private,
 * loopback, CGNAT, link-local, IETF protocol assignments, documentation (TEST-NET-1..3),
 * benchmarking 198.18.0.0/15, the 6to4 relay anycast, multicast and reserved (IANA's
 * special-purpose registry; review 7 found 198.18.0.1 accepted).
 */
function internalV4(a: number, b: number, c: number): boolean {
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 100 && b >= 64 && b <= 127) ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0 && (c === 0 || c === 2)) ||
    (a === 192 && b === 88 && c === 99) ||
    (a === 198 && (b === 18 || b === 19)) ||
    (a === 198 && b === 51 && c === 100) ||
    (a === 203 && b === 0 && c === 113) ||
    a >= 224
  );
}

/** Checks a webhook's settings; throws one ValidationError listing every problem. */
export function checkWebhook(name: string, input: WebhookInput, allowLocalHttp: boolean): void {
  assertName(name, "name");
  const issues: FieldIssue[] = [];
  const url = typeof input.url === "string" ? urlProblem(input.url, allowLocalHttp) : "must be a string";
  if (url) issues.push({ path: "url", message: url });
  const events = Array.isArray(input.events) ? input.events : [];
  if (events.length === 0)
    issues.push({ path: "events", message: `must list 1..${EVENT_TYPES.length} of ${EVENT_TYPES.join(", ")}` });
  events.forEach((e, i) => {
    if (!(EVENT_TYPES as readonly string[]).includes(e))
      issues.push({ path: `events.${i}`, message: `must be one of ${EVENT_TYPES.join(", ")}` });
    else if (events.indexOf(e) !== i) issues.push({ path: `events.${i}`, message: "is listed twice" });
  });
  // a library caller's filter may be any value: `in` throws on a string or number (review 20)
  const isObject = typeof input.filter === "object" && input.filter !== null && !Array.isArray(input.filter);
  const kind = isObject ? filterKind(input.filter as Filter) : null;
  if (input.filter !== undefined) {
    const keys = isObject ? Object.keys(input.filter as Filter) : [];
    if (keys.length !== 1 || kind === null)
      issues.push({ path: "filter", message: "must name exactly one of stream, room or board" });
    else if (!isName(filterName(input.filter))) issues.push({ path: `filter.${kind}`, message: NAME_RULE });
  }
  for (const [i, e] of events.entries()) {
    const rule = EVENT_FILTERS[e];
    if (!rule || issues.some((x) => x.path === "filter")) continue;
    if (kind !== null && kind !== rule.kind)
      issues.push({ path: `events.${i}`, message: `${e} is filtered by ${rule.kind}, not ${kind}` });
    else if (kind === null && rule.required)
      issues.push({
        path: "filter",
        message: `${e} needs filter.${rule.kind}: detection only watches subscribed ${rule.kind}s`,
      });
  }
  if (input.n !== undefined && (!Number.isInteger(input.n) || input.n < 1 || input.n > MAX_TOP_N)) {
    issues.push({ path: "n", message: `must be an integer from 1 to ${MAX_TOP_N}` });
  }
  if (input.threshold !== undefined) {
    if (
      typeof input.threshold !== "number" ||
      !Number.isFinite(input.threshold) ||
      input.threshold < 0 ||
      input.threshold > MAX_RISING_THRESHOLD
    ) {
      issues.push({ path: "threshold", message: `must be a number from 0 to ${MAX_RISING_THRESHOLD}` });
    } else if (!events.includes("trending.rising")) {
      issues.push({
        path: "threshold",
        message: "applies to trending.rising only; subscribe to it or leave threshold out",
      });
    }
  }
  if (
    typeof input.secret !== "string" ||
    input.secret.length < MIN_SECRET_LENGTH ||
    input.secret.length > MAX_SECRET_LENGTH
  ) {
    issues.push({ path: "secret", message: `must be ${MIN_SECRET_LENGTH}..${MAX_SECRET_LENGTH} characters` });
  }
  if (issues.length > 0) invalid(issues);
}

export function filterKind(filter: Filter): FilterKind | null {
  if ("stream" in filter) return "stream";
  if ("room" in filter) return "room";
  if ("board" in filter) return "board";
  return null;
}

export function filterName(filter: Filter): string {
  const value = Object.values(filter)[0] as unknown;
  return typeof value === "string" ? value : "";
}
