/** Two small hand-written SVG charts: grouped horizontal bars and log-log lines. No dependencies. */
const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2"];

export interface Bars {
  title: string;
  /** Row labels. */
  rows: string[];
  /** One series per side; values per row (NaN or null = missing). */
  series: { name: string; values: (number | null)[] }[];
  /** Log scale (values ≤ 0 are drawn at the axis). */
  log?: boolean;
  unit: string;
}

export interface Lines {
  title: string;
  xLabel: string;
  yLabel: string;
  series: { name: string; points: [number, number][] }[];
}

function ticks(min: number, max: number): number[] {
  const out: number[] = [];
  for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++) out.push(10 ** e);
  return out;
}

/** Grouped horizontal bars; returns an SVG fragment of the given width at (0, y) and its height. */
export function bars(chart: Bars, width: number, y0 = 0): { svg: string; height: number } {
  const rowH = 8 + chart.series.length * 9;
  const left = 230;
  const plotW = width - left - 60;
  const values = chart.series
    .flatMap((s) => s.values)
    .filter((v): v is number => v !== null && Number.isFinite(v) && v > 0);
  const max = Math.max(1, ...values);
  const min = chart.log ? Math.min(0.1, ...values) : 0;
  const lo = chart.log ? 10 ** Math.floor(Math.log10(min)) : 0;
  const hi = chart.log ? 10 ** Math.ceil(Math.log10(max)) : max;
  const x = (v: number) =>
    chart.log
      ? ((Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * plotW
      : (v / hi) * plotW;
  const top = y0 + 40;
  let svg = `<text x="${width / 2}" y="${y0 + 18}" text-anchor="middle" font-weight="600">${esc(chart.title)}</text>`;
  chart.series.forEach((s, i) => {
    svg += `<rect x="${left + i * 130}" y="${y0 + 26}" width="10" height="10" fill="${COLORS[i % COLORS.length]}"/><text x="${left + 14 + i * 130}" y="${y0 + 35}" font-size="11">${esc(s.name)}</text>`;
  });
  const axisTicks = chart.log ? ticks(lo, hi) : [0, hi / 2, hi];
  for (const t of axisTicks) {
    const tx = left + x(t);
    svg += `<line x1="${tx}" x2="${tx}" y1="${top}" y2="${top + chart.rows.length * rowH}" stroke="#e5e7eb"/>`;
    svg += `<text x="${tx}" y="${top + chart.rows.length * rowH + 12}" font-size="10" text-anchor="middle">${t}</text>`;
  }
  chart.rows.forEach((row, r) => {
    const ry = top + r * rowH;
    svg += `<text x="${left - 6}" y="${ry + rowH / 2 + 3}" font-size="11" text-anchor="end">${esc(row)}</text>`;
    chart.series.forEach((s, i) => {
      const v = s.values[r];
      if (v === null || v === undefined || !Number.isFinite(v)) return;
      const w = Math.max(1, x(v));
      svg += `<rect x="${left}" y="${ry + 4 + i * 9}" width="${w.toFixed(1)}" height="8" fill="${COLORS[i % COLORS.length]}"/>`;
      svg += `<text x="${left + w + 3}" y="${ry + 11 + i * 9}" font-size="9">${+v.toFixed(2)}</text>`;
    });
  });
  svg += `<text x="${left + plotW / 2}" y="${top + chart.rows.length * rowH + 26}" font-size="11" text-anchor="middle">${esc(chart.unit)}${chart.log ? " (log scale)" : ""}</text>`;
  return { svg, height: chart.rows.length * rowH + 80 };
}

/** Log-log line chart. */
export function lines(chart: Lines, width: number, y0 = 0, height = 260): { svg: string; height: number } {
  const left = 70;
  const plotW = width - left - 170;
  const plotH = height - 70;
  const top = y0 + 30;
  const pts = chart.series.flatMap((s) => s.points).filter(([a, b]) => a > 0 && b > 0);
  if (pts.length === 0) return { svg: "", height: 0 };
  const xs = ticks(Math.min(...pts.map((p) => p[0])), Math.max(...pts.map((p) => p[0])));
  const ys = ticks(Math.min(...pts.map((p) => p[1])), Math.max(...pts.map((p) => p[1])));
  const [x0 = 1, x1 = 10] = [xs[0], xs[xs.length - 1]];
  const [ya = 1, yb = 10] = [ys[0], ys[ys.length - 1]];
  const X = (v: number) =>
    left + ((Math.log10(v) - Math.log10(x0)) / Math.max(1e-9, Math.log10(x1) - Math.log10(x0))) * plotW;
  const Y = (v: number) =>
    top + plotH - ((Math.log10(v) - Math.log10(ya)) / Math.max(1e-9, Math.log10(yb) - Math.log10(ya))) * plotH;
  let svg = `<text x="${width / 2}" y="${y0 + 18}" text-anchor="middle" font-weight="600">${esc(chart.title)}</text>`;
  for (const t of xs)
    svg += `<line x1="${X(t)}" x2="${X(t)}" y1="${top}" y2="${top + plotH}" stroke="#e5e7eb"/><text x="${X(t)}" y="${top + plotH + 14}" font-size="10" text-anchor="middle">${t >= 1000 ? `${t / 1000}k` : t}</text>`;
  for (const t of ys)
    svg += `<line x1="${left}" x2="${left + plotW}" y1="${Y(t)}" y2="${Y(t)}" stroke="#e5e7eb"/><text x="${left - 6}" y="${Y(t) + 3}" font-size="10" text-anchor="end">${t}</text>`;
  svg += `<text x="${left + plotW / 2}" y="${top + plotH + 32}" font-size="11" text-anchor="middle">${esc(chart.xLabel)} (log)</text>`;
  svg += `<text transform="translate(${14},${top + plotH / 2}) rotate(-90)" font-size="11" text-anchor="middle">${esc(chart.yLabel)} (log)</text>`;
  chart.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    const ok = s.points.filter(([a, b]) => a > 0 && b > 0);
    if (ok.length)
      svg += `<polyline fill="none" stroke="${color}" stroke-width="2" points="${ok.map(([a, b]) => `${X(a).toFixed(1)},${Y(b).toFixed(1)}`).join(" ")}"/>`;
    for (const [a, b] of ok) svg += `<circle cx="${X(a).toFixed(1)}" cy="${Y(b).toFixed(1)}" r="3" fill="${color}"/>`;
    svg += `<rect x="${left + plotW + 12}" y="${top + i * 16}" width="10" height="10" fill="${color}"/><text x="${left + plotW + 26}" y="${top + i * 16 + 9}" font-size="11">${esc(s.name)}</text>`;
  });
  return { svg, height };
}

export function document(width: number, parts: { svg: string; height: number }[]): string {
  let y = 0;
  let body = "";
  for (const p of parts) {
    body += `<g transform="translate(0,${y})">${p.svg}</g>`;
    y += p.height + 10;
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y}" viewBox="0 0 ${width} ${y}" font-family="system-ui, sans-serif" font-size="12"><rect width="100%" height="100%" fill="#fff"/>${body}</svg>\n`;
}
