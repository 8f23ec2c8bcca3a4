// Why a rest that ends on recovery still waits, on the page (examples/dashboard/recovery.js):
// the node's retained `<base>/timers/<id>/recovery` read, and the line under the phase, "12 of
// 14 recovered · needs 12", for each rule; shown only while the timer's state says its rest
// waits; and the topic kept per timer by nodestate.js.
// Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import * as R from "../../examples/dashboard/recovery.js";
import { NodeState } from "../../examples/dashboard/nodestate.js";

// The documents of docs/API.md's `recovery` row: a class rule's and one athlete's.
const CLASS = '{"who":"class_80pct","recovered":12,"counted":14,"needed":12,"stale":2}';
const ONE = '{"who":"alice","recovered":0,"counted":1,"needed":1,"stale":0,"bpm":134,"target_bpm":123.5}';
// A timer whose rest waits for recovery (the state's members of docs/API.md, "State snapshot").
const WAITING = { id: "main", status: "running", phase: "rest", until_hr: { below_bpm: 120, who: "class_80pct", min: "20s", max: "1m30s" },
  rest_max_ms: 90000, rest_min_ms: 20000, ends_at_ms: 1090000, remaining: 90 };

test("a recovery document is read; an empty payload is none; junk is nothing", () => {
  assert.equal(R.parseRecovery(CLASS).recovered, 12);
  assert.equal(R.parseRecovery(ONE).target_bpm, 123.5);
  assert.equal(R.parseRecovery(""), null);
  assert.equal(R.parseRecovery(null), null);
  assert.equal(R.parseRecovery("{oops"), null);
  assert.equal(R.parseRecovery('{"who":"class_all"}'), null, "no counts: nothing to say");
  assert.equal(R.parseRecovery("12"), null);
});

test("a class rule: n of m recovered, what the rule needs, the straps without a reading", () => {
  assert.equal(R.tallyLine(WAITING, R.parseRecovery(CLASS)), "12 of 14 recovered · needs 12 · 2 without a reading");
  const at = (doc) => R.tallyLine(WAITING, doc);
  assert.equal(at({ who: "class_80pct", recovered: 3, counted: 5, needed: 4, stale: 0 }), "3 of 5 recovered · needs 4");
  assert.equal(at({ who: "class_all", recovered: 4, counted: 5, needed: 5, stale: 1 }), "4 of 5 recovered · needs all · 1 without a reading");
  assert.equal(at({ who: "class_median", recovered: 6, counted: 14, stale: 0 }), "6 of 14 recovered · the median decides");
  assert.equal(at({ who: "class_all", recovered: 0, counted: 0, needed: 1, stale: 3 }), "no strap reading · 3 without a reading");
  assert.equal(at({ who: "class_all", recovered: 0, counted: 0, needed: 1, stale: 0 }), "no strap reading");
});

test("one athlete's rule: that athlete's bpm against the target, or why there is none", () => {
  assert.equal(R.tallyLine(WAITING, R.parseRecovery(ONE)), "134 bpm · below 123.5 to go on");
  assert.equal(R.tallyLine(WAITING, { who: "alice", recovered: 0, counted: 1, needed: 1, stale: 0, bpm: 125, target_bpm: 120 }),
    "125 bpm · below 120 to go on");
  assert.equal(R.tallyLine(WAITING, { who: "alice", recovered: 0, counted: 0, needed: 1, stale: 1, target_bpm: 120 }),
    "alice: no recent reading · below 120 to go on");
  assert.equal(R.tallyLine(WAITING, { who: "alice", recovered: 0, counted: 0, needed: 1, stale: 1 }), "alice: no recent reading");
});

test("shown only while the state says the rest waits", () => {
  const doc = R.parseRecovery(CLASS);
  assert.equal(R.tallyLine({ ...WAITING, status: "paused" }, doc), "12 of 14 recovered · needs 12 · 2 without a reading");
  assert.equal(R.tallyLine({ ...WAITING, recovered_at_ms: 1050000 }, doc), null, "recovered before min: the rest only runs out");
  assert.equal(R.tallyLine({ ...WAITING, until_hr: undefined, phase: "work" }, doc), null, "a retained tally left over is not shown");
  assert.equal(R.tallyLine({ ...WAITING, status: "finished" }, doc), null);
  assert.equal(R.tallyLine(null, doc), null);
  assert.equal(R.tallyLine(WAITING, null), null, "the node has said nothing yet");
});

test("nodestate keeps each timer's tally; empty clears it; junk changes nothing", () => {
  const n = new NodeState();
  n.base = "pacer/gym";
  assert.deepEqual(n.apply("timers/main/recovery", CLASS, true), { what: "recovery", timer: "main" });
  assert.equal(n.recovery.get("main").counted, 14);
  assert.equal(n.apply("timers/main/recovery", "{junk", true), null);
  assert.equal(n.recovery.get("main").recovered, 12, "junk changes nothing");
  assert.deepEqual(n.apply("timers/main/recovery", "", true), { what: "recovery", timer: "main" });
  assert.equal(n.recovery.has("main"), false);
  assert.equal(n.apply("timers/main/recoveryx", CLASS, true), null);
});
