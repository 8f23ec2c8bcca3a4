// connection.js: the wall page's link to its node, with no DOM: the MQTT client (mqtt.js),
// the node found or named and its topics subscribed, what the node's messages say
// (nodestate.js), requests with their replies (MQTT 5's response topic, else `<base>/reply`),
// and the node's clock offset (offset.js) measured on connect, when the node comes online and
// every `resync` seconds, with live states as a lower bound. It tells the page what changed
// through `hooks`; app.js wires them. Tests/page/connection.test.mjs drives this very file
// in Node with a stand-in client. See docs/dashboard.md, "How the time stays exact".
import * as PacerMQTT from "./mqtt.js";
import { ClockOffset } from "./offset.js";
import { NodeState, discoverBase } from "./nodestate.js";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * new Connection({cfg, localNow, hooks, Client, clientId}), then start(login): `cfg` the
 * page's settings (broker, mqtt, node, base, resyncMs), `localNow` the page's monotonic clock
 * in epoch ms, `Client` mqtt.js's (a stand-in in tests).
 * hooks (each optional): `render()` (anything shown may have changed), `base(base)` (the node
 * is known), `change(c)` (a nodestate.js change: info, workouts, sound, athletes, displays, state, next, gone,
 * event, say), `synced(moved)` (a round of clock requests ended with an answer; `moved`: the
 * offset moved by more than half a millisecond).
 */
class Connection {
  constructor(o) {
    this.cfg = o.cfg;
    this.localNow = o.localNow;
    this.hooks = o.hooks || {};
    this.clientId = o.clientId || "pacer-dash-" + Math.random().toString(36).slice(2, 10);
    this.node = new NodeState();
    this.clock = new ClockOffset({ fromStates: true }); // node clock = local clock + offset
    this.brokerUp = false;
    this.syncVia = null;        // the topic whose clock requests were last answered
    this.lastSync = 0;
    this.syncing = false;
    this.pending = new Map();   // request id -> {resolve}
    this.seq = 0;
    this.Client = o.Client || PacerMQTT.Client;
    this.client = null;
  }

  /**
   * Connects (and keeps connecting) as `login` ({user, pass}, or null: anonymous); with
   * `?node=` or `?base=` the node's topics are subscribed at once, else the first node that
   * announces itself on `pacer/+/info` is taken.
   */
  start(login) {
    this.client = new this.Client(this.cfg.broker, {
      protocolVersion: this.cfg.mqtt, clientId: this.clientId, keepalive: 10,
      username: login ? login.user : undefined, password: login ? login.pass : undefined,
    });
    if (this.cfg.node || this.cfg.base) this.setBase(this.cfg.base || "pacer/" + this.cfg.node);
    this.client.on("connect", () => {
      this.brokerUp = true;
      if (!this.base) this.client.subscribe("pacer/+/info", 1);
      else this.resync();
      this.render();
    });
    this.client.on("close", () => {
      this.brokerUp = false;
      this.clock.reset(); // re-measured on reconnect
      this.render();
    });
    this.client.on("message", (msg) => this.onMessage(msg));
  }

  get base() { return this.node.base; }
  /** The node's clock now (epoch ms), or null while its offset is unknown. */
  nodeNow() { return this.clock.nodeAt(this.localNow()); }
  replyTopic() { return this.base + "/reply/" + this.clientId; }
  render() { if (this.hooks.render) this.hooks.render(); }

  /** Measures the clock again when it is due (every `resync` s); app.js calls it every 5 s. */
  tick() { if (this.brokerUp && this.base && this.localNow() - this.lastSync > this.cfg.resyncMs) this.resync(); }

  /** The node at `base`: its topics subscribed, its clock measured. */
  setBase(base) {
    this.node.base = base;
    this.syncVia = null;
    const subs = [base + "/status", base + "/info", base + "/workouts", base + "/sound", base + "/athletes", base + "/displays", base + "/timers/+/state", base + "/timers/+/event",
      base + "/timers/+/next", base + "/timers/+/current_class",
      base + "/timers/+/recovery",
      base + "/timers/+/say", base + "/cue_ahead", base + "/reply", this.replyTopic()];
    this.client.subscribe(subs, 1);
    if (this.client.connected) this.resync();
    if (this.hooks.base) this.hooks.base(base);
  }

  onMessage(msg) {
    const arrival = this.localNow();
    if (!this.base) {
      // No ?node=: take the only node that announces itself (the first, when several do).
      const base = discoverBase(msg.topic, msg.payload);
      if (base) this.setBase(base);
      if (!this.base) return;
    }
    const rel = this.node.rel(msg.topic);
    if (rel == null) return;
    const c = this.node.apply(rel, msg.payload, msg.retain);
    if (!c) return;
    if (c.what === "status") { if (this.node.online && this.brokerUp) this.resync(); this.render(); return; }
    if (c.what === "reply") { this.onReply(msg, arrival); return; }
    // A live (not retained) state bounds the offset from below, for when `time` gets no
    // answer (a broker ACL that forbids this page to publish): offset >= as_of - arrival.
    if (c.what === "state" && !msg.retain && c.state.as_of_ms != null) this.clock.live(c.state.as_of_ms, arrival);
    if (this.hooks.change) this.hooks.change(c);
  }

  /** Sends a command and resolves with `{reply, sent, at}` (null after `timeoutMs`). */
  request(topic, body, timeoutMs) {
    const id = this.clientId + "-" + (++this.seq);
    body.id = id;
    const sent = this.localNow();
    return new Promise((resolve) => {
      const timer = setTimeout(() => { this.pending.delete(id); resolve(null); }, timeoutMs || 4000);
      this.pending.set(id, { resolve: (r, at) => { clearTimeout(timer); resolve({ reply: r, sent, at }); } });
      const props = this.client.protocolVersion === 5 ? { responseTopic: this.replyTopic(), correlationData: id, contentType: "application/json" } : undefined;
      this.client.publish(topic, JSON.stringify(body), { qos: 1, properties: props });
    });
  }

  onReply(msg, arrival) {
    let r; try { r = JSON.parse(msg.payload); } catch (e) { return; }
    const p = r && r.id != null ? this.pending.get(r.id) : null;
    if (!p) return;
    this.pending.delete(r.id);
    p.resolve(r, arrival);
  }

  /**
   * Where to ask for the node's clock: `<base>/time`, which read-only screens may publish to
   * (deploy/mosquitto/acl.example), unless the node's `info` shows an older node without it
   * (no `time_topic` capability); then the `time` command on `<base>/cmd`.
   */
  clockTopics() {
    const time = this.base + "/time", cmd = this.base + "/cmd";
    const info = this.node.info;
    const caps = info && Array.isArray(info.capabilities) ? info.capabilities : null;
    if (caps && !caps.includes("time_topic")) return [cmd];
    return this.syncVia === cmd ? [cmd, time] : [time, cmd];
  }

  /**
   * A round of clock requests (offset.js: the smallest round trip wins). When the first topic
   * gets no answer (an older node, or a broker ACL without the time topic), the other is tried
   * before giving up (then the live states give the offset).
   */
  async resync() {
    if (this.syncing || !this.base) return;
    this.syncing = true;
    try {
      let answered = false;
      const topics = this.clockTopics();
      let via = topics.shift();
      const round = this.clock.round();
      for (let i = 0; i < 6 && this.brokerUp; i++) {
        const body = via.endsWith("/cmd") ? { action: "time" } : {};
        const res = await this.request(via, body, 2000);
        if (res && res.reply && res.reply.ok !== false && typeof res.reply.now_ms === "number") {
          this.syncVia = via;
          const first = this.clock.method !== "time";
          if (round.add(res.sent, res.at, res.reply.now_ms)) answered = true;
          if (first) this.render(); // the first answer is shown at once
        } else if (!res && !answered && topics.length) { via = topics.shift(); i--; continue; } // try the other topic
        else if (!res) break; // no answer: the node is down or we may not publish
        await sleep(120);
      }
      const done = round.end();
      if (done.best) {
        this.lastSync = this.localNow();
        if (this.hooks.synced) this.hooks.synced(done.moved); // foreseen cues move with the offset
      } else if (this.clock.method === "time") {
        this.lastSync = this.localNow(); // keep the last good offset; try again later
      }
      if (done.best && this.node.timers.size === 0) await this.snapshot();
    } finally { this.syncing = false; this.render(); }
  }

  /**
   * No retained state came, although the node answers: a broker that keeps retained messages
   * per cluster member (RabbitMQ, ejabberd; docs/deployment.md). Asks the node for its timers
   * (`list`) and counts from them until their live states come.
   */
  async snapshot() {
    const res = await this.request(this.base + "/cmd", { action: "list" }, 3000);
    if (!res || !res.reply || res.reply.ok === false || this.clock.offset == null) return;
    this.node.applyList(res.reply, res.at + this.clock.offset);
  }
}

export { Connection };
