// settings.js: the wall page's settings from its address, and the addresses of its links,
// with no DOM: `?node=`, `timer`, `controls`, `broker`, `mqtt`, `user`/`pass`, `sound`,
// `flash`, `wake`, `lag`, `cues`, `resync` and `sw` (docs/dashboard.md, "URL parameters"),
// an address that gives the broker as host/port read in its new form (legacy.js). app.js
// reads them once; Tests/page/settings.test.mjs tests this very file in Node.
import { legacyBroker } from "./legacy.js";
import { defaultBroker } from "./mqtt.js";

/** A number from a parameter, or `d` when it is missing or not a number. */
function num(v, d) { const n = Number(v); return v != null && v !== "" && isFinite(n) ? n : d; }

/** The page's query in its new form: host/port/path/tls read as broker= (legacy.js), else as it is. */
function pageSearch(search, href) { const l = legacyBroker(search, href); return l ? l.search : search; }

/**
 * The settings of the page at `href` with query `search`: `{cfg, legacy}`, `legacy` being
 * legacy.js's reading of an address of another form (null for none). `cfg.timer` is the
 * timer shown (null: the grid); the page changes it as it goes from one view to another.
 */
function readSettings(search, href) {
  const legacy = legacyBroker(search, href);
  const q = new URLSearchParams(legacy ? legacy.search : search);
  const cfg = {
    // The broker through the web server that serves this page (mqtt.js's defaultBroker);
    // `?broker=ws://host:9001` reaches a listener directly.
    broker: q.get("broker") || defaultBroker(href),
    node: q.get("node") || null,
    base: q.get("base") || null,
    timer: q.get("timer") || null,
    controls: q.get("controls") !== "0",
    sound: q.get("sound") === "1",
    flash: q.get("flash"), // "1" / "0": this screen flashes at each cue, or not (else the setting kept, else by the screen)
    mqtt: q.get("mqtt") === "3.1.1" ? 4 : q.get("mqtt") === "5" ? 5 : "auto", // auto: 5, or 3.1.1 when the broker will not speak it
    user: q.get("user"), pass: q.get("pass"), // kiosks only: the sign-in form keeps them out of the URL
    wake: q.get("wake"),
    lagMs: num(q.get("lag"), 500),
    cues: (q.get("cues") || "3,2,1").split(",").map(Number).filter((n) => n > 0),
    resyncMs: num(q.get("resync"), 300) * 1000,
    sw: q.get("sw") !== "0", // registers the service worker (where the browser may)
  };
  return { cfg, legacy };
}

/**
 * The query of a link to this page (`search`, its new form) with the parameters of `over`
 * set (null: removed); with no `node` or `base` in it, the node of `info` (the one found).
 */
function linkParams(search, over, info) {
  const p = new URLSearchParams(search);
  for (const [k, v] of Object.entries(over)) { if (v == null) p.delete(k); else p.set(k, v); }
  if (!p.get("node") && !p.get("base") && info) p.set("node", info.node);
  return p.toString();
}

export { readSettings, pageSearch, linkParams, num };
