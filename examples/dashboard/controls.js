// controls.js: the coach's buttons on a timer: each button's command (clock.js's
// `commandFor`, stamped with the node's instant of the tap) sent on the timer's `cmd` topic,
// a refusal or a silence shown in the banner; Delete after a confirmation; Set up opening the
// set-up sheet. The grid's cards and the lock screen's keys send through `command` too. See
// docs/dashboard.md, "Controls".
import { commandFor } from "./clock.js";
import { $ } from "./ui.js";

/**
 * `cfg`: the page's settings (`timer`, the one shown); `conn`: connection.js's; `banner`:
 * ui.js's; `confirm(text, yes)`: ui.js's confirmDialog; `go(timer)`, `render()`: the page's;
 * `openSetup(mode)`: the set-up sheet; `forgetForm(timer)`: forgets the form kept for a timer.
 */
function createControls({ cfg, conn, banner, confirm, go, render, openSetup, forgetForm }) {
  /** Sends a button's command to a timer; a refusal or silence shows in the banner. Resolves with the reply. */
  async function command(timer, action, button) {
    if (!conn.base || !timer) return null;
    const body = commandFor(action, conn.nodeNow());
    if (button) button.classList.add("busy");
    const res = await conn.request(conn.base + "/timers/" + timer + "/cmd", body, 5000);
    if (button) button.classList.remove("busy");
    banner.result(res);
    return res;
  }

  /** Delete, once confirmed: the node clears the timer's retained topics; the page goes back to the grid. */
  async function deleteTimer(timer, button) {
    const st = conn.node.timers.get(timer);
    const name = (st && st.name) || timer;
    const yes = await confirm("Delete the timer “" + name + "”? Its run and its history on the node go with it.", "Delete");
    if (!yes) return;
    const res = await command(timer, "delete", button);
    if (res && res.reply.ok !== false) {
      conn.node.timers.delete(timer);
      forgetForm(timer);
      if (cfg.timer === timer) go(null); else render();
      banner.show("Deleted “" + name + "”", "info");
    }
  }

  /** The single clock's buttons (#controls). */
  function wire() {
    $("controls").addEventListener("click", async (e) => {
      const b = e.target.closest("button");
      if (!b || !cfg.timer || !conn.base) return;
      if (b.dataset.ui === "setup") { openSetup("edit"); return; }
      if (!b.dataset.action) return;
      if (b.dataset.action === "delete") { deleteTimer(cfg.timer, b); return; }
      command(cfg.timer, b.dataset.action, b);
    });
  }

  return { command, deleteTimer, wire };
}

export { createControls };
