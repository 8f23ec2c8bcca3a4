// fields.js: the set-up form's field model, with no DOM: the fields of each kind of timer
// (`KINDS`), a program's block kinds, the built-in presets' parameters, and the checks a
// field makes as the coach types, with the node's own rules and messages (durations,
// counts, lists, labels, names, ids), and ids made from names. forms.js builds the commands
// from them; the page's set-up sheet (setup.js, setupfields.js) draws the form from `KINDS`.
// Tests/page/fields.test.mjs and forms.test.mjs test this very file in Node.
import { SEC, MAX_MS, parseDuration, parseHMS, compact, describe, clock, grouped } from "./durations.js";

const TIMER_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const MAX_TEXT = 100, MAX_EXERCISES = 100;

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

export {
  KINDS, BLOCK_KINDS, PRESETS, TIMER_ID, MAX_TEXT, blockMin, printable,
  checkText, checkField, checkName, checkWorkoutName, checkId, slug, uniqueId, timerName,
};
