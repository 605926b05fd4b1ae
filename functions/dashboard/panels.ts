/**
 * The dashboard's panels: one per feature. The page renders a section per
 * entry and hands the list endpoint and its field to the client script as
 * data attributes, so the server and the browser agree on one table.
 */
export interface PanelSpec {
  /** Element id suffix and the client's loader name. */
  id: "trending" | "presence" | "leaderboard" | "histogram" | "counter";
  title: string;
  /** What the panel shows, one line under the title. */
  blurb: string;
  /** The list endpoint that feeds the picker. */
  list: string;
  /** The field of the list endpoint's answer that holds the names. */
  field: string;
  /** Label of the picker ("Stream", "Room", ...). */
  noun: string;
  /** Shown when the list is empty: how to put data in. */
  hint: string;
}

export const PANELS: readonly PanelSpec[] = [
  {
    id: "trending",
    title: "Trending",
    blurb: "Top 10 over the last 24 h",
    list: "/v1/trending",
    field: "streams",
    noun: "Stream",
    hint: "No streams yet: POST /v1/trending/{stream}/events.",
  },
  {
    id: "presence",
    title: "Presence",
    blurb: "Online now, today's peak, active and new users, last 24 h",
    list: "/v1/presence",
    field: "rooms",
    noun: "Room",
    hint: "No rooms yet: POST /v1/presence/{room}/heartbeats.",
  },
  {
    id: "leaderboard",
    title: "Leaderboard",
    blurb: "First page, with ranks and movement",
    list: "/v1/leaderboards",
    field: "boards",
    noun: "Board",
    hint: "No boards yet: PUT /v1/leaderboards/{board}/players/{player}.",
  },
  {
    id: "histogram",
    title: "Histogram",
    blurb: "Distribution with p50, p90 and p99",
    list: "/v1/histograms",
    field: "histograms",
    noun: "Histogram",
    hint: "No histograms yet: POST /v1/histograms/{histogram}/observations.",
  },
  {
    id: "counter",
    title: "Counter",
    blurb: "Top 10 members",
    list: "/v1/counters",
    field: "counters",
    noun: "Counter",
    hint: "No counters yet: POST /v1/counters/{counter}/incr.",
  },
];

/** Milliseconds between two refreshes of the page's data. */
export const REFRESH_MS = 5000;
