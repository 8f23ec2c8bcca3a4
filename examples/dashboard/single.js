// single.js: the single big clock (`?timer=`): the phase in words, the timer's name (or the
// class its run is, and how late it started), label,
// next exercise (an idle timer's next class, timetable.js), round and set, the heart rate, the progress ring and bar, and the digits
// sized to fill the screen; the controls enabled by what the timer may do now. What it shows
// is views.js's; the controls' clicks are controls.js's. app.js calls `render()` at every
// flip and change. See docs/dashboard.md, "What it shows".
import { toggleFor } from "./clock.js";
import { PHASE_TEXT } from "./views.js";
import { nextLine, classLine, recoveryLine } from "./timetable.js";
import { tallyLine } from "./recovery.js";
import { $, setText } from "./ui.js";

/** The statuses in which Cancel and Finish do something (the others are disabled). */
const CAN = {
  cancel: ["scheduled", "running", "paused", "expired"],
  finish: ["running", "paused", "expired"],
};

/**
 * The single clock. `cfg`: the page's settings (`timer`, the one shown); `conn`:
 * connection.js's (the node's state, whether connected, the node's clock); `view(st)`:
 * views.js's viewOf with the page's connection.
 */
function createSingle({ cfg, conn, view }) {
  const el = {
    body: document.body, digits: $("digits"), phase: $("phase"), name: $("name"), label: $("label"),
    next: $("next"), round: $("round"), set: $("set"), hr: $("hr"), hrValue: $("hr-value"),
    ring: $("ring"), bar: $("bar"), controls: $("controls"), toggle: $("toggle"), ack: $("ack"),
    tally: $("tally"),
  };
  let fitKey = "";

  /** Shows the timer now; returns the node's instant of its next flip (null: none). */
  function render() {
    const node = conn.node;
    const st = node.timers.get(cfg.timer) || null;
    const v = view(st);
    const phase = v.phase;
    el.body.dataset.phase = phase;
    el.body.dataset.status = st ? st.status : "none";
    document.title = (v.text ? v.text + " · " : "") + (st ? st.name || st.id : cfg.timer) + " · Pacer";
    const recovery = recoveryLine(st, conn.nodeNow());
    setText(el.phase, recovery || PHASE_TEXT[phase] || phase);
    el.phase.classList.toggle("long", recovery != null);
    // Why the rest still waits: "12 of 14 recovered · needs 12" (recovery.js).
    const tally = tallyLine(st, node.recovery.get(cfg.timer));
    setText(el.tally, tally || "");
    el.tally.hidden = !tally;
    // A run a schedule started is its class: "HIIT 45 · started 3 min late" (timetable.js).
    const klassNow = classLine(node.current.get(cfg.timer), st);
    setText(el.name, klassNow || (st ? st.name || st.id : cfg.timer));
    const text = v.text || "--:--";
    setText(el.digits, text);
    fitDigits(text);
    if (!v.text) {
      const missing = !st && node.info && conn.brokerUp && node.online !== false && !(node.info.timers || []).some((t) => t.id === cfg.timer);
      setText(el.label, v.why || (missing ? "No such timer yet: Set up makes it" : "")); setText(el.next, "");
      setText(el.round, ""); setText(el.set, ""); el.hr.hidden = true; setRing(0);
      updateControls(st, false);
      return null;
    }
    setText(el.label, st.label || "");
    // An idle timer shows its next class (the node's timetable), counting down to it.
    const klass = st.status === "idle" ? nextLine(node.next.get(cfg.timer), conn.nodeNow()) : null;
    setText(el.next, klass && klass.text ? klass.text : st.next_label ? "Next: " + st.next_label : "");
    el.next.classList.toggle("class-next", !!(klass && klass.text));
    setText(el.round, st.rounds > 1 ? "Round " + st.round + "/" + st.rounds : "");
    setText(el.set, st.sets > 1 ? "Set " + st.set + "/" + st.sets : "");
    renderHR(st);
    setRing(v.v.progress);
    updateControls(st, true);
    const flips = [v.v.next, klass && klass.next].filter((x) => x != null);
    return flips.length ? Math.min(...flips) : null;
  }

  /**
   * Sizes the digits to fill the width of their box (and no more than its height), for
   * whatever font the screen has. Measured only when the shape of the text ("0:00",
   * "00:00", "0:00:00") or the box changes: all digits have the same width (tabular).
   */
  function fitDigits(text) {
    const box = el.digits.parentElement.getBoundingClientRect();
    const key = text.replace(/[0-9]/g, "0") + "|" + Math.round(box.width) + "x" + Math.round(box.height);
    if (key === fitKey || box.width < 10) return;
    fitKey = key;
    el.digits.style.fontSize = "100px";
    const w = el.digits.getBoundingClientRect().width;
    const live = /[0-9]/.test(text); // "--:--" (offline, syncing) stays small
    const size = Math.min((100 * box.width * (live ? 0.96 : 0.4)) / w, box.height * (live ? 1.18 : 0.5));
    el.digits.style.fontSize = Math.floor(size) + "px";
  }

  function setRing(p) {
    const v = p == null ? 0 : Math.max(0, Math.min(1, p));
    el.ring.style.strokeDasharray = (v * 1000).toFixed(1) + " 1000";
    el.bar.style.width = (v * 100).toFixed(2) + "%";
  }

  function renderHR(st) {
    const now = conn.nodeNow();
    const age = st.hr_age_ms != null && st.as_of_ms != null && now != null ? st.hr_age_ms + (now - st.as_of_ms) : 0;
    const fresh = st.hr != null && age < 10000;
    el.hr.hidden = !fresh;
    if (fresh) { setText(el.hrValue, String(st.hr)); el.hr.dataset.zone = st.hr_zone || 0; }
  }

  function updateControls(st, live) {
    const up = conn.brokerUp && conn.node.online !== false;
    const ok = live && up;
    const s = st ? st.status : null;
    for (const b of el.controls.querySelectorAll("button")) {
      const a = b.dataset.action;
      if (b.dataset.ui === "setup") b.disabled = !(conn.brokerUp && conn.base && conn.node.online !== false);
      else b.disabled = !ok || (CAN[a] != null && !CAN[a].includes(s));
    }
    if (!st) return;
    const tf = toggleFor(s === "expired" ? null : s);
    el.toggle.textContent = tf.label;
    el.toggle.dataset.action = tf.action;
    el.ack.hidden = s !== "expired";
    el.toggle.hidden = s === "expired"; // the alarm's one big button is Acknowledge
    el.ack.classList.toggle("primary", s === "expired");
    el.body.classList.toggle("is-expired", s === "expired");
  }

  /** The digits are measured again (the view changed). */
  function refit() { fitKey = ""; }

  /** A double click on the digits puts the page full-screen (and back). */
  function wireFullscreen() {
    el.digits.addEventListener("dblclick", () => {
      if (document.fullscreenElement) document.exitFullscreen();
      else if (document.documentElement.requestFullscreen) document.documentElement.requestFullscreen().catch(() => {});
    });
  }

  return { render, refit, wireFullscreen };
}

export { createSingle, CAN };
