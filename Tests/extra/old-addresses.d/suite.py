"""An address of an earlier version (the page on mosquitto's WebSocket port) in Chromium.

mosquitto runs deploy/mosquitto/pacer.conf's WebSocket listener with its http_dir (the
repository's deploy/mosquitto/moved), lighttpd serves examples/dashboard on 127.0.0.1:80 with
/mqtt passed on to that listener (deploy/lighttpd/pacer.conf, as install.sh fills it in), and a
node runs a countdown. The old address must end on http://127.0.0.1/ with the same
parameters, connected, showing the node's time.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

ROOT = os.getcwd()
ART = os.path.join(ROOT, ".test-logs", "old-addresses")
PACER = os.path.abspath(os.environ.get("PACER_BIN") or os.path.join(ROOT, ".build", "debug", "pacer"))
TMP = tempfile.mkdtemp(prefix="pacer-old-addresses-")
os.chmod(TMP, 0o755)  # lighttpd and mosquitto started as root read their files as their own users
os.makedirs(ART, exist_ok=True)
procs = []
failures = []


def log(*parts):
    print(*parts, flush=True)


def check(cond, what):
    log(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def wait(pred, secs, what):
    end = time.time() + secs
    while time.time() < end:
        try:
            got = pred()
        except Exception:
            got = None
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError("timed out after %s s waiting for %s" % (secs, what))


def free_port():
    return int(subprocess.run([sys.executable, "scripts/free-port"], capture_output=True, text=True, check=True).stdout)


def listening(port):
    import socket
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def start(name, argv):
    out = open(os.path.join(TMP, name + ".log"), "w")
    p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    procs.append(p)
    return p


def main():
    mqtt, ws = free_port(), free_port()
    # The page as install.sh puts it, readable by the mosquitto user whatever the checkout's
    # permissions (a clone in a 0700 folder).
    moved = os.path.join(TMP, "moved")
    shutil.copytree(os.path.join(ROOT, "deploy", "mosquitto", "moved"), moved)
    subprocess.run(["chmod", "-R", "a+rX", moved], check=True)
    # pacer.conf's WebSocket listener as installed, on a free loopback port.
    conf = open(os.path.join(ROOT, "deploy", "mosquitto", "pacer.conf")).read()
    listener = re.search(r"listener 9001\n(?:.*\n)*?http_dir (\S+)\n", conf)
    check(listener is not None and listener.group(1) == "/usr/share/pacer/moved",
          "pacer.conf serves /usr/share/pacer/moved on its WebSocket listener")
    with open(os.path.join(TMP, "mosquitto.conf"), "w") as f:
        f.write("per_listener_settings false\nallow_anonymous true\nset_tcp_nodelay true\n"
                "listener %d 127.0.0.1\nlistener %d 127.0.0.1\nprotocol websockets\nhttp_dir %s\n" % (mqtt, ws, moved))
    start("mosquitto", [shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c", os.path.join(TMP, "mosquitto.conf")])
    wait(lambda: listening(mqtt) and listening(ws), 10, "mosquitto")

    # lighttpd as install.sh fills deploy/lighttpd/pacer.conf in, on 127.0.0.1:80.
    ca = os.path.join(TMP, "ca.crt")
    open(ca, "w").write("not a certificate\n")
    www = os.path.join(TMP, "www")
    shutil.copytree(os.path.join(ROOT, "examples", "dashboard"), www)
    subprocess.run(["chmod", "-R", "a+rX", www], check=True)
    web = open(os.path.join(ROOT, "deploy", "lighttpd", "pacer.conf")).read()
    for k, v in {"@WWW@": www, "@BIND@": "127.0.0.1", "@HTTP_PORT@": "80",
                 "@WS_PORT@": str(ws), "@CA@": ca}.items():
        web = web.replace(k, v)
    with open(os.path.join(TMP, "lighttpd.conf"), "w") as f:
        f.write(web)
    start("lighttpd", [shutil.which("lighttpd") or "/usr/sbin/lighttpd", "-D", "-f", os.path.join(TMP, "lighttpd.conf")])
    wait(lambda: listening(80), 10, "lighttpd on :80")

    node = "oldaddr"
    conn = ["--broker", "mqtt://127.0.0.1:%d" % mqtt, "--node", node]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PACER_")}
    out = open(os.path.join(TMP, "node.log"), "w")
    procs.append(subprocess.Popen([PACER, "run"] + conn + ["--data-dir", os.path.join(TMP, "data")],
                                  stdout=out, stderr=subprocess.STDOUT, env=env))
    wait(lambda: subprocess.run([PACER, "list", "--timeout", "1"] + conn, capture_output=True, env=env).returncode == 0,
         20, "the node")
    r = subprocess.run([PACER, "start", "main", "--countdown", "10:00"] + conn, capture_output=True, text=True, env=env)
    check(r.returncode == 0, "a 10-minute countdown started: " + (r.stdout + r.stderr).strip())

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,800",
              "--hide-scrollbars", "--no-first-run", "--mute-audio"]:
        opts.add_argument(a)
    home = os.path.join(TMP, "home")
    os.makedirs(home)
    driver = webdriver.Chrome(options=opts, service=Service(
        executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver",
        log_output=os.path.join(ART, "chromedriver.log"), env=dict(os.environ, HOME=home)))
    try:
        old = "http://127.0.0.1:%d/?node=%s&timer=main" % (ws, node)
        driver.get(old)
        new = "http://127.0.0.1/?node=%s&timer=main" % node
        landed = wait(lambda: driver.current_url == new and driver.current_url, 10, "the page on port 80")
        check(landed == new, "the old address %s is sent on to %s" % (old, new))
        # The big clock counts the node's countdown: 9:5x.
        shown = wait(lambda: re.search(r"\b9:5\d\b", driver.find_element("tag name", "body").text), 15, "the clock's digits")
        check(shown is not None, "the clock shows the node's time (%s)" % (shown and shown.group(0)))
        driver.save_screenshot(os.path.join(ART, "after-redirect.png"))
    finally:
        driver.quit()


try:
    main()
except Exception as e:  # a timeout or a crash is a failure with its cause
    failures.append(repr(e))
    log("FAIL", repr(e))
    for name in ("mosquitto", "lighttpd", "node"):
        path = os.path.join(TMP, name + ".log")
        if os.path.exists(path):
            log("---", name, open(path, errors="replace").read()[-1500:])
finally:
    for p in reversed(procs):
        p.terminate()
    for p in procs:
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
    shutil.rmtree(TMP, ignore_errors=True)
log("old-addresses: %d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
