// tcx.js: one athlete's run from a class summary as a TCX file (Garmin Training Center XML v2),
// the class view's per-athlete download. The node's `pacer history --tcx` writes the same file by
// the same rules (Sources/PacerNode/HeartRate/ClassTCX.swift, docs/API.md "TCX export"): both
// are checked against Tests/Fixtures/tcx/class-summary-a.tcx (Tests/page/tcx.test.mjs and the
// node's HeartRateResultsTests), so the two cannot drift apart.
const isNum = (v) => typeof v === "number" && isFinite(v);
const iso = (ms) => new Date(ms).toISOString();

/** Seconds of a duration in ms: "20", "20.5", "20.125". */
function seconds(ms) {
  const whole = Math.trunc(ms / 1000), frac = ms % 1000;
  if (frac === 0) return String(whole);
  return whole + "." + String(frac).padStart(3, "0").replace(/0+$/, "");
}

/** XML text: & < > " as entities. */
function escapeXML(text) {
  return String(text).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
}

/** The athlete's series as [{ms, bpm}] (whole bpm), the points without a value left out. */
function trackpoints(summary, athlete) {
  const start = isNum(summary.series_start_ms) ? summary.series_start_ms : summary.started_at_ms || 0;
  const step = Math.max(isNum(summary.series_step_ms) ? summary.series_step_ms : 1000, 1);
  const out = [];
  (athlete.series || []).forEach((v, k) => {
    if (isNum(v) && v >= 1 && v < 255.5) out.push({ ms: start + k * step + Math.floor(step / 2), bpm: Math.round(v) });
  });
  return out;
}

/** The TCX document of athlete `id` in `summary`; null when the run has no such athlete. */
function tcxDocument(summary, id) {
  const athlete = (summary.athletes || []).find((a) => a.id === id);
  if (!athlete) return null;
  const started = isNum(summary.started_at_ms) ? summary.started_at_ms : 0;
  const ended = isNum(summary.due_ms) ? summary.due_ms : started;
  let laps = (summary.segments || []).map((s, position) => ({
    position, phase: s.phase || "", start: isNum(s.start_ms) ? s.start_ms : started, end: isNum(s.end_ms) ? s.end_ms : ended,
  }));
  if (!laps.length) laps = [{ position: null, phase: "", start: started, end: Math.max(ended, started) }];
  const points = laps.map(() => []);
  for (const p of trackpoints(summary, athlete)) {
    let lap = 0;
    laps.forEach((l, i) => { if (l.start <= p.ms) lap = i; });
    points[lap].push(p);
  }
  const figures = new Map();
  for (const f of athlete.segments || []) if (isNum(f.segment) && !figures.has(f.segment)) figures.set(f.segment, f);
  let xml = '<?xml version="1.0" encoding="UTF-8"?>\n';
  xml += '<TrainingCenterDatabase xmlns="http://www.garmin.com/xmlschemas/TrainingCenterDatabase/v2">\n';
  xml += ' <Activities>\n  <Activity Sport="Other">\n';
  xml += "   <Id>" + iso(started) + "</Id>\n";
  laps.forEach((lap, i) => {
    const f = lap.position === null ? athlete : figures.get(lap.position);
    xml += '   <Lap StartTime="' + iso(lap.start) + '">\n';
    xml += "    <TotalTimeSeconds>" + seconds(Math.max(lap.end - lap.start, 0)) + "</TotalTimeSeconds>\n";
    xml += "    <DistanceMeters>0</DistanceMeters>\n    <Calories>0</Calories>\n";
    if (f && isNum(f.avg_bpm) && isNum(f.peak_bpm) && (f.samples || 0) > 0) {
      xml += "    <AverageHeartRateBpm><Value>" + Math.round(f.avg_bpm) + "</Value></AverageHeartRateBpm>\n";
      xml += "    <MaximumHeartRateBpm><Value>" + f.peak_bpm + "</Value></MaximumHeartRateBpm>\n";
    }
    xml += "    <Intensity>" + (lap.phase === "rest" || lap.phase === "set_rest" ? "Resting" : "Active") + "</Intensity>\n";
    xml += "    <TriggerMethod>Time</TriggerMethod>\n";
    if (points[i].length) {
      xml += "    <Track>\n";
      for (const p of points[i]) xml += "     <Trackpoint><Time>" + iso(p.ms) + "</Time><HeartRateBpm><Value>" + p.bpm + "</Value></HeartRateBpm></Trackpoint>\n";
      xml += "    </Track>\n";
    }
    xml += "   </Lap>\n";
  });
  xml += "   <Notes>" + escapeXML("Pacer class " + (summary.timer || "") + " · " + (athlete.name || id)) + "</Notes>\n";
  xml += "  </Activity>\n </Activities>\n</TrainingCenterDatabase>\n";
  return xml;
}

/** The file name: <timer>-<athlete>-<YYYY-MM-DD>T<HH-MM>.tcx (UTC), as `pacer history --tcx` names it. */
function tcxFileName(summary, id) {
  return (summary.timer || "run") + "-" + id + "-" + iso(summary.started_at_ms || 0).slice(0, 16).replace(/:/g, "-") + ".tcx";
}

export { tcxDocument, tcxFileName, trackpoints, seconds };
