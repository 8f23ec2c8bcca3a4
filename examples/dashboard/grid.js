// grid.js: the grid of all timers (no `?timer=`): a card per timer, in the node's order,
// with its name (a class's, with how late it started), phase, digits, label (why a rest still
// waits for recovery, an idle timer's next class: timetable.js's cardLines), round and
// progress, and its own Start / Pause /
// Resume and Acknowledge; a card opens its timer without reloading; New timer opens the
// set-up sheet. The columns are views.js's (every card on a wall screen without scrolling).
// app.js calls `render()` at every flip and change. See docs/dashboard.md, "What it shows".
import { toggleFor } from "./clock.js";
import { PHASE_TEXT, gridColumns } from "./views.js";
import { cardLines } from "./timetable.js";
import { $, setText } from "./ui.js";

/**
 * The grid. `cfg`: the page's settings (`node`, `controls`); `conn`: connection.js's;
 * `view(st)`: views.js's viewOf with the page's connection; `link(over)`: the query of a link
 * to this page with `over` changed; `go(timer)`: shows a timer; `command(timer, action,
 * button)`: sends a card's command (controls.js); `openSetup(mode)`: the set-up sheet.
 */
function createGrid({ cfg, conn, view, link, go, command, openSetup }) {
  const el = { body: document.body, grid: $("grid"), newTimer: $("new-timer") };
  let gridKey = "";

  /** Shows every card now; returns the node's instant of the earliest next flip (null: none). */
  function render() {
    const node = conn.node, up = conn.brokerUp && node.online !== false;
    const ids = node.ids();
    el.body.dataset.phase = up ? "grid" : "offline";
    document.title = (node.info ? node.info.node : cfg.node || "") + " · Pacer";
    el.newTimer.disabled = !(conn.brokerUp && conn.base && node.online !== false);
    let next = null;
    const seen = new Set();
    for (const id of ids) {
      seen.add(id);
      let card = el.grid.querySelector('[data-timer="' + CSS.escape(id) + '"]');
      if (!card) {
        card = document.createElement("article");
        card.className = "card";
        card.dataset.timer = id;
        card.innerHTML = '<a class="card-open"><div class="card-head"><span class="card-name"></span><span class="card-phase"></span></div>'
          + '<div class="card-digits"></div><div class="card-foot"><span class="card-label"></span><span class="card-round"></span></div></a>'
          + '<div class="card-ctl"><button type="button" class="card-toggle" data-action="start">Start</button>'
          + '<button type="button" class="card-ack" data-action="ack" hidden>Acknowledge</button></div>'
          + '<div class="card-bar"><div></div></div>';
        el.grid.appendChild(card);
      }
      card.querySelector(".card-open").href = "?" + link({ timer: id });
      const st = node.timers.get(id);
      const v = view(st);
      const infoName = node.info && (node.info.timers || []).find((t) => t.id === id);
      const name = (st && st.name) || (infoName && infoName.name) || id;
      card.dataset.phase = v.phase;
      const lines = cardLines(st, conn.nodeNow(), { next: node.next.get(id), current: node.current.get(id), recovery: node.recovery.get(id) }, name);
      setText(card.querySelector(".card-name"), lines.name);
      setText(card.querySelector(".card-phase"), PHASE_TEXT[v.phase] || v.phase);
      const cd = card.querySelector(".card-digits"), ct = v.text || "--:--";
      setText(cd, ct);
      cd.dataset.len = String(Math.max(4, ct.length));
      const klass = st && v.text ? lines.next : null;
      setText(card.querySelector(".card-label"), st && v.text ? lines.label : "");
      if (klass && klass.next != null && (next == null || klass.next < next)) next = klass.next;
      setText(card.querySelector(".card-round"), st && v.text && st.rounds > 1 ? st.round + "/" + st.rounds : "");
      card.querySelector(".card-bar div").style.width = (v.v && v.v.progress != null ? v.v.progress * 100 : 0).toFixed(2) + "%";
      // The card's own controls: Start / Pause / Resume, and Acknowledge while it rings.
      const s = st ? st.status : null, live = !!v.text && up;
      const tg = card.querySelector(".card-toggle"), ack = card.querySelector(".card-ack");
      const tf = toggleFor(s === "expired" ? null : s);
      setText(tg, tf.label); tg.dataset.action = tf.action;
      tg.setAttribute("aria-label", tf.label + " " + name);
      ack.setAttribute("aria-label", "Acknowledge " + name);
      tg.hidden = s === "expired"; ack.hidden = s !== "expired";
      tg.disabled = ack.disabled = !live;
      if (v.v && v.v.next != null && (next == null || v.v.next < next)) next = v.v.next;
    }
    for (const card of [...el.grid.children]) if (!seen.has(card.dataset.timer)) card.remove();
    layout(ids.length);
    if (!ids.length) el.grid.dataset.empty = conn.base ? "This node has no timers yet." : "Looking for a Pacer node…";
    else delete el.grid.dataset.empty;
    return next;
  }

  /** The columns, measured again only when the number of cards or the grid's box changed. */
  function layout(n) {
    const r = el.grid.getBoundingClientRect();
    const key = n + "|" + Math.round(r.width) + "x" + Math.round(r.height);
    if (key === gridKey || !n) return;
    gridKey = key;
    const gap = parseFloat(getComputedStyle(el.grid).rowGap) || 0;
    el.grid.style.gridTemplateColumns = gridColumns(n, r.width, r.height, gap, cfg.controls);
  }

  /** The columns are measured again (the view changed). */
  function relayout() { gridKey = ""; }

  /** A card's buttons command its timer; a card's link opens it in place; New timer. */
  function wire() {
    el.grid.addEventListener("click", (e) => {
      const card = e.target.closest(".card");
      if (!card) return;
      const b = e.target.closest("button[data-action]");
      if (b) { command(card.dataset.timer, b.dataset.action, b); return; }
      const a = e.target.closest("a.card-open");
      if (a && e.button === 0 && !e.metaKey && !e.ctrlKey && !e.shiftKey && !e.altKey) { e.preventDefault(); go(card.dataset.timer); }
    });
    el.newTimer.addEventListener("click", () => openSetup("new"));
  }

  return { render, relayout, wire };
}

export { createGrid };
