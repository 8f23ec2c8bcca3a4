// setupfields.js: the set-up sheet's inputs, drawn from the field model (fields.js through
// forms.js): one labelled field with its hint, its error line and, for the rest timer, its
// ±15 s stepper; and a program's blocks (kind, duration, label), added, moved up or down and
// removed, each checked as typed, with ids and labels a screen reader follows. setup.js puts
// them in the sheet. See docs/dashboard.md, "Setting up a timer".
import * as F from "./forms.js";
import { make } from "./ui.js";

/**
 * One labelled field of a kind (or of a preset's parameters): `f` a field of forms.js's
 * `KINDS`, `prefix` its kind (ids `f-<prefix>-<key>`), `onInput()` at each change. Returns
 * the entry `{f, input, err, box}`.
 */
function fieldEl(prefix, f, onInput) {
  const id = "f-" + prefix + "-" + f.key;
  const box = make("div", "field");
  box.dataset.field = f.key;
  let input;
  if (f.type === "bool") {
    box.className = "field check-field";
    const lab = make("label", "check");
    input = make("input"); input.type = "checkbox"; input.id = id;
    lab.append(input, document.createTextNode(" " + f.label));
    box.append(lab);
  } else {
    const lab = make("label", null, f.label); lab.htmlFor = id;
    input = make(f.type === "list" ? "textarea" : "input");
    input.id = id; input.name = f.key; input.autocomplete = "off";
    if (f.type === "list") input.rows = 2; else input.type = "text";
    input.inputMode = f.type === "count" || f.type === "hms" ? "numeric" : "text";
    if (f.type === "hms") input.placeholder = "HH:MM:SS";
    box.append(lab);
    if (f.step) {
      const row = make("div", "stepper");
      const less = make("button", "step", "−" + f.step / 1000 + " s"), more = make("button", "step", "+" + f.step / 1000 + " s");
      less.type = more.type = "button";
      less.setAttribute("aria-label", f.step / 1000 + " seconds less"); more.setAttribute("aria-label", f.step / 1000 + " seconds more");
      less.addEventListener("click", () => { input.value = F.stepDuration(input.value, -f.step); onInput(); });
      more.addEventListener("click", () => { input.value = F.stepDuration(input.value, f.step); onInput(); });
      row.append(less, input, more);
      box.append(row);
    } else box.append(input);
    if (f.hint) { const h = make("small", "hint", f.hint); h.id = "hint-" + prefix + "-" + f.key; box.append(h); }
    if (f.type === "hms") input.addEventListener("change", () => { const ms = F.parseHMS(input.value); if (ms != null && ms >= 0) input.value = F.hms(ms); });
  }
  const err = make("small", "err"); err.id = "err-" + prefix + "-" + f.key; err.setAttribute("aria-live", "polite");
  box.append(err);
  input.setAttribute("aria-describedby", (f.hint ? "hint-" + prefix + "-" + f.key + " " : "") + err.id);
  input.addEventListener("input", onInput);
  if (f.type === "bool") input.addEventListener("change", onInput);
  return { f, input, err, box };
}

/** Shows `message` (null: none) under an entry's input; `fromNode`: the node's own words. */
function setErr(entry, message, fromNode) {
  if (!entry) return;
  entry.err.textContent = message || "";
  entry.err.classList.toggle("from-node", !!(message && fromNode));
  if (entry.input) entry.input.setAttribute("aria-invalid", message ? "true" : "false");
}

// ---- a program's blocks, in the list `ol` ---

/** Adds a block `b` ({kind, duration, label}) at the end of the list. */
function addBlock(ol, b) {
  const li = make("li", "block");
  const n = () => [...ol.children].indexOf(li);
  const kindBox = make("div", "field"), durBox = make("div", "field"), labBox = make("div", "field");
  const sel = make("select");
  for (const [k, label] of F.BLOCK_KINDS) { const o = make("option", null, label); o.value = k; sel.append(o); }
  sel.value = b.kind || "work";
  const dur = make("input"); dur.type = "text"; dur.value = b.duration || ""; dur.placeholder = "open"; dur.autocomplete = "off";
  const lab = make("input"); lab.type = "text"; lab.value = b.label || ""; lab.autocomplete = "off";
  const kl = make("label", null, "Block"), dl = make("label", null, "Duration"), ll = make("label", null, "Label");
  kindBox.append(kl, sel); durBox.append(dl, dur); labBox.append(ll, lab);
  const errs = { kind: make("small", "err"), duration: make("small", "err"), label: make("small", "err") };
  kindBox.append(errs.kind); durBox.append(errs.duration); labBox.append(errs.label);
  const tools = make("div", "block-tools");
  const up = make("button", "small", "Up"), down = make("button", "small", "Down"), rm = make("button", "small danger", "Remove");
  for (const x of [up, down, rm]) x.type = "button";
  up.addEventListener("click", () => { if (li.previousElementSibling) ol.insertBefore(li, li.previousElementSibling); renumber(ol); up.focus(); });
  down.addEventListener("click", () => { if (li.nextElementSibling) ol.insertBefore(li.nextElementSibling, li); renumber(ol); down.focus(); });
  rm.addEventListener("click", () => { li.remove(); renumber(ol); });
  tools.append(up, down, rm);
  li.append(kindBox, durBox, labBox, tools);
  li._block = { sel, dur, lab, errs, up, down, rm, kl, dl, ll };
  const check = () => {
    const i = n();
    const d = F.checkField({ key: "duration", type: "duration", min: F.BLOCK_KINDS.find((k) => k[0] === sel.value)[2] }, dur.value, "segments[" + i + "].duration");
    setErr({ err: errs.duration, input: dur }, d.error);
    const l = F.checkField({ key: "label", type: "text" }, lab.value, "segments[" + i + "].label");
    setErr({ err: errs.label, input: lab }, l.error);
  };
  dur.addEventListener("input", check); lab.addEventListener("input", check); sel.addEventListener("change", check);
  ol.append(li);
  renumber(ol);
}

/** Ids, labels and the buttons' names after an add, a removal or a move. */
function renumber(ol) {
  const rows = [...ol.children];
  rows.forEach((li, i) => {
    const b = li._block, n = i + 1;
    b.sel.id = "f-block-" + n + "-kind"; b.kl.htmlFor = b.sel.id; b.kl.textContent = "Block " + n;
    b.dur.id = "f-block-" + n + "-duration"; b.dl.htmlFor = b.dur.id;
    b.lab.id = "f-block-" + n + "-label"; b.ll.htmlFor = b.lab.id;
    for (const k of ["kind", "duration", "label"]) { b.errs[k].id = "err-block-" + n + "-" + k; (k === "kind" ? b.sel : k === "duration" ? b.dur : b.lab).setAttribute("aria-describedby", b.errs[k].id); }
    b.up.setAttribute("aria-label", "Move block " + n + " up"); b.up.disabled = i === 0;
    b.down.setAttribute("aria-label", "Move block " + n + " down"); b.down.disabled = i === rows.length - 1;
    b.rm.setAttribute("aria-label", "Remove block " + n);
  });
}

/** The blocks' texts, in order: [{kind, duration, label}] (forms.js's `blocks`). */
const blocksRaw = (ol) => [...ol.children].map((li) => ({ kind: li._block.sel.value, duration: li._block.dur.value, label: li._block.lab.value }));

/** The error entry of block `i`'s `which` (kind, duration, label), or null. */
function blockEntry(ol, i, which) {
  const li = ol.children[i];
  if (!li) return null;
  return { err: li._block.errs[which], input: which === "kind" ? li._block.sel : which === "label" ? li._block.lab : li._block.dur };
}

/** Clears every block's error lines. */
function clearBlockErrors(ol) {
  for (const li of ol.children) for (const k of ["kind", "duration", "label"]) setErr({ err: li._block.errs[k], input: null }, null);
}

export { fieldEl, setErr, addBlock, renumber, blocksRaw, blockEntry, clearBlockErrors };
