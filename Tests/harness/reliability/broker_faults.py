"""The broker's faults: restart (the broker stopped and started again mid-workout, commands sent
while the node is away; exactly-once replies, retained topics republished, flips on time, the
reconnect delay), absent (the node starts with no broker: SIGTERM while waiting, quiet back-off,
serving once it appears) and refused (a bad password at start, and a broker that refuses a
reconnect: the cause named, no busy loop, no log flood)."""
import json
import os
import random
import signal
import subprocess
import time

from .common import json_id, parse_json, summary
from .mqtt import connect_retrying
from .processes import Broker, Gate, Node, free_port, proc_cpu_s
from .session import Session, flip_lateness


# --- broker restarted mid-workout --------------------------------------------------------

def scenario_restart(suite):
    n = suite.args.restarts
    suite.say(f"restart: the broker is stopped and started again {n} times mid-workout")
    d = suite.dir("restart")
    broker = Broker(os.path.join(d, "broker"), persistence=True)
    broker.start()
    gate = Gate(broker.port)  # the node's way to the broker, opened after our session subscribed
    gate.open()
    config = "timers:\n  - {id: hold, name: Hold, spec: {kind: countdown, duration: 2h}}\n" \
             "  - {id: circuit, name: Circuit, spec: {kind: interval, work: 7s, rest: 3s, rounds: 999}}\n"
    node = Node(suite.pacer, os.path.join(d, "node"), gate.port, config)
    node.start()
    s = Session(node, broker.port)
    try:
        s.wait_online()
        for timer in ("hold", "circuit"):
            r = s.send({"action": "start"}, timer=timer)
            suite.check("restart", r.get("ok"), f"start {timer}: {r}")
        time.sleep(1.5)
        reconnect_ms, sent_away, answered_twice, unanswered, drift, missing = [], 0, 0, 0, [], []
        lateness = []
        for i in range(n):
            time.sleep(suite.rng.uniform(0.3, 2.5))
            retained = _retained_topics(broker.port, node)
            s.send({"action": "time"})  # a round trip: the node is connected and up to date
            hold_state = parse_json(s.client.since(0, node.topic("timers", "hold", "state"))[-1][2])
            s.close()
            gate.close()
            broker.stop()
            down_s = suite.rng.uniform(0.2, 3.0)
            time.sleep(down_s)
            broker.start()
            # A client of ours connects first and sends QoS 1 commands while the node is away;
            # then the node's way to the broker opens (the broker "accepts again").
            s = Session(node, broker.port)
            index = 0
            ids = []
            adjusts = suite.rng.randint(1, 4)
            for k in range(adjusts):
                rid = f"away-{i}-{k}"
                ids.append(rid)
                s.client.publish(node.topic("timers", "hold", "cmd"), json.dumps({"action": "adjust", "seconds": 10, "id": rid}), wait=True)
            accept_ms = gate.open()
            status_t = node.topic("status")
            try:
                s.client.wait_for(lambda: any(m[1] == status_t and m[2] == b"online" and not m[3] for m in s.client.since(index)),
                                  60, "the node back online")
            except TimeoutError as e:
                suite.check("restart", False, f"restart {i + 1}: {e}")
                continue
            online = next(m for m in s.client.since(index) if m[1] == status_t and m[2] == b"online" and not m[3])
            reconnect_ms.append(online[0] - accept_ms)
            if not any(json_id(m[2]) in ids for m in s.client.since(0, node.topic("reply")) if m[0] < online[0]):
                sent_away += adjusts
            time.sleep(2.5)
            msgs = s.client.since(index)
            # Live (not retained) since this client subscribed, after the broker's restart:
            # the plain topics have their own connection, which may be back (and republish)
            # before the main one publishes `online`.
            live = {m[1] for m in msgs if not m[3]}
            missing += [f"restart {i + 1}: {t}" for t in retained if t not in live]
            for rid in ids:
                count = len([1 for m in msgs if m[1] == node.topic("reply") and json_id(m[2]) == rid])
                if count == 0:
                    unanswered += 1
                elif count > 1:
                    answered_twice += 1
            states = [parse_json(m[2]) for m in msgs if m[1] == node.topic("timers", "hold", "state")]
            states = [x for x in states if x]
            if states and hold_state:
                last = states[-1]
                suite.check("restart", last["revision"] == hold_state["revision"] + adjusts,
                            f"restart {i + 1}: hold revision {last['revision']}, expected {hold_state['revision']} + {adjusts} adjusts (exactly once)")
                drift.append(last["ends_at_ms"] - hold_state["ends_at_ms"] - adjusts * 10_000)
            lateness += flip_lateness(msgs, node, "hold", after_ms=online[0] + 300)
            lateness += flip_lateness(msgs, node, "circuit", after_ms=online[0] + 300)
        fig = {"restarts": n, "reconnect_after_accept_ms": summary(reconnect_ms),
               "commands_sent_while_node_away": sent_away, "commands_unanswered": unanswered,
               "commands_answered_twice": answered_twice, "retained_topics_not_republished": len(missing),
               "hold_ends_at_drift_ms": summary([abs(x) for x in drift]),
               "flip_lateness_after_reconnect_ms": summary(lateness)}  # arrival at a subscriber
        suite.figures["restart"] = fig
        suite.say(f"  {json.dumps(fig)}")
        suite.check("restart", unanswered == 0 and answered_twice == 0, f"{unanswered} unanswered, {answered_twice} answered twice")
        suite.check("restart", not missing, f"retained topics not republished: {missing[:5]}")
        suite.check("restart", all(abs(x) <= 1 for x in drift), f"ends_at moved by other than the adjusts: {drift}")
        suite.check("restart", lateness and max(lateness) < 250, f"a flip was late by {max(lateness or [0]):.0f} ms")
        # The node's reconnect policy keeps attempts at most 0.75 s apart: back within 1 s
        # (a timing target: reported as a known issue, not failed, on a loaded machine).
        suite.known("restart", reconnect_ms and max(reconnect_ms) <= 1000,
                    f"reconnected up to {max(reconnect_ms or [0]):.0f} ms after the broker accepted again (target 1000 ms)")
        suite.check("restart", reconnect_ms and max(reconnect_ms) <= suite.args.reconnect_bound_ms,
                    f"reconnect took up to {max(reconnect_ms or [0]):.0f} ms after the broker accepted (bound {suite.args.reconnect_bound_ms} ms)")
    finally:
        s.close()
        node.stop()
        gate.close()
        broker.stop()


def _retained_topics(port, node):
    c = connect_retrying(port, f"rel-retained-{random.randrange(1 << 30)}")
    c.subscribe(node.topic("#"), qos=0)
    time.sleep(0.3)
    topics = {m[1] for m in c.since(0) if m[3] and m[2]}
    c.close()
    return topics


# --- broker absent at start ----------------------------------------------------------------

def scenario_absent(suite):
    wait_s = suite.args.absent
    suite.say(f"absent: the node starts with no broker for {wait_s} s")
    d = suite.dir("absent")
    port = free_port()
    # SIGTERM while waiting for the broker.
    node = Node(suite.pacer, os.path.join(d, "node-term"), port, "timers: []\n")
    node.start()
    time.sleep(2.5)
    t0 = time.monotonic()
    node.proc.send_signal(signal.SIGTERM)
    try:
        node.proc.wait(10)
        term_ms = (time.monotonic() - t0) * 1000
    except subprocess.TimeoutExpired:
        node.stop(signal.SIGKILL)
        term_ms = None
    # The node must exit within 2 s of SIGTERM in every state (systemd stops it, a coach
    # presses Ctrl-C: docs/architecture.md, "Services and shutdown").
    suite.check("absent", term_ms is not None and term_ms < 2000,
                f"SIGTERM while waiting for the broker: {'no exit within 10 s (then SIGKILL)' if term_ms is None else f'{term_ms:.0f} ms'}")

    broker = Broker(os.path.join(d, "broker"), port=port, persistence=False)
    node = Node(suite.pacer, os.path.join(d, "node"), port, "timers:\n  - {id: main, spec: {kind: countdown, duration: 1h}}\n")
    node.start()
    time.sleep(wait_s)
    cpu_waiting = proc_cpu_s(node.pid)
    accept_ms = broker.start()
    c = connect_retrying(port, "rel-absent")
    c.subscribe(node.topic("status"))
    try:
        c.wait_for(lambda: any(m[2] == b"online" for m in c.since(0)), 60, "status online")
        online = next(m for m in c.since(0) if m[2] == b"online")
        serve_ms = online[0] - accept_ms
    except TimeoutError:
        serve_ms = None
    log = node.log()
    lines = [line for line in log.splitlines() if "broker not reachable" in line]
    c.close()
    node.stop()
    broker.stop()
    fig = {"absent_s": wait_s, "sigterm_while_waiting_ms": None if term_ms is None else round(term_ms),
           "serving_after_broker_accepts_ms": None if serve_ms is None else round(serve_ms),
           "backoff_log_lines": len(lines), "cpu_while_waiting_s": cpu_waiting,
           "retry_every": [line.split("retry_every=")[-1].split()[0] if "retry_every=" in line else "?" for line in lines]}
    suite.figures["absent"] = fig
    suite.say(f"  {json.dumps(fig)}")
    suite.check("absent", serve_ms is not None, "the node never served after the broker appeared")
    # The outage is logged when first seen, then once a minute (attempts are 0.75 s apart).
    suite.check("absent", len(lines) <= wait_s / 60 + 2, f"{len(lines)} log lines in {wait_s} s: a flood")
    # Attempts at most 0.75 s apart: serving within 1 s (a timing target, reported as a known
    # issue rather than failed on a loaded machine).
    suite.known("absent", serve_ms is not None and serve_ms <= 1000,
                f"the node served {serve_ms if serve_ms is None else round(serve_ms)} ms after the broker accepted connections (target 1000 ms)")


# --- broker refuses -----------------------------------------------------------------------

def scenario_refused(suite):
    suite.say("refused: a bad password at start, and a broker that refuses a reconnect")
    d = suite.dir("refused")
    broker = Broker(os.path.join(d, "broker"), persistence=False, users={"pacer": "right", "coach": "coach"})
    broker.start()
    pw = os.path.join(d, "password")
    with open(pw, "w") as f:
        f.write("wrong\n")
    node = Node(suite.pacer, os.path.join(d, "node-bad"), broker.port, "timers: []\n", args=["--username", "pacer", "--password-file", pw])
    node.start()
    try:
        node.proc.wait(15)
        exited = node.proc.returncode
    except subprocess.TimeoutExpired:
        exited = None
    bad_log = [line for line in node.log().splitlines() if line.strip()]
    node.stop(signal.SIGKILL)
    # Refused on reconnect: connected with the right password, then the broker's password changes.
    with open(pw, "w") as f:
        f.write("right\n")
    node = Node(suite.pacer, os.path.join(d, "node"), broker.port, "timers: []\n", args=["--username", "pacer", "--password-file", pw])
    node.start()
    c = connect_retrying(broker.port, "rel-refused", username="coach", password="coach")
    c.subscribe(node.topic("status"))
    c.wait_for(lambda: any(m[2] == b"online" for m in c.since(0)), 30, "online")
    c.close()
    broker.stop()
    broker.users = {"pacer": "changed", "coach": "coach"}
    broker.write_config()
    broker.start()
    time.sleep(2)
    cpu0, t0 = proc_cpu_s(node.pid), time.monotonic()
    lines0 = len(node.log().splitlines())
    window = suite.args.refused_window
    time.sleep(window)
    cpu1, t1 = proc_cpu_s(node.pid), time.monotonic()
    new_lines = node.log().splitlines()[lines0:]
    refused_lines = [line for line in new_lines if "refused" in line]
    still_running = node.alive()
    node.stop()
    broker.stop()
    cpu_pct = None if cpu0 is None or cpu1 is None else round(100 * (cpu1 - cpu0) / (t1 - t0), 2)
    fig = {"bad_password_at_start": {"exit_status": exited, "log_lines": len(bad_log), "last_line": bad_log[-1][:300] if bad_log else None},
           "refused_on_reconnect": {"window_s": window, "node_cpu_percent": cpu_pct, "log_lines_in_window": len(new_lines),
                                    "refused_lines_in_window": len(refused_lines), "still_running": still_running,
                                    "example": refused_lines[-1][:300] if refused_lines else None}}
    suite.figures["refused"] = fig
    suite.say(f"  {json.dumps(fig)}")
    suite.check("refused", exited not in (None, 0), f"a bad password at start: exit status {exited}")
    suite.check("refused", bad_log and ("password" in bad_log[-1].lower() or "credentials" in bad_log[-1].lower()),
                f"the last log line does not name the cause: {bad_log[-1:]}")
    suite.check("refused", cpu_pct is not None and cpu_pct < 5, f"CPU while refused: {cpu_pct} %")
    # Logged once per refusal (the retries every 0.75 s are quiet), not once per attempt.
    suite.check("refused", len(refused_lines) <= 1, f"{len(refused_lines)} 'refused' lines in {window} s")
