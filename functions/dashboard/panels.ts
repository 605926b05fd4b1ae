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
  /**
   * Other views of the same data, as a toggle in the panel's header (the first is the default); the
   * client's loader gets the chosen id, and the CSV button exports the view shown.
   */
  views?: readonly { id: string; label: string; title: string }[];
}

export const PANELS: readonly PanelSpec[] = [
  {
    id: "trending",
    title: "Trending",
    blurb: "Top 10 over the last 24 h (the retention, if shorter), or what is rising this hour above its usual rate",
    list: "/v1/trending",
    field: "streams",
    noun: "Stream",
    hint: "No streams yet: POST /v1/trending/{stream}/events.",
    views: [
      { id: "top", label: "Top", title: "The top 10 members over the last 24 h" },
      {
        id: "rising",
        label: "Rising",
        title: "Members of the current hour most above their own rate over the previous 24 h",
      },
    ],
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
