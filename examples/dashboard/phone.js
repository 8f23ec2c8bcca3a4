// phone.js: the coach's phone in the pocket: the lock screen (Media Session: the shown
// timer's text, position and keys), vibration at each cue, the notifications of a rest's end
// and an expiry, and the screen kept awake (Screen Wake Lock). What each says or sends is
// media.js's (tested in Node); this file gives it to the browser's APIs. See
// docs/dashboard.md, "The lock screen and the pocket".
import * as M from "./media.js";

/**
 * `cfg`: the page's settings (`timer`, `controls`, `wake`); `conn`: connection.js's; `view(st)`:
 * views.js's viewOf with the page's connection; `command(timer, action, button)`:
 * controls.js's; `localNow()`: the page's clock; `forTimer(id)`: whether this screen's cues
 * and notices are for that timer.
 */
function createPhone({ cfg, conn, view, command, localNow, forTimer }) {
  const media = { enabled: false, audio: null, handlers: {}, text: "", positionKey: "", timer: null };
  const wake = { want: false, lock: null, error: null, pending: false, refusedAt: 0 };
  const notes = [], vibrations = []; // the latest notices and vibrations, for people debugging and the tests

  function vibrate(pattern, kind, timer) {
    vibrations.push({ at: localNow(), kind, timer, pattern });
    if (vibrations.length > 50) vibrations.shift();
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
        const t = media.timer, st = t ? conn.node.timers.get(t) : null;
        const action = M.actionFor(key, st);
        return action ? command(t, action, null) : Promise.resolve(null);
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
    for (const s of ["running", "expired", "paused", "scheduled"]) for (const [id, st] of conn.node.timers) if (st.status === s) return id;
    return null;
  }

  function updateMedia() {
    if (!media.enabled || !("mediaSession" in navigator)) return;
    const id = mediaTimer(), st = id ? conn.node.timers.get(id) || null : null;
    media.timer = id;
    const v = st ? view(st) : { phase: "idle" };
    const meta = M.metadata(st, v);
    if (meta.text !== media.text) {
      media.text = meta.text;
      try {
        navigator.mediaSession.metadata = new MediaMetadata({ title: meta.title, artist: meta.artist, album: meta.album,
          artwork: [{ src: "icon-192.png", sizes: "192x192", type: "image/png" }, { src: "icon-512.png", sizes: "512x512", type: "image/png" }] });
      } catch (e) { /* ignore */ }
    }
    navigator.mediaSession.playbackState = M.playbackState(st);
    const key = st ? id + ":" + st.revision + ":" + st.status + ":" + Math.round(conn.clock.offset || 0) : "";
    if (key !== media.positionKey && navigator.mediaSession.setPositionState) {
      media.positionKey = key;
      const pos = M.position(st, conn.nodeNow());
      try { if (pos) navigator.mediaSession.setPositionState(pos); else navigator.mediaSession.setPositionState(); } catch (e) { /* ignore */ }
      media.position = pos;
    }
  }

  function askNotifications() {
    if (!("Notification" in window) || Notification.permission !== "default") return;
    try { const p = Notification.requestPermission(); if (p && p.catch) p.catch(() => {}); } catch (e) { /* old API */ }
  }

  /** Shows `n` ({title, body, tag}) where the page may: through the service worker (phones), else the page. */
  function notify(n) {
    notes.push(Object.assign({ at: localNow() }, n));
    if (notes.length > 20) notes.shift();
    if (!("Notification" in window) || Notification.permission !== "granted") return;
    const opts = { body: n.body, tag: n.tag, renotify: true, icon: "icon-192.png", badge: "icon-192.png", data: { url: location.href } };
    const page = () => { try { new Notification(n.title, opts); } catch (e) { /* a phone without the worker */ } };
    if (navigator.serviceWorker && navigator.serviceWorker.controller) {
      navigator.serviceWorker.ready.then((r) => r.showNotification(n.title, opts)).catch(page);
    } else page();
  }

  /**
   * A notification for an expiry or a rest's end (`before`: the phase before the event), where
   * the page may show one: not for events replayed long after they were due.
   */
  function noticeEvent(id, ev, before) {
    const now = conn.nodeNow();
    const fresh = ev.late_ms == null && (conn.clock.offset == null || ev.due_ms == null || now - ev.due_ms < 30000);
    if (fresh && forTimer(id)) { const n = M.notification(ev, conn.node.timers.get(id), before); if (n) notify(n); }
  }

  /** Wall screens (no controls, or ?wake=1) stay awake; a phone while its timer runs. */
  function updateWake() {
    if (!("wakeLock" in navigator)) return;
    const st = cfg.timer ? conn.node.timers.get(cfg.timer) : null;
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

  return { media, wake, notes, vibrations, vibrate, enableMedia, disableMedia, updateMedia, askNotifications, notify, noticeEvent, updateWake };
}

export { createPhone };
