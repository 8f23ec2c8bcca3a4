// The class view's logic (examples/dashboard/classview.js): an athlete's tile (zone colour and
// text, % of max, blank when stale by the node's word or the page's clock), the tiles' grid,
// and a class summary's table, chart geometry and CSV, read from the summary the node makes
// (Tests/Fixtures/protocol/class-summary.json, written by EngineAthletesTests).
// Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import * as C from "../../examples/dashboard/classview.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const summary = JSON.parse(readFileSync(root + "Tests/Fixtures/protocol/class-summary.json", "utf8"));

const fresh = { id: "alice", name: "Alice", colour: "#e4572e", max_hr: 188, bpm: 170, pct_max: 90.4, zone: 5, zone_name: "maximum", at_ms: 100_000, stale: false };

test("a fresh tile: bpm, % of max, zone colour and zone text", () => {
  const t = C.tileModel(fresh, 101_000, 10_000);
  assert.equal(t.bpm, "170");
  assert.equal(t.pct, "90%");
  assert.equal(t.zone, 5);
  assert.equal(t.zoneText, "Z5 · maximum");
  assert.equal(t.zoneColour, C.ZONES[5].colour);
  assert.equal(t.stale, false);
  assert.equal(t.blankAt, 110_000);
  assert.equal(t.colour, "#e4572e");
});

test("every zone has its own colour and the node's name", () => {
  const names = ["very light", "light", "moderate", "hard", "maximum"];
  const colours = new Set();
  for (let z = 1; z <= 5; z++) {
    const t = C.tileModel({ ...fresh, zone: z }, 100_500, 10_000);
    assert.equal(t.zoneText, "Z" + z + " · " + names[z - 1]);
    colours.add(t.zoneColour);
  }
  assert.equal(colours.size, 5);
});

test("a stale tile is blank: by the node's word, or by the page's clock when the node went quiet", () => {
  for (const t of [C.tileModel({ ...fresh, bpm: null, zone: null, pct_max: null, stale: true }, 101_000, 10_000),
                   C.tileModel(fresh, 110_000, 10_000)]) {
    assert.equal(t.bpm, "");
    assert.equal(t.pct, "");
    assert.equal(t.zoneColour, null);
    assert.equal(t.zoneText, "no recent reading"); // stale; "no signal" needs the bridge's word (results.test.mjs)
    assert.equal(t.stale, true);
    assert.equal(t.name, "Alice");
  }
  // Just before the limit it still shows.
  assert.equal(C.tileModel(fresh, 109_999, 10_000).bpm, "170");
  // An unsynced page trusts the node.
  assert.equal(C.tileModel(fresh, null, 10_000).bpm, "170");
});

test("below zone 1 and without a max HR: said in words, no zone colour", () => {
  assert.equal(C.tileModel({ ...fresh, bpm: 80, zone: null, pct_max: 42.6 }, 100_100, 10_000).zoneText, "below zones");
  const noMax = C.tileModel({ ...fresh, max_hr: null, zone: null, pct_max: null }, 100_100, 10_000);
  assert.equal(noMax.zoneText, "no max HR");
  assert.equal(noMax.pct, "");
});

test("tiles by name; the grid gives the largest tiles", () => {
  const states = new Map([["b", { id: "b", name: "Zoë", bpm: 100, at_ms: 0 }], ["a", { id: "a", bpm: 120, at_ms: 0 }]]);
  assert.deepEqual(C.tiles(states, 1000, 10_000).map((t) => t.name), ["a", "Zoë"]);
  // The node's list decides who is present: a state left from before a restart gets no tile.
  const list = { athletes: [{ id: "a", present: true }, { id: "b", present: false }] };
  assert.deepEqual(C.tiles(states, 1000, 10_000, list).map((t) => t.id), ["a"]);
  const wall = C.gridFor(30, 1920, 800, 1.6);
  assert.equal(wall.cols * wall.rows >= 30, true);
  assert.ok(wall.tileW * wall.cols <= 1920 + 1e-6 && wall.tileH * wall.rows <= 800 + 1e-6);
  // No other column count gives larger tiles.
  for (let cols = 1; cols <= 30; cols++) {
    const rows = Math.ceil(30 / cols);
    assert.ok(Math.min(1920 / cols, (800 / rows) * 1.6) <= wall.tileW + 1e-9);
  }
  const phone = C.phoneGrid(30, 374);
  assert.equal(phone.cols, 2);
  assert.equal(phone.rows, 15);
  assert.equal(phone.tileW, 184);
  assert.deepEqual(C.gridFor(0, 100, 100), { cols: 1, rows: 0, tileW: 0, tileH: 0 });
});

test("the summary's table: a row per athlete and segment with its figures, then the whole run", () => {
  const rows = C.summaryRows(summary);
  const athletes = summary.athletes;
  assert.equal(rows.length, athletes.reduce((n, a) => n + a.segments.length + 1, 0));
  const first = athletes[0], seg = first.segments[1];
  const row = rows.find((r) => r.athlete === first.id && r.segment === C.segmentName(summary.segments[seg.segment]));
  assert.equal(row.avg, seg.avg_bpm.toFixed(1));
  assert.equal(row.peak, String(seg.peak_bpm));
  assert.equal(summary.segments[seg.segment].phase, "rest");
  assert.equal(row.recovery, (seg.recovery_bpm > 0 ? "↓ " : "↑ ") + Math.abs(seg.recovery_bpm) + " · " + C.recoveryTime(seg));
  assert.equal(C.recoveryText(12), "↓ 12");
  assert.equal(C.recoveryText(-5), "↑ 5");
  assert.equal(C.recoveryText(undefined), "");
  const most = seg.zone_ms.indexOf(Math.max(...seg.zone_ms));
  assert.equal(row.zoneText, (most === 0 ? "below" : "Z" + most) + " " + C.fmtMs(seg.zone_ms[most]));
  const total = rows.find((r) => r.athlete === first.id && r.total);
  assert.equal(total.peak, String(first.peak_bpm));
  assert.equal(C.segmentName({ phase: "rest", round: 2 }), "Rest 2");
  assert.equal(C.segmentName({ phase: "work", label: "Squat", round: 1 }), "Squat (work) 1");
});

test("the chart: a band per segment across the plot, a line per athlete inside it, broken where it had no reading", () => {
  const g = C.chartGeometry(summary, 800, 300);
  assert.equal(g.bands.length, summary.segments.length);
  assert.equal(g.bands[0].x, g.plot.x);
  const end = g.bands[g.bands.length - 1];
  assert.ok(Math.abs(end.x + end.w - (g.plot.x + g.plot.w)) < 0.2, "the last band ends at the plot's right edge");
  for (let i = 1; i < g.bands.length; i++) assert.ok(Math.abs(g.bands[i].x - (g.bands[i - 1].x + g.bands[i - 1].w)) < 0.2, "bands touch");
  assert.deepEqual(g.bands.map((b) => b.phase), summary.segments.map((s) => s.phase));
  assert.equal(g.lines.length, summary.athletes.length);
  for (const [i, line] of g.lines.entries()) {
    const a = summary.athletes[i];
    const points = line.paths.flatMap((p) => p.split(" ").map((xy) => xy.split(",").map(Number)));
    assert.equal(points.length, a.series.filter((v) => v != null).length);
    for (const [x, y] of points) {
      assert.ok(x >= g.plot.x && x <= g.plot.x + g.plot.w, "x inside");
      assert.ok(y >= g.plot.y && y <= g.plot.y + g.plot.h, "y inside");
    }
    // The highest reading is the highest point (smallest y).
    const top = Math.min(...points.map((p) => p[1]));
    const peak = Math.max(...a.series.filter((v) => v != null));
    assert.ok(Math.abs(top - (g.plot.y + g.plot.h - ((peak - g.lo) / (g.hi - g.lo)) * g.plot.h)) < 0.2);
  }
  const gap = { ...summary, athletes: [{ id: "x", series: [120, 121, null, null, 130] }] };
  assert.equal(C.chartGeometry(gap, 400, 200).lines[0].paths.length, 2);
  assert.equal(g.lines[0].colour, summary.athletes[0].colour);
  assert.notEqual(g.lines[1].colour, g.lines[2].colour);
});

test("the CSV: a header, a line per athlete and segment and a whole-run line, times in seconds", () => {
  const lines = C.summaryCSV(summary).trim().split("\n");
  assert.equal(lines[0], "timer,run_started,ended,athlete,name,segment,phase,round,avg_bpm,peak_bpm,recovery_bpm,z0_s,z1_s,z2_s,z3_s,z4_s,z5_s,recovery_target_bpm,recovery_s,effort_points");
  assert.equal(lines.length - 1, summary.athletes.reduce((n, a) => n + a.segments.length + 1, 0));
  const a = summary.athletes[0], s = a.segments[0];
  const cells = lines[1].split(",");
  assert.equal(cells[3], a.id);
  assert.equal(Number(cells[8]), s.avg_bpm);
  assert.equal(Number(cells[11]) * 1000, s.zone_ms[0]);
  assert.equal(C.summaryCSV({ timer: "t", segments: [], athletes: [{ id: "q", name: 'A "B", C', segments: [], zone_ms: [] }] }).split("\n")[1], 't,,,q,"A ""B"", C",whole run,total,,,,,0.0,0.0,0.0,0.0,0.0,0.0,,,');
});

test("the wall page's Class link: only for a node with a class, carrying what class.js reads", () => {
  const doc = JSON.stringify({ athletes: [], stale_after_ms: 10000, absent_after_ms: 180000, as_of_ms: 1 });
  // No athletes document (no heart_rate.athletes on the node), an empty (cleared) one, or not ours: no link.
  assert.equal(C.classViewHref("?node=gym", undefined, "gym"), null);
  assert.equal(C.classViewHref("?node=gym", "", "gym"), null);
  assert.equal(C.classViewHref("?node=gym", "{not json", "gym"), null);
  assert.equal(C.classViewHref("?node=gym", JSON.stringify({ timers: [] }), "gym"), null);
  // The wall page's settings that class.js reads; the others (controls, sw, wake …) stay behind.
  assert.equal(C.classViewHref("?node=gym&timer=main&controls=0&broker=ws%3A%2F%2Fh%3A9001%2F&wake=1", doc, "gym"),
    "class.html?node=gym&timer=main&broker=ws%3A%2F%2Fh%3A9001%2F");
  assert.equal(C.classViewHref("?base=site%2Fgym&user=coach&pass=p%26w", doc, "gym"), "class.html?base=site%2Fgym&user=coach&pass=p%26w");
  // A page opened without ?node= names the node it found (its info topic).
  assert.equal(C.classViewHref("", doc, "gym"), "class.html?node=gym");
  assert.equal(C.classViewHref("", doc, undefined), "class.html");
});
