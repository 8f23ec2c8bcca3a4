// setupchoices.js: the set-up sheet's Preset kind: the node's presets (its `info`, else the
// built-in ones) and its saved workouts (`<base>/workouts`) as choices, a preset's
// parameters shown when it is chosen, a saved workout's Edit (its spec back into the form)
// and Remove (`delete_workout`, after a confirmation). setup.js owns the sheet and wires
// this in. See docs/dashboard.md, "Saved workouts".
import * as F from "./forms.js";
import { setErr } from "./setupfields.js";
import { $, make, setText, NO_ANSWER } from "./ui.js";

/**
 * `conn`: connection.js's (the node's presets and workouts, requests); `setup`: the sheet's
 * state (setup.js: kind, mode, nameAuto, the fields); `confirm(text, yes)`: ui.js's;
 * `sheet`: setup.js's `setAutoName(name)`, `applyForm(o)` and `formOk(text)`.
 */
function createChoices({ conn, setup, confirm, sheet }) {
  const workouts = () => conn.node.workouts || [];

  /** The preset (or saved workout) chosen, or null. */
  const selected = () => { const r = $("setup").querySelector('input[name="preset"]:checked'); return r ? r.value : null; };

  /** The name a timer gets from a preset or saved workout. */
  function label(p) {
    const w = workouts().find((x) => x.id === p);
    if (w) return F.timerName(w.name);
    return F.PRESETS[p] ? F.PRESETS[p].label : p;
  }

  /** A preset chosen: its parameters shown (a saved workout has none), the name following it. */
  function choose(p) {
    for (const g of document.querySelectorAll("#preset-params .param-group")) g.hidden = g.dataset.preset !== p || workouts().some((w) => w.id === p);
    setErr(setup.fields.preset.preset, null);
    if (setup.nameAuto && setup.mode === "new") sheet.setAutoName(label(p));
  }

  /** The presets (node's `info`) and the saved workouts (`<base>/workouts`) as choices. */
  function render() {
    const plist = $("preset-list"), wlist = $("workout-list");
    if (!plist) return;
    const chosen = selected();
    const info = conn.node.info;
    const saved = workouts();
    const presets = (info && info.presets ? info.presets : Object.keys(F.PRESETS)).filter((p) => !saved.some((w) => w.id === p));
    const item = (value, title, about, isSaved) => {
      const li = make("li", "choice");
      const lab = make("label", "check");
      const r = make("input"); r.type = "radio"; r.name = "preset"; r.value = value; r.checked = value === chosen;
      lab.append(r, make("span", "choice-name", title));
      li.append(lab);
      if (about) li.append(make("small", "choice-about", about));
      if (isSaved) {
        const edit = make("button", "small", "Edit"); edit.type = "button"; edit.dataset.edit = value; edit.setAttribute("aria-label", "Edit " + title);
        const rm = make("button", "small danger", "Remove"); rm.type = "button"; rm.dataset.remove = value; rm.setAttribute("aria-label", "Remove " + title);
        li.append(edit, rm);
      }
      li.dataset.choice = value;
      return li;
    };
    plist.replaceChildren(...presets.map((p) => item(p, F.PRESETS[p] ? F.PRESETS[p].label : p, F.PRESETS[p] ? F.PRESETS[p].about : "a preset of the node's configuration", false)));
    wlist.replaceChildren(...saved.map((w) => item(w.id, w.name, F.summary(w.spec), true)));
    setText($("workout-note"), !conn.node.canSave() ? "This node keeps no saved workouts (an older version)."
      : saved.length ? "" : "None yet: set up a timer and tap Save as workout.");
    $("setup-save").hidden = setup.kind === "preset" || !conn.node.canSave();
  }

  /** A saved workout's Edit or Remove. */
  async function onListClick(e) {
    const b = e.target.closest("button");
    if (!b) return;
    const w = workouts().find((x) => x.id === (b.dataset.edit || b.dataset.remove));
    if (!w) return;
    if (b.dataset.edit) {
      const form = F.specToForm(w.spec);
      if (!form) { setText($("err-form"), "This workout's spec is not one the form knows"); return; }
      sheet.applyForm({ kind: form.kind, raw: form.raw, name: setup.mode === "new" ? F.timerName(w.name) : null });
      setup.nameAuto = false;
      return;
    }
    if (!(await confirm("Remove the saved workout “" + w.name + "” from the node, for every phone?", "Remove"))) return;
    const res = await conn.request(conn.base + "/cmd", F.deleteWorkout(w.id), 5000);
    if (!res) setText($("err-form"), NO_ANSWER);
    else if (res.reply.ok === false) setText($("err-form"), res.reply.error.message);
    else sheet.formOk("Removed the workout “" + w.name + "” from the node");
  }

  /** The lists' Edit and Remove buttons and their radio buttons. */
  function wire() {
    $("workout-list").addEventListener("click", onListClick);
    for (const list of [$("workout-list"), $("preset-list")]) list.addEventListener("change", (e) => { if (e.target.name === "preset") choose(e.target.value); });
  }

  return { selected, label, choose, render, wire };
}

export { createChoices };
