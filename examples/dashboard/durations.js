// durations.js: durations in text as the node reads and writes them (its grammar,
// Sources/PacerCore/Durations.swift): `90`, `90s`, `1m30s`, `1:30`, `01:30:00`, `PT1M30S`
// read; `compact` (the spelling in spec JSON) and `describe` (the words of the node's
// messages) written; the countdown's HH:MM:SS entry and the rest timer's stepper. No DOM:
// fields.js and forms.js build on it, the page's set-up sheet (setup.js) uses it through
// forms.js, and Tests/page/durations.test.mjs and forms.test.mjs test this very file in Node.
const SEC = 1000, MIN = 60 * SEC, HOUR = 60 * MIN, DAY = 24 * HOUR;
/** The longest duration anywhere in a spec (the node's `Durations.maxMs`). */
const MAX_MS = 7 * DAY;

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

export { SEC, MIN, HOUR, DAY, MAX_MS, parseDuration, parseHMS, compact, describe, hms, clock, stepDuration, grouped };
