// setup.js: the set-up sheet (New timer on the grid, Set up on a timer's page): a kind and
// its fields (setupfields.js), the presets and saved workouts (setupchoices.js), a name and
// an id, now or at a time of day; checked as typed with the node's rules (forms.js), `start`
// sent on the timer's topic and the node's refusal shown under the field it names; Save as
// workout. The form last sent for a timer is kept on this device. See docs/dashboard.md,
// "Setting up a timer".
import * as F from "./forms.js";
import { fieldEl, setErr, addBlock, blocksRaw, blockEntry, clearBlockErrors } from "./setupfields.js";
import { createChoices } from "./setupchoices.js";
import { $, make, setText, NO_ANSWER } from "./ui.js";

/**
 * `cfg`: the page's settings (`timer`, the one shown); `conn`: connection.js's; `confirm`,
 * `banner`: ui.js's; `go(timer)`, `render()`: the page's; `predict(id, st)`: cues.js's, for
 * the state the node answers with. Returns `state` (the sheet's, with `unchecked`: the
 * browser suite sends what was typed without the page's checks), `open(mode)`,
 * `renderChoices()`, `forget(timer)` and `wire()`.
 */
function createSetup({ cfg, conn, confirm, banner, go, render, predict }) {
  const setup = { kind: "interval", mode: "new", timer: null, nameAuto: true, idAuto: true, fields: {}, params: {}, unchecked: false };
  const choices = createChoices({ conn, setup, confirm, sheet: { setAutoName, applyForm, formOk } });
  const formKey = (timer) => "pacer-form:" + conn.base + ":" + timer;
  const blocks = () => $("blocks");
  const whenAt = () => !!$("setup").querySelector('input[name="when"][value="at"]:checked');
  const clockOfDay = (ms) => { const d = new Date(ms); return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, "0")).join(":"); };
  const takenIds = () => conn.node.takenIds();
  const workouts = () => conn.node.workouts || [];

  /** The form kept for a timer is forgotten (the timer was deleted). */
  function forget(timer) { localStorage.removeItem(formKey(timer)); }

  function wire() {
    const kinds = $("kinds"), box = $("kind-fields");
    for (const [kind, def] of Object.entries(F.KINDS)) {
      const lab = make("label", "kind");
      const r = make("input"); r.type = "radio"; r.name = "kind"; r.value = kind; r.id = "kind-" + kind;
      lab.append(r, make("span", null, def.label));
      kinds.append(lab);
      r.addEventListener("change", () => setKind(kind));
      const sec = make("section", "kind-fields");
      sec.dataset.kind = kind; sec.hidden = true;
      sec.append(make("p", "note", def.about));
      setup.fields[kind] = {};
      for (const f of def.fields) {
        const entry = fieldEl(kind, f, () => checkEntry(entry));
        setup.fields[kind][f.key] = entry;
        sec.append(entry.box);
      }
      if (kind === "program") {
        const ol = make("ol", "blocks"); ol.id = "blocks";
        const add = make("button", "add", "Add block"); add.type = "button"; add.id = "add-block";
        add.addEventListener("click", () => { addBlock(ol, { kind: "work", duration: "1m", label: "" }); ol.lastElementChild.querySelector("select").focus(); });
        const err = make("small", "err"); err.id = "err-program-segments";
        setup.fields.program.segments = { err, input: null };
        sec.append(ol, add, err);
      }
      if (kind === "preset") {
        const saved = make("fieldset", "choices"); saved.id = "saved";
        saved.append(make("legend", null, "Saved workouts"), Object.assign(make("ul", "choice-list"), { id: "workout-list" }), Object.assign(make("p", "note"), { id: "workout-note" }));
        const presets = make("fieldset", "choices");
        presets.append(make("legend", null, "Presets"), Object.assign(make("ul", "choice-list"), { id: "preset-list" }),
          make("p", "note", "From the node's configuration and built in: read-only here."));
        const params = make("div", "params"); params.id = "preset-params";
        const err = make("small", "err"); err.id = "err-preset";
        setup.fields.preset.preset = { err, input: null };
        sec.append(saved, presets, params, err);
        for (const [p, pdef] of Object.entries(F.PRESETS)) {
          setup.params[p] = {};
          const group = make("div", "param-group"); group.dataset.preset = p; group.hidden = true;
          for (const f of pdef.params) {
            const entry = fieldEl("preset-" + p, f, () => checkEntry(entry));
            setup.params[p][f.key] = entry;
            group.append(entry.box);
          }
          params.append(group);
        }
      }
      box.append(sec);
    }
    const name = $("f-name"), id = $("f-id");
    setup.name = { input: name, err: $("err-name") };
    setup.id = { input: id, err: $("err-id") };
    setup.startAt = { input: $("f-start_at"), err: $("err-start_at") };
    name.addEventListener("input", () => {
      setup.nameAuto = false;
      if (setup.idAuto && setup.mode === "new") id.value = F.uniqueId(F.slug(name.value), takenIds());
      checkNameAndId();
    });
    id.addEventListener("input", () => { setup.idAuto = false; checkNameAndId(); });
    for (const r of document.querySelectorAll('#setup input[name="when"]')) r.addEventListener("change", () => {
      const at = whenAt();
      if (at && !setup.startAt.input.value) setup.startAt.input.value = clockOfDay(Date.now() + 5 * 60000);
      checkStartAt();
    });
    setup.startAt.input.addEventListener("input", () => { $("setup").querySelector('input[name="when"][value="at"]').checked = true; checkStartAt(); });
    $("setup-form").addEventListener("submit", (e) => { e.preventDefault(); submitStart(); });
    $("setup-save").addEventListener("click", saveAsWorkout);
    choices.wire();
    choices.render();
  }

  function checkEntry(entry) {
    const c = F.checkField(entry.f, entry.f.type === "bool" ? entry.input.checked : entry.input.value);
    setErr(entry, c.error);
    return !c.error;
  }
  function checkNameAndId() {
    // One Name for the timer and the saved workout: "HIIT 45/15" is kept by a workout; the
    // timer is named "HIIT 45-15" (/ + # are MQTT topic characters, which a timer's name may not hold).
    const name = setup.name.input.value.trim();
    setErr(setup.name, !name && setup.mode === "edit" ? null : F.checkWorkoutName(name));
    if (setup.mode === "new") setErr(setup.id, F.checkId(setup.id.input.value, takenIds()));
    else setErr(setup.id, null);
  }
  function checkStartAt() {
    if (!whenAt()) { setErr(setup.startAt, null); return; }
    const at = F.startAtFromTime(setup.startAt.input.value, Date.now());
    setErr(setup.startAt, F.checkStartAt(at, Date.now()));
  }

  function setKind(kind) {
    setup.kind = kind;
    const r = $("kind-" + kind); if (r) r.checked = true;
    for (const sec of document.querySelectorAll("#kind-fields > section")) sec.hidden = sec.dataset.kind !== kind;
    if (setup.nameAuto && setup.mode === "new") {
      const p = kind === "preset" ? choices.selected() : null;
      setAutoName(p ? choices.label(p) : F.KINDS[kind].label);
    }
    $("setup-save").hidden = kind === "preset" || !conn.node.canSave();
    setText($("err-form"), "");
  }

  function setAutoName(name) {
    setup.name.input.value = name;
    if (setup.idAuto && setup.mode === "new") setup.id.input.value = F.uniqueId(F.slug(name), takenIds());
    checkNameAndId();
  }

  /** Puts a kind and its texts in the form (defaults first). */
  function applyForm(o) {
    for (const [kind, fields] of Object.entries(setup.fields)) {
      for (const entry of Object.values(fields)) {
        if (!entry.f) { setErr(entry, null); continue; }
        const v = kind === o.kind && o.raw && o.raw[entry.f.key] != null ? o.raw[entry.f.key] : entry.f.value;
        if (entry.f.type === "bool") entry.input.checked = !!v; else entry.input.value = v == null ? "" : String(v);
        setErr(entry, null);
      }
    }
    for (const group of Object.values(setup.params)) for (const entry of Object.values(group)) {
      entry.input.value = entry.f.value == null ? "" : entry.f.value; setErr(entry, null);
    }
    blocks().replaceChildren();
    const list = o.kind === "program" && o.raw && o.raw.blocks ? o.raw.blocks : [{ kind: "work", duration: "5m", label: "" }, { kind: "rest", duration: "1m", label: "" }];
    for (const b of list) addBlock(blocks(), b);
    for (const r of document.querySelectorAll('#setup input[name="preset"]')) r.checked = r.value === o.preset;
    if (o.preset) {
      choices.choose(o.preset);
      for (const [k, v] of Object.entries(o.params || {})) { const e = setup.params[o.preset] && setup.params[o.preset][k]; if (e) e.input.value = v; }
    }
    if (o.name != null) setup.name.input.value = o.name;
    setKind(o.kind || "interval");
    setText($("err-form"), "");
  }

  /** Opens the form: `new` from the grid, `edit` (Set up) on a timer's page. */
  function open(mode) {
    setup.mode = mode;
    setup.timer = mode === "edit" ? cfg.timer : null;
    setup.nameAuto = mode === "new"; setup.idAuto = mode === "new";
    const st = setup.timer ? conn.node.timers.get(setup.timer) : null;
    setText($("setup-title"), mode === "new" ? "New timer" : "Set up " + ((st && st.name) || setup.timer));
    setup.id.input.readOnly = mode === "edit";
    $("hint-id").hidden = mode === "edit";
    let saved = null;
    if (mode === "edit") { try { saved = JSON.parse(localStorage.getItem(formKey(setup.timer)) || "null"); } catch (e) { saved = null; } }
    const fromState = !saved && st ? F.stateToForm(st) : null;
    const kind = (saved && saved.kind) || (fromState && fromState.kind) || (mode === "new" && localStorage.getItem("pacer-kind")) || "interval";
    applyForm(Object.assign({ kind, raw: null }, fromState || {}, saved || {}, { name: mode === "edit" ? (st && st.name) || (saved && saved.name) || "" : null }));
    if (mode === "new") { setup.name.input.value = ""; setup.nameAuto = true; setKind(kind); }
    else setup.id.input.value = setup.timer;
    $("setup").querySelector('input[name="when"][value="now"]').checked = true;
    setup.startAt.input.value = "";
    setErr(setup.startAt, null); setErr(setup.name, null); setErr(setup.id, null);
    const running = st && (st.status === "running" || st.status === "paused");
    setText($("setup-note"), running ? "It is " + st.status + ": Start replaces the run." : "");
    setText($("err-form"), "");
    $("setup").showModal();
    $("setup").scrollTop = 0;
  }

  /** What the form says: the `buildStart` input. */
  function collect() {
    const kind = setup.kind;
    const raw = {};
    if (kind === "program") raw.blocks = blocksRaw(blocks());
    else for (const [k, entry] of Object.entries(setup.fields[kind] || {})) if (entry.f) raw[k] = entry.f.type === "bool" ? entry.input.checked : entry.input.value;
    const preset = kind === "preset" ? choices.selected() : null;
    const params = {};
    if (preset && setup.params[preset] && !workouts().some((w) => w.id === preset)) for (const [k, e] of Object.entries(setup.params[preset])) params[k] = e.input.value;
    const st = setup.timer ? conn.node.timers.get(setup.timer) : null;
    return {
      kind, raw, preset, params,
      name: setup.name.input.value.trim(),
      id: setup.mode === "edit" ? setup.timer : setup.id.input.value.trim(),
      startAt: whenAt() ? F.startAtFromTime(setup.startAt.input.value, Date.now()) : null,
      restart: !!(st && (st.status === "running" || st.status === "paused")),
    };
  }

  /** The element a field key names (`work`, `segments[1].duration`, `name`…), for its error. */
  function errorEntry(key, kind, preset) {
    if (!key) return null;
    if (key === "name" || key === "workout") return setup.name;
    if (key === "id") return setup.id;
    if (key === "start_at") return setup.startAt;
    const seg = /^segments\[([0-9]+)\](?:\.([a-z_]+))?$/.exec(key);
    if (seg && kind === "program") {
      const e = blockEntry(blocks(), Number(seg[1]), seg[2] === "kind" ? "kind" : seg[2] === "label" ? "label" : "duration");
      if (e) return e;
    }
    if (kind === "preset" && preset && setup.params[preset] && setup.params[preset][key]) return setup.params[preset][key];
    if (setup.fields[kind] && setup.fields[kind][key]) return setup.fields[kind][key];
    if (key === "segments" && kind === "program") return setup.fields.program.segments;
    return null;
  }

  /** Shows errors ({key: message}) under their fields; the rest in the form's line. Focuses the first. */
  function showErrors(errors, o, fromNode) {
    let first = null;
    const general = [];
    for (const [key, message] of Object.entries(errors)) {
      const entry = errorEntry(key, o.kind, o.preset);
      if (entry) { setErr(entry, message, fromNode); if (!first && entry.input) first = entry.input; }
      else general.push(message);
    }
    setText($("err-form"), general.join(" "));
    $("err-form").classList.toggle("from-node", !!fromNode && general.length > 0);
    if (first) { first.focus(); if (first.scrollIntoView) first.scrollIntoView({ block: "center" }); }
  }

  function clearErrors() {
    setText($("setup-ok"), "");
    for (const fields of Object.values(setup.fields)) for (const e of Object.values(fields)) setErr(e, null);
    for (const g of Object.values(setup.params)) for (const e of Object.values(g)) setErr(e, null);
    clearBlockErrors(blocks());
    setErr(setup.name, null); setErr(setup.id, null); setErr(setup.startAt, null);
    setText($("err-form"), "");
  }

  /** A refusal from the node, under the field its message names (else in the form's line). */
  function refused(res, o) {
    const message = (res.reply.error && res.reply.error.message) || "refused";
    showErrors({ [F.fieldOfError(message) || "_"]: message }, o, true);
  }

  /**
   * The form's `start`, sent on the timer's topic. The page's checks first (the node's rules);
   * what only the node knows comes back as its error, shown under the field it names.
   * `setup.unchecked` (tests) sends what was typed without the page's checks.
   */
  async function submitStart() {
    const o = collect();
    clearErrors();
    const built = F.buildStart(Object.assign({ unchecked: setup.unchecked }, o, { name: setup.unchecked ? o.name : F.timerName(o.name) }));
    const errors = Object.assign({}, built.errors);
    if (setup.mode === "new") { const e = F.checkId(o.id, takenIds()); if (e) errors.id = e; }
    if (Object.keys(errors).length && !setup.unchecked) { showErrors(errors, o, false); return; }
    const body = built.body;
    if (!body) { showErrors(errors, o, false); return; }
    if (!conn.base) { setText($("err-form"), "No node yet"); return; }
    const btn = $("setup-start");
    btn.disabled = true; btn.classList.add("busy");
    const res = await conn.request(conn.base + "/timers/" + o.id + "/cmd", body, 5000);
    btn.disabled = false; btn.classList.remove("busy");
    if (!res) { setText($("err-form"), NO_ANSWER); return; }
    if (res.reply.ok === false) { refused(res, o); return; }
    try {
      localStorage.setItem(formKey(o.id), JSON.stringify({ kind: o.kind, raw: o.raw, preset: o.preset, params: o.params, name: o.name }));
      localStorage.setItem("pacer-kind", o.kind);
    } catch (e) { /* private mode: nothing remembered */ }
    if (res.reply.state) { conn.node.timers.set(o.id, res.reply.state); predict(o.id, res.reply.state); }
    $("setup").close();
    if (cfg.timer !== o.id) go(o.id); else render();
    banner.hide(); // the timer on the screen says it started (or when it will)
  }

  /** Save as workout: the form's spec kept on the node under the name, for every phone. */
  async function saveAsWorkout() {
    const o = collect();
    clearErrors();
    const s = F.buildSpec(o.kind, o.raw);
    const errors = Object.assign({}, s.errors);
    const nameErr = F.checkWorkoutName(o.name);
    if (nameErr) errors.name = nameErr;
    if (Object.keys(errors).length) { showErrors(errors, o, false); return; }
    const id = F.slug(o.name);
    const replaces = workouts().find((w) => w.id === id);
    const res = await conn.request(conn.base + "/cmd", F.saveWorkout(id, o.name, s.spec), 5000);
    if (!res) { setText($("err-form"), NO_ANSWER); return; }
    if (res.reply.ok === false) { refused(res, o); return; }
    formOk((replaces ? "Saved over the workout “" : "Saved the workout “") + o.name + "” on the node, for every phone");
  }

  /** A line in the form saying what was done (a banner would sit behind the form). */
  let okTimer = null;
  function formOk(text) {
    setText($("setup-ok"), text);
    clearTimeout(okTimer);
    okTimer = setTimeout(() => setText($("setup-ok"), ""), 6000);
  }

  return { state: setup, open, renderChoices: choices.render, forget, wire };
}

export { createSetup };
