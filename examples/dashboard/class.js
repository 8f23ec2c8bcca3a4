// The class view (class.html): one timer's clock and a tile per athlete, from the
// node's retained topics (`<base>/athletes`, `<base>/athletes/<id>/state`); after a run, the
// class summary (`<base>/timers/<id>/class`) as a chart, a leaderboard by effort points, a table
// and a TCX file per athlete. The strap bridge's retained strap states (`hr-bridge/+/straps/+`)
// add each strap's battery and "no signal". Read-only: it sends only clock requests on
// `<base>/time`. The logic lives in classview.js, tcx.js and clock.js.
// URL: class.html?node=<node>&timer=<id> (also ?base=, ?broker=, ?user=&pass=, ?summary=1,
// ?board=live: the leaderboard during the run too; ?straps=<the bridge's --status-topic prefix>).
import * as PacerMQTT from "./mqtt.js";
import { valueAt, fmt } from "./clock.js";
import * as C from "./classview.js";
import { tcxDocument, tcxFileName } from "./tcx.js";
import { legacyBroker } from "./legacy.js";
import { ClockOffset } from "./offset.js"; // the node's clock offset, as the wall page measures it
import { recoveryLine } from "./timetable.js";
import { parseRecovery, tallyLine } from "./recovery.js";

// An address that gives the broker as host/port (legacy.js) is read with broker=, and says so.
const legacy = legacyBroker(location.search, location.href);
const q = new URLSearchParams(legacy ? legacy.search : location.search);
const brokerURL = q.get("broker") || PacerMQTT.defaultBroker(location.href);
const cfg = { node: q.get("node"), base: q.get("base"), timer: q.get("timer"), showSummary: q.get("summary") === "1",
  liveBoard: q.get("board") === "live", straps: (q.get("straps") || "hr-bridge").replace(/\/+$/, "") };
const localNow = () => performance.timeOrigin + performance.now();
const $ = (id) => document.getElementById(id);
const PHASE_TEXT = { idle: "Ready", scheduled: "Starts in", prepare: "Get ready", work: "Work", rest: "Rest", set_rest: "Set rest",
  cooldown: "Cool down", countdown: "Countdown", session: "Session", overtime: "Overtime", paused: "Paused", expired: "Time's up",
  finished: "Finished", cancelled: "Cancelled" };

const clock = new ClockOffset({ fromStates: true });
const app = { base: null, up: false, get offset() { return clock.offset; }, timer: null, states: new Map(), list: null, summary: null, hidden: false,
  pending: new Map(), seq: 0, tick: null, straps: new Map(), bridges: new Map(), recovery: null };
const clientId = "pacer-class-" + Math.random().toString(36).slice(2, 10);
const client = new PacerMQTT.Client(brokerURL, { clientId, keepalive: 10, username: q.get("user") || undefined, password: q.get("pass") || undefined });
const nodeNow = () => clock.nodeAt(localNow());
window.pacerClass = app; // for the browser suite

function setBase(base) {
  app.base = base;
  const subs = [base + "/athletes", base + "/athletes/+/state", base + "/reply/" + clientId];
  if (cfg.timer) subs.push(base + "/timers/" + cfg.timer + "/state", base + "/timers/" + cfg.timer + "/class", base + "/timers/" + cfg.timer + "/recovery");
  client.subscribe(subs, 1);
  if (client.connected) resync();
}

client.on("connect", () => {
  app.up = true;
  if (cfg.base || cfg.node) setBase(cfg.base || "pacer/" + cfg.node); else client.subscribe("pacer/+/info", 1);
  // The strap bridge's retained states (examples/hr-bridge): battery and contact per strap.
  client.subscribe([cfg.straps + "/+/straps/+", cfg.straps + "/+/status"], 1);
  render();
});
client.on("close", () => { app.up = false; clock.reset(); render(); });
client.on("message", (msg) => {
  if (msg.topic.startsWith(cfg.straps + "/")) {
    if (/\/straps\/[^/]+$/.test(msg.topic)) {
      let st = null;
      try { st = msg.payload ? JSON.parse(msg.payload) : null; } catch (e) { st = null; }
      if (st) app.straps.set(msg.topic, st); else app.straps.delete(msg.topic);
    } else if (/\/status$/.test(msg.topic)) app.bridges.set(msg.topic.replace(/\/status$/, ""), String(msg.payload || ""));
    render();
    return;
  }
  if (!app.base) {
    const m = /^(pacer\/[^/]+)\/info$/.exec(msg.topic);
    if (m && msg.payload) setBase(m[1]);
    return;
  }
  const rel = msg.topic.startsWith(app.base + "/") ? msg.topic.slice(app.base.length + 1) : null;
  if (rel == null) return;
  if (cfg.timer && rel === "timers/" + cfg.timer + "/recovery") { app.recovery = parseRecovery(msg.payload); render(); return; }
  let body = null;
  if (msg.payload) { try { body = JSON.parse(msg.payload); } catch (e) { return; } }
  if (rel === "athletes") { app.list = body; render(); return; }
  const a = /^athletes\/([^/]+)\/state$/.exec(rel);
  if (a) { if (body) app.states.set(a[1], body); else app.states.delete(a[1]); render(); return; }
  if (rel.startsWith("reply/")) { const p = body && app.pending.get(body.id); if (p) { app.pending.delete(body.id); p(body, localNow()); } return; }
  if (cfg.timer && rel === "timers/" + cfg.timer + "/state") {
    // A live state bounds the offset from below until a clock reply comes (offset.js).
    if (body && !msg.retain && body.as_of_ms != null) clock.live(body.as_of_ms, localNow());
    const wasRunning = app.timer && app.timer.status === "running";
    app.timer = body;
    if (body && body.status === "running" && !wasRunning) app.hidden = false;
    render(); return;
  }
  if (cfg.timer && rel === "timers/" + cfg.timer + "/class") { app.summary = body; app.hidden = false; render(); renderSummary(); }
});

/** The node's clock: a round of a few requests on <base>/time, the shortest round trip wins (offset.js). */
async function resync() {
  const round = clock.round();
  for (let i = 0; i < 4 && client.connected && app.base; i++) {
    const id = clientId + "-" + (++app.seq), sent = localNow();
    const reply = await new Promise((resolve) => {
      const t = setTimeout(() => { app.pending.delete(id); resolve(null); }, 2000);
      app.pending.set(id, (r, at) => { clearTimeout(t); resolve({ r, at }); });
      client.publish(app.base + "/time", JSON.stringify({ id }), { qos: 1, properties: { responseTopic: app.base + "/reply/" + clientId, correlationData: id } });
    });
    if (!reply || typeof reply.r.now_ms !== "number") break;
    round.add(sent, reply.at, reply.r.now_ms);
  }
  if (round.end().best) render();
}
setInterval(() => { if (client.connected && app.base) resync(); }, 300000);

function setText(node, text) { if (node.textContent !== text) node.textContent = text; }

function render() {
  clearTimeout(app.tick);
  const now = nodeNow();
  let next = null;
  // The clock.
  const st = app.timer;
  if (!app.up) { setText($("phase"), "Offline"); setText($("status"), "No connection to the broker — retrying"); }
  else if (!cfg.timer) { setText($("phase"), "Class"); setText($("status"), "Add ?timer=<id> to show a timer's clock"); }
  else setText($("status"), st ? "" : "No timer '" + cfg.timer + "' yet");
  if (st) {
    const v = valueAt(st, now);
    const phase = st.status === "paused" ? "paused" : st.phase || st.status;
    document.body.dataset.phase = phase;
    // A rest that ends on recovery says so, and why it still waits ("12 of 14 recovered").
    const recovery = recoveryLine(st, now);
    setText($("phase"), recovery || PHASE_TEXT[phase] || phase);
    $("phase").classList.toggle("long", recovery != null);
    setText($("digits"), st.status === "running" && now == null ? "--:--" : fmt(v.secs));
    setText($("round"), st.rounds > 1 ? "Round " + st.round + "/" + st.rounds : "");
    setText($("label"), st.label || "");
    next = v.next;
  }
  const tally = tallyLine(st, app.recovery);
  setText($("tally"), tally || "");
  $("tally").hidden = !tally;
  // The tiles.
  const staleMs = app.list && typeof app.list.stale_after_ms === "number" ? app.list.stale_after_ms : 10000;
  const models = C.tiles(app.states, now, staleMs, app.list, app.straps, app.bridges);
  const box = $("tiles");
  const summaryShown = !$("summary").hidden;
  const area = box.getBoundingClientRect();
  const viewH = document.documentElement.clientHeight;
  const height = summaryShown ? Math.max(160, viewH * 0.45) : Math.max(120, viewH - area.top - 8);
  // A phone scrolls two columns; a wall fits every tile as large as it can.
  const g = area.width < 700 ? C.phoneGrid(models.length, area.width - 10) : C.gridFor(models.length, area.width - 16, height - 8, 1.6);
  box.style.gridTemplateColumns = "repeat(" + g.cols + ", " + Math.floor(g.tileW) + "px)";
  box.style.gridAutoRows = Math.floor(g.tileH) + "px";
  box.style.fontSize = Math.max(11, Math.floor(Math.min(g.tileH / 5.8, g.tileW / 8.5))) + "px";
  const seen = new Set();
  for (const m of models) {
    seen.add(m.id);
    let tile = box.querySelector('[data-athlete="' + CSS.escape(m.id) + '"]');
    if (!tile) {
      tile = document.createElement("div");
      tile.className = "tile"; tile.dataset.athlete = m.id;
      tile.innerHTML = '<div class="tile-head"><span class="tile-name"></span><span class="tile-pct"></span></div><div class="tile-bpm"><span></span><small>bpm</small></div>' +
        '<div class="tile-foot"><span class="tile-zone"></span><span class="tile-points"></span><span class="tile-battery"></span></div>';
    }
    box.appendChild(tile); // in order
    tile.dataset.stale = String(m.stale); tile.dataset.zone = String(m.zone); tile.dataset.signal = m.signal;
    tile.dataset.lowBattery = String(m.lowBattery);
    tile.style.setProperty("--athlete", m.colour || "#555");
    tile.style.background = m.zoneColour || ""; tile.style.color = m.ink || "";
    setText(tile.querySelector(".tile-name"), m.name);
    setText(tile.querySelector(".tile-bpm span"), m.bpm || "—");
    tile.querySelector(".tile-bpm small").hidden = !m.bpm;
    setText(tile.querySelector(".tile-zone"), m.zoneText);
    setText(tile.querySelector(".tile-pct"), m.pct);
    setText(tile.querySelector(".tile-points"), m.points);
    const battery = tile.querySelector(".tile-battery");
    setText(battery, m.battery ? (m.lowBattery ? "▮ low " : "▮ ") + m.battery : "");
    battery.title = m.battery ? "strap battery " + m.battery : "";
    if (m.blankAt != null && (next == null || m.blankAt < next)) next = m.blankAt;
  }
  for (const tile of [...box.children]) if (!seen.has(tile.dataset.athlete)) tile.remove();
  // The summary: after a run (or with ?summary=1), unless hidden.
  const running = st && (st.status === "running" || st.status === "paused");
  $("summary").hidden = !app.summary || app.hidden || (running && !cfg.showSummary);
  // The live leaderboard (?board=live) while the run goes; after it, the summary's.
  const live = cfg.liveBoard && running;
  $("live-board").hidden = !live;
  if (live) renderBoard($("live-board-list"), C.liveLeaderboard(app.states, app.list));
  if (next != null && app.offset != null) app.tick = setTimeout(render, Math.max(20, next - nodeNow() + 5));
  else if (st && st.status === "running") app.tick = setTimeout(render, 250);
}

function svg(tag, attrs, text) {
  const n = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, v);
  if (text != null) n.textContent = text;
  return n;
}

/** A leaderboard's rows: place, name and points; an opted-out athlete is not among them (classview.js). */
function renderBoard(list, rows) {
  const key = JSON.stringify(rows);
  if (list.dataset.key === key) return;
  list.dataset.key = key;
  list.replaceChildren(...rows.map((r) => {
    const li = document.createElement("li");
    li.style.setProperty("--athlete", r.colour || "#555");
    li.dataset.athlete = r.id;
    const place = document.createElement("span"); place.className = "board-place"; place.textContent = String(r.place);
    const name = document.createElement("span"); name.className = "board-name"; name.textContent = r.name;
    const pts = document.createElement("span"); pts.className = "board-points"; pts.textContent = r.points + " pts";
    li.append(place, name, pts);
    return li;
  }));
  if (!rows.length) { const li = document.createElement("li"); li.className = "board-empty"; li.textContent = "No points yet"; list.append(li); }
}

function renderSummary() {
  const s = app.summary;
  if (!s) return;
  const chart = $("chart");
  const box = chart.getBoundingClientRect();
  const width = Math.max(300, Math.round(box.width || window.innerWidth * 0.9)), height = Math.max(200, Math.round(box.height || 320));
  chart.setAttribute("viewBox", "0 0 " + width + " " + height);
  chart.replaceChildren();
  const g = C.chartGeometry(s, width, height);
  for (const b of g.bands) { const r = svg("rect", { x: b.x, y: g.plot.y, width: b.w, height: g.plot.h, class: "band-" + b.phase }); r.append(svg("title", {}, b.label)); chart.append(r); }
  for (const t of g.yTicks) { chart.append(svg("line", { x1: g.plot.x, x2: g.plot.x + g.plot.w, y1: t.y, y2: t.y, class: "grid" })); chart.append(svg("text", { x: g.plot.x - 6, y: t.y + 4, "text-anchor": "end" }, String(t.bpm))); }
  for (const t of g.xTicks) chart.append(svg("text", { x: t.x, y: g.plot.y + g.plot.h + 18, "text-anchor": "middle" }, t.text));
  for (const line of g.lines) for (const p of line.paths) { const pl = svg("polyline", { points: p, stroke: line.colour }); pl.append(svg("title", {}, line.name)); chart.append(pl); }
  $("legend").replaceChildren(...g.lines.map((l) => { const e = document.createElement("span"); e.style.setProperty("--c", l.colour); e.textContent = l.name; return e; }));
  const ended = { finished: "finished", cancelled: "cancelled", reset: "reset", restarted: "restarted" }[s.ended] || s.ended;
  setText($("summary-title"), "Class summary · " + (s.timer || "") + " · " + C.fmtMs((s.due_ms || 0) - (s.started_at_ms || 0)) + " · " + ended + (s.partial ? " (recorded from a restart)" : ""));
  renderBoard($("board-list"), C.summaryLeaderboard(s));
  // A TCX file per athlete, made here from the summary (tcx.js; `pacer history --tcx` writes the same).
  for (const a of $("tcx-links").querySelectorAll("a")) if (a.href.startsWith("blob:")) URL.revokeObjectURL(a.href);
  $("tcx-links").replaceChildren(...(s.athletes || []).map((a) => {
    const link = document.createElement("a");
    link.textContent = a.name || a.id;
    link.dataset.athlete = a.id;
    link.href = URL.createObjectURL(new Blob([tcxDocument(s, a.id)], { type: "application/vnd.garmin.tcx+xml" }));
    link.download = tcxFileName(s, a.id);
    return link;
  }));
  const table = $("table");
  const head = "<thead><tr><th>Athlete</th><th>Segment</th><th>Avg</th><th>Peak</th><th>Most time</th><th>Recovery</th><th>Points</th>" +
    [1, 2, 3, 4, 5].map((z) => '<th><span class="z" style="background:' + C.ZONES[z].colour + ";color:" + C.ZONES[z].ink + '">Z' + z + "</span></th>").join("") + "</tr></thead>";
  const esc = (t) => String(t).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  const rows = C.summaryRows(s).map((r) => "<tr" + (r.total ? ' class="total"' : "") + "><td>" + esc(r.name) + "</td><td>" + esc(r.segment) + "</td><td>" + r.avg + "</td><td>" + r.peak +
    "</td><td>" + esc(r.zoneText) + "</td><td>" + esc(r.recovery) + "</td><td>" + (r.points || "") + "</td>" + [1, 2, 3, 4, 5].map((z) => "<td>" + (r.zones[z] >= 500 ? C.fmtMs(r.zones[z]) : "") + "</td>").join("") + "</tr>");
  table.innerHTML = head + "<tbody>" + rows.join("") + "</tbody>";
  const csv = $("summary-csv");
  if (csv.href.startsWith("blob:")) URL.revokeObjectURL(csv.href);
  csv.href = URL.createObjectURL(new Blob([C.summaryCSV(s)], { type: "text/csv" }));
  csv.download = "class-" + (s.timer || "run") + "-" + new Date(s.due_ms || Date.now()).toISOString().slice(0, 16).replace(/[:T]/g, "-") + ".csv";
}

$("summary-hide").addEventListener("click", () => { app.hidden = true; render(); });
window.addEventListener("resize", () => { render(); renderSummary(); });
window.pacerClassRender = render; // for the browser suite
render();
if (legacy) { const n = $("legacy-note"); n.textContent = legacy.note; n.hidden = false; }
window.__pacerStarted = true; // boot.js: the page started

// The service worker of the wall page (sw.js), so a wall that shows this view reopens it from
// the cache while the server is down (a secure context only, as there; ?sw=0: none).
app.sw = { state: "unavailable" };
if ("serviceWorker" in navigator && window.isSecureContext && q.get("sw") !== "0") {
  app.sw = { state: "registering" };
  navigator.serviceWorker.register("sw.js").then((r) => { app.sw = { state: "registered", scope: r.scope }; },
    (e) => { app.sw = { state: "failed", error: String(e && e.message || e) }; });
}
