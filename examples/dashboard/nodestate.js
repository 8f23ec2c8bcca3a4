// nodestate.js: what the wall page knows of its one node, from the topics under the node's
// base, with no DOM and no MQTT: online or not (`status`), its `info`, the saved workouts
// (`workouts`), its speaker (`sound`), its class (`athletes`), its displays saved by command
// (`displays`), each timer's latest retained `state` (an older revision never goes back) and
// next class (`next`, timetable.js), the class its run is (`current_class`) and the phase each timer was in before its
// latest event (for the notifications); the spoken cues (a timer's `say`, `cue_ahead`) pass
// through, read by speech.js. connection.js feeds it the messages and says what
// changed to the page; Tests/page/nodestate.test.mjs tests this very file in Node against
// the protocol's examples.
import { parseSound } from "./speaker.js";
import { statesFromList } from "./desk.js";
import { parseSpoken } from "./speech.js";
import { parseNext, parseCurrent } from "./timetable.js";
import { parseDisplays } from "./displays.js";
import { parseRecovery } from "./recovery.js";

/** The base a node's `info` announces (`pacer/<node>/info`, or its `base_topic`), else null. */
function discoverBase(topic, payload) {
  const m = /^(pacer\/[^/]+)\/info$/.exec(topic);
  if (!m || !payload) return null;
  try { const info = JSON.parse(payload); return info.base_topic || m[1]; } catch (e) { return null; /* not ours */ }
}

class NodeState {
  constructor() {
    this.base = null;           // `pacer/<node>`, null until known
    this.online = null;         // `status`: true, false, null (not heard)
    this.info = null;           // `info`, parsed
    this.timers = new Map();    // id -> latest state snapshot
    this.workouts = null;       // the saved workouts (`workouts`), null: none heard
    this.speaker = null;        // `sound`: {available, muted, volume}, null: none heard
    this.athletes = null;       // `athletes` as it came (a class), null: none
    this.phaseOf = new Map();   // timer -> its phase before the latest event
    this.next = new Map();      // timer -> its next class (timetable.js's parseNext), absent: none
    this.current = new Map();   // timer -> the class its run is (timetable.js's parseCurrent), absent: none
    this.displays = null;       // `displays` (displays.js's parseDisplays), null: none heard
    this.recovery = new Map();  // timer -> how its rest's recovery stands (recovery.js's parseRecovery), absent: not waiting
  }

  /** A topic under the base, without it (`status`, `timers/main/state`), or null. */
  rel(topic) {
    if (!this.base) return null;
    return topic.startsWith(this.base + "/") ? topic.slice(this.base.length + 1) : null;
  }

  /**
   * One message on `rel` (under the base). Returns what changed, or null for nothing:
   * `{what}` with what `status`, `info`, `workouts`, `sound`, `athletes`, `displays`, `reply` (for the
   * requests), `state` (with `timer` and `state`), `next` (with `timer`: its next class changed),
   * `recovery` (with `timer`: how its rest's recovery stands changed),
   * `current` (with `timer`: the class its run is changed),
   * `gone` (a timer's state cleared: deleted),
   * `event` (with `timer` and `event`) or `say` (with `timer` and `say`, speech.js's
   * parseSpoken: a timer's `say`, or an announcement on `cue_ahead` that says something).
   * Junk is ignored; a retained state older than the one known is too (a live one is taken as
   * it comes).
   */
  apply(rel, payload, retain) {
    if (rel === "status") { this.online = payload === "online"; return { what: "status" }; }
    if (rel === "info") {
      if (payload) { try { this.info = JSON.parse(payload); } catch (e) { /* ignore */ } }
      return { what: "info" };
    }
    if (rel === "workouts") {
      try { this.workouts = payload ? JSON.parse(payload).workouts || [] : []; } catch (e) { /* ignore */ }
      return { what: "workouts" };
    }
    if (rel === "sound") { this.speaker = parseSound(payload); return { what: "sound" }; }
    if (rel === "athletes") { this.athletes = payload || null; return { what: "athletes" }; }
    if (rel === "displays") { const d = parseDisplays(payload); if (!d) return null; this.displays = d; return { what: "displays" }; }
    if (rel === "reply" || rel.startsWith("reply/")) return { what: "reply" };
    if (rel === "cue_ahead") { const say = payload ? parseSpoken(payload, null) : null; return say ? { what: "say", timer: say.timer, say } : null; }
    const r = /^timers\/([^/]+)\/recovery$/.exec(rel);
    if (r) {
      // A rest that waits for recovery: "12 of 14 recovered" (cleared, empty, when it stops waiting).
      const tally = parseRecovery(payload);
      if (tally) this.recovery.set(r[1], tally); else if (!payload) this.recovery.delete(r[1]); else return null;
      return { what: "recovery", timer: r[1] };
    }
    const t = /^timers\/([^/]+)\/(state|event|say|next|current_class)$/.exec(rel);
    if (!t) return null;
    const id = t[1];
    if (t[2] === "next") {
      const n = parseNext(payload);
      if (n) this.next.set(id, n); else if (!payload) this.next.delete(id); else return null;
      return { what: "next", timer: id };
    }
    if (t[2] === "current_class") {
      const c = parseCurrent(payload);
      if (c) this.current.set(id, c); else if (!payload) this.current.delete(id); else return null;
      return { what: "current", timer: id };
    }
    if (t[2] === "say") { const say = payload ? parseSpoken(payload, id) : null; return say ? { what: "say", timer: id, say } : null; }
    if (t[2] === "state") {
      if (!payload) { this.timers.delete(id); this.phaseOf.delete(id); this.next.delete(id); this.current.delete(id); return { what: "gone", timer: id }; }
      let st; try { st = JSON.parse(payload); } catch (e) { return null; }
      const old = this.timers.get(id);
      if (old && st.revision != null && old.revision != null && st.revision < old.revision && retain) return null;
      this.timers.set(id, st);
      if (!this.phaseOf.has(id)) this.phaseOf.set(id, st.phase);
      return { what: "state", timer: id, state: st };
    }
    if (!payload) return null;
    let ev; try { ev = JSON.parse(payload); } catch (e) { return null; }
    return { what: "event", timer: id, event: ev };
  }

  /** Notes a timer's event; returns the phase it was in before (for a rest's end, an expiry). */
  noteEvent(id, ev) {
    const before = this.phaseOf.get(id);
    if (ev.phase) this.phaseOf.set(id, ev.phase);
    else if (["finished", "cancelled", "reset", "expired"].includes(ev.type)) this.phaseOf.set(id, ev.type);
    return before;
  }

  /**
   * A `list` reply's timers where no state is known (desk.js's statesFromList, counting from
   * `nodeAt`, the node's instant the reply was taken at); the node answered, so it is online
   * unless its `status` said otherwise.
   */
  applyList(reply, nodeAt) {
    for (const st of statesFromList(reply, nodeAt)) if (!this.timers.has(st.id)) this.timers.set(st.id, st);
    if (this.online == null) this.online = true; // it answered
  }

  /** The timer ids known: the node's `info` order, then any other state heard. */
  ids() {
    const ids = this.info && Array.isArray(this.info.timers) ? this.info.timers.map((t) => t.id) : [...this.timers.keys()];
    for (const id of this.timers.keys()) if (!ids.includes(id)) ids.push(id);
    return ids;
  }

  /** Ids in use on the node (its `info` and the states heard): a new timer takes none of them. */
  takenIds() {
    return [...new Set([...(this.info && this.info.timers ? this.info.timers.map((t) => t.id) : []), ...this.timers.keys()])];
  }

  /** Whether the node keeps saved workouts (its `info` says `workouts`). */
  canSave() { return !!(this.info && (this.info.capabilities || []).includes("workouts")); }
}

export { NodeState, discoverBase };
