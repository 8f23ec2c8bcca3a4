#!/usr/bin/env python3
"""What mosquitto writes to the Pi's SD card in a reference gym day, by persistence setting.

    sudo python3 Tests/harness/bench/pi-broker-writes.py --binary PATH [--seconds 300] [--json FILE]

A reference gym day: 3 interval timers busy 12 hours, a phase transition every 15 s on average
(8,640 transitions), 360 commands; the Pi and its broker run 24 hours. A real node (PATH) drives a
real mosquitto 2.0 on a free 127.0.0.1 port (stopped by its PID); a wall display subscribes to
`pacer/#` (clean session, QoS 1, like the page), and a coach's phone has a persistent session
(clean session false, QoS 1 to `pacer/#`), online in one case and offline in another, where
mosquitto queues its QoS 1 messages (states, events, replies) up to `max_queued_messages`.

With `persistence true` mosquitto writes a whole new copy of its in-memory database at every
save (`mosquitto.db.new`, fsync, rename over `mosquitto.db`): every `autosave_interval` seconds
(also when nothing changed), or with `autosave_on_changes true` after that many changes, and at
a clean exit. So a day is saves per day x bytes per save:

- bytes per save, measured at `--interval` (60 s: each save on its own, as at 300 or 1800 s:
  more than the kernel's 30 s and ext4's 5 s apart) over `--seconds`: the process's `write_bytes`
  (/proc/PID/io: the database's pages) and, as root, the sectors written to a loop device
  holding a fresh ext4 (4 KiB blocks, mounted noatime like Raspberry Pi OS's root, in a mount
  namespace of this run): the database plus ext4's journal and metadata (the new inode, the
  rename, the freed blocks), what an SD card is sent. mosquitto's log file (Debian's
  `log_dest file /var/log/mosquitto/mosquitto.log`, one line per save) goes to a second loop
  device, measured apart.
- saves per day: time-based, 86,400 / (interval + 1) (mosquitto saves once more than the
  interval has passed: every 61 s for 60, measured); on changes, changes per day / interval.
  mosquitto counts as a change a retained message received, a message queued for an offline
  session, a QoS 1 message acknowledged by a subscriber, a subscription and a persistent
  connection; a day's changes = retained messages per running timer-second x 3 x 43,200 s (the
  per-second `remaining`/`display` flips) + (retained messages + QoS 1 messages x subscribers
  online) per transition x 8,640 (+ 360 commands, counted as transitions) + an offline session's
  queue (at most `max_queued_messages`). The count is checked against the saves mosquitto
  really makes with `autosave_on_changes` (case changes-offline).
- the offline phone: its database grows by a measured number of bytes per queued message; the
  worst day is a full queue (max_queued_messages, 1000 in deploy's pacer.conf) in every save
  (a phone that never comes back keeps it, unless `persistent_client_expiration` drops it).

The timers run at the reference day's rate (`--phase 15`: work 15 s / rest 15 s, so each timer
has a transition every 15 s), not compressed like gymday.py: mosquitto's writes follow the clock
(autosave) and its state's size, and most of its changes are the per-second flips, which no
compression shortens. `--phase 2` compresses the transitions 7.5x (the scaling is the same).
Without root or loop devices, only write_bytes is measured.
"""
import argparse, json, os, pwd, shutil, signal, socket, subprocess, sys, tempfile, threading, time

import importlib.util

# The helpers gymday.py (beside this file) has: ports, commands and the node's `online`.
_spec = importlib.util.spec_from_file_location("gymday", os.path.join(os.path.dirname(os.path.abspath(__file__)), "gymday.py"))
gymday = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gymday)
free_port = gymday.free_port


def wait_port(port, proc, timeout=10):
    gymday.wait_port(port, timeout, proc)


def request(port, topic, body, timeout=10):
    return gymday.request(port, topic, body, timeout, base=BASE)


def wait_online(port, timeout=30):
    gymday.wait_online(port, None, timeout, base=BASE)


BASE = "pacer/gymday"
NODE = "gymday"
DAY_TRANSITIONS = 8_640
DAY_COMMANDS = 360
BUSY_SECONDS = 12 * 3600
DAY_SECONDS = 24 * 3600
TIMERS = ["a", "b", "c"]
MAX_QUEUED = 1000
REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


def write_bytes(pid):
    with open(f"/proc/{pid}/io") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("write_bytes:"))


class Disk:
    """A fresh ext4 on a loop device (root only), or None. Its sectors written are the device's
    view: data, ext4 journal and metadata."""

    def __init__(self, work, name):
        self.image = os.path.join(work, f"{name}.img")
        self.mount = os.path.join(work, name)
        with open(self.image, "wb") as f:
            f.truncate(1024 * 1024 * 1024)
        # 4 KiB blocks; inode tables and journal initialised now, not by ext4lazyinit later.
        subprocess.run(["mkfs.ext4", "-q", "-b", "4096", "-E", "lazy_itable_init=0,lazy_journal_init=0", self.image], check=True)
        os.makedirs(self.mount)
        # mount -o loop: the loop device is detached when the mount goes (autoclear), also when
        # the run's mount namespace ends with the run.
        subprocess.run(["mount", "-o", "loop,noatime", self.image, self.mount], check=True)
        self.dev = subprocess.run(["findmnt", "-n", "-o", "SOURCE", self.mount], check=True, capture_output=True,
                                  text=True).stdout.strip()
        self.stat = f"/sys/block/{os.path.basename(self.dev)}/stat"

    def sync(self):
        subprocess.run(["sync", "-f", self.mount], check=True)

    def written(self):
        with open(self.stat) as f:
            return int(f.read().split()[6]) * 512

    def close(self):
        subprocess.run(["umount", self.mount], check=False)
        os.remove(self.image)


class Broker:
    """mosquitto with a given persistence setting; its log (stdout, line-buffered) counted."""

    def __init__(self, work, name, settings, persist_dir, log_file=None):
        self.port = free_port()
        self.dir = persist_dir
        os.makedirs(persist_dir, exist_ok=True)
        conf = os.path.join(work, f"{name}.conf")
        with open(conf, "w") as f:
            f.write(f"listener {self.port} 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\n"
                    f"max_queued_messages {MAX_QUEUED}\npersistence_location {persist_dir}/\nlog_dest stdout\n"
                    + (f"log_dest file {log_file}\n" if log_file else "")
                    + "".join(f"{k} {v}\n" for k, v in settings.items()))
        if os.geteuid() == 0:
            # mosquitto started as root runs as the user mosquitto (as on the Pi).
            try:
                m = pwd.getpwnam("mosquitto")
                os.chown(persist_dir, m.pw_uid, m.pw_gid)
                if log_file:
                    open(log_file, "a").close()
                    os.chown(log_file, m.pw_uid, m.pw_gid)
            except KeyError:
                pass
        self.saves = 0
        self.log_lines = 0
        self.log_bytes = 0
        self.proc = subprocess.Popen(["stdbuf", "-oL", shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c", conf],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        wait_port(self.port, self.proc)

    def _read(self):
        for line in self.proc.stdout:
            self.log_lines += 1
            self.log_bytes += len(line)
            if b"Saving in-memory database" in line:
                self.saves += 1

    def write_bytes(self):
        return write_bytes(self.proc.pid)

    def db_size(self):
        try:
            return os.stat(os.path.join(self.dir, "mosquitto.db")).st_size
        except OSError:
            return 0

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill(); self.proc.wait()
        self.reader.join(5)


class Node:
    def __init__(self, binary, port, work):
        self.data = os.path.join(work, "node-data")
        config = os.path.join(work, "node.yaml")
        with open(config, "w") as f:
            f.write(f"node: {NODE}\nbase_topic: {BASE}\n")
        self.proc = subprocess.Popen([binary, "run", "--config", config, "--broker", f"mqtt://127.0.0.1:{port}",
                                      "--data-dir", self.data], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill(); self.proc.wait()


class Display:
    """The wall display (clean session, QoS 1, pacer/# and the discovery topics), counting what
    arrives by (retained, QoS, topic's last part). MQTT 5 with retain-as-published shows which
    live messages are retained."""

    def __init__(self, port):
        self.counts = {}
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(["stdbuf", "-oL", "mosquitto_sub", "-p", str(port), "-V", "mqttv5", "--retain-as-published",
                                      "-q", "1", "-t", "pacer/#", "-t", "homeassistant/#", "-F", "%r %q %t %l"],
                                     stdout=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            parts = line.split()
            if len(parts) != 4:
                continue
            r, q, topic, n = parts
            kind = topic.rsplit("/", 1)[-1] if topic.startswith(BASE + "/timers/") else topic.split("/", 2)[-1]
            if topic.startswith("homeassistant/"):
                kind = "homeassistant"
            key = (int(r), int(q), kind)
            with self.lock:
                c = self.counts.setdefault(key, [0, 0])
                c[0] += 1
                c[1] += int(n)

    def snapshot(self):
        with self.lock:
            return {k: list(v) for k, v in self.counts.items()}

    def stop(self):
        self.proc.terminate(); self.proc.wait()


def diff(after, before):
    out = {}
    for k, v in after.items():
        b = before.get(k, [0, 0])
        if v[0] - b[0]:
            out[k] = [v[0] - b[0], v[1] - b[1]]
    return out


def run_case(args, work, disks, name, settings, phone, seconds):
    """One broker setting with one phone mode ('none', 'online', 'offline'): a node, the display,
    the phone, 3 running timers, then a window of `seconds`. disks: (database's, log file's),
    or (None, None)."""
    db_disk, log_disk = disks
    case_dir = os.path.join(work, name)
    os.makedirs(case_dir)
    persist = os.path.join(db_disk.mount if db_disk else case_dir, name)
    log_file = os.path.join(log_disk.mount, f"{name}.log") if log_disk else None
    broker = Broker(case_dir, name, settings, persist, log_file)
    procs = []
    r = {"name": name, "settings": settings, "phone": phone}
    node = display = None
    try:
        display = Display(broker.port)
        node = Node(args.binary, broker.port, case_dir)
        wait_online(broker.port)
        if phone != "none":
            # A coach's phone: a persistent session (MQTT 3.1.1, clean session false), QoS 1.
            cmd = ["mosquitto_sub", "-p", str(broker.port), "-c", "-i", f"phone-{phone}", "-q", "1", "-t", "pacer/#"]
            if phone == "offline":
                subprocess.run(cmd + ["-E"], check=True, stdout=subprocess.DEVNULL)  # subscribes, then leaves
            else:
                procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL))
        spec = {"kind": "interval", "work": f"{args.phase:g}s", "rest": f"{args.phase:g}s", "rounds": 1000}
        for t in TIMERS:
            request(broker.port, f"{BASE}/timers/{t}/cmd", {"action": "start", "id": f"start-{t}", "spec": spec})
            time.sleep(args.phase / len(TIMERS))  # the timers' transitions spread out
        time.sleep(1)
        for d in disks:
            if d:
                d.sync()
        dev0 = [d.written() if d else None for d in disks]
        wb0, saves0, lines0, logb0 = broker.write_bytes(), broker.saves, broker.log_lines, broker.log_bytes
        c0, t0 = display.snapshot(), time.time()
        size0 = broker.db_size()
        sizes = []
        last = None
        qos1 = lambda: sum(v[0] for k, v in display.snapshot().items() if k[1] == 1)
        while time.time() < t0 + seconds:
            size = broker.db_size()
            if size != last:
                sizes.append((size, qos1())); last = size  # each save's size, and QoS 1 messages so far
            time.sleep(0.25)
        elapsed = time.time() - t0
        c1 = display.snapshot()
        r.update(seconds=round(elapsed, 1), saves=broker.saves - saves0, write_bytes=broker.write_bytes() - wb0,
                 log_lines=broker.log_lines - lines0, log_bytes=broker.log_bytes - logb0,
                 db_size_start=size0, db_size_end=broker.db_size(), db_sizes=sizes)
        for d in disks:
            if d:
                d.sync()
        if db_disk:
            r["device_bytes"] = db_disk.written() - dev0[0]
        if log_disk:
            r["log_device_bytes"] = log_disk.written() - dev0[1]
        counts = diff(c1, c0)
        r["counts"] = {f"{k[0]} {k[1]} {k[2]}": v for k, v in sorted(counts.items())}
        r["transitions"] = sum(v[0] for k, v in counts.items() if k[2] == "phase" and k[1] == 0)
        r["retained"] = sum(v[0] for k, v in counts.items() if k[0] == 1)
        r["flips"] = sum(v[0] for k, v in counts.items() if k[0] == 1 and k[2] in ("remaining", "display"))
        r["qos1"] = sum(v[0] for k, v in counts.items() if k[1] == 1)
    finally:
        for p in procs:
            p.terminate(); p.wait()
        if node:
            node.stop()
        if display:
            display.stop()
        broker.stop()
    return r


PAGE = 4096


def pages(b):
    return -(-int(b) // PAGE) * PAGE


def model(by, interval, change_interval):
    """Bytes per save and changes per day, from the measured cases."""
    online, offline = by[f"time{interval}-online"], by[f"time{interval}-offline"]
    m = {"interval": interval}
    saves = max(1, online["saves"])
    m["save_write_bytes"] = online["write_bytes"] / saves
    m["save_device_bytes"] = online["device_bytes"] / saves if "device_bytes" in online else None
    m["db_bytes"] = online["db_size_end"]
    # ext4's share of a save: what the device got beyond the database's pages.
    m["save_ext4_bytes"] = m["save_device_bytes"] - m["save_write_bytes"] if m["save_device_bytes"] is not None else None
    # The offline phone: database bytes per queued message (QoS 1 messages to pacer/#).
    # Between the first and the last save seen in the window (QoS 1 messages counted at each).
    saved = [s for s in offline["db_sizes"] if s[0] > 0]
    m["queued_in_window"] = saved[-1][1] - saved[0][1] if len(saved) > 1 else 0
    m["db_bytes_per_queued"] = (saved[-1][0] - saved[0][0]) / m["queued_in_window"] if m["queued_in_window"] else 0
    m["db_full_queue_bytes"] = online["db_size_end"] + MAX_QUEUED * m["db_bytes_per_queued"]
    m["save_full_write_bytes"] = pages(m["db_full_queue_bytes"])
    m["save_full_device_bytes"] = m["save_full_write_bytes"] + m["save_ext4_bytes"] if m["save_ext4_bytes"] is not None else None
    # Changes, per running timer-second and per transition.
    transitions = max(1, online["transitions"])
    m["window_transitions"] = online["transitions"]
    m["flips_per_timer_second"] = online["flips"] / (len(TIMERS) * online["seconds"])
    m["other_retained_per_transition"] = (online["retained"] - online["flips"]) / transitions
    m["qos1_per_transition"] = online["qos1"] / transitions
    busy = m["flips_per_timer_second"] * len(TIMERS) * BUSY_SECONDS
    per_t = DAY_TRANSITIONS + DAY_COMMANDS
    # Display and phone online: both acknowledge every QoS 1 message. Phone offline: the display
    # acknowledges, the phone's queue fills once.
    m["day_changes_online"] = busy + per_t * (m["other_retained_per_transition"] + 2 * m["qos1_per_transition"])
    m["day_changes_offline"] = busy + per_t * (m["other_retained_per_transition"] + m["qos1_per_transition"]) + MAX_QUEUED
    ch = by.get("changes-offline")
    if ch:
        n = int(ch["settings"]["autosave_interval"])
        m["changes_check"] = {"interval": n, "saves": ch["saves"], "seconds": ch["seconds"],
                              "measured_low": ch["saves"] * n, "measured_high": (ch["saves"] + 1) * n,
                              "counted": ch["retained"] + 2 * ch["qos1"]}
    m["log_line_bytes"] = online["log_bytes"] / saves
    if "log_device_bytes" in online:
        m["log_device_bytes_per_save"] = online["log_device_bytes"] / saves
    return m


def day_rows(m, intervals, change_intervals):
    dev = lambda k: m[k.replace("write", "device")] if m[k.replace("write", "device")] is not None else m[k]
    typical, worst = dev("save_write_bytes"), dev("save_full_write_bytes")
    rows = [{"setting": "persistence false", "saves": 0, "typical": 0, "worst": 0},
            {"setting": "autosave_interval 0 (saves at a clean stop only)", "saves": 0, "typical": 0, "worst": 0,
             "per_stop": (typical, worst)}]
    for t in intervals:
        saves = DAY_SECONDS / (t + 1)
        rows.append({"setting": f"autosave_interval {t}", "saves": saves, "typical": saves * typical, "worst": saves * worst})
    for n in change_intervals:
        rows.append({"setting": f"autosave_on_changes true, autosave_interval {n}", "saves": m["day_changes_online"] / n,
                     "typical": m["day_changes_online"] / n * typical, "worst": m["day_changes_offline"] / n * worst})
    return rows


def render(results, m, rows, device):
    kib = lambda b: "—" if b is None else f"{b / 1024:,.1f} KiB"
    mb = lambda b: f"{b / 1e6:,.1f} MB"
    num = lambda v: "—" if v is None else f"{v:,}"
    out = ["Cases:", "", "| case | window | saves | write_bytes | device | log file on its device | database | transitions | retained msgs | QoS 1 msgs |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        out.append(f"| {r['name']} | {r['seconds']} s | {r['saves']} | {r['write_bytes']:,} | {num(r.get('device_bytes'))} | "
                   f"{num(r.get('log_device_bytes'))} | {r['db_size_start']:,} → {r['db_size_end']:,} B | {r['transitions']} | "
                   f"{r['retained']} | {r['qos1']} |")
    if not m:
        return "\n".join(out)
    out += ["",
            f"- a save (autosave_interval {m['interval']}, display + phone online): database {m['db_bytes']:,} B; "
            f"{kib(m['save_write_bytes'])} written by mosquitto, {kib(m['save_device_bytes'])} on the device",
            f"- the offline phone: {m['queued_in_window']} messages queued between its first and last save, {m['db_bytes_per_queued']:,.0f} B of "
            f"database each; with a full queue ({MAX_QUEUED}) the database is {m['db_full_queue_bytes'] / 1024:,.0f} KiB and a save "
            f"{kib(m['save_full_device_bytes'] if m['save_full_device_bytes'] is not None else m['save_full_write_bytes'])}",
            f"- changes: {m['flips_per_timer_second']:.2f} retained flips per running timer-second, "
            f"{m['other_retained_per_transition']:.2f} other retained and {m['qos1_per_transition']:.2f} QoS 1 messages per "
            f"transition: {m['day_changes_online']:,.0f} changes a day (display and phone online), "
            f"{m['day_changes_offline']:,.0f} (phone offline)"]
    if "changes_check" in m:
        c = m["changes_check"]
        out.append(f"- check, autosave_on_changes with interval {c['interval']} over {c['seconds']} s: {c['saves']} saves, so "
                   f"{c['measured_low']:,}-{c['measured_high']:,} changes; counted {c['counted']:,} (retained + queued + acknowledged)")
    if "log_device_bytes_per_save" in m:
        out.append(f"- mosquitto's log file (a {m['log_line_bytes']:.0f} B line per save): {kib(m['log_device_bytes_per_save'])} on "
                   f"its device per save")
    out += ["", "Reference day (the broker up 24 h, the timers busy 12 h)"
            + ("" if device else "; write_bytes only (no loop device)") + ":", "",
            "| setting | saves a day | a day, display + phone online | a day, a phone offline all day (full queue) |",
            "|---|---|---|---|"]
    for row in rows:
        if "per_stop" in row:
            out.append(f"| {row['setting']} | 0 (1 per clean stop) | {kib(row['per_stop'][0])} per stop | {kib(row['per_stop'][1])} per stop |")
        else:
            out.append(f"| {row['setting']} | {row['saves']:,.0f} | {mb(row['typical'])} | {mb(row['worst'])} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--binary", required=True, help="the pacer binary")
    ap.add_argument("--seconds", type=float, default=300, help="the window of the cases that measure saves")
    ap.add_argument("--interval", type=int, default=60, help="autosave_interval of those cases")
    ap.add_argument("--changes-seconds", type=float, default=120, help="the window of the autosave_on_changes check")
    ap.add_argument("--phase", type=float, default=15, help="work and rest seconds of the interval timers (15: the reference day's rate)")
    ap.add_argument("--cases", help="only these cases (comma-separated names)")
    ap.add_argument("--no-device", action="store_true", help="write_bytes only (no loop device)")
    ap.add_argument("--json")
    ap.add_argument("--in-namespace", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.binary = os.path.abspath(args.binary)
    use_device = (not args.no_device and os.geteuid() == 0 and shutil.which("unshare") and shutil.which("mkfs.ext4")
                  and os.path.exists("/dev/loop-control"))
    if use_device and not args.in_namespace:
        # The loop devices' mounts stay in a mount namespace of this run (nobody else sees them;
        # they go, and the loop devices with them, when the run ends, however it ends).
        os.execvp("unshare", ["unshare", "-m", "--propagation", "private", sys.executable, os.path.abspath(__file__),
                              *sys.argv[1:], "--in-namespace"])
    parent = os.path.join(REPO, ".build")
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(prefix="pi-broker-", dir=parent)
    os.chmod(work, 0o755)
    disks = (None, None)
    results = []
    persistence = lambda **kw: dict(persistence="true", **{k: str(v) for k, v in kw.items()})
    n = args.interval
    cases = [
        ("off-online", {"persistence": "false"}, "online", 60),
        (f"time{n}-online", persistence(autosave_interval=n), "online", args.seconds),
        (f"time{n}-offline", persistence(autosave_interval=n), "offline", args.seconds),
        ("changes-offline", persistence(autosave_interval=100, autosave_on_changes="true"), "offline", args.changes_seconds),
    ]
    if args.cases:
        cases = [c for c in cases if c[0] in args.cases.split(",")]
    try:
        if use_device:
            disks = (Disk(work, "db"), Disk(work, "log"))
        for name, settings, phone, seconds in cases:
            r = run_case(args, work, disks, name, settings, phone, seconds)
            print(f"{name}: {r['saves']} saves in {r['seconds']} s, write_bytes {r['write_bytes']:,}, device {r.get('device_bytes')}, "
                  f"log device {r.get('log_device_bytes')}, database {r['db_size_start']:,} -> {r['db_size_end']:,} B, "
                  f"{r['transitions']} transitions", flush=True)
            results.append(r)
    finally:
        for d in disks:
            if d:
                d.close()
        shutil.rmtree(work, ignore_errors=True)
    by = {r["name"]: r for r in results}
    m, rows = {}, []
    if f"time{n}-online" in by and f"time{n}-offline" in by:
        m = model(by, n, 100)
        rows = day_rows(m, [1800, 300, 60], [1800, 300])
    print()
    print(render(results, m, rows, disks[0] is not None))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cases": results, "model": m, "rows": rows, "device": disks[0] is not None, "phase": args.phase,
                       "interval": n}, f, indent=1)


if __name__ == "__main__":
    main()
