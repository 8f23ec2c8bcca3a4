"""The clock scenario: wall-clock steps of +1 h, -1 h, +5 s, -5 s under a running node, through
an LD_PRELOAD shim (Tests/Fixtures/fake-wall-clock.c, built here with cc) whose offset the test
writes to a file. The node republishes ends_at_ms moved by each step, and its flips and
remaining_ms stay on real time."""
import json
import os
import subprocess
import time

from .common import ROOT, now_ms, parse_json, summary
from .processes import Broker, Node
from .session import Session


def scenario_clock(suite):
    suite.say("clock: wall-clock steps of +1 h, -1 h, +5 s, -5 s under a running node (LD_PRELOAD shim)")
    d = suite.dir("clock")
    shim = os.path.join(d, "fake-wall-clock.so")
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", shim, os.path.join(ROOT, "Tests/Fixtures/fake-wall-clock.c"), "-ldl"], check=True)
    offset = os.path.join(d, "offset")
    with open(offset, "w") as f:
        f.write("0")
    broker = Broker(os.path.join(d, "broker"), persistence=False)
    broker.start()
    node = Node(suite.pacer, os.path.join(d, "node"), broker.port,
                "timers:\n  - {id: main, spec: {kind: countdown, duration: 1h}}\n",
                env={"LD_PRELOAD": shim, "FAKE_WALL_CLOCK_OFFSET_FILE": offset})
    node.start()
    s = Session(node, broker.port)
    results = []
    try:
        s.wait_online()
        r = s.send({"action": "start"}, timer="main")
        ends_real = r["state"]["ends_at_ms"]
        total = 0
        for step in (3_600_000, -3_600_000, 5_000, -5_000, -3_600_000, 3_600_000):
            time.sleep(2.2)
            index = s.client.count()
            total += step
            with open(offset + ".tmp", "w") as f:
                f.write(str(total))
            os.replace(offset + ".tmp", offset)
            stepped = now_ms()
            # The node notices and republishes ends_at_ms moved by the step.
            target = ends_real + total
            state_t = node.topic("timers", "main", "state")
            try:
                s.client.wait_for(lambda: any(abs((parse_json(m[2]) or {}).get("ends_at_ms", 0) - target) <= 50
                                              for m in s.client.since(index, state_t)), 5, f"ends_at_ms moved by {step} ms")
                m = next(m for m in s.client.since(index, state_t) if abs((parse_json(m[2]) or {}).get("ends_at_ms", 0) - target) <= 50)
                republish_ms = m[0] - stepped
            except TimeoutError:
                republish_ms = None
            time.sleep(2.2)
            # Every flip in real time: due at (the real end) - r s, whatever the wall clock says.
            msgs = s.client.since(index)
            late = []
            last = None
            for t, topic, payload, retain in msgs:
                if topic == node.topic("timers", "main", "remaining") and not retain and payload:
                    v = int(payload)
                    if v != last:
                        late.append(t - (ends_real - v * 1000))
                    last = v
            states = [parse_json(m[2]) for m in msgs if m[1] == state_t]
            # remaining_ms continuous: node's remaining_ms against the real-time remaining.
            cont = [abs(x["remaining_ms"] - (ends_real - (m[0]))) for x, m in zip(states, [m for m in msgs if m[1] == state_t]) if x and x.get("remaining_ms") is not None]
            results.append({"step_ms": step, "ends_at_republished_after_ms": None if republish_ms is None else round(republish_ms),
                            "flip_lateness_ms": summary(late), "remaining_ms_vs_real_ms": summary(cont)})
        suite.figures["clock"] = results
        for x in results:
            suite.say(f"  {json.dumps(x)}")
            suite.check("clock", x["ends_at_republished_after_ms"] is not None, f"step {x['step_ms']}: ends_at_ms not republished")
            fl = x["flip_lateness_ms"]
            suite.check("clock", fl.get("n", 0) > 0 and fl["max"] < 150 and fl["min"] > -50, f"step {x['step_ms']}: flips off real time {fl}")
            rc = x["remaining_ms_vs_real_ms"]
            suite.check("clock", rc.get("n", 0) > 0 and rc["max"] <= 100, f"step {x['step_ms']}: remaining_ms off real time {rc}")
    finally:
        s.close()
        node.stop()
        broker.stop()
