// The dashboard's service worker: keeps the page's files, so that the page opens from a
// home-screen icon (or a reload) even while the server that serves it is down or still
// coming up (a Pi booting). The page then waits for the broker by itself, showing "broker
// offline, retrying".
//
// Network first, the cache when the network fails or is slow (3 s): a gym LAN answers in
// milliseconds, so the page is always the one the server has when it is up, and the files are
// kept fresh on every load; no version to bump. Only the page's own files (same origin, GET)
// are handled; the MQTT WebSocket (the `mqtt` path) is not a fetch.
//
// A browser runs a service worker only when it comes with a JavaScript Content-Type over
// HTTPS (or http://localhost): lighttpd serves it so (deploy/lighttpd/, docs/dashboard.md).
// FILES is everything index.html and class.html (the class view) load, boot.js and every module
// app.js and class.js import, directly or through another, included (a module missing from the
// cache would stop an offline start); Tests/extra/browser checks both pages.
"use strict";

const CACHE = "pacer-dashboard";
const FILES = [
  "./", "index.html", "style.css", "boot.js", "legacy.js", "mqtt.js", "mqttcodec.js", "sound.js", "clock.js",
  "durations.js", "fields.js", "forms.js", "media.js", "flash.js", "speaker.js", "desk.js", "offset.js",
  "settings.js", "nodestate.js", "connection.js", "views.js", "cues.js", "ui.js", "single.js", "grid.js", "controls.js",
  "setup.js", "setupfields.js", "setupchoices.js", "signin.js", "footer.js", "soundflash.js", "speech.js", "phone.js",
  "timetable.js", "displays.js", "classes.js", "app.js",
  "recovery.js",
  "class.html", "class.css", "classview.js", "tcx.js", "class.js",
  "manifest.webmanifest", "icon-192.png", "icon-512.png", "icon-maskable-512.png",
];
const NETWORK_WAIT_MS = 3000;

self.addEventListener("install", (event) => {
  event.waitUntil(caches.open(CACHE).then((c) => c.addAll(FILES)).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    for (const key of await caches.keys()) if (key !== CACHE) await caches.delete(key);
    await self.clients.claim();
  })());
});

self.addEventListener("fetch", (event) => {
  const req = event.request;
  const url = new URL(req.url);
  if (req.method !== "GET" || url.origin !== self.location.origin) return;
  event.respondWith(networkFirst(req));
});

async function networkFirst(req) {
  const cache = await caches.open(CACHE);
  // A page with any query (?node=gym&timer=main) is the one page: index.html (the scope's
  // own address) or class.html.
  const key = req.mode === "navigate" ? new Request(pageAddress(req.url)) : req;
  try {
    const res = await withTimeout(fetch(req), NETWORK_WAIT_MS);
    if (res.ok) await cache.put(key, res.clone());
    return res;
  } catch (e) {
    const hit = await cache.match(key, { ignoreSearch: true });
    if (hit) return hit;
    throw e;
  }
}

/** A navigation's page without its query: class.html, else the wall page (the scope, "./"). */
function pageAddress(url) {
  const u = new URL(url);
  return u.pathname.endsWith("/class.html") ? new URL("class.html", self.registration.scope).href : new URL("./", self.registration.scope).href;
}

function withTimeout(promise, ms) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error("network slower than " + ms + " ms")), ms);
    promise.then((v) => { clearTimeout(t); resolve(v); }, (e) => { clearTimeout(t); reject(e); });
  });
}

// A tap on a notification (an expiry, a rest's end) brings the page back.
self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const url = (event.notification.data && event.notification.data.url) || self.registration.scope;
  event.waitUntil((async () => {
    for (const c of await self.clients.matchAll({ type: "window", includeUncontrolled: true })) {
      if ("focus" in c) return c.focus();
    }
    return self.clients.openWindow(url);
  })());
});
