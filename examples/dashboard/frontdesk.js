// The front desk: every room (node) under the root topic at a glance, each with its timers
// counting locally, online or offline. The model is desk.js (tested in Node); this file wires
// it to MQTT (mqtt.js) and the DOM, and keeps DOM work to what changed: a message touches
// its own room's header or its own timer's row, and a clock's text is written only when its
// second flips, from a heap of the next flips (desk.js FlipHeap). See docs/dashboard.md.
import * as PacerMQTT from "./mqtt.js";
import { Desk, FlipHeap } from "./desk.js";
import { legacyBroker } from "./legacy.js";

// An address that gives the broker as host/port (legacy.js) is read with broker=, and says so.
const legacy = legacyBroker(location.search, location.href);
const q = new URLSearchParams(legacy ? legacy.search : location.search);
const cfg = {
  broker: q.get("broker") || PacerMQTT.defaultBroker(location.href),
  root: (q.get("root") || "pacer").replace(/\/+$/, ""),
  // ?mqtt=3.1.1 or 5 fixes the version; by default MQTT 5, and 3.1.1 when the broker will not speak it
  mqtt: q.get("mqtt") === "3.1.1" ? 4 : q.get("mqtt") === "5" ? 5 : "auto",
  // ?nodes=a,b: rooms to ask for a snapshot (`list`) when their retained states do not come
  // (a broker that keeps retained messages per member, or none on wildcards; docs/deployment.md)
  nodes: (q.get("nodes") || "").split(",").map((s) => s.trim()).filter(Boolean),
  user: q.get("user"), pass: q.get("pass"),
};
const localNow = () => performance.timeOrigin + performance.now();
const clientId = "pacer-desk-" + Math.random().toString(36).slice(2, 10);
const desk = new Desk(cfg.root);
const flips = new FlipHeap();
const rooms = new Map();            // node id -> {el, head, badge, count, list, rows: Map(timer -> row)}
const dirtyNodes = new Set(), dirtyTimers = new Set(); // "node\u0000timer"
const pending = new Map();          // request id -> {node, sent, kind}
const stats = { messages: 0, handleMs: 0, flushes: 0, flushMs: 0, flipWrites: 0, rowWrites: 0, maxFlushMs: 0 };
let seq = 0, frame = 0, wake = 0;
const el = { rooms: document.getElementById("rooms"), conn: document.getElementById("conn"), summary: document.getElementById("summary") };

const client = new PacerMQTT.Client(cfg.broker, { protocolVersion: cfg.mqtt, clientId, keepalive: 15,
  username: cfg.user || undefined, password: cfg.pass || undefined });
// Replies: to a response topic of our own over MQTT 5, else on each node's `reply` (3.1.1).
const replyFilter = () => client.protocolVersion === 5 ? cfg.root + "/+/reply/" + clientId : cfg.root + "/+/reply";
// Rooms are found on the retained `info` and `status` of every node (one wildcard each); their
// timers' states are subscribed room by room, paced, never all at once: a broker queues at
// most so many messages for a client that has not read them yet (mosquitto's
// max_queued_messages, 1000 in deploy/mosquitto/pacer.conf, QoS 0 included), and 50 rooms
// of 20 timers are 1,100 retained messages: over WebSockets a tenth of them were dropped
// (measured, at QoS 0 and 1). A state lost with a connection comes back on the resubscribe.
client.subscribe([cfg.root + "/+/info", cfg.root + "/+/status"], 0);
client.subscribe(replyFilter(), 1);
const PACE_MS = 40;                 // between two rooms' subscriptions: time to read a room's states
const stateSubs = new Set(), subQueue = [];
let subPumping = false;
for (const id of cfg.nodes) { desk.node(id); subscribeRoom(id); }
function subscribeRoom(node) {
  if (stateSubs.has(node) || subQueue.includes(node)) return;
  subQueue.push(node);
  if (!subPumping && client.connected) pumpSubs();
}
async function pumpSubs() {
  subPumping = true;
  try {
    while (subQueue.length && client.connected) {
      const node = subQueue.shift();
      stateSubs.add(node);
      await client.subscribe(cfg.root + "/" + node + "/timers/+/state", 0);
      await new Promise((r) => setTimeout(r, PACE_MS));
    }
  } finally { subPumping = false; }
}
client.on("connect", () => {
  el.conn.textContent = "connected"; el.conn.dataset.up = "1";
  client.subscribe(replyFilter(), 1);   // the version may have changed since the first subscribe
  for (const n of desk.nodes.values()) { n.sync.reset(); queueSync(n.id); subscribeRoom(n.id); }
  if (!subPumping) pumpSubs();
});
client.on("close", () => {
  el.conn.textContent = "reconnecting…"; el.conn.dataset.up = "0";
  // the rooms' subscriptions are made again, paced, after the reconnect (not all at once by mqtt.js)
  for (const node of stateSubs) client.subs.delete(cfg.root + "/" + node + "/timers/+/state");
  stateSubs.clear();
});
client.on("message", (msg) => {
  const t0 = performance.now();
  const local = localNow();
  stats.messages++;
  if (msg.topic.endsWith("/reply") || msg.topic.endsWith("/reply/" + clientId)) onReply(msg, local);
  else {
    for (const c of desk.apply(msg.topic, msg.payload, local)) {
      if (c.what === "node") { dirtyNodes.add(c.node); subscribeRoom(c.node); if (desk.nodes.get(c.node)?.online) queueSync(c.node); }
      else if (c.what === "gone") { removeRoom(c.node); }
      else dirtyTimers.add(c.node + "\u0000" + c.timer);
    }
    schedule();
  }
  stats.handleMs += performance.now() - t0;
});

// ---- clock sync, one node at a time (3 samples each), then the snapshot fallback ----------
const syncQueue = [];
let syncing = false;
function queueSync(node) {
  const n = desk.nodes.get(node);
  if (!n || n.sync.offset != null || syncQueue.includes(node)) return;
  syncQueue.push(node);
  if (!syncing) runSync();
}
function request(node, topic, body, kind) {
  const id = clientId + "-" + (++seq);
  body.id = id;
  return new Promise((resolve) => {
    const timer = setTimeout(() => { pending.delete(id); resolve(null); }, 3000);
    pending.set(id, { node, kind, sent: localNow(), resolve: (r, at) => { clearTimeout(timer); resolve({ r, at }); } });
    const props = client.protocolVersion === 5 ? { responseTopic: cfg.root + "/" + node + "/reply/" + clientId, correlationData: id } : undefined;
    client.publish(topic, JSON.stringify(body), { qos: 1, properties: props });
  });
}
function onReply(msg, at) {
  let r; try { r = JSON.parse(msg.payload); } catch (e) { return; }
  const p = r && r.id != null ? pending.get(r.id) : null;
  if (!p) return;
  pending.delete(r.id);
  p.resolve(r, at);
}
async function runSync() {
  syncing = true;
  try {
    while (syncQueue.length && client.connected) {
      const node = syncQueue.shift();
      const n = desk.nodes.get(node);
      if (!n) continue;
      for (let i = 0; i < 3; i++) {
        const sent = localNow();
        const res = await request(node, n.base + "/time", {}, "time");
        if (!res || typeof res.r.now_ms !== "number") break;
        n.sync.add(sent, res.at, res.r.now_ms);
        for (const c of desk.answered(node)) dirtyNodes.add(c.node);
      }
      if (n.sync.offset != null) { dirtyNodes.add(node); for (const id of n.timers.keys()) dirtyTimers.add(node + "\u0000" + id); }
      // no retained states came for a node asked for by name: ask it for a snapshot
      if ((cfg.nodes.includes(node) && n.timers.size === 0) || [...n.timers.values()].some((s) => s.from_list)) {
        const res = await request(node, n.base + "/cmd", { action: "list" }, "list");
        if (res) for (const c of desk.applyList(node, res.r, res.at)) (c.what === "node" ? dirtyNodes.add(c.node) : dirtyTimers.add(c.node + "\u0000" + c.timer));
      }
      schedule();
    }
  } finally { syncing = false; }
}

// ---- rendering: only what changed, in one animation frame ----------------------------------
function schedule() {
  if (!frame) frame = requestAnimationFrame(flush);
}
function armFlips() {
  clearTimeout(wake);
  const next = flips.peek();
  if (next != null) wake = setTimeout(schedule, Math.max(0, next - localNow() - 4));
}
function room(node) {
  let r = rooms.get(node);
  if (r) return r;
  const sec = document.createElement("section");
  sec.className = "room";
  sec.innerHTML = '<h2><span class="rname"></span><span class="badge"></span><span class="count"></span></h2><ol class="timers"></ol>';
  r = { el: sec, name: sec.querySelector(".rname"), badge: sec.querySelector(".badge"), count: sec.querySelector(".count"),
    list: sec.querySelector(".timers"), rows: new Map(), order: "" };
  rooms.set(node, r);
  // rooms in order: insert before the first room whose id sorts after
  const after = [...rooms.keys()].filter((k) => k !== node && k.localeCompare(node, undefined, { numeric: true }) > 0)
    .sort((a, b) => a.localeCompare(b, undefined, { numeric: true }))[0];
  el.rooms.insertBefore(sec, after ? rooms.get(after).el : null);
  return r;
}
function removeRoom(node) {
  const r = rooms.get(node);
  if (!r) return;
  for (const id of r.rows.keys()) flips.remove(node + "\u0000" + id);
  r.el.remove();
  rooms.delete(node);
}
function renderNode(node) {
  const n = desk.nodes.get(node);
  if (!n) return;
  const r = room(node);
  const name = (n.info && n.info.node) || node;
  if (r.name.textContent !== name) r.name.textContent = name;
  const state = n.online === true ? "online" : n.online === false ? "offline" : "unknown";
  if (r.el.dataset.state !== state) { r.el.dataset.state = state; r.badge.textContent = state === "unknown" ? "…" : state; }
  const running = [...n.timers.values()].filter((s) => s.status === "running").length;
  const count = running ? running + "/" + n.timers.size + " running" : n.timers.size + (n.timers.size === 1 ? " timer" : " timers");
  if (r.count.textContent !== count) r.count.textContent = count;
  r.el.dataset.synced = n.sync.offset != null ? "1" : "0";
  // the rows' order (by name) changes only when timers come, go or are renamed
  const ids = desk.timerOrder(node).map((s) => s.id);
  const key = ids.join("/");
  if (key !== r.order) {
    r.order = key;
    for (const id of ids) r.list.appendChild(row(node, id).el);
  }
}
function row(node, id) {
  const r = room(node);
  let w = r.rows.get(id);
  if (w) return w;
  const li = document.createElement("li");
  li.className = "timer";
  li.innerHTML = '<span class="tname"></span><span class="tphase"></span><span class="tclock"></span>';
  w = { el: li, name: li.firstChild, phase: li.children[1], clock: li.children[2], text: null };
  r.rows.set(id, w);
  return w;
}
function renderTimer(node, id, local) {
  const key = node + "\u0000" + id;
  const r = rooms.get(node) || room(node);
  const v = desk.view(node, id, local);
  if (!v) { // deleted
    const w = r.rows.get(id);
    if (w) { w.el.remove(); r.rows.delete(id); r.order = ""; }
    flips.remove(key);
    dirtyNodes.add(node);
    return;
  }
  const w = row(node, id);
  if (w.name.textContent !== v.name) w.name.textContent = v.name;
  const phaseText = v.status === "Running" ? (v.label ? v.phase + " · " + v.label : v.phase) : v.status;
  if (w.phase.textContent !== phaseText) w.phase.textContent = phaseText;
  if (w.el.dataset.phase !== v.phase) w.el.dataset.phase = v.phase;
  writeClock(w, v.text);
  stats.rowWrites++;
  if (v.next != null) flips.push(key, v.next); else flips.remove(key);
}
function writeClock(w, text) {
  if (w.text !== text) { w.clock.textContent = text; w.text = text; }
}
function flush() {
  frame = 0;
  const t0 = performance.now();
  const local = localNow();
  for (const k of dirtyTimers) { const i = k.indexOf("\u0000"); renderTimer(k.slice(0, i), k.slice(i + 1), local); }
  dirtyTimers.clear();
  for (const node of dirtyNodes) renderNode(node);
  dirtyNodes.clear();
  // the clocks whose second flipped since the last frame
  for (const key of flips.popDue(local + 2)) {
    const i = key.indexOf("\u0000"), node = key.slice(0, i), id = key.slice(i + 1);
    const v = desk.view(node, id, local + 2), w = rooms.get(node)?.rows.get(id);
    if (!v || !w) continue;
    writeClock(w, v.text);
    stats.flipWrites++;
    if (v.next != null) flips.push(key, v.next);
  }
  const nodes = desk.nodes.size;
  const online = [...desk.nodes.values()].filter((n) => n.online).length;
  const summary = nodes + (nodes === 1 ? " room, " : " rooms, ") + online + " online";
  if (el.summary.textContent !== summary) el.summary.textContent = summary;
  const dt = performance.now() - t0;
  stats.flushes++; stats.flushMs += dt; if (dt > stats.maxFlushMs) stats.maxFlushMs = dt;
  armFlips();
}

window.pacerDesk = { desk, flips, stats, cfg, client, localNow, rooms };
if (legacy) { const n = document.getElementById("legacy-note"); n.textContent = legacy.note; n.hidden = false; }
window.__pacerStarted = true; // boot.js: the page started
