#!/usr/bin/env python3
"""What the node's log costs the Pi's SD card through journald, per event and per day.

    sudo python3 Tests/harness/bench/pi-journald-writes.py --binary PATH [--json FILE]

1. The node's log at its default level (info), line by line, over a run that has everything a
   day can bring: a start, 3 interval timers with 1 s phases (transitions), accepted commands
   (toggles, each waited for), refused commands (malformed JSON, an unknown action, wrong
   types, an absurd duration, an oversized payload, an unknown timer), a broker outage (the
   broker stopped by its PID for --outage seconds, then started again on the same port) and a
   stop. Bytes and lines for each part: what journald receives.
2. As root with a loop device: the same lines through a real systemd-journald (this machine's,
   /lib/systemd/systemd-journald) writing a persistent journal on a fresh ext4 (4 KiB blocks,
   mounted noatime like Raspberry Pi OS's root). journald runs in a mount namespace of this
   run with a tmpfs on /run and the ext4 on /var/log/journal, so it touches nothing outside
   (systemd is not PID 1 here; it does not need to be). The node's lines reach it over a
   stdout stream (`systemd-cat -t pacer`, what a unit's StandardOutput=journal is). Each event
   is measured on its own, as on a Pi where the node logs a few lines an hour: the lines are
   written, then `journalctl --sync` (what journald does SyncIntervalSec after a write: write
   everything, mark the file offline, fsync) and `sync -f` (what the kernel does within 30 s
   with the pages journald dirtied), and the device's sectors written are read
   (/sys/block/loopN/stat): the journal's pages, its header, and ext4's journal and metadata.
   Then a dense burst of lines (amortised cost per line) and Storage=volatile (nothing on the
   device).

Without root or loop devices only part 1 runs.
"""
import argparse, json, os, shutil, signal, socket, subprocess, sys, tempfile, threading, time

BASE = "pacer/logday"
REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
import importlib.util

# The helpers gymday.py (beside this file) has: ports, commands and the node's `online`.
_spec = importlib.util.spec_from_file_location("gymday", os.path.join(os.path.dirname(os.path.abspath(__file__)), "gymday.py"))
gymday = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gymday)
free_port = gymday.free_port


def wait_port(port, timeout=10):
    gymday.wait_port(port, timeout)


def request(port, topic, body, timeout=10, expect_ok=True):
    return gymday.request(port, topic, body, timeout, base=BASE, expect_ok=expect_ok)


def wait_online(port, timeout=30):
    gymday.wait_online(port, None, timeout, base=BASE)


JOURNALD = next((p for p in ["/lib/systemd/systemd-journald", "/usr/lib/systemd/systemd-journald"] if os.path.exists(p)), None)


class Broker:
    def __init__(self, work, port):
        self.conf = os.path.join(work, "mosquitto.conf")
        with open(self.conf, "w") as f:
            f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\npersistence false\n")
        self.port = port
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c", self.conf],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            self.proc.wait(10)


class Journal:
    """A systemd-journald of this run on a loop device's ext4, or Storage=volatile."""

    def __init__(self, work, storage="persistent"):
        self.work = work
        self.image = os.path.join(work, "sd.img")
        self.mount = "/var/log/journal"
        with open(self.image, "wb") as f:
            f.truncate(1024 * 1024 * 1024)
        subprocess.run(["mkfs.ext4", "-q", "-b", "4096", "-E", "lazy_itable_init=0,lazy_journal_init=0", self.image], check=True)
        # Only in this run's mount namespace (see main): /run and /var/log/journal are ours.
        subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/run"], check=True)
        subprocess.run(["mount", "-o", "loop,noatime", self.image, self.mount], check=True)
        dev = subprocess.run(["findmnt", "-n", "-o", "SOURCE", self.mount], check=True, capture_output=True, text=True).stdout.strip()
        self.stat = f"/sys/block/{os.path.basename(dev)}/stat"
        self.conf = os.path.join(work, "journald.conf")
        self.proc = None
        self.start(storage)

    def start(self, storage):
        with open(self.conf, "w") as f:
            f.write(f"[Journal]\nStorage={storage}\nReadKMsg=no\nForwardToSyslog=no\nForwardToWall=no\n")
        subprocess.run(["mount", "--bind", self.conf, "/etc/systemd/journald.conf"], check=True)
        self.proc = subprocess.Popen([JOURNALD], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            if os.path.exists("/run/systemd/journal/stdout"):
                break
            time.sleep(0.05)
        time.sleep(0.3)
        # As systemd-journal-flush.service does after boot: from /run to /var/log/journal.
        os.kill(self.proc.pid, signal.SIGUSR1)
        time.sleep(0.5)
        self.storage = storage

    def restart(self, storage):
        self.proc.send_signal(signal.SIGTERM); self.proc.wait(10)
        subprocess.run(["umount", "/etc/systemd/journald.conf"], check=True)
        self.start(storage)

    def writeback(self):
        """What the kernel does within 30 s with the pages journald dirtied (and ext4's commit), now."""
        time.sleep(0.5)
        subprocess.run(["sync", "-f", self.mount], check=True)

    def journald_sync(self):
        """What journald does SyncIntervalSec after a write (mark the file offline, fsync), now."""
        subprocess.run(["journalctl", "--sync"], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run(["sync", "-f", self.mount], check=True)

    def settle(self):
        self.writeback()
        self.journald_sync()

    def written(self):
        with open(self.stat) as f:
            return int(f.read().split()[6]) * 512

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM); self.proc.wait(10)
        subprocess.run(["umount", "/etc/systemd/journald.conf"], check=False)
        subprocess.run(["umount", self.mount], check=False)
        subprocess.run(["umount", "/run"], check=False)
        os.remove(self.image)


class Node:
    """`pacer run`; every output line counted, and forwarded to journald when there is one."""

    def __init__(self, binary, port, work, journal):
        config = os.path.join(work, "node.yaml")
        with open(config, "w") as f:
            f.write(f"node: logday\nbase_topic: {BASE}\n")
        self.proc = subprocess.Popen([binary, "run", "--config", config, "--broker", f"mqtt://127.0.0.1:{port}",
                                      "--data-dir", os.path.join(work, "node-data")],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.sink = None
        if journal:
            # A stdout stream to journald, like a unit's StandardOutput=journal.
            self.sink = subprocess.Popen(["systemd-cat", "-t", "pacer"], stdin=subprocess.PIPE)
        self.lines = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in iter(self.proc.stdout.readline, b""):
            with self.lock:
                self.lines.append(line)
            if self.sink:
                self.sink.stdin.write(line)
                self.sink.stdin.flush()

    def mark(self):
        with self.lock:
            return len(self.lines)

    def since(self, mark):
        with self.lock:
            return self.lines[mark:]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(15)
        self.reader.join(5)
        if self.sink:
            self.sink.stdin.close(); self.sink.wait(5)


def pub(port, topic, payload):
    subprocess.run(["mosquitto_pub", "-p", str(port), "-t", topic, "-q", "1", "-s"], input=payload.encode(), check=True)


REFUSED = [  # (what, topic suffix, payload)
    ("malformed JSON", "timers/t/cmd", '{"action": "start", "id": "bad-1"'),
    ("unknown action", "timers/t/cmd", '{"action": "explode", "id": "bad-2"}'),
    ("wrong type", "timers/t/cmd", '{"action": "adjust", "id": "bad-3", "seconds": "ten"}'),
    ("absurd duration", "timers/t/cmd", '{"action": "start", "id": "bad-4", "spec": {"kind": "countdown", "duration": "99999h"}}'),
    ("oversized payload", "timers/t/cmd", '{"action": "start", "id": "bad-5", "label": "' + "x" * 300_000 + '"}'),
    ("unknown timer", "timers/nosuch/cmd", '{"action": "pause", "id": "bad-6"}'),
    ("bad timer id", "timers/BAD!/cmd", '{"action": "start", "id": "bad-7"}'),
]


def measure(args, work, journal):
    port = free_port()
    broker = Broker(work, port)
    broker.start()
    parts = []
    dev = lambda: journal.written() if journal else None

    def part(name, count, fn):
        if journal:
            journal.settle()
        d0 = dev()
        m = node.mark() if node else 0
        t0 = time.time()
        fn()
        if journal:
            journal.writeback()
            d1 = dev()
            journal.journald_sync()
        lines = node.since(m) if node else []
        p = {"part": name, "count": count, "lines": len(lines), "bytes": sum(len(l) for l in lines),
             "seconds": round(time.time() - t0, 1), "sample": [l.decode(errors="replace").rstrip()[:300] for l in lines[:8]]}
        if journal:
            p["device_bytes"] = dev() - d0
            p["writeback_bytes"] = d1 - d0
            p["journald_sync_bytes"] = p["device_bytes"] - p["writeback_bytes"]
        parts.append(p)
        print(f"{name}: {p['lines']} lines, {p['bytes']} B" + (f", device {p['device_bytes']:,} B" if journal else ""), flush=True)
        return p

    node = None
    try:
        # Nothing logged: what journald writes on its own over a quiet stretch.
        if journal:
            part("quiet (30 s, nothing logged)", 1, lambda: time.sleep(30))

        def start():
            nonlocal node
            node = Node(args.binary, port, work, journal)
            wait_online(port)
            time.sleep(1)
        part("start", 1, start)

        def transitions():
            for t in ["a", "b", "c"]:
                request(port, f"{BASE}/timers/{t}/cmd", {"action": "start", "id": f"start-{t}",
                                                          "spec": {"kind": "interval", "work": "1s", "rest": "1s", "rounds": 1000}})
            time.sleep(args.seconds)
        p = part(f"3 starts, then {args.seconds:.0f} s of 1 s phases", int(args.seconds * 3), transitions)

        def commands():
            request(port, f"{BASE}/timers/t/cmd", {"action": "start", "id": "t-start", "spec": {"kind": "countdown", "duration": "12h"}})
            for i in range(args.commands):
                request(port, f"{BASE}/timers/t/cmd", {"action": "toggle", "id": f"toggle-{i}"})
        part(f"{args.commands + 1} accepted commands", args.commands + 1, commands)

        for what, suffix, payload in REFUSED:
            part(f"refused: {what}", 1, lambda s=suffix, pl=payload: (pub(port, f"{BASE}/{s}", pl), time.sleep(1)))

        def outage():
            broker.stop()
            time.sleep(args.outage)
            broker.start()
            wait_online(port)
            time.sleep(2)
        part(f"broker outage ({args.outage:.0f} s)", 1, outage)

        part("stop", 1, lambda: node.stop())
        node = None

        if journal:
            # Dense: many lines at once (amortised), and the journal's disk use per line.
            sink = subprocess.Popen(["systemd-cat", "-t", "pacer"], stdin=subprocess.PIPE)
            line = b"2026-11-27T18:00:00+0000 info pacer: broker=mqtt://127.0.0.1:1883 [PacerNode] a line of a typical length for the node, about one hundred bytes\n"

            def dense():
                for _ in range(args.dense):
                    sink.stdin.write(line)
                sink.stdin.flush()
                time.sleep(1)
            pd = part(f"dense: {args.dense} lines at once", args.dense, dense)
            pd["lines"], pd["bytes"] = args.dense, args.dense * len(line)
            sink.stdin.close(); sink.wait()
            # Storage=volatile: the journal lives in /run (RAM).
            journal.restart("volatile")
            sink = subprocess.Popen(["systemd-cat", "-t", "pacer"], stdin=subprocess.PIPE)
            pv = part(f"Storage=volatile: {args.dense} lines", args.dense, dense)
            pv["lines"], pv["bytes"] = args.dense, args.dense * len(line)
            sink.stdin.close(); sink.wait()
    finally:
        if node:
            node.proc.kill(); node.proc.wait()
        broker.stop()
    return parts


def render(parts, journal, args):
    out = ["| part | lines | bytes of log |" + (" device bytes: writeback + journald's sync = total |" if journal else ""),
           "|---|---|---|" + ("---|" if journal else "")]
    for p in parts:
        row = f"| {p['part']} | {p['lines']} | {p['bytes']:,} |"
        if journal:
            row += f" {p['writeback_bytes']:,} + {p['journald_sync_bytes']:,} = {p['device_bytes']:,} |"
        out.append(row)
    by = {p["part"]: p for p in parts}
    refused = [p for p in parts if p["part"].startswith("refused")]
    start, stop = by["start"], by["stop"]
    outage = next(p for p in parts if p["part"].startswith("broker outage"))
    out.append("")
    r_bytes = sum(p["bytes"] for p in refused) / len(refused)
    day = lambda key: (start[key] + stop[key] + outage[key] + args.day_refused * sum(p[key] for p in refused) / len(refused))
    out.append(f"A day of the node's log (1 start and stop, 1 outage, {args.day_refused} refused commands; transitions and accepted "
               f"commands log nothing): {day('bytes'):,.0f} B of log lines" + (f", {day('device_bytes') / 1e6:,.2f} MB on the device" if journal else ""))
    if journal:
        dense = next(p for p in parts if p["part"].startswith("dense"))
        out.append(f"Per line: {dense['device_bytes'] / dense['lines']:,.0f} B on the device in a dense burst; an isolated event "
                   f"(a refused command, {refused[0]['lines']} line): {sum(p['device_bytes'] for p in refused) / len(refused):,.0f} B")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", required=True)
    ap.add_argument("--seconds", type=float, default=60, help="seconds of transitions")
    ap.add_argument("--commands", type=int, default=50, help="accepted commands (toggles)")
    ap.add_argument("--outage", type=float, default=30, help="seconds without a broker")
    ap.add_argument("--dense", type=int, default=1000, help="lines of the dense burst")
    ap.add_argument("--day-refused", type=int, default=20, help="refused commands in the day's estimate")
    ap.add_argument("--no-journald", action="store_true", help="part 1 only")
    ap.add_argument("--json")
    ap.add_argument("--in-namespace", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.binary = os.path.abspath(args.binary)
    use_journal = (not args.no_journald and os.geteuid() == 0 and JOURNALD and shutil.which("systemd-cat")
                   and os.path.exists("/dev/loop-control"))
    if use_journal and not args.in_namespace:
        os.execvp("unshare", ["unshare", "-m", "--propagation", "private", sys.executable, os.path.abspath(__file__),
                              *sys.argv[1:], "--in-namespace"])
    parent = os.path.join(REPO, ".build")
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(prefix="pi-journald-", dir=parent)
    journal = None
    try:
        if use_journal:
            journal = Journal(work)
        parts = measure(args, work, journal)
    finally:
        if journal:
            journal.close()
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(render(parts, journal, args))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"parts": parts, "journald": bool(journal)}, f, indent=1)


if __name__ == "__main__":
    main()
