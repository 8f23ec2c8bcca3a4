// media.js: what the phone's lock screen and pocket get from a timer, with no browser API:
// the Media Session's metadata ("WORK 0:42 — Tabata · round 3/8") and position, which
// command each media key sends, what each cue does (its sound and its vibration), and the
// notification an expiry or a rest's end raises ("Rest over — next: Rows"). phone.js hands
// these to navigator.mediaSession, navigator.vibrate and the service worker's
// showNotification; Tests/page/media.test.mjs checks them in Node.
// An ES module with no build step: phone.js and soundflash.js import it in the page, the tests
// import this very file in Node.
import { PHASE_TEXT } from "./views.js";
/** The phase in capitals, as the lock screen's title starts: the page's own words (views.js). */
const WORD = Object.fromEntries(Object.entries(PHASE_TEXT).map(([phase, text]) => [phase, text.toUpperCase()]));

/**
 * The Media Session metadata of a timer: `st` its state, `view` what the page shows
 * ({phase, text}: the phase word and the clock text of this second). `title` "WORK 0:42",
 * `artist` "Tabata · round 3/8" (· set 2/3), `album` the exercise and the next one;
 * `text` the three as one line, for logs and tests.
 */
function metadata(st, view) {
  const phase = (view && view.phase) || (st && (st.status === "paused" ? "paused" : st.phase || st.status)) || "offline";
  const word = WORD[phase] || String(phase).toUpperCase();
  const title = word + (view && view.text ? " " + view.text : "");
  const parts = [];
  if (st) {
    parts.push(st.name || st.id);
    if (st.rounds > 1) parts.push("round " + st.round + "/" + st.rounds);
    if (st.sets > 1) parts.push("set " + st.set + "/" + st.sets);
  }
  const artist = parts.join(" · ");
  let album = "Pacer";
  if (st && st.label) album = st.label + (st.next_label ? " — next: " + st.next_label : "");
  else if (st && st.next_label) album = "Next: " + st.next_label;
  return { title, artist, album, text: title + (artist ? " — " + artist : "") };
}

/**
 * The Media Session position of a running or paused timed segment, in seconds:
 * `{duration, position, playbackRate}`; null for an open-ended one, a stopwatch, or a
 * timer not running (the lock screen then shows no progress bar).
 */
function position(st, now) {
  if (!st || st.counts_up) return null;
  const dur = st.segment_duration_ms;
  if (!(typeof dur === "number" && dur > 0)) return null;
  let left;
  if (st.status === "running" && typeof st.ends_at_ms === "number" && typeof now === "number") left = st.ends_at_ms - now;
  else if (st.status === "paused" && typeof st.remaining_ms === "number") left = st.remaining_ms;
  else return null;
  const pos = Math.min(dur, Math.max(0, dur - left));
  return { duration: dur / 1000, position: pos / 1000, playbackRate: 1 };
}

/** `playing` while it runs or rings, `paused` when paused, else `none`. */
function playbackState(st) {
  if (!st) return "none";
  if (st.status === "running" || st.status === "expired" || st.status === "scheduled") return "playing";
  if (st.status === "paused") return "paused";
  return "none";
}

/** The media keys the page registers, and the timer action each sends. */
const ACTIONS = ["play", "pause", "nexttrack", "previoustrack", "stop"];

/**
 * The timer command (an action of clock.js's commandFor) a media key sends for a timer in
 * state `st`, or null when it does nothing now: play resumes (or starts a timer at rest),
 * pause pauses; on a ringing timer either silences it (ack); next skips, previous goes back,
 * stop cancels.
 */
function actionFor(key, st) {
  const s = st ? st.status : null;
  switch (key) {
    case "play":
      if (s === "paused") return "resume";
      if (s === "expired") return "ack";
      if (s === "idle" || s === "finished" || s === "cancelled") return "start";
      return null;
    case "pause":
      if (s === "running") return "pause";
      if (s === "expired") return "ack";
      return null;
    case "nexttrack": return s === "running" || s === "paused" ? "skip" : null;
    case "previoustrack": return s === "running" || s === "paused" ? "back" : null;
    case "stop": return s === "running" || s === "paused" || s === "expired" || s === "scheduled" ? "cancel" : null;
    default: return null;
  }
}

/** Vibration patterns (ms on, off, on…) of each cue of sound.js. */
const VIBRATION = {
  count: [60],
  prepare: [150],
  work: [250, 100, 250],
  rest: [500],
  finish: [200, 100, 200, 100, 600],
  alert: [400, 200, 400, 200, 400],
};

/** What a cue does on a phone: the sound it plays (sound.js's kind) and how it vibrates. */
function cue(kind) {
  return { sound: kind, vibrate: VIBRATION[kind] || VIBRATION.count };
}

const WORKISH = ["work", "countdown", "session"];
const RESTISH = ["rest", "set_rest"];

/**
 * The notification an event raises, or null: an expiry ("Time's up — Oven"; a rest timer's:
 * "Rest over — next: Rows"), a rest timer that finishes by itself, and the end of an
 * interval's rest (a `phase` event into work after a rest: "Rest over — next: Rows", the
 * event's `label` being the exercise that starts). `st`: the timer's latest state;
 * `before`: the phase the timer was in before this event. `tag` keeps one notification per
 * timer (each replaces the last).
 */
function notification(ev, st, before) {
  if (!ev) return null;
  const name = (st && (st.name || st.id)) || ev.timer || "Timer";
  const tag = "pacer-" + (ev.timer || (st && st.id) || "");
  const restOver = (next, done) => ({
    title: "Rest over" + (next ? " — next: " + next : ""),
    body: (done ? "after " + done + " · " : "") + name,
    tag,
  });
  if (st && st.kind === "rest" && (ev.type === "expired" || (ev.type === "finished" && ev.reason === "completed"))) {
    return restOver(st.next_label, st.label);
  }
  if (ev.type === "expired") {
    return { title: "Time's up — " + name, body: st && st.label ? st.label : "Acknowledge it on the page", tag };
  }
  if (ev.type === "phase" && WORKISH.includes(ev.phase) && RESTISH.includes(before)) {
    const n = restOver(ev.label, null);
    if (st && st.rounds > 1 && ev.round) n.body = name + " · round " + ev.round + "/" + st.rounds;
    return n;
  }
  return null;
}

/**
 * A WAV file of `seconds` of silence (16-bit mono): what the page plays in a loop once sound
 * is on, so that the browser gives it a media session (the lock screen's controls); the
 * cues themselves are WebAudio.
 */
function silentWav(seconds, rate) {
  const sr = rate || 8000, n = Math.round(sr * (seconds || 10)), bytes = n * 2;
  const b = new Uint8Array(44 + bytes), v = new DataView(b.buffer);
  const str = (o, s) => { for (let i = 0; i < s.length; i++) b[o + i] = s.charCodeAt(i); };
  str(0, "RIFF"); v.setUint32(4, 36 + bytes, true); str(8, "WAVE");
  str(12, "fmt "); v.setUint32(16, 16, true); v.setUint16(20, 1, true); v.setUint16(22, 1, true);
  v.setUint32(24, sr, true); v.setUint32(28, sr * 2, true); v.setUint16(32, 2, true); v.setUint16(34, 16, true);
  str(36, "data"); v.setUint32(40, bytes, true);
  return b;
}

export { WORD, ACTIONS, VIBRATION, metadata, position, playbackState, actionFor, cue, notification, silentWav };
