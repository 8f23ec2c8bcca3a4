#!/usr/bin/env python3
"""Measures a release build of `pacer run` against a real mosquitto on loopback, every figure
beside its floor, in one run.

  python3 scripts/bench [--levels 1,100,1000,10000] [--seconds 20] [--churn-seconds 60]
                        [--binary PATH] [--label TEXT] [--write] [--json FILE] [--smoke]
  python3 scripts/bench --restore-only 10000 [--churn-seconds 1800 --churn-sample 60] [...]
  python3 scripts/bench --pi [--pi-share 0.33] [--seconds 20] [--write]
  python3 scripts/bench --gym-day [--seconds 120] [--write]   # = Tests/harness/bench/gymday.py

What it measures (the node's own process from /proc: all its threads):
  floors   the broker relay round trip (a C client publishes QoS 1 to itself), with the broker's
           set_tcp_nodelay true and false; an fdatasync loop (4 KB write + fdatasync; WAL-like frames back to back and at the toggles' pace);
           per level, a C timer loop (clock_nanosleep absolute + the node's per-second publishes)
  idle     CPU and wake-ups per second with no timer running
  levels   N running countdowns: CPU, wake-ups, RSS, messages/s, system calls per message
           (strace -c, a separate short window), and the lateness of the `remaining` flips
           (arrival at a C libmosquitto subscriber minus the instant the value became true)
  starts   the time to start each level's timers (one QoS 1 command each)
  commands `time` -> reply and `toggle` -> new state (C client, QoS 1), idle and at the top level;
           each toggle beside its floors, interleaved sample by sample: a relay round trip, a
           WAL-like fdatasync, and a command through a C echo node (read, fdatasync, publish)
  restore  SIGKILL with the top level running, restart: process start -> last retained state
  churn    RSS while countdowns start, finish and are deleted
  spread   min(top level, 1000) countdowns started evenly over one second on a fresh node (random
           start times: the levels' burst of starts puts their flips on a few dozen milliseconds)
  peer     the script a hobbyist writes (Tests/harness/bench/hobbyist.py) at min(top level, 1000)
--restore-only N measures only N running timers (RSS, /proc/PID/smaps_rollup), the restore after a
SIGKILL and then the churn (RSS every --churn-sample seconds), without floors or levels.
The C side (Tests/harness/bench/benchc.c) is compiled with cc against libmosquitto-dev.
--pi measures a Raspberry Pi's budget, each figure confined and unconfined in the same
run: idle CPU, start -> online, 1,000 countdowns started at different instants (their flips'
lateness), and their restore after a SIGKILL (start -> last retained state). Confined means the
node alone on one core at --pi-share of it (a cgroup: cpuset to one CPU, CFS quota 1 ms of every
3 ms for 0.33; a short period, so the node is slowed like a slow core rather than stopped for
tens of milliseconds at a time); the broker and the measuring clients are not confined.
--gym-day measures what a reference gym day writes to the data directory's device (an SD card:
bytes per transition, per command, per day, beside the floor of one synced page per command);
Tests/harness/bench/gymday.py says how.
--smoke runs everything for seconds with tiny levels (CI: checks the harness, not the figures).
With --write the tables go into BENCHMARKS.md, newest first.
"""
import argparse, json, os, platform, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))  # Tests/harness/bench: the C side and the other harnesses
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
TICK = os.sysconf("SC_CLK_TCK")
BASE = "pacer/bench"
ECHO = "pacer/echo"  # the C echo node's topics (benchc echo)


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def wait_port(port, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close(); return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on 127.0.0.1:{port}")


def proc_sample(pid):
    """(cpu seconds, {thread id: (voluntary, involuntary) switches}, rss kB)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICK
    switches = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                v = n = 0
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"): v = int(line.split()[1])
                    if line.startswith("nonvoluntary_ctxt_switches"): n = int(line.split()[1])
                switches[tid] = v + n
        except FileNotFoundError:
            pass
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS"))
    return cpu, switches, rss


class Window:
    """CPU %, context switches/s and RSS of a process over a window."""
    def __init__(self, pid):
        self.pid, self.t0 = pid, time.time()
        self.c0, self.s0, _ = proc_sample(pid)

    def end(self):
        c1, s1, rss = proc_sample(self.pid)
        dt = time.time() - self.t0
        woke = sum(s1[t] - self.s0[t] for t in self.s0.keys() & s1.keys())
        return {"cpu_percent": 100 * (c1 - self.c0) / dt, "switches_per_s": woke / dt, "rss_mb": rss / 1024}


def benchc(*args, timeout=None):
    out = subprocess.run([BENCHC, *map(str, args)], capture_output=True, text=True, timeout=timeout, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def syscalls(pid, seconds):
    """System calls of every thread of `pid` over `seconds` (strace -c; slows the process)."""
    if not shutil.which("strace"):
        return None
    out = os.path.join(WORK, f"strace-{pid}-{time.time()}.txt")
    threads = [a for tid in os.listdir(f"/proc/{pid}/task") for a in ("-p", tid)]  # every thread, not only the main one
    p = subprocess.Popen(["strace", "-c", "-f", "-q", "-o", out, *threads], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(seconds)
    p.send_signal(signal.SIGINT); p.wait(10)
    try:
        with open(out) as f:
            total = [l for l in f if l.strip().endswith("total")]
        return int(total[-1].split()[3]) if total else None  # % time, seconds, usecs/call, calls
    except (OSError, ValueError, IndexError):
        return None


def start_broker(port, nodelay):
    conf = os.path.join(WORK, f"mosquitto-{port}.conf")
    with open(conf, "w") as f:
        f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay {'true' if nodelay else 'false'}\n"
                "max_queued_messages 1000000\nmax_inflight_messages 0\n")
    broker = subprocess.Popen([shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c", conf],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port)
    return broker


def start_node(port, node_id, data, config_extra="", perf=None, cgroup=None):
    """The node; with `perf` (a file), under `perf record -g` writing there (BENCH_PERF=FILE);
    with `cgroup` (files cgroup.procs, from pi_cgroup), moved into it before it runs."""
    cfg = os.path.join(WORK, f"{node_id}.yaml")
    with open(cfg, "w") as f:
        f.write(f"node: {node_id}\nlimits: {{max_timers: 100000}}\n{config_extra}")
    log = open(os.path.join(WORK, f"{node_id}.log"), "a")
    wrap = ["perf", "record", "-g", "-F", "2000", "-o", perf, "--"] if perf else []
    if cgroup:
        join = " && ".join(f"echo $$ > {procs}" for procs in cgroup)
        wrap = ["sh", "-c", f'{join} && exec "$0" "$@"'] + wrap
    return subprocess.Popen([*wrap, BINARY, "run", "--config", cfg, "--broker", f"mqtt://127.0.0.1:{port}", "--data-dir", data,
                             "--log-level", os.environ.get("BENCH_LOG_LEVEL", "warning")], stdout=log, stderr=log)


def wait_retained(port, topic, text, timeout=600):
    end = time.time() + timeout
    while time.time() < end:
        out = subprocess.run(["mosquitto_sub", "-p", str(port), "-t", topic, "-C", "1", "-W", "5"],
                             capture_output=True, text=True).stdout
        if text in out:
            return True
    raise SystemExit(f"{topic} never showed {text}")


def start_timers(port, first, last, duration="2h", prefix="t"):
    """Starts timers first..last-1 (one QoS 1 command each); returns the seconds until the last is retained running."""
    if last <= first:
        return 0.0
    commands = "".join(json.dumps({"action": "start", "timer": f"{prefix}{i}", "id": f"s{prefix}{i}",
                                   "spec": {"kind": "countdown", "duration": duration}}) + "\n" for i in range(first, last))
    t0 = time.time()
    subprocess.run(["mosquitto_pub", "-p", str(port), "-t", f"{BASE}/cmd", "-l", "-q", "1"], input=commands.encode(), check=True)
    wait_retained(port, f"{BASE}/timers/{prefix}{last - 1}/state", '"status":"running"')
    return time.time() - t0


def start_timers_spread(port, base, n, over_s=1.0):
    """Starts n countdowns evenly over `over_s` seconds (one QoS 1 command each), as timers started
    at random moments are: their flips then fall on n different milliseconds of each second,
    where a burst of starts puts them on a few dozen (start_timers)."""
    pub = subprocess.Popen(["mosquitto_pub", "-p", str(port), "-t", f"{base}/cmd", "-l", "-q", "1"], stdin=subprocess.PIPE)
    t0 = time.time()
    for i in range(n):
        while time.time() < t0 + over_s * i / n:
            time.sleep(0.0002)
        pub.stdin.write((json.dumps({"action": "start", "timer": f"s{i}", "spec": {"kind": "countdown", "duration": "2h"}}) + "\n").encode())
        pub.stdin.flush()
    pub.stdin.close(); pub.wait()
    wait_retained(port, f"{base}/timers/s{n - 1}/state", '"status":"running"')


def fdatasync_loop(samples, frames=0, gap_ms=0.0):
    """fdatasync after one 4 KB overwrite; with `frames`, after what a SQLite WAL commit writes:
    that many frames (24-byte header + 4 KB page) appended, the file growing to 4 MB and then
    overwritten from the start (the WAL after a checkpoint), as the node's commits do (with 8
    frames, the 200 samples of a full run are 127 that grow the file and 73 that overwrite it).
    With `gap_ms`, a pause between samples: the command loop of benchc toggles every 3 ms or
    so, and on this VM's disk an fdatasync after a pause takes about twice as long as one
    right after another (0.67-0.72 against 0.35 ms for 7 frames, 2026-11-26)."""
    path = os.path.join(WORK, "fsync.bin")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    times, offset = [], 0
    for i in range(samples):
        if frames:
            for _ in range(frames):
                os.pwrite(fd, os.urandom(24), offset); os.pwrite(fd, os.urandom(4096), offset + 24)
                offset = (offset + 4120) % (4 * 1024 * 1024)
        else:
            os.pwrite(fd, os.urandom(4096), (i % 8) * 4096)
        t0 = time.perf_counter(); os.fdatasync(fd); times.append((time.perf_counter() - t0) * 1000)
        if gap_ms:
            time.sleep(gap_ms / 1000)
    os.close(fd)
    times.sort()
    return {"p50": statistics.median(times), "p99": times[min(len(times) - 1, int(len(times) * 0.99))]}


def lateness(port, topic_filter, seconds, pid=None):
    """Runs the C subscriber over `seconds`, with the process `pid` sampled over the same window."""
    sub = subprocess.Popen([BENCHC, "sub", str(port), topic_filter, str(seconds)], stdout=subprocess.PIPE, text=True)
    time.sleep(1.5)  # the subscriber takes the retained states first
    window = Window(pid) if pid else None
    out, _ = sub.communicate(timeout=seconds + 60)
    result = json.loads(out.strip().splitlines()[-1])
    if window:
        result.update(window.end())
    return result


def pi_cgroup(share, period_us=3000):
    """A cgroup that holds a process to one CPU at `share` of it; returns the cgroup.procs files
    to write a pid into. cgroup v2 (cpu.max, cpuset.cpus) or v1 (cpu and cpuset hierarchies)."""
    quota = max(1000, int(period_us * share))
    cpu = str(os.cpu_count() - 1)
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        root = "/sys/fs/cgroup"
        with open(f"{root}/cgroup.subtree_control", "w") as f:
            f.write("+cpu +cpuset")
        group = f"{root}/pacer-bench-pi"
        os.makedirs(group, exist_ok=True)
        with open(f"{group}/cpu.max", "w") as f: f.write(f"{quota} {period_us}")
        with open(f"{group}/cpuset.cpus", "w") as f: f.write(cpu)
        return [f"{group}/cgroup.procs"]
    cpu_group, set_group = "/sys/fs/cgroup/cpu/pacer-bench-pi", "/sys/fs/cgroup/cpuset/pacer-bench-pi"
    os.makedirs(cpu_group, exist_ok=True); os.makedirs(set_group, exist_ok=True)
    with open(f"{cpu_group}/cpu.cfs_period_us", "w") as f: f.write(str(period_us))
    with open(f"{cpu_group}/cpu.cfs_quota_us", "w") as f: f.write(str(quota))
    with open(f"{set_group}/cpuset.cpus", "w") as f: f.write(cpu)
    with open("/sys/fs/cgroup/cpuset/cpuset.mems") as f: mems = f.read().strip()
    with open(f"{set_group}/cpuset.mems", "w") as f: f.write(mems)
    return [f"{cpu_group}/cgroup.procs", f"{set_group}/cgroup.procs"]


def spin_rate(cgroup, seconds=2.0):
    """Loop iterations per second of a busy Python loop, in `cgroup` or not: the share it really gets."""
    code = "import time\nt=time.time();n=0\nwhile time.time()-t<%s: n+=1\nprint(n/%s)" % (seconds, seconds)
    cmd = [sys.executable, "-c", code]
    if cgroup:
        cmd = ["sh", "-c", " && ".join(f"echo $$ > {p}" for p in cgroup) + ' && exec "$0" "$@"'] + cmd
    return float(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip())


def pi_budget(args, port):
    """The Pi's budget: each figure confined (one core at args.pi_share) and not."""
    n = 10 if args.smoke else 1000
    cgroup = pi_cgroup(args.pi_share)
    r = {"timers": n, "share": args.pi_share, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
         "loadavg_start": os.getloadavg()[0], "binary": BINARY}
    free, confined = spin_rate(None), spin_rate(cgroup)
    r["measured_share"] = confined / free
    for name, group in (("unconfined", None), ("confined", cgroup)):
        row = r[name] = {}
        node_id = f"pi{name[0]}"
        base = f"pacer/{node_id}"
        data = os.path.join(WORK, f"data-{node_id}")
        # Start -> online: the status topic heard live (no retained `online` of an earlier run).
        sub = subprocess.Popen(["mosquitto_sub", "-p", str(port), "-t", f"{base}/status"], stdout=subprocess.PIPE, text=True)
        time.sleep(0.3)
        t0 = time.time()
        node = start_node(port, node_id, data, args.node_config, cgroup=group)
        for line in sub.stdout:
            if line.strip() == "online":
                row["online_s"] = time.time() - t0
                break
        sub.terminate(); sub.wait()
        time.sleep(2)
        w = Window(node.pid); time.sleep(min(10, args.seconds)); row["idle"] = w.end()
        start_timers_spread(port, base, n)
        time.sleep(2)
        row["flips"] = lateness(port, f"{base}/timers/+/remaining", args.seconds, node.pid)
        node.send_signal(signal.SIGKILL); node.wait()
        counter = subprocess.Popen([BENCHC, "count", str(port), f"{base}/timers/+/state", str(n), "120"],
                                   stdout=subprocess.PIPE, text=True)
        counter.stdout.readline()
        t0 = time.time() * 1000
        node = start_node(port, node_id, data, args.node_config, cgroup=group)
        out, _ = counter.communicate(timeout=180)
        got = json.loads(out.strip().splitlines()[-1])
        row["restore_s"] = (got["nth_ms"] - t0) / 1000 if got["got"] >= n else None
        node.send_signal(signal.SIGTERM); node.wait(30)
    r["loadavg_end"] = os.getloadavg()[0]
    return r


def render_pi(r, args):
    def lat(x): return f"{x['p50']:.1f} / {x['p99']:.1f} / {x['max']:.1f}" if x.get("n") else "—"
    def flips(row): return lat(row["flips"].get("late_ms", {})) + (f" ({row['flips']['skipped']} skipped)" if row["flips"].get("skipped") else "")
    def secs(x): return f"{x:.3f} s" if x is not None else "—"
    u, c = r["unconfined"], r["confined"]
    return "\n".join([
        f"\n## {r['date']} — a Pi's budget (`scripts/bench --pi`){' — ' + args.label if args.label else ''}",
        "", f"`python3 scripts/bench --pi --pi-share {args.pi_share:g} --seconds {args.seconds:g}`; binary `{r['binary']}`; "
        f"load average {r['loadavg_start']:.2f} → {r['loadavg_end']:.2f}. Confined: the node alone on one CPU at "
        f"{args.pi_share:.0%} of it (CFS quota per 3 ms period; a busy loop measured {r['measured_share']:.0%} of its unconfined rate). "
        f"{r['timers']:,} countdowns started evenly over one second; flips are the `remaining` topics' lateness "
        "(arrival at a C subscriber minus the instant the value became true), p50 / p99 / max in ms.",
        "", "| figure | goal | confined | unconfined |", "|---|---|---|---|",
        f"| idle CPU | ≤ 0.5 % | {c['idle']['cpu_percent']:.2f} % | {u['idle']['cpu_percent']:.2f} % |",
        f"| start → `online` | ≤ 1 s | {secs(c.get('online_s'))} | {secs(u.get('online_s'))} |",
        f"| {r['timers']:,} running: flips p50 / p99 / max | p99 ≤ 20 ms | {flips(c)} | {flips(u)} |",
        f"| {r['timers']:,} running: CPU | | {c['flips'].get('cpu_percent', 0):.1f} % | {u['flips'].get('cpu_percent', 0):.1f} % |",
        f"| restore of {r['timers']:,} after SIGKILL: start → last retained state | ≤ 1 s | {secs(c.get('restore_s'))} | {secs(u.get('restore_s'))} |",
    ])


def main():
    global WORK, BINARY, BENCHC
    ap = argparse.ArgumentParser()
    ap.add_argument("--levels", default="1,100,1000,10000")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--churn-seconds", type=float, default=60)
    ap.add_argument("--binary", help="a pacer binary (default: a release build of this checkout)")
    ap.add_argument("--label", default="", help="what this run measures (e.g. before/after a change)")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--json", help="write every figure to this file")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--restore-only", type=int, metavar="N", help="only N running timers, the restore and the churn")
    ap.add_argument("--churn-sample", type=float, default=1, help="seconds between the churn's RSS samples")
    ap.add_argument("--kill-at-once", action="store_true",
                    help="--restore-only: SIGKILL right after the last toggle (its events still unmarked: the restart runs the outbox check)")
    ap.add_argument("--node-config", default="", help="YAML lines added to the node's configuration (e.g. 'broker: {io_thread: library}')")
    ap.add_argument("--gym-day", action="store_true", help="what a reference gym day writes (Tests/harness/bench/gymday.py)")
    ap.add_argument("--pi", action="store_true", help="a Raspberry Pi's budget: confined (one core at --pi-share) beside unconfined")
    ap.add_argument("--pi-share", type=float, default=0.33, help="--pi: the share of one core the node gets")
    args = ap.parse_args()
    if args.smoke:
        args.levels, args.seconds, args.churn_seconds = "1,10", 2, 2
    levels = [int(x) for x in args.levels.split(",")]
    top = max(levels)
    samples = 20 if args.smoke else 200

    # On the checkout's disk (not a tmpfs /tmp): the node's fdatasync and the floor's are real.
    os.makedirs(os.path.join(ROOT, ".build"), exist_ok=True)
    WORK = tempfile.mkdtemp(prefix="bench-", dir=os.path.join(ROOT, ".build"))
    if args.binary:
        BINARY = os.path.abspath(args.binary)
    else:
        subprocess.run(["swift", "build", "-c", "release", "--product", "pacer"], cwd=ROOT, check=True)
        BINARY = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, check=True,
                                capture_output=True, text=True).stdout.strip() + "/pacer"
    BENCHC = os.path.join(WORK, "benchc")
    subprocess.run(["cc", "-O2", "-o", BENCHC, os.path.join(HERE, "benchc.c"), "-lmosquitto", "-lpthread", "-lm"], check=True)

    if args.restore_only:
        return restore_only(args)
    if args.gym_day:
        sys.path.insert(0, HERE)
        sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
        import gymday
        r = gymday.measure(BINARY, args.seconds if args.seconds != 20 else 120)
        report = f"\n## {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} — writes (`scripts/bench --gym-day`)\n\n" + gymday.render(r, args.label)
        print(report)
        if args.json:
            with open(args.json, "w") as f: json.dump(r, f, indent=1)
        if args.write:
            path = os.path.join(ROOT, "BENCHMARKS.md")
            head, sep, rest = open(path).read().partition("\n## ")
            with open(path, "w") as f:
                f.write(head.rstrip("\n") + "\n" + report + "\n" + ("\n## " + rest if sep else ""))
        return
    if args.pi:
        port = free_port()
        broker = start_broker(port, True)
        try:
            r = pi_budget(args, port)
        finally:
            broker.terminate(); broker.wait()
            shutil.rmtree(WORK, ignore_errors=True)
        report = render_pi(r, args)
        print(report)
        if args.json:
            with open(args.json, "w") as f: json.dump(r, f, indent=1, default=str)
        if args.write:
            path = os.path.join(ROOT, "BENCHMARKS.md")
            text = open(path).read()
            head, sep, rest = text.partition("\n## ")
            with open(path, "w") as f:
                f.write(head.rstrip("\n") + "\n" + report + "\n" + ("\n## " + rest if sep else ""))
        return
    r = {"levels": {}, "loadavg_start": os.getloadavg()[0], "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
         "label": args.label, "binary": BINARY}
    port, port2 = free_port(), free_port()
    procs = []
    try:
        broker = start_broker(port, True); procs.append(broker)
        broker2 = start_broker(port2, False); procs.append(broker2)
        # Floors first, before any node runs.
        r["relay"] = benchc("rtt", port, samples)["relay_ms"]
        r["relay_nagle"] = benchc("rtt", port2, max(10, samples // 10))["relay_ms"]
        r["fdatasync"] = fdatasync_loop(samples)
        r["fdatasync_wal"] = fdatasync_loop(samples, frames=8)
        r["fdatasync_wal_paced"] = fdatasync_loop(samples, frames=8, gap_ms=3.5)  # at the toggles' pace
        for n in levels:
            floor = subprocess.Popen([BENCHC, "floor", str(port), "pacer/floor", str(n), str(args.seconds + 3)])
            time.sleep(1)
            r["levels"].setdefault(n, {})["floor"] = lateness(port, "pacer/floor/timers/+/remaining", args.seconds, floor.pid)
            floor.wait(60)
        # The node.
        node = start_node(port, "bench", os.path.join(WORK, "data"), args.node_config); procs.append(node)
        wait_retained(port, f"{BASE}/status", "online")
        time.sleep(2)
        w = Window(node.pid); time.sleep(min(10, args.seconds)); r["idle"] = w.end()
        # Each toggle beside its floors (a relay round trip, a WAL-like fdatasync on this disk),
        # interleaved: the floors taken before any node runs come from another minute of the machine.
        # And beside a C echo node (benchc echo): read the command, the same fdatasync, publish
        # the state; what any node pays for a command -> state, before its own logic.
        echo = subprocess.Popen([BENCHC, "echo", str(port), ECHO, os.path.join(WORK, "fsync-echo.bin"), "3600"])
        procs.append(echo)
        time.sleep(0.5)
        r["commands_idle"] = benchc("cmd", port, BASE, samples, os.path.join(WORK, "fsync-cmd.bin"), ECHO)
        running = 0
        for n in levels:
            row = r["levels"][n]
            row["start_s"] = start_timers(port, running, n)
            row["started"] = n - running
            running = n
            time.sleep(2)
            row["node"] = lateness(port, f"{BASE}/timers/+/remaining", args.seconds, node.pid)
            calls = syscalls(node.pid, 3)
            row["syscalls_per_s"] = calls / 3 if calls is not None else None
        r["commands_load"] = benchc("cmd", port, BASE, samples, os.path.join(WORK, "fsync-cmd.bin"), ECHO)
        echo.terminate()
        # Restore: SIGKILL, restart, process start -> last retained state republished.
        node.send_signal(signal.SIGKILL); node.wait()
        counter = subprocess.Popen([BENCHC, "count", str(port), f"{BASE}/timers/+/state", str(running + 1), "120"],
                                   stdout=subprocess.PIPE, text=True)
        counter.stdout.readline()
        t0 = time.time() * 1000
        node = start_node(port, "bench", os.path.join(WORK, "data"), args.node_config); procs.append(node)
        out, _ = counter.communicate(timeout=180)
        got = json.loads(out.strip().splitlines()[-1])
        r["restore"] = {"timers": running + 1, "got": got["got"], "last_state_s": (got["nth_ms"] - t0) / 1000 if got["got"] > running else None}
        time.sleep(2)
        r["rss_after_restore_mb"] = Window(node.pid).end()["rss_mb"]
        # Churn: countdowns of 3 s start, finish and are deleted, 50 a second.
        churn = {"rss_mb": []}
        pub = subprocess.Popen(["mosquitto_pub", "-p", str(port), "-t", f"{BASE}/cmd", "-l", "-q", "1"],
                               stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
        t_end, k, per_s = time.time() + args.churn_seconds, 0, 50
        churn["rss_mb"].append(Window(node.pid).end()["rss_mb"])
        while time.time() < t_end:
            lines = []
            for _ in range(per_s):
                lines.append(json.dumps({"action": "start", "timer": f"c{k}", "id": f"c{k}", "spec": {"kind": "countdown", "duration": "3s"}}))
                if k >= 5 * per_s:
                    lines.append(json.dumps({"action": "delete", "timer": f"c{k - 5 * per_s}", "id": f"d{k}"}))
                k += 1
            pub.stdin.write(("\n".join(lines) + "\n").encode()); pub.stdin.flush()
            time.sleep(1)
            churn["rss_mb"].append(Window(node.pid).end()["rss_mb"])
        pub.stdin.close(); pub.wait()
        churn["started"] = k
        r["churn"] = churn
        # The second broker (set_tcp_nodelay false): a node's `time` command on it.
        node2 = start_node(port2, "nagle", os.path.join(WORK, "data2"), args.node_config); procs.append(node2)
        wait_retained(port2, "pacer/nagle/status", "online")
        r["commands_nagle"] = benchc("cmd", port2, "pacer/nagle", max(10, samples // 10))
        node2.send_signal(signal.SIGTERM); node2.wait(10)
        node.send_signal(signal.SIGTERM); node.wait(10)
        # min(top level, 1,000) countdowns started evenly over one second, on a fresh node.
        n_spread = min(top, 1000)
        node3 = start_node(port, "spread", os.path.join(WORK, "data3"), args.node_config); procs.append(node3)
        wait_retained(port, "pacer/spread/status", "online")
        start_timers_spread(port, "pacer/spread", n_spread)
        time.sleep(2)
        r["spread"] = {"timers": n_spread, **lateness(port, "pacer/spread/timers/+/remaining", args.seconds, node3.pid)}
        node3.send_signal(signal.SIGTERM); node3.wait(10)
        # The hobbyist's script.
        n_peer = min(top, 1000)
        peer = subprocess.Popen([sys.executable, os.path.join(HERE, "hobbyist.py"), str(port), "pacer/peer", str(n_peer), str(args.seconds + 4)])
        time.sleep(1)
        r["peer"] = {"timers": n_peer, **lateness(port, "pacer/peer/timers/+/remaining", args.seconds, peer.pid)}
        peer.wait(60)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try: p.wait(10)
                except subprocess.TimeoutExpired: p.kill(); p.wait()
        r["loadavg_end"] = os.getloadavg()[0]
        shutil.rmtree(WORK, ignore_errors=True)

    report = render(r, args)
    print(report)
    if args.json:
        with open(args.json, "w") as f: json.dump(r, f, indent=1, default=str)
    if args.write:
        path = os.path.join(ROOT, "BENCHMARKS.md")
        text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
        head, sep, rest = text.partition("\n## ")
        with open(path, "w") as f:
            f.write(head.rstrip("\n") + "\n" + report + ("\n## " + rest if sep else ""))


def smaps(pid):
    """Rss, Anonymous and Private_Dirty of /proc/PID/smaps_rollup, in MB."""
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("Rss", "Anonymous", "Private_Dirty"):
                    out[k] = int(v.split()[0]) / 1024
    except OSError:
        pass
    return out


def churn_run(port, pid, seconds, sample_s):
    """Countdowns of 3 s start, finish and are deleted 5 s later, 50 a second; RSS every sample_s."""
    churn = {"rss_mb": [], "t_s": []}
    pub = subprocess.Popen(["mosquitto_pub", "-p", str(port), "-t", f"{BASE}/cmd", "-l", "-q", "1"],
                           stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
    t0 = time.time()
    t_end, k, per_s, next_sample = t0 + seconds, 0, 50, t0
    while True:
        now = time.time()
        if now >= next_sample:
            churn["rss_mb"].append(Window(pid).end()["rss_mb"]); churn["t_s"].append(now - t0)
            next_sample += sample_s
        if now >= t_end:
            break
        lines = []
        for _ in range(per_s):
            lines.append(json.dumps({"action": "start", "timer": f"c{k}", "id": f"c{k}", "spec": {"kind": "countdown", "duration": "3s"}}))
            if k >= 5 * per_s:
                lines.append(json.dumps({"action": "delete", "timer": f"c{k - 5 * per_s}", "id": f"d{k}"}))
            k += 1
        pub.stdin.write(("\n".join(lines) + "\n").encode()); pub.stdin.flush()
        time.sleep(1)
    pub.stdin.close(); pub.wait()
    churn["started"] = k
    return churn


def restore_only(args):
    """N running timers, SIGKILL, restart: the restore's time and RSS, then the churn."""
    global WORK
    n = args.restore_only
    r = {"loadavg_start": os.getloadavg()[0], "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    port, procs = free_port(), []
    try:
        broker = start_broker(port, True); procs.append(broker)
        data = os.path.join(WORK, "data")
        node = start_node(port, "bench", data, args.node_config); procs.append(node)
        wait_retained(port, f"{BASE}/status", "online")
        r["start_s"] = start_timers(port, 0, n)
        time.sleep(2)
        r["rss_running_mb"], r["smaps_running"] = Window(node.pid).end()["rss_mb"], smaps(node.pid)
        r["commands"] = benchc("cmd", port, BASE, 20)  # the `lat` timer, toggled: events in the outbox, as in the full run
        if not args.kill_at_once:
            time.sleep(2)  # their marks are written: no outbox check at the restart
        node.send_signal(signal.SIGKILL); node.wait()
        counter = subprocess.Popen([BENCHC, "count", str(port), f"{BASE}/timers/+/state", str(n + 1), "120"],
                                   stdout=subprocess.PIPE, text=True)
        # `hr` is the last of a timer's retained topics the node publishes: all of them are back.
        counter_all = subprocess.Popen([BENCHC, "count", str(port), f"{BASE}/timers/+/hr", str(n + 1), "120"],
                                       stdout=subprocess.PIPE, text=True)
        counter.stdout.readline(); counter_all.stdout.readline()
        t0 = time.time() * 1000
        node = start_node(port, "bench", data, args.node_config, perf=os.environ.get("BENCH_PERF")); procs.append(node)
        out, _ = counter.communicate(timeout=180)
        got = json.loads(out.strip().splitlines()[-1])
        out, _ = counter_all.communicate(timeout=180)
        got_all = json.loads(out.strip().splitlines()[-1])
        r["restore"] = {"timers": n + 1, "got": got["got"], "last_state_s": (got["nth_ms"] - t0) / 1000 if got["got"] > n else None,
                        "last_topic_s": (got_all["nth_ms"] - t0) / 1000 if got_all["got"] > n else None}
        time.sleep(2)
        r["rss_after_restore_mb"], r["smaps_after_restore"] = Window(node.pid).end()["rss_mb"], smaps(node.pid)
        time.sleep(33 if n >= 1000 else 1)  # past the node's heap trims 3, 10 and 30 s after its connect
        r["rss_after_restore_10s_mb"], r["smaps_after_restore_35s"] = Window(node.pid).end()["rss_mb"], smaps(node.pid)
        if args.churn_seconds > 0:
            r["churn"] = churn_run(port, node.pid, args.churn_seconds, args.churn_sample)
        node.send_signal(signal.SIGTERM); node.wait(10)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try: p.wait(10)
                except subprocess.TimeoutExpired: p.kill(); p.wait()
        r["loadavg_end"] = os.getloadavg()[0]
        if os.environ.get("BENCH_KEEP"):
            print(f"kept {WORK}")
        else:
            shutil.rmtree(WORK, ignore_errors=True)
    sm, sr, sr35 = r["smaps_running"], r["smaps_after_restore"], r["smaps_after_restore_35s"]
    rs = r["restore"]
    out = [f"\n## {r['date']} — {args.label or 'restore and memory'}\n",
           f"`python3 scripts/bench --restore-only {n} --churn-seconds {args.churn_seconds:g} --churn-sample {args.churn_sample:g}"
           + (" --kill-at-once" if args.kill_at_once else "") + (f" --node-config '{args.node_config}'" if args.node_config else "") + "`; "
           f"load average {r['loadavg_start']:.1f} at the start, {r['loadavg_end']:.1f} at the end.\n",
           "| | figure | goal |", "|---|---|---|",
           f"| start {n:,} countdowns | {r['start_s']:.1f} s | ≤ 10 s |",
           f"| RSS, {n:,} running | {r['rss_running_mb']:.0f} MB (anonymous {sm.get('Anonymous', 0):.0f} MB) | ≤ 80 MB |",
           f"| restore: process start → last retained state ({rs['timers']:,} timers) | "
           + (f"{rs['last_state_s']:.2f} s" if rs['last_state_s'] is not None else f"incomplete ({rs['got']} states)") + " | ≤ 1 s |",
           f"| restore: process start → every retained topic (the last `hr`) | "
           + (f"{rs['last_topic_s']:.2f} s" if rs.get('last_topic_s') is not None else "incomplete") + " | |",
           f"| RSS 2 s / 35 s after the restore | {r['rss_after_restore_mb']:.0f} / {r['rss_after_restore_10s_mb']:.0f} MB (anonymous {sr.get('Anonymous', 0):.0f} / {sr35.get('Anonymous', 0):.0f} MB) | ≤ 80 MB |"]
    if "churn" in r:
        c = r["churn"]
        out.append(f"| churn: {c['started']:,} countdowns of 3 s started, deleted 5 s later, over {args.churn_seconds:g} s | "
                   f"RSS {c['rss_mb'][0]:.0f} → max {max(c['rss_mb']):.0f} → {c['rss_mb'][-1]:.0f} MB | no growth |")
        out += ["", "RSS during the churn (MB, every " + f"{args.churn_sample:g} s): " + ", ".join(f"{x:.0f}" for x in c["rss_mb"])]
    out.append("")
    report = "\n".join(out)
    print(report)
    if args.json:
        with open(args.json, "w") as f: json.dump(r, f, indent=1, default=str)
    if args.write:
        path = os.path.join(ROOT, "BENCHMARKS.md")
        text = open(path).read()
        head, sep, rest = text.partition("\n## ")
        with open(path, "w") as f:
            f.write(head.rstrip("\n") + "\n" + report + ("\n## " + rest if sep else ""))


def render(r, args):
    def lat(x): return f"{x['p50']:.1f} / {x['p99']:.1f} / {x['max']:.1f}" if x.get("n") else "—"

    def beside(c):
        """The issue's goal for a toggle, from the floors taken beside it: p50 <= relay + fdatasync + 0.5 ms."""
        if "relay_ms" not in c or not c["relay_ms"].get("n"):
            return "—"
        goal = c["relay_ms"]["p50"] + c["fdatasync_wal_paced_ms"]["p50"] + 0.5
        met = "met" if c["toggle_state_ms"]["p50"] <= goal else "missed"
        def lat3(x): return f"{x['p50']:.3f} / {x['p99']:.3f} / {x['max']:.3f}" if x.get("n") else "—"
        def p50(x): return f"{x['p50']:.3f} ms" if x.get("n") else "—"
        return (f"relay {lat3(c['relay_ms'])}, WAL fdatasync {lat3(c['fdatasync_wal_paced_ms'])}; goal p50 ≤ {goal:.3f} ms: "
                f"{met} ({c['toggle_state_ms']['p50']:.3f}); toggle − relay − fdatasync, sample by sample: p50 "
                f"{p50(c['toggle_minus_floors_ms'])}; a C echo node (read, the same fdatasync, publish) "
                f"{lat3(c.get('echo_ms', {}))}, the toggle beyond it p50 {p50(c.get('toggle_minus_echo_ms', {}))}")
    cpu = platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    out = [f"\n## {r['date']} — {r['label'] or 'scripts/bench'}, {os.cpu_count()} cores ({cpu})\n",
           f"`python3 scripts/bench --levels {args.levels} --seconds {args.seconds:g}" + (f" --node-config '{args.node_config}'" if args.node_config else "") + "`; broker `set_tcp_nodelay true` "
           f"(and a second one with `false` for the Nagle rows). **Shared machine**: load average {r['loadavg_start']:.1f} at the "
           f"start, {r['loadavg_end']:.1f} at the end, so CPU % and lateness are inflated by other work; counts "
           f"(messages, system calls, context switches, RSS) are not.\n",
           "| running countdowns | node CPU | node ctx switches/s | node syscalls/s | RSS | messages/s (remaining) | flip lateness p50 / p99 / max (ms) | skipped values | floor CPU | floor lateness p50 / p99 / max (ms) | start time |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for n, row in sorted(r["levels"].items()):
        nd, fl = row.get("node", {}), row.get("floor", {})
        sc = row.get("syscalls_per_s")
        out.append(f"| {n:,} | {nd.get('cpu_percent', 0):.1f} % | {nd.get('switches_per_s', 0):.0f} | {sc:.0f} |" if sc is not None else
                   f"| {n:,} | {nd.get('cpu_percent', 0):.1f} % | {nd.get('switches_per_s', 0):.0f} | — |")
        out[-1] += (f" {nd.get('rss_mb', 0):.0f} MB | {nd.get('messages_per_s', 0):.0f} | {lat(nd.get('late_ms', {}))} | {nd.get('skipped', 0)} |"
                    f" {fl.get('cpu_percent', 0):.1f} % | {lat(fl.get('late_ms', {}))} | {row.get('start_s', 0):.1f} s for {row.get('started', 0):,} |")
    idle = r["idle"]
    ci, cl, cn = r["commands_idle"], r["commands_load"], r["commands_nagle"]
    out += ["", "| | figure | floor |", "|---|---|---|",
            f"| idle | {idle['cpu_percent']:.2f} % CPU, {idle['switches_per_s']:.1f} switches/s, {idle['rss_mb']:.0f} MB | libmosquitto keep-alive loop: 1 wake-up/s |",
            f"| `time` → reply, idle (p50 / p99 / max ms) | {lat(ci['time_reply_ms'])} | relay {lat(r['relay'])} |",
            f"| `toggle` → state, idle | {lat(ci['toggle_state_ms'])} | relay + fdatasync {r['relay']['p50'] + r['fdatasync']['p50']:.2f} ms p50 (fdatasync {r['fdatasync']['p50']:.2f} / {r['fdatasync']['p99']:.2f}); "
            f"with a WAL commit's fdatasync (8 frames) {r['relay']['p50'] + r['fdatasync_wal']['p50']:.2f} ms ({r['fdatasync_wal']['p50']:.2f} / {r['fdatasync_wal']['p99']:.2f}); "
            f"the same at the toggles' pace (3.5 ms apart) {r['relay']['p50'] + r['fdatasync_wal_paced']['p50']:.2f} ms ({r['fdatasync_wal_paced']['p50']:.2f} / {r['fdatasync_wal_paced']['p99']:.2f}) |",
            f"| the same toggles, each beside its floors (interleaved) | the same | {beside(ci)} |",
            f"| `time` → reply, {max(r['levels']):,} running | {lat(cl['time_reply_ms'])} | relay {lat(r['relay'])} |",
            f"| `toggle` → state, {max(r['levels']):,} running, beside its floors | {lat(cl['toggle_state_ms'])} | {beside(cl)} |",
            f"| `time` → reply, broker `set_tcp_nodelay false` | {lat(cn['time_reply_ms'])} | relay {lat(r['relay_nagle'])} |",
            f"| restore: process start → last retained state ({r['restore']['timers']:,} timers) | "
            + (f"{r['restore']['last_state_s']:.2f} s" if r['restore']['last_state_s'] is not None else f"incomplete ({r['restore']['got']} states)")
            + f" (RSS after: {r['rss_after_restore_mb']:.0f} MB) | |",
            f"| churn: {r['churn']['started']:,} countdowns of 3 s started, deleted 5 s later, over {args.churn_seconds:g} s | RSS {r['churn']['rss_mb'][0]:.0f} → max {max(r['churn']['rss_mb']):.0f} → {r['churn']['rss_mb'][-1]:.0f} MB | |",
            f"| {r['spread']['timers']:,} countdowns started evenly over 1 s (random start times: their flips on {r['spread']['timers']:,} different ms) | "
            f"{r['spread']['cpu_percent']:.1f} % CPU, {r['spread']['switches_per_s']:.0f} switches/s, lateness {lat(r['spread']['late_ms'])} ms, {r['spread']['skipped']} skipped | "
            f"the floor above (its timers are spread the same way) |",
            f"| hobbyist script (hobbyist.py, {r['peer']['timers']:,} timers, remaining + display) | {r['peer']['cpu_percent']:.1f} % CPU, lateness {lat(r['peer']['late_ms'])} ms, {r['peer']['skipped']} skipped | |",
            ""]
    return "\n".join(out)


if __name__ == "__main__":
    main()
