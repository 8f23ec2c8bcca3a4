// The node's timetable on the page (examples/dashboard/timetable.js): an idle clock's next
// class from the retained `next` document, counting down on an injected node instant; today's
// classes from a `list_schedules` reply with the Skip of each schedule's next class; the
// `skip_next` command against the protocol's examples; a rest that waits for recovery; the
// `next` topic kept per timer by nodestate.js; and the class a run is (`current_class`): "HIIT
// 45 · started 3 min late", kept per timer by nodestate.js.
// Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import * as T from "../../examples/dashboard/timetable.js";
import { NodeState } from "../../examples/dashboard/nodestate.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const commands = JSON.parse(readFileSync(root + "Tests/Fixtures/protocol/commands.json", "utf8")).commands;
const example = (name) => commands.find((x) => x.name === name);

// The document of docs/API.md's `next` row.
const NEXT = '{"timer":"main","schedule":"hiit","name":"HIIT 45","starts_at":"2026-11-30T18:00:00Z","starts_at_ms":1796061600000,"local_date":"2026-11-30","local_time":"18:00","time_zone":"Europe/London","grace_ms":300000,"preset":"tabata"}';
const START = 1796061600000;

test("a retained next document is read; an empty payload is no class; junk is nothing", () => {
  const n = T.parseNext(NEXT);
  assert.equal(n.name, "HIIT 45");
  assert.equal(n.starts_at_ms, START);
  assert.equal(T.parseNext(""), null);
  assert.equal(T.parseNext("{oops"), null);
  assert.equal(T.parseNext('{"name":"x"}'), null, "no instant: nothing to count to");
});

test("an idle clock's line counts down to the class on the node's clock, flipping at whole seconds before it", () => {
  const n = T.parseNext(NEXT);
  const now = START - (12 * 60 + 30) * 1000; // 12:30 before
  assert.deepEqual(T.nextLine(n, now), { text: "Next: HIIT 45 at 18:00 · in 12:30", next: START - 749 * 1000 });
  // 400 ms later: still 12:30 (rounded up), until the flip instant
  assert.equal(T.nextLine(n, now + 400).text, "Next: HIIT 45 at 18:00 · in 12:30");
  const flip = T.nextLine(n, now).next;
  assert.equal(T.nextLine(n, flip - 1).text, "Next: HIIT 45 at 18:00 · in 12:30");
  assert.equal(T.nextLine(n, flip).text, "Next: HIIT 45 at 18:00 · in 12:29");
  assert.equal(T.nextLine(n, START - 3 * 3600 * 1000 - 1).text, "Next: HIIT 45 at 18:00 · in 3:00:01");
  assert.equal(T.nextLine(n, START - 1).text, "Next: HIIT 45 at 18:00 · in 0:01");
  assert.deepEqual(T.nextLine(n, START), { text: "Next: HIIT 45 at 18:00 · starting", next: null });
  assert.deepEqual(T.nextLine(n, null), { text: "Next: HIIT 45 at 18:00", next: null }, "no countdown before the clock is measured");
  assert.deepEqual(T.nextLine(null, now), { text: "", next: null });
});

const REPLY = {
  id: "r1", ok: true, schedules: [{ id: "hiit", source: "configuration" }, { id: "yoga", source: "command" }],
  classes: { date: "2026-11-30", time_zone: "Europe/London", classes: [
    { schedule: "hiit", name: "HIIT 45", local_time: "07:00", status: "started", late_ms: 65000 },
    { schedule: "yoga", name: "Yoga", local_time: "09:00", status: "skipped", reason: "skipped" },
    { schedule: "hiit", name: "HIIT 45", local_time: "12:00", status: "upcoming" },
    { schedule: "yoga", name: "Yoga", local_time: "17:00", status: "upcoming" },
    { schedule: "hiit", name: "HIIT 45", local_time: "18:00", status: "upcoming" },
    { schedule: "hiit", name: "HIIT 45", local_time: "06:00", status: "past" },
  ] },
};

test("today's classes: each schedule's first upcoming class carries the Skip, in the node's order", () => {
  const c = T.todaysClasses(REPLY);
  assert.equal(c.date, "2026-11-30");
  assert.equal(c.zone, "Europe/London");
  assert.deepEqual(c.rows.map((r) => [r.time, r.name, r.text, r.skip]), [
    ["07:00", "HIIT 45", "started (1:05 late)", false],
    ["09:00", "Yoga", "skipped (skipped)", false],
    ["12:00", "HIIT 45", "upcoming", true],
    ["17:00", "Yoga", "upcoming", true],
    ["18:00", "HIIT 45", "upcoming", false],
    ["06:00", "HIIT 45", "past", false],
  ]);
  assert.equal(c.rows[2].schedule, "hiit");
  assert.deepEqual(T.todaysClasses({ ok: false, error: { code: "x" } }).rows, []);
  assert.deepEqual(T.todaysClasses(null).rows, []);
  assert.deepEqual(T.todaysClasses({ ok: true, classes: { date: "d", classes: [null, 3] } }).rows, []);
});

test("skip_next and list_schedules are sent as the protocol's examples", () => {
  assert.deepEqual(T.skipCommand("hiit"), example("skip a schedule's next class").payload);
  assert.deepEqual(T.listCommand(), example("list the schedules").payload);
});

test("a rest that waits for recovery reads 'until recovered' with the time to its longest end", () => {
  const st = { status: "running", phase: "rest", until_hr: { below_pct_max: 65, min: "20s", max: "2m" },
    ends_at_ms: 1000000 + 90000, rest_max_ms: 120000, rest_min_ms: 20000, remaining: 90 };
  assert.equal(T.recoveryLine(st, 1000000), "Rest · until recovered (≤ 1:30)");
  assert.equal(T.recoveryLine(st, 1000000 + 500), "Rest · until recovered (≤ 1:30)");
  assert.equal(T.recoveryLine(st, 1000000 + 1000), "Rest · until recovered (≤ 1:29)");
  assert.equal(T.recoveryLine(st, 1000000 + 200000), "Rest · until recovered (≤ 0:00)");
  assert.equal(T.recoveryLine({ ...st, status: "paused", ends_at_ms: undefined, remaining: 75 }, 1000000), "Rest · until recovered (≤ 1:15)");
  assert.equal(T.recoveryLine(st, null), "Rest · until recovered (≤ 1:30)", "before the clock is measured: the snapshot's remaining");
  assert.equal(T.recoveryLine({ ...st, recovered_at_ms: 1000500 }, 1000600), null, "recovered: the usual words");
  assert.equal(T.recoveryLine({ ...st, until_hr: undefined }, 1000000), null);
  assert.equal(T.recoveryLine({ ...st, status: "idle" }, 1000000), null, "an idle timer whose first segment is one");
  assert.equal(T.recoveryLine(null, 1000000), null);
});

test("nodestate keeps each timer's next class; empty clears it; a deleted timer forgets it", () => {
  const n = new NodeState();
  n.base = "pacer/gym";
  assert.deepEqual(n.apply("timers/main/next", NEXT, true), { what: "next", timer: "main" });
  assert.equal(n.next.get("main").local_time, "18:00");
  assert.equal(n.apply("timers/main/next", "{junk", true), null);
  assert.equal(n.next.get("main").name, "HIIT 45", "junk changes nothing");
  assert.deepEqual(n.apply("timers/main/next", "", true), { what: "next", timer: "main" });
  assert.equal(n.next.has("main"), false);
  n.apply("timers/main/next", NEXT, true);
  n.apply("timers/main/state", '{"id":"main","status":"idle","revision":1}', true);
  n.apply("timers/main/state", "", true);
  assert.equal(n.next.has("main"), false);
});

// The document of docs/API.md's `current_class` row: HIIT 45 planned for 06:00, started at 06:03.
const PLANNED = 1796018400000;
const CURRENT = '{"timer":"main","schedule":"hiit","name":"HIIT 45","starts_at":"2026-11-30T06:00:00.000Z","starts_at_ms":1796018400000,"local_date":"2026-11-30","local_time":"06:00","preset":"tabata","time_zone":"Europe/London","late_ms":180000,"started_at_ms":1796018580000}';
const RUN = { id: "main", name: "Main clock", status: "running", started_at_ms: PLANNED + 180000, revision: 4 };

test("a retained current_class document is read; an empty payload is no class; junk is nothing", () => {
  const c = T.parseCurrent(CURRENT);
  assert.equal(c.name, "HIIT 45");
  assert.equal(c.late_ms, 180000);
  assert.equal(T.parseCurrent(""), null);
  assert.equal(T.parseCurrent("{oops"), null);
  assert.equal(T.parseCurrent('{"name":"x"}'), null, "no run's start: not tied to a run");
});

test("a class started late says so: 'HIIT 45 · started 3 min late'; on time, just its name", () => {
  const late = T.parseCurrent(CURRENT);
  assert.equal(T.classLine(late, RUN), "HIIT 45 · started 3 min late");
  assert.equal(T.classLine(late, { ...RUN, status: "paused" }), "HIIT 45 · started 3 min late");
  assert.equal(T.classLine({ ...late, late_ms: 0, started_at_ms: PLANNED }, { ...RUN, started_at_ms: PLANNED }), "HIIT 45", "on time");
  assert.equal(T.classLine({ ...late, late_ms: 4, started_at_ms: PLANNED + 4 }, { ...RUN, started_at_ms: PLANNED + 4 }), "HIIT 45",
    "a few ms behind its deadline is on time");
  assert.equal(T.classLine({ ...late, late_ms: 45000, started_at_ms: PLANNED + 45000 }, { ...RUN, started_at_ms: PLANNED + 45000 }),
    "HIIT 45 · started 45 s late");
  assert.equal(T.classLine({ ...late, late_ms: 270000, started_at_ms: PLANNED + 270000 }, { ...RUN, started_at_ms: PLANNED + 270000 }),
    "HIIT 45 · started 5 min late", "4 min 30 s rounds to 5");
});

test("no class line for a hand-started run, another run, a run that is over, or no class", () => {
  const c = T.parseCurrent(CURRENT);
  assert.equal(T.classLine(null, RUN), "", "a hand-started run: the node publishes no class");
  assert.equal(T.classLine(c, { ...RUN, started_at_ms: PLANNED + 900000 }), "", "started again by hand");
  for (const status of ["idle", "finished", "cancelled", "scheduled"]) assert.equal(T.classLine(c, { ...RUN, status }), "", status);
  assert.equal(T.classLine(c, null), "");
});

test("nodestate keeps each timer's current class; empty clears it; a deleted timer forgets it", () => {
  const n = new NodeState();
  n.base = "pacer/gym";
  assert.deepEqual(n.apply("timers/main/current_class", CURRENT, true), { what: "current", timer: "main" });
  assert.equal(n.current.get("main").late_ms, 180000);
  assert.equal(n.apply("timers/main/current_class", "{junk", true), null);
  assert.equal(n.current.get("main").name, "HIIT 45", "junk changes nothing");
  assert.deepEqual(n.apply("timers/main/current_class", "", true), { what: "current", timer: "main" });
  assert.equal(n.current.has("main"), false);
  n.apply("timers/main/current_class", CURRENT, true);
  n.apply("timers/main/state", JSON.stringify(RUN), true);
  n.apply("timers/main/state", "", true);
  assert.equal(n.current.has("main"), false);
});

test("a grid card: a class's run named by its class, a waiting rest's tally, an idle timer's next class, else the label and how late the class started", () => {
  const current = T.parseCurrent(CURRENT);
  const run = { status: "running", phase: "work", label: "Burpees", started_at_ms: current.started_at_ms };
  assert.deepEqual(T.cardLines(run, START - 1000, { current }, "Main"),
    { name: "HIIT 45", label: "Burpees · 3 min late", next: null });
  assert.deepEqual(T.cardLines({ ...run, label: "" }, START - 1000, { current }, "Main"),
    { name: "HIIT 45", label: "started 3 min late", next: null }, "no segment label: the lateness alone");
  const onTime = { ...current, late_ms: 0 };
  assert.deepEqual(T.cardLines(run, START - 1000, { current: onTime }, "Main"), { name: "HIIT 45", label: "Burpees", next: null });
  assert.equal(T.cardLines({ ...run, started_at_ms: 5 }, START, { current }, "Main").name, "Main", "another run: the timer's name");
  const rest = { status: "running", phase: "rest", label: "Rest", until_hr: { below_bpm: 120, who: "class_80pct" },
    ends_at_ms: 1000000 + 90000, remaining: 90 };
  assert.equal(T.cardLines(rest, 1000000, {}, "Main").label, "until recovered (≤ 1:30)", "before the node's tally");
  const recovery = { who: "class_80pct", recovered: 12, counted: 14, needed: 12, stale: 0 };
  assert.equal(T.cardLines(rest, 1000000, { recovery }, "Main").label, "12 of 14 recovered · needs 12");
  assert.equal(T.cardLines({ ...rest, recovered_at_ms: 1000000 }, 1000100, { recovery }, "Main").label, "Rest", "recovered: the label again");
  const idle = { status: "idle", label: "" };
  const lines = T.cardLines(idle, START - 750000, { next: T.parseNext(NEXT) }, "Main");
  assert.equal(lines.label, T.nextLine(T.parseNext(NEXT), START - 750000).text);
  assert.ok(lines.label.length > 0 && lines.next.next != null, "the next class and the instant its line changes");
  assert.deepEqual(T.cardLines(null, START, {}, "Main"), { name: "Main", label: "", next: null });
});
