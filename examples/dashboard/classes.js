// classes.js: the phone page's Classes sheet: today's classes from the node's
// `list_schedules` reply with a Skip button on each schedule's next class (`skip_next`), and
// the displays kept on the node by command (`<base>/displays`) with a small form that saves an
// AWTRIX clock or a WLED light (`save_display`) and a Delete per display (`delete_display`).
// The node's refusals are shown as it words them. What it lists and sends is timetable.js's
// and displays.js's (tested in Node); this file puts them in the sheet. See docs/dashboard.md,
// "The timetable".
import * as T from "./timetable.js";
import * as D from "./displays.js";
import { $, make, setText } from "./ui.js";

/**
 * `cfg`: the page's settings (`controls`); `conn`: connection.js's (requests on `<base>/cmd`,
 * the node's `displays`); `confirm(text, yes)`: ui.js's confirmDialog.
 */
function createClasses({ cfg, conn, confirm }) {
  const el = {
    open: $("classes-open"), dialog: $("classes"), day: $("classes-day"), list: $("classes-list"), error: $("classes-error"),
    dNote: $("displays-note"), dList: $("displays-list"), dError: $("displays-error"), dOk: $("displays-ok"), save: $("display-save"),
    type: $("d-type"), display: $("d-display"), prefix: $("d-prefix"), topic: $("d-topic"), timers: $("d-timers"), brightness: $("d-brightness"),
  };
  const state = { classes: null, loading: false, lastReply: null };

  /** Sends a node command on `<base>/cmd`; resolves with connection.js's `{reply, …}` or null. */
  function send(body, button) {
    if (!conn.base) return Promise.resolve(null);
    if (button) button.classList.add("busy");
    return conn.request(conn.base + "/cmd", body, 5000).then((res) => { if (button) button.classList.remove("busy"); return res; });
  }

  /** Asks the node for today's classes and lists them. */
  async function load() {
    state.loading = true;
    setText(el.error, "");
    const res = await send(T.listCommand(), null);
    state.loading = false;
    state.lastReply = res ? res.reply : null;
    if (!res) { setText(el.error, "No answer from the timer node"); return; }
    if (res.reply.ok === false) { setText(el.error, (res.reply.error && res.reply.error.message) || "refused"); return; }
    state.classes = T.todaysClasses(res.reply);
    renderClasses();
  }

  function renderClasses() {
    const c = state.classes;
    el.list.replaceChildren();
    if (!c) return;
    setText(el.day, c.rows.length ? c.date + (c.zone ? " · " + c.zone : "") : "No classes today.");
    for (const row of c.rows) {
      const li = make("li", "class-row");
      li.dataset.status = row.status;
      li.append(make("span", "class-time", row.time), make("span", "class-name", row.name), make("span", "class-status", row.text));
      if (row.skip) {
        const b = make("button", "quiet", "Skip");
        b.type = "button";
        b.title = "Skip this class (the timer does not start for it)";
        b.disabled = !cfg.controls;
        b.addEventListener("click", () => skip(row, b));
        li.append(b);
      }
      el.list.append(li);
    }
  }

  async function skip(row, button) {
    const yes = await confirm("Skip “" + row.name + "” at " + row.time + "? Its timer will not start for it.", "Skip");
    if (!yes) return;
    const r = D.replyText(await send(T.skipCommand(row.schedule), button), "");
    if (!r.ok) { setText(el.error, r.text); return; }
    load();
  }

  /** The displays saved by command (from the retained `<base>/displays`), each with Delete. */
  function renderDisplays() {
    const d = conn.node.displays;
    el.dList.replaceChildren();
    const configured = d && d.configured ? d.configured + " more in the node's configuration file." : "";
    setText(el.dNote, !d ? "The node has not said which displays it keeps." : d.displays.length ? configured : "None saved from here. " + configured);
    if (!d) return;
    for (const x of d.displays) {
      const li = make("li", "display-row");
      li.dataset.display = x.display;
      li.append(make("span", "display-text", D.describe(x)));
      const b = make("button", "quiet danger", "Delete");
      b.type = "button";
      b.disabled = !cfg.controls;
      b.addEventListener("click", () => remove(x.display, b));
      li.append(b);
      el.dList.append(li);
    }
  }

  async function remove(id, button) {
    const yes = await confirm("Delete the display “" + id + "”? What it shows goes blank.", "Delete");
    if (!yes) return;
    showResult(D.replyText(await send(D.deleteCommand(id), button), "Deleted “" + id + "”"));
  }

  function showResult(r) {
    setText(el.dError, r.ok ? "" : r.text);
    el.dError.classList.toggle("from-node", !r.ok && r.text !== "No answer from the timer node");
    setText(el.dOk, r.ok ? r.text : "");
  }

  /** The form's fields for its kind: a prefix and timers for an AWTRIX clock, a topic, one timer and brightness for a WLED light. */
  function showKind() {
    for (const f of el.dialog.querySelectorAll("[data-for]")) f.hidden = f.dataset.for !== el.type.value;
    const one = el.type.value === "wled";
    setText(el.dialog.querySelector('label[for="d-timers"]'), one ? "Timer" : "Timers");
    el.timers.placeholder = one ? "main" : "main, hall";
  }

  async function save() {
    const c = D.saveCommand({
      type: el.type.value, display: el.display.value, prefix: el.prefix.value, topic: el.topic.value,
      timers: el.timers.value, brightness: el.brightness.value,
    });
    for (const i of [el.display, el.prefix, el.topic, el.timers, el.brightness]) i.removeAttribute("aria-invalid");
    if (c.error) {
      const input = el[c.error.field];
      if (input) input.setAttribute("aria-invalid", "true");
      setText(el.dOk, "");
      el.dError.classList.remove("from-node");
      setText(el.dError, c.error.field + ": " + c.error.message);
      return;
    }
    showResult(D.replyText(await send(c.body, el.save), "Saved “" + c.body.display + "”"));
  }

  function open() {
    el.list.replaceChildren();
    setText(el.day, "Asking the node…");
    renderDisplays();
    if (!el.timers.value && cfg.timer) el.timers.value = cfg.timer;
    el.dialog.showModal();
    load();
  }

  function wire() {
    el.open.hidden = !cfg.controls;
    el.open.addEventListener("click", open);
    el.type.addEventListener("change", showKind);
    el.save.addEventListener("click", save);
    showKind();
  }

  /** The button is usable while the node is reachable. */
  function renderButton() { el.open.disabled = !(conn.brokerUp && conn.base && conn.node.online !== false); }

  return { state, open, load, wire, renderDisplays, renderButton };
}

export { createClasses };
