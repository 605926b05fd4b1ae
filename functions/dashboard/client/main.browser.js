// @ts-check
// The entry module (/dashboard.js): the key form, the pickers and the refresh loop.
import { ApiError, getCsv, getJson } from "./api.browser.js";
import { el, empty, finite, fmt, fmtTime, namesOf, timeEl } from "./dom.browser.js";
import { LOADERS } from "./loaders.browser.js";
import { KEY_STORAGE, SELECTION_STORAGE, VIEW_STORAGE, refreshMs, state, store } from "./state.browser.js";

/** @typedef {{ ok: true } | { ok: false, error: ApiError }} Outcome */

// Pickers change rarely: re-read the lists every 6th refresh (30 s at 5 s), or on demand.
const LIST_EVERY = 6;

/** @param {string} id */
const byId = (id) => document.getElementById(id);
// An element the page always renders (functions/dashboard/page.tsx).
/**
 * @template {HTMLElement} T
 * @param {string} id
 * @param {new () => T} _type
 * @returns {T}
 */
const must = (id, _type) => /** @type {T} */ (byId(id));
const ui = {
  status: must("status", HTMLElement),
  updated: must("updated", HTMLElement),
  alert: must("alert", HTMLElement),
  form: must("key-form", HTMLFormElement),
  input: must("key-input", HTMLInputElement),
  formNote: must("key-note", HTMLElement),
  cancel: must("key-cancel", HTMLButtonElement),
  forget: must("key-forget", HTMLButtonElement),
  changeKey: must("change-key", HTMLButtonElement),
  refreshNow: must("refresh-now", HTMLButtonElement),
  lag: byId("ingest-lag"),
};

/** @typedef {import("./types").Panel} Panel */
/** @typedef {import("./types").PanelId} PanelId */

/** @type {Panel[]} */
const panels = Array.from(document.querySelectorAll("[data-panel]"), (node) => {
  const section = /** @type {HTMLElement} */ (node);
  const data = section.dataset;
  return {
    id: /** @type {PanelId} */ (data.panel),
    list: data.list ?? "",
    field: data.field ?? "",
    hint: data.hint ?? "",
    section,
    picker: /** @type {HTMLSelectElement} */ (section.querySelector("select")),
    meta: /** @type {HTMLElement} */ (section.querySelector("[data-role=meta]")),
    body: /** @type {HTMLElement} */ (section.querySelector("[data-role=body]")),
    csvButton: /** @type {HTMLButtonElement} */ (section.querySelector("[data-role=csv]")),
    viewButtons: Array.from(section.querySelectorAll("button[data-view]"), (b) => /** @type {HTMLButtonElement} */ (b)),
    csv: undefined,
    csvTag: undefined,
    names: null,
    seq: 0,
    hasData: false,
  };
});

// The panel's view: the stored choice when the toggle offers it, else the toggle's first ("" without a toggle).
/** @param {Panel} panel */
function viewOf(panel) {
  const ids = panel.viewButtons.map((b) => b.dataset.view ?? "");
  const chosen = state.views[panel.id];
  return chosen !== undefined && ids.includes(chosen) ? chosen : (ids[0] ?? "");
}

/** @param {Panel} panel */
function markView(panel) {
  const view = viewOf(panel);
  for (const button of panel.viewButtons) button.setAttribute("aria-pressed", String(button.dataset.view === view));
  if (view) panel.section.dataset.view = view;
}

/**
 * @param {string} mode
 * @param {string} text
 * @param {number | null} [when]
 */
function setMode(mode, text, when) {
  document.body.dataset.state = mode;
  // #status is a polite live region: touched only when its words change, so a screen reader
  // hears state changes, not every refresh; the ticking time sits next to it, outside.
  if (ui.status.textContent !== text) ui.status.textContent = text;
  ui.updated.replaceChildren(when ? timeEl(when, " ") : "");
}

/** @param {string} message */
function showAlert(message) {
  ui.alert.textContent = message;
  ui.alert.hidden = false;
}
function hideAlert() {
  ui.alert.hidden = true;
  ui.alert.textContent = "";
}

/** @param {string} [note] */
function showKeyForm(note) {
  ui.form.hidden = false;
  ui.formNote.textContent = note || "";
  ui.cancel.hidden = !state.key;
  ui.input.focus();
}
function hideKeyForm() {
  ui.form.hidden = true;
  ui.formNote.textContent = "";
}

/**
 * @param {Panel} panel
 * @param {string} mode
 * @param {(Node | string)[]} meta
 * @param {Node} body
 * @param {number | null} generatedAt
 * @param {string} [csv]
 * @param {string} [csvTag]
 */
function show(panel, mode, meta, body, generatedAt, csv, csvTag) {
  panel.hasData = mode === "live";
  panel.csv = mode === "live" ? csv : undefined;
  panel.csvTag = csvTag;
  panel.csvButton.disabled = !panel.csv;
  panel.section.dataset.state = mode;
  panel.section.removeAttribute("aria-busy");
  panel.meta.replaceChildren(...meta, generatedAt ? timeEl(generatedAt, "as of ") : "");
  panel.body.replaceChildren(body);
}

// A failed refresh keeps the last numbers on screen, marked as stale.
/**
 * @param {Panel} panel
 * @param {ApiError} error
 */
function markStale(panel, error) {
  if (!panel.hasData) {
    show(panel, "error", [], empty("Could not load: " + error.message), null);
    return;
  }
  panel.section.dataset.state = "stale";
  panel.meta.querySelector(".problem")?.remove();
  panel.meta.append(el("span", { class: "problem", text: "refresh failed: " + error.message }));
}

// Whether a list answer says it has more pages (counters' nextOffset, histograms' and boards' next,
// rooms' and boards' nextCursor or truncated): the page reads only the first.
/** @param {Record<string, unknown>} body */
function hasMore(body) {
  return (
    body.truncated === true || [body.nextOffset, body.next, body.nextCursor].some((v) => v !== null && v !== undefined)
  );
}

/**
 * @param {Panel} panel
 * @param {string[]} listed
 * @param {boolean} more the list has pages after the one read
 */
function fillPicker(panel, listed, more) {
  const picker = panel.picker;
  const wanted = picker.value || state.selection[panel.id];
  // A choice that is not on the list's first page may be on a later one (a counter not written
  // lately, past the newest 1,000): it stays choosable rather than swapped for another; its loader
  // reads it, and a 404 says it is gone and forgets it (refreshPanel).
  const names = more && wanted && !listed.includes(wanted) ? [...listed, wanted] : listed;
  const chosen = wanted !== undefined && names.includes(wanted) ? wanted : names[0] || "";
  const same = picker.options.length === names.length && names.every((name, i) => picker.options[i]?.value === name);
  if (!same) {
    picker.replaceChildren(
      ...(names.length
        ? names.map((name) => el("option", { value: name, text: name }))
        : [el("option", { value: "", text: "none yet" })]),
    );
  }
  picker.disabled = names.length === 0;
  picker.value = chosen;
}

/**
 * @param {Panel} panel
 * @param {boolean} withList
 * @returns {Promise<Outcome>}
 */
async function refreshPanel(panel, withList) {
  const seq = ++panel.seq;
  let name = "";
  try {
    if (withList || panel.names === null) {
      const { body } = await getJson(panel.list);
      if (seq !== panel.seq) return { ok: true };
      panel.names = namesOf(body[panel.field]);
      fillPicker(panel, panel.names, hasMore(body));
    }
    name = panel.picker.value;
    if (!name) {
      show(panel, "empty", [], empty(panel.hint), null);
      return { ok: true };
    }
    /** @type {import("./types").View} */
    const view = await LOADERS[panel.id](name, () => void refreshPanel(panel, false), viewOf(panel));
    if (seq === panel.seq) show(panel, "live", view.meta, view.body, view.generatedAt, view.csv, view.csvTag);
    return { ok: true };
  } catch (caught) {
    const error =
      caught instanceof ApiError
        ? caught
        : new ApiError("bad", 0, String((caught instanceof Error && caught.message) || caught), "");
    if (!(caught instanceof ApiError)) console.error(caught);
    if (seq !== panel.seq) return { ok: true };
    if (error.kind === "missing" && error.path === panel.list) {
      // The feature is not deployed here (yet): say so and ask again next time.
      panel.names = null;
      show(
        panel,
        "unavailable",
        [],
        empty("Not available on this deployment: GET " + panel.list + " answered 404."),
        null,
      );
      return { ok: true };
    }
    if (error.kind === "missing") {
      panel.names = null;
      // Forgotten, so the next list read does not keep it as an off-page choice.
      if (state.selection[panel.id] === name) {
        delete state.selection[panel.id];
        store.set(SELECTION_STORAGE, JSON.stringify(state.selection));
      }
      panel.picker.value = "";
      show(panel, "empty", [], empty("'" + name + "' is gone (" + error.message + ")."), null);
      return { ok: true };
    }
    markStale(panel, error);
    return { ok: false, error };
  }
}

// The panel's list endpoint asked for text/csv with the read key, saved through a Blob URL.
/** @param {Panel} panel */
async function download(panel) {
  const path = panel.csv;
  if (!path) return;
  panel.csvButton.disabled = true;
  const generation = state.generation;
  try {
    const tag = panel.csvTag;
    const { blob, filename } = await getCsv(path);
    const url = URL.createObjectURL(blob);
    const name = tag ? filename.replace(/(\.csv)?$/, "-" + tag.replace(/[^\w.-]+/g, "_") + "$1") : filename;
    const link = el("a", { href: url, download: name, hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
    // The download has started from the click; the URL is let go a little later.
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (caught) {
    const error =
      caught instanceof ApiError
        ? caught
        : new ApiError("bad", 0, String((caught instanceof Error && caught.message) || caught), path);
    if (generation !== state.generation) return;
    if (error.kind === "auth") refused(error);
    else showAlert("The CSV download failed: " + error.message);
  } finally {
    panel.csvButton.disabled = !panel.csv;
  }
}

// When every panel failed for one reason, the alert says it once.
function dropProblems() {
  for (const panel of panels) panel.meta.querySelector(".problem")?.remove();
}

/** @param {ApiError} error */
function refused(error) {
  clearTimeout(state.timer);
  dropProblems();
  store.remove(KEY_STORAGE);
  state.key = null;
  state.generation++;
  showAlert("The API refused the key (" + error.status + "): " + error.message + " Enter a read key.");
  setMode("auth", "Key refused.");
  showKeyForm("That key was refused; it has been removed from this browser.");
}

/** @param {Outcome[]} results */
function report(results) {
  const errors = results.flatMap((r) => (r.ok ? [] : [r.error]));
  const auth = errors.find((e) => e.kind === "auth");
  if (auth) return refused(auth);
  if (!state.keySaved && state.key !== null) {
    store.set(KEY_STORAGE, state.key);
    state.keySaved = true;
  }
  const since = state.lastGood ? " Showing data from " + fmtTime(state.lastGood) + "." : "";
  const [first] = errors;
  // A 429's Retry-After holds the next refresh back (schedule()), so polling does not spend the key's budget.
  const wait = Math.max(0, ...errors.map((e) => e.retryAfter || 0));
  state.waitMs = wait * 1000;
  if (first && errors.length === results.length && errors.every((e) => e.kind === "busy")) {
    dropProblems();
    const retry = Math.max(wait * 1000, refreshMs) / 1000;
    showAlert("Rate limited (429): " + first.message + since + " Retrying in " + retry + " s.");
    return setMode("degraded", state.lastGood ? "Rate limited; last update" : "Rate limited", state.lastGood);
  }
  if (
    first &&
    errors.length === results.length &&
    errors.every((e) => e.kind === "unreachable" || e.kind === "server")
  ) {
    dropProblems();
    showAlert(
      "The API is unreachable (" + first.message + ")." + since + " Retrying every " + refreshMs / 1000 + " s.",
    );
    return setMode("unreachable", "API unreachable; last update", state.lastGood);
  }
  const storage = errors.find((e) => e.kind === "storage");
  if (storage) {
    showAlert("The API cannot reach its storage (503): " + storage.message + since);
    return setMode("degraded", "Storage unavailable; last update", state.lastGood);
  }
  if (first) {
    showAlert(errors.length + " panel" + (errors.length === 1 ? "" : "s") + " failed to refresh: " + first.message);
    return setMode("degraded", "Partly updated", Date.now());
  }
  state.lastGood = Date.now();
  hideAlert();
  setMode("live", "Live, every " + refreshMs / 1000 + " s · updated", state.lastGood);
}

/** @param {boolean} withLists */
async function refresh(withLists) {
  if (!state.key) return;
  if (state.running) {
    state.again = true;
    return;
  }
  clearTimeout(state.timer);
  state.running = true;
  const generation = state.generation;
  state.tick++;
  const lists = withLists || state.tick % LIST_EVERY === 1;
  try {
    const [results] = await Promise.all([
      Promise.all(panels.map((panel) => refreshPanel(panel, lists))),
      lists ? refreshLag() : null,
    ]);
    if (generation === state.generation) report(results);
  } finally {
    state.running = false;
    // A completed-refresh counter: lets a test (or a curious person) see the loop turn.
    document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes || 0) + 1);
    if (state.again) {
      state.again = false;
      void refresh(true);
    } else schedule();
  }
}

// Queued ingest lag, read with the lists (every 30 s); hidden for good when the deployment has no queue.
async function refreshLag() {
  const lag = ui.lag;
  if (!lag || state.noQueue) return;
  try {
    const { body } = await getJson("/v1/ingest/lag");
    if (!body.queue) {
      state.noQueue = true;
      lag.hidden = true;
      return;
    }
    const age = finite(body.oldestAgeMs) || 0;
    const idle = body.lastBatchAt === null;
    lag.textContent = idle ? "Queue idle" : "Queue lag " + fmt(age / 1000) + " s";
    lag.dataset.level = age > 60000 ? "bad" : age > 10000 ? "warn" : "ok";
    lag.hidden = false;
  } catch {
    lag.hidden = true;
  }
}

function schedule() {
  clearTimeout(state.timer);
  // A hidden tab does not poll; it catches up when shown again.
  if (state.key && !document.hidden)
    state.timer = setTimeout(() => void refresh(false), Math.max(refreshMs, state.waitMs));
}

/** @param {string} key */
function useKey(key) {
  state.key = key;
  state.keySaved = false;
  state.generation++;
  ui.input.value = "";
  hideKeyForm();
  hideAlert();
  setMode("loading", "Loading…");
  for (const panel of panels) if (!panel.hasData) show(panel, "loading", [], empty("Loading…"), null);
  void refresh(true);
}

/** @param {string} message */
function resetPanels(message) {
  for (const panel of panels) {
    panel.seq++;
    panel.names = null;
    show(panel, "idle", [], empty(message), null);
  }
}

ui.form.addEventListener("submit", (event) => {
  event.preventDefault();
  const key = ui.input.value.trim();
  if (!key) {
    ui.formNote.textContent = "Paste a read key (READ_KEYS) first.";
    ui.input.focus();
    return;
  }
  useKey(key);
});
ui.cancel.addEventListener("click", () => hideKeyForm());
ui.forget.addEventListener("click", () => {
  clearTimeout(state.timer);
  store.remove(KEY_STORAGE);
  state.key = null;
  state.generation++;
  hideAlert();
  resetPanels("Enter a read key to load data.");
  setMode("idle", "No key: enter a read key to start.");
  showKeyForm("The key was removed from this browser.");
});
ui.changeKey.addEventListener("click", () => showKeyForm(""));
ui.refreshNow.addEventListener("click", () => void refresh(true));
for (const panel of panels) {
  panel.csvButton.addEventListener("click", () => void download(panel));
  markView(panel);
  for (const button of panel.viewButtons) {
    button.addEventListener("click", async () => {
      state.views[panel.id] = button.dataset.view ?? "";
      store.set(VIEW_STORAGE, JSON.stringify(state.views));
      markView(panel);
      // Until the new view's answer arrives, the CSV button must not export the old one.
      panel.csv = undefined;
      panel.csvButton.disabled = true;
      if (!state.key) return;
      const generation = state.generation;
      const result = await refreshPanel(panel, false);
      if (!result.ok && result.error.kind === "auth" && generation === state.generation) refused(result.error);
    });
  }
  panel.picker.addEventListener("change", async () => {
    state.selection[panel.id] = panel.picker.value;
    store.set(SELECTION_STORAGE, JSON.stringify(state.selection));
    const generation = state.generation;
    const result = await refreshPanel(panel, false);
    if (!result.ok && result.error.kind === "auth" && generation === state.generation) refused(result.error);
  });
}
document.addEventListener("visibilitychange", () => {
  if (document.hidden) clearTimeout(state.timer);
  else void refresh(false);
});

if (state.key) {
  hideKeyForm();
  setMode("loading", "Loading…");
  for (const panel of panels) show(panel, "loading", [], empty("Loading…"), null);
  void refresh(true);
} else {
  setMode("idle", "No key: enter a read key to start.");
  showKeyForm("");
}
