// The page speaks the node's words: every topic, action, status, phase and event type that the
// page's modules (examples/dashboard/*.js, read as text here, and the buttons of its HTML) name
// is in the wire's vocabulary, Tests/Fixtures/protocol/vocabulary.json, which the Swift tests
// (Tests/PacerProtocolTests/VocabularyFixtureTests.swift) make from PacerProtocol and keep equal
// to it. A topic or a word the node does not know fails here, before a page ships it.
// Run: node --test Tests/page/   (Tests/extra/page-logic)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
// The very modules the page imports (app.js), not copies.
import { commandFor, toggleFor } from "../../examples/dashboard/clock.js";
import * as M from "../../examples/dashboard/media.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const read = (path) => readFileSync(root + path, "utf8");
const vocabulary = JSON.parse(read("Tests/Fixtures/protocol/vocabulary.json"));
const dashboard = "examples/dashboard/";
const files = readdirSync(root + dashboard).filter((f) => f.endsWith(".js")).sort();
const sources = files.map((file) => ({ file, text: read(dashboard + file) }));
const pages = readdirSync(root + dashboard).filter((f) => f.endsWith(".html")).map((file) => ({ file, text: read(dashboard + file) }));

/**
 * The string literals of a script, with the line each starts on: quoted strings, and the text
 * between the `${…}` of a template. Comments and regular expressions are passed over.
 */
function literals(text) {
  const out = [];
  let i = 0, line = 1, last = "";
  const regexBefore = "(,=:[!&|?{};+-*%<>~^";
  const push = (value, at) => out.push({ value, line: at });
  while (i < text.length) {
    const c = text[i];
    if (c === "\n") { line++; i++; continue; }
    if (/\s/.test(c)) { i++; continue; }
    if (c === "/" && text[i + 1] === "/") { while (i < text.length && text[i] !== "\n") i++; continue; }
    if (c === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2);
      const stop = end < 0 ? text.length : end + 2;
      line += (text.slice(i, stop).match(/\n/g) || []).length;
      i = stop;
      continue;
    }
    if (c === "/" && (last === "" || regexBefore.includes(last) || /(^|[^\w$])(return|typeof|case|of|in)$/.test(text.slice(Math.max(0, i - 8), i).trimEnd()))) {
      // A regular expression: to its closing slash, outside a character class.
      let inClass = false;
      i++;
      while (i < text.length && text[i] !== "\n") {
        if (text[i] === "\\") { i += 2; continue; }
        if (text[i] === "[") inClass = true; else if (text[i] === "]") inClass = false;
        else if (text[i] === "/" && !inClass) break;
        i++;
      }
      i++;
      last = "/";
      continue;
    }
    if (c === '"' || c === "'") {
      const start = line;
      let value = "";
      i++;
      while (i < text.length && text[i] !== c && text[i] !== "\n") {
        if (text[i] === "\\") { value += text[i + 1]; i += 2; continue; }
        value += text[i++];
      }
      i++;
      push(value, start);
      last = c;
      continue;
    }
    if (c === "`") {
      let value = "", start = line;
      i++;
      while (i < text.length && text[i] !== "`") {
        if (text[i] === "\\") { value += text[i + 1]; i += 2; continue; }
        if (text[i] === "$" && text[i + 1] === "{") {
          push(value, start);
          let depth = 1;
          i += 2;
          while (i < text.length && depth > 0) {
            if (text[i] === "{") depth++; else if (text[i] === "}") depth--; else if (text[i] === "\n") line++;
            i++;
          }
          value = "";
          start = line;
          continue;
        }
        if (text[i] === "\n") line++;
        value += text[i++];
      }
      i++;
      push(value, start);
      last = "`";
      continue;
    }
    last = c;
    i++;
  }
  return out;
}

// --- Topics -------------------------------------------------------------------------------

/** Each listed topic as levels, the base as its default (`pacer/<node>`). */
// Besides the node's, the class view reads the strap bridge's retained topics (examples/hr-bridge:
// `<status topic>/status` and `<status topic>/straps/<strap>`, the status topic `hr-bridge/<host>`
// by default): its own wire, checked here against the bridge's code rather than PacerProtocol's.
const bridge = read("examples/hr-bridge/bridge.py") + read("examples/hr-bridge/hr_bridge.py");
const bridgeTopics = ["hr-bridge/+/status", "hr-bridge/+/straps/+"];
test("the strap bridge's topics the class view reads are the bridge's", () => {
  assert.ok(bridge.includes('f"{self.status_topic}/straps/{strap.id}"'), "bridge.py: the strap state topic");
  assert.ok(bridge.includes('default=f"hr-bridge/{host}"'), "hr_bridge.py: the default status topic");
  assert.ok(bridge.includes('f"{status_topic}/status"'), "bridge.py: the bridge's status topic");
});
const patterns = Object.values(vocabulary.topics).map((t) => t.replace("<base>", vocabulary.default_base).split("/"))
  .concat(bridgeTopics.map((t) => t.split("/")));
const mediaType = /^(application|audio|font|image|multipart|text|video)\//;

/** A literal that reads as a piece of a topic: levels of a-z, 0-9 and `_`, `+`, `#`, with a `/`. */
function topicPiece(value) {
  if (!value.includes("/") || mediaType.test(value)) return null;
  const levels = value.split("/");
  if (!levels.every((l) => l === "" || l === "+" || l === "#" || /^[a-z0-9_]+$/.test(l))) return null;
  if (!levels.some((l) => l !== "")) return null;  // "/" alone
  return levels;
}

/**
 * Whether a piece lies in a listed topic: its levels stand there in a row, `+` for any one level
 * (a wildcard, or where the page puts an id), a literal for itself, `#` for the rest. A piece
 * that starts (ends) with `/` has a level before (after) it.
 */
function inVocabulary(levels) {
  const before = levels[0] === "", after = levels[levels.length - 1] === "";
  const inner = levels.slice(before ? 1 : 0, after ? -1 : undefined);
  return patterns.some((p) => {
    for (let start = before ? 1 : 0; start + inner.length <= p.length; start++) {
      let ok = true;
      for (let k = 0; k < inner.length && ok; k++) {
        const want = inner[k], have = p[start + k];
        if (want === "#") { ok = k === inner.length - 1; break; }
        ok = want === "+" || want === have;
      }
      const end = start + inner.length;
      if (ok && (!after || end < p.length || inner[inner.length - 1] === "#")) return true;
    }
    return false;
  });
}

test("the vocabulary lists the node's topics", () => {
  for (const name of ["status", "info", "command", "reply", "time", "timer.state", "timer.event", "timer.command", "timer.display"]) {
    assert.ok(vocabulary.topics[name], `topic ${name}`);
  }
});

test("the matcher takes the node's topics and refuses others", () => {
  for (const good of ["/status", "/timers/+/state", "/reply/", "timers/", "pacer/+/info", "/+/reply/", "/athletes/+/state", "pacer/"]) {
    assert.ok(inVocabulary(topicPiece(good)), good);
  }
  for (const bad of ["/timers/+/states", "/stat", "/timer/+/state", "/timers/+/cmd/x", "/cmd/"]) {
    assert.ok(!inVocabulary(topicPiece(bad)), bad);
  }
  assert.equal(topicPiece("image/png"), null);
  assert.equal(topicPiece("/+#"), null);
});

const pieces = sources.flatMap(({ file, text }) =>
  literals(text).flatMap(({ value, line }) => { const levels = topicPiece(value); return levels ? [{ file, line, value, levels }] : []; }));

test("the page's modules name topics", () => {
  const named = new Set(pieces.map((p) => p.value));
  for (const must of ["/timers/+/state", "/cmd", "/status", "/info"]) assert.ok(named.has(must), `${must} is found in the page`);
});

for (const { file, line, value, levels } of pieces) {
  test(`${file}:${line}: "${value}" is a piece of a topic of the vocabulary`, () => {
    assert.ok(inVocabulary(levels), `${file}:${line}: "${value}" is in no topic of Tests/Fixtures/protocol/vocabulary.json`);
  });
}

// --- Actions and words ----------------------------------------------------------------------

const actions = new Set([...vocabulary.timer_actions, ...vocabulary.node_actions]);
const plainWord = (word) => vocabulary.plain_words.some((w) => w === word || new RegExp("^" + w.replace(/[+]/g, "\\+").replace("N", "[0-9]+") + "$").test(word));

/** Every `pattern` match in the page's modules (and, with `html`, its pages), capture 1. */
function found(pattern, { html = false } = {}) {
  const all = html ? [...sources, ...pages] : sources;
  return all.flatMap(({ file, text }) => [...text.matchAll(pattern)].map((m) => ({ file, line: text.slice(0, m.index).split("\n").length, word: m[1] })));
}

const sentActions = found(/\baction:\s*"([^"]+)"/g);
const buttonActions = [...found(/data-action="([^"]*)"/g, { html: true }), ...found(/dataset\.action\s*[!=]==?\s*"([^"]+)"/g)];

test("the page's modules name actions", () => {
  assert.ok(sentActions.length >= 5 && buttonActions.length >= 5, `${sentActions.length} sent, ${buttonActions.length} on buttons`);
});

for (const { file, line, word } of sentActions) {
  test(`${file}:${line}: the action "${word}" is one of the node's`, () => {
    assert.ok(actions.has(word), `${file}:${line}: "${word}" is not an action of the vocabulary`);
  });
}

for (const { file, line, word } of buttonActions) {
  test(`${file}:${line}: the button's action "${word}" is an action or a plain word of the node's`, () => {
    assert.ok(actions.has(word) || plainWord(word), `${file}:${line}: "${word}" is neither an action nor a plain word`);
    const body = commandFor(word, 0);
    assert.ok(actions.has(body.action), `commandFor("${word}") sends the action "${body.action}"`);
  });
}

test("the commands the page's clock and media keys choose are actions of the vocabulary", () => {
  for (const status of [...vocabulary.statuses, null]) {
    assert.ok(actions.has(toggleFor(status).action), `toggleFor(${status})`);
    for (const key of M.ACTIONS) {
      const action = M.actionFor(key, status ? { status } : null);
      if (action !== null) assert.ok(actions.has(commandFor(action, 0).action), `media key ${key} on a ${status} timer: ${action}`);
    }
  }
});

// --- The values the page compares -----------------------------------------------------------
// The wire's words are lower case; a capitalised one compared with a `status` is the page's own
// text for it (desk.js's view: "Running"), not a word of the node's.

for (const [kind, pattern, list] of [
  ["status", /\bstatus\s*[!=]==?\s*"([a-z][^"]*)"/g, vocabulary.statuses],
  ["phase", /\bphase\s*[!=]==?\s*"([a-z][^"]*)"/g, vocabulary.phases],
  ["event type", /\bev\.type\s*[!=]==?\s*"([a-z][^"]*)"/g, vocabulary.event_types],
]) {
  const uses = found(pattern);
  test(`the page compares values of ${kind}, each one of the node's`, () => {
    assert.ok(uses.length > 0, `no ${kind} found`);
    const unknown = uses.filter(({ word }) => !list.includes(word)).map(({ file, line, word }) => `${file}:${line}: "${word}"`);
    assert.deepEqual(unknown, [], `${kind}s not in the vocabulary`);
  });
}
