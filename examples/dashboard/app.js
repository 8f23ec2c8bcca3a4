// The Pacer wall clock: subscribes to a node's topics over MQTT/WebSockets, counts down
// locally from `ends_at_ms` with the measured clock offset, flips digits at the exact
// instants, plays WebAudio cues on the events' `due_ms`, and sends the coach's commands.
// What a timer shows and what a button sends: clock.js (PacerClock). See docs/dashboard.md.
// Plain script, no build step.
(function () {
  "use strict";

  // ---- settings from the URL ------------------------------------------------------
  const q = new URLSearchParams(location.search);
  const defaultBroker = location.protocol === "https:" ? "wss://" + location.host
    : location.protocol === "http:" ? "ws://" + location.host : "ws://127.0.0.1:9001";
  const cfg = {
    broker: q.get("broker") || defaultBroker,
    node: q.get("node") || null,
    base: q.get("base") || null,
    timer: q.get("timer") || null,
    controls: q.get("controls") !== "0",
    sound: q.get("sound") === "1",
    mqtt: q.get("mqtt") === "3.1.1" ? 4 : 5,
    user: q.get("user"), pass: q.get("pass"),
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
    grid: $("grid"), banner: $("banner"), conn: $("conn"), sync: $("sync"), sound: $("sound"), home: $("home"),
  };

  const PHASE_TEXT = {
    idle: "Ready", scheduled: "Starts in", prepare: "Get ready", work: "Work", rest: "Rest",
    set_rest: "Set rest", cooldown: "Cool down", countdown: "Countdown", session: "Session",
    overtime: "Overtime", paused: "Paused", expired: "Time's up", finished: "Finished",
    cancelled: "Cancelled", offline: "Offline", syncing: "Syncing",
  };

  // ---- state ------------------------------------------------------------------------
  const app = {
    client: null, base: null, nodeOnline: null, brokerUp: false,
    info: null, timers: new Map(),            // id -> latest state snapshot
    offset: null, rtt: null, syncMethod: null, // node clock = local clock + offset
    syncVia: null,                            // the topic whose clock requests were last answered
    lastSync: 0, syncing: false, pending: new Map(), seq: 0,
    bannerTimer: null, flipTimer: null,
  };
  const { valueAt, fmt, commandFor } = PacerClock; // clock.js: the counting rule, the clock text, the buttons' commands
  const sound = new PacerSound.Sound(localNow, cfg.lagMs);
  window.pacerDashboard = { app, cfg, sound, localNow, nodeNow }; // for people debugging, and the tests

  function nodeNow() { return app.offset == null ? null : localNow() + app.offset; }

  // ---- MQTT -------------------------------------------------------------------------
  const clientId = "pacer-dash-" + Math.random().toString(36).slice(2, 10);
  const replyTopic = () => app.base + "/reply/" + clientId;

  function start() {
    el.body.dataset.view = cfg.timer ? "single" : "grid";
    el.body.classList.toggle("no-controls", !cfg.controls);
    app.client = new PacerMQTT.Client(cfg.broker, {
      protocolVersion: cfg.mqtt, clientId, keepalive: 10,
      username: cfg.user || undefined, password: cfg.pass || undefined,
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
    app.client.on("message", onMessage);
    setInterval(() => { if (app.brokerUp && app.base && localNow() - app.lastSync > cfg.resyncMs) resync(); }, 5000);
    document.addEventListener("visibilitychange", () => { if (!document.hidden && app.brokerUp && app.base) resync(); });
    setupControls();
    setupSound();
    window.addEventListener("resize", render);
    el.digits.addEventListener("dblclick", () => {
      if (document.fullscreenElement) document.exitFullscreen();
      else if (document.documentElement.requestFullscreen) document.documentElement.requestFullscreen().catch(() => {});
    });
    render();
  }

  function setBase(base) {
    app.base = base;
    app.syncVia = null;
    const subs = [base + "/status", base + "/info", base + "/timers/+/state", base + "/timers/+/event", base + "/reply", replyTopic()];
    app.client && app.client.subscribe(subs, 1);
    if (app.client && app.client.connected) resync();
    el.home.href = "?" + linkParams({ timer: null });
  }

  function linkParams(over) {
    const p = new URLSearchParams(location.search);
    for (const [k, v] of Object.entries(over)) { if (v == null) p.delete(k); else p.set(k, v); }
    if (!p.get("node") && app.info) p.set("node", app.info.node);
    return p.toString();
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
    if (rel === "info") { if (msg.payload) { try { app.info = JSON.parse(msg.payload); } catch (e) { /* ignore */ } } render(); return; }
    if (rel === "reply" || rel.startsWith("reply/")) { onReply(msg, arrival); return; }
    const t = /^timers\/([^/]+)\/(state|event)$/.exec(rel);
    if (!t) return;
    if (t[2] === "state") {
      if (!msg.payload) { app.timers.delete(t[1]); sound.cancel((e) => e.timer === t[1]); render(); return; }
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
      const props = cfg.mqtt === 5 ? { responseTopic: replyTopic(), correlationData: id, contentType: "application/json" } : undefined;
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
        if (moved) sound.cancel((e) => e.predicted); // foreseen cues move with the offset
        for (const [id, st] of app.timers) predictCues(id, st);
      } else if (app.syncMethod === "time") {
        app.lastSync = localNow(); // keep the last good offset; try again later
      }
    } finally { app.syncing = false; render(); }
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
      setText(el.label, view.why || ""); setText(el.next, "");
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

  function updateControls(st, live) {
    const ok = live && app.brokerUp && app.nodeOnline !== false;
    for (const b of el.controls.querySelectorAll("button")) b.disabled = !ok;
    if (!st) return;
    const s = st.status;
    el.toggle.textContent = s === "running" ? "Pause" : s === "paused" ? "Resume" : "Start";
    el.toggle.dataset.action = s === "running" ? "pause" : s === "paused" ? "resume" : "start";
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
    let next = null;
    const seen = new Set();
    for (const id of ids) {
      seen.add(id);
      let card = el.grid.querySelector('[data-timer="' + CSS.escape(id) + '"]');
      if (!card) {
        card = document.createElement("a");
        card.className = "card";
        card.dataset.timer = id;
        card.innerHTML = '<div class="card-head"><span class="card-name"></span><span class="card-phase"></span></div><div class="card-digits"></div><div class="card-foot"><span class="card-label"></span><span class="card-round"></span></div><div class="card-bar"><div></div></div>';
        el.grid.appendChild(card);
      }
      card.href = "?" + linkParams({ timer: id });
      const st = app.timers.get(id);
      const view = viewOf(st);
      const infoName = app.info && (app.info.timers || []).find((t) => t.id === id);
      card.dataset.phase = view.phase;
      setText(card.querySelector(".card-name"), (st && st.name) || (infoName && infoName.name) || id);
      setText(card.querySelector(".card-phase"), PHASE_TEXT[view.phase] || view.phase);
      const cd = card.querySelector(".card-digits"), ct = view.text || "--:--";
      setText(cd, ct);
      cd.dataset.len = String(Math.max(4, ct.length));
      setText(card.querySelector(".card-label"), st && view.text ? st.label || "" : "");
      setText(card.querySelector(".card-round"), st && view.text && st.rounds > 1 ? st.round + "/" + st.rounds : "");
      card.querySelector(".card-bar div").style.width = (view.v && view.v.progress != null ? view.v.progress * 100 : 0).toFixed(2) + "%";
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
    const cardH = (w) => 0.42 * w + 110; // head, digits (40cqw), foot, bar
    let best = { cols: 1, w: W };
    if (W >= 600) {
      best = { cols: 1, w: 0 };
      for (let cols = 1; cols <= n; cols++) {
        const rows = Math.ceil(n / cols);
        let w = (W - (cols - 1) * gap) / cols;
        const tooTall = rows * cardH(w) + (rows - 1) * gap - H;
        if (tooTall > 0) w = ((H - (rows - 1) * gap) / rows - 110) / 0.42;
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

  function setupControls() {
    el.controls.addEventListener("click", async (e) => {
      const b = e.target.closest("button[data-action]");
      if (!b || !cfg.timer || !app.base) return;
      const body = commandFor(b.dataset.action, nodeNow());
      b.classList.add("busy");
      const res = await request(app.base + "/timers/" + cfg.timer + "/cmd", body, 5000);
      b.classList.remove("busy");
      if (!res) showBanner("No answer from the timer node (is it online?)", "error");
      else if (res.reply.ok === false) showBanner((res.reply.error && res.reply.error.message) || "refused", "error");
      else hideBanner();
    });
  }

  function showBanner(text, kind) {
    el.banner.textContent = text;
    el.banner.dataset.kind = kind;
    el.banner.hidden = false;
    clearTimeout(app.bannerTimer);
    app.bannerTimer = setTimeout(hideBanner, 8000);
  }
  function hideBanner() { el.banner.hidden = true; }

  // ---- sound ----------------------------------------------------------------------------

  function setupSound() {
    const want = cfg.sound || localStorage.getItem("pacer-sound") === "on";
    const show = () => {
      const on = sound.running;
      el.sound.setAttribute("aria-pressed", String(on));
      el.sound.textContent = on ? "Sound on" : want && !on && sound.enabled ? "Tap for sound" : "Sound off";
    };
    el.sound.addEventListener("click", () => {
      if (sound.running) { sound.disable(); localStorage.setItem("pacer-sound", "off"); }
      else { sound.enable(); localStorage.setItem("pacer-sound", "on"); setTimeout(() => { sound.test(); resched(); }, 100); }
      setTimeout(show, 150);
    });
    if (want) { sound.enable(); setTimeout(() => { resched(); show(); }, 300); }
    setInterval(show, 2000);
    show();
  }
  function resched() { for (const [id, st] of app.timers) predictCues(id, st); }

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
    if (!sound.running) return;
    const want = new Map();
    if (soundTimer(id) && app.offset != null && st.status === "running" && st.ends_at_ms != null && !st.counts_up) {
      for (const c of cfg.cues) want.set(id + ":count:" + (st.ends_at_ms - c * 1000), ["count", st.ends_at_ms - c * 1000]);
      const nextCue = endCue(st);
      if (nextCue) want.set(id + ":" + nextCue + ":" + st.ends_at_ms, [nextCue, st.ends_at_ms]);
    }
    sound.cancel((e, key) => e.timer === id && e.predicted && !want.has(key));
    for (const [key, [kind, due]] of want) {
      const local = due - app.offset;
      if (local > localNow() + 20) sound.schedule(key, kind, local, id, true);
    }
  }

  function onEvent(id, ev) {
    if (ev.type === "finished" || ev.type === "cancelled" || ev.type === "reset" || ev.type === "paused") {
      // A completed run's finish keeps the cue foreseen for its very instant (the finish itself).
      const at = ev.type === "finished" && ev.reason === "completed" && ev.due_ms != null && app.offset != null ? ev.due_ms - app.offset : null;
      sound.cancel((e) => e.timer === id && e.predicted && (at == null || Math.abs(e.dueLocal - at) > 60));
    }
    if (!sound.running || !soundTimer(id) || app.offset == null || ev.due_ms == null) return;
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
    if (sound.find(id, kind, dueLocal, 60)) return; // foreseen: already scheduled at its instant
    // A different cue foreseen for this instant was a wrong guess: replace it if not started.
    sound.cancel((e) => e.timer === id && e.predicted && Math.abs(e.dueLocal - dueLocal) <= 60);
    sound.schedule(id + ":" + kind + ":" + ev.due_ms + ":" + ev.revision, kind, dueLocal, id, false);
  }

  start();
})();
