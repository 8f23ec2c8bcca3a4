// mqtt.js: a small MQTT-over-WebSocket client for the Pacer dashboard.
//
// Only what a display needs: CONNECT (MQTT 5 or 3.1.1), SUBSCRIBE, PUBLISH QoS 0/1
// (PUBACK both ways, QoS 1 resent with DUP after a reconnect until acknowledged),
// keep-alive PINGREQ with a dead-broker check, reconnect with backoff and jitter, and
// MQTT 5 response topic + correlation data. No QoS 2 (we never subscribe with it), no
// topic aliases, no AUTH. See docs/dashboard.md for why this exists instead of MQTT.js.
// The packets themselves (bytes in and out) are mqttcodec.js; this file is the connection.
//
// An ES module with no build step: app.js (through connection.js), frontdesk.js and class.js
// import it, and so do its unit tests (Tests/extra/browser.d/mqtt-test.html, in Chromium
// against a real mosquitto; Tests/page/mqtt.test.mjs in Node).
import {
  varint, Writer, Reader, decodeProps, encodeConnect, encodePublish, encodeSubscribe, decodePublish, encodeProps,
  PacketSplitter, topicMatches, toBytes,
} from "./mqttcodec.js";

// ---- the client -----------------------------------------------------------------

/** How long an MQTT 5 CONNECT may stay unanswered under "auto" before 3.1.1 is tried (as the node). */
const UNANSWERED_WAIT_MS = 2000;

/**
 * new PacerMQTT.Client(url, options): connects at once and keeps connecting.
 * options: protocolVersion (5 | 4 | "auto", default 5), clientId, keepalive (s, default 15),
 * username, password, will {topic, payload, qos, retain}, reconnect {min, max} (ms),
 * WebSocket (constructor, for tests).
 * Events (client.on(name, fn)): connect(connack), close(reason), message(msg), error(err).
 *
 * "auto" negotiates as the node does (docs/configuration.md, broker.mqtt_version): MQTT 5
 * first, and 3.1.1 from then on when the broker refuses the version (0x84, or a 3.1.1-form 1),
 * closes the connection before a CONNACK, or leaves the CONNECT unanswered for 2 s; once a
 * broker accepted a version it is kept. `client.protocolVersion` is the version in use and
 * `client.fallbackReason` says why it is 3.1.1.
 */
class Client {
  constructor(url, options) {
    const o = options || {};
    this.url = url;
    this.opts = {
      protocolVersion: o.protocolVersion === 4 ? 4 : 5,
      unansweredWait: o.unansweredWait || UNANSWERED_WAIT_MS,
      clientId: o.clientId || "pacer-dash-" + Math.random().toString(36).slice(2, 10),
      keepalive: o.keepalive == null ? 15 : o.keepalive,
      username: o.username, password: o.password, will: o.will,
      reconnectMin: (o.reconnect && o.reconnect.min) || 500,
      reconnectMax: (o.reconnect && o.reconnect.max) || 10000,
    };
    this.WS = o.WebSocket || globalThis.WebSocket;
    this.handlers = {};
    this.subs = new Map();       // filter -> qos, resubscribed on every connect
    this.outgoing = new Map();   // packetId -> {packet fields, resolve}: QoS 1 awaiting PUBACK
    this.subacks = new Map();    // packetId -> resolve
    this.nextId = 1;
    this.connected = false;
    this.closedByUser = false;
    this.attempt = 0;
    this.negotiating = o.protocolVersion === "auto";
    this.fallbackReason = null;
    this.connect();
  }

  /** The MQTT version of the current (or next) connection: 5 or 4 (3.1.1). */
  get protocolVersion() { return this.opts.protocolVersion; }

  /**
   * With "auto", before any CONNACK accepted: `reason` is a sign that the broker does not speak
   * the version tried. Returns whether the next attempt should go at once (MQTT 5 → 3.1.1);
   * a failed 3.1.1 attempt sends the next one back to MQTT 5 (the broker may have been down).
   */
  versionSign(reason) {
    if (!this.negotiating) return false;
    if (this.opts.protocolVersion === 5) {
      this.opts.protocolVersion = 4;
      this.fallbackReason = reason;
      return true;
    }
    this.opts.protocolVersion = 5;
    this.fallbackReason = null;
    return false;
  }

  on(name, fn) { (this.handlers[name] = this.handlers[name] || []).push(fn); return this; }
  emit(name, arg) { for (const fn of this.handlers[name] || []) { try { fn(arg); } catch (e) { console.error(e); } } }

  packetId() {
    for (let i = 0; i < 65535; i++) {
      const id = this.nextId;
      this.nextId = this.nextId >= 65535 ? 1 : this.nextId + 1;
      if (!this.outgoing.has(id) && !this.subacks.has(id)) return id;
    }
    throw new Error("no free packet id");
  }

  connect() {
    clearTimeout(this.retryTimer);
    let ws;
    try { ws = new this.WS(this.url, ["mqtt"]); } catch (e) { this.emit("error", e); this.scheduleReconnect("bad url"); return; }
    ws.binaryType = "arraybuffer";
    this.ws = ws;
    this.splitter = new PacketSplitter();
    this.connectSent = false;
    ws.onopen = () => {
      this.send(encodeConnect(Object.assign({ clean: true }, this.opts)));
      this.connectSent = true;
      if (this.negotiating && this.opts.protocolVersion === 5) {
        this.connackTimer = setTimeout(() => {
          if (ws === this.ws && !this.connected) this.drop("no CONNACK", "the broker left the MQTT 5 CONNECT unanswered for " + this.opts.unansweredWait / 1000 + " s");
        }, this.opts.unansweredWait);
      }
    };
    ws.onmessage = (ev) => {
      if (ws !== this.ws) return;
      let packets;
      try { packets = this.splitter.push(ev.data); } catch (e) { this.drop(e.message); return; }
      for (const p of packets) {
        try { this.handle(p); } catch (e) { this.drop(e.message); return; }
      }
    };
    ws.onclose = () => { if (ws === this.ws) this.lost("connection closed"); };
    ws.onerror = () => { /* onclose follows */ };
  }

  handle(p) {
    this.lastIn = performance.now();
    const v5 = this.opts.protocolVersion === 5;
    switch (p.type) {
      case 2: { // CONNACK
        const r = new Reader(p.body);
        const ack = { sessionPresent: !!(r.byte() & 1), reasonCode: r.byte(), properties: {} };
        if (v5 && r.left() > 0) ack.properties = decodeProps(r);
        clearTimeout(this.connackTimer);
        if (ack.reasonCode !== 0) {
          if (v5 && this.negotiating && (ack.reasonCode === 0x84 || ack.reasonCode === 1)) {
            this.drop("refused", "the broker refused MQTT 5 (code " + ack.reasonCode + ", unsupported protocol version)");
            return;
          }
          this.negotiating = false; // it answered: it speaks this version
          const err = new Error("broker refused the connection (code " + ack.reasonCode + ")");
          err.code = ack.reasonCode;
          err.badCredentials = v5 ? ack.reasonCode === 0x86 || ack.reasonCode === 0x87 : ack.reasonCode === 4 || ack.reasonCode === 5;
          this.emit("error", err);
          this.drop("refused");
          return;
        }
        if (ack.properties.serverKeepAlive != null) this.keepalive = ack.properties.serverKeepAlive;
        else this.keepalive = this.opts.keepalive;
        this.connected = true;
        this.negotiating = false;
        this.attempt = 0;
        this.startKeepalive();
        const subs = [...this.subs].map(([topic, qos]) => ({ topic, qos }));
        if (subs.length) this.send(encodeSubscribe(this.packetId(), subs, v5));
        for (const [id, item] of this.outgoing) {
          this.send(encodePublish(Object.assign({}, item.p, { packetId: id, dup: true }), v5));
        }
        this.emit("connect", ack);
        break;
      }
      case 3: { // PUBLISH
        const msg = decodePublish(p.flags, p.body, v5);
        if (msg.qos === 1) this.send(new Writer().byte(0x40).byte(2).u16(msg.packetId).concat());
        if (msg.qos === 2) throw new Error("QoS 2 is not supported");
        this.emit("message", msg);
        break;
      }
      case 4: { // PUBACK
        const id = new Reader(p.body).u16();
        const item = this.outgoing.get(id);
        if (item) { this.outgoing.delete(id); item.resolve(); }
        break;
      }
      case 9: { // SUBACK
        const r = new Reader(p.body);
        const id = r.u16();
        if (v5) decodeProps(r);
        const codes = Array.from(r.rest());
        const done = this.subacks.get(id);
        if (done) { this.subacks.delete(id); done(codes); }
        break;
      }
      case 13: break; // PINGRESP: lastIn is enough
      case 14: this.drop("broker sent DISCONNECT"); break;
      default: break;
    }
  }

  startKeepalive() {
    clearInterval(this.pingTimer);
    if (!this.keepalive) return;
    const period = this.keepalive * 1000;
    this.lastIn = performance.now();
    // Ping at a third of the keep-alive; a broker silent for a whole keep-alive is gone
    // (a half-open TCP connection never closes by itself).
    this.pingTimer = setInterval(() => {
      if (performance.now() - this.lastIn > period) { this.drop("broker did not answer the keep-alive"); return; }
      this.send(Uint8Array.from([0xc0, 0]));
    }, period / 3);
  }

  send(bytes) {
    if (this.ws && this.ws.readyState === 1) { this.ws.send(bytes); return true; }
    return false;
  }

  /** Ends the connection; `sign`: why this says the broker does not speak the version tried. */
  drop(reason, sign) {
    const ws = this.ws;
    if (ws) { try { ws.close(); } catch (e) { /* already closed */ } }
    this.lost(reason, sign);
  }

  lost(reason, sign) {
    this.ws = null;
    clearInterval(this.pingTimer);
    clearTimeout(this.connackTimer);
    const was = this.connected;
    this.connected = false;
    for (const [id, done] of this.subacks) { this.subacks.delete(id); done(null); }
    // Closed after our CONNECT went out and before any CONNACK: a sign too (RabbitMQ before 3.13).
    if (!sign && !was && this.connectSent) sign = "the broker closed the connection without accepting the MQTT 5 CONNECT";
    const atOnce = !was && !this.closedByUser && sign != null && this.versionSign(sign);
    this.emit("close", { reason, wasConnected: was });
    if (this.closedByUser) return;
    if (atOnce) {
      clearTimeout(this.retryTimer);
      this.retryTimer = setTimeout(() => this.connect(), 0);
    } else {
      this.scheduleReconnect(reason);
    }
  }

  /** Exponential backoff with jitter: min, 2·min, … up to max. */
  scheduleReconnect() {
    clearTimeout(this.retryTimer);
    const base = Math.min(this.opts.reconnectMax, this.opts.reconnectMin * Math.pow(2, this.attempt));
    this.attempt++;
    const delay = base / 2 + Math.random() * base / 2;
    this.nextRetryIn = delay;
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }

  /** Subscribes now (when connected) and after every reconnect. Resolves with the SUBACK codes. */
  subscribe(filters, qos) {
    const list = (Array.isArray(filters) ? filters : [filters]).map((topic) => ({ topic, qos: qos || 0 }));
    for (const s of list) this.subs.set(s.topic, s.qos);
    if (!this.connected) return Promise.resolve(null);
    const id = this.packetId();
    return new Promise((resolve) => {
      this.subacks.set(id, resolve);
      this.send(encodeSubscribe(id, list, this.opts.protocolVersion === 5));
    });
  }

  /**
   * Publishes. options: qos (0|1), retain, properties {responseTopic, correlationData, ...}.
   * QoS 1 resolves on PUBACK and is kept (and resent after a reconnect) until then;
   * QoS 0 resolves at once, and is lost when not connected (returns false then).
   */
  publish(topic, payload, options) {
    const o = options || {};
    const p = { topic, payload: toBytes(payload), qos: o.qos === 1 ? 1 : 0, retain: !!o.retain, properties: o.properties };
    const v5 = this.opts.protocolVersion === 5;
    if (p.qos === 0) return Promise.resolve(this.connected && this.send(encodePublish(p, v5)));
    const id = this.packetId();
    return new Promise((resolve) => {
      this.outgoing.set(id, { p, resolve: () => resolve(true) });
      if (this.connected) this.send(encodePublish(Object.assign({}, p, { packetId: id }), v5));
    });
  }

  /**
   * New credentials (undefined for none): the connection is made again at once with them
   * (a sign-in or sign-out); subscriptions and unacknowledged QoS 1 publishes carry over.
   */
  setCredentials(username, password) {
    this.opts.username = username == null ? undefined : username;
    this.opts.password = password == null ? undefined : password;
    this.restart();
  }

  /** Drops the connection (if any) and connects again now, without waiting for the backoff. */
  restart() {
    clearTimeout(this.retryTimer);
    this.attempt = 0;
    const ws = this.ws;
    if (ws) {
      this.ws = null;
      if (this.connected && ws.readyState === 1) ws.send(Uint8Array.from([0xe0, 0])); // DISCONNECT: no last will

      try { ws.close(); } catch (e) { /* already closed */ }
      clearInterval(this.pingTimer);
      const was = this.connected;
      this.connected = false;
      for (const [id, done] of this.subacks) { this.subacks.delete(id); done(null); }
      this.emit("close", { reason: "restart", wasConnected: was });
    }
    if (!this.closedByUser) this.connect();
  }

  /** Closes for good (sends DISCONNECT). */
  end() {
    this.closedByUser = true;
    clearTimeout(this.retryTimer);
    if (this.ws) { this.send(Uint8Array.from([0xe0, 0])); this.drop("closed by the page"); }
  }
}

/** Exposed for the unit tests (Tests/extra/browser.d/mqtt-test.html). */
const _internal = { encodeConnect, encodePublish, encodeSubscribe, decodePublish, encodeProps, decodeProps, Reader };

/**
 * The broker through the web server that serves the page at `href`: its `mqtt` path beside
 * the page (lighttpd passes it to mosquitto's WebSocket listener), wss: on an https: page,
 * ws: on http:. One origin, one certificate.
 */
function defaultBroker(href) {
  const u = new URL("mqtt", href);
  u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
  u.search = ""; u.hash = "";
  return u.href;
}

export { Client, PacketSplitter, defaultBroker, topicMatches, varint, _internal };
