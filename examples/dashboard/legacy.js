// Addresses that give the broker in parts, read as today's `broker=`: a kiosk started with
// `index.html?node=gym&timer=main&host=192.168.1.10&port=9001` connects to
// `ws://192.168.1.10:9001`, as if it had been given `broker=ws://192.168.1.10:9001`, and the
// page says so in its footer with the address in the new form. No DOM here: the wall page
// (settings.js), frontdesk.js and class.js call it on location.search, and Node's tests import it
// (Tests/page/legacy.test.mjs). docs/dashboard.md, "Addresses of other forms".
//
// The parts: `host` (a name, an IPv4 or IPv6 address, or `name:port`), `port`, `path`, and
// `tls` or `ssl` (1/true/yes/on: wss, 0/false/no/off: ws). Without `tls`, the scheme follows
// the page as the default broker does (wss: on an https: page, which may not open ws:); with
// no `path`, none (the broker's root, where mosquitto's WebSocket listener answers any path);
// with no `port`, the scheme's own (80, 443); with no `host`, the page's own host name.
// `broker=`, when given too, wins: the parts are dropped. A value the page cannot read (a
// host with a space or a scheme, a port of 0 or 70000, tls=maybe) makes it leave the parts
// and connect to its default broker, saying which value it could not read.

const PARTS = ["host", "port", "path", "tls", "ssl"];
const TRUE = ["1", "true", "yes", "on"], FALSE = ["0", "false", "no", "off"];

// (No lookbehind: Safari before 16.4 refuses the whole module over one.)
const LABEL = /^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$/;
const IPV6 = /^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*$/;

/** A host name or address as a URL writes it (IPv6 in brackets), or null. */
function hostPart(h) {
  if (h.startsWith("[") && h.endsWith("]")) h = h.slice(1, -1);
  if (IPV6.test(h)) return (h.match(/:/g) || []).length >= 2 ? "[" + h.toLowerCase() + "]" : null;
  const name = h.endsWith(".") ? h.slice(0, -1) : h;
  if (name.length > 253 || !name.split(".").every((l) => LABEL.test(l))) return null;
  return h.toLowerCase();
}

/** A port number 1…65535 as text, or null. */
function portPart(p) {
  return /^[0-9]{1,5}$/.test(p) && +p >= 1 && +p <= 65535 ? String(+p) : null;
}

/** A URL path (a leading / added), or null for one with a space, ? or #. */
function pathPart(p) {
  if (!/^[A-Za-z0-9._~!$&'()*+,;=:@%\/-]*$/.test(p)) return null;
  return p.startsWith("/") ? p : "/" + p;
}

/** A query value readable in the footer: `ws://h:9001` rather than `ws%3A%2F%2Fh%3A9001`. */
function enc(s) {
  return encodeURIComponent(s).replace(/%(3A|2F|5B|5D|2C|40)/gi, (m) => decodeURIComponent(m));
}

/** A query from [key, value] pairs; `hide` writes a password as … (the note is on screen). */
function query(entries, hide) {
  return entries.map(([k, v]) => enc(k) + "=" + (hide && k === "pass" && v ? "…" : enc(v))).join("&");
}

/**
 * Reads the broker's parts in a query string.
 * @param {string} search location.search (with or without its "?")
 * @param {string} pageHref the page's address (its scheme and host name are the defaults)
 * @returns {null|{parts: string[], broker: string|null, search: string, problem: string|null, note: string}}
 *   null when the address has none of the parts; else the parts it has (in the order above),
 *   the broker they give (null: the page's default, or the `broker=` given beside them), the
 *   query in the new form (parts dropped, `broker=` in place of the first), what could not be
 *   read, and the footer's one line.
 */
function legacyBroker(search, pageHref) {
  const entries = [...new URLSearchParams(search)];
  const given = {};
  for (const [k, v] of entries) if (PARTS.includes(k) && !(k in given)) given[k] = v.trim();
  const parts = PARTS.filter((k) => k in given);
  if (!parts.length) return null;
  const named = parts.filter((k) => given[k] !== "");
  const names = (named.length ? named : parts).join("/");
  const explicit = entries.some(([k, v]) => k === "broker" && v.trim() !== "");

  let broker = null, problem = null;
  if (!explicit && named.length) ({ broker = null, problem = null } = build(given, pageHref));

  const out = [];
  let placed = explicit;
  for (const [k, v] of entries) {
    if (k === "broker" && !explicit) continue; // an empty broker= (the page would read it first)
    if (!PARTS.includes(k)) { out.push([k, v]); continue; }
    if (!placed && broker) { out.push(["broker", broker]); placed = true; }
  }
  const newSearch = query(out);
  const shown = query(out, true);
  const newForm = "?" + shown;
  let note;
  if (explicit) note = "This address gives both broker= and " + names + " (an older form); the page uses broker=, the new form is " + newForm;
  else if (problem) note = "This address gives the broker as " + names + " (an older form), but " + problem + ", so the page connects to its own server; the new form is ?" + (shown ? shown + "&" : "") + "broker=ws://<host>:<port>";
  else if (broker) note = "This address gives the broker as " + names + " (an older form); the new form is " + newForm;
  else note = "This address has an empty " + names + " (an older form), left out" + (shown ? "; the new form is " + newForm : "");
  return { parts, broker, search: newSearch, problem, note };
}

function build(given, pageHref) {
  let page;
  try { page = new URL(pageHref); } catch (e) { page = null; }
  let tls = null;
  for (const k of ["tls", "ssl"]) {
    const v = (given[k] || "").toLowerCase();
    if (!v) continue;
    const t = TRUE.includes(v) ? true : FALSE.includes(v) ? false : undefined;
    if (t === undefined) return { problem: k + "=" + given[k] + " is neither 1 nor 0" };
    if (tls !== null && tls !== t) return { problem: "tls and ssl disagree" };
    tls = t;
  }
  const scheme = (tls === null ? page && page.protocol === "https:" : tls) ? "wss" : "ws";

  let host = null, port = null;
  if (given.host) {
    let h = given.host;
    const m = /^(\[[^\]]*\]|[^:\[\]]*):([0-9]*)$/.exec(h); // name:port, [v6]:port
    if (m) { h = m[1]; port = portPart(m[2]); if (!port && !given.port) return { problem: "host=" + given.host + " has no valid port" }; }
    host = hostPart(h);
    if (!host) return { problem: "host=" + given.host + " is not a host name or address" };
  } else {
    host = page && (page.protocol === "http:" || page.protocol === "https:") && page.hostname ? page.hostname : "127.0.0.1";
  }
  if (given.port) {
    port = portPart(given.port);
    if (!port) return { problem: "port=" + given.port + " is not a port number (1 to 65535)" };
  }
  let path = "";
  if (given.path) {
    path = pathPart(given.path);
    if (path == null) return { problem: "path=" + given.path + " is not a path" };
  }
  const broker = scheme + "://" + host + (port ? ":" + port : "") + path;
  try { new URL(broker); } catch (e) { return { problem: "host=" + given.host + " is not a host name or address" }; }
  return { broker, problem: null };
}

export { legacyBroker, PARTS };
