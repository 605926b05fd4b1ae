/**
 * The dashboard's stylesheet, served as /dashboard.css. One column on a phone,
 * a grid of cards from about 700 px up; light and dark follow the system.
 * Colours of the percentile marks are paired with labels, never colour alone.
 */
export const DASHBOARD_CSS = `:root {
  color-scheme: light dark;
  --bg: #f5f6f8; --card: #fff; --ink: #1d232a; --muted: #5b6570; --line: #dde1e6;
  --bar: #3b6fd8; --bar-neg: #c2410c; --ok: #137a3a; --warn: #9a5b00; --bad: #b42318;
  --p50: #137a3a; --p90: #9a5b00; --p99: #b42318; --focus: #1f5fd6;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #14181d; --card: #1d232a; --ink: #e8ecf0; --muted: #9aa5b1; --line: #313a44;
    --bar: #6b9bff; --bar-neg: #f08a5d; --ok: #4cc47a; --warn: #f0b64a; --bad: #ff7b72;
    --p50: #4cc47a; --p90: #f0b64a; --p99: #ff7b72; --focus: #8ab4ff;
  }
}
* { box-sizing: border-box; }
/* Author display rules (.key-form is a grid) must not resurrect hidden elements. */
[hidden] { display: none !important; }
body { margin: 0; background: var(--bg); color: var(--ink); font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
a { color: var(--focus); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }

.top { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1rem; padding: .75rem 1rem; background: var(--card); border-bottom: 1px solid var(--line); }
.top h1 { font-size: 1.15rem; margin: 0; }
.status { margin: 0; color: var(--muted); flex: 1 1 12rem; }
body[data-state="live"] .status::before { content: "●"; color: var(--ok); margin-right: .35rem; }
body[data-state="unreachable"] .status::before, body[data-state="auth"] .status::before, body[data-state="degraded"] .status::before { content: "●"; color: var(--bad); margin-right: .35rem; }
.lag { margin: 0; font-size: .85rem; color: var(--muted); }
.lag[data-level="warn"] { color: var(--warn); }
.lag[data-level="bad"] { color: var(--bad); }
.actions { display: flex; gap: .5rem; flex-wrap: wrap; }
button { font: inherit; padding: .4rem .8rem; border-radius: 6px; border: 1px solid var(--line); background: var(--card); color: var(--ink); cursor: pointer; min-height: 2.25rem; }
button.primary { background: var(--focus); border-color: var(--focus); color: #fff; }
button:hover { border-color: var(--muted); }

.alert { margin: .75rem 1rem 0; padding: .6rem .8rem; border-radius: 6px; border: 1px solid var(--bad); color: var(--bad); background: var(--card); font-weight: 500; }
.key-form { margin: .75rem 1rem 0; padding: .8rem 1rem; border-radius: 8px; background: var(--card); border: 1px solid var(--line); display: grid; gap: .5rem; max-width: 40rem; }
.key-form .row { display: flex; flex-wrap: wrap; gap: .5rem; }
.key-form input { font: inherit; padding: .4rem .6rem; border-radius: 6px; border: 1px solid var(--line); background: var(--bg); color: var(--ink); flex: 1 1 14rem; min-width: 0; min-height: 2.25rem; }
.key-form p { margin: 0; color: var(--muted); font-size: .9rem; }
#key-note:empty { display: none; }
#key-note { color: var(--bad); }

.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 22rem), 1fr)); gap: 1rem; padding: 1rem; }
.panel { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: .8rem 1rem 1rem; min-width: 0; }
.panel header { display: flex; flex-wrap: wrap; align-items: baseline; justify-content: space-between; gap: .4rem .8rem; }
.panel h2 { font-size: 1.05rem; margin: 0; }
.panel .blurb { margin: 0; color: var(--muted); font-size: .85rem; flex-basis: 100%; order: 3; }
.panel .csv { font-size: .8rem; padding: .2rem .55rem; min-height: 2rem; margin-left: auto; }
.views { display: inline-flex; order: 4; }
.views button { font-size: .8rem; padding: .2rem .6rem; min-height: 2rem; border-radius: 0; }
.views button:first-child { border-radius: 6px 0 0 6px; }
.views button:last-child { border-radius: 0 6px 6px 0; margin-left: -1px; }
.views button[aria-pressed="true"] { background: var(--focus); border-color: var(--focus); color: #fff; }
.panel .csv:disabled { opacity: .5; cursor: default; }
.picker { display: flex; align-items: center; gap: .4rem; font-size: .9rem; color: var(--muted); }
.picker select { font: inherit; color: var(--ink); background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: .25rem .4rem; max-width: 12rem; min-height: 2rem; }
.meta { display: flex; flex-wrap: wrap; gap: .3rem .6rem; align-items: center; min-height: 1.6rem; margin: .5rem 0; font-size: .82rem; color: var(--muted); }
.meta .problem { color: var(--bad); }
.panel[data-state="stale"] [data-role="body"] { opacity: .55; }
.panel[data-state="unavailable"] .empty { font-style: italic; }
.badge { display: inline-block; padding: 0 .45rem; border-radius: 999px; font-weight: 600; border: 1px solid currentColor; }
.badge.ok { color: var(--ok); }
.badge.warn { color: var(--warn); }
.empty { color: var(--muted); margin: .5rem 0; }

.bars { list-style: none; margin: 0; padding: 0; display: grid; gap: .3rem; }
.bars li { display: grid; grid-template-columns: 2.4rem minmax(0, 1.3fr) minmax(2rem, 2fr) auto; align-items: center; gap: .5rem; font-size: .9rem; }
.bars .rank { color: var(--muted); font-variant-numeric: tabular-nums; }
.bars .label { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.bars .bar { width: 100%; height: .9rem; display: block; }
.bars .bar rect { fill: var(--bar); }
.bars .bar rect.negative { fill: var(--bar-neg); }
.bars .value { font-variant-numeric: tabular-nums; text-align: right; min-width: 3ch; }

.stats { display: grid; grid-template-columns: repeat(4, minmax(0, 1fr)); gap: .5rem; margin: 0 0 .6rem; }
.stats div { background: var(--bg); border-radius: 8px; padding: .4rem .6rem; }
.stats dt { font-size: .78rem; color: var(--muted); }
.stats abbr { text-decoration: underline dotted; cursor: help; }
.stats dd { margin: 0; font-size: 1.35rem; font-weight: 650; font-variant-numeric: tabular-nums; }
.stats.small { grid-template-columns: repeat(3, minmax(0, 1fr)); }
.stats.small dd { font-size: 1rem; }
.sub { font-size: .85rem; color: var(--muted); font-weight: 500; margin: .4rem 0; }
.spark { margin: 0; }
.spark svg { width: 100%; height: 4rem; display: block; }
.spark .line { fill: none; stroke: var(--bar); stroke-width: 2; }
.spark .area { fill: var(--bar); opacity: .15; }
.spark figcaption { display: flex; justify-content: space-between; font-size: .75rem; color: var(--muted); }

.hist { width: 100%; height: auto; display: block; }
.hist .bucket { fill: var(--bar); }
.hist .mark { stroke-width: 2; stroke-dasharray: 4 3; }
.hist .mark-label { font: 600 11px system-ui, sans-serif; }
.mark.p50 { stroke: var(--p50); } .mark-label.p50 { fill: var(--p50); }
.mark.p90 { stroke: var(--p90); } .mark-label.p90 { fill: var(--p90); }
.mark.p99 { stroke: var(--p99); } .mark-label.p99 { fill: var(--p99); }
.legend { list-style: none; display: flex; flex-wrap: wrap; gap: .3rem 1rem; padding: 0; margin: .4rem 0; font-size: .85rem; }
.legend li { display: flex; align-items: center; gap: .35rem; }
.swatch { width: .8rem; height: .8rem; }
.swatch.p50 rect { fill: var(--p50); } .swatch.p90 rect { fill: var(--p90); } .swatch.p99 rect { fill: var(--p99); }

.board { width: 100%; border-collapse: collapse; font-size: .9rem; }
.board th, .board td { text-align: left; padding: .3rem .4rem; border-bottom: 1px solid var(--line); }
.board th { color: var(--muted); font-weight: 500; font-size: .8rem; }
.board .move.up { color: var(--ok); } .board .move.down { color: var(--bad); }
select.season { font: inherit; color: var(--ink); background: var(--bg); border: 1px solid var(--line); border-radius: 6px; padding: .1rem .3rem; }
.board .num { text-align: right; font-variant-numeric: tabular-nums; }
.board td.player, .board td.member, .board td.name { overflow-wrap: anywhere; }
.board .ratio.new { color: var(--ok); font-weight: 600; }

footer { padding: 0 1rem 1.5rem; color: var(--muted); font-size: .85rem; }
@media (max-width: 30rem) {
  .top { padding: .6rem .75rem; }
  .grid { padding: .75rem; gap: .75rem; }
  .panel { padding: .7rem .75rem .8rem; }
  .stats:not(.small) { grid-template-columns: repeat(2, minmax(0, 1fr)); }
}
`;
