// Durations as the node reads and writes them (examples/dashboard/durations.js), imported
// directly: the grammar's corners (fractions rounded half up, white space, ISO 8601, signs,
// clock text), the spellings, the numbers in messages; forms.js gives the page these very
// functions (forms.test.mjs checks them through it). Run: node --test Tests/page/
import { test } from "node:test";
import assert from "node:assert/strict";
import * as D from "../../examples/dashboard/durations.js";
import * as F from "../../examples/dashboard/forms.js";

test("forms.js exports this file's functions, not copies", () => {
  for (const name of ["parseDuration", "parseHMS", "compact", "describe", "hms", "clock", "stepDuration", "MAX_MS"]) {
    assert.equal(F[name], D[name], name);
  }
  assert.equal(D.MAX_MS, 7 * D.DAY);
  assert.deepEqual([D.SEC, D.MIN, D.HOUR, D.DAY], [1000, 60_000, 3_600_000, 86_400_000]);
});

test("the grammar's corners", () => {
  const cases = [
    ["0.0005s", 1], ["0.0004s", 0], ["1.0005", 1001], ["1.9999999999s", 2000], [".5s", 500], ["5.", 5000],
    ["\t90s\n", 90_000], ["1H30M", 5_400_000], ["1 h 30 m", 5_400_000], ["+40s", 40_000], ["- 5s", -5000],
    ["pt1h", 3_600_000], ["PT0.5S", 500], ["0:05", 5000], ["00:00:05", 5000], ["1:00:00.5", 3_600_500], ["2 days", 172_800_000],
    [90, 90_000], [1.5, 1500],
  ];
  for (const [text, ms] of cases) assert.equal(D.parseDuration(text), ms, JSON.stringify(text));
  for (const bad of ["1:5:60", "0:60", "1.5:00", "PT", "s", "1 2s", "1e3s", null, undefined, {}, Infinity, "1" + "0".repeat(20) + "d"]) {
    assert.equal(D.parseDuration(bad), null, JSON.stringify(bad));
  }
});

test("spellings: compact (spec JSON), describe (messages), hms and clock (the countdown's), grouped numbers", () => {
  assert.equal(D.compact(86_400_000 + 3_600_000 + 60_000 + 1_001), "1d1h1m1.001s");
  assert.equal(D.describe(2 * 86_400_000 + 500), "2 days 0.5 s");
  assert.equal(D.describe(999), "999 ms");
  assert.equal(D.hms(7 * 86_400_000), "168:00:00");
  assert.equal(D.hms(1499), "00:00:01", "whole seconds, rounded");
  assert.equal(D.clock(59_000), "0:59");
  assert.equal(D.clock(3_600_000), "1:00:00");
  assert.equal(D.grouped(1000), "1,000");
  assert.equal(D.grouped(-1234567), "-1,234,567");
  assert.equal(D.grouped(999), "999");
  for (const ms of [0, 1, 999, 1000, 59_999, 3_600_000, 90_061_001, D.MAX_MS]) assert.equal(D.parseDuration(D.compact(ms)), ms, D.compact(ms));
});

test("the stepper stays between 15 s and 7 days", () => {
  assert.equal(D.stepDuration("7d", 15_000), D.clock(D.MAX_MS));
  assert.equal(D.stepDuration("0", -15_000), "0:15");
  assert.equal(D.stepDuration("nonsense", -15_000), "1:15", "unreadable: from 1:30");
  assert.equal(D.stepDuration("1:30.6", 15_000), "1:46", "whole seconds");
});
