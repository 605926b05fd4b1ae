/**
 * Client script, part 4: the key, the pickers and the refresh loop.
 * The read key lives only in this browser's localStorage and in the
 * Authorization header of the page's own requests; the server never sees it
 * outside those requests and never puts it in HTML.
 */
export const MAIN_JS = String.raw`
const KEY_STORAGE = "edgestats.dashboard.readKey";
const SELECTION_STORAGE = "edgestats.dashboard.selection";
// Pickers change rarely: re-read the lists every 6th refresh (30 s at 5 s), or on demand.
const LIST_EVERY = 6;

const byId = (id) => document.getElementById(id);
const refreshMs = Number(document.body.dataset.refreshMs) || 5000;
const ui = {
  status: byId("status"),
  alert: byId("alert"),
  form: byId("key-form"),
  input: byId("key-input"),
  formNote: byId("key-note"),
  cancel: byId("key-cancel"),
  forget: byId("key-forget"),
  changeKey: byId("change-key"),
  refreshNow: byId("refresh-now"),
  lag: byId("ingest-lag"),
};

function loadSelection() {
  try {
    const parsed = JSON.parse(store.get(SELECTION_STORAGE) || "{}");
    return parsed && typeof parsed === "object" ? parsed : {};
  } catch (error) {
    return {};
  }
}

const state = {
  key: store.get(KEY_STORAGE),
  // A new key is written to localStorage only once the API has not refused it
  // (an admin key, refused with 403, is never stored).
  keySaved: true,
  // Bumped on every key change, so answers to an old key cannot act on a new one.
  generation: 0,
  timer: null,
  running: false,
  again: false,
  tick: 0,
  lastGood: null,
  selection: loadSelection(),
};

const panels = Array.from(document.querySelectorAll("[data-panel]")).map((section) => ({
  id: section.dataset.panel,
  list: section.dataset.list,
  field: section.dataset.field,
  hint: section.dataset.hint,
  section,
  picker: section.querySelector("select"),
  meta: section.querySelector("[data-role=meta]"),
  body: section.querySelector("[data-role=body]"),
  names: null,
  seq: 0,
  hasData: false,
}));

function setMode(mode, text, when) {
  document.body.dataset.state = mode;
  ui.status.replaceChildren(text, when ? timeEl(when, " ") : "");
}

function showAlert(message) {
  ui.alert.textContent = message;
  ui.alert.hidden = false;
}
function hideAlert() {
  ui.alert.hidden = true;
  ui.alert.textContent = "";
}

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

function show(panel, mode, meta, body, generatedAt) {
  panel.hasData = mode === "live";
  panel.section.dataset.state = mode;
  panel.section.removeAttribute("aria-busy");
  panel.meta.replaceChildren(...meta, generatedAt ? timeEl(generatedAt, "as of ") : "");
  panel.body.replaceChildren(body);
}

// A failed refresh keeps the last numbers on screen, marked as stale.
function markStale(panel, error) {
  if (!panel.hasData) {
    show(panel, "error", [], empty("Could not load: " + error.message), null);
    return;
  }
  panel.section.dataset.state = "stale";
  panel.meta.querySelector(".problem")?.remove();
  panel.meta.append(el("span", { class: "problem", text: "refresh failed: " + error.message }));
}

function fillPicker(panel) {
  const picker = panel.picker;
  const names = panel.names;
  const wanted = picker.value || state.selection[panel.id];
  const chosen = names.includes(wanted) ? wanted : names[0] || "";
  const same = picker.options.length === names.length && names.every((name, i) => picker.options[i].value === name);
  if (!same) {
    picker.replaceChildren(...(names.length ? names.map((name) => el("option", { value: name, text: name })) : [el("option", { value: "", text: "none yet" })]));
  }
  picker.disabled = names.length === 0;
  picker.value = chosen;
}

async function refreshPanel(panel, withList) {
  const seq = ++panel.seq;
  let name = "";
  try {
    if (withList || panel.names === null) {
      const { body } = await getJson(panel.list);
      if (seq !== panel.seq) return { ok: true };
      panel.names = namesOf(body[panel.field]);
      fillPicker(panel);
    }
    name = panel.picker.value;
    if (!name) {
      show(panel, "empty", [], empty(panel.hint), null);
      return { ok: true };
    }
    const view = await LOADERS[panel.id](name);
    if (seq === panel.seq) show(panel, "live", view.meta, view.body, view.generatedAt);
    return { ok: true };
  } catch (caught) {
    const error = caught instanceof ApiError ? caught : new ApiError("bad", 0, String((caught && caught.message) || caught), "");
    if (!(caught instanceof ApiError)) console.error(caught);
    if (seq !== panel.seq) return { ok: true };
    if (error.kind === "missing" && error.path === panel.list) {
      // The feature is not deployed here (yet): say so and ask again next time.
      panel.names = null;
      show(panel, "unavailable", [], empty("Not available on this deployment: GET " + panel.list + " answered 404."), null);
      return { ok: true };
    }
    if (error.kind === "missing") {
      panel.names = null;
      show(panel, "empty", [], empty("'" + name + "' is gone (" + error.message + ")."), null);
      return { ok: true };
    }
    markStale(panel, error);
    return { ok: false, error };
  }
}

// When every panel failed for one reason, the alert says it once.
function dropProblems() {
  for (const panel of panels) panel.meta.querySelector(".problem")?.remove();
}

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

function report(results) {
  const errors = results.filter((r) => !r.ok).map((r) => r.error);
  const auth = errors.find((e) => e.kind === "auth");
  if (auth) return refused(auth);
  if (!state.keySaved) {
    store.set(KEY_STORAGE, state.key);
    state.keySaved = true;
  }
  const since = state.lastGood ? " Showing data from " + fmtTime(state.lastGood) + "." : "";
  if (errors.length > 0 && errors.length === results.length && errors.every((e) => e.kind === "unreachable" || e.kind === "server")) {
    dropProblems();
    showAlert("The API is unreachable (" + errors[0].message + ")." + since + " Retrying every " + refreshMs / 1000 + " s.");
    return setMode("unreachable", "API unreachable; last update", state.lastGood);
  }
  const storage = errors.find((e) => e.kind === "storage");
  if (storage) {
    showAlert("The API cannot reach its storage (503): " + storage.message + since);
    return setMode("degraded", "Storage unavailable; last update", state.lastGood);
  }
  if (errors.length > 0) {
    showAlert(errors.length + " panel" + (errors.length === 1 ? "" : "s") + " failed to refresh: " + errors[0].message);
    return setMode("degraded", "Partly updated", Date.now());
  }
  state.lastGood = Date.now();
  hideAlert();
  setMode("live", "Live, every " + refreshMs / 1000 + " s · updated", state.lastGood);
}

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
    const [results] = await Promise.all([Promise.all(panels.map((panel) => refreshPanel(panel, lists))), lists ? refreshLag() : null]);
    if (generation === state.generation) report(results);
  } finally {
    state.running = false;
    // A completed-refresh counter: lets a test (or a curious person) see the loop turn.
    document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes || 0) + 1);
    if (state.again) {
      state.again = false;
      refresh(true);
    } else schedule();
  }
}

// Queued ingest lag, read with the lists (every 30 s); hidden for good when the deployment has no queue.
async function refreshLag() {
  if (!ui.lag || state.noQueue) return;
  try {
    const { body } = await getJson("/v1/ingest/lag");
    if (!body.queue) {
      state.noQueue = true;
      ui.lag.hidden = true;
      return;
    }
    const lag = finite(body.oldestAgeMs) || 0;
    const idle = body.lastBatchAt === null;
    ui.lag.textContent = idle ? "Queue idle" : "Queue lag " + fmt(lag / 1000) + " s";
    ui.lag.dataset.level = lag > 60000 ? "bad" : lag > 10000 ? "warn" : "ok";
    ui.lag.hidden = false;
  } catch (error) {
    ui.lag.hidden = true;
  }
}

function schedule() {
  clearTimeout(state.timer);
  // A hidden tab does not poll; it catches up when shown again.
  if (state.key && !document.hidden) state.timer = setTimeout(() => refresh(false), refreshMs);
}

function useKey(key) {
  state.key = key;
  state.keySaved = false;
  state.generation++;
  ui.input.value = "";
  hideKeyForm();
  hideAlert();
  setMode("loading", "Loading…");
  for (const panel of panels) if (!panel.hasData) show(panel, "loading", [], empty("Loading…"), null);
  refresh(true);
}

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
ui.refreshNow.addEventListener("click", () => refresh(true));
for (const panel of panels) {
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
  else refresh(false);
});

if (state.key) {
  hideKeyForm();
  setMode("loading", "Loading…");
  for (const panel of panels) show(panel, "loading", [], empty("Loading…"), null);
  refresh(true);
} else {
  setMode("idle", "No key: enter a read key to start.");
  showKeyForm("");
}
`;
