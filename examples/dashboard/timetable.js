// timetable.js: the node's timetable on the page, with no DOM: a timer's next class (the
// retained `<base>/timers/<id>/next`) and the line an idle clock shows for it, the class a run
// is (`<base>/timers/<id>/current_class`) and the line a running clock shows for it, today's classes
// from a `list_schedules` reply with the class each Skip button skips, the `skip_next`
// command, the phase line of a rest that ends on recovery, and a grid card's name and label. single.js, grid.js and classes.js put
// them on the page; Tests/page/timetable.test.mjs tests this very file in Node with an
// injected node instant. See docs/dashboard.md, "The timetable" (docs/schedules.md: the node's).
import { tallyLine } from "./recovery.js";
import { fmt } from "./clock.js";

const isNum = (v) => typeof v === "number" && isFinite(v);

/**
 * A retained `next` payload: `{name, local_time, starts_at_ms, schedule, …}` as the node
 * published it, or null for none (an empty payload: no class ahead) and for junk.
 */
function parseNext(payload) {
  if (!payload) return null;
  let n; try { n = JSON.parse(payload); } catch (e) { return null; }
  if (!n || typeof n !== "object" || !isNum(n.starts_at_ms)) return null;
  return n;
}

/**
 * The line an idle clock shows for its next class `n` (parseNext's) at node instant `now`
 * (null: the clock is not measured yet): `{text, next}`, `text` "Next: HIIT 45 at 18:00 · in
 * 12:30" (the countdown left out while `now` is unknown, "starting" once it is due), `next`
 * the node instant at which the countdown's text changes (null: not by itself).
 */
function nextLine(n, now) {
  if (!n) return { text: "", next: null };
  const at = n.local_time ? " at " + n.local_time : "";
  const head = "Next: " + (n.name || n.schedule || "class") + at;
  if (!isNum(now)) return { text: head, next: null };
  const left = n.starts_at_ms - now;
  if (left <= 0) return { text: head + " · starting", next: null };
  const secs = Math.ceil(left / 1000);
  return { text: head + " · in " + fmt(secs), next: n.starts_at_ms - (secs - 1) * 1000 };
}

/**
 * A retained `current_class` payload: the class a schedule started, while its run goes on
 * (`{name, schedule, starts_at_ms, late_ms, started_at_ms, …}` as the node published it), or
 * null for none (an empty payload: the run is not a class's) and for junk.
 */
function parseCurrent(payload) {
  if (!payload) return null;
  let c; try { c = JSON.parse(payload); } catch (e) { return null; }
  if (!c || typeof c !== "object" || !isNum(c.started_at_ms)) return null;
  return c;
}

/** How late, in words: "45 s" under a minute, else whole minutes ("3 min"). */
function lateWords(ms) {
  const secs = Math.round(ms / 1000);
  return secs < 60 ? secs + " s" : Math.round(secs / 60) + " min";
}

/**
 * The line a clock shows for the class its run is: `c` (parseCurrent's) beside the timer's
 * state `st`. "HIIT 45" when the class started on time, "HIIT 45 · started 3 min late" when the
 * node started it late (after a restart, within its grace); "" when the run is not that class's
 * (no class, another run: `started_at_ms` differs, or the run is over).
 */
function classLine(c, st) {
  const k = classOfRun(c, st);
  return !k ? "" : k.late ? k.name + " · started " + k.late + " late" : k.name;
}

/**
 * The class run `st` is, as its parts: `{name, late}` (`late` in words, "3 min", or "" when it
 * started on time); null when the run is not that class's (see classLine).
 */
function classOfRun(c, st) {
  if (!c || !st || !["running", "paused", "expired"].includes(st.status)) return null;
  if (isNum(st.started_at_ms) && st.started_at_ms !== c.started_at_ms) return null;
  return { name: c.name || c.schedule || "class", late: isNum(c.late_ms) && c.late_ms >= 1000 ? lateWords(c.late_ms) : "" };
}

/** The words of a class's status in today's list. */
const STATUS_TEXT = {
  upcoming: "upcoming", waiting: "waiting", started: "started", skipped: "skipped", past: "past", cancelled: "cancelled",
};

/**
 * Today's classes from a `list_schedules` reply (`{classes: {date, time_zone, classes: […]}}`):
 * `{date, zone, rows}`, each row `{name, time, status, text, schedule, skip}` in the node's
 * order; `skip` is true on each schedule's first `upcoming` class (the one `skip_next`
 * skips). A refused or empty reply gives no rows.
 */
function todaysClasses(reply) {
  const c = reply && reply.ok !== false && reply.classes && typeof reply.classes === "object" ? reply.classes : null;
  const list = c && Array.isArray(c.classes) ? c.classes : [];
  const seen = new Set();
  const rows = list.filter((k) => k && typeof k === "object").map((k) => {
    const schedule = k.schedule || null;
    const classStatus = String(k.status || ""); // a class's status (docs/schedules.md), not a timer's
    const skip = classStatus === "upcoming" && schedule != null && !seen.has(schedule);
    if (skip) seen.add(schedule);
    let text = STATUS_TEXT[classStatus] || classStatus;
    if (classStatus === "started" && isNum(k.late_ms) && k.late_ms >= 1000) text += " (" + fmt(Math.round(k.late_ms / 1000)) + " late)";
    if (classStatus === "skipped" && k.reason) text += " (" + k.reason + ")";
    return { name: k.name || schedule || "class", time: k.local_time || "", status: classStatus, text, schedule, skip };
  });
  return { date: c ? c.date || "" : "", zone: c ? c.time_zone || "" : "", rows };
}

/** The node command that skips schedule `id`'s next class. */
function skipCommand(id) { return { action: "skip_next", schedule: id }; }

/** The node command that asks for the schedules and today's classes. */
function listCommand() { return { action: "list_schedules" }; }

/**
 * The phase line of a timer's state `st` at node instant `now`: "Rest · until recovered (≤
 * 1:30)" while a rest waits for recovery (`until_hr` and no `recovered_at_ms`), the time
 * being what is left to its longest end (`ends_at_ms`); null otherwise (the usual phase
 * words). The time flips with the digits (both count down to `ends_at_ms`).
 */
function recoveryLine(st, now) {
  if (!st || !st.until_hr || st.recovered_at_ms != null || st.status === "idle" || st.status === "scheduled") return null;
  const word = st.phase === "set_rest" ? "Set rest" : "Rest";
  if (st.status !== "running" || !isNum(st.ends_at_ms) || !isNum(now)) {
    return word + " · until recovered" + (isNum(st.remaining) ? " (≤ " + fmt(st.remaining) + ")" : "");
  }
  return word + " · until recovered (≤ " + fmt(Math.ceil(Math.max(0, st.ends_at_ms - now) / 1000)) + ")";
}

/**
 * A grid card's name and label for timer state `st` at node instant `now`, from the node's
 * documents of that timer (`facts`: `next`, `current`, `recovery`) and the timer's own `name`:
 * a class's run is named as its class ("HIIT 45"); the label says, first of these, why a rest
 * still waits ("12 of 14 recovered · needs 12", or "until recovered (≤ 1:30)" until the node's
 * tally comes), an idle timer's next class, the segment's label, and after it how late a class
 * started ("Burpees · 3 min late", or "started 3 min late" alone: the card's head has no room
 * for it beside the phase). `next` is nextLine's result for an idle timer (its `next` is the
 * instant the line changes).
 */
function cardLines(st, now, facts, name) {
  const next = st && st.status === "idle" ? nextLine(facts.next, now) : null;
  const tally = tallyLine(st, facts.recovery);
  const waiting = recoveryLine(st, now);
  const klass = classOfRun(facts.current, st);
  let label = st ? st.label || "" : "";
  if (tally) label = tally;
  else if (waiting) label = waiting.replace(/^(Set rest|Rest) · /, "");
  else if (next && next.text) label = next.text;
  else if (klass && klass.late) label = label ? label + " · " + klass.late + " late" : "started " + klass.late + " late";
  return { name: klass ? klass.name : name, label, next };
}

export { parseNext, nextLine, parseCurrent, classLine, todaysClasses, skipCommand, listCommand, recoveryLine, cardLines, STATUS_TEXT };
