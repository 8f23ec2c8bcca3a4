#!/usr/bin/env python3
"""What a node writes to its data directory's device in a reference gym day (an SD card's wear).

    python3 Tests/harness/bench/gymday.py --binary PATH [--seconds 120] [--json FILE]

A reference gym day: 3 interval timers busy 12 hours, a phase transition every 15 s on average
(8,640 transitions), and 10 commands an hour per timer (starts, pauses, resumes: 360). It is
measured compressed: the same 3 timers with 1 s phases for --seconds, then a command phase of
toggles on an idle node, and scaled to the day by bytes per transition and per command.

Bytes are what the node's process sent to the block layer (`write_bytes`/`ru_oublock`: the
database, its WAL, checkpoints, anything else it writes), read by wait4 when the process has
ended, so its shutdown (the last checkpoint) is counted; its log output at the default level is
counted apart (journald writes it). Each figure is beside its floor: a command must put at least
one page into the WAL and sync it (page size + the 24-byte frame header).
"""
import argparse, json, os, shutil, signal, socket, subprocess, tempfile, threading, time

BASE = "pacer/gymday"
DAY_TRANSITIONS = 8_640
DAY_COMMANDS = 3 * 12 * 10


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def wait_port(port, timeout=10, proc=None):
    """Waits until something listens on 127.0.0.1:`port` (`proc`: the process that should)."""
    end = time.time() + timeout
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            raise SystemExit(f"{proc.args[0]} exited ({proc.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close(); return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on 127.0.0.1:{port}")


RUNNING = []  # every node started, stopped in measure()'s finally


class Node:
    """`pacer run` with its output counted (not stored) and its block writes read at its end."""

    def __init__(self, binary, port, work, name):
        self.data = os.path.join(work, name)
        config = os.path.join(work, f"{name}.yaml")
        with open(config, "w") as f:
            f.write(f"node: gymday\nbase_topic: {BASE}\n")
        self.proc = subprocess.Popen([binary, "run", "--config", config, "--broker", f"mqtt://127.0.0.1:{port}",
                                      "--data-dir", self.data], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.log_bytes = 0
        self.tail = b""
        self.reader = threading.Thread(target=self._count, daemon=True)
        self.reader.start()
        RUNNING.append(self)

    def _count(self):
        for chunk in iter(lambda: self.proc.stdout.read1(65536), b""):
            self.log_bytes += len(chunk)
            self.tail = (self.tail + chunk)[-4096:]

    def write_bytes(self):
        with open(f"/proc/{self.proc.pid}/io") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("write_bytes:"))

    def stop(self):
        """SIGTERM; returns every byte the process wrote to the block layer in its life."""
        self.proc.send_signal(signal.SIGTERM)
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.reader.join(5)
        return usage.ru_oublock * 512


def wait_online(port, node=None, timeout=30, base=BASE):
    """Waits for `online` on the status topic (a stopped node's retained `offline` comes first)."""
    sub = subprocess.Popen(["mosquitto_sub", "-p", str(port), "-t", f"{base}/status", "-W", str(timeout)],
                           stdout=subprocess.PIPE, text=True)
    for line in sub.stdout:
        if line.strip() == "online":
            sub.terminate(); sub.wait()
            return
    sub.wait()
    tail = node.tail.decode(errors="replace") if node is not None else ""
    raise SystemExit(f"the node never said online; its output ends:\n{tail}")


def request(port, topic, body, timeout=10, base=BASE, expect_ok=True):
    """Sends a command (a dict, or raw text) and waits for its reply on <base>/reply (matched by
    id); None when none comes."""
    sub = subprocess.Popen(["mosquitto_sub", "-p", str(port), "-t", f"{base}/reply", "-W", str(timeout)],
                           stdout=subprocess.PIPE, text=True)
    time.sleep(0.05)
    rid = body["id"] if isinstance(body, dict) else None
    subprocess.run(["mosquitto_pub", "-p", str(port), "-t", topic, "-q", "1", "-s"],
                   input=(json.dumps(body) if isinstance(body, dict) else body).encode(), check=True)
    for line in sub.stdout:
        try:
            reply = json.loads(line)
        except ValueError:
            continue
        if rid is None or reply.get("id") == rid:
            sub.terminate(); sub.wait()
            if expect_ok and not reply.get("ok"):
                raise SystemExit(f"the node refused {body}: {reply}")
            return reply
    sub.wait()
    if expect_ok:
        raise SystemExit(f"no reply to {body}")
    return None


def page_size(data):
    path = os.path.join(data, "pacer.sqlite")
    try:
        with open(path, "rb") as f:
            header = f.read(18)
        size = int.from_bytes(header[16:18], "big")
        return 65536 if size == 1 else size
    except OSError:
        return 4096


def measure(binary, seconds):
    work = tempfile.mkdtemp(prefix="gymday-", dir=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".build"))
    port = free_port()
    conf = os.path.join(work, "mosquitto.conf")
    with open(conf, "w") as f:
        f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\n")
    broker = subprocess.Popen([shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c", conf],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = {}
    try:
        wait_port(port)
        # Baseline: a node that starts and stops with nothing to do.
        node = Node(binary, port, work, "baseline")
        wait_online(port, node)
        time.sleep(1)
        r["baseline_bytes"] = node.stop()
        r["baseline_log_bytes"] = node.log_bytes

        # Transitions: 3 interval timers, 1 s work / 1 s rest, started at different instants.
        node = Node(binary, port, work, "transitions")
        wait_online(port, node)
        events = subprocess.Popen(["stdbuf", "-oL", "mosquitto_sub", "-p", str(port), "-t", f"{BASE}/timers/+/event", "-q", "1"],
                                  stdout=subprocess.PIPE, text=True)
        phases = []
        counter = threading.Thread(target=lambda: phases.extend(1 for l in events.stdout if '"type":"phase"' in l), daemon=True)
        counter.start()
        time.sleep(0.3)
        for i, id in enumerate(["a", "b", "c"]):
            request(port, f"{BASE}/timers/{id}/cmd", {"action": "start", "id": f"start-{id}",
                                                       "spec": {"kind": "interval", "work": "1s", "rest": "1s", "rounds": 1000}})
            time.sleep(0.37 * (i + 1))
        started = time.time()
        before = node.write_bytes()
        time.sleep(seconds)
        during = node.write_bytes() - before
        elapsed = time.time() - started
        total = node.stop()
        events.terminate(); events.wait()
        counter.join(5)
        transitions = len(phases)
        r.update(transitions_seconds=round(elapsed, 1), transitions=transitions, transition_window_bytes=during,
                 transitions_node_bytes=total, transitions_log_bytes=node.log_bytes)

        # Commands: toggles of an idle-ish node, each waited for.
        node = Node(binary, port, work, "commands")
        wait_online(port, node)
        request(port, f"{BASE}/timers/t/cmd", {"action": "start", "id": "c-start", "spec": {"kind": "countdown", "duration": "12h"}})
        time.sleep(0.5)
        n = 100
        before = node.write_bytes()
        log_before = node.log_bytes
        for i in range(n):
            request(port, f"{BASE}/timers/t/cmd", {"action": "toggle", "id": f"c{i}"})
        r["command_bytes"] = (node.write_bytes() - before) / n
        r["command_log_bytes"] = (node.log_bytes - log_before) / n
        r["page_size"] = page_size(node.data)
        node.stop()
    finally:
        for node in RUNNING:
            if node.proc.returncode is None and node.proc.poll() is None:
                node.proc.kill(); node.proc.wait()
        RUNNING.clear()
        broker.terminate(); broker.wait()
        shutil.rmtree(work, ignore_errors=True)

    transitions = max(1, r["transitions"])
    # What the node wrote while only time passed (its 3 starts are commands, counted apart).
    r["transition_bytes"] = r["transition_window_bytes"] / transitions
    r["transition_log_bytes"] = max(0, r["transitions_log_bytes"] - r["baseline_log_bytes"]) / transitions
    r["floor_command_bytes"] = r["page_size"] + 24
    r["day_bytes"] = DAY_TRANSITIONS * r["transition_bytes"] + DAY_COMMANDS * r["command_bytes"] + r["baseline_bytes"]
    r["day_log_bytes"] = DAY_TRANSITIONS * r["transition_log_bytes"] + DAY_COMMANDS * r["command_log_bytes"] + r["baseline_log_bytes"]
    r["day_floor_bytes"] = DAY_COMMANDS * r["floor_command_bytes"]
    return r


def render(r, label=""):
    kb = lambda b: f"{b / 1024:,.1f} KiB"
    mb = lambda b: f"{b / 1e6:,.2f} MB"
    return "\n".join([
        f"Reference gym day (3 interval timers, 12 h, {DAY_TRANSITIONS:,} transitions, {DAY_COMMANDS} commands){' — ' + label if label else ''}:",
        "", "| | figure | floor |", "|---|---|---|",
        f"| per transition | {kb(r['transition_bytes'])} ({r['transitions']} transitions in {r['transitions_seconds']} s: {r['transition_window_bytes']:,} B) | 0 (derived from the last command) |",
        f"| per command | {kb(r['command_bytes'])} | {kb(r['floor_command_bytes'])} (one synced WAL page) |",
        f"| start and stop | {kb(r['baseline_bytes'])} | |",
        f"| **reference day, data directory** | **{mb(r['day_bytes'])}** | {mb(r['day_floor_bytes'])} |",
        f"| reference day, log output at the default level | {mb(r['day_log_bytes'])} ({r['transition_log_bytes']:.0f} B per transition, {r['command_log_bytes']:.0f} B per command) | |",
    ])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", required=True)
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--json")
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    r = measure(os.path.abspath(args.binary), args.seconds)
    print(render(r, args.label))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)


if __name__ == "__main__":
    main()
