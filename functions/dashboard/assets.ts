import { CLIENT_JS } from "./client/index.ts";
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
  body: string;
  /** Content hash: the `v` query of the page's links and the ETag. */
  readonly hash: string;
}

function asset(path: string, contentType: string, body: string): Asset {
  let hash: string | undefined;
  // Hashed on first use, not while the module loads (cold start).
  return {
    path,
    contentType,
    body,
    get hash() {
      return (hash ??= contentHash(body));
    },
  };
}

export const SCRIPT = asset("/dashboard.js", "text/javascript; charset=utf-8", CLIENT_JS);
export const STYLES = asset("/dashboard.css", "text/css; charset=utf-8", DASHBOARD_CSS);

/** The URL the page links: versioned, so the asset itself may be cached for a year. */
export function versionedUrl(a: Asset): string {
  return `${a.path}?v=${a.hash}`;
}
