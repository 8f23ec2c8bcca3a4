// The wall page's settings from its address and the addresses of its links
// (examples/dashboard/settings.js): the defaults, each parameter of docs/dashboard.md's table,
// an address giving the broker as host/port read in its new form (legacy.js), and links that
// keep every other parameter and name the node found. Run: node --test Tests/page/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readSettings, pageSearch, linkParams, num } from "../../examples/dashboard/settings.js";

const PAGE = "http://gym.local/index.html";

test("the defaults: the broker beside the page, the grid, controls, MQTT 5 or 3.1.1, cues 3 2 1", () => {
  const { cfg, legacy } = readSettings("", PAGE);
  assert.equal(legacy, null);
  assert.deepEqual(cfg, {
    broker: "ws://gym.local/mqtt", node: null, base: null, timer: null, controls: true, sound: false, flash: null,
    mqtt: "auto", user: null, pass: null, wake: null, lagMs: 500, cues: [3, 2, 1], resyncMs: 300_000, sw: true,
  });
  assert.equal(readSettings("", "https://gym.local/").cfg.broker, "wss://gym.local/mqtt");
});

test("each parameter", () => {
  const { cfg } = readSettings("?node=gym&base=club/gym&timer=main&controls=0&sound=1&flash=0&mqtt=3.1.1&user=wall&pass=pw"
    + "&wake=1&lag=250&cues=5,3,x,0,1&resync=60&sw=0&broker=ws://10.0.0.2:9001", PAGE);
  assert.deepEqual(cfg, {
    broker: "ws://10.0.0.2:9001", node: "gym", base: "club/gym", timer: "main", controls: false, sound: true, flash: "0",
    mqtt: 4, user: "wall", pass: "pw", wake: "1", lagMs: 250, cues: [5, 3, 1], resyncMs: 60_000, sw: false,
  });
  assert.equal(readSettings("?mqtt=5", PAGE).cfg.mqtt, 5);
  assert.equal(readSettings("?mqtt=4", PAGE).cfg.mqtt, "auto", "only 5 and 3.1.1 fix it");
  assert.equal(readSettings("?controls=1", PAGE).cfg.controls, true);
  assert.equal(readSettings("?lag=soon&resync=", PAGE).cfg.lagMs, 500, "not a number: the default");
  assert.equal(readSettings("?resync=", PAGE).cfg.resyncMs, 300_000);
  assert.equal(num("0", 7), 0);
  assert.equal(num(null, 7), 7);
});

test("an address of another form: host/port read as broker=, every other parameter kept", () => {
  const { cfg, legacy } = readSettings("?node=gym&timer=main&host=192.168.1.10&port=9001&controls=0", PAGE);
  assert.equal(cfg.broker, "ws://192.168.1.10:9001");
  assert.equal(cfg.node, "gym");
  assert.equal(cfg.timer, "main");
  assert.equal(cfg.controls, false);
  assert.match(legacy.note, /host\/port/);
  assert.equal(pageSearch("?node=gym&host=192.168.1.10&port=9001", PAGE), "node=gym&broker=ws://192.168.1.10:9001");
  assert.equal(pageSearch("?node=gym", PAGE), "?node=gym", "a new address as it is");
});

test("links: `over` set or removed, the rest kept, the node found named when the address has none", () => {
  assert.equal(linkParams("?node=gym&controls=0", { timer: "main" }, null), "node=gym&controls=0&timer=main");
  assert.equal(linkParams("?node=gym&timer=main&sound=1", { timer: null }, null), "node=gym&sound=1");
  assert.equal(linkParams("", { timer: "main" }, { node: "hall" }), "timer=main&node=hall");
  assert.equal(linkParams("?base=club/b1", { timer: "x" }, { node: "b1" }), "base=club%2Fb1&timer=x", "a base is the node");
  assert.equal(linkParams("", { timer: null }, null), "");
});
