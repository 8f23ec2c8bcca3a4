// desk.js: the front desk's model, without the DOM: every node under the root topic (found
// from `pacer/+/info` and `pacer/+/status`), each node's timers from their retained `state`,
// each node's clock offset (offset.js, NTP-style from `time` replies, as the wall page), and the
// schedule of the clocks' next flips, so the page touches only what changes. frontdesk.js
// wires it to MQTT and the DOM; Tests/page/desk.test.mjs tests this very file in Node.
// See docs/dashboard.md, "The front desk".
import { valueAt, fmt } from "./clock.js";
import { ClockOffset } from "./offset.js"; // each node's clock offset, the wall page's estimate
import { waitsForRecovery } from "./recovery.js";

/**
 * What a topic under `root` is to the front desk: `{node, kind, timer}` with kind `info`,
 * `status`, `state` (then `timer` is the timer id) or `reply`; null for anything else.
 */
function parseTopic(topic, root) {
  const prefix = root + "/";
  if (!topic.startsWith(prefix)) return null;
  const parts = topic.slice(prefix.length).split("/");
  const node = parts[0];
  if (!node) return null;
  if (parts.length === 2 && (parts[1] === "info" || parts[1] === "status" || parts[1] === "reply")) return { node, kind: parts[1] };
  if (parts.length === 3 && parts[1] === "reply") return { node, kind: "reply" };
  if (parts.length === 4 && parts[1] === "timers" && parts[3] === "state" && parts[2]) return { node, kind: "state", timer: parts[2] };
  return null;
}

/**
 * The clocks' next flips: a binary min-heap of (local instant, key). Pushing a key again
 * supersedes its earlier entry (lazily: a stale entry is skipped when it comes out).
 */
class FlipHeap {
  constructor() { this.h = []; this.gen = new Map(); this.n = 0; }
  push(key, at) {
    const g = ++this.n;
    this.gen.set(key, g);
    const h = this.h;
    h.push({ at, key, g });
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (h[p].at <= h[i].at) break;
      [h[p], h[i]] = [h[i], h[p]];
      i = p;
    }
  }
  remove(key) { this.gen.delete(key); }
  _pop() {
    const h = this.h, top = h[0], last = h.pop();
    if (h.length) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < h.length && h[l].at < h[m].at) m = l;
        if (r < h.length && h[r].at < h[m].at) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i], h[m]];
        i = m;
      }
    }
    return top;
  }
  _clean() { while (this.h.length && this.gen.get(this.h[0].key) !== this.h[0].g) this._pop(); }
  /** The earliest live instant, or null. */
  peek() { this._clean(); return this.h.length ? this.h[0].at : null; }
  /** The keys due at or before `now`, earliest first (each taken out). */
  popDue(now) {
    const out = [];
    for (;;) {
      this._clean();
      if (!this.h.length || this.h[0].at > now) return out;
      const e = this._pop();
      this.gen.delete(e.key);
      out.push(e.key);
    }
  }
  get size() { return this.gen.size; }
}

const STATUS_TEXT = {
  idle: "Ready", scheduled: "Starts in", running: "Running", paused: "Paused", expired: "Time's up",
  finished: "Finished", cancelled: "Cancelled",
};

/** What a timer's row shows at local instant `local` on a node whose offset is `offset`. */
function rowView(st, local, offset) {
  const now = offset == null ? null : local + offset;
  const v = valueAt(st, now);
  const phase = st.status === "running" ? (st.overtime ? "overtime" : st.phase || "running") : st.status;
  return {
    text: fmt(v.secs),
    phase,
    status: STATUS_TEXT[st.status] || st.status || "",
    // a rest that ends on recovery says so while it waits (its time is to its longest end)
    label: waitsForRecovery(st) ? "until recovered" : st.label || "",
    name: st.name || st.id,
    // the local instant of the next flip (null: none by itself)
    next: v.next == null || offset == null ? null : v.next - offset,
  };
}

/**
 * Timers as a `list` reply gives them (status, remaining_ms, no instants), made into states
 * the clock rule counts from: a running countdown ends `remaining_ms` after the node instant
 * the reply was taken at (`nodeAt`, from the reply's arrival and the offset: late by the
 * reply's one-way trip, a few ms). For brokers that keep no retained state across members.
 */
function statesFromList(reply, nodeAt) {
  if (!reply || !Array.isArray(reply.timers)) return [];
  return reply.timers.filter((t) => t && typeof t.id === "string").map((t) => {
    const st = { id: t.id, name: t.name || t.id, kind: t.kind, status: t.status, phase: t.phase,
      revision: typeof t.revision === "number" ? t.revision : -1, remaining_ms: t.remaining_ms, from_list: true };
    if (t.status === "running" && typeof t.remaining_ms === "number" && nodeAt != null && t.kind !== "stopwatch") {
      st.ends_at_ms = nodeAt + t.remaining_ms;
    }
    if (typeof t.remaining_ms === "number") st.remaining = Math.ceil(Math.max(0, t.remaining_ms) / 1000);
    return st;
  });
}

/**
 * Every node and timer the front desk knows. `apply(topic, payload, local)` takes one MQTT
 * message and returns what changed: `{node, what}` with what `node` (its header: online,
 * name, timer count), `timer` (then `timer` is the id), `timer-gone`, or `gone` (the node's
 * info was cleared).
 */
class Desk {
  constructor(root) {
    this.root = root || "pacer";
    this.nodes = new Map();
  }

  node(id) {
    let n = this.nodes.get(id);
    if (!n) {
      n = { id, base: this.root + "/" + id, info: null, online: null, timers: new Map(), sync: new ClockOffset(), seen: false };
      this.nodes.set(id, n);
    }
    return n;
  }

  apply(topic, payload, local) {
    const t = parseTopic(topic, this.root);
    if (!t || t.kind === "reply") return [];
    if (t.kind === "info") {
      if (payload === "") {
        if (!this.nodes.has(t.node)) return [];
        this.nodes.delete(t.node);
        return [{ node: t.node, what: "gone" }];
      }
      let info;
      try { info = JSON.parse(payload); } catch (e) { return []; }
      if (!info || typeof info !== "object") return [];
      const n = this.node(t.node);
      n.info = info;
      n.seen = true;
      return [{ node: t.node, what: "node" }];
    }
    if (t.kind === "status") {
      if (payload !== "online" && payload !== "offline") return [];
      const n = this.node(t.node);
      const was = n.online;
      n.online = payload === "online";
      n.seen = true;
      if (!n.online) n.sync.reset(); // re-measured when it is back (it may have restarted with another clock)
      return was === n.online ? [] : [{ node: t.node, what: "node" }];
    }
    // state
    const n = this.node(t.node);
    n.seen = true;
    if (payload === "") {
      if (!n.timers.delete(t.timer)) return [];
      return [{ node: t.node, what: "timer-gone", timer: t.timer }, { node: t.node, what: "node" }];
    }
    let st;
    try { st = JSON.parse(payload); } catch (e) { return []; }
    if (!st || typeof st !== "object") return [];
    const old = n.timers.get(t.timer);
    if (old && !old.from_list && typeof old.revision === "number" && typeof st.revision === "number" && st.revision < old.revision) return [];
    st.id = st.id || t.timer;
    n.timers.set(t.timer, st);
    return old ? [{ node: t.node, what: "timer", timer: t.timer }] : [{ node: t.node, what: "timer", timer: t.timer }, { node: t.node, what: "node" }];
  }

  /**
   * A node answered a request: it is online, whatever its `status` said or did not say (a
   * broker that delivers no retained `status` to this member, or on wildcards).
   */
  answered(nodeId) {
    const n = this.nodes.get(nodeId);
    if (!n || n.online === true) return [];
    n.online = true;
    return [{ node: nodeId, what: "node" }];
  }

  /** Puts a `list` reply's timers in where no state is known (or only an older list's). */
  applyList(nodeId, reply, local) {
    const n = this.node(nodeId);
    const nodeAt = n.sync.offset == null ? null : local + n.sync.offset;
    const out = [];
    for (const st of statesFromList(reply, nodeAt)) {
      const old = n.timers.get(st.id);
      if (old && !old.from_list) continue;
      n.timers.set(st.id, st);
      out.push({ node: nodeId, what: "timer", timer: st.id });
    }
    if (out.length) out.push({ node: nodeId, what: "node" });
    return out;
  }

  /** Rooms in the order shown: by name (the node id), case-insensitive. */
  order() {
    return [...this.nodes.values()].sort((a, b) => a.id.localeCompare(b.id, undefined, { sensitivity: "base", numeric: true }));
  }

  /** A node's timers in the order shown: by name, then id. */
  timerOrder(nodeId) {
    const n = this.nodes.get(nodeId);
    if (!n) return [];
    return [...n.timers.values()].sort((a, b) => (a.name || a.id).localeCompare(b.name || b.id, undefined, { numeric: true }) || a.id.localeCompare(b.id));
  }

  view(nodeId, timerId, local) {
    const n = this.nodes.get(nodeId);
    const st = n && n.timers.get(timerId);
    return st ? rowView(st, local, n.sync.offset) : null;
  }
}

export { parseTopic, FlipHeap, Desk, rowView, statesFromList, STATUS_TEXT };
