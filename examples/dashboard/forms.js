// forms.js: the set-up form's logic, with no DOM: the fields of each kind of timer, the
// checks a field can make as the coach types (the node's own rules and messages: durations,
// counts, labels, names, ids), the `start` command the form sends, the saved-workout
// commands, and which field a node's error message names. app.js draws the form from
// `KINDS` and wires it; Tests/page/forms.test.mjs checks this file against the protocol's
// examples (Tests/Fixtures/protocol/commands.json).
// An ES module with no build step: app.js imports it in the page, the tests import this very
// file in Node.
const SEC = 1000, MIN = 60 * SEC, HOUR = 60 * MIN, DAY = 24 * HOUR;
/** The longest duration anywhere in a spec (the node's `Durations.maxMs`). */
const MAX_MS = 7 * DAY;
const TIMER_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const MAX_TEXT = 100, MAX_SEGMENTS = 10000, MAX_EXERCISES = 100, MAX_START_AHEAD = 7 * DAY;

// ---- durations: the node's grammar (Sources/PacerCore/Durations.swift) -------------

const UNITS = {
  ms: 1, msec: 1, msecs: 1, millisecond: 1, milliseconds: 1,
  s: SEC, sec: SEC, secs: SEC, second: SEC, seconds: SEC,
  m: MIN, min: MIN, mins: MIN, minute: MIN, minutes: MIN,
  h: HOUR, hr: HOUR, hrs: HOUR, hour: HOUR, hours: HOUR,
  d: DAY, day: DAY, days: DAY,
};
const isDigit = (c) => c >= "0" && c <= "9";

/** Digits with an optional fraction at s[i]: {whole, frac, digits, end} or null. */
function readDecimal(s, i, allowFraction) {
  let whole = 0, frac = 0, digits = 0, saw = false;
  while (i < s.length && isDigit(s[i])) { whole = whole * 10 + Number(s[i]); saw = true; i++; }
  if (allowFraction && s[i] === ".") {
    i++;
    while (i < s.length && isDigit(s[i])) { if (digits < 9) { frac = frac * 10 + Number(s[i]); digits++; } saw = true; i++; }
  }
  return saw ? { whole, frac, digits, end: i } : null;
}
/** A decimal times a unit in ms, the fraction rounded half up (as the node does). */
const times = (d, unit) => d.whole * unit + (d.digits ? Math.floor((d.frac * unit + 10 ** d.digits / 2) / 10 ** d.digits) : 0);

function parseUnits(s) {
  let i = 0, total = 0, saw = false;
  for (;;) {
    while (s[i] === " ") i++;
    if (i >= s.length) break;
    const d = readDecimal(s, i, true);
    if (!d) return null;
    i = d.end;
    while (s[i] === " ") i++;
    const start = i;
    while (i < s.length && /[a-z]/.test(s[i])) i++;
    const unit = UNITS[s.slice(start, i)];
    if (i === start || unit == null) return null;
    total += times(d, unit);
    saw = true;
  }
  return saw ? total : null;
}

function parseClock(s) {
  const parts = s.split(":");
  if (parts.length !== 2 && parts.length !== 3) return null;
  const units = parts.length === 2 ? [MIN, SEC] : [HOUR, MIN, SEC];
  let total = 0;
  for (let k = 0; k < parts.length; k++) {
    const last = k === parts.length - 1;
    const d = readDecimal(parts[k], 0, last);
    if (!d || d.end !== parts[k].length) return null;
    if (k > 0 && d.whole >= 60) return null;
    total += times(d, units[k]);
  }
  return total;
}

/**
 * A duration in text, in ms, read as the node reads it: `90` (seconds), `90s`, `1m30s`,
 * `1h 30m`, `500ms`, `1.5m`, `1:30` (m:ss), `01:30:00` (h:mm:ss), `PT1M30S`; an optional
 * leading `-`. null when it is none of these (or beyond any sane range).
 */
function parseDuration(text) {
  if (typeof text === "number") return isFinite(text) ? Math.round(text * 1000) : null;
  if (typeof text !== "string") return null;
  let s = text.toLowerCase().replace(/[\t\n\r\v\f]/g, "").trim();
  let negative = false;
  if (s[0] === "-" || s[0] === "+") { negative = s[0] === "-"; s = s.slice(1).trim(); }
  if (!s) return null;
  let v;
  if (s.startsWith("pt")) v = parseUnits(s.slice(2));
  else if (s.includes(":")) v = parseClock(s);
  else {
    const d = readDecimal(s, 0, true);
    v = d && d.end === s.length ? times(d, SEC) : parseUnits(s);
  }
  if (v == null || !isFinite(v) || v > 1e15) return null;
  return negative ? -v : v;
}

const pad = (n, w) => String(n).padStart(w, "0");
const fraction = (ms) => pad(ms, 3).replace(/0+$/, "");
function split(ms) { return [Math.floor(ms / DAY), Math.floor(ms / HOUR) % 24, Math.floor(ms / MIN) % 60, Math.floor(ms / SEC) % 60, ms % 1000]; }

/** The canonical spelling in spec JSON (the node's `compact`): `20s`, `1m30s`, `500ms`, `7d`. */
function compact(ms) {
  if (ms < 0) return "-" + compact(-ms);
  if (ms === 0) return "0s";
  if (ms < 1000) return ms + "ms";
  const [d, h, m, s, f] = split(ms);
  return (d ? d + "d" : "") + (h ? h + "h" : "") + (m ? m + "m" : "") + (f ? s + "." + fraction(f) + "s" : s ? s + "s" : "");
}

/** Text for messages (the node's `describe`): `0 s`, `500 ms`, `1 m 30 s`, `2 h`, `7 days`. */
function describe(ms) {
  if (ms < 0) return "-" + describe(-ms);
  if (ms === 0) return "0 s";
  if (ms < 1000) return ms + " ms";
  const [d, h, m, s, f] = split(ms);
  const parts = [];
  if (d) parts.push(d === 1 ? "1 day" : d + " days");
  if (h) parts.push(h + " h");
  if (m) parts.push(m + " m");
  if (f) parts.push(s + "." + fraction(f) + " s"); else if (s) parts.push(s + " s");
  return parts.join(" ");
}

/** `HH:MM:SS` of whole seconds (the countdown field): `00:12:00`, `01:30:00`, `168:00:00`. */
function hms(ms) {
  const t = Math.round(ms / 1000);
  return pad(Math.floor(t / 3600), 2) + ":" + pad(Math.floor(t / 60) % 60, 2) + ":" + pad(t % 60, 2);
}

/** Clock text a spec carries for a countdown: `12:00`, `1:30:00` (m:ss below an hour). */
function clock(ms) {
  const t = Math.round(ms / 1000), h = Math.floor(t / 3600), m = Math.floor(t / 60) % 60, s = t % 60;
  return h ? h + ":" + pad(m, 2) + ":" + pad(s, 2) : m + ":" + pad(s, 2);
}

/**
 * The countdown's HH:MM:SS field: digits alone fill it from the right like a kitchen
 * timer (`90` is 90 s, `1200` is 12:00, `13000` is 1:30:00), so a phone's number pad is
 * enough; `h:mm:ss` and `m:ss` as written; any other duration the node reads (`12m`).
 */
function parseHMS(text) {
  const s = String(text == null ? "" : text).trim();
  if (/^[0-9]+$/.test(s)) {
    const d = s.padStart(6, "0");
    const h = Number(d.slice(0, -4)), m = Number(d.slice(-4, -2)), sec = Number(d.slice(-2));
    return ((h * 60 + m) * 60 + sec) * 1000;
  }
  return parseDuration(s);
}

/**
 * The rest form's stepper: the duration in `text` moved by `deltaMs` (±15 s), kept
 * between 15 s and 7 days, as `m:ss` (`1:30` → `1:45`); an unreadable text starts from 1:30.
 */
function stepDuration(text, deltaMs) {
  const ms = parseDuration(text);
  const base = ms == null || ms < 0 ? 90 * SEC : Math.round(ms / SEC) * SEC;
  return clock(Math.min(MAX_MS, Math.max(15 * SEC, base + deltaMs)));
}

const grouped = (n) => String(Math.abs(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ",").replace(/^/, n < 0 ? "-" : "");

// ---- the fields of each kind ------------------------------------------------------

/**
 * Each kind's fields: `key` (the spec's key, and the word the node's messages start
 * with), `label` (the visible label), `type` (`duration`, `hms`, `count`, `text`, `list`,
 * `bool`), the range, what the field shows at first (`value`) and a `hint`.
 */
const KINDS = {
  interval: {
    label: "Interval", about: "work and rest × rounds (a circuit)",
    fields: [
      { key: "work", label: "Work", type: "duration", min: SEC, required: true, value: "40s", hint: "40s, 1:30, 2m" },
      { key: "rest", label: "Rest", type: "duration", min: 0, value: "20s", hint: "0 for none" },
      { key: "rounds", label: "Rounds", type: "count", min: 1, max: 1000, value: "8" },
      { key: "exercises", label: "Exercises", type: "list", hint: "one station each, in order: Squat, Push-up" },
      { key: "prepare", label: "Prepare", type: "duration", min: 0, hint: "a get-ready before the first round" },
      { key: "sets", label: "Sets", type: "count", min: 1, max: 100, hint: "repeat all rounds" },
      { key: "set_rest", label: "Set rest", type: "duration", min: 0, hint: "between sets" },
      { key: "cooldown", label: "Cool down", type: "duration", min: 0 },
    ],
  },
  countdown: {
    label: "Countdown", about: "HH:MM:SS, down to zero",
    fields: [
      { key: "duration", label: "Duration", type: "hms", min: SEC, required: true, value: "00:10:00", hint: "HH:MM:SS; digits alone fill from the right: 1200 is 12 minutes" },
      { key: "label", label: "Label", type: "text" },
      { key: "ack", label: "Ring until acknowledged", type: "bool", value: false },
      { key: "after_ack", label: "Back to ready after Acknowledge", type: "bool", value: false, hint: "Acknowledge brings it back at its full time" },
    ],
  },
  rest: {
    label: "Rest timer", about: "a rest between sets, 1:30 unless changed",
    fields: [
      { key: "duration", label: "Duration", type: "duration", min: SEC, required: true, value: "1:30", step: 15 * SEC },
      { key: "exercise", label: "Exercise", type: "text", hint: "the one just done" },
      { key: "next", label: "Next exercise", type: "text" },
      { key: "ack", label: "Ring until acknowledged", type: "bool", value: true },
      { key: "after_ack", label: "Back to ready after Acknowledge", type: "bool", value: false, hint: "Acknowledge brings the rest back at its full time" },
    ],
  },
  stopwatch: {
    label: "Stopwatch", about: "counts up; a target starts overtime",
    fields: [
      { key: "target", label: "Target", type: "duration", min: SEC, hint: "optional: 20m" },
      { key: "label", label: "Label", type: "text" },
    ],
  },
  program: { label: "Program", about: "your own blocks, in order", fields: [] },
  preset: { label: "Preset", about: "the node's presets and saved workouts", fields: [] },
};

/** A program block's kinds (the node's segment kinds) and their shortest duration. */
const BLOCK_KINDS = [
  ["work", "Work", SEC], ["rest", "Rest", 0], ["prepare", "Get ready", 0], ["set_rest", "Set rest", 0],
  ["cooldown", "Cool down", 0], ["countdown", "Countdown", SEC], ["session", "Session", SEC],
];
const blockMin = (kind) => { const k = BLOCK_KINDS.find((b) => b[0] === kind); return k ? k[2] : SEC; };

/** The built-in presets' parameters (docs/timer-core.md); other presets take none here. */
const PRESETS = {
  tabata: { label: "Tabata", about: "8 × 20 s work / 10 s rest", params: [] },
  emom: { label: "EMOM", about: "every minute on the minute", params: [{ key: "rounds", label: "Rounds", type: "count", min: 1, max: 1000, value: "10", hint: "minutes" }] },
  amrap: { label: "AMRAP", about: "as many rounds as possible", params: [{ key: "duration", label: "Duration", type: "duration", min: SEC, value: "20m" }] },
  for_time: { label: "For time", about: "a stopwatch with a time cap", params: [{ key: "cap", label: "Time cap", type: "duration", min: SEC, value: "20m" }] },
};

// ---- checks ---------------------------------------------------------------------

const printable = (s) => String(s).length > 40 ? String(s).slice(0, 40) + "…" : String(s);
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/** The node's rules for free text (labels, names): at most 100 characters, no control characters. */
function checkText(field, text, allowEmpty) {
  if (!allowEmpty && !String(text).trim()) return text === "" ? field + " must not be empty" : field + " must not be only white space";
  if ([...text].length > MAX_TEXT) return field + " must be at most " + MAX_TEXT + " characters, got " + [...text].length;
  if (CONTROL.test(text)) return field + " must not contain control characters or line breaks (newlines, tabs, U+2028, ...)";
  return null;
}

function checkDurationValue(field, ms, min, max) {
  const hi = max == null ? MAX_MS : max;
  return ms < min || ms > hi ? field + " must be between " + describe(min) + " and " + describe(hi) + ", got " + describe(ms) : null;
}

/**
 * One field's value from its text: `{value}` to put in the spec (undefined: leave the key
 * out), or `{error}` with the node's message for it. `f` is a field of `KINDS` (or a
 * preset's parameter); `name` overrides the key in the message (`segments[1].duration`).
 */
function checkField(f, raw, name) {
  const field = name || f.key;
  const text = raw == null ? "" : typeof raw === "string" ? raw : String(raw);
  switch (f.type) {
    case "bool":
      return { value: raw === true || raw === "true" || raw === "on" };
    case "duration": case "hms": {
      if (!text.trim()) return f.required ? { error: field + " is required" + (f.type === "hms" ? " (HH:MM:SS, like 00:10:00)" : " (like \"40s\" or \"1:30\")") } : { value: undefined };
      const ms = f.type === "hms" ? parseHMS(text) : parseDuration(text);
      if (ms == null) return { error: field + " must be a duration like " + (f.type === "hms" ? "00:10:00, 1200 or \"12m\"" : "90, \"90s\", \"1m30s\" or \"1:30\"") + ", got \"" + printable(text) + "\"" };
      const bad = checkDurationValue(field, ms, f.min || 0, f.max);
      return bad ? { error: bad } : { value: f.type === "hms" ? clock(ms) : compact(ms), ms };
    }
    case "count": {
      const t = text.trim();
      if (!t) return f.required ? { error: field + " is required" } : { value: undefined };
      if (!/^-?[0-9]+$/.test(t)) return { error: field + " must be a whole number, got \"" + printable(t) + "\"" };
      const n = Number(t);
      if (n < f.min || n > f.max) return { error: field + " must be between " + grouped(f.min) + " and " + grouped(f.max) + ", got " + grouped(n) };
      return { value: n };
    }
    case "list": {
      const items = text.split(/[\n,]/).map((s) => s.trim()).filter((s) => s);
      if (!items.length) return { value: undefined };
      if (items.length > MAX_EXERCISES) return { error: field + " must have at most " + MAX_EXERCISES + " entries, got " + items.length };
      for (let i = 0; i < items.length; i++) { const e = checkText(field + "[" + i + "]", items[i], false); if (e) return { error: e }; }
      return { value: items };
    }
    default: { // text: empty is left out
      if (!text) return { value: undefined };
      const e = checkText(field, text, true);
      return e ? { error: e } : { value: text };
    }
  }
}

/** A timer's name: the node's rules, and none of the MQTT topic characters / + #. */
function checkName(name, optional) {
  const text = name == null ? "" : String(name);
  if (!text && optional) return null;
  const e = checkText("name", text, false);
  if (e) return e;
  const bad = [...text].find((c) => "/+#".includes(c));
  return bad ? "name cannot contain '" + bad + "' (MQTT topic characters / + # are not allowed), got \"" + printable(text) + "\"" : null;
}

/** A saved workout's name: the node's rules; / + # are allowed ("HIIT 45/15"). */
function checkWorkoutName(name) { return checkText("name", name == null ? "" : String(name), false); }

/** A timer (or workout) id: `[a-z0-9][a-z0-9_-]{0,63}`; `taken`: ids already in use. */
function checkId(id, taken, what) {
  const w = what || "timer id";
  if (!id) return w + " is required (1 to 64 characters of a-z, 0-9, '_' and '-')";
  if (!TIMER_ID.test(id)) return w + " must be 1 to 64 characters of a-z, 0-9, '_' and '-', starting with a letter or digit, got \"" + printable(id) + "\"";
  if (taken && taken.includes(id)) return w + " '" + id + "' is taken: choose another (or open that timer and use Set up)";
  return null;
}

/** An id from a name: `HIIT 45/15` → `hiit-45-15`, `Bänkdrücken` → `bankdrucken`. */
function slug(name) {
  const s = String(name || "").normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "-").replace(/-{2,}/g, "-").replace(/^[-_]+/, "").slice(0, 64).replace(/[-_]+$/, "");
  return s || "timer";
}

/** `base`, or `base-2`, `base-3`… the first not in `taken` (at most 64 characters). */
function uniqueId(base, taken) {
  const t = taken || [];
  if (!t.includes(base)) return base;
  for (let n = 2; ; n++) {
    const suffix = "-" + n, id = base.slice(0, 64 - suffix.length).replace(/[-_]+$/, "") + suffix;
    if (!t.includes(id)) return id;
  }
}

/** The name a timer gets from a saved workout's name: / + # (allowed there) become `-`. */
const timerName = (name) => String(name || "").replace(/[/+#]/g, "-").slice(0, MAX_TEXT);

/**
 * How many segments an interval compiles to, counted as the node counts them
 * (TimerSpec+Compile.swift): works, rests between them, set rests, prepare, cool down.
 */
function intervalSegments(v) {
  const stations = v.exercises && v.exercises.length ? v.exercises.length : 1;
  const rounds = v.rounds || 1, sets = v.sets || 1;
  const ms = (k) => (v[k] == null ? 0 : parseDuration(v[k]) || 0);
  const works = stations * rounds * sets;
  const skipLastRest = v.skip_last_rest !== false;
  let count = works + (ms("prepare") > 0 ? 1 : 0) + (ms("cooldown") > 0 ? 1 : 0);
  if (ms("rest") > 0) count += works - sets + (skipLastRest ? 0 : 1);
  if (ms("set_rest") > 0 || ms("rest") > 0) count += sets - 1;
  return count;
}

/** A defaults-free spec: `ack` only when it is not the kind's default (countdown false, rest true). */
const ACK_DEFAULT = { countdown: false, rest: true };

/**
 * The spec of a kind from the form's texts (`raw`: key → text; a program's `blocks`:
 * [{kind, duration, label}]). Returns `{spec, errors}`; `errors` maps a field key
 * (`work`, `segments[1].duration`) to the node's message for it, empty when all is well.
 */
function buildSpec(kind, raw, unchecked) {
  const errors = {}, r = raw || {};
  // `unchecked`: what was typed goes to the node as it is, for the node to judge.
  const pass = (f, text) => {
    const t = String(text).trim();
    return f.type === "count" && /^-?[0-9]+$/.test(t) ? Number(t) : f.type === "list" ? t.split(/[\n,]/).map((x) => x.trim()) : t;
  };
  const typed = (text) => text != null && String(text).trim() !== "";
  if (kind === "program") {
    const blocks = r.blocks || [];
    if (!blocks.length) return { spec: null, errors: { segments: "segments: add at least one block" } };
    if (blocks.length > MAX_SEGMENTS) return { spec: null, errors: { segments: "segments must have at most " + grouped(MAX_SEGMENTS) + " entries, got " + grouped(blocks.length) } };
    const segments = blocks.map((b, i) => {
      const seg = { kind: b.kind };
      if (!BLOCK_KINDS.some((k) => k[0] === b.kind)) errors["segments[" + i + "].kind"] = "segments[" + i + "].kind must be one of " + BLOCK_KINDS.map((k) => k[0]).join(", ") + ", got \"" + printable(b.kind) + "\"";
      const d = checkField({ key: "duration", type: "duration", min: blockMin(b.kind) }, b.duration, "segments[" + i + "].duration");
      if (d.error && unchecked && typed(b.duration)) seg.duration = String(b.duration).trim();
      else if (d.error) errors["segments[" + i + "].duration"] = d.error; else if (d.value !== undefined) seg.duration = d.value;
      const l = checkField({ key: "label", type: "text" }, b.label, "segments[" + i + "].label");
      if (l.error) errors["segments[" + i + "].label"] = l.error; else if (l.value !== undefined) seg.label = l.value;
      return seg;
    });
    if (!Object.keys(errors).length && segments.every((s) => s.duration === "0s")) errors.segments = "segments must contain at least one segment longer than 0 s";
    return { spec: Object.keys(errors).length ? null : { kind: "program", segments }, errors };
  }
  const def = KINDS[kind];
  if (!def || kind === "preset") return { spec: null, errors: { kind: "kind must be one of interval, countdown, rest, stopwatch, program" } };
  const spec = { kind };
  for (const f of def.fields) {
    const c = checkField(f, r[f.key]);
    if (c.error && unchecked && typed(r[f.key])) spec[f.key] = pass(f, r[f.key]);
    else if (c.error) errors[f.key] = c.error;
    else if (f.key === "ack") { if (c.value !== ACK_DEFAULT[kind]) spec.ack = c.value; }
    else if (f.key === "after_ack") { if (c.value) spec.after_ack = "ready"; }
    else if (c.value !== undefined) spec[f.key] = c.value;
  }
  // The node's rule (and message): coming back ready needs an acknowledgement to come back from.
  if (spec.after_ack === "ready" && !errors.ack && !(spec.ack ?? ACK_DEFAULT[kind])) {
    errors.after_ack = 'after_ack "ready" applies to a timer that waits for an ack at zero; add "ack": true';
  }
  if (kind === "interval" && !unchecked && !errors.rounds && !errors.sets && !errors.exercises) {
    const n = intervalSegments(spec);
    if (n > MAX_SEGMENTS) errors.rounds = "the program would have " + grouped(n) + " segments; at most " + grouped(MAX_SEGMENTS) + " are allowed (lower rounds, sets or exercises)";
  }
  return { spec: Object.keys(errors).length ? null : spec, errors };
}

/** A preset's start parameters from the form: `{params, errors}` (`{rounds: 12}`). */
function buildPresetParams(preset, raw) {
  const params = {}, errors = {}, def = PRESETS[preset];
  for (const f of def ? def.params : []) {
    const c = checkField(f, (raw || {})[f.key]);
    if (c.error) errors[f.key] = c.error; else if (c.value !== undefined) params[f.key] = c.value;
  }
  return { params, errors };
}

/**
 * The instant of the next `HH:MM` or `HH:MM:SS` on the local clock after `nowMs` (today,
 * else tomorrow): what "start at 18:30" means. null when the text is no time of day.
 */
function startAtFromTime(text, nowMs) {
  const m = /^\s*([0-9]{1,2}):([0-9]{2})(?::([0-9]{2}))?\s*$/.exec(String(text || ""));
  if (!m || Number(m[1]) > 23 || Number(m[2]) > 59 || (m[3] && Number(m[3]) > 59)) return null;
  const d = new Date(nowMs);
  d.setHours(Number(m[1]), Number(m[2]), Number(m[3] || 0), 0);
  if (d.getTime() <= nowMs) d.setDate(d.getDate() + 1);
  return d.getTime();
}

function checkStartAt(ms, nowMs) {
  if (ms == null || !isFinite(ms)) return "start_at must be a time of day like 18:30";
  if (ms - nowMs > MAX_START_AHEAD) return "start_at must be at most 7 days ahead";
  return null;
}

/**
 * The whole `start` command of the form: `o` = {kind, raw (the fields' texts), name,
 * preset, params (a preset's texts), startAt (epoch ms), restart}. Returns `{body, errors}`:
 * `body` as the node's canonical form of the command (commands.json's `encoded`), without
 * the request `id` the page adds; `errors` as in `buildSpec`, plus `name` and `start_at`.
 */
function buildStart(o) {
  const body = { action: "start" };
  let errors = {};
  if (o.kind === "preset") {
    if (!o.preset) errors.preset = "preset: choose one";
    else {
      body.preset = o.preset;
      const p = buildPresetParams(o.preset, o.params);
      Object.assign(body, p.params);
      errors = p.errors;
    }
  } else {
    const s = buildSpec(o.kind, o.raw, o.unchecked);
    errors = s.errors;
    if (s.spec) body.spec = s.spec;
  }
  if (o.name != null && o.name !== "") {
    const e = checkName(o.name);
    if (e && !o.unchecked) errors.name = e; else body.name = o.name;
  }
  if (o.startAt != null) {
    const e = checkStartAt(o.startAt, o.now == null ? Date.now() : o.now);
    if (e) errors.start_at = e; else body.start_at = Math.round(o.startAt);
  }
  if (o.restart) body.restart = true;
  return { body: Object.keys(errors).length ? null : body, errors };
}

/** A spec in a few words, for the list of saved workouts: `45s / 15s × 10`, `12:00`, `4 blocks`. */
function summary(spec) {
  if (!spec || typeof spec !== "object") return "";
  const d = (v) => { const ms = parseDuration(v); return ms == null ? String(v) : compact(ms); };
  switch (spec.kind) {
    case "interval": {
      let t = d(spec.work) + (spec.rest && parseDuration(spec.rest) > 0 ? " / " + d(spec.rest) : "") + " × " + (spec.rounds || 1);
      if (spec.sets > 1) t += " × " + spec.sets + " sets";
      if (spec.exercises && spec.exercises.length) t += " · " + spec.exercises.join(", ");
      return t;
    }
    case "countdown": { const ms = parseDuration(spec.duration); return "countdown " + (ms == null ? spec.duration : clock(ms)); }
    case "rest": { const ms = parseDuration(spec.duration == null ? "90s" : spec.duration); return "rest " + (ms == null ? spec.duration : clock(ms)) + (spec.next ? " → " + spec.next : ""); }
    case "stopwatch": return spec.target ? "stopwatch, target " + d(spec.target) : "stopwatch";
    case "program": { const n = (spec.segments || []).length; return n + (n === 1 ? " block" : " blocks"); }
    default: return spec.preset ? "preset " + spec.preset : "";
  }
}

/** `save_workout` on `<base>/cmd`: keeps `spec` on the node as workout `id` named `name`. */
function saveWorkout(id, name, spec) { return { action: "save_workout", workout: id, name, spec }; }
function deleteWorkout(id) { return { action: "delete_workout", workout: id }; }

/** The form's texts for a spec (a saved workout's, or the last one this page sent): {kind, raw}. */
function specToForm(spec) {
  if (!spec || typeof spec !== "object") return null;
  if (spec.kind === "program") {
    return { kind: "program", raw: { blocks: (spec.segments || []).map((s) => ({ kind: s.kind, duration: s.duration == null ? "" : durText(s.duration), label: s.label || "" })) } };
  }
  const def = KINDS[spec.kind];
  if (!def) return null;
  const raw = {};
  for (const f of def.fields) {
    const v = spec[f.key];
    if (f.type === "bool") raw[f.key] = v == null ? !!f.value : !!v;
    else if (v == null) raw[f.key] = "";
    else if (f.type === "hms") { const ms = parseDuration(v); raw[f.key] = ms == null ? String(v) : hms(ms); }
    else if (f.type === "duration") raw[f.key] = durText(v);
    else if (f.type === "list") raw[f.key] = Array.isArray(v) ? v.join(", ") : String(v);
    else raw[f.key] = String(v);
  }
  return { kind: spec.kind, raw };
}
function durText(v) { const ms = parseDuration(v); return ms == null ? String(v) : compact(ms); }

/** What a retained state tells of its spec, for Set up of a timer this page never set up. */
function stateToForm(st) {
  if (!st || !KINDS[st.kind]) return null;
  const raw = {}, seg = st.segment_duration_ms;
  if (st.kind === "countdown" && seg) raw.duration = hms(seg);
  if (st.kind === "rest") { if (seg) raw.duration = compact(seg); raw.exercise = st.label || ""; raw.next = st.next_label || ""; }
  if ((st.kind === "countdown" || st.kind === "rest") && typeof st.ack === "boolean") raw.ack = st.ack;
  if (st.kind === "interval") {
    if (st.rounds) raw.rounds = String(st.rounds);
    if (st.sets > 1) raw.sets = String(st.sets);
    if (seg && st.phase === "work") raw.work = compact(seg);
    if (seg && st.phase === "rest") raw.rest = compact(seg);
  }
  return { kind: st.kind, raw };
}

/**
 * The form field a node's error message names, from its first word (the node's messages
 * start with the field: `work must be …`, `rounds must be …`, `segments[1].duration …`,
 * `"timer" is not a timer id …`); null when it names none.
 */
function fieldOfError(message) {
  const text = String(message || "");
  if (/^the program would have/.test(text)) return "rounds";
  if (/^unknown preset/.test(text)) return "preset";
  const m = /^"?([a-z_]+)((?:\[[0-9]+\])?)(?:\.([a-z_]+))?"?(?=[\s:])/.exec(text);
  if (!m) return null;
  const [, key, index, sub] = m;
  if (key === "timer") return "id";
  if (key === "workout") return "workout";
  if (key === "segments" && index) return "segments" + index + (sub ? "." + sub : "");
  if (key === "exercises") return "exercises";
  return key;
}

export {
  KINDS, PRESETS, BLOCK_KINDS, TIMER_ID, MAX_MS,
  parseDuration, parseHMS, compact, describe, hms, clock, stepDuration,
  checkField, checkName, checkWorkoutName, checkId, checkText, slug, uniqueId, timerName, intervalSegments,
  buildSpec, buildPresetParams, buildStart, startAtFromTime, checkStartAt,
  saveWorkout, deleteWorkout, specToForm, stateToForm, fieldOfError, summary,
};
