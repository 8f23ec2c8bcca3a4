// displays.js: the AWTRIX clocks and WLED lights kept on the node by command, with no DOM: the
// retained `<base>/displays` read, a line describing each, and the `save_display` and
// `delete_display` commands built from the phone page's small form. The node checks a display
// with its configuration's rules and says what is wrong; the page only checks what it must to
// build a command (an id, a prefix or a topic). classes.js puts them on the page;
// Tests/page/displays.test.mjs tests this very file in Node against the protocol's examples.
// See docs/dashboard.md, "The timetable" (docs/displays.md: the displays themselves).

/** A display id, by a timer id's rules (docs/API.md). */
const ID = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/**
 * The retained `<base>/displays`: `{displays: [{display, type, …}], configured}` (displays
 * sorted by id), or null for none heard and junk; an empty payload is no display saved.
 */
function parseDisplays(payload) {
  if (payload == null) return null;
  if (payload === "") return { displays: [], configured: 0 };
  let d; try { d = JSON.parse(payload); } catch (e) { return null; }
  if (!d || !Array.isArray(d.displays)) return null;
  const displays = d.displays.filter((x) => x && typeof x.display === "string")
    .sort((a, b) => (a.display < b.display ? -1 : a.display > b.display ? 1 : 0));
  return { displays, configured: typeof d.configured === "number" ? d.configured : 0 };
}

/** One display in a line: "wall · AWTRIX clock awtrix_gym · main" or "door · WLED light wled/door · main · 128". */
function describe(d) {
  const timers = Array.isArray(d.timers) ? d.timers.join(", ") : d.timer || "";
  const parts = [d.display];
  if (d.type === "awtrix") parts.push("AWTRIX clock " + (d.prefix || ""));
  else if (d.type === "wled") parts.push("WLED light " + (d.topic || ""));
  else parts.push(String(d.type || "display"));
  if (timers) parts.push(timers);
  if (d.brightness != null) parts.push("brightness " + d.brightness);
  return parts.join(" · ");
}

/** A list of timer ids typed with commas or spaces: ["main", "hall"]. */
function timerList(text) { return String(text || "").split(/[\s,]+/).filter(Boolean); }

/**
 * The `save_display` command from the form's values `f` ({display, type, prefix, topic,
 * timers, brightness}, strings as typed): `{body}`, or `{error: {field, message}}` for what
 * the page can tell before sending. The display's members sit flat beside `display`, its
 * timers always as a list (`timers`, docs/API.md): an AWTRIX clock's `prefix` (one custom app
 * per timer); a WLED light's `topic`, its one timer and its `brightness` (a number; left out
 * when blank).
 */
function saveCommand(f) {
  const id = String(f.display || "").trim();
  if (!ID.test(id)) return { error: { field: "display", message: "a display id: a-z, 0-9, - and _ (up to 64)" } };
  const timers = timerList(f.timers);
  if (!timers.length) return { error: { field: "timers", message: "one timer at least" } };
  const body = { action: "save_display", display: id, type: f.type };
  if (f.type === "awtrix") {
    const prefix = String(f.prefix || "").trim();
    if (!prefix) return { error: { field: "prefix", message: "the clock's MQTT prefix (awtrix_…)" } };
    body.prefix = prefix;
  } else if (f.type === "wled") {
    const topic = String(f.topic || "").trim();
    if (!topic) return { error: { field: "topic", message: "the light's MQTT topic (wled/…)" } };
    body.topic = topic;
    if (timers.length > 1) return { error: { field: "timers", message: "a WLED light shows one timer" } };
    const b = String(f.brightness == null ? "" : f.brightness).trim();
    if (b !== "") {
      const n = Number(b);
      if (!Number.isInteger(n)) return { error: { field: "brightness", message: "a whole number" } };
      body.brightness = n; // its range is the node's to check (its message names it)
    }
  } else return { error: { field: "type", message: "an AWTRIX clock or a WLED light" } };
  body.timers = timers;
  return { body };
}

/** The `delete_display` command for display `id`. */
function deleteCommand(id) { return { action: "delete_display", display: id }; }

/** What a reply to one of these commands says to show: `{ok, text}` (no reply: the node did not answer). */
function replyText(res, done) {
  if (!res) return { ok: false, text: "No answer from the timer node" };
  const r = res.reply;
  if (r && r.ok === false) return { ok: false, text: (r.error && r.error.message) || "refused" };
  return { ok: true, text: done };
}

export { parseDisplays, describe, timerList, saveCommand, deleteCommand, replyText, ID };
