// The phone's lock screen and pocket (examples/dashboard/media.js): the Media Session's
// metadata and position, which command each media key sends (checked against their examples
// in Tests/Fixtures/protocol/commands.json through clock.js's commandFor), what each cue does,
// and the notifications of an expiry and of a rest's end, from the protocol's own events.
// Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
// The very modules the page imports, not copies.
import * as M from "../../examples/dashboard/media.js";
import { commandFor, valueAt, fmt } from "../../examples/dashboard/clock.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const read = (path) => readFileSync(root + path, "utf8");
const commands = JSON.parse(read("Tests/Fixtures/protocol/commands.json")).commands;
const states = JSON.parse(read("Tests/Fixtures/protocol/states.json")).states;
const events = JSON.parse(read("Tests/Fixtures/protocol/events.json"));

const t0 = 1_795_320_000_000;
const tabata = { id: "main", name: "Tabata", kind: "interval", status: "running", phase: "work", label: "Burpees", next_label: "Squats",
  round: 3, rounds: 8, set: 1, sets: 1, segment_duration_ms: 20_000, ends_at_ms: t0 + 42_000, remaining_ms: 42_000, revision: 7 };

test("the lock screen reads WORK 0:42 — Tabata · round 3/8, with the exercise and the next one", () => {
  const m = M.metadata(tabata, { phase: "work", text: "0:42" });
  assert.equal(m.text, "WORK 0:42 — Tabata · round 3/8");
  assert.equal(m.title, "WORK 0:42");
  assert.equal(m.artist, "Tabata · round 3/8");
  assert.equal(m.album, "Burpees — next: Squats");
  assert.equal(M.metadata({ ...tabata, sets: 2, set: 2 }, { phase: "rest", text: "0:10" }).text, "REST 0:10 — Tabata · round 3/8 · set 2/2");
  assert.equal(M.metadata({ id: "oven", kind: "countdown", status: "expired", phase: "expired", rounds: 1 }, { phase: "expired", text: "0:00" }).text, "TIME'S UP 0:00 — oven");
  assert.equal(M.metadata(null, { phase: "offline" }).text, "OFFLINE");
});

test("every retained state of states.json gives metadata the page's clock agrees with", () => {
  for (const { name, state, at } of states) {
    const v = valueAt(state, at[0].now_ms);
    const phase = state.status === "paused" ? "paused" : state.phase || state.status;
    const m = M.metadata(state, { phase, text: fmt(v.secs) });
    assert.ok(m.title.startsWith(M.WORD[phase]) && m.title.endsWith(at[0].display), `${name}: ${m.title}`);
    assert.ok(m.artist.startsWith(state.name || state.id), `${name}: ${m.artist}`);
  }
});

test("the position follows the segment; none for a stopwatch or an open-ended one", () => {
  assert.deepEqual(M.position(tabata, t0 + 30_000), { duration: 20, position: 8, playbackRate: 1 });
  assert.deepEqual(M.position({ ...tabata, status: "paused", remaining_ms: 5_000 }, t0), { duration: 20, position: 15, playbackRate: 1 });
  assert.deepEqual(M.position(tabata, t0 + 99_000), { duration: 20, position: 20, playbackRate: 1 });
  assert.equal(M.position({ ...tabata, counts_up: true }, t0), null);
  assert.equal(M.position({ ...tabata, segment_duration_ms: null }, t0), null);
  assert.equal(M.position({ ...tabata, status: "idle" }, t0), null);
  assert.equal(M.playbackState(tabata), "playing");
  assert.equal(M.playbackState({ status: "paused" }), "paused");
  assert.equal(M.playbackState({ status: "finished" }), "none");
});

test("media keys: pause pauses, play resumes, next skips, previous goes back (commands.json)", () => {
  const canonical = (name) => commands.find((c) => c.name === name).encoded;
  const run = { status: "running" }, paused = { status: "paused" }, ringing = { status: "expired" }, idle = { status: "idle" };
  const cases = [["pause", run, "pause (word)"], ["play", paused, "resume"], ["nexttrack", run, "skip"], ["previoustrack", paused, "back"],
    ["play", idle, "start again (word)"], ["pause", ringing, "ack"], ["play", ringing, "ack"], ["stop", run, "cancel"]];
  for (const [key, st, example] of cases) {
    const action = M.actionFor(key, st);
    assert.ok(action, `${key} on ${st.status}`);
    assert.deepEqual(commandFor(action), canonical(example), `${key} on ${st.status}`);
  }
  for (const [key, st] of [["pause", paused], ["play", run], ["nexttrack", idle], ["previoustrack", ringing], ["stop", idle], ["seekto", run]]) {
    assert.equal(M.actionFor(key, st), null, `${key} on ${st.status} does nothing`);
  }
  assert.equal(M.actionFor("pause", null), null);
});

test("what a cue does: its sound and its vibration", () => {
  for (const kind of ["count", "prepare", "work", "rest", "finish", "alert"]) {
    const c = M.cue(kind);
    assert.equal(c.sound, kind);
    assert.ok(Array.isArray(c.vibrate) && c.vibrate.length % 2 === 1 && c.vibrate.every((n) => n > 0 && n <= 1000), kind);
  }
  // The rest's long buzz and the work's double buzz can be told apart in a pocket.
  assert.notDeepEqual(M.cue("work").vibrate, M.cue("rest").vibrate);
  assert.ok(M.cue("count").vibrate[0] < M.cue("work").vibrate[0]);
});

test("notifications: the end of a rest names the exercise that starts; an expiry names the timer", () => {
  const phaseEvent = events.events ? events.events.find((e) => e.type === "phase" && e.phase === "work") : null;
  const work = phaseEvent || { type: "phase", timer: "main", phase: "work", label: "Rows", round: 4 };
  const st = { ...tabata, label: work.label };
  const n = M.notification({ ...work, label: "Rows", round: 4 }, st, "rest");
  assert.deepEqual(n, { title: "Rest over — next: Rows", body: "Tabata · round 4/8", tag: "pacer-" + work.timer });
  assert.equal(M.notification({ ...work, label: "Rows" }, st, "work"), null, "work after work is no rest's end");
  assert.equal(M.notification({ ...work, label: "Rows" }, st, "prepare"), null);
  assert.equal(M.notification({ type: "phase", timer: "main", phase: "work", label: null }, st, "set_rest").title, "Rest over");
  const rest = { id: "r1", name: "Rest", kind: "rest", label: "Squat", next_label: "Rows", status: "expired" };
  assert.deepEqual(M.notification({ type: "expired", timer: "r1" }, rest, "rest"), { title: "Rest over — next: Rows", body: "after Squat · Rest", tag: "pacer-r1" });
  assert.deepEqual(M.notification({ type: "finished", reason: "completed", timer: "r1" }, { ...rest, status: "finished" }, "rest").title, "Rest over — next: Rows");
  assert.deepEqual(M.notification({ type: "expired", timer: "oven" }, { id: "oven", name: "Oven", kind: "countdown" }, "countdown"),
    { title: "Time's up — Oven", body: "Acknowledge it on the page", tag: "pacer-oven" });
  for (const type of ["countdown", "halfway", "paused", "alert", "acknowledged", "started"]) assert.equal(M.notification({ type, timer: "main", phase: "work" }, st, "rest"), null, type);
});

test("the lock screen's silent audio is a valid WAV of the asked length", () => {
  const w = M.silentWav(10, 8000);
  const text = (a, b) => String.fromCharCode(...w.slice(a, b));
  assert.equal(text(0, 4), "RIFF"); assert.equal(text(8, 12), "WAVE"); assert.equal(text(36, 40), "data");
  const v = new DataView(w.buffer);
  assert.equal(v.getUint32(24, true), 8000);
  assert.equal(v.getUint32(40, true), 160_000);
  assert.equal(w.length, 44 + 160_000);
  assert.ok(w.slice(44).every((b) => b === 0));
});
