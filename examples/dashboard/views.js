// views.js: what the wall page shows, decided without the DOM: a timer's phase in words, its
// clock text now (live only when the broker is up, the node online and the clock measured),
// the footer's connection and clock lines, and the grid's columns. single.js, grid.js and
// footer.js put them on the page; Tests/page/views.test.mjs tests this very file in Node
// against the protocol's examples. See docs/dashboard.md, "What it shows".
import { valueAt, fmt } from "./clock.js";

const PHASE_TEXT = {
  idle: "Ready", scheduled: "Starts in", prepare: "Get ready", work: "Work", rest: "Rest",
  set_rest: "Set rest", cooldown: "Cool down", countdown: "Countdown", session: "Session",
  overtime: "Overtime", paused: "Paused", expired: "Time's up", finished: "Finished",
  cancelled: "Cancelled", offline: "Offline", syncing: "Syncing",
};

/**
 * What to show for a timer's state `st` (null: none heard): `{phase, why}` while it cannot
 * count (`offline` with the reason, `syncing`), else `{phase, v, text}` with clock.js's value
 * at the node's instant `s.now` and its clock text. `s`: `{brokerUp, nodeOnline, now}`, `now`
 * null while the node's clock is not measured.
 */
function viewOf(st, s) {
  if (!s.brokerUp) return { phase: "offline", why: "No connection to the broker — retrying" };
  if (s.nodeOnline === false) return { phase: "offline", why: "The timer node is offline" };
  if (!st) return { phase: "syncing", why: null };
  const live = st.status === "running" || st.status === "scheduled";
  if (live && s.now == null) return { phase: "syncing", why: null };
  const v = valueAt(st, s.now);
  const phase = st.status === "paused" ? "paused" : st.phase || st.status;
  return { phase, v, text: fmt(v.secs) };
}

/**
 * The footer's two lines: `conn` (the node's name, or what is offline), `ok` (all
 * connected), and `sync` (how well the clock is known). `s`: `{brokerUp, nodeOnline, info,
 * node (?node=), base, offset, method ("time" | "state"), rtt, syncing}`.
 */
function statusLine(s) {
  const node = s.info ? s.info.node : s.node || (s.base ? s.base.split("/").pop() : "");
  let conn;
  if (!s.brokerUp) conn = "broker offline, retrying";
  else if (s.nodeOnline === false) conn = "node " + node + " offline";
  else conn = node ? "node " + node : "connected";
  let sync = "";
  if (s.offset != null) {
    sync = s.method === "time" ? "clock ±" + Math.max(1, Math.round(s.rtt / 2)) + " ms"
      : s.syncing ? "syncing clock…" : "clock ≈ from states (no time reply)";
  }
  return { conn, ok: s.brokerUp && s.nodeOnline !== false, sync };
}

/**
 * The grid's columns for `n` cards in a box of `width` × `height` px with `gap` between
 * cards: the number that makes the cards largest while all fit on the screen (a wall shows
 * every timer without scrolling), as a CSS grid-template-columns; "" below 600 px (a phone:
 * one scrolling column). `controls`: the cards carry buttons (taller).
 */
function gridColumns(n, width, height, gap, controls) {
  const W = width - 2 * gap, H = height - 2 * gap;
  if (W < 600) return "";
  const extra = 110 + (controls ? 64 : 0); // head, foot, bar (and the card's buttons) besides the digits (40cqw)
  const cardH = (w) => 0.42 * w + extra;
  let best = { cols: 1, w: 0 };
  for (let cols = 1; cols <= n; cols++) {
    const rows = Math.ceil(n / cols);
    let w = (W - (cols - 1) * gap) / cols;
    const tooTall = rows * cardH(w) + (rows - 1) * gap - H;
    if (tooTall > 0) w = ((H - (rows - 1) * gap) / rows - extra) / 0.42;
    if (w > best.w) best = { cols, w };
  }
  best.w = Math.max(260, Math.floor(best.w));
  return "repeat(" + best.cols + ", " + best.w + "px)";
}

export { PHASE_TEXT, viewOf, statusLine, gridColumns };
