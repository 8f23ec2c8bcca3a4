"""The newcomer's path, run by Tests/extra/first-run.

`bash scripts/run` in tmux, as a person types it (PACER_BIN: no build; a fresh data directory
and runtime directory of its own), in two scenarios:

  a. free ports: PACER_MQTT_PORT, PACER_WS_PORT, PACER_HTTP_PORT and PACER_HTTPS_PORT given;
  b. beside a plain mosquitto on 127.0.0.1:1883 with no WebSocket listener (what Debian's
     mosquitto package starts), which this suite starts (or one already there; exit 77 when
     :1883 is taken by something that is not a broker); the other ports left at their defaults.

Each time: the wall-clock URL the script prints opens in Chromium and shows the demo timers
(examples/demo.yaml) with the connection indicator on; `pacer list`, `pacer start` and
`pacer history` with no flags reach the node; Ctrl-C stops the node, the broker and lighttpd
(by PID and by their paths), and in b the broker on :1883 still answers.
"""
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

ROOT = os.getcwd()
ART = os.path.join(ROOT, ".test-logs", "first-run")
PACER = os.path.abspath(os.environ.get("PACER_BIN") or os.path.join(ROOT, ".build", "debug", "pacer"))
TMP = tempfile.mkdtemp(prefix="pacer-first-run-")
SOCKET = "pacer-first-run-" + uuid.uuid4().hex[:8]   # our own tmux server
failures = []
plain = None       # the mosquitto on :1883 this suite started (scenario b)
driver = None


def log(*parts):
    print(*parts, flush=True)


def check(cond, what):
    log(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)
    return cond


def wait(pred, secs, what, step=0.1):
    end = time.time() + secs
    while time.time() < end:
        try:
            got = pred()
        except Exception:
            got = None
        if got:
            return got
        time.sleep(step)
    raise AssertionError("timed out after %s s waiting for %s" % (secs, what))


def free_port():
    return int(subprocess.run([sys.executable, "scripts/free-port"], capture_output=True, text=True, check=True).stdout)


def connack(port):
    """The CONNACK return code of an MQTT 3.1.1 CONNECT to 127.0.0.1:port, or None (no broker)."""
    cid = b"pacer-first-run-probe"
    try:
        with socket.create_connection(("127.0.0.1", port), 2) as s:
            s.settimeout(2)
            s.sendall(bytes([0x10, 12 + len(cid), 0, 4]) + b"MQTT" + bytes([4, 2, 0, 10, 0, len(cid)]) + cid)
            r = s.recv(4)
            if len(r) == 4 and r[0] == 0x20:
                if r[3] == 0:
                    s.sendall(b"\xe0\x00")
                return r[3]
    except OSError:
        pass
    return None


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def left_behind(path):
    """Processes whose command line names `path` (ours excepted)."""
    r = subprocess.run(["pgrep", "-af", path], capture_output=True, text=True)
    return [l for l in r.stdout.splitlines() if int(l.split()[0]) != os.getpid()]


def tmux(*args, check=True):
    r = subprocess.run(["tmux", "-L", SOCKET] + list(args), capture_output=True, text=True, timeout=20,
                       env=dict(clean_env(), TERM="xterm-256color"))
    if check and r.returncode != 0:
        raise AssertionError("tmux %s: %s" % (" ".join(args), r.stderr.strip()))
    return r


def clean_env():
    """This suite's environment without PACER_… variables (none may name another node)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PACER_")}


def demo_timers():
    """(id, name) of the demo's timers, read from examples/demo.yaml."""
    text = open(os.path.join(ROOT, "examples", "demo.yaml")).read()
    return re.findall(r"-\s+id:\s*(\S+)\s*\n\s+name:\s*(.+?)\s*\n", text)


def make_driver():
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,800",
              "--hide-scrollbars", "--no-first-run", "--mute-audio"]:
        opts.add_argument(a)
    home = os.path.join(TMP, "home")
    os.makedirs(home, exist_ok=True)
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver",
                      log_output=os.path.join(ART, "chromedriver.log"), env=dict(os.environ, HOME=home))
    return webdriver.Chrome(options=opts, service=service)


def js(script, *args):
    return driver.execute_script(script, *args)


def scenario(name, ports, beside):
    """One run of `bash scripts/run` in tmux, its page, its control commands and its Ctrl-C."""
    t0 = time.time()
    where = os.path.join(TMP, name)
    os.makedirs(where)
    os.chmod(where, 0o755)   # lighttpd and mosquitto, started as root, read it as their users
    runtime = os.path.join(where, "runtime")
    os.makedirs(runtime, mode=0o700)
    data = os.path.join(where, "data")
    pane = os.path.join(ART, name + "-terminal.txt")
    open(pane, "w").close()
    env = {"PACER_BIN": PACER, "PACER_DATA_DIR": data, "XDG_RUNTIME_DIR": runtime}
    env.update({k: str(v) for k, v in ports.items()})
    command = "exec env %s bash scripts/run" % " ".join("%s=%s" % (k, shlex.quote(v)) for k, v in env.items())
    # The pane waits for a signal, so that all it prints is recorded from the first line.
    tmux("new-session", "-d", "-s", name, "-x", "250", "-y", "80", "-c", ROOT,
         "tmux wait-for go-%s; %s" % (name, command))
    tmux("pipe-pane", "-t", name, "-o", "cat >> %s" % shlex.quote(pane))
    tmux("wait-for", "-S", "go-" + name)

    def text():
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\r", "", open(pane, errors="replace").read())

    def running():
        return tmux("has-session", "-t", name, check=False).returncode == 0

    try:
        wait(lambda: not running() or re.search(r"ready: watch with", text()), 40, "the node's ready line")
        if not running():
            raise AssertionError("scripts/run ended: " + text()[-1500:])
        out = text()
        url = re.search(r"Wall clock:\s+(http://\S+)", out)
        grid_url = re.search(r"All timers:\s+(http://\S+)", out)
        pids = {what: int(pid) for what, pid in re.findall(r"started (mosquitto|lighttpd|the node) \(pid (\d+)\)", out)}
        broker = re.search(r"started mosquitto \(pid \d+\) on 127\.0\.0\.1:(\d+)", out)
        check(bool(url and grid_url), "%s: scripts/run printed the wall clock's URL (%s)" % (name, url and url.group(1)))
        check(sorted(pids) == ["lighttpd", "mosquitto", "the node"], "%s: it started mosquitto, lighttpd and the node: %s" % (name, pids))
        port = int(broker.group(1)) if broker else None
        if beside:
            check(re.search(r"127\.0\.0\.1:1883 is already taken by another broker \(the system's mosquitto\?\); "
                            r"Pacer runs its own on 127\.0\.0\.1:%s" % port, out) is not None and port != 1883,
                  "%s: it says :1883 is taken and runs its own broker on :%s" % (name, port))
        else:
            want = (ports["PACER_MQTT_PORT"], ports["PACER_WS_PORT"], ports["PACER_HTTP_PORT"])
            got = (port, int((re.search(r"WebSockets on 127\.0\.0\.1:(\d+)", out) or [0, 0])[1]),
                   int((re.search(r"http://127\.0\.0\.1:(\d+)/", url.group(1) if url else "") or [0, 0])[1]))
            check(got == want, "%s: its broker, WebSockets and page on PACER_MQTT_PORT, PACER_WS_PORT, PACER_HTTP_PORT %s (%s)" % (name, want, got))
        check(re.search(r"mosquitto_sub -h 127\.0\.0\.1 -p %s " % port, out) is not None
              and "-p 1883 " not in out.split("Watch every topic")[-1].split("From this machine")[0],
              "%s: the printed mosquitto_sub / mosquitto_pub commands name port %s" % (name, port))
        check(re.search(r"alias pacer=%s" % re.escape(PACER), out) is not None, "%s: it prints how to reach the node with %s" % (name, PACER))

        # The control commands with no flags, from another directory, with the run's record.
        def pacer(*args):
            return subprocess.run([PACER] + list(args), capture_output=True, text=True, timeout=30, cwd=TMP,
                                  env=dict(clean_env(), XDG_RUNTIME_DIR=runtime))
        timers = demo_timers()
        r = pacer("list")
        rows = {l.split()[0]: l for l in r.stdout.splitlines()[1:] if l.strip()}
        check(r.returncode == 0 and all(i in rows and n in rows[i] for i, n in timers),
              "%s: `pacer list` with no flags shows the demo's timers %s%s" % (name, [i for i, _ in timers], "" if r.returncode == 0 else ": " + r.stderr.strip()[-300:]))
        first = rows.get("tabata", "").split()[-1:] or ["?"]

        # The wall clock, as printed, in Chromium.
        driver.get(url.group(1))
        ok = wait(lambda: js("const c = document.getElementById('conn'); return c && c.dataset.ok === 'true' && c.textContent"), 15,
                  "the connection indicator on")
        wait(lambda: js("return document.getElementById('name').textContent") == "Tabata", 10, "the Tabata's name")
        digits = js("return document.getElementById('digits').textContent")
        check(re.fullmatch(r"\d+:\d\d", digits) is not None and digits == first[0],
              "%s: the wall clock shows Tabata %s (pacer list: %s), connected (%r)" % (name, digits, first[0], ok))
        driver.save_screenshot(os.path.join(ART, name + "-wall-clock.png"))

        driver.get(grid_url.group(1))
        wait(lambda: js("return document.querySelectorAll('.card').length") == len(timers), 15, "%d cards" % len(timers))
        cards = wait(lambda: js("return [...document.querySelectorAll('.card')].every(c => /\\d:\\d\\d/.test(c.querySelector('.card-digits').textContent))"
                                " && Object.fromEntries([...document.querySelectorAll('.card')].map(c => [c.dataset.timer,"
                                " [c.querySelector('.card-name').textContent, c.querySelector('.card-digits').textContent]]))"), 10, "the cards' digits")
        check(all(cards.get(i, [None])[0] == n for i, n in timers) and cards.get("kitchen", [0, 0])[1] == "10:00",
              "%s: all timers: %s" % (name, ", ".join("%s %s" % tuple(v) for v in cards.values())))
        r = pacer("start", "kitchen")
        check(r.returncode == 0, "%s: `pacer start kitchen` with no flags%s" % (name, "" if r.returncode == 0 else ": " + (r.stdout + r.stderr).strip()[-300:]))
        # 10:00 as it starts (seconds round up), then 9:59, 9:58, …
        shown = wait(lambda: js("const c = document.querySelector('[data-timer=kitchen]'); const d = c.querySelector('.card-digits').textContent;"
                                " return c.dataset.phase === 'countdown' && d.startsWith('9:5') && d"), 10, "the kitchen counting down on the page")
        check(True, "%s: the page shows the kitchen started from the terminal counting down (%s)" % (name, shown))
        driver.save_screenshot(os.path.join(ART, name + "-all-timers.png"))
        r = pacer("history")
        check(r.returncode == 0 and "kitchen" in r.stdout, "%s: `pacer history` with no flags shows the kitchen's start%s"
              % (name, "" if r.returncode == 0 else ": " + r.stderr.strip()[-300:]))
        # `pacer doctor` with no flags: the whole set-up scripts/run made is well (the node, the
        # page's scripts and its WebSocket way to the broker through lighttpd, the clock).
        r = pacer("doctor", "--json")
        try:
            report = json.loads(r.stdout)
            checks = {c["id"]: c["status"] for c in report["checks"]}
        except (ValueError, KeyError, TypeError):
            checks = {}
        wanted = ["configuration", "broker", "node", "clock", "page", "websocket", "data_dir"]
        check(r.returncode == 0 and all(checks.get(c) == "ok" for c in wanted),
              "%s: `pacer doctor` with no flags finds all well (%s)%s" % (name, ", ".join("%s %s" % (c, checks.get(c)) for c in wanted),
                                                                        "" if r.returncode == 0 else ": " + (r.stdout + r.stderr)[-600:]))
        driver.get("about:blank")   # no page holds a WebSocket open through the stop

        # Ctrl-C, as a person stops it.
        tmux("send-keys", "-t", name, "C-c")
        wait(lambda: not running(), 25, "scripts/run to end after Ctrl-C")
        wait(lambda: tmux("list-sessions", check=False).returncode != 0, 5, "the tmux server to end")
        out = text()
        still = [w for w, p in pids.items() if alive(p)]
        check(not still, "%s: Ctrl-C stopped %s (by PID)%s" % (name, ", ".join(sorted(pids)), " -- still running: %s" % still if still else ""))
        left = left_behind(where)
        check(not left, "%s: no process names %s after Ctrl-C%s" % (name, where, " -- " + "; ".join(left) if left else ""))
        check("[PacerNode] stopped" in out and not os.path.exists(os.path.join(runtime, "pacer", "node.json")),
              "%s: the node stopped cleanly (its log says so, its record is gone)" % name)
        if beside:
            check(connack(1883) == 0 and (plain is None or plain.poll() is None), "%s: the broker on :1883 still answers" % name)
    finally:
        if running():
            tmux("kill-server", check=False)   # SIGHUP: scripts/run stops what it started
            time.sleep(2)
        for line in left_behind(where):
            os.kill(int(line.split()[0]), signal.SIGKILL)
        log("     (%s: %.1f s)" % (name, time.time() - t0))


def main():
    global driver, plain
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # scripts/test's timeout: clean up below
    os.makedirs(ART, exist_ok=True)
    for f in os.listdir(ART):
        os.remove(os.path.join(ART, f))
    os.chmod(TMP, 0o755)
    t_start = time.time()
    skip = None
    try:
        driver = make_driver()
        log("== a: free ports")
        try:
            scenario("a", {"PACER_MQTT_PORT": free_port(), "PACER_WS_PORT": free_port(),
                           "PACER_HTTP_PORT": free_port(), "PACER_HTTPS_PORT": free_port()}, beside=False)
        except Exception as e:
            check(False, "a: %s" % e)
        log("== b: beside a plain mosquitto on 127.0.0.1:1883")
        try:
            s = socket.create_connection(("127.0.0.1", 1883), 1)
            s.close()
            taken = True
        except OSError:
            taken = False
        if taken and connack(1883) is None:
            skip = "127.0.0.1:1883 is taken by something that is not an MQTT broker: scenario b cannot run here"
        else:
            if taken:
                log("     (:1883 is taken by a broker already: scripts/run must run beside it)")
            else:
                conf = os.path.join(TMP, "plain.conf")
                with open(conf, "w") as f:
                    f.write("listener 1883 127.0.0.1\nallow_anonymous true\n")
                plain = subprocess.Popen(["mosquitto", "-c", conf], stdout=open(os.path.join(ART, "plain-mosquitto.log"), "w"),
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
                wait(lambda: connack(1883) == 0, 5, "the plain mosquitto on :1883")
            try:
                scenario("b", {}, beside=True)
            except Exception as e:
                check(False, "b: %s" % e)
    except Exception as e:
        check(False, repr(e))
    finally:
        if driver:
            try:
                driver.quit()
            except Exception:
                pass
        tmux("kill-server", check=False)
        if plain and plain.poll() is None:
            plain.terminate()
            plain.wait()
        shutil.rmtree(TMP, ignore_errors=True)
    took = time.time() - t_start
    if skip and not failures:
        log("first-run suite: scenario a passed in %.0f s; not run: %s" % (took, skip))
        return 77
    log("first-run suite: %d failure(s) in %.0f s; screenshots in %s" % (len(failures), took, os.path.relpath(ART)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
