// The page's start check. A classic script, not a module, written for old browsers too (no
// arrow functions, no let): index.html, frontdesk.html and class.html load it in their <head>,
// before their module (app.js, frontdesk.js, class.js). Each module sets
// window.__pacerStarted = true once it has started. When that has not happened, this script
// puts a plain sentence on screen, in place of "connecting…" forever, naming why and what to
// do:
// - a module failed to load (its <script> fires `error`): the script is fetched again to see
//   why: sent with no type or a type that is not JavaScript (mosquitto's http_dir sends none;
//   browsers run modules only with a JavaScript type), missing (404), the server unreachable;
// - the page was opened as a file (file://): browsers do not run modules from files;
// - the browser has no modules at all (too old): checked after START_MS;
// - after START_MS, an error the modules threw while starting; after SLOW_MS, nothing known.
// The sentence goes away if the modules start after all (a slow network). docs/dashboard.md,
// "When the page cannot start".
(function () {
  "use strict";
  var START_MS = 3000, SLOW_MS = 10000;
  var JS_TYPES = /^(text|application)\/(x-)?(javascript|ecmascript)$|^text\/(jscript|livescript|javascript1\.[0-5])$/;
  var FIX = "Serve this page's folder (examples/dashboard) with lighttpd as deploy/lighttpd/ does (deploy/install.sh sets that up on a Pi), or run `bash scripts/run` and open the address it prints.";
  var shown = null, firstError = null, diagnosing = false, watch = null;

  function started() { return window.__pacerStarted === true; }

  /** Why the page's module `src` did not start: calls done(sentence) (null: nothing known). */
  function diagnose(src, done) {
    if (location.protocol === "file:") {
      return done("This page was opened as a file, and browsers do not run its scripts from a file. Open it at the web address of the Pacer box instead (on a Pi, http://<its name>.local/), or run `bash scripts/run` and open the address it prints.");
    }
    if (!("noModule" in document.createElement("script"))) {
      return done("This browser is too old for this page: it cannot run the page's scripts. Open the page in a current Chrome, Firefox, Safari or Edge, or update this screen's browser.");
    }
    var name = (src || "").replace(/[?#].*$/, "").split("/").pop() || "the page's script";
    var x;
    try { x = new XMLHttpRequest(); x.open("GET", src, true); } catch (e) { return done(null); }
    x.onload = function () {
      if (x.status < 200 || x.status > 299) {
        return done("This page's scripts did not load: the web server answered " + x.status + " for " + name + ": a file of the page is missing there. " + FIX);
      }
      var type = (x.getResponseHeader("Content-Type") || "").split(";")[0].replace(/\s+/g, "").toLowerCase();
      if (!type) return done("This page's scripts did not load: the web server sent them without saying they are JavaScript, so the browser will not run them (mosquitto's http_dir does this). " + FIX);
      if (!JS_TYPES.test(type)) return done("This page's scripts did not load: the web server sent them with the wrong type (" + type + " instead of text/javascript), so the browser will not run them. " + FIX);
      done(null);
    };
    x.onerror = function () { done("This page's scripts did not load: the web server did not answer. Check that the Pacer box is on and reachable, then reload the page."); };
    x.send();
  }

  /** The sentence on screen, with `bash scripts/run` and the like in code type. */
  function show(sentence) {
    if (started() || !sentence || !document.body) return;
    if (shown) { shown.parentNode.removeChild(shown); }
    var box = document.createElement("div");
    box.id = "start-problem";
    box.setAttribute("role", "alert");
    box.style.cssText = "position:fixed;left:4%;right:4%;top:12%;z-index:2147483646;margin:0 auto;max-width:46em;" +
      "background:#fff;color:#111;border-left:0.4em solid #b00020;border-radius:0.4em;padding:0.8em 1.1em;" +
      "font:500 22px/1.4 sans-serif;font-size:clamp(17px,2.6vh,30px);box-shadow:0 4px 24px rgba(0,0,0,0.5);text-align:left;";
    var head = document.createElement("div");
    head.style.cssText = "font-weight:800;font-size:1.15em;color:#b00020;margin-bottom:0.3em;";
    head.appendChild(document.createTextNode("Pacer cannot start"));
    box.appendChild(head);
    var parts = sentence.split("`");
    for (var i = 0; i < parts.length; i++) {
      if (i % 2) {
        var code = document.createElement("code");
        code.style.cssText = "font:700 0.95em monospace;background:#eee;padding:0 0.2em;white-space:nowrap;";
        code.appendChild(document.createTextNode(parts[i]));
        box.appendChild(code);
      } else box.appendChild(document.createTextNode(parts[i]));
    }
    document.body.appendChild(box);
    shown = box;
    // "connecting…" (the wall page's footer, the front desk's header) says so too.
    var conn = document.getElementById("conn") || document.getElementById("status");
    if (conn) conn.textContent = "not started: see the message";
    // Gone if the modules start after all.
    if (!watch) watch = setInterval(function () {
      if (!started()) return;
      clearInterval(watch);
      if (shown && shown.parentNode) shown.parentNode.removeChild(shown);
      shown = null;
    }, 500);
  }

  function moduleSrc() {
    var s = document.querySelector("script[type=module][src]");
    return s ? s.src : "app.js";
  }

  function check(src, fallback) {
    if (started() || diagnosing) return;
    diagnosing = true;
    diagnose(src || moduleSrc(), function (sentence) {
      diagnosing = false;
      show(sentence || fallback());
    });
  }

  // A module (or one it imports) that fails to load fires `error` on its <script>.
  document.addEventListener("error", function (e) {
    var t = e.target;
    if (t && t.tagName === "SCRIPT" && t.type === "module") check(t.src, function () { return null; });
  }, true);
  // An error the modules throw while starting.
  window.addEventListener("error", function (e) {
    if (!started() && !firstError && e && e.message) firstError = e.message;
  });
  function stopped(late) {
    return function () {
      if (firstError) return "This page's scripts stopped with an error in this browser (" + firstError + "). Reload the page; if this stays, open it in a current Chrome, Firefox, Safari or Edge.";
      return late ? "This page's scripts have not started. Reload the page; if this stays, check how the page is served: " + FIX : null;
    };
  }
  setTimeout(function () { check(null, stopped(false)); }, START_MS);
  setTimeout(function () { check(null, stopped(true)); }, SLOW_MS);
})();
