// The web page's counting, clock text and button commands (examples/dashboard/clock.js)
// against the protocol's examples (Tests/Fixtures/protocol/), the same files the Swift tests
// (Tests/PacerProtocolTests/FixtureTests.swift) and the Python display's test read.
// Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
// The very module the page imports, not a copy.
import { valueAt, fmt, commandFor, toggleFor } from "../../examples/dashboard/clock.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const read = (path) => readFileSync(root + path, "utf8");

const states = JSON.parse(read("Tests/Fixtures/protocol/states.json")).states;
const commands = JSON.parse(read("Tests/Fixtures/protocol/commands.json")).commands;

test("states.json has examples", () => {
  assert.ok(states.length >= 10, `${states.length} states`);
});

for (const { name, state, at } of states) {
  test(`states.json: ${name}: the page shows what the node shows, and flips when it does`, () => {
    assert.ok(at.length > 0);
    for (const point of at) {
      const where = `${name} at as_of + ${point.now_ms - state.as_of_ms} ms`;
      const v = valueAt(state, point.now_ms);
      assert.equal(v.secs, point.shows, where + ": seconds");
      assert.equal(fmt(v.secs), point.display, where + ": clock text");
      assert.equal(v.next, point.next_flip_ms, where + ": next flip");
    }
  });
}

// Each button's data-action (index.html, and the actions single.js and grid.js give the Start/Pause/Resume
// button) and the example in commands.json whose canonical form it must send.
const BUTTONS = {
  "back": "back",
  "-10": "adjust -10",
  "+30": "adjust +30 (word)",
  "toggle": "toggle (word)",
  "start": "start again (word)",
  "pause": "pause (word)",
  "resume": "resume",
  "skip": "skip",
  "ack": "ack",
  "reset": "reset",
  "cancel": "cancel",
  "finish": "finish",
  "delete": "delete (word)",
};

test("commands.json: every button sends the canonical command of its example", () => {
  for (const [action, name] of Object.entries(BUTTONS)) {
    const example = commands.find((c) => c.name === name);
    assert.ok(example, `commands.json has no example named ${JSON.stringify(name)}`);
    assert.ok(example.encoded, `${name}: an accepted example`);
    assert.deepEqual(commandFor(action), example.encoded, `button ${action} (${name})`);
  }
});

test("every button of the page is checked against an example", () => {
  const html = read("examples/dashboard/index.html");
  const single = read("examples/dashboard/single.js"), grid = read("examples/dashboard/grid.js");
  const inPage = [...html.matchAll(/data-action="([^"]+)"/g)].map((m) => m[1]);
  // The grid's cards make their buttons in grid.js (data-action="…" in its markup).
  inPage.push(...[...grid.matchAll(/data-action="([^"]+)"/g)].map((m) => m[1]));
  // The Start/Pause/Resume button of a timer's page (single.js) and of each card (grid.js)
  // takes its action from toggleFor(status), for every status.
  assert.match(single, /el\.toggle\.dataset\.action = tf\.action;/, "the page's toggle button takes toggleFor's action");
  assert.match(grid, /tg\.dataset\.action = tf\.action;/, "a card's toggle button takes toggleFor's action");
  for (const status of ["idle", "scheduled", "running", "paused", "expired", "finished", "cancelled", null]) inPage.push(toggleFor(status).action);
  assert.ok(inPage.length >= 13, inPage.join(" "));
  for (const action of inPage) assert.ok(action in BUTTONS, `the page's action ${JSON.stringify(action)} has no example in BUTTONS`);
});

test("the one Start/Pause/Resume button follows the timer's status", () => {
  assert.deepEqual(toggleFor("running"), { action: "pause", label: "Pause" });
  assert.deepEqual(toggleFor("paused"), { action: "resume", label: "Resume" });
  assert.deepEqual(toggleFor("expired"), { action: "ack", label: "Acknowledge" });
  for (const s of ["idle", "scheduled", "finished", "cancelled", null]) assert.deepEqual(toggleFor(s), { action: "start", label: "Start" }, String(s));
});

test("a pressed button carries the node instant of the press, in whole ms", () => {
  const pause = commands.find((c) => c.name === "pause as pressed, if still at revision 7").encoded;
  assert.deepEqual({ ...commandFor("pause", pause.at + 0.4), if_revision: 7 }, pause);
  assert.deepEqual(commandFor("-10", 1000.5), { action: "adjust", seconds: -10, at: 1001 });
  assert.deepEqual(commandFor("skip", null), { action: "skip" });
});

// ---- edge cases ----------------------------------------------------------------------

const t0 = 1_795_320_000_000;
const running = { status: "running", phase: "work", counts_up: false, remaining: 3, ends_at_ms: t0 + 3_000, segment_started_at_ms: t0 - 7_000, segment_duration_ms: 10_000, progress: 0.7, as_of_ms: t0 };

test("a countdown at zero and past its end shows 0:00, full, and waits for the node", () => {
  for (const now of [t0 + 3_000, t0 + 3_001, t0 + 60_000]) {
    assert.deepEqual(valueAt(running, now), { secs: 0, next: null, progress: 1 }, `at +${now - t0 - 3_000} ms`);
  }
  assert.deepEqual(valueAt(running, t0 + 2_999.5), { secs: 1, next: t0 + 3_000, progress: 0.99995 });
  assert.equal(fmt(0), "0:00");
});

test("a countdown counts from ends_at_ms, not from the snapshot's remaining", () => {
  const v = valueAt({ ...running, remaining: 99 }, t0 + 500);
  assert.equal(v.secs, 3);
  assert.equal(v.next, t0 + 1_000);
  assert.equal(v.progress, 0.75);
});

test("without the node instant it needs, the page shows the snapshot's value and does not count", () => {
  const { ends_at_ms, ...noEnd } = running;
  assert.deepEqual(valueAt(noEnd, t0 + 1_500), { secs: 3, next: null, progress: 0.7 });
  // A stopwatch without segment_started_at_ms does not count down to its target's ends_at_ms.
  const watch = { ...running, phase: "session", counts_up: true, remaining: 7, segment_started_at_ms: undefined };
  assert.deepEqual(valueAt(watch, t0 + 1_500), { secs: 7, next: null, progress: 0.7 });
  // A scheduled timer without start_at_ms: its first segment's length.
  assert.deepEqual(valueAt({ status: "scheduled", remaining: 300, progress: 0 }, t0), { secs: 300, next: null, progress: 0 });
  // Not synced yet (now null): nothing counts.
  assert.deepEqual(valueAt(running, null), { secs: 3, next: null, progress: 0.7 });
  // Neither remaining nor remaining_ms: 0; remaining_ms alone: rounded up.
  assert.deepEqual(valueAt({ status: "idle" }, t0), { secs: 0, next: null, progress: null });
  assert.equal(valueAt({ status: "paused", remaining_ms: 4_001 }, t0).secs, 5);
  assert.equal(valueAt({ status: "expired", remaining: 0 }, t0).progress, 1);
});

test("a stopwatch counts from segment_started_at_ms, not from segment_elapsed_ms and as_of_ms", () => {
  // A snapshot whose elapsed fields disagree with its start instant (the node's wall clock
  // jumped between them): segment_started_at_ms is the instant the node republishes.
  const watch = { status: "running", phase: "session", counts_up: true, remaining: 61, segment_started_at_ms: t0, segment_elapsed_ms: 5_000, as_of_ms: t0 + 61_250, segment_duration_ms: 120_000 };
  assert.deepEqual(valueAt(watch, t0 + 61_250), { secs: 61, next: t0 + 62_000, progress: 61_250 / 120_000 });
  // Before its start (a node clock ahead of the snapshot): 0:00 until one second after it.
  assert.deepEqual(valueAt(watch, t0 - 400), { secs: 0, next: t0 + 1_000, progress: 0 });
});

test("a scheduled timer counts to start_at_ms and stops at 0:00", () => {
  const st = { status: "scheduled", remaining: 300, start_at_ms: t0 + 2_000 };
  assert.deepEqual(valueAt(st, t0 + 1_000), { secs: 1, next: t0 + 2_000, progress: null });
  assert.deepEqual(valueAt(st, t0 + 2_500), { secs: 0, next: null, progress: null });
});

test("clock text: m:ss below an hour, h:mm:ss from an hour, like the node's display", () => {
  const cases = [[0, "0:00"], [9, "0:09"], [59, "0:59"], [60, "1:00"], [725, "12:05"], [3599, "59:59"], [3600, "1:00:00"], [3723, "1:02:03"], [36000, "10:00:00"], [-5, "-0:05"]];
  for (const [secs, text] of cases) assert.equal(fmt(secs), text, String(secs));
});
