/**
 * Shapes the dashboard's browser modules share, for tsc only (JSDoc imports
 * them as `import("./types").X`). Kept out of the modules so the text the
 * Worker bundles and serves stays small; nothing here is served.
 */

/** An attribute value for el()/svg(): `true` sets an empty attribute; null, undefined and false set nothing. */
export type AttrValue = string | number | boolean | null | undefined;
/** Attributes for el()/svg(); the `text` key sets textContent instead. */
export type Attrs = Record<string, AttrValue>;
/** A child for el()/svg(): nodes as they are, strings and numbers as text; null, undefined and false are skipped. */
export type Child = Node | string | number | null | undefined | false;

/** Why an API call failed, as the page reacts to it. */
export type ErrorKind = "auth" | "missing" | "storage" | "busy" | "server" | "bad" | "unreachable";

/** A 2xx JSON answer. */
export interface Answer {
  /** The API's JSON object, read defensively (finite(), asArray(), String()). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers of every endpoint; each field is checked where read
  body: any;
  /** The server's Date header (its clock), else the browser's. */
  receivedAt: number;
}

/** One bar of rankedBars(). */
export interface BarItem {
  rank: unknown;
  label: string;
  value: number;
}

/** What a loader hands the panel: swapped in at once. */
export interface View {
  generatedAt: number;
  meta: (Node | string)[];
  body: Node;
  /** The list endpoint behind what the panel shows, for its CSV download. */
  csv?: string;
  /** Added to the API's file name when the path alone does not say what was shown (e.g. `season-2026-11`). */
  csvTag?: string | undefined;
}

/** The panels, as functions/dashboard/panels.ts names them. */
export type PanelId = "trending" | "presence" | "leaderboard" | "histogram" | "counter";

/**
 * Fetches everything a panel shows.
 * @param name the picked stream, room, board, histogram or counter
 * @param rerender loads the panel again (after a choice inside it, e.g. the season)
 * @param view the view chosen with the panel's toggle (functions/dashboard/panels.ts `views`), "" when it has none
 */
export type Loader = (name: string, rerender: () => void, view: string) => Promise<View>;

/** A panel of the page and its bookkeeping. */
export interface Panel {
  id: PanelId;
  /** The list endpoint that feeds the picker. */
  list: string;
  /** Its answer's field holding the names. */
  field: string;
  /** Shown when the list is empty. */
  hint: string;
  section: HTMLElement;
  picker: HTMLSelectElement;
  meta: HTMLElement;
  body: HTMLElement;
  csvButton: HTMLButtonElement;
  /** The view toggle's buttons (data-view), empty when the panel has one view. */
  viewButtons: HTMLButtonElement[];
  /** The list endpoint behind what the panel shows (its CSV download). */
  csv: string | undefined;
  /** The shown view's csvTag. */
  csvTag: string | undefined;
  names: string[] | null;
  /** Bumped per load, so an older answer never overwrites a newer one. */
  seq: number;
  hasData: boolean;
}
