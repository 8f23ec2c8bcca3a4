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

// ---- MQTT version negotiation ("auto", as the node: docs/configuration.md) -----------------

import { mock } from "node:test";
import { Client } from "../../examples/dashboard/mqtt.js";

/** A WebSocket stand-in: records what the client sends; the test opens, answers and closes it. */
class FakeSocket {
  static all = [];
  constructor(url) { this.url = url; this.sent = []; this.readyState = 0; FakeSocket.all.push(this); }
  send(bytes) { this.sent.push(Uint8Array.from(bytes)); }
  close() { if (this.readyState === 3) return; this.readyState = 3; setTimeout(() => this.onclose && this.onclose(), 0); }
  open() { this.readyState = 1; this.onopen(); }
  answer(bytes) { this.onmessage({ data: Uint8Array.from(bytes).buffer }); }
  /** The protocol level of the CONNECT this socket carried (5, or 4 for 3.1.1). */
  get level() {
    const p = this.sent[0];
    let i = 1;
    while (p[i] & 0x80) i++;
    return p[i + 7];
  }
}

function withClient(version, body) {
  FakeSocket.all = [];
  mock.timers.enable({ apis: ["setTimeout", "setInterval"] });
  const client = new Client("ws://broker/mqtt", { protocolVersion: version, WebSocket: FakeSocket, reconnect: { min: 500, max: 500 } });
  try { body(client, () => FakeSocket.all[FakeSocket.all.length - 1]); } finally { client.end(); mock.timers.reset(); }
}

const CONNACK_311_OK = [0x20, 2, 0, 0];
const CONNACK_5_OK = [0x20, 3, 0, 0, 0];

test("auto: a broker that closes the MQTT 5 connection gets 3.1.1 at once, kept after a later drop", () => {
  withClient("auto", (client, last) => {
    last().open();
    assert.equal(last().level, 5);
    last().close();
    mock.timers.tick(0);   // the close event
    mock.timers.tick(0);   // the immediate retry
    assert.equal(FakeSocket.all.length, 2, "retried at once");
    last().open();
    assert.equal(last().level, 4);
    assert.match(client.fallbackReason, /closed the connection/);
    last().answer(CONNACK_311_OK);
    assert.equal(client.connected, true);
    assert.equal(client.protocolVersion, 4);
    last().close();
    mock.timers.tick(0);
    mock.timers.tick(600);  // the usual backoff
    last().open();
    assert.equal(last().level, 4, "settled on 3.1.1");
  });
});

test("auto: a refusal of the version (0x84) gets 3.1.1 at once; an MQTT 5 CONNECT left unanswered for 2 s too, not sooner", () => {
  withClient("auto", (client, last) => {
    last().open();
    last().answer([0x20, 3, 0, 0x84, 0]);
    mock.timers.tick(0);
    mock.timers.tick(0);
    last().open();
    assert.equal(last().level, 4);
    assert.match(client.fallbackReason, /refused MQTT 5/);
  });
  withClient("auto", (client, last) => {
    last().open();
    mock.timers.tick(1999);
    assert.equal(FakeSocket.all.length, 1);
    mock.timers.tick(1);
    mock.timers.tick(0);
    mock.timers.tick(0);
    assert.equal(FakeSocket.all.length, 2);
    last().open();
    assert.equal(last().level, 4);
    assert.match(client.fallbackReason, /unanswered/);
  });
});

test("auto on an MQTT 5 broker stays on 5; a configured 5 never falls back; a refused login is no sign", () => {
  withClient("auto", (client, last) => {
    last().open();
    last().answer(CONNACK_5_OK);
    assert.equal(client.protocolVersion, 5);
    last().close();
    mock.timers.tick(0);
    mock.timers.tick(600);
    last().open();
    assert.equal(last().level, 5);
    assert.equal(client.fallbackReason, null);
  });
  withClient(5, (client, last) => {
    last().open();
    last().close();
    mock.timers.tick(0);
    mock.timers.tick(0);
    assert.equal(FakeSocket.all.length, 1, "no immediate retry");
    mock.timers.tick(600);
    last().open();
    assert.equal(last().level, 5);
  });
  withClient("auto", (client, last) => {
    client.on("error", () => {});
    last().open();
    last().answer([0x20, 3, 0, 0x86, 0]);   // bad user name or password
    mock.timers.tick(0);
    mock.timers.tick(600);
    last().open();
    assert.equal(last().level, 5);
  });
});
