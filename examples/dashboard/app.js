// The Pacer wall clock and coach's app, put together: the settings from the address
// (settings.js), the link to the node (connection.js: MQTT, the node's state, its clock
// offset), the single big clock (single.js) or the grid of all timers (grid.js), flipped at
// their exact instants, the controls (controls.js), the set-up sheet (setup.js), sign-in
// (signin.js), the footer (footer.js), this screen's sound and flash (soundflash.js) at the
// cues' instants (cues.js), the node's spoken cues said by the browser (speech.js), and the
// phone's lock screen, vibration, notifications and wake lock (phone.js), and the Classes sheet
// (classes.js: today's classes, the node's displays). Each part owns its
// state; this file hands each the others it needs.
// Logic without the DOM is tested in Node (Tests/page/). See docs/dashboard.md.
// ES modules, no build step: index.html loads this file with <script type="module">, and a
// browser runs modules only when the server sends a JavaScript Content-Type (lighttpd does:
// deploy/lighttpd/; mosquitto's http_dir sends none).
import { readSettings, pageSearch, linkParams } from "./settings.js";
import { Connection } from "./connection.js";
import { viewOf } from "./views.js";
import { Cues } from "./cues.js";
import { createSingle } from "./single.js";
import { createGrid } from "./grid.js";
import { createControls } from "./controls.js";
import { createSetup } from "./setup.js";
import { createSignIn } from "./signin.js";
import { createFooter } from "./footer.js";
import { createSoundFlash } from "./soundflash.js";
import { SpokenCues } from "./speech.js";
import { createPhone } from "./phone.js";
import { createClasses } from "./classes.js";
import { createBanner, confirmDialog, wireDialogCloses, $ } from "./ui.js";

// An address that gives the broker in parts (host, port, path, tls) is read in its new form,
// with broker= (legacy.js); the footer says so.
const { cfg, legacy } = readSettings(location.search, location.href);

/** The page's own clock: monotonic, in epoch ms. */
const localNow = () => performance.timeOrigin + performance.now();

/** Whether this screen's cues and notices are for timer `id`: the one shown, or any in the grid. */
const forTimer = (id) => cfg.timer == null || cfg.timer === id;

const banner = createBanner($("banner"));
const conn = new Connection({ cfg, localNow, hooks: { render, base: onBase, change: onChange, synced } });
/** What a timer shows now, with this page's connection and the node's clock. */
const view = (st) => viewOf(st, { brokerUp: conn.brokerUp, nodeOnline: conn.node.online, now: conn.nodeNow() });
/** The query of a link to this page with `over` changed (the node named when found). */
const link = (over) => linkParams(pageSearch(location.search, location.href), over, conn.node.info);

const sinks = createSoundFlash({ cfg, localNow });
const cues = new Cues({ sinks: [sinks.sound, sinks.flash], cues: cfg.cues, offset: () => conn.clock.offset, localNow, forTimer });
const spoken = new SpokenCues({ speech: sinks.speech, sound: sinks.sound, offset: () => conn.clock.offset, forTimer });
sinks.sound.quiet = (timer, dueLocal) => spoken.speaks(timer, dueLocal); // a spoken cue does not beep
sinks.speech.onSpeak = showSaid;
const setup = createSetup({ cfg, conn, confirm: confirmDialog, banner, go, render, predict: (id, st) => cues.predict(id, st) });
const controls = createControls({ cfg, conn, banner, confirm: confirmDialog, go, render, openSetup: setup.open, forgetForm: setup.forget });
const single = createSingle({ cfg, conn, view });
const grid = createGrid({ cfg, conn, view, link, go, command: controls.command, openSetup: setup.open });
const footer = createFooter({ cfg, conn, legacy, link, go, banner });
const phone = createPhone({ cfg, conn, view, command: controls.command, localNow, forTimer });
const signin = createSignIn({ cfg, banner });
const classes = createClasses({ cfg, conn, confirm: confirmDialog });
const sw = { state: "none" };
let flipTimer = null;

// For people debugging, and the browser suite (Tests/extra/browser.d/suite.py): the page's
// state read through its parts. Nothing of the page reads it.
const app = {
  get client() { return conn.client; }, get base() { return conn.base; }, get brokerUp() { return conn.brokerUp; },
  get nodeOnline() { return conn.node.online; }, get info() { return conn.node.info; }, get timers() { return conn.node.timers; },
  get workouts() { return conn.node.workouts; }, get speaker() { return conn.node.speaker; }, get athletes() { return conn.node.athletes; },
  get offset() { return conn.clock.offset; }, get rtt() { return conn.clock.rtt; }, get syncMethod() { return conn.clock.method; },
  get syncVia() { return conn.syncVia; }, get lastSync() { return conn.lastSync; }, get syncing() { return conn.syncing; },
  get pending() { return conn.pending; }, get phaseOf() { return conn.node.phaseOf; }, get login() { return signin.state.login; },
  get sw() { return sw; }, get notes() { return phone.notes; }, get vibrations() { return phone.vibrations; },
};
window.pacerDashboard = {
  app, cfg, legacy, conn, cues, sound: sinks.sound, flash: sinks.flash, speech: sinks.speech, spoken,
  media: phone.media, wake: phone.wake, setup: setup.state, classes: classes.state,
  localNow, nodeNow: () => conn.nodeNow(), go,
};

// ---- what the node's messages change ----------------------------------------------------

function onBase() { footer.renderHome(); footer.renderClassLink(); }

/** A round of clock requests ended: the foreseen cues, and those still to say, move with the offset. */
function synced(moved) {
  cues.synced(moved, conn.node.timers);
  if (moved) spoken.synced();
}

/** The words being said, written on the screen for as long as they take (about 350 ms a word, 2 s at least). */
let saidTimer = null;
function showSaid(e) {
  const el = $("said");
  el.textContent = e.text;
  el.classList.add("on");
  clearTimeout(saidTimer);
  saidTimer = setTimeout(() => el.classList.remove("on"), Math.max(2000, 350 * e.text.split(/\s+/).length));
}

function onChange(c) {
  switch (c.what) {
    case "info": setup.renderChoices(); footer.renderClassLink(); render(); break;
    case "workouts": setup.renderChoices(); break;
    case "sound": footer.renderSpeaker(); break;
    case "athletes": footer.renderClassLink(); break;
    case "displays": classes.renderDisplays(); break;
    case "next": case "current": render(); break;
    case "recovery": if (forTimer(c.timer)) render(); break;
    case "gone": cues.forget(c.timer); spoken.forget(c.timer); render(); break;
    case "state": cues.predict(c.timer, c.state); render(); break;
    case "event": {
      const before = conn.node.noteEvent(c.timer, c.event);
      phone.noticeEvent(c.timer, c.event, before);
      cues.event(c.timer, c.event);
      spoken.event(c.timer, c.event);
      break;
    }
    case "say": spoken.cue(c.timer, c.say); break;
    default: break;
  }
}

// ---- the view: one timer or the grid, flipped at its exact instants -----------------------

function render() {
  clearTimeout(flipTimer);
  footer.renderStatus();
  classes.renderButton();
  const next = cfg.timer ? single.render() : grid.render();
  phone.updateMedia();
  phone.updateWake();
  // Arm the next flip for its exact instant (local clock); a timer that fires early by a
  // fraction of a millisecond re-arms for the rest.
  const offset = conn.clock.offset;
  if (next != null && offset != null) {
    const at = next - offset;
    const arm = () => {
      const wait = at - localNow();
      if (wait > 0.25) { flipTimer = setTimeout(arm, wait); return; }
      render();
    };
    flipTimer = setTimeout(arm, Math.max(0, at - localNow()));
  }
}

/** Shows one timer (or the grid, for null) without reloading: sound, media and the connection carry on. */
function go(timer) {
  cfg.timer = timer || null;
  history.pushState({ timer: cfg.timer }, "", "?" + link({ timer: cfg.timer }));
  applyView();
}
function applyView() {
  document.body.dataset.view = cfg.timer ? "single" : "grid";
  single.refit(); grid.relayout();
  footer.renderClassLink();
  cues.all(conn.node.timers);
  render();
}

// ---- installable: the service worker ---

function registerServiceWorker() {
  if (!("serviceWorker" in navigator) || !window.isSecureContext || !cfg.sw) { sw.state = "unavailable"; return; }
  sw.state = "registering";
  // A secure context only (HTTPS, or http://localhost): a phone on http://<pi>/ has none.
  navigator.serviceWorker.register("sw.js").then((r) => { sw.state = "registered"; sw.scope = r.scope; },
    (e) => { sw.state = "failed"; sw.error = String(e && e.message || e); });
}

// ---- start ----------------------------------------------------------------------------

function start() {
  document.body.dataset.view = cfg.timer ? "single" : "grid";
  document.body.classList.toggle("no-controls", !cfg.controls);
  footer.showLegacyNote();
  conn.start(signin.load());
  setInterval(() => conn.tick(), 5000);
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && conn.brokerUp && conn.base) conn.resync();
    phone.updateWake(); // a hidden page's wake lock is released by the browser: take it again
  });
  window.addEventListener("popstate", () => { cfg.timer = new URLSearchParams(location.search).get("timer"); applyView(); });
  wireDialogCloses();
  controls.wire();
  grid.wire();
  footer.wire();
  setup.wire();
  classes.wire();
  signin.wire(conn.client);
  sinks.wire({
    vibrate: phone.vibrate, resched: () => cues.all(conn.node.timers),
    soundOn: () => { phone.enableMedia(); phone.askNotifications(); }, soundOff: phone.disableMedia,
  });
  registerServiceWorker();
  window.addEventListener("resize", render);
  single.wireFullscreen();
  render();
  window.__pacerStarted = true; // boot.js: the page started (it explains on screen when not)
}

start();
