// flash.js: a full-screen flash at each cue, so that a cue nobody hears (a loud room, a
// screen with its sound off) is still seen. The same cues as sound.js, asked for with the
// same keys and instants (cues.js hands every cue to both), fired on the page's clock at the
// cue's instant whether or not this screen plays sound. Never more than about three flashes
// a second (cues of several timers at one instant make one flash), and under
// `prefers-reduced-motion` a gentle change of colour instead of a strobe, at most one a
// second. No DOM here: soundflash.js gives `show(kind, look)` that animates the overlay; Node's
// tests (Tests/page/flash.test.mjs) drive this file with a fake clock.

/** The shortest gap between two flashes: at most ~3 a second (~1 a second when reduced). */
const MIN_GAP_MS = 334;
const MIN_GAP_REDUCED_MS = 1000;

/** Each cue's colour (the page's phase colours; white for the 3-2-1). */
const COLOURS = {
  count: "#ffffff", prepare: "#ffd400", work: "#0b8a3e", rest: "#c4161c", finish: "#ffffff", alert: "#ffffff",
};

/**
 * How a cue flashes: keyframes and timing for Element.animate. A flash is a bright overlay
 * that fades within 300 ms (shorter than the gap, so flashes never run together); reduced
 * motion: a soft tint that rises and falls over 900 ms, with no sudden change of brightness.
 */
function look(kind, reduced) {
  const colour = COLOURS[kind] || COLOURS.count;
  if (reduced) {
    return {
      colour, durationMs: 900,
      keyframes: [{ opacity: 0, backgroundColor: colour }, { opacity: 0.3, backgroundColor: colour, offset: 0.4 }, { opacity: 0, backgroundColor: colour }],
    };
  }
  return {
    colour, durationMs: 300,
    keyframes: [{ opacity: 0.9, backgroundColor: colour }, { opacity: 0.9, backgroundColor: colour, offset: 0.35 }, { opacity: 0, backgroundColor: colour }],
  };
}

/**
 * Whether a screen flashes when nobody chose: yes on a wall (no controls, or a screen
 * that is not a phone), no on a phone (a small touch screen, which is in a hand or a pocket).
 * `{controls, coarse, width, height}`: `coarse` the pointer is a finger; the sizes in CSS px.
 */
function defaultOn(o) {
  if (o.controls === false) return true;
  const small = Math.min(o.width || 0, o.height || 0) < 600;
  return !(o.coarse && small);
}

class Flash {
  /**
   * localNow: () => ms on the page's local clock; show: (kind, look) draws one flash;
   * timers: {setTimeout, clearTimeout} (the page's own, or a test's fake clock).
   */
  constructor(localNow, show, timers) {
    this.localNow = localNow;
    this.show = show;
    this.timers = timers || { setTimeout: (f, ms) => setTimeout(f, ms), clearTimeout: (id) => clearTimeout(id) };
    this.enabled = false;
    this.reduced = false;
    this.lagMs = 300;             // a cue found later than this is not flashed (a flash must mean "now")
    this.entries = new Map();     // key -> {timer, kind, dueLocal, predicted, tid}
    this.last = -Infinity;        // when the last flash was shown
    this.log = [];                // what was decided, for the tests and people debugging
  }

  get running() { return this.enabled; }

  /** Switches flashing on or off; off cancels what was scheduled. */
  setEnabled(on) {
    this.enabled = !!on;
    if (!this.enabled) this.cancel(() => true);
  }

  /** Schedules a flash for cue `kind` at `dueLocal` under `key`, like sound.js's schedule. */
  schedule(key, kind, dueLocal, timer, predicted) {
    if (!this.enabled) return "off";
    if (this.entries.has(key)) return "duplicate";
    const late = this.localNow() - dueLocal;
    if (late > this.lagMs) { this.note(kind, timer, "skipped, " + Math.round(late) + " ms late"); return "late-skipped"; }
    const entry = { timer, kind, dueLocal, predicted: !!predicted, tid: null };
    entry.tid = this.timers.setTimeout(() => { entry.tid = null; this.fire(entry); }, Math.max(0, dueLocal - this.localNow()));
    this.entries.set(key, entry);
    this.prune();
    return "scheduled";
  }

  /**
   * Shows the flash of an entry now, unless one was shown less than the gap ago, or the
   * timeout came too late to mean "now" (a hidden tab's throttled timers).
   */
  fire(entry) {
    const now = this.localNow();
    if (now - entry.dueLocal > this.lagMs) { this.note(entry.kind, entry.timer, "skipped, " + Math.round(now - entry.dueLocal) + " ms late"); return false; }
    const gap = this.reduced ? MIN_GAP_REDUCED_MS : MIN_GAP_MS;
    if (now - this.last < gap) { this.note(entry.kind, entry.timer, "merged: " + Math.round(now - this.last) + " ms after the last flash"); return false; }
    this.last = now;
    this.note(entry.kind, entry.timer, this.reduced ? "shown (reduced motion)" : "shown", entry.dueLocal, entry.predicted);
    this.show(entry.kind, look(entry.kind, this.reduced));
    return true;
  }

  /** A flash already scheduled for `timer` within `windowMs` of `dueLocal` (any kind when kind is null). */
  find(timer, kind, dueLocal, windowMs) {
    for (const [key, e] of this.entries) {
      if (e.timer === timer && (kind == null || e.kind === kind) && Math.abs(e.dueLocal - dueLocal) <= windowMs) return key;
    }
    return null;
  }

  /** Cancels the flashes not yet shown for which `pred(entry, key)` holds. */
  cancel(pred) {
    for (const [key, e] of this.entries) {
      if (e.tid != null && pred(e, key)) { this.timers.clearTimeout(e.tid); this.entries.delete(key); }
    }
  }

  prune() {
    const now = this.localNow();
    for (const [key, e] of this.entries) if (e.tid == null && e.dueLocal < now - 60000) this.entries.delete(key);
  }

  note(kind, timer, what, dueLocal, predicted) {
    this.log.push({ at: this.localNow(), kind, timer, what, due: dueLocal == null ? null : dueLocal, predicted: !!predicted });
    if (this.log.length > 50) this.log.shift();
  }
}

export { Flash, look, defaultOn, MIN_GAP_MS, MIN_GAP_REDUCED_MS, COLOURS };
