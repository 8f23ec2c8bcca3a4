// mqttcodec.js: the MQTT packets the dashboard's client (mqtt.js) sends and reads, as bytes:
// CONNECT, PUBLISH, SUBSCRIBE encoded; PUBLISH, the properties of MQTT 5 and the fields
// every packet reads decoded; a byte stream split into whole packets; topic filters matched.
// No sockets, no timers: mqtt.js keeps the connection. Tested in Chromium by
// Tests/extra/browser.d/mqtt-test.html (through mqtt.js's exports) and in Node by
// Tests/page/mqttcodec.test.mjs.
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

export { varint, Writer, Reader, toBytes, encodeProps, decodeProps, packet, encodeConnect, encodePublish, encodeSubscribe, decodePublish, PacketSplitter, topicMatches };
