// The page's MQTT client (examples/dashboard/mqtt.js): the broker a page reaches by default.
// Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import { defaultBroker } from "../../examples/dashboard/mqtt.js";

test("the default broker is the page's own origin at ./mqtt: wss: on https, ws: on http, no query or fragment", () => {
  assert.equal(defaultBroker("https://gym-pi.local/index.html?user=x#t"), "wss://gym-pi.local/mqtt");
  assert.equal(defaultBroker("http://192.168.1.10:8080/frontdesk.html"), "ws://192.168.1.10:8080/mqtt");
  assert.equal(defaultBroker("http://pi/pacer/"), "ws://pi/pacer/mqtt");
});
