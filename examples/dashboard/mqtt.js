// mqtt.js: a small MQTT-over-WebSocket client for the Pacer dashboard.
//
// Only what a display needs: CONNECT (MQTT 5 or 3.1.1), SUBSCRIBE, PUBLISH QoS 0/1
// (PUBACK both ways, QoS 1 resent with DUP after a reconnect until acknowledged),
// keep-alive PINGREQ with a dead-broker check, reconnect with backoff and jitter, and
// MQTT 5 response topic + correlation data. No QoS 2 (we never subscribe with it), no
// topic aliases, no AUTH. See docs/dashboard.md for why this exists instead of MQTT.js.
//
// An ES module with no build step: app.js imports it, and so do its unit tests
// (Tests/extra/browser.d/mqtt-test.html, in Chromium against a real mosquitto).
const enc = new TextEncoder();
const dec = new TextDecoder();

// MQTT 5 property identifiers and their value types (section 2.2.2.2 of the spec).
const PROPS = {
  0x01: "byte", 0x02: "u32", 0x03: "str", 0x08: "str", 0x09: "bin", 0x0b: "varint",
  0x11: "u32", 0x12: "str", 0x13: "u16", 0x15: "str", 0x16: "bin", 0x17: "byte",
  0x18: "u32", 0x19: "byte", 0x1a: "str", 0x1c: "str", 0x1f: "str", 0x21: "u16",
  0x22: "u16", 0x23: "u16", 0x24: "byte", 0x25: "byte", 0x26: "pair", 0x27: "u32",
  0x28: "byte", 0x29: "byte", 0x2a: "byte",
};
const PROP_NAMES = {
  0x01: "payloadFormat", 0x02: "messageExpiry", 0x03: "contentType", 0x08: "responseTopic",
  0x09: "correlationData", 0x0b: "subscriptionId", 0x11: "sessionExpiry",
  0x12: "assignedClientId", 0x13: "serverKeepAlive", 0x1f: "reasonString",
  0x21: "receiveMaximum", 0x22: "topicAliasMaximum", 0x23: "topicAlias", 0x24: "maximumQoS",
  0x26: "userProperties", 0x27: "maximumPacketSize",
};

// ---- encoding -------------------------------------------------------------------

/** Bytes of a variable byte integer (remaining length, property lengths). */
function varint(n) {
  if (n < 0 || n > 268435455) throw new RangeError("length out of range: " + n);
  const out = [];
  do {
    let b = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) b |= 0x80;
    out.push(b);
  } while (n > 0);
  return out;
}

/** Accumulates bytes; `str`/`bin` are length-prefixed as MQTT wants. */
class Writer {
  constructor() { this.parts = []; this.length = 0; }
  bytes(arr) { const u = arr instanceof Uint8Array ? arr : Uint8Array.from(arr); this.parts.push(u); this.length += u.length; return this; }
  byte(b) { return this.bytes([b & 0xff]); }
  u16(n) { return this.bytes([(n >> 8) & 0xff, n & 0xff]); }
  u32(n) { return this.bytes([(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]); }
  bin(data) { const u = toBytes(data); this.u16(u.length); return this.bytes(u); }
  str(s) { return this.bin(enc.encode(s)); }
  concat() {
    const out = new Uint8Array(this.length);
    let o = 0;
    for (const p of this.parts) { out.set(p, o); o += p.length; }
    return out;
  }
}

function toBytes(data) {
  if (data == null) return new Uint8Array(0);
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (typeof data === "string") return enc.encode(data);
  throw new TypeError("payload must be a string, Uint8Array or ArrayBuffer");
}

/** Encodes MQTT 5 properties from an object of {name: value}. */
function encodeProps(props) {
  const w = new Writer();
  if (props) {
    if (props.payloadFormat != null) w.byte(0x01).byte(props.payloadFormat);
    if (props.messageExpiry != null) w.byte(0x02).u32(props.messageExpiry);
    if (props.contentType != null) w.byte(0x03).str(props.contentType);
    if (props.responseTopic != null) w.byte(0x08).str(props.responseTopic);
    if (props.correlationData != null) w.byte(0x09).bin(props.correlationData);
    if (props.sessionExpiry != null) w.byte(0x11).u32(props.sessionExpiry);
    if (props.userProperties) {
      for (const [k, v] of Object.entries(props.userProperties)) w.byte(0x26).str(k).str(String(v));
    }
  }
  const body = w.concat();
  return new Writer().bytes(varint(body.length)).bytes(body).concat();
}

/** A whole packet: fixed header byte, remaining length, body. */
function packet(first, body) {
  return new Writer().byte(first).bytes(varint(body.length)).bytes(body).concat();
}

function encodeConnect(o) {
  const v5 = o.protocolVersion === 5;
  const w = new Writer().str("MQTT").byte(v5 ? 5 : 4);
  let flags = o.clean ? 0x02 : 0;
  if (o.will) flags |= 0x04 | ((o.will.qos || 0) << 3) | (o.will.retain ? 0x20 : 0);
  if (o.password != null) flags |= 0x40;
  if (o.username != null) flags |= 0x80;
  w.byte(flags).u16(o.keepalive);
  if (v5) w.bytes(encodeProps(o.properties));
  w.str(o.clientId);
  if (o.will) {
    if (v5) w.bytes(encodeProps(o.will.properties));
    w.str(o.will.topic).bin(o.will.payload);
  }
  if (o.username != null) w.str(o.username);
  if (o.password != null) w.bin(o.password);
  return packet(0x10, w.concat());
}

function encodePublish(p, v5) {
  const w = new Writer().str(p.topic);
  if (p.qos > 0) w.u16(p.packetId);
  if (v5) w.bytes(encodeProps(p.properties));
  w.bytes(toBytes(p.payload));
  const first = 0x30 | (p.dup ? 0x08 : 0) | (p.qos << 1) | (p.retain ? 1 : 0);
  return packet(first, w.concat());
}

function encodeSubscribe(packetId, subs, v5) {
  const w = new Writer().u16(packetId);
  if (v5) w.bytes(encodeProps(null));
  for (const s of subs) w.str(s.topic).byte(s.qos & 3);
  return packet(0x82, w.concat());
}

// ---- decoding -------------------------------------------------------------------

class Reader {
  constructor(u8) { this.u = u8; this.o = 0; }
  left() { return this.u.length - this.o; }
  need(n) { if (this.o + n > this.u.length) throw new Error("malformed packet: truncated"); }
  byte() { this.need(1); return this.u[this.o++]; }
  u16() { this.need(2); const v = (this.u[this.o] << 8) | this.u[this.o + 1]; this.o += 2; return v; }
  u32() { this.need(4); const v = ((this.u[this.o] << 24) >>> 0) + (this.u[this.o + 1] << 16) + (this.u[this.o + 2] << 8) + this.u[this.o + 3]; this.o += 4; return v; }
  varint() {
    let mult = 1, v = 0, b;
    for (let i = 0; i < 4; i++) { b = this.byte(); v += (b & 0x7f) * mult; if (!(b & 0x80)) return v; mult *= 128; }
    throw new Error("malformed packet: variable integer too long");
  }
  bin() { const n = this.u16(); this.need(n); const v = this.u.slice(this.o, this.o + n); this.o += n; return v; }
  str() { return dec.decode(this.bin()); }
  rest() { const v = this.u.slice(this.o); this.o = this.u.length; return v; }
}

function decodeProps(r) {
  const len = r.varint();
  const end = r.o + len;
  const props = {};
  while (r.o < end) {
    const id = r.varint();
    const type = PROPS[id];
    let v;
    switch (type) {
      case "byte": v = r.byte(); break;
      case "u16": v = r.u16(); break;
      case "u32": v = r.u32(); break;
      case "varint": v = r.varint(); break;
      case "str": v = r.str(); break;
      case "bin": v = r.bin(); break;
      case "pair": v = [r.str(), r.str()]; break;
      default: throw new Error("malformed packet: unknown property 0x" + id.toString(16));
    }
    const name = PROP_NAMES[id] || "p" + id;
    if (type === "pair") (props.userProperties = props.userProperties || {})[v[0]] = v[1];
    else props[name] = v;
  }
  if (r.o !== end) throw new Error("malformed packet: property length");
  return props;
}

/** Splits a byte stream into whole packets; keeps a partial one for the next chunk. */
class PacketSplitter {
  constructor() { this.buf = new Uint8Array(0); }
  /** Adds a chunk and returns the complete packets in it: [{type, flags, body}]. */
  push(chunk) {
    const c = toBytes(chunk);
    const b = new Uint8Array(this.buf.length + c.length);
    b.set(this.buf); b.set(c, this.buf.length);
    const out = [];
    let o = 0;
    while (b.length - o >= 2) {
      let len = 0, mult = 1, i = o + 1, done = false;
      for (let k = 0; k < 4 && i < b.length; k++, i++) {
        len += (b[i] & 0x7f) * mult; mult *= 128;
        if (!(b[i] & 0x80)) { done = true; i++; break; }
      }
      if (!done) {
        if (i - o - 1 >= 4) throw new Error("malformed packet: remaining length");
        break;
      }
      if (b.length - i < len) break;
      out.push({ type: b[o] >> 4, flags: b[o] & 0x0f, body: b.slice(i, i + len) });
      o = i + len;
    }
    this.buf = b.slice(o);
    return out;
  }
}

function decodePublish(flags, body, v5) {
  const r = new Reader(body);
  const qos = (flags >> 1) & 3;
  const msg = { topic: r.str(), qos, retain: !!(flags & 1), dup: !!(flags & 8), packetId: null, properties: {} };
  if (qos > 0) msg.packetId = r.u16();
  if (v5) msg.properties = decodeProps(r);
  msg.payloadBytes = r.rest();
  msg.payload = dec.decode(msg.payloadBytes);
  return msg;
}

/** MQTT topic filter matching (`+`, `#`). */
function topicMatches(filter, topic) {
  const f = filter.split("/"), t = topic.split("/");
  for (let i = 0; i < f.length; i++) {
    if (f[i] === "#") return !(i === 0 && t[0].startsWith("$"));
    if (i >= t.length) return false;
    if (f[i] === "+") { if (i === 0 && t[0].startsWith("$")) return false; continue; }
    if (f[i] !== t[i]) return false;
  }
  return f.length === t.length;
}

// ---- the client -----------------------------------------------------------------

/**
 * new PacerMQTT.Client(url, options): connects at once and keeps connecting.
 * options: protocolVersion (5 | 4, default 5), clientId, keepalive (s, default 15),
 * username, password, will {topic, payload, qos, retain}, reconnect {min, max} (ms),
 * WebSocket (constructor, for tests).
 * Events (client.on(name, fn)): connect(connack), close(reason), message(msg), error(err).
 */
class Client {
  constructor(url, options) {
    const o = options || {};
    this.url = url;
    this.opts = {
      protocolVersion: o.protocolVersion === 4 ? 4 : 5,
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
    this.connect();
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
    ws.onopen = () => { this.send(encodeConnect(Object.assign({ clean: true }, this.opts))); };
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
        if (ack.reasonCode !== 0) {
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

  drop(reason) {
    const ws = this.ws;
    if (ws) { try { ws.close(); } catch (e) { /* already closed */ } }
    this.lost(reason);
  }

  lost(reason) {
    this.ws = null;
    clearInterval(this.pingTimer);
    const was = this.connected;
    this.connected = false;
    for (const [id, done] of this.subacks) { this.subacks.delete(id); done(null); }
    this.emit("close", { reason, wasConnected: was });
    if (!this.closedByUser) this.scheduleReconnect(reason);
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
