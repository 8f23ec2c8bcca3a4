// What the wall page knows of its node (examples/dashboard/nodestate.js): the node found from
// its `info`, each topic under its base read (junk ignored), the retained states of
// states.json kept by revision, deletions, events and the phase before them, a `list` reply
// where no state came. Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { NodeState, discoverBase } from "../../examples/dashboard/nodestate.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const read = (path) => readFileSync(root + path, "utf8");
const states = JSON.parse(read("Tests/Fixtures/protocol/states.json")).states;
const events = JSON.parse(read("Tests/Fixtures/protocol/events.json")).events;

const node = () => { const n = new NodeState(); n.base = "pacer/gym"; return n; };

test("no ?node=: the node that announces itself on pacer/+/info, or its base_topic", () => {
  assert.equal(discoverBase("pacer/gym/info", JSON.stringify({ node: "gym" })), "pacer/gym");
  assert.equal(discoverBase("pacer/gym/info", JSON.stringify({ node: "gym", base_topic: "club/gym" })), "club/gym");
  assert.equal(discoverBase("pacer/gym/info", ""), null, "a cleared info");
  assert.equal(discoverBase("pacer/gym/info", "{not json"), null);
  assert.equal(discoverBase("pacer/gym/info", "null"), null);
  assert.equal(discoverBase("pacer/gym/status", "online"), null);
  assert.equal(discoverBase("other/gym/info", "{}"), null);
});

test("topics under the base only", () => {
  const n = new NodeState();
  assert.equal(n.rel("pacer/gym/status"), null, "no base yet");
  n.base = "pacer/gym";
  assert.equal(n.rel("pacer/gym/status"), "status");
  assert.equal(n.rel("pacer/gym/timers/main/state"), "timers/main/state");
  assert.equal(n.rel("pacer/gymnasium/status"), null);
  assert.equal(n.rel("pacer/other/status"), null);
});

test("status, info, workouts, sound and athletes", () => {
  const n = node();
  assert.deepEqual(n.apply("status", "online", true), { what: "status" });
  assert.equal(n.online, true);
  n.apply("status", "offline", true);
  assert.equal(n.online, false);
  const info = { node: "gym", timers: [{ id: "main", name: "Main" }, { id: "rest", name: "Rest" }], capabilities: ["time_topic", "workouts"] };
  assert.deepEqual(n.apply("info", JSON.stringify(info), true), { what: "info" });
  assert.deepEqual(n.info, info);
  assert.equal(n.canSave(), true);
  n.apply("info", "{broken", true); // junk keeps the info known
  assert.deepEqual(n.info, info);
  assert.equal(n.workouts, null, "none heard");
  n.apply("workouts", JSON.stringify({ workouts: [{ id: "hiit", name: "HIIT 45/15", spec: { kind: "interval" } }] }), true);
  assert.equal(n.workouts.length, 1);
  n.apply("workouts", "", true);
  assert.deepEqual(n.workouts, [], "cleared: none");
  n.apply("sound", JSON.stringify({ available: true, muted: false, volume: 80 }), true);
  assert.deepEqual(n.speaker, { available: true, muted: false, volume: 80 });
  n.apply("sound", "junk", true);
  assert.equal(n.speaker, null);
  n.apply("athletes", '{"athletes":[]}', true);
  assert.equal(n.athletes, '{"athletes":[]}');
  n.apply("athletes", "", true);
  assert.equal(n.athletes, null);
  assert.deepEqual(n.apply("reply", "{}", false), { what: "reply" });
  assert.deepEqual(n.apply("reply/pacer-dash-x", "{}", false), { what: "reply" });
  assert.equal(n.apply("timers/main/remaining", "42", true), null, "not a topic the page reads");
  assert.equal(n.apply("timers/main/state/x", "{}", true), null);
});

test("every state of states.json is kept as it came; an older retained revision never goes back, a live one is taken", () => {
  const n = node(), first = new Map();
  for (const ex of states) {
    const id = ex.state.id;
    const c = n.apply("timers/" + id + "/state", JSON.stringify(ex.state), false);
    assert.equal(c.what, "state", ex.name);
    assert.equal(c.timer, id);
    assert.deepEqual(c.state, ex.state);
    assert.deepEqual(n.timers.get(id), ex.state, ex.name);
    if (!first.has(id)) first.set(id, ex.state.phase);
    assert.equal(n.phaseOf.get(id), first.get(id), "the phase before any event: the first state's");
  }
  const st = states.find((s) => s.state.revision >= 2).state;
  const older = { ...st, revision: st.revision - 1, status: "idle" };
  assert.equal(n.apply("timers/" + st.id + "/state", JSON.stringify(older), true), null, "an older retained state");
  assert.equal(n.timers.get(st.id).revision, st.revision);
  assert.equal(n.apply("timers/" + st.id + "/state", JSON.stringify(older), false).what, "state", "a live one (the node restarted)");
  assert.equal(n.timers.get(st.id).revision, st.revision - 1);
  assert.equal(n.apply("timers/" + st.id + "/state", "{not json", true), null);
  assert.equal(n.timers.get(st.id).revision, st.revision - 1);
});

test("a cleared state is a deleted timer: gone, with its phase", () => {
  const n = node();
  const st = states[0].state;
  n.apply("timers/" + st.id + "/state", JSON.stringify(st), true);
  assert.equal(n.phaseOf.get(st.id), st.phase);
  assert.deepEqual(n.apply("timers/" + st.id + "/state", "", true), { what: "gone", timer: st.id });
  assert.equal(n.timers.has(st.id), false);
  assert.equal(n.phaseOf.has(st.id), false);
});

test("events of events.json, and the phase each timer was in before", () => {
  const n = node();
  n.apply("timers/main/state", JSON.stringify({ id: "main", status: "running", phase: "work", revision: 1 }), true);
  let phase = "work";
  for (const ev of events) {
    const c = n.apply("timers/main/event", JSON.stringify(ev), false);
    assert.deepEqual(c, { what: "event", timer: "main", event: ev });
    assert.equal(n.noteEvent("main", ev), phase, ev.type);
    phase = ev.phase || phase;
  }
  assert.equal(n.phaseOf.get("main"), "finished");
  n.noteEvent("main", { type: "expired" });
  assert.equal(n.phaseOf.get("main"), "expired", "an event without a phase: its type");
  assert.equal(n.apply("timers/main/event", "", false), null);
  assert.equal(n.apply("timers/main/event", "[", false), null);
});

test("a `list` reply counts where no state came; the node answered, so it is online", () => {
  const n = node();
  n.apply("timers/b/state", JSON.stringify({ id: "b", status: "paused", remaining: 7, revision: 9 }), true);
  n.applyList({ ok: true, timers: [
    { id: "a", name: "Bench", kind: "countdown", status: "running", remaining_ms: 299163, revision: 1 },
    { id: "b", name: "Rest", kind: "rest", status: "running", remaining_ms: 1000, revision: 1 },
  ] }, 1_000_000);
  assert.equal(n.timers.get("a").ends_at_ms, 1_000_000 + 299163);
  assert.equal(n.timers.get("b").revision, 9, "a retained state wins over the list");
  assert.equal(n.online, true);
  n.online = false;
  n.applyList({ ok: true, timers: [] }, 0);
  assert.equal(n.online, false, "a status heard is kept");
});

test("ids in the node's order, then states heard; ids in use", () => {
  const n = node();
  n.apply("timers/zz/state", JSON.stringify({ id: "zz", status: "idle" }), true);
  assert.deepEqual(n.ids(), ["zz"]);
  n.apply("info", JSON.stringify({ node: "gym", timers: [{ id: "main" }, { id: "rest" }] }), true);
  assert.deepEqual(n.ids(), ["main", "rest", "zz"]);
  assert.deepEqual(n.takenIds().sort(), ["main", "rest", "zz"]);
  assert.equal(n.canSave(), false, "no workouts capability: an older node");
});
