// classview.js: the class view's logic without the DOM: an athlete's tile (name,
// bpm, % of max, zone colour and zone text, effort points, blank when stale, the strap's battery
// and "no signal" from the strap bridge), the tiles' grid, the leaderboard, and a class
// summary's table and chart geometry (SVG drawn by class.js). Node's tests import this very
// file (Tests/page/classview.test.mjs). The node's rules are in docs/API.md ("Athletes",
// "Class summary").
const isNum = (v) => typeof v === "number" && isFinite(v);

/** The five zones (the node's names; colours chosen to differ in hue and in lightness). */
const ZONES = [
  { zone: 0, name: "below zones", colour: "#5b6470", ink: "#ffffff" },
  { zone: 1, name: "very light", colour: "#9aa5b1", ink: "#111111" },
  { zone: 2, name: "light", colour: "#3b82f6", ink: "#ffffff" },
  { zone: 3, name: "moderate", colour: "#22c55e", ink: "#111111" },
  { zone: 4, name: "hard", colour: "#facc15", ink: "#111111" },
  { zone: 5, name: "maximum", colour: "#ef4444", ink: "#ffffff" },
];

/** Zone 1…5 (or 0 below zone 1) of a zone number from the node; null for none. */
function zoneInfo(zone) {
  return isNum(zone) && zone >= 1 && zone <= 5 ? ZONES[zone] : null;
}

/** A strap's battery at or below this % is marked low on its tile. */
const LOW_BATTERY_PCT = 20;

/**
 * What the strap bridge says of an athlete's strap (examples/hr-bridge: the retained
 * `hr-bridge/<host>/straps/<strap>`, whose strap id is the athlete's id), or null when no
 * bridge speaks of it or its bridge is offline (`hr-bridge/<host>/status`). `straps`: topic →
 * state; `bridges`: bridge topic prefix → "online"/"offline".
 */
function strapOf(id, straps, bridges) {
  let found = null;
  for (const [topic, st] of straps || []) {
    if (!st || st.strap !== id) continue;
    const bridge = topic.replace(/\/straps\/[^/]+$/, "");
    if (bridges && bridges.get(bridge) === "offline") continue;
    if (!found || (st.state === "connected" && found.state !== "connected")) found = st;
  }
  return found;
}

/**
 * An athlete's tile at node time `now` (null: the page's clock is not synced; then the
 * node's own `stale` is trusted). `state` is the retained `<base>/athletes/<id>/state`;
 * `strap` what the bridge says of the strap (strapOf), if anything.
 * Blank (no bpm, no %, no zone) when the node says stale or the reading is older than
 * `staleAfterMs` by the page's clock (a node that died cannot blank it). A blank tile says
 * "no signal" when the bridge knows why (the strap reports no skin contact, or its link is
 * lost) and "no recent reading" otherwise (stale: the reason is not known here).
 */
function tileModel(state, now, staleAfterMs, strap) {
  const name = state.name || state.id;
  const tooOld = isNum(now) && isNum(state.at_ms) && isNum(staleAfterMs) && now - state.at_ms >= staleAfterMs;
  const fresh = !state.stale && isNum(state.bpm) && !tooOld;
  const z = fresh ? zoneInfo(state.zone) : null;
  const noSignal = !fresh && !!strap && (strap.contact === false || strap.state === "lost");
  const battery = strap && isNum(strap.battery_pct) ? strap.battery_pct : null;
  return {
    id: state.id,
    name,
    colour: state.colour || null,
    stale: !fresh,
    bpm: fresh ? String(state.bpm) : "",
    pct: fresh && isNum(state.pct_max) ? Math.round(state.pct_max) + "%" : "",
    zone: z ? z.zone : 0,
    zoneText: z ? "Z" + z.zone + " · " + z.name : fresh ? (isNum(state.max_hr) ? "below zones" : "no max HR") : noSignal ? "no signal" : "no recent reading",
    signal: fresh ? "ok" : noSignal ? "none" : "stale",
    points: isNum(state.effort_points) ? state.effort_points + " pts" : "",
    battery: battery == null ? "" : Math.round(battery) + "%",
    lowBattery: battery != null && battery <= LOW_BATTERY_PCT,
    zoneColour: z ? z.colour : null,
    ink: z ? z.ink : null,
    // When this tile goes blank by itself (node time), for the page's next render.
    blankAt: fresh && isNum(state.at_ms) && isNum(staleAfterMs) ? state.at_ms + staleAfterMs : null,
  };
}

/**
 * The tiles of the present athletes (`states`: id → state), by name. `list` is the node's
 * `<base>/athletes`: when known, only athletes it marks present get a tile (a state left
 * retained from before a node's restart is no one's).
 */
function tiles(states, now, staleAfterMs, list, straps, bridges) {
  const present = list && Array.isArray(list.athletes) ? new Set(list.athletes.filter((a) => a.present).map((a) => a.id)) : null;
  return [...states.values()]
    .filter((s) => s && s.id && (!present || present.has(s.id)))
    .map((s) => tileModel(s, now, staleAfterMs, strapOf(s.id, straps, bridges)))
    .sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
}

/**
 * Columns and rows for `n` tiles in a `width` × `height` area, each tile about `aspect`
 * (width / height): the layout whose tiles are the largest.
 */
function gridFor(n, width, height, aspect = 1.5) {
  if (n <= 0 || width <= 0 || height <= 0) return { cols: 1, rows: 0, tileW: 0, tileH: 0 };
  let best = null;
  for (let cols = 1; cols <= n; cols++) {
    const rows = Math.ceil(n / cols);
    const w = width / cols, h = height / rows;
    const tileW = Math.min(w, h * aspect), tileH = tileW / aspect;
    if (!best || tileW > best.tileW) best = { cols, rows, tileW, tileH };
  }
  return best;
}

/** Two columns that scroll (a phone): each tile `width / 2` wide, `aspect` wide to high. */
function phoneGrid(n, width, aspect = 1.25) {
  const cols = n > 1 ? 2 : 1;
  const tileW = Math.max(0, (width - (cols - 1) * 6) / cols);
  return { cols, rows: Math.ceil(n / cols), tileW, tileH: tileW / aspect };
}

/** m:ss of a duration in ms (whole seconds, rounded). */
function fmtMs(ms) {
  const s = Math.round((ms || 0) / 1000);
  return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
}

const PHASE_NAMES = { prepare: "Prepare", work: "Work", rest: "Rest", set_rest: "Set rest", cooldown: "Cool down", countdown: "Countdown", session: "Session" };

/** A segment's name in the table: its label, else its phase, with its round. */
function segmentName(seg) {
  const phase = PHASE_NAMES[seg.phase] || seg.phase;
  const base = seg.label ? seg.label + " (" + phase.toLowerCase() + ")" : phase;
  return isNum(seg.round) && seg.round > 0 && seg.phase !== "prepare" && seg.phase !== "cooldown" ? base + " " + seg.round : base;
}

/**
 * The summary's table: one row per athlete and segment, then the athlete's whole run.
 * Each row: `{athlete, name, colour, segment, avg, peak, zones: [ms × 6], zoneText, recovery}`.
 * `zoneText` names the zone with the most time ("Z4 0:42").
 */
function summaryRows(summary) {
  const segs = Array.isArray(summary.segments) ? summary.segments : [];
  const rows = [];
  const top = (zones) => {
    let best = -1;
    (zones || []).forEach((ms, z) => { if (ms > 0 && (best < 0 || ms > zones[best])) best = z; });
    return best < 0 ? "" : (best === 0 ? "below" : "Z" + best) + " " + fmtMs(zones[best]);
  };
  for (const a of summary.athletes || []) {
    for (const s of a.segments || []) {
      const seg = segs[s.segment] || {};
      rows.push({
        athlete: a.id, name: a.name || a.id, colour: a.colour || null, segment: segmentName(seg), phase: seg.phase,
        avg: isNum(s.avg_bpm) ? s.avg_bpm.toFixed(1) : "", peak: isNum(s.peak_bpm) ? String(s.peak_bpm) : "",
        zones: s.zone_ms || [], zoneText: top(s.zone_ms), recovery: [recoveryText(s.recovery_bpm), recoveryTime(s)].filter(Boolean).join(" · "),
      });
    }
    rows.push({
      athlete: a.id, name: a.name || a.id, colour: a.colour || null, segment: "Whole run", phase: "total", total: true,
      avg: isNum(a.avg_bpm) ? a.avg_bpm.toFixed(1) : "", peak: isNum(a.peak_bpm) ? String(a.peak_bpm) : "",
      zones: a.zone_ms || [], zoneText: top(a.zone_ms), recovery: "", points: isNum(a.effort_points) ? String(a.effort_points) : "",
    });
  }
  return rows;
}

/** A rest's recovery: the bpm it fell (`↓ 27`), or rose (`↑ 5`), over the rest. */
function recoveryText(bpm) {
  if (!isNum(bpm)) return "";
  return bpm > 0 ? "↓ " + bpm : bpm < 0 ? "↑ " + -bpm : "0";
}

/** A rest's time to the recovery target ("0:08", "not reached"); "" when it has no target. */
function recoveryTime(figures) {
  if (!isNum(figures.recovery_target_bpm)) return "";
  return isNum(figures.recovery_ms) ? fmtMs(figures.recovery_ms) : "not reached";
}

/** Seconds of a duration in ms to one decimal, rounded in whole tenths ("4.3"), as the node writes them. */
function tenths(ms) {
  const t = Math.round(ms / 100);
  return Math.floor(t / 10) + "." + (t % 10);
}

/** The CSV's `recovery_s` cell: seconds to the target, `not reached`, or empty (as `pacer history --csv`). */
function recoveryCell(figures) {
  if (!isNum(figures.recovery_target_bpm)) return "";
  return isNum(figures.recovery_ms) ? tenths(figures.recovery_ms) : "not reached";
}

/**
 * The leaderboard by effort points: `entries` are `{id, name, colour, points, leaderboard}`;
 * an entry with `leaderboard: false` is left out entirely (never ranked, never named), as is one
 * without points. Most points first; equal points share a place (1, 2, 2, 4), by name within it.
 * Returns `[{place, id, name, colour, points}]`.
 */
function leaderboard(entries) {
  const ranked = (entries || []).filter((e) => e && e.leaderboard !== false && isNum(e.points))
    .map((e) => ({ id: e.id, name: e.name || e.id, colour: e.colour || null, points: e.points }))
    .sort((a, b) => b.points - a.points || a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
  ranked.forEach((e, i) => { e.place = i > 0 && ranked[i - 1].points === e.points ? ranked[i - 1].place : i + 1; });
  return ranked;
}

/** The leaderboard after a run: the class summary's athletes by their `effort_points`. */
function summaryLeaderboard(summary) {
  return leaderboard((summary.athletes || []).map((a) => ({ ...a, points: a.effort_points })));
}

/** The live leaderboard: the present athletes' states (`effort_points` of the run being recorded). */
function liveLeaderboard(states, list) {
  const present = list && Array.isArray(list.athletes) ? new Set(list.athletes.filter((a) => a.present).map((a) => a.id)) : null;
  return leaderboard([...states.values()].filter((s) => s && s.id && (!present || present.has(s.id)))
    .map((s) => ({ ...s, points: s.effort_points })));
}

/** A distinct colour for the athlete at `index` when it has none of its own. */
function lineColour(athlete, index) {
  if (athlete.colour) return athlete.colour;
  const hues = [200, 30, 280, 140, 340, 60, 250, 10, 170, 310];
  return "hsl(" + hues[index % hues.length] + " 80% 60%)";
}

/**
 * The chart's geometry in a `width` × `height` box: the phases as bands (rests and work
 * apart), each athlete's series as polylines (broken where it had no reading), the bpm axis.
 * Returns `{bands: [{x, w, phase}], lines: [{id, name, colour, paths: ["x,y x,y", …]}],
 * yTicks: [{y, bpm}], xTicks: [{x, text}], plot: {x, y, w, h}}`.
 */
function chartGeometry(summary, width, height) {
  const pad = { left: 44, right: 10, top: 10, bottom: 26 };
  const plot = { x: pad.left, y: pad.top, w: Math.max(1, width - pad.left - pad.right), h: Math.max(1, height - pad.top - pad.bottom) };
  const segs = Array.isArray(summary.segments) ? summary.segments : [];
  const t0 = isNum(summary.started_at_ms) ? summary.started_at_ms : segs.length ? segs[0].start_ms : 0;
  const step = isNum(summary.series_step_ms) && summary.series_step_ms > 0 ? summary.series_step_ms : 1000;
  const longest = Math.max(0, ...(summary.athletes || []).map((a) => (a.series || []).length));
  const t1 = Math.max(t0 + 1, summary.due_ms || 0, ...segs.map((s) => s.end_ms || s.start_ms || 0), t0 + longest * step);
  const x = (t) => plot.x + ((t - t0) / (t1 - t0)) * plot.w;
  const all = (summary.athletes || []).flatMap((a) => (a.series || []).filter(isNum));
  let lo = all.length ? Math.min(...all) : 60, hi = all.length ? Math.max(...all) : 180;
  lo = Math.floor((lo - 5) / 10) * 10; hi = Math.ceil((hi + 5) / 10) * 10;
  if (hi - lo < 20) hi = lo + 20;
  const y = (bpm) => plot.y + plot.h - ((bpm - lo) / (hi - lo)) * plot.h;
  const r = (v) => Math.round(v * 10) / 10;
  const bands = segs.map((s) => {
    const a = x(Math.max(t0, s.start_ms)), b = x(Math.min(t1, s.end_ms || t1));
    return { x: r(a), w: r(Math.max(0, b - a)), phase: s.phase, label: segmentName(s) };
  });
  const lines = (summary.athletes || []).map((a, i) => {
    const paths = [];
    let cur = [];
    (a.series || []).forEach((bpm, k) => {
      if (!isNum(bpm)) { if (cur.length) paths.push(cur.join(" ")); cur = []; return; }
      cur.push(r(x(t0 + (k + 0.5) * step)) + "," + r(y(bpm)));
    });
    if (cur.length) paths.push(cur.join(" "));
    return { id: a.id, name: a.name || a.id, colour: lineColour(a, i), paths };
  });
  const yTicks = [];
  const every = hi - lo > 80 ? 20 : 10;
  for (let b = lo; b <= hi; b += every) yTicks.push({ y: r(y(b)), bpm: b });
  const xTicks = [];
  const span = t1 - t0, minute = 60000;
  const tickMs = span <= minute ? 10000 : span <= 5 * minute ? minute / 2 : span <= 20 * minute ? 2 * minute : span <= 60 * minute ? 10 * minute : 30 * minute;
  for (let t = 0; t <= span; t += tickMs) xTicks.push({ x: r(x(t0 + t)), text: fmtMs(t) });
  return { bands, lines, yTicks, xTicks, plot, lo, hi };
}

/** CSV of the summary's rows (the page's "Download CSV"): the columns and cells of
 *  `pacer history --csv` (Tests/Fixtures/protocol/class-summary.csv holds what both write). */
function summaryCSV(summary) {
  const esc = (v) => { const s = String(v == null ? "" : v); return /[",\n\r]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s; };
  const head = ["timer", "run_started", "ended", "athlete", "name", "segment", "phase", "round", "avg_bpm", "peak_bpm", "recovery_bpm",
    "z0_s", "z1_s", "z2_s", "z3_s", "z4_s", "z5_s", "recovery_target_bpm", "recovery_s", "effort_points"];
  const lines = [head.join(",")];
  const segs = summary.segments || [];
  const started = isNum(summary.started_at_ms) ? new Date(summary.started_at_ms).toISOString() : "";
  const num = (v) => isNum(v) ? (Number.isInteger(v) ? String(v) : v.toFixed(1)) : "";
  for (const a of summary.athletes || []) {
    const rows = (a.segments || []).map((s) => ({ seg: segs[s.segment] || {}, f: s })).concat([{ seg: { phase: "total" }, f: a, total: true }]);
    for (const { seg, f, total } of rows) {
      const z = f.zone_ms || [];
      lines.push([summary.timer || "", started, summary.ended || "", a.id, a.name || a.id, total ? "whole run" : segmentName(seg), seg.phase || "",
        !total && isNum(seg.round) ? seg.round : "", num(f.avg_bpm), num(f.peak_bpm), num(f.recovery_bpm),
        ...[0, 1, 2, 3, 4, 5].map((i) => tenths(isNum(z[i]) ? z[i] : 0)), num(f.recovery_target_bpm), recoveryCell(f), total ? num(f.effort_points) : ""].map(esc).join(","));
    }
  }
  return lines.join("\n") + "\n";
}

/** The wall page's link to the class view: class.html with the settings class.js reads (node,
 *  base, timer, broker, user, pass) from the wall page's query, the node named when the query
 *  does not, or null while the node publishes no athletes document (`<base>/athletes`: no class). */
function classViewHref(search, athletesPayload, node) {
  let doc = null;
  try { doc = athletesPayload ? JSON.parse(athletesPayload) : null; } catch (e) { doc = null; }
  if (!doc || !Array.isArray(doc.athletes)) return null;
  const from = new URLSearchParams(search), p = new URLSearchParams();
  for (const k of ["node", "base", "timer", "broker", "user", "pass"]) if (from.get(k)) p.set(k, from.get(k));
  if (!p.get("node") && !p.get("base") && node) p.set("node", node);
  const query = p.toString();
  return "class.html" + (query ? "?" + query : "");
}

export { ZONES, LOW_BATTERY_PCT, zoneInfo, strapOf, tileModel, tiles, gridFor, phoneGrid, recoveryText, recoveryTime, recoveryCell, fmtMs, segmentName,
  summaryRows, chartGeometry, summaryCSV, lineColour, classViewHref, leaderboard, summaryLeaderboard, liveLeaderboard };
