// The node's clock offset (examples/dashboard/offset.js), the one estimate the wall page, the
// front desk and the class view count from: NTP-style samples, the smallest round trip wins
// (one by one, and in rounds), the live states' lower bound, reset when the connection or the
// node is lost. Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { ClockOffset, measure, MOVED_MS } from "../../examples/dashboard/offset.js";
import { valueAt, fmt } from "../../examples/dashboard/clock.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const states = JSON.parse(readFileSync(root + "Tests/Fixtures/protocol/states.json", "utf8")).states;

test("a sample: offset = now_ms − (sent + at) / 2, off by at most half the round trip", () => {
  // node clock = local + 5000; 30 ms up, 10 ms back: the reply says local 1030 + 5000
  assert.deepEqual(measure(1000, 1040, 1030 + 5000), { rtt: 40, offset: 5010 });
  // symmetric: exact
  assert.deepEqual(measure(2000, 2004, 2002 + 5000), { rtt: 4, offset: 5000 });
  // nonsense: a reply before its request, no number
  assert.equal(measure(4000, 3999, 1), null);
  assert.equal(measure(4000, 4001, "x"), null);
  assert.equal(measure(4000, 4001, NaN), null);
  for (let i = 0; i < 200; i++) { // whatever the asymmetry, the error is within half the round trip
    const up = (i * 7) % 50, down = (i * 13) % 50, sent = 1e12 + i * 1000, trueOffset = -123456.5 + i;
    const s = measure(sent, sent + up + down, sent + up + trueOffset);
    assert.ok(Math.abs(s.offset - trueOffset) <= s.rtt / 2 + 1e-6);
  }
});

test("one by one (the front desk): the smallest round trip since the reset wins at once", () => {
  const c = new ClockOffset();
  assert.equal(c.offset, null);
  assert.equal(c.nodeAt(1000), null);
  c.add(1000, 1040, 1000 + 30 + 5000);
  assert.equal(c.offset, 5010);
  assert.equal(c.rtt, 40);
  assert.equal(c.method, "time");
  c.add(2000, 2004, 2002 + 5000);     // a 4 ms symmetric one replaces it
  assert.equal(c.offset, 5000);
  c.add(3000, 3100, 3090 + 5000);     // a slower one does not
  assert.equal(c.offset, 5000);
  assert.equal(c.rtt, 4);
  assert.equal(c.add(4000, 3999, 1), null); // nonsense is ignored
  assert.equal(c.samples, 3);
  assert.equal(c.nodeAt(10_000), 15_000);
  c.reset();
  assert.equal(c.offset, null);
  assert.equal(c.method, null);
  assert.equal(c.samples, 0);
});

test("in rounds (the wall page): the first answer at once, the round's smallest round trip at its end", () => {
  const c = new ClockOffset();
  const r = c.round();
  r.add(1000, 1040, 1030 + 5000);     // the first answer: shown at once
  assert.equal(c.offset, 5010);
  r.add(2000, 2004, 2002 + 5000);     // better, but the estimate moves only at the round's end
  assert.equal(c.offset, 5010);
  r.add(3000, 3100, 3090 + 5000);
  const done = r.end();
  assert.deepEqual(done.best, { rtt: 4, offset: 5000 });
  assert.equal(done.moved, true, "10 ms is more than " + MOVED_MS + " ms");
  assert.equal(c.offset, 5000);
  assert.equal(c.rtt, 4);
  // The next round replaces the estimate with its own winner, even with a longer round trip
  // (clocks drift: an old measurement is not better for being faster).
  const r2 = c.round();
  r2.add(10_000, 10_010, 10_005 + 5000.25);
  assert.equal(c.offset, 5000, "kept until the round ends");
  const d2 = r2.end();
  assert.equal(c.offset, 5000.25);
  assert.equal(c.rtt, 10);
  assert.equal(d2.moved, false, "0.25 ms does not move the foreseen cues");
  // A round with no answer keeps the estimate.
  const r3 = c.round();
  assert.deepEqual(r3.end(), { best: null, moved: false });
  assert.equal(c.offset, 5000.25);
});

test("the live states' lower bound: offset ≥ as_of − arrival, until a reply comes", () => {
  const c = new ClockOffset({ fromStates: true });
  // The node is 5000 ms ahead; each state arrives 3, 1 and 7 ms after it was published.
  assert.equal(c.live(100_000, 100_000 - 5000 + 3), true);
  assert.equal(c.offset, 4997);
  assert.equal(c.method, "state");
  assert.equal(c.rtt, null);
  assert.equal(c.live(200_000, 200_000 - 5000 + 1), true, "a faster one raises the bound");
  assert.equal(c.offset, 4999);
  assert.equal(c.live(300_000, 300_000 - 5000 + 7), false, "a slower one does not lower it");
  assert.equal(c.offset, 4999);
  assert.equal(c.live("soon", 1), false);
  // A reply replaces the bound, and from then on states are not looked at.
  const r = c.round();
  r.add(400_000, 400_002, 400_001 + 5000);
  assert.equal(c.offset, 5000);
  assert.equal(c.method, "time");
  assert.equal(c.live(500_000, 500_000 - 6000), false);
  r.end();
  assert.equal(c.offset, 5000);
  // Without the option (the front desk), states never give an offset.
  const desk = new ClockOffset();
  assert.equal(desk.live(100_000, 95_000), false);
  assert.equal(desk.offset, null);
});

test("every live state of states.json bounds the node's offset from below, and counts as the node shows", () => {
  const trueOffset = 12_345.5; // node clock = local + this
  for (const ex of states) {
    const st = ex.state;
    if (st.as_of_ms == null) continue;
    const c = new ClockOffset({ fromStates: true });
    const arrival = st.as_of_ms - trueOffset + 4; // 4 ms on the way
    c.live(st.as_of_ms, arrival);
    assert.ok(c.offset <= trueOffset, ex.name);
    assert.equal(trueOffset - c.offset, 4, ex.name);
    // With the exact offset from a reply, the page counts what the node's `display` shows.
    const r = c.round();
    r.add(0, 0, trueOffset);
    r.end();
    for (const at of ex.at || []) assert.equal(fmt(valueAt(st, c.nodeAt(at.now_ms - trueOffset)).secs), at.display, ex.name);
  }
});

test("reset on reconnect: forgotten, re-measured; a bound from states works again; a round open across it still ends", () => {
  const c = new ClockOffset({ fromStates: true });
  const r = c.round();
  r.add(0, 10, 5 + 7000);
  assert.equal(c.offset, 7000);
  c.reset(); // the connection is lost
  assert.equal(c.offset, null);
  assert.equal(c.method, null);
  assert.equal(c.live(50_000, 50_000 - 7000 + 2), true, "states count again until the next reply");
  assert.equal(c.offset, 6998);
  // The round whose replies came before the loss still gives its winner (the same clock).
  assert.equal(r.end().best.offset, 7000);
  assert.equal(c.offset, 7000);
  assert.equal(c.method, "time");
  // After a reset the next round's first answer is shown at once again.
  c.reset();
  const r2 = c.round();
  r2.add(100, 120, 110 + 9000);
  assert.equal(c.offset, 9000);
});
