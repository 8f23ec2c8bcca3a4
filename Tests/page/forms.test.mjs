// The set-up form's logic (examples/dashboard/forms.js): the node's duration grammar and its
// messages, each field's checks as the coach types, the `start` and saved-workout commands the
// form sends (checked against their examples in Tests/Fixtures/protocol/commands.json), and
// which field a node's error names.
// Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
// The very module the page imports, not a copy.
import * as F from "../../examples/dashboard/forms.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const read = (path) => readFileSync(root + path, "utf8");
const commands = JSON.parse(read("Tests/Fixtures/protocol/commands.json")).commands;
const example = (name) => {
  const c = commands.find((x) => x.name === name);
  assert.ok(c && c.encoded, `commands.json has an accepted example named ${JSON.stringify(name)}`);
  return c.encoded;
};

// ---- durations --------------------------------------------------------------------

test("durations are read as the node reads them (docs/timer-core.md)", () => {
  const cases = [
    ["90", 90_000], ["90s", 90_000], ["1m30s", 90_000], ["1h", 3_600_000], ["500ms", 500], ["1:30", 90_000],
    ["01:30:00", 5_400_000], ["1.5m", 90_000], ["1h 30m", 5_400_000], ["2d", 172_800_000], ["10 seconds", 10_000],
    ["PT1M30S", 90_000], [" 40S ", 40_000], ["-5", -5_000], ["-5s", -5_000], ["0:30.25", 30_250], ["1.5", 1_500],
  ];
  for (const [text, ms] of cases) assert.equal(F.parseDuration(text), ms, text);
  for (const bad of ["", "abc", "1m30", "1:60", "1:2:3:4", "5 parsecs", "-", "1:30s"]) assert.equal(F.parseDuration(bad), null, bad);
});

test("compact and describe spell durations as the node does, and compact reads back", () => {
  const cases = [[0, "0s", "0 s"], [500, "500ms", "500 ms"], [5_000, "5s", "5 s"], [1_500, "1.5s", "1.5 s"], [90_000, "1m30s", "1 m 30 s"],
    [7_200_000, "2h", "2 h"], [604_800_000, "7d", "7 days"], [86_400_000, "1d", "1 day"], [-5_000, "-5s", "-5 s"], [90_050, "1m30.05s", "1 m 30.05 s"]];
  for (const [ms, c, d] of cases) {
    assert.equal(F.compact(ms), c, `compact ${ms}`);
    assert.equal(F.describe(ms), d, `describe ${ms}`);
  }
  let x = 12345;
  for (let i = 0; i < 2000; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    const ms = x % 3 === 0 ? x % 1000 : x % 3 === 1 ? (x % 100_000) * 1000 : x * 7 % F.MAX_MS;
    assert.equal(F.parseDuration(F.compact(ms)), ms, F.compact(ms));
  }
});

test("the countdown's HH:MM:SS field: digits fill from the right, clock text as written", () => {
  const cases = [["00:12:00", 720_000], ["12:00", 720_000], ["1200", 720_000], ["90", 90_000], ["13000", 5_400_000], ["1:02:03", 3_723_000],
    ["5", 5_000], ["12m", 720_000], ["100:00:00", 360_000_000]];
  for (const [text, ms] of cases) assert.equal(F.parseHMS(text), ms, text);
  assert.equal(F.parseHMS("abc"), null);
  assert.equal(F.hms(720_000), "00:12:00");
  assert.equal(F.hms(3_723_000), "01:02:03");
  assert.equal(F.clock(720_000), "12:00");
  assert.equal(F.clock(5_400_000), "1:30:00");
});

test("the rest's ±15 s stepper: from 1:30, never under 15 s", () => {
  assert.equal(F.stepDuration("1:30", 15_000), "1:45");
  assert.equal(F.stepDuration("1:30", -15_000), "1:15");
  assert.equal(F.stepDuration("90", 15_000), "1:45");
  assert.equal(F.stepDuration("20s", -15_000), "0:15");
  assert.equal(F.stepDuration("", 15_000), "1:45");
  assert.equal(F.stepDuration("59:50", 15_000), "1:00:05");
});

// ---- checks as the coach types ---------------------------------------------------------

const field = (kind, key) => F.KINDS[kind].fields.find((f) => f.key === key);

test("each field's check gives the node's own message (as the node answered them)", () => {
  // Messages copied from a real node's replies to the same values.
  const cases = [
    [field("interval", "work"), "-5", "work must be between 1 s and 7 days, got -5 s"],
    [field("interval", "work"), "8d", "work must be between 1 s and 7 days, got 8 days"],
    [field("interval", "rounds"), "0", "rounds must be between 1 and 1,000, got 0"],
    [field("interval", "sets"), "200", "sets must be between 1 and 100, got 200"],
    [field("countdown", "duration"), "0", "duration must be between 1 s and 7 days, got 0 s"],
    [field("stopwatch", "target"), "0", "target must be between 1 s and 7 days, got 0 s"],
  ];
  for (const [f, text, message] of cases) assert.deepEqual(F.checkField(f, text), { error: message }, `${f.key} = ${text}`);
  const block = F.buildSpec("program", { blocks: [{ kind: "work", duration: "0s", label: "" }] });
  assert.equal(block.errors["segments[0].duration"], "segments[0].duration must be between 1 s and 7 days, got 0 s");
  const big = F.buildSpec("interval", { work: "40s", rounds: "1000", sets: "100" });
  assert.equal(big.errors.rounds, "the program would have 100,000 segments; at most 10,000 are allowed (lower rounds, sets or exercises)");
  assert.equal(F.checkName("a/b"), "name cannot contain '/' (MQTT topic characters / + # are not allowed), got \"a/b\"");
});

test("fields say what is wrong with a value the node cannot read", () => {
  assert.match(F.checkField(field("interval", "work"), "forty").error, /^work must be a duration like 90, "90s", "1m30s" or "1:30", got "forty"$/);
  assert.match(F.checkField(field("interval", "work"), "").error, /^work is required/);
  assert.match(F.checkField(field("interval", "rounds"), "8.5").error, /^rounds must be a whole number/);
  assert.deepEqual(F.checkField(field("interval", "rest"), ""), { value: undefined });
  assert.deepEqual(F.checkField(field("interval", "rest"), "0"), { value: "0s", ms: 0 });
  assert.deepEqual(F.checkField(field("interval", "exercises"), "Squat, Push-up\nRows,,"), { value: ["Squat", "Push-up", "Rows"] });
  assert.match(F.checkField(field("interval", "exercises"), "x".repeat(101)).error, /^exercises\[0\] must be at most 100 characters, got 101$/);
  assert.match(F.checkField(field("rest", "exercise"), "a\tb").error, /^exercise must not contain control characters/);
  assert.match(F.checkName("   "), /^name must not be only white space$/);
  assert.equal(F.checkName("HIIT 45-15"), null);
  assert.equal(F.checkWorkoutName("HIIT 45/15"), null);
  assert.equal(F.checkId("kitchen"), null);
  assert.match(F.checkId("Kitchen"), /^timer id must be 1 to 64 characters/);
  assert.match(F.checkId("kitchen", ["kitchen"]), /^timer id 'kitchen' is taken/);
  assert.match(F.checkId("-x"), /starting with a letter or digit/);
  assert.match(F.checkId("x".repeat(65)), /1 to 64/);
});

test("ids from names: lower case, accents dropped, unique among the node's timers", () => {
  assert.equal(F.slug("HIIT 45/15"), "hiit-45-15");
  assert.equal(F.slug("Bänkdrücken"), "bankdrucken");
  assert.equal(F.slug("  Kitchen timer! "), "kitchen-timer");
  assert.equal(F.slug("***"), "timer");
  assert.equal(F.slug("x".repeat(80)).length, 64);
  for (const name of ["HIIT 45/15", "Ölwechsel", "a", "_x", "---", "x".repeat(80) + "!"]) assert.match(F.slug(name), F.TIMER_ID, name);
  assert.equal(F.uniqueId("tabata", ["tabata", "tabata-2"]), "tabata-3");
  assert.equal(F.uniqueId("main", []), "main");
  assert.equal(F.uniqueId("x".repeat(64), ["x".repeat(64)]), "x".repeat(62) + "-2");
  assert.equal(F.timerName("HIIT 45/15"), "HIIT 45-15");
});

test("an interval's segments are counted as the node counts them", () => {
  assert.equal(F.intervalSegments({ work: "20s", rest: "10s", rounds: 8 }), 15); // no last rest
  assert.equal(F.intervalSegments({ work: "20s", rest: "10s", rounds: 8, prepare: "10s" }), 16);
  assert.equal(F.intervalSegments({ work: "40s", rest: "20s", rounds: 3, sets: 2, set_rest: "1m", exercises: ["a", "b"] }), 23);
  assert.equal(F.intervalSegments({ work: "40s", rounds: 3, sets: 2 }), 6);
  assert.equal(F.intervalSegments({ work: "40s", rounds: 3, sets: 2, set_rest: "1m", cooldown: "2m" }), 8);
});

// ---- what the form sends ---------------------------------------------------------------

test("commands.json: the interval form sends 'start an interval'", () => {
  const { body, errors } = F.buildStart({ kind: "interval", raw: { work: "40", rest: "20s", rounds: "8" } });
  assert.deepEqual(errors, {});
  assert.deepEqual(body, example("start an interval"));
});

test("commands.json: the countdown form in HH:MM:SS sends 'start a countdown with a name'", () => {
  for (const typed of ["00:12:00", "1200", "12:00", "12m"]) {
    const { body } = F.buildStart({ kind: "countdown", name: "Kitchen", raw: { duration: typed, label: "", ack: false } });
    assert.deepEqual(body, example("start a countdown with a name"), typed);
  }
});

test("commands.json: a preset with its parameters, a saved workout, save and delete", () => {
  assert.deepEqual(F.buildStart({ kind: "preset", preset: "emom", params: { rounds: "12" } }).body, example("start a preset with its parameters"));
  assert.deepEqual(F.buildStart({ kind: "preset", preset: "hiit" }).body, example("start a saved workout"));
  const spec = F.buildSpec("interval", { work: "45", rest: "15", rounds: "10" }).spec;
  assert.deepEqual(F.saveWorkout("hiit", "HIIT 45/15", spec), example("save a workout"));
  assert.deepEqual(F.deleteWorkout("hiit"), example("delete a workout"));
  assert.match(F.buildStart({ kind: "preset", preset: "emom", params: { rounds: "0" } }).errors.rounds, /^rounds must be between 1 and 1,000, got 0$/);
});

test("commands.json: a rest that comes back ready after Acknowledge; the node's rule checked as it types", () => {
  const { body, errors } = F.buildStart({ kind: "rest", raw: { duration: "1:30", exercise: "Squat", next: "Rows", ack: true, after_ack: true } });
  assert.deepEqual(errors, {});
  assert.deepEqual(body, example("start a rest that comes back ready after Acknowledge"));
  assert.equal(F.buildSpec("rest", { duration: "1:30", ack: true, after_ack: false }).spec.after_ack, undefined);
  assert.match(F.buildSpec("rest", { duration: "1:30", ack: false, after_ack: true }).errors.after_ack, /^after_ack "ready" applies to a timer that waits for an ack/);
  assert.match(F.buildSpec("countdown", { duration: "00:05:00", after_ack: true }).errors.after_ack, /add "ack": true$/);
  assert.equal(F.buildSpec("countdown", { duration: "00:05:00", ack: true, after_ack: true }).spec.after_ack, "ready");
});

test("commands.json: a start at a chosen time carries start_at in epoch ms", () => {
  const at = example("start at an instant (ISO 8601)").start_at;
  const { body } = F.buildStart({ kind: "countdown", raw: { duration: "5m" }, startAt: at, now: at - 60_000 });
  assert.equal(body.start_at, at);
  assert.match(F.buildStart({ kind: "countdown", raw: { duration: "5m" }, startAt: at, now: at - 8 * 86_400_000 }).errors.start_at, /at most 7 days ahead/);
});

test("every kind builds its spec; defaults are left out, ack only when not the kind's own", () => {
  assert.deepEqual(F.buildSpec("interval", { work: "40s", rest: "20s", rounds: "3", sets: "2", set_rest: "1:00", prepare: "10", exercises: "Squat, Push-up", cooldown: "" }).spec,
    { kind: "interval", work: "40s", rest: "20s", rounds: 3, sets: 2, set_rest: "1m", prepare: "10s", exercises: ["Squat", "Push-up"] });
  assert.deepEqual(F.buildSpec("rest", { duration: "1:30", exercise: "Squat", next: "Rows", ack: true }).spec,
    { kind: "rest", duration: "1m30s", exercise: "Squat", next: "Rows" });
  assert.deepEqual(F.buildSpec("rest", { duration: "2:00", ack: false }).spec, { kind: "rest", duration: "2m", ack: false });
  assert.deepEqual(F.buildSpec("countdown", { duration: "00:10:00", ack: true }).spec, { kind: "countdown", duration: "10:00", ack: true });
  assert.deepEqual(F.buildSpec("stopwatch", { target: "" }).spec, { kind: "stopwatch" });
  assert.deepEqual(F.buildSpec("stopwatch", { target: "20m", label: "Row" }).spec, { kind: "stopwatch", target: "20m", label: "Row" });
  assert.deepEqual(F.buildSpec("program", { blocks: [{ kind: "work", duration: "5m", label: "Row" }, { kind: "rest", duration: "1:00", label: "" }, { kind: "session", duration: "", label: "Stretch" }] }).spec,
    { kind: "program", segments: [{ kind: "work", duration: "5m", label: "Row" }, { kind: "rest", duration: "1m" }, { kind: "session", label: "Stretch" }] });
  assert.deepEqual(F.buildSpec("program", { blocks: [] }).errors, { segments: "segments: add at least one block" });
  assert.deepEqual(Object.keys(F.buildSpec("program", { blocks: [{ kind: "rest", duration: "0" }] }).errors), ["segments"]);
  assert.ok(F.buildStart({ kind: "countdown", raw: { duration: "1m" }, restart: true }).body.restart);
});

test("a spec comes back into the form (saved workouts, Set up) and builds the same spec", () => {
  const specs = [
    { kind: "interval", work: "45s", rest: "15s", rounds: 10, exercises: ["Squat", "Rows"], prepare: "10s" },
    { kind: "countdown", duration: "12:00" }, { kind: "countdown", duration: "1:30:00", ack: true, label: "Oven" },
    { kind: "rest", duration: "2m", exercise: "Squat", next: "Rows" }, { kind: "rest", duration: "1m30s", ack: false },
    { kind: "stopwatch", target: "20m" },
    { kind: "program", segments: [{ kind: "work", duration: "5m", label: "Row" }, { kind: "rest", duration: "1m" }, { kind: "session" }] },
  ];
  for (const spec of specs) {
    const form = F.specToForm(spec);
    assert.equal(form.kind, spec.kind);
    assert.deepEqual(F.buildSpec(form.kind, form.raw).spec, spec, JSON.stringify(spec));
  }
  assert.deepEqual(F.stateToForm({ kind: "rest", segment_duration_ms: 120_000, label: "Squat", next_label: "Rows", ack: true }),
    { kind: "rest", raw: { duration: "2m", exercise: "Squat", next: "Rows", ack: true } });
  assert.deepEqual(F.stateToForm({ kind: "countdown", segment_duration_ms: 720_000, ack: false }), { kind: "countdown", raw: { duration: "00:12:00", ack: false } });
});

test("start at a time of day: the next one on the local clock", () => {
  const now = new Date(2026, 10, 22, 17, 0, 0).getTime();
  assert.equal(F.startAtFromTime("18:30", now), new Date(2026, 10, 22, 18, 30, 0).getTime());
  assert.equal(F.startAtFromTime("16:59:30", now), new Date(2026, 10, 23, 16, 59, 30).getTime());
  assert.equal(F.startAtFromTime("17:00", now), new Date(2026, 10, 23, 17, 0, 0).getTime());
  for (const bad of ["", "24:00", "7", "18:60", "noon"]) assert.equal(F.startAtFromTime(bad, now), null, bad);
});

test("a node's error names the field it shows under", () => {
  const cases = [
    ["work must be between 1 s and 7 days, got -5 s", "work"],
    ["rounds must be between 1 and 1,000, got 0", "rounds"],
    ["set_rest must be between 0 s and 7 days, got -1 s", "set_rest"],
    ["segments[1].duration must be between 1 s and 7 days, got 0 s", "segments[1].duration"],
    ["segments[0].kind must be one of prepare, work, rest, set_rest, cooldown, countdown, session, got \"banana\"", "segments[0].kind"],
    ["exercises[1] must not be empty", "exercises"],
    ["the program would have 100,000 segments; at most 10,000 are allowed (lower rounds, sets or exercises)", "rounds"],
    ["unknown preset 'nope'; known presets: amrap, emom, for_time, tabata", "preset"],
    ["\"timer\" is not a timer id: a timer id is 1 to 64 characters", "id"],
    ["name cannot contain '/' (MQTT topic characters / + # are not allowed), got \"a/b\"", "name"],
    ["\"start_at\" must be between 1970-01-01T00:00:00Z and 2100-01-01T00:00:00Z, got 2101", "start_at"],
    ["start_at must be at most 7 days ahead, got 2026-12-05T18:08:45.074Z", "start_at"],
    ["work is required for an interval timer (like \"40s\")", "work"],
  ];
  for (const [message, key] of cases) assert.equal(F.fieldOfError(message), key, message);
  assert.equal(F.fieldOfError(""), null);
  assert.equal(F.fieldOfError("Cannot"), null);
});

test("a saved workout's spec in a few words, for the list", () => {
  assert.equal(F.summary({ kind: "interval", work: "45s", rest: "15s", rounds: 10, ack: false, skip_last_rest: true }), "45s / 15s × 10");
  assert.equal(F.summary({ kind: "interval", work: "1m", rest: "0s", rounds: 12, prepare: "10s" }), "1m × 12");
  assert.equal(F.summary({ kind: "interval", work: "40s", rest: "20s", rounds: 3, sets: 2, exercises: ["Squat", "Rows"] }), "40s / 20s × 3 × 2 sets · Squat, Rows");
  assert.equal(F.summary({ kind: "countdown", duration: "12m" }), "countdown 12:00");
  assert.equal(F.summary({ kind: "rest", duration: "2m", next: "Rows" }), "rest 2:00 → Rows");
  assert.equal(F.summary({ kind: "stopwatch", target: "20m" }), "stopwatch, target 20m");
  assert.equal(F.summary({ kind: "program", segments: [{ kind: "work" }] }), "1 block");
  assert.equal(F.summary(null), "");
});

test("unchecked (the browser suite's switch): what was typed goes to the node for it to judge", () => {
  assert.deepEqual(F.buildStart({ kind: "interval", raw: { work: "-5", rest: "", rounds: "0" }, unchecked: true }).body,
    { action: "start", spec: { kind: "interval", work: "-5", rounds: 0 } });
  assert.deepEqual(F.buildSpec("program", { blocks: [{ kind: "work", duration: "0" }] }, true).spec, { kind: "program", segments: [{ kind: "work", duration: "0" }] });
  assert.equal(F.buildStart({ kind: "interval", raw: { work: "-5" } }).body, null, "checked, nothing is sent");
});
