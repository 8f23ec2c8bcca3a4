// ui.js: the wall page's small DOM helpers, shared by its parts (app.js and the modules it
// wires): an element by id, a new element, a text set only when it changed, the banner (a
// refusal, a silence, a done thing), the question with two answers (Delete / Keep), and
// the sentence for a command nobody answered. See docs/dashboard.md.

const NO_ANSWER = "No answer from the timer node (is it online? commands need a coach's sign-in)";

const $ = (id) => document.getElementById(id);

/** A new element with a class and a text (each optional). */
const make = (tag, cls, text) => { const n = document.createElement(tag); if (cls) n.className = cls; if (text != null) n.textContent = text; return n; };

/** Sets a node's text only when it changes (no layout for nothing). */
function setText(node, text) { if (node.textContent !== text) node.textContent = text; }

/**
 * The banner over the page: `show(text, kind)` for 4 s (`info`) or 8 s (an `error`),
 * `hide()`; `result(res)` shows what a command's reply says (a refusal, or no answer) and
 * hides the banner when it was done.
 */
function createBanner(node) {
  let timer = null;
  const hide = () => { node.hidden = true; };
  function show(text, kind) {
    node.textContent = text;
    node.dataset.kind = kind;
    node.hidden = false;
    clearTimeout(timer);
    timer = setTimeout(hide, kind === "info" ? 4000 : 8000);
  }
  function result(res) {
    if (!res) show(NO_ANSWER, "error");
    else if (res.reply.ok === false) show((res.reply.error && res.reply.error.message) || "refused", "error");
    else hide();
  }
  return { show, hide, result };
}

/** A question with two answers in the modal dialog #confirm; resolves true for `yes`. */
function confirmDialog(text, yes) {
  const d = $("confirm");
  setText($("confirm-text"), text);
  setText($("confirm-yes"), yes || "Delete");
  d.returnValue = "";
  return new Promise((resolve) => {
    d.addEventListener("close", () => resolve(d.returnValue === "yes"), { once: true });
    d.showModal();
    $("confirm-no").focus();
  });
}

/** Every dialog's Close button closes its dialog. */
function wireDialogCloses() {
  for (const b of document.querySelectorAll("dialog [data-close]")) b.addEventListener("click", () => b.closest("dialog").close());
}

export { NO_ANSWER, $, make, setText, createBanner, confirmDialog, wireDialogCloses };
