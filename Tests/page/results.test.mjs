// The class view's results (examples/dashboard/classview.js and tcx.js): the tile's effort
// points, strap battery and "no signal" against stale; the leaderboard that never ranks or names
// an athlete whose profile says `leaderboard: false`; the CSV and the TCX file, each the very
// bytes the node writes for the same summary (Tests/Fixtures/protocol/class-summary.csv and
// Tests/Fixtures/tcx/class-summary-a.tcx, written by the node's HeartRateResultsTests).
// Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import * as C from "../../examples/dashboard/classview.js";
import { tcxDocument, tcxFileName, trackpoints, seconds } from "../../examples/dashboard/tcx.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const summary = JSON.parse(readFileSync(root + "Tests/Fixtures/protocol/class-summary.json", "utf8"));
const fresh = { id: "alice", name: "Alice", max_hr: 188, bpm: 170, pct_max: 90.4, zone: 5, at_ms: 100_000, stale: false, effort_points: 12, leaderboard: true };

test("a tile shows the athlete's effort points in the run, and none outside one", () => {
  assert.equal(C.tileModel(fresh, 101_000, 10_000).points, "12 pts");
  assert.equal(C.tileModel({ ...fresh, effort_points: null }, 101_000, 10_000).points, "");
});

test("a blank tile says no signal when the bridge knows the strap has none, and no recent reading otherwise", () => {
  const blank = { ...fresh, bpm: null, zone: null, stale: true };
  const stale = C.tileModel(blank, 101_000, 10_000, null);
  assert.equal(stale.zoneText, "no recent reading");
  assert.equal(stale.signal, "stale");
  for (const strap of [{ strap: "alice", state: "connected", contact: false }, { strap: "alice", state: "lost", contact: null }]) {
    const t = C.tileModel(blank, 101_000, 10_000, strap);
    assert.equal(t.zoneText, "no signal");
    assert.equal(t.signal, "none");
  }
  // A strap in contact whose readings stopped reaching the node is stale, not "no signal".
  assert.equal(C.tileModel(blank, 101_000, 10_000, { strap: "alice", state: "connected", contact: true }).signal, "stale");
  // A fresh reading is a signal whatever the strap state says.
  assert.equal(C.tileModel(fresh, 101_000, 10_000, { strap: "alice", state: "lost" }).signal, "ok");
});

test("the strap's battery on the tile, marked low at or below 20 %", () => {
  const at = (pct) => C.tileModel(fresh, 101_000, 10_000, { strap: "alice", state: "connected", contact: true, battery_pct: pct });
  assert.equal(at(80).battery, "80%");
  assert.equal(at(80).lowBattery, false);
  assert.equal(at(C.LOW_BATTERY_PCT).lowBattery, true);
  assert.equal(at(5).battery, "5%");
  assert.equal(at(null).battery, "");
  assert.equal(C.tileModel(fresh, 101_000, 10_000).lowBattery, false);
});

test("a strap is found by its id, and not through a bridge that is offline", () => {
  const straps = new Map([
    ["hr-bridge/pi/straps/alice", { strap: "alice", state: "lost", battery_pct: 50 }],
    ["hr-bridge/pi2/straps/alice", { strap: "alice", state: "connected", battery_pct: 90 }],
    ["hr-bridge/old/straps/bo", { strap: "bo", state: "connected", battery_pct: 10 }],
  ]);
  const bridges = new Map([["hr-bridge/old", "offline"], ["hr-bridge/pi", "online"]]);
  assert.equal(C.strapOf("alice", straps, bridges).battery_pct, 90); // the connected one wins
  assert.equal(C.strapOf("bo", straps, bridges), null);
  assert.equal(C.strapOf("cy", straps, bridges), null);
  const models = C.tiles(new Map([["bo", { ...fresh, id: "bo", name: "Bo" }]]), 101_000, 10_000, null, straps, bridges);
  assert.equal(models[0].battery, "");
});

test("the leaderboard ranks by points, shares places, and never ranks or names an opted-out athlete", () => {
  const board = C.leaderboard([
    { id: "a", name: "Alice", points: 30 }, { id: "b", name: "Bo", points: 42, leaderboard: false },
    { id: "c", name: "Cy", points: 30 }, { id: "d", name: "Di", points: 12 }, { id: "e", name: "Ed", points: null },
  ]);
  assert.deepEqual(board.map((r) => [r.place, r.name, r.points]), [[1, "Alice", 30], [1, "Cy", 30], [3, "Di", 12]]);
  assert.ok(!JSON.stringify(board).includes("Bo") && !board.some((r) => r.id === "b"));
});

test("the summary's leaderboard and the live one read the node's documents", () => {
  const opted = JSON.parse(JSON.stringify(summary));
  opted.athletes[0].leaderboard = false;
  const after = C.summaryLeaderboard(opted);
  assert.ok(after.length === summary.athletes.length - 1 && !after.some((r) => r.id === opted.athletes[0].id));
  assert.ok(after.every((r, i) => i === 0 || r.points <= after[i - 1].points));
  assert.deepEqual(C.summaryLeaderboard(summary).map((r) => r.points), summary.athletes.map((a) => a.effort_points).sort((x, y) => y - x));
  const states = new Map([["alice", fresh], ["bo", { ...fresh, id: "bo", name: "Bo", effort_points: 40, leaderboard: false }],
    ["cy", { ...fresh, id: "cy", name: "Cy", effort_points: 3 }], ["gone", { ...fresh, id: "gone", name: "Gone", effort_points: 99 }]]);
  const list = { athletes: [{ id: "alice", present: true }, { id: "bo", present: true }, { id: "cy", present: true }, { id: "gone", present: false }] };
  assert.deepEqual(C.liveLeaderboard(states, list).map((r) => r.name), ["Alice", "Cy"]);
});

test("the table's recovery: the fall and the time to the target, or not reached", () => {
  assert.equal(C.recoveryTime({ recovery_target_bpm: 130, recovery_ms: 8_000 }), "0:08");
  assert.equal(C.recoveryTime({ recovery_target_bpm: 130, recovery_ms: null }), "not reached");
  assert.equal(C.recoveryTime({ recovery_bpm: 20 }), "");
  const rows = C.summaryRows(summary);
  const rest = rows.find((r) => r.phase === "rest");
  assert.match(rest.recovery, /^(↓|↑|0).* · (\d+:\d\d|not reached)$/);
  assert.ok(rows.filter((r) => r.total).every((r) => /^\d+$/.test(r.points)));
});

test("the page's CSV is the node's, byte for byte", () => {
  assert.equal(C.summaryCSV(summary), readFileSync(root + "Tests/Fixtures/protocol/class-summary.csv", "utf8"));
});

test("the page's TCX file is the node's, byte for byte, and named the same way", () => {
  assert.equal(tcxDocument(summary, "a"), readFileSync(root + "Tests/Fixtures/tcx/class-summary-a.tcx", "utf8"));
  assert.equal(tcxDocument(summary, "nobody"), null);
  assert.equal(tcxFileName({ timer: "hiit", started_at_ms: Date.UTC(2026, 10, 22, 18, 5) }, "alice"), "hiit-alice-2026-11-22T18-05.tcx");
});

test("TCX: the series' points at their buckets' middles in whole bpm; seconds without trailing zeros", () => {
  const pts = trackpoints({ series_start_ms: 1000, series_step_ms: 2000 }, { series: [120.4, null, 121.5] });
  assert.deepEqual(pts, [{ ms: 2000, bpm: 120 }, { ms: 6000, bpm: 122 }]);
  assert.deepEqual([seconds(20_000), seconds(20_500), seconds(20_125), seconds(7)], ["20", "20.5", "20.125", "0.007"]);
  const xml = tcxDocument({ ...summary, timer: "a&b" }, "a");
  assert.ok(xml.includes("<Notes>Pacer class a&amp;b · Alice</Notes>"));
});
