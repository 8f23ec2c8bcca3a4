// forms.js: the set-up form's commands, with no DOM: the spec and the `start` command the
// form sends (its fields and checks are fields.js, the duration grammar durations.js), a
// start at a time of day, the saved-workout commands, the form's texts back from a spec or a
// state, a spec in a few words, and which field a node's error message names. It exports
// durations.js and fields.js too, so the page and the tests have the form's logic in one
// import. Tests/page/forms.test.mjs checks this file against the protocol's examples
// (Tests/Fixtures/protocol/commands.json).
// An ES module with no build step: the page's set-up sheet (setup.js) imports it, the tests
// import this very file in Node.
import { DAY, MAX_MS, parseDuration, parseHMS, compact, describe, hms, clock, stepDuration, grouped } from "./durations.js";
import {
  KINDS, BLOCK_KINDS, PRESETS, TIMER_ID, blockMin, printable,
  checkText, checkField, checkName, checkWorkoutName, checkId, slug, uniqueId, timerName,
} from "./fields.js";

const MAX_SEGMENTS = 10000, MAX_START_AHEAD = 7 * DAY;

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
