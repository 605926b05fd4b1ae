// @ts-check
// The read key lives only in localStorage and the Authorization header of the page's own requests.

export const KEY_STORAGE = "edgestats.dashboard.readKey";
export const SELECTION_STORAGE = "edgestats.dashboard.selection";
export const VIEW_STORAGE = "edgestats.dashboard.views";

// localStorage throws in some private modes; the page then keeps the key for this visit only.
/** @type {Record<string, string>} */
const memoryStore = {};
export const store = {
  /** @param {string} name */
  get(name) {
    try {
      return window.localStorage.getItem(name);
    } catch {
      return memoryStore[name] ?? null;
    }
  },
  /**
   * @param {string} name
   * @param {string} value
   */
  set(name, value) {
    try {
      window.localStorage.setItem(name, value);
    } catch {
      memoryStore[name] = value;
    }
  },
  /** @param {string} name */
  remove(name) {
    try {
      window.localStorage.removeItem(name);
    } catch {
      delete memoryStore[name];
    }
  },
};

export const refreshMs = Number(document.body.dataset.refreshMs) || 5000;

/**
 * @param {string} name
 * @returns {Record<string, string>}
 */
function loadChoices(name) {
  try {
    const parsed = JSON.parse(store.get(name) || "{}");
    return parsed && typeof parsed === "object" ? parsed : {};
  } catch {
    return {};
  }
}

export const state = {
  /** @type {string | null} */
  key: store.get(KEY_STORAGE),
  // A new key is written to localStorage only once the API has not refused it
  // (an admin key, refused with 403, is never stored).
  keySaved: true,
  // Bumped on every key change, so answers to an old key cannot act on a new one.
  generation: 0,
  /** @type {number | undefined} */
  timer: undefined,
  running: false,
  again: false,
  tick: 0,
  /** @type {number | null} */
  lastGood: null,
  // How long the last refresh's 429s asked to wait (Retry-After), in ms; 0 when none.
  waitMs: 0,
  // Set once GET /v1/ingest/lag said this deployment has no queue.
  noQueue: false,
  selection: loadChoices(SELECTION_STORAGE),
  // Each panel's view (its toggle, e.g. trending's Top / Rising), by panel id.
  views: loadChoices(VIEW_STORAGE),
};
