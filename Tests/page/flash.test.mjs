// The flash at each cue (examples/dashboard/flash.js), on a fake clock: a scheduled cue
// flashes at its instant and not before, a cancelled one never, a late one is skipped, cues
// of several timers at one instant make one flash, never more than ~3 flashes a second (one
// a second under prefers-reduced-motion, with a soft change instead of a strobe), and the
// default: walls flash, phones do not.
// Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import * as F from "../../examples/dashboard/flash.js";

/** A fake clock: timers run when `advance` passes their instant. */
function fakeClock(start) {
  const c = { now: start, seq: 0, pending: new Map() };
  c.timers = {
    setTimeout: (f, ms) => { const id = ++c.seq; c.pending.set(id, { at: c.now + ms, f }); return id; },
    clearTimeout: (id) => { c.pending.delete(id); },
  };
  c.advance = (ms) => {
    const end = c.now + ms;
    for (;;) {
      let next = null;
      for (const [id, t] of c.pending) if (t.at <= end && (!next || t.at < next[1].at)) next = [id, t];
      if (!next) break;
      c.pending.delete(next[0]);
      c.now = next[1].at;
      next[1].f();
    }
    c.now = end;
  };
  return c;
}

function setup() {
  const clock = fakeClock(1_000_000);
  const shown = [];
  const flash = new F.Flash(() => clock.now, (kind, look) => shown.push({ at: clock.now, kind, look }), clock.timers);
  return { clock, shown, flash };
}

test("a cue flashes at its instant, only when flashing is on", () => {
  const { clock, shown, flash } = setup();
  assert.equal(flash.schedule("main:count:1", "count", clock.now + 1000, "main", true), "off");
  flash.setEnabled(true);
  assert.equal(flash.schedule("main:count:1", "count", clock.now + 1000, "main", true), "scheduled");
  assert.equal(flash.schedule("main:count:1", "count", clock.now + 1000, "main", true), "duplicate");
  clock.advance(999);
  assert.equal(shown.length, 0, "not before its instant");
  clock.advance(1);
  assert.deepEqual(shown.map((s) => [s.at, s.kind]), [[1_001_000, "count"]]);
  assert.ok(flash.find("main", "count", 1_001_000, 60), "a fired flash is still found (the event that confirms it adds none)");
});

test("cancelled and switched-off flashes never show; a late cue is skipped", () => {
  const { clock, shown, flash } = setup();
  flash.setEnabled(true);
  flash.schedule("a", "work", clock.now + 500, "main", true);
  flash.schedule("b", "rest", clock.now + 700, "other", true);
  flash.cancel((e) => e.timer === "main");
  clock.advance(1000);
  assert.deepEqual(shown.map((s) => s.kind), ["rest"]);
  flash.schedule("c", "work", clock.now + 500, "main", true);
  flash.setEnabled(false);
  clock.advance(1000);
  assert.equal(shown.length, 1, "switching off cancels what was scheduled");
  flash.setEnabled(true);
  assert.equal(flash.schedule("d", "work", clock.now - 1000, "main", false), "late-skipped");
  assert.equal(flash.schedule("e", "work", clock.now - 100, "main", false), "scheduled", "a little late: at once");
  clock.advance(0);
  assert.equal(shown.length, 2);
  // A timeout that fires seconds late (a hidden tab's throttled timers) shows nothing.
  assert.equal(flash.fire({ kind: "count", timer: "main", dueLocal: clock.now - 2000, predicted: true }), false);
  assert.equal(shown.length, 2);
});

test("never more than ~3 flashes a second: cues closer than 334 ms are merged", () => {
  const { clock, shown, flash } = setup();
  flash.setEnabled(true);
  const t = clock.now + 1000;
  // Three timers cue at one instant, and a burst of cues 100 ms apart after it.
  for (const id of ["a", "b", "c"]) flash.schedule(id + ":work", "work", t, id, true);
  for (let i = 1; i <= 20; i++) flash.schedule("burst:" + i, "count", t + i * 100, "burst", true);
  clock.advance(5000);
  const times = shown.map((s) => s.at);
  for (let i = 1; i < times.length; i++) assert.ok(times[i] - times[i - 1] >= F.MIN_GAP_MS, `gap ${times[i] - times[i - 1]} ms`);
  for (let w = t; w < t + 2100; w += 100) {
    assert.ok(times.filter((x) => x >= w && x < w + 1000).length <= 3, "at most 3 in any second");
  }
  assert.equal(times[0], t, "the first of the instant shows");
  assert.ok(flash.log.some((l) => l.what.startsWith("merged")), "the others are logged as merged");
});

test("reduced motion: a soft tint, no strobe, at most one a second", () => {
  const { clock, shown, flash } = setup();
  flash.setEnabled(true);
  flash.reduced = true;
  for (let i = 0; i < 10; i++) flash.schedule("k" + i, "count", clock.now + 100 + i * 400, "main", true);
  clock.advance(5000);
  const times = shown.map((s) => s.at);
  for (let i = 1; i < times.length; i++) assert.ok(times[i] - times[i - 1] >= F.MIN_GAP_REDUCED_MS);
  const look = shown[0].look;
  assert.ok(look.durationMs >= 600, "a slow change");
  assert.ok(Math.max(...look.keyframes.map((k) => k.opacity)) <= 0.35, "a tint, not a full-screen white");
  assert.equal(look.keyframes[0].opacity, 0, "it rises from nothing: no sudden jump in brightness");
});

test("a flash is bright and over within the gap; each cue has its colour", () => {
  for (const kind of ["count", "prepare", "work", "rest", "finish", "alert"]) {
    const l = F.look(kind, false);
    assert.ok(l.durationMs < F.MIN_GAP_MS, `${kind}: ${l.durationMs} ms`);
    assert.ok(l.keyframes[0].opacity >= 0.8 && l.keyframes[l.keyframes.length - 1].opacity === 0);
    assert.equal(l.colour, F.COLOURS[kind]);
  }
  assert.equal(F.look("work", false).colour, "#0b8a3e", "work green");
  assert.equal(F.look("rest", false).colour, "#c4161c", "rest red");
});

test("by default walls flash and phones do not", () => {
  assert.equal(F.defaultOn({ controls: false, coarse: true, width: 390, height: 844 }), true, "a screen without controls is a wall");
  assert.equal(F.defaultOn({ controls: true, coarse: true, width: 390, height: 844 }), false, "a phone");
  assert.equal(F.defaultOn({ controls: true, coarse: false, width: 1920, height: 1080 }), true, "a desktop or a wall");
  assert.equal(F.defaultOn({ controls: true, coarse: true, width: 1280, height: 800 }), true, "a tablet on the wall");
});
