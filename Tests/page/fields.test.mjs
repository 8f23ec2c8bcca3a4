// The set-up form's field model (examples/dashboard/fields.js), imported directly: every
// kind's fields are ones the sheet can draw and their defaults pass their own checks, block
// kinds and presets as the node has them, the node's rules for text, names and ids; forms.js
// gives the page these very functions (forms.test.mjs checks the messages through it).
// Run: node --test Tests/page/
import { test } from "node:test";
import assert from "node:assert/strict";
import * as Fi from "../../examples/dashboard/fields.js";
import * as F from "../../examples/dashboard/forms.js";

test("forms.js exports this file's model and checks, not copies", () => {
  for (const name of ["KINDS", "PRESETS", "BLOCK_KINDS", "TIMER_ID", "checkField", "checkName", "checkWorkoutName", "checkId", "checkText", "slug", "uniqueId", "timerName"]) {
    assert.equal(F[name], Fi[name], name);
  }
});

test("every field can be drawn, and every default passes its own check", () => {
  const TYPES = ["duration", "hms", "count", "text", "list", "bool"];
  assert.deepEqual(Object.keys(Fi.KINDS), ["interval", "countdown", "rest", "stopwatch", "program", "preset"]);
  for (const [kind, def] of Object.entries(Fi.KINDS)) {
    assert.ok(def.label && def.about, kind);
    const keys = new Set();
    for (const f of def.fields) {
      assert.ok(TYPES.includes(f.type), kind + "." + f.key + ": " + f.type);
      assert.ok(f.label, kind + "." + f.key);
      assert.ok(!keys.has(f.key), kind + "." + f.key + " twice");
      keys.add(f.key);
      const c = Fi.checkField(f, f.type === "bool" ? !!f.value : f.value == null ? "" : f.value);
      assert.equal(c.error, undefined, kind + "." + f.key + " default: " + c.error);
      if (f.required) assert.match(Fi.checkField(f, "").error, new RegExp("^" + f.key + " is required"));
    }
  }
  for (const [p, def] of Object.entries(Fi.PRESETS)) for (const f of def.params) assert.equal(Fi.checkField(f, f.value).error, undefined, p + "." + f.key);
});

test("block kinds: the node's segment kinds, work and the open-ended kinds at least 1 s", () => {
  assert.deepEqual(Fi.BLOCK_KINDS.map((k) => k[0]), ["work", "rest", "prepare", "set_rest", "cooldown", "countdown", "session"]);
  for (const [k, , min] of Fi.BLOCK_KINDS) assert.equal(Fi.blockMin(k), min, k);
  assert.equal(Fi.blockMin("unknown"), 1000);
  assert.equal(Fi.checkField({ key: "duration", type: "duration", min: Fi.blockMin("rest") }, "0").value, "0s");
  assert.match(Fi.checkField({ key: "duration", type: "duration", min: Fi.blockMin("work") }, "0").error, /between 1 s and 7 days/);
});

test("text, names and ids: the node's rules", () => {
  assert.equal(Fi.checkText("label", "x".repeat(100), false), null);
  assert.match(Fi.checkText("label", "x".repeat(101), false), /at most 100 characters, got 101/);
  assert.match(Fi.checkText("label", "a\u2028b", false), /control characters/);
  assert.equal(Fi.checkText("label", "", true), null);
  assert.equal(Fi.checkName("", true), null, "optional");
  assert.match(Fi.checkName("a#b"), /cannot contain '#'/);
  assert.equal(Fi.checkId("a".repeat(64)), null);
  assert.match(Fi.checkId("", [], "workout"), /^workout is required/);
  assert.equal(Fi.printable("y".repeat(50)), "y".repeat(40) + "…");
  assert.equal(Fi.timerName("a+b#c/" + "z".repeat(200)).length, Fi.MAX_TEXT);
});
