// When the wall page's cues sound and flash (examples/dashboard/cues.js), with stand-in sinks
// for sound.js and flash.js: the cues a running state of states.json makes certain, on the
// node's instants moved to the page's clock by the offset; the ones events.json confirms,
// adds or takes back; a pause, a deleted timer, a new offset; cues only for the timer shown.
// Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { phaseCue, endCue, plannedCues, eventCue, Cues } from "../../examples/dashboard/cues.js";
import { CUES } from "../../examples/dashboard/sound.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const read = (path) => readFileSync(root + path, "utf8");
const states = JSON.parse(read("Tests/Fixtures/protocol/states.json")).states;
const events = JSON.parse(read("Tests/Fixtures/protocol/events.json")).events;

/** A sink as sound.js and flash.js are: entries by key, `find` within a window, `cancel` by a predicate. */
class FakeSink {
  constructor() { this.running = true; this.entries = new Map(); }
  schedule(key, kind, dueLocal, timer, predicted) { if (!this.entries.has(key)) this.entries.set(key, { kind, dueLocal, timer, predicted }); }
  find(timer, kind, dueLocal, windowMs) { for (const e of this.entries.values()) if (e.timer === timer && e.kind === kind && Math.abs(e.dueLocal - dueLocal) <= windowMs) return e; return null; }
  cancel(pred) { for (const [k, e] of this.entries) if (pred(e, k)) this.entries.delete(k); }
  list() { return [...this.entries.values()].map((e) => [e.kind, e.dueLocal, e.predicted]).sort((a, b) => a[1] - b[1]); }
}

const OFFSET = 12_345; // node clock = local + this
function rig(o) {
  const sound = new FakeSink(), flash = new FakeSink();
  const clock = { local: 0, offset: OFFSET, shown: null };
  const cues = new Cues(Object.assign({
    sinks: [sound, flash], cues: [3, 2, 1], offset: () => clock.offset, localNow: () => clock.local,
    forTimer: (id) => clock.shown == null || clock.shown === id,
  }, o));
  return { sound, flash, clock, cues };
}

test("each cue kind has a sound, and each phase its start cue", () => {
  for (const p of ["work", "countdown", "session"]) assert.equal(phaseCue(p), "work");
  for (const p of ["rest", "set_rest", "cooldown"]) assert.equal(phaseCue(p), "rest");
  assert.equal(phaseCue("prepare"), "prepare");
  assert.equal(phaseCue("paused"), null);
  for (const ev of events) { const k = eventCue(ev); if (k) assert.ok(k in CUES, ev.type + ": " + k); }
});

test("a running state makes certain its countdown and its end's cue (next_phase, ack or finish)", () => {
  for (const ex of states) {
    const st = ex.state, want = plannedCues(st.id, st, [3, 2, 1]);
    if (st.status !== "running" || st.ends_at_ms == null || st.counts_up) { assert.equal(want.size, 0, ex.name); continue; }
    const got = [...want.values()];
    assert.deepEqual(got.slice(0, 3), [["count", st.ends_at_ms - 3000], ["count", st.ends_at_ms - 2000], ["count", st.ends_at_ms - 1000]], ex.name);
    const end = endCue(st);
    assert.deepEqual(got.slice(3), end ? [[end, st.ends_at_ms]] : [], ex.name);
    if (st.next_phase) assert.equal(end, phaseCue(st.next_phase), ex.name);
  }
  const work = states.find((s) => s.state.status === "running" && s.state.phase === "work").state;
  assert.equal(endCue(work), "rest");
  assert.equal(endCue({ ack: true }), "alert", "the last segment of a timer that rings");
  assert.equal(endCue({ ack: false }), "finish");
  // A node older than next_phase/ack: the interval's next phase, guessed.
  const old = { kind: "interval", segment: 2, segments: 16, round: 1, rounds: 8, set: 1, sets: 1 };
  assert.equal(endCue({ ...old, phase: "work" }), "rest");
  assert.equal(endCue({ ...old, phase: "rest" }), "work");
  assert.equal(endCue({ ...old, phase: "work", round: 8, segment: 16 }), null);
});

test("foreseen cues are scheduled on the page's clock, ahead, in both sinks; none without the offset", () => {
  const st = states.find((s) => s.state.status === "running" && s.state.phase === "work").state;
  const { sound, flash, clock, cues } = rig();
  clock.local = st.as_of_ms - OFFSET;
  cues.predict(st.id, st);
  const local = st.ends_at_ms - OFFSET;
  const want = [["count", local - 3000, true], ["count", local - 2000, true], ["count", local - 1000, true], ["rest", local, true]];
  assert.deepEqual(sound.list(), want);
  assert.deepEqual(flash.list(), want);
  // Too close to now (20 ms) is left to the event.
  const late = rig();
  late.clock.local = st.ends_at_ms - OFFSET - 1010;
  late.cues.predict(st.id, st);
  assert.deepEqual(late.sound.list(), [["rest", local, true]]);
  const blind = rig();
  blind.clock.offset = null;
  blind.cues.predict(st.id, st);
  assert.equal(blind.sound.entries.size, 0);
  // A sink switched off gets nothing.
  const off = rig();
  off.flash.running = false;
  off.cues.predict(st.id, st);
  assert.equal(off.flash.entries.size, 0);
  assert.equal(off.sound.entries.size, 4);
});

test("a pause, a new state, a deletion and a new offset take foreseen cues back", () => {
  const ex = states.find((s) => s.state.status === "running" && s.state.phase === "work");
  const st = ex.state, paused = states.find((s) => s.state.status === "paused").state;
  const { sound, clock, cues } = rig();
  clock.local = st.as_of_ms - OFFSET;
  cues.predict(st.id, st);
  assert.equal(sound.entries.size, 4);
  cues.predict(st.id, { ...paused, id: st.id });
  assert.equal(sound.entries.size, 0, "paused: nothing foreseen");
  cues.predict(st.id, st);
  cues.predict(st.id, { ...st, ends_at_ms: st.ends_at_ms + 5000 }); // +5 s
  assert.equal(sound.list()[3][1], st.ends_at_ms + 5000 - OFFSET, "an adjusted run moves its cues");
  assert.equal(sound.entries.size, 4);
  cues.forget(st.id);
  assert.equal(sound.entries.size, 0);
  cues.predict(st.id, st);
  clock.offset = OFFSET + 40;
  cues.synced(true, new Map([[st.id, st]]));
  assert.equal(sound.list()[3][1], st.ends_at_ms - OFFSET - 40, "moved with the offset");
});

test("events confirm what was foreseen, add what was not, at due_ms; a completed finish keeps its own cue", () => {
  const { sound, clock, cues } = rig();
  const started = events.find((e) => e.type === "started");
  clock.local = started.due_ms - OFFSET - 500;
  cues.event("main", started);
  assert.deepEqual(sound.list(), [["work", started.due_ms - OFFSET, false]]);
  cues.event("main", started); // again (QoS 1): once
  assert.equal(sound.entries.size, 1);
  // A foreseen cue at the event's instant is confirmed, not doubled.
  const { sound: s2, clock: c2, cues: q2 } = rig();
  const work = { id: "main", status: "running", phase: "work", ends_at_ms: 1_795_320_020_000, ack: false, next_phase: "rest" };
  c2.local = work.ends_at_ms - OFFSET - 10_000;
  q2.predict("main", work);
  q2.event("main", { type: "phase", phase: "rest", due_ms: work.ends_at_ms, revision: 2 });
  assert.equal(s2.list().filter((e) => e[1] === work.ends_at_ms - OFFSET).length, 1);
  // A wrong guess at that instant is replaced.
  q2.predict("main", { ...work, ends_at_ms: work.ends_at_ms + 20_000, next_phase: "work" });
  q2.event("main", { type: "phase", phase: "rest", due_ms: work.ends_at_ms + 20_000, revision: 3 });
  assert.deepEqual(s2.list().filter((e) => e[1] === work.ends_at_ms + 20_000 - OFFSET).map((e) => e[0]), ["rest"]);
  // Paused: its foreseen cues go.
  q2.event("main", { type: "paused", due_ms: work.ends_at_ms + 5_000, revision: 4 });
  assert.equal(s2.list().filter((e) => e[2]).length, 0);
  // A completed run's finish keeps the cue foreseen for its very instant.
  const { sound: s3, clock: c3, cues: q3 } = rig();
  const last = { id: "main", status: "running", phase: "work", ends_at_ms: 1_795_320_032_000, ack: false };
  c3.local = last.ends_at_ms - OFFSET - 500; // the countdown has sounded
  q3.predict("main", last);
  assert.deepEqual(s3.list(), [["finish", last.ends_at_ms - OFFSET, true]]);
  q3.event("main", { type: "finished", reason: "completed", due_ms: last.ends_at_ms, revision: 7 });
  assert.deepEqual(s3.list(), [["finish", last.ends_at_ms - OFFSET, true]], "kept, and not doubled");
  q3.event("main", { type: "cancelled", due_ms: last.ends_at_ms, revision: 8 });
  assert.equal(s3.entries.size, 0, "a cancel takes it back");
  // An acknowledgement's finish has no cue.
  assert.equal(eventCue({ type: "finished", reason: "acknowledged" }), null);
});

test("a timer's page sounds its own timer only; the grid sounds them all", () => {
  const st = states.find((s) => s.state.status === "running" && s.state.phase === "work").state;
  const { sound, clock, cues } = rig();
  clock.local = st.as_of_ms - OFFSET;
  clock.shown = "another";
  cues.predict(st.id, st);
  cues.event(st.id, { type: "countdown", due_ms: st.ends_at_ms - 1000, revision: 1 });
  assert.equal(sound.entries.size, 0);
  clock.shown = null;
  cues.all(new Map([[st.id, st]]));
  assert.equal(sound.entries.size, 4);
});
