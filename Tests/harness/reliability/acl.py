"""The ACL scenarios with a real mosquitto: acl (deploy/mosquitto/acl.example: displays read,
coaches command, the node publishes, anonymous clients are refused) and aclnode (the broker's ACL
denies the node one timer's event topic: one log line per denied event, the rest keeps working,
and the events kept in the outbox arrive once the ACL allows them)."""
import json
import os
import time

from .common import ROOT, json_id
from .mqtt import Client, ConnectRefused, connect_retrying
from .processes import Broker, Node, proc_cpu_s


def _start(suite, d, users, acl, timers):
    """A broker with these users and this ACL file, and a node `gym` with these timers that logs in
    as `pacer` (its password in a file of mode 600); both started."""
    broker = Broker(os.path.join(d, "broker"), persistence=False, users=users, extra=[f"acl_file {acl}"])
    broker.start()
    pw = os.path.join(d, "password")
    with open(pw, "w") as f:
        f.write(users["pacer"] + "\n")
    os.chmod(pw, 0o600)
    node = Node(suite.pacer, os.path.join(d, "node"), broker.port, "timers:\n" + timers,
                node_id="gym", args=["--username", "pacer", "--password-file", pw])
    node.start()
    return broker, node


# --- the ACL example with a real broker ----------------------------------------------------

def scenario_acl(suite):
    acl = os.path.join(ROOT, "deploy", "mosquitto", "acl.example")
    suite.say(f"acl: {os.path.relpath(acl, ROOT)} with a real broker: displays read, coaches command, the node publishes")
    if not os.path.exists(acl):
        suite.say("  SKIPPED: no deploy/mosquitto/acl.example")
        suite.figures["acl"] = "skipped (no acl.example)"
        return
    d = suite.dir("acl")
    users = {"pacer": "p-secret", "display": "d-secret", "coach": "c-secret", "hrbridge": "h-secret"}
    broker, node = _start(suite, d, users, acl, "  - {id: main, spec: {kind: countdown, duration: 10m}}\n")
    clients = []
    try:
        coach = connect_retrying(broker.port, "rel-coach", username="coach", password=users["coach"])
        display = connect_retrying(broker.port, "rel-display", username="display", password=users["display"])
        bridge = connect_retrying(broker.port, "rel-hr", username="hrbridge", password=users["hrbridge"])
        clients = [coach, display, bridge]
        for c in (coach, display):
            c.subscribe(node.topic("#"))
        coach.wait_for(lambda: any(m[1] == node.topic("status") and m[2] == b"online" for m in coach.since(0)), 30, "online")
        reply_t = node.topic("reply")

        def replies_to(client, rid, wait):
            end = time.monotonic() + wait
            while time.monotonic() < end:
                if any(json_id(m[2]) == rid for m in client.since(0, reply_t)):
                    return True
                time.sleep(0.05)
            return False

        results = {}
        coach.publish(node.topic("timers", "main", "cmd"), json.dumps({"action": "start", "id": "acl-coach"}))
        results["coach_command_answered"] = replies_to(coach, "acl-coach", 5)
        results["display_sees_state"] = any(m[1] == node.topic("timers", "main", "state") for m in display.since(0))
        display.publish(node.topic("cmd"), json.dumps({"action": "create", "id": "acl-display", "timer": "rogue",
                                                       "spec": {"kind": "countdown", "duration": "1m"}}))
        bridge.publish(node.topic("cmd"), json.dumps({"action": "delete", "id": "acl-bridge", "timer": "main"}))
        before = coach.count()
        display.publish(node.topic("timers", "main", "display"), "6:66", retain=True)
        results["display_command_answered"] = replies_to(coach, "acl-display", 2)
        results["hrbridge_command_answered"] = replies_to(coach, "acl-bridge", 0.5)
        results["display_forged_topic_delivered"] = any(m[2] == b"6:66" for m in coach.since(before))
        try:
            Client(broker.port, "rel-anonymous").close()
            results["anonymous_refused"] = False
        except (ConnectRefused, ConnectionError, OSError):
            results["anonymous_refused"] = True
        suite.figures["acl"] = results
        suite.say(f"  {json.dumps(results)}")
        want = {"coach_command_answered": True, "display_sees_state": True, "display_command_answered": False,
                "hrbridge_command_answered": False, "display_forged_topic_delivered": False, "anonymous_refused": True}
        for key, value in want.items():
            suite.check("acl", results.get(key) == value, f"{key} is {results.get(key)}, expected {value}")
    finally:
        for c in clients:
            c.close()
        node.stop()
        broker.stop()


# --- the broker's ACL denies one of the node's own publishes (MQTT 5: PUBACK 0x87) ------

def scenario_aclnode(suite):
    suite.say("aclnode: the ACL denies the node one timer's event topic; the rest keeps working")
    d = suite.dir("aclnode")
    users = {"pacer": "p-secret", "coach": "c-secret"}
    acl = os.path.join(d, "acl")

    def write_acl(deny):
        with open(acl, "w") as f:
            f.write("user pacer\n" + ("topic deny pacer/gym/timers/a/event\n" if deny else "")
                    + "topic readwrite pacer/#\nuser coach\ntopic readwrite pacer/#\n")
    write_acl(True)
    broker, node = _start(suite, d, users, acl, "  - {id: a, spec: {kind: countdown, duration: 2s}}\n"
                                                "  - {id: b, spec: {kind: countdown, duration: 2s}}\n")
    coach = None
    refused_line = "the broker refused an event"
    try:
        coach = connect_retrying(broker.port, "rel-coach", username="coach", password=users["coach"])
        coach.subscribe(node.topic("#"))
        coach.wait_for(lambda: any(m[1] == node.topic("status") and m[2] == b"online" for m in coach.since(0)), 30, "online")
        ev_a, ev_b = node.topic("timers", "a", "event"), node.topic("timers", "b", "event")
        rounds = 2
        for i in range(rounds):
            for t in ("a", "b"):
                coach.publish(node.topic("timers", t, "cmd"), json.dumps({"action": "start", "restart": True, "id": f"acln-{t}-{i}"}))
            coach.wait_for(lambda: len(coach.since(0, ev_b)) >= i + 1, 15, f"b's event {i + 1}")
            time.sleep(0.5)
        cpu0, t0 = proc_cpu_s(node.pid), time.monotonic()
        time.sleep(5)
        cpu = proc_cpu_s(node.pid) - cpu0
        with open(node.log_path, errors="replace") as f:
            log = f.read()
        lines = [ln for ln in log.splitlines() if refused_line in ln]
        # Still serving: a command to each timer answered.
        coach.publish(node.topic("timers", "b", "cmd"), json.dumps({"action": "start", "restart": True, "id": "acln-after"}))
        served = True
        try:
            coach.wait_for(lambda: any(json_id(m[2]) == "acln-after" for m in coach.since(0, node.topic("reply"))), 10, "reply")
        except Exception:
            served = False
        results = {"events_b_delivered": len(coach.since(0, ev_b)), "events_a_delivered_while_denied": len(coach.since(0, ev_a)),
                   "refused_log_lines": len(lines), "refused_log_line": lines[0][-300:] if lines else None,
                   "node_alive": node.alive(), "served_after": served,
                   "cpu_percent_next_5s": round(100 * cpu / (time.monotonic() - t0), 1)}
        # The ACL lifted and the broker restarted: the events kept in the outbox arrive.
        coach.close()
        write_acl(False)
        broker.stop()
        broker.start()
        coach = connect_retrying(broker.port, "rel-coach2", username="coach", password=users["coach"])
        coach.subscribe(node.topic("timers", "a", "event"))
        end = time.monotonic() + 15
        while time.monotonic() < end and len(coach.since(0, ev_a)) < rounds:
            time.sleep(0.1)
        results["events_a_delivered_after_acl_lifted"] = len(coach.since(0, ev_a))
        suite.figures["aclnode"] = results
        suite.say(f"  {json.dumps(results)}")
        suite.check("aclnode", results["node_alive"] and served, "the node stopped serving after a denied publish")
        suite.check("aclnode", results["events_b_delivered"] >= rounds, "the allowed timer's events did not all arrive")
        suite.check("aclnode", results["events_a_delivered_while_denied"] == 0, "a denied event was delivered")
        # One line per denied event (the same workload gives b as many events as a): no retry loop.
        suite.check("aclnode", 1 <= len(lines) <= results["events_b_delivered"],
                    f"{len(lines)} log lines for {results['events_b_delivered']} events of the other timer")
        suite.check("aclnode", results["events_a_delivered_after_acl_lifted"] >= 1,
                    "the denied events were not delivered once the ACL allowed them (outbox)")
    finally:
        if coach:
            coach.close()
        node.stop()
        broker.stop()
