// cues.js: when the wall page's cues sound and flash, with no DOM and no audio: the cues a
// running state makes certain, scheduled ahead on the node's instants (the countdown before a
// segment ends, and the cue of its end), the ones events confirm or add (on their `due_ms`,
// never on arrival), and those a pause, a cancel or a new state take back. The sinks are this
// screen's sound (sound.js) and its flash (flash.js), each on or off by itself; app.js wires
// them (soundflash.js). Tests/page/cues.test.mjs tests this very file in Node against the
// protocol's examples. See docs/dashboard.md, "Sound".

/** The cue a segment of this phase starts with. */
function phaseCue(phase) {
  if (phase === "work" || phase === "countdown" || phase === "session") return "work";
  if (phase === "rest" || phase === "set_rest" || phase === "cooldown") return "rest";
  if (phase === "prepare") return "prepare";
  return null;
}

/**
 * The cue that sounds when a running segment ends, from the snapshot: the next segment's
 * start cue (`next_phase`), else on the last segment the alarm (`ack`: it expires) or the
 * finish. A node older than these fields: the interval timer's next phase, guessed.
 */
function endCue(st) {
  if ("ack" in st) {
    if (st.next_phase) return phaseCue(st.next_phase);
    return st.ack ? "alert" : "finish";
  }
  const lastRound = st.round >= st.rounds, lastSet = st.set >= st.sets;
  if (st.kind !== "interval" || st.segment >= st.segments) return null;
  if (st.phase === "work" && !(lastRound && lastSet)) return "rest";
  if ((st.phase === "prepare" || st.phase === "set_rest") || (st.phase === "rest" && !lastRound)) return "work";
  return null;
}

/**
 * The cues a state of timer `id` makes certain: key → [kind, due instant on the node's clock]:
 * the countdown `cues` (seconds before the end) and the end's cue, for a running segment
 * with an end (none for a stopwatch counting up, a paused or idle timer).
 */
function plannedCues(id, st, cues) {
  const want = new Map();
  if (st.status !== "running" || st.ends_at_ms == null || st.counts_up) return want;
  for (const c of cues) want.set(id + ":count:" + (st.ends_at_ms - c * 1000), ["count", st.ends_at_ms - c * 1000]);
  const nextCue = endCue(st);
  if (nextCue) want.set(id + ":" + nextCue + ":" + st.ends_at_ms, [nextCue, st.ends_at_ms]);
  return want;
}

/** The cue an event sounds at its `due_ms`, or null (an acknowledgement's finish, a pause…). */
function eventCue(ev) {
  switch (ev.type) {
    case "countdown": return "count";
    case "started": case "phase": case "skipped": case "rewound": return phaseCue(ev.phase);
    case "finished": return ev.reason === "acknowledged" || ev.reason === "auto_dismissed" ? null : "finish";
    case "expired": case "alert": return "alert";
    default: return null;
  }
}

/**
 * The page's cues. `sinks`: the sound and the flash (each with `running`, `schedule`, `find`,
 * `cancel`); `cues`: the countdown's seconds (`?cues=`); `offset()`: the node's clock offset
 * (null: unknown, nothing is foreseen); `localNow()`; `forTimer(id)`: whether this screen
 * sounds that timer's cues (the one it shows, or any in the grid).
 */
class Cues {
  constructor(o) {
    this.sinks = o.sinks;
    this.cues = o.cues;
    this.offset = o.offset;
    this.localNow = o.localNow;
    this.forTimer = o.forTimer;
  }

  /** The sinks switched on. */
  active() { return this.sinks.filter((s) => s.running); }

  /**
   * Schedules the cues a state makes certain, ahead of time (`plannedCues`). Events confirm
   * them (or add the ones that could not be foreseen). A new state cancels the cues it no
   * longer implies (pause, adjust, skip).
   */
  predict(id, st) {
    const sinks = this.active();
    if (!sinks.length) return;
    const offset = this.offset();
    const want = this.forTimer(id) && offset != null ? plannedCues(id, st, this.cues) : new Map();
    for (const s of sinks) {
      s.cancel((e, key) => e.timer === id && e.predicted && !want.has(key));
      for (const [key, [kind, due]] of want) {
        const local = due - offset;
        if (local > this.localNow() + 20) s.schedule(key, kind, local, id, true);
      }
    }
  }

  /** `predict` for every timer (`timers`: id → state), after the sinks or the view changed. */
  all(timers) { for (const [id, st] of timers) this.predict(id, st); }

  /** A timer gone (deleted): none of its cues sound. */
  forget(id) { for (const s of this.sinks) s.cancel((e) => e.timer === id); }

  /** The offset was measured again: foreseen cues move with it when it `moved`. */
  synced(moved, timers) {
    if (moved) for (const s of this.sinks) s.cancel((e) => e.predicted);
    this.all(timers);
  }

  /** A timer's event: what it takes back, and its own cue when none was foreseen at its instant. */
  event(id, ev) {
    const offset = this.offset();
    if (ev.type === "finished" || ev.type === "cancelled" || ev.type === "reset" || ev.type === "paused") {
      // A completed run's finish keeps the cue foreseen for its very instant (the finish itself).
      const at = ev.type === "finished" && ev.reason === "completed" && ev.due_ms != null && offset != null ? ev.due_ms - offset : null;
      for (const s of this.sinks) s.cancel((e) => e.timer === id && e.predicted && (at == null || Math.abs(e.dueLocal - at) > 60));
    }
    const sinks = this.active();
    if (!sinks.length || !this.forTimer(id) || offset == null || ev.due_ms == null) return;
    const kind = eventCue(ev);
    if (!kind) return;
    const dueLocal = ev.due_ms - offset;
    for (const s of sinks) {
      if (s.find(id, kind, dueLocal, 60)) continue; // foreseen: already scheduled at its instant
      // A different cue foreseen for this instant was a wrong guess: replace it if not started.
      s.cancel((e) => e.timer === id && e.predicted && Math.abs(e.dueLocal - dueLocal) <= 60);
      s.schedule(id + ":" + kind + ":" + ev.due_ms + ":" + ev.revision, kind, dueLocal, id, false);
    }
  }
}

export { phaseCue, endCue, plannedCues, eventCue, Cues };
