"""The page's spoken cues in Chromium (examples/dashboard/speech.js), run by suite.py.

A page whose clock is 7 s ahead shows a countdown of 6 s with Sound on. The test publishes
what a node with `sound.speech` publishes: an announcement with its text on `<base>/cue_ahead`
(`say`, a second ahead) for the countdown's 2-second cue, a `say` message on
`<base>/timers/<id>/say` for the end, sent 1.5 s before it, and one that comes 1.5 s after its
instant. `speechSynthesis.speak` is wrapped in the page and records each call on the machine's
real clock (the node's, on this machine) and on the page's skew-corrected clock: both texts
must be asked for within 100 ms of their due_ms, the late one never; the beeps of those two
instants are hushed while the others sound (the oscillators' hook of suite.py); with Sound off
nothing is said. Whether headless Chromium has a voice (it needs speech-dispatcher) is printed:
without one the browser says nothing aloud, and the figure is that of the page's scheduling.
"""
import json
import os
import time

from selenium.webdriver.common.by import By

# speak() wrapped where the page calls it: the text, the real clock and the page's own clock
# (its skewed performance.timeOrigin + now, plus the measured offset: the node's clock as the
# page knows it); the utterance's start and error events, when the browser has a voice.
WRAP = r"""
const s = window.speechSynthesis, speak = s.speak.bind(s);
window.__said = []; window.__sayEvents = [];
s.speak = (u) => {
  const rec = { text: u.text, real: window.__realNow(), page: performance.timeOrigin + performance.now(),
                offset: window.pacerDashboard.app.offset, voice: u.voice ? u.voice.name : null };
  window.__said.push(rec);
  u.addEventListener("start", () => window.__sayEvents.push([u.text, "start", window.__realNow()]));
  u.addEventListener("error", (e) => window.__sayEvents.push([u.text, "error " + e.error, window.__realNow()]));
  return speak(u);
};
return s.getVoices().length;
"""

TIMER = "voice"


def test_spoken_cues(env, pages, base, node, check, wait):
    reply = env.request({"action": "create", "timer": TIMER, "name": "Voice", "id": "speech-create",
                         "spec": {"kind": "countdown", "duration": "6s"}})
    assert reply and reply.get("ok"), "the countdown created: %r" % reply
    h = pages.open("?node=%s&timer=%s" % (node, TIMER), skew=7000)
    wait(lambda: pages.js("const a = window.pacerDashboard.app; return a.syncMethod == 'time' && !a.syncing"), 10, "a clock sync")
    sound = lambda: pages.js("return window.pacerDashboard.sound.running")
    button = lambda: pages.d.find_element(By.ID, "sound")
    if sound():  # on by the choice kept on this origin: off and on again, by a person's taps
        pages.tap(button())
        wait(lambda: not sound(), 5, "sound off")
    pages.tap(button())
    wait(sound, 5, "sound on after a tap")
    check(pages.js("return window.pacerDashboard.speech.available"), "the page has the browser's speech synthesis")
    time.sleep(0.5)  # the voices load
    voices = pages.js(WRAP)
    offset = pages.js("return window.pacerDashboard.app.offset")

    pages.js("window.__cues.length = 0")
    env.pub("%s/timers/%s/cmd" % (base, TIMER), "start")
    st = wait(lambda: (lambda s: s if s and s["status"] == "running" else None)(env.state(TIMER)), 5, "the countdown running")
    ends = st["ends_at_ms"]
    wait(lambda: pages.js("return [...window.pacerDashboard.sound.entries.values()].filter(e => e.timer === arguments[0]).length", TIMER) >= 4,
         5, "the countdown's beeps foreseen")
    now_ms = lambda: time.time() * 1000

    def until(t):
        while now_ms() < t:
            time.sleep(0.002)

    # As the node sends them: the 2-second mark announced 1 s ahead; the end's text 1.5 s ahead
    # (a node sends it as the event goes out: this is the page's scheduling measured); one late.
    until(ends - 3000)
    lead = ends - 2000 - now_ms()
    env.pub(base + "/cue_ahead", json.dumps({"timer": TIMER, "cue": "countdown", "due_ms": ends - 2000, "duration_ms": 700,
                                              "lead_ms": round(lead), "say": "2 seconds"}))
    until(ends - 1500)
    env.pub("%s/timers/%s/say" % (base, TIMER), json.dumps({"timer": TIMER, "event": "finished", "text": "Done", "due_ms": ends,
                                                             "at_ms": round(now_ms()), "lang": "en"}))
    env.pub("%s/timers/%s/say" % (base, TIMER), json.dumps({"timer": TIMER, "event": "phase", "text": "Too late", "due_ms": round(now_ms() - 1500),
                                                             "at_ms": round(now_ms()), "lang": "en"}))
    until(ends + 400)
    pages.shot("spoken-cue-1920x1080")  # the words on the screen while they are said
    check(pages.js("const e = document.getElementById('said'); return e.classList.contains('on') && e.textContent") == "Done",
          "the words said are on the screen")
    until(ends + 1200)
    said = [r for r in pages.js("return window.__said") if r["text"].strip()]
    events = pages.js("return window.__sayEvents")
    cues = pages.js("return window.__cues")
    log = pages.js("return window.pacerDashboard.speech.log.map(l => l.text + ': ' + l.what)")
    print("     Chromium's voices: %d%s; speech log: %s" % (voices, "" if voices else " (no speech-dispatcher: nothing is heard, the scheduling is measured)", "; ".join(log)))
    due = {"2 seconds": ends - 2000, "Done": ends}
    texts = [r["text"] for r in said]
    check(texts == ["2 seconds", "Done"], "said: the announced mark and the end, in order, once each, and not the late one: %s" % texts)
    real = {r["text"]: r["real"] - due[r["text"]] for r in said if r["text"] in due}
    page = {r["text"]: r["page"] + r["offset"] - due[r["text"]] for r in said if r["text"] in due}
    print("     speak() vs due_ms, real clock: %s; on the page's skew-corrected clock (offset %+.1f ms): %s" % (
        ", ".join("%s %+.1f ms" % kv for kv in real.items()), offset, ", ".join("%s %+.1f ms" % kv for kv in page.items())))
    check(len(real) == 2 and all(abs(d) <= 100 for d in real.values()) and all(abs(d) <= 100 for d in page.values()),
          "speechSynthesis.speak within 100 ms of due_ms (real clock and the page's skew-corrected clock)")
    starts = [(t, at - due[t]) for t, what, at in events if what == "start" and t in due]
    errors = [(t, what) for t, what, _ in events if what.startswith("error") and t.strip()]
    print("     the browser's own start events: %s; errors: %s" % (", ".join("%s %+.0f ms" % s for s in starts) or "none", errors or "none"))

    # The beeps: the 3 and 1 s marks sound; the 2 s mark and the end's chord are spoken instead.
    live = [c for c in cues if not c["cancelled"]]
    near = lambda t, w: [c for c in live if abs(c["at"] - t) <= w]
    check(len(near(ends - 3000, 30)) == 1 and len(near(ends - 1000, 30)) == 1 and not near(ends - 2000, 60)
          and not [c for c in live if ends - 60 <= c["at"] <= ends + 600],
          "beeps at the 3 and 1 s marks; none at the spoken 2 s mark and end (%d tones scheduled, %d hushed)"
          % (len(cues), len(cues) - len(live)))

    # Sound off: nothing is said.
    pages.tap(button())
    wait(lambda: not sound(), 5, "sound off")
    before = len(pages.js("return window.__said"))
    env.pub("%s/timers/%s/say" % (base, TIMER), json.dumps({"timer": TIMER, "event": "phase", "text": "Work", "due_ms": round(now_ms() + 600),
                                                             "at_ms": round(now_ms()), "lang": "en"}))
    time.sleep(1.5)
    check(len(pages.js("return window.__said")) == before, "Sound off: a text due later is not said")
    if len(pages.d.window_handles) > 1:
        pages.close(h)
    env.request({"action": "delete", "timer": TIMER, "id": "speech-delete"})
