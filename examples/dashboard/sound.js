// sound.js: WebAudio cues, scheduled on the audio clock at exact instants.
//
// Every cue is generated (oscillators and gain envelopes, no sound files). A cue is asked
// for with the instant it is due on the page's local clock (the caller maps the node's
// `due_ms` with the measured offset); it is mapped to the audio clock with
// getOutputTimestamp(), so what leaves the speaker lines up with the node's instant, and
// several speakers in a room beep together. A cue more than `lagMs` in the past is
// skipped (never played late); one a little in the past plays at once. A cue the node speaks
// (speech.js) keeps its place here without its tones (`quiet`, `hush`).
//
// An ES module with no build step (soundflash.js imports it; cues.js says what to play when).
// kind -> list of [offset s, frequency Hz, duration s, wave]
const CUES = {
  count:   [[0, 880, 0.16, "square"]],
  prepare: [[0, 660, 0.35, "square"]],
  work:    [[0, 990, 0.18, "square"], [0.2, 1320, 0.55, "square"]],
  rest:    [[0, 990, 0.18, "triangle"], [0.2, 660, 0.55, "triangle"]],
  finish:  [[0, 660, 0.2, "square"], [0.22, 880, 0.2, "square"], [0.44, 1320, 0.9, "square"]],
  alert:   [[0, 1000, 0.14, "square"], [0.18, 800, 0.14, "square"], [0.36, 1000, 0.14, "square"], [0.54, 800, 0.14, "square"]],
};

class Sound {
  /** localNow: () => ms on the page's local clock (performance.timeOrigin + performance.now()). */
  constructor(localNow, lagMs) {
    this.localNow = localNow;
    this.lagMs = lagMs;
    this.ctx = null;
    this.enabled = false;
    this.volume = 0.6;
    this.entries = new Map(); // key -> {timer, kind, dueLocal, whenAudio, nodes, predicted}
    this.log = [];            // last decisions, for the status line and tests
    this.onCue = null;        // (kind, timer) at each cue's instant: the page vibrates the phone (phone.js)
    this.quiet = null;        // (timer, dueLocal) => true when that cue is spoken instead (speech.js)
  }

  /** Must run from a click (browsers start audio only after a gesture). */
  enable() {
    if (!this.ctx) {
      const AC = globalThis.AudioContext || globalThis.webkitAudioContext;
      if (!AC) return false;
      this.ctx = new AC({ latencyHint: "interactive" });
      this.master = this.ctx.createGain();
      this.master.gain.value = this.volume;
      this.master.connect(this.ctx.destination);
    }
    this.ctx.resume();
    this.enabled = true;
    return true;
  }

  disable() {
    this.enabled = false;
    this.cancel(() => true);
    if (this.ctx) this.ctx.suspend();
  }

  get running() { return !!(this.ctx && this.enabled && this.ctx.state === "running"); }

  /** The audio-clock time (s) of a local instant (ms). */
  audioTime(localMs) {
    const ctx = this.ctx;
    const ts = ctx.getOutputTimestamp ? ctx.getOutputTimestamp() : null;
    if (ts && ts.performanceTime > 0 && ts.contextTime > 0) {
      const perfNow = localMs - performance.timeOrigin;
      return ts.contextTime + (perfNow - ts.performanceTime) / 1000;
    }
    return ctx.currentTime + (localMs - this.localNow()) / 1000;
  }

  /**
   * Schedules cue `kind` at `dueLocal` under `key` (a repeat of a key is ignored).
   * Returns "scheduled", "late-skipped", "off" or "duplicate".
   */
  schedule(key, kind, dueLocal, timer, predicted) {
    if (!this.running) return "off";
    if (this.entries.has(key)) return "duplicate";
    const late = this.localNow() - dueLocal;
    if (late > this.lagMs) { this.note(kind, timer, "skipped, " + Math.round(late) + " ms late"); return "late-skipped"; }
    const start = Math.max(this.audioTime(dueLocal), this.ctx.currentTime);
    // A cue spoken instead keeps its entry (its vibration; a repeat finds it) without its tones.
    const hushed = !!(this.quiet && this.quiet(timer, dueLocal));
    const nodes = hushed ? [] : this.tones(kind, start);
    const entry = { timer, kind, dueLocal, whenAudio: start, nodes, predicted: !!predicted, tid: null, hushed };
    // What else the cue does (a phone's vibration), at its instant on the page's clock.
    if (this.onCue) entry.tid = setTimeout(() => { entry.tid = null; this.onCue(kind, timer); }, Math.max(0, dueLocal - this.localNow()));
    this.entries.set(key, entry);
    this.note(kind, timer, hushed ? "spoken instead" : predicted ? "scheduled ahead" : "scheduled");
    this.prune();
    return "scheduled";
  }

  /** The tones of cue `kind` from audio time `start`: its oscillators, started and stopped. */
  tones(kind, start) {
    const ctx = this.ctx, nodes = [];
    for (const [off, freq, dur, wave] of CUES[kind] || CUES.count) {
      const t = start + off;
      const osc = ctx.createOscillator();
      const env = ctx.createGain();
      osc.type = wave;
      osc.frequency.value = freq;
      env.gain.setValueAtTime(0, t);
      env.gain.linearRampToValueAtTime(1, t + 0.005);
      env.gain.setValueAtTime(1, t + dur - 0.03);
      env.gain.linearRampToValueAtTime(0, t + dur);
      osc.connect(env).connect(this.master);
      osc.start(t);
      osc.stop(t + dur + 0.01);
      nodes.push(osc);
    }
    return nodes;
  }

  /**
   * Silences the cues of `timer` within `windowMs` of `dueLocal` whose tones have not started:
   * they are spoken instead (speech.js). Each keeps its entry (its vibration, and a repeat of
   * the cue finds it).
   */
  hush(timer, dueLocal, windowMs) {
    const now = this.ctx ? this.ctx.currentTime : 0;
    for (const e of this.entries.values()) {
      if (e.timer !== timer || e.hushed || Math.abs(e.dueLocal - dueLocal) > windowMs || !(e.whenAudio > now + 0.01)) continue;
      for (const n of e.nodes) { try { n.stop(0); n.disconnect(); } catch (err) { /* already stopped */ } }
      e.nodes = [];
      e.hushed = true;
      this.note(e.kind, timer, "spoken instead");
    }
  }

  /** A cue already scheduled for `timer` within `windowMs` of `dueLocal` (any kind when kind is null). */
  find(timer, kind, dueLocal, windowMs) {
    for (const [key, e] of this.entries) {
      if (e.timer === timer && (kind == null || e.kind === kind) && Math.abs(e.dueLocal - dueLocal) <= windowMs) return key;
    }
    return null;
  }

  /** Cancels the cues not yet started for which `pred(entry, key)` holds. */
  cancel(pred) {
    const now = this.ctx ? this.ctx.currentTime : 0;
    for (const [key, e] of this.entries) {
      if (e.whenAudio > now + 0.01 && pred(e, key)) {
        for (const n of e.nodes) { try { n.stop(0); n.disconnect(); } catch (err) { /* already stopped */ } }
        if (e.tid) clearTimeout(e.tid);
        this.entries.delete(key);
      }
    }
  }

  prune() {
    const now = this.localNow();
    for (const [key, e] of this.entries) if (e.dueLocal < now - 60000) this.entries.delete(key);
  }

  note(kind, timer, what) {
    this.log.push({ at: this.localNow(), kind, timer, what });
    if (this.log.length > 50) this.log.shift();
  }

  /** A short test beep, so a person can check the speaker when switching sound on. */
  test() { if (this.running) this.schedule("test-" + this.localNow(), "count", this.localNow() + 50, "", false); }
}

export { Sound, CUES };
