// recovery.js: why a rest that ends on recovery still waits, in words, with no DOM: the
// node's retained `<base>/timers/<id>/recovery` ({who, recovered, counted, needed, stale, bpm,
// target_bpm}; docs/API.md, "Rests that end on recovery") as the line shown under the phase,
// "12 of 14 recovered · needs 12". The phase line itself ("Rest · until recovered (≤ 1:30)")
// is timetable.js's recoveryLine. single.js and class.js put it on the page;
// Tests/page/recovery.test.mjs tests this very file in Node.

const isNum = (v) => typeof v === "number" && isFinite(v);
const CLASS_RULES = ["class_all", "class_80pct", "class_median"];

/** A `recovery` payload as the node published it, or null for none (empty: cleared) and for junk. */
function parseRecovery(payload) {
  if (!payload) return null;
  let r; try { r = JSON.parse(payload); } catch (e) { return null; }
  if (!r || typeof r !== "object" || typeof r.who !== "string" || !isNum(r.recovered) || !isNum(r.counted)) return null;
  return r;
}

/** Whether the timer's state `st` says its rest waits for recovery (as recoveryLine reads it). */
function waitsForRecovery(st) {
  return !!st && !!st.until_hr && st.recovered_at_ms == null && (st.status === "running" || st.status === "paused");
}

/** A bpm target as the node gives it (123.5 stays 123.5, 120 is 120). */
function bpmText(v) { return Number.isInteger(v) ? String(v) : v.toFixed(1); }

/**
 * The line under the phase while timer state `st` waits for recovery, from its tally `r`
 * (parseRecovery's); null when the rest does not wait, or the node has said nothing yet.
 * - a class rule: "12 of 14 recovered · needs 12" (`class_all`: "· needs all";
 *   `class_median`: "· the median decides"), then "· 2 without a reading" for stale straps;
 *   nobody reading: "no strap reading" (the rest runs to its longest);
 * - one athlete's: "134 bpm · below 123.5 to go on", or "alice: no recent reading".
 */
function tallyLine(st, r) {
  if (!waitsForRecovery(st) || !r) return null;
  const stale = isNum(r.stale) && r.stale > 0 ? " · " + r.stale + " without a reading" : "";
  if (!CLASS_RULES.includes(r.who)) {
    const target = isNum(r.target_bpm) ? "below " + bpmText(r.target_bpm) + " to go on" : "";
    if (!isNum(r.bpm)) return r.who + ": no recent reading" + (target ? " · " + target : "");
    return r.bpm + " bpm" + (target ? " · " + target : "");
  }
  if (r.counted === 0) return "no strap reading" + stale;
  let need = "";
  if (r.who === "class_all") need = " · needs all";
  else if (r.who === "class_median") need = " · the median decides";
  else if (isNum(r.needed)) need = " · needs " + r.needed;
  return r.recovered + " of " + r.counted + " recovered" + need + stale;
}

export { parseRecovery, waitsForRecovery, tallyLine };
