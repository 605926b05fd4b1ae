// @ts-check
// SVG charts built with DOM calls; text stays in HTML where it must stay readable on a phone.
import { asArray, el, empty, finite, fmt, fmtTime, svg } from "./dom.browser.js";

/** @typedef {import("./types").BarItem} BarItem */

// Ranked bars: a list item per row, so long labels wrap on a narrow screen instead of shrinking the chart.
/**
 * @param {BarItem[]} items
 * @param {string} label
 */
export function rankedBars(items, label) {
  if (items.length === 0) return empty("Nothing here yet.");
  const max = Math.max(...items.map((item) => Math.abs(item.value))) || 1;
  const list = el("ol", { class: "bars", "aria-label": label });
  for (const item of items) {
    const share = Math.max(0.5, (Math.abs(item.value) / max) * 100);
    list.append(
      el("li", { "data-member": item.label }, [
        // aria-label is ignored on a plain span: the word goes in as visually hidden text
        el("span", { class: "rank" }, [el("span", { class: "sr-only", text: "rank " }), "#" + item.rank]),
        el("span", { class: "label", title: item.label, text: item.label }),
        svg(
          "svg",
          {
            class: "bar",
            viewBox: "0 0 100 10",
            preserveAspectRatio: "none",
            "aria-hidden": "true",
            focusable: "false",
          },
          [svg("rect", { width: share.toFixed(2), height: "10", rx: "1", class: item.value < 0 ? "negative" : null })],
        ),
        el("span", { class: "value", text: fmt(item.value) }),
      ]),
    );
  }
  return list;
}

export const MARKS = /** @type {const} */ ([
  { name: "p50", className: "p50" },
  { name: "p90", className: "p90" },
  { name: "p99", className: "p99" },
]);

// Bars on a linear value axis (sparse buckets leave gaps), a line per percentile; overlapping labels move down a row.
/**
 * @param {any} stats GET /v1/histograms/{histogram}
 * @param {string} unit
 */
export function histogramChart(stats, unit) {
  const buckets = asArray(stats.buckets).flatMap((b) => {
    const lower = finite(b.lower);
    const upper = finite(b.upper);
    const count = finite(b.count);
    return lower !== null && upper !== null && count !== null && upper >= lower ? [{ lower, upper, count }] : [];
  });
  if (buckets.length === 0) return empty("No observations in this range.");
  const W = 400,
    H = 160,
    TOP = 34,
    BOTTOM = 2;
  const lo = Math.min(...buckets.map((b) => b.lower));
  const hi = Math.max(...buckets.map((b) => b.upper));
  const span = hi - lo || 1;
  const maxCount = Math.max(...buckets.map((b) => b.count)) || 1;
  /** @param {number} v */
  const x = (v) => ((Math.min(Math.max(v, lo), hi) - lo) / span) * W;
  /** @param {number} c */
  const y = (c) => H - BOTTOM - (c / maxCount) * (H - TOP - BOTTOM);
  const suffix = unit ? " " + unit : "";
  const described = MARKS.map((m) => m.name + " " + fmt(stats[m.name]) + suffix).join(", ");
  const chart = svg("svg", {
    class: "hist",
    viewBox: "0 0 " + W + " " + H,
    role: "img",
    "aria-label":
      "Histogram of " +
      fmt(stats.count) +
      " observations from " +
      fmt(lo) +
      " to " +
      fmt(hi) +
      suffix +
      "; " +
      described,
  });
  for (const b of buckets) {
    const left = x(b.lower);
    const width = Math.max(1, x(b.upper) - left - 1);
    const top = y(b.count);
    chart.append(
      svg(
        "rect",
        {
          class: "bucket",
          x: (left + 0.5).toFixed(2),
          y: top.toFixed(2),
          width: width.toFixed(2),
          height: (H - BOTTOM - top).toFixed(2),
        },
        [svg("title", { text: fmt(b.lower) + "–" + fmt(b.upper) + suffix + ": " + fmt(b.count) })],
      ),
    );
  }
  /** @type {{ row: number, at: number }[]} */
  const placed = [];
  for (const mark of MARKS) {
    const value = finite(stats[mark.name]);
    if (value === null) continue;
    const at = x(value);
    let row = 0;
    while (placed.some((p) => p.row === row && Math.abs(p.at - at) < 34)) row++;
    placed.push({ row, at });
    const anchor = at < 18 ? "start" : at > W - 18 ? "end" : "middle";
    chart.append(
      svg("line", {
        class: "mark " + mark.className,
        x1: at.toFixed(2),
        x2: at.toFixed(2),
        y1: String(12 + row * 11),
        y2: String(H),
      }),
      svg("text", {
        class: "mark-label " + mark.className,
        x: at.toFixed(2),
        y: String(10 + row * 11),
        "text-anchor": anchor,
        text: mark.name,
      }),
    );
  }
  return chart;
}

// Online count over time: a filled line scaled to its own maximum.
/**
 * @param {unknown} points
 * @param {number} hours
 */
export function sparkline(points, hours) {
  const series = asArray(points)
    .flatMap((p) => {
      const at = finite(p.at);
      const online = finite(p.online);
      return at !== null && online !== null ? [{ at, online }] : [];
    })
    .sort((a, b) => a.at - b.at);
  const [head] = series;
  const tail = series[series.length - 1];
  if (head === undefined || tail === undefined) return empty("No samples yet: the per-minute job records them.");
  const samples = series.length;
  const W = 300,
    H = 48;
  const first = head.at;
  const last = tail.at;
  // A single sample still says something: draw it as a level line.
  if (series.length === 1) series.push({ at: first + 1, online: head.online });
  const max = Math.max(...series.map((p) => p.online));
  const min = Math.min(...series.map((p) => p.online));
  /** @param {number} at */
  const x = (at) => ((at - first) / (last - first || 1)) * W;
  /** @param {number} v */
  const y = (v) => H - 2 - (v / (max || 1)) * (H - 4);
  const line = series.map((p) => x(p.at).toFixed(1) + "," + y(p.online).toFixed(1)).join(" ");
  const area = "M0," + H + " L" + line.split(" ").join(" L") + " L" + W + "," + H + " Z";
  const figure = el("figure", { class: "spark", "data-samples": samples }, [
    svg(
      "svg",
      {
        viewBox: "0 0 " + W + " " + H,
        preserveAspectRatio: "none",
        role: "img",
        "aria-label":
          "Online over the last " +
          hours +
          " h: " +
          samples +
          " sample" +
          (samples === 1 ? "" : "s") +
          ", low " +
          fmt(min) +
          ", high " +
          fmt(max),
      },
      [
        svg("path", { class: "area", d: area }),
        svg("polyline", { class: "line", points: line, "vector-effect": "non-scaling-stroke" }),
      ],
    ),
    el("figcaption", {}, [
      el("span", { text: fmtTime(first) }),
      el("span", { text: "high " + fmt(max) }),
      el("span", { text: fmtTime(last) }),
    ]),
  ]);
  return figure;
}
