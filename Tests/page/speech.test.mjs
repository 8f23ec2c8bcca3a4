// The page's spoken cues (examples/dashboard/speech.js) on a fake clock, with a fake
// speechSynthesis and, for the beeps they replace, sound.js's own Sound on a fake AudioContext:
// a text said at its due_ms on the node's clock moved to the page's, never before, and not at
// all when it comes more than a second late; once for a cue announced ahead and sent again;
// nothing with Sound off; the beep of that instant hushed, and kept where the browser cannot
// speak; announcements taken back by a command, moved with a new offset.
// Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseSpoken, voiceFor, Speech, SpokenCues, LATE_MS } from "../../examples/dashboard/speech.js";
import { Sound } from "../../examples/dashboard/sound.js";
import { NodeState } from "../../examples/dashboard/nodestate.js";

const OFFSET = 7_000.5; // node clock = page clock + this

/** The page's clock and its timers: `advance(to)` runs each timer at its instant, in order; `early` fires them that much early (browsers do). */
class FakeClock {
  constructor() { this.now = 0; this.queue = new Map(); this.seq = 0; this.early = 0; }
  set(fn, ms) { const id = ++this.seq, wait = Math.max(0, ms); this.queue.set(id, { fn, at: this.now + wait - Math.min(this.early, wait / 2) }); return id; }
  clear(id) { this.queue.delete(id); }
  advance(to) {
    for (;;) {
      let next = null;
      for (const [id, t] of this.queue) if (t.at <= to && (!next || t.at < next[1].at)) next = [id, t];
      if (!next) break;
      this.queue.delete(next[0]);
      this.now = Math.max(this.now, next[1].at);
      next[1].fn();
    }
    this.now = Math.max(this.now, to);
  }
}

/** speechSynthesis as a browser has it: what was said, when, with which voice; cancel counted. */
class FakeSynth {
  constructor(clock, voices) { this.clock = clock; this.voices = voices || []; this.said = []; this.cancels = 0; this.speaking = false; this.pending = false; }
  speak(u) { this.said.push({ text: u.text, at: this.clock.now, lang: u.lang, voice: u.voice, volume: u.volume }); }
  cancel() { this.cancels++; this.speaking = false; }
  getVoices() { return this.voices; }
}
class FakeUtterance { constructor(text) { this.text = text; this.volume = 1; } }

/** A fake AudioContext for sound.js: oscillators that remember their start and stop. */
class FakeNode {
  constructor() { this.frequency = { value: 0 }; this.gain = { value: 1, setValueAtTime() {}, linearRampToValueAtTime() {} }; this.started = null; this.stops = []; }
  connect(n) { return n; }
  disconnect() {}
  start(t) { this.started = t; }
  stop(t) { this.stops.push(t); }
}
function fakeAudio(clock) {
  return class {
    constructor() { this.state = "running"; this.destination = {}; this.made = []; }
    get currentTime() { return clock.now / 1000; }
    createOscillator() { const n = new FakeNode(); this.made.push(n); return n; }
    createGain() { return new FakeNode(); }
    resume() {}
    suspend() {}
  };
}

function rig(o = {}) {
  const clock = new FakeClock();
  const synth = o.noSynth ? null : new FakeSynth(clock, o.voices);
  globalThis.AudioContext = fakeAudio(clock);
  const sound = new Sound(() => clock.now, 500);
  sound.enable();
  const gate = { on: true };
  const speech = new Speech({ localNow: () => clock.now, synth, Utterance: o.noSynth ? null : FakeUtterance, gate: () => gate.on && sound.running, timers: clock });
  const off = { offset: OFFSET, shown: o.shown == null ? null : o.shown };
  const spoken = new SpokenCues({ speech, sound, offset: () => off.offset, forTimer: (id) => off.shown == null || off.shown === id });
  sound.quiet = (timer, dueLocal) => spoken.speaks(timer, dueLocal);
  return { clock, synth, sound, speech, spoken, gate, off };
}

/** A `say` message as the node sends it, for a cue at page instant `local`. */
const sayMsg = (local, text, extra) => JSON.stringify(Object.assign({ timer: "main", event: "phase", text, due_ms: local + OFFSET, at_ms: local + OFFSET + 1, lang: "en" }, extra));
const aheadMsg = (local, say, lead, extra) => JSON.stringify(Object.assign({ timer: "main", cue: "rest", due_ms: local + OFFSET, duration_ms: 1234, lead_ms: lead }, say == null ? {} : { say }, extra));

/** The tones of sound.js's entries: [kind, started (s), stopped early]. */
const tones = (sound) => [...sound.entries.values()].flatMap((e) => e.nodes.map((n) => [e.kind, n.started, n.stops.includes(0)]));

test("a say message and a cue_ahead announcement read, junk refused", () => {
  const say = parseSpoken('{"timer":"main","event":"phase","text":"Rest. Next: Swings","due_ms":1795370392345,"at_ms":1795370392346,"lang":"en"}', "main");
  assert.deepEqual(say, { timer: "main", text: "Rest. Next: Swings", due_ms: 1795370392345, lang: "en", event: "phase", cue: null, announced_ms: 1795370392346, ahead: false });
  const ahead = parseSpoken('{"timer":"main","cue":"rest","due_ms":1795370392345,"duration_ms":1234,"lead_ms":1000,"say":"Rest"}', null);
  assert.deepEqual(ahead, { timer: "main", text: "Rest", due_ms: 1795370392345, lang: "en", event: null, cue: "rest", announced_ms: 1795370391345, ahead: true });
  assert.equal(parseSpoken('{"timer":"main","cue":"countdown","due_ms":1,"duration_ms":150,"lead_ms":1000}', null), null, "a cue that only beeps");
  for (const junk of ["", "{", "null", "42", '"x"', '{"text":"Go"}', '{"text":"Go","due_ms":"soon"}', '{"text":"  ","due_ms":1}', '{"text":7,"due_ms":1}']) {
    assert.equal(parseSpoken(junk, "main"), null, junk);
  }
  assert.equal(parseSpoken('{"say":"Go","due_ms":1}', null), null, "an announcement names its timer");
  assert.equal(parseSpoken('{"text":"Go","due_ms":1}', "main").lang, "en", "English unless told");
  assert.equal(parseSpoken(JSON.stringify({ text: "x".repeat(2000), due_ms: 1 }), "main").text.length, 500, "bounded");
});

test("nodestate passes a timer's say and a spoken announcement on, nothing else of cue_ahead", () => {
  const n = new NodeState(); n.base = "pacer/gym";
  const c = n.apply(n.rel("pacer/gym/timers/main/say"), sayMsg(0, "Work: Burpees"), false);
  assert.equal(c.what, "say"); assert.equal(c.timer, "main"); assert.equal(c.say.text, "Work: Burpees");
  const a = n.apply(n.rel("pacer/gym/cue_ahead"), aheadMsg(0, "Rest", 1000, { timer: "bench" }), false);
  assert.equal(a.what, "say"); assert.equal(a.timer, "bench"); assert.equal(a.say.ahead, true);
  assert.equal(n.apply("cue_ahead", aheadMsg(0, null, 1000), false), null, "a beep's announcement");
  assert.equal(n.apply("timers/main/say", "", false), null);
  assert.equal(n.apply("timers/main/say", "{junk", false), null);
});

test("said at its due_ms on the node's clock moved to the page's, not before, once", () => {
  const { clock, synth, spoken } = rig();
  clock.early = 0.6; // timers fire a little early: the page waits for the rest
  assert.equal(spoken.cue("main", parseSpoken(sayMsg(2000, "Rest. Next: Swings"), "main")), "scheduled");
  clock.advance(1999);
  assert.deepEqual(synth.said, []);
  clock.advance(2500);
  assert.equal(synth.said.length, 1);
  assert.ok(synth.said[0].at >= 2000 - 0.25 && synth.said[0].at <= 2000.5, "at " + synth.said[0].at);
  assert.equal(synth.said[0].text, "Rest. Next: Swings");
  assert.equal(synth.said[0].lang, "en");
  clock.advance(10_000);
  assert.equal(synth.said.length, 1, "once");
});

test("a text that comes late: at once within a second of its instant, never later", () => {
  const { clock, synth, spoken, speech } = rig();
  clock.advance(5000);
  assert.equal(spoken.cue("main", parseSpoken(sayMsg(5000 - 40, "Work: Burpees"), "main")), "scheduled", "a delivery late");
  assert.equal(spoken.cue("main", parseSpoken(sayMsg(5000 - LATE_MS + 1, "Halfway"), "main")), "scheduled");
  assert.equal(spoken.cue("main", parseSpoken(sayMsg(5000 - LATE_MS - 100, "Done"), "main")), "late-dropped");
  assert.equal(spoken.cue("main", parseSpoken(sayMsg(5000 - 60_000, "Round 3 of 8"), "main")), "late-dropped", "replayed after a reconnect");
  clock.advance(70_000);
  assert.deepEqual(synth.said.map((s) => [s.text, s.at]), [["Work: Burpees", 5000], ["Halfway", 5000]]);
  assert.ok(speech.log.some((l) => l.text === "Done" && l.what.startsWith("dropped")));
  // A page whose timers were held back (a throttled tab) does not speak late either.
  spoken.cue("main", parseSpoken(sayMsg(80_000, "Rest"), "main"));
  clock.queue.clear(); clock.now = 81_500; // its timer never ran on time
  speech.fire([...speech.entries.keys()].find((k) => k.endsWith(String(80_000 + OFFSET))));
  assert.equal(synth.said.length, 2, "dropped when the timer ran 1.5 s late");
});

test("announced ahead, then sent with its event: said once, at its instant", () => {
  const { clock, synth, spoken } = rig();
  clock.advance(1000);
  assert.equal(spoken.cue("main", parseSpoken(aheadMsg(2000, "Rest. Next: Swings", 1000), null)), "scheduled");
  clock.advance(2003);
  assert.equal(spoken.cue("main", parseSpoken(sayMsg(2000, "Rest. Next: Swings"), "main")), "duplicate");
  clock.advance(5000);
  assert.deepEqual(synth.said.map((s) => [s.text, s.at]), [["Rest. Next: Swings", 2000]]);
});

test("the beep of a spoken instant is hushed; the others sound, and all beep without speech", () => {
  const { clock, sound, spoken } = rig();
  // Foreseen beeps: the countdown at 3, 4 s and the rest's start at 5 s; another timer's at 5 s.
  sound.schedule("main:count:3", "count", 3000, "main", true);
  sound.schedule("main:count:4", "count", 4000, "main", true);
  sound.schedule("main:rest:5", "rest", 5000, "main", true);
  sound.schedule("other:work:5", "work", 5000, "other", true);
  clock.advance(4000 - 1000);
  spoken.cue("main", parseSpoken(aheadMsg(5000, "Rest. Next: Swings", 1000), null));
  const byKind = (k, t) => [...sound.entries.values()].find((e) => e.kind === k && e.timer === t);
  assert.equal(byKind("rest", "main").hushed, true);
  assert.ok(byKind("rest", "main").nodes.length === 0 && byKind("work", "other").nodes.length === 2 && byKind("count", "main").nodes.length === 1);
  // The event of that cue comes: its beep is spoken instead, not added.
  assert.equal(sound.schedule("main:rest:5:e", "rest", 5000.4, "main", false), "scheduled");
  assert.equal(sound.entries.get("main:rest:5:e").nodes.length, 0);
  assert.ok(tones(sound).filter(([k]) => k === "rest").length === 0, "no rest tone at all");
  // Without speech synthesis the same cues beep as before.
  const b = rig({ noSynth: true });
  b.sound.schedule("main:rest:5", "rest", 5000, "main", true);
  b.clock.advance(3000);
  assert.equal(b.spoken.cue("main", parseSpoken(aheadMsg(5000, "Rest", 1000), null)), "unavailable");
  assert.equal([...b.sound.entries.values()][0].nodes.length, 2);
  assert.equal(b.speech.available, false);
});

test("a late text leaves its beep; a beep already started is not stopped", () => {
  const { clock, sound, spoken, synth } = rig();
  sound.schedule("main:work:2", "work", 2000, "main", true);
  clock.advance(2000 + LATE_MS + 5);
  assert.equal(spoken.cue("main", parseSpoken(sayMsg(2000, "Work"), "main")), "late-dropped");
  const started = rig();
  started.sound.schedule("main:work:2", "work", 2000, "main", true);
  started.clock.advance(2030);
  started.spoken.cue("main", parseSpoken(sayMsg(2000, "Work"), "main"));
  assert.deepEqual(tones(started.sound).map(([, , cut]) => cut), [false, false], "its tones not cut");
  started.clock.advance(3000);
  assert.equal(started.synth.said.length, 1, "the words follow the beep");
  assert.equal(synth.said.length, 0);
});

test("Sound off: nothing is said; switched off, what was to be said is not", () => {
  const { clock, synth, spoken, speech, gate } = rig();
  gate.on = false;
  assert.equal(spoken.cue("main", parseSpoken(sayMsg(1000, "Work"), "main")), "off");
  gate.on = true;
  spoken.cue("main", parseSpoken(sayMsg(2000, "Rest"), "main"));
  synth.speaking = true;
  speech.stop(); // the Sound button
  gate.on = false;
  clock.advance(5000);
  assert.deepEqual(synth.said, []);
  assert.equal(synth.cancels, 1, "what was being said stops");
  assert.equal(spoken.speaks("main", 2000), false);
});

test("a timer's page says its own timer's cues only; none without the clock offset", () => {
  const { clock, synth, spoken, off } = rig({ shown: "main" });
  assert.equal(spoken.cue("bench", parseSpoken(sayMsg(1000, "Rest", { timer: "bench" }), "bench")), "off");
  off.offset = null;
  assert.equal(spoken.cue("main", parseSpoken(sayMsg(1000, "Rest"), "main")), "no-clock");
  clock.advance(3000);
  assert.deepEqual(synth.said, []);
});

test("a command that moves the timer takes back what was announced before it", () => {
  const { clock, synth, spoken } = rig();
  clock.advance(1000);
  spoken.cue("main", parseSpoken(aheadMsg(2000, "Rest", 1000), null));           // announced at node 1000 + offset
  spoken.cue("bench", parseSpoken(aheadMsg(1900, "Halfway", 900, { timer: "bench" }), null)); // another timer's
  spoken.event("main", { type: "countdown", at_ms: 1200 + OFFSET });           // time's own: kept
  spoken.event("main", { type: "finished", reason: "completed", at_ms: 1200 + OFFSET });
  assert.equal(spoken.speaks("main", 2000), true);
  spoken.event("main", { type: "paused", at_ms: 1500 + OFFSET });              // a command: taken back
  assert.equal(spoken.speaks("main", 2000), false);
  // Announced again after the command (the node does): kept by a later event of the same command.
  spoken.cue("main", parseSpoken(aheadMsg(2600, "Rest", 1100), null));           // announced at 1500
  spoken.event("main", { type: "resumed", at_ms: 1500 + OFFSET });
  clock.advance(4000);
  assert.deepEqual(synth.said.map((s) => [s.text, s.at]), [["Halfway", 1900], ["Rest", 2600]]);
  // A deleted timer says nothing more.
  spoken.cue("main", parseSpoken(aheadMsg(5000, "Done", 1000), null));
  spoken.forget("main");
  clock.advance(6000);
  assert.equal(synth.said.length, 2);
});

test("the offset measured again: what is still to say moves with it", () => {
  const { clock, synth, spoken, off } = rig();
  spoken.cue("main", parseSpoken(sayMsg(3000, "Last round"), "main"));
  clock.advance(1000);
  off.offset = OFFSET - 40; // the page's clock was 40 ms behind what was thought
  spoken.synced();
  clock.advance(5000);
  assert.deepEqual(synth.said.map((s) => s.at), [3040]);
});

test("a phrase still being said is cut for the cue due now; the language's voice", () => {
  const voices = [{ name: "de", lang: "de-DE" }, { name: "us", lang: "en-US", localService: true }, { name: "gb", lang: "en-GB", default: true }];
  const { clock, synth, spoken } = rig({ voices });
  spoken.cue("main", parseSpoken(sayMsg(1000, "Rest. Next: Kettlebell swings"), "main"));
  spoken.cue("main", parseSpoken(sayMsg(1500, "Last round"), "main"));
  clock.advance(1200);
  synth.speaking = true;
  clock.advance(2000);
  assert.equal(synth.cancels, 1);
  assert.deepEqual(synth.said.map((s) => s.voice.name), ["gb", "gb"]);
  assert.equal(voiceFor(voices, "de").name, "de");
  assert.equal(voiceFor(voices, "en").name, "gb", "the default first");
  assert.equal(voiceFor(voices.slice(0, 2), "en").name, "us", "else a local one");
  assert.equal(voiceFor(voices, "fr"), null, "none: the browser's own");
  assert.equal(voiceFor([], "en"), null);
});

test("Sound on unlocks speech with a silent utterance; a browser without it is left alone", () => {
  const { synth, speech } = rig();
  speech.unlock();
  assert.deepEqual(synth.said.map((s) => [s.text, s.volume]), [[" ", 0]]);
  const b = rig({ noSynth: true });
  b.speech.unlock();
  b.speech.stop();
  assert.equal(b.speech.running, false);
});
