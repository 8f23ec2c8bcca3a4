// The MQTT packets of the page's client (examples/dashboard/mqttcodec.js), in Node: variable
// byte integers, CONNECT of MQTT 5 and 3.1.1 byte for byte, PUBLISH with MQTT 5's response
// topic and correlation data encoded and read back, SUBSCRIBE, a byte stream split into whole
// packets however it is cut, malformed packets refused, topic filters. Tests/extra/browser.d/
// mqtt-test.html runs the client itself against mosquitto in Chromium.
// Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import * as C from "../../examples/dashboard/mqttcodec.js";
import * as PacerMQTT from "../../examples/dashboard/mqtt.js";

const bytes = (u8) => Array.from(u8);

test("mqtt.js exports the codec's functions (the browser's unit tests use them there)", () => {
  assert.equal(PacerMQTT.varint, C.varint);
  assert.equal(PacerMQTT.PacketSplitter, C.PacketSplitter);
  assert.equal(PacerMQTT.topicMatches, C.topicMatches);
  assert.equal(PacerMQTT._internal.encodePublish, C.encodePublish);
  assert.equal(PacerMQTT._internal.Reader, C.Reader);
});

test("variable byte integers, both ways", () => {
  const cases = [[0, [0]], [127, [0x7f]], [128, [0x80, 1]], [16383, [0xff, 0x7f]], [16384, [0x80, 0x80, 1]], [268435455, [0xff, 0xff, 0xff, 0x7f]]];
  for (const [n, b] of cases) {
    assert.deepEqual(C.varint(n), b, String(n));
    assert.equal(new C.Reader(Uint8Array.from(b)).varint(), n);
  }
  assert.throws(() => C.varint(268435456), RangeError);
  assert.throws(() => new C.Reader(Uint8Array.from([0x80, 0x80, 0x80, 0x80, 1])).varint(), /too long/);
});

test("CONNECT: MQTT 3.1.1 and 5, byte for byte", () => {
  const v4 = C.encodeConnect({ protocolVersion: 4, clean: true, keepalive: 10, clientId: "p" });
  assert.deepEqual(bytes(v4), [0x10, 13, 0, 4, 77, 81, 84, 84, 4, 0x02, 0, 10, 0, 1, 112]);
  const v5 = C.encodeConnect({ protocolVersion: 5, clean: true, keepalive: 10, clientId: "p", username: "u", password: "pw" });
  assert.deepEqual(bytes(v5), [0x10, 21, 0, 4, 77, 81, 84, 84, 5, 0xc2, 0, 10, 0, 0, 1, 112, 0, 1, 117, 0, 2, 112, 119]);
});

test("PUBLISH with MQTT 5 properties, and back", () => {
  const props = { responseTopic: "pacer/gym/reply/x", correlationData: "id-1", contentType: "application/json", userProperties: { a: "b" } };
  const p = C.encodePublish({ topic: "pacer/gym/cmd", payload: '{"action":"list"}', qos: 1, packetId: 513, properties: props }, true);
  assert.equal(p[0], 0x32, "PUBLISH, QoS 1");
  const [pk] = new C.PacketSplitter().push(p);
  const m = C.decodePublish(pk.flags, pk.body, true);
  assert.equal(m.topic, "pacer/gym/cmd");
  assert.equal(m.qos, 1);
  assert.equal(m.packetId, 513);
  assert.equal(m.payload, '{"action":"list"}');
  assert.equal(m.properties.responseTopic, props.responseTopic);
  assert.equal(new TextDecoder().decode(m.properties.correlationData), "id-1");
  assert.equal(m.properties.contentType, "application/json");
  assert.deepEqual(m.properties.userProperties, { a: "b" });
  // 3.1.1, retained, QoS 0, a UTF-8 payload
  const q = C.encodePublish({ topic: "pacer/gym/status", payload: "online ✓", qos: 0, retain: true }, false);
  const [qk] = new C.PacketSplitter().push(q);
  const r = C.decodePublish(qk.flags, qk.body, false);
  assert.deepEqual([r.topic, r.qos, r.retain, r.packetId, r.payload], ["pacer/gym/status", 0, true, null, "online ✓"]);
  assert.throws(() => C.toBytes(42), TypeError);
});

test("SUBSCRIBE with its QoS per filter", () => {
  const s = C.encodeSubscribe(7, [{ topic: "a/+", qos: 1 }, { topic: "b/#", qos: 0 }], false);
  assert.deepEqual(bytes(s), [0x82, 14, 0, 7, 0, 3, 97, 47, 43, 1, 0, 3, 98, 47, 35, 0]);
  assert.deepEqual(bytes(C.encodeSubscribe(7, [{ topic: "a", qos: 1 }], true)), [0x82, 7, 0, 7, 0, 0, 1, 97, 1]);
});

test("a byte stream split into whole packets, however it is cut", () => {
  const a = C.encodePublish({ topic: "a/b", payload: "x".repeat(300), qos: 1, packetId: 7 }, true);
  const b = C.encodePublish({ topic: "c", payload: "hi", qos: 0 }, false);
  const all = new Uint8Array(a.length + b.length); all.set(a); all.set(b, a.length);
  for (const size of [1, 2, 3, 5, 64, 305, all.length]) {
    const sp = new C.PacketSplitter();
    let got = [];
    for (let i = 0; i < all.length; i += size) got = got.concat(sp.push(all.slice(i, i + size)));
    assert.equal(got.length, 2, "cut every " + size);
    assert.equal(C.decodePublish(got[0].flags, got[0].body, true).payload.length, 300);
    assert.equal(C.decodePublish(got[1].flags, got[1].body, false).payload, "hi");
  }
  assert.throws(() => new C.PacketSplitter().push(Uint8Array.from([0x30, 0xff, 0xff, 0xff, 0xff, 1])), /remaining length/);
  assert.throws(() => C.decodeProps(new C.Reader(Uint8Array.from([2, 0x7e, 0]))), /unknown property/);
  assert.throws(() => C.decodePublish(0, Uint8Array.from([0, 5, 97]), false), /truncated/);
});

test("topic filters", () => {
  const t = C.topicMatches;
  assert.ok(t("pacer/+/info", "pacer/gym/info"));
  assert.ok(!t("pacer/+/info", "pacer/gym/x/info"));
  assert.ok(t("pacer/#", "pacer/gym/a/b") && t("pacer/#", "pacer"));
  assert.ok(!t("#", "$SYS/x") && !t("+/x", "$SYS/x"));
  assert.ok(!t("pacer/gym", "pacer/gym/status"));
});
