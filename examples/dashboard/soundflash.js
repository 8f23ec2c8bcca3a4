// soundflash.js: this screen's own cues: the Sound button (sound.js's WebAudio, and with it
// the spoken cues of speech.js; on by `?sound=1` or as last chosen on this screen) and the
// Flash button with its full-screen overlay (flash.js; on by `?flash=`, else as last chosen,
// else on a wall and off on a phone), each kept in localStorage. Which cue sounds or flashes
// when is cues.js's. See docs/dashboard.md, "Sound", "Spoken cues" and "Flash".
import * as PacerSound from "./sound.js";
import * as Flash from "./flash.js";
import { Speech } from "./speech.js";
import * as M from "./media.js";
import { $ } from "./ui.js";

/**
 * `cfg`: the page's settings (`sound`, `flash`, `controls`, `lagMs`); `localNow()`: the
 * page's clock. Returns the two sinks, `sound` and `flash`, the `speech` that goes with the
 * sound (the browser's speech synthesis, where it has one), and `wire(o)` for their buttons.
 */
function createSoundFlash({ cfg, localNow }) {
  const el = { sound: $("sound"), flash: $("flash"), flashToggle: $("flash-toggle") };
  const sound = new PacerSound.Sound(localNow, cfg.lagMs);
  const flash = new Flash.Flash(localNow, showFlash);
  const speech = new Speech({
    localNow, synth: globalThis.speechSynthesis || null, Utterance: globalThis.SpeechSynthesisUtterance || null,
    gate: () => sound.running,
  });

  /** One flash on the overlay (over everything, never in the way of a tap). */
  function showFlash(kind, look) {
    el.flash.dataset.kind = kind;
    if (el.flash.animate) el.flash.animate(look.keyframes, { duration: look.durationMs, easing: "ease-out" });
  }

  /**
   * The buttons. `o.vibrate(pattern, kind, timer)` at each cue sounded; `o.soundOn()` and
   * `o.soundOff()` when the person switches sound (the lock screen and the notifications come
   * with it); `o.resched()` schedules the cues again (a sink was switched on).
   */
  function wire(o) {
    wireSound(o);
    wireFlash(o);
  }

  function wireSound(o) {
    const want = cfg.sound || localStorage.getItem("pacer-sound") === "on";
    const show = () => {
      const on = sound.running;
      el.sound.setAttribute("aria-pressed", String(on));
      el.sound.textContent = on ? "Sound on" : want && !on && sound.enabled ? "Tap for sound" : "Sound off";
    };
    sound.onCue = (kind, timer) => o.vibrate(M.cue(kind).vibrate, kind, timer);
    el.sound.addEventListener("click", () => {
      if (sound.running) { sound.disable(); speech.stop(); localStorage.setItem("pacer-sound", "off"); o.soundOff(); }
      else {
        sound.enable(); speech.unlock(); localStorage.setItem("pacer-sound", "on");
        o.soundOn();
        setTimeout(() => { sound.test(); o.resched(); }, 100);
      }
      setTimeout(show, 150);
    });
    if (want) { sound.enable(); setTimeout(() => { o.resched(); show(); }, 300); }
    setInterval(show, 2000);
    show();
  }

  /**
   * On by `?flash=1|0`, else by the footer's Flash button (kept on this device), else by the
   * screen: walls flash, phones do not (flash.js's defaultOn). Reduced motion follows the
   * system's setting, live.
   */
  function wireFlash(o) {
    const kept = localStorage.getItem("pacer-flash");
    const coarse = !!(window.matchMedia && matchMedia("(pointer: coarse)").matches);
    const on = cfg.flash === "1" ? true : cfg.flash === "0" ? false : kept === "on" ? true : kept === "off" ? false
      : Flash.defaultOn({ controls: cfg.controls, coarse, width: screen.width, height: screen.height });
    const rm = window.matchMedia ? matchMedia("(prefers-reduced-motion: reduce)") : null;
    const motion = () => { flash.reduced = !!(rm && rm.matches); };
    motion();
    if (rm && rm.addEventListener) rm.addEventListener("change", motion);
    const show = () => {
      el.flashToggle.setAttribute("aria-pressed", String(flash.enabled));
      el.flashToggle.textContent = flash.enabled ? "Flash on" : "Flash off";
    };
    el.flashToggle.addEventListener("click", () => {
      flash.setEnabled(!flash.enabled);
      localStorage.setItem("pacer-flash", flash.enabled ? "on" : "off");
      if (flash.enabled) o.resched();
      show();
    });
    flash.setEnabled(on);
    show();
    if (on) setTimeout(o.resched, 300);
  }

  return { sound, flash, speech, wire };
}

export { createSoundFlash };
