// The node's speaker on the page (examples/dashboard/speaker.js): what the retained
// <base>/sound says, what the footer's Node speaker control shows for it, and the `sound`
// commands it sends, checked against the protocol's examples (Tests/Fixtures/protocol/commands.json).
// Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import * as S from "../../examples/dashboard/speaker.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const commands = JSON.parse(readFileSync(root + "Tests/Fixtures/protocol/commands.json", "utf8")).commands;
const example = (name) => {
  const c = commands.find((x) => x.name === name);
  assert.ok(c, "commands.json has no example named " + name);
  return c;
};

test("the retained <base>/sound is read as the node publishes it, and nothing else", () => {
  assert.deepEqual(S.parseSound('{"available":true,"muted":false,"volume":100}'), { available: true, muted: false, volume: 100 });
  assert.deepEqual(S.parseSound('{"available":true,"muted":true,"volume":40}'), { available: true, muted: true, volume: 40 });
  assert.deepEqual(S.parseSound('{"available":false,"muted":false,"volume":100}'), { available: false, muted: false, volume: 100 });
  for (const bad of ["", null, "{", "[1]", "42", "null"]) assert.equal(S.parseSound(bad), null, String(bad));
  assert.equal(S.parseSound('{"available":true,"volume":140}').volume, 100, "clamped to 0–100");
  assert.equal(S.parseSound('{"available":"yes"}').available, false, "only true is true");
});

test("the control is hidden on a node without a speaker, before anything is heard, and without controls", () => {
  assert.equal(S.speakerView(null).hidden, true);
  assert.equal(S.speakerView({ available: false, muted: false, volume: 100 }).hidden, true);
  assert.equal(S.speakerView({ available: true, muted: false, volume: 100 }, { controls: false }).hidden, true);
  assert.equal(S.speakerView({ available: true, muted: false, volume: 100 }, { controls: true }).hidden, false);
});

test("the toggle is labelled by its state and says it is the node's speaker, not this screen's sound", () => {
  const on = S.speakerView({ available: true, muted: false, volume: 80 });
  assert.equal(on.label, "Node speaker: on");
  assert.equal(on.pressed, true);
  assert.equal(on.volume, 80);
  assert.match(on.title, /node's speaker/);
  assert.match(on.title, /This screen's sound is the Sound button/);
  const muted = S.speakerView({ available: true, muted: true, volume: 80 });
  assert.equal(muted.label, "Node speaker: muted");
  assert.equal(muted.pressed, false);
  assert.match(muted.title, /tap to unmute/);
  assert.equal(S.speakerView({ available: true, muted: false, volume: null }).volume, 100, "no volume heard: full");
});

test("mute and volume are the protocol's own `sound` commands (commands.json)", () => {
  const mute = example("mute the node's speaker");
  assert.equal(mute.topic, "node", "a node command: on <base>/cmd");
  const { id, ...muteBody } = mute.payload;
  assert.deepEqual(S.muteCommand(true), muteBody);
  assert.deepEqual(S.muteCommand(false), { ...muteBody, muted: false });
  const vol = example("set the node's speaker volume");
  assert.equal(vol.topic, "node");
  assert.deepEqual(S.volumeCommand(vol.payload.volume), vol.payload);
  assert.deepEqual(S.volumeCommand("40"), vol.payload, "the slider's value is text");
  // The refused example (over 100) is never sent: the slider's value is clamped.
  const over = example("a speaker volume over 100");
  assert.equal(over.error, "invalid_argument");
  assert.equal(S.volumeCommand(over.payload.volume).volume, 100);
  assert.equal(S.volumeCommand(-3).volume, 0);
  assert.equal(S.volumeCommand(42.6).volume, 43);
  assert.equal(S.volumeCommand("loud"), null);
});
