#!/usr/bin/env python3
"""Many rooms on one broker, on loopback (a chain of gyms, docs/deployment.md "Several rooms,
several gyms"): N real `pacer run` processes (distinct node ids and data directories), each with T
running countdowns started at different instants, and a subscriber on `pacer/+/timers/+/remaining`
measuring each flip's lateness (arrival minus the instant the value became true, ends_at_ms -
value * 1000: Tests/harness/bench/benchc.c `sub`, the measure of scripts/bench), with the broker's
and the nodes' CPU over the same window.

  python3 Tests/harness/bench/rooms.py [--nodes 50] [--timers 20] [--seconds 30] [--broker mosquitto|rabbitmq|ejabberd]
                                                [--binary PATH] [--frontdesk] [--write] [--label TEXT]

Floors, in the same run and on the same broker: the broker's relay round trip (benchc `rtt`: a
C client publishes QoS 1 to itself, 200 samples) and a C timer loop publishing as many flips
(benchc `floor`: clock_nanosleep to each due instant, then the publish), measured the same way.
With a cluster (rabbitmq, ejabberd: two members, Tests/harness/brokers/brokers.py) the nodes
connect to the first member and the subscriber to the second. With --frontdesk, a second window
has the front desk (examples/dashboard/frontdesk.html, served by lighttpd) open in Chromium on
every node, and reports its frames (requestAnimationFrame intervals) and its own work per frame
(Performance API: performance.now around each handler, long tasks) beside the flips' lateness
then. With --write the table goes into BENCHMARKS.md, newest first.
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.dirname(HERE))  # Tests/harness: the broker matrix's and the fault suite's packages
from brokers import brokers  # noqa: E402  (the matrix's broker starters)
from reliability.mqtt import Client, connect_retrying  # noqa: E402  (a plain MQTT 3.1.1 client)

TICK = os.sysconf("SC_CLK_TCK")


def cpu_by_pid(pids):
    out = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[pid] = (int(fields[11]) + int(fields[12])) / TICK
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out


def cpu_seconds(pids):
    return sum(cpu_by_pid(pids).values())


def cpu_delta(before, pids):
    """CPU seconds used since `before` (cpu_by_pid) by the processes alive at both ends."""
    after = cpu_by_pid(pids)
    return sum(after[p] - before[p] for p in after.keys() & before.keys())


def rss_mb(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                total += next(int(l.split()[1]) for l in f if l.startswith("VmRSS"))
        except (FileNotFoundError, StopIteration):
            pass
    return total / 1024


def children(pids):
    """The pids and their descendants (an Erlang broker runs beam.smp under a shell, and more)."""
    out = set(pids)
    try:
        listing = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout.split("\n")
    except OSError:
        return out
    pairs = [tuple(map(int, l.split())) for l in listing if l.strip()]
    grew = True
    while grew:
        grew = False
        for pid, ppid in pairs:
            if ppid in out and pid not in out:
                out.add(pid)
                grew = True
    return out


def lateness(benchc, port, seconds, groups, sub=None, warmup=1.5):
    """benchc sub over `seconds` (or `sub`, one started earlier with a longer warm-up); CPU % of
    each group of pids over the same window."""
    if sub is None:
        sub = start_sub(benchc, port, seconds)
    time.sleep(warmup)  # benchc takes the states first, then counts
    c0, t0 = {k: cpu_by_pid(v) for k, v in groups.items()}, time.time()
    out, _ = sub.communicate(timeout=seconds + 120)
    dt = time.time() - t0
    r = json.loads(out.strip().splitlines()[-1])
    r["cpu"] = {k: 100 * cpu_delta(c0[k], v) / dt for k, v in groups.items()}
    r["rss_mb"] = {k: rss_mb(v) for k, v in groups.items()}
    return r


def start_sub(benchc, port, seconds, warmup_ms=None):
    env = dict(os.environ, **({"BENCHC_WARMUP_MS": str(warmup_ms)} if warmup_ms else {}))
    return subprocess.Popen([benchc, "sub", str(port), "pacer/+/timers/+/remaining", str(seconds)], stdout=subprocess.PIPE, text=True, env=env)


def frontdesk_window(args, member, benchc, groups, work):
    """The front desk in Chromium (lighttpd serving examples/dashboard) during a lateness window."""
    py = os.path.join(ROOT, ".test-logs", "browser-venv", "bin", "python")
    if not os.path.exists(py):
        return {"error": "no .test-logs/browser-venv (run Tests/extra/browser once: it installs Selenium)"}
    http = brokers.free_port()
    conf = os.path.join(work, "lighttpd.conf")
    with open(conf, "w") as f:
        f.write(f'server.document-root = "{os.path.join(ROOT, "examples", "dashboard")}"\nserver.bind = "127.0.0.1"\n'
                f'server.port = {http}\nmimetype.assign = (".html" => "text/html", ".js" => "text/javascript", ".css" => "text/css", ".svg" => "image/svg+xml")\n')
    web = subprocess.Popen(["lighttpd", "-D", "-f", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{http}/frontdesk.html?broker={member.ws_url}"
    if args.broker == "rabbitmq":
        # MQTT 3.1.1 only, and no retained messages on wildcards nor across members: the rooms by
        # name, each asked for a snapshot (`list`) once its clock is synced
        url += "&mqtt=3.1.1&nodes=" + ",".join(f"room{i:02d}" for i in range(args.nodes))
    shot = os.path.join(ROOT, ".test-logs", "rooms-frontdesk.png")
    driver = subprocess.Popen([py, os.path.join(HERE, "rooms_page.py"), url, str(args.nodes), str(args.nodes * args.timers),
                               str(args.seconds), shot], stdout=subprocess.PIPE, text=True)
    try:
        # the page first finds every room and syncs every clock (its line "ready"), then measures
        line = driver.stdout.readline()
        if not line.startswith("ready"):
            return {"error": "the front desk never showed every room: " + line.strip()}
        r = lateness(benchc, args.sub_port, args.seconds, groups)
        page = json.loads(driver.stdout.readline())
        r["page"] = page
        driver.wait(60)
        return r
    finally:
        if driver.poll() is None:
            driver.terminate()
        web.terminate()
        web.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=50)
    ap.add_argument("--timers", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--spread", type=float, default=10, help="seconds over which the timers are started")
    ap.add_argument("--broker", default="mosquitto", choices=["mosquitto", "rabbitmq", "ejabberd"])
    ap.add_argument("--binary", default=os.environ.get("PACER_BIN"))
    ap.add_argument("--frontdesk", action="store_true")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    if not args.binary:
        sys.exit("rooms: --binary or PACER_BIN: a built `pacer`")
    work = tempfile.mkdtemp(prefix="pacer-rooms.")
    benchc = os.path.join(work, "benchc")
    subprocess.run(["cc", "-O2", "-o", benchc, os.path.join(HERE, "benchc.c"), "-lmosquitto", "-lpthread", "-lm"], check=True)
    nodes, broker = [], None
    load0 = os.getloadavg()
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    r = {"nodes": args.nodes, "timers": args.timers, "broker": args.broker, "date": date}
    try:
        broker = brokers.start(args.broker)
        a, b = broker.members[0], broker.members[-1]
        args.sub_port = b.port
        if broker.username:
            sys.exit("rooms: a broker that needs a user name (ejabberd) needs benchc to sign in; not measured")
        broker_pids = children([p.pid for p in broker.procs])

        print(f"floor: relay round trip on {args.broker} ...", flush=True)
        out = subprocess.run([benchc, "rtt", str(b.port), "200"], capture_output=True, text=True, timeout=120).stdout
        r["relay"] = json.loads(out.strip().splitlines()[-1])["relay_ms"]

        total = args.nodes * args.timers
        print(f"floor: C timer loop with {total} flips/s ...", flush=True)
        if args.broker == "mosquitto":
            floor = subprocess.Popen([benchc, "floor", str(a.port), "pacer/floor", str(total), str(args.seconds + 3)])
            time.sleep(1)
            r["floor"] = lateness(benchc, b.port, args.seconds, {"floor": [floor.pid], "broker": broker_pids})
        else:  # the subscriber first: the floor's states come live, not retained
            fsub = start_sub(benchc, b.port, args.seconds, warmup_ms=3000)
            time.sleep(0.5)
            floor = subprocess.Popen([benchc, "floor", str(a.port), "pacer/floor", str(total), str(args.seconds + 4)])
            r["floor"] = lateness(benchc, b.port, args.seconds, {"floor": [floor.pid], "broker": broker_pids}, sub=fsub, warmup=2.5)
        floor.wait(60)
        # the floor's retained states would be counted with the rooms' (same filter): clear them
        c = connect_retrying(a.port, "rooms-clear")
        for i in range(total):
            c.publish(f"pacer/floor/timers/f{i}/state", b"", qos=0, retain=True)
        c.close()

        print(f"starting {args.nodes} nodes ...", flush=True)
        # subscribed before anything is published: on RabbitMQ a wildcard gets no retained message
        watch = Client(b.port, "rooms-watch")
        watch.subscribe("pacer/+/status")
        watch.subscribe("pacer/+/timers/+/state")
        t0 = time.time()
        for i in range(args.nodes):
            d = os.path.join(work, f"room{i:02d}")
            os.makedirs(d)
            with open(os.path.join(d, "node.log"), "wb") as log:
                nodes.append(subprocess.Popen([args.binary, "run", "--broker", f"mqtt://127.0.0.1:{a.port}", "--node", f"room{i:02d}",
                                               "--data-dir", d, "--mqtt-version", "5" if args.broker == "mosquitto" else "3.1.1",
                                               "--log-level", "warning"], stdout=log, stderr=subprocess.STDOUT))
        watch.wait_for(lambda: len({m[1] for m in watch.messages if m[2] == b"online"}) >= args.nodes, 120, "every node online")
        r["online_s"] = time.time() - t0
        node_pids = [p.pid for p in nodes]
        r["idle"] = {"cpu_nodes": None}
        c0, t1 = cpu_seconds(node_pids), time.time()
        time.sleep(5)
        r["idle"]["cpu_nodes"] = 100 * (cpu_seconds(node_pids) - c0) / (time.time() - t1)

        print(f"starting {total} countdowns over {args.spread:.0f} s ...", flush=True)
        cmd = connect_retrying(a.port, "rooms-cmd")
        settle = 5
        early_sub = None
        if args.broker != "mosquitto":
            # no retained states on a wildcard: the lateness subscriber learns them live, as the
            # timers start, and counts only after its warm-up (the starts and a settling time)
            early_sub = start_sub(benchc, b.port, args.seconds, warmup_ms=1000 * (args.spread + 20 + settle))
        order = [(i, j) for i in range(args.nodes) for j in range(args.timers)]
        random.Random(31).shuffle(order)
        t0 = time.time()
        for k, (i, j) in enumerate(order):
            while time.time() < t0 + args.spread * k / total:
                time.sleep(0.0005)
            # timer ids distinct across nodes: benchc keys the flips by timer id
            cmd.publish(f"pacer/room{i:02d}/cmd", json.dumps({"action": "start", "timer": f"r{i:02d}t{j:02d}", "name": f"Station {j + 1}",
                                                               "spec": {"kind": "countdown", "duration": "2h"}}).encode(), qos=1)
        watch.wait_for(lambda: len({m[1] for m in watch.messages if m[1].endswith("/state") and b'"running"' in m[2]}) >= total, 120,
                       "every countdown running")
        watch.close()
        cmd.close()
        print(f"measuring {args.seconds:.0f} s ...", flush=True)
        groups = {"nodes": node_pids, "broker": broker_pids}
        if early_sub:
            left = t0 + args.spread + 20 + settle - time.time()
            r["rooms"] = lateness(benchc, b.port, args.seconds, groups, sub=early_sub, warmup=max(0, left))
        else:
            time.sleep(2)
            r["rooms"] = lateness(benchc, b.port, args.seconds, groups)
        r["alive"] = sum(p.poll() is None for p in nodes)
        if args.frontdesk:
            print("measuring with the front desk open in Chromium ...", flush=True)
            r["desk"] = frontdesk_window(args, b, benchc, groups, work)
        r["rss_nodes_mb"] = rss_mb(node_pids)
        r["load"] = (load0[0], os.getloadavg()[0])
    finally:
        for p in nodes:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in nodes:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
        if broker:
            broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    text = report(r, args)
    print(text)
    if args.write:
        path = os.path.join(ROOT, "BENCHMARKS.md")
        with open(path) as f:
            doc = f.read()
        head, sep, rest = doc.partition("\n## ")
        with open(path, "w") as f:
            f.write(head.rstrip("\n") + "\n\n" + text + "\n" + sep + rest if sep else doc + "\n" + text)


def lat(d):
    return f"{d['p50']:.1f} / {d['p99']:.1f} / {d['max']:.1f}" if d.get("n") else "none"


def report(r, args):
    n, t = r["nodes"], r["timers"]
    rooms, floor = r["rooms"], r["floor"]
    lines = [f"## {r['date']} — {n} rooms × {t} running countdowns on one {r['broker']}{' (two members)' if r['broker'] != 'mosquitto' else ''}"
             + (f" — {args.label}" if args.label else ""), "",
             f"How: `python3 Tests/harness/bench/rooms.py --nodes {n} --timers {t} --seconds {args.seconds:.0f} --broker {r['broker']}"
             f"{' --frontdesk' if args.frontdesk else ''}` with `{os.path.basename(args.binary)}` ({args.binary}); {n} real `pacer run` "
             f"processes (node ids room00…, data directories of their own), their {n * t:,} countdowns started one by one over "
             f"{args.spread:.0f} s in random order (so their flips fall on different milliseconds); one C libmosquitto subscriber on "
             f"`pacer/+/timers/+/remaining` measures each flip's lateness over {args.seconds:.0f} s (arrival − (ends_at_ms − value × 1000)). "
             f"Load average {r['load'][0]:.1f} at the start, {r['load'][1]:.1f} at the end (2 cores, shared with other work).", "",
             "| figure | value |", "|---|---|",
             f"| broker relay round trip (QoS 1 to itself), p50 / p99 / max ms | {lat(r['relay'])} |",
             f"| floor: C timer loop publishing {n * t:,} flips/s, lateness p50 / p99 / max ms | {lat(floor['late_ms'])} (broker {floor['cpu']['broker']:.0f} % CPU) |",
             f"| {n} nodes online after start | {r['online_s']:.1f} s |",
             f"| nodes idle (no timer), CPU of all {n} together | {r['idle']['cpu_nodes']:.1f} % |",
             f"| **flips, lateness p50 / p99 / max ms** | **{lat(rooms['late_ms'])}** ({rooms['late_ms'].get('n', 0):,} flips, {rooms['messages_per_s']:.0f}/s, {rooms['skipped']} skipped values) |",
             f"| CPU: all {n} nodes together / the broker{' (both members)' if r['broker'] != 'mosquitto' else ''} | {rooms['cpu']['nodes']:.1f} % / {rooms['cpu']['broker']:.1f} % (of one core) |",
             f"| memory: all {n} nodes together / the broker{' (both members)' if r['broker'] != 'mosquitto' else ''} | {r['rss_nodes_mb']:.0f} MB / {rooms['rss_mb']['broker']:.0f} MB |",
             f"| nodes still running at the end | {r['alive']} of {n} |"]
    d = r.get("desk")
    if d and "error" not in d:
        p = d["page"]
        flips = lat(d['late_ms']) if d['late_ms'].get("n") else "not measured (a fresh subscriber gets no retained state on this broker)"
        lines += [f"| with the front desk open (Chromium): flips p50 / p99 / max ms; nodes' / broker's CPU | {flips}; {d['cpu']['nodes']:.1f} % / {d['cpu']['broker']:.1f} % |",
                  f"| front desk: rooms / rows shown, frames drawn | {p['rooms']} / {p['rows']}, {p['frames']} frames in {p['seconds']:.0f} s |",
                  f"| front desk: frame interval p50 / p99 / max ms | {p['frame_p50']:.1f} / {p['frame_p99']:.1f} / {p['frame_max']:.1f} |",
                  f"| front desk: its own work per drawn frame, mean / max ms; messages handled | {p['flush_mean']:.2f} / {p['flush_max']:.1f}; {p['messages']:,} ({p['handle_ms']:.0f} ms in all) |",
                  f"| front desk: clock texts rewritten (flips) | {p['flip_writes']:,} ({p['flip_writes'] / max(1, p['seconds']):.0f}/s) |",
                  f"| front desk: long tasks (> 50 ms) | {p['long_tasks']} |",
                  f"| front desk: renderer main thread busy (tasks; of which script / layout / style) | {100 * p['TaskDuration']:.1f} % "
                  f"({100 * p['ScriptDuration']:.1f} / {100 * p['LayoutDuration']:.1f} / {100 * p['RecalcStyleDuration']:.1f} %) |",
                  f"| Chromium's CPU (all its processes, of one core) | {p['browser_cpu_percent']:.0f} % |"]
    elif d:
        lines.append(f"| front desk | not measured: {d['error']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
