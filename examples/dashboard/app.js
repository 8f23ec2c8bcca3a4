// The Pacer wall clock and coach's app: subscribes to a node's topics over MQTT/WebSockets,
// counts down locally from `ends_at_ms` with the measured clock offset, flips digits at the
// exact instants, plays WebAudio cues on the events' `due_ms`, sends the coach's commands,
// sets up timers and saved workouts, and feeds the phone's lock screen (Media Session),
// vibration, notifications and wake lock. Logic without the DOM lives in clock.js, forms.js
// and media.js, which Node's tests import too (Tests/page/). See docs/dashboard.md.
// ES modules, no build step: index.html loads this file with <script type="module">, and a
// browser runs modules only when the server sends a JavaScript Content-Type (lighttpd does:
// deploy/lighttpd/; mosquitto's http_dir sends none).
import * as PacerMQTT from "./mqtt.js";
import * as PacerSound from "./sound.js";
import { valueAt, fmt, commandFor, toggleFor } from "./clock.js"; // counting, clock text, buttons' commands
import * as F from "./forms.js";
import * as M from "./media.js";
import * as Flash from "./flash.js";   // a full-screen flash at each cue
import * as S from "./speaker.js";     // the node's speaker (<base>/sound, the `sound` command)
import { statesFromList } from "./desk.js"; // a `list` reply made into states (the snapshot fallback)
import { classViewHref } from "./classview.js"; // the footer's link to the class view (class.html)
import { legacyBroker } from "./legacy.js";       // an address giving the broker as host/port: read as broker=

(function () {

  // ---- settings from the URL ------------------------------------------------------
  // An address that gives the broker in parts (host, port, path, tls) is read in its new form,
  // with broker= (legacy.js); the footer says so.
  const legacy = legacyBroker(location.search, location.href);
  const pageSearch = () => { const l = legacyBroker(location.search, location.href); return l ? l.search : location.search; };
  const q = new URLSearchParams(pageSearch());
  // The broker through the web server that serves this page (mqtt.js's defaultBroker);
  // `?broker=ws://host:9001` reaches a listener directly.
  const defaultBroker = PacerMQTT.defaultBroker(location.href);
  const cfg = {
    broker: q.get("broker") || defaultBroker,
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
  };
  function num(v, d) { const n = Number(v); return v != null && v !== "" && isFinite(n) ? n : d; }

  /** The page's own clock: monotonic, in epoch ms. */
  const localNow = () => performance.timeOrigin + performance.now();

  const $ = (id) => document.getElementById(id);
  const el = {
    body: document.body, digits: $("digits"), phase: $("phase"), name: $("name"), label: $("label"),
    next: $("next"), round: $("round"), set: $("set"), hr: $("hr"), hrValue: $("hr-value"),
    ring: $("ring"), bar: $("bar"), controls: $("controls"), toggle: $("toggle"), ack: $("ack"),
    grid: $("grid"), banner: $("banner"), conn: $("conn"), sync: $("sync"), sound: $("sound"), home: $("home"), classLink: $("class-link"),
    account: $("account"), newTimer: $("new-timer"),
    flash: $("flash"), flashToggle: $("flash-toggle"), foot: $("foot"), legacyNote: $("legacy-note"),
    speakerBox: $("node-speaker"), speaker: $("speaker"), speakerVolume: $("speaker-volume"),
  };

  const PHASE_TEXT = {
    idle: "Ready", scheduled: "Starts in", prepare: "Get ready", work: "Work", rest: "Rest",
    set_rest: "Set rest", cooldown: "Cool down", countdown: "Countdown", session: "Session",
    overtime: "Overtime", paused: "Paused", expired: "Time's up", finished: "Finished",
    cancelled: "Cancelled", offline: "Offline", syncing: "Syncing",
  };
  const NO_ANSWER = "No answer from the timer node (is it online? commands need a coach's sign-in)";

  // ---- state ------------------------------------------------------------------------
  const app = {
    client: null, base: null, nodeOnline: null, brokerUp: false,
    info: null, timers: new Map(),            // id -> latest state snapshot
    workouts: null,                           // the node's saved workouts (<base>/workouts), null: none heard
    offset: null, rtt: null, syncMethod: null, // node clock = local clock + offset
    syncVia: null,                            // the topic whose clock requests were last answered
    lastSync: 0, syncing: false, pending: new Map(), seq: 0,
    bannerTimer: null, flipTimer: null,
    phaseOf: new Map(),                       // timer -> its phase before the latest event (notifications)
    login: null,                              // {user, pass, from: "url" | "local" | "session"}
    sw: { state: "none" }, notes: [], vibrations: [],
    speaker: null,                            // the node's speaker: <base>/sound ({available, muted, volume}), null: none heard
  };
  const sound = new PacerSound.Sound(localNow, cfg.lagMs);
  const flash = new Flash.Flash(localNow, showFlash);
  /** Where cues go: this screen's sound, and its flash (each on or off by itself). */
  const cueSinks = () => [sound, flash].filter((s) => s.running);
  const media = { enabled: false, audio: null, handlers: {}, text: "", positionKey: "", timer: null };
  const wake = { want: false, lock: null, error: null, pending: false, refusedAt: 0 };
  const setup = { kind: "interval", mode: "new", timer: null, nameAuto: true, idAuto: true, fields: {}, params: {}, unchecked: false };
  window.pacerDashboard = { app, cfg, legacy, sound, flash, media, wake, setup, localNow, nodeNow, go }; // for people debugging, and the tests

  function nodeNow() { return app.offset == null ? null : localNow() + app.offset; }

  // ---- MQTT -------------------------------------------------------------------------
  const clientId = "pacer-dash-" + Math.random().toString(36).slice(2, 10);
  const replyTopic = () => app.base + "/reply/" + clientId;

  function start() {
    el.body.dataset.view = cfg.timer ? "single" : "grid";
    el.body.classList.toggle("no-controls", !cfg.controls);
    if (legacy) { // one line in the footer, shown on a wall without controls too
      el.legacyNote.textContent = legacy.note;
      el.legacyNote.hidden = false;
      el.foot.classList.add("noted");
      console.info("pacer: " + legacy.note);
    }
    app.login = loadLogin();
    app.client = new PacerMQTT.Client(cfg.broker, {
      protocolVersion: cfg.mqtt, clientId, keepalive: 10,
      username: app.login ? app.login.user : undefined, password: app.login ? app.login.pass : undefined,
    });
    if (cfg.node || cfg.base) setBase(cfg.base || "pacer/" + cfg.node);
    app.client.on("connect", () => {
      app.brokerUp = true;
      if (!app.base) app.client.subscribe("pacer/+/info", 1);
      else resync();
      render();
    });
    app.client.on("close", () => {
      app.brokerUp = false;
      app.offset = null; app.syncMethod = null; // re-measured on reconnect
      render();
    });
    app.client.on("error", onClientError);
    app.client.on("message", onMessage);
    setInterval(() => { if (app.brokerUp && app.base && localNow() - app.lastSync > cfg.resyncMs) resync(); }, 5000);
    document.addEventListener("visibilitychange", () => {
      if (!document.hidden && app.brokerUp && app.base) resync();
      updateWake(); // a hidden page's wake lock is released by the browser: take it again
    });
    window.addEventListener("popstate", () => { cfg.timer = new URLSearchParams(location.search).get("timer"); applyView(); });
    setupControls();
    setupGrid();
    setupForm();
    setupSignIn();
    setupSound();
    setupFlash();
    setupSpeaker();
    registerServiceWorker();
    window.addEventListener("resize", render);
    el.digits.addEventListener("dblclick", () => {
      if (document.fullscreenElement) document.exitFullscreen();
      else if (document.documentElement.requestFullscreen) document.documentElement.requestFullscreen().catch(() => {});
    });
    render();
    window.__pacerStarted = true; // boot.js: the page started (it explains on screen when not)
  }

  function setBase(base) {
    app.base = base;
    app.syncVia = null;
    const subs = [base + "/status", base + "/info", base + "/workouts", base + "/sound", base + "/athletes", base + "/timers/+/state", base + "/timers/+/event", base + "/reply", replyTopic()];
    app.client && app.client.subscribe(subs, 1);
    if (app.client && app.client.connected) resync();
    el.home.href = "?" + linkParams({ timer: null });
    renderClassLink();
  }

  /** The footer's Class link: shown while the node publishes its athletes (a class), to this view's timer. */
  function renderClassLink() {
    const href = classViewHref("?" + linkParams({ timer: cfg.timer }), app.athletes, app.info && app.info.node);
    el.classLink.hidden = href == null;
    if (href) el.classLink.href = href;
  }

  function linkParams(over) {
    const p = new URLSearchParams(pageSearch());
    for (const [k, v] of Object.entries(over)) { if (v == null) p.delete(k); else p.set(k, v); }
    if (!p.get("node") && !p.get("base") && app.info) p.set("node", app.info.node);
    return p.toString();
  }

  /** Shows one timer (or the grid, for null) without reloading: sound, media and the connection carry on. */
  function go(timer) {
    cfg.timer = timer || null;
    history.pushState({ timer: cfg.timer }, "", "?" + linkParams({ timer: cfg.timer }));
    applyView();
  }
  function applyView() {
    el.body.dataset.view = cfg.timer ? "single" : "grid";
    fitKey = ""; gridKey = "";
    renderClassLink();
    resched();
    render();
  }

  function onMessage(msg) {
    const arrival = localNow();
    if (!app.base) {
      // No ?node=: take the only node that announces itself (the first, when several do).
      const m = /^(pacer\/[^/]+)\/info$/.exec(msg.topic);
      if (m && msg.payload) { try { const info = JSON.parse(msg.payload); setBase(info.base_topic || m[1]); } catch (e) { /* not ours */ } }
      if (!app.base) return;
    }
    const rel = msg.topic.startsWith(app.base + "/") ? msg.topic.slice(app.base.length + 1) : null;
    if (rel == null) return;
    if (rel === "status") { app.nodeOnline = msg.payload === "online"; if (app.nodeOnline && app.brokerUp) resync(); render(); return; }
    if (rel === "info") { if (msg.payload) { try { app.info = JSON.parse(msg.payload); } catch (e) { /* ignore */ } } renderChoices(); renderClassLink(); render(); return; }
    if (rel === "workouts") {
      try { app.workouts = msg.payload ? JSON.parse(msg.payload).workouts || [] : []; } catch (e) { /* ignore */ }
      renderChoices(); return;
    }
    if (rel === "sound") { app.speaker = S.parseSound(msg.payload); renderSpeaker(); return; }
    if (rel === "athletes") { app.athletes = msg.payload || null; renderClassLink(); return; }
    if (rel === "reply" || rel.startsWith("reply/")) { onReply(msg, arrival); return; }
    const t = /^timers\/([^/]+)\/(state|event)$/.exec(rel);
    if (!t) return;
    if (t[2] === "state") {
      if (!msg.payload) { app.timers.delete(t[1]); app.phaseOf.delete(t[1]); for (const s of [sound, flash]) s.cancel((e) => e.timer === t[1]); render(); return; }
      let st; try { st = JSON.parse(msg.payload); } catch (e) { return; }
      // A live (not retained) state bounds the offset from below, for when `time` gets no
      // answer (a broker ACL that forbids this page to publish): offset >= as_of - arrival.
      if (!msg.retain && st.as_of_ms != null && app.syncMethod !== "time") {
        const est = st.as_of_ms - arrival;
        if (app.offset == null || est > app.offset) { app.offset = est; app.syncMethod = "state"; }
      }
      const old = app.timers.get(t[1]);
      if (old && st.revision != null && old.revision != null && st.revision < old.revision && msg.retain) return;
      app.timers.set(t[1], st);
      if (!app.phaseOf.has(t[1])) app.phaseOf.set(t[1], st.phase);
      predictCues(t[1], st);
      render();
    } else if (msg.payload) {
      let ev; try { ev = JSON.parse(msg.payload); } catch (e) { return; }
      onEvent(t[1], ev);
    }
  }

  // ---- requests and time sync -------------------------------------------------------

  /** Sends a command and resolves with its reply (null after `timeoutMs`). */
  function request(topic, body, timeoutMs) {
    const id = clientId + "-" + (++app.seq);
    body.id = id;
    const sent = localNow();
    return new Promise((resolve) => {
      const timer = setTimeout(() => { app.pending.delete(id); resolve(null); }, timeoutMs || 4000);
      app.pending.set(id, { resolve: (r, at) => { clearTimeout(timer); resolve({ reply: r, sent, at }); } });
      const props = app.client.protocolVersion === 5 ? { responseTopic: replyTopic(), correlationData: id, contentType: "application/json" } : undefined;
      app.client.publish(topic, JSON.stringify(body), { qos: 1, properties: props });
    });
  }

  function onReply(msg, arrival) {
    let r; try { r = JSON.parse(msg.payload); } catch (e) { return; }
    const p = r && r.id != null ? app.pending.get(r.id) : null;
    if (!p) return;
    app.pending.delete(r.id);
    p.resolve(r, arrival);
  }

  /**
   * Where to ask for the node's clock: `<base>/time`, which read-only screens may publish to
   * (deploy/mosquitto/acl.example), unless the node's `info` shows an older node without it
   * (no `time_topic` capability); then the `time` command on `<base>/cmd`.
   */
  function clockTopics() {
    const time = app.base + "/time", cmd = app.base + "/cmd";
    const caps = app.info && Array.isArray(app.info.capabilities) ? app.info.capabilities : null;
    if (caps && !caps.includes("time_topic")) return [cmd];
    return app.syncVia === cmd ? [cmd, time] : [time, cmd];
  }

  /**
   * NTP-style: several clock requests, the one with the smallest round trip wins. When the
   * first topic gets no answer (an older node, or a broker ACL without the time topic), the
   * other is tried before giving up (then the live states give the offset).
   */
  async function resync() {
    if (app.syncing || !app.base) return;
    app.syncing = true;
    try {
      let best = null;
      const topics = clockTopics();
      let via = topics.shift();
      for (let i = 0; i < 6 && app.brokerUp; i++) {
        const body = via.endsWith("/cmd") ? { action: "time" } : {};
        const res = await request(via, body, 2000);
        if (res && res.reply && res.reply.ok !== false && typeof res.reply.now_ms === "number") {
          app.syncVia = via;
          const rtt = res.at - res.sent;
          const offset = res.reply.now_ms - (res.sent + res.at) / 2;
          if (!best || rtt < best.rtt) best = { rtt, offset };
          if (app.syncMethod !== "time") { app.offset = offset; app.rtt = rtt; app.syncMethod = "time"; render(); } // show at once
        } else if (!res && !best && topics.length) { via = topics.shift(); i--; continue; } // try the other topic
        else if (!res) break; // no answer: the node is down or we may not publish
        await sleep(120);
      }
      if (best) {
        const moved = app.offset == null || Math.abs(best.offset - app.offset) > 0.5;
        app.offset = best.offset; app.rtt = best.rtt; app.syncMethod = "time"; app.lastSync = localNow();
        if (moved) for (const s of [sound, flash]) s.cancel((e) => e.predicted); // foreseen cues move with the offset
        for (const [id, st] of app.timers) predictCues(id, st);
      } else if (app.syncMethod === "time") {
        app.lastSync = localNow(); // keep the last good offset; try again later
      }
      if (best && app.timers.size === 0) await snapshot();
    } finally { app.syncing = false; render(); }
  }

  /**
   * No retained state came, although the node answers: a broker that keeps retained messages
   * per cluster member (RabbitMQ, ejabberd; docs/deployment.md). Asks the node for its timers
   * (`list`) and counts from them until their live states come.
   */
  async function snapshot() {
    const res = await request(app.base + "/cmd", { action: "list" }, 3000);
    if (!res || !res.reply || res.reply.ok === false || app.offset == null) return;
    for (const st of statesFromList(res.reply, res.at + app.offset)) if (!app.timers.has(st.id)) app.timers.set(st.id, st);
    if (app.nodeOnline == null) app.nodeOnline = true; // it answered
  }
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  // ---- what a timer shows now --------------------------------------------------------

  /** What to show for a timer: live only when the broker is up, the node online and the clock synced. */
  function viewOf(st) {
    if (!app.brokerUp) return { phase: "offline", why: "No connection to the broker — retrying" };
    if (app.nodeOnline === false) return { phase: "offline", why: "The timer node is offline" };
    if (!st) return { phase: "syncing", why: null };
    const live = st.status === "running" || st.status === "scheduled";
    if (live && app.offset == null) return { phase: "syncing", why: null };
    const v = valueAt(st, nodeNow());
    const phase = st.status === "paused" ? "paused" : st.phase || st.status;
    return { phase, v, text: fmt(v.secs) };
  }

  // ---- rendering ---------------------------------------------------------------------

  function render() {
    clearTimeout(app.flipTimer);
    renderStatusLine();
    let next = null;
    if (cfg.timer) next = renderSingle();
    else next = renderGrid();
    updateMedia();
    updateWake();
    // Arm the next flip for its exact instant (local clock); a timer that fires early by a
    // fraction of a millisecond re-arms for the rest.
    if (next != null && app.offset != null) {
      const at = next - app.offset;
      const arm = () => {
        const wait = at - localNow();
        if (wait > 0.25) { app.flipTimer = setTimeout(arm, wait); return; }
        render();
      };
      app.flipTimer = setTimeout(arm, Math.max(0, at - localNow()));
    }
  }

  function setText(node, text) { if (node.textContent !== text) node.textContent = text; }

  function renderSingle() {
    const st = app.timers.get(cfg.timer) || null;
    const view = viewOf(st);
    const phase = view.phase;
    el.body.dataset.phase = phase;
    el.body.dataset.status = st ? st.status : "none";
    document.title = (view.text ? view.text + " · " : "") + (st ? st.name || st.id : cfg.timer) + " · Pacer";
    setText(el.phase, PHASE_TEXT[phase] || phase);
    setText(el.name, st ? st.name || st.id : cfg.timer);
    const text = view.text || "--:--";
    setText(el.digits, text);
    fitDigits(text);
    if (!view.text) {
      const missing = !st && app.info && app.brokerUp && app.nodeOnline !== false && !(app.info.timers || []).some((t) => t.id === cfg.timer);
      setText(el.label, view.why || (missing ? "No such timer yet: Set up makes it" : "")); setText(el.next, "");
      setText(el.round, ""); setText(el.set, ""); el.hr.hidden = true; setRing(0);
      updateControls(st, false);
      return null;
    }
    setText(el.label, st.label || "");
    setText(el.next, st.next_label ? "Next: " + st.next_label : "");
    setText(el.round, st.rounds > 1 ? "Round " + st.round + "/" + st.rounds : "");
    setText(el.set, st.sets > 1 ? "Set " + st.set + "/" + st.sets : "");
    renderHR(st);
    setRing(view.v.progress);
    updateControls(st, true);
    return view.v.next;
  }

  /**
   * Sizes the digits to fill the width of their box (and no more than its height), for
   * whatever font the screen has. Measured only when the shape of the text ("0:00",
   * "00:00", "0:00:00") or the box changes: all digits have the same width (tabular).
   */
  let fitKey = "";
  function fitDigits(text) {
    const box = el.digits.parentElement.getBoundingClientRect();
    const key = text.replace(/[0-9]/g, "0") + "|" + Math.round(box.width) + "x" + Math.round(box.height);
    if (key === fitKey || box.width < 10) return;
    fitKey = key;
    el.digits.style.fontSize = "100px";
    const w = el.digits.getBoundingClientRect().width;
    const live = /[0-9]/.test(text); // "--:--" (offline, syncing) stays small
    const size = Math.min((100 * box.width * (live ? 0.96 : 0.4)) / w, box.height * (live ? 1.18 : 0.5));
    el.digits.style.fontSize = Math.floor(size) + "px";
  }

  function setRing(p) {
    const v = p == null ? 0 : Math.max(0, Math.min(1, p));
    el.ring.style.strokeDasharray = (v * 1000).toFixed(1) + " 1000";
    el.bar.style.width = (v * 100).toFixed(2) + "%";
  }

  function renderHR(st) {
    const age = st.hr_age_ms != null && st.as_of_ms != null && nodeNow() != null ? st.hr_age_ms + (nodeNow() - st.as_of_ms) : 0;
    const fresh = st.hr != null && age < 10000;
    el.hr.hidden = !fresh;
    if (fresh) { setText(el.hrValue, String(st.hr)); el.hr.dataset.zone = st.hr_zone || 0; }
  }

  const CAN = {
    cancel: ["scheduled", "running", "paused", "expired"],
    finish: ["running", "paused", "expired"],
  };

  function updateControls(st, live) {
    const ok = live && app.brokerUp && app.nodeOnline !== false;
    const s = st ? st.status : null;
    for (const b of el.controls.querySelectorAll("button")) {
      const a = b.dataset.action;
      if (b.dataset.ui === "setup") b.disabled = !(app.brokerUp && app.base && app.nodeOnline !== false);
      else b.disabled = !ok || (CAN[a] != null && !CAN[a].includes(s));
    }
    if (!st) return;
    const tf = toggleFor(s === "expired" ? null : s);
    el.toggle.textContent = tf.label;
    el.toggle.dataset.action = tf.action;
    el.ack.hidden = s !== "expired";
    el.toggle.hidden = s === "expired"; // the alarm's one big button is Acknowledge
    el.ack.classList.toggle("primary", s === "expired");
    el.body.classList.toggle("is-expired", s === "expired");
  }

  function renderGrid() {
    const ids = app.info && Array.isArray(app.info.timers) ? app.info.timers.map((t) => t.id) : [...app.timers.keys()];
    for (const id of app.timers.keys()) if (!ids.includes(id)) ids.push(id);
    el.body.dataset.phase = app.brokerUp && app.nodeOnline !== false ? "grid" : "offline";
    document.title = (app.info ? app.info.node : cfg.node || "") + " · Pacer";
    el.newTimer.disabled = !(app.brokerUp && app.base && app.nodeOnline !== false);
    let next = null;
    const seen = new Set();
    for (const id of ids) {
      seen.add(id);
      let card = el.grid.querySelector('[data-timer="' + CSS.escape(id) + '"]');
      if (!card) {
        card = document.createElement("article");
        card.className = "card";
        card.dataset.timer = id;
        card.innerHTML = '<a class="card-open"><div class="card-head"><span class="card-name"></span><span class="card-phase"></span></div>'
          + '<div class="card-digits"></div><div class="card-foot"><span class="card-label"></span><span class="card-round"></span></div></a>'
          + '<div class="card-ctl"><button type="button" class="card-toggle" data-action="start">Start</button>'
          + '<button type="button" class="card-ack" data-action="ack" hidden>Acknowledge</button></div>'
          + '<div class="card-bar"><div></div></div>';
        el.grid.appendChild(card);
      }
      card.querySelector(".card-open").href = "?" + linkParams({ timer: id });
      const st = app.timers.get(id);
      const view = viewOf(st);
      const infoName = app.info && (app.info.timers || []).find((t) => t.id === id);
      const name = (st && st.name) || (infoName && infoName.name) || id;
      card.dataset.phase = view.phase;
      setText(card.querySelector(".card-name"), name);
      setText(card.querySelector(".card-phase"), PHASE_TEXT[view.phase] || view.phase);
      const cd = card.querySelector(".card-digits"), ct = view.text || "--:--";
      setText(cd, ct);
      cd.dataset.len = String(Math.max(4, ct.length));
      setText(card.querySelector(".card-label"), st && view.text ? st.label || "" : "");
      setText(card.querySelector(".card-round"), st && view.text && st.rounds > 1 ? st.round + "/" + st.rounds : "");
      card.querySelector(".card-bar div").style.width = (view.v && view.v.progress != null ? view.v.progress * 100 : 0).toFixed(2) + "%";
      // The card's own controls: Start / Pause / Resume, and Acknowledge while it rings.
      const s = st ? st.status : null, live = !!view.text && app.brokerUp && app.nodeOnline !== false;
      const tg = card.querySelector(".card-toggle"), ack = card.querySelector(".card-ack");
      const tf = toggleFor(s === "expired" ? null : s);
      setText(tg, tf.label); tg.dataset.action = tf.action;
      tg.setAttribute("aria-label", tf.label + " " + name);
      ack.setAttribute("aria-label", "Acknowledge " + name);
      tg.hidden = s === "expired"; ack.hidden = s !== "expired";
      tg.disabled = ack.disabled = !live;
      if (view.v && view.v.next != null && (next == null || view.v.next < next)) next = view.v.next;
    }
    for (const card of [...el.grid.children]) if (!seen.has(card.dataset.timer)) card.remove();
    layoutGrid(ids.length);
    if (!ids.length) el.grid.dataset.empty = app.base ? "This node has no timers yet." : "Looking for a Pacer node…";
    else delete el.grid.dataset.empty;
    return next;
  }

  /**
   * Picks the number of columns that makes the cards largest while all fit on the screen
   * (a wall shows every timer without scrolling); phones get one scrolling column.
   */
  let gridKey = "";
  function layoutGrid(n) {
    const r = el.grid.getBoundingClientRect();
    const key = n + "|" + Math.round(r.width) + "x" + Math.round(r.height);
    if (key === gridKey || !n) return;
    gridKey = key;
    const gap = parseFloat(getComputedStyle(el.grid).rowGap) || 0;
    const W = r.width - 2 * gap, H = r.height - 2 * gap;
    const extra = 110 + (cfg.controls ? 64 : 0); // head, foot, bar (and the card's buttons) besides the digits (40cqw)
    const cardH = (w) => 0.42 * w + extra;
    let best = { cols: 1, w: W };
    if (W >= 600) {
      best = { cols: 1, w: 0 };
      for (let cols = 1; cols <= n; cols++) {
        const rows = Math.ceil(n / cols);
        let w = (W - (cols - 1) * gap) / cols;
        const tooTall = rows * cardH(w) + (rows - 1) * gap - H;
        if (tooTall > 0) w = ((H - (rows - 1) * gap) / rows - extra) / 0.42;
        if (w > best.w) best = { cols, w };
      }
      best.w = Math.max(260, Math.floor(best.w));
    }
    el.grid.style.gridTemplateColumns = W >= 600 ? "repeat(" + best.cols + ", " + best.w + "px)" : "";
  }

  function renderStatusLine() {
    const node = app.info ? app.info.node : cfg.node || (app.base ? app.base.split("/").pop() : "");
    let conn;
    if (!app.brokerUp) conn = "broker offline, retrying";
    else if (app.nodeOnline === false) conn = "node " + node + " offline";
    else conn = node ? "node " + node : "connected";
    setText(el.conn, conn);
    el.conn.dataset.ok = String(app.brokerUp && app.nodeOnline !== false);
    let sync = "";
    if (app.offset != null) {
      sync = app.syncMethod === "time" ? "clock ±" + Math.max(1, Math.round(app.rtt / 2)) + " ms"
        : app.syncing ? "syncing clock…" : "clock ≈ from states (no time reply)";
    }
    setText(el.sync, sync);
  }

  // ---- controls -----------------------------------------------------------------------

  /** Sends a button's command to a timer; a refusal or silence shows in the banner. Resolves with the reply. */
  async function timerCommand(timer, action, button) {
    if (!app.base || !timer) return null;
    const body = commandFor(action, nodeNow());
    if (button) button.classList.add("busy");
    const res = await request(app.base + "/timers/" + timer + "/cmd", body, 5000);
    if (button) button.classList.remove("busy");
    if (!res) showBanner(NO_ANSWER, "error");
    else if (res.reply.ok === false) showBanner((res.reply.error && res.reply.error.message) || "refused", "error");
    else hideBanner();
    return res;
  }

  function setupControls() {
    el.controls.addEventListener("click", async (e) => {
      const b = e.target.closest("button");
      if (!b || !cfg.timer || !app.base) return;
      if (b.dataset.ui === "setup") { openSetup("edit"); return; }
      if (!b.dataset.action) return;
      if (b.dataset.action === "delete") { deleteTimer(cfg.timer, b); return; }
      timerCommand(cfg.timer, b.dataset.action, b);
    });
  }

  /** Delete, once confirmed: the node clears the timer's retained topics; the page goes back to the grid. */
  async function deleteTimer(timer, button) {
    const st = app.timers.get(timer);
    const name = (st && st.name) || timer;
    const yes = await confirmDialog("Delete the timer “" + name + "”? Its run and its history on the node go with it.", "Delete");
    if (!yes) return;
    const res = await timerCommand(timer, "delete", button);
    if (res && res.reply.ok !== false) {
      app.timers.delete(timer);
      localStorage.removeItem(formKey(timer));
      if (cfg.timer === timer) go(null); else render();
      showBanner("Deleted “" + name + "”", "info");
    }
  }

  function setupGrid() {
    el.grid.addEventListener("click", (e) => {
      const card = e.target.closest(".card");
      if (!card) return;
      const b = e.target.closest("button[data-action]");
      if (b) { timerCommand(card.dataset.timer, b.dataset.action, b); return; }
      const a = e.target.closest("a.card-open");
      if (a && e.button === 0 && !e.metaKey && !e.ctrlKey && !e.shiftKey && !e.altKey) { e.preventDefault(); go(card.dataset.timer); }
    });
    el.newTimer.addEventListener("click", () => openSetup("new"));
    el.home.addEventListener("click", (e) => {
      if (e.button === 0 && !e.metaKey && !e.ctrlKey && !e.shiftKey) { e.preventDefault(); go(null); }
    });
  }

  function showBanner(text, kind) {
    el.banner.textContent = text;
    el.banner.dataset.kind = kind;
    el.banner.hidden = false;
    clearTimeout(app.bannerTimer);
    app.bannerTimer = setTimeout(hideBanner, kind === "info" ? 4000 : 8000);
  }
  function hideBanner() { el.banner.hidden = true; }

  /** A question with two answers in a modal dialog; resolves true for `yes`. */
  function confirmDialog(text, yes) {
    const d = $("confirm");
    setText($("confirm-text"), text);
    setText($("confirm-yes"), yes || "Delete");
    d.returnValue = "";
    return new Promise((resolve) => {
      d.addEventListener("close", () => resolve(d.returnValue === "yes"), { once: true });
      d.showModal();
      $("confirm-no").focus();
    });
  }

  for (const b of document.querySelectorAll("dialog [data-close]")) b.addEventListener("click", () => b.closest("dialog").close());

  // ---- set up: the form of every kind, presets and saved workouts ---------------------

  const make = (tag, cls, text) => { const n = document.createElement(tag); if (cls) n.className = cls; if (text != null) n.textContent = text; return n; };
  const formKey = (timer) => "pacer-form:" + app.base + ":" + timer;
  const canSave = () => !!(app.info && (app.info.capabilities || []).includes("workouts"));

  /** One labelled field of a kind (or of a preset's parameters), its hint and its error line. */
  function fieldEl(prefix, f, onInput) {
    const id = "f-" + prefix + "-" + f.key;
    const box = make("div", "field");
    box.dataset.field = f.key;
    let input;
    if (f.type === "bool") {
      box.className = "field check-field";
      const lab = make("label", "check");
      input = make("input"); input.type = "checkbox"; input.id = id;
      lab.append(input, document.createTextNode(" " + f.label));
      box.append(lab);
    } else {
      const lab = make("label", null, f.label); lab.htmlFor = id;
      input = make(f.type === "list" ? "textarea" : "input");
      input.id = id; input.name = f.key; input.autocomplete = "off";
      if (f.type === "list") input.rows = 2; else input.type = "text";
      input.inputMode = f.type === "count" || f.type === "hms" ? "numeric" : "text";
      if (f.type === "hms") input.placeholder = "HH:MM:SS";
      box.append(lab);
      if (f.step) {
        const row = make("div", "stepper");
        const less = make("button", "step", "−" + f.step / 1000 + " s"), more = make("button", "step", "+" + f.step / 1000 + " s");
        less.type = more.type = "button";
        less.setAttribute("aria-label", f.step / 1000 + " seconds less"); more.setAttribute("aria-label", f.step / 1000 + " seconds more");
        less.addEventListener("click", () => { input.value = F.stepDuration(input.value, -f.step); onInput(); });
        more.addEventListener("click", () => { input.value = F.stepDuration(input.value, f.step); onInput(); });
        row.append(less, input, more);
        box.append(row);
      } else box.append(input);
      if (f.hint) { const h = make("small", "hint", f.hint); h.id = "hint-" + prefix + "-" + f.key; box.append(h); }
      if (f.type === "hms") input.addEventListener("change", () => { const ms = F.parseHMS(input.value); if (ms != null && ms >= 0) input.value = F.hms(ms); });
    }
    const err = make("small", "err"); err.id = "err-" + prefix + "-" + f.key; err.setAttribute("aria-live", "polite");
    box.append(err);
    input.setAttribute("aria-describedby", (f.hint ? "hint-" + prefix + "-" + f.key + " " : "") + err.id);
    input.addEventListener("input", onInput);
    if (f.type === "bool") input.addEventListener("change", onInput);
    return { f, input, err, box };
  }

  function setErr(entry, message, fromNode) {
    if (!entry) return;
    entry.err.textContent = message || "";
    entry.err.classList.toggle("from-node", !!(message && fromNode));
    if (entry.input) entry.input.setAttribute("aria-invalid", message ? "true" : "false");
  }

  function setupForm() {
    const kinds = $("kinds"), box = $("kind-fields");
    for (const [kind, def] of Object.entries(F.KINDS)) {
      const lab = make("label", "kind");
      const r = make("input"); r.type = "radio"; r.name = "kind"; r.value = kind; r.id = "kind-" + kind;
      lab.append(r, make("span", null, def.label));
      kinds.append(lab);
      r.addEventListener("change", () => setKind(kind));
      const sec = make("section", "kind-fields");
      sec.dataset.kind = kind; sec.hidden = true;
      sec.append(make("p", "note", def.about));
      setup.fields[kind] = {};
      for (const f of def.fields) {
        const entry = fieldEl(kind, f, () => checkEntry(entry));
        setup.fields[kind][f.key] = entry;
        sec.append(entry.box);
      }
      if (kind === "program") {
        const ol = make("ol", "blocks"); ol.id = "blocks";
        const add = make("button", "add", "Add block"); add.type = "button"; add.id = "add-block";
        add.addEventListener("click", () => { addBlock({ kind: "work", duration: "1m", label: "" }); ol.lastElementChild.querySelector("select").focus(); });
        const err = make("small", "err"); err.id = "err-program-segments";
        setup.fields.program.segments = { err, input: null };
        sec.append(ol, add, err);
      }
      if (kind === "preset") {
        const saved = make("fieldset", "choices"); saved.id = "saved";
        saved.append(make("legend", null, "Saved workouts"), Object.assign(make("ul", "choice-list"), { id: "workout-list" }), Object.assign(make("p", "note"), { id: "workout-note" }));
        const presets = make("fieldset", "choices");
        presets.append(make("legend", null, "Presets"), Object.assign(make("ul", "choice-list"), { id: "preset-list" }),
          make("p", "note", "From the node's configuration and built in: read-only here."));
        const params = make("div", "params"); params.id = "preset-params";
        const err = make("small", "err"); err.id = "err-preset";
        setup.fields.preset.preset = { err, input: null };
        sec.append(saved, presets, params, err);
        for (const [p, def] of Object.entries(F.PRESETS)) {
          setup.params[p] = {};
          const group = make("div", "param-group"); group.dataset.preset = p; group.hidden = true;
          for (const f of def.params) {
            const entry = fieldEl("preset-" + p, f, () => checkEntry(entry));
            setup.params[p][f.key] = entry;
            group.append(entry.box);
          }
          params.append(group);
        }
      }
      box.append(sec);
    }
    const name = $("f-name"), id = $("f-id");
    setup.name = { input: name, err: $("err-name") };
    setup.id = { input: id, err: $("err-id") };
    setup.startAt = { input: $("f-start_at"), err: $("err-start_at") };
    name.addEventListener("input", () => {
      setup.nameAuto = false;
      if (setup.idAuto && setup.mode === "new") id.value = F.uniqueId(F.slug(name.value), takenIds());
      checkNameAndId();
    });
    id.addEventListener("input", () => { setup.idAuto = false; checkNameAndId(); });
    for (const r of document.querySelectorAll('#setup input[name="when"]')) r.addEventListener("change", () => {
      const at = whenAt();
      if (at && !setup.startAt.input.value) setup.startAt.input.value = clockOfDay(Date.now() + 5 * 60000);
      checkStartAt();
    });
    setup.startAt.input.addEventListener("input", () => { $("setup").querySelector('input[name="when"][value="at"]').checked = true; checkStartAt(); });
    $("setup-form").addEventListener("submit", (e) => { e.preventDefault(); submitStart(); });
    $("setup-save").addEventListener("click", saveAsWorkout);
    $("workout-list").addEventListener("click", onWorkoutListClick);
    for (const list of [$("workout-list"), $("preset-list")]) list.addEventListener("change", (e) => { if (e.target.name === "preset") choosePreset(e.target.value); });
    renderChoices();
  }

  const whenAt = () => !!$("setup").querySelector('input[name="when"][value="at"]:checked');
  const clockOfDay = (ms) => { const d = new Date(ms); return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, "0")).join(":"); };
  const takenIds = () => [...new Set([...(app.info && app.info.timers ? app.info.timers.map((t) => t.id) : []), ...app.timers.keys()])];

  function checkEntry(entry) {
    const c = F.checkField(entry.f, entry.f.type === "bool" ? entry.input.checked : entry.input.value);
    setErr(entry, c.error);
    return !c.error;
  }
  function checkNameAndId() {
    // One Name for the timer and the saved workout: "HIIT 45/15" is kept by a workout; the
    // timer is named "HIIT 45-15" (/ + # are MQTT topic characters, which a timer's name may not hold).
    const name = setup.name.input.value.trim();
    setErr(setup.name, !name && setup.mode === "edit" ? null : F.checkWorkoutName(name));
    if (setup.mode === "new") setErr(setup.id, F.checkId(setup.id.input.value, takenIds()));
    else setErr(setup.id, null);
  }
  function checkStartAt() {
    if (!whenAt()) { setErr(setup.startAt, null); return; }
    const at = F.startAtFromTime(setup.startAt.input.value, Date.now());
    setErr(setup.startAt, F.checkStartAt(at, Date.now()));
  }

  function setKind(kind) {
    setup.kind = kind;
    const r = $("kind-" + kind); if (r) r.checked = true;
    for (const sec of document.querySelectorAll("#kind-fields > section")) sec.hidden = sec.dataset.kind !== kind;
    if (setup.nameAuto && setup.mode === "new") {
      const p = kind === "preset" ? selectedPreset() : null;
      setAutoName(p ? presetLabel(p) : F.KINDS[kind].label);
    }
    $("setup-save").hidden = kind === "preset" || !canSave();
    setText($("err-form"), "");
  }

  function setAutoName(name) {
    setup.name.input.value = name;
    if (setup.idAuto && setup.mode === "new") setup.id.input.value = F.uniqueId(F.slug(name), takenIds());
    checkNameAndId();
  }

  const selectedPreset = () => { const r = $("setup").querySelector('input[name="preset"]:checked'); return r ? r.value : null; };
  function presetLabel(p) {
    const w = (app.workouts || []).find((x) => x.id === p);
    if (w) return F.timerName(w.name);
    return F.PRESETS[p] ? F.PRESETS[p].label : p;
  }
  function choosePreset(p) {
    for (const g of document.querySelectorAll("#preset-params .param-group")) g.hidden = g.dataset.preset !== p || (app.workouts || []).some((w) => w.id === p);
    setErr(setup.fields.preset.preset, null);
    if (setup.nameAuto && setup.mode === "new") setAutoName(presetLabel(p));
  }

  /** The presets (node's `info`) and the saved workouts (`<base>/workouts`) as choices. */
  function renderChoices() {
    const plist = $("preset-list"), wlist = $("workout-list");
    if (!plist) return;
    const chosen = selectedPreset();
    const workouts = app.workouts || [];
    const presets = (app.info && app.info.presets ? app.info.presets : Object.keys(F.PRESETS)).filter((p) => !workouts.some((w) => w.id === p));
    const item = (value, title, about, saved) => {
      const li = make("li", "choice");
      const lab = make("label", "check");
      const r = make("input"); r.type = "radio"; r.name = "preset"; r.value = value; r.checked = value === chosen;
      lab.append(r, make("span", "choice-name", title));
      li.append(lab);
      if (about) li.append(make("small", "choice-about", about));
      if (saved) {
        const edit = make("button", "small", "Edit"); edit.type = "button"; edit.dataset.edit = value; edit.setAttribute("aria-label", "Edit " + title);
        const rm = make("button", "small danger", "Remove"); rm.type = "button"; rm.dataset.remove = value; rm.setAttribute("aria-label", "Remove " + title);
        li.append(edit, rm);
      }
      li.dataset.choice = value;
      return li;
    };
    plist.replaceChildren(...presets.map((p) => item(p, F.PRESETS[p] ? F.PRESETS[p].label : p, F.PRESETS[p] ? F.PRESETS[p].about : "a preset of the node's configuration", false)));
    wlist.replaceChildren(...workouts.map((w) => item(w.id, w.name, F.summary(w.spec), true)));
    setText($("workout-note"), !canSave() ? "This node keeps no saved workouts (an older version)."
      : workouts.length ? "" : "None yet: set up a timer and tap Save as workout.");
    $("setup-save").hidden = setup.kind === "preset" || !canSave();
  }

  async function onWorkoutListClick(e) {
    const b = e.target.closest("button");
    if (!b) return;
    const w = (app.workouts || []).find((x) => x.id === (b.dataset.edit || b.dataset.remove));
    if (!w) return;
    if (b.dataset.edit) {
      const form = F.specToForm(w.spec);
      if (!form) { setText($("err-form"), "This workout's spec is not one the form knows"); return; }
      applyForm({ kind: form.kind, raw: form.raw, name: setup.mode === "new" ? F.timerName(w.name) : null });
      setup.nameAuto = false;
      return;
    }
    if (!(await confirmDialog("Remove the saved workout “" + w.name + "” from the node, for every phone?", "Remove"))) return;
    const res = await request(app.base + "/cmd", F.deleteWorkout(w.id), 5000);
    if (!res) setText($("err-form"), NO_ANSWER);
    else if (res.reply.ok === false) setText($("err-form"), res.reply.error.message);
    else formOk("Removed the workout “" + w.name + "” from the node");
  }

  // ---- program blocks ---

  function addBlock(b) {
    const ol = $("blocks");
    const li = make("li", "block");
    const n = () => [...ol.children].indexOf(li);
    const kindBox = make("div", "field"), durBox = make("div", "field"), labBox = make("div", "field");
    const sel = make("select");
    for (const [k, label] of F.BLOCK_KINDS) { const o = make("option", null, label); o.value = k; sel.append(o); }
    sel.value = b.kind || "work";
    const dur = make("input"); dur.type = "text"; dur.value = b.duration || ""; dur.placeholder = "open"; dur.autocomplete = "off";
    const lab = make("input"); lab.type = "text"; lab.value = b.label || ""; lab.autocomplete = "off";
    const kl = make("label", null, "Block"), dl = make("label", null, "Duration"), ll = make("label", null, "Label");
    kindBox.append(kl, sel); durBox.append(dl, dur); labBox.append(ll, lab);
    const errs = { kind: make("small", "err"), duration: make("small", "err"), label: make("small", "err") };
    kindBox.append(errs.kind); durBox.append(errs.duration); labBox.append(errs.label);
    const tools = make("div", "block-tools");
    const up = make("button", "small", "Up"), down = make("button", "small", "Down"), rm = make("button", "small danger", "Remove");
    for (const x of [up, down, rm]) x.type = "button";
    up.addEventListener("click", () => { if (li.previousElementSibling) ol.insertBefore(li, li.previousElementSibling); renumber(); up.focus(); });
    down.addEventListener("click", () => { if (li.nextElementSibling) ol.insertBefore(li.nextElementSibling, li); renumber(); down.focus(); });
    rm.addEventListener("click", () => { li.remove(); renumber(); });
    tools.append(up, down, rm);
    li.append(kindBox, durBox, labBox, tools);
    li._block = { sel, dur, lab, errs, up, down, rm, kl, dl, ll };
    const check = () => {
      const i = n();
      const d = F.checkField({ key: "duration", type: "duration", min: F.BLOCK_KINDS.find((k) => k[0] === sel.value)[2] }, dur.value, "segments[" + i + "].duration");
      setErr({ err: errs.duration, input: dur }, d.error);
      const l = F.checkField({ key: "label", type: "text" }, lab.value, "segments[" + i + "].label");
      setErr({ err: errs.label, input: lab }, l.error);
    };
    dur.addEventListener("input", check); lab.addEventListener("input", check); sel.addEventListener("change", check);
    ol.append(li);
    renumber();
  }

  /** Ids, labels and the buttons' names after an add, a removal or a move. */
  function renumber() {
    const rows = [...$("blocks").children];
    rows.forEach((li, i) => {
      const b = li._block, n = i + 1;
      b.sel.id = "f-block-" + n + "-kind"; b.kl.htmlFor = b.sel.id; b.kl.textContent = "Block " + n;
      b.dur.id = "f-block-" + n + "-duration"; b.dl.htmlFor = b.dur.id;
      b.lab.id = "f-block-" + n + "-label"; b.ll.htmlFor = b.lab.id;
      for (const k of ["kind", "duration", "label"]) { b.errs[k].id = "err-block-" + n + "-" + k; (k === "kind" ? b.sel : k === "duration" ? b.dur : b.lab).setAttribute("aria-describedby", b.errs[k].id); }
      b.up.setAttribute("aria-label", "Move block " + n + " up"); b.up.disabled = i === 0;
      b.down.setAttribute("aria-label", "Move block " + n + " down"); b.down.disabled = i === rows.length - 1;
      b.rm.setAttribute("aria-label", "Remove block " + n);
    });
  }

  const blocksRaw = () => [...$("blocks").children].map((li) => ({ kind: li._block.sel.value, duration: li._block.dur.value, label: li._block.lab.value }));

  // ---- the form's values ---

  /** Puts a kind and its texts in the form (defaults first). */
  function applyForm(o) {
    for (const [kind, fields] of Object.entries(setup.fields)) {
      for (const entry of Object.values(fields)) {
        if (!entry.f) { setErr(entry, null); continue; }
        const v = kind === o.kind && o.raw && o.raw[entry.f.key] != null ? o.raw[entry.f.key] : entry.f.value;
        if (entry.f.type === "bool") entry.input.checked = !!v; else entry.input.value = v == null ? "" : String(v);
        setErr(entry, null);
      }
    }
    for (const group of Object.values(setup.params)) for (const entry of Object.values(group)) {
      entry.input.value = entry.f.value == null ? "" : entry.f.value; setErr(entry, null);
    }
    $("blocks").replaceChildren();
    const blocks = o.kind === "program" && o.raw && o.raw.blocks ? o.raw.blocks : [{ kind: "work", duration: "5m", label: "" }, { kind: "rest", duration: "1m", label: "" }];
    for (const b of blocks) addBlock(b);
    for (const r of document.querySelectorAll('#setup input[name="preset"]')) r.checked = r.value === o.preset;
    if (o.preset) {
      choosePreset(o.preset);
      for (const [k, v] of Object.entries(o.params || {})) { const e = setup.params[o.preset] && setup.params[o.preset][k]; if (e) e.input.value = v; }
    }
    if (o.name != null) setup.name.input.value = o.name;
    setKind(o.kind || "interval");
    setText($("err-form"), "");
  }

  /** Opens the form: `new` from the grid, `edit` (Set up) on a timer's page. */
  function openSetup(mode) {
    setup.mode = mode;
    setup.timer = mode === "edit" ? cfg.timer : null;
    setup.nameAuto = mode === "new"; setup.idAuto = mode === "new";
    const st = setup.timer ? app.timers.get(setup.timer) : null;
    setText($("setup-title"), mode === "new" ? "New timer" : "Set up " + ((st && st.name) || setup.timer));
    setup.id.input.readOnly = mode === "edit";
    $("hint-id").hidden = mode === "edit";
    let saved = null;
    if (mode === "edit") { try { saved = JSON.parse(localStorage.getItem(formKey(setup.timer)) || "null"); } catch (e) { saved = null; } }
    const fromState = !saved && st ? F.stateToForm(st) : null;
    const kind = (saved && saved.kind) || (fromState && fromState.kind) || (mode === "new" && localStorage.getItem("pacer-kind")) || "interval";
    applyForm(Object.assign({ kind, raw: null }, fromState || {}, saved || {}, { name: mode === "edit" ? (st && st.name) || (saved && saved.name) || "" : null }));
    if (mode === "new") { setup.name.input.value = ""; setup.nameAuto = true; setKind(kind); }
    else setup.id.input.value = setup.timer;
    $("setup").querySelector('input[name="when"][value="now"]').checked = true;
    setup.startAt.input.value = "";
    setErr(setup.startAt, null); setErr(setup.name, null); setErr(setup.id, null);
    const running = st && (st.status === "running" || st.status === "paused");
    setText($("setup-note"), running ? "It is " + st.status + ": Start replaces the run." : "");
    setText($("err-form"), "");
    $("setup").showModal();
    $("setup").scrollTop = 0;
  }

  /** What the form says: the `buildStart` input. */
  function collect() {
    const kind = setup.kind;
    const raw = {};
    if (kind === "program") raw.blocks = blocksRaw();
    else for (const [k, entry] of Object.entries(setup.fields[kind] || {})) if (entry.f) raw[k] = entry.f.type === "bool" ? entry.input.checked : entry.input.value;
    const preset = kind === "preset" ? selectedPreset() : null;
    const params = {};
    if (preset && setup.params[preset] && !(app.workouts || []).some((w) => w.id === preset)) for (const [k, e] of Object.entries(setup.params[preset])) params[k] = e.input.value;
    const st = setup.timer ? app.timers.get(setup.timer) : null;
    return {
      kind, raw, preset, params,
      name: setup.name.input.value.trim(),
      id: setup.mode === "edit" ? setup.timer : setup.id.input.value.trim(),
      startAt: whenAt() ? F.startAtFromTime(setup.startAt.input.value, Date.now()) : null,
      restart: !!(st && (st.status === "running" || st.status === "paused")),
    };
  }

  /** The element a field key names (`work`, `segments[1].duration`, `name`…), for its error. */
  function errorEntry(key, kind, preset) {
    if (!key) return null;
    if (key === "name" || key === "workout") return setup.name;
    if (key === "id") return setup.id;
    if (key === "start_at") return setup.startAt;
    const seg = /^segments\[([0-9]+)\](?:\.([a-z_]+))?$/.exec(key);
    if (seg && kind === "program") {
      const li = $("blocks").children[Number(seg[1])];
      const which = seg[2] === "kind" ? "kind" : seg[2] === "label" ? "label" : "duration";
      if (li) return { err: li._block.errs[which], input: which === "kind" ? li._block.sel : which === "label" ? li._block.lab : li._block.dur };
    }
    if (kind === "preset" && preset && setup.params[preset] && setup.params[preset][key]) return setup.params[preset][key];
    if (setup.fields[kind] && setup.fields[kind][key]) return setup.fields[kind][key];
    if (key === "segments" && kind === "program") return setup.fields.program.segments;
    return null;
  }

  /** Shows errors ({key: message}) under their fields; the rest in the form's line. Focuses the first. */
  function showErrors(errors, o, fromNode) {
    let first = null;
    const general = [];
    for (const [key, message] of Object.entries(errors)) {
      const entry = errorEntry(key, o.kind, o.preset);
      if (entry) { setErr(entry, message, fromNode); if (!first && entry.input) first = entry.input; }
      else general.push(message);
    }
    setText($("err-form"), general.join(" "));
    $("err-form").classList.toggle("from-node", !!fromNode && general.length > 0);
    if (first) { first.focus(); if (first.scrollIntoView) first.scrollIntoView({ block: "center" }); }
  }

  function clearErrors() {
    setText($("setup-ok"), "");
    for (const fields of Object.values(setup.fields)) for (const e of Object.values(fields)) setErr(e, null);
    for (const g of Object.values(setup.params)) for (const e of Object.values(g)) setErr(e, null);
    for (const li of $("blocks").children) for (const k of ["kind", "duration", "label"]) setErr({ err: li._block.errs[k], input: null }, null);
    setErr(setup.name, null); setErr(setup.id, null); setErr(setup.startAt, null);
    setText($("err-form"), "");
  }

  /**
   * The form's `start`, sent on the timer's topic. The page's checks first (the node's rules);
   * what only the node knows comes back as its error, shown under the field it names.
   * `setup.unchecked` (tests) sends what was typed without the page's checks.
   */
  async function submitStart() {
    const o = collect();
    clearErrors();
    const built = F.buildStart(Object.assign({ unchecked: setup.unchecked }, o, { name: setup.unchecked ? o.name : F.timerName(o.name) }));
    const errors = Object.assign({}, built.errors);
    if (setup.mode === "new") { const e = F.checkId(o.id, takenIds()); if (e) errors.id = e; }
    if (Object.keys(errors).length && !setup.unchecked) { showErrors(errors, o, false); return; }
    const body = built.body;
    if (!body) { showErrors(errors, o, false); return; }
    if (!app.base) { setText($("err-form"), "No node yet"); return; }
    const btn = $("setup-start");
    btn.disabled = true; btn.classList.add("busy");
    const res = await request(app.base + "/timers/" + o.id + "/cmd", body, 5000);
    btn.disabled = false; btn.classList.remove("busy");
    if (!res) { setText($("err-form"), NO_ANSWER); return; }
    if (res.reply.ok === false) {
      const message = (res.reply.error && res.reply.error.message) || "refused";
      showErrors({ [F.fieldOfError(message) || "_"]: message }, o, true);
      return;
    }
    try {
      localStorage.setItem(formKey(o.id), JSON.stringify({ kind: o.kind, raw: o.raw, preset: o.preset, params: o.params, name: o.name }));
      localStorage.setItem("pacer-kind", o.kind);
    } catch (e) { /* private mode: nothing remembered */ }
    if (res.reply.state) { app.timers.set(o.id, res.reply.state); predictCues(o.id, res.reply.state); }
    $("setup").close();
    if (cfg.timer !== o.id) go(o.id); else render();
    hideBanner(); // the timer on the screen says it started (or when it will)
  }

  /** Save as workout: the form's spec kept on the node under the name, for every phone. */
  async function saveAsWorkout() {
    const o = collect();
    clearErrors();
    const s = F.buildSpec(o.kind, o.raw);
    const errors = Object.assign({}, s.errors);
    const nameErr = F.checkWorkoutName(o.name);
    if (nameErr) errors.name = nameErr;
    if (Object.keys(errors).length) { showErrors(errors, o, false); return; }
    const id = F.slug(o.name);
    const replaces = (app.workouts || []).find((w) => w.id === id);
    const res = await request(app.base + "/cmd", F.saveWorkout(id, o.name, s.spec), 5000);
    if (!res) { setText($("err-form"), NO_ANSWER); return; }
    if (res.reply.ok === false) {
      const message = (res.reply.error && res.reply.error.message) || "refused";
      showErrors({ [F.fieldOfError(message) || "_"]: message }, o, true);
      return;
    }
    formOk((replaces ? "Saved over the workout “" : "Saved the workout “") + o.name + "” on the node, for every phone");
  }

  /** A line in the form saying what was done (a banner would sit behind the form). */
  let okTimer = null;
  function formOk(text) {
    setText($("setup-ok"), text);
    clearTimeout(okTimer);
    okTimer = setTimeout(() => setText($("setup-ok"), ""), 6000);
  }

  // ---- signed in, not in the URL -------------------------------------------------------

  const loginKey = () => "pacer-login:" + cfg.broker;

  /** The broker account: `user`/`pass` in the URL (kiosks), else what the sign-in form kept. */
  function loadLogin() {
    if (cfg.user) return { user: cfg.user, pass: cfg.pass || "", from: "url" };
    for (const [store, from] of [[localStorage, "local"], [sessionStorage, "session"]]) {
      try {
        const v = JSON.parse(store.getItem(loginKey()) || "null");
        if (v && typeof v.user === "string" && v.user) return { user: v.user, pass: v.pass || "", from };
      } catch (e) { /* unreadable: none */ }
    }
    return null;
  }
  function forgetLogin() { try { localStorage.removeItem(loginKey()); sessionStorage.removeItem(loginKey()); } catch (e) { /* none */ } }

  let signing = null; // {user, pass, remember, resolve} while a sign-in waits for the broker

  function setupSignIn() {
    const d = $("signin");
    el.account.addEventListener("click", () => {
      setText($("signin-error"), "");
      showAccount();
      d.showModal();
      (app.login ? $("signout") : $("f-user")).focus();
    });
    $("signin-form").addEventListener("submit", (e) => { e.preventDefault(); signIn($("f-user").value.trim(), $("f-pass").value, $("f-remember").checked); });
    $("signout").addEventListener("click", signOut);
    app.client.on("connect", () => {
      if (signing) { const s = signing; signing = null; s.resolve(true); }
    });
    showAccount();
  }

  function showAccount() {
    const l = app.login;
    el.account.replaceChildren(...(l ? [make("span", "wide", "Signed in as "), document.createTextNode(l.user)] : [document.createTextNode("Sign in")]));
    el.account.title = l ? (l.from === "url" ? "from the page's address (a kiosk)" : "tap to sign out") : "a coach's account lets this page command the timers";
    setText($("signin-who"), l ? "Signed in as " + l.user + (l.from === "url" ? ", from the page's address (a kiosk link): take user and pass out of it to sign out." : l.from === "local" ? ", kept on this device." : ", until this tab closes.")
      : "Watching needs no account. Commands (start, pause, set up) need a coach's account on the broker.");
    $("signout").hidden = !l;
    $("signout").disabled = !!(l && l.from === "url");
    $("signin-go").textContent = l ? "Sign in as another" : "Sign in";
  }

  async function signIn(user, pass, remember) {
    if (!user) { setText($("signin-error"), "User name is required"); $("f-user").focus(); return; }
    setText($("signin-error"), "");
    const before = app.login;
    const btn = $("signin-go");
    btn.disabled = true;
    const ok = await new Promise((resolve) => {
      signing = { user, resolve };
      app.client.setCredentials(user, pass);
      setTimeout(() => { if (signing && signing.resolve === resolve) { signing = null; resolve(null); } }, 8000);
    });
    btn.disabled = false;
    if (ok === true) {
      app.login = { user, pass, from: remember ? "local" : "session" };
      forgetLogin();
      try { (remember ? localStorage : sessionStorage).setItem(loginKey(), JSON.stringify({ user, pass })); } catch (e) { /* private mode */ }
      $("f-pass").value = "";
      showAccount();
      $("signin").close();
      showBanner("Signed in as " + user, "info");
      return;
    }
    // Refused (or no answer): back to the account before.
    app.login = before;
    app.client.setCredentials(before ? before.user : undefined, before ? before.pass : undefined);
    setText($("signin-error"), ok === false ? "The broker refused " + user + ": wrong user name or password." : "No answer from the broker: try again.");
    showAccount();
  }

  function signOut() {
    if (!app.login || app.login.from === "url") return;
    forgetLogin();
    app.login = null;
    app.client.setCredentials(undefined, undefined);
    showAccount();
    $("signin").close();
    showBanner("Signed out: this page now only watches", "info");
  }

  function onClientError(err) {
    if (!err || !err.badCredentials) return;
    if (signing) { const s = signing; signing = null; s.resolve(false); return; }
    if (app.login && app.login.from !== "url") {
      // A kept sign-in the broker no longer takes (password changed): watch without it.
      const who = app.login.user;
      forgetLogin(); app.login = null; showAccount();
      app.client.setCredentials(undefined, undefined);
      showBanner("The broker refused the saved sign-in of " + who + ": signed out", "error");
    } else if (app.login) showBanner("The broker refused the account " + app.login.user + " given in the page's address", "error");
  }

  // ---- sound, vibration, the lock screen -----------------------------------------------

  function setupSound() {
    const want = cfg.sound || localStorage.getItem("pacer-sound") === "on";
    const show = () => {
      const on = sound.running;
      el.sound.setAttribute("aria-pressed", String(on));
      el.sound.textContent = on ? "Sound on" : want && !on && sound.enabled ? "Tap for sound" : "Sound off";
    };
    sound.onCue = (kind, timer) => vibrate(M.cue(kind).vibrate, kind, timer);
    el.sound.addEventListener("click", () => {
      if (sound.running) { sound.disable(); localStorage.setItem("pacer-sound", "off"); disableMedia(); }
      else {
        sound.enable(); localStorage.setItem("pacer-sound", "on");
        enableMedia(); askNotifications();
        setTimeout(() => { sound.test(); resched(); }, 100);
      }
      setTimeout(show, 150);
    });
    if (want) { sound.enable(); setTimeout(() => { resched(); show(); }, 300); }
    setInterval(show, 2000);
    show();
  }
  function resched() { for (const [id, st] of app.timers) predictCues(id, st); }

  // ---- the flash at each cue ---

  /**
   * On by `?flash=1|0`, else by the footer's Flash button (kept on this device), else by the
   * screen: walls flash, phones do not (flash.js's defaultOn). Reduced motion follows the
   * system's setting, live.
   */
  function setupFlash() {
    const kept = localStorage.getItem("pacer-flash");
    const coarse = !!(window.matchMedia && matchMedia("(pointer: coarse)").matches);
    const on = cfg.flash === "1" ? true : cfg.flash === "0" ? false : kept === "on" ? true : kept === "off" ? false
      : Flash.defaultOn({ controls: cfg.controls, coarse, width: screen.width, height: screen.height });
    const rm = window.matchMedia ? matchMedia("(prefers-reduced-motion: reduce)") : null;
    const motion = () => { flash.reduced = !!(rm && rm.matches); };
    motion();
    if (rm && rm.addEventListener) rm.addEventListener("change", motion);
    const show = () => {
      el.flashToggle.setAttribute("aria-pressed", String(flash.enabled));
      el.flashToggle.textContent = flash.enabled ? "Flash on" : "Flash off";
    };
    el.flashToggle.addEventListener("click", () => {
      flash.setEnabled(!flash.enabled);
      localStorage.setItem("pacer-flash", flash.enabled ? "on" : "off");
      if (flash.enabled) resched();
      show();
    });
    flash.setEnabled(on);
    show();
    if (on) setTimeout(resched, 300);
  }

  /** One flash on the overlay (over everything, never in the way of a tap). */
  function showFlash(kind, look) {
    el.flash.dataset.kind = kind;
    if (el.flash.animate) el.flash.animate(look.keyframes, { duration: look.durationMs, easing: "ease-out" });
  }

  // ---- the node's speaker ---

  /** The footer's Node speaker: a toggle labelled by its state and a volume slider, from <base>/sound. */
  function renderSpeaker() {
    const v = S.speakerView(app.speaker, { controls: cfg.controls });
    el.speakerBox.hidden = v.hidden;
    if (v.hidden) return;
    setText(el.speaker, v.label);
    el.speaker.setAttribute("aria-pressed", String(v.pressed));
    el.speaker.title = v.title;
    // Not while a finger is on the slider: the retained value follows the command.
    if (!el.speakerVolume.matches(":active")) el.speakerVolume.value = String(v.volume);
    el.speakerVolume.setAttribute("aria-valuetext", v.volume + " %");
    el.speakerVolume.title = v.volumeLabel;
  }

  async function speakerCommand(body, control) {
    if (!app.base || !body) return;
    control.classList.add("busy");
    const res = await request(app.base + "/cmd", body, 5000);
    control.classList.remove("busy");
    if (!res) showBanner(NO_ANSWER, "error");
    else if (res.reply.ok === false) showBanner((res.reply.error && res.reply.error.message) || "refused", "error");
    else hideBanner();
  }

  function setupSpeaker() {
    el.speaker.addEventListener("click", () => {
      if (app.speaker) speakerCommand(S.muteCommand(!app.speaker.muted), el.speaker);
    });
    el.speakerVolume.addEventListener("change", () => speakerCommand(S.volumeCommand(el.speakerVolume.value), el.speakerVolume));
    renderSpeaker();
  }

  function vibrate(pattern, kind, timer) {
    app.vibrations.push({ at: localNow(), kind, timer, pattern });
    if (app.vibrations.length > 50) app.vibrations.shift();
    // Browsers vibrate only for a page the person has tapped (Sound on is such a tap).
    const tapped = !navigator.userActivation || navigator.userActivation.hasBeenActive;
    if (navigator.vibrate && tapped) { try { navigator.vibrate(pattern); } catch (e) { /* not allowed */ } }
  }

  /**
   * The lock screen (Media Session): once sound is on (a tap), a silent looping audio element
   * gives the page a media session; its metadata follows the shown timer (or the grid's
   * running one) at every flip, and its keys command that timer.
   */
  function enableMedia() {
    if (!("mediaSession" in navigator)) return;
    media.enabled = true;
    if (!media.audio) {
      const url = URL.createObjectURL(new Blob([M.silentWav(10)], { type: "audio/wav" }));
      media.audio = new Audio(url);
      media.audio.loop = true;
    }
    media.audio.play().catch(() => { /* no gesture: the lock screen stays empty */ });
    for (const key of M.ACTIONS) {
      const handler = (details) => {
        const t = media.timer, st = t ? app.timers.get(t) : null;
        const action = M.actionFor(key, st);
        return action ? timerCommand(t, action, null) : Promise.resolve(null);
      };
      try { navigator.mediaSession.setActionHandler(key, handler); media.handlers[key] = handler; } catch (e) { /* not supported here */ }
    }
    media.text = ""; media.positionKey = "";
    updateMedia();
  }

  function disableMedia() {
    media.enabled = false;
    if (media.audio) media.audio.pause();
    if ("mediaSession" in navigator) {
      for (const key of Object.keys(media.handlers)) { try { navigator.mediaSession.setActionHandler(key, null); } catch (e) { /* ignore */ } }
      media.handlers = {};
      navigator.mediaSession.metadata = null;
      navigator.mediaSession.playbackState = "none";
    }
  }

  /** The timer the lock screen shows: this page's, or in the grid the running (else paused, ringing) one. */
  function mediaTimer() {
    if (cfg.timer) return cfg.timer;
    for (const s of ["running", "expired", "paused", "scheduled"]) for (const [id, st] of app.timers) if (st.status === s) return id;
    return null;
  }

  function updateMedia() {
    if (!media.enabled || !("mediaSession" in navigator)) return;
    const id = mediaTimer(), st = id ? app.timers.get(id) || null : null;
    media.timer = id;
    const view = st ? viewOf(st) : { phase: "idle" };
    const meta = M.metadata(st, view);
    if (meta.text !== media.text) {
      media.text = meta.text;
      try {
        navigator.mediaSession.metadata = new MediaMetadata({ title: meta.title, artist: meta.artist, album: meta.album,
          artwork: [{ src: "icon-192.png", sizes: "192x192", type: "image/png" }, { src: "icon-512.png", sizes: "512x512", type: "image/png" }] });
      } catch (e) { /* ignore */ }
    }
    navigator.mediaSession.playbackState = M.playbackState(st);
    const key = st ? id + ":" + st.revision + ":" + st.status + ":" + Math.round(app.offset || 0) : "";
    if (key !== media.positionKey && navigator.mediaSession.setPositionState) {
      media.positionKey = key;
      const pos = M.position(st, nodeNow());
      try { if (pos) navigator.mediaSession.setPositionState(pos); else navigator.mediaSession.setPositionState(); } catch (e) { /* ignore */ }
      media.position = pos;
    }
  }

  // ---- notifications ---

  function askNotifications() {
    if (!("Notification" in window) || Notification.permission !== "default") return;
    try { const p = Notification.requestPermission(); if (p && p.catch) p.catch(() => {}); } catch (e) { /* old API */ }
  }

  /** Shows `n` ({title, body, tag}) where the page may: through the service worker (phones), else the page. */
  function notify(n) {
    app.notes.push(Object.assign({ at: localNow() }, n));
    if (app.notes.length > 20) app.notes.shift();
    if (!("Notification" in window) || Notification.permission !== "granted") return;
    const opts = { body: n.body, tag: n.tag, renotify: true, icon: "icon-192.png", badge: "icon-192.png", data: { url: location.href } };
    const page = () => { try { new Notification(n.title, opts); } catch (e) { /* a phone without the worker */ } };
    if (navigator.serviceWorker && navigator.serviceWorker.controller) {
      navigator.serviceWorker.ready.then((r) => r.showNotification(n.title, opts)).catch(page);
    } else page();
  }

  // ---- wake lock ---

  /** Wall screens (no controls, or ?wake=1) stay awake; a phone while its timer runs. */
  function updateWake() {
    if (!("wakeLock" in navigator)) return;
    const st = cfg.timer ? app.timers.get(cfg.timer) : null;
    wake.want = cfg.wake === "0" ? false : !cfg.controls || cfg.wake === "1" || !!(st && (st.status === "running" || st.status === "expired"));
    const refusedLately = wake.refusedAt && localNow() - wake.refusedAt < 30000; // not again at every flip
    if (wake.want && !wake.lock && !wake.pending && !document.hidden && !refusedLately) {
      wake.pending = true;
      navigator.wakeLock.request("screen").then((lock) => {
        wake.pending = false; wake.error = null; wake.lock = lock;
        lock.addEventListener("release", () => { if (wake.lock === lock) wake.lock = null; });
        if (!wake.want) { lock.release(); }
      }, (e) => { wake.pending = false; wake.refusedAt = localNow(); wake.error = String(e && e.message || e); });
    } else if (!wake.want && wake.lock) {
      const l = wake.lock; wake.lock = null; l.release().catch(() => {});
    }
  }

  // ---- installable: the service worker ---

  function registerServiceWorker() {
    if (!("serviceWorker" in navigator) || !window.isSecureContext || q.get("sw") === "0") { app.sw = { state: "unavailable" }; return; }
    app.sw = { state: "registering" };
    // A secure context only (HTTPS, or http://localhost): a phone on http://<pi>/ has none.
    navigator.serviceWorker.register("sw.js").then((r) => { app.sw = { state: "registered", scope: r.scope }; },
      (e) => { app.sw = { state: "failed", error: String(e && e.message || e) }; });
  }

  const soundTimer = (id) => cfg.timer == null || cfg.timer === id;

  /** The cue a segment of this phase starts with. */
  function phaseCue(phase) {
    if (phase === "work" || phase === "countdown" || phase === "session") return "work";
    if (phase === "rest" || phase === "set_rest" || phase === "cooldown") return "rest";
    if (phase === "prepare") return "prepare";
    return null;
  }

  /**
   * The cue that sounds when a running segment ends, from the snapshot: the next segment's
   * start cue (`next_phase`), else on the last segment the alarm (`ack`: it expires) or the
   * finish. A node older than these fields: the interval timer's next phase, guessed.
   */
  function endCue(st) {
    if ("ack" in st) {
      if (st.next_phase) return phaseCue(st.next_phase);
      return st.ack ? "alert" : "finish";
    }
    const lastRound = st.round >= st.rounds, lastSet = st.set >= st.sets;
    if (st.kind !== "interval" || st.segment >= st.segments) return null;
    if (st.phase === "work" && !(lastRound && lastSet)) return "rest";
    if ((st.phase === "prepare" || st.phase === "set_rest") || (st.phase === "rest" && !lastRound)) return "work";
    return null;
  }

  /**
   * Schedules the cues a running state makes certain, ahead of time: the countdown cues
   * before the segment ends and the cue of its end (`endCue`). Events confirm them (or add
   * the ones that could not be foreseen). A new state cancels the cues it no longer implies
   * (pause, adjust, skip).
   */
  function predictCues(id, st) {
    const sinks = cueSinks();
    if (!sinks.length) return;
    const want = new Map();
    if (soundTimer(id) && app.offset != null && st.status === "running" && st.ends_at_ms != null && !st.counts_up) {
      for (const c of cfg.cues) want.set(id + ":count:" + (st.ends_at_ms - c * 1000), ["count", st.ends_at_ms - c * 1000]);
      const nextCue = endCue(st);
      if (nextCue) want.set(id + ":" + nextCue + ":" + st.ends_at_ms, [nextCue, st.ends_at_ms]);
    }
    for (const s of sinks) {
      s.cancel((e, key) => e.timer === id && e.predicted && !want.has(key));
      for (const [key, [kind, due]] of want) {
        const local = due - app.offset;
        if (local > localNow() + 20) s.schedule(key, kind, local, id, true);
      }
    }
  }

  function onEvent(id, ev) {
    // A notification for an expiry or a rest's end, where the page may show one (not for
    // events replayed long after they were due).
    const before = app.phaseOf.get(id);
    if (ev.phase) app.phaseOf.set(id, ev.phase);
    else if (["finished", "cancelled", "reset", "expired"].includes(ev.type)) app.phaseOf.set(id, ev.type);
    const fresh = ev.late_ms == null && (app.offset == null || ev.due_ms == null || nodeNow() - ev.due_ms < 30000);
    if (fresh && soundTimer(id)) { const n = M.notification(ev, app.timers.get(id), before); if (n) notify(n); }

    if (ev.type === "finished" || ev.type === "cancelled" || ev.type === "reset" || ev.type === "paused") {
      // A completed run's finish keeps the cue foreseen for its very instant (the finish itself).
      const at = ev.type === "finished" && ev.reason === "completed" && ev.due_ms != null && app.offset != null ? ev.due_ms - app.offset : null;
      for (const s of [sound, flash]) s.cancel((e) => e.timer === id && e.predicted && (at == null || Math.abs(e.dueLocal - at) > 60));
    }
    const sinks = cueSinks();
    if (!sinks.length || !soundTimer(id) || app.offset == null || ev.due_ms == null) return;
    let kind = null;
    switch (ev.type) {
      case "countdown": kind = "count"; break;
      case "started": case "phase": case "skipped": case "rewound": kind = phaseCue(ev.phase); break;
      case "finished": kind = ev.reason === "acknowledged" || ev.reason === "auto_dismissed" ? null : "finish"; break;
      case "expired": case "alert": kind = "alert"; break;
      default: kind = null;
    }
    if (!kind) return;
    const dueLocal = ev.due_ms - app.offset;
    for (const s of sinks) {
      if (s.find(id, kind, dueLocal, 60)) continue; // foreseen: already scheduled at its instant
      // A different cue foreseen for this instant was a wrong guess: replace it if not started.
      s.cancel((e) => e.timer === id && e.predicted && Math.abs(e.dueLocal - dueLocal) <= 60);
      s.schedule(id + ":" + kind + ":" + ev.due_ms + ":" + ev.revision, kind, dueLocal, id, false);
    }
  }

  start();
})();
