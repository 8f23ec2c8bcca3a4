// signin.js: signing in, not in the URL: the broker account from `user`/`pass` in a kiosk's
// address, else the one the sign-in form kept (localStorage when kept on this device,
// sessionStorage until the tab closes); the form, tried on the broker before it is kept; sign
// out; a kept account the broker no longer takes dropped. See docs/dashboard.md, "Signing in".
import { $, make, setText } from "./ui.js";

/**
 * `cfg`: the page's settings (`broker`, `user`, `pass`); `banner`: ui.js's. `load()` reads
 * the account before the page connects; `wire(client)` (mqtt.js's client, once made) wires
 * the Sign in button, the form and the broker's refusals.
 */
function createSignIn({ cfg, banner }) {
  const el = { account: $("account") };
  const loginKey = () => "pacer-login:" + cfg.broker;
  const state = { login: null };   // {user, pass, from: "url" | "local" | "session"}
  let client = null;
  let signing = null; // {user, resolve} while a sign-in waits for the broker

  /** The broker account: `user`/`pass` in the URL (kiosks), else what the sign-in form kept. */
  function load() {
    state.login = read();
    return state.login;
  }
  function read() {
    if (cfg.user) return { user: cfg.user, pass: cfg.pass || "", from: "url" };
    for (const [store, from] of [[localStorage, "local"], [sessionStorage, "session"]]) {
      try {
        const v = JSON.parse(store.getItem(loginKey()) || "null");
        if (v && typeof v.user === "string" && v.user) return { user: v.user, pass: v.pass || "", from };
      } catch (e) { /* unreadable: none */ }
    }
    return null;
  }
  function forget() { try { localStorage.removeItem(loginKey()); sessionStorage.removeItem(loginKey()); } catch (e) { /* none */ } }

  function wire(c) {
    client = c;
    client.on("error", onClientError);
    const d = $("signin");
    el.account.addEventListener("click", () => {
      setText($("signin-error"), "");
      showAccount();
      d.showModal();
      (state.login ? $("signout") : $("f-user")).focus();
    });
    $("signin-form").addEventListener("submit", (e) => { e.preventDefault(); signIn($("f-user").value.trim(), $("f-pass").value, $("f-remember").checked); });
    $("signout").addEventListener("click", signOut);
    client.on("connect", () => {
      if (signing) { const s = signing; signing = null; s.resolve(true); }
    });
    showAccount();
  }

  function showAccount() {
    const l = state.login;
    el.account.replaceChildren(...(l ? [make("span", "wide", "Signed in as "), document.createTextNode(l.user)] : [document.createTextNode("Sign in")]));
    el.account.title = l ? (l.from === "url" ? "from the page's address (a kiosk)" : "tap to sign out") : "a coach's account lets this page command the timers";
    setText($("signin-who"), l ? "Signed in as " + l.user + (l.from === "url" ? ", from the page's address (a kiosk link): take user and pass out of it to sign out." : l.from === "local" ? ", kept on this device." : ", until this tab closes.")
      : "Watching needs no account. Commands (start, pause, set up) need a coach's account on the broker.");
    $("signout").hidden = !l;
    $("signout").disabled = !!(l && l.from === "url");
    $("signin-go").textContent = l ? "Sign in as another" : "Sign in";
  }

  async function signIn(user, pass, remember) {
    if (!user) { setText($("signin-error"), "User name is required"); $("f-user").focus(); return; }
    setText($("signin-error"), "");
    const before = state.login;
    const btn = $("signin-go");
    btn.disabled = true;
    const ok = await new Promise((resolve) => {
      signing = { user, resolve };
      client.setCredentials(user, pass);
      setTimeout(() => { if (signing && signing.resolve === resolve) { signing = null; resolve(null); } }, 8000);
    });
    btn.disabled = false;
    if (ok === true) {
      state.login = { user, pass, from: remember ? "local" : "session" };
      forget();
      try { (remember ? localStorage : sessionStorage).setItem(loginKey(), JSON.stringify({ user, pass })); } catch (e) { /* private mode */ }
      $("f-pass").value = "";
      showAccount();
      $("signin").close();
      banner.show("Signed in as " + user, "info");
      return;
    }
    // Refused (or no answer): back to the account before.
    state.login = before;
    client.setCredentials(before ? before.user : undefined, before ? before.pass : undefined);
    setText($("signin-error"), ok === false ? "The broker refused " + user + ": wrong user name or password." : "No answer from the broker: try again.");
    showAccount();
  }

  function signOut() {
    if (!state.login || state.login.from === "url") return;
    forget();
    state.login = null;
    client.setCredentials(undefined, undefined);
    showAccount();
    $("signin").close();
    banner.show("Signed out: this page now only watches", "info");
  }

  function onClientError(err) {
    if (!err || !err.badCredentials) return;
    if (signing) { const s = signing; signing = null; s.resolve(false); return; }
    if (state.login && state.login.from !== "url") {
      // A kept sign-in the broker no longer takes (password changed): watch without it.
      const who = state.login.user;
      forget(); state.login = null; showAccount();
      client.setCredentials(undefined, undefined);
      banner.show("The broker refused the saved sign-in of " + who + ": signed out", "error");
    } else if (state.login) banner.show("The broker refused the account " + state.login.user + " given in the page's address", "error");
  }

  return { state, load, wire };
}

export { createSignIn };
