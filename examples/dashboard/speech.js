// speech.js: this screen's spoken cues, with the browser's own speech synthesis (the Web
// Speech API), no DOM and no MQTT. A node with `sound.speech` publishes the text of each
// spoken cue on `<base>/timers/<id>/say` as the event it speaks for goes out, and, with
// `publish.cue_ahead`, ahead of it in the cue's announcement on `<base>/cue_ahead` (its `say`).
// With Sound on, the page says that text at the cue's `due_ms` on the node's clock (moved to
// the page's clock by the measured offset, as the beeps are), in place of the cue's beep;
// a text that comes more than `lateMs` (1 s) after its instant is dropped, never said late.
// A browser without speech synthesis beeps as before. soundflash.js makes the Speech with the
// Sound button, app.js the SpokenCues; Tests/page/speech.test.mjs tests this very file in Node
// with a fake clock and a fake speechSynthesis. See docs/dashboard.md, "Spoken cues".

/** A text that comes later than this after its instant is dropped (ms). */
const LATE_MS = 1000;
/** A beep this close to a spoken instant is that cue's (ms): it is hushed. */
const SAME_CUE_MS = 60;
/** How long a spoken cue is remembered after its instant (a repeat of it is then known). */
const KEEP_MS = 60000;

/**
 * A spoken cue from a message: on `timers/<id>/say` (`timer` is the topic's id; the text in
 * `text`) or on `cue_ahead` (`timer` null: the payload's; the text in `say`, none for a cue
 * that only beeps). Returns `{timer, text, due_ms, lang, event, cue, announced_ms, ahead}` or
 * null for junk. `announced_ms`: when the node sent it on its clock (`at_ms`, or for an
 * announcement `due_ms − lead_ms`).
 */
function parseSpoken(payload, timer) {
  let m; try { m = JSON.parse(payload); } catch (e) { return null; }
  if (!m || typeof m !== "object") return null;
  const ahead = timer == null;
  const id = ahead ? m.timer : timer;
  const text = ahead ? m.say : m.text;
  if (typeof id !== "string" || !id || typeof text !== "string" || !text.trim()) return null;
  if (typeof m.due_ms !== "number" || !isFinite(m.due_ms)) return null;
  const announced = ahead ? (typeof m.lead_ms === "number" ? m.due_ms - m.lead_ms : null) : (typeof m.at_ms === "number" ? m.at_ms : null);
  return {
    timer: id, text: text.trim().slice(0, 500), due_ms: m.due_ms, lang: typeof m.lang === "string" && m.lang ? m.lang : "en",
    event: typeof m.event === "string" ? m.event : null, cue: typeof m.cue === "string" ? m.cue : null,
    announced_ms: announced, ahead,
  };
}

/** The browser's voice for a language (`en` takes `en-US`), its default or a local one first; null: the browser's own. */
function voiceFor(voices, lang) {
  const want = String(lang || "en").toLowerCase();
  const fits = (voices || []).filter((v) => v && typeof v.lang === "string" && (v.lang.toLowerCase() === want || v.lang.toLowerCase().startsWith(want + "-") || v.lang.toLowerCase().startsWith(want + "_")));
  return fits.find((v) => v.default) || fits.find((v) => v.localService) || fits[0] || null;
}

/**
 * The speaking half: texts said at instants on the page's clock. `o`: `localNow()` (the page's
 * clock, ms), `synth` (speechSynthesis, or null), `Utterance` (SpeechSynthesisUtterance, or
 * null), `gate()` (whether this screen's Sound is on), `lateMs`, `timers` ({set, clear}:
 * setTimeout and clearTimeout, a fake in tests).
 */
class Speech {
  constructor(o) {
    this.localNow = o.localNow;
    this.synth = o.synth || null;
    this.Utterance = o.Utterance || null;
    this.gate = o.gate || (() => true);
    this.lateMs = o.lateMs == null ? LATE_MS : o.lateMs;
    this.timers = o.timers || { set: (fn, ms) => setTimeout(fn, ms), clear: (id) => clearTimeout(id) };
    this.volume = 1;
    this.entries = new Map(); // key -> {timer, text, lang, dueLocal, dueMs, announcedMs, ahead, tid, done}
    this.log = [];            // the last decisions, for people debugging and the browser suite
    this.spoken = [];         // the last texts said: {timer, text, dueLocal, at}
    this.onSpeak = null;      // (entry) when a text is said: the page shows it (app.js)
  }

  /** Whether the browser can speak at all. */
  get available() { return !!(this.synth && this.Utterance && typeof this.synth.speak === "function"); }
  /** Whether this screen speaks now: the browser can, and Sound is on. */
  get running() { return this.available && !!this.gate(); }

  /**
   * Says `c.text` (with `c.timer`, `c.lang`, `c.dueMs`, `c.announcedMs`, `c.ahead`) at local
   * instant `c.dueLocal`, under `key` (a repeat of a key, or of the timer's instant within
   * 60 ms, is the same cue). Returns "scheduled", "duplicate", "late-dropped", "off" or
   * "unavailable".
   */
  say(key, c) {
    if (!this.available) return "unavailable";
    if (!this.gate()) return "off";
    if (this.entries.has(key) || this.find(c.timer, c.dueLocal, SAME_CUE_MS)) return "duplicate";
    const late = this.localNow() - c.dueLocal;
    if (late > this.lateMs) { this.note(c, "dropped, " + Math.round(late) + " ms late"); return "late-dropped"; }
    const e = { timer: c.timer, text: c.text, lang: c.lang || "en", dueLocal: c.dueLocal, dueMs: c.dueMs, announcedMs: c.announcedMs,
                ahead: !!c.ahead, tid: null, done: false };
    this.entries.set(key, e);
    this.note(e, late > 0 ? "on arrival, " + Math.round(late) + " ms after its instant" : "scheduled");
    this.arm(key, e);
    this.prune();
    return "scheduled";
  }

  /** Arms the entry's timer for its instant (again, after it moved). */
  arm(key, e) {
    if (e.tid != null) this.timers.clear(e.tid);
    e.tid = this.timers.set(() => this.fire(key), Math.max(0, e.dueLocal - this.localNow()));
  }

  /** At (or near) the instant: a timer that fired early re-arms; one that fired too late drops the text. */
  fire(key) {
    const e = this.entries.get(key);
    if (!e || e.done) return;
    e.tid = null;
    const wait = e.dueLocal - this.localNow();
    if (wait > 0.25) { this.arm(key, e); return; }
    e.done = true;
    if (!this.running) { this.note(e, "not said: sound off"); return; }
    if (-wait > this.lateMs) { this.note(e, "dropped, " + Math.round(-wait) + " ms late (a throttled page)"); return; }
    this.speak(e);
  }

  /** Says it now. A phrase still being said is cut: the cue due now is the news. */
  speak(e) {
    const s = this.synth;
    if (s.speaking || s.pending) s.cancel();
    const u = new this.Utterance(e.text);
    u.lang = e.lang;
    const v = voiceFor(typeof s.getVoices === "function" ? s.getVoices() : [], e.lang);
    if (v) u.voice = v;
    u.volume = this.volume;
    const at = this.localNow();
    s.speak(u);
    this.spoken.push({ timer: e.timer, text: e.text, dueLocal: e.dueLocal, at });
    if (this.spoken.length > 50) this.spoken.shift();
    this.note(e, "said " + Math.round(at - e.dueLocal) + " ms after its instant");
    if (this.onSpeak) this.onSpeak(e);
  }

  /** The key of a cue of `timer` within `windowMs` of `dueLocal` (said or still to say), or null. */
  find(timer, dueLocal, windowMs) {
    for (const [key, e] of this.entries) if (e.timer === timer && Math.abs(e.dueLocal - dueLocal) <= windowMs) return key;
    return null;
  }

  /** Takes back the cues not yet said for which `pred(entry, key)` holds. */
  cancel(pred) {
    for (const [key, e] of this.entries) {
      if (e.done || !pred(e, key)) continue;
      if (e.tid != null) this.timers.clear(e.tid);
      this.entries.delete(key);
      this.note(e, "taken back");
    }
  }

  /** Moves the cues not yet said to `dueLocalOf(entry)` (the offset was measured again). */
  move(dueLocalOf) {
    for (const [key, e] of this.entries) {
      if (e.done) continue;
      e.dueLocal = dueLocalOf(e);
      this.arm(key, e);
    }
  }

  /**
   * From the Sound button's click: browsers let a page speak only after a person's gesture,
   * so a silent, empty utterance is said then.
   */
  unlock() {
    if (!this.available) return;
    const u = new this.Utterance(" ");
    u.volume = 0;
    this.synth.speak(u);
  }

  /** Sound off: nothing still to say is said, and what is being said stops. */
  stop() {
    this.cancel(() => true);
    if (this.available && (this.synth.speaking || this.synth.pending)) this.synth.cancel();
  }

  prune() {
    const now = this.localNow();
    for (const [key, e] of this.entries) if (e.done && e.dueLocal < now - KEEP_MS) this.entries.delete(key);
  }

  note(e, what) {
    this.log.push({ at: this.localNow(), timer: e.timer, text: e.text, what });
    if (this.log.length > 50) this.log.shift();
  }
}

/**
 * Events that keep a timer's announced cues where they were: time's own (a segment's end, the
 * countdown, halfway, the expiry and its alerts, a completed finish). Any other event (a pause,
 * a skip, an adjustment, a restart…) is a command that moved the timer: what was announced
 * before it does not sound then, and the node announces again what is still to come.
 */
const KEEPS = new Set(["phase", "countdown", "halfway", "expired", "alert"]);

/**
 * The page's spoken cues: what the node's messages ask to say, for this screen's timers, in
 * place of the beeps at the same instants. `o`: `speech` (a Speech), `sound` (sound.js's: its
 * beep at a spoken instant is hushed), `offset()` (the node's clock offset, null: unknown),
 * `forTimer(id)` (whether this screen sounds that timer's cues).
 */
class SpokenCues {
  constructor(o) {
    this.speech = o.speech;
    this.sound = o.sound;
    this.offset = o.offset;
    this.forTimer = o.forTimer;
  }

  /**
   * A spoken cue for timer `id` (parseSpoken's): said at its `due_ms`, its beep hushed.
   * Returns what Speech.say returned, or "off" (not this screen's timer, sound off) or
   * "no-clock" (the offset not measured yet: it is not known when to say it).
   */
  cue(id, c) {
    if (!this.forTimer(id)) return "off";
    if (!this.speech.available) return "unavailable"; // the beep stays
    if (!this.speech.running) return "off";
    const offset = this.offset();
    if (offset == null) return "no-clock";
    const dueLocal = c.due_ms - offset;
    const r = this.speech.say(id + ":say:" + c.due_ms, {
      timer: id, text: c.text, lang: c.lang, dueLocal, dueMs: c.due_ms, announcedMs: c.announced_ms, ahead: c.ahead,
    });
    if ((r === "scheduled" || r === "duplicate") && this.sound && this.sound.hush) this.sound.hush(id, dueLocal, SAME_CUE_MS);
    return r;
  }

  /** Whether the beep of `timer` at local `dueLocal` is spoken instead (sound.js's `quiet`). */
  speaks(timer, dueLocal) { return this.speech.running && this.speech.find(timer, dueLocal, SAME_CUE_MS) != null; }

  /** A timer's event: a command that moved the timer takes back the cues announced before it. */
  event(id, ev) {
    if (!ev || KEEPS.has(ev.type) || (ev.type === "finished" && ev.reason === "completed")) return;
    const at = typeof ev.at_ms === "number" ? ev.at_ms : null;
    this.speech.cancel((e) => e.timer === id && e.ahead && (at == null || e.announcedMs == null || e.announcedMs < at));
  }

  /** The offset was measured again: the cues still to say move with it. */
  synced() {
    const offset = this.offset();
    if (offset != null) this.speech.move((e) => e.dueMs - offset);
  }

  /** A timer gone (deleted): none of its cues is said. */
  forget(id) { this.speech.cancel((e) => e.timer === id); }
}

export { parseSpoken, voiceFor, Speech, SpokenCues, LATE_MS, SAME_CUE_MS, KEEPS };
