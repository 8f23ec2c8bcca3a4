// The displays kept on the node by command (examples/dashboard/displays.js): the retained
// `<base>/displays` read (and kept by nodestate.js), each described in a line, and the
// `save_display` / `delete_display` commands of the phone page's form, against the protocol's
// examples (Tests/Fixtures/protocol/commands.json).
// Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import * as D from "../../examples/dashboard/displays.js";
import { NodeState } from "../../examples/dashboard/nodestate.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const commands = JSON.parse(readFileSync(root + "Tests/Fixtures/protocol/commands.json", "utf8")).commands;
const example = (name) => {
  const c = commands.find((x) => x.name === name);
  assert.ok(c, "commands.json has no example named " + name);
  return c;
};

// docs/API.md's `<base>/displays`, with a WLED light beside it.
const DISPLAYS = '{"displays":[{"display":"wall","type":"awtrix","prefix":"awtrix_gym","timers":["main"]},{"display":"door","type":"wled","topic":"wled/door","timer":"main","brightness":128}],"configured":1}';

test("the retained displays are read, sorted by id; empty is none; junk is nothing", () => {
  const d = D.parseDisplays(DISPLAYS);
  assert.deepEqual(d.displays.map((x) => x.display), ["door", "wall"]);
  assert.equal(d.configured, 1);
  assert.deepEqual(D.parseDisplays(""), { displays: [], configured: 0 });
  assert.equal(D.parseDisplays("{nope"), null);
  assert.equal(D.parseDisplays('{"displays":3}'), null);
  assert.equal(D.parseDisplays(null), null);
});

test("each display in one line", () => {
  const [door, wall] = D.parseDisplays(DISPLAYS).displays;
  assert.equal(D.describe(wall), "wall · AWTRIX clock awtrix_gym · main");
  assert.equal(D.describe(door), "door · WLED light wled/door · main · brightness 128");
});

test("an AWTRIX clock's form gives the protocol's save_display: members flat, timers a list", () => {
  const c = D.saveCommand({ type: "awtrix", display: " wall ", prefix: "awtrix_gym", timers: "main", topic: "ignored", brightness: "9" });
  assert.deepEqual(c.body, example("save a display").payload);
  assert.deepEqual(D.saveCommand({ type: "awtrix", display: "wall", prefix: "p", timers: "main, hall" }).body.timers, ["main", "hall"]);
});

test("a WLED light's form: topic, its one timer (as the list `timers`) and brightness as a number; blank brightness left out", () => {
  assert.deepEqual(D.saveCommand({ type: "wled", display: "door", topic: "wled/door", timers: "main", brightness: "128" }).body,
    { action: "save_display", display: "door", type: "wled", topic: "wled/door", brightness: 128, timers: ["main"] });
  assert.deepEqual(D.saveCommand({ type: "wled", display: "door", topic: "wled/door", timers: "main", brightness: " " }).body,
    { action: "save_display", display: "door", type: "wled", topic: "wled/door", timers: ["main"] });
  assert.equal(D.saveCommand({ type: "wled", display: "door", topic: "wled/door", timers: "main, hall" }).error.field, "timers", "a light shows one timer");
  // The node checks the range (its message names the key); the page sends what was typed.
  assert.equal(D.saveCommand({ type: "wled", display: "door", topic: "wled/door", timers: "main", brightness: "0" }).body.brightness, 0);
});

test("what the page can tell before sending names its field", () => {
  const field = (f) => D.saveCommand(f).error.field;
  assert.equal(field({ type: "awtrix", display: "Wall!", prefix: "p", timers: "main" }), "display");
  assert.equal(field({ type: "awtrix", display: "wall", prefix: "", timers: "main" }), "prefix");
  assert.equal(field({ type: "wled", display: "door", topic: " ", timers: "main" }), "topic");
  assert.equal(field({ type: "wled", display: "door", topic: "t", timers: "main", brightness: "1.5" }), "brightness");
  assert.equal(field({ type: "awtrix", display: "wall", prefix: "p", timers: " , " }), "timers");
  assert.equal(field({ type: "tv", display: "wall", prefix: "p", timers: "main" }), "type");
});

test("delete_display, and what a reply says to show", () => {
  assert.deepEqual(D.deleteCommand("wall"), { action: "delete_display", display: "wall" });
  const msg = "display 'wall': brightness: must be between 1 and 255, got 0";
  assert.deepEqual(D.replyText({ reply: { ok: false, error: { code: "invalid_argument", message: msg } } }, "Saved"), { ok: false, text: msg });
  assert.deepEqual(D.replyText({ reply: { ok: true } }, "Saved"), { ok: true, text: "Saved" });
  assert.equal(D.replyText(null, "Saved").ok, false);
});

test("nodestate keeps the node's displays; junk keeps what it had", () => {
  const n = new NodeState();
  n.base = "pacer/gym";
  assert.equal(n.displays, null);
  assert.deepEqual(n.apply("displays", DISPLAYS, true), { what: "displays" });
  assert.equal(n.displays.displays.length, 2);
  assert.equal(n.apply("displays", "{junk", true), null);
  assert.equal(n.displays.displays.length, 2);
});
