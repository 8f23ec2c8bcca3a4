// Addresses that give the broker in parts (examples/dashboard/legacy.js): host, port, path,
// tls and ssl read as today's broker=, each alone and together; broker= winning when both are
// given; values the page cannot read; the new form of the address and the footer's note.
// Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import { legacyBroker as L, PARTS } from "../../examples/dashboard/legacy.js";
import { defaultBroker } from "../../examples/dashboard/mqtt.js";

const HTTP = "http://gym.local/index.html", HTTPS = "https://gym.local/index.html";
const broker = (search, page = HTTP) => L(search, page).broker;

test("an address without the parts is left alone", () => {
  for (const s of ["", "?", "?node=gym&timer=main", "?broker=ws://h:9001", "?node=gym&controls=0&hostname=x&ports=1", "?Host=h&PORT=1"]) {
    assert.equal(L(s, HTTP), null, s);
  }
  assert.deepEqual(PARTS, ["host", "port", "path", "tls", "ssl"]);
});

test("the kiosk address of the example: host and port", () => {
  const r = L("?node=gym&timer=main&host=192.168.1.10&port=9001", HTTP);
  assert.equal(r.broker, "ws://192.168.1.10:9001");
  assert.deepEqual(r.parts, ["host", "port"]);
  assert.equal(r.problem, null);
  assert.equal(r.search, "node=gym&timer=main&broker=ws://192.168.1.10:9001");
  assert.equal(r.note, "This address gives the broker as host/port (an older form); the new form is ?node=gym&timer=main&broker=ws://192.168.1.10:9001");
  // The new form reads back as the same settings, with broker= in place of the parts.
  const q = new URLSearchParams(r.search);
  assert.equal(q.get("broker"), "ws://192.168.1.10:9001");
  assert.equal(q.get("node"), "gym");
  assert.equal(q.get("timer"), "main");
  assert.equal(L("?" + r.search, HTTP), null, "the new form has no parts left");
  // Without ?: location.search and a bare query read the same.
  assert.deepEqual(L("node=gym&timer=main&host=192.168.1.10&port=9001", HTTP), r);
});

test("host alone: the scheme's own port, the page's scheme", () => {
  assert.equal(broker("?host=192.168.1.10"), "ws://192.168.1.10");
  assert.equal(broker("?host=192.168.1.10", HTTPS), "wss://192.168.1.10", "an https: page may not open ws:");
  assert.equal(broker("?host=Gym.Local"), "ws://gym.local");
  assert.equal(broker("?host=gym.local."), "ws://gym.local.");
  assert.equal(broker("?host=pi_4"), "ws://pi_4");
  assert.equal(broker("?host=localhost"), "ws://localhost");
});

test("host with its port, and IPv6", () => {
  assert.equal(broker("?host=192.168.1.10:9001"), "ws://192.168.1.10:9001");
  assert.equal(broker("?host=gym.local:9001"), "ws://gym.local:9001");
  assert.equal(broker("?host=gym.local:9001&port=9002"), "ws://gym.local:9002", "port= wins over the host's");
  assert.equal(broker("?host=gym.local:&port=9002"), "ws://gym.local:9002");
  assert.equal(broker("?host=::1&port=9001"), "ws://[::1]:9001");
  assert.equal(broker("?host=[::1]&port=9001"), "ws://[::1]:9001");
  assert.equal(broker("?host=[fe80::1]:9001"), "ws://[fe80::1]:9001");
  assert.equal(broker("?host=FD00::A"), "ws://[fd00::a]");
});

test("port alone: the page's own host name (loopback for a page opened as a file)", () => {
  assert.equal(broker("?port=9001", "http://192.168.1.10:8080/index.html"), "ws://192.168.1.10:9001");
  assert.equal(broker("?port=9001", "https://gym.local/"), "wss://gym.local:9001");
  assert.equal(broker("?port=9001", "http://[::1]:8080/"), "ws://[::1]:9001");
  assert.equal(broker("?port=9001", "file:///home/gym/pacer/examples/dashboard/index.html"), "ws://127.0.0.1:9001");
  assert.equal(broker("?port=9001", "not a url"), "ws://127.0.0.1:9001");
  assert.equal(broker("?port=09001"), "ws://gym.local:9001", "leading zeros read as the number");
});

test("path: added after the port, with its leading /", () => {
  assert.equal(broker("?host=h&port=9001&path=/mqtt"), "ws://h:9001/mqtt");
  assert.equal(broker("?host=h&port=9001&path=mqtt"), "ws://h:9001/mqtt");
  assert.equal(broker("?host=h&path=/"), "ws://h/");
  assert.equal(broker("?host=h&path=/ws/mqtt"), "ws://h/ws/mqtt");
  assert.equal(broker("?path=/mqtt"), "ws://gym.local/mqtt", "path alone: the page's host");
});

test("tls and ssl choose wss or ws over the page's scheme", () => {
  for (const v of ["1", "true", "yes", "on", "TRUE", " 1 "]) {
    assert.equal(broker("?host=h&port=8883&tls=" + encodeURIComponent(v)), "wss://h:8883", "tls=" + v);
    assert.equal(broker("?host=h&port=8883&ssl=" + encodeURIComponent(v)), "wss://h:8883", "ssl=" + v);
  }
  for (const v of ["0", "false", "no", "off"]) {
    assert.equal(broker("?host=h&port=9001&tls=" + v, HTTPS), "ws://h:9001", "tls=" + v + " (the browser may refuse it on an https: page; asked for all the same)");
    assert.equal(broker("?host=h&port=9001&ssl=" + v, HTTPS), "ws://h:9001", "ssl=" + v);
  }
  assert.equal(broker("?host=h&tls=1&ssl=yes"), "wss://h", "tls and ssl agreeing");
  assert.equal(broker("?tls=1", HTTP), "wss://gym.local", "tls alone: the page's host");
  const r = L("?host=h&tls=", HTTPS);
  assert.equal(r.broker, "wss://h", "an empty tls is no tls: the page's scheme");
  assert.deepEqual(r.parts, ["host", "tls"]);
});

test("broker= beside the parts wins; the parts are dropped from the new form", () => {
  const r = L("?node=gym&broker=wss://pi.local/mqtt&host=192.168.1.10&port=9001&tls=0", HTTP);
  assert.equal(r.broker, null, "the page reads broker= itself");
  assert.equal(r.problem, null);
  assert.equal(r.search, "node=gym&broker=wss://pi.local/mqtt");
  assert.match(r.note, /both broker= and host\/port\/tls/);
  assert.match(r.note, /the new form is \?node=gym&broker=wss:\/\/pi\.local\/mqtt$/);
  // Order does not matter, nor a junk part beside it.
  const s = L("?host=a b&broker=ws://x:1&port=0", HTTP);
  assert.equal(s.broker, null);
  assert.equal(s.problem, null, "a junk part beside broker= is dropped, not read");
  assert.equal(s.search, "broker=ws://x:1");
  // An empty broker= is no broker: the parts are read.
  assert.equal(broker("?broker=&host=h&port=1"), "ws://h:1");
  assert.equal(L("?broker=&host=h&port=1", HTTP).search, "broker=ws://h:1", "the empty broker= dropped (the page reads the first)");
  assert.equal(L("?broker=&node=a&host=", HTTP).search, "node=a");
});

test("junk: the parts left, the default broker, the note says which value", () => {
  const junk = [
    ["?host=a b&port=9001", "host=a b is not a host name or address"],
    ["?host=ws://192.168.1.10:9001", "host=ws://192.168.1.10:9001 is not a host name or address"],
    ["?host=http://gym.local", "host=http://gym.local is not a host name or address"],
    ["?host=user@gym.local", "host=user@gym.local is not a host name or address"],
    ["?host=gym.local/mqtt", "host=gym.local/mqtt is not a host name or address"],
    ["?host=-gym", "host=-gym is not a host name or address"],
    ["?host=gym..local", "host=gym..local is not a host name or address"],
    ["?host=999.1.1.1", "host=999.1.1.1 is not a host name or address"],
    ["?host=" + "a".repeat(64), "host=" + "a".repeat(64) + " is not a host name or address"],
    ["?host=:::", "host=::: is not a host name or address"],
    ["?host=gym.local:abc", "host=gym.local:abc is not a host name or address"],
    ["?host=gym.local:", "host=gym.local: has no valid port"],
    ["?host=gym.local:0", "host=gym.local:0 has no valid port"],
    ["?host=h&port=0", "port=0 is not a port number (1 to 65535)"],
    ["?host=h&port=65536", "port=65536 is not a port number (1 to 65535)"],
    ["?host=h&port=-1", "port=-1 is not a port number (1 to 65535)"],
    ["?host=h&port=9001.5", "port=9001.5 is not a port number (1 to 65535)"],
    ["?host=h&port=0x10", "port=0x10 is not a port number (1 to 65535)"],
    ["?host=h&port=123456", "port=123456 is not a port number (1 to 65535)"],
    ["?host=h&path=/a b", "path=/a b is not a path"],
    ["?host=h&path=/a%3Fb", "path=/a?b is not a path"],
    ["?host=h&tls=maybe", "tls=maybe is neither 1 nor 0"],
    ["?host=h&ssl=2", "ssl=2 is neither 1 nor 0"],
    ["?host=h&tls=1&ssl=0", "tls and ssl disagree"],
    ["?port=%F0%9F%92%A9", "port=\u{1F4A9} is not a port number (1 to 65535)"],
    ["?host=%3Cscript%3E", "host=<script> is not a host name or address"],
  ];
  for (const [s, problem] of junk) {
    const r = L(s, HTTP);
    assert.ok(r, s);
    assert.equal(r.broker, null, s + ": the default broker");
    assert.equal(r.problem, problem, s);
    assert.ok(r.note.includes(problem) && r.note.includes("connects to its own server"), s + ": " + r.note);
    assert.ok(!/(^|&)(host|port|path|tls|ssl)=/.test(r.search), s + ": the parts dropped: " + r.search);
  }
  // The page's default for such an address is today's: mqtt beside the page.
  assert.equal(defaultBroker(HTTP), "ws://gym.local/mqtt");
});

test("empty parts are no parts: the page's default, and a note that they were left out", () => {
  const r = L("?node=gym&host=&port=", HTTP);
  assert.equal(r.broker, null);
  assert.equal(r.problem, null);
  assert.equal(r.search, "node=gym");
  assert.equal(r.note, "This address has an empty host/port (an older form), left out; the new form is ?node=gym");
  assert.equal(L("?host=", HTTP).note, "This address has an empty host (an older form), left out");
  assert.equal(broker("?host=&port=9001"), "ws://gym.local:9001", "an empty host is the page's own");
});

test("the new form keeps every other parameter, in order, readable; a password is not shown", () => {
  const s = "?node=gym&timer=main&host=192.168.1.10&controls=0&port=9001&cues=3,2,1&user=display&pass=s%26cret&sound=1";
  const r = L(s, HTTP);
  assert.equal(r.search, "node=gym&timer=main&broker=ws://192.168.1.10:9001&controls=0&cues=3,2,1&user=display&pass=s%26cret&sound=1");
  const q = new URLSearchParams(r.search);
  assert.equal(q.get("pass"), "s&cret", "the new form works, its password included");
  assert.ok(r.note.includes("pass=…") && !r.note.includes("cret"), "the footer's note hides the password: " + r.note);
  // A part given twice: the first counts (as URLSearchParams.get), all are dropped.
  const d = L("?host=a&host=b&port=1&port=2", HTTP);
  assert.equal(d.broker, "ws://a:1");
  assert.equal(d.search, "broker=ws://a:1");
  // Names with odd characters come back encoded, not broken.
  assert.equal(L("?name=Row %26 bike&host=h", HTTP).search, "name=Row%20%26%20bike&broker=ws://h");
});

test("the note is one line a person reads, for every combination of the parts", () => {
  const values = { host: ["", "192.168.1.10", "gym.local:9001", "a b"], port: ["", "9001", "0"], path: ["", "/mqtt"], tls: ["", "1", "0", "x"] };
  let n = 0;
  for (const host of values.host) for (const port of values.port) for (const path of values.path) for (const tls of values.tls) {
    const p = new URLSearchParams();
    if (host !== null) p.set("host", host);
    p.set("port", port);
    p.set("path", path);
    p.set("tls", tls);
    for (const page of [HTTP, HTTPS]) {
      const r = L(p.toString(), page);
      n++;
      assert.ok(r && r.note && !r.note.includes("\n") && r.note.length < 240, p + ": " + (r && r.note));
      if (r.broker) {
        const u = new URL(r.broker);
        assert.ok(u.protocol === "ws:" || u.protocol === "wss:", r.broker);
        assert.equal(new URLSearchParams(r.search).get("broker"), r.broker);
        assert.equal(r.problem, null);
      } else {
        assert.equal(new URLSearchParams(r.search).get("broker"), null, p + ": no broker written without one");
      }
    }
  }
  assert.equal(n, 192);
});
