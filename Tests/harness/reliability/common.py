"""What every module of the suite shares: where the checkout is (ROOT, and SCRIPTS where the
`reliability` launcher lives), the wall clock in ms, the lowest CPU priority for the threads that
stand for devices elsewhere on the LAN, tolerant JSON readers of MQTT payloads, and the summary
(n, min, median, p99, max) every figure of the report uses."""
import json
import os
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCRIPTS = os.path.join(ROOT, "scripts")


def now_ms():
    return time.time() * 1000.0


def lower_this_thread():
    """This thread (and what it spawns) under SCHED_IDLE, else at nice 19: the storm's load
    and its measuring stand for devices elsewhere on the LAN, so they take only the CPU time
    the broker and the node leave, as those devices would."""
    tid = threading.get_native_id()
    try:
        os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
    except (OSError, AttributeError):
        try:
            os.setpriority(os.PRIO_PROCESS, tid, 19)
        except (OSError, AttributeError):
            pass


def json_id(payload):
    try:
        return json.loads(payload).get("id")
    except (ValueError, AttributeError):
        return None


def parse_json(payload):
    try:
        return json.loads(payload)
    except ValueError:
        return None


def summary(values):
    if not values:
        return {"n": 0}
    v = sorted(values)
    return {"n": len(v), "min": round(v[0], 1), "median": round(v[len(v) // 2], 1),
            "p99": round(v[min(len(v) - 1, int(len(v) * 0.99))], 1), "max": round(v[-1], 1)}
