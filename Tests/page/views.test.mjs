// What the wall page shows, decided without the DOM (examples/dashboard/views.js): a timer's
// phase and clock text for every state of states.json at each instant given (what the node's
// own `display` shows), offline and syncing, the footer's connection and clock lines, and the
// grid's columns on a wall and a phone. Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { PHASE_TEXT, viewOf, statusLine, gridColumns } from "../../examples/dashboard/views.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const states = JSON.parse(readFileSync(root + "Tests/Fixtures/protocol/states.json", "utf8")).states;
const up = (now) => ({ brokerUp: true, nodeOnline: true, now });

test("every state of states.json: the node's own display at each instant, a phase in words", () => {
  let n = 0;
  for (const ex of states) {
    for (const at of ex.at || []) {
      const v = viewOf(ex.state, up(at.now_ms));
      assert.equal(v.text, at.display, ex.name + " at " + at.now_ms);
      assert.equal(v.v.next, at.next_flip_ms, ex.name);
      assert.ok(PHASE_TEXT[v.phase], ex.name + ": " + v.phase);
      n++;
    }
    if (ex.state.status === "paused") assert.equal(viewOf(ex.state, up(0)).phase, "paused");
  }
  assert.ok(n >= 10, n + " instants");
});

test("offline, and syncing until the clock is known", () => {
  const running = states.find((s) => s.state.status === "running").state;
  const idle = states.find((s) => s.state.status === "idle").state;
  assert.deepEqual(viewOf(running, { brokerUp: false, nodeOnline: true, now: 1 }), { phase: "offline", why: "No connection to the broker — retrying" });
  assert.deepEqual(viewOf(running, { brokerUp: true, nodeOnline: false, now: 1 }), { phase: "offline", why: "The timer node is offline" });
  assert.deepEqual(viewOf(null, up(1)), { phase: "syncing", why: null });
  assert.deepEqual(viewOf(running, up(null)), { phase: "syncing", why: null }, "a running timer waits for the clock");
  assert.equal(viewOf(idle, up(null)).text, "1:30", "an idle one shows its time without the clock");
  assert.equal(viewOf(idle, { brokerUp: true, nodeOnline: null, now: null }).phase, idle.phase, "status not heard yet: not offline");
});

test("the footer's lines", () => {
  const base = { brokerUp: true, nodeOnline: true, info: { node: "gym" }, node: null, base: "pacer/gym", offset: 12, method: "time", rtt: 6, syncing: false };
  assert.deepEqual(statusLine(base), { conn: "node gym", ok: true, sync: "clock ±3 ms" });
  assert.equal(statusLine({ ...base, rtt: 0.4 }).sync, "clock ±1 ms", "never ±0");
  assert.deepEqual(statusLine({ ...base, brokerUp: false }), { conn: "broker offline, retrying", ok: false, sync: "clock ±3 ms" });
  assert.equal(statusLine({ ...base, nodeOnline: false }).conn, "node gym offline");
  assert.equal(statusLine({ ...base, info: null, node: "hall" }).conn, "node hall");
  assert.equal(statusLine({ ...base, info: null, base: "club/b1" }).conn, "node b1");
  assert.equal(statusLine({ ...base, info: null, base: null }).conn, "connected");
  assert.equal(statusLine({ ...base, method: "state" }).sync, "clock ≈ from states (no time reply)");
  assert.equal(statusLine({ ...base, method: "state", syncing: true }).sync, "syncing clock…");
  assert.equal(statusLine({ ...base, offset: null }).sync, "");
});

test("the grid: every card on a wall without scrolling, as large as fits; a phone scrolls one column", () => {
  assert.equal(gridColumns(5, 390, 700, 12, true), "", "a phone");
  assert.equal(gridColumns(1, 1920, 960, 16, false), "repeat(1, 1888px)", "one card: the width, less the gaps");
  assert.equal(gridColumns(1, 1920, 600, 16, false), "repeat(1, " + Math.floor((600 - 32 - 110) / 0.42) + "px)", "a low screen: the height");
  assert.equal(gridColumns(20, 1920, 960, 16, true), "repeat(7, 260px)", "never smaller than 260 px");
  for (const n of [2, 3, 4, 6, 9, 12]) {
    const W = 1920, H = 960, gap = 16;
    const m = /^repeat\(([0-9]+), ([0-9]+)px\)$/.exec(gridColumns(n, W, H, gap, true));
    assert.ok(m, String(n));
    const cols = Number(m[1]), w = Number(m[2]), rows = Math.ceil(n / cols);
    if (w === 260) continue; // the smallest card: so many that the wall scrolls (20 here)
    assert.ok(cols * w + (cols - 1) * gap <= W - 2 * gap + 1, n + " cards: in the width");
    assert.ok(rows * (0.42 * w + 174) + (rows - 1) * gap <= H - 2 * gap + 1, n + " cards: in the height");
    // one column more or fewer would make smaller cards
    for (const other of [cols - 1, cols + 1]) {
      if (other < 1 || other > n) continue;
      const r = Math.ceil(n / other);
      let ow = (W - 2 * gap - (other - 1) * gap) / other;
      if (r * (0.42 * ow + 174) + (r - 1) * gap > H - 2 * gap) ow = ((H - 2 * gap - (r - 1) * gap) / r - 174) / 0.42;
      assert.ok(ow <= w + 1, n + " cards: " + other + " columns are not larger");
    }
  }
});
