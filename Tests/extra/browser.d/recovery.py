"""Why a rest that ends on recovery still waits, on the wall clock (single.js) and in the class view (class.js,
recovery.js), run by suite.py against the real node.

A class of twelve straps (suite.py's CLASS, one of them opted out of the leaderboard with
`leaderboard: false`) runs a `class_hr` interval whose rest lasts until 80 % of the class is
below 120 bpm. The straps read 150 until the rest begins, then one more athlete drops to 100
each second. While the rest waits, the clock's phase reads "Rest · until recovered (≤ 1:…)" and
under it "n of 12 recovered · needs 10", n following the node's retained `recovery` topic; the
live leaderboard (?board=live) ranks the athletes by their points and never names the one who
opted out, whose tile is there all the same. The tenth athlete's drop ends the rest: the line goes
and the phase is work. Screenshots: class-recovery-1920x1080.png, class-recovery-board-1920x1080.png
(the leaderboard under the tiles).
"""
import json
import time


def test_wall_recovery(env, pages, node, check, wait, straps_class):
    """The wall clock (index.html, single.js) of a rest timer until one athlete recovers: under
    "Rest · until recovered (≤ 1:00)" the athlete's bpm and the target, following the node's
    `recovery` topic, and the same on the timer's card in the grid; the line goes when the
    reading below it ends the rest."""
    timer = "restone"
    straps = straps_class(env.mqtt_port)
    try:
        straps.send("ana", 150)
        started = env.request({"action": "start", "timer": timer, "id": "rec-one", "name": "Ana's rest",
                               "spec": {"kind": "rest", "duration": {"until_hr": {"below_bpm": 120, "who": "ana", "max": "1m"}}}})
        check(started.get("ok"), "a rest until ana recovers started (%s)" % started.get("error"))
        pages.open("?node=%s&timer=%s" % (node, timer), size=(1920, 1080))
        tally = lambda: pages.js("const t = document.getElementById('tally'); return t.hidden ? '' : t.textContent")
        for bpm in (150, 131):
            straps.send("ana", bpm)
            wait(lambda: tally() == "%d bpm · below 120 to go on" % bpm, 8, "ana's %d bpm under the phase" % bpm)
        phase = pages.js("return document.getElementById('phase').textContent")
        check(phase.startswith("Rest · until recovered (≤ 0:") or phase == "Rest · until recovered (≤ 1:00)",
              "the wall clock: %r, under it %r" % (phase, tally()))
        pages.shot("wall-recovery-1920x1080")
        # The same words on the timer's card in the grid.
        pages.js("window.pacerDashboard.go(null)")
        card = lambda: pages.card_text(timer, "label")
        wait(lambda: card() == "131 bpm · below 120 to go on", 8, "ana's bpm on the timer's card")
        check(True, "the grid: the waiting rest's card reads %r" % card())
        pages.shot("grid-recovery-1920x1080")
        pages.js("window.pacerDashboard.go(arguments[0])", timer)
        straps.send("ana", 110)
        wait(lambda: not tally(), 8, "the line gone once ana recovered")
        check(not pages.js("return document.getElementById('phase').textContent").startswith("Rest · until"), "ana recovered: the rest ended")
    finally:
        straps.close()
        env.request({"action": "delete", "timer": timer, "id": "rec-one-delete"})


def test_class_recovery(env, pages, base, node, check, wait, straps_class, athletes):
    timer = "recov"
    opted_out = "eli"
    check(env.request({"action": "set_athlete", "athlete": opted_out, "leaderboard": False, "id": "rec-optout"}).get("ok"),
          "set_athlete %s leaderboard: false" % opted_out)
    straps = straps_class(env.mqtt_port)
    ids = [a[0] for a in athletes]
    names = {a[0]: a[1] for a in athletes}
    try:
        for athlete in ids:
            straps.send(athlete, 150)
        pages.open("class.html?node=%s&timer=%s&board=live" % (node, timer), size=(1920, 1080))
        wait(lambda: pages.js("return !!window.pacerClass && window.pacerClass.up"), 10, "the class view")
        started = env.request({"action": "start", "timer": timer, "id": "rec-start",
                               "spec": {"kind": "interval", "work": "3s", "rounds": 2, "class_hr": True,
                                        "rest": {"until_hr": {"below_bpm": 120, "who": "class_80pct", "max": "1m"}}}})
        check(started.get("ok"), "a class_hr interval with a rest until 80 %% recovered started (%s)" % started.get("error"))
        phase = lambda: pages.js("return document.getElementById('phase').textContent")
        tally = lambda: pages.js("const t = document.getElementById('tally'); return t.hidden ? '' : t.textContent")
        recovered = 0
        seen = {}
        t0 = time.time()
        resting = False
        while time.time() - t0 < 30:
            time.sleep(max(0, t0 + int(time.time() - t0) + 1 - time.time()))
            if not resting and phase().startswith("Rest · until recovered"):
                resting = True
            if resting and recovered < len(ids):
                recovered += 1  # one more athlete recovered each second of the rest
            for i, athlete in enumerate(ids):
                straps.send(athlete, 100 if i < recovered else 150)
            if not resting:
                continue
            time.sleep(0.4)
            text, line, node_tally = tally(), phase(), env.retained("%s/timers/%s/recovery" % (base, timer))
            if not line.startswith("Rest · until recovered"):
                break
            seen[recovered] = (line, text, node_tally)
            if recovered == 5:
                board = pages.js("return [...document.querySelectorAll('#live-board-list li')].map(li => li.dataset.athlete || '')")
                board_text = pages.js("return document.getElementById('live-board').innerText")
                tiles = pages.js("return [...document.querySelectorAll('.tile')].map(t => t.dataset.athlete)")
                check(len(board) >= 1 and opted_out not in board and names[opted_out] not in board_text and opted_out in tiles,
                      "the live leaderboard ranks %d athletes, never %s (%s), whose tile is shown: %s" % (len(board), names[opted_out], opted_out, board))
                pages.shot("class-recovery-1920x1080")
                pages.js("document.getElementById('live-board').scrollIntoView()")
                pages.shot("class-recovery-board-1920x1080")
                pages.js("window.scrollTo(0, 0)")
        check(5 in seen, "the rest waited while 5 athletes had recovered (seen: %s)" % sorted(seen))
        for n, (line, text, node_tally) in sorted(seen.items()):
            doc = json.loads(node_tally) if node_tally else {}
            check(line.startswith("Rest · until recovered (≤ ") and text.startswith("%d of 12 recovered · needs 10" % n)
                  and doc.get("recovered") == n and doc.get("counted") == 12 and doc.get("needed") == 10,
                  "%d recovered: the phase %r, under it %r (the node's recovery topic: %s)" % (n, line, text, node_tally))
        wait(lambda: pages.js("return document.body.dataset.phase") == "work" and not tally(), 5, "work again, the line gone")
        check(recovered == 10 and not env.retained("%s/timers/%s/recovery" % (base, timer)),
              "the tenth recovered athlete ended the rest (%d), and the node cleared its recovery topic" % recovered)
    finally:
        straps.close()
        env.request({"action": "delete", "timer": timer, "id": "rec-delete"})
        env.request({"action": "set_athlete", "athlete": opted_out, "leaderboard": True, "id": "rec-optin"})
