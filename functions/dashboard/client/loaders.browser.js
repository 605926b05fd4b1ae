// @ts-check
// A loader fetches all its panel shows and returns the nodes to swap in: one step, and the last content stays on failure.
import { ApiError, getJson } from "./api.browser.js";
import { MARKS, histogramChart, rankedBars, sparkline } from "./charts.browser.js";
import { asArray, el, empty, enc, finite, fmt, svg } from "./dom.browser.js";

/** @typedef {import("./types").Loader} Loader */
/** @typedef {import("./types").PanelId} PanelId */

// Each seasonal board's chosen season, "current" or "previous", by board: a choice on one board does not carry to another.
/** @type {Record<string, string>} */
const LB_SEASONS = {};

// Counters written only per period (no plain counts): the kind of read (COUNTER_READS) that last had
// items, by counter; read first on the next refresh.
/** @type {Record<string, string>} */
const COUNTER_KIND = {};

/**
 * The reads a counter panel may show, in the order tried while the one shown is empty: the all-time
 * top, then the current UTC period's, as written: `period=day` reads only what was written per day
 * (rollups are not readable), so a counter written per hour is read as today's hours (review 22:
 * it showed nothing), and per week or month as this week's or month's bucket.
 * @typedef {{ kind: string, query: (now: number) => string, badge: string, what: string }} CounterRead
 */
// The server's clock less the browser's, as the last counter answer's Date header said: today's
// hours start at the server's UTC midnight (a browser clock past it would send `from` after `to`: a 400).
let serverSkew = 0;

/** @type {CounterRead} */
const ALL_TIME = { kind: "", query: () => "", badge: "", what: "" };
/** @type {CounterRead[]} */
const COUNTER_READS = [
  ALL_TIME,
  {
    kind: "day",
    query: () => "&period=day",
    badge: "today (UTC)",
    what: "today's bucket (period=day, since 00:00 UTC)",
  },
  {
    kind: "hour",
    query: (now) => "&period=hour&from=" + (now - (now % 86400000)),
    badge: "today (UTC)",
    what: "today's hours (period=hour, since 00:00 UTC)",
  },
  { kind: "week", query: () => "&period=week", badge: "this week (UTC)", what: "this ISO week's bucket (period=week)" },
  {
    kind: "month",
    query: () => "&period=month",
    badge: "this month (UTC)",
    what: "this month's bucket (period=month)",
  },
];

/**
 * @param {string} board
 * @param {string} chosen
 * @param {string} id
 * @param {() => void} rerender
 */
function seasonPicker(board, chosen, id, rerender) {
  const picker = el("select", { class: "season", "aria-label": "Season", title: "Season " + id }, [
    el("option", { value: "current", text: chosen === "current" ? "season " + id : "current season" }),
    el("option", { value: "previous", text: chosen === "previous" ? "season " + id : "previous season" }),
  ]);
  picker.value = chosen;
  picker.addEventListener("change", () => {
    LB_SEASONS[board] = picker.value;
    rerender();
  });
  return picker;
}

// ▲ places gained (▼ lost) since the previous rank: the previous season's final one, or on a board
// without seasons the daily snapshot's (docs/leaderboards.md).
/**
 * @param {any} row
 * @param {boolean} seasonal
 */
function movement(row, seasonal) {
  const rank = finite(row.rank);
  const prev = finite(row.previousRank);
  const best = finite(row.bestRank);
  const title = best === null ? "" : (seasonal ? "best rank this season: " : "best rank: ") + best;
  if (prev === null || rank === null) return el("td", { class: "num move", title, text: "" });
  const delta = prev - rank;
  const text = delta > 0 ? "▲" + delta : delta < 0 ? "▼" + -delta : "=";
  return el("td", { class: "num move " + (delta > 0 ? "up" : delta < 0 ? "down" : "same"), title, text });
}

/**
 * The trending answers' `exact` flag, or `approximate ±maxError`.
 * @param {any} body
 * @param {string} exactTitle
 * @param {string} approximateTitle
 */
function exactFlag(body, exactTitle, approximateTitle) {
  return body.exact === true
    ? el("span", { class: "badge ok", "data-exact": "true", title: exactTitle, text: "exact" })
    : el("span", {
        class: "badge warn",
        "data-exact": "false",
        title: approximateTitle,
        text: "approximate ±" + fmt(body.maxError),
      });
}

// The trending panel's Rising view: the current hour's members most above their own 24 h rate (docs/trending.md).
/** @param {string} name */
async function rising(name) {
  // No `baseline`: the API's default is 24 h, or the retention when shorter (24h is a 400 then: review 22).
  const path = "/v1/trending/" + enc(name) + "/rising?n=10";
  let answer;
  try {
    answer = await getJson(path);
  } catch (caught) {
    // An older deployment has top but no rising: say so, and keep the panel usable (the toggle leads back).
    if (!(caught instanceof ApiError) || caught.kind !== "missing") throw caught;
    return { generatedAt: Date.now(), meta: [], body: empty("Rising is not available on this deployment.") };
  }
  const { body, receivedAt } = answer;
  const hours = finite(body.baselineHours) ?? 24;
  const elapsed = finite(body.elapsed);
  const meta = [
    exactFlag(
      body,
      "No baseline hour was compacted: every baseline is exact",
      "Baselines may be low by up to maxError (baseline hours were compacted), so scores may be too high",
    ),
    el("span", { text: "baseline " + hours + " h" }),
  ];
  if (elapsed !== null)
    meta.push(
      el("span", {
        title: "Baselines are scaled to the part of the current hour that has passed",
        text: Math.round(elapsed * 100) + "% of the hour",
      }),
    );
  const generatedAt = finite(body.generatedAt) ?? receivedAt;
  const items = asArray(body.items);
  if (items.length === 0)
    return { generatedAt, meta, body: empty("Nothing is above its usual rate this hour."), csv: path };
  const rows = items.map((i) => {
    const ratio = finite(i.ratio);
    return el("tr", { "data-member": String(i.member) }, [
      el("td", { class: "member", title: String(i.member), text: String(i.member) }),
      el("td", { class: "num", text: fmt(i.count) }),
      el("td", { class: "num", text: fmt(i.baseline) }),
      ratio === null
        ? el("td", { class: "num ratio new", title: "No count in any baseline hour", text: "new" })
        : el("td", { class: "num ratio", text: "×" + fmt(ratio) }),
      el("td", { class: "num score", text: fmt(i.score) }),
    ]);
  });
  const table = el("table", { class: "board rising" }, [
    el("caption", { class: "sr-only", text: "Members of " + name + " rising this hour, highest score first" }),
    el(
      "thead",
      {},
      el("tr", {}, [
        el("th", { scope: "col", text: "Member" }),
        el("th", { scope: "col", class: "num", text: "Now", title: "Count in the current hour so far" }),
        el("th", {
          scope: "col",
          class: "num",
          text: "Usual",
          title: "Baseline: its average hourly count over the previous " + hours + " h, scaled to the hour so far",
        }),
        el("th", { scope: "col", class: "num", text: "Ratio", title: "Now ÷ usual; new when it had no count before" }),
        el("th", {
          scope: "col",
          class: "num",
          text: "Score",
          title: "(now − usual) / √(usual + 1): how far above its usual rate",
        }),
      ]),
    ),
    el("tbody", {}, rows),
  ]);
  return { generatedAt, meta, body: table, csv: path };
}

/** @satisfies {Record<PanelId, Loader>} */
export const LOADERS = {
  /**
   * @param {string} name
   * @param {() => void} _rerender
   * @param {string} view "top" or "rising" (the panel's toggle)
   */
  async trending(name, _rerender, view) {
    if (view === "rising") return rising(name);
    // No `window`: the API's default is 24 h, or the retention when shorter (24h is a 400 then: review 22).
    const path = "/v1/trending/" + enc(name) + "/top?n=10";
    const { body, receivedAt } = await getJson(path);
    const hours = finite(body.window && body.window.hours) ?? 24;
    const items = asArray(body.items).map((i) => ({
      rank: i.rank,
      label: String(i.member),
      value: finite(i.count) ?? 0,
    }));
    return {
      generatedAt: finite(body.generatedAt) ?? receivedAt,
      meta: [
        exactFlag(
          body,
          "The provably true top 10 with true counts",
          "Counts may be off by up to maxError (older hours were compacted)",
        ),
        el("span", { text: "window " + hours + " h" }),
      ],
      body: rankedBars(items, "Top members of " + name + " over " + hours + " h"),
      csv: path,
    };
  },

  /** @param {string} name */
  async counter(name) {
    const top = "/v1/counters/" + enc(name) + "/top?n=10";
    /** @param {string} at */
    const read = async (at) => {
      const got = await getJson(at);
      serverSkew = got.receivedAt - Date.now();
      return got;
    };
    // One read a refresh: the kind last shown first, the others in order only while it is empty.
    let shown = COUNTER_READS.find((r) => r.kind === COUNTER_KIND[name]) ?? ALL_TIME;
    const others = COUNTER_READS.filter((r) => r !== shown);
    let path = top + shown.query(Date.now() + serverSkew);
    let answer = await read(path);
    for (const other of others) {
      if (asArray(answer.body.items).length > 0) break;
      // the server's time as the read before told it
      const otherPath = top + other.query(Date.now() + serverSkew);
      const next = await read(otherPath);
      if (asArray(next.body.items).length > 0) [shown, path, answer] = [other, otherPath, next];
    }
    COUNTER_KIND[name] = shown.kind;
    const { body, receivedAt } = answer;
    const items = asArray(body.items).map((i) => ({
      rank: i.rank,
      label: String(i.member),
      value: finite(i.score) ?? 0,
    }));
    /** @type {Node[]} */
    const meta = [el("span", { text: items.length + " shown" })];
    if (shown.kind)
      meta.push(
        el("span", {
          class: "badge",
          title: "This counter has no all-time counts: " + shown.what + " is shown",
          text: shown.badge,
        }),
      );
    return {
      generatedAt: finite(body.generatedAt) ?? receivedAt,
      meta,
      body: rankedBars(items, "Top members of counter " + name + (shown.kind ? " " + shown.badge : "")),
      csv: path,
      csvTag: shown.kind || undefined,
    };
  },

  /**
   * @param {string} name
   * @param {() => void} rerender
   */
  async leaderboard(name, rerender) {
    let season = LB_SEASONS[name] ?? "current";
    let path = "/v1/leaderboards/" + enc(name) + "?page=1&limit=10&season=" + enc(season);
    let res;
    try {
      res = await getJson(path);
    } catch (caught) {
      // a board without seasons has no previous one: show its ranking instead
      if (!(caught instanceof ApiError) || caught.kind !== "missing" || season === "current") throw caught;
      season = "current";
      path = "/v1/leaderboards/" + enc(name) + "?page=1&limit=10";
      res = await getJson(path);
    }
    const { body, receivedAt } = res;
    const items = asArray(body.items);
    const total = finite(body.total);
    /** @type {Node[]} */
    const meta = [el("span", { text: (total === null ? "?" : fmt(total)) + " players" })];
    const seasonal = typeof body.season === "string";
    if (seasonal) meta.push(seasonPicker(name, season, body.season, rerender));
    // A previous season's file must not take the current one's name (the API names it by path only).
    const csvTag = seasonal && season === "previous" ? "season-" + body.season : undefined;
    if (items.length === 0)
      return { generatedAt: receivedAt, meta, body: empty("No players in this season yet."), csv: path, csvTag };
    const rows = items.map((i) =>
      el("tr", { "data-player": String(i.player) }, [
        el("td", { class: "num", text: String(i.rank) }),
        el("td", { class: "player", text: String(i.player) }),
        el("td", { class: "name", text: i.name === undefined || i.name === null ? "" : String(i.name) }),
        el("td", { class: "num", text: fmt(i.score) }),
        movement(i, seasonal),
      ]),
    );
    const table = el("table", { class: "board" }, [
      el("caption", { class: "sr-only", text: "Leaderboard " + name + ", page 1" }),
      el(
        "thead",
        {},
        el("tr", {}, [
          el("th", { scope: "col", class: "num", text: "Rank" }),
          el("th", { scope: "col", text: "Player" }),
          el("th", { scope: "col", text: "Name" }),
          el("th", { scope: "col", class: "num", text: "Score" }),
          el("th", {
            scope: "col",
            class: "num",
            text: "Move",
            // review 22: a board without seasons moves against its daily snapshot, not a season
            title: seasonal
              ? "Places gained since the previous season's final ranking; best rank this season on hover"
              : "Places gained since the daily snapshot (taken after 00:00 UTC); best rank on hover",
          }),
        ]),
      ),
      el("tbody", {}, rows),
    ]);
    return { generatedAt: finite(body.generatedAt) ?? receivedAt, meta, body: table, csv: path, csvTag };
  },

  /** @param {string} name */
  async histogram(name) {
    const path = "/v1/histograms/" + enc(name);
    const { body, receivedAt } = await getJson(path);
    const unit = typeof body.unit === "string" ? body.unit : "";
    const suffix = unit ? " " + unit : "";
    const count = finite(body.count) ?? 0;
    const meta = [el("span", { text: fmt(count) + " observations" })];
    if (count === 0)
      return {
        generatedAt: finite(body.generatedAt) ?? receivedAt,
        meta,
        body: empty("No observations in this range."),
        csv: path,
      };
    const stats = el(
      "dl",
      { class: "stats small" },
      [
        ["min", body.min],
        ["mean", body.mean],
        ["max", body.max],
      ].map(([label, value]) => el("div", {}, [el("dt", { text: label }), el("dd", { text: fmt(value) + suffix })])),
    );
    const legend = el(
      "ul",
      { class: "legend", "aria-label": "Percentiles" },
      MARKS.map((m) =>
        el("li", { "data-mark": m.name }, [
          svg(
            "svg",
            { class: "swatch " + m.className, viewBox: "0 0 10 10", "aria-hidden": "true" },
            svg("rect", { width: "10", height: "10" }),
          ),
          el("span", { text: m.name + " " + fmt(body[m.name]) + suffix }),
        ]),
      ),
    );
    return {
      generatedAt: finite(body.generatedAt) ?? receivedAt,
      meta,
      body: el("div", {}, [histogramChart(body, unit), legend, stats]),
      csv: path,
    };
  },

  /** @param {string} name */
  async presence(name) {
    const hours = 24;
    // History is drawn when it is there; the numbers alone still make a panel.
    const historyPath = "/v1/presence/" + enc(name) + "/history?hours=" + hours;
    const [now, history] = await Promise.all([
      getJson("/v1/presence/" + enc(name)),
      getJson(historyPath).catch((error) => {
        if (error.kind === "missing") return null;
        throw error;
      }),
    ]);
    const b = now.body;
    /** @type {[key: string, short: string | null, long: string, value: unknown][]} */
    const figures = [
      ["online", null, "Online now", b.online],
      ["pcu", "PCU", "peak concurrent users since 00:00 UTC", b.peakToday],
      ["au", "AU", "active users (distinct ids) since 00:00 UTC", b.activeToday],
      ["nu", "NU", "new users (first seen) since 00:00 UTC", b.newToday],
    ];
    const stats = el(
      "dl",
      { class: "stats" },
      figures.map(([key, short, long, value]) =>
        el("div", { "data-stat": key }, [
          // Buckets are UTC days (API.md): say so where touch screens show it, not only in the title.
          el("dt", {}, short ? [el("abbr", { title: long, text: short }), " today (UTC)"] : long),
          el("dd", { text: fmt(value) }),
        ]),
      ),
    );
    // Samples are per minute (the trim job); the line ends at the live count so it agrees with "Online now".
    const points = history ? asArray(history.body.points).slice() : [];
    const online = finite(b.online);
    const lastAt = points.length ? finite(points[points.length - 1].at) : null;
    // Only after a sample: with none the trim job has not run for this room (is it scheduled?), and
    // the live count alone drew a line of one sample instead of saying so (review 22)
    if (history && online !== null && lastAt !== null && now.receivedAt > lastAt)
      points.push({ at: now.receivedAt, online });
    const spark = history ? sparkline(points, hours) : empty("History is not available on this deployment.");
    const timeout = finite(b.timeoutSeconds);
    return {
      generatedAt: finite(b.generatedAt) ?? now.receivedAt,
      meta: timeout === null ? [] : [el("span", { text: "offline after " + fmt(timeout) + " s idle" })],
      body: el("div", {}, [stats, el("h3", { class: "sub", text: "Online, last " + hours + " h" }), spark]),
      // the figures are one object; the history is the list behind the panel
      csv: history ? historyPath : undefined,
    };
  },
};
