// offset.js: a node's clock offset, the one estimate the wall page (app.js, through
// connection.js), the front desk (desk.js) and the class view (class.js) count from. No DOM,
// no MQTT: Tests/page/offset.test.mjs tests this very file in Node. See docs/dashboard.md,
// "How the time stays exact".
//
// NTP-style: a clock request sent at local instant `sent`, its reply carrying the node's
// clock `now_ms`, received at local `at`, gives offset = now_ms − (sent + at) / 2, off by at
// most half the round trip (at − sent); the sample with the smallest round trip wins. The
// node's clock is then the local clock + offset.
//
// Two ways to take samples:
// - one by one (the front desk): every sample since the last reset competes, the smallest
//   round trip wins at once;
// - in rounds (the wall page and the class view measure again every few minutes, as clocks
//   drift): `const r = clock.round()`, a few `r.add(…)`, `r.end()`; a round's winner replaces
//   the estimate when the round ends (then `moved` says whether it moved by more than half a
//   millisecond). While no reply has come yet, the round's first one is used at once.
//
// With `{ fromStates: true }`, a live (not retained) state bounds the offset from below until
// a reply comes, for a page that may not publish clock requests (a broker ACL): the node
// published it at its `as_of_ms` and it arrived at local `arrival`, so offset ≥ as_of_ms −
// arrival. reset() forgets the estimate: the connection was lost, or the node went offline (it
// may come back with another clock).

/** How far a round's winner must move the estimate to count as moved (ms). */
const MOVED_MS = 0.5;

class ClockOffset {
  constructor(options) {
    this.fromStates = !!(options && options.fromStates);
    this.reset();
  }

  /**
   * Forgets the estimate, its samples and bounds. A round open across a reset still ends
   * with its winner (its replies came before the loss, from the same clock).
   */
  reset() {
    this.best = null;      // the estimate: {offset, rtt}; rtt null for a bound from states
    this.method = null;    // "time" (from clock replies), "state" (a live state's bound), null
    this.samples = 0;      // replies taken since the reset
  }

  /** The node's clock minus the local clock (ms), or null while unknown. */
  get offset() { return this.best ? this.best.offset : null; }
  /** The winning sample's round trip (ms), or null (none, or a bound from states). */
  get rtt() { return this.best ? this.best.rtt : null; }

  /** Opens a round of samples (see above): a Round, with `add` and `end`. */
  round() { return new Round(this); }

  /**
   * A clock reply, one by one: sent at local `sent`, received at local `at`, with the node's
   * `nowMs`; it becomes the estimate when its round trip is the smallest since the reset.
   * Returns the sample `{rtt, offset}`, or null for nonsense.
   */
  add(sent, at, nowMs) {
    const sample = measure(sent, at, nowMs);
    if (!sample) return null;
    this.samples++;
    if (this.method !== "time" || sample.rtt < this.best.rtt) { this.best = sample; this.method = "time"; }
    return sample;
  }

  /**
   * A live state published at the node's `asOfMs`, received at local `arrival`: raises the
   * bound while no reply has come (only with `fromStates`). Returns whether the estimate changed.
   */
  live(asOfMs, arrival) {
    if (!this.fromStates || this.method === "time" || typeof asOfMs !== "number" || !isFinite(asOfMs)) return false;
    const est = asOfMs - arrival;
    if (this.best != null && !(est > this.best.offset)) return false;
    this.best = { offset: est, rtt: null }; this.method = "state";
    return true;
  }

  /** The node's clock at local instant `local`, or null while the offset is unknown. */
  nodeAt(local) { return this.best ? local + this.best.offset : null; }
}

/** A sample: offset = now_ms − (sent + at) / 2; null for a reply before its request or no number. */
function measure(sent, at, nowMs) {
  if (!(at >= sent) || typeof nowMs !== "number" || !isFinite(nowMs)) return null;
  return { rtt: at - sent, offset: nowMs - (sent + at) / 2 };
}

/** A round of clock requests on `clock` (ClockOffset.round()). */
class Round {
  constructor(clock) { this.clock = clock; this.best = null; }

  /** A reply (as ClockOffset.add); the round's smallest round trip wins when it ends. */
  add(sent, at, nowMs) {
    const sample = measure(sent, at, nowMs), c = this.clock;
    if (!sample) return null;
    c.samples++;
    if (!this.best || sample.rtt < this.best.rtt) this.best = sample;
    if (c.method !== "time") { c.best = sample; c.method = "time"; } // the first answer shown at once
    return sample;
  }

  /**
   * Ends the round: its winner (if any reply came) becomes the estimate. Returns `{best,
   * moved}`: `best` null when no reply came (the estimate before is kept), `moved` whether the
   * estimate changed by more than half a millisecond (or was unknown).
   */
  end() {
    const c = this.clock, best = this.best;
    if (!best) return { best: null, moved: false };
    const moved = c.best == null || Math.abs(best.offset - c.best.offset) > MOVED_MS;
    c.best = best; c.method = "time";
    return { best, moved };
  }
}

export { ClockOffset, Round, MOVED_MS, measure };
