#!/usr/bin/env python3
"""What the node's data directory costs an SD card's filesystem in a reference gym day.

    sudo python3 Tests/harness/bench/pi-node-device.py --binary PATH [--seconds 60] [--json FILE]

gymday.py (beside this file) measures what the node's process sends to the block layer
(`write_bytes`): the database's and the WAL's pages. An SD card is also sent ext4's own journal
and metadata: each synced command that grows the WAL commits the file's new size. This runs
gymday.py's three parts with the node's data directory on a fresh ext4 (4 KiB blocks, mounted
noatime like Raspberry Pi OS's root) on a loop device, in a mount namespace of this run, and reads
the device's sectors written (/sys/block/loopN/stat) beside the process's bytes:

- start and stop: a node that starts, comes online and stops (its whole life, synced after);
- transitions: 3 interval timers with 1 s phases over --seconds (the window, synced before and after);
- commands: 100 toggles, each waited for (the window, synced before and after).

A reference day (gymday.py's): 8,640 transitions, 360 commands, one start and stop. Needs root
and loop devices; mosquitto (no persistence) and the node's configuration stay off the device.
"""
import argparse, importlib.util, json, os, shutil, subprocess, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
spec = importlib.util.spec_from_file_location("gymday", os.path.join(HERE, "gymday.py"))
gymday = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gymday)
BASE = gymday.BASE


class Disk:
    def __init__(self, work):
        self.image = os.path.join(work, "sd.img")
        self.mount = os.path.join(work, "sd")
        with open(self.image, "wb") as f:
            f.truncate(1024 * 1024 * 1024)
        subprocess.run(["mkfs.ext4", "-q", "-b", "4096", "-E", "lazy_itable_init=0,lazy_journal_init=0", self.image], check=True)
        os.makedirs(self.mount)
        subprocess.run(["mount", "-o", "loop,noatime", self.image, self.mount], check=True)
        dev = subprocess.run(["findmnt", "-n", "-o", "SOURCE", self.mount], check=True, capture_output=True, text=True).stdout.strip()
        self.stat = f"/sys/block/{os.path.basename(dev)}/stat"

    def written(self):
        subprocess.run(["sync", "-f", self.mount], check=True)
        with open(self.stat) as f:
            return int(f.read().split()[6]) * 512

    def close(self):
        subprocess.run(["umount", self.mount], check=False)
        os.remove(self.image)


class Node(gymday.Node):
    """gymday's node, its data directory on the device and its configuration off it."""

    def __init__(self, binary, port, work, disk, name):
        config = os.path.join(work, f"{name}.yaml")
        with open(config, "w") as f:
            f.write(f"node: gymday\nbase_topic: {BASE}\n")
        self.data = os.path.join(disk.mount, name)
        self.proc = subprocess.Popen([binary, "run", "--config", config, "--broker", f"mqtt://127.0.0.1:{port}",
                                      "--data-dir", self.data], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.log_bytes = 0
        self.tail = b""
        self.reader = threading.Thread(target=self._count, daemon=True)
        self.reader.start()


def measure(args, work, disk):
    port = gymday.free_port()
    conf = os.path.join(work, "mosquitto.conf")
    with open(conf, "w") as f:
        f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\npersistence false\n")
    broker = subprocess.Popen([shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c", conf],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = {}
    try:
        gymday.wait_port(port)
        d0 = disk.written()
        node = Node(args.binary, port, work, disk, "baseline")
        gymday.wait_online(port, node)
        time.sleep(1)
        r["start_stop_bytes"] = node.stop()
        r["start_stop_device"] = disk.written() - d0

        node = Node(args.binary, port, work, disk, "transitions")
        gymday.wait_online(port, node)
        events = subprocess.Popen(["stdbuf", "-oL", "mosquitto_sub", "-p", str(port), "-t", f"{BASE}/timers/+/event", "-q", "1"],
                                  stdout=subprocess.PIPE, text=True)
        phases = []
        threading.Thread(target=lambda: phases.extend(1 for l in events.stdout if '"type":"phase"' in l), daemon=True).start()
        time.sleep(0.3)
        for i, t in enumerate(["a", "b", "c"]):
            gymday.request(port, f"{BASE}/timers/{t}/cmd", {"action": "start", "id": f"start-{t}",
                                                             "spec": {"kind": "interval", "work": "1s", "rest": "1s", "rounds": 1000}})
            time.sleep(0.37 * (i + 1))
        time.sleep(1)
        d0, w0, n0 = disk.written(), node.write_bytes(), len(phases)
        time.sleep(args.seconds)
        r["transitions"] = len(phases) - n0
        r["transition_window_bytes"] = node.write_bytes() - w0
        r["transition_window_device"] = disk.written() - d0
        node.stop()
        events.terminate(); events.wait()

        node = Node(args.binary, port, work, disk, "commands")
        gymday.wait_online(port, node)
        gymday.request(port, f"{BASE}/timers/t/cmd", {"action": "start", "id": "c-start", "spec": {"kind": "countdown", "duration": "12h"}})
        time.sleep(0.5)
        n = args.commands
        d0, w0 = disk.written(), node.write_bytes()
        for i in range(n):
            gymday.request(port, f"{BASE}/timers/t/cmd", {"action": "toggle", "id": f"c{i}"})
        r["command_bytes"] = (node.write_bytes() - w0) / n
        r["command_device"] = (disk.written() - d0) / n
        node.stop()
    finally:
        broker.terminate(); broker.wait()
    t = max(1, r["transitions"])
    r["transition_bytes"] = r["transition_window_bytes"] / t
    r["transition_device"] = r["transition_window_device"] / t
    for k in ["bytes", "device"]:
        r[f"day_{k}"] = (gymday.DAY_TRANSITIONS * r[f"transition_{k}"] + gymday.DAY_COMMANDS * r[f"command_{k}"]
                         + r[f"start_stop_{k}"])
    return r


def render(r):
    kib = lambda b: f"{b / 1024:,.1f} KiB"
    return "\n".join([
        "| | node's process (write_bytes) | on the device (ext4, loop) |", "|---|---|---|",
        f"| per transition ({r['transitions']} in the window) | {kib(r['transition_bytes'])} | {kib(r['transition_device'])} |",
        f"| per command | {kib(r['command_bytes'])} | {kib(r['command_device'])} |",
        f"| start and stop | {kib(r['start_stop_bytes'])} | {kib(r['start_stop_device'])} |",
        f"| **reference day** ({gymday.DAY_TRANSITIONS:,} transitions, {gymday.DAY_COMMANDS} commands) | "
        f"**{r['day_bytes'] / 1e6:,.2f} MB** | **{r['day_device'] / 1e6:,.2f} MB** |",
    ])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--binary", required=True)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--commands", type=int, default=100)
    ap.add_argument("--json")
    ap.add_argument("--in-namespace", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.binary = os.path.abspath(args.binary)
    if os.geteuid() != 0 or not os.path.exists("/dev/loop-control"):
        raise SystemExit("needs root and loop devices (gymday.py measures the process's bytes without them)")
    if not args.in_namespace:
        os.execvp("unshare", ["unshare", "-m", "--propagation", "private", sys.executable, os.path.abspath(__file__),
                              *sys.argv[1:], "--in-namespace"])
    parent = os.path.join(REPO, ".build")
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(prefix="pi-node-", dir=parent)
    disk = None
    try:
        disk = Disk(work)
        r = measure(args, work, disk)
    finally:
        if disk:
            disk.close()
        shutil.rmtree(work, ignore_errors=True)
    print(render(r))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)


if __name__ == "__main__":
    main()
