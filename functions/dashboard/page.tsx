import type { FC } from "hono/jsx";
import { MODULES, SCRIPT, STYLES, versionedUrl } from "./assets.ts";
import { PANELS, REFRESH_MS, type PanelSpec } from "./panels.ts";

const Panel: FC<{ spec: PanelSpec }> = ({ spec }) => (
  <section
    class="panel"
    id={`panel-${spec.id}`}
    aria-labelledby={`title-${spec.id}`}
    data-panel={spec.id}
    data-list={spec.list}
    data-field={spec.field}
    data-hint={spec.hint}
    data-state="idle"
  >
    <header>
      <h2 id={`title-${spec.id}`}>{spec.title}</h2>
      <label class="picker" for={`pick-${spec.id}`}>
        {spec.noun}
        <select id={`pick-${spec.id}`} name={spec.id} disabled>
          <option value="">none yet</option>
        </select>
      </label>
      {spec.views ? (
        <div class="views" role="group" aria-label={`${spec.title} view`}>
          {spec.views.map((view, i) => (
            <button type="button" data-view={view.id} aria-pressed={i === 0 ? "true" : "false"} title={view.title}>
              {view.label}
            </button>
          ))}
        </div>
      ) : null}
      <button
        type="button"
        class="csv"
        data-role="csv"
        aria-label={`Download ${spec.title} as CSV`}
        title="Download what this panel shows as CSV"
        disabled
      >
        CSV
      </button>
      <p class="blurb">{spec.blurb}</p>
    </header>
    <p class="meta" data-role="meta" aria-live="off"></p>
    <div data-role="body">
      <p class="empty">Enter a read key to load data.</p>
    </div>
  </section>
);

/**
 * The dashboard shell. It holds no data and no key: the client script asks
 * for a read key, keeps it in localStorage and fills the panels from the API.
 */
export const DashboardPage: FC = () => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width,initial-scale=1" />
      <meta name="referrer" content="no-referrer" />
      <title>edgestats dashboard</title>
      <link rel="stylesheet" href={versionedUrl(STYLES)} />
      {/* A module script runs deferred; the preloads fetch its imports alongside it instead of one after another. */}
      <script type="module" src={versionedUrl(SCRIPT)}></script>
      {MODULES.map((m) => (
        <link rel="modulepreload" href={versionedUrl(m)} />
      ))}
    </head>
    <body data-refresh-ms={String(REFRESH_MS)} data-state="idle">
      <header class="top">
        <h1>edgestats</h1>
        {/* The live region holds the state's words only; the time of the last update ticks outside it. */}
        <p class="status">
          <span id="status" role="status" aria-live="polite">
            Starting…
          </span>
          <span id="updated"></span>
        </p>
        <p
          id="ingest-lag"
          class="lag"
          title="Queued ingest (Prefer: respond-async): age of the oldest message the consumer saw in the last 2 minutes"
          hidden
        ></p>
        <div class="actions">
          <button type="button" id="refresh-now">
            Refresh now
          </button>
          <button type="button" id="change-key">
            Change key
          </button>
        </div>
      </header>
      <noscript>
        <p class="alert">The dashboard needs JavaScript; the API itself is described at /docs.</p>
      </noscript>
      <div id="alert" class="alert" role="alert" hidden></div>
      <form id="key-form" class="key-form" autocomplete="off" hidden>
        <label for="key-input">Read API key</label>
        <div class="row">
          <input
            id="key-input"
            name="key"
            type="password"
            autocomplete="off"
            spellcheck={false}
            placeholder="a key from READ_KEYS (admin keys are refused)"
          />
          <button type="submit" class="primary">
            Save key
          </button>
          <button type="button" id="key-cancel" hidden>
            Cancel
          </button>
          <button type="button" id="key-forget">
            Forget key
          </button>
        </div>
        <p id="key-note" role="status"></p>
        <p>The key stays in this browser's local storage and is sent only to this service's API.</p>
      </form>
      <main class="grid">
        {PANELS.map((spec) => (
          <Panel spec={spec} />
        ))}
      </main>
      <footer>
        Refreshes every {REFRESH_MS / 1000} s without reloading. API reference: <a href="/docs">/docs</a>.
      </footer>
    </body>
  </html>
);
