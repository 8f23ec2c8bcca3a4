// The wall page's link to its node (examples/dashboard/connection.js), driven with a stand-in
// MQTT client and a node whose clock is 12,345.5 ms ahead of the page's: the node's topics
// subscribed, requests answered on the response topic (MQTT 5) or `<base>/reply` (3.1.1), a
// round of clock requests whose smallest round trip wins, `<base>/cmd` when `<base>/time` is
// not answered, live states as the bound until then, the offset forgotten when the broker is
// lost and measured again on reconnect, and the `list` snapshot where no state came.
// Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import { Connection } from "../../examples/dashboard/connection.js";

const NODE_AHEAD = 12_345.5;

/**
 * A stand-in for mqtt.js's Client and a node behind it. `now` is the page's clock (the test
 * moves it); a request is answered after `up` ms on the way there and `down` back (each
 * request takes the next pair of `trips`), or not at all on a topic in `silent`.
 */
class FakeBroker {
  constructor() {
    this.now = 1_000_000;
    this.trips = [];
    this.silent = new Set();
    this.published = [];
    this.clients = [];
    this.listReply = null;
  }
  Client() {
    const broker = this;
    return class {
      constructor(url, opts) { this.url = url; this.opts = opts; this.handlers = {}; this.subs = []; this.connected = false; broker.clients.push(this); }
      get protocolVersion() { return this.opts.protocolVersion === 4 ? 4 : 5; }
      on(name, fn) { (this.handlers[name] = this.handlers[name] || []).push(fn); }
      emit(name, arg) { for (const fn of this.handlers[name] || []) fn(arg); }
      subscribe(filters) { this.subs.push(...(Array.isArray(filters) ? filters : [filters])); return Promise.resolve([]); }
      publish(topic, payload, options) { broker.answer(this, topic, JSON.parse(payload), options); return Promise.resolve(true); }
    };
  }
  client() { return this.clients[this.clients.length - 1]; }
  up() { const c = this.client(); c.connected = true; c.emit("connect", {}); }
  down() { const c = this.client(); c.connected = false; c.emit("close", { reason: "test" }); }
  deliver(topic, payload, retain) { this.client().emit("message", { topic, payload, retain: !!retain }); }
  answer(client, topic, body, options) {
    this.published.push({ topic, body, options });
    if (this.silent.has(topic)) return;
    const [up, down] = this.trips.shift() || [1, 1];
    const replyTopic = options && options.properties ? options.properties.responseTopic : topic.replace(/\/(cmd|time)$/, "/reply");
    let reply;
    if (topic.endsWith("/time") || body.action === "time") reply = { id: body.id, ok: true, now_ms: this.now + up + NODE_AHEAD };
    else if (body.action === "list") reply = Object.assign({ id: body.id, ok: true }, this.listReply);
    else reply = { id: body.id, ok: true };
    this.now += up + down;
    this.deliver(replyTopic, JSON.stringify(reply), false);
  }
}

function page(broker, over) {
  const cfg = Object.assign({ broker: "ws://test/mqtt", mqtt: 5, node: "gym", base: null, resyncMs: 300_000 }, over);
  const changes = [], synced = [];
  const conn = new Connection({ cfg, localNow: () => broker.now, Client: broker.Client(), clientId: "pacer-dash-test",
    hooks: { change: (c) => changes.push(c), synced: (m) => synced.push(m) } });
  return { conn, changes, synced };
}

const until = async (fn, what) => { for (let i = 0; i < 400 && !fn(); i++) await new Promise((r) => setTimeout(r, 10)); assert.ok(fn(), what); };

test("the node's topics subscribed; a round of clock requests on <base>/time: the smallest round trip wins", async () => {
  const broker = new FakeBroker();
  const { conn, synced } = page(broker);
  conn.start({ user: "coach", pass: "pw" });
  const client = broker.client();
  assert.equal(client.opts.username, "coach");
  assert.equal(client.opts.clientId, "pacer-dash-test");
  for (const t of ["status", "info", "workouts", "sound", "athletes", "timers/+/state", "timers/+/event", "reply", "reply/pacer-dash-test"]) {
    assert.ok(client.subs.includes("pacer/gym/" + t), t);
  }
  // 40 ms (30 there, 10 back: 10 ms off), 4 ms symmetric (exact), then slower ones
  broker.trips = [[30, 10], [2, 2], [50, 50], [3, 30], [20, 20], [9, 9]];
  broker.up();
  assert.equal(conn.brokerUp, true);
  await until(() => !conn.syncing && conn.clock.method === "time", "a clock round");
  assert.equal(conn.clock.offset, NODE_AHEAD);
  assert.equal(conn.clock.rtt, 4);
  assert.equal(conn.syncVia, "pacer/gym/time");
  const asked = broker.published.filter((p) => p.topic === "pacer/gym/time");
  assert.equal(asked.length, 6);
  assert.deepEqual(asked[0].options.properties, { responseTopic: "pacer/gym/reply/pacer-dash-test", correlationData: asked[0].body.id, contentType: "application/json" });
  assert.deepEqual(synced, [true]);
  assert.equal(conn.nodeNow(), broker.now + NODE_AHEAD);
  assert.equal(conn.lastSync, 1_000_000 + 40 + 4 + 100 + 33 + 40 + 18, "the round's end");
  assert.ok(broker.published.some((p) => p.body.action === "list"), "no state came: the snapshot asked for");
  // Measured again when due, not before.
  conn.tick();
  assert.equal(conn.syncing, false);
  broker.now += 300_001;
  conn.tick();
  assert.equal(conn.syncing, true);
  await until(() => !conn.syncing, "the second round");
  assert.deepEqual(synced, [true, false], "the same clock: the offset did not move");
});

test("no answer on <base>/time (an older node, an ACL): the `time` command on <base>/cmd; live states bound it until then", async () => {
  const broker = new FakeBroker();
  broker.silent.add("pacer/gym/time");
  const { conn, changes } = page(broker, { mqtt: 4 });
  conn.start(null);
  broker.up();
  // A live state arrives 3 ms after the node published it: the bound, before any reply.
  broker.now += 5;
  broker.deliver("pacer/gym/timers/main/state", JSON.stringify({ id: "main", status: "running", as_of_ms: broker.now - 3 + NODE_AHEAD, revision: 1 }), false);
  assert.equal(conn.clock.method, "state");
  assert.equal(conn.clock.offset, NODE_AHEAD - 3);
  assert.equal(changes[changes.length - 1].what, "state");
  // a retained one is not live: no bound from it
  broker.deliver("pacer/gym/timers/rest/state", JSON.stringify({ id: "rest", status: "idle", as_of_ms: broker.now + NODE_AHEAD + 1e6, revision: 1 }), true);
  assert.equal(conn.clock.offset, NODE_AHEAD - 3);
  await until(() => !conn.syncing && conn.clock.method === "time", "the clock from <base>/cmd (after 2 s unanswered)");
  assert.equal(conn.syncVia, "pacer/gym/cmd");
  assert.equal(conn.clock.offset, NODE_AHEAD);
  const cmd = broker.published.find((p) => p.topic === "pacer/gym/cmd");
  assert.equal(cmd.body.action, "time");
  assert.equal(cmd.options.properties, undefined, "MQTT 3.1.1: the reply comes on <base>/reply");
  // Next time the topic that answered is asked first.
  assert.deepEqual(conn.clockTopics(), ["pacer/gym/cmd", "pacer/gym/time"]);
  broker.deliver("pacer/gym/info", JSON.stringify({ node: "gym", capabilities: ["workouts"] }), true);
  assert.deepEqual(conn.clockTopics(), ["pacer/gym/cmd"], "a node without the time topic");
});

test("the broker lost: the offset forgotten, measured again on reconnect (the node may have another clock)", async () => {
  const broker = new FakeBroker();
  const { conn } = page(broker);
  conn.start(null);
  broker.up();
  await until(() => !conn.syncing && conn.clock.method === "time", "the first round");
  broker.down();
  assert.equal(conn.brokerUp, false);
  assert.equal(conn.clock.offset, null);
  assert.equal(conn.nodeNow(), null);
  broker.now += 10_000;
  broker.trips = [[1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1]];
  const ahead = NODE_AHEAD; // the same node: the same offset again
  broker.up();
  await until(() => !conn.syncing && conn.clock.method === "time", "measured again");
  assert.equal(conn.clock.offset, ahead);
});

test("no ?node=: the first node that announces itself; no retained state: the `list` snapshot counts", async () => {
  const broker = new FakeBroker();
  broker.listReply = { timers: [{ id: "bench", name: "Bench", kind: "countdown", status: "running", remaining_ms: 60_000, revision: 1 }] };
  const { conn } = page(broker, { node: null });
  conn.start(null);
  broker.up();
  assert.deepEqual(broker.client().subs, ["pacer/+/info"]);
  broker.deliver("pacer/room1/info", JSON.stringify({ node: "room1", timers: [{ id: "bench" }], capabilities: ["time_topic"] }), true);
  assert.equal(conn.base, "pacer/room1");
  assert.deepEqual(conn.node.info.node, "room1", "the announcing message itself is read");
  broker.deliver("pacer/room2/info", JSON.stringify({ node: "room2" }), true);
  assert.equal(conn.base, "pacer/room1", "the first one is kept");
  await until(() => !conn.syncing && conn.node.timers.has("bench"), "the snapshot");
  const st = conn.node.timers.get("bench");
  assert.equal(st.from_list, true);
  const listAsked = broker.published.find((p) => p.body.action === "list");
  assert.equal(listAsked.topic, "pacer/room1/cmd");
  // It counts from the reply's arrival on the node's clock.
  assert.ok(Math.abs(st.ends_at_ms - (broker.now + NODE_AHEAD + 60_000)) <= 2);
  assert.equal(conn.node.online, true, "it answered");
});

test("a request resolves with its own reply, and with null when none comes", async () => {
  const broker = new FakeBroker();
  const { conn } = page(broker);
  conn.start(null);
  broker.up();
  await until(() => !conn.syncing, "the first round");
  const res = await conn.request("pacer/gym/timers/main/cmd", { action: "pause" }, 500);
  assert.equal(res.reply.ok, true);
  assert.equal(res.reply.id, broker.published[broker.published.length - 1].body.id);
  assert.ok(res.at >= res.sent);
  // someone else's reply, or junk, is no answer
  broker.silent.add("pacer/gym/timers/main/cmd");
  const pending = conn.request("pacer/gym/timers/main/cmd", { action: "skip" }, 100);
  broker.deliver("pacer/gym/reply", JSON.stringify({ id: "pacer-dash-other-1", ok: true }), false);
  broker.deliver("pacer/gym/reply", "{not json", false);
  assert.equal(await pending, null);
  assert.equal(conn.pending.size, 0);
});
