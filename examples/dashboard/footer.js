// footer.js: the wall page's footer: the note on an address of another form (legacy.js),
// All timers and the Class view links, the connection and clock lines (views.js's
// statusLine), and the node's speaker (speaker.js: a toggle labelled by its state and a
// volume slider, from `<base>/sound`). The Sign in, Flash and Sound buttons beside them are
// signin.js's and soundflash.js's. See docs/dashboard.md, "The node's speaker".
import { classViewHref } from "./classview.js";
import * as S from "./speaker.js";
import { statusLine } from "./views.js";
import { $, setText } from "./ui.js";

/**
 * `cfg`: the page's settings; `conn`: connection.js's; `legacy`: legacy.js's reading of the
 * address (null: none); `link(over)`: the query of a link to this page with `over` changed;
 * `go(timer)`: shows a timer (null: the grid); `banner`: ui.js's.
 */
function createFooter({ cfg, conn, legacy, link, go, banner }) {
  const el = {
    foot: $("foot"), legacyNote: $("legacy-note"), home: $("home"), classLink: $("class-link"), conn: $("conn"), sync: $("sync"),
    speakerBox: $("node-speaker"), speaker: $("speaker"), speakerVolume: $("speaker-volume"),
  };

  /** The note on an address of another form: one line, shown on a wall without controls too. */
  function showLegacyNote() {
    if (!legacy) return;
    el.legacyNote.textContent = legacy.note;
    el.legacyNote.hidden = false;
    el.foot.classList.add("noted");
    console.info("pacer: " + legacy.note);
  }

  /** All timers: the grid of this node. */
  function renderHome() { el.home.href = "?" + link({ timer: null }); }

  /** The Class link: shown while the node publishes its athletes (a class), to this view's timer. */
  function renderClassLink() {
    const href = classViewHref("?" + link({ timer: cfg.timer }), conn.node.athletes, conn.node.info && conn.node.info.node);
    el.classLink.hidden = href == null;
    if (href) el.classLink.href = href;
  }

  /** The connection and clock lines. */
  function renderStatus() {
    const s = statusLine({
      brokerUp: conn.brokerUp, nodeOnline: conn.node.online, info: conn.node.info, node: cfg.node, base: conn.base,
      offset: conn.clock.offset, method: conn.clock.method, rtt: conn.clock.rtt, syncing: conn.syncing,
    });
    setText(el.conn, s.conn);
    el.conn.dataset.ok = String(s.ok);
    setText(el.sync, s.sync);
  }

  /** The Node speaker: a toggle labelled by its state and a volume slider, from <base>/sound. */
  function renderSpeaker() {
    const v = S.speakerView(conn.node.speaker, { controls: cfg.controls });
    el.speakerBox.hidden = v.hidden;
    if (v.hidden) return;
    setText(el.speaker, v.label);
    el.speaker.setAttribute("aria-pressed", String(v.pressed));
    el.speaker.title = v.title;
    // Not while a finger is on the slider: the retained value follows the command.
    if (!el.speakerVolume.matches(":active")) el.speakerVolume.value = String(v.volume);
    el.speakerVolume.setAttribute("aria-valuetext", v.volume + " %");
    el.speakerVolume.title = v.volumeLabel;
  }

  async function speakerCommand(body, control) {
    if (!conn.base || !body) return;
    control.classList.add("busy");
    const res = await conn.request(conn.base + "/cmd", body, 5000);
    control.classList.remove("busy");
    banner.result(res);
  }

  /** All timers opens the grid in place; the speaker's toggle and slider send `sound`. */
  function wire() {
    el.home.addEventListener("click", (e) => {
      if (e.button === 0 && !e.metaKey && !e.ctrlKey && !e.shiftKey) { e.preventDefault(); go(null); }
    });
    el.speaker.addEventListener("click", () => {
      if (conn.node.speaker) speakerCommand(S.muteCommand(!conn.node.speaker.muted), el.speaker);
    });
    el.speakerVolume.addEventListener("change", () => speakerCommand(S.volumeCommand(el.speakerVolume.value), el.speakerVolume));
    renderSpeaker();
  }

  return { showLegacyNote, renderHome, renderClassLink, renderStatus, renderSpeaker, wire };
}

export { createFooter };
