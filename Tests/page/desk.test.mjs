// The front desk's model (examples/dashboard/desk.js): topics, clock offsets (offset.js), the flip
// schedule, rooms and timers from retained messages, the `list` snapshot, and the rows'
// clocks against the protocol's examples (Tests/Fixtures/protocol/states.json).
// Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseTopic, FlipHeap, Desk, rowView, statesFromList } from "../../examples/dashboard/desk.js";
import { ClockOffset } from "../../examples/dashboard/offset.js";
import { valueAt, fmt } from "../../examples/dashboard/clock.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const states = JSON.parse(readFileSync(root + "Tests/Fixtures/protocol/states.json", "utf8")).states;

test("topics under the root", () => {
  assert.deepEqual(parseTopic("pacer/gym-a/info", "pacer"), { node: "gym-a", kind: "info" });
  assert.deepEqual(parseTopic("pacer/gym-a/status", "pacer"), { node: "gym-a", kind: "status" });
  assert.deepEqual(parseTopic("pacer/gym-a/timers/main/state", "pacer"), { node: "gym-a", kind: "state", timer: "main" });
  assert.deepEqual(parseTopic("pacer/gym-a/reply/desk-1", "pacer"), { node: "gym-a", kind: "reply" });
  assert.equal(parseTopic("pacer/gym-a/timers/main/remaining", "pacer"), null);
  assert.equal(parseTopic("pacer/gym-a/timers//state", "pacer"), null);
  assert.equal(parseTopic("other/gym-a/info", "pacer"), null);
  assert.equal(parseTopic("pacerx/gym-a/info", "pacer"), null);
  assert.deepEqual(parseTopic("chain/pacer/b1/info", "chain/pacer"), { node: "b1", kind: "info" });
});

test("each room's clock offset is offset.js's, one by one: the smallest round trip wins", () => {
  const d = new Desk("pacer");
  const s = d.node("gym-a").sync;
  assert.ok(s instanceof ClockOffset);
  assert.equal(s.offset, null);
  // node clock = local + 5000; a 40 ms round trip with 30/10 ms asymmetry: off by 10 ms
  s.add(1000, 1040, 1000 + 30 + 5000);
  assert.equal(s.offset, 5010);
  assert.equal(s.rtt, 40);
  // a 4 ms symmetric one replaces it
  s.add(2000, 2004, 2002 + 5000);
  assert.equal(s.offset, 5000);
  // a slower one does not
  s.add(3000, 3100, 3090 + 5000);
  assert.equal(s.offset, 5000);
  // nonsense is ignored
  s.add(4000, 3999, 1);
  s.add(4000, 4001, "x");
  assert.equal(s.samples, 3);
  // a live state is no clock for the front desk (it asks every node)
  assert.equal(s.live(1e12, 0), false);
  s.reset();
  assert.equal(s.offset, null);
});

test("flip heap: earliest first, a push supersedes, remove drops", () => {
  const h = new FlipHeap();
  const rnd = (() => { let x = 7; return () => (x = (x * 48271) % 2147483647) / 2147483647; })();
  const want = new Map();
  for (let i = 0; i < 500; i++) { const at = Math.floor(rnd() * 10000); h.push("k" + (i % 200), at); want.set("k" + (i % 200), at); }
  h.remove("k3"); want.delete("k3");
  assert.equal(h.size, want.size);
  assert.equal(h.peek(), Math.min(...want.values()));
  const got = [];
  for (let t = 0; t <= 10000; t += 250) for (const k of h.popDue(t)) got.push([k, t]);
  assert.equal(got.length, want.size);
  for (const [k, t] of got) assert.ok(want.get(k) <= t && want.get(k) > t - 250, k);
  assert.equal(h.peek(), null);
});

test("rooms and timers from retained messages", () => {
  const d = new Desk("pacer");
  const running = states.find((s) => s.state.status === "running" && !s.state.counts_up).state;
  let ch = d.apply("pacer/gym-b/info", JSON.stringify({ node: "gym-b", timers: [] }), 0);
  assert.deepEqual(ch, [{ node: "gym-b", what: "node" }]);
  ch = d.apply("pacer/gym-b/status", "online", 0);
  assert.deepEqual(ch, [{ node: "gym-b", what: "node" }]);
  assert.deepEqual(d.apply("pacer/gym-b/status", "online", 0), [], "no change, nothing to render");
  ch = d.apply("pacer/gym-b/timers/main/state", JSON.stringify(running), 0);
  assert.deepEqual(ch, [{ node: "gym-b", what: "timer", timer: "main" }, { node: "gym-b", what: "node" }]);
  // an older revision (a retained copy after a live one) does not go back
  assert.deepEqual(d.apply("pacer/gym-b/timers/main/state", JSON.stringify({ ...running, revision: running.revision - 1, status: "paused" }), 0), []);
  assert.equal(d.nodes.get("gym-b").timers.get("main").status, "running");
  d.apply("pacer/gym-a/status", "offline", 0);
  assert.deepEqual(d.order().map((n) => n.id), ["gym-a", "gym-b"]);
  assert.equal(d.nodes.get("gym-a").online, false);
  // a deleted timer (empty retained state) and a removed node (empty info)
  ch = d.apply("pacer/gym-b/timers/main/state", "", 0);
  assert.deepEqual(ch, [{ node: "gym-b", what: "timer-gone", timer: "main" }, { node: "gym-b", what: "node" }]);
  assert.deepEqual(d.apply("pacer/gym-b/info", "", 0), [{ node: "gym-b", what: "gone" }]);
  assert.equal(d.nodes.has("gym-b"), false);
  // garbage changes nothing
  assert.deepEqual(d.apply("pacer/gym-a/timers/x/state", "{not json", 0), []);
  assert.deepEqual(d.apply("pacer/gym-a/status", "maybe", 0), []);
  assert.deepEqual(d.apply("pacer/gym-a/info", "[1", 0), []);
});

test("offline resets the clock offset (re-measured when the node is back)", () => {
  const d = new Desk("pacer");
  d.apply("pacer/n1/status", "online", 0);
  d.node("n1").sync.add(0, 2, 1001);
  assert.equal(d.node("n1").sync.offset, 1000);
  d.apply("pacer/n1/status", "offline", 0);
  assert.equal(d.node("n1").sync.offset, null);
});

test("a node that answers is online, when no retained status said so", () => {
  const d = new Desk("pacer");
  d.node("r9");
  assert.equal(d.nodes.get("r9").online, null);
  assert.deepEqual(d.answered("r9"), [{ node: "r9", what: "node" }]);
  assert.equal(d.nodes.get("r9").online, true);
  assert.deepEqual(d.answered("r9"), []);
  assert.deepEqual(d.answered("nobody"), []);
});

test("each row counts with the wall page's rule (clock.js) from the node's clock", () => {
  const d = new Desk("pacer");
  let checked = 0;
  for (const ex of states) {
    d.apply("pacer/n/timers/" + ex.state.id + "/state", JSON.stringify(ex.state), 0);
    const n = d.node("n");
    for (const at of ex.at || []) {
      // local clock 12345 ms behind the node's: the offset brings it back
      n.sync.reset();
      n.sync.add(0, 0, 12345);
      const local = at.now_ms - 12345;
      const v = d.view("n", ex.state.id, local);
      const want = valueAt(ex.state, at.now_ms);
      assert.equal(v.text, fmt(want.secs), ex.name || ex.state.id);
      assert.equal(v.text, at.display, ex.name); // what the node's own `display` shows then
      checked++;
      if (want.next != null) assert.equal(v.next, want.next - 12345);
      else assert.equal(v.next, null);
    }
    d.apply("pacer/n/timers/" + ex.state.id + "/state", "", 0);
  }
  assert.ok(checked >= 10, checked + " instants checked");
  // with no offset yet: the snapshot's value, and no flip scheduled
  const running = states.find((s) => s.state.status === "running" && !s.state.counts_up).state;
  const v = rowView(running, 0, null);
  assert.equal(v.text, fmt(running.remaining));
  assert.equal(v.next, null);
});

test("a rest that waits for recovery reads 'until recovered' on its row; recovered, its label again", () => {
  const st = { id: "r", name: "Rest", status: "running", phase: "rest", label: "Rest", until_hr: { below_bpm: 120, who: "ana" },
    ends_at_ms: 1_090_000, remaining: 90, revision: 3 };
  assert.equal(rowView(st, 1_000_000, 0).label, "until recovered");
  assert.equal(rowView({ ...st, recovered_at_ms: 1_000_000 }, 1_000_100, 0).label, "Rest");
  assert.equal(rowView({ ...st, until_hr: undefined }, 1_000_000, 0).label, "Rest");
});

test("a `list` reply makes states the rule counts from (brokers without retained state across members)", () => {
  const reply = { id: "x", ok: true, timers: [
    { id: "a", name: "Bench", kind: "countdown", status: "running", phase: "countdown", remaining_ms: 299163, revision: 1, display: "5:00" },
    { id: "b", name: "Rest", kind: "rest", status: "paused", phase: "paused", remaining_ms: 42000, revision: 3 },
    { id: "w", kind: "stopwatch", status: "running", phase: "session", remaining_ms: 0, revision: 2 },
  ] };
  const sts = statesFromList(reply, 1_000_000);
  assert.equal(sts[0].ends_at_ms, 1_000_000 + 299163);
  assert.equal(sts[1].ends_at_ms, undefined);
  assert.equal(sts[1].remaining, 42);
  assert.equal(sts[2].ends_at_ms, undefined, "a stopwatch's instant is not in the list");
  const d = new Desk("pacer");
  d.node("r1").sync.add(0, 0, 1_000_000);
  const ch = d.applyList("r1", reply, 0);
  assert.equal(ch.filter((c) => c.what === "timer").length, 3);
  assert.equal(d.view("r1", "a", 163).text, "4:59");
  assert.equal(d.view("r1", "b", 163).text, "0:42");
  // a real retained state wins over the list's, and a later list does not undo it
  d.apply("pacer/r1/timers/a/state", JSON.stringify({ id: "a", name: "Bench", status: "paused", remaining: 100, revision: 2 }), 0);
  d.applyList("r1", reply, 0);
  assert.equal(d.view("r1", "a", 0).text, "1:40");
  assert.deepEqual(statesFromList(null, 0), []);
  assert.deepEqual(statesFromList({ ok: false, error: {} }, 0), []);
});
