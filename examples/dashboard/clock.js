// clock.js: what a timer's clock shows at a given node instant, its clock text, and the
// commands the page's buttons send. The one counting rule of every Pacer client (the node's
// `remaining`, `pacer watch`: Sources/PacerProtocol/TimerState.swift), checked by
// Tests/page/clock.test.mjs against the protocol's examples in Tests/Fixtures/protocol/.
// An ES module with no build step: the page's views (views.js, single.js, grid.js, controls.js),
// the front desk and the class view import it, the tests import this very file in Node.
const isNum = (v) => typeof v === "number" && isFinite(v);

/**
 * What a timer shows at node time `now` (epoch ms; null when the page's clock is not
 * synced yet), counting locally from this one snapshot `st`:
 * `{secs, next, progress}`: whole seconds to show; the node instant at which `secs`
 * next changes (null: not by itself); progress through the segment, 0…1 (null: none).
 *
 * - running, counting down: `ceil((ends_at_ms − now) / 1000)`, at least 0;
 * - running, `counts_up` (a stopwatch): `floor((now − segment_started_at_ms) / 1000)`;
 * - `scheduled`: `ceil((start_at_ms − now) / 1000)`, the seconds until it starts;
 * - otherwise (or without the instant it needs): the snapshot's `remaining`.
 */
function valueAt(st, now) {
  const counting = isNum(now);
  const dur = isNum(st.segment_duration_ms) && st.segment_duration_ms > 0 ? st.segment_duration_ms : null;
  if (st.status === "running" && counting) {
    if (st.counts_up) {
      if (isNum(st.segment_started_at_ms)) {
        const elapsed = Math.max(0, now - st.segment_started_at_ms);
        const secs = Math.floor(elapsed / 1000);
        return { secs, next: st.segment_started_at_ms + (secs + 1) * 1000, progress: dur ? Math.min(1, elapsed / dur) : null };
      }
    } else if (isNum(st.ends_at_ms)) {
      const left = Math.max(0, st.ends_at_ms - now);
      const secs = Math.ceil(left / 1000);
      return { secs, next: secs > 0 ? st.ends_at_ms - (secs - 1) * 1000 : null, progress: dur ? Math.min(1, Math.max(0, 1 - left / dur)) : null };
    }
  }
  if (st.status === "scheduled" && counting && isNum(st.start_at_ms)) {
    const secs = Math.ceil(Math.max(0, st.start_at_ms - now) / 1000);
    return { secs, next: secs > 0 ? st.start_at_ms - (secs - 1) * 1000 : null, progress: null };
  }
  const secs = isNum(st.remaining) ? st.remaining : isNum(st.remaining_ms) ? Math.ceil(Math.max(0, st.remaining_ms) / 1000) : 0;
  const progress = st.status === "expired" ? 1 : isNum(st.progress) ? st.progress : null;
  return { secs, next: null, progress };
}

/** Clock text of whole seconds: `0:42`, `12:05`, `1:02:03` (the node's `display`). */
function fmt(secs) {
  if (secs < 0) return "-" + fmt(-secs);
  const h = Math.floor(secs / 3600), m = Math.floor((secs % 3600) / 60), s = secs % 60;
  return h > 0 ? h + ":" + String(m).padStart(2, "0") + ":" + String(s).padStart(2, "0") : m + ":" + String(s).padStart(2, "0");
}

/**
 * The command a button sends, from its `data-action`: `+30` / `-10` adjust by that many
 * seconds, any other action is sent as it is (`pause`, `resume`, `start`, `toggle`, `skip`,
 * `back`, `ack`, `reset`…). `at`: the node instant of the press (ms), when known.
 * The page adds the request `id` when it sends it.
 */
function commandFor(action, at) {
  const body = /^[+-][0-9]+$/.test(action) ? { action: "adjust", seconds: Number(action) } : { action };
  if (isNum(at)) body.at = Math.round(at);
  return body;
}

/**
 * The one Start/Pause/Resume button of a timer, on its page and on its card in the grid:
 * its action and label for the timer's `status` (a ringing timer's is Acknowledge).
 */
function toggleFor(status) {
  if (status === "running") return { action: "pause", label: "Pause" };
  if (status === "paused") return { action: "resume", label: "Resume" };
  if (status === "expired") return { action: "ack", label: "Acknowledge" };
  return { action: "start", label: "Start" };
}

export { valueAt, fmt, commandFor, toggleFor };
